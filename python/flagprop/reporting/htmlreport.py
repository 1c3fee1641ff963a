"""report.html: one self-contained page for a person, made from report.json.

``python3 -m flagprop.reporting.htmlreport REPORT_DIR`` writes ``REPORT_DIR/report.html``
from ``REPORT_DIR/report.json`` (schema ``flagprop.report/1``). The page needs
nothing but itself: the stylesheet is inline, the P9 plots are embedded as
``data:`` URIs, there is no script, and a Content-Security-Policy forbids
loading anything else. Standard library only; every text from the report is
HTML-escaped.

Top to bottom the page shows: the summary (unexpected results first, then the
result counts and target errors), a legend, the matrix (one row per target,
one column per property P1..P9, each cell's status colour-coded and its
one-line reason shortened, the full reason in the tooltip), then one section
per target: its provenance, its op x dtype sub-table (P5..P9), its failures
(reason, evidence, shrunk counterexample, replay command, reproducer) and its
P9 plots.
"""

import base64
import html
import json
import os
import re
import shlex
import sys

SCHEMA = "flagprop.report/1"

#: The properties every matrix shows, in order, with the title used when no
#: result carries one (the same titles ``flagprop properties`` prints).
#: Cell background per displayed status (CSS colours). "na" is a property
#: that does not apply to the target ("-"); "unverified" a result of a run
#: whose pinned files or versions did not match.
STATUS_COLOURS = {
    "pass": "#c6efce",
    "fail": "#ffb3b3",
    "flaky": "#ffd9a8",
    "skip": "#fff2b3",
    "error": "#d7b5f5",
    "na": "#f4f4f4",
    "unverified": "#b8d4f5",
}

#: Worst-first order of result statuses when a cell aggregates many results.
STATUS_RANK = {"pass": 0, "skip": 1, "flaky": 2, "fail": 3, "error": 4}

#: Op sub-tables with more rows than this are collapsed (a <details> element),
#: with the rows that need attention shown above them.
OPS_OPEN_LIMIT = 40

#: The summary lists this many unexpected results; the rest are collapsed.
UNEXPECTED_SHOWN = 12

#: A counterexample's pretty JSON is cut at this many characters.
COUNTEREXAMPLE_LIMIT = 6000

#: Plots larger than this many bytes are not embedded (the page says so).
PLOT_LIMIT = 5 * 1024 * 1024

_CSS = """
body{font:14px/1.35 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:16px 22px;
color:#1a1a1a;background:#fff}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:22px 0 8px;border-bottom:1px solid #ccc;padding-bottom:2px}
h3{font-size:16px;margin:18px 0 6px}
h4{font-size:14px;margin:10px 0 4px}
code,pre{font:12px/1.3 "DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{background:#f7f7f7;border:1px solid #ddd;padding:6px 8px;overflow-x:auto;max-height:32em;margin:4px 0}
.meta{color:#444;margin:2px 0}
.verdict{padding:6px 10px;margin:6px 0;font-weight:600;border-radius:3px}
.verdict.good{background:#c6efce}
.verdict.bad{background:#ffb3b3;border:3px solid #c00000}
.chips span{display:inline-block;padding:2px 8px;margin:2px 4px 2px 0;border:1px solid #bbb;border-radius:3px}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border:1px solid #bbb;padding:2px 5px;vertical-align:top;text-align:left}
thead th{background:#eee;position:sticky;top:0}
.pt{display:block;font-weight:normal;font-size:11px;color:#444}
td.c{width:8.8em;max-width:8.8em;font-size:12px}
td.c .s{font-weight:700;display:block;white-space:nowrap}
td.c .r{display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden;color:#333;
font-size:11px;word-break:break-word}
table.ops td.c{width:14em;max-width:14em}
th.tn{white-space:nowrap;font-weight:600}
th.tn .pin,th.tn .note{display:block;font-weight:normal;font-size:11px;color:#444}
th.tn .note{color:#900}
.bang{color:#c00000;font-weight:800;margin-right:2px}
.unexp{border:3px solid #c00000 !important}
.legend span{display:inline-block;padding:1px 8px;margin-right:4px;border:1px solid #bbb}
.target{border-top:1px solid #ddd;margin-top:14px}
.prov{font-size:12px;color:#333;margin:2px 0 6px}
.prov div{margin:1px 0}
.failure{border-left:5px solid #e06666;padding:2px 0 4px 10px;margin:10px 0}
.failure.unexpected{border-left:5px solid #c00000;background:#fff6f6}
.failure.errorres{border-left-color:#9b59d0}
.reason{white-space:pre-wrap;word-break:break-word;margin:4px 0}
.badge{padding:0 6px;border:1px solid #999;border-radius:3px;font-weight:700}
.distinct{margin-left:16px;border-left:3px dotted #e06666;padding-left:8px}
.muted{color:#666}
figure{display:inline-block;margin:6px 12px 6px 0}
figure img{max-width:100%;border:1px solid #ccc}
figcaption{font-size:12px;color:#333;max-width:60em}
ul.ev{margin:2px 0 4px 18px;padding:0}
details>summary{cursor:pointer;color:#234}
"""


