"""Inputs and op calls for the numerics and aliasing properties (P5, P6).

The C++ suites (ops/op_run.cpp) and the standalone reproducers share this
module, so that a reproducer rebuilds exactly the tensors the suite saw and
calls the op exactly as the suite did.

A *layout* (generators/layouts.h) is a dict: ``dtype``, ``shape``,
``strides``, ``offset`` (storage offset, elements), ``storage`` (storage size,
elements), ``seed``, ``values`` (``normal`` | ``grid``) and ``specials``
([[storage index, "nan" | "inf" | "-inf" | "-0" | "subnormal"], ...]). A
*call* is ``{"tensors": [layout...], "args": [...], "kwargs": {...}}`` where
``{"tensor": i}`` stands for the i-th tensor.

A target's ``ops`` section says where the op under test comes from:

* ``{"kind": "aten"}``: ``torch.ops.aten.<op>`` on the target's device, routed
  however the device routes it (Torch-FL on ``flagos``); with
  ``"enable": "flag_gems"`` FlagGems' implementations of the catalog ops are
  registered for the device first (``flag_gems.only_enable``).
* ``{"kind": "module", "path": file, "globals": {...}}``: a Python file (one of
  flagprop's fixtures) whose ``OPS`` dict maps op names to callables.
"""

import importlib
import sys
import types

import torch

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}

_CODE = {}
_STATE = {"libs": [], "compiles": [], "hooked": False}


def _special(kind, dtype):
    if kind == "nan":
        return float("nan")
    if kind == "inf":
        return float("inf")
    if kind == "-inf":
        return float("-inf")
    if kind == "-0":
        return -0.0
    if kind == "subnormal":
        return torch.finfo(dtype).tiny / 4  # representable in float32, float16 and bfloat16
    raise ValueError("unknown special value %r" % kind)


def make_storage(layout):
    """The 1-D CPU storage tensor of ``layout`` (``storage`` elements).

    Values depend only on ``seed``, ``values``, ``dtype`` and ``specials``:
    bools are fair coin flips, integers uniform in [-8, 8], floats N(0, 1)
    (``normal``) or multiples of 0.5 in [-4, 4] (``grid``), all drawn from a
    ``torch.Generator`` seeded with ``seed`` in float64 / int64 and then cast.
    """
    n = int(layout["storage"])
    dtype = DTYPES[layout["dtype"]]
    g = torch.Generator().manual_seed(int(layout["seed"]))
    if dtype == torch.bool:
        base = torch.randint(0, 2, (n,), generator=g, dtype=torch.int64).bool()
    elif not dtype.is_floating_point:
        base = torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64).to(dtype)
    elif layout.get("values") == "grid":
        base = (torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64).to(torch.float64) * 0.5).to(dtype)
    else:
        base = torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    for idx, kind in layout.get("specials", []):
        base[int(idx)] = _special(kind, dtype)
    return base


def view_of(base, layout):
    """``base`` viewed as ``layout`` says (shape, strides, storage offset)."""
    return base.as_strided(layout["shape"], layout["strides"], layout["offset"])


def build_call(call, device):
    """(CPU tensors, device tensors) for ``call``: equal values, separate
    storages (also on the CPU), each with the layout's shape, strides and
    storage offset."""
    cpu = [view_of(make_storage(layout), layout) for layout in call["tensors"]]
    return cpu, device_inputs(call, cpu, device)


def device_inputs(call, cpu, device):
    """Fresh device tensors equal to the CPU tensors ``cpu`` of ``call`` (as
    ``build_call`` made them), each in a storage of its own."""
    dev = []
    for layout, t in zip(call["tensors"], cpu):
        base = t.as_strided((int(layout["storage"]),), (1,), 0)
        dev.append(view_of(base.clone() if str(device) == "cpu" else base.to(device), layout))
    return dev


def resolve(value, tensors):
    """``value`` with every ``{"tensor": i}`` replaced by ``tensors[i]``."""
    if isinstance(value, dict) and set(value) == {"tensor"}:
        return tensors[value["tensor"]]
    if isinstance(value, list):
        return [resolve(v, tensors) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, tensors) for k, v in value.items()}
    return value


