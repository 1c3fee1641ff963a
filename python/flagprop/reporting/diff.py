"""What changed between two runs: ``flagprop diff OLD NEW``.

``OLD`` and ``NEW`` are report folders (each with its report.json, schema
``flagprop.report/1``), or one folder and ``--pins A B``: the targets of pin
``A`` against those of pin ``B`` in one matrix run (targets are paired by
name with the pin's name taken out: ``pin-r5-cpu-mocks`` with
``pin-latest-cpu-mocks``). Results are matched by target and run key
(``P5/add.Tensor/float32``). Each result that differs falls in one class:

* ``new failure``: NEW fails (fail, error or flaky) where OLD did not (passed,
  skipped, or had no such run);
* ``fixed``: OLD failed, NEW passes;
* ``changed``: both fail, with another status or finding kind (where the
  verdict names none: another reason, up to its first colon, numbers left
  out);
* ``coverage gained`` / ``coverage lost``: judged in one and skipped (or
  absent) in the other.

Writes diff.json, diff.md and diff.html to ``--out DIR`` (default
./flagprop-diff), prints a summary per target and property and the changed
results with their replay commands, and exits 1 when NEW has a failure OLD
did not, 0 when it has none, 2 on bad usage or a folder without a readable
report. Standard library only; every text from a report is HTML-escaped.
"""

import html
import json
import os
import re
import sys

SCHEMA = "flagprop.report/1"
DIFF_SCHEMA = "flagprop.diff/1"
FAILING = ("fail", "error", "flaky")
JUDGED = ("pass",) + FAILING
#: The classes, in the order a reader wants them.
CLASSES = ("new failure", "changed", "fixed", "coverage lost", "coverage gained")


class DiffError(ValueError):
    """A report folder that cannot be compared; str() is one line."""


def load_report(folder):
    """The report.json of ``folder`` (dict). Raises DiffError naming the
    folder when it holds none, it cannot be parsed, or it is not a
    flagprop.report/1 document."""
    path = os.path.join(folder, "report.json")
    if not os.path.isfile(path):
        raise DiffError("%s holds no report.json (give the --report-dir of a run)" % folder)
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise DiffError("%s: cannot read it (%s)" % (path, e)) from e
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise DiffError("%s is not a %s document" % (path, SCHEMA))
    targets = report.get("targets")
    if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
        raise DiffError("%s: its targets are not a list of target documents" % path)
    for t in targets:
        results = t.get("results", [])
        if not isinstance(t.get("name", ""), str) or not isinstance(results, list):
            raise DiffError("%s: target %r has no list of results" % (path, t.get("name")))
        for r in results:
            if not isinstance(r, dict) or not isinstance(r.get("key", ""), str) or \
                    not isinstance(r.get("status", ""), str) or not isinstance(r.get("reason", ""), str):
                raise DiffError("%s: target %r has a result that is not a result document (key, status and "
                                "reason strings)" % (path, t.get("name")))
    return report


def pin_of(target):
    """The name of the pin a target document ran (its provenance), or ""."""
    return ((target.get("provenance") or {}).get("pin") or {}).get("name", "")


def results_of(report, pin=None):
    """{(target label, run key): result dict} of the ok targets of ``report``;
    with ``pin``, only the targets of that pin, labelled by their name with
    the pin's name replaced by ``{pin}``. A target error is one entry of key
    ``target`` (status error, the reason)."""
    out = {}
    for t in report.get("targets", []):
        if pin is not None and pin_of(t) != pin:
            continue
        name = t.get("name", "?")
        label = name.replace(pin, "{pin}") if pin else name
        if t.get("status") != "ok":
            out[(label, "target")] = {"status": "error", "reason": t.get("error", ""), "property": "target"}
            continue
        for r in t.get("results", []):
            if isinstance(r, dict) and r.get("key"):
                out[(label, r["key"])] = r
    return out


def _norm(reason):
    """What a reason says, up to its first colon, with its numbers left out
    (they change from run to run; "silent-skip: ..." -> "silent-skip")."""
    return re.sub(r"[-+]?\d[\d.]*(e[-+]?\d+)?", "N", (reason or "").split(":", 1)[0])[:160]


