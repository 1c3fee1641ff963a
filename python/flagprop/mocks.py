"""Mock FlagGems modules built from a flagprop mock spec.

This is flagprop's own small model of the FlagGems launch contract that the
Torch-FL installers patch (see DESIGN.md, "The problem it exists for"). It is
written from the public facts only: a ``LibEntry`` class whose ``run`` sorts the
launch arguments into specialised / do-not-specialise / constexpr lists, asks
``key`` for a cache key, keeps per-device caches (a ``kernel_cache`` tuple
indexed by device, or ``_cpu_cache`` when ``current_device()`` answers
``"cpu"``) of ``(kernel, constexprs, tune_constexprs, heur_constexprs,
launch_hooks)`` tuples, and launches ``kernel[grid](*args)``.

Facts used (no code copied): the key classifies do-not-specialise ints as
``"i32"`` for [-2^31, 2^31 - 1], ``"u64"`` for [2^63, 2^64 - 1] and ``"i64"``
otherwise, and a specialised tensor as ``(dtype, data_ptr % divisibility == 0)``
with divisibility 16 -- as FlagGems' ``flag_gems/utils/libentry.py``
(``LibEntry.key``, FlagGems commit ed2508bcb) and Torch-FL's fast key state.

The "kernel" computes on the CPU so that the stock and the fast launch path can
be compared, and every call to ``run``, ``key``, the descriptor helper, a
compile and a kernel launch is counted in ``WITNESS`` (a ``collections.Counter``
on the ``flag_gems.utils.libentry`` module).

Spec keys (all optional; defaults in ``DEFAULT_SPEC``):

* ``helper``: ``present`` | ``absent`` | ``raising`` (looking the attribute up
  raises ``RuntimeError``) | ``wrong_signature`` (takes two required arguments).
* ``key_signature``: ``standard`` ``(self, spec_args, dns_args, const_args)`` |
  ``extra_keyword`` (adds ``*, device=None``).
* ``run_signature``: ``standard`` ``(self, *args, **kwargs)`` | ``grid_keyword``
  ``(self, *args, grid=None, warmup=False, **kwargs)``.
* ``cache``: ``tuple`` (``current_device()`` is an int) | ``cpu``.
* ``flagtune_tuner``: bool, ``divisibility``: int, ``vendor``: str,
  ``device_count``: int.
* ``params``: list of ``{"name", "kind": spec|dns|constexpr, "default"?}``.
* ``wrappers``: list of ``autotuner`` | ``heuristics`` | ``hook`` — what the
  cached entry records as tuner constexprs, heuristic constexprs, launch hooks.
"""

import collections
import importlib.machinery
import importlib.util
import inspect
import sys
import types

import torch

DEFAULT_PARAMS = [
    {"name": "in_ptr", "kind": "spec"},
    {"name": "out_ptr", "kind": "spec"},
    {"name": "n_elements", "kind": "spec"},
    {"name": "scale", "kind": "dns"},
    {"name": "BLOCK", "kind": "constexpr", "default": 128},
]

DEFAULT_SPEC = {
    "helper": "present",
    "key_signature": "standard",
    "run_signature": "standard",
    "cache": "tuple",
    "flagtune_tuner": False,
    "divisibility": 16,
    "vendor": "nvidia",
    "device_count": 1,
    "params": DEFAULT_PARAMS,
    "wrappers": [],
}

MODULE_NAMES = (
    "flag_gems",
    "flag_gems.utils",
    "flag_gems.utils.libentry",
    "flag_gems.utils.pointwise_dynamic",
    "flag_gems.runtime",
)

_EMPTY = inspect.Parameter.empty


def _full(spec):
    out = dict(DEFAULT_SPEC)
    out.update(spec or {})
    return out


class _Param:
    """One kernel parameter as ``LibEntry`` sees it (``num``, ``name``,
    ``is_constexpr``, ``do_not_specialize``, ``default``)."""

    def __init__(self, num, name, kind, default=_EMPTY):
        self.num = num
        self.name = name
        self.is_constexpr = kind == "constexpr"
        self.do_not_specialize = kind == "dns"
        self.default = default


