#!/usr/bin/env python3
"""flagprop.reporting.htmlreport and flagprop.reporting.drafts on made-up reports (no flagprop
run, no browser): a target error, hostile text, a big op table, plots,
reproducers small and large, distinct failures, and the grouping key.

    test_units.py

Exit status 0 when every check holds, 1 otherwise.
"""

import base64
import copy
import html.parser
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

from flagprop.reporting import drafts, htmlreport  # noqa: E402

#: A 1x1 PNG, for an embedded plot.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

PROV = {"device": "cpu", "versions": {"torch": "1.13.0a0", "python": "3.11.2", "flag_gems": None},
        "installer_sha256": "a" * 64, "libentry_sha256": "b" * 64,
        "pin": {"name": "pin-x", "path": "/pins/x.json", "flag_gems_commit": "ed2508bcb"},
        "native_runtime": {"cuda": {"status": "no runtime"}}}


#: A made-up property registry, as report.json's ``properties`` carries it.
REGISTRY = [{"id": pid, "title": title, "statement": "it holds", "check": "op", "scope": "op", "by_default": True}
            for pid, title in (("P1", "install status"), ("P2", "idempotence"), ("P3", "stock fallback"),
                               ("P4", "key equivalence"), ("P5", "numerics"), ("P6", "aliasing and metadata"),
                               ("P7", "stream semantics"), ("P8", "fast-path hits"), ("P9", "A/B timing"))]
TITLES = {p["id"]: p["title"] for p in REGISTRY}


def op_result(prop, op, dtype, status="pass", reason="held", **extra):
    """A made-up op result (dict) of property ``prop`` for ``op`` and
    ``dtype`` with ``status`` and ``reason``; ``extra`` adds fields."""
    r = {"property": prop, "title": TITLES[prop], "key": "%s/%s/%s" % (prop, op, dtype),
         "op": op, "dtype": dtype, "status": status, "reason": reason, "cases_run": 5, "seconds": 0.1,
         "counterexample": None, "counterexample_shown": "", "reproduce": "", "observations": {},
         "expected": "pass or skip", "as_expected": status in ("pass", "skip")}
    r.update(extra)
    return r


def cell(prop, status, count, of, unexpected):
    """A made-up matrix cell of an op property as report.json's
    ``targets[].matrix`` carries it (flagprop computes them)."""
    return {"property": prop, "status": status, "count": count, "of": of, "unexpected": unexpected,
            "label": "%s %d/%d%s" % (status, count, of, "!" if unexpected else "")}


