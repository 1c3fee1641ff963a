"""Valid sample inputs for ATen overloads, recorded from PyTorch's OpInfo.

The schema says an argument's type, not what a valid value is: it cannot say
that ``mm`` takes two matrices whose inner sizes agree or that ``nll_loss``
takes class indices below the number of classes. PyTorch's OpInfo database
(``torch.testing._internal.common_methods_invocations.op_db``, each entry's
``sample_inputs(device, dtype, requires_grad)``) holds valid samples for
most public ops; out-of-tree backends test against it. This module turns it
into a *bank*: per ATen overload, the calls that running every float32 sample
forward (and backward, where the op supports autograd) on the CPU makes,
recorded at the dispatcher (``TorchDispatchMode``), so composite ops reach
the overloads a backend registers (``linear`` -> ``addmm``, ``nll_loss`` ->
``nll_loss_forward`` and ``nll_loss_backward``).

A bank sample is ``{"tensors": [...], "args": [...], "kwargs": {...}}`` with
``{"tensor": i}`` placeholders as in ``flagprop.engine.ops``; each tensor is
``{"shape": [...], "dtype": D}`` where ``D`` is ``"run"`` for a tensor of the
sample's own dtype (float32: flagprop runs it in the run's dtype and draws
its values) or the recorded dtype (an int64 index, a bool mask), which
keeps its recorded values in ``"data"`` (flat, row-major). A run-dtype tensor
carries ``"data"`` too where the op rejected the same call with fresh
normal values (a Cholesky factor's positive-definite input): flagprop then
takes those values (``"given"``) instead of drawing them. Samples are sorted
by their total elements, smallest first, so that shrinking the sample index
shrinks the input. The C++ sampler (catalog/opinfo_sampler.cpp) lays every
tensor out its own way (permuted, sliced, storage offset).

The bank is built once per torch version and source of this module, in a
fresh interpreter of the target's Python (``python3 -m flagprop.engine.opinfo
--write PATH``; importing the test database changes global state such as
``torch.backends`` flags, which the process under test must not see), and
kept at ``$FLAGPROP_OPINFO_BANK`` or under ``$XDG_CACHE_HOME/flagprop``
(default ``~/.cache/flagprop``; where that folder cannot be written, under
the temporary directory: ``writable_bank_path``). Building takes about 35
to 60 s on one core (LibTorch 1.13, 602 entries), in forked children on
every core the process may use; docs/opinfo.md says more.
"""

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
import warnings

FORMAT = 1
MAX_PER_OVERLOAD = 24     # samples kept per overload
MAX_PER_OPINFO = 16       # samples taken from one OpInfo entry
MAX_ELEMENTS = 1 << 16    # elements of one recorded tensor
MAX_DATA = 4096           # elements of one tensor whose values are kept
BUILD_TIMEOUT_S = 600
ENTRIES_PER_CHILD = 40    # OpInfo entries run in one forked child

_LOADED = {}


class _Unencodable(Exception):
    """A value a bank sample cannot hold (a Generator, a complex scalar, a
    non-finite float, a sparse or complex tensor)."""


