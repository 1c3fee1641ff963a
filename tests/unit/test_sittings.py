"""Tests of matrix/sittings.py and coverage.case_split on made-up report
folders: two sittings of one run compared on the runs both executed, the
runs only one reached, the status changes, and where a case's time went
weighted by each result's case seconds.

Run from this folder: python3 -B -m unittest -v test_sittings.
"""

import json
import os
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "matrix"))

import coverage  # noqa: E402
import sittings  # noqa: E402


def result(key, status, cases, us_per_case, compilations, device_op, control=0.0, flaggems_off=0.0, seconds=None):
    """A P5 result with observations.stats as a run writes them."""
    return {"key": key, "op": key.split("/")[1], "status": status, "reason": status + " of " + key,
            "seconds": seconds if seconds is not None else cases * us_per_case / 1e6,
            "observations": {"stats": {
                "cases_executed": cases, "us_per_case": us_per_case, "compilations": compilations,
                "share": {"device_op": device_op, "reference": 0.1, "harness": 0.9 - device_op},
                "harness_share": {"control": control, "flaggems_off": flaggems_off, "verdicts": 0.0, "sandbox": 0.0,
                                  "inputs": 0.0, "tamper": 0.0, "other": 0.9 - device_op - control}}}}


def folder(results):
    d = tempfile.mkdtemp(prefix="sittings-")
    with open(os.path.join(d, "report.json"), "w") as f:
        json.dump({"targets": [{"name": "t", "results": results}]}, f)
    return d


class Sittings(unittest.TestCase):

    def test_the_runs_both_executed_are_compared_and_changes_listed(self):
        first = sittings.runs(folder([
            result("P5/mm/float32", "pass", 2, 1e6, 4, 0.8),          # 2 s of cases, 1.6 s of the op
            result("P5/tanh/float32", "fail", 10, 1e4, 1, 0.5),        # 0.1 s
            result("P5/cos/float32", "pass", 5, 1e4, 0, 0.1),          # only the first executed it
            {"key": "P5/sin/float32", "op": "sin", "status": "skip", "reason": "not reached"}]))
        second = sittings.runs(folder([
            result("P5/mm/float32", "fail", 2, 5e5, 4, 0.6),           # 1 s, 0.6 s of the op
            result("P5/tanh/float32", "fail", 10, 1e4, 0, 0.5),
            result("P5/sin/float32", "pass", 3, 1e4, 1, 0.5)]))        # only the second executed it
        c = sittings.compare(first, second)
        self.assertEqual(c["both"], ["P5/mm/float32", "P5/tanh/float32"])
        self.assertEqual(c["first"]["cases"], 12)
        self.assertEqual(c["first"]["compilations"], 5)
        self.assertAlmostEqual(c["first"]["op_s"], 1.6 + 0.05)
        self.assertAlmostEqual(c["second"]["op_s"], 0.6 + 0.05)
        self.assertAlmostEqual(c["second"]["case_s"], 1.1)
        self.assertEqual((c["only_first"]["runs"], c["only_first"]["cases"]), (1, 5))
        self.assertEqual((c["only_second"]["runs"], c["only_second"]["cases"]), (1, 3))
        self.assertEqual(c["judged"], [3, 3])
        self.assertEqual([(k, a, b) for k, a, b, _, _ in c["changed"]],
                         [("P5/mm/float32", "pass", "fail"), ("P5/sin/float32", "skip", "pass")])

    def test_a_case_s_time_is_weighted_by_each_result_s_case_seconds(self):
        # (each run's seconds differ from its cases' seconds: the cases' are the weights)
        rs = [result("P5/mm/float32", "pass", 1, 3e6, 6, 0.9, control=0.05, flaggems_off=0.02, seconds=10.0),  # 3 s
              result("P5/tanh/float32", "pass", 100, 1e4, 0, 0.1, control=0.4, flaggems_off=0.3, seconds=2.0)]
        split = coverage.case_split(rs)
        self.assertEqual((split["cases"], split["compilations"]), (101, 6))
        self.assertAlmostEqual(split["seconds"], 4.0)
        self.assertAlmostEqual(split["shares"]["device_op"], (0.9 * 3 + 0.1 * 1) / 4)
        self.assertAlmostEqual(split["shares"]["flaggems_off"], (0.02 * 3 + 0.3 * 1) / 4)
        self.assertAlmostEqual(split["op_s_per_compilation"], 0.9 * 3 / 6)
        u = split["uncompiled"]
        self.assertEqual(u["cases"], 100)
        self.assertAlmostEqual(u["ms_per_case"], 10.0)
        self.assertAlmostEqual(u["shares"]["control"], 0.4)
        self.assertIn("FlagGems off 30%", coverage.describe_split(u["shares"]))


if __name__ == "__main__":
    unittest.main()
