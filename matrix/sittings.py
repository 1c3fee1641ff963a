#!/usr/bin/env python3
"""Two sittings of one run over many ops compared: the same manifest, seed
and options run twice, the second with the first's caches kept (Triton's
and FlagGems' under --triton-cache, the example database). For the runs
both sittings executed: their cases, Triton compilations (each a kernel the
process compiled or loaded from the cache), the op's seconds, the cases'
seconds and the runs' seconds, side by side; then the runs only one sitting
reached, how many runs each judged, where a case's time went in each
(coverage.case_split), and every run whose status changed, with both
reasons (a run cut by --run-time in the first sitting that reaches a failing
example in the second is the usual cause, not a flaky verdict).

Usage: matrix/sittings.py FIRST_REPORT_DIR SECOND_REPORT_DIR
(matrix/run_gpu.sh OUT all-ops all-ops-kept runs both sittings and this)"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import coverage  # noqa: E402

JUDGED = ("pass", "fail", "flaky")


def runs(folder):
    """The op results of a report folder by key (report.json, or its
    per-target documents: coverage.results)."""
    return {r.get("key", r.get("op")): r for _target, r in coverage.results(folder) if r.get("op")}


def totals(rs):
    """Sums over results ``rs``: cases executed, compilations, the op's
    seconds, the cases' seconds (``coverage.case_split`` of their
    ``observations.stats``) and the runs' seconds (``seconds``)."""
    rs = list(rs)
    split = coverage.case_split(rs)
    return {"cases": split["cases"], "compilations": split["compilations"],
            "op_s": split["seconds"] * split["shares"].get("device_op", 0.0), "case_s": split["seconds"],
            "run_s": sum(r.get("seconds", 0.0) for r in rs)}


def executed(r):
    """Whether result ``r`` executed a case (its stats count one)."""
    return bool(((r.get("observations") or {}).get("stats") or {}).get("cases_executed"))


def compare(first, second):
    """``first`` and ``second`` (``runs`` of each sitting) compared. Returns
    {"both": keys both executed, sorted; "first", "second": ``totals`` over
    those; "only_first", "only_second": ``totals`` of the runs only that
    sitting executed, with "runs"; "judged": [first, second] counts of runs
    judged (pass, fail or flaky); "changed": [(key, status first, status
    second, reason first, reason second)] over the keys both have, sorted}."""
    a = {k for k, r in first.items() if executed(r)}
    b = {k for k, r in second.items() if executed(r)}
    both = sorted(a & b)
    only = []
    for own, other, runs_of in ((a, b, first), (b, a, second)):
        t = totals(runs_of[k] for k in own - other)
        t["runs"] = len(own - other)
        only.append(t)
    changed = [(k, first[k]["status"], second[k]["status"], first[k].get("reason", ""), second[k].get("reason", ""))
               for k in sorted(set(first) & set(second)) if first[k]["status"] != second[k]["status"]]
    return {"both": both, "first": totals(first[k] for k in both), "second": totals(second[k] for k in both),
            "only_first": only[0], "only_second": only[1],
            "judged": [sum(r["status"] in JUDGED for r in s.values()) for s in (first, second)],
            "changed": changed}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[-1])
    first, second = runs(sys.argv[1]), runs(sys.argv[2])
    c = compare(first, second)
    print("runs judged (pass, fail or flaky): first %d, second %d; runs that executed cases in both: %d"
          % (c["judged"][0], c["judged"][1], len(c["both"])))
    print("  %-8s %8s %13s %9s %9s %9s" % ("", "cases", "compilations", "op s", "case s", "run s"))
    for name in ("first", "second"):
        t = c[name]
        print("  %-8s %8d %13d %9.0f %9.0f %9.0f" % (name, t["cases"], t["compilations"], t["op_s"], t["case_s"],
                                                    t["run_s"]))
    f, s = c["first"], c["second"]
    print("  %-8s %8s %13s %9s %9s %9s" % ("second/first", "", "", *("%.2f" % (s[k] / f[k]) if f[k] else "-"
                                                                  for k in ("op_s", "case_s", "run_s"))))
    for name in ("only_first", "only_second"):
        t = c[name]
        print("runs only the %s sitting executed: %d (%d cases, %d compilations, %.0f s of the op)"
              % (name.split("_")[1], t["runs"], t["cases"], t["compilations"], t["op_s"]))
    for name, rs in (("first", first), ("second", second)):
        split = coverage.case_split(rs.values())
        print("a case's time, %s sitting (%.2f s of the op per compilation): %s"
              % (name, split["op_s_per_compilation"], coverage.describe_split(split["shares"])))
    print("status changed in %d of the %d runs both have:" % (len(c["changed"]), len(set(first) & set(second))))
    for key, was, now, why_was, why_now in c["changed"]:
        print("  %-50s %s -> %s\n      first : %s\n      second: %s" % (key, was, now, why_was[:200], why_now[:200]))


if __name__ == "__main__":
    main()
