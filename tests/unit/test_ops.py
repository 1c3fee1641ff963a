"""Tests of flagprop.engine.ops: the value kinds of the tensors it builds,
the stage file's compile stamps, the CPU reference's accumulation
magnitudes, dense copies and meta answers, and the accumulation bound those magnitudes
feed (flagprop.judging.verdicts).

Run from this folder: python3 -B -m unittest -v test_ops (needs torch).
"""

import contextlib
import os
import sys
import tempfile
import time
import types
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import torch  # noqa: E402

from flagprop.engine import ops  # noqa: E402
from flagprop.judging import verdicts  # noqa: E402


class Layouts(unittest.TestCase):

    def test_value_kinds_hold_in_the_built_storage(self):
        """Value kinds the layouts can ask for, built by flagprop.engine.ops
        (the one builder)."""

        def storage(kind, dtype="float32", high=0):
            return ops.make_storage({"storage": 257, "dtype": dtype, "seed": 5, "values": kind, "high": high,
                                     "specials": []})

        ok = {
            "positive": bool((storage("positive") > 0).all()) and bool((storage("positive", "int32") > 0).all()),
            "nonzero": bool((storage("nonzero") != 0).all()) and bool((storage("nonzero", "int32") != 0).all()),
            "unique": storage("unique").unique().numel() == 257 and storage("unique", "int32").unique().numel() == 257,
            "index": bool(((storage("index", "int64", 7) >= 0) & (storage("index", "int64", 7) < 7)).all()),
        }
        layout = {"storage": 40, "dtype": "float32", "seed": 9, "values": "sorted", "specials": [],
                  "shape": [4, 5], "strides": [1, 8], "offset": 3}
        t = ops.build_cpu({"tensors": [layout], "args": []})[0]
        ok["sorted"] = bool((t.diff(dim=-1) >= 0).all())
        for kind, holds in ok.items():
            self.assertTrue(holds, kind)


class _StageFile:
    """For its lifetime, ops' stage file is a fresh file in a temporary
    folder (``path``); ops' stage state is put back afterwards."""

    def __enter__(self):
        self.folder = tempfile.mkdtemp(prefix="flagprop-stage-")
        self.path = os.path.join(self.folder, "stage")
        self.saved = dict(ops._STAGE)
        ops._STAGE.clear()
        ops._STAGE.update({"path": self.path, "fd": None})
        open(self.path, "wb").close()
        return self

    def __exit__(self, *exc):
        if ops._STAGE.get("fd") is not None:
            os.close(ops._STAGE["fd"])
        ops._STAGE.clear()
        ops._STAGE.update(self.saved)
        os.unlink(self.path)
        os.rmdir(self.folder)
        return False


class Ops(unittest.TestCase):

    def test_a_compile_stamp_is_never_ahead_of_the_clock(self):
        """A compile stamp is never later than its write: the watch reads it
        against its own clock right after (runner/runner.h,
        stageCompileAge), and a "%.3f" stamp read within its rounding read as
        the future in about half of these tries."""
        ahead = stamps = 0
        with _StageFile() as stage:
            for _ in range(400):
                ops._compiled_now()
                now = time.monotonic()
                with open(stage.path, "rb") as f:
                    at = float(f.read()[16:40])
                stamps += 1
                ahead += at > now
        self.assertEqual(stamps, 400)
        self.assertEqual(ahead, 0)

    def test_an_autotuner_benchmark_stamps_the_stage_file(self):
        """A case autotuning past its time limit is slow, not hung: every
        benchmark of one config by Triton's autotuner stamps the stage file
        as a compilation does (the watch reads the stamp: runner/runner.h,
        stageCompileAge). A benchmark that raises (or never returns) stamps
        nothing; stamping twice does not wrap twice; a Triton without
        Autotuner._bench is left alone. Without the stamp, FlagGems
        autotuning addmv on a shared H200 was called a hang."""

        class Autotuner:
            def _bench(self, *args, config=None, **meta):
                if config == "bad":
                    raise RuntimeError("out of resources")
                return [1.0, 1.0, 1.0]

        triton = types.SimpleNamespace(
            runtime=types.SimpleNamespace(autotuner=types.SimpleNamespace(Autotuner=Autotuner)))
        with _StageFile() as stage:
            def stamp():
                with open(stage.path, "rb") as f:
                    return f.read()[16:].strip()

            hooked = [ops.stamp_autotuner_benchmarks(triton), ops.stamp_autotuner_benchmarks(triton)]
            once = Autotuner._bench.__wrapped__.__name__ == "_bench"
            try:
                Autotuner()._bench(config="bad")
            except RuntimeError:
                pass
            after_raise = stamp()
            timing = Autotuner()._bench(1, 2, config="good")
            after_bench = stamp()
            bare = ops.stamp_autotuner_benchmarks(types.SimpleNamespace())
        ok = [hooked, once, after_raise == b"", timing, bool(after_bench) and float(after_bench) > 0, bare]
        self.assertEqual(ok, [[True, True], True, True, [1.0, 1.0, 1.0], True, False])