def _e(value):
    """HTML-escapes ``value`` (any object, shown with ``str``; None as "")
    for text and attribute positions. Returns a str."""
    return html.escape("" if value is None else str(value), quote=True)


def shorten(text, limit):
    """One line of at most ``limit`` characters from ``text`` (a str or None):
    whitespace runs become one space, and a cut line ends in an ellipsis.
    Returns a str."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "\u2026"


def anchor(*parts):
    """A stable HTML id made from ``parts`` (strs): characters other than
    letters, digits, ``.``, ``_`` and ``-`` become ``_``. Returns a str."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", "-".join(str(p) for p in parts if p is not None))


def _css():
    """The page's stylesheet: the fixed rules plus one background rule per
    entry of ``STATUS_COLOURS``. Returns a str."""
    rules = "".join(".st-%s{background:%s}" % (k, v) for k, v in STATUS_COLOURS.items())
    return _CSS + rules + ".st-na{color:#888;text-align:center}\n"


def registry_titles(report):
    """The property registry the run had (report.json's ``properties``, in
    order) as {id: title}; {} for a report without one."""
    return {p["id"]: p.get("title", "") for p in report.get("properties") or [] if isinstance(p, dict) and "id" in p}


def _title_of(prop, results, titles=None):
    """The title of property ``prop`` (e.g. "P5"): the first one a result
    in ``results`` (dicts) carries, else ``titles`` (``registry_titles``),
    else ""."""
    for r in results:
        if r.get("property") == prop and r.get("title"):
            return r["title"]
    return (titles or {}).get(prop, "")


def property_columns(report):
    """The matrix's columns: every property of the run's registry (report.json's
    ``properties``, P1..P9), then any other property id the report's results
    carry (sorted), leaving out the pseudo-property "process" (a target
    process that ended outside a case). ``report`` is the parsed report.json
    (dict). Returns a list of str."""
    registry = list(registry_titles(report))
    extra = set()
    for t in report.get("targets") or []:
        for r in t.get("results") or []:
            p = r.get("property")
            if p and p not in registry and p != "process":
                extra.add(p)
    return registry + sorted(extra)


def _is_unverified(target, result):
    """Whether ``result`` (dict) of ``target`` (dict) comes from a run whose
    pinned files or versions did not match (the target's ``unverified`` list
    or the result's own flag). Returns a bool."""
    return bool(target.get("unverified")) or bool(result.get("unverified"))


def _is_unexpected(result):
    """Whether ``result`` (dict) is not what its manifest expects: its
    ``as_expected`` is false. A result without the field counts as expected
    when it passed or skipped. Returns a bool."""
    if "as_expected" in result:
        return not result["as_expected"]
    return result.get("status") not in ("pass", "skip")


def aggregate(target, results, cell=None):
    """The one cell that stands for ``results`` (a list of result dicts of
    ``target``, one property): one result (an op x dtype cell), or a
    property's results with ``cell``, their matrix cell as report.json
    carries it (``targets[].matrix``, computed once by flagprop for the
    console, report.md and this page). Returns a dict: ``status`` (the
    displayed status: "na" when there are no results, "unverified" for an
    unverified run, else the worst result status), ``worst`` (the worst
    result status), ``label`` (e.g. "fail", "fail 4/4", "unverified ·
    pass"), ``reason`` (one line for the cell), ``tooltip`` (the full
    reasons), ``unexpected`` (how many results are not what the manifest
    expects) and ``first`` (the first result with the worst status, or
    None). Several results without their cell (a report.json written before
    flagprop exported the matrix) get the cell computed here the same way."""
    if not results:
        return {"status": "na", "worst": None, "label": "-", "reason": "", "tooltip": "does not apply to this target",
                "unexpected": 0, "first": None}
    if cell is not None:
        worst, label, unexpected = cell["status"], cell["label"].rstrip("!"), cell["unexpected"]
    elif len(results) == 1:
        worst = label = results[0].get("status", "error")
        unexpected = 1 if _is_unexpected(results[0]) else 0
    else:  # a report.json written before targets[].matrix existed: the cell as reports/report.h computes it
        worst = max((r.get("status", "error") for r in results), key=lambda st: STATUS_RANK.get(st, 4))
        count = sum(1 for r in results if r.get("status", "error") == worst)
        label = "%s %d/%d" % (worst, count, len(results)) if any(r.get("op") for r in results) else worst
        unexpected = sum(1 for r in results if _is_unexpected(r))
    of_worst = [r for r in results if r.get("status", "error") == worst] or results
    unverified = any(_is_unverified(target, r) for r in results)
    first = of_worst[0]
    if len(results) == 1:
        reason = first.get("reason", "")
        lines = [reason]
    else:
        reasons = {r.get("reason", "") for r in of_worst}
        where = "%s %s: " % (first.get("op", ""), first.get("dtype", "")) if first.get("op") else ""
        reason = where + first.get("reason", "") if len(reasons) > 1 else first.get("reason", "")
        lines = ["%s %s: %s: %s" % (r.get("op", ""), r.get("dtype", ""), r.get("status", ""), r.get("reason", ""))
                 for r in sorted(results, key=lambda r: -STATUS_RANK.get(r.get("status"), 4))[:8]]
        if len(results) > 8:
            lines.append("\u2026 and %d more" % (len(results) - 8))
    if unexpected:
        lines.insert(0, "UNEXPECTED: %d result(s) not as the manifest expects (expected %s)"
                     % (unexpected, first.get("expected", "pass or skip")))
    else:
        lines.append("as the manifest expects (%s)" % first.get("expected", "pass or skip"))
    status = worst
    if unverified:
        status = "unverified"
        label = "unverified \u00b7 " + label
        lines.insert(0, "UNVERIFIED run: " + "; ".join(target.get("unverified") or ["pinned files or versions did not match"]))
    return {"status": status, "worst": worst, "label": label, "reason": reason, "tooltip": "\n".join(lines),
            "unexpected": unexpected, "first": first}


