"""CTest resource groups spread the device entries over a host's GPUs.

Checks, on any host (no GPU needed), the scheduling that ``ctest -L cuda -j N
--resource-spec-file FILE`` relies on (CMakeLists.txt, "Device runners";
docs/gpus.md): a scratch CTest project holds ENTRIES entries that run
``matrix/ctest_device.sh`` with ``RESOURCE_GROUPS "gpus:1"``, as flagprop's
device entries do, but with a stand-in ``flagprop`` that records the GPU it
was shown (``CUDA_VISIBLE_DEVICES``) and its start and end times, then sleeps
HOLD seconds (the device work). ctest runs them with a spec for one GPU and
with one for two (``matrix/resource_spec.py --count``), ``-j ENTRIES`` both
times.

Fails (exit 1) unless:

* with one GPU, no two entries overlap in time and every entry saw GPU 0;
* with two GPUs, every entry saw GPU 0 or 1, at most two ran at once, two
  did run at once, and entries that overlapped saw different GPUs.

Prints the two wall times and their ratio; the ratio is information (a
timing of a loaded machine), not a verdict. On a real two-GPU host the same
entries are flagprop's (docs/gpus.md).

Usage: spread.py REPO_ROOT SCRATCH_DIR [--entries N] [--hold SEC]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time


def _write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def _project(root, scratch, entries):
    """A CTest project in scratch/src with ``entries`` device entries, built
    into scratch/build. Returns the build folder."""
    src, build = os.path.join(scratch, "src"), os.path.join(scratch, "build")
    os.makedirs(src)
    fake_py = os.path.join(scratch, "python-stand-in")
    _write(fake_py, "#!/bin/sh\nexit 0\n", 0o755)  # the device probe passes
    fake_fp = os.path.join(scratch, "flagprop-stand-in")
    _write(fake_fp, "#!/bin/sh\n"
                    "# ctest_device.sh runs: flagprop run --manifest M --report-dir R ...\n"
                    'log="$FLAGPROP_SPREAD_LOG/$(basename "$5").log"\n'
                    'echo "start $(date +%s.%N) ${CUDA_VISIBLE_DEVICES:-unset}" > "$log"\n'
                    'sleep "$FLAGPROP_SPREAD_HOLD"\n'
                    'echo "end $(date +%s.%N)" >> "$log"\n', 0o755)
    script = os.path.join(root, "matrix", "ctest_device.sh")
    lines = ["cmake_minimum_required(VERSION 3.16)", "project(spread NONE)", "enable_testing()"]
    for i in range(entries):
        lines.append('add_test(NAME entry_%d COMMAND "%s" --requires "%s" cuda "%s" "%s" manifest.json report_%d)'
                     % (i, script, script, fake_py, fake_fp, i))
    lines.append('set_tests_properties(%s PROPERTIES LABELS cuda RESOURCE_GROUPS "gpus:1")'
                 % " ".join("entry_%d" % i for i in range(entries)))
    _write(os.path.join(src, "CMakeLists.txt"), "\n".join(lines) + "\n")
    subprocess.run(["cmake", "-S", src, "-B", build], check=True, stdout=subprocess.DEVNULL)
    return build


def _run(root, build, scratch, gpus, entries, hold):
    """Runs the entries with a spec for ``gpus`` GPUs. Returns (wall s,
    [(start, end, gpu)])."""
    spec = os.path.join(scratch, "gpus-%d.json" % gpus)
    subprocess.run([sys.executable, os.path.join(root, "matrix", "resource_spec.py"), "-o", spec,
                    "--count", str(gpus)], check=True, stdout=subprocess.DEVNULL)
    logs = os.path.join(scratch, "logs-%d" % gpus)
    os.makedirs(logs)
    env = dict(os.environ, FLAGPROP_DEVICE_PROBE_ALWAYS="1", FLAGPROP_SPREAD_LOG=logs,
               FLAGPROP_SPREAD_HOLD=str(hold))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    t0 = time.monotonic()
    p = subprocess.run(["ctest", "--test-dir", build, "-L", "cuda", "-j", str(entries),
                        "--resource-spec-file", spec], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit("ctest failed with a %d-GPU spec:\n%s" % (gpus, p.stdout[-3000:]))
    runs = []
    for name in sorted(os.listdir(logs)):
        with open(os.path.join(logs, name)) as f:
            start, end = f.read().split("\n")[:2]
        _, t_start, gpu = start.split()
        runs.append((float(t_start), float(end.split()[1]), gpu))
    if len(runs) != entries:
        raise SystemExit("%d of %d entries ran with a %d-GPU spec" % (len(runs), entries, gpus))
    return wall, runs


def _overlaps(runs):
    """Pairs of runs that overlapped in time, and the most at once."""
    pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:] if a[0] < b[1] and b[0] < a[1]]
    most = max(sum(1 for r in runs if r[0] <= t < r[1]) for t, _, _ in runs)
    return pairs, most


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("root")
    p.add_argument("scratch")
    p.add_argument("--entries", type=int, default=4)
    p.add_argument("--hold", type=float, default=2.0)
    args = p.parse_args(argv)
    root = os.path.abspath(args.root)
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    build = _project(root, os.path.abspath(args.scratch), args.entries)
    problems = []
    wall1, one = _run(root, build, args.scratch, 1, args.entries, args.hold)
    pairs, most = _overlaps(one)
    if pairs:
        problems.append("one GPU: %d pairs of entries ran at once" % len(pairs))
    if {g for _, _, g in one} != {"0"}:
        problems.append("one GPU: entries saw %s, not only GPU 0" % sorted({g for _, _, g in one}))
    wall2, two = _run(root, build, args.scratch, 2, args.entries, args.hold)
    pairs, most = _overlaps(two)
    seen = sorted({g for _, _, g in two})
    if not set(seen) <= {"0", "1"}:
        problems.append("two GPUs: entries saw %s" % seen)
    if most > 2:
        problems.append("two GPUs: %d entries ran at once" % most)
    if not pairs:
        problems.append("two GPUs: no two entries ran at once")
    clash = [(a, b) for a, b in pairs if a[2] == b[2]]
    if clash:
        problems.append("two GPUs: %d overlapping pairs shared a GPU" % len(clash))
    print("%d entries of %.1f s: one GPU %.1f s, two GPUs %.1f s (ratio %.2f); GPUs seen %s"
          % (args.entries, args.hold, wall1, wall2, wall1 / wall2, seen))
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