def aten_op(name):
    """``torch.ops.aten.<name>`` for ``name`` like ``add.Tensor`` or ``tanh``."""
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _load_module(path, module_globals):
    """Executes the file at ``path`` as module ``flagprop_target_ops`` with
    ``module_globals`` set before its body runs."""
    code = _CODE.get(path)
    if code is None:
        with open(path, "rb") as f:
            code = _CODE[path] = compile(f.read(), path, "exec", dont_inherit=True)
    mod = types.ModuleType("flagprop_target_ops")
    mod.__file__ = path
    mod.__dict__.update(module_globals or {})
    sys.modules[mod.__name__] = mod
    exec(code, mod.__dict__)
    return mod


def op_callable(target, name):
    """The callable under test for catalog op ``name`` on ``target``."""
    ops = target.get("ops") or {"kind": "aten"}
    if ops["kind"] == "module":
        mod = _load_module(ops["path"], ops.get("globals"))
        table = getattr(mod, "OPS", None)
        if not isinstance(table, dict) or name not in table:
            raise LookupError("%s defines no OPS[%r]" % (ops["path"], name))
        return table[name]
    return aten_op(name)


def as_outputs(result):
    """An op's result as a tuple of tensors."""
    if isinstance(result, (tuple, list)):
        return tuple(result)
    return (result,)


def call_op(fn, call, tensors):
    """Calls ``fn`` on ``call``'s arguments with ``tensors`` substituted;
    returns the outputs as a tuple."""
    args = resolve(call["args"], tensors)
    kwargs = resolve(call.get("kwargs") or {}, tensors)
    return as_outputs(fn(*args, **kwargs))


class Runner:
    """One P5 / P6 case on one target: prepares FlagGems (the mocks where the
    target uses them), finds the op under test and, on request, runs the
    target's installer once. The caller's sandbox undoes all of it."""

    def __init__(self, target, op, gates):
        from . import observe, session

        self.target = target
        self.gates = gates
        self._session = session
        session.prepare_flag_gems(target, {})  # the mocks, or the real FlagGems (+ supplied helper)
        self.before = None if target["installer"]["mode"] == "none" else observe.snapshot()
        self.fn = op_callable(target, op)

    def call(self, call, tensors):
        """Outputs (tuple of tensors) of the op on ``call`` with ``tensors``."""
        return call_op(self.fn, call, tensors)

    def install(self):
        """Runs the installer once. Returns {present, active, call}."""
        if self.before is None:
            return {"present": False, "active": False}
        call, active = self._session.install_observed(self.target, self.gates, self.before)
        return {"present": True, "active": bool(active), "call": call}


def setup(target, op_names):
    """Once per process, before any case: registers FlagGems' kernels for the
    catalog ops where the target asks for it, and counts Triton compilations
    (``triton.knobs.runtime.jit_post_compile_hook``) where Triton has that
    hook. Returns {"enabled": [...], "compile_counter": bool}."""
    out = {"enabled": [], "compile_counter": False}
    ops = target.get("ops") or {"kind": "aten"}
    if ops.get("enable") == "flag_gems":
        flag_gems = importlib.import_module("flag_gems")
        config = getattr(flag_gems, "_FULL_CONFIG", ())
        wanted = set(op_names)
        funcs = sorted({item[1].__name__ for item in config if len(item) >= 2 and item[0] in wanted})
        lib = torch.library.Library("aten", "IMPL")
        flag_gems.only_enable(lib=lib, include=funcs)
        _STATE["libs"].append(lib)
        out["enabled"] = sorted(item[0] for item in config if len(item) >= 2 and item[0] in wanted)
    triton = sys.modules.get("triton")
    knobs = getattr(triton, "knobs", None) if triton is not None else None
    runtime = getattr(knobs, "runtime", None)
    if runtime is not None and hasattr(runtime, "jit_post_compile_hook") and not _STATE["hooked"]:
        previous = runtime.jit_post_compile_hook

        def counting_hook(*args, **kwargs):
            _STATE["compiles"].append(str(kwargs.get("repr", "?")).split("[")[0])
            return previous(*args, **kwargs) if previous else None

        runtime.jit_post_compile_hook = counting_hook
        _STATE["hooked"] = True
    out["compile_counter"] = _STATE["hooked"]
    return out


def compile_count():
    """Triton compilations seen since ``setup`` (0 where not counted)."""
    return len(_STATE["compiles"])


def synchronize(device):
    """Waits for the device's queued work (no-op on the CPU)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type != "cpu":
        mod = getattr(torch, dev.type, None)
        if mod is not None and hasattr(mod, "synchronize"):
            mod.synchronize()


def describe_exception(e):
    """One line: type and first line of the message."""
    msg = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, msg[0] if msg else "")

