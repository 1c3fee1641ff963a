"""Inputs, op calls and the CPU reference for P5 / P6: raw observations.

The C++ suites and the standalone reproducers share this module, so that a
reproducer rebuilds exactly the tensors the suite saw, calls the op exactly as
the suite did and computes the same reference. ``flagprop.judging.verdicts`` judges
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

What ``flagprop.tools.slim`` (the cutter of a reproducer's code) asks of this
module: a function that only some kinds of case need imports what it needs
inside itself (``from . import observe, session``), not at the top, so
that a reproducer of another kind carries none of that module; top-level
imports are taken into every reproducer.
"""

import contextlib
import importlib
import os
import sys
import time
import types

import torch

from . import facts

_CODE = {}
_SIBLINGS = {}
# switch_s: in _FlagGemsOff, s; stock_in_op_place: observe_case runs the stock path once more in the op's place
# (set by the C++ harness around the fresh judging of a case the op lost the device context on)
_STATE = {"libs": [], "compiles": [], "hooked": False, "switch_s": 0.0, "stock_in_op_place": False}


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
    """Values of a float storage of value kind ``kind``: float32 normals
    (CPU ATen draws them about 4x faster than float64 ones, and every dtype
    flagprop generates is at most as precise), float64 grids."""
    if kind == "grid":
        return torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64).double() * 0.5
    if kind == "positive":
        return torch.randn(n, generator=g, dtype=torch.float32).abs() + 0.0625
    if kind == "nonzero":
        x = torch.randn(n, generator=g, dtype=torch.float32)
        return torch.where(x < 0, x - 0.0625, x + 0.0625)
    if kind == "unique":
        return torch.randperm(n, generator=g).double() * 0.5 - n / 4
    if kind == "wide":  # beyond float32's range (float64 runs only: float32 holds them as inf)
        return torch.randn(n, generator=g, dtype=torch.float64) * 1e39
    return torch.randn(n, generator=g, dtype=torch.float32)


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
    if kind == "wide":  # above 2^24, where float32 no longer holds every integer (int32 holds them all)
        x = torch.randint((1 << 24) + 1, (1 << 24) + (1 << 20), (n,), generator=g, dtype=torch.int64)
        return torch.where(torch.randint(0, 2, (n,), generator=g, dtype=torch.int64) == 0, x, -x)
    return torch.randint(-8, 9, (n,), generator=g, dtype=torch.int64)


def make_storage(layout):
    """The 1-D CPU storage tensor of ``layout`` (``storage`` elements).

    Values depend only on ``seed``, ``values``, ``high``, ``dtype`` and
    ``specials``, drawn from a ``torch.Generator`` seeded with ``seed`` in
    float32 (normals), float64 (grids) or int64 and then cast. Value kinds: ``normal`` (N(0, 1); integers
    uniform in [-8, 8]), ``grid`` (multiples of 0.5 in [-4, 4]),
    ``positive`` (|N(0, 1)| + 1/16; integers 1..8), ``nonzero`` (|x| >= 1/16;
    integers +-(1..8)), ``wide`` (float64 normals times 1e39, beyond
    float32's range; integers +-(2^24, 2^24 + 2^20)), ``unique`` (a
    permutation of a grid: distinct where
    the dtype represents them), ``index`` (integers in [0, ``high``)),
    ``sorted`` (normal values, sorted along the view's last dim by
    ``build_cpu``), ``given`` (the layout's ``data``, copied into the view by
    ``build_cpu``; the storage around it normal). Bools are fair coin flips."""
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


def _given(layout, dtype):
    """The ``data`` of a layout of value kind ``given`` (a valid sample's own
    values, flat in row-major order) as a contiguous tensor of its shape:
    bools as bools, integers through int64, floats through float64."""
    data = layout["data"]
    if dtype == torch.bool:
        src = torch.tensor(data, dtype=torch.bool)
    elif dtype.is_floating_point:
        src = torch.tensor(data, dtype=torch.float64)
    else:
        src = torch.tensor(data, dtype=torch.int64)
    return src.reshape(layout["shape"]).to(dtype)


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
        if layout.get("values") == "given":
            t.copy_(_given(layout, t.dtype))
        out.append(t)
    return out


def cpu_storages(call, cpu):
    """The whole CPU storage (1-D, ``storage`` elements) of each CPU tensor
    ``cpu`` of ``call``, as ``build_cpu`` made them."""
    return [t.as_strided((int(layout["storage"]),), (1,), 0) for layout, t in zip(call["tensors"], cpu)]


def device_inputs(call, cpu, device, storages=None):
    """Fresh device tensors equal to the CPU tensors ``cpu`` of ``call`` (as
    ``build_cpu`` made them), each in a storage of its own with the same
    shape, strides and storage offset. ``storages``: their
    ``cpu_storages``, where the caller has them already."""
    storages = cpu_storages(call, cpu) if storages is None else storages
    return [view_of(base.clone() if str(device) == "cpu" else base.to(device), layout)
            for layout, base in zip(call["tensors"], storages)]


def resolve(value, tensors, outs=None, device=None):
    """``value`` with its placeholders replaced: ``{"tensor": i}`` by
    ``tensors[i]``, ``{"$out": j}`` by ``outs[j]`` (an out= tensor),
    ``{"$dtype": name}`` by that torch dtype, ``{"$memory_format": name}``
    and ``{"$layout": name}`` by that torch memory format or layout
    (``contiguous_format``, ``strided``) and ``{"$device": true}`` by
    ``device`` (a factory's device). Keyword arguments are resolved one by
    one (``resolve_kwargs``), so an argument's name is never taken for a
    placeholder."""
    if isinstance(value, dict) and len(value) == 1:
        (key, v), = value.items()
        if key == "tensor":
            return tensors[v]
        if key == "$out":
            return outs[v]
        if key == "$dtype":
            return dtype_of(v)
        if key == "$device":
            return device
        if key in ("$memory_format", "$layout"):
            return _torch_constant(key, v)
    if isinstance(value, list):
        return [resolve(v, tensors, outs, device) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, tensors, outs, device) for k, v in value.items()}
    return value


