#!/usr/bin/env python3
"""Validates flagprop's JSON documents against the JSON Schemas in schemas/
with the jsonschema library (Debian: python3-jsonschema), draft 2020-12.

  validate.py --manifests
      every manifest in the source tree: each JSON file (tracked or not
      ignored by git; without git, the tree less build and third-party
      folders) whose "schema" is flagprop.target/1, flagprop.matrix/1 or
      flagprop.pin/1, against target / matrix / pin.schema.json; also checks
      that target.schema.json's mock spec is mocks/flagprop_mocks/spec.py's
      and its component list observe.py's, so they cannot drift apart, and
      that broken variants of real manifests (MUST_REJECT) are rejected.
  validate.py --report REPORT_JSON [--seed SEED]
      a report.json against report.schema.json, and that broken variants of
      it (a seed as a JSON number, ...) are rejected; with --seed, also that
      the run's seed is the decimal string SEED (not a number), everywhere
      the report records it.
  validate.py --run FLAGPROP --seed SEED [--keep DIR] -- RUN_ARGS...
      runs `FLAGPROP run RUN_ARGS --seed SEED --report-dir TMP --db TMP/db`,
      then checks its report.json as --report --seed does, and each example
      the run stored against example.schema.json.

Exit status: 0 valid, 1 invalid (every error printed, path and message), 2
usage or environment error (e.g. no jsonschema).
"""

import argparse
import ast
import copy
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(ROOT, "schemas")
MANIFEST_KINDS = {"flagprop.target/1": "target", "flagprop.matrix/1": "matrix", "flagprop.pin/1": "pin"}
# Folders that never hold the repository's own manifests (git-ignored: builds,
# third-party code, reports).
SKIP_DIRS = {".git", ".targets", ".carry", "out", "reports-out", "flagprop-report", "flagprop-replay", "__pycache__"}

try:
    import jsonschema
except ImportError:
    print("validate.py: the jsonschema module is missing (apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(2)


def load_schema(kind):
    with open(os.path.join(SCHEMAS, kind + ".schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def where(error):
    return "$" + "".join("[%d]" % p if isinstance(p, int) else "." + str(p) for p in error.absolute_path)


def errors_of(validator, doc, label, limit=30):
    """The schema errors of ``doc``, one line each (the most specific cause of
    each): the first ``limit``, then how many there are per place (array
    indices left out)."""
    out, places = [], {}
    for e in validator.iter_errors(doc):
        cause = jsonschema.exceptions.best_match([e]) if e.context else e
        line = "%s: %s: %s" % (label, where(cause), cause.message[:300])
        if len(out) < limit:
            out.append(line)
        place = "%s: %s" % (re.sub(r"\[\d+\]", "[]", where(cause)), cause.validator)
        places[place] = places.get(place, 0) + 1
    if sum(places.values()) > limit:
        out.append("%s: %d errors in all; per place:" % (label, sum(places.values())))
        out += ["%s:   %6d  %s" % (label, n, p) for p, n in sorted(places.items(), key=lambda x: -x[1])]
    return out, sum(places.values())


def manifest_files():
    """JSON files of the source tree: tracked and untracked-but-not-ignored
    ones where git knows the tree, else every one outside SKIP_DIRS and build
    folders."""
    try:
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                                 "--", "*.json"], capture_output=True, check=True).stdout.decode()
        files = sorted({os.path.join(ROOT, p) for p in listed.split("\0") if p})
        return [f for f in files if os.path.isfile(f)]
    except (OSError, subprocess.CalledProcessError):
        pass
    out = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and d != "build" and not d.startswith("build-"))
        out += [os.path.join(top, f) for f in sorted(files) if f.endswith(".json")]
    return out


def check_mock_spec(target_schema):
    """target.schema.json's mock spec against mocks/flagprop_mocks/spec.py
    (SPEC_SCHEMA, PARAM_KINDS) and its component enum against
    python/flagprop/engine/observe.py (COMPONENTS)."""
    problems = []
    spec_py = os.path.join(ROOT, "mocks", "flagprop_mocks", "spec.py")
    module_spec = importlib.util.spec_from_file_location("flagprop_mock_spec", spec_py)
    spec = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(spec)
    mock = target_schema["$defs"]["mock_spec"]["properties"]
    if set(mock) != set(spec.SPEC_SCHEMA):
        problems.append("target.schema.json mock_spec fields %s != spec.py SPEC_SCHEMA fields %s"
                        % (sorted(mock), sorted(spec.SPEC_SCHEMA)))
    for name, field in spec.SPEC_SCHEMA.items():
        if name in mock and "values" in field and "enum" in mock[name]:
            if mock[name]["enum"] != [v for v, _w in field["values"]]:
                problems.append("target.schema.json mock_spec.%s enum %s != spec.py values %s"
                                % (name, mock[name]["enum"], [v for v, _w in field["values"]]))
    kinds = mock.get("params", {}).get("items", {}).get("properties", {}).get("kind", {}).get("enum")
    if kinds != list(spec.PARAM_KINDS):
        problems.append("target.schema.json mock_spec.params kinds %s != spec.py PARAM_KINDS %s"
                        % (kinds, list(spec.PARAM_KINDS)))
    with open(os.path.join(ROOT, "python", "flagprop", "engine", "observe.py")) as f:
        tree = ast.parse(f.read())
    components = next(ast.literal_eval(n.value) for n in tree.body
                      if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "COMPONENTS" for t in n.targets))
    want = [c for c, _marker in components]
    have = target_schema["$defs"]["installer"]["properties"]["components"]["items"]["enum"]
    if have != want:
        problems.append("target.schema.json installer.components enum %s != observe.py COMPONENTS %s" % (have, want))
    with open(os.path.join(SCHEMAS, "report.schema.json")) as f:
        report_components = json.load(f)["$defs"]["component"]["enum"]
    if report_components != want:
        problems.append("report.schema.json component enum %s != observe.py COMPONENTS %s" % (report_components, want))
    return problems


