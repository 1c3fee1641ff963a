#!/usr/bin/env python3
"""Coverage of a run over many ops, from its report folders (report.json, or
the per-target documents in targets/ when a part was stopped before it
merged them): ops judged, excluded (with the reasons, counted), given up
(health: most samples discarded), passing and failing, where the time went
(per op family: run seconds, shrinking, compilations; where a case's time
went over the whole run, and in results without a compilation; the slowest
results),
then every failure one line each with its reproducer.

Usage: matrix/coverage.py [--target NAME] REPORT_DIR...
(--target: only that target's results, e.g. aten-cpu-flaggems-overloads in
the default run's report, whose fixture mutants fail on purpose)"""

import collections
import glob
import json
import os
import sys


def results(folder):
    docs = []
    try:
        with open(os.path.join(folder, "report.json")) as f:
            docs = json.load(f)["targets"]
    except (OSError, ValueError, KeyError):
        for path in sorted(glob.glob(os.path.join(folder, "targets", "*.json"))):
            try:
                with open(path) as f:
                    docs.append(json.load(f))
            except (OSError, ValueError):
                print("unreadable:", path)
    for doc in docs:
        for r in doc.get("results", []):
            yield doc.get("name", "?"), r


STOCK_CLASS = "the stock path differs from CPU ATen"


def stock_differs(rs):
    """The P5 results of ``rs`` tagged "the stock path differs from CPU
    ATen" (docs/control.md), each with how many of its cases were."""
    out = []
    for r in rs:
        if r.get("property") != "P5":
            continue
        o = r.get("observations") or {}
        cases = sum(d.get("cases", 0) for d in o.get("distribution") or [] if STOCK_CLASS in d.get("class", ""))
        if not cases and any("differs from CPU ATen" in n for n in o.get("control") or []):
            cases = 1  # a failing result: its shrunk case
        if cases:
            out.append((r, cases))
    return out


def judged_against(r):
    """What a failing result was judged against: "the stock path" where the
    reason names it, else "CPU ATen"."""
    return "the stock path" if "stock path" in r.get("reason", "") else "CPU ATen"


CASE_PARTS = ("device_op", "reference")
HARNESS_PARTS = ("control", "flaggems_off", "verdicts", "sandbox", "inputs", "tamper", "other")


def case_split(rs):
    """Where the executed cases of results ``rs`` spent their time, over the
    whole run: each result's ``observations.stats`` shares weighted by its
    cases' seconds (``us_per_case`` times ``cases_executed``). Returns
    {"cases", "seconds" (s), "compilations", "shares": {part: fraction of
    the cases' seconds}, "op_s_per_compilation" (s; the op's seconds in
    results with compilations over their compilations), "uncompiled":
    {"cases", "ms_per_case" (ms), "shares"} (the results without a
    compilation: what a case costs once its kernels are loaded)}. The parts
    are ``device_op`` and ``reference`` (``stats.share``) and the harness's
    (``stats.harness_share``, docs/schemas.md): ``flaggems_off`` is part of
    ``control``, not added to it."""
    def empty():
        return {"cases": 0, "us": 0.0, "parts": collections.Counter()}

    every, uncompiled = empty(), empty()
    compilations, op_us_compiling = 0, 0.0
    for r in rs:
        st = (r.get("observations") or {}).get("stats") or {}
        n = st.get("cases_executed", 0)
        if not n:
            continue
        us = st.get("us_per_case", 0.0) * n
        share, harness = st.get("share") or {}, st.get("harness_share") or {}
        for acc in (every, uncompiled) if not st.get("compilations") else (every,):
            acc["cases"] += n
            acc["us"] += us
            for part in CASE_PARTS:
                acc["parts"][part] += share.get(part, 0.0) * us
            for part in HARNESS_PARTS:
                acc["parts"][part] += harness.get(part, 0.0) * us
        if st.get("compilations"):
            compilations += st["compilations"]
            op_us_compiling += share.get("device_op", 0.0) * us

    def shares(acc):
        return {k: v / acc["us"] for k, v in acc["parts"].items()} if acc["us"] else {}

    return {"cases": every["cases"], "seconds": every["us"] / 1e6, "compilations": compilations,
            "shares": shares(every),
            "op_s_per_compilation": op_us_compiling / 1e6 / compilations if compilations else 0.0,
            "uncompiled": {"cases": uncompiled["cases"],
                           "ms_per_case": uncompiled["us"] / 1e3 / uncompiled["cases"] if uncompiled["cases"] else 0.0,
                           "shares": shares(uncompiled)}}


def describe_split(shares):
    """One line of ``case_split``'s shares, in percent."""
    if not shares:
        return "-"
    return "op %.0f%%, reference %.0f%%, control %.0f%% (FlagGems off %.0f%%), verdicts %.0f%%, sandbox %.0f%%, " \
           "inputs %.0f%%, tamper %.0f%%, other %.0f%%" % tuple(
               100 * shares.get(k, 0.0) for k in CASE_PARTS + HARNESS_PARTS)


