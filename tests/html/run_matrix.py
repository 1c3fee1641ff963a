#!/usr/bin/env python3
"""Runs flagprop on the small known matrix the report tests read.

    run_matrix.py --flagprop BIN --out DIR

The matrix: three fixture targets (fixtures/targets/r5-silent-skip.json,
well-behaved.json, ops-returns-view.json) and three targets of this folder's
data/ (an unexpected fail, a target error, an unverified pin), with
``--cases 20 --seed 3 --unverified``. It removes DIR, runs
``BIN run ... --report-dir DIR`` and checks that the run is the one the tests
were written for: exit status 1 and the two planned unexpected results among
its unexpected ones (any others are printed as a note). Exit status: 0 when so, 1 otherwise (with the reason), 2 on bad
usage.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

#: The manifests of the known matrix, relative to the source tree.
MANIFESTS = [
    "fixtures/targets/r5-silent-skip.json",
    "fixtures/targets/well-behaved.json",
    "fixtures/targets/ops-returns-view.json",
    "tests/html/data/expects-pass.json",
    "tests/html/data/missing-installer.json",
    "tests/html/data/stale-pin-target.json",
]

#: (manifest file name, property) of every result the run must report as
#: unexpected (a target error has no property). By file name, because a
#: target that fails to load may be named by its manifest's stem.
PLANNED_UNEXPECTED = {("expects-pass.json", "P1"), ("missing-installer.json", None)}


def error_target(report):
    """The name of the known matrix's target error (the target of
    data/missing-installer.json) in ``report`` (dict). Raises KeyError when
    there is none."""
    for t in report.get("targets") or []:
        if os.path.basename(t.get("manifest", "")) == "missing-installer.json":
            return t["name"]
    raise KeyError("no target of missing-installer.json in the report")


def run(flagprop, out):
    """Runs the matrix with ``flagprop`` (path of the binary) into ``out``
    (a folder, removed first). Returns the parsed report.json (dict). Raises
    RuntimeError when the run is not the planned one."""
    if os.path.isdir(out):
        shutil.rmtree(out)
    cmd = [flagprop, "run", "--cases", "20", "--seed", "3", "--unverified", "--report-dir", out]
    for m in MANIFESTS:
        cmd += ["--manifest", os.path.join(SOURCE, m)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=SOURCE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    tail = "\n".join(proc.stdout.splitlines()[-14:])
    print("$ " + " ".join(cmd))
    print(tail)
    print("flagprop run: exit %d in %.1f s" % (proc.returncode, time.monotonic() - t0))
    path = os.path.join(out, "report.json")
    if not os.path.isfile(path):
        raise RuntimeError("flagprop run wrote no %s (exit %d)" % (path, proc.returncode))
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    manifest = {t.get("name"): os.path.basename(t.get("manifest", "")) for t in report.get("targets") or []}
    seen = {(manifest.get(u.get("target"), u.get("target")), u.get("property")) for u in report["summary"]["unexpected"]}
    if not PLANNED_UNEXPECTED <= seen:
        raise RuntimeError("planned unexpected results missing: %s" % sorted(map(str, PLANNED_UNEXPECTED - seen)))
    if seen - PLANNED_UNEXPECTED:  # the suite itself misbehaves; the report tests still read the report
        print("note: unexpected results beyond the planned ones: %s" % sorted(map(str, seen - PLANNED_UNEXPECTED)))
    if proc.returncode != 1:
        raise RuntimeError("flagprop run exited %d; with two unexpected results it exits 1" % proc.returncode)
    return report


def main():
    """Command line; see the module docstring. Returns the exit status."""
    ap = argparse.ArgumentParser(description="run flagprop on the report tests' known matrix")
    ap.add_argument("--flagprop", required=True, help="the flagprop binary")
    ap.add_argument("--out", required=True, help="report folder (removed first)")
    a = ap.parse_args()
    try:
        run(a.flagprop, a.out)
    except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as e:
        print("FAIL: %s" % e)
        return 1
    print("report: %s" % os.path.join(a.out, "report.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