class _JITFunction:
    """Stand-in for ``triton.runtime.JITFunction``: parameters and signature."""

    def __init__(self, params, witness, entry_holder):
        self.params = params
        self.arg_names = [p.name for p in params]
        self._signature = None
        self._witness = witness

    @property
    def signature(self):
        """``inspect.Signature`` of the kernel (built on first use)."""
        if self._signature is None:
            self._signature = inspect.Signature(
                [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in self.params]
            )
        return self._signature

    def run(self, *args, **kwargs):
        """Compile (counted) and launch once, as a JIT's first call does."""
        self._witness["compile"] += 1
        kernel = MockKernel(self, self._witness)
        full = _bind_all(self.params, args, kwargs)
        grid = kwargs.get("grid", (1,))
        if callable(grid):
            grid = grid(dict(zip(self.arg_names, full)))
        kernel[(tuple(grid) + (1, 1))[0:3]](*full)
        return kernel


def _bind_all(params, args, kwargs):
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
        return ("int", "i32" if -(2**31) <= a <= 2**31 - 1 else "u64" if 2**63 <= a <= 2**64 - 1 else "i64")
    return (type(a).__name__,)


class MockKernel:
    """A compiled kernel: ``kernel[grid](*args)`` computes on the CPU.

    The result is written into the last tensor argument (the output): every
    element becomes ``sum(t.sum() for input tensors) + sum((i+1)*v for numeric
    scalar args v at position i)``, so an argument that is dropped, reordered or
    replaced changes the output. Like a real specialised kernel it is only
    right for the argument types it was compiled for: launched with others
    (a cache lookup that ignored the key), it writes NaN and counts a
    ``mismatch`` witness.
    """

    def __init__(self, jit, witness):
        self._jit = jit
        self._witness = witness
        self.launches = []
        self.signature = None  # set by the first launch (the compile launch)

    def __getitem__(self, grid):
        def launch(*args):
            self._witness["launch"] += 1
            self.launches.append((tuple(grid), len(args)))
            sig = tuple(_arg_sig(a) for a in args)
            if self.signature is None:
                self.signature = sig
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            if not tensors:
                return None
            if sig != self.signature:
                self._witness["mismatch"] += 1
                if tensors[-1].numel() and tensors[-1].is_floating_point():
                    tensors[-1].fill_(float("nan"))
                elif tensors[-1].numel():
                    tensors[-1].fill_(-1)
                return None
            acc = 0.0
            for t in tensors[:-1]:
                acc += float(t.double().sum()) if t.numel() else 0.0
            for i, a in enumerate(args):
                if isinstance(a, bool) or not isinstance(a, (int, float)):
                    continue
                acc += (i + 1) * float(a)
            out = tensors[-1]
            if out.numel():
                out.fill_(acc)
            return None

        return launch


class MockTensorDescriptor:
    """Stand-in for ``triton.tools.tensor_descriptor.TensorDescriptor`` on a
    machine without Triton (``base``, ``shape``, ``strides``, ``block_shape``,
    ``padding``)."""

    def __init__(self, base, shape, strides, block_shape, padding="zero"):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = list(block_shape)
        self.padding = padding


MockTensorDescriptor.__name__ = "TensorDescriptor"
MockTensorDescriptor.__qualname__ = "TensorDescriptor"


_DESCRIPTOR_CLASS = []


def descriptor_class():
    """Triton's ``TensorDescriptor`` class where Triton is importable, else
    flagprop's stand-in (which ``install`` registers as
    ``triton.tools.tensor_descriptor``). Looked up once per process."""
    if not _DESCRIPTOR_CLASS:
        _DESCRIPTOR_CLASS.append(_find_descriptor_class())
    return _DESCRIPTOR_CLASS[0]


def _find_descriptor_class():
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and not getattr(sys.modules.get("triton"), "_flagprop_mock", False):
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor

            return TensorDescriptor
        except Exception:
            pass
    return MockTensorDescriptor


def _mock_triton_modules():
    triton = _new_module("triton", package=True)
    triton._flagprop_mock = True
    triton.backends = types.SimpleNamespace()
    triton.__version__ = "0+flagprop.mock"
    tools = _new_module("triton.tools", package=True)
    td = _new_module("triton.tools.tensor_descriptor")
    td.TensorDescriptor = MockTensorDescriptor
    triton.tools = tools
    tools.tensor_descriptor = td
    return {"triton": triton, "triton.tools": tools, "triton.tools.tensor_descriptor": td}


