"""A mock ``flag_gems.utils.libentry``: ``LibEntry`` with its ``run`` and
``key``, a JIT function stand-in and kernels that compute on the CPU.

This is flagprop's own small model of the FlagGems launch contract that the
Torch-FL installers patch (docs/design.md, "The installer contract"), written
from public facts only: ``LibEntry.run`` sorts the launch arguments into
specialised / do-not-specialise / constexpr lists, asks ``key`` for a cache
key, keeps per-device caches (a ``kernel_cache`` tuple indexed by device, or
``_cpu_cache`` when ``current_device()`` answers ``"cpu"``) of ``(kernel,
constexprs, tune_constexprs, heur_constexprs, launch_hooks)`` tuples, and
launches ``kernel[grid](*args)``. The key classifies do-not-specialise ints as
``"i32"`` for [-2^31, 2^31 - 1], ``"u64"`` for [2^63, 2^64 - 1] and ``"i64"``
otherwise, and a specialised tensor as ``(dtype, data_ptr % divisibility ==
0)`` with divisibility 16 -- as FlagGems' ``LibEntry.key`` does (FlagGems
commit ed2508bcb) and Torch-FL's fast key states.

Every call of ``run``, ``key``, the descriptor helper, a compile and a kernel
launch is counted in ``WITNESS`` (a ``collections.Counter`` on the module).
"""

import collections
import inspect
import time

import torch

_EMPTY = inspect.Parameter.empty

#: µs that each stock ``run`` took, from entry to return (with
#: ``run_delay_us``, its delay loop included). P9's calibration compares its
#: measurement with the difference these make with and without the delay:
#: the delay's whole cost to the stock path, which on some hosts is more
#: than the loop's own time. Clear it first.
STOCK_RUN_US = []


class Param:
    """One kernel parameter as ``LibEntry`` sees it (``num``, ``name``,
    ``is_constexpr``, ``do_not_specialize``, ``default``)."""

    def __init__(self, num, name, kind, default=_EMPTY):
        self.num = num
        self.name = name
        self.is_constexpr = kind == "constexpr"
        self.do_not_specialize = kind == "dns"
        self.default = default


def params_from_spec(spec_params):
    """``Param`` objects for the spec's ``params`` list."""
    return [Param(i, p["name"], p["kind"], p.get("default", _EMPTY)) for i, p in enumerate(spec_params)]


def bind_all(params, args, kwargs):
    """Positional args, then keyword / default values for the remaining params."""
    full = list(args)
    for p in params[len(args):]:
        if p.name in kwargs:
            full.append(kwargs[p.name])
        elif p.default is not _EMPTY:
            full.append(p.default)
    return full


def _arg_sig(a):
    """What a compiled kernel is specialised on, per argument (dtype for
    tensors, the key classifier's int class for ints, the type otherwise)."""
    if isinstance(a, torch.Tensor):
        return ("tensor", str(a.dtype))
    if isinstance(a, bool):
        return ("bool",)
    if isinstance(a, int):
        return ("int", int_class(a))
    return (type(a).__name__,)


def int_class(v):
    """The stock key's class of a do-not-specialise int: i32, u64 or i64."""
    if -(2**31) <= v <= 2**31 - 1:
        return "i32"
    if 2**63 <= v <= 2**64 - 1:
        return "u64"
    return "i64"


class MockKernel:
    """A compiled kernel: ``kernel[grid](*args)`` computes on the CPU.

    The result is written into the last tensor argument (the output): every
    element becomes ``sum(t.sum() for input tensors) + sum((i+1)*v for numeric
    scalar args v at position i)``, so an argument that is dropped, reordered or
    replaced changes the output. Like a real specialised kernel it is only
    right for the argument types it was compiled for: launched with others
    (a cache lookup that ignored the key), it writes NaN (integers: -1) and
    counts a ``mismatch`` witness.
    """

    def __init__(self, witness, name="mock_kernel", device_fn=None, log=None):
        self._witness = witness
        self._name = name
        self._device_fn = device_fn
        self._log = log if log is not None else []
        self.launches = []  # (grid, number of arguments) per launch
        self.signature = None  # set by the first launch (the compile launch)

    def __getitem__(self, grid):
        """A launcher on the stream current at launch time."""
        return lambda *args: self.launch(tuple(grid), None, *args)

    def launch(self, grid, stream, *args):
        """Launch on ``stream`` (None: the current stream), as a compiled
        kernel's ``run`` takes its stream; every launch is logged in the
        libentry module's ``LAUNCH_LOG`` as (kernel name, stream id)."""
        if stream is None and self._device_fn is not None:
            stream = self._device_fn.current_stream()
        self._log.append((self._name, getattr(stream, "id", 0)))
        return self._launch(tuple(grid), args)

    def _launch(self, grid, args):
        self._witness["launch"] += 1
        self.launches.append((grid, len(args)))
        sig = tuple(_arg_sig(a) for a in args)
        if self.signature is None:
            self.signature = sig
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not tensors or not tensors[-1].numel():
            return None
        out = tensors[-1]
        if sig != self.signature:
            self._witness["mismatch"] += 1
            out.fill_(float("nan") if out.is_floating_point() else -1)
            return None
        acc = sum(float(t.double().sum()) for t in tensors[:-1] if t.numel())
        acc += sum((i + 1) * float(a) for i, a in enumerate(args)
                   if isinstance(a, (int, float)) and not isinstance(a, bool))
        out.fill_(acc)
        return None


