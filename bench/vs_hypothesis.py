#!/usr/bin/env python3
"""flagprop's P5 side by side with the same property written with Hypothesis.

A benchmark, not a test. For the same ops, dtype (float32) and number of
cases it runs, on one device:

1. ``flagprop run`` with P5 for each op, on a target manifest written for the
   device into a scratch folder (stock ATen on ``cpu``; on a GPU, with
   ``--flaggems-src``, FlagGems' kernels registered with
   ``flag_gems.only_enable`` as ``matrix/targets/h200-flaggems-ops.json``
   does), and reads each op's cases, seconds and the harness's share of a
   case from report.json;
2. the same property as a PyTorch user writes it with Hypothesis: ``@given``
   over shapes of rank 0..5 from the sizes flagprop draws, non-contiguous
   inputs made by slicing, permuting and expanding, storage offsets, nan /
   inf / -0.0 / subnormal values and the op's scalar and dim arguments, each
   result compared with ``torch.testing.assert_close`` against CPU ATen
   (float64 inputs, the result rounded to float32; exact for selection ops)
   with FlagGems' tolerances, under ``settings(max_examples=N,
   deadline=None, database=None, derandomize=True)``;
3. with ``--flaggems-tests DIR`` (FlagGems' ``tests/`` folder), FlagGems'
   own accuracy tests of those ops (``pytest -k ... --ref cpu``).

Each of 1 and 2 runs twice, each time in a fresh process: cold (an empty
``TRITON_CACHE_DIR`` and ``FLAGGEMS_CACHE_DIR``, so every Triton kernel
compiles) and warm (the same caches kept). flagprop runs without its
explicit edge examples (``--explicit 0``; ``--explicit N`` gives them back):
they are judged before its generated cases and not counted among them, so
with them its rate would count 100 cases while it judged up to 100 + N.
With ``--precompile N`` the cold
flagprop run has ``--precompile N`` and each op's seconds include an equal
part of the workers' wall time (the warm runs have none: on a warm cache the
workers' start-up is pure cost). On the CPU the two differ only by what the first process leaves
in the operating system's caches. Every process first runs a warm-up op
(``--warmup-op``, default relu, the same number of cases), left out of the
table: it takes the process's one-time start-up (the device context, lazy
initialisation in ATen) off the first op measured. It prints one table (op, flagprop
cases/s cold and warm, Hypothesis examples/s cold and warm, their ratio,
FlagGems pytest tests/s, flagprop's harness share) and writes the figures as
JSON with ``--json PATH``.

Needs: a built ``flagprop`` (``./build/flagprop``; ``./build-gpu/flagprop``
is preferred for a GPU device), a Python with torch and Hypothesis for the
Hypothesis half (Debian 12: ``apt-get install python3-hypothesis``; run the
script with ``/usr/bin/python3``), and pytest plus FlagGems' test
dependencies for ``--flaggems-tests``. See bench/README.md.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULT_OPS = ["tanh", "add.Tensor", "where.self", "eq.Scalar", "sum.dim_IntList", "masked_fill.Scalar"]

#: Unary pointwise ops with a Hypothesis test (the warm-up op is one).
UNARY_OPS = ["tanh", "relu", "exp", "silu"]

#: FlagGems' accuracy tests of each op, as pytest node ids relative to its
#: ``tests/`` folder (one file per op since FlagGems' 2026 layout; every
#: parametrization of the function runs); ``--flaggems-test OP=FILE::NAME``
#: adds others. An op not listed here gets ``test_<name before the dot>.py::
#: test_<name before the dot>``.
FLAGGEMS_TESTS = {
    "tanh": ["test_tanh.py::test_tanh"],
    "add.Tensor": ["test_add.py::test_add"],
    "where.self": ["test_where_self_out.py::test_where_self"],
    "eq.Scalar": ["test_eq.py::test_eq_scalar"],
    "sum.dim_IntList": ["test_sum.py::test_sum_dim"],
    "masked_fill.Scalar": ["test_masked_fill.py::test_masked_fill"],
}


class BenchError(RuntimeError):
    """A part of the benchmark could not run (missing binary, no report, a
    process that failed before writing its figures)."""


# ---------------------------------------------------------------------------
# The Hypothesis half. It runs in a child process (``--worker``) so that cold
# and warm are fresh processes, as they are for flagprop.

#: Sizes and weights of flagprop's shape generator (generators/layouts.cpp).
SIZE_POOL = [1] * 5 + [2] * 3 + [3] * 3 + [4] * 2 + [5] * 2 + [8] * 2 + [0] + [16] * 2 + [17, 32, 64, 101, 128, 320]
SORTED_SIZES = sorted(set(SIZE_POOL))
MAX_ELEMENTS = 1 << 17
MAX_RANK = 5

#: Scalar arguments (catalog/catalog.cpp, floating runs).
COMPARE_SCALARS = [0.5, 0, 1, -1.5, 2.0, -0.0]
FILL_VALUES = [0.0, 1.5, -2, -0.0, 1e-3]
ALPHAS = [1, 2, -1, 0.5, 1.0]

sys.path.insert(0, os.path.join(ROOT, "python"))
#: rtol per dtype and atol: FlagGems' figures (its tests/accuracy_utils.py), flagprop's own.
from flagprop.judging.verdicts import POINTWISE_ATOL as ATOL, RESOLUTION as RTOL  # noqa: E402


def _hypothesis_tests(device, dtype_name, cases):
    """The Hypothesis property of each supported op.

    Inputs: ``device`` (a torch device string), ``dtype_name`` (``float32``
    ...), ``cases`` (``max_examples``). Returns {op: (test, counter)} where
    ``test()`` runs the ``@given`` test (raising what Hypothesis raises on a
    failure), ``counter["n"]`` counts the calls of its body and
    ``counter["sizes"]`` is the list of output element counts of the calls
    that reached the op. Imports torch and Hypothesis (ImportError when
    either is missing)."""
    import torch
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    dtype = getattr(torch, dtype_name)
    dev = torch.device(device)
    specials = [float("nan"), float("inf"), float("-inf"), -0.0, torch.finfo(dtype).tiny / 4]
    run_settings = settings(max_examples=cases, deadline=None, database=None, derandomize=True,
                            suppress_health_check=list(HealthCheck), print_blob=False)

    def numel(shape):
        """Elements of a tensor of ``shape``."""
        return math.prod(shape) if shape else 1

    @st.composite
    def shapes(draw, min_rank=0):
        """Shapes of rank min_rank..5 from flagprop's size pool, at most MAX_ELEMENTS elements."""
        rank = draw(st.integers(min_rank, MAX_RANK))
        s = draw(st.lists(st.sampled_from(SIZE_POOL), min_size=rank, max_size=rank))
        while numel(s) > MAX_ELEMENTS:  # the next smaller size for the largest dim
            i = s.index(max(s))
            s[i] = SORTED_SIZES[SORTED_SIZES.index(s[i]) - 1]
        return s

    @st.composite
    def broadcastable_to(draw, shape):
        """A shape that broadcasts to ``shape``: leading dims dropped, some dims 1."""
        out = list(shape[draw(st.sampled_from([0, 0, 0, 1, 2])):])
        return [1 if draw(st.sampled_from([False, False, False, True])) else d for d in out]

    @st.composite
    def layouts(draw, shape, kind):
        """How a tensor of ``shape`` lies in memory, as plain data."""
        r = len(shape)
        order = list(range(r))
        if r >= 2 and draw(st.sampled_from([False, False, False, True, True])):
            order = draw(st.permutations(order))
        steps = [1] * r
        if r >= 1 and draw(st.sampled_from([False, False, False, True])):
            steps = draw(st.lists(st.sampled_from([1, 1, 2, 2, 3]), min_size=r, max_size=r))
        expanded = [False] * r
        if r >= 1 and draw(st.sampled_from([False] * 4 + [True])):
            expanded = [draw(st.booleans()) and shape[d] != 1 for d in range(r)]
        offset = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 5, 7]))
        spec = {"shape": shape, "order": order, "steps": steps, "expanded": expanded, "offset": offset,
                "kind": kind, "seed": draw(st.integers(0, (1 << 20) - 1)), "specials": []}
        if numel(_memory_shape(spec)) + offset > MAX_ELEMENTS:
            spec["steps"] = [1] * r
        if kind == "float":
            spec["grid"] = draw(st.sampled_from([False, False, False, True]))
            if draw(st.sampled_from([False] * 5 + [True])):
                spec["specials"] = draw(st.lists(st.tuples(st.integers(0, MAX_ELEMENTS), st.sampled_from(specials)),
                                                 min_size=1, max_size=3))
        return spec

    def _memory_shape(spec):
        """The contiguous buffer a layout is cut from (dims in memory order)."""
        return [1 if spec["expanded"][d] else spec["shape"][d] * spec["steps"][d] for d in spec["order"]]

    def storage_of(spec):
        """The flat CPU storage of a layout: N(0, 1) or multiples of 0.5,
        specials written in; fair coin flips for bools."""
        n = numel(_memory_shape(spec)) + spec["offset"]
        g = torch.Generator().manual_seed(spec["seed"])
        if spec["kind"] == "bool":
            return torch.randint(0, 2, (n,), generator=g).bool()
        if spec.get("grid"):
            flat = torch.randint(-8, 9, (n,), generator=g, dtype=torch.float64) / 2
        else:
            flat = torch.randn(n, generator=g, dtype=torch.float64)
        flat = flat.to(dtype)
        for i, v in spec["specials"]:
            if n:
                flat[i % n] = v
        return flat

    def view_of(spec, storage):
        """The tensor a user gets from ``storage``: a storage offset, then
        slicing with steps, a permutation back to the logical order, and
        expanded (stride 0) dims."""
        mem = _memory_shape(spec)
        t = storage[spec["offset"]:spec["offset"] + numel(mem)].view(mem)
        t = t[tuple(slice(None, None, spec["steps"][d]) for d in spec["order"])]
        inverse = [spec["order"].index(d) for d in range(len(spec["order"]))]
        t = t.permute(inverse) if inverse else t
        return t.expand(spec["shape"])

    def tensors(specs):
        """(CPU tensors, device tensors): the same layouts, each in a storage of its own."""
        cpu, on_device = [], []
        for spec in specs:
            base = storage_of(spec)
            cpu.append(view_of(spec, base))
            on_device.append(view_of(spec, base.to(dev, copy=True)))
        return cpu, on_device

    def check(fn, specs, exact, reduced=1):
        """Calls ``fn`` on device tensors laid out as ``specs`` say and
        compares with CPU ATen: bit for bit (NaN equal) when ``exact``, else
        against the float64 result rounded to the run's dtype within rtol
        and atol * sqrt(reduced). Raises AssertionError on a difference."""
        xs, ds = tensors(specs)
        actual = fn(*ds)
        sizes.append(actual.numel())
        if exact:
            torch.testing.assert_close(actual.cpu(), fn(*xs), rtol=0, atol=0, equal_nan=True)
        else:
            up = [x.double() if x.is_floating_point() else x for x in xs]
            torch.testing.assert_close(actual.cpu(), fn(*up).to(dtype), rtol=RTOL[dtype_name],
                                       atol=ATOL * math.sqrt(max(reduced, 1)), equal_nan=True)

    aten = torch.ops.aten
    tests = {}
    sizes = []  # output elements of every example, for the record

    def given_test(op):
        """Decorates a property body into the op's @given test, counting its calls."""
        def decorate(body):
            counter = {"n": 0, "sizes": sizes}

            def test(data):
                counter["n"] += 1
                body(data)
            test.__name__ = "test_" + op.replace(".", "_")
            tests[op] = (run_settings(given(st.data())(test)), counter)
            return body
        return decorate

    for name in UNARY_OPS:
        def _unary(data, fn=getattr(aten, name).default):
            x = data.draw(layouts(data.draw(shapes()), "float"))
            check(fn, [x], exact=False)
        given_test(name)(_unary)

    @given_test("add.Tensor")
    def _add(data):
        s = data.draw(shapes())
        o = data.draw(broadcastable_to(s))
        if data.draw(st.sampled_from([False, False, False, True])):
            s, o = o, s
        alpha = data.draw(st.sampled_from(ALPHAS))
        specs = [data.draw(layouts(s, "float")), data.draw(layouts(o, "float"))]
        check(lambda x, y: aten.add.Tensor(x, y, alpha=alpha), specs, exact=False)

    @given_test("where.self")
    def _where(data):
        s = data.draw(shapes())
        specs = [data.draw(layouts(data.draw(broadcastable_to(s)), k)) for k in ("bool", "float", "float")]
        check(aten.where.self, specs, exact=True)

    @given_test("eq.Scalar")
    def _eq(data):
        x = data.draw(layouts(data.draw(shapes()), "float"))
        other = data.draw(st.sampled_from(COMPARE_SCALARS))
        check(lambda t: aten.eq.Scalar(t, other), [x], exact=True)

    @given_test("sum.dim_IntList")
    def _sum(data):
        s = data.draw(shapes(min_rank=1))
        r = len(s)
        dims = [d - r if data.draw(st.sampled_from([False, False, False, True])) else d
                for d in range(r) if data.draw(st.booleans())] or [r - 1]
        keepdim = data.draw(st.booleans())
        x = data.draw(layouts(s, "float"))
        check(lambda t: aten.sum.dim_IntList(t, dims, keepdim), [x], exact=False,
              reduced=math.prod(s[d % r] for d in dims))

    @given_test("masked_fill.Scalar")
    def _masked_fill(data):
        s = data.draw(shapes())
        specs = [data.draw(layouts(s, "float")), data.draw(layouts(data.draw(broadcastable_to(s)), "bool"))]
        value = data.draw(st.sampled_from(FILL_VALUES))
        check(lambda x, m: aten.masked_fill.Scalar(x, m, value), specs, exact=True)

    return tests


