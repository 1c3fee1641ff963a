"""Launch and key drivers for P3 (stock fallback) and P4 (key equivalence)
on flagprop's mocks (``flagprop.engine.real_launch`` drives a real FlagGems).

Each driver runs the same work on two ``LibEntry`` objects built from one mock
spec: *A* on the class the installer patched (registered in ``sys.modules``)
and *B* on a fresh, never-patched copy of the mocks. It returns raw facts only.
"""

import sys

import flagprop_mocks as mocks
import torch


def materialize(arg):
    """Turn a generated argument (``value_from_json``'s output) into the value
    a key sees: descriptor-like objects are described as dicts
    ``{"descriptor": "triton"|"duck", ...}`` and built here, the rest is
    passed through."""
    if isinstance(arg, dict) and "descriptor" in arg:
        cls = mocks.descriptor_class() if arg["descriptor"] == "triton" else _DuckDescriptor
        return _bare_descriptor(cls, arg)
    return arg


def _bare_descriptor(cls, arg):
    # Built without __init__ / __post_init__: Triton's class validates its
    # base tensor, and a key only reads shape, strides, block_shape, padding.
    obj = cls.__new__(cls)
    for name, value in (("base", None), ("shape", list(arg["shape"])), ("strides", list(arg["strides"])),
                        ("block_shape", list(arg["block_shape"])), ("padding", arg.get("padding", "zero"))):
        object.__setattr__(obj, name, value)
    return obj


# Descriptor-like object of another class that happens to share the name.
_DuckDescriptor = type("TensorDescriptor", (), {"__init__": mocks.MockTensorDescriptor.__init__})


