#!/usr/bin/env python3
"""The bug-report drafts of the known matrix (tests/html/run_matrix.py).

    test_drafts.py --report-dir DIR [--flagprop BIN]

Writes DIR/drafts/ with flagprop.reporting.drafts and checks them against report.json,
read here on its own: every failing result and every distinct failure has
exactly one draft, no two drafts share a grouping key, each draft carries
the reproducer (code or path) and the environment, the P6 failure of
pow.Tensor_Scalar in four dtypes is one draft that lists the four, one
failure shared by two targets is one draft, and the index marks what the
manifests expected. With --flagprop, the property statements the drafts use
are compared with ``BIN properties``. Exit status 0 when every check holds,
1 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "python"))

from flagprop.reporting import drafts  # noqa: E402
from run_matrix import error_target  # noqa: E402

REPORT_DIR = None
FLAGPROP = None


def parse_draft(path):
    """The parts of one draft (Markdown file ``path``) the checks read: its
    text, title, grouping key and the rows of its "Where it occurs" table
    (dicts: target, pin, dtype, result, expected, reason, reproducer).
    Returns a dict."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    title = text.split("\n", 1)[0]
    key = re.search(r"^flagprop grouping key: `(.*)`$", text, re.M)
    rows = []
    section = text.split("## Where it occurs", 1)[1] if "## Where it occurs" in text else ""
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 7 and cells[0] not in ("target", "---"):
            rows.append(dict(zip(("target", "pin", "dtype", "result", "expected", "reason", "reproducer"), cells)))
    return {"text": text, "title": title, "key": key.group(1) if key else None, "rows": rows}