def grid3(grid):
    """A launch grid as three dimensions."""
    return (tuple(grid) + (1, 1))[0:3]


class JITFunction:
    """Stand-in for ``triton.runtime.JITFunction``: parameters, signature and
    the kernel's ``__name__``."""

    def __init__(self, params, witness, name="mock_kernel", device_fn=None, log=None):
        self.__name__ = name
        self._device_fn = device_fn
        self._log = log
        self.params = params
        self.arg_names = [p.name for p in params]
        self._signature = None
        self._witness = witness

    @property
    def signature(self):
        """``inspect.Signature`` of the kernel (built on first use)."""
        if self._signature is None:
            self._signature = inspect.Signature(
                [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in self.params])
        return self._signature

    def run(self, *args, **kwargs):
        """Compile (counted) and launch once, as a JIT's first call does."""
        self._witness["compile"] += 1
        kernel = MockKernel(self._witness, self.__name__, self._device_fn, self._log)
        full = bind_all(self.params, args, kwargs)
        grid = kwargs.get("grid", (1,))
        if callable(grid):
            grid = grid(dict(zip(self.arg_names, full)))
        kernel[grid3(grid)](*full)
        return kernel


def descriptor_tuple(arg):
    """The hashable form of a TensorDescriptor-like argument."""
    return ("TensorDescriptor", tuple(getattr(arg, "shape", ()) or ()), tuple(getattr(arg, "strides", ()) or ()),
            tuple(getattr(arg, "block_shape", ()) or ()), getattr(arg, "padding", None))


class Model:
    """What one built mock shares: its spec, witness, runtime module and the
    TensorDescriptor class."""

    def __init__(self, spec, witness, runtime_mod, descriptor_cls):
        self.spec = spec
        self.witness = witness
        self.runtime = runtime_mod
        self.descriptor_cls = descriptor_cls
        self.launch_log = []

    def helper(self, arg):
        """The stock ``_descriptor_cache_key`` (``helper: present``)."""
        self.witness["helper"] += 1
        return descriptor_tuple(arg) if isinstance(arg, self.descriptor_cls) else arg

    def helper_wrong(self, arg, layout):
        """``helper: wrong_signature``: two required arguments."""
        self.witness["helper"] += 1
        return arg

    def current_cache(self, entry):
        dev = self.runtime.torch_device_fn.current_device()
        return entry._cpu_cache if dev == "cpu" else entry.kernel_cache[dev]