def _kinds(r):
    return sorted((r.get("observations") or {}).get("kinds", []) or [])


def classify(old, new):
    """The class (one of CLASSES) of one key's OLD and NEW result (either may
    be None: no such run), or None when nothing a reader needs changed."""
    so = old.get("status") if old else None
    sn = new.get("status") if new else None
    if sn in FAILING and so not in FAILING:
        return "new failure"
    if so in FAILING and sn == "pass":
        return "fixed"
    if so in FAILING and sn in FAILING:
        if so != sn or _kinds(old) != _kinds(new):
            return "changed"
        if not _kinds(old) and _norm(old.get("reason")) != _norm(new.get("reason")):
            return "changed"
        return None
    if so in JUDGED and sn not in JUDGED:
        return "coverage lost"
    if sn in JUDGED and so not in JUDGED:
        return "coverage gained"
    return None


def _brief(r):
    if not r:
        return {"status": "absent", "reason": "no such run"}
    b = {"status": r.get("status", "?"), "reason": (r.get("reason") or "")[:400]}
    if _kinds(r):
        b["kinds"] = _kinds(r)
    return b


def compare(old_results, new_results):
    """The diff document (dict, schema flagprop.diff/1 without its
    ``old``/``new`` labels) of two results_of() maps: ``changes`` (one entry
    per changed key: target, key, property, op, dtype, class, old, new,
    replay), ``counts`` ({class: n}) and ``by_target`` ({target: {property:
    {class: n}}})."""
    changes = []
    ran_old = {label for label, key in old_results if key != "target"}
    ran_new = {label for label, key in new_results if key != "target"}
    for label, key in sorted(set(old_results) | set(new_results)):
        old, new = old_results.get((label, key)), new_results.get((label, key))
        cls = classify(old, new)
        if key == "target" and old and not new and label in ran_new:
            cls = "fixed"  # the target error is gone: the target runs now (its results are counted on their own)
        elif key == "target" and new and not old and label not in ran_old:
            cls = "new failure"
        if cls is None:
            continue
        ref = new or old
        entry = {"target": label, "key": key, "property": ref.get("property", key.split("/")[0]), "class": cls,
                 "old": _brief(old), "new": _brief(new)}
        for k in ("op", "dtype"):
            if ref.get(k):
                entry[k] = ref[k]
        replay = (new or {}).get("replay") or ""
        if not replay and (new or {}).get("reproducer"):
            replay = "python3 " + new["reproducer"]
        if replay:
            entry["replay"] = replay
        changes.append(entry)
    changes.sort(key=lambda c: (CLASSES.index(c["class"]), c["target"], c["key"]))
    counts = {c: sum(1 for x in changes if x["class"] == c) for c in CLASSES}
    by_target = {}
    for c in changes:
        row = by_target.setdefault(c["target"], {}).setdefault(c["property"], {})
        row[c["class"]] = row.get(c["class"], 0) + 1
    return {"changes": changes, "counts": counts, "by_target": by_target}


def render_md(doc):
    """diff.md (str) of a diff document."""
    lines = ["# flagprop diff", "", "- old: `%s`" % doc["old"], "- new: `%s`" % doc["new"],
             "- " + ", ".join("%s: %d" % (c, doc["counts"][c]) for c in CLASSES), ""]
    if doc["by_target"]:
        lines += ["## By target and property", "", "| target | property | " + " | ".join(CLASSES) + " |",
                  "|---|---|" + "---|" * len(CLASSES)]
        for t in sorted(doc["by_target"]):
            for p in sorted(doc["by_target"][t]):
                row = doc["by_target"][t][p]
                lines.append("| %s | %s | %s |" % (_md_text(t), _md_text(p),
                                                   " | ".join(str(row.get(c, 0)) for c in CLASSES)))
        lines.append("")
    for cls in CLASSES:
        rows = [c for c in doc["changes"] if c["class"] == cls]
        if not rows:
            continue
        lines += ["## %s (%d)" % (cls.capitalize(), len(rows)), "", "| target | run | old | new | replay |",
                  "|---|---|---|---|---|"]
        for c in rows:
            lines.append("| %s | %s | %s | %s | %s |" % (
                _md_text(c["target"]), _md_code(c["key"]), _md_cell(c["old"]), _md_cell(c["new"]),
                _md_code(c["replay"]) if c.get("replay") else ""))
        lines.append("")
    if not doc["changes"]:
        lines += ["No result changed.", ""]
    return "\n".join(lines)