def enable_flag_gems(src, ops):
    """Registers FlagGems' kernels for ``ops`` (ATen overload names) exactly
    as flagprop's ``{"ops": {"enable": "flag_gems"}}`` targets do, with
    flagprop's own ``flagprop.engine.ops.setup``, ``src`` (a FlagGems ``src/``
    folder) first on sys.path. Returns the op names enabled. Raises
    ImportError when flag_gems does not import."""
    sys.path.insert(0, os.path.abspath(src))
    from flagprop.engine import ops as flagprop_ops  # the library stays alive in flagprop.engine.ops
    return flagprop_ops.setup({"ops": {"kind": "aten", "enable": "flag_gems"}}, ops)["enabled"]


def hypothesis_worker(args):
    """Child process: runs the Hypothesis test of each op in ``args.ops``
    once and writes {"version", "enabled", "ops": {op: {"examples",
    "seconds", "examples_per_s", "status", "error", "mean_output_elements",
    "output_elements_over_1000"}}} to ``args.worker_out``
    (examples: calls of the test body, shrinking included; seconds: wall
    time of the ``@given`` run; examples_per_s: examples / seconds). Ops
    without a Hypothesis test are recorded with status "missing". Returns 0."""
    import hypothesis
    import torch
    out = {"version": hypothesis.__version__, "torch": torch.__version__, "enabled": [], "ops": {}}
    if args.flaggems_src:
        out["enabled"] = enable_flag_gems(args.flaggems_src, args.ops)
    tests = _hypothesis_tests(args.device, args.dtype, args.cases)
    for op in args.ops:
        if op not in tests:
            out["ops"][op] = {"status": "missing", "error": "no Hypothesis test written for this op"}
            continue
        test, counter = tests[op]
        counter["n"] = 0
        del counter["sizes"][:]
        status, error = "pass", ""
        t0 = time.perf_counter()
        try:
            test()
        except Exception as e:  # a failing property: Hypothesis raised after shrinking
            status, error = "fail", "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300] if str(e).strip() else "")
        dev_sync(args.device)
        sec = time.perf_counter() - t0
        sizes = counter["sizes"]
        out["ops"][op] = {"examples": counter["n"], "seconds": sec, "examples_per_s": counter["n"] / sec if sec else 0.0,
                          "status": status, "error": error,
                          "mean_output_elements": sum(sizes) / len(sizes) if sizes else 0.0,
                          "output_elements_over_1000": sum(1 for n in sizes if n > 1000)}
    with open(args.worker_out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


def dev_sync(device):
    """Waits for the device's queued work (CUDA / PrivateUse1 devices); returns
    whether it synchronised."""
    import torch
    kind = torch.device(device).type
    if kind == "cuda" and torch.cuda.is_available():
        torch.cuda.synchronize()
        return True
    return False


# ---------------------------------------------------------------------------
# The parent: runs the processes and reads their figures.

def flagprop_binary(args):
    """The flagprop executable to run: ``--flagprop``, else ./build-gpu/flagprop
    for a non-CPU device when it exists, else ./build/flagprop. Raises
    BenchError when the chosen file is not an executable."""
    if args.flagprop:
        path = args.flagprop
    else:
        gpu = os.path.join(ROOT, "build-gpu", "flagprop")
        path = gpu if args.device != "cpu" and os.access(gpu, os.X_OK) else os.path.join(ROOT, "build", "flagprop")
    if not os.access(path, os.X_OK):
        raise BenchError("no flagprop executable at %s (build it, or give --flagprop PATH)" % path)
    return path


def run_ops(args):
    """The ops each process runs, in order: the warm-up op (untimed in the
    table: it carries the process's one-time start-up, e.g. the device
    context) and then ``args.ops``."""
    return ([args.warmup_op] if args.warmup_op and args.warmup_op not in args.ops else []) + list(args.ops)


def write_manifest(args, folder):
    """Writes the target manifest flagprop runs into ``folder`` and returns
    (its path, its content as a dict): ``args.device``, stock ATen, or
    FlagGems' kernels from ``args.flaggems_src`` (as
    matrix/targets/h200-flaggems-ops.json), P5 only, ``args.dtype``, the
    warm-up op and ``args.ops`` in that order, ``args.cases`` per op, ``layout_palette`` when
    ``args.layout_palette`` > 0."""
    m = {"schema": "flagprop.target/1",
         "name": "vs-hypothesis-" + args.device.replace(":", ""),
         "description": "bench/vs_hypothesis.py: P5 for the benchmark's ops on %s" % args.device,
         "device": args.device,
         "ops": {"kind": "aten"},
         "properties": ["P5"],
         "catalog": run_ops(args),
         "dtypes": [args.dtype],
         "op_cases": args.cases}
    if args.flaggems_src:
        m["flag_gems"] = {"kind": "source", "path": os.path.abspath(args.flaggems_src)}
        m["ops"]["enable"] = "flag_gems"
    if args.layout_palette > 0:
        m["layout_palette"] = args.layout_palette
    path = os.path.join(folder, "vs-hypothesis.json")
    with open(path, "w") as f:
        json.dump(m, f, indent=2)
    return path, m


def run_flagprop(args, binary, manifest, report_dir, env, precompile=0):
    """One ``flagprop run`` of P5 for every op of ``args`` into
    ``report_dir``. Returns {"wall_s": process wall time (s), "exit": exit
    status, "ops": {op: {"cases", "seconds" (s, the op's run in the target
    process), "cases_per_s", "executed" (every case run: ``--explicit``'s
    examples and discarded draws among them), "us_per_case" (µs, the Python half of a case),
    "share": {harness, reference, device_op} (fractions of us_per_case),
    "compilations", "status", "reason"}}}. Raises BenchError when no
    report.json was written."""
    cmd = [binary, "run", "--manifest", manifest, "--cases", str(args.cases), "--seed", str(args.seed),
           "--report-dir", report_dir, "--timeout", str(args.timeout), "--explicit", str(args.explicit)]
    if precompile:
        cmd += ["--precompile", str(precompile)]
    for op in run_ops(args):
        cmd += ["--property", "P5/%s/%s" % (op, args.dtype)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=args.timeout + 60)
    wall = time.perf_counter() - t0
    report = os.path.join(report_dir, "report.json")
    if not os.path.exists(report):
        raise BenchError("flagprop wrote no report (exit %d):\n%s" % (p.returncode, p.stdout[-3000:]))
    with open(report) as f:
        r = json.load(f)
    out = {"wall_s": wall, "exit": p.returncode, "ops": {}}
    for t in r.get("targets", []):
        if t.get("status") not in (None, "ok"):
            raise BenchError("flagprop target error: %s" % t.get("error"))
        # --precompile's workers compiled every op's palette (the same number of
        # calls per op; with --explicit N also up to N example draws per op)
        # before the runs: each op is charged an equal part.
        pre = t.get("precompile") or {}
        p5 = [x for x in t.get("results", []) if x.get("property") == "P5"]
        charge = float(pre.get("seconds", 0.0)) / max(len(p5), 1)
        if pre:
            out["precompile"] = pre
        for x in p5:
            st = x.get("observations", {}).get("stats", {})
            sec = float(x.get("seconds", 0.0)) + charge
            n = int(x.get("cases_run", 0))
            out["ops"][x.get("op")] = {"cases": n, "seconds": sec, "cases_per_s": n / sec if sec else 0.0,
                                       "executed": st.get("cases_executed"), "us_per_case": st.get("us_per_case"),
                                       "share": st.get("share", {}),
                                       "compilations": st.get("compilations"), "status": x.get("status"),
                                       "reason": x.get("reason", "")[:300]}
    return out


def run_hypothesis(args, out_file, env):
    """One child process running the Hypothesis tests (``--worker``).
    Returns the worker's figures (see ``hypothesis_worker``) plus "wall_s"
    (process wall time, s). Raises BenchError when the child wrote nothing
    (e.g. its Python lacks torch or Hypothesis)."""
    cmd = [args.python, os.path.abspath(__file__), "--worker", "--worker-out", out_file, "--device", args.device,
           "--dtype", args.dtype, "--cases", str(args.cases), "--ops", ",".join(run_ops(args)), "--warmup-op", ""]
    if args.flaggems_src:
        cmd += ["--flaggems-src", args.flaggems_src]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=args.timeout + 60)
    wall = time.perf_counter() - t0
    if p.returncode != 0 or not os.path.exists(out_file):
        raise BenchError("the Hypothesis run failed (exit %d; needs torch and Hypothesis in %s):\n%s"
                         % (p.returncode, args.python, p.stdout[-3000:]))
    with open(out_file) as f:
        out = json.load(f)
    out["wall_s"] = wall
    return out