def make_report(tmp):
    """A made-up flagprop.report/1 report (dict) whose files (reproducers,
    a plot) are in folder ``tmp``: a target error, a target with hostile
    text, an op target with a fail in three dtypes and distinct failures,
    a big op target and a P9 plot."""
    small = os.path.join(tmp, "reproducers", "repro_small.py")
    large = os.path.join(tmp, "reproducers", "repro_large.py")
    os.makedirs(os.path.dirname(small), exist_ok=True)
    with open(small, "w") as f:
        f.write("import sys\nprint('reproduced')\nsys.exit(1)\n")
    with open(large, "w") as f:
        f.write("# big\n" + "x = 1\n" * 20000)
    os.makedirs(os.path.join(tmp, "plots"), exist_ok=True)
    with open(os.path.join(tmp, "plots", "ab.png"), "wb") as f:
        f.write(PNG)
    aliasing = ["call 0 (unpatched): output 0 shares storage with input 0 (no fresh storage)"]
    ops = []
    for dtype in ("float32", "float16", "bfloat16"):
        ops.append(op_result("P5", "pow.Tensor_Scalar", dtype))
        ops.append(op_result("P6", "pow.Tensor_Scalar", dtype, "fail", aliasing[0], as_expected=False,
                             expected="pass", reproducer=small, reproduce="ABC",
                             counterexample={"calls": [{"tensors": [{"shape": [0, 3], "how": "contiguous"}]}]},
                             observations={"aliasing": aliasing}))
    raised = "call 1 (patched): the op raised RuntimeError: expected %s got Half; CPU ATen returns 1 output(s)"
    ops.append(op_result("P5", "mean.dim", "float16", "fail", raised % "float16", reproducer=large,
                         observations={"numerics": [raised % "float16"], "distinct_failures": [
                             {"reason": "output 0 has dtype float16, ATen gives float32", "kinds": ["dtype"],
                              "counterexample": {"calls": []}, "reproduce": "DEF", "reproducer": small,
                              "observations": {}}]}))
    ops.append(op_result("P5", "mean.dim", "bfloat16", "fail", raised % "bfloat16", reproducer=large,
                         observations={"numerics": [raised % "bfloat16"]}))
    big = [op_result("P5", "op%03d" % i, "float32", "skip" if i % 3 else "pass", "health: gave up") for i in range(120)]
    big.append(op_result("P5", "op999", "float32", "fail", "values beyond rtol", observations={"numerics": ["x beyond rtol 0"]}))
    big.append(op_result("P9", "tanh", "float32", "pass", "host: patch off / on 2.0", plot="plots/ab.png"))
    big.append(op_result("P9", "silu", "float32", "pass", "host", plot="/nonexistent/missing.png"))
    installer = {"property": "P1", "title": "install status", "key": "P1", "status": "fail",
                 "reason": "silent-skip: run not installed <script>alert(1)</script>", "cases_run": 1,
                 "counterexample": {"mock": {"cache": "tuple", "note": "</pre><script>x</script>"}},
                 "reproduce": "R1", "reproducer": small, "expected": "fail", "as_expected": True,
                 "observations": {"exceptions_caught": [{"type": "AttributeError", "file": "/a/b/torch_fl/flagos/__init__.py",
                                                        "line": 1916, "function": "_patch", "message": "no attr"}]}}
    other_pin = copy.deepcopy(installer)
    other_pin["observations"]["exceptions_caught"][0]["file"] = "/elsewhere/torch_fl/flagos/__init__.py"
    other_pin.update(as_expected=False, expected="pass")
    moved = copy.deepcopy(installer)
    moved["observations"]["exceptions_caught"][0]["line"] = 1920
    return {
        "schema": "flagprop.report/1",
        "properties": REGISTRY,
        "provenance": {"seed": "5", "command": ["flagprop", "run"], "flagprop": "flagprop", "python": "python3",
                       "manifests": ["m.json"], "report_dir": tmp, "versions": PROV["versions"]},
        "summary": {"targets": 6, "target_errors": 1, "results": {"pass": 5, "fail": 8, "skip": 80, "error": 0},
                    "unexpected": [{"target": "broken", "property": None, "status": "error", "reason": "bad <manifest>"},
                                   {"target": "ops", "property": "P6", "op": "pow.Tensor_Scalar", "dtype": "float16",
                                    "status": "fail", "reason": aliasing[0]}]},
        "targets": [
            {"name": "broken", "manifest": "broken.json", "status": "error", "error": "bad <manifest> & worse",
             "results": []},
            {"name": "evil<b>name</b>", "manifest": "e.json", "status": "ok", "labels": ["cpu", "fixture"],
             "expect": {"P1": "fail"}, "provenance": PROV, "results": [installer]},
            {"name": "same-on-other-pin", "manifest": "o.json", "status": "ok", "labels": ["cpu"],
             "provenance": dict(PROV, pin={"name": "pin-y", "path": "/pins/y.json"}), "results": [other_pin]},
            {"name": "moved-line", "manifest": "l.json", "status": "ok", "labels": ["cpu"], "provenance": PROV,
             "results": [moved]},
            {"name": "ops", "manifest": "ops.json", "status": "ok", "labels": ["cpu"], "provenance": PROV,
             "unverified": ["libentry sha256 mismatch"], "results": ops,
             "matrix": [cell("P5", "fail", 2, 5, 2), cell("P6", "fail", 3, 3, 3)]},
            {"name": "big", "manifest": "big.json", "status": "ok", "labels": ["cpu"], "provenance": PROV,
             "crash": "target process died with signal 11", "results": big,
             "matrix": [cell("P5", "fail", 1, 121, 1), cell("P9", "pass", 2, 2, 0)]},
        ],
    }


class _Tags(html.parser.HTMLParser):
    """Collects start tags and the text of <td> cells of a page."""

    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        """Records start tag ``tag`` (str) with its ``attrs`` (list of (name, value)) as (tag, dict)."""
        self.tags.append((tag, dict(attrs)))


