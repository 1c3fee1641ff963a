"""Inputs, op calls and the CPU reference for P5 / P6: raw observations.

The C++ suites and the standalone reproducers share this module, so that a
reproducer rebuilds exactly the tensors the suite saw, calls the op exactly as
the suite did and computes the same reference. ``flagprop.verdicts`` judges
what ``observe_case`` records.

A *layout* (generators/layouts.h) is a dict: ``dtype``, ``shape``,
``strides``, ``offset`` (storage offset, elements), ``storage`` (storage size,
elements), ``seed``, ``values`` (a value kind, see ``make_storage``), ``high``
(for ``index`` values) and ``specials`` ([[storage index, "nan" | "inf" |
"-inf" | "-0" | "subnormal"], ...]). A *call* is ``{"tensors": [layout...],
"args": [...], "kwargs": {...}}`` where ``{"tensor": i}`` stands for the i-th
tensor.

A target's ``ops`` section says where the op under test comes from:

* ``{"kind": "aten"}``: ``torch.ops.aten.<op>`` on the target's device, routed
  however the device routes it (Torch-FL on ``flagos``); with
  ``"enable": "flag_gems"`` FlagGems' implementations of the catalog ops are
  registered for the device first (``flag_gems.only_enable``).
* ``{"kind": "module", "path": file, "globals": {...}}``: a Python file (one of
  flagprop's fixtures) whose ``OPS`` dict maps op names to callables, loaded
  as module ``flagprop_target.ops``.
"""

import importlib
import sys
import time
import types

import torch

from . import verdicts

_CODE = {}
_STATE = {"libs": [], "compiles": [], "hooked": False}


def dtype_of(name):
    """The torch dtype called ``name`` (``float32``, ``int64``, ``bool``...)."""
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise ValueError("unknown dtype %r" % name)
    return d


def dtype_name(d):
    """``torch.float32`` -> ``float32``."""
    return str(d).replace("torch.", "")


def _special(kind, dtype):
    if kind == "subnormal":
        return torch.finfo(dtype).tiny / 4  # representable in float32, float16 and bfloat16
    return {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "-0": -0.0}[kind]


def _float_values(kind, n, g):
    """float64 values of a float storage of value kind ``kind``."""
    if kind == "grid":
        return torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64).double() * 0.5
    if kind == "positive":
        return torch.randn(n, generator=g, dtype=torch.float64).abs() + 0.0625
    if kind == "nonzero":
        x = torch.randn(n, generator=g, dtype=torch.float64)
        return torch.where(x < 0, x - 0.0625, x + 0.0625)
    if kind == "unique":
        return torch.randperm(n, generator=g).double() * 0.5 - n / 4
    return torch.randn(n, generator=g, dtype=torch.float64)


def _int_values(kind, n, g, high):
    """int64 values of an integer storage of value kind ``kind``."""
    if kind == "index":
        return torch.randint(0, max(int(high), 1), (n,), generator=g, dtype=torch.int64)
    if kind == "unique":
        return torch.randperm(n, generator=g) - n // 2
    if kind == "positive":
        return torch.randint(1, 9, (n,), generator=g, dtype=torch.int64)
    if kind == "nonzero":
        x = torch.randint(1, 9, (n,), generator=g, dtype=torch.int64)
        return torch.where(torch.randint(0, 2, (n,), generator=g, dtype=torch.int64) == 0, x, -x)
    return torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64)


def make_storage(layout):
    """The 1-D CPU storage tensor of ``layout`` (``storage`` elements).

    Values depend only on ``seed``, ``values``, ``high``, ``dtype`` and
    ``specials``, drawn from a ``torch.Generator`` seeded with ``seed`` in
    float64 / int64 and then cast. Value kinds: ``normal`` (N(0, 1); integers
    uniform in [-8, 8]), ``grid`` (multiples of 0.5 in [-4, 4]),
    ``positive`` (|N(0, 1)| + 1/16; integers 1..8), ``nonzero`` (|x| >= 1/16;
    integers +-(1..8)), ``unique`` (a permutation of a grid: distinct where
    the dtype represents them), ``index`` (integers in [0, ``high``)),
    ``sorted`` (normal values, sorted along the view's last dim by
    ``build_cpu``). Bools are fair coin flips."""
    n = int(layout["storage"])
    dtype = dtype_of(layout["dtype"])
    g = torch.Generator().manual_seed(int(layout["seed"]))
    kind = layout.get("values", "normal")
    if dtype == torch.bool:
        base = torch.randint(0, 2, (n,), generator=g, dtype=torch.int64).bool()
    elif dtype.is_floating_point:
        base = _float_values(kind, n, g).to(dtype)
    else:
        base = _int_values(kind, n, g, layout.get("high", 0)).to(dtype)
    for idx, special in layout.get("specials", []):
        base[int(idx)] = _special(special, dtype)
    return base


