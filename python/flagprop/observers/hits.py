"""P8: which ``LibEntry`` launches an op makes, and whether they went
through the fast ``run`` and ``key`` or the stock ones: raw counts, no
verdicts (``flagprop.judging.verdicts.fast_path_hits`` judges them).

Counting works the same on flagprop's mocks and on a real FlagGems: before
the installer runs, the stock ``LibEntry.run`` / ``.key`` are replaced by
counting shims, so whatever the installer wraps (and falls back to) is
counted as *stock*; after it ran, the methods in place (fast or stock) are
wrapped by a second pair of shims that count *every* call. Launches are
grouped by kernel (the name of the function the ``LibEntry`` wraps), so the
op's main kernel is told apart from helper and copy kernels. The caller's
sandbox undoes all of it.
"""

import sys

from ..engine import observe, ops


def kernel_name(entry):
    """The name of the kernel a LibEntry (or a wrapper of one) launches."""
    obj, seen = entry, set()
    while obj is not None and id(obj) not in seen:
        seen.add(id(obj))
        name = getattr(obj, "__name__", None)
        if isinstance(name, str) and name not in ("LibEntry", "JITFunction", "Autotuner", "Heuristics"):
            return name
        obj = getattr(obj, "fn", None) or getattr(obj, "jit_function", None)
    return type(entry).__name__


def _counting(counts, fn, field):
    def shim(self, *args, **kwargs):
        c = counts.setdefault(kernel_name(self), {"run": 0, "run_stock": 0, "key": 0, "key_stock": 0})
        c[field] += 1
        return fn(self, *args, **kwargs)

    shim.__qualname__ = "flagprop_count_" + field
    return shim


def observe_hits(target, case, gates):
    """Calls the op of ``case`` on its calls once to warm up (compilations,
    cache fills), then once more while counting. Returns {"fast_path":
    "active" | "inactive" | "no installer", "libentry": whether FlagGems'
    libentry is there, "kernels": [{name, run, run_stock, key, key_stock}]
    sorted by kernel name,
    "error": the op's exception (one line) or None, "install": the installer
    call when inactive}."""
    runner = ops.Runner(target, case["op"], gates)
    le = sys.modules.get("flag_gems.utils.libentry")
    cls = getattr(le, "LibEntry", None)
    out = {"libentry": cls is not None, "kernels": [], "error": None}
    counts = {}
    if cls is not None:
        cls.run = _counting(counts, cls.__dict__["run"], "run_stock")
        cls.key = _counting(counts, cls.__dict__["key"], "key_stock")
        if runner.before is not None:
            runner.before = observe.snapshot()  # the shims are what the installer finds and replaces
    inst = runner.install()
    out["fast_path"] = "no installer" if not inst["present"] else "active" if inst["active"] else "inactive"
    if inst["present"] and not inst["active"]:
        out["install"] = inst["call"]
    if cls is not None:
        cls.run = _counting(counts, cls.__dict__["run"], "run")
        cls.key = _counting(counts, cls.__dict__["key"], "key")
    device = target["device"]
    cpu = [ops.build_cpu(call) for call in case["calls"]]
    try:
        for _warm_up_then_count in range(2):
            counts.clear()
            for k, call in enumerate(case["calls"]):
                runner.call(call, ops.device_inputs(call, cpu[k], device))
    except Exception as e:
        out["error"] = ops.describe_exception(e)
    out["kernels"] = [dict(c, name=name) for name, c in sorted(counts.items())]
    return out