class Drafts(unittest.TestCase):
    """DIR/drafts/ of the known matrix."""

    @classmethod
    def setUpClass(cls):
        """Reads the report, writes what is under test and collects what
        the checks read. Raises AssertionError when that fails."""
        with open(os.path.join(REPORT_DIR, "report.json"), encoding="utf-8") as f:
            cls.report = json.load(f)
        cls.paths = drafts.write(REPORT_DIR)
        cls.index_path = cls.paths[-1]
        with open(cls.index_path, encoding="utf-8") as f:
            cls.index = f.read()
        cls.drafts = {os.path.basename(p): parse_draft(p) for p in cls.paths[:-1]}
        print("drafts: %s (%d drafts)" % (cls.index_path, len(cls.drafts)))

    def failures_in_report(self):
        """Every failure of report.json, enumerated here: (target, result key,
        distinct label) with "" for the result itself and "distinct failure
        N" for its N-th distinct failure (N from 2)."""
        out = set()
        for t in self.report["targets"]:
            for r in t.get("results", []):
                if r.get("status") != "fail":
                    continue
                out.add((t["name"], r["key"], ""))
                for i, _ in enumerate((r.get("observations") or {}).get("distinct_failures") or []):
                    out.add((t["name"], r["key"], "distinct failure %d" % (i + 2)))
        return out

    def test_every_failure_has_exactly_one_draft(self):
        """Checks: every failure has exactly one draft. Fails the test otherwise."""
        listed = []
        for name, d in self.drafts.items():
            for row in d["rows"]:
                m = re.match(r"^(\S+)(?: \((distinct failure \d+)\))?$", row["result"])
                self.assertIsNotNone(m, row)
                listed.append((row["target"], m.group(1), m.group(2) or ""))
        self.assertEqual(len(listed), len(set(listed)), "a failure is listed in two drafts")
        self.assertEqual(set(listed), self.failures_in_report())
        # The known matrix's distinct failures: P1's silent skip (two
        # targets) and P6's aliasing of pow.Tensor_Scalar (four dtypes).
        keys = {d["key"].split(" | ")[0] + " " + d["key"].split(" | ")[1] for d in self.drafts.values()}
        self.assertGreaterEqual(keys, {"P1 -", "P6 pow.Tensor_Scalar"}, sorted(self.drafts))

    def test_no_two_drafts_share_a_grouping_key(self):
        """Checks: no two drafts share a grouping key. Fails the test otherwise."""
        keys = [d["key"] for d in self.drafts.values()]
        self.assertNotIn(None, keys, "every draft names its grouping key")
        self.assertEqual(len(keys), len(set(keys)), keys)

    def test_each_draft_has_the_reproducer_and_the_environment(self):
        """Checks: each draft has the reproducer and the environment. Fails the test otherwise."""
        for name, d in self.drafts.items():
            text = d["text"]
            self.assertTrue("## Environment" in text, "%s has no Environment section" % name)
            env = text.split("## Environment", 1)[1]
            target = d["rows"][0]["target"]
            prov = next(t["provenance"] for t in self.report["targets"] if t["name"] == target)
            for fact in (prov["device"], prov["versions"]["torch"], prov["installer_sha256"]):
                self.assertIn(fact, env, "%s: environment lacks %s" % (name, fact))
            self.assertTrue("## Reproduce" in text, "%s has no Reproduce section" % name)
            repro = text.split("## Reproduce", 1)[1].split("## Environment", 1)[0]
            paths = re.findall(r"(\S*reproducers/[^\s`]+\.py)", repro)
            self.assertTrue("```python" in repro or any(os.path.isfile(os.path.join(REPORT_DIR, p)) for p in paths),
                            "%s: neither the reproducer's code nor an existing reproducer path" % name)
            # Run from the report folder, wherever it is: no absolute path of this machine's report folder.
            self.assertNotIn(os.path.abspath(REPORT_DIR), repro, "%s: the report folder's absolute path" % name)

    def test_one_op_failing_in_four_dtypes_is_one_draft_listing_them(self):
        """Checks: one op failing in four dtypes is one draft listing them. Fails the test otherwise."""
        found = [d for d in self.drafts.values() if d["key"].startswith("P6 | pow.Tensor_Scalar |")]
        self.assertEqual(len(found), 1, [d["title"] for d in found])
        d = found[0]
        self.assertEqual(sorted(r["dtype"] for r in d["rows"]), ["bfloat16", "float16", "float32", "int32"])
        self.assertIn("pow.Tensor_Scalar", d["title"])
        self.assertIn("float32, float16, bfloat16, int32", d["text"])

    def test_one_failure_on_two_targets_is_one_draft(self):
        """Checks: one failure on two targets is one draft. Fails the test otherwise."""
        found = [d for d in self.drafts.values() if d["key"].startswith("P1 |") and "silent-skip" in d["key"]]
        self.assertEqual(len(found), 1, [d["key"] for d in found])
        d = found[0]
        self.assertEqual({r["target"] for r in d["rows"]}, {"fixture-r5-silent-skip", "html-expects-pass"})
        self.assertIn("AttributeError", d["title"])
        self.assertIn("example_installer.py:227", d["text"])

    def test_the_index_lists_every_draft_and_what_was_expected(self):
        """Checks: the index lists every draft and what was expected. Fails the test otherwise."""
        for name in self.drafts:
            self.assertIn("](%s)" % name, self.index)
        rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| \d+ \| .*?\]\(([^)]+\.md)\) \|.*$", self.index, re.M)}
        self.assertEqual(set(rows), set(self.drafts))
        silent = next(n for n, d in self.drafts.items() if "silent-skip" in d["key"])
        self.assertTrue(rows[silent].rstrip(" |").endswith("**partly**"), rows[silent])
        view = next(n for n, d in self.drafts.items() if d["key"].startswith("P6 | pow.Tensor_Scalar"))
        self.assertTrue(rows[view].rstrip(" |").endswith("yes (fixture)"), rows[view])
        self.assertEqual(list(rows)[0], silent, "the draft with an unexpected failure comes first")
        self.assertIn("1 target error(s) (%s)" % error_target(self.report), self.index)

    def test_grouping_is_deterministic(self):
        """Checks: grouping is deterministic. Fails the test otherwise."""
        a = [g["key"] for g in drafts.group(self.report)]
        b = [g["key"] for g in drafts.group(json.loads(json.dumps(self.report)))]
        self.assertEqual(a, b)

    def test_the_report_carries_the_registry_flagprop_lists(self):
        """Checks: report.json's ``properties`` (what the drafts and report.html read a property's title and
        statement from) is the registry ``flagprop properties`` lists, and each draft states its property as
        the registry does. Fails the test otherwise."""
        if not FLAGPROP:
            self.skipTest("no --flagprop given")
        out = subprocess.run([FLAGPROP, "properties"], stdout=subprocess.PIPE, text=True, check=True).stdout
        listed = [tuple(line.split("\t")) for line in out.splitlines()]
        carried = [(p["id"], p["title"], p["statement"]) for p in self.report["properties"]]
        self.assertEqual(carried, listed)
        statements = {pid: statement for pid, _title, statement in listed}
        for g in drafts.group(self.report):
            self.assertEqual(g["property_statement"], statements[g["property"]])


def main():
    """Command line; see the module docstring."""
    global REPORT_DIR, FLAGPROP
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--report-dir", required=True)
    ap.add_argument("--flagprop")
    a, rest = ap.parse_known_args()
    REPORT_DIR, FLAGPROP = os.path.abspath(a.report_dir), a.flagprop
    prog = unittest.main(argv=[sys.argv[0], "-v"] + rest, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