def resolve_kwargs(kwargs, tensors, outs=None, device=None):
    """``resolve`` of each keyword argument's value."""
    return {k: resolve(v, tensors, outs, device) for k, v in kwargs.items()}


def _torch_constant(key, name):
    """torch.<name> where it is a memory format ($memory_format) or a
    layout ($layout); ValueError otherwise."""
    value = getattr(torch, str(name), None)
    kind = torch.memory_format if key == "$memory_format" else torch.layout
    if not isinstance(value, kind):
        raise ValueError("%s: torch has no %s called %r" % (key, kind.__name__, name))
    return value


def _placeholder_values(value, key):
    """The values of the ``{key: ...}`` placeholders ``value`` holds, in
    order (nested dicts and lists walked)."""
    if isinstance(value, dict):
        if len(value) == 1 and key in value:
            return [value[key]]
        return [i for v in value.values() for i in _placeholder_values(v, key)]
    if isinstance(value, list):
        return [i for v in value for i in _placeholder_values(v, key)]
    return []


def _placeholders(value, key):
    """How many ``{key: ...}`` placeholders ``value`` holds."""
    return len(_placeholder_values(value, key))


def _is_out(arg):
    info = getattr(arg, "alias_info", None)
    return bool(arg.kwarg_only and info is not None and info.is_write)


def functional_sibling(fn):
    """The overload of ``fn``'s op that takes the same arguments but its
    out= ones and has none (``add.Tensor`` for ``add.out``), or None (found
    once per overload)."""
    schema = getattr(fn, "_schema", None)
    if schema is None:
        return None
    key = str(schema)
    if key not in _SIBLINGS:
        _SIBLINGS[key] = _find_sibling(schema)
    return _SIBLINGS[key]


def _find_sibling(schema):
    packet = getattr(torch.ops.aten, schema.name.split("::")[-1])
    want = [(a.name, str(a.type)) for a in schema.arguments if not _is_out(a)]
    for name in packet.overloads():
        cand = getattr(packet, name)
        args = cand._schema.arguments
        if not any(_is_out(a) for a in args) and [(a.name, str(a.type)) for a in args] == want:
            return cand
    return None


def out_tensors(fn, call, tensors, device):
    """Empty out= tensors for ``call`` (ATen resizes them): of the dtypes
    the functional sibling returns on these inputs (on the meta device), else
    of the first tensor's dtype."""
    n = sum(_placeholders(v, "$out") for v in (call.get("kwargs") or {}).values()) + _placeholders(call["args"], "$out")
    if n == 0:
        return None
    dtypes = None
    sibling = functional_sibling(fn)
    # The meta kernel's answer is a function of the call's dtypes, shapes,
    # strides and arguments alone (``_meta_outputs``): taken once. The CPU
    # kernel's is not (it may raise on some values), so it is asked each time.
    key = None if sibling is None else ("out", _meta_key(sibling, call, tensors))
    if key in _META_CACHE:
        dtypes = _META_CACHE[key]
    elif sibling is not None:
        kwargs = {k: v for k, v in (call.get("kwargs") or {}).items() if _placeholders(v, "$out") == 0}
        # The meta kernel, else (LibTorch 1.13 has none for median.dim) the
        # CPU kernel on copies of the inputs.
        for where in ("meta", "cpu"):
            if where == "meta":
                ins = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in tensors]
            else:
                ins = [same_layout(t.cpu()) for t in tensors]
            try:
                res = sibling(*resolve(call["args"], ins, None, where), **resolve_kwargs(kwargs, ins, None, where))
                res = res if isinstance(res, (tuple, list)) else (res,)
                dtypes = [r.dtype for r in res if isinstance(r, torch.Tensor)]
                if where == "meta":
                    _keep_meta(key, dtypes)
                break
            except Exception:
                dtypes = None
    if not dtypes or len(dtypes) < n:
        dtypes = [tensors[0].dtype if tensors else torch.float32] * n
    return [torch.empty(0, dtype=d, device=device) for d in dtypes[:n]]


def aten_op(name):
    """``torch.ops.aten.<name>`` for ``name`` like ``add.Tensor`` or ``tanh``."""
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _load_module(path, module_globals, name="ops"):
    """Executes the file at ``path`` as module ``flagprop_target.<name>``
    (``ops``; ``control`` for a control's op file) with ``module_globals``
    set before its body runs (the case's sandbox removes it again:
    ``flagprop_target`` is a watched root)."""
    code = _CODE.get(path)
    if code is None:
        with open(path, "rb") as f:
            code = _CODE[path] = compile(f.read(), path, "exec", dont_inherit=True)
    pkg = sys.modules.get("flagprop_target")
    if pkg is None:
        pkg = sys.modules["flagprop_target"] = types.ModuleType("flagprop_target")
        pkg.__path__ = []
    mod = types.ModuleType("flagprop_target." + name)
    mod.__file__ = path
    mod.__dict__.update(module_globals or {})
    sys.modules[mod.__name__] = mod
    setattr(pkg, name, mod)
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


def control_of(target):
    """The target's control (docs/control.md): "stock", a {path, globals}
    op file, or None."""
    control = (target.get("ops") or {}).get("control", "none")
    return None if control in (None, "none") else control