def flaggems_test_names(args):
    """{op: [FlagGems test node ids, FILE::FUNCTION]} from FLAGGEMS_TESTS
    and ``--flaggems-test OP=FILE::FUNCTION``."""
    names = {}
    for op in args.ops:
        base = op.split(".")[0]
        names[op] = list(FLAGGEMS_TESTS.get(op, ["test_%s.py::test_%s" % (base, base)]))
    for item in args.flaggems_test:
        op, _, name = item.partition("=")
        if op in names and name and name not in names[op]:
            names[op].append(name)
    return names


def run_flaggems_tests(args, folder, env):
    """FlagGems' accuracy tests of the ops: ``python -m pytest NODEID...
    --ref cpu`` in ``folder`` with a JUnit report (node ids whose file the
    tests folder lacks are left out; their op shows no tests). Returns
    {"wall_s": process wall time incl. collection (s), "exit", "missing":
    [node ids], "ops": {op: {"tests" (run, not skipped), "failed",
    "skipped", "seconds" (s, summed test times), "tests_per_s" (None when
    the times sum to 0)}}}. Raises BenchError when no node id exists or
    pytest wrote no report."""
    names = flaggems_test_names(args)
    root = os.path.abspath(args.flaggems_tests)
    nodes = [n for ns in names.values() for n in ns]
    present = [n for n in nodes if os.path.isfile(os.path.join(root, n.split("::")[0]))]
    if not present:
        raise BenchError("none of FlagGems' test files for these ops is in %s: %s" % (root, ", ".join(nodes)))
    junit = os.path.join(folder, "junit.xml")
    cmd = [args.python, "-m", "pytest", *[os.path.join(root, n) for n in present], "-q", "-p", "no:cacheprovider",
           "--ref", "cpu", "--junitxml", junit, "-o", "junit_family=xunit1"]
    if args.flaggems_src:
        env = dict(env, PYTHONPATH=os.path.abspath(args.flaggems_src) + os.pathsep + env.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=args.timeout + 60)
    wall = time.perf_counter() - t0
    if not os.path.exists(junit):
        raise BenchError("FlagGems' pytest wrote no report (exit %d):\n%s" % (p.returncode, p.stdout[-3000:]))
    by_func = {n.split("::")[-1]: op for op, ns in names.items() for n in ns}
    ops = {op: {"tests": 0, "failed": 0, "skipped": 0, "seconds": 0.0} for op in args.ops}
    for case in ET.parse(junit).getroot().iter("testcase"):
        op = by_func.get(case.get("name", "").split("[")[0])
        if op is None:
            continue
        rec = ops[op]
        if case.find("skipped") is not None:
            rec["skipped"] += 1
            continue
        rec["tests"] += 1
        rec["seconds"] += float(case.get("time", 0) or 0)
        if case.find("failure") is not None or case.find("error") is not None:
            rec["failed"] += 1
    for rec in ops.values():
        rec["tests_per_s"] = rec["tests"] / rec["seconds"] if rec["seconds"] else None
    return {"wall_s": wall, "exit": p.returncode, "missing": sorted(set(nodes) - set(present)), "ops": ops}