def _build_libentry(spec, libentry_mod, runtime_mod):
    witness = collections.Counter()
    helper = spec["helper"]
    wrappers = list(spec["wrappers"])
    desc_cls = descriptor_class()

    def descriptor_like(arg):
        return type(arg).__name__ == "TensorDescriptor"

    def is_descriptor(arg):
        return isinstance(arg, desc_cls)

    def descriptor_tuple(arg):
        return (
            "TensorDescriptor",
            tuple(getattr(arg, "shape", ()) or ()),
            tuple(getattr(arg, "strides", ()) or ()),
            tuple(getattr(arg, "block_shape", ()) or ()),
            getattr(arg, "padding", None),
        )

    def helper_present(arg):
        witness["helper"] += 1
        return descriptor_tuple(arg) if is_descriptor(arg) else arg

    def helper_wrong(arg, layout):
        witness["helper"] += 1
        return arg

    class LibEntry:
        """Mock ``flag_gems.utils.libentry.LibEntry`` (one kernel)."""

        def __init__(self, params):
            self.jit_function = _JITFunction(params, witness, self)
            self.fn = self.jit_function
            self.arg_names = self.jit_function.arg_names
            self.divisibility = spec["divisibility"]
            self.kernel_cache = tuple({} for _ in range(spec["device_count"]))
            self._cpu_cache = {}
            self._has_flagtune_tuner = bool(spec["flagtune_tuner"])
            self.specialize_indices = [
                p.num for p in params if not p.is_constexpr and not p.do_not_specialize
            ]
            self.do_not_specialize_indices = [
                p.num for p in params if not p.is_constexpr and p.do_not_specialize
            ]

        def _stock_key(self, spec_args, dns_args, const_args):
            witness["key"] += 1
            use_helper = helper == "present"

            def norm(a):
                return helper_present(a) if use_helper else a

            parts = []
            for a in spec_args:
                a = norm(a)
                if hasattr(a, "data_ptr"):
                    parts.append((a.dtype, a.data_ptr() % self.divisibility == 0))
                else:
                    parts.append((type(a), a))
            for a in dns_args:
                a = norm(a)
                if hasattr(a, "data_ptr"):
                    parts.append(a.dtype)
                elif not isinstance(a, int):
                    parts.append(type(a))
                elif -(2**31) <= a <= 2**31 - 1:
                    parts.append("i32")
                elif 2**63 <= a <= 2**64 - 1:
                    parts.append("u64")
                else:
                    parts.append("i64")
            parts.extend(norm(a) for a in const_args)
            return tuple(parts)

        def _stock_run(self, args, kwargs):
            witness["run"] += 1
            grid = kwargs["grid"]
            params = self.jit_function.params
            spec_l, dns_l, const_l = [], [], []
            for i, a in enumerate(args):
                h = a
                if helper != "present" and descriptor_like(a):
                    h = descriptor_tuple(a)  # older pins normalise inline
                if i in self.specialize_indices:
                    spec_l.append(h)
                elif i in self.do_not_specialize_indices:
                    dns_l.append(h)
                else:
                    const_l.append(h)
            for p in params[len(args):]:
                if p.name in kwargs:
                    v = kwargs[p.name]
                elif p.default is _EMPTY:
                    continue
                else:
                    v = p.default
                (const_l if p.is_constexpr else dns_l if p.do_not_specialize else spec_l).append(v)
            if self._has_flagtune_tuner:
                const_l.append(("flagtune",))
            entry_key = self.key(spec_l, dns_l, const_l)
            device = runtime_mod.torch_device_fn.current_device()
            cache = self._cpu_cache if device == "cpu" else self.kernel_cache[device]
            if entry_key not in cache:
                kernel = self.jit_function.run(*args, **kwargs)
                constexprs = {
                    p.name: p.default
                    for p in params
                    if p.is_constexpr and p.default is not _EMPTY
                }
                tune = {"num_warps": 4} if "autotuner" in wrappers else {}
                heur = {"EVEN": True} if "heuristics" in wrappers else {}
                hooks = ((lambda nargs: witness.update(["hook"]), {}),) if "hook" in wrappers else ()
                constexprs.update(tune)
                constexprs.update(heur)
                cache[entry_key] = (kernel, constexprs, tune, heur, hooks)
                return kernel, constexprs
            kernel, constexprs, tune, heur, hooks = cache[entry_key]
            full = _bind_all(params, args, kwargs)
            if callable(grid):
                grid = grid({**dict(zip(self.arg_names, full)), **kwargs, **constexprs})
            for hook, extra in hooks:
                hook({**dict(zip(self.arg_names, full)), **extra})
            kernel[(tuple(grid) + (1, 1))[0:3]](*full)
            return kernel, constexprs

    if spec["key_signature"] == "extra_keyword":

        def key(self, spec_args, dns_args, const_args, *, device=None):
            return self._stock_key(spec_args, dns_args, const_args)

    else:

        def key(self, spec_args, dns_args, const_args):
            return self._stock_key(spec_args, dns_args, const_args)

    if spec["run_signature"] == "grid_keyword":

        def run(self, *args, grid=None, warmup=False, **kwargs):
            return self._stock_run(args, dict(kwargs, grid=grid, warmup=warmup))

    else:

        def run(self, *args, **kwargs):
            return self._stock_run(args, kwargs)

    key.__qualname__ = "LibEntry.key"
    run.__qualname__ = "LibEntry.run"
    LibEntry.key = key
    LibEntry.run = run
    LibEntry.__module__ = libentry_mod.__name__
    libentry_mod.LibEntry = LibEntry
    libentry_mod.WITNESS = witness
    if helper == "present":
        libentry_mod.__dict__["_descriptor_cache_key"] = helper_present
    elif helper == "wrong_signature":
        libentry_mod.__dict__["_descriptor_cache_key"] = helper_wrong
    return LibEntry