class _RecordingLibrary(torch.library.Library):
    """A ``torch.library.Library`` that keeps the arguments of every
    ``impl`` call that succeeded on it (``recorded``: [(args, kwargs)]), so
    that what FlagGems' registrar registered into it can be registered
    again, the same calls in the same order, without running the registrar
    (its device detection, its walk over FlagGems' whole op table, its
    logging set-up): ``_FlagGemsOff`` does so around every control pass."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.recorded = []

    def impl(self, *args, **kwargs):
        out = super().impl(*args, **kwargs)
        self.recorded.append((args, kwargs))
        return out


class _FlagGemsOff:
    """A scope in which the FlagGems kernels ``setup`` registered are not
    (the device's stock kernels answer), registered again on leaving it:
    the very ``impl`` calls FlagGems' registrar made (``_RecordingLibrary``),
    replayed into a fresh library."""

    def __enter__(self):
        t0 = time.perf_counter()
        try:
            for lib in _STATE["libs"]:
                lib._destroy()
            _STATE["libs"] = []
        finally:
            _STATE["switch_s"] += time.perf_counter() - t0
        return self

    def __exit__(self, *exc):
        t0 = time.perf_counter()
        try:
            _flag_gems, _funcs, recorded = _STATE["gems"]
            lib = torch.library.Library("aten", "IMPL")
            for args, kwargs in recorded:
                lib.impl(*args, **kwargs)
            _STATE["libs"].append(lib)
        finally:
            _STATE["switch_s"] += time.perf_counter() - t0
        return False


def control_callable(target, name):
    """The control's callable for op ``name``: the stock ATen overload to be
    called with FlagGems off ("stock"), or ``OPS[name]`` of the control's op
    file; raises LookupError where the control's file has no such op."""
    control = control_of(target)
    if control == "stock":
        return aten_op(name)
    table = getattr(_load_module(control["path"], control.get("globals"), "control"), "OPS", None)
    if not isinstance(table, dict) or name not in table:
        raise LookupError("the control %s defines no OPS[%r]" % (control["path"], name))
    return table[name]


def op_callable(target, name):
    """The callable under test for catalog op ``name`` on ``target``."""
    if target["ops"]["kind"] == "module":
        table = load_module(target)
        if name not in table:
            raise LookupError("%s defines no OPS[%r]" % (target["ops"]["path"], name))
        return table[name]
    return aten_op(name)


def call_op(fn, call, tensors, device=None):
    """Calls ``fn`` on ``call``'s arguments with ``tensors`` substituted
    (and fresh out= tensors, and ``device`` for a factory: by default the
    first tensor's); returns the outputs as a tuple."""
    if device is None:
        device = tensors[0].device if tensors else torch.device("cpu")
    outs = out_tensors(fn, call, tensors, device)
    result = fn(*resolve(call["args"], tensors, outs, device), **resolve_kwargs(call.get("kwargs") or {}, tensors, outs, device))
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _written(fn, call):
    """Indices of ``call``'s tensors that ``fn``'s schema says it writes
    (``Tensor(a!)``: an in-place op's self, out= arguments)."""
    schema = getattr(fn, "_schema", None)
    out = set()
    if schema is None:
        return out
    args, kwargs = call["args"], call.get("kwargs") or {}
    for j, a in enumerate(schema.arguments):
        info = getattr(a, "alias_info", None)
        if info is None or not info.is_write:
            continue
        value = kwargs.get(a.name) if a.kwarg_only or j >= len(args) else args[j]
        out.update(_placeholder_values(value, "tensor"))
    return out


def _dense_read_only(fn, call, cpu):
    """``cpu`` with each input that the op only reads and whose elements
    overlap (an expanded, stride-0 dim) replaced by a dense copy, or None
    when there is none. The reference's values come from these: an op's
    values do not depend on its inputs' layout, and LibTorch 1.13's CPU
    ``median.dim`` / ``nanmedian.dim`` return wrong values on an expanded
    input (docs/control.md). Not for ops that read an input's storage
    rather than its elements (a ``stride`` argument: ``as_strided``)."""
    schema = getattr(fn, "_schema", None)
    if schema is not None and any(a.name == "stride" for a in schema.arguments):
        return None
    written = _written(fn, call)
    swap = [j for j, t in enumerate(cpu)
            if j not in written and t.numel() > 1 and torch._debug_has_internal_overlap(t) == 1]
    if not swap:
        return None
    return [t.contiguous() if j in swap else t for j, t in enumerate(cpu)]


def same_layout(t, dtype=None):
    """A copy of ``t`` in a storage of its own with the same shape, strides
    and storage offset (in ``dtype`` when given): an op that writes its input
    or rejects an overlapping one sees what the device call sees."""
    st = facts.storage_of(t)
    if st is None:
        return torch.empty_strided(t.shape, t.stride(), dtype=dtype or t.dtype)
    return st.to(dtype or t.dtype, copy=True).as_strided(t.shape, t.stride(), t.storage_offset())


def _aliases(out, inputs):
    """Indices of the ``inputs`` whose storage ``out`` shares."""
    return [j for j, t in enumerate(inputs) if facts.overlap(out, t)]


def _layout_of(t):
    return [list(t.shape), list(t.stride()), t.storage_offset()]


def reference(op, call, cpu, upcast, repeat=False, magnitude=False):
    """CPU ATen's answer for one call: per output ``{"dtype", "shape",
    "values", "same_dtype", "aliases", "shares_outputs", "source"}``, and
    per input ``relaid`` (below).

    With ``magnitude`` True (sums, means, scans), or "if_reducing" (schema-
    derived entries) where an output has fewer elements than the largest
    input (the op accumulates), each floating output also has
    ``magnitude``: the op on the absolute values of the inputs in float64
    (per output element, the sum of |x| of the elements it accumulates; for
    a mean, divided by their count; for a matrix product, |A| |B|), from which
    the rounding-error bound of a float32 accumulation is derived.

    Where an input is float16 or bfloat16, each floating output also has
    ``values_f32``: the call with floating inputs in float32, rounded to the
    output dtype (``verdicts.settled``).

    ``same_dtype`` is the CPU kernel's output on copies of the inputs laid
    out as they are (shape, strides, storage offset) in their own dtypes;
    ``aliases`` the inputs whose storage that output shares (ATen's views and
    in-place results), ``shares_outputs`` the earlier outputs it shares
    storage with (unbind, chunk). ``values`` is the same call with floating
    inputs upcast to float64 when ``upcast``, rounded to the output dtype
    (else ``same_dtype``, and where the float64 call is rejected).
    Dtype and shape are ATen's meta kernel's
    (``source`` "meta"), else the CPU kernel's (``source`` "cpu"); where the
    two disagree, ``cpu_dtype`` / ``cpu_shape`` hold the CPU kernel's. Where
    the CPU kernel raises in the inputs' dtypes but the upcast call and the
    meta kernel work, ``same_dtype_error`` says what it raised.

    Returns ``(outputs, relaid, writes)``: ``relaid[j]`` is ``[shape,
    strides, offset]`` of input j after the call where ATen changes it in
    place (resize_as_, unsqueeze_), else None; ``writes`` the indices of the
    inputs whose values CPU ATen's call changed, annotated in the schema or
    not (``native_batch_norm`` in training updates running_mean and
    running_var, though its schema marks no argument as written).

    Raises where CPU ATen rejects the arguments, and (``repeat``) where a
    second call on fresh copies of the same inputs gives other bits: an op
    that does not check its arguments reads memory it does not own, and such
    a case says nothing about the op under test."""
    fn = aten_op(op)
    shapes_from = _meta_outputs(fn, call, cpu)
    _check_output_size(shapes_from)
    own = [same_layout(t) for t in cpu]
    try:
        same, failed = call_op(fn, call, own, torch.device("cpu")), None
    except Exception as e:
        same, failed = None, e
    if same is None:
        # Only a float64 call can stand in for a CPU kernel that rejects the
        # run's dtype: with no floating input there is none (silu on int32).
        if not upcast or shapes_from is None or not any(t.is_floating_point() for t in cpu):
            raise failed
        aliases, shares, relaid = [[] for _ in shapes_from], [[] for _ in shapes_from], [None] * len(cpu)
        writes = sorted(_written(fn, call))
    else:
        same, aliases, shares, relaid, writes = _same_dtype_effects(fn, call, cpu, own, same, repeat)
        if shapes_from is None or len(shapes_from) != len(same):
            shapes_from = same
    values, values32 = _reference_values(fn, call, cpu, upcast, same, shapes_from)
    mags = _magnitudes(fn, call, cpu, magnitude, shapes_from)
    outputs = []
    for i, m in enumerate(shapes_from):
        out = {"dtype": dtype_name(m.dtype), "shape": list(m.shape), "values": values[i], "aliases": aliases[i],
               "shares_outputs": shares[i], "source": "meta" if m.device.type == "meta" else "cpu"}
        if mags is not None and i < len(mags) and mags[i].is_floating_point():
            out["magnitude"] = mags[i].double()
        if values32 is not None and i < len(values32) and values32[i].is_floating_point():
            out["values_f32"] = values32[i]
        if same is not None:
            out["same_dtype"] = same[i]
            if m.device.type == "meta" and (same[i].dtype != m.dtype or list(same[i].shape) != list(m.shape)):
                out["cpu_dtype"], out["cpu_shape"] = dtype_name(same[i].dtype), list(same[i].shape)
        else:
            out["same_dtype_error"] = describe_exception(failed)
        outputs.append(out)
    return outputs, relaid, writes


#: The most elements one output of a generated case may hold (2^24: 64 MiB
#: in float32, before the reference's float64 copies): a sample whose meta
#: kernel says more (linear of a [65537, 3] input and a weight of the same
#: shape: 65537 x 65537) is no case: CPU ATen would compute it for minutes.
MAX_OUTPUT_ELEMENTS = 1 << 24


def _check_output_size(outputs):
    """Raises ValueError where a meta output of ``outputs`` (None: no meta
    kernel, nothing known) holds more than ``MAX_OUTPUT_ELEMENTS``."""
    for i, m in enumerate(outputs or []):
        if m.numel() > MAX_OUTPUT_ELEMENTS:
            raise ValueError("output %d would hold %d elements, over the %d a case may have (ATen's meta kernel)"
                             % (i, m.numel(), MAX_OUTPUT_ELEMENTS))


#: ``_meta_outputs``' answers by what they depend on (the op, the call's
#: arguments but its tensors' values, each tensor's shape, strides and
#: dtype); emptied when it holds ``_META_CACHE_SIZE``.
_META_CACHE = {}
_META_CACHE_SIZE = 4096


def _keep_meta(key, answer):
    """Keeps ``answer`` under ``key`` in ``_META_CACHE`` (emptied first when
    full); returns it."""
    if len(_META_CACHE) >= _META_CACHE_SIZE:
        _META_CACHE.clear()
    _META_CACHE[key] = answer
    return answer


def _meta_key(fn, call, cpu):
    """What ``fn``'s meta outputs on ``call`` (a case's call: JSON values)
    with the CPU inputs ``cpu`` depend on, as a hashable key: the op, the
    arguments (``repr`` of JSON values is exact and cheaper than a dump),
    torch's default dtype (a factory's) and each input's shape, strides and
    dtype."""
    return (id(fn), str(fn), repr((call["args"], call.get("kwargs"))), torch.get_default_dtype(),
            tuple((tuple(t.shape), t.stride(), t.dtype) for t in cpu))


def _meta_outputs(fn, call, cpu):
    """``fn``'s outputs on meta tensors laid out as the CPU inputs ``cpu``
    (ATen's meta kernel: dtypes and shapes, no values), or None where the
    meta call raises. A meta kernel sees no values, so its answer for the
    same op, arguments, shapes, strides and dtypes is taken once
    (``_META_CACHE``): the cases of a run with a layout palette share most
    of them, and torch 2's meta kernels are Python (docs/benchmarks.md). The
    tensors returned are meta tensors the caller must not change."""
    key = _meta_key(fn, call, cpu)
    if key in _META_CACHE:
        return _META_CACHE[key]
    meta = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in cpu]
    try:
        out = call_op(fn, call, meta)
    except Exception:
        out = None
    return _keep_meta(key, out)