def _cell(agg, prop, limit, link=None):
    """The <td> of one aggregated cell ``agg`` (from ``aggregate``) in column
    ``prop``; its reason is cut to ``limit`` characters; ``link`` (an id or
    None) makes the status a link to that element. Returns HTML (str)."""
    classes = ["c", "st-" + agg["status"]]
    bang = ""
    if agg["unexpected"]:
        classes.append("unexp")
        bang = '<span class="bang">!</span>'
    status = _e(agg["label"])
    if link:
        status = '<a href="#%s">%s</a>' % (_e(link), status)
    reason = '<span class="r">%s</span>' % _e(shorten(agg["reason"], limit)) if agg["reason"] else ""
    return '<td class="%s" data-prop="%s" data-status="%s" title="%s"><span class="s">%s%s</span>%s</td>' % (
        " ".join(classes), _e(prop), _e(agg["status"]), _e(agg["tooltip"]), bang, status, reason)


class _Ids:
    """Unique HTML ids for failures: ``take(*parts)`` returns ``anchor(*parts)``
    the first time and appends "-2", "-3"... on later calls with the same
    parts. ``find(target, key)`` returns the id given to a target's result key
    (or None)."""

    def __init__(self):
        self._used = set()
        self._by_result = {}

    def take(self, *parts):
        """A fresh id from ``parts``; see the class. Returns a str."""
        base = anchor("f", *parts)
        name, n = base, 1
        while name in self._used:
            n += 1
            name = "%s-%d" % (base, n)
        self._used.add(name)
        return name

    def remember(self, target, key, ident):
        """Records ``ident`` (str) as the id of ``target``'s result ``key``."""
        self._by_result.setdefault((target, key), ident)

    def find(self, target, key):
        """The id recorded for ``target``'s result ``key``, or None."""
        return self._by_result.get((target, key))


def _failing(result):
    """Whether ``result`` (dict) gets a failure block: status fail, flaky or error."""
    return result.get("status") in ("fail", "flaky", "error")


def _assign_ids(report):
    """Gives every failing result of ``report`` (dict) an id, in page order.
    Returns an ``_Ids``."""
    ids = _Ids()
    for t in report.get("targets") or []:
        for r in t.get("results") or []:
            if _failing(r):
                ids.remember(t.get("name"), r.get("key"), ids.take(t.get("name"), r.get("key")))
    return ids


def _header(report):
    """The page's heading and run provenance (seed, command, versions,
    manifests). ``report`` is the parsed report (dict). Returns HTML."""
    prov = report.get("provenance") or {}
    out = ["<header><h1>flagprop report</h1>"]
    if prov.get("reproduce"):
        out.append('<p class="meta">replay of reproduce string <code>%s</code></p>' % _e(prov["reproduce"]))
    else:
        seed = prov.get("seed", "?")
        rerun = prov.get("rerun")  # the run's own options with its seed (report.md prints the same)
        if not rerun:  # a report of an older flagprop: its manifests and seed
            words = [prov.get("flagprop") or "flagprop", "run"]
            for m in prov.get("manifests") or []:
                words += ["--manifest", m]
            words += ["--seed", str(seed), "--report-dir", "flagprop-rerun"]
            rerun = " ".join(shlex.quote(str(a)) for a in words)
        out.append('<p class="meta">seed <b>%s</b> &middot; rerun: <code>%s</code></p>' % (_e(seed), _e(rerun)))
    if prov.get("command"):
        out.append('<p class="meta">command: <code>%s</code></p>'
                   % _e(" ".join(shlex.quote(str(a)) for a in prov["command"])))
    versions = prov.get("versions") or {}
    if versions:
        out.append('<p class="meta">versions: %s</p>' % " &middot; ".join(
            "%s <code>%s</code>" % (_e(k), _e("-" if v is None else v)) for k, v in sorted(versions.items())))
    out.append('<p class="meta">python <code>%s</code> &middot; report folder <code>%s</code> &middot; schema <code>%s</code></p>'
               % (_e(prov.get("python", "")), _e(prov.get("report_dir", "")), _e(report.get("schema", ""))))
    out.append("</header>")
    return "\n".join(out)


def _find_result(report, entry):
    """The result of ``report`` (dict) that a ``summary.unexpected`` entry
    (dict: target, property, op?, dtype?) names, or None."""
    for t in report.get("targets") or []:
        if t.get("name") != entry.get("target"):
            continue
        for r in t.get("results") or []:
            if (r.get("property") == entry.get("property") and r.get("op") == entry.get("op")
                    and r.get("dtype") == entry.get("dtype")):
                return r
    return None