class _RaisingHelperModule(types.ModuleType):
    """A module whose ``_descriptor_cache_key`` lookup raises ``RuntimeError``."""

    @property
    def _descriptor_cache_key(self):
        raise RuntimeError("mock: _descriptor_cache_key lookup failed")


def _new_module(name, cls=types.ModuleType, package=False):
    mod = cls(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    mod.__file__ = "<flagprop mock %s>" % name
    if package:
        mod.__path__ = []
    return mod


def build(spec):
    """Build the mock modules for ``spec`` and return them by name (not yet
    registered in ``sys.modules``; see ``install``)."""
    spec = _full(spec)
    gems = _new_module("flag_gems", package=True)
    utils = _new_module("flag_gems.utils", package=True)
    cls = _RaisingHelperModule if spec["helper"] == "raising" else types.ModuleType
    libentry = _new_module("flag_gems.utils.libentry", cls)
    pointwise = _new_module("flag_gems.utils.pointwise_dynamic")
    runtime = _new_module("flag_gems.runtime", package=True)

    runtime.device = types.SimpleNamespace(
        vendor_name=spec["vendor"], name="cpu" if spec["cache"] == "cpu" else "cuda"
    )

    class _DeviceFn:
        def current_device(self):
            return "cpu" if spec["cache"] == "cpu" else 0

    runtime.torch_device_fn = _DeviceFn()

    def type_promotion(*args, type_promotion):
        # A small model of elementwise type promotion: every tensor dtype and
        # python scalar counts, and INT_TO_FLOAT lifts an integral result.
        result = None
        for a in args:
            if isinstance(a, torch.Tensor):
                d = a.dtype
            elif isinstance(a, bool):
                d = torch.bool
            elif isinstance(a, int):
                d = torch.int64
            elif isinstance(a, float):
                d = torch.get_default_dtype()
            else:
                continue
            result = d if result is None else torch.promote_types(result, d)
        if result is None:
            result = torch.get_default_dtype()
        if type_promotion == "INT_TO_FLOAT" and not result.is_floating_point:
            result = torch.get_default_dtype()
        return (result,)

    pointwise.type_promotion = type_promotion
    entry_cls = _build_libentry(spec, libentry, runtime)
    gems.utils = utils
    gems.runtime = runtime
    gems.__version__ = "0.0+flagprop.mock"
    utils.libentry = libentry
    utils.pointwise_dynamic = pointwise
    params = [
        _Param(i, p["name"], p["kind"], p.get("default", _EMPTY))
        for i, p in enumerate(spec["params"])
    ]
    libentry.make_entry = lambda: entry_cls(params)
    libentry.SPEC = spec
    return {
        "flag_gems": gems,
        "flag_gems.utils": utils,
        "flag_gems.utils.libentry": libentry,
        "flag_gems.utils.pointwise_dynamic": pointwise,
        "flag_gems.runtime": runtime,
    }


def install(spec):
    """Build the mock modules and register them in ``sys.modules``.

    Where Triton is not importable, a minimal ``triton`` package carrying
    ``triton.tools.tensor_descriptor.TensorDescriptor`` is registered too, as
    every real FlagGems pin has Triton beside it. Returns the
    ``flag_gems.utils.libentry`` mock. The caller's sandbox is responsible for
    removing them again.
    """
    if descriptor_class() is MockTensorDescriptor and "triton" not in sys.modules:
        sys.modules.update(_mock_triton_modules())
    mods = build(spec)
    sys.modules.update(mods)
    return mods["flag_gems.utils.libentry"]