def work(folders, only):
    """Where the run's time went: per op family (report.json's
    coverage.by_family, over all dtypes: a part stopped before it merged its
    documents has none) its runs' seconds, the part spent shrinking, the
    Triton compilations and where the executed cases' seconds went (the op,
    CPU ATen's reference, flagprop); then the ten slowest results (from the
    per-target documents too)."""
    rows, slow = collections.defaultdict(lambda: [0, 0.0, 0.0, 0, 0.0, 0.0, 0.0]), []
    for folder in folders:
        try:
            with open(os.path.join(folder, "report.json")) as f:
                docs = json.load(f)["targets"]
        except (OSError, ValueError, KeyError):
            docs = []
        for doc in docs:
            if only is not None and doc.get("name") != only:
                continue
            for row in (doc.get("coverage") or {}).get("by_family") or []:
                if row.get("dtype") == "all":
                    acc = rows[row.get("family", "?")]
                    acc[0] += row.get("ops", 0)
                    acc[1] += row.get("seconds", 0.0)
                    acc[2] += row.get("shrink_seconds", 0.0)
                    acc[3] += row.get("compilations", 0)
                    cases = row.get("case_seconds") or {}
                    acc[4] += cases.get("op", 0.0)
                    acc[5] += cases.get("reference", 0.0)
                    acc[6] += cases.get("flagprop", 0.0)
        slow.extend(r for target, r in results(folder) if r.get("op") and (only is None or target == only))
    if rows:
        print("where the time went (the runs' seconds summed over their processes):")
        print("  %-28s %5s %9s %12s %12s   %s" % ("family", "ops", "run s", "shrinking s", "compilations",
                                                "cases: op / reference / flagprop s"))
        for family, (ops, sec, shrink, comp, op, ref, own) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
            print("  %-28s %5d %9.1f %12.1f %12d   %.1f / %.1f / %.1f" % (family, ops, sec, shrink, comp, op, ref,
                                                                          own))
    split = case_split(slow)
    if split["cases"]:
        print("a case's time over the run (%d executed cases, %.0f s, %d compilations, %.2f s of the op's time per "
              "compilation): %s" % (split["cases"], split["seconds"], split["compilations"],
                                    split["op_s_per_compilation"], describe_split(split["shares"])))
        u = split["uncompiled"]
        print("  in the %d cases of results without a compilation (%.1f ms a case): %s" % (
            u["cases"], u["ms_per_case"], describe_split(u["shares"])))
    slow.sort(key=lambda r: -r.get("seconds", 0.0))
    for r in slow[:10]:
        o = r.get("observations") or {}
        print("  slow %7.1f s  %-45s %-5s shrinking %.1f s, %d compilations" % (
            r.get("seconds", 0.0), r.get("key", r.get("op")), r.get("status"),
            (o.get("shrink") or {}).get("seconds", 0.0), (o.get("stats") or {}).get("compilations", 0)))


def main():
    args, only = sys.argv[1:], None
    if args[:1] == ["--target"] and len(args) >= 2:
        only, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__.split("\n\n")[-1])
    by_op = collections.defaultdict(list)
    for folder in args:
        for target, r in results(folder):
            if r.get("op") and (only is None or target == only):
                by_op[r["op"]].append(r)
    excluded, health, failing, passing = collections.Counter(), [], {}, []
    for op, rs in sorted(by_op.items()):
        reasons = [r.get("reason", "") for r in rs]
        if all(x.startswith("excluded: ") for x in reasons):
            why = reasons[0][len("excluded: "):]
            excluded["no such ATen overload in this LibTorch" if why.startswith("no ATen overload") else why] += 1
        elif any(r["status"] in ("fail", "error") for r in rs):
            failing[op] = [r for r in rs if r["status"] in ("fail", "error")]
        elif all(r["status"] == "skip" for r in rs):
            health.append(op)
        else:
            passing.append(op)
    judged = len(passing) + len(failing)
    print("ops: %d; judged %d (pass %d, fail %d); gave up (health) %d; excluded %d"
          % (len(by_op), judged, len(passing), len(failing), len(health), sum(excluded.values())))
    for why, n in excluded.most_common():
        print("  excluded %4d  %s" % (n, why))
    stock = stock_differs(r for rs in by_op.values() for r in rs)
    print("the stock path differs from CPU ATen (information, judged against the stock path): %d op x dtype result(s)"
          % len(stock))
    for r, cases in stock:
        print("  stock != CPU  %-40s %-5s %d of %d case(s)" % (r.get("key", r["op"]), r["status"], cases,
                                                           r.get("cases_run", 0)))
    work(args, only)
    against = collections.Counter(judged_against(r) for rs in failing.values() for r in rs if r["status"] == "fail")
    print("failures judged against: %s" % (", ".join("%s %d" % kv for kv in sorted(against.items())) or "-"))
    for op, rs in failing.items():
        for r in rs:
            print("%-5s %-40s %s%s" % (r["status"], r.get("key", op), r.get("reason", "")[:220].replace("\n", " "),
                                     ("  [%s]" % r["reproducer"]) if r.get("reproducer") else ""))


if __name__ == "__main__":
    main()