def _summary(report, ids):
    """The summary: the verdict line, the unexpected results (linked to
    their failure blocks; target errors, then fails, then the rest; after
    ``UNEXPECTED_SHOWN`` collapsed), the counts and the legend. ``ids`` is the page's
    ``_Ids``. Returns HTML."""
    s = report.get("summary") or {}
    counts = s.get("results") or {}
    # Target errors first (nothing ran), then fails (findings), then the rest.
    severity = {"fail": 1, "error": 2}
    unexpected = sorted(s.get("unexpected") or [], key=lambda u: 0 if not u.get("property")
                        else severity.get(u.get("status"), 3))
    errors = s.get("target_errors", 0)
    out = ['<section id="summary"><h2>Summary</h2>']
    if unexpected or errors:
        out.append('<div class="verdict bad">%d unexpected result(s), %d target error(s): listed first below.</div>'
                   % (len(unexpected), errors))
    else:
        out.append('<div class="verdict good">No unexpected result: every result is what its manifest expects.</div>')
    out.append("<h3>Unexpected results (%d)</h3>" % len(unexpected))
    head = ('<table class="unexpected"><thead><tr><th>target</th><th>result</th><th>status</th>'
            "<th>expected</th><th>reason</th></tr></thead><tbody>")
    if unexpected:
        out.append(head)
        for i, u in enumerate(unexpected):
            if i == UNEXPECTED_SHOWN:
                out.append("</tbody></table><details><summary>%d more unexpected result(s)</summary>%s"
                           % (len(unexpected) - UNEXPECTED_SHOWN, head))
            r = _find_result(report, u) if u.get("property") else None
            key = r.get("key") if r else (u.get("property") or "target")
            status = u.get("status") or "error"
            link = ids.find(u.get("target"), key) if r else anchor("t", u.get("target"))
            expected = r.get("expected", "pass or skip") if r else "a loadable target"
            shown = _e(key) if not link else '<a href="#%s">%s</a>' % (_e(link), _e(key))
            out.append('<tr><td>%s</td><td>%s</td><td class="c st-%s unexp">'
                       '<span class="s"><span class="bang">!</span>%s</span></td>'
                       '<td>%s</td><td title="%s">%s</td></tr>'
                       % (_e(u.get("target")), shown, _e(status), _e(status), _e(expected),
                          _e(u.get("reason")), _e(shorten(u.get("reason"), 160))))
        out.append("</tbody></table>" + ("</details>" if len(unexpected) > UNEXPECTED_SHOWN else ""))
    else:
        out.append('<p class="muted">none</p>')
    out.append('<p class="chips">')
    for k in ("pass", "fail", "flaky", "skip", "error"):
        if k != "flaky" or counts.get(k):  # flaky only where a run had one, as the console's summary
            out.append('<span class="st-%s">%s <b>%s</b></span>' % (k, k, _e(counts.get(k, 0))))
    out.append('<span>targets <b>%s</b></span><span class="%s">target errors <b>%s</b></span></p>'
               % (_e(s.get("targets", len(report.get("targets") or []))), "st-error" if errors else "", _e(errors)))
    out.append('<p class="legend">legend: ' + "".join(
        '<span class="st-%s">%s</span>' % (k, _e(v)) for k, v in (
            ("pass", "pass"), ("fail", "fail"), ("flaky", "flaky"), ("skip", "skip"), ("error", "error"),
            ("na", "- does not apply"),
            ("unverified", "unverified run"))) +
        '<span class="unexp"><span class="bang">!</span>not what the manifest expects</span>'
        ' &middot; <span class="muted" style="border:0">hover a cell for its full reason; "fail 4/4": the worst status '
        'and how many of the op &times; dtype runs had it</span></p>')
    out.append("</section>")
    return "\n".join(out)


def _target_note(t):
    """The small lines under a target's name in the matrix: pin, crash,
    unverified. ``t`` is a target dict. Returns HTML."""
    out = []
    pin = (t.get("provenance") or {}).get("pin")
    if isinstance(pin, dict) and pin.get("name"):
        out.append('<span class="pin" title="%s">pin %s</span>' % (_e(pin.get("path", "")), _e(pin["name"])))
    if t.get("crash"):
        out.append('<span class="note">process ended: %s</span>' % _e(shorten(t["crash"], 60)))
    for c in t.get("crashes") or []:
        out.append('<span class="note" title="%s">crash at %s</span>' % (_e(c.get("why", "")), _e(c.get("key", ""))))
    if t.get("unverified"):
        out.append('<span class="note">unverified: %s</span>' % _e(shorten("; ".join(t["unverified"]), 60)))
    return "".join(out[:4]) + ('<span class="note">\u2026</span>' if len(out) > 4 else "")