# Broken variants of real manifests that the schemas must reject (each a
# function of a copy of the file's JSON): the schemas are not vacuous.
MUST_REJECT = [
    ("fixtures/targets/well-behaved.json", "an unknown field", lambda m: m.update(unknown_field=1)),
    ("fixtures/targets/well-behaved.json", "gates spelt \"generated\"", lambda m: m.update(gates="generated")),
    ("fixtures/targets/well-behaved.json", "installed mode with a path",
     lambda m: m["installer"].update(mode="installed")),
    ("fixtures/targets/well-behaved.json", "palette_seed as a string", lambda m: m.update(palette_seed="7")),
    ("fixtures/targets/well-behaved.json", "an expect key with a non-catalog dtype",
     lambda m: m["expect"].update({"P5/tanh/float8": "fail"})),
    ("fixtures/targets/well-behaved.json", "a mock spec value spec.py does not list",
     lambda m: m.update(flag_gems={"kind": "mock", "mock": {"helper": "sometimes"}})),
    ("fixtures/targets/well-behaved.json", "a name with a space", lambda m: m.update(name="well behaved")),
    ("matrix/targets/h200-pin-r5.json", "a pinned field given again", lambda m: m["flag_gems"].update(path="src")),
    ("fixtures/targets/default.json", "a matrix without targets", lambda m: m.update(targets=[])),
    ("matrix/pins/r5.json", "routing without routes_to_flaggems", lambda m: m["routing"].pop("routes_to_flaggems")),
]


def rejected_variants(validators):
    problems = []
    for rel, what, breaks in MUST_REJECT:
        with open(os.path.join(ROOT, rel)) as f:
            doc = json.load(f)
        breaks(doc)
        if validators[MANIFEST_KINDS[doc["schema"]]].is_valid(doc):
            problems.append("%s with %s: the schema accepts it (it must not)" % (rel, what))
    return problems


def validate_manifests():
    validators = {kind: load_schema(kind) for kind in set(MANIFEST_KINDS.values())}
    errors, problems, counts, invalid = [], [], {k: 0 for k in validators}, 0
    for path in manifest_files():
        rel = os.path.relpath(path, ROOT)
        try:
            with open(path) as f:
                doc = json.load(f)
        except ValueError as e:
            if rel.startswith(("fixtures" + os.sep, "matrix" + os.sep)):
                errors.append("%s: not valid JSON (%s)" % (rel, e))
                invalid += 1
            continue
        tag = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(tag, str) or not tag.startswith("flagprop."):
            continue
        kind = MANIFEST_KINDS.get(tag)
        if kind is None:
            if tag != "flagprop.report/1":
                problems.append("%s: schema '%s' has no JSON Schema in schemas/" % (rel, tag))
            continue
        counts[kind] += 1
        lines, n = errors_of(validators[kind], doc, rel)
        errors += lines
        invalid += n > 0
    problems += rejected_variants(validators)
    with open(os.path.join(SCHEMAS, "target.schema.json")) as f:
        problems += check_mock_spec(json.load(f))
    # Guard against a vacuous pass: the default matrix and its targets are there.
    if counts["matrix"] < 1 or counts["target"] < 20 or counts["pin"] < 1:
        problems.append("too few manifests found (%s): is %s the source tree?" % (counts, ROOT))
    for p in errors + problems:
        print(p)
    print("manifests: %d target, %d matrix, %d pin checked; %s"
          % (counts["target"], counts["matrix"], counts["pin"],
             "%d invalid file(s), %d other problem(s)" % (invalid, len(problems))
             if errors or problems else "all valid"))
    return 1 if errors or problems else 0


def seed_problems(report, seed):
    """The run's seed is the string ``seed`` in provenance and in every
    result's observations that records one."""
    out = []
    got = report.get("provenance", {}).get("seed")
    if not isinstance(got, str) or got != seed:
        out.append("report: $.provenance.seed is %s (%s), expected the string %s"
                   % (json.dumps(got), type(got).__name__, json.dumps(seed)))
    seen = 0
    for i, t in enumerate(report.get("targets", [])):
        for k, r in enumerate(t.get("results", [])):
            obs = r.get("observations")
            if isinstance(obs, dict) and "seed" in obs:
                seen += 1
                if obs["seed"] != seed:
                    out.append("report: $.targets[%d].results[%d].observations.seed is %s, expected the string %s"
                               % (i, k, json.dumps(obs["seed"]), json.dumps(seed)))
    if not seen:
        out.append("report: no result records the run's seed (observations.seed)")
    return out