def view_of(base, layout):
    """``base`` viewed as ``layout`` says (shape, strides, storage offset)."""
    return base.as_strided(layout["shape"], layout["strides"], layout["offset"])


def build_cpu(call):
    """The CPU tensors of ``call``, each in a storage of its own."""
    out = []
    for layout in call["tensors"]:
        t = view_of(make_storage(layout), layout)
        if layout.get("values") == "sorted" and t.dim() > 0 and t.numel() > 0:
            t.copy_(t.sort(dim=-1).values)
        out.append(t)
    return out


def device_inputs(call, cpu, device):
    """Fresh device tensors equal to the CPU tensors ``cpu`` of ``call`` (as
    ``build_cpu`` made them), each in a storage of its own with the same
    shape, strides and storage offset."""
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
    """Executes the file at ``path`` as module ``flagprop_target.ops`` with
    ``module_globals`` set before its body runs (the case's sandbox removes
    it again: ``flagprop_target`` is a watched root)."""
    code = _CODE.get(path)
    if code is None:
        with open(path, "rb") as f:
            code = _CODE[path] = compile(f.read(), path, "exec", dont_inherit=True)
    pkg = sys.modules.get("flagprop_target")
    if pkg is None:
        pkg = sys.modules["flagprop_target"] = types.ModuleType("flagprop_target")
        pkg.__path__ = []
    mod = types.ModuleType("flagprop_target.ops")
    mod.__file__ = path
    mod.__dict__.update(module_globals or {})
    sys.modules[mod.__name__] = mod
    pkg.ops = mod
    exec(code, mod.__dict__)
    return mod


def load_module(target):
    """The OPS dict of a ``module`` target's op file (raises LookupError when
    the file defines none)."""
    ops = target["ops"]
    table = getattr(_load_module(ops["path"], ops.get("globals")), "OPS", None)
    if not isinstance(table, dict):
        raise LookupError("%s defines no OPS dict" % ops["path"])
    return table


def op_callable(target, name):
    """The callable under test for catalog op ``name`` on ``target``."""
    if target["ops"]["kind"] == "module":
        table = load_module(target)
        if name not in table:
            raise LookupError("%s defines no OPS[%r]" % (target["ops"]["path"], name))
        return table[name]
    return aten_op(name)


def call_op(fn, call, tensors):
    """Calls ``fn`` on ``call``'s arguments with ``tensors`` substituted;
    returns the outputs as a tuple."""
    result = fn(*resolve(call["args"], tensors), **resolve(call.get("kwargs") or {}, tensors))
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def reference(op, call, cpu, upcast):
    """CPU ATen's answer for one call: per output ``{"dtype", "shape",
    "values", "source"}``. Metadata comes from ATen's meta kernels on the
    inputs' own dtypes (``source`` "meta"; CPU where a meta kernel is
    missing); values from the CPU kernel of the same overload on the CPU
    inputs, floating ones upcast to float64 when ``upcast``, rounded to the
    output dtype. Raises where CPU ATen rejects the arguments."""
    fn = aten_op(op)
    meta = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in cpu]
    try:
        shapes_from, source = call_op(fn, call, meta), "meta"
    except Exception:
        shapes_from, source = call_op(fn, call, cpu), "cpu"
    up = [t.double() if upcast and t.is_floating_point() else t for t in cpu]
    values = call_op(fn, call, up)
    return [{"dtype": dtype_name(m.dtype), "shape": list(m.shape), "values": v.to(m.dtype), "source": source}
            for m, v in zip(shapes_from, values)]


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


