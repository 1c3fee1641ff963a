"""One generated case against one target, from loading to raw observations.

``target`` is the dict form of a flagprop target manifest (see
matrix/manifest.h): ``installer`` {mode, module, function, path},
``flag_gems`` {kind, path}, ``supply_helper``. The caller (the C++ sandbox, or
a standalone reproducer) restores interpreter state afterwards.
"""

import importlib
import importlib.util
import sys

from . import launch, loader, mocks, observe


def supplied_descriptor_cache_key(arg):
    """flagprop's own ``_descriptor_cache_key`` for a FlagGems pin that lacks
    one: a hashable tuple for a Triton ``TensorDescriptor``, the argument
    itself otherwise."""
    cls = mocks.descriptor_class()
    if not isinstance(arg, cls):
        return arg
    return ("TensorDescriptor", tuple(arg.shape), tuple(arg.strides), tuple(arg.block_shape),
            getattr(arg, "padding", None))


def prepare_flag_gems(target, spec):
    """Make ``flag_gems`` importable for this case: the mocks built from
    ``spec``, or the real package (already on sys.path) plus, when asked, the
    supplied helper."""
    kind = target["flag_gems"]["kind"]
    if kind == "mock":
        mocks.install(spec)
        return
    le = importlib.import_module("flag_gems.utils.libentry")
    if target.get("supply_helper") and "_descriptor_cache_key" not in le.__dict__:
        le._descriptor_cache_key = supplied_descriptor_cache_key


def load_installer(target, gates):
    """(module, installer callable) for the target under ``gates``."""
    inst = target["installer"]
    for folder in reversed(inst.get("python_path") or []):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    if inst["mode"] == "source":
        mod = loader.load_source(inst["path"], inst["module"], gates, inst.get("globals"))
    else:
        mod = loader.load_installed(inst["module"])
    return mod, loader.installer(mod, inst["function"])


def install_case(target, spec, gates, installs):
    """Install ``installs`` (1 or 2) times and observe each.

    Returns {helper, calls: [call_installer dicts], components: [per call],
    identities: [per call], witness}.
    """
    prepare_flag_gems(target, spec)
    before = observe.snapshot()  # before loading: an installer may patch at import
    mod, fn = load_installer(target, gates)
    out = {"helper": observe.helper_state(), "calls": [], "components": [], "identities": []}
    for _ in range(installs):
        out["calls"].append(observe.call_installer(fn, mod))
        out["components"].append(observe.components_after(before))
        out["identities"].append(observe.identities())
    out["witness"] = observe.witness()
    return out


def _active(components):
    return all(components[c]["changed"] and components[c]["markers"] for c in ("key", "run"))


_MOCK_ONLY = {"note": "P3 and P4 drive flagprop's mock LibEntry kernels; they run on targets whose flag_gems kind is 'mock'"}


def install_observed(target, gates, before):
    """Load and run the installer once; returns (call, active), judging
    "active" against the ``observe.snapshot()`` taken before."""
    mod, fn = load_installer(target, gates)
    call = observe.call_installer(fn, mod)
    return call, _active(observe.components_after(before))


def _install_once(target, spec, gates):
    """Install once for P3 / P4; returns (call, before, active)."""
    prepare_flag_gems(target, spec)
    before = observe.snapshot()
    call, active = install_observed(target, gates, before)
    return call, before, active


def key_case(target, spec, gates, spec_args, dns_args, const_args):
    """Install, then compare the patched key, helper and memos with stock (P4)."""
    if target["flag_gems"]["kind"] != "mock":
        return {"active": False, "call": _MOCK_ONLY}
    call, before, active = _install_once(target, spec, gates)
    if not active:
        return {"active": False, "call": call}
    res = launch.compare_keys(spec, spec_args, dns_args, const_args, before)
    res["active"] = True
    return res


def launch_case(target, spec, gates, launches_a, launches_b):
    """Install, then run the launch sequence on patched and stock entries (P3)."""
    if target["flag_gems"]["kind"] != "mock":
        return {"active": False, "call": _MOCK_ONLY}
    call, _before, active = _install_once(target, spec, gates)
    if not active:
        return {"active": False, "call": call}
    return {"active": True, "launches": launch.run_launches(spec, launches_a, launches_b)}


def versions():
    """Versions of the stack, where importable (never imports flag_gems mocks)."""
    out = {"python": sys.version.split()[0]}
    for name in ("torch", "triton", "flag_gems", "torch_fl"):
        mod = sys.modules.get(name)
        if mod is None:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                out[name] = None
                continue
            try:
                mod = importlib.import_module(name)
            except Exception as e:
                out[name] = "import failed: %s" % type(e).__name__
                continue
        out[name] = getattr(mod, "__version__", "unknown")
    return out


def real_gates(target):
    """The installed package's own gate values (installed mode)."""
    inst = target["installer"]
    for folder in reversed(inst.get("python_path") or []):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    root = importlib.import_module(inst["module"].split(".")[0])
    return {"accelerator": str(root._build_accelerator()),
            "routes_to_flaggems": bool(root._conf_routes_to_flaggems())}