def _same_dtype_effects(fn, call, cpu, own, same, repeat):
    """What the CPU kernel's call ``same`` on ``own`` (copies of the CPU
    inputs ``cpu`` in their own dtypes and layouts) did besides its values.

    Returns ``(same, aliases, shares, relaid, writes)`` as ``reference``
    describes them; an output that shares storage with an input or an
    earlier output is cloned in ``same``, so that later calls cannot change
    it. With ``repeat``, raises ValueError where a second call on fresh
    copies of the inputs gives other bits."""
    if repeat:
        again = call_op(fn, call, [same_layout(t) for t in cpu], torch.device("cpu"))
        if len(again) != len(same) or not all(
                a.shape == b.shape and facts.same_bits(a, b) for a, b in zip(same, again)):
            raise ValueError("two calls on the same inputs disagree "
                             "(unchecked arguments: it reads memory it does not own)")
    aliases = [_aliases(o, own) for o in same]
    shares = [[j for j in range(i) if facts.overlap(o, same[j])] for i, o in enumerate(same)]
    relaid = [None if facts.same_layout_meta(_layout_of(a), _layout_of(b)) else _layout_of(a)
              for a, b in zip(own, cpu)]
    writes = [j for j, (a, b) in enumerate(zip(own, cpu)) if _values_changed(a, b)]
    same = [o.clone() if a or sh else o for o, a, sh in zip(same, aliases, shares)]  # later calls must not change them
    return same, aliases, shares, relaid, writes