def _stub_expecttest():
    """PyTorch's test utilities import ``expecttest``, which only their own
    expect-file tests use; where it is not installed (Debian packages no
    module for it), a stub with the two names they read stands in."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import unittest
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        stub.ACCEPT = False
        sys.modules["expecttest"] = stub


def overload_name(func):
    """``torch.ops.aten.mm.default`` -> ``mm``; ``add.Tensor`` -> ``add.Tensor``;
    None for an op outside the ``aten`` namespace."""
    schema = func._schema
    ns, _, name = schema.name.partition("::")
    if ns != "aten":
        return None
    return name + ("." + schema.overload_name if schema.overload_name else "")


def _encode(value, tensors, torch):
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1}
    if isinstance(value, (list, tuple, torch.Size)):
        return [_encode(v, tensors, torch) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Unencodable("non-finite float")
        return value
    if isinstance(value, torch.dtype):
        return {"$dtype": str(value).replace("torch.", "")}
    if isinstance(value, torch.device):
        return {"$device": True}
    if isinstance(value, torch.memory_format):
        return {"$memory_format": str(value).replace("torch.", "")}
    if isinstance(value, torch.layout):
        return {"$layout": str(value).replace("torch.", "")}
    raise _Unencodable(type(value).__name__)


def _data(t):
    if t.numel() > MAX_DATA:
        raise _Unencodable("too many elements to keep")
    values = t.detach().reshape(-1).tolist()
    if t.dtype.is_floating_point and not all(math.isfinite(v) for v in values):
        raise _Unencodable("non-finite data")
    return values


def _encode_tensor(t, run_dtype, torch):
    if t.layout != torch.strided or t.is_complex() or t.is_quantized or t.numel() > MAX_ELEMENTS:
        raise _Unencodable("tensor kind")
    if t.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8,
                       torch.int16, torch.int32, torch.int64, torch.bool):
        raise _Unencodable("dtype")
    out = {"shape": list(t.shape)}
    if t.dtype == run_dtype:
        out["dtype"] = "run"
    else:
        out["dtype"] = str(t.dtype).replace("torch.", "")
        out["data"] = _data(t)
    return out


def _size(sample):
    total = 0
    for t in sample["tensors"]:
        n = 1
        for s in t["shape"]:
            n *= s
        total += n
    return total


def _structure(sample):
    """A sample without its values: two samples that differ only in values
    are one."""
    return json.dumps([[t["shape"], t["dtype"]] for t in sample["tensors"]] + [sample["args"], sample["kwargs"]],
                      sort_keys=True)


def _fresh_values(torch, tensors, run_dtype, gen):
    out = []
    for t in tensors:
        if t.dtype == run_dtype and run_dtype.is_floating_point:
            out.append(torch.randn(t.shape, generator=gen, dtype=run_dtype))
        elif t.dtype == run_dtype:  # an integer or bool run: small values of either sign
            low = 0 if run_dtype == torch.bool else -8
            out.append(torch.randint(low, 2 if run_dtype == torch.bool else 9, t.shape, generator=gen).to(run_dtype))
        else:
            out.append(t.detach().clone())
    return out


def _rebuild(torch, value, tensors):
    if isinstance(value, dict) and len(value) == 1 and "tensor" in value:
        return tensors[value["tensor"]]
    if isinstance(value, list):
        return [_rebuild(torch, v, tensors) for v in value]
    return value


def _needs_given_values(torch, func, sample, tensors, run_dtype):
    """Whether ``func`` rejects ``sample`` with fresh normal values in its
    run-dtype tensors (their recorded values are then kept)."""
    if not any(t["dtype"] == "run" for t in sample["tensors"]):
        return False
    gen = torch.Generator().manual_seed(0)
    fresh = _fresh_values(torch, tensors, run_dtype, gen)
    args = _rebuild(torch, sample["args"], fresh)
    kwargs = {k: _rebuild(torch, v, fresh) for k, v in sample["kwargs"].items()}
    try:
        func(*args, **kwargs)
    except Exception:
        return True
    return False


class _Bank:
    """The samples seen so far, per overload, deduplicated by structure."""

    def __init__(self, torch, run_dtype):
        self.torch = torch
        self.run_dtype = run_dtype
        self.ops = {}
        self.seen = set()

    def record(self, func, args, kwargs, verified=True):
        """Keeps the call ``func(*args, **kwargs)`` (made with these values,
        which CPU ATen accepted) unless its overload has enough samples or
        one of the same structure, or a value cannot be encoded."""
        name = overload_name(func)
        if not verified:
            return
        if name is None or len(self.ops.get(name, ())) >= 4 * MAX_PER_OVERLOAD:
            return
        torch = self.torch
        tensors = []
        try:
            sample = {"args": _encode(list(args), tensors, torch),
                      "kwargs": {k: _encode(v, tensors, torch) for k, v in kwargs.items()}}
            sample["tensors"] = [_encode_tensor(t, self.run_dtype, torch) for t in tensors]
        except _Unencodable:
            return
        key = name + _structure(sample)
        if key in self.seen:
            return
        self.seen.add(key)
        try:
            # An out= tensor's recorded values are uninitialized memory (other
            # on every build, and overwritten by the op): never kept, zeros instead.
            outs = _out_indices(func, sample)
            if _needs_given_values(torch, func, sample, tensors, self.run_dtype):
                for i, (t, enc) in enumerate(zip(tensors, sample["tensors"])):
                    if enc["dtype"] == "run" and i not in outs:
                        enc["data"] = _data(t)
        except _Unencodable:
            return
        for i in outs:
            enc = sample["tensors"][i]
            if "data" in enc:
                enc["data"] = [False if enc["dtype"] == "bool" else 0] * len(enc["data"])
        self.ops.setdefault(name, []).append(sample)
        self._try_inplace(func, sample, tensors)

    def _try_inplace(self, func, sample, tensors):
        """Records the same call of ``func``'s in-place variant (``addmm`` ->
        ``addmm_``) where it takes the same arguments and CPU ATen accepts
        it on copies of the tensors (self must hold the result: no
        broadcast self)."""
        schema = func._schema
        base, overload = schema.name.partition("::")[2], schema.overload_name
        if base.endswith("_") or base.startswith("_"):
            return
        packet = getattr(self.torch.ops.aten, base + "_", None)
        inplace = getattr(packet, overload or "default", None) if packet is not None else None
        if inplace is None or [a.name for a in inplace._schema.arguments] != [a.name for a in schema.arguments]:
            return
        copies = [t.detach().clone() for t in tensors]
        args = _rebuild(self.torch, sample["args"], copies)
        kwargs = {k: _rebuild(self.torch, v, copies) for k, v in sample["kwargs"].items()}
        try:
            with self.torch.no_grad():
                self.record(inplace, args, kwargs, verified=inplace(*args, **kwargs) is not None)
        except Exception:
            return

    def merge(self, ops):
        """Adds another bank's {overload: [sample, ...]}, without samples of
        a structure already held."""
        for name, samples in ops.items():
            for sample in samples:
                key = name + _structure(sample)
                if key in self.seen or len(self.ops.get(name, ())) >= 4 * MAX_PER_OVERLOAD:
                    continue
                self.seen.add(key)
                self.ops.setdefault(name, []).append(sample)

    def result(self):
        out = {}
        for name, samples in sorted(self.ops.items()):
            samples = sorted(samples, key=_size)
            if len(samples) > MAX_PER_OVERLOAD:  # evenly spread, the smallest and the largest kept
                step = (len(samples) - 1) / (MAX_PER_OVERLOAD - 1)
                samples = [samples[round(i * step)] for i in range(MAX_PER_OVERLOAD)]
            out[name] = samples
        return out


def _tensors_of(value, torch):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_of(v, torch)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_of(v, torch)]
    return []


def build():
    """Runs every OpInfo entry's float32 CPU samples (forward, then backward
    where the entry supports autograd) under a recording dispatch mode, and
    calls the ATen overloads the entry names directly with them, and
    returns the bank: {"format", "torch", "source", "opinfos", "crashed",
    "seconds", "ops": {overload: [sample, ...]}}. Each entry runs in a
    forked child (``ENTRIES_PER_CHILD`` at a time, then one at a time where
    the child died; ``build_workers()`` children at once), so that an entry
    on which CPU ATen crashes costs only its own samples (``crashed`` names
    it). Must run in a process of its own (see the module's docstring)."""
    _stub_expecttest()
    t0 = time.time()
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    torch.set_num_threads(1)  # no OpenMP pool in the parent: forked children stay safe
    bank = _Bank(torch, torch.float32)
    crashed = []
    warnings.simplefilter("ignore")
    infos = []  # (entry, the dtype its samples are drawn in)
    for info in op_db:
        try:
            supported = info.supported_dtypes("cpu")
        except Exception:
            continue
        for dtype in _sample_dtypes(torch):
            if dtype in supported:
                infos.append((info, dtype))
                break
    used = len(infos)
    # A child per batch, up to ``build_workers()`` at once; a batch whose
    # child died again one child per entry. Merged in batch order, so the
    # bank is the same whatever the number of workers: each child starts
    # from the empty bank, and ``merge`` drops what an earlier batch holds.
    batches = [infos[at:at + ENTRIES_PER_CHILD] for at in range(0, len(infos), ENTRIES_PER_CHILD)]
    workers = build_workers()
    got = _in_children([(lambda b=b: [_entry_samples(torch, i, bank) for i in b]) for b in batches], workers)
    retry = [info for b, g in zip(batches, got) if g is None for info in b]
    alone = iter(_in_children([(lambda i=i: [_entry_samples(torch, i, bank)]) for i in retry], workers))
    for b, g in zip(batches, got):
        for ops in g if g is not None else []:
            bank.merge(ops)
        if g is None:
            for info in b:
                one = next(alone)
                if one is None:
                    crashed.append(info[0].name)
                for ops in one or []:
                    bank.merge(ops)
    extra = _in_children([lambda: _extra_samples(torch, bank)], 1)[0]
    if extra is None:
        crashed.append("flagprop.engine.extra_samples")
    bank.merge(extra or {})
    return {"format": FORMAT, "torch": torch.__version__, "source": _source_hash(), "opinfos": used,
            "crashed": crashed, "seconds": round(time.time() - t0, 1), "ops": bank.result()}


def _seed_for(torch, info):
    """Seeds every generator OpInfo's samplers draw from (Python's
    ``random``, torch's, NumPy's where loaded) from the entry's name and
    variant, so that its samples are the same whatever ran before it in
    the child: the bank is then the same for any number of workers and on
    every build."""
    import random

    seed = int(hashlib.sha256(("%s/%s" % (info.name, getattr(info, "variant_test_name", ""))).encode())
               .hexdigest()[:8], 16)
    random.seed(seed)
    torch.manual_seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)