def _matrix(report, columns, ids):
    """The target x property matrix. ``columns`` from ``property_columns``;
    ``ids`` the page's ``_Ids``. A target with status "error" is one row
    whose error spans the property columns. Returns HTML."""
    targets = report.get("targets") or []
    out = ['<section id="matrix"><h2>Matrix</h2>', '<table class="matrix"><thead><tr><th>target</th>']
    for p in columns:
        title = _title_of(p, [r for t in targets for r in (t.get("results") or [])], registry_titles(report))
        out.append('<th title="%s">%s<span class="pt">%s</span></th>' % (_e(title), _e(p), _e(title)))
    out.append("</tr></thead><tbody>")
    for i, t in enumerate(targets):
        name = t.get("name", "?")
        head = '<th class="tn"><a href="#%s">%s</a>%s</th>' % (_e(anchor("t", name)), _e(name), _target_note(t))
        if t.get("status") != "ok":
            err = t.get("error") or t.get("crash") or "target error"
            out.append('<tr data-target="%s">%s<td class="c st-error unexp" colspan="%d" data-prop="*" data-status="error" '
                       'title="%s"><span class="s"><span class="bang">!</span>target error</span>'
                       '<span class="r">%s</span></td></tr>'
                       % (_e(name), head, len(columns), _e(err), _e(shorten(err, 200))))
            continue
        results = [r for r in (t.get("results") or []) if isinstance(r, dict)]
        exported = {c["property"]: c for c in t.get("matrix") or [] if isinstance(c, dict) and "property" in c}
        cells = []
        for p in columns:
            mine = [r for r in results if r.get("property") == p]
            agg = aggregate(t, mine, exported.get(p))
            link = ids.find(name, agg["first"].get("key")) if agg["first"] is not None and _failing(agg["first"]) else None
            cells.append(_cell(agg, p, 60, link))
        out.append('<tr data-target="%s">%s%s</tr>' % (_e(name), head, "".join(cells)))
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _op_rows(t):
    """A target's op results by (op, dtype), in the order they first appear.
    ``t`` is a target dict. Returns a list of ((op, dtype), {property:
    result})."""
    rows = {}
    for r in t.get("results") or []:
        if isinstance(r, dict) and r.get("op"):
            rows.setdefault((r.get("op"), r.get("dtype", "")), {})[r.get("property")] = r
    return list(rows.items())


def _op_table(t, rows, props, ids, caption=""):
    """One op x dtype table of target ``t`` over ``rows`` (from ``_op_rows``)
    and the op properties ``props`` (list of str). Returns HTML."""
    name = t.get("name", "?")
    out = ['<table class="ops" data-target="%s">%s<thead><tr><th>op</th><th>dtype</th>' % (
        _e(name), "<caption>%s</caption>" % _e(caption) if caption else "")]
    for p in props:
        title = _title_of(p, t.get("results") or [])
        out.append('<th title="%s">%s<span class="pt">%s</span></th>' % (_e(title), _e(p), _e(title)))
    out.append("</tr></thead><tbody>")
    for (op, dtype), by_prop in rows:
        cells = []
        for p in props:
            r = by_prop.get(p)
            agg = aggregate(t, [r] if r else [])
            link = ids.find(name, r.get("key")) if r and _failing(r) else None
            cells.append(_cell(agg, p, 48, link))
        out.append('<tr data-op="%s" data-dtype="%s"><td>%s</td><td>%s</td>%s</tr>'
                   % (_e(op), _e(dtype), _e(op), _e(dtype), "".join(cells)))
    out.append("</tbody></table>")
    return "".join(out)


def _ops_section(t, columns, ids):
    """The op x dtype sub-table of target ``t`` (one row per op and dtype,
    one column per op property it ran), or "" when it has no op results.
    More than ``OPS_OPEN_LIMIT`` rows are collapsed, with the rows that need
    attention (fail, error, unexpected, unverified) shown first. Returns
    HTML."""
    rows = _op_rows(t)
    if not rows:
        return ""
    present = {p for _, by in rows for p in by}
    props = [p for p in columns if p in present]
    counts = {}
    for _, by in rows:
        for r in by.values():
            counts[r.get("status")] = counts.get(r.get("status"), 0) + 1
    tally = ", ".join("%s %d" % (k, counts[k]) for k in sorted(counts, key=lambda s: STATUS_RANK.get(s, 4)))
    what = "%d op \u00d7 dtype run(s) (%s)" % (len(rows), tally)
    if len(rows) <= OPS_OPEN_LIMIT:
        return '<details open><summary>ops: %s</summary>%s</details>' % (_e(what), _op_table(t, rows, props, ids))
    attention = [(k, by) for k, by in rows if any(
        _failing(r) or _is_unexpected(r) or _is_unverified(t, r) for r in by.values())]
    out = []
    if attention:
        out.append(_op_table(t, attention, props, ids, "op \u00d7 dtype runs that need attention (%d)" % len(attention)))
    out.append('<details><summary>all ops: %s</summary>%s</details>' % (_e(what), _op_table(t, rows, props, ids)))
    return "".join(out)