def broken_reports(report):
    """(what, variant) pairs: small copies of ``report`` (its provenance, one
    target with one result) each broken the way the format forbids, for the
    schema to reject."""
    def first(test):
        for t in report.get("targets", []):
            for res in t.get("results", []):
                if test(t, res.get("observations") or {}):
                    return copy.deepcopy(dict(report, targets=[dict(t, results=[res])]))
        return None

    out = []
    r = copy.deepcopy(dict(report, targets=[]))
    if str(r.get("provenance", {}).get("seed", "")).isdigit():
        r["provenance"]["seed"] = int(r["provenance"]["seed"])
        out.append(("the run's seed as a JSON number", r))
    r = first(lambda t, o: str(o.get("seed", "")).isdigit())
    if r:
        o = r["targets"][0]["results"][0]["observations"]
        o["seed"] = int(o["seed"])
        out.append(("a result's seed as a JSON number", r))
    r = first(lambda t, o: isinstance(o.get("distribution"), list) and o["distribution"])
    if r:
        o = r["targets"][0]["results"][0]["observations"]
        o["distribution"] = {d["class"]: d["cases"] for d in o["distribution"]}
        out.append(("the distribution keyed by case class", r))
    r = first(lambda t, o: str(t.get("target", {}).get("palette_seed", "")).isdigit())
    if r:
        r["targets"][0]["target"]["palette_seed"] = int(r["targets"][0]["target"]["palette_seed"])
        out.append(("palette_seed as a JSON number", r))
    return out


def validate_report(path, seed=None):
    validator = load_schema("report")
    with open(path) as f:
        report = json.load(f)
    problems, n = errors_of(validator, report, "report")
    for what, variant in broken_reports(report):
        if validator.is_valid(variant):
            problems.append("report with %s: the schema accepts it (it must not)" % what)
            n += 1
    seeds = seed_problems(report, seed) if seed is not None else []
    for p in problems + seeds:
        print(p)
    results = sum(len(t.get("results", [])) for t in report.get("targets", []) if isinstance(t, dict))
    print("report %s: %d target(s), %d result(s); %s" % (
        path, len(report.get("targets", [])), results,
        "%d schema error(s), %d seed problem(s)" % (n, len(seeds)) if n or seeds else "valid"))
    return 1 if n or seeds else 0


def validate_examples(db):
    """Validates every stored example under ``db`` against
    example.schema.json; 1 when one is invalid or there is none."""
    validator = load_schema("example")
    files = [os.path.join(d, f) for d, _, names in os.walk(db) for f in names if f.endswith(".json")]
    n = 0
    for path in sorted(files):
        with open(path) as f:
            problems, k = errors_of(validator, json.load(f), path)
        for p in problems:
            print(p)
        n += k
    print("examples in %s: %d file(s); %s" % (db, len(files), "%d schema error(s)" % n if n else "valid"))
    return 1 if n or not files else 0


def run_and_validate(flagprop, seed, args, keep):
    out = keep or tempfile.mkdtemp(prefix="flagprop-schema-")
    report_dir = os.path.join(out, "report")
    if os.path.exists(report_dir):
        shutil.rmtree(report_dir)
    db = os.path.join(out, "db")
    if os.path.exists(db):
        shutil.rmtree(db)
    cmd = [flagprop, "run"] + args + ["--seed", seed, "--report-dir", report_dir, "--db", db]
    print("running:", " ".join(cmd), flush=True)
    rc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT).returncode
    path = os.path.join(report_dir, "report.json")
    try:
        if rc not in (0, 1) or not os.path.isfile(path):
            print("flagprop run exited %d without a report (%s)" % (rc, path))
            return 1
        return validate_report(path, seed) | validate_examples(db)
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifests", action="store_true", help="validate every manifest in the source tree")
    ap.add_argument("--report", help="a report.json to validate")
    ap.add_argument("--seed", help="the run's seed, which the report must hold as this exact string")
    ap.add_argument("--run", metavar="FLAGPROP", help="run FLAGPROP run ARGS (after --) and validate its report")
    ap.add_argument("--keep", metavar="DIR", help="--run: write the report under DIR and keep it")
    ap.add_argument("args", nargs="*", help="--run: the arguments of `flagprop run`")
    a = ap.parse_args(argv)
    if sum(bool(x) for x in (a.manifests, a.report, a.run)) != 1 or (a.run and not a.seed):
        ap.print_usage(sys.stderr)
        return 2
    if a.manifests:
        return validate_manifests()
    if a.report:
        return validate_report(a.report, a.seed)
    return run_and_validate(a.run, a.seed, a.args, a.keep)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