def _recorder(bank):
    """A TorchDispatchMode class that records every ATen call into ``bank``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            bank.record(func, args, kwargs)
            return func(*args, **kwargs)

    return Recorder


def _entry_samples(torch, entry, bank):
    """One OpInfo entry's recorded calls that ``bank`` does not hold yet,
    drawn in the entry's dtype (``entry`` is (info, dtype)): {overload:
    [sample, ...]}. Adds them to ``bank`` (in a forked child: its copy of
    the parent's, so the parent's samples need not be recorded again)."""
    info, dtype = entry
    before = {name: len(samples) for name, samples in bank.ops.items()}
    Recorder = _recorder(bank)
    bank.run_dtype = dtype
    _seed_for(torch, info)
    try:
        grad = bool(getattr(info, "supports_autograd", False)) and dtype.is_floating_point
        samples = info.sample_inputs("cpu", dtype, requires_grad=grad)
        direct = _aten_overloads(torch, info)
        for k, s in enumerate(samples):
            if k >= MAX_PER_OPINFO:
                break
            _run_sample(torch, Recorder, info, s, grad)
            _call_directly(torch, bank, direct, s)
    except Exception:
        pass
    bank.run_dtype = torch.float32
    return {name: samples[before.get(name, 0):] for name, samples in bank.ops.items()
            if len(samples) > before.get(name, 0)}


def _sample_dtypes(torch):
    """The dtype an OpInfo entry's samples are drawn in: float32 where the
    entry takes it, else the first of int64 and bool it takes (``bincount``,
    the bitwise ops), so that integer-only ops get samples too; an entry
    taking none of them is not used."""
    return (torch.float32, torch.int64, torch.bool)


def _extra_samples(torch, bank):
    """flagprop's own samples (``flagprop.engine.extra_samples``) that ``bank``
    does not hold yet: {overload: [sample, ...]}."""
    from . import extra_samples

    before = {name: len(samples) for name, samples in bank.ops.items()}
    torch.manual_seed(0)
    extra_samples.record_all(torch, bank, _recorder(bank))
    return {name: samples[before.get(name, 0):] for name, samples in bank.ops.items()
            if len(samples) > before.get(name, 0)}


def build_workers():
    """How many forked children build the bank at once: the cores this
    process may run on ($FLAGPROP_OPINFO_WORKERS, a number from 1, says
    otherwise)."""
    wanted = os.environ.get("FLAGPROP_OPINFO_WORKERS", "")
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _in_children(fns, workers):
    """Each ``fn()``'s JSON-able result, computed in a forked child of its
    own, at most ``workers`` children at a time; a list in the order of
    ``fns``, with None where the child died (a signal) or returned nothing."""
    import selectors

    results = [None] * len(fns)
    running = {}  # read end -> (index, pid, chunks)
    pending = iter(enumerate(fns))
    sel = selectors.DefaultSelector()

    def start():
        for k, fn in pending:
            read, write = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                os.close(read)
                os.close(write)
                raise
            if pid == 0:
                os.close(read)
                code = 0
                try:
                    with os.fdopen(write, "w") as f:
                        json.dump(fn(), f, separators=(",", ":"))
                except BaseException:
                    code = 1
                os._exit(code)
            os.close(write)
            running[read] = (k, pid, [])
            sel.register(read, selectors.EVENT_READ)
            return True
        return False

    try:
        while len(running) < workers and start():
            pass
        while running:
            for key, _ in sel.select():
                fd = key.fd
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd][2].append(chunk)
                    continue
                sel.unregister(fd)
                os.close(fd)
                k, pid, chunks = running.pop(fd)
                _, status = os.waitpid(pid, 0)
                text = b"".join(chunks)
                if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and text:
                    results[k] = json.loads(text)
                start()
    finally:  # an error here (a fork refused): no child is left running or unreaped
        for fd, (_k, pid, _chunks) in running.items():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
            os.close(fd)
        sel.close()
    return results


def _aten_overloads(torch, info):
    """The overloads of the ATen op an OpInfo entry names (``aten_name``:
    ``conv2d`` for ``nn.functional.conv2d``). Composite ops
    (CompositeImplicitAutograd: ``conv2d``, ``linalg_det``, ``quantile``)
    are decomposed before a dispatch mode sees them, so their own calls are
    recorded by calling these directly with the sample's arguments."""
    packet = getattr(torch.ops.aten, getattr(info, "aten_name", "") or "", None)
    if packet is None or not hasattr(packet, "overloads"):
        return []
    out = []
    for o in packet.overloads():
        op = getattr(packet, o)
        args = op._schema.arguments
        takes_tensor = args and str(args[0].type) in ("Tensor", "Tensor[]", "Optional[Tensor]")
        returns_tensor = any("Tensor" in str(r.type) for r in op._schema.returns)
        if takes_tensor and returns_tensor and not any(_is_out_argument(a) for a in args):
            out.append(op)
    return out


