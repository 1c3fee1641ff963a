"""End-to-end check of the standalone reproducers `flagprop run` writes.

Runs `flagprop run --no-db` over a few fixture targets that fail (an
installer property on the mocks, P3, an op property, a crashing op, an op
with two distinct faults), then checks every reproducer it wrote, the
reproducer of each distinct failure among them:

* smaller than --max-bytes (60000: a GitHub issue body holds 65536 characters);
* no absolute path of the machine that wrote it (the flagprop checkout, the
  report folder, the temporary folder, the python and flagprop executables,
  the home folder), in its text or in the code it embeds (--dump-code);
* only the code its case needs: an installer-property reproducer embeds no
  flagprop.engine.ops, none embeds flagprop.observers.timing;
* `PYTHON repro.py` (the python with torch, run from the flagprop checkout)
  exits 1: the failure reproduces;
* `PYTHON -I -S repro.py` (the same python without its site-packages, so
  without torch) exits 3 and says it cannot import torch.

And for one reproducer, copied to another folder and run there: it finds
the flagprop files the run used through the path it records (exit 1), and
through $FLAGPROP_ROOT (exit 1); with neither, it says what to set (exit 2).
With --install, the same run by a copy installed with `cmake --install`
(from a folder outside the checkout, its report outside too): every
reproducer exits 1, run from yet another folder.

Usage: check_reproducers.py --flagprop BIN --python PY --source-dir DIR
[--work DIR] [--max-bytes N]; exit status 0 when every check holds, 1 when
one fails (each failure is printed). `--self-test` checks that the checks
themselves catch a reproducer that is too large, holds a path, or exits
with the wrong status.
"""

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile

MANIFESTS = ("r5-silent-skip", "ops-returns-view", "ops-segfault", "kwargs-dropped", "ops-two-faults")
# What the run must give: a reproducer of each kind (its KIND, and whether the case crashed).
WANTED = {("install", False): "P1 on the mocks", ("launch", False): "P3", ("op", False): "P5 / P6",
          ("op", True): "a case that kills its process"}


def constants(path):
    """The string / int constants a reproducer assigns at its top level."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def machine_paths(args, report_dir):
    """Absolute paths of this machine a reproducer must not hold."""
    paths = {os.path.abspath(args.source_dir), os.path.realpath(args.source_dir), os.path.abspath(report_dir),
             os.path.realpath(report_dir), os.path.abspath(args.work), tempfile.gettempdir(), "/tmp/",
             os.path.realpath(args.python), args.python}
    if args.flagprop:
        paths.add(os.path.abspath(args.flagprop))
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        paths.add(home)
    return sorted(p for p in paths if p and p != "/")


def run(cmd, cwd, env=None, timeout=180):
    """(exit status, output) of ``cmd``."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, universal_newlines=True)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, str(e.output or "")


def check_one(path, args, forbidden, problems, dump_root):
    """Checks one reproducer; appends what is wrong to ``problems``.
    Returns its (KIND, crashed) when it reproduces, else None."""
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if size >= args.max_bytes:
        problems.append("%s: %d bytes, not under %d" % (name, size, args.max_bytes))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.startswith("#!"):
        problems.append("%s: has a shebang (it may pick a python without torch)" % name)
    dump = os.path.join(dump_root, name)
    rc, out = run([args.python, path, "--dump-code", dump], cwd=args.source_dir)
    embedded = {}
    if rc != 0:
        problems.append("%s: --dump-code exited %d: %s" % (name, rc, out[-400:]))
    else:
        for folder, _dirs, files in os.walk(dump):
            for f in files:
                rel = os.path.relpath(os.path.join(folder, f), dump)
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    embedded[rel] = fh.read()
    # The one path a reproducer keeps is FLAGPROP_ROOT's, relative to its own
    # folder (where the files of the run are); an absolute one is a finding.
    text_checked = "\n".join(line for line in text.split("\n")
                             if not (line.startswith("FLAGPROP_ROOT = ") and line[16:17] in ("'", '"')
                                     and not line[17:18] == "/"))
    for where, body in [(name, text_checked)] + [("%s (embedded %s)" % (name, rel), body)
                                                 for rel, body in embedded.items()]:
        for p in forbidden:
            if p in body:
                problems.append("%s: holds the absolute path %s" % (where, p))
    consts = constants(path)
    kind, crashed = consts.get("KIND"), bool(consts.get("CRASH"))
    if "flagprop/observers/timing.py" in embedded:
        problems.append("%s: embeds flagprop/observers/timing.py, which no %s case runs" % (name, kind))
    if kind in ("install", "install2", "launch", "key") and "flagprop/engine/ops.py" in embedded:
        problems.append("%s: embeds flagprop/engine/ops.py, which no installer-property case runs" % name)
    rc, out = run([args.python, path], cwd=args.source_dir)
    ok = rc == 1 and "REPRODUCED" in out
    if not ok:
        problems.append("%s: %s %s exited %d, not 1 (reproduced):\n%s" % (name, args.python, name, rc, out[-1500:]))
    rc, out = run([args.python, "-I", "-S", path], cwd=args.source_dir, timeout=60)
    if rc != 3 or "cannot import torch" not in out:
        problems.append("%s: without torch (%s -I -S) it exited %d, not 3 with a message:\n%s"
                        % (name, args.python, rc, out[-800:]))
    print("%-70s %6d bytes  KIND=%-8s crash=%-5s %s" % (name, size, kind, crashed, "ok" if ok else "FAILED"))
    return (kind, crashed) if ok else None


