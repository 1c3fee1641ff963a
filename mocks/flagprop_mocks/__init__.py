"""Mock FlagGems modules built from a flagprop mock spec.

``build(spec)`` makes the modules an installer reaches --
``flag_gems``, ``flag_gems.utils``, ``flag_gems.utils.libentry`` (the
``LibEntry`` model of ``flagprop_mocks.libentry``),
``flag_gems.utils.pointwise_dynamic`` (a ``type_promotion`` model) and
``flag_gems.runtime`` -- and ``install(spec)`` registers them in
``sys.modules``. What a spec may say is ``flagprop_mocks.spec.SPEC_SCHEMA``,
the one schema the C++ generator also draws from.

This is flagprop's own code, a small model of the contract written from the
public facts in docs/design.md; no FlagGems code is copied.
"""

import contextlib
import importlib.machinery
import importlib.util
import sys
import types

import torch

from . import libentry as _libentry
from .spec import DEFAULT_PARAMS, SPEC_SCHEMA, SpecError, full  # noqa: F401 (public API)

MODULE_NAMES = (
    "flag_gems",
    "flag_gems.utils",
    "flag_gems.utils.libentry",
    "flag_gems.utils.pointwise_dynamic",
    "flag_gems.runtime",
)


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


def _new_module(name, cls=types.ModuleType, package=False):
    mod = cls(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    mod.__file__ = "<flagprop mock %s>" % name
    if package:
        mod.__path__ = []
    return mod


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


class _RaisingHelperModule(types.ModuleType):
    """A module whose ``_descriptor_cache_key`` lookup raises ``RuntimeError``."""

    @property
    def _descriptor_cache_key(self):
        raise RuntimeError("mock: _descriptor_cache_key lookup failed")


def type_promotion(*args, type_promotion):
    """A small model of FlagGems' elementwise type promotion: every tensor
    dtype and Python scalar counts, and INT_TO_FLOAT lifts an integral
    result. Returns a one-tuple of the result dtype."""
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


class MockStream:
    """A stream of the mock device: only an id (0 is the default stream).
    Mock kernels run at once on the CPU; what the stream model records is
    which stream each launch was issued to."""

    _next = [1]

    def __init__(self, stream_id=None):
        if stream_id is None:
            stream_id, MockStream._next[0] = MockStream._next[0], MockStream._next[0] + 1
        self.id = stream_id

    def __repr__(self):
        return "MockStream(%d)" % self.id


class _DeviceFn:
    """The mock ``flag_gems.runtime.torch_device_fn``: the current device,
    and a stream model (``Stream()``, ``current_stream()``, ``stream(s)``
    to make ``s`` current within a ``with`` block)."""

    def __init__(self, on_cpu):
        self._on_cpu = on_cpu
        self.default_stream = MockStream(0)
        self._current = [self.default_stream]

    def current_device(self):
        return "cpu" if self._on_cpu else 0

    Stream = MockStream

    def current_stream(self):
        return self._current[-1]

    @contextlib.contextmanager
    def stream(self, s):
        self._current.append(s)
        try:
            yield s
        finally:
            self._current.pop()


def _runtime_module(spec):
    runtime = _new_module("flag_gems.runtime", package=True)
    on_cpu = spec["cache"] == "cpu"
    runtime.device = types.SimpleNamespace(vendor_name=spec["vendor"], name="cpu" if on_cpu else "cuda")
    runtime.torch_device_fn = _DeviceFn(on_cpu)
    return runtime


def build(spec):
    """Build the mock modules for ``spec`` (checked against the schema,
    defaults filled in; raises ``SpecError``) and return them by name, not
    yet registered in ``sys.modules`` (see ``install``)."""
    spec = full(spec)
    gems = _new_module("flag_gems", package=True)
    utils = _new_module("flag_gems.utils", package=True)
    libentry = _new_module("flag_gems.utils.libentry",
                           _RaisingHelperModule if spec["helper"] == "raising" else types.ModuleType)
    pointwise = _new_module("flag_gems.utils.pointwise_dynamic")
    runtime = _runtime_module(spec)
    pointwise.type_promotion = type_promotion
    _libentry.populate(libentry, spec, runtime, descriptor_class())
    gems.utils, gems.runtime, gems.__version__ = utils, runtime, "0.0+flagprop.mock"
    utils.libentry, utils.pointwise_dynamic = libentry, pointwise
    return dict(zip(MODULE_NAMES, (gems, utils, libentry, pointwise, runtime)))


def install(spec):
    """Build the mock modules and register them in ``sys.modules``.

    Where Triton is not importable, a minimal ``triton`` package carrying
    ``triton.tools.tensor_descriptor.TensorDescriptor`` is registered too, as
    every real FlagGems pin has Triton beside it. Returns the
    ``flag_gems.utils.libentry`` mock. The caller's sandbox removes them
    again."""
    if descriptor_class() is MockTensorDescriptor and "triton" not in sys.modules:
        sys.modules.update(_mock_triton_modules())
    mods = build(spec)
    sys.modules.update(mods)
    return mods["flag_gems.utils.libentry"]