@contextlib.contextmanager
def stand_in_flag_gems(only_enable, config):
    """A module ``flag_gems`` with ``only_enable`` and ``_FULL_CONFIG``
    (``config``: (overload, function) pairs) in ``sys.modules`` for the
    block; after it, every library ``ops.setup`` registered through it is
    destroyed and ``ops._STATE`` is as before (torch 2.x: ``_destroy``)."""
    fake = types.ModuleType("flag_gems")
    fake.only_enable = only_enable
    fake._FULL_CONFIG = config
    saved = {k: list(v) if isinstance(v, list) else v for k, v in ops._STATE.items()}
    sys.modules["flag_gems"] = fake
    try:
        yield fake
    finally:
        for lib in ops._STATE["libs"]:
            if lib not in saved["libs"]:
                lib._destroy()
        ops._STATE.clear()
        ops._STATE.update(saved)
        del sys.modules["flag_gems"]


class FlagGemsOff(unittest.TestCase):

    @unittest.skipUnless(hasattr(torch.library.Library, "_destroy"), "a torch whose Library can be destroyed (2.x)")
    def test_the_stock_path_answers_inside_and_the_same_kernels_come_back_after(self):
        """``setup`` registers a FlagGems stand-in's kernels through its
        ``only_enable``; inside ``_FlagGemsOff`` the stock kernel answers,
        after it the recorded registrations are back, for many scopes in a
        row, without ``only_enable`` being called again."""
        calls = []

        def fake_tanh(x):
            return torch.full_like(x, 7.0)

        def only_enable(lib, include):
            calls.append(list(include))
            lib.impl("tanh", fake_tanh, "CPU")

        with stand_in_flag_gems(only_enable, (("tanh", fake_tanh),)):
            ops.setup({"ops": {"kind": "aten", "enable": "flag_gems"}}, ["tanh"])
            x = torch.tensor([0.5, -1.0])
            self.assertTrue(bool((torch.tanh(x) == 7).all()))
            for _ in range(3):
                with ops._FlagGemsOff():
                    self.assertTrue(torch.allclose(torch.tanh(x), torch.tensor([0.5, -1.0]).double().tanh().float()))
                self.assertTrue(bool((torch.tanh(x) == 7).all()))
            self.assertEqual(calls, [["fake_tanh"]])
        self.assertFalse(bool((torch.tanh(torch.tensor([0.5])) == 7).any()))

    @unittest.skipUnless(hasattr(torch.library.Library, "_destroy"), "a torch whose Library can be destroyed (2.x)")
    def test_the_control_pass_copies_its_inputs_and_outputs_with_flaggems_off_in_one_switch(self):
        """A stock control's whole pass runs with FlagGems off: the copies
        of its inputs to the device (on the CPU: ``clone``) and of its
        outputs back (``_to_copy``) are the stock path's, not a FlagGems
        ``clone`` that zeroes them or a ``_to_copy`` that writes -3, and a
        case of two calls switches FlagGems' kernels off once, not once per
        call; the op's own pass still copies through them."""

        def fake_tanh(x):
            return torch.full_like(x, 7.0)

        def fake_clone(x, memory_format=None):
            return torch.zeros(x.shape, dtype=x.dtype)

        def fake_to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
                         memory_format=None):
            return torch.full(x.shape, -3.0, dtype=dtype or x.dtype)

        def only_enable(lib, include):
            lib.impl("tanh", fake_tanh, "CPU")
            lib.impl("clone", fake_clone, "CPU")
            lib.impl("_to_copy", fake_to_copy, "CPU")

        layout = {"dtype": "float32", "shape": [3], "strides": [1], "offset": 0, "storage": 3, "seed": 4,
                  "values": "normal", "how": "contiguous", "specials": []}
        case = {"op": "tanh", "calls": [{"args": [{"tensor": 0}], "tensors": [layout]}] * 2}
        switches = []

        class Counting(ops._FlagGemsOff):
            def __enter__(self):
                switches.append(1)
                return super().__enter__()

        real_off = ops._FlagGemsOff
        ops._FlagGemsOff = Counting
        try:
            with stand_in_flag_gems(only_enable, (("tanh", fake_tanh), ("clone", fake_clone))):
                target = {"ops": {"kind": "aten", "enable": "flag_gems", "control": "stock"}, "device": "cpu"}
                ops.setup(target, ["tanh", "clone"])
                control = ops._ControlRunner(target, "tanh")
                cpu = [ops.build_cpu(c) for c in case["calls"]]
                done = ops._run_pass(control, case, cpu, "cpu", "control")
                op_pass = ops._run_pass(types.SimpleNamespace(call=lambda call, t: (t[0].clone(),)), case, cpu, "cpu",
                                        "op")
        finally:
            ops._FlagGemsOff = real_off
        want = cpu[0][0].tanh()
        self.assertEqual([rec["error"] for rec in done["calls"]], [None, None])
        self.assertTrue(all(torch.allclose(rec["after"][0], want) for rec in done["calls"]),
                        "the control's inputs or outputs were copied by the FlagGems stand-in: %s" % done["calls"][0]["after"])
        self.assertEqual(len(switches), 1, "one switch per control pass")
        self.assertTrue(bool((op_pass["calls"][0]["inputs"][0]["tensor"] == 0).all())
                        and bool((op_pass["calls"][0]["after"][0] == -3).all()),
                        "the stand-in's clone and _to_copy serve the op's own pass (FlagGems on)")