def check_elsewhere(path, args, problems):
    """Copied to another folder and run there: the path it records finds the
    files the run used (exit 1), so does FLAGPROP_ROOT (exit 1); with
    neither (its recorded path set to None), exit 2 naming FLAGPROP_ROOT.
    The other folder is a sibling of its own (the recorded path is relative
    to the reproducer's folder, so any folder at the same depth will do;
    one at another depth finds the files only where the path climbs to /)."""
    elsewhere = tempfile.mkdtemp(prefix="flagprop-repro-cwd-", dir=os.path.dirname(os.path.dirname(path)))
    copy = os.path.join(elsewhere, os.path.basename(path))
    shutil.copy(path, copy)
    try:
        env = dict(os.environ)
        env.pop("FLAGPROP_ROOT", None)
        rc, out = run([args.python, copy], cwd=elsewhere, env=env)
        if rc != 1:
            problems.append("%s copied to %s exited %d, not 1 (its recorded path did not find the files):\n%s"
                            % (os.path.basename(path), elsewhere, rc, out[-800:]))
        rc, out = run([args.python, copy], cwd=elsewhere,
                      env=dict(env, FLAGPROP_ROOT=os.path.abspath(args.source_dir)))
        if rc != 1:
            problems.append("%s run from %s with FLAGPROP_ROOT set exited %d, not 1:\n%s"
                            % (os.path.basename(path), elsewhere, rc, out[-800:]))
        with open(copy) as f:
            text = f.read()
        lines = [("FLAGPROP_ROOT = None" if line.startswith("FLAGPROP_ROOT = ") else line)
                 for line in text.split("\n")]
        with open(copy, "w") as f:
            f.write("\n".join(lines))
        rc, out = run([args.python, copy], cwd=elsewhere, env=env)
        if rc != 2 or "FLAGPROP_ROOT" not in out:
            problems.append("%s with no recorded path, run from %s without FLAGPROP_ROOT, exited %d, not 2 "
                            "naming FLAGPROP_ROOT:\n%s" % (os.path.basename(path), elsewhere, rc, out[-800:]))
    finally:
        shutil.rmtree(elsewhere)


def check_installed(args, problems):
    """`cmake --install` the build of --flagprop into a folder of --work, run
    the installed flagprop from a folder outside the checkout over two
    failing fixtures (its report outside too), and run every reproducer it
    wrote from yet another folder: each must exit 1."""
    prefix = os.path.join(args.work, "installed")
    rc, out = run(["cmake", "--install", os.path.dirname(os.path.abspath(args.flagprop)), "--prefix", prefix],
                  cwd=args.work, timeout=300)
    if rc != 0:
        problems.append("cmake --install exited %d:\n%s" % (rc, out[-1500:]))
        return
    share = os.path.join(prefix, "share", "flagprop", "fixtures", "targets")
    report = os.path.join(args.work, "installed-report")
    cmd = [os.path.join(prefix, "bin", "flagprop"), "run", "--no-db", "--cases", "20", "--seed", "3",
           "--report-dir", report]
    for m in ("r5-silent-skip", "ops-returns-view"):
        cmd += ["--manifest", os.path.join(share, m + ".json")]
    env = dict(os.environ)
    env.pop("FLAGPROP_ROOT", None)
    rc, out = run(cmd, cwd=args.work, env=env, timeout=600)
    folder = os.path.join(report, "reproducers")
    files = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    if not files:
        problems.append("the installed flagprop wrote no reproducers (exit %d):\n%s" % (rc, out[-2000:]))
        return
    elsewhere = tempfile.mkdtemp(prefix="flagprop-repro-installed-cwd-")
    try:
        for f in files:
            rc, out = run([args.python, os.path.join(folder, f)], cwd=elsewhere, env=env)
            print("%-70s installed copy, run from elsewhere: exit %d" % (f, rc))
            if rc != 1:
                problems.append("%s (installed copy) run from %s exited %d, not 1:\n%s"
                                % (f, elsewhere, rc, out[-800:]))
    finally:
        shutil.rmtree(elsewhere)