class LibEntryBase:
    """The stock logic of the mock ``LibEntry`` (one kernel). Each build makes
    a subclass whose own ``key`` and ``run`` (with the spec's signatures) call
    ``_stock_key`` / ``_stock_run``, so an installer patches that subclass
    only."""

    _model = None  # set on each built subclass

    def __init__(self, params, name="mock_kernel"):
        m = self._model
        self.jit_function = JITFunction(params, m.witness, name, m.runtime.torch_device_fn, m.launch_log)
        self.fn = self.jit_function
        self.arg_names = self.jit_function.arg_names
        self.divisibility = m.spec["divisibility"]
        self.kernel_cache = tuple({} for _ in range(m.spec["device_count"]))
        self._cpu_cache = {}
        self._has_flagtune_tuner = bool(m.spec["flagtune_tuner"])
        self.specialize_indices = [p.num for p in params if not p.is_constexpr and not p.do_not_specialize]
        self.do_not_specialize_indices = [p.num for p in params if not p.is_constexpr and p.do_not_specialize]

    def _norm(self, a):
        return self._model.helper(a) if self._model.spec["helper"] == "present" else a

    def _stock_key(self, spec_args, dns_args, const_args):
        self._model.witness["key"] += 1
        parts = []
        for a in map(self._norm, spec_args):
            parts.append((a.dtype, a.data_ptr() % self.divisibility == 0) if hasattr(a, "data_ptr") else (type(a), a))
        for a in map(self._norm, dns_args):
            if hasattr(a, "data_ptr"):
                parts.append(a.dtype)
            elif not isinstance(a, int):
                parts.append(type(a))
            else:
                parts.append(int_class(a))
        parts.extend(self._norm(a) for a in const_args)
        return tuple(parts)

    def _split_args(self, args, kwargs):
        """(spec, dns, const) argument lists as the stock run builds them."""
        spec_l, dns_l, const_l = [], [], []
        inline = self._model.spec["helper"] != "present"  # older pins normalise descriptors inline
        for i, a in enumerate(args):
            h = descriptor_tuple(a) if inline and type(a).__name__ == "TensorDescriptor" else a
            if i in self.specialize_indices:
                spec_l.append(h)
            elif i in self.do_not_specialize_indices:
                dns_l.append(h)
            else:
                const_l.append(h)
        for p in self.jit_function.params[len(args):]:
            if p.name in kwargs:
                v = kwargs[p.name]
            elif p.default is _EMPTY:
                continue
            else:
                v = p.default
            (const_l if p.is_constexpr else dns_l if p.do_not_specialize else spec_l).append(v)
        if self._has_flagtune_tuner:
            const_l.append(("flagtune",))
        return spec_l, dns_l, const_l

    def _compile(self, args, kwargs):
        """Compile on a cache miss: the cache entry tuple."""
        m = self._model
        wrappers = m.spec["wrappers"]
        kernel = self.jit_function.run(*args, **kwargs)
        constexprs = {p.name: p.default for p in self.jit_function.params
                      if p.is_constexpr and p.default is not _EMPTY}
        tune = {"num_warps": 4} if "autotuner" in wrappers else {}
        heur = {"EVEN": True} if "heuristics" in wrappers else {}
        hooks = ((lambda nargs: m.witness.update(["hook"]), {}),) if "hook" in wrappers else ()
        constexprs.update(tune)
        constexprs.update(heur)
        return kernel, constexprs, tune, heur, hooks

    def _stock_run(self, args, kwargs):
        start = time.perf_counter()
        try:
            return self._stock_run_timed(args, kwargs)
        finally:
            STOCK_RUN_US.append((time.perf_counter() - start) * 1e6)

    def _stock_run_timed(self, args, kwargs):
        self._model.witness["run"] += 1
        delay = self._model.spec.get("run_delay_us", 0)
        if delay:  # a known host cost of the stock path (P9's calibration)
            until = time.perf_counter() + delay * 1e-6
            while time.perf_counter() < until:
                pass
        entry_key = self.key(*self._split_args(args, kwargs))
        cache = self._model.current_cache(self)
        if entry_key not in cache:
            cache[entry_key] = self._compile(args, kwargs)
            return cache[entry_key][0], cache[entry_key][1]
        kernel, constexprs, _tune, _heur, hooks = cache[entry_key]
        full = bind_all(self.jit_function.params, args, kwargs)
        grid = kwargs["grid"]
        if callable(grid):
            grid = grid({**dict(zip(self.arg_names, full)), **kwargs, **constexprs})
        for hook, extra in hooks:
            hook({**dict(zip(self.arg_names, full)), **extra})
        kernel[grid3(grid)](*full)
        return kernel, constexprs


def _key_method(signature):
    if signature == "extra_keyword":
        def key(self, spec_args, dns_args, const_args, *, device=None):
            return self._stock_key(spec_args, dns_args, const_args)
    else:
        def key(self, spec_args, dns_args, const_args):
            return self._stock_key(spec_args, dns_args, const_args)
    key.__qualname__ = "LibEntry.key"
    return key


def _run_method(signature):
    if signature == "grid_keyword":
        def run(self, *args, grid=None, warmup=False, **kwargs):
            return self._stock_run(args, dict(kwargs, grid=grid, warmup=warmup))
    else:
        def run(self, *args, **kwargs):
            return self._stock_run(args, kwargs)
    run.__qualname__ = "LibEntry.run"
    return run


def populate(module, spec, runtime_mod, descriptor_cls):
    """Fill the mock ``flag_gems.utils.libentry`` ``module`` for ``spec`` (a
    full spec): ``LibEntry``, ``WITNESS``, ``LAUNCH_LOG`` ((kernel, stream id)
    per kernel launch), ``make_entry(name="mock_kernel")``
    (a LibEntry of one kernel called ``name``), ``SPEC`` and, per
    ``spec["helper"]``, ``_descriptor_cache_key``."""
    witness = collections.Counter()
    model = Model(spec, witness, runtime_mod, descriptor_cls)
    cls = type("LibEntry", (LibEntryBase,), {
        "_model": model,
        "key": _key_method(spec["key_signature"]),
        "run": _run_method(spec["run_signature"]),
        "__module__": module.__name__,
        "__doc__": "Mock flag_gems.utils.libentry.LibEntry (one kernel).",
    })
    params = params_from_spec(spec["params"])
    module.LibEntry = cls
    module.WITNESS = witness
    module.LAUNCH_LOG = model.launch_log
    module.SPEC = spec
    module.make_entry = lambda name="mock_kernel": cls(params, name)
    if spec["helper"] == "present":
        def _descriptor_cache_key(arg):
            return model.helper(arg)
        module.__dict__["_descriptor_cache_key"] = _descriptor_cache_key
    elif spec["helper"] == "wrong_signature":
        def _descriptor_cache_key(arg, layout):
            return model.helper_wrong(arg, layout)
        module.__dict__["_descriptor_cache_key"] = _descriptor_cache_key
    return cls
