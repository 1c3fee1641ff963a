#!/usr/bin/env python3
"""Compares two flagprop report.json files result by result.

usage: compare_reports.py OLD/report.json NEW/report.json [--fields F,...]

Each result is matched by (target name, run key). The fields compared
default to status, reason (with timings in it blanked), cases_run,
counterexample and reproduce: what a change that keeps behaviour must leave
as it was for the same seed. Prints one line per difference and a count;
exits 1 when anything differs (a result only in one report included), 2 on
bad input (a missing or malformed file).
"""
import json
import re
import sys

FIELDS = ["status", "reason", "cases_run", "counterexample", "reproduce"]
# Seconds, and the per-process counts a reason may carry that vary by
# machine load rather than by verdict.
_TIMING = re.compile(r"\d+(\.\d+)? ?(s|ms|µs)\b")


def _results(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("compare_reports: %s: %s" % (path, e))
    if not isinstance(report, dict) or not isinstance(report.get("targets"), list):
        sys.exit("compare_reports: %s: not a flagprop report (no targets)" % path)
    out = {}
    for t in report["targets"]:
        for r in t.get("results", []):
            out[(t.get("name"), r.get("key"))] = r
    return out


def _value(r, field):
    v = r.get(field)
    if field == "reason" and isinstance(v, str):
        v = _TIMING.sub("<t>", v)
    return v


def differences(old, new, fields=FIELDS):
    """Lines "target key: field old -> new" for each difference, in key order."""
    lines = []
    for k in sorted(set(old) | set(new), key=lambda k: (str(k[0]), str(k[1]))):
        if k not in old or k not in new:
            lines.append("%s %s: only in %s" % (k[0], k[1], "new" if k not in old else "old"))
            continue
        for f in fields:
            a, b = _value(old[k], f), _value(new[k], f)
            if a != b:
                lines.append("%s %s: %s %s -> %s" % (k[0], k[1], f, json.dumps(a)[:200], json.dumps(b)[:200]))
    return lines


def main(argv):
    args = [a for a in argv if not a.startswith("--fields")]
    fields = FIELDS
    for a in argv:
        if a.startswith("--fields="):
            fields = a.split("=", 1)[1].split(",")
    if len(args) != 2:
        sys.exit(__doc__)
    old, new = _results(args[0]), _results(args[1])
    lines = differences(old, new, fields)
    for line in lines:
        print(line)
    print("%d results compared, %d differences" % (len(set(old) | set(new)), len(lines)))
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