class Page(unittest.TestCase):
    """flagprop.reporting.htmlreport.render on the made-up report."""

    def assertInPage(self, needle):
        """The page contains ``needle`` (the page itself is not printed)."""
        self.assertTrue(needle in self.page, "the page lacks %r" % needle)

    def assertNotInPage(self, needle):
        """The page does not contain ``needle``."""
        self.assertFalse(needle in self.page, "the page contains %r" % needle)

    @classmethod
    def setUpClass(cls):
        """Reads the report, writes what is under test and collects what
        the checks read. Raises AssertionError when that fails."""
        cls.tmp = tempfile.mkdtemp(prefix="flagprop-html-units-")
        cls.report = make_report(cls.tmp)
        cls.page = htmlreport.render(cls.report, cls.tmp)
        p = _Tags()
        p.feed(cls.page)
        cls.tags = p.tags

    @classmethod
    def tearDownClass(cls):
        """Removes the temporary folder."""
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_hostile_text_is_escaped(self):
        """Checks: hostile text is escaped. Fails the test otherwise."""
        self.assertNotInPage("<script")
        self.assertNotInPage("<b>name</b>")
        self.assertInPage("&lt;script&gt;alert(1)&lt;/script&gt;")
        self.assertInPage("evil&lt;b&gt;name&lt;/b&gt;")
        self.assertNotIn("</pre><", self.page.replace("</pre></details>", ""))

    def test_the_rerun_line_is_the_runs_own_command(self):
        """Checks: the page's rerun line is provenance.rerun (the run's own
        options with its seed), escaped; a report without one gets its
        manifests and seed. Fails the test otherwise."""
        self.assertInPage("rerun: <code>flagprop run --manifest m.json --seed 5 --report-dir flagprop-rerun</code>")
        report = copy.deepcopy(self.report)
        report["provenance"]["rerun"] = "flagprop run --cases 7 --op '<x>' --seed 5 --report-dir flagprop-rerun"
        page = htmlreport.render(report, self.tmp)
        self.assertIn("rerun: <code>flagprop run --cases 7 --op &#x27;&lt;x&gt;&#x27; --seed 5 "
                      "--report-dir flagprop-rerun</code>", page)

    def test_a_flaky_result_is_counted_in_the_summary(self):
        """Checks: the summary's chips count flaky results where there are
        any (and show no flaky chip where there are none). Fails the test
        otherwise."""
        self.assertNotInPage('<span class="st-flaky">flaky <b>')
        report = copy.deepcopy(self.report)
        report["summary"]["results"]["flaky"] = 2
        page = htmlreport.render(report, self.tmp)
        self.assertIn('<span class="st-flaky">flaky <b>2</b></span>', page)

    def test_a_target_error_is_one_row_spanning_the_properties(self):
        """Checks: a target error is one row spanning the properties. Fails the test otherwise."""
        cells = [a for t, a in self.tags if t == "td" and a.get("data-prop") == "*"]
        self.assertEqual(len(cells), 1)
        self.assertEqual(cells[0]["colspan"], "9")
        self.assertIn("st-error", cells[0]["class"])
        self.assertIn("unexp", cells[0]["class"])
        self.assertEqual(cells[0]["title"], "bad <manifest> & worse")

    def test_op_cells_aggregate_and_unverified_wins(self):
        """Checks: op cells aggregate and unverified wins. Fails the test otherwise."""
        m = re.search(r'<tr data-target="ops">(.*?)</tr>', self.page, re.S)
        p6 = re.search(r'<td class="([^"]*)" data-prop="P6"[^>]*>(.*?)</td>', m.group(1), re.S)
        self.assertIn("st-unverified", p6.group(1))
        self.assertIn("unexp", p6.group(1))
        self.assertIn("unverified \u00b7 fail 3/3", p6.group(2))

    def test_a_report_without_exported_cells_gets_the_same_cells(self):
        """Checks: a report.json written before targets[].matrix existed renders the same matrix cells,
        computed from the results. Fails the test otherwise."""
        old = copy.deepcopy(self.report)
        for t in old["targets"]:
            t.pop("matrix", None)
        page = htmlreport.render(old, self.tmp)
        cells = r'<td class="([^"]*)" data-prop="(P\d)"[^>]*>(.*?)</td>'
        for name in ("ops", "big"):
            row = r'<tr data-target="%s">(.*?)</tr>' % name
            now = re.findall(cells, re.search(row, self.page, re.S).group(1), re.S)
            then = re.findall(cells, re.search(row, page, re.S).group(1), re.S)
            self.assertEqual(now, then)

    def test_a_big_op_table_is_collapsed_with_what_needs_attention_first(self):
        """Checks: a big op table is collapsed with what needs attention first. Fails the test otherwise."""
        sec = self.page[self.page.index('id="t-big"'):]
        sec = sec[:sec.index("</section>")]
        self.assertIn("need attention (1)", sec)
        self.assertIn("<details><summary>all ops: 123 op \u00d7 dtype run(s)", sec)
        attention = sec[:sec.index("<details><summary>all ops")]
        self.assertEqual(attention.count("<tr data-op="), 1)

    def test_plots_are_embedded_or_named(self):
        """Checks: plots are embedded or named. Fails the test otherwise."""
        self.assertInPage("data:image/png;base64," + base64.b64encode(PNG).decode())
        self.assertInPage("plot file not found")
        for tag, attrs in self.tags:
            for k in ("src", "href"):
                if k in attrs:
                    self.assertTrue(attrs[k].startswith("#") or attrs[k].startswith("data:"), (tag, attrs))

    def test_each_failure_has_reason_counterexample_and_replay(self):
        """Checks: each failure has reason counterexample and replay. Fails the test otherwise."""
        self.assertInPage("--reproduce ABC")
        self.assertInPage("repro_small.py")
        self.assertInPage("distinct failure 2 of 2")
        self.assertInPage("AttributeError")

    def test_a_wrong_document_is_refused(self):
        """Checks: a wrong document is refused. Fails the test otherwise."""
        with self.assertRaises(ValueError):
            htmlreport.render({"schema": "other"}, self.tmp)

    def test_write_writes_report_html(self):
        """Checks: write writes report html. Fails the test otherwise."""
        d = tempfile.mkdtemp(prefix="flagprop-html-write-", dir=self.tmp)
        with open(os.path.join(d, "report.json"), "w") as f:
            json.dump(self.report, f)
        path = htmlreport.write(d)
        self.assertEqual(path, os.path.join(d, "report.html"))
        with open(path, encoding="utf-8") as f:
            self.assertTrue(f.read().startswith("<!DOCTYPE html>"))

    def test_compact_json_round_trips(self):
        """Checks: compact json round trips. Fails the test otherwise."""
        for value in (self.report, [], {}, [1, [2, {"a": None}]], "x"):
            self.assertEqual(json.loads(htmlreport.compact_json(value, width=20)), value)