def _native_pointers(outs):
    """What the native runtime (flagprop's witness, inside flagprop only)
    says of each device output's memory: {runtime, memory_type, device} or
    None; None for the whole list where there is no witness."""
    native = sys.modules.get("flagprop_native")
    if native is None or not outs or all(o.device.type == "cpu" for o in outs):
        return None
    return [native.pointer(o.data_ptr()) if o.numel() else None for o in outs]


def _snap_input(t):
    st = verdicts.storage_of(t)
    return {"tensor": t, "storage": None if st is None else st.to("cpu", copy=True), "shape": list(t.shape),
            "strides": list(t.stride()), "offset": t.storage_offset(), "version": t._version}


def _run_pass(runner, case, cpu_inputs, device, name):
    """Calls the op on fresh device copies of every call's inputs, recording
    the inputs before, the outputs and CPU copies of them right after."""
    calls, device_s = [], 0.0
    for k, call in enumerate(case["calls"]):
        dev = device_inputs(call, cpu_inputs[k], device)
        rec = {"inputs": [_snap_input(t) for t in dev], "error": None, "outputs": (), "after": []}
        t0 = time.perf_counter()
        try:
            outs = runner.call(call, dev)
            bad = [type(o).__name__ for o in outs if not isinstance(o, torch.Tensor)]
            if bad:
                raise TypeError("the op returned something that is not a tensor (%s)" % ", ".join(bad))
            rec["outputs"] = outs
            rec["after"] = [o.detach().to("cpu", copy=True) for o in outs]
            rec["native"] = _native_pointers(outs)
        except Exception as e:
            rec["error"] = describe_exception(e)
        device_s += time.perf_counter() - t0
        calls.append(rec)
    return {"name": name, "calls": calls, "device_s": device_s}


def observe_case(target, case, gates, upcast):
    """Runs one P5 / P6 case: the CPU reference of every call, then the
    unpatched pass, then the installer (once, if the target has one), then the
    patched pass when the installer is active. Returns the observation
    ``verdicts.op_findings`` judges (it holds tensors), or ``{"discard":
    reason}`` when CPU ATen rejects the arguments. ``time_us`` gives the
    reference and device (the op's calls and the copies of their outputs)
    times in µs and ``compilations`` the Triton compilations."""
    compiles0 = compile_count()
    runner = Runner(target, case["op"], gates)
    device = target["device"]
    t0 = time.perf_counter()
    cpu_inputs = [build_cpu(call) for call in case["calls"]]
    expected = []
    for k, call in enumerate(case["calls"]):
        try:
            expected.append(reference(case["op"], call, cpu_inputs[k], upcast))
        except Exception as e:
            return {"discard": "CPU ATen rejects call %d: %s" % (k, describe_exception(e))}
    reference_s = time.perf_counter() - t0
    passes = [_run_pass(runner, case, cpu_inputs, device, "unpatched")]
    inst = runner.install()
    obs = {"cpu_inputs": cpu_inputs, "expected": expected, "passes": passes}
    if not inst["present"]:
        obs["fast_path"] = "no installer"
    elif not inst["active"]:
        obs["fast_path"], obs["install"] = "inactive", inst["call"]
    else:
        obs["fast_path"] = "active"
        passes.append(_run_pass(runner, case, cpu_inputs, device, "patched"))
    obs["compilations"] = compile_count() - compiles0
    obs["time_us"] = {"reference": 1e6 * reference_s, "device": 1e6 * sum(p["device_s"] for p in passes)}
    return obs


def judge_case(target, case, gates, judging):
    """``observe_case`` then ``verdicts.op_findings``: the plain-data findings
    of one case (with ``discard``, ``compilations`` and ``time_us`` from the
    observation). ``judging`` is the catalog entry's judging spec."""
    obs = observe_case(target, case, gates, judging.get("upcast", True))
    if "discard" in obs:
        return obs
    out = verdicts.op_findings(obs, case, judging)
    out["compilations"] = obs["compilations"]
    out["time_us"] = obs["time_us"]
    return out


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


def describe_exception(e):
    """One line: type and first line of the message."""
    msg = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, msg[0] if msg else "")