class PassScope(unittest.TestCase):

    def test_a_runner_s_scope_holds_its_whole_pass_once(self):
        """``_run_pass`` enters a runner's ``scope`` once for the whole pass:
        the copies of every call's inputs to the device, the calls and the
        copies of their outputs back all happen inside it (any torch; the
        stock control's scope is ``_FlagGemsOff``, tested above on torch
        2.x); a runner without one (the op under test) runs in none."""
        seen, state = [], {"in": 0, "entered": 0}

        @contextlib.contextmanager
        def scope():
            state["in"] += 1
            state["entered"] += 1
            try:
                yield
            finally:
                state["in"] -= 1

        def call(call, tensors):
            seen.append(("call", state["in"]))
            return (tensors[0] * 2,)

        real_inputs, real_pointers = ops.device_inputs, ops._native_pointers

        def inputs(*args, **kwargs):
            seen.append(("inputs", state["in"]))
            return real_inputs(*args, **kwargs)

        def pointers(outs):  # called right after the outputs' copies back
            seen.append(("copied back", state["in"]))
            return real_pointers(outs)

        layout = {"dtype": "float32", "shape": [2], "strides": [1], "offset": 0, "storage": 2, "seed": 3,
                  "values": "normal", "how": "contiguous", "specials": []}
        case = {"op": "tanh", "calls": [{"args": [{"tensor": 0}], "tensors": [layout]}] * 2}
        cpu = [ops.build_cpu(c) for c in case["calls"]]
        ops.device_inputs, ops._native_pointers = inputs, pointers
        try:
            done = ops._run_pass(types.SimpleNamespace(call=call, scope=scope), case, cpu, "cpu", "control")
            scoped = list(seen)
            del seen[:]
            ops._run_pass(types.SimpleNamespace(call=call), case, cpu, "cpu", "op")
            bare = list(seen)
        finally:
            ops.device_inputs, ops._native_pointers = real_inputs, real_pointers
        self.assertEqual([rec["error"] for rec in done["calls"]], [None, None])
        self.assertEqual(state["entered"], 1, "one scope for the pass, not one per call")
        self.assertEqual(scoped, [("inputs", 1), ("call", 1), ("copied back", 1)] * 2)
        self.assertEqual(bare, [("inputs", 0), ("call", 0), ("copied back", 0)] * 2)