class Grouping(unittest.TestCase):
    """flagprop.reporting.drafts on the made-up report."""

    @classmethod
    def setUpClass(cls):
        """Reads the report, writes what is under test and collects what
        the checks read. Raises AssertionError when that fails."""
        cls.tmp = tempfile.mkdtemp(prefix="flagprop-drafts-units-")
        cls.report = make_report(cls.tmp)
        cls.groups = drafts.group(cls.report)

    @classmethod
    def tearDownClass(cls):
        """Removes the temporary folder."""
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def by(self, prop, op=""):
        """The groups of property ``prop`` and ``op``."""
        return [g for g in self.groups if g["property"] == prop and g["op"] == op]

    def test_one_failure_in_three_dtypes_is_one_group(self):
        """Checks: one failure in three dtypes is one group. Fails the test otherwise."""
        g = self.by("P6", "pow.Tensor_Scalar")
        self.assertEqual(len(g), 1)
        self.assertEqual(g[0]["dtypes"], ["float32", "float16", "bfloat16"])
        self.assertEqual(g[0]["expected"], "no")
        self.assertIn("on a zero-size input", g[0]["title"])

    def test_dtype_names_in_a_message_do_not_split_a_group(self):
        """Checks: dtype names in a message do not split a group. Fails the test otherwise."""
        g = self.by("P5", "mean.dim")
        kinds = sorted(x["key"][2] for x in g)
        self.assertEqual(kinds, ["dtype", "raised RuntimeError: expected <dtype> got <dtype>"], kinds)
        raised = next(x for x in g if x["key"][2].startswith("raised"))
        self.assertEqual(raised["dtypes"], ["float16", "bfloat16"])

    def test_a_distinct_failure_gets_its_own_group(self):
        """Checks: a distinct failure gets its own group. Fails the test otherwise."""
        g = next(x for x in self.by("P5", "mean.dim") if x["key"][2] == "dtype")
        self.assertEqual([m["distinct"] for m in g["members"]], [2])
        self.assertEqual(g["members"][0]["reproducer"], os.path.join(self.tmp, "reproducers", "repro_small.py"))

    def test_one_site_on_two_pins_is_one_group_and_another_line_is_not(self):
        """Checks: one site on two pins is one group and another line is not. Fails the test otherwise."""
        p1 = self.by("P1")
        self.assertEqual(len(p1), 2, [g["key"] for g in p1])
        same = next(g for g in p1 if g["site"] == "flagos/__init__.py:1916")
        self.assertEqual(same["targets"], ["evil<b>name</b>", "same-on-other-pin"])
        self.assertEqual(same["pins"], ["pin-x", "pin-y"])
        self.assertEqual(same["expected"], "partly")
        self.assertFalse(same["fixture"])

    def test_target_errors_are_not_drafted(self):
        """Checks: target errors are not drafted. Fails the test otherwise."""
        self.assertFalse(any("broken" in g["targets"] for g in self.groups))

    def test_unexpected_groups_come_first(self):
        """Checks: unexpected groups come first. Fails the test otherwise."""
        order = [g["expected"] for g in self.groups]
        self.assertEqual(order, sorted(order, key=lambda e: e == "yes"))

    def test_the_key_ignores_target_dtype_and_case(self):
        """Checks: the key ignores target dtype and case. Fails the test otherwise."""
        r = self.report["targets"][4]["results"][1]
        other = dict(r, dtype="int32", key="P6/pow.Tensor_Scalar/int32", counterexample={"calls": []})
        self.assertEqual(drafts.grouping_key(r), drafts.grouping_key(other))
        self.assertEqual(drafts.grouping_key(r), ("P6", "pow.Tensor_Scalar", "aliases an input", "", ""))

    def test_an_op_case_reads_as_torch_calls(self):
        case = {"op": "addmm.default", "dtype": "float32", "calls": [{
            "tensors": [{"dtype": "float32", "shape": [], "strides": [], "offset": 0, "storage": 1,
                         "values": "normal", "specials": [[0, "nan"]]},
                        {"dtype": "float32", "shape": [2, 3], "strides": [1, 2], "offset": 1, "storage": 7,
                         "values": "grid", "specials": []}],
            "args": [{"tensor": 0}, {"tensor": 1}, {"tensor": 1}], "kwargs": {"beta": 0, "alpha": float("inf")}}]}
        text = drafts.case_as_torch(case)
        self.assertIn("t0 = torch.empty(1, dtype=torch.float32).as_strided([], [], 0)  # values: normal, "
                      "specials nan at 0", text)
        self.assertIn("t1 = torch.empty(7, dtype=torch.float32).as_strided([2, 3], [1, 2], 1)", text)
        self.assertIn("out = torch.ops.aten.addmm.default(t0, t1, t1, beta=0, alpha=float('inf'))", text)
        self.assertEqual(drafts.case_as_torch({"installer": "x"}), "")

    def test_written_drafts_inline_small_reproducers_and_link_large_ones(self):
        """Checks: written drafts inline small reproducers and link large ones. Fails the test otherwise."""
        d = tempfile.mkdtemp(prefix="flagprop-drafts-write-", dir=self.tmp)
        for sub in ("reproducers", "plots"):
            shutil.copytree(os.path.join(self.tmp, sub), os.path.join(d, sub))
        with open(os.path.join(d, "report.json"), "w") as f:
            json.dump(self.report, f)
        stale = os.path.join(d, "drafts", "07-stale.md")
        os.makedirs(os.path.dirname(stale))
        open(stale, "w").close()
        paths = drafts.write(d)
        self.assertFalse(os.path.exists(stale), "drafts of an earlier run are removed")
        self.assertEqual(len(paths), len(self.groups) + 1)
        texts = {}
        for p in paths:
            with open(p, encoding="utf-8") as f:
                texts[os.path.basename(p)] = f.read()
        view = next(t for n, t in texts.items() if "pow.Tensor_Scalar" in t.split("\n")[0])
        self.assertIn("```python\nimport sys\nprint('reproduced')", view)
        mean = next(t for n, t in texts.items() if "raises RuntimeError" in t.split("\n")[0])
        self.assertIn("over the 8 KB inlined here", mean)
        self.assertIn("repro_large.py", mean)
        self.assertNotIn("x = 1\nx = 1", mean)
        for name, t in texts.items():
            if name != "README.md":
                self.assertIn("## Environment", t)
                self.assertIn("ed2508bcb", t, "the pin's commit is in the environment")
        self.assertIn("1 target error(s) (broken)", texts["README.md"])


def main():
    """Runs the tests; returns the exit status."""
    prog = unittest.main(argv=[sys.argv[0], "-v"], exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