def _md_text(text):
    """Report text as one markdown table cell: no line breaks, no cell
    separators, no markup or HTML of its own."""
    text = re.sub(r"[\r\n]+", " ", str(text))
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text)


def _md_code(text):
    """Text as inline code in a table cell (backticks and bars made safe)."""
    text = re.sub(r"[\r\n]+", " ", str(text)).replace("`", "'").replace("|", "\\|")
    return "`%s`" % text


def _md_cell(b):
    return "**%s**: %s" % (_md_text(b["status"]), _md_text(b["reason"][:160]))


def render_html(doc):
    """diff.html (str): the same tables as diff.md on one self-contained page."""
    e = lambda s: html.escape(str(s), quote=True)  # noqa: E731
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
           "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
           "<title>flagprop diff</title><style>body{font-family:sans-serif;margin:1.5em}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 6px;"
           "vertical-align:top;font-size:13px}code{font-size:12px}</style></head><body>",
           "<h1>flagprop diff</h1><p>old: <code>%s</code><br>new: <code>%s</code></p>" % (e(doc["old"]), e(doc["new"])),
           "<p>" + ", ".join("%s: <b>%d</b>" % (e(c), doc["counts"][c]) for c in CLASSES) + "</p>"]
    out.append(diff_table_html(doc))
    out.append("</body></html>")
    return "\n".join(out)


def diff_table_html(doc):
    """The changed results of a diff document as one HTML table (str), for
    diff.html and for report.html's table across the pins of a matrix."""
    e = lambda s: html.escape(str(s), quote=True)  # noqa: E731
    colour = {"new failure": "#ffb3b3", "changed": "#ffd9a8", "fixed": "#c6efce", "coverage lost": "#fff2b3",
              "coverage gained": "#d9ecff"}
    if not doc["changes"]:
        return "<p>No result changed.</p>"
    rows = ["<table><tr><th>change</th><th>target</th><th>run</th><th>old</th><th>new</th><th>replay</th></tr>"]
    for c in doc["changes"]:
        rows.append("<tr style='background:%s'><td>%s</td><td>%s</td><td><code>%s</code></td><td><b>%s</b> %s</td>"
                    "<td><b>%s</b> %s</td><td><code>%s</code></td></tr>" % (
                        colour[c["class"]], e(c["class"]), e(c["target"]), e(c["key"]), e(c["old"]["status"]),
                        e(c["old"]["reason"][:200]), e(c["new"]["status"]), e(c["new"]["reason"][:200]),
                        e(c.get("replay", ""))))
    rows.append("</table>")
    return "\n".join(rows)


def pin_pairs(report):
    """The pins of a matrix run's report, in run order (list of str): the
    pins of its targets, each once."""
    pins = []
    for t in report.get("targets", []):
        p = pin_of(t)
        if p and p not in pins:
            pins.append(p)
    return pins


def diff_reports(old_report, new_report, old_label, new_label):
    """The diff document (dict) between two reports."""
    doc = compare(results_of(old_report), results_of(new_report))
    return dict({"schema": DIFF_SCHEMA, "old": old_label, "new": new_label}, **doc)


def diff_pins(report, old_pin, new_pin, label):
    """The diff document (dict) between two pins of one report. Raises
    DiffError when the report has no target of one of them."""
    pins = pin_pairs(report)
    for p in (old_pin, new_pin):
        if p not in pins:
            raise DiffError("%s has no target of pin %r (its pins: %s)" % (label, p, ", ".join(pins) or "none"))
    doc = compare(results_of(report, old_pin), results_of(report, new_pin))
    return dict({"schema": DIFF_SCHEMA, "old": "%s, pin %s" % (label, old_pin),
                 "new": "%s, pin %s" % (label, new_pin)}, **doc)


