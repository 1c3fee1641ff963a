"""Plain facts about tensors and about what a call raised, which the engine
acts on in the middle of a case and the verdicts judge with
(``flagprop.judging.verdicts`` imports them from here).

* Storage and bits: a tensor's whole storage (``storage_of``), whether two
  tensors share storage bytes (``overlap``), whether two tensors hold the
  same bits (``same_bits``), whether two layouts address the same elements
  (``same_layout_meta``). The CPU reference (``flagprop.engine.ops``) reads
  an op's aliasing and writes with them; P6 judges the device's with them.
* What an exception says: the device context is lost (``device_lost``),
  the device has no stock kernel for the op (``no_stock_kernel``), the
  stock path rejects a sample (``control_rejects``): an op case is a discard
  then, and its op is not run.

Nothing here imports torch at import time (``flagprop.judging.verdicts``,
and with it the report formats, import this module); the tensor functions
import it on first use.
"""


def _torch():
    import torch

    return torch


# --------------------------------------------------------------------------
# Storage and bits
# --------------------------------------------------------------------------


def bits(t):
    """``t``'s elements as the integers of their bit patterns (a contiguous
    tensor of the signed integer dtype of the same element size)."""
    torch = _torch()
    t = t.contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def same_bits(a, b):
    """Same dtype, shape and bit patterns (NaN payloads and -0.0 count)."""
    if a is None or b is None:
        return a is b
    torch = _torch()
    return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(bits(a), bits(b)))


def _storage_range(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    lo = s.data_ptr()
    return lo, lo + s.nbytes()


def overlap(a, b):
    """Whether tensors ``a`` and ``b`` share storage bytes."""
    (a0, a1), (b0, b1) = _storage_range(a), _storage_range(b)
    return a0 < a1 and b0 < b1 and a0 < b1 and b0 < a1


def same_layout_meta(a, b):
    """Whether two layouts ``[shape, strides, storage offset]`` (elements)
    address the same elements: equal shapes and, when the tensor has any
    element, the same storage offset and the same stride in every dimension
    of size > 1. A stride of a size-1 dimension, or any stride of an empty
    tensor, addresses nothing, so a difference there is not observable in
    values; PyTorch's own reference checks compare strides the same way
    (``torch._prims_common.check_significant_strides``)."""
    if list(a[0]) != list(b[0]):
        return False
    if any(n == 0 for n in a[0]):
        return True
    return a[2] == b[2] and all(sa == sb for n, sa, sb in zip(a[0], a[1], b[1]) if n > 1)


def storage_of(t):
    """A tensor's whole storage as a 1-D tensor on its device, or None when
    the storage holds no element."""
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    n = s.nbytes() // t.element_size()
    return t.as_strided((n,), (1,), 0) if n else None


# --------------------------------------------------------------------------
# What an exception says
# --------------------------------------------------------------------------

#: What a message says when the device context is gone for the process
#: (suites/op_properties.cpp's deviceLostText reads the same list).
DEVICE_LOST = ("illegal memory access", "CUDA error", "HIP error", "hipError", "AcceleratorError",
               "device-side assert", "unspecified launch failure")


def device_lost(error):
    """Whether exception text ``error`` says the device context is lost."""
    return any(k in (error or "") for k in DEVICE_LOST)


def no_stock_kernel(error):
    """Whether a control call's exception says the device has no stock
    kernel for the op (ATen's dispatcher: "Could not run 'aten::...' with
    arguments from the 'CUDA' backend"), not that it rejects the sample."""
    return "Could not run" in (error or "") and "backend" in (error or "")


def control_rejects(obs):
    """(call index, exception) of the first call the control (the stock
    device path) raised on for another reason than a missing kernel: the
    sample is invalid on the device, a discard and never a finding; or
    None (also without a control)."""
    control = obs.get("control")
    for k, rec in enumerate(control["calls"] if control else []):
        if rec["error"] and not no_stock_kernel(rec["error"]):
            return k, rec["error"]
    return None


#: The torch function and dispatch modes ``pop_modes_left`` popped since the
#: last ``take_modes_left``, by name.
_MODES_LEFT = []


_MODE_FNS = []  # (len function stack, len dispatch stack, pop function mode, pop dispatch mode), on first use


def _mode_fns():
    """torch's mode-stack functions, looked up once (the first call comes
    before any code under test loads, so that a later rebinding of them in
    ``torch._C`` does not reach flagprop)."""
    if not _MODE_FNS:
        torch = _torch()
        import torch.overrides
        import torch.utils._python_dispatch as dispatch

        zero = lambda: 0  # noqa: E731  (a torch without mode stacks)
        # torch's own pops where it has them: in torch 1.13 the last pop also
        # turns the mode machinery off (the C stack's pop alone leaves it on).
        _MODE_FNS.extend((getattr(torch._C, "_len_torch_function_stack", None) or zero,
                          getattr(torch._C, "_len_torch_dispatch_stack", None) or zero,
                          getattr(torch.overrides, "_pop_mode", None)
                          or getattr(torch._C, "_pop_torch_function_stack", None),
                          getattr(dispatch, "_pop_mode", None) or getattr(torch._C, "_pop_torch_dispatch_stack", None)))
    return _MODE_FNS


def mode_depths():
    """(torch function modes, torch dispatch modes) on their stacks now;
    (0, 0) where this torch has no mode stacks."""
    fns = _MODE_FNS or _mode_fns()
    return (fns[0](), fns[1]())


def pop_modes_left(depths):
    """Pops every mode pushed past ``depths`` (``mode_depths()`` before the
    code under test ran: a ``with`` left open in an unfinished generator,
    ``torch.set_default_device`` in torch 2.x), so that nothing after it
    (the reference, the verdicts) runs under them, and keeps their names for
    ``take_modes_left``. Returns how many it popped."""
    length_f, length_d, pop_function, pop_dispatch = _MODE_FNS or _mode_fns()
    n = 0
    while length_f() > depths[0]:
        _MODES_LEFT.append("function mode " + type(pop_function()).__name__)
        n += 1
    while length_d() > depths[1]:
        _MODES_LEFT.append("dispatch mode " + type(pop_dispatch()).__name__)
        n += 1
    return n


def take_modes_left():
    """The names ``pop_modes_left`` kept since the last call; cleared."""
    out = list(_MODES_LEFT)
    del _MODES_LEFT[:]
    return out