def check_run(args):
    """Runs flagprop, then checks its reproducers. Returns the problems."""
    report = os.path.join(args.work, "report")
    if os.path.exists(report):
        shutil.rmtree(report)
    cmd = [args.flagprop, "run", "--no-db", "--cases", "20", "--seed", "3", "--report-dir", report]
    for m in MANIFESTS:
        cmd += ["--manifest", os.path.join(args.source_dir, "fixtures", "targets", m + ".json")]
    rc, out = run(cmd, cwd=args.source_dir, timeout=600)
    print("flagprop run exited %d" % rc)
    folder = os.path.join(report, "reproducers")
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder)) if os.path.isdir(folder) else []
    if not files:
        return ["flagprop run wrote no reproducers (exit %d):\n%s" % (rc, out[-3000:])]
    problems, seen = [], set()
    dump_root = os.path.join(args.work, "dumped")
    if os.path.exists(dump_root):
        shutil.rmtree(dump_root)
    forbidden = machine_paths(args, report)
    distinct = False
    for path in files:
        got = check_one(path, args, forbidden, problems, dump_root)
        if got:
            seen.add(got)
            distinct |= "_distinct" in os.path.basename(path)
    if not distinct:
        problems.append("no reproducer of a second distinct failure (ops-two-faults) reproduced")
    for want, what in WANTED.items():
        if want not in seen:
            problems.append("no reproducer of %s (KIND %s%s) reproduced" % (what, want[0], ", crashed" if want[1] else ""))
    install = [p for p in files if constants(p).get("KIND") == "install"]
    if install:
        check_elsewhere(install[0], args, problems)
    if args.install:
        check_installed(args, problems)
    return problems


def self_test(args):
    """The checks catch a reproducer that is too large, holds a path, or
    exits with the wrong status. Returns the problems (none when they do)."""
    work = tempfile.mkdtemp(prefix="flagprop-repro-selftest-")
    try:
        args.work = work
        args.source_dir = os.path.abspath(args.source_dir or ".")
        forbidden = machine_paths(args, os.path.join(work, "report"))
        body = ("import sys\nKIND = 'op'\nCRASH = ''\n"
                "if '--dump-code' in sys.argv: sys.exit(0)\n"
                "print('REPRODUCED: yes')\nsys.exit(%s)\n")
        cases = {
            "big.py": (body % "1") + "#" * args.max_bytes + "\n",
            "path.py": (body % "1") + "# %s\n" % os.path.join(work, "report", "x.py"),
            "passes.py": body % "0",
            "no_torch_is_1.py": body % "1",
            "shebang.py": "#!/usr/bin/env python3\n" + body % "1",
        }
        expect = {"big.py": "bytes, not under", "path.py": "holds the absolute path", "passes.py": "not 1 (reproduced)",
                  "no_torch_is_1.py": "without torch", "shebang.py": "has a shebang"}
        problems = []
        for fname, text in cases.items():
            path = os.path.join(work, fname)
            with open(path, "w") as f:
                f.write(text)
            found = []
            check_one(path, args, forbidden, found, os.path.join(work, "dumped"))
            if not any(expect[fname] in p for p in found):
                problems.append("the checks did not catch %s (%s); they said: %s" % (fname, expect[fname], found))
        return problems
    finally:
        shutil.rmtree(work)


def main(argv=None):
    """Command line (see the module's docstring); returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flagprop", help="the flagprop executable")
    p.add_argument("--python", default=sys.executable, help="the python3 that has torch")
    p.add_argument("--source-dir", help="the flagprop checkout")
    p.add_argument("--work", help="a folder for the report (default: a new temporary one)")
    p.add_argument("--max-bytes", type=int, default=60000)
    p.add_argument("--install", action="store_true", help="also check the reproducers of an installed copy")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args(argv)
    if args.self_test:
        problems = self_test(args)
    else:
        if not args.flagprop or not args.source_dir:
            p.error("--flagprop and --source-dir are needed")
        made = args.work is None
        args.work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="flagprop-repro-"))
        os.makedirs(args.work, exist_ok=True)
        try:
            problems = check_run(args)
        finally:
            if made and not problems:
                shutil.rmtree(args.work, ignore_errors=True)
    for prob in problems:
        print("FAIL:", prob)
    print("%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