def _floating_as(inputs, dtype):
    """Copies of ``inputs`` (``same_layout``), the floating ones in
    ``dtype``."""
    return [same_layout(t, dtype if t.is_floating_point() else None) for t in inputs]


def _rounded_call(fn, call, inputs, shapes_from):
    """``fn``'s outputs on the CPU tensors ``inputs``, each rounded to the
    dtype of its output in ``shapes_from``; raises what the call raises."""
    return [v.to(m.dtype) for v, m in zip(call_op(fn, call, inputs, torch.device("cpu")), shapes_from)]


def _reference_values(fn, call, cpu, upcast, same, shapes_from):
    """``(values, values_f32)`` of ``reference``'s outputs. ``values``: the
    call with floating inputs in float64 when ``upcast``, else the
    same-dtype call's answer (``same``), each on dense copies of the inputs
    ``_dense_read_only`` swaps, where it swaps any. ``values_f32``, for a
    half-precision run: the call in float32 (else None, also where it
    raises). Raises where the float64 call raises and there is no
    same-dtype answer."""
    dense = _dense_read_only(fn, call, cpu)
    values = None
    if upcast and any(t.is_floating_point() for t in cpu):
        up = _floating_as(dense or cpu, torch.float64)
        try:
            values = _rounded_call(fn, call, up, shapes_from)
        except Exception:
            # An op without a float64 kernel (choose_qparams_optimized): the
            # same-dtype call is the reference.
            if same is None:
                raise
    # A half-precision run: the same call computed in float32 too (rounded
    # to the output dtype), which tells the elements that are settled at the
    # precision such kernels compute in (verdicts.settled).
    values32 = None
    if values is not None and any(t.dtype in (torch.float16, torch.bfloat16) for t in cpu):
        up32 = _floating_as(dense or cpu, torch.float32)
        try:
            values32 = _rounded_call(fn, call, up32, shapes_from)
        except Exception:  # no float32 kernel for it: every element judged against float64
            values32 = None
    if values is not None:
        pass
    elif dense is not None and same is not None:
        values = [v.clone() for v in call_op(fn, call, [same_layout(t) for t in dense], torch.device("cpu"))]
    else:
        values = same
    return values, values32


def _magnitudes(fn, call, cpu, magnitude, shapes_from):
    """The op on the absolute values of the inputs in float64 (see
    ``reference``'s ``magnitude``), or None: without ``magnitude``, without
    a floating input, with "if_reducing" where no output of ``shapes_from``
    has fewer elements than the largest input, or where the op rejects
    what |x| makes of its arguments (no bound of its own then)."""
    if magnitude and any(t.is_floating_point() for t in cpu) and (
            magnitude is True or any(m.numel() < max(t.numel() for t in cpu) for m in shapes_from)):
        absolute = [t.double().abs() if t.is_floating_point() else t for t in cpu]
        try:
            return call_op(fn, call, absolute, torch.device("cpu"))
        except Exception:
            return None
    return None


def _values_changed(after, before):
    """Whether ``after`` (a copy of ``before`` that an op was called on)
    holds other bits in its storage than ``before``'s."""
    a, b = facts.storage_of(after), facts.storage_of(before)
    if a is None or b is None:
        return False
    return a.numel() != b.numel() or not facts.same_bits(a, b)


def _stock_aten(target):
    """Whether nothing of FlagGems is in the op's path: ATen's own kernels
    (no ``enable``), no installer and FlagGems mocked (a real FlagGems may
    be what the device routes to), so the per-case mocks are not built."""
    ops = target.get("ops") or {}
    return (ops.get("kind") == "aten" and not ops.get("enable") and target["installer"]["mode"] == "none"
            and target["flag_gems"]["kind"] == "mock")


