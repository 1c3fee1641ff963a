"""flagprop's pre-compile worker: launches the op under test on a target's
explicit examples and palette calls in a process of its own, so that Triton
compiles their specializations into its on-disk cache before the target's
cases run.

Triton compiles one kernel specialization at a time in a process, and a cold
run spends most of its time there. ``flagprop run --precompile N`` starts N
of these workers before a target's first op case (``runner/precompile.cpp``);
each takes every N-th call of the job and calls the op on fresh device
inputs built as the suites build them (``flagprop.engine.ops``). They share Triton's
cache folder (``TRITON_CACHE_DIR``, ``--triton-cache``) and FlagGems' code
and tuning caches with the target's process, which then loads each
specialization from disk instead of compiling it.

Nothing here judges: an op that raises, a wrong result or a worker that dies
only means that a kernel was not compiled ahead (the target's process then
compiles it, and judges the case, as without workers).

Usage: ``python3 -m flagprop.engine.precompile JOB K N RESULT [SKIP]`` where JOB is
a JSON file ``{"target": Target::toJson, "gates": {...}, "op_names": [...],
"cases": [case...]}``, K the worker's index (0 .. N-1), N the number of
workers, SKIP how many calls of its share to leave out (a fresh worker after
one died: default 0), and RESULT the JSON file written at the end:
``{"worker", "cases", "ran", "failed", "compilations", "seconds", "errors":
[one line...]}``. Before each call the worker writes ``{"i": its index in
the share, "ran", "failed": counts so far, "case"}`` to ``RESULT +
".inflight"`` (empty between calls), so that its parent can stop a worker
stuck on one call, and start a fresh one after the call a worker died on.
"""

import ctypes
import json
import os
import signal
import sys
import time


def _die_with_parent():
    """Asks Linux to kill this process when its parent dies (a target process
    stopped by --budget or killed): PR_SET_PDEATHSIG, prctl(2). Nothing on
    other systems."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass
    parent = os.environ.get("FLAGPROP_PRECOMPILE_PARENT")
    if os.getppid() != (int(parent) if parent else os.getppid()) or os.getppid() == 1:
        os._exit(1)  # the parent died before prctl (the worker was adopted)


def _prepare(target, op_names):
    """Makes the target's op importable and set up as the target's process
    does it (FlagGems' source folder on sys.path, torch_fl for a flagos
    device, FlagGems' kernels registered where the target enables them)."""
    import torch  # noqa: F401  (before FlagGems and the device plugin)

    from . import loader, ops

    if target["flag_gems"]["kind"] == "source":
        loader.add_flag_gems_source(target["flag_gems"]["path"])
    if str(target["device"]).startswith("flagos"):
        import torch_fl  # noqa: F401  (registers the flagos device)
    try:  # so that ops.setup counts compilations, as in the target's process
        import triton  # noqa: F401
    except ImportError:
        pass
    ops.setup(target, op_names)


def _synchronize(device):
    import torch

    kind = str(device).split(":")[0]
    module = getattr(torch, kind, None) if kind != "cpu" else None
    if module is not None and hasattr(module, "synchronize"):
        module.synchronize()


def run(job, worker, workers, inflight_path=None, skip=0):
    """Launches the op of every ``workers``-th case of ``job`` from index
    ``worker``, less the first ``skip`` of them, on fresh device inputs.
    Returns the result dict (see the module's docstring); ``seconds`` is
    wall time in s."""
    from . import ops

    t0 = time.perf_counter()
    target, gates = job["target"], job.get("gates") or {}
    mine = job["cases"][worker::workers]
    out = {"worker": worker, "cases": len(mine) - skip, "ran": 0, "failed": 0, "errors": []}
    _prepare(target, job.get("op_names") or [])
    device = target["device"]
    for i, case in enumerate(mine):
        if i < skip:
            continue
        if inflight_path:
            with open(inflight_path, "w") as f:
                json.dump({"i": i, "ran": out["ran"], "failed": out["failed"], "case": case}, f)
        try:
            runner = ops.Runner(target, case["op"], gates)
            for call in case["calls"]:
                cpu = ops.build_cpu(call)
                runner.call(call, ops.device_inputs(call, cpu, device))
            _synchronize(device)
            out["ran"] += 1
        except Exception as e:  # a warm-up only: the target's process judges the same call
            out["failed"] += 1
            if len(out["errors"]) < 5:
                out["errors"].append("%s: %s" % (case["op"], ops.describe_exception(e)))
        if inflight_path:
            open(inflight_path, "w").close()
    out["compilations"] = ops.compile_count()
    out["seconds"] = time.perf_counter() - t0
    return out


def main(argv):
    if len(argv) not in (5, 6):
        sys.stderr.write("usage: python3 -m flagprop.engine.precompile JOB K N RESULT [SKIP]\n")
        return 2
    _die_with_parent()
    with open(argv[1]) as f:
        job = json.load(f)
    result_path = argv[4]
    out = run(job, int(argv[2]), int(argv[3]), result_path + ".inflight", int(argv[5]) if len(argv) == 6 else 0)
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
