"""The CI recipes a team copies (matrix/ci/): the GitHub Actions workflow
checked against the workflow syntax it uses and against flagprop's own
command line, and the Slurm array script checked by bash -n (and
shellcheck where installed) and run here, three array tasks one after
another with SLURM_ARRAY_TASK_ID set by hand, then its merge step.

Run from this folder: python3 -B -m unittest -v test_recipes (needs the
built flagprop in FLAGPROP_BINARY, default ../../build/flagprop).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FLAGPROP = os.environ.get("FLAGPROP_BINARY") or os.path.join(SOURCE_DIR, "build", "flagprop")
WORKFLOW = os.path.join(SOURCE_DIR, "matrix", "ci", "github-actions.yml")
SLURM = os.path.join(SOURCE_DIR, "matrix", "ci", "slurm-array.sh")

# The workflow syntax the recipe relies on (docs.github.com, "Workflow syntax
# for GitHub Actions"): the keys a workflow, a job and a step may have.
WORKFLOW_KEYS = {"name", "on", "env", "jobs", "permissions", "concurrency", "defaults", "run-name"}
JOB_KEYS = {"name", "needs", "if", "strategy", "runs-on", "timeout-minutes", "steps", "env", "outputs",
            "continue-on-error", "permissions", "environment", "container", "services", "defaults", "concurrency"}
STEP_KEYS = {"name", "uses", "run", "with", "env", "if", "id", "shell", "working-directory", "continue-on-error",
             "timeout-minutes"}


def problems_of(workflow):
    """What in `workflow` (the parsed YAML) breaks the syntax above, one
    line each: unknown keys, a job without runs-on or steps, a step with
    neither or both of uses and run, `needs` naming no job, a
    ${{ matrix.X }} that the job's matrix does not define, an unbalanced
    expression."""
    out = []
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    if on is None:
        out.append("no `on`")
    for k in workflow:
        if k is not True and k not in WORKFLOW_KEYS:
            out.append("unknown workflow key %r" % k)
    jobs = workflow.get("jobs") or {}
    if not jobs:
        out.append("no jobs")
    for name, job in jobs.items():
        out += ["%s: unknown key %r" % (name, k) for k in job if k not in JOB_KEYS]
        if "runs-on" not in job or not job.get("steps"):
            out.append("%s: needs runs-on and steps" % name)
        needs = job.get("needs", [])
        for n in [needs] if isinstance(needs, str) else needs:
            if n not in jobs:
                out.append("%s: needs %r, which is no job" % (name, n))
        matrix = ((job.get("strategy") or {}).get("matrix") or {})
        keys = set(matrix)
        for inc in matrix.get("include", []):
            keys |= set(inc)
        text = json.dumps(job)
        for value in _strings(job):
            if value.count("${{") != value.count("}}"):
                out.append("%s: an expression is not closed in %r" % (name, value[:80]))
        for ref in re.findall(r"\$\{\{\s*matrix\.([A-Za-z_][\w-]*)", text):
            if ref not in keys:
                out.append("%s: matrix.%s is not in its matrix" % (name, ref))
        for i, step in enumerate(job.get("steps", [])):
            out += ["%s step %d: unknown key %r" % (name, i, k) for k in step if k not in STEP_KEYS]
            if ("uses" in step) == ("run" in step):
                out.append("%s step %d: needs exactly one of uses and run" % (name, i))
    return out


def _strings(value):
    """Every string in `value` (nested dicts and lists)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def flagprop_commands(workflow):
    """(subcommand, options) of every ./build/flagprop command in its run steps."""
    out = []
    for job in (workflow.get("jobs") or {}).values():
        for step in job.get("steps", []):
            for m in re.finditer(r"\./build/flagprop (\w+)((?:[^\n|]|\\\n)*)", step.get("run", "")):
                out.append((m.group(1), re.findall(r"(--[a-z-]+)", m.group(2))))
    return out


class Workflow(unittest.TestCase):

    def test_the_workflow_keeps_the_syntax_it_uses(self):
        """Checks the workflow's structure, and that the check catches a broken one."""
        with open(WORKFLOW) as f:
            workflow = yaml.safe_load(f)
        self.assertEqual(problems_of(workflow), [])
        broken = yaml.safe_load(open(WORKFLOW))
        broken["jobs"]["merge"]["needs"] = "parts"
        broken["jobs"]["part"]["steps"][0]["run"] = "true"
        broken["jobs"]["part"]["runs-on"] = ["self-hosted", "${{ matrix.gpu }}"]
        found = problems_of(broken)
        self.assertTrue(any("needs 'parts'" in p for p in found), found)
        self.assertTrue(any("exactly one of uses and run" in p for p in found), found)
        self.assertTrue(any("matrix.gpu" in p for p in found), found)

    def test_its_flagprop_commands_are_flagprops(self):
        """Every option the workflow gives flagprop run / merge / diff is one they take."""
        with open(WORKFLOW) as f:
            commands = flagprop_commands(yaml.safe_load(f))
        self.assertEqual(sorted({c for c, _ in commands}), ["diff", "merge", "run"])
        for command, options in commands:
            helped = subprocess.run([FLAGPROP, command, "--help"], stdout=subprocess.PIPE, text=True).stdout
            for o in options:
                self.assertIn(o, helped, "flagprop %s takes no %s" % (command, o))
        for path in re.findall(r"matrix/targets/[\w-]+\.json", open(WORKFLOW).read()):
            if "${{" not in path:
                self.assertTrue(os.path.isfile(os.path.join(SOURCE_DIR, path)), path)


class Slurm(unittest.TestCase):

    def test_the_script_parses(self):
        """bash -n, and shellcheck where it is installed."""
        self.assertEqual(subprocess.run(["bash", "-n", SLURM]).returncode, 0)
        if shutil.which("shellcheck"):
            self.assertEqual(subprocess.run(["shellcheck", SLURM]).returncode, 0)

    def test_three_array_tasks_and_the_merge_make_one_report(self):
        """Three tasks of an array (SLURM_ARRAY_TASK_ID 1..3 set by hand)
        over a small target, then the merge step: one report with every
        result of the target once, each from its part."""
        out = tempfile.mkdtemp(prefix="flagprop-slurm-")
        try:
            manifest = os.path.join(SOURCE_DIR, "fixtures", "targets", "ops-two-faults.json")
            env = dict(os.environ, FLAGPROP=FLAGPROP, SLURM_ARRAY_TASK_COUNT="3", FLAGPROP_ARGS="--no-db --explicit 2")
            for i in (1, 2, 3):
                p = subprocess.run([SLURM, "run", manifest, out], env=dict(env, SLURM_ARRAY_TASK_ID=str(i)),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=SOURCE_DIR)
                self.assertIn(p.returncode, (0, 1), p.stdout[-2000:])
            p = subprocess.run([SLURM, "merge", out], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=SOURCE_DIR)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:])
            with open(os.path.join(out, "merged", "report.json")) as f:
                report = json.load(f)
            keys = [r["key"] for t in report["targets"] for r in t["results"]]
            self.assertEqual(sorted(keys), ["P5/tanh/float32", "P6/tanh/float32"])
            self.assertEqual(report["provenance"]["merged"]["count"], 3)
        finally:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
