"""Tests of flagprop.judging.verdicts (and the facts it judges with,
flagprop.engine.facts) on made-up observations: indices judged by the values
they select, ATen's refusal to write an overlapping tensor, a stride that
addresses no element, and P9's paired summary.

Run from this folder: python3 -B -m unittest -v test_verdicts (needs torch).
"""

import os
import sys
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import torch  # noqa: E402

from flagprop.engine import facts  # noqa: E402
from flagprop.judging import verdicts  # noqa: E402


class Verdicts(unittest.TestCase):

    def test_indices_are_judged_by_the_values_they_select(self):
        """Outputs that may legally differ among ties are judged by the values
        they select; a wrong index is still caught."""
        x = torch.tensor([[3.0, 1.0, 1.0, 2.0], [float("nan"), 0.0, float("nan"), 5.0]])
        aten = torch.tensor([1, 0])  # argmin along dim 1: first of the ties, the first NaN
        tie = torch.tensor([2, 2])  # the other tie, the other NaN
        wrong = torch.tensor([3, 0])  # selects 2.0, not the minimum 1.0
        out_of_range = torch.tensor([1, 4])
        res = [verdicts.compare_indices(i, aten, x, 1, False) for i in (tie, wrong, out_of_range)]
        flat = verdicts.compare_indices(torch.tensor(2), torch.tensor(1), x[0], None, False)
        self.assertEqual(res[0], "", "an index among ties is right")
        self.assertIn("select other values", res[1])
        self.assertIn("out of range", res[2])
        self.assertEqual(flat, "", "dim None: over the flattened input")

    def test_aten_refusal_to_write_an_overlapping_tensor_is_no_finding(self):
        """ATen's own refusal to write a tensor whose elements overlap is
        within its contract (the stock kernel may write anyway): P5 / P6 find
        nothing, and the refusal is kept as a note, with a control and
        without one; the same error on a tensor that does not overlap, or on
        one the op only reads, is still a finding."""

        def snap(t):
            return {"tensor": t, "shape": list(t.shape), "strides": list(t.stride()), "offset": t.storage_offset(),
                    "version": t._version, "storage": facts.storage_of(t).clone()}

        def findings(error, t, control, writes=(0,)):
            rec = {"error": error, "inputs": [snap(t)], "outputs": []}
            obs = {"passes": [{"name": "unpatched", "calls": [rec]}], "fast_path": "none", "relaid": None,
                   "writes": [list(writes)],
                   "expected": [[{"dtype": "float32", "shape": list(t.shape), "source": "meta"}]],
                   "control": {"calls": [{"error": None, "outputs": [t.clone()], "inputs": []}]} if control else None}
            case = {"op": "triu_", "dtype": "float32",
                    "calls": [{"args": [{"tensor": 0}, 1], "kwargs": {}, "tensors": []}]}
            f = verdicts.op_findings(obs, case, {"mode": "functional"})
            return [len(f["numerics"]), len(f["aliasing"]), len(f.get("overlap_refusals", []))]

        err = "RuntimeError: unsupported operation: " + verdicts.OVERLAP_REFUSAL + ". Please clone() the tensor."
        expanded = torch.randn(1, 1, 1).expand(1, 2, 1)
        dense = torch.randn(1, 2, 1)
        res = [findings(err, expanded, c) for c in (False, True)]
        res += [findings(err, dense, c) for c in (False, True)]
        res += [findings(err, expanded, True, writes=()), findings("RuntimeError: boom", expanded, True)]
        # [numerics findings, aliasing findings, refusal notes] per case.
        self.assertEqual(res, [[0, 0, 1], [0, 0, 1], [1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0]])

    def test_an_element_not_settled_at_float32_is_no_finding_in_float32(self):
        """In a float32 run, an element CPU ATen answers otherwise in float32
        than in float64 (native_layer_norm with an infinite weight: -inf in
        float32, +inf in float64) is not settled: an op giving the float32
        answer is no finding. An element both answers agree on still is."""
        inf = float("inf")
        case = {"op": "native_layer_norm", "dtype": "float32", "calls": [{"args": [], "kwargs": {}, "tensors": []}]}
        judging = {"tolerance": {"rule": "pointwise"}}

        def finding(actual, f64, f32):
            ex = {"values": torch.tensor(f64, dtype=torch.float64), "same_dtype": torch.tensor(f32),
                  "dtype": "float32", "shape": [len(f64)]}
            return verdicts._compare_output({}, case, judging, 0, {}, torch.tensor(actual), ex)

        self.assertEqual(finding([-inf, 1.0], [inf, 1.0], [-inf, 1.0]), "", "CPU ATen's own float32 answer")
        self.assertIn("elements", finding([-inf, 2.0], [inf, 1.0], [-inf, 1.0]), "the settled element is judged")
        self.assertIn("elements", finding([-inf, 1.0], [inf, 1.0], [inf, 1.0]), "both precisions say +inf")

    def test_a_stride_that_addresses_no_element_is_no_layout_finding(self):
        """P6 compares an input's layout after the call as PyTorch's reference
        checks do: a stride of a size-1 dimension, or any stride or offset of
        an empty tensor, addresses no element and is no finding (FlagGems'
        unsqueeze_ gives the new size-1 dimension another stride than ATen);
        a stride of a longer dimension, a storage offset or a shape that
        differs is one."""

        def findings(after, relaid):
            base = torch.zeros(8)
            t = base.as_strided(*after)
            snap = {"tensor": t, "shape": [1, 1, 2, 1], "strides": [4, 4, 2, 1], "offset": 1, "version": t._version,
                    "storage": facts.storage_of(t).clone()}
            out = []
            verdicts._check_inputs({"inputs": [snap]}, "call 0", out, (0,), [relaid])
            return len(out)

        aten = [[1, 1, 2, 1], [4, 4, 2, 1], 1]
        res = [findings(([1, 1, 2, 1], [4, 4, 2, 2], 1), aten),  # a size-1 dimension's stride: the same elements
               findings(([1, 1, 2, 1], [9, 1, 2, 7], 1), aten),  # every size-1 stride differs: the same elements
               findings(([1, 1, 2, 1], [4, 4, 1, 1], 1), aten),  # the size-2 dimension's stride: other elements
               findings(([1, 1, 2, 1], [4, 4, 2, 1], 2), aten),  # the storage offset
               findings(([1, 2, 1, 1], [4, 2, 2, 1], 1), aten),  # the shape
               findings(([0, 3], [1, 5], 0), [[0, 3], [3, 1], 2])]  # an empty tensor addresses nothing
        same = [facts.same_layout_meta([[2, 1], [1, 5], 0], [[2, 1], [1, 1], 0]),
                facts.same_layout_meta([[2, 3], [1, 2], 0], [[2, 3], [3, 1], 0])]
        self.assertEqual(res, [0, 0, 1, 1, 1, 0])
        self.assertEqual(same, [True, False])