def _provenance(t):
    """The provenance lines of target ``t`` (dict): manifest, labels, pin,
    device, versions, SHA256s seen, native runtime, unverified, crashes.
    Returns HTML."""
    p = t.get("provenance") or {}
    out = ['<div class="prov">']
    if t.get("description"):
        out.append("<div>%s</div>" % _e(t["description"]))
    out.append("<div>manifest <code>%s</code>%s</div>" % (
        _e(t.get("manifest", "")), " &middot; labels " + _e(", ".join(t.get("labels") or [])) if t.get("labels") else ""))
    pin = p.get("pin")
    if isinstance(pin, dict):
        out.append("<div>pin <b>%s</b> <code>%s</code></div>" % (_e(pin.get("name", "")), _e(pin.get("path", ""))))
    facts = []
    if p.get("device"):
        facts.append("device <code>%s</code>" % _e(p["device"]))
    for k, v in sorted((p.get("versions") or {}).items()):
        if v is not None:
            facts.append("%s <code>%s</code>" % (_e(k), _e(v)))
    if p.get("libtorch_compiled"):
        facts.append("LibTorch compiled <code>%s</code>" % _e(p["libtorch_compiled"]))
    if facts:
        out.append("<div>%s</div>" % " &middot; ".join(facts))
    for k in sorted(k for k in p if k.endswith("_sha256")):
        if p[k]:
            out.append("<div>%s <code>%s</code></div>" % (_e(k.replace("_", " ")), _e(p[k])))
    runtime = p.get("native_runtime")
    if isinstance(runtime, dict) and runtime:
        out.append("<div>native runtime: %s</div>" % " &middot; ".join(
            "%s %s" % (_e(k), _e(v.get("status", "") if isinstance(v, dict) else v)) for k, v in sorted(runtime.items())))
    for m in t.get("unverified") or []:
        out.append('<div class="st-unverified">unverified run: %s (every result of this target is marked unverified)</div>'
                   % _e(m))
    if t.get("crash"):
        out.append('<div class="st-error">process ended: %s</div>' % _e(t["crash"]))
    for c in t.get("crashes") or []:
        out.append("<div>crash at <code>%s</code>: %s (a fresh process went on)</div>"
                   % (_e(c.get("key", "")), _e(c.get("why", ""))))
    out.append("</div>")
    return "".join(out)


