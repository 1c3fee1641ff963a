#!/usr/bin/env python3
"""Writes (or checks) the figures the docs quote, from the build they
describe, so that no figure is typed by hand.

usage: tools/docs_figures.py [--write] [--build DIR] [--measure]

- docs/cli.md's options table, between ``<!-- options: begin -->`` and
  ``<!-- options: end -->``: ``flagprop options`` (the option table,
  tools/options.cpp).
- Test counts, each in a ``<!-- figure: NAME -->VALUE<!-- /figure -->``
  marker in README.md and docs/testing.md: ``tests`` (every ctest entry),
  ``cpu-tests`` (label cpu), ``device-tests`` (the others), ``unit-tests``,
  ``teeth-tests``, ``e2e-tests`` (labels cpu-unit, cpu-teeth, cpu-e2e), from
  ``ctest -N``.
- With ``--measure`` also timings (seconds, from this machine): ``main-job-s``
  (``flagprop run --no-db --seed 7`` into a temporary folder) and
  ``unit-s`` (``ctest -L unit -j2``); a check never compares timings.

Without ``--write`` it checks: exit 1 and one line per figure that differs,
0 when every one agrees; 2 on bad input (no build, a marker missing).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURE = re.compile(r"<!-- figure: ([a-z0-9-]+) -->(.*?)<!-- /figure -->", re.S)
OPTIONS = re.compile(r"(<!-- options: begin -->\n)(.*?)(<!-- options: end -->)", re.S)
DOCS = ("README.md", "docs/testing.md", "docs/cli.md")
TIMINGS = ("main-job-s", "unit-s")


def _run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False, **kw)


def count_tests(build, *labels):
    """The number of ctest entries of `build` with every label given (a
    regular expression each), by ``ctest -N``; raises SystemExit(2) when
    ctest cannot read the build."""
    cmd = ["ctest", "--test-dir", build, "-N"]
    for label in labels:
        cmd += ["-L", label]
    out = _run(cmd)
    m = re.search(r"Total Tests: (\d+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit("docs_figures: ctest -N in %s: %s" % (build, out.stdout.strip()[-300:]))
    return int(m.group(1))


def figures(build, measure=False):
    """{name: value as the docs write it} of every figure."""
    total, cpu = count_tests(build), count_tests(build, "^cpu")
    out = {"tests": total, "cpu-tests": cpu, "device-tests": total - cpu,
           "unit-tests": count_tests(build, "^cpu-unit$"), "teeth-tests": count_tests(build, "^cpu-teeth$"),
           "e2e-tests": count_tests(build, "^cpu-e2e$")}
    if measure:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            _run([os.path.join(build, "flagprop"), "run", "--no-db", "--seed", "7", "--report-dir",
                  os.path.join(tmp, "r")], cwd=ROOT)
            out["main-job-s"] = round(time.monotonic() - t0)
        t0 = time.monotonic()
        _run(["ctest", "--test-dir", build, "-L", "unit", "-j2"])
        out["unit-s"] = round(time.monotonic() - t0)
    return {k: str(v) for k, v in out.items()}


def options_table(build):
    """docs/cli.md's options table: ``flagprop options``."""
    out = _run([os.path.join(build, "flagprop"), "options"])
    if out.returncode != 0:
        sys.exit("docs_figures: flagprop options: %s" % out.stdout.strip()[-300:])
    return out.stdout


def update(text, values, table):
    """`text` with every marker's value replaced; returns (new text, names
    of the markers whose value changed)."""
    changed = []

    def figure(m):
        name, old = m.group(1), m.group(2)
        if name not in values:
            return m.group(0)
        if old != values[name] and name not in TIMINGS:
            changed.append(name)
        return "<!-- figure: %s -->%s<!-- /figure -->" % (name, values[name])

    text = FIGURE.sub(figure, text)
    m = OPTIONS.search(text)
    if m and table is not None:
        if m.group(2) != table:
            changed.append("options")
        text = text[:m.start(2)] + table + text[m.end(2):]
    return text, changed


def main(argv):
    write = "--write" in argv
    measure = "--measure" in argv
    build = os.path.join(ROOT, "build")
    if "--build" in argv:
        build = os.path.abspath(argv[argv.index("--build") + 1])
    if not os.path.isfile(os.path.join(build, "flagprop")):
        sys.exit("docs_figures: no flagprop in %s (build first: tools/setup.sh)" % build)
    values, table = figures(build, measure), options_table(build)
    status = 0
    for doc in DOCS:
        path = os.path.join(ROOT, doc)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new, changed = update(text, values, table)
        if write and new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print("docs_figures: wrote %s (%s)" % (doc, ", ".join(changed) or "timings"))
        elif changed:
            status = 1
            for name in changed:
                print("docs_figures: %s: %s is not the build's (tools/docs_figures.py --write)" % (doc, name))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
