#!/usr/bin/env python3
"""Every reproducer of a run, twice: as written (FlagGems on), and with its
target's ``"enable": "flag_gems"`` made ``""`` (the very same case on the
device's stock ATen, FlagGems never imported into the route). A finding is
FlagGems' only if the second passes (docs/control.md); this prints, per
reproducer, both exit statuses (1: reproduced, 0: not reproduced, 2: a file
is missing, 3: cannot run here, 124: over the time limit) and what the
finding was judged against, then the counts.

Usage: matrix/repros_off.py REPORT_DIR [--jobs N] [--timeout S] [--python PY]
Exit 0 when no finding judged against the stock path still fails with
FlagGems off, else 1 (those are listed first)."""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coverage import judged_against  # noqa: E402  (one rule for what a finding was judged against)

ENABLE = re.compile(r'("enable":\s*)"flag_gems"')


def findings(report_dir):
    """(reproducer path, target, result key, reason) of every failing result
    and distinct failure of ``report_dir``'s report.json that has one."""
    with open(os.path.join(report_dir, "report.json")) as f:
        report = json.load(f)
    out = []
    for t in report["targets"]:
        for r in t.get("results", []):
            if r.get("status") != "fail":
                continue
            for f in [r] + list((r.get("observations") or {}).get("distinct_failures") or []):
                if f.get("reproducer"):
                    out.append((os.path.join(report_dir, f["reproducer"]) if not os.path.isabs(f["reproducer"])
                                else f["reproducer"], t.get("name", "?"), r.get("key", "?"), f.get("reason", "")))
    return out


def off_copy(path):
    """A copy of reproducer ``path`` beside it with FlagGems off; its path,
    or None when the reproducer's target does not enable FlagGems."""
    with open(path) as f:
        text = f.read()
    off, n = ENABLE.subn(r'\1""', text)
    if not n:
        return None
    copy = path[:-3] + "_flaggems_off.py"
    with open(copy, "w") as f:
        f.write(off)
    return copy


def run(python, path, timeout):
    """Exit status of reproducer ``path`` (124 past ``timeout`` s) and its
    last REPRODUCED / not reproduced line."""
    try:
        p = subprocess.run([python, path], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "over %d s" % timeout
    last = [ln for ln in p.stdout.splitlines() if ln.startswith(("REPRODUCED", "not reproduced", "cannot run",
                                                                 "could not run"))]
    return p.returncode, (last[-1] if last else (p.stderr.strip().splitlines() or [""])[-1])[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report_dir")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    items = findings(a.report_dir)
    if not items:
        print("repros_off: no reproducer in %s" % a.report_dir)
        return 0

    def both(item):
        path = item[0]
        on = run(a.python, path, a.timeout)
        copy = off_copy(path)
        off = run(a.python, copy, a.timeout) if copy else (None, "FlagGems not enabled by this target")
        return item, on, off

    against = lambda reason: "stock" if judged_against({"reason": reason}) == "the stock path" else "CPU"  # noqa: E731
    rows = []
    # Each row as it ends (a run cut short keeps what it did), the table after.
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for done in concurrent.futures.as_completed([pool.submit(both, item) for item in items]):
            rows.append(done.result())
            (path, target, key, reason), on, off = rows[-1]
            print("[%d/%d] on %s off %s vs %s %s" % (len(rows), len(items), on[0], off[0], against(reason), key[:80]),
                  flush=True)
    bad = [r for r in rows if r[2][0] == 1 and against(r[0][3]) == "stock"]
    print("%-4s %-4s %-5s %-50s %s" % ("on", "off", "vs", "result", "with FlagGems off"))
    for (path, target, key, reason), on, off in sorted(rows, key=lambda r: (r not in bad, -(r[2][0] or 0), r[0][2])):
        print("%-4s %-4s %-5s %-50s %s" % (on[0], off[0], against(reason), key[:50], off[1]))
    count = lambda f: sum(1 for r in rows if f(r))  # noqa: E731
    print("reproducers: %d; reproduce with FlagGems on: %d; pass with FlagGems off: %d; still fail with FlagGems "
          "off: %d (judged against the stock path: %d, against CPU ATen where the device has no stock kernel: %d); "
          "other exits: %d" % (
              len(rows), count(lambda r: r[1][0] == 1), count(lambda r: r[2][0] == 0), count(lambda r: r[2][0] == 1),
              len(bad), count(lambda r: r[2][0] == 1 and against(r[0][3]) == "CPU"),
              count(lambda r: r[2][0] not in (0, 1))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