def compact_json(value, width=160, indent=0):
    """JSON text of ``value`` (any JSON-serialisable object) for reading:
    an array or object whose one-line form fits in ``width`` characters at
    nesting depth ``indent`` stays on one line; a longer one puts each item on
    its own line, indented by two spaces per level. Returns a str. Raises
    TypeError for objects JSON cannot hold (as json.dumps does)."""
    flat = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(flat) + 2 * indent <= width or not isinstance(value, (list, dict)) or not value:
        return flat
    pad = "  " * (indent + 1)
    if isinstance(value, list):
        items = [pad + compact_json(v, width, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    items = [pad + json.dumps(str(k), ensure_ascii=False) + ": " + compact_json(v, width, indent + 1).lstrip()
             for k, v in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"


def _pretty(value, limit=COUNTEREXAMPLE_LIMIT):
    """Readable JSON of ``value`` (``compact_json``) cut to ``limit``
    characters, with a note of how much was left out. Returns (text, full
    length)."""
    try:
        text = compact_json(value)
    except TypeError:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text, len(text)
    return text[:limit] + "\n\u2026 (%d more characters; the whole counterexample is in report.json)" % (
        len(text) - limit), len(text)


def _evidence(obs):
    """The evidence lines of one failure's observations ``obs`` (dict):
    exceptions caught, crash, numerics and aliasing findings, finding kinds.
    Returns HTML (a <ul>, or "")."""
    items = []
    for x in obs.get("exceptions_caught") or []:
        items.append("exception caught inside the installer: <code>%s</code> at <code>%s:%s</code> in <code>%s()</code>: %s"
                     % (_e(x.get("type")), _e(x.get("file")), _e(x.get("line")), _e(x.get("function")), _e(x.get("message"))))
    if obs.get("crash"):
        items.append("process ended: %s" % _e(obs["crash"]))
    if obs.get("harness_error"):
        items.append("harness error: %s" % _e(shorten(obs["harness_error"], 400)))
    for k in ("numerics", "aliasing"):
        for f in (obs.get(k) or [])[:12]:
            items.append("%s: %s" % (_e(k), _e(f)))
    kinds = obs.get("kinds") or ([obs["finding_kind"]] if obs.get("finding_kind") else [])
    if kinds:
        items.append("finding kind(s): %s" % _e("; ".join(str(k) for k in kinds)))
    return '<ul class="ev">%s</ul>' % "".join("<li>%s</li>" % i for i in items) if items else ""


def replay_command(prov, manifest, key, reproduce):
    """The flagprop command that replays ``reproduce`` (run key ``key``, the
    target's ``manifest``), for a report.json written before results carried
    their ``replay`` (reports/report.cpp ``replayCommand`` writes it now, with
    the same quoting)."""
    cmd = [prov.get("flagprop") or "flagprop", "run", "--manifest", manifest, "--property", key,
           "--reproduce", reproduce, "--report-dir", "flagprop-replay"]
    return " ".join(shlex.quote(str(a)) for a in cmd)


def _replay(report, t, key, reproduce, reproducer, reproducer_error=None, replay=None):
    """How to replay one failure: the flagprop command with its reproduce
    string (``replay``, report.json's, when given) and the standalone
    reproducer's command. Returns HTML."""
    prov = report.get("provenance") or {}
    out = []
    if reproduce:
        cmd = replay or replay_command(prov, t.get("manifest", ""), key, reproduce)
        out.append("<div>replay in flagprop: <code>%s</code></div>" % _e(cmd))
    if reproducer:
        shown, where = str(reproducer), ""
        folder = prov.get("report_dir") or ""
        if folder and shown.startswith(folder.rstrip("/") + "/"):  # run from the report folder, wherever it is
            shown, where = os.path.relpath(shown, folder), ", from the report folder"
        out.append("<div>standalone reproducer (exit 1: reproduced%s): <code>%s %s</code></div>"
                   % (where, _e(os.path.basename(prov.get("python") or "python3") if where else
                                (prov.get("python") or "python3")), _e(shlex.quote(shown))))
    if reproducer_error:
        out.append('<div class="st-error">no reproducer: %s</div>' % _e(reproducer_error))
    return "".join(out)


def _counterexample(value):
    """The shrunk counterexample ``value`` in a <details> (open when short).
    Returns HTML, or "" when there is none."""
    if value is None or value == "":
        return ""
    text, n = _pretty(value)
    return '<details%s><summary>shrunk counterexample (%d characters of JSON)</summary><pre>%s</pre></details>' % (
        " open" if n <= 1500 else "", n, _e(text))


def _failure(report, t, r, ident):
    """The block of one failing result ``r`` of target ``t`` with HTML id
    ``ident``: reason, evidence, counterexample, replay, and each of its
    distinct failures. Returns HTML."""
    obs = r.get("observations") if isinstance(r.get("observations"), dict) else {}
    unexpected = _is_unexpected(r)
    classes = "failure" + (" unexpected" if unexpected else "") + (" errorres" if r.get("status") == "error" else "")
    label = " \u00b7 ".join(x for x in (t.get("name", "?"), "%s %s" % (r.get("property", ""), r.get("title", "")),
                                          "%s %s" % (r.get("op", ""), r.get("dtype", "")) if r.get("op") else "") if x)
    if unexpected:
        expect = '<span class="bang">!</span><b>unexpected</b>: the manifest expects %s' % _e(r.get("expected", "pass or skip"))
    else:
        expect = '<span class="muted">as the manifest expects (%s)</span>' % _e(r.get("expected", ""))
    if _is_unverified(t, r):
        expect += ' <span class="badge st-unverified">unverified run</span>'
    out = ['<div class="%s" id="%s" data-key="%s">' % (classes, _e(ident), _e(r.get("key", ""))),
           '<h4><span class="badge st-%s">%s</span> %s &middot; %s</h4>' % (
               _e(r.get("status")), _e(r.get("status")), _e(label), expect),
           '<p class="reason">%s</p>' % _e(r.get("reason", "")),
           _evidence(obs),
           _counterexample(r.get("counterexample")),
           _replay(report, t, r.get("key", r.get("property", "")), r.get("reproduce"), r.get("reproducer"),
                   r.get("reproducer_error"), r.get("replay"))]
    distinct = obs.get("distinct_failures") or []
    for i, d in enumerate(distinct):
        dobs = d.get("observations") if isinstance(d.get("observations"), dict) else {}
        dobs = dict(dobs, kinds=d.get("kinds") or dobs.get("kinds"))
        out.append('<div class="distinct"><h4>distinct failure %d of %d</h4><p class="reason">%s</p>%s%s%s</div>' % (
            i + 2, len(distinct) + 1, _e(d.get("reason", "")), _evidence(dobs), _counterexample(d.get("counterexample")),
            _replay(report, t, r.get("key", r.get("property", "")), d.get("reproduce"), d.get("reproducer"),
                    replay=d.get("replay"))))
    out.append("</div>")
    return "".join(out)


def report_file(path, report_dir, folder):
    """Where a file the report names as ``path`` (str: a plot, a reproducer)
    is on disk: as given, else relative to ``report_dir``, else in
    ``report_dir``/``folder`` ("plots", "reproducers"). Returns the first
    that exists, or None (also for an empty ``path``)."""
    if not path:
        return None
    for cand in (path, os.path.join(report_dir, path), os.path.join(report_dir, folder, os.path.basename(path))):
        if os.path.isfile(cand):
            return cand
    return None


def _plots(t, report_dir):
    """The P9 plots of target ``t`` embedded as data: URIs, each with its
    op, dtype and reason as caption; a missing or too large plot is named
    instead. Returns HTML, or "" when the target has none."""
    out = []
    for r in t.get("results") or []:
        if not isinstance(r, dict) or not (r.get("plot") or r.get("plot_error")):
            continue
        caption = "%s %s %s: %s" % (r.get("property", ""), r.get("op", ""), r.get("dtype", ""), r.get("reason", ""))
        if r.get("plot_error") and not r.get("plot"):
            out.append('<p class="muted">%s (no plot: %s)</p>' % (_e(caption), _e(r["plot_error"])))
            continue
        found = report_file(str(r["plot"]), report_dir, "plots")
        if found is None:
            out.append('<p class="muted">%s (plot file not found: <code>%s</code>)</p>' % (_e(caption), _e(r["plot"])))
            continue
        size = os.path.getsize(found)
        if size > PLOT_LIMIT:
            out.append('<p class="muted">%s (plot of %d bytes not embedded: <code>%s</code>)</p>'
                       % (_e(caption), size, _e(found)))
            continue
        with open(found, "rb") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        out.append('<figure><img alt="%s" src="data:image/png;base64,%s"><figcaption>%s</figcaption></figure>'
                   % (_e("P9 A/B plot: " + caption), data, _e(caption)))
    if not out:
        return ""
    return "<h4>P9 A/B timing plots (A: patch on, B: patch off)</h4>" + "".join(out)


def _target_section(report, t, columns, ids, report_dir):
    """One target's section: provenance, op sub-table, failures, plots.
    Returns HTML."""
    name = t.get("name", "?")
    out = ['<section class="target" id="%s" data-target="%s"><h3>%s</h3>' % (_e(anchor("t", name)), _e(name), _e(name))]
    if t.get("status") != "ok":
        out.append('<div class="failure unexpected"><h4><span class="badge st-error">target error</span></h4>'
                   '<p class="reason">%s</p></div>' % _e(t.get("error") or t.get("crash") or "target error"))
    out.append(_provenance(t))
    out.append(_ops_section(t, columns, ids))
    failing = [r for r in (t.get("results") or []) if isinstance(r, dict) and _failing(r)]
    if failing:
        blocks = "".join(_failure(report, t, r, ids.find(name, r.get("key")) or ids.take(name, r.get("key")))
                         for r in failing)
        n_unexp = sum(1 for r in failing if _is_unexpected(r))
        what = "%d failing result(s) of %s%s" % (len(failing), name, ", %d unexpected" % n_unexp if n_unexp else "")
        out.append("<details%s><summary>%s</summary>%s</details>" % (
            " open" if len(failing) <= 10 or n_unexp else "", _e(what), blocks))
    out.append(_plots(t, report_dir))
    out.append("</section>")
    return "".join(out)


def _pins_section(report):
    """A matrix run over two or more pins: what differs between the first pin
    and each other one (flagprop.reporting.diff's table: the components, ops and dtypes
    whose results differ), or "" for a run of at most one pin."""
    from flagprop.reporting import diff  # the same classes as `flagprop diff REPORT --pins A B`

    pins = diff.pin_pairs(report)
    if len(pins) < 2:
        return ""
    parts = ['<section id="pins"><h2>Across the pins</h2>']
    for other in pins[1:]:
        doc = diff.diff_pins(report, pins[0], other, "this run")
        counts = ", ".join("%s %d" % (c, doc["counts"][c]) for c in diff.CLASSES)
        parts.append("<h3>%s → %s</h3><p>%s</p>%s" % (_e(pins[0]), _e(other), _e(counts),
                                                            diff.diff_table_html(doc)))
    parts.append("</section>")
    return "\n".join(parts)


def render(report, report_dir):
    """The whole report.html page for ``report`` (the parsed report.json, a
    dict of schema ``flagprop.report/1``); ``report_dir`` (str) is the folder
    relative to which plot paths are resolved. Returns the HTML text (str).
    Raises ValueError when ``report`` is not a dict of that schema."""
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise ValueError("not a %s document (schema %r)" % (
            SCHEMA, report.get("schema") if isinstance(report, dict) else type(report).__name__))
    ids = _assign_ids(report)
    columns = property_columns(report)
    prov = report.get("provenance") or {}
    title = "flagprop report \u2014 seed %s" % prov.get("seed", "?")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src \'unsafe-inline\'">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s</title><style>%s</style></head><body>" % (_e(title), _css()),
        _header(report),
        _summary(report, ids),
        _matrix(report, columns, ids),
        _pins_section(report),
        '<section id="targets"><h2>Targets</h2>',
    ]
    for t in report.get("targets") or []:
        parts.append(_target_section(report, t, columns, ids, report_dir))
    parts.append("</section></body></html>\n")
    return "\n".join(parts)


def write(report_dir):
    """Reads ``report_dir``/report.json and writes ``report_dir``/report.html
    (UTF-8). Returns the path written (str). Raises OSError when report.json
    cannot be read or the page cannot be written, ValueError (json's
    JSONDecodeError included) when it is not a flagprop.report/1 document."""
    src = os.path.join(report_dir, "report.json")
    with open(src, encoding="utf-8") as f:
        report = json.load(f)
    page = render(report, report_dir)
    out = os.path.join(report_dir, "report.html")
    write_atomic(out, page)
    return out


def write_atomic(path, text):
    """Writes ``text`` (str, UTF-8) to ``path`` through a temporary file
    renamed over it: a full disk leaves the old file or none, never a
    truncated one, and no temporary file. Raises OSError naming the path and
    the reason."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise OSError(e.errno, "cannot write %s (%s)" % (path, e.strerror or e)) from e


def main(argv=None):
    """Command line: ``python3 -m flagprop.reporting.htmlreport REPORT_DIR``. Prints the
    page's path and returns 0; prints the error and returns 2 when the report
    cannot be read or is not a flagprop report."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python3 -m flagprop.reporting.htmlreport REPORT_DIR  (writes REPORT_DIR/report.html from report.json)")
        return 0 if args and args[0] in ("-h", "--help") else 2
    try:
        print(write(args[0]))
    except (OSError, ValueError) as e:
        print("flagprop.reporting.htmlreport: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