class Runner:
    """One P5 / P6 case on one target: prepares FlagGems (the mocks where the
    target uses them), finds the op under test and, on request, runs the
    target's installer once. The caller's sandbox undoes all of it."""

    def __init__(self, target, op, gates):
        from . import observe, session

        self.target = target
        self.gates = gates
        if not _stock_aten(target):
            session.prepare_flag_gems(target, {})  # the mocks, or the real FlagGems (+ supplied helper)
        self.before = None if target["installer"]["mode"] == "none" else observe.snapshot()
        self.fn = op_callable(target, op)
        self.control = _ControlRunner(target, op) if control_of(target) else None

    def call(self, call, tensors):
        """Outputs (tuple of tensors) of the op on ``call`` with ``tensors``."""
        return call_op(self.fn, call, tensors, torch.device(self.target["device"]))

    def install(self):
        """Runs the installer once. Returns {present, active, call}."""
        if self.before is None:
            return {"present": False, "active": False}
        from . import session  # a plain import: a reproducer embeds only the session code it runs

        call, active = session.install_observed(self.target, self.gates, self.before)
        return {"present": True, "active": bool(active), "call": call}


class _ControlRunner:
    """The same call through the target's control (``control_callable``):
    with FlagGems off for the stock control."""

    def __init__(self, target, op):
        self.target = target
        self.stock = control_of(target) == "stock"
        self.fn = control_callable(target, op)

    def call(self, call, tensors):
        """Outputs (tuple of tensors) of the control on ``call`` with
        ``tensors``; the caller holds ``scope()`` around it."""
        return call_op(self.fn, call, tensors, torch.device(self.target["device"]))

    def scope(self):
        """The scope a control pass runs in, whole: FlagGems off for the
        stock control (``_FlagGemsOff``), so that the copies of the inputs
        to the device and of the outputs back are the stock path's too, not
        FlagGems' ``copy_``; nothing for a control op file."""
        return _FlagGemsOff() if self.stock and _STATE.get("gems") else contextlib.nullcontext()


def _native_pointers(outs):
    """What the native runtime (flagprop's witness, inside flagprop only)
    says of each device output's memory: {runtime, memory_type, device} or
    None; None for the whole list where there is no witness."""
    native = sys.modules.get("flagprop_native")
    if native is None or not outs or all(o.device.type == "cpu" for o in outs):
        return None
    return [native.pointer(o.data_ptr()) if o.numel() else None for o in outs]


def _snap_input(t, source):
    """What P6 compares an input with after the call. ``source`` is the CPU
    storage the device input was copied from (``cpu_storages``): the same
    values, so no copy back from the device is needed."""
    return {"tensor": t, "storage": source if source.numel() else None, "shape": list(t.shape),
            "strides": list(t.stride()), "offset": t.storage_offset(), "version": t._version}


def _run_pass(runner, case, cpu_inputs, device, name):
    """Calls the op on fresh device copies of every call's inputs, recording
    the inputs before, the outputs and CPU copies of them right after. A
    runner with a ``scope`` (the control) runs the whole pass in it: one
    switch of FlagGems' kernels per pass, not per call."""
    scope = getattr(runner, "scope", None)
    with scope() if scope else contextlib.nullcontext():
        return _run_calls(runner, case, cpu_inputs, device, name)


def _run_calls(runner, case, cpu_inputs, device, name):
    """``_run_pass``'s calls, in the scope it chose."""
    calls, device_s = [], 0.0
    for k, call in enumerate(case["calls"]):
        sources = cpu_storages(call, cpu_inputs[k])
        dev = device_inputs(call, cpu_inputs[k], device, sources)
        rec = {"inputs": [_snap_input(t, src) for t, src in zip(dev, sources)], "error": None, "outputs": (),
               "after": []}
        t0 = time.perf_counter()
        depths = facts.mode_depths()
        try:
            try:
                outs = runner.call(call, dev)
            finally:  # a mode the op left pushed is popped at once: nothing of flagprop runs under it
                facts.pop_modes_left(depths)
            bad = [type(o).__name__ for o in outs if not isinstance(o, torch.Tensor)]
            if bad:
                raise TypeError("the op returned something that is not a tensor (%s)" % ", ".join(bad))
            subclass = [(i, type(o).__name__) for i, o in enumerate(outs) if type(o) is not torch.Tensor]
            if subclass:  # judged as the plain tensors they are: no __torch_function__ of theirs runs in a verdict
                rec["subclass"] = subclass
                outs = tuple(_plain(o) for o in outs)
            rec["outputs"] = outs
            rec["after"] = [o.detach().to("cpu", copy=True) for o in outs]
            rec["native"] = _native_pointers(outs)
        except BaseException as e:  # SystemExit or KeyboardInterrupt from the op is the op raising too
            rec["error"] = describe_exception(e)
        device_s += time.perf_counter() - t0
        calls.append(rec)
    return {"name": name, "calls": calls, "device_s": device_s}


def _stock_pass(runner, case, cpu_inputs, device, name, where):
    """The stock path's pass ``name`` on ``case`` (``_run_pass`` through
    ``runner.control``) and, where one of its calls lost the device context,
    (why, the error) else None; ``where`` ends the call's place in ``why``.
    Only a call's own error counts: one raised while the pass copies inputs
    to the device may come from earlier work (an op's history call, a
    kernel whose fault surfaces at the copy's synchronization) and goes up
    as before. On a GPU the loss is
    confirmed by the context itself (``_context_usable``): an error that
    names the runtime but leaves the context usable (out of memory) is no
    loss. On the CPU, whose models of the contract raise the runtime's
    text, the text stands for it."""
    done = _run_pass(runner.control, case, cpu_inputs, device, name)
    for k, rec in enumerate(done["calls"]):
        if rec["error"] and facts.device_lost(rec["error"]) and not _context_usable(device):
            return done, ("the stock path lost the device context on call %d%s: %s" % (k, where, rec["error"]),
                          rec["error"])
    return done, None


def _context_usable(device):
    """Whether ``device``'s context still works after an error: False where
    a synchronization or a one-element allocation and copy back fails (a
    sticky error: the context is lost), and on the CPU, which has no context
    (there the error's text is all there is)."""
    dev = torch.device(device)
    if dev.type == "cpu":
        return False
    try:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        torch.zeros(1, device=dev).cpu()
        return True
    except Exception:
        return False