def write(doc, out_dir):
    """Writes diff.json, diff.md and diff.html into ``out_dir`` (created);
    returns their paths. Raises OSError naming the file that failed."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, text in (("diff.json", json.dumps(doc, indent=2, sort_keys=True) + "\n"),
                       ("diff.md", render_md(doc)), ("diff.html", render_html(doc))):
        path = os.path.join(out_dir, name)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        paths.append(path)
    return paths


def summary_lines(doc, limit=40):
    """What the console shows (list of str): the counts, then each change
    (at most ``limit``) with its replay command."""
    lines = ["flagprop diff: %s -> %s" % (doc["old"], doc["new"]),
             "  " + ", ".join("%s %d" % (c, doc["counts"][c]) for c in CLASSES)]
    for c in doc["changes"][:limit]:
        lines.append("  %-15s %s %s: %s -> %s" % (c["class"], c["target"], c["key"], c["old"]["status"],
                                                   c["new"]["status"]))
        if c["class"] in ("new failure", "changed"):
            lines.append("      now: %s" % c["new"]["reason"][:200])
            if c.get("replay"):
                lines.append("      replay: %s" % c["replay"])
    if len(doc["changes"]) > limit:
        lines.append("  ... and %d more (diff.md)" % (len(doc["changes"]) - limit))
    return lines


USAGE = """usage: flagprop diff OLD_REPORT_DIR NEW_REPORT_DIR [--out DIR]
       flagprop diff REPORT_DIR --pins OLD_PIN NEW_PIN [--out DIR]

What changed between two runs (or two pins of one matrix run): new failures,
fixed, changed status / finding kind / reason, coverage gained or lost, per
target and property, with the replay commands. Writes diff.json, diff.md and
diff.html to --out (default ./flagprop-diff).

exit status: 0 NEW has no failure OLD did not; 1 it has; 2 bad usage or a
folder without a readable report.json."""


def main(argv=None):
    """Command line (see USAGE). Returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(USAGE)
        return 0
    out, pins, folders = "flagprop-diff", None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--out" or a.startswith("--out="):
            if "=" in a:
                out = a.split("=", 1)[1]
            elif i + 1 < len(args):
                out, i = args[i + 1], i + 1
            else:
                print("flagprop diff: --out needs a folder", file=sys.stderr)
                return 2
        elif a == "--pins":
            if i + 2 >= len(args):
                print("flagprop diff: --pins needs two pin names (OLD NEW)", file=sys.stderr)
                return 2
            pins, i = (args[i + 1], args[i + 2]), i + 2
        elif a.startswith("-"):
            print("flagprop diff: unknown option '%s' (try flagprop diff --help)" % a, file=sys.stderr)
            return 2
        else:
            folders.append(a)
        i += 1
    if len(folders) != (1 if pins else 2) or not out:
        print(USAGE, file=sys.stderr)
        return 2
    if os.path.exists(out) and not os.path.isdir(out):
        print("flagprop diff: --out %s is a file, not a folder" % out, file=sys.stderr)
        return 2
    try:
        if pins:
            doc = diff_pins(load_report(folders[0]), pins[0], pins[1], folders[0])
        else:
            doc = diff_reports(load_report(folders[0]), load_report(folders[1]), folders[0], folders[1])
        paths = write(doc, out)
    except DiffError as e:
        print("flagprop diff: %s" % e, file=sys.stderr)
        return 2
    except OSError as e:
        print("flagprop diff: %s" % e, file=sys.stderr)
        return 2
    print("\n".join(summary_lines(doc)))
    print("diff: %s (and diff.html, diff.json)" % os.path.relpath(paths[1]))
    return 1 if doc["counts"]["new failure"] else 0


if __name__ == "__main__":
    sys.exit(main())