def _out_indices(func, sample):
    """The indices into ``sample["tensors"]`` of the out= tensors of the
    call (a single tensor or a list of them)."""
    out = set()
    for a in func._schema.arguments:
        if _is_out_argument(a):
            ref = sample["kwargs"].get(a.name)
            for r in ref if isinstance(ref, list) else [ref]:
                if isinstance(r, dict) and isinstance(r.get("tensor"), int):
                    out.add(r["tensor"])
    return out


def _is_out_argument(a):
    info = getattr(a, "alias_info", None)
    return bool(a.kwarg_only and info is not None and info.is_write)


def _call_directly(torch, bank, overloads, s):
    """Records ``s`` as a call of each of ``overloads`` that CPU ATen
    accepts with the sample's arguments as they are."""
    for op in overloads:
        args = [s.input] + list(s.args)
        try:
            copies = {}
            args = [_detached(torch, a, copies) for a in args]
            kwargs = {k: _detached(torch, v, copies) for k, v in s.kwargs.items()}
            with torch.no_grad():
                op(*args, **kwargs)
        except Exception:
            continue
        bank.record(op, args, kwargs)


def _detached(torch, value, copies):
    if isinstance(value, torch.Tensor):
        return copies.setdefault(id(value), value.detach().clone())
    if isinstance(value, (list, tuple)):
        return type(value)(_detached(torch, v, copies) for v in value)
    return value