def _plain(t):
    """``t`` (a tensor subclass) as a plain ``torch.Tensor`` viewing the same
    data, made without calling any method of its class: the base class's
    ``as_subclass`` with torch functions disabled (a subclass that overrides
    ``as_subclass``, or answers it in ``__torch_function__``, is not asked)."""
    with torch._C.DisableTorchFunction():
        return torch.Tensor.as_subclass(t, torch.Tensor)


_STAGE = {}  # "fd": the stage file, opened on first use and kept open (None: no file)


def _stage(name):
    """Records what the case in flight is doing (``reference``: CPU ATen;
    ``control``: the stock path, FlagGems off; ``device``: the op under
    test; the harness blanks the file as every
    case starts, suites/property.cpp) in the file $FLAGPROP_STAGE_FILE names,
    so that the parent of a process that dies or hangs knows whose crash or
    hang it was."""
    fd = _stage_fd()
    if fd is not None:
        os.pwrite(fd, name.encode().ljust(16), 0)  # one pwrite per stage, fixed width: no truncate; the reader strips


def _compiled_now():
    """Stamps the stage file (bytes 16 on) with this moment on the monotonic
    clock (s), after each Triton compilation: a case that outruns its time
    limit while its kernels are still compiling or being autotuned is slow,
    not hung, and its parent tells the two apart by this stamp
    (runner/runner.h, stageCompileAge)."""
    fd = _stage_fd()
    if fd is not None:
        # In µs, rounded down: a stamp never reads as later than its write.
        os.pwrite(fd, ("%d.%06d" % divmod(time.monotonic_ns() // 1000, 1000000)).encode().ljust(24), 16)


def _stage_fd():
    """The open stage file ($FLAGPROP_STAGE_FILE), or None without one."""
    if "fd" not in _STAGE:  # the C++ session sets the variable before the first case
        _STAGE["path"] = os.environ.get("FLAGPROP_STAGE_FILE")
        _STAGE["fd"] = None
    path, fd = _STAGE["path"], _STAGE["fd"]
    if not path:
        return None
    if fd is not None:
        # Still this file, and the path still names it? (The code under test
        # may have closed the descriptor, reused its number or unlinked the file.)
        try:
            kept, now = os.fstat(fd), os.stat(path)
            fd = fd if (kept.st_dev, kept.st_ino) == _STAGE["id"] == (now.st_dev, now.st_ino) else None
        except OSError:
            fd = None
    if fd is None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        st = os.fstat(fd)
        _STAGE["fd"], _STAGE["id"] = fd, (st.st_dev, st.st_ino)
    return fd


def observe_case(target, case, gates, upcast, repeat=False, magnitude=False):
    """Runs one P5 / P6 case: the CPU reference of every call, then the
    unpatched pass, then the installer (once, if the target has one), then the
    patched pass when the installer is active. Returns the observation
    ``verdicts.op_findings`` judges (it holds tensors), or ``{"discard":
    reason}`` when CPU ATen rejects the arguments. ``time_us`` gives the
    reference, device (the op's calls and the copies of their outputs),
    inputs, control (the whole control pass) and flaggems_off (the part of
    the control spent unregistering FlagGems' kernels and registering them
    again) times in µs and ``compilations`` the Triton compilations. ``magnitude``:
    see ``reference``."""
    compiles0 = compile_count()
    runner = Runner(target, case["op"], gates)
    device = target["device"]
    t_in = time.perf_counter()
    cpu_inputs = [build_cpu(call) for call in case["calls"]]
    t0 = time.perf_counter()
    inputs_s = t0 - t_in
    _stage("reference")
    expected, relaid, writes = [], [], []
    for k, call in enumerate(case["calls"]):
        try:
            outs, moved, wrote = reference(case["op"], call, cpu_inputs[k], upcast, repeat, magnitude)
        except Exception as e:
            return {"discard": "CPU ATen rejects call %d: %s" % (k, describe_exception(e)),
                    "time_us": {"inputs": 1e6 * inputs_s, "reference": 1e6 * (time.perf_counter() - t0)}}
        expected.append(outs)
        relaid.append(moved)
        writes.append(wrote)
    reference_s = time.perf_counter() - t0
    control = None
    t_control, switch0 = time.perf_counter(), _STATE["switch_s"]

    def times():  # the parts timed so far (µs)
        return {"inputs": 1e6 * inputs_s, "reference": 1e6 * reference_s,
                "control": 1e6 * (time.perf_counter() - t_control), "flaggems_off": 1e6 * (_STATE["switch_s"] - switch0)}

    if runner.control is not None:
        _stage("control")
        # The same calls on fresh copies of the inputs through the control,
        # first: a case on which the stock path itself loses the device is
        # never put on the op (docs/control.md).
        control = _run_pass(runner.control, case, cpu_inputs, device, "control")
        for k, rec in enumerate(control["calls"]):
            if rec["error"] and facts.device_lost(rec["error"]):
                return {"discard": "the stock path lost the device context on call %d: %s" % (k, rec["error"]),
                        "stock_lost": rec["error"], "time_us": times()}
        rejected = facts.control_rejects({"control": control})
        if rejected:  # invalid on this device: a discard whatever the op does, so the op is not run (nor compiled)
            return {"discard": "the stock path rejects call %d: %s" % rejected, "time_us": times()}
        if _STATE.get("stock_in_op_place"):
            # Judging again a case the op lost the device context on: the stock
            # path once more, in the op's place (its inputs and outputs where
            # the op's pass will put them, the control's still held), since a
            # kernel that reads memory it does not own faults or not by what
            # lies there. Its tensors are freed before the op's pass, which
            # then runs on the memory they held (docs/control.md).
            again, lost = _stock_pass(runner, case, cpu_inputs, device, "control in the op's place", " in the op's place")
            if lost:
                return {"discard": lost[0], "stock_lost": lost[0], "time_us": times()}
            del again
    timed = times()
    op_is_reference = device == "cpu" and (target.get("ops") or {"kind": "aten"}).get("kind") == "aten"
    # Where the op under test is CPU ATen itself, its calls are the
    # reference's too: a process that dies or hangs there died in CPU ATen on
    # a generated case (a health skip, as in the reference stage), never the
    # op's finding. A heap that CPU ATen corrupted in the reference stage can
    # also abort the process only here, at a later free (LibTorch 1.13's
    # max_pool3d_with_indices_backward: "double free or corruption").
    _stage("reference" if op_is_reference else "device")
    passes = [_run_pass(runner, case, cpu_inputs, device, "unpatched")]
    inst = runner.install()
    obs = {"cpu_inputs": cpu_inputs, "expected": expected, "relaid": relaid, "writes": writes, "passes": passes,
           "op_is_reference": op_is_reference}
    if not inst["present"]:
        obs["fast_path"] = "no installer"
    elif not inst["active"]:
        obs["fast_path"], obs["install"] = "inactive", inst["call"]
    else:
        obs["fast_path"] = "active"
        passes.append(_run_pass(runner, case, cpu_inputs, device, "patched"))
    if control is not None:
        obs["control"] = control
    obs["compilations"] = compile_count() - compiles0
    obs["time_us"] = dict(timed, device=1e6 * sum(p["device_s"] for p in passes))
    return obs


def _import_lazy_reference_modules():
    """Imports what CPU ATen's reference imports on its first use, so that
    no case is charged for it: torch 2.x's Python meta kernels (``torch._refs``
    out= wrappers) import ``torch._dynamo`` (with sympy: seconds) on their
    first call. Nothing where torch has no such module (1.x)."""
    import importlib.util

    try:
        if importlib.util.find_spec("torch._dynamo") is not None:
            importlib.import_module("torch._dynamo")
    except Exception:  # the reference then imports it itself, as before
        pass


def setup(target, op_names):
    """Once per process, before any case: imports what the CPU reference
    imports lazily, registers FlagGems' kernels for the
    catalog ops where the target asks for it, and counts Triton compilations
    (``triton.knobs.runtime.jit_post_compile_hook``) where Triton has that
    hook; compilations and the autotuner's benchmarks stamp the stage file
    (``stamp_autotuner_benchmarks``). Returns {"enabled": [...],
    "compile_counter": bool}."""
    out = {"enabled": [], "compile_counter": False}
    _import_lazy_reference_modules()
    ops = target.get("ops") or {"kind": "aten"}
    if ops.get("enable") == "flag_gems":
        flag_gems = importlib.import_module("flag_gems")
        config = getattr(flag_gems, "_FULL_CONFIG", ())
        wanted = set(op_names)
        funcs = sorted({item[1].__name__ for item in config if len(item) >= 2 and item[0] in wanted})
        lib = _RecordingLibrary("aten", "IMPL")
        flag_gems.only_enable(lib=lib, include=funcs)
        _STATE["libs"].append(lib)
        # For the stock control: unregistered around its pass, then registered again as recorded.
        _STATE["gems"] = (flag_gems, funcs, lib.recorded)
        out["enabled"] = sorted(item[0] for item in config if len(item) >= 2 and item[0] in wanted)
    triton = sys.modules.get("triton")
    knobs = getattr(triton, "knobs", None) if triton is not None else None
    runtime = getattr(knobs, "runtime", None)
    if runtime is not None and hasattr(runtime, "jit_post_compile_hook") and not _STATE["hooked"]:
        previous = runtime.jit_post_compile_hook

        def counting_hook(*args, **kwargs):
            _STATE["compiles"].append(str(kwargs.get("repr", "?")).split("[")[0])
            _compiled_now()
            return previous(*args, **kwargs) if previous else None

        runtime.jit_post_compile_hook = counting_hook
        _STATE["hooked"] = True
    if triton is not None:
        stamp_autotuner_benchmarks(triton)
    out["compile_counter"] = _STATE["hooked"]
    return out


def stamp_autotuner_benchmarks(triton):
    """Makes every benchmark of one config by Triton's autotuner
    (``triton.runtime.autotuner.Autotuner._bench``, which FlagGems'
    ``LibTuner`` calls per config) stamp the stage file as a compilation
    does (``_compiled_now``), once it returns: a case autotuning past its
    time limit (benchmarking configs whose kernels compiled earlier, on a
    GPU shared by several processes) is slow, not hung. A benchmark that
    never returns stamps nothing, so a hung kernel is still a hang. Once per
    process; returns whether the autotuner is stamped (False: this Triton
    has no ``Autotuner._bench``)."""
    autotuner = getattr(getattr(triton, "runtime", None), "autotuner", None)
    cls = getattr(autotuner, "Autotuner", None)
    bench = getattr(cls, "_bench", None)
    if bench is None:
        return False
    if getattr(bench, "_flagprop_stamps", False):
        return True

    def stamping_bench(self, *args, **kwargs):
        result = bench(self, *args, **kwargs)
        _compiled_now()
        return result

    stamping_bench._flagprop_stamps = True
    stamping_bench.__wrapped__ = bench
    cls._bench = stamping_bench
    return True


def compile_count():
    """Triton compilations seen since ``setup`` (0 where not counted)."""
    return len(_STATE["compiles"])


def describe_exception(e):
    """One line: type and first line of the message (an exception whose
    ``str`` itself raises is described as unprintable, never re-raised)."""
    try:
        msg = str(e).strip().splitlines()
    except BaseException as inner:  # the code under test's __str__
        msg = ["<unprintable: its __str__ raised %s>" % type(inner).__name__]
    try:
        name = type(e).__name__
    except BaseException:
        name = "exception"
    return "%s: %s" % (name, msg[0] if msg else "")