def _fresh_env(cache):
    """This process's environment with TRITON_CACHE_DIR set to ``cache`` and
    FlagGems' own cache (generated code, tuned configs: FLAGGEMS_CACHE_DIR)
    beside it, so that a cold run finds neither filled by an earlier one."""
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = cache
    env["FLAGGEMS_CACHE_DIR"] = cache + "-flaggems"
    return env


def cold_warm(run, scratch, name, repeat=1):
    """Runs ``run(env, tag)`` with one fresh TRITON_CACHE_DIR under
    ``scratch``: once cold (empty cache), then ``repeat`` times warm (the
    cache the cold run left). Returns {"cold": the cold figures, "warm": the
    first warm run's figures with each op's record taken from the warm run
    with the median rate for that op and the median wall_s, "warm_runs":
    every warm run}."""
    cache = os.path.join(scratch, "triton-cache-" + name)
    os.makedirs(cache)
    env = _fresh_env(cache)
    cold = run(env, "cold")
    runs = [run(env, "warm%d" % i if i else "warm") for i in range(max(repeat, 1))]
    walls = sorted(r["wall_s"] for r in runs)
    warm = dict(runs[0], ops={}, wall_s=walls[len(walls) // 2])
    for op in runs[0]["ops"]:
        recs = sorted((r["ops"][op] for r in runs if op in r["ops"]), key=_rate_of)
        warm["ops"][op] = recs[len(recs) // 2]
    return {"cold": cold, "warm": warm, "warm_runs": runs}


def _rate_of(rec):
    """An op record's rate (cases/s, examples/s or tests/s; 0 when none)."""
    for key in ("cases_per_s", "examples_per_s", "tests_per_s"):
        if rec.get(key) is not None:
            return rec[key]
    return 0.0


def _rate(rec, key):
    """``rec[key]`` when the op ran (pass or fail), else None."""
    return rec.get(key) if rec and rec.get("status", "pass") in ("pass", "fail") else None


def rows_of(ops, fp, hy, fg):
    """One row per op from the figures (each None where not run): flagprop
    cases/s and Hypothesis examples/s cold and warm, their ratios, FlagGems
    pytest tests/s and failures cold and warm, flagprop's harness share
    (warm run, 0..1), and both statuses."""
    rows = []
    for op in ops:
        r = {"op": op}
        for phase in ("cold", "warm"):
            f = fp[phase]["ops"].get(op) if fp else None
            h = hy[phase]["ops"].get(op) if hy else None
            r["flagprop_cases_per_s_" + phase] = _rate(f, "cases_per_s")
            r["hypothesis_examples_per_s_" + phase] = _rate(h, "examples_per_s")
            a, b = r["flagprop_cases_per_s_" + phase], r["hypothesis_examples_per_s_" + phase]
            r["ratio_" + phase] = a / b if a and b else None
            g = fg[phase]["ops"].get(op) if fg else None
            r["flaggems_tests_per_s_" + phase] = g["tests_per_s"] if g and g["tests"] else None
            r["flaggems_failed_" + phase] = g["failed"] if g else None
        wf = fp["warm"]["ops"].get(op) if fp else None
        r["flagprop_harness_share"] = (wf.get("share") or {}).get("harness") if wf else None
        r["flagprop_status"] = wf.get("status") if wf else None
        wh = hy["warm"]["ops"].get(op) if hy else None
        r["hypothesis_status"] = wh.get("status") if wh else None
        rows.append(r)
    return rows


def _num(x, fmt="%.1f"):
    """``x`` formatted for the table, "-" for None."""
    return "-" if x is None else fmt % x


def render(rows, meta):
    """The table as text (one line per op, a header and a footer)."""
    lines = ["flagprop P5 vs Hypothesis: %(device)s, %(dtype)s, %(cases)d cases per op, seed %(seed)s" % meta,
             "%-20s %21s %21s %15s %17s %9s %13s" % ("", "flagprop cases/s", "hypothesis ex/s", "flagprop/hyp",
                                                       "FlagGems pytest", "flagprop", "status"),
             "%-20s %10s %10s %10s %10s %7s %7s %8s %8s %9s %13s" % ("op", "cold", "warm", "cold", "warm", "cold",
                                                                     "warm", "cold", "warm", "harness", "fp/hyp")]
    for r in rows:
        lines.append("%-20s %10s %10s %10s %10s %7s %7s %8s %8s %9s %13s" % (
            r["op"], _num(r["flagprop_cases_per_s_cold"]), _num(r["flagprop_cases_per_s_warm"]),
            _num(r["hypothesis_examples_per_s_cold"]), _num(r["hypothesis_examples_per_s_warm"]),
            _num(r["ratio_cold"], "%.2f"), _num(r["ratio_warm"], "%.2f"),
            _num(r["flaggems_tests_per_s_cold"]) + ("*" if r["flaggems_failed_cold"] else ""),
            _num(r["flaggems_tests_per_s_warm"]) + ("*" if r["flaggems_failed_warm"] else ""),
            _num(None if r["flagprop_harness_share"] is None else 100 * r["flagprop_harness_share"], "%.0f%%"),
            "%s/%s" % (r["flagprop_status"] or "-", r["hypothesis_status"] or "-")))
    if any(r["flaggems_failed_cold"] or r["flaggems_failed_warm"] for r in rows):
        lines.append("* some of the op's FlagGems tests failed (counts in the JSON: flaggems_tests)")
    return "\n".join(lines)


def parse_args(argv):
    """Command line -> argparse.Namespace (``ops`` as a list). Exits 2 on
    bad usage."""
    p = argparse.ArgumentParser(description="flagprop's P5 side by side with a Hypothesis-written equivalent "
                                            "(cases/s cold and warm), and FlagGems' own accuracy tests.")
    p.add_argument("--ops", default=",".join(DEFAULT_OPS), help="comma-separated ATen overloads (default: %(default)s)")
    p.add_argument("--cases", type=int, default=200, help="cases per op for both (default 200)")
    p.add_argument("--dtype", default="float32", help="dtype (default float32)")
    p.add_argument("--device", default="cpu", help="cpu (stock ATen) or a device such as cuda:0 (default cpu)")
    p.add_argument("--seed", type=int, default=1, help="flagprop's seed (Hypothesis runs derandomized; default 1)")
    p.add_argument("--flaggems-src", help="FlagGems' src/ folder: its kernels are enabled for the ops (GPU device)")
    p.add_argument("--flaggems-tests", help="FlagGems' tests/ folder: also run its accuracy tests of the ops")
    p.add_argument("--flaggems-test", action="append", default=[], metavar="OP=FILE::NAME",
                   help="another FlagGems test (a pytest node id in the tests folder) for OP (repeatable)")
    p.add_argument("--flagprop", help="flagprop executable (default ./build-gpu/flagprop on a GPU, else ./build/flagprop)")
    p.add_argument("--python", default=sys.executable,
                   help="Python with torch and Hypothesis for the Hypothesis and pytest runs (default: this one)")
    p.add_argument("--layout-palette", type=int, default=None,
                   help="flagprop's layout_palette (default 16 on a non-CPU device, off on cpu; 0: off)")
    p.add_argument("--explicit", type=int, default=0, metavar="N",
                   help="flagprop's explicit examples per op (its --explicit; default 0: none, as the Hypothesis "
                        "test draws only random examples); they are judged before the counted cases, so with N > 0 "
                        "the rates compare unlike work (the JSON's executed counts them)")
    p.add_argument("--precompile", type=int, default=0, metavar="N",
                   help="the cold flagprop run with --precompile N: N processes compile the palette's kernels "
                        "(and with --explicit, the examples') before the cases; their wall time is charged to the "
                        "ops in equal parts (default 0: none)")
    p.add_argument("--repeat", type=int, default=1,
                   help="warm runs of each; the table gives each op's median (default 1)")
    p.add_argument("--warmup-op", default="relu",
                   help="op each process runs first, left out of the table (default relu; '' for none)")
    p.add_argument("--timeout", type=int, default=3600, help="time limit per process, s (default 3600)")
    p.add_argument("--json", help="also write the figures as JSON to this file")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (reports, manifest, caches)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.ops = [o.strip() for o in a.ops.split(",") if o.strip()]
    if not a.ops:
        p.error("--ops names no op")
    if a.cases < 1 or a.repeat < 1:
        p.error("--cases and --repeat must be at least 1")
    if not 0 <= a.explicit <= 4096:
        p.error("--explicit must be from 0 (none) to 4096 (flagprop's limit)")
    if not 0 <= a.precompile <= 256:
        p.error("--precompile must be from 0 (none) to 256")
    if a.layout_palette is None:
        a.layout_palette = 0 if a.device == "cpu" else 16
    if a.json and not os.path.isdir(os.path.dirname(os.path.abspath(a.json))):
        p.error("--json %s: no folder %s" % (a.json, os.path.dirname(os.path.abspath(a.json))))
    if a.flaggems_tests and not a.worker:
        if not os.path.isdir(a.flaggems_tests):
            p.error("--flaggems-tests %s: no such folder (FlagGems' tests/)" % a.flaggems_tests)
        for item in a.flaggems_test:
            op, _, name = item.partition("=")
            if op not in a.ops or "::" not in name:
                p.error("--flaggems-test %s: want OP=FILE::FUNCTION with OP among --ops" % item)
        nodes = [n for ns in flaggems_test_names(a).values() for n in ns]
        missing = [n for n in nodes if not os.path.isfile(os.path.join(a.flaggems_tests, n.split("::")[0]))]
        if len(missing) == len(nodes):
            p.error("--flaggems-tests %s holds none of the test files: %s" % (a.flaggems_tests, ", ".join(nodes)))
        for n in missing:
            print("vs_hypothesis: %s is not in %s; its op gets no FlagGems figure" % (n, a.flaggems_tests),
                  file=sys.stderr)
    return a


def main(argv=None):
    """Runs the benchmark and prints the table; returns the exit status (0
    figures printed, 1 a part could not run, 2 bad usage)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        return hypothesis_worker(args)
    scratch = tempfile.mkdtemp(prefix="flagprop-vs-hypothesis-")
    result = {"schema": "flagprop.bench.vs_hypothesis/1", "device": args.device, "dtype": args.dtype,
              "cases": args.cases, "seed": args.seed, "ops": args.ops, "scratch": scratch if args.keep else None}
    try:
        binary = flagprop_binary(args)
        manifest, content = write_manifest(args, scratch)
        result["flagprop"] = {"binary": binary, "manifest": content}
        print("flagprop: %s (manifest %s)" % (binary, manifest), file=sys.stderr, flush=True)
        # --precompile is for a cold cache: on a warm one its workers' start-up is pure cost.
        fp = cold_warm(lambda env, tag: run_flagprop(args, binary, manifest, os.path.join(scratch, "report-" + tag), env,
                                                     args.precompile if tag == "cold" else 0),
                       scratch, "flagprop", args.repeat)
        result["flagprop"].update(fp)
        print("hypothesis: %s" % args.python, file=sys.stderr, flush=True)
        hy = cold_warm(lambda env, tag: run_hypothesis(args, os.path.join(scratch, "hypothesis-%s.json" % tag), env),
                       scratch, "hypothesis", args.repeat)
        result["hypothesis"] = hy
        fg = None
        if args.flaggems_tests:
            print("FlagGems tests: %s" % args.flaggems_tests, file=sys.stderr, flush=True)

            def one(env, tag):
                folder = os.path.join(scratch, "pytest-" + tag)
                os.makedirs(folder)
                return run_flaggems_tests(args, folder, env)
            fg = cold_warm(one, scratch, "pytest", args.repeat)
        result["flaggems_tests"] = fg
    except (BenchError, subprocess.TimeoutExpired) as e:
        print("vs_hypothesis: %s" % e, file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    rows = rows_of(args.ops, fp, hy, fg)
    result["rows"] = rows
    print(render(rows, result))
    print("process wall time, s (cold / warm): flagprop %.1f / %.1f, hypothesis %.1f / %.1f%s" % (
        fp["cold"]["wall_s"], fp["warm"]["wall_s"], hy["cold"]["wall_s"], hy["warm"]["wall_s"],
        ", FlagGems pytest %.1f / %.1f" % (fg["cold"]["wall_s"], fg["warm"]["wall_s"]) if fg else ""))
    print("hypothesis %s; flagprop harness share = the part of a case outside the CPU reference and the op "
          "(warm run)" % hy["warm"].get("version"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