def _run_sample(torch, recorder, info, s, grad):
    try:
        with recorder():
            out = info.op(s.input, *s.args, **s.kwargs)
        if not grad:
            return
        outs = [o for o in _tensors_of(out, torch) if o.requires_grad and o.dtype.is_floating_point]
        ins = [t for t in _tensors_of([s.input, list(s.args), s.kwargs], torch) if t.requires_grad]
        if not outs or not ins:
            return
        g = torch.Generator().manual_seed(0)
        grads = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
        with recorder():
            torch.autograd.grad(outs, ins, grads, allow_unused=True)
    except Exception:
        return


def _source_hash():
    """The bank's sources, this module and ``extra_samples``, hashed: a
    change to either builds a new bank."""
    h = hashlib.sha256()
    for path in (__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "extra_samples.py")):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def bank_path(torch_version):
    """Where the bank for ``torch_version`` and this module's source is kept."""
    explicit = os.environ.get("FLAGPROP_OPINFO_BANK")
    if explicit:
        return explicit
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "flagprop", "opinfo-%s-f%d-%s.json" % (torch_version, FORMAT, _source_hash()))


def writable_bank_path(path):
    """``path``, or, when its folder cannot be made or written (a read-only
    ``~/.cache``), the same file name in a folder of this user's under the
    temporary directory (``flagprop-opinfo-UID``), so that the bank is still
    built and kept for the run. Raises OSError when neither can be made."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        if os.access(folder, os.W_OK):
            return path
    except OSError:
        pass
    alt = os.path.join(tempfile.gettempdir(), "flagprop-opinfo-%d" % os.getuid())
    os.makedirs(alt, mode=0o700, exist_ok=True)
    return os.path.join(alt, os.path.basename(path))


def python_executable():
    """A Python interpreter of this process's version (an embedded
    interpreter's ``sys.executable`` may be the embedding program, or
    another Python found on PATH): the first of ``sys.executable``,
    ``sys._base_executable``, ``pythonX.Y`` / ``python3`` in
    ``sys.exec_prefix/bin`` and ``pythonX.Y`` on PATH that runs and reports
    this version. The child is given this process's ``sys.path``
    (``_child_env``), so it finds the same torch. Raises RuntimeError when
    none does."""
    import shutil
    version = "%d.%d" % sys.version_info[:2]
    candidates = [sys.executable, getattr(sys, "_base_executable", ""),
                  os.path.join(sys.exec_prefix, "bin", "python" + version),
                  os.path.join(sys.exec_prefix, "bin", "python3"),
                  os.path.join(sys.base_exec_prefix, "bin", "python" + version),
                  shutil.which("python" + version) or ""]
    seen = []
    for c in candidates:
        if not c or c in seen or not os.path.basename(c).startswith("python") or not os.access(c, os.X_OK):
            continue
        seen.append(c)
        try:
            p = subprocess.run([c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode == 0 and p.stdout.decode().strip() == version:
            return c
    raise RuntimeError("no Python %s interpreter found for this process (tried %s)"
                       % (version, ", ".join(seen) or "nothing"))


def _child_env():
    """The environment of the bank's builder: no GPU visible, this
    process's ``sys.path`` (with flagprop's own folder first), and a fixed
    string hash seed (OpInfo's samplers iterate over sets of strings: with
    ``_seed_for``, the same bank on every build)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore",
               PYTHONHASHSEED="0")
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds flagprop/
    path = [here] + [p for p in sys.path if p and os.path.isdir(p) and p != here]
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def _write_atomically(path, bank):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".opinfo-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(bank, f, separators=(",", ":"))
        os.chmod(tmp, 0o644)  # mkstemp's 0600: other users' runs may read a shared cache
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load():
    """The bank for this process's torch: read from ``bank_path``, or built
    there first in a fresh interpreter (one build at a time: concurrent runs
    wait on a lock file and then read it). Raises RuntimeError (one line)
    when the build fails or the file is not a bank."""
    import fcntl
    import torch
    path = bank_path(torch.__version__)
    if path in _LOADED:
        return _LOADED[path]
    if not os.path.exists(path):
        path = writable_bank_path(path)  # a read-only cache folder: the bank goes under the temporary directory
    if not os.path.exists(path):
        with open(path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(path):
                _build_in_child(path)
    try:
        with open(path) as f:
            bank = json.load(f)
    except (OSError, ValueError) as e:
        raise RuntimeError("the OpInfo bank %s cannot be read: %s" % (path, e)) from None
    if not isinstance(bank, dict) or bank.get("format") != FORMAT or not isinstance(bank.get("ops"), dict):
        raise RuntimeError("%s is not an OpInfo bank of format %d (delete it to rebuild)" % (path, FORMAT))
    _LOADED[path] = bank
    return bank


def _build_in_child(path):
    env = _child_env()
    cmd = [python_executable(), "-m", "flagprop.engine.opinfo", "--write", path]
    try:
        p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError("building the OpInfo bank took over %d s" % BUILD_TIMEOUT_S) from None
    if p.returncode != 0 or not os.path.exists(path):
        tail = p.stdout.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError("building the OpInfo bank failed (exit %d): %s" % (p.returncode, tail[0][:300]))


def samples(name):
    """The bank's samples of ATen overload ``name`` (as torch.ops spells it:
    ``mm``, ``nll_loss_forward``, ``add.Tensor``), smallest first, as JSON
    text (the C++ sampler parses it): ``{"samples": [...]}`` or
    ``{"samples": [], "why": "..."}`` when there are none."""
    try:
        bank = load()
    except RuntimeError as e:
        return json.dumps({"samples": [], "why": str(e)})
    found = bank["ops"].get(name) or _sibling_samples(bank, name)
    if not found:
        return json.dumps({"samples": [], "why": "OpInfo's samples (torch %s, %d entries) reach no call of %s"
                           % (bank.get("torch"), bank.get("opinfos", 0), name)})
    return json.dumps({"samples": found, "torch": bank.get("torch")})


def _sibling_samples(bank, name):
    """Samples for an out= or in-place overload that OpInfo's samples do not
    call themselves, from its functional sibling: ``add.out`` takes
    ``add.Tensor``'s with each out= argument a fresh tensor (``{"$out": k}``),
    ``add_.Tensor`` takes ``add.Tensor``'s as they are (the reference rejects
    those whose self cannot hold the result). [] when there is none."""
    from . import ops
    try:
        fn = ops.aten_op(name)
    except Exception:
        return []
    schema = fn._schema
    outs = [a.name for a in schema.arguments if ops._is_out(a)]
    if outs:
        sibling = ops.functional_sibling(fn)
        found = bank["ops"].get(overload_name(sibling), []) if sibling is not None else []
        return [dict(s, kwargs=dict(s.get("kwargs", {}), **{n: {"$out": k} for k, n in enumerate(outs)}))
                for s in found]
    base, _, overload = name.partition(".")
    if base.endswith("_") and not base.startswith("_"):
        functional = base[:-1] + ("." + overload if overload else "")
        try:
            other = ops.aten_op(functional)._schema
        except Exception:
            return []
        if [a.name for a in other.arguments] == [a.name for a in schema.arguments]:
            return bank["ops"].get(functional, [])
    return []


def main(argv):
    if len(argv) != 2 or argv[0] != "--write":
        sys.stderr.write("usage: python3 -m flagprop.engine.opinfo --write PATH\n")
        return 2
    _write_atomically(argv[1], build())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
