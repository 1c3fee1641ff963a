#!/usr/bin/env python3
"""What a person sees in report.html, checked in headless Chromium.

    test_report_html.py --report-dir DIR

DIR holds the report of the known matrix (tests/html/run_matrix.py). The test
renders DIR/report.html with flagprop.reporting.htmlreport, then opens it in headless
Chromium twice: once inside a probe page (DIR/probe.html, written here) whose
inline script reads the text, tooltip and computed colours of every cell from
report.html in an iframe and writes them into its own DOM, which
``--dump-dom`` prints; once for a screenshot, DIR/report.png, whose pixels
are checked too. Chromium runs with every host name unresolvable, and the
page is checked both statically (no URL but data: and #anchors) and
dynamically (the iframe's resource timing lists nothing).

Chromium is required (Debian package ``chromium``, listed in
tools/debian-packages.txt): without it the test fails. ``FLAGPROP_CHROMIUM``
names another binary. Exit status 0 when every check holds, 1 otherwise.
"""

import argparse
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "python"))

from flagprop.reporting import htmlreport  # noqa: E402
from run_matrix import error_target  # noqa: E402

#: Window size of the probe iframe and of the screenshot (pixels).
WIDTH, HEIGHT = 1400, 1800

#: The colour family a person must see for each displayed status.
EXPECTED_HUE = {"pass": "green", "fail": "red", "skip": "yellow", "error": "purple", "na": "grey", "unverified": "blue"}