class StockPass(unittest.TestCase):

    def test_only_a_stock_call_s_own_lost_device_is_the_stock_path_s(self):
        """The stock path's pass reports a lost device context where one of
        its calls raised it (on the CPU the runtime's text stands for the
        loss), naming the call's place; an error raised while the pass
        copies inputs to the device may come from earlier work (an op's
        history call, a kernel whose fault surfaces at the copy) and goes
        up unchanged."""
        lost = RuntimeError("CUDA error: an illegal memory access was encountered")

        def stock(call, tensors):
            if tensors[0].numel() > 2:
                raise lost
            return (tensors[0],)

        runner = types.SimpleNamespace(control=types.SimpleNamespace(call=stock))

        def case_of(n):
            return {"op": "tanh", "calls": [{"args": [{"tensor": 0}], "tensors": [
                {"dtype": "float32", "shape": [n], "strides": [1], "offset": 0, "storage": n, "seed": 1,
                 "values": "normal", "how": "contiguous", "specials": []}]}]}

        small, big = case_of(2), case_of(3)
        done, why = ops._stock_pass(runner, small, [ops.build_cpu(c) for c in small["calls"]], "cpu", "control", "")
        self.assertIsNone(why)
        self.assertEqual(len(done["calls"]), 1)
        done, why = ops._stock_pass(runner, big, [ops.build_cpu(c) for c in big["calls"]], "cpu", "again",
                                    " in the op's place")
        self.assertIn("lost the device context on call 0 in the op's place", why[0])
        self.assertIn("illegal memory access", why[1])
        self.assertFalse(ops._context_usable("cpu"), "the CPU has no context: the text stands for the loss")
        real = ops.device_inputs

        def failing(*args, **kwargs):
            raise lost

        ops.device_inputs = failing
        try:
            with self.assertRaises(RuntimeError):
                ops._stock_pass(runner, small, [ops.build_cpu(c) for c in small["calls"]], "cpu", "control", "")
        finally:
            ops.device_inputs = real


class OpInfo(unittest.TestCase):

    def test_given_values_hold_through_the_permuted_sliced_layout(self):
        """Given values reach the built tensor through any layout flagprop
        picks."""
        layout = {"storage": 40, "dtype": "float32", "seed": 9, "values": "given", "specials": [],
                  "shape": [2, 3], "strides": [1, 8], "offset": 5, "data": [1, 2, 3, 4, 5, 6]}
        t = ops.build_cpu({"tensors": [layout], "args": []})[0]
        self.assertEqual(t.tolist(), [[1, 2, 3], [4, 5, 6]])
        self.assertEqual(t.stride(), (1, 8))
        self.assertEqual(t.storage_offset(), 5)