def _outcome(fn, *args, **kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as e:
        return ("raised", type(e).__name__)


def _same(x, y):
    try:
        return x == y and hash(x) == hash(y)
    except TypeError:
        return x == y


def stock_functions_from(before):
    """The stock descriptor helper, ``torch.broadcast_shapes`` and
    ``type_promotion`` from a component snapshot taken before the install."""
    return {c: before.get(c) for c in ("descriptor_helper", "broadcast_memo", "type_promotion_memo")}


def compare_memos(values, stock):
    """The installer's helper and memos (what the modules hold now) against
    the stock functions ``stock`` ({descriptor_helper, broadcast_memo,
    type_promotion_memo}, each callable or None), on ``values``. Each check
    calls the installed function several times with different arguments, so
    a memo that ignores its arguments shows. Returns a list of mismatch
    descriptions (empty = equal)."""
    bad = []
    le = sys.modules["flag_gems.utils.libentry"]
    helper, stock_helper = le.__dict__.get("_descriptor_cache_key"), stock.get("descriptor_helper")
    if callable(helper) and callable(stock_helper) and helper is not stock_helper:
        for v in values:
            got, want = _outcome(helper, v), _outcome(stock_helper, v)
            if not _same(got, want):
                bad.append("descriptor helper(%r) = %r, stock %r" % (v, got, want))
                break
    shapes = [tuple(v.shape) for v in values if isinstance(v, torch.Tensor)]
    combos = [((1,), (3,)), ((2, 1), (1, 4)), ((5,), (5,)), ((3,), (4,))]
    combos += [(s,) for s in shapes[:3]] + [((1,), s) for s in shapes[:3]]
    original_bs = stock.get("broadcast_memo")
    if callable(original_bs) and torch.broadcast_shapes is not original_bs:
        for shp in combos + combos[:2]:
            got, want = _outcome(torch.broadcast_shapes, *shp), _outcome(original_bs, *shp)
            if got != want:
                bad.append("torch.broadcast_shapes%r = %r, original %r" % (shp, got, want))
                break
    pw = sys.modules.get("flag_gems.utils.pointwise_dynamic")
    stock_promotion = stock.get("type_promotion_memo")
    if pw is not None and callable(stock_promotion) and pw.__dict__.get("type_promotion") is not stock_promotion:
        # Generated arguments, then scalars that are equal and hash alike in
        # Python but promote differently (1, 1.0, True; 0, 0.0, False).
        groups = [values[i:i + 2] for i in range(0, len(values), 2)] + [[1.5], [7], []]
        groups += [[1], [1.0], [True], [0], [0.0], [False]]
        for kind in ("DEFAULT", "INT_TO_FLOAT"):
            for grp in groups:
                got = _outcome(pw.type_promotion, *grp, type_promotion=kind)
                want = _outcome(stock_promotion, *grp, type_promotion=kind)
                if got != want:
                    bad.append("type_promotion(%r, %s) = %r, stock %r" % (grp, kind, got, want))
                    break
    return bad


_WARMUP = ([7], [2**40], ["warm-up"])


def key_comparison(fast_key, stock_key, s, d, c, stock):
    """``fast_key(s, d, c)`` against ``stock_key(s, d, c)`` after one warm-up
    key on each (so a key that remembers its first answer shows), plus the
    helper and memos against ``stock`` (``compare_memos``). Returns
    ``{"fast": repr, "stock": repr, "equal": bool, "raised": str,
    "memo_mismatches": [str]}``."""
    raised = ""
    try:
        fast_key(*[list(x) for x in _WARMUP])
        stock_key(*[list(x) for x in _WARMUP])
    except Exception as e:
        raised = "warm-up key raised %s: %s" % (type(e).__name__, e)
    try:
        fast = fast_key(list(s), list(d), list(c))
    except Exception as e:
        fast, raised = None, "fast key raised %s: %s" % (type(e).__name__, e)
    try:
        want = stock_key(list(s), list(d), list(c))
    except Exception as e:
        want, raised = None, raised or "stock key raised %s: %s" % (type(e).__name__, e)
    equal = (not raised) and _same(fast, want)
    return {"fast": repr(fast), "stock": repr(want), "equal": bool(equal), "raised": raised,
            "memo_mismatches": compare_memos(s + d + c, stock)}


def compare_keys(spec, spec_args, dns_args, const_args, before):
    """P4 on the mocks: the patched ``LibEntry.key`` of the registered mocks
    against the key of a fresh, never-patched copy of them (``spec``), and
    the installed helper and memos against that copy's (the
    ``broadcast_shapes`` original from ``before``, the snapshot taken before
    the install). See ``key_comparison``."""
    s, d, c = ([materialize(a) for a in args] for args in (spec_args, dns_args, const_args))
    le = sys.modules["flag_gems.utils.libentry"]
    a_entry = le.make_entry()
    b_mods = mocks.build(spec)
    b_entry = b_mods["flag_gems.utils.libentry"].make_entry()
    stock = {"descriptor_helper": b_mods["flag_gems.utils.libentry"].__dict__.get("_descriptor_cache_key"),
             "broadcast_memo": before.get("broadcast_memo"),
             "type_promotion_memo": b_mods["flag_gems.utils.pointwise_dynamic"].type_promotion}
    return key_comparison(a_entry.key, b_entry.key, s, d, c, stock)


def _cache(entry, runtime):
    dev = runtime.torch_device_fn.current_device()
    return entry._cpu_cache if dev == "cpu" else entry.kernel_cache[dev]


def run_launches(spec, launches_a, launches_b):
    """Run the same launch sequence through patched A and stock B.

    ``launches_a`` / ``launches_b`` are equal lists (separate tensors) of
    ``{"kind", "args", "kwargs", "grid", "callable_grid", "out"}``. Returns one dict
    per launch: ``kind``, ``stock_calls`` (calls of the stock ``run`` on A),
    ``cache_grew`` (A's cache gained an entry), ``equal`` (A's and B's output
    tensors bitwise equal), ``a_out`` / ``b_out`` (first output value),
    ``raised_a`` / ``raised_b``.
    """
    le = sys.modules["flag_gems.utils.libentry"]
    a_entry = le.make_entry()
    b_mods = mocks.build(spec)
    b_entry = b_mods["flag_gems.utils.libentry"].make_entry()
    out = []
    for la, lb in zip(launches_a, launches_b):
        before_runs = le.WITNESS["run"]
        cache_a = _cache(a_entry, sys.modules["flag_gems.runtime"])
        n_before = len(cache_a)
        res = {"kind": la["kind"], "raised_a": "", "raised_b": ""}
        rets = {}
        for launch in (la, lb):  # same poison on both sides: an unwritten output shows
            o = launch.get("out")
            if o is not None and o.numel():
                o.fill_(True if o.dtype == torch.bool else 77)
        for entry, launch, tag in ((a_entry, la, "a"), (b_entry, lb, "b")):
            grid = tuple(launch["grid"])
            g = (lambda meta, grid=grid: grid) if launch.get("callable_grid") else grid
            try:
                rets[tag] = entry.run(*launch["args"], grid=g, warmup=False, **launch["kwargs"])
            except Exception as e:
                res["raised_" + tag] = "%s: %s" % (type(e).__name__, e)
        ra, rb = rets.get("a"), rets.get("b")
        # run returns (kernel, constexprs); the kernel's last launch has the grid.
        shape_ok = isinstance(ra, tuple) and len(ra) == 2 and isinstance(rb, tuple) and len(rb) == 2
        res["return_equal"] = bool(
            (ra is None and rb is None)
            or (shape_ok and ra[1] == rb[1] and type(ra[0]) is type(rb[0]))
        )
        res["return_a"] = repr(ra)[:200]
        res["return_b"] = repr(rb)[:200]
        la_grid = ra[0].launches[-1][0] if shape_ok and getattr(ra[0], "launches", None) else None
        lb_grid = rb[0].launches[-1][0] if shape_ok and getattr(rb[0], "launches", None) else None
        res["grid_a"], res["grid_b"] = list(la_grid or ()), list(lb_grid or ())
        res["grid_equal"] = la_grid == lb_grid
        res["stock_calls"] = le.WITNESS["run"] - before_runs
        res["cache_grew"] = len(cache_a) > n_before
        oa, ob = la.get("out"), lb.get("out")
        res["equal"] = bool(
            (oa is None and ob is None)
            or (oa is not None and ob is not None and torch.equal(oa, ob))
        )
        res["a_out"] = float(oa.flatten()[0]) if oa is not None and oa.numel() else 0.0
        res["b_out"] = float(ob.flatten()[0]) if ob is not None and ob.numel() else 0.0
        out.append(res)
    return out


def make_tensor(dtype, numel, offset, seed):
    """The tensor a generated tensor argument describes: ``numel`` elements
    ``offset`` elements into a fresh 1-D storage (so ``data_ptr()`` is
    misaligned for a 16-byte divisibility whenever ``offset * itemsize % 16``
    is not 0), value ``0.25 * i + seed % 97 - 3`` cast to ``dtype`` (for
    bool: ``(value mod 2) >= 1``)."""
    total = numel + offset
    base = torch.arange(total, dtype=torch.float64) * 0.25 + float(seed % 97) - 3.0
    if dtype == "bool":
        base = torch.remainder(base, 2.0) >= 1.0
    else:
        base = base.to(getattr(torch, dtype))
    return base.narrow(0, offset, numel)


def value_from_json(v):
    """Inverse of the C++ ``toJson(ArgValue)``: one generated argument."""
    (kind, body), = v.items()
    if kind == "tensor":
        return make_tensor(body["dtype"], body["numel"], body["offset"], body["seed"])
    if kind == "int":
        return int(body)
    if kind in ("float", "bool", "str"):
        return body
    if kind == "none":
        return None
    if kind == "descriptor":
        return {"descriptor": body["class"], "shape": body["shape"], "strides": body["strides"],
                "block_shape": body["block_shape"]}
    raise ValueError("unknown argument kind %r" % kind)


def build_launches(case):
    """Launch dicts for ``run_launches`` from a generated P3 case (JSON form).

    Each argument set is materialised once; the launches that use it share its
    tensors (``run_launches`` poisons the output before every launch, so a
    launch that writes nothing still shows). ``out`` is the set's last tensor,
    whether it is passed by position or by keyword.
    """
    params = case["mock"]["params"]
    sets = [[value_from_json(v) for v in vals] for vals in case["arg_sets"]]
    out = []
    for launch in case["launches"]:
        vals = sets[launch["arg_set"] % len(sets)]
        npos = min(launch.get("positional", len(vals)), len(vals)) if launch["kind"] == "partial" else len(vals)
        kwargs = {params[i]["name"]: vals[i] for i in range(npos, len(vals))}
        if launch["kind"] == "extra_kwargs":
            kwargs["num_stages"] = 2
        tensors = [v for v in vals if isinstance(v, torch.Tensor)]
        out.append({"kind": launch["kind"], "args": list(vals[:npos]), "kwargs": kwargs, "grid": launch["grid"],
                    "callable_grid": launch["kind"] == "callable_grid", "out": tensors[-1] if tensors else None})
    return out