PROBE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;width:%(w)dpx;height:%(h)dpx}</style></head>
<body><pre id="out">probe did not run</pre><iframe id="page" src="report.html" onload="probe()"></iframe>
<script>
function cell(w, td, extra) {
  const cs = w.getComputedStyle(td), box = td.getBoundingClientRect();
  return Object.assign({prop: td.dataset.prop, status: td.dataset.status, text: td.innerText, title: td.title,
    colspan: td.colSpan, bg: cs.backgroundColor, borderWidth: cs.borderTopWidth, borderColor: cs.borderTopColor,
    box: [box.left, box.top, box.right, box.bottom]}, extra);
}
function probe() {
  const out = {};
  try {
    const f = document.getElementById('page'), d = f.contentDocument, w = f.contentWindow;
    out.columns = [...d.querySelectorAll('table.matrix thead th')].map(th => th.innerText.split('\\n')[0]);
    out.matrix = [...d.querySelectorAll('table.matrix tbody td[data-prop]')].map(
      td => cell(w, td, {target: td.parentElement.dataset.target}));
    out.ops = [];
    for (const t of d.querySelectorAll('table.ops'))
      for (const td of t.querySelectorAll('tbody td[data-prop]'))
        out.ops.push(cell(w, td, {target: t.dataset.target, op: td.parentElement.dataset.op,
                                  dtype: td.parentElement.dataset.dtype}));
    out.summary = d.getElementById('summary').innerText;
    out.resources = w.performance.getEntriesByType('resource').map(e => e.name);
    out.images = [...d.images].map(i => ({complete: i.complete, width: i.naturalWidth}));
  } catch (e) { out.error = String(e); }
  document.getElementById('out').textContent = JSON.stringify(out);
}
</script></body></html>
"""

REPORT_DIR = None


def find_chromium():
    """The Chromium binary: ``FLAGPROP_CHROMIUM``, else ``chromium`` or
    ``chromium-browser`` on PATH. Returns its path. Raises AssertionError
    (a test failure, not a skip) when there is none."""
    for name in (os.environ.get("FLAGPROP_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise AssertionError("chromium is not installed: this test needs headless Chromium "
                         "(Debian: apt-get install chromium; tools/debian-packages.txt lists it for CI)")


def run_chromium(binary, profile, extra, url, timeout=120):
    """Runs headless Chromium ``binary`` with profile folder ``profile``,
    the arguments ``extra`` (list) and page ``url``; no host name resolves.
    Returns its stdout (str). Raises AssertionError when it fails or times
    out."""
    cmd = [binary, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + profile] + extra + [url]
    # Chromium refuses to start its sandbox as root, and many containers cannot
    # give it one; it only opens this folder's own pages here.
    cmd.insert(1, "--no-sandbox")
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("chromium did not finish in %d s: %s" % (timeout, " ".join(cmd)))
    if proc.returncode != 0:
        raise AssertionError("chromium exited %d: %s\n%s" % (proc.returncode, " ".join(cmd), proc.stderr[-2000:]))
    return proc.stdout


def rgb(css):
    """(r, g, b) of a CSS colour string "rgb(r, g, b)" or "rgba(r, g, b, a)".
    Raises ValueError for other forms."""
    m = re.match(r"rgba?\((\d+),\s*(\d+),\s*(\d+)", css or "")
    if not m:
        raise ValueError("not an rgb() colour: %r" % css)
    return tuple(int(x) for x in m.groups())


def hue(colour):
    """The colour family a person would name for ``colour`` (an (r, g, b)
    tuple, 0-255): grey, red, yellow, green, purple, blue or other."""
    r, g, b = colour
    if max(colour) - min(colour) < 16:
        return "grey"
    if r >= g + 40 and r >= b + 40 and abs(g - b) < 30:
        return "red"
    if r >= b + 40 and g >= b + 40 and abs(r - g) < 30:
        return "yellow"
    if g >= r + 20 and g >= b + 20:
        return "green"
    if r >= g + 20 and b >= g + 40:
        return "purple"
    if b >= r + 40 and b >= g + 20:
        return "blue"
    return "other"


class _Urls(html.parser.HTMLParser):
    """Collects what in an HTML page could load something: tags that fetch
    (script, link, iframe...), URL attributes and inline CSS text."""

    FETCHING_TAGS = {"script", "link", "iframe", "frame", "object", "embed", "base", "audio", "video", "source",
                     "track", "portal", "applet"}
    URL_ATTRS = {"src", "href", "srcset", "action", "formaction", "data", "poster", "background", "ping", "manifest",
                 "xlink:href", "codebase", "cite", "longdesc", "lowsrc", "dynsrc", "usemap"}

    def __init__(self):
        super().__init__()
        self.tags, self.urls, self.css, self._in_style = [], [], [], False

    def handle_starttag(self, tag, attrs):
        """Records tag ``tag`` (str) and its ``attrs`` (list of (name, value)) when they could load or run something."""
        if tag in self.FETCHING_TAGS:
            self.tags.append(tag)
        for k, v in attrs:
            if k in self.URL_ATTRS:
                self.urls.append((tag, k, v or ""))
            if k == "style":
                self.css.append(v or "")
            if k.startswith("on"):
                self.tags.append("%s[%s]" % (tag, k))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        """Leaves a <style> element (``tag``: str)."""
        self._in_style = False

    def handle_data(self, data):
        """Keeps ``data`` (str) when inside a <style> element."""
        if self._in_style:
            self.css.append(data)


class ReportPage(unittest.TestCase):
    """report.html of the known matrix, as Chromium shows it."""

    @classmethod
    def setUpClass(cls):
        """Reads the report, writes what is under test and collects what
        the checks read. Raises AssertionError when that fails."""
        cls.dir = REPORT_DIR
        with open(os.path.join(cls.dir, "report.json"), encoding="utf-8") as f:
            cls.report = json.load(f)
        cls.error_target = error_target(cls.report)
        cls.page_path = htmlreport.write(cls.dir)
        with open(cls.page_path, encoding="utf-8") as f:
            cls.page = f.read()
        chromium = find_chromium()
        with open(os.path.join(cls.dir, "probe.html"), "w", encoding="utf-8") as f:
            f.write(PROBE % {"w": WIDTH, "h": HEIGHT})
        profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=cls.dir)
        try:
            dom = run_chromium(chromium, profile, ["--allow-file-access-from-files", "--virtual-time-budget=10000",
                                                   "--dump-dom"], "file://" + os.path.join(cls.dir, "probe.html"))
            cls.shot = os.path.join(cls.dir, "report.png")
            if os.path.exists(cls.shot):
                os.remove(cls.shot)
            run_chromium(chromium, profile, ["--screenshot=" + cls.shot, "--window-size=%d,%d" % (WIDTH, HEIGHT)],
                         "file://" + cls.page_path)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        m = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
        assert m, "the probe page's output is missing from Chromium's DOM dump:\n" + dom[:2000]
        import html as _html

        cls.seen = json.loads(_html.unescape(m.group(1)))
        assert "error" not in cls.seen, "the probe could not read report.html: %s" % cls.seen["error"]

    # ---- lookups and assertions ------------------------------------------

    def matrix_cell(self, target, prop):
        """The probed matrix cell of ``target`` in column ``prop``."""
        found = [c for c in self.seen["matrix"] if c["target"] == target and c["prop"] == prop]
        self.assertEqual(len(found), 1, "matrix cell %s x %s: found %d" % (target, prop, len(found)))
        return found[0]

    def result(self, target, key):
        """The result ``key`` of ``target`` in report.json."""
        for t in self.report["targets"]:
            if t["name"] == target:
                for r in t.get("results", []):
                    if r["key"] == key:
                        return r
        self.fail("no result %s of %s in report.json" % (key, target))

    def assertLooks(self, c, status, first_line):
        """``c`` (a probed cell) shows ``first_line`` as its first line and
        has the colour family of ``status``."""
        self.assertEqual(c["text"].split("\n")[0], first_line, c)
        self.assertEqual(hue(rgb(c["bg"])), EXPECTED_HUE[status],
                         "%s x %s: background %s, expected a %s one" % (c.get("target"), c["prop"], c["bg"],
                                                                       EXPECTED_HUE[status]))

    def assertNotMarked(self, c):
        """``c`` carries no unexpected-result marker: no "!" and a thin border."""
        self.assertNotIn("!", c["text"].split("\n")[0], c)
        self.assertLess(float(c["borderWidth"].rstrip("px")), 2, c)

    # ---- the matrix ----------------------------------------------------

    def test_columns_are_target_then_P1_to_P10(self):
        """Checks: columns are target then P1 to P10. Fails the test otherwise."""
        self.assertEqual(self.seen["columns"], ["target"] + ["P%d" % i for i in range(1, 11)])

    def test_silent_skip_P1_is_a_red_fail_with_its_reason(self):
        """Checks: silent skip P1 is a red fail with its reason. Fails the test otherwise."""
        c = self.matrix_cell("fixture-r5-silent-skip", "P1")
        self.assertLooks(c, "fail", "fail")
        self.assertIn("silent-skip", c["text"])
        self.assertIn(self.result("fixture-r5-silent-skip", "P1")["reason"], c["title"], "full reason in the tooltip")
        self.assertLess(len(c["text"]), 200, "the cell shows a shortened reason")
        self.assertNotMarked(c)  # the fixture's manifest expects this fail

    def test_well_behaved_P2_is_a_green_pass(self):
        """Checks: well behaved P2 is a green pass. Fails the test otherwise."""
        c = self.matrix_cell("fixture-well-behaved", "P2")
        self.assertLooks(c, "pass", "pass")
        self.assertIn("generated cases held", c["text"])
        self.assertNotMarked(c)

    def test_op_properties_aggregate_every_op_and_dtype(self):
        """Checks: op properties aggregate every op and dtype. Fails the test otherwise."""
        n = sum(1 for t in self.report["targets"] if t["name"] == "fixture-well-behaved"
                for r in t["results"] if r["property"] == "P5")
        self.assertGreater(n, 30)
        self.assertLooks(self.matrix_cell("fixture-well-behaved", "P5"), "pass", "pass %d/%d" % (n, n))
        self.assertLooks(self.matrix_cell("fixture-ops-returns-view", "P6"), "fail", "fail 4/4")
        self.assertLooks(self.matrix_cell("fixture-ops-returns-view", "P5"), "pass", "pass 4/4")

    def test_a_property_that_does_not_apply_is_a_grey_dash(self):
        """Checks: a property that does not apply is a grey dash. Fails the test otherwise."""
        for target, prop in (("fixture-r5-silent-skip", "P5"), ("fixture-ops-returns-view", "P1"),
                             ("fixture-well-behaved", "P9")):
            c = self.matrix_cell(target, prop)
            self.assertLooks(c, "na", "-")
            self.assertEqual(c["text"].strip(), "-")

    def test_an_unexpected_result_is_marked(self):
        """Checks: an unexpected result is marked. Fails the test otherwise."""
        c = self.matrix_cell("html-expects-pass", "P1")
        self.assertLooks(c, "fail", "!fail")
        self.assertGreaterEqual(float(c["borderWidth"].rstrip("px")), 3, c)
        self.assertEqual(hue(rgb(c["borderColor"])), "red", c)
        self.assertIn("UNEXPECTED", c["title"])

    def test_a_target_error_row_spans_the_properties_with_its_error(self):
        """Checks: a target error row spans the properties with its error. Fails the test otherwise."""
        cells = [c for c in self.seen["matrix"] if c["target"] == self.error_target]
        self.assertEqual(len(cells), 1, cells)
        c = cells[0]
        self.assertEqual(c["colspan"], 10)
        self.assertLooks(c, "error", "!target error")
        self.assertIn("no-such-installer.py", c["text"])
        self.assertGreaterEqual(float(c["borderWidth"].rstrip("px")), 3, c)

    def test_an_unverified_run_is_shown_as_unverified(self):
        """Checks: an unverified run is shown as unverified. Fails the test otherwise."""
        for prop in ("P1", "P2"):
            c = self.matrix_cell("html-stale-pin", prop)
            self.assertLooks(c, "unverified", "unverified \u00b7 pass")
            self.assertIn("sha256 mismatch", c["title"])
        self.assertLooks(self.matrix_cell("html-stale-pin", "P3"), "na", "-")

    def test_each_status_has_its_own_background(self):
        """Checks: each status has its own background. Fails the test otherwise."""
        by_status = {}
        for c in self.seen["matrix"] + self.seen["ops"]:
            by_status.setdefault(c["status"], set()).add(c["bg"])
        for status, colours in by_status.items():
            self.assertEqual(len(colours), 1, "status %s has several backgrounds: %s" % (status, colours))
        self.assertGreaterEqual(set(by_status), {"pass", "fail", "error", "na", "unverified"})
        backgrounds = [next(iter(v)) for v in by_status.values()]
        self.assertEqual(len(set(backgrounds)), len(backgrounds), by_status)

    # ---- the op sub-table ------------------------------------------------

    def test_op_subtable_has_one_row_per_op_and_dtype(self):
        """Checks: op subtable has one row per op and dtype. Fails the test otherwise."""
        cells = [c for c in self.seen["ops"] if c["target"] == "fixture-ops-returns-view"]
        self.assertEqual({c["dtype"] for c in cells}, {"float32", "float16", "bfloat16", "int32"})
        self.assertEqual({c["op"] for c in cells}, {"pow.Tensor_Scalar"})
        for c in cells:
            if c["prop"] == "P6":
                self.assertLooks(c, "fail", "fail")
                self.assertIn("shares storage", c["text"])
                self.assertIn(self.result(c["target"], "P6/pow.Tensor_Scalar/" + c["dtype"])["reason"], c["title"])
            else:
                self.assertEqual(c["prop"], "P5")
                self.assertLooks(c, "pass", "pass")

    # ---- the summary -----------------------------------------------------

    def test_summary_lists_the_unexpected_results_before_the_counts(self):
        """Checks: summary lists the unexpected results before the counts. Fails the test otherwise."""
        s = self.seen["summary"]
        first = s.index("Unexpected results (%d)" % len(self.report["summary"]["unexpected"]))
        counts = s.index("pass %d" % self.report["summary"]["results"]["pass"])
        self.assertLess(first, counts, s)
        for name in ("html-expects-pass", self.error_target):
            self.assertTrue(first < s.index(name) < counts, "%s not listed among the unexpected results" % name)

    # ---- nothing from the network ------------------------------------------

    def test_the_page_names_no_url_but_data_and_anchors(self):
        """Checks: the page names no url but data and anchors. Fails the test otherwise."""
        p = _Urls()
        p.feed(self.page)
        self.assertEqual(p.tags, [], "tags that load or run something")
        for tag, attr, url in p.urls:
            ok = url.startswith("#") if attr == "href" else url.startswith("data:")
            self.assertTrue(ok, "<%s %s=%r> would load from outside the page" % (tag, attr, url[:80]))
        css = "\n".join(p.css)
        self.assertNotIn("@import", css)
        for m in re.finditer(r"url\(\s*['\"]?([^'\")]*)", css):
            self.assertTrue(m.group(1).startswith("data:"), "CSS url(%s)" % m.group(1)[:80])
        self.assertIn("default-src 'none'", self.page, "the Content-Security-Policy forbids loads")

    def test_chromium_loaded_nothing_for_the_page(self):
        """Checks: chromium loaded nothing for the page. Fails the test otherwise."""
        self.assertEqual([u for u in self.seen["resources"] if not u.startswith("data:")], [])
        for img in self.seen["images"]:
            self.assertTrue(img["complete"] and img["width"] > 0, img)

    # ---- the screenshot ----------------------------------------------------

    def test_screenshot_shows_the_cells_colours(self):
        """Checks: screenshot shows the cells colours. Fails the test otherwise."""
        from PIL import Image

        with Image.open(self.shot) as im:
            self.assertEqual(im.size, (WIDTH, HEIGHT))
            rgbim = im.convert("RGB")
            for target, prop in (("fixture-r5-silent-skip", "P1"), ("fixture-well-behaved", "P2"),
                                 ("html-expects-pass", "P1"), (self.error_target, "*"),
                                 ("html-stale-pin", "P1"), ("fixture-r5-silent-skip", "P9")):
                c = self.matrix_cell(target, prop)
                left, top, right, bottom = (int(round(v)) for v in c["box"])
                self.assertLess(bottom, HEIGHT, "%s x %s is below the screenshot" % (target, prop))
                region = rgbim.crop((left + 4, top + 4, right - 4, bottom - 4))
                colours = region.getcolors(region.size[0] * region.size[1])
                most = max(colours)[1]
                self.assertEqual(hue(most), EXPECTED_HUE[c["status"]],
                                 "%s x %s (%s): the screenshot shows %s there" % (target, prop, c["status"], most))


def main():
    """Command line; see the module docstring."""
    global REPORT_DIR
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--report-dir", required=True)
    a, rest = ap.parse_known_args()
    REPORT_DIR = os.path.abspath(a.report_dir)
    prog = unittest.main(argv=[sys.argv[0], "-v"] + rest, exit=False)
    shot = os.path.join(REPORT_DIR, "report.png")
    print("screenshot: %s" % shot if os.path.isfile(shot) else "no screenshot was taken")
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
