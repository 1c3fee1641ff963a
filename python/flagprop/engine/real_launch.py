"""P3 and P4 against a real FlagGems: flagprop's own small Triton kernel,
wrapped in FlagGems' real ``LibEntry`` (plain, under ``triton.autotune`` and
under ``triton.heuristics``), launched through the installed fast ``run`` and
through the stock one, and keyed by the installed fast ``key`` and the stock
one. Raw facts in the form ``flagprop.engine.launch`` gives them for the mocks, so
``flagprop.judging.verdicts`` judges both alike. Needs Triton and a GPU.
"""

import sys

import torch

from . import launch

try:  # a GPU host's Triton; on a CPU host these checks skip (``available``)
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

_KERNELS = {}

if triton is not None and not getattr(triton, "_flagprop_mock", False) and hasattr(triton, "jit"):

    @triton.jit
    def flagprop_axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        """flagprop's kernel: out = x * alpha + y over n elements."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        y = tl.load(y_ptr + offs, mask=mask, other=0.0)
        tl.store(out_ptr + offs, x * alpha + y, mask=mask)

    _KERNELS["jit"] = flagprop_axpy
    _KERNELS["autotuner"] = triton.autotune(
        configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128})], key=["n"])(flagprop_axpy)
    _KERNELS["heuristics"] = triton.heuristics({"BLOCK": lambda args: 128 if args["n"] >= 128 else 32})(flagprop_axpy)


def available(device):
    """'' when real launches can run on ``device``, else why not."""
    if torch.device(device).type == "cpu":
        return "P3 and P4 on a real FlagGems launch flagprop's Triton kernel: they need a GPU target"
    if not _KERNELS:
        return "P3 and P4 on a real FlagGems need Triton"
    return ""


def _kernels():
    """flagprop's kernel as a Triton JIT function, and wrapped by
    ``triton.autotune`` and ``triton.heuristics``."""
    return _KERNELS


def _entry(variant):
    le = sys.modules["flag_gems.utils.libentry"]
    fn = _kernels()[variant]
    return le.libentry()(fn) if hasattr(le, "libentry") else le.LibEntry(fn)


def compare_keys(spec_args, dns_args, const_args, before):
    """The installed ``LibEntry.key`` against the stock one (``before``, the
    snapshot taken before the installer ran) on a real LibEntry of
    flagprop's kernel, after one warm-up key on the same entry, plus the
    installed helper and memos against the originals. Returns the dict
    ``launch.compare_keys`` returns."""
    le = sys.modules["flag_gems.utils.libentry"]
    entry = _entry("jit")
    s, d, c = ([launch.materialize(a) for a in args] for args in (spec_args, dns_args, const_args))
    fast_key, stock_key = le.LibEntry.__dict__["key"], before["key"]
    return launch.key_comparison(lambda *a: fast_key(entry, *a), lambda *a: stock_key(entry, *a), s, d, c,
                                 launch.stock_functions_from(before))


def _arg_sets(case, device):
    sets = []
    for i in range(len(case["arg_sets"])):
        n = (37, 128, 1000)[i % 3]
        g = torch.Generator().manual_seed(i)
        x, y = (torch.randn(n, generator=g).to(device) for _ in range(2))
        sets.append({"n": n, "x": x, "y": y, "alpha": 1.5 + i})
    return sets


def _launch_args(variant, kind, s, out):
    """(args, kwargs, grid) of one launch of kind ``kind`` (positional,
    extra_kwargs, partial, callable_grid) on argument set ``s``."""
    import triton

    n = s["n"]
    args = [s["x"], s["y"], out, n, s["alpha"]]
    kwargs = {}
    if variant == "jit":
        if kind == "partial":
            kwargs["BLOCK"] = 128
        else:
            args.append(128)
    if kind == "extra_kwargs":
        kwargs["num_warps"] = 4
    grid = (triton.cdiv(n, 32),)
    if kind == "callable_grid":
        grid = lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    return args, kwargs, grid


def _cache(entry):
    dev = sys.modules["flag_gems.runtime"].torch_device_fn.current_device()
    return entry._cpu_cache if dev == "cpu" else entry.kernel_cache[dev]


def run_launches(case, stock_run, stock_calls, device):
    """The case's launch sequence through a patched LibEntry A (its class's
    installed ``run``) and a stock LibEntry B (``stock_run`` called on it).
    ``stock_calls()`` counts the stock run's entries from A (a shim the
    installer wrapped). The kernel variant follows the case's mock
    ``wrappers`` (autotuner, heuristics, else plain). Returns one dict per
    launch in ``launch.run_launches``' form, plus ``entry_needs_stock``."""
    wrappers = case["mock"].get("wrappers") or []
    variant = "autotuner" if "autotuner" in wrappers else "heuristics" if "heuristics" in wrappers else "jit"
    a_entry, b_entry = _entry(variant), _entry(variant)
    sets = _arg_sets(case, device)
    out = []
    for entry in case["launches"]:
        s = sets[entry["arg_set"] % len(sets)]
        outs = {}
        res = {"kind": entry["kind"], "raised_a": "", "raised_b": "", "entry_needs_stock": variant != "jit"}
        before_stock, n_before = stock_calls(), len(_cache(a_entry))
        rets = {}
        for tag, call in (("a", lambda *a, grid, **k: a_entry[grid](*a, **k)),
                          ("b", lambda *a, grid, **k: stock_run(b_entry, *a, grid=grid, warmup=False, **k))):
            outs[tag] = torch.full((s["n"],), 77.0, device=device)
            args, kwargs, grid = _launch_args(variant, entry["kind"], s, outs[tag])
            try:
                rets[tag] = call(*args, grid=grid, **kwargs)
            except Exception as e:
                res["raised_" + tag] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        torch.cuda.synchronize()
        ra, rb = rets.get("a"), rets.get("b")
        pairs = isinstance(ra, tuple) and isinstance(rb, tuple) and len(ra) == len(rb) == 2
        res["return_equal"] = (ra is None and rb is None) or (pairs and ra[1] == rb[1] and type(ra[0]) is type(rb[0]))
        res["return_a"], res["return_b"] = repr(ra)[:200], repr(rb)[:200]
        res["equal"] = bool(torch.equal(outs["a"], outs["b"]))
        res["a_out"], res["b_out"] = float(outs["a"][0]), float(outs["b"][0])
        res["stock_calls"] = stock_calls() - before_stock
        res["cache_grew"] = len(_cache(a_entry)) > n_before
        out.append(res)
    return out