class Timing(unittest.TestCase):

    def test_paired_summary_has_intervals_that_hold_the_truth(self):
        a = [10.0 + (i % 5) * 0.1 for i in range(200)]
        b = [x * 1.5 for x in a]
        s = verdicts.paired_summary(a, b)
        self.assertEqual(s["pairs"], 200)
        self.assertLessEqual(s["ratio_ci95"][0], 1.5)
        self.assertLessEqual(1.5, s["ratio_ci95"][1])
        self.assertLess(abs(s["ratio_b_over_a"] - 1.5), 1e-9)


class Batches(unittest.TestCase):

    def test_a_batch_stops_after_a_discard_or_a_lost_device(self):
        """A batch of cases stops after one the search will not count as
        passed (a discard: the cases after it are drawn at other sizes) or
        after a lost device context; an observation of a case that ran goes on."""
        if os.path.join(SOURCE_DIR, "mocks") not in sys.path:  # checks imports the session, which imports the mocks
            sys.path.insert(0, os.path.join(SOURCE_DIR, "mocks"))
        from flagprop.judging import checks

        ran = {"passes": [{"calls": [{"error": ""}]}]}
        self.assertFalse(checks.ends_batch({"seen": ran, "left_running": []}))
        self.assertTrue(checks.ends_batch({"seen": {"discard": "CPU ATen rejects call 0: wrong rank"}}))
        self.assertTrue(checks.ends_batch({"seen": {"stock_lost": "CUDA error: an illegal memory access"}}))
        lost = {"passes": [{"calls": [{"error": "RuntimeError: CUDA error: an illegal memory access was encountered"}]}]}
        self.assertTrue(checks.ends_batch({"seen": lost}))
        raised = {"passes": [{"calls": [{"error": "RuntimeError: wrong rank"}]}]}
        self.assertFalse(checks.ends_batch({"seen": raised}), "an op that raised is judged; the batch goes on")


if __name__ == "__main__":
    unittest.main()