class OpTeeth(unittest.TestCase):

    def test_accumulation_bound_counts_the_terms_of_each_output_element(self):
        """The accumulation bound's n per rule, and which references carry
        the op on |inputs|: every reduction and scan; a schema-derived entry
        only where an output has fewer elements than its largest input
        (sum.default yes, add.Tensor no: an elementwise op accumulates
        nothing)."""
        u = 2.0 ** -24

        def g(n):
            return (n - 1) * u / (1 - (n - 1) * u)

        call = {"tensors": [{"shape": [64, 8, 16]}], "args": [{"tensor": 0}, [0, 2], False]}
        red = verdicts.accumulation_bound({"rule": "reduction", "dims_arg": 1}, "float32", call)
        scan = verdicts.accumulation_bound({"rule": "scan", "dim_arg": 1}, "float32",
                                           {"tensors": [{"shape": [5, 300]}], "args": [{"tensor": 0}, -1]})
        schema = verdicts.accumulation_bound({"rule": "schema"}, "float32", call, [8])
        point = verdicts.accumulation_bound({"rule": "pointwise"}, "float32", call)
        ok_bounds = (abs(red - g(1024)) < 1e-18, abs(scan - g(300)) < 1e-18, abs(schema - g(1024)) < 1e-18,
                     point == 0.0)
        layout = {"dtype": "float32", "shape": [4, 6], "strides": [6, 1], "offset": 0, "storage": 24, "seed": 3,
                  "values": "normal"}
        one = {"tensors": [layout], "args": [{"tensor": 0}], "kwargs": {}}
        two = {"tensors": [layout, dict(layout, seed=4)], "args": [{"tensor": 0}, {"tensor": 1}], "kwargs": {}}
        summed, _, _ = ops.reference("sum.default", one, ops.build_cpu(one), True, False, "if_reducing")
        added, _, _ = ops.reference("add.Tensor", two, ops.build_cpu(two), True, False, "if_reducing")
        x = ops.build_cpu(one)[0].double()
        ok_refs = ("magnitude" in summed[0] and abs(float(summed[0]["magnitude"]) - float(x.abs().sum())) < 1e-9,
                   "magnitude" not in added[0])
        self.assertEqual(ok_bounds, (True, True, True, True))
        self.assertEqual(ok_refs, (True, True))

    def test_the_reference_does_not_take_a_layout_dependent_answer_of_cpu_aten(self):
        """The reference's values come from dense copies of the inputs an op
        only reads and whose elements overlap: LibTorch 1.13's CPU median.dim
        returns other values on an expanded input (the tie fixture's run
        failed on it), while an in-place op's self keeps its layout."""
        layout = {"dtype": "int32", "shape": [3, 2, 1], "strides": [1, 0, 1], "offset": 0, "storage": 3, "seed": 2,
                  "values": "normal", "how": "expanded"}
        call = {"tensors": [layout], "args": [{"tensor": 0}, 1, True], "kwargs": {}}
        x = ops.build_cpu(call)[0]
        want = torch.ops.aten.median.dim(x.contiguous(), 1, True)[0]
        exact, _, _ = ops.reference("median.dim", call, ops.build_cpu(call), False)
        upcast, _, _ = ops.reference("median.dim", call, ops.build_cpu(call), True)
        ok_dense = (torch.equal(exact[0]["values"], want), torch.equal(upcast[0]["values"], want))
        inplace = {"tensors": [dict(layout, dtype="float32")], "args": [{"tensor": 0}], "kwargs": {}}
        try:
            ops.reference("abs_.default", inplace, ops.build_cpu(inplace), True)
            ok_inplace = False
        except RuntimeError:  # ATen rejects writing an overlapping self, as the device call does
            ok_inplace = True
        self.assertEqual(ok_dense, (True, True))
        self.assertTrue(ok_inplace)

    def test_a_meta_answer_is_reused_only_for_the_same_layouts_and_arguments(self):
        """The meta kernel's answer (output dtypes and shapes) is taken once
        per op, arguments, shapes, strides and dtypes: other values reuse
        it, and a change of any of those asks the meta kernel again and gets
        its own answer."""
        asked = []

        def summed(*args, **kwargs):
            asked.append(args[0].device.type)
            return torch.ops.aten.sum.dim_IntList(*args, **kwargs)

        layout = {"dtype": "float32", "shape": [4, 6], "strides": [6, 1], "offset": 0, "storage": 24, "seed": 3,
                  "values": "normal"}

        def shapes(layout, args):
            call = {"tensors": [layout], "args": [{"tensor": 0}] + args, "kwargs": {}}
            out = ops._meta_outputs(summed, call, ops.build_cpu(call))
            return [(o.device.type, o.dtype, list(o.shape)) for o in out]

        ops._META_CACHE.clear()
        first = shapes(layout, [[1], True])
        again = shapes(dict(layout, seed=9, values="positive"), [[1], True])  # other values, same layout
        calls_then = len(asked)
        other_dim = shapes(layout, [[0], True])
        other_keepdim = shapes(layout, [[1], False])
        other_layout = shapes(dict(layout, shape=[6, 4], strides=[1, 6]), [[1], True])
        other_dtype = shapes(dict(layout, dtype="float64"), [[1], True])
        self.assertEqual((first, again), ([("meta", torch.float32, [4, 1])],) * 2)
        self.assertEqual(calls_then, 1)
        self.assertEqual((other_dim, other_keepdim, other_layout, other_dtype),
                         ([("meta", torch.float32, [1, 6])], [("meta", torch.float32, [4])],
                          [("meta", torch.float32, [6, 1])], [("meta", torch.float64, [4, 1])]))
        self.assertEqual(asked, ["meta"] * 5)

    def test_kept_meta_answers_do_not_outlive_tampering_or_new_registrations(self):
        """The meta answers kept from case to case are dropped after a case
        that tampered with the judging, and when ``torch.library``'s
        registrations changed since the last case (a kernel the code under
        test registered may have answered them); otherwise they stay."""
        sys.path.insert(0, os.path.join(SOURCE_DIR, "mocks"))
        from flagprop.judging import checks

        checks.baseline()
        impls = torch.library._impls
        kept = []
        for step in ("clean", "registered", "clean again", "removed", "code replaced"):
            ops._META_CACHE["probe"] = None
            if step == "registered":
                impls.add("aten/flagprop_probe/CPU")
            if step == "removed":
                impls.discard("aten/flagprop_probe/CPU")
            if step == "code replaced":
                real = ops.dtype_name.__code__
                ops.dtype_name.__code__ = (lambda d: "forged").__code__
            why = checks.tampered("tanh")
            kept.append((step, "probe" in ops._META_CACHE, bool(why)))
        self.assertEqual(kept, [("clean", True, False), ("registered", False, False), ("clean again", True, False),
                                ("removed", False, False), ("code replaced", False, True)])
        self.assertIs(ops.dtype_name.__code__, real)

    def test_an_op_found_clean_is_judged_again_once_the_registrations_change(self):
        """With kernels registered beyond the baseline (FlagGems' on a GPU
        host), an op found clean under the same registrations is not checked
        again, but any change of them (a kernel the code under test registers
        on the op, or on an op the judging calls, even one that replaces
        another so that their number stays) is seen on the next case."""
        sys.path.insert(0, os.path.join(SOURCE_DIR, "mocks"))
        from flagprop.judging import checks

        checks.baseline()
        impls = torch.library._impls
        added = ["aten/flagprop_probe/CUDA"]
        impls.add(added[0])  # a kernel the judging does not run: clean
        try:
            seen = []
            for step in ("clean", "clean, kept", "tanh on CPU", "clean again", "swapped for equal on Meta"):
                if step == "tanh on CPU":
                    added.append("aten/tanh/CPU")
                    impls.add(added[-1])
                if step == "clean again":
                    impls.discard(added.pop())
                if step == "swapped for equal on Meta":
                    impls.discard(added.pop())
                    added.append("aten/equal/Meta")
                    impls.add(added[-1])
                seen.append((step, bool(checks.tampered("tanh")), "tanh" in checks._BASELINE.get("clean", ())))
            self.assertEqual(seen, [("clean", False, True), ("clean, kept", False, True), ("tanh on CPU", True, False),
                                    ("clean again", False, True), ("swapped for equal on Meta", True, False)])
        finally:
            for key in added:
                impls.discard(key)
            checks.tampered("tanh")

    def test_out_dtypes_are_reused_only_from_the_meta_kernel(self):
        """An out= overload's out tensors take the dtypes its functional
        sibling's meta kernel gives, asked once per layout and arguments;
        where the meta kernel raises, the CPU kernel is asked every time
        (its answer may depend on the values)."""
        asked = []

        def sibling(*args, **kwargs):
            asked.append(args[0].device.type)
            if meta_raises and args[0].device.type == "meta":
                raise RuntimeError("no meta kernel")
            return torch.ops.aten.sum.dim_IntList(*args, **kwargs)

        layout = {"dtype": "float32", "shape": [4, 6], "strides": [6, 1], "offset": 0, "storage": 24, "seed": 3,
                  "values": "normal"}

        def out_dtypes(layout):
            call = {"tensors": [layout], "args": [{"tensor": 0}, [1], True], "kwargs": {"out": {"$out": 0}}}
            return [t.dtype for t in ops.out_tensors(torch.ops.aten.sum.IntList_out, call, ops.build_cpu(call), "cpu")]

        found, ops.functional_sibling = ops.functional_sibling, lambda fn: sibling
        try:
            ops._META_CACHE.clear()
            meta_raises = False
            kept = (out_dtypes(layout), out_dtypes(dict(layout, seed=8)), out_dtypes(dict(layout, dtype="int32")))
            asked_meta = list(asked)
            del asked[:]
            meta_raises = True
            ops._META_CACHE.clear()
            cpu = (out_dtypes(layout), out_dtypes(dict(layout, seed=8)))
        finally:
            ops.functional_sibling = found
        self.assertEqual(kept, ([torch.float32], [torch.float32], [torch.int64]))
        self.assertEqual(asked_meta, ["meta", "meta"])
        self.assertEqual(cpu, ([torch.float32], [torch.float32]))
        self.assertEqual(asked, ["meta", "cpu", "meta", "cpu"])


if __name__ == "__main__":
    unittest.main()
