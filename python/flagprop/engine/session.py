"""One generated installer case (P1-P4) against one target: raw observations.

``target`` is a target's dict form (``Target::toJson`` in targets/manifest.h,
the same dict the reports record): ``installer`` {mode, module, function,
path, python_path, globals}, ``flag_gems`` {kind, path, supply_helper},
``device``, ``ops``. The caller (the C++ sandbox, or a standalone reproducer)
restores interpreter state afterwards. Verdicts are ``flagprop.judging.verdicts``'.
"""

import importlib
import importlib.util
import sys

import flagprop_mocks as mocks

from . import launch, loader, observe, real_launch


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
    ``spec``, or the real package (already on sys.path) plus, when the target
    asks for it, the supplied helper."""
    fg = target["flag_gems"]
    if fg["kind"] == "mock":
        mocks.install(dict(spec, **(fg.get("mock") or {})))  # the manifest's pinned fields win
        return
    le = importlib.import_module("flag_gems.utils.libentry")
    if fg.get("supply_helper") and "_descriptor_cache_key" not in le.__dict__:
        le._descriptor_cache_key = supplied_descriptor_cache_key


def _python_path(inst):
    for folder in reversed(inst.get("python_path") or []):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def load_installer(target, gates):
    """(module, installer callable) for the target under ``gates``."""
    inst = target["installer"]
    _python_path(inst)
    if inst["mode"] == "source":
        mod = loader.load_source(inst["path"], inst["module"], gates, inst.get("globals"))
    else:
        mod = loader.load_installed(inst["module"])
    return mod, loader.installer(mod, inst["function"])


def _claimed(target, mod):
    """What the installer version has: read from its source, else declared
    by the manifest (``installer.components``), else None (every component
    counts). Returns (components or None, how)."""
    found = observe.claimed_components(mod, target["installer"]["function"])
    if found is not None:
        return found["components"], found["how"]
    declared = target["installer"].get("components") or []
    if declared:
        return declared, "declared in the manifest (installer.components); the source could not be read"
    return None, "installer source not readable and nothing declared: every component counts"


def claims(target, gates):
    """What the target's installer version has, checked against what the
    manifest declares (``installer.components``). Returns {components, how}
    or {error: one line} when the declaration names unknown components or
    differs from the source."""
    mod, _fn = load_installer(target, gates)
    declared = target["installer"].get("components") or []
    known = [c for c, _ in observe.COMPONENTS]
    unknown = [c for c in declared if c not in known]
    if unknown:
        return {"error": "installer.components names unknown component(s) %s (known: %s)"
                         % (", ".join(unknown), ", ".join(known))}
    components, how = _claimed(target, mod)
    if declared and components is not None and sorted(declared) != sorted(components):
        return {"error": "installer.components declares %s, but the installer source rebinds %s (%s)"
                         % (", ".join(declared), ", ".join(components) or "none", how)}
    return {"components": components, "how": how}


def install_case(target, spec, gates, installs):
    """Install ``installs`` (1 or 2) times and observe each.

    Returns {helper, claims (component names or None), claims_how, calls:
    [call_installer dicts], components: [per call], identities: [per call],
    witness}.
    """
    prepare_flag_gems(target, spec)
    before = observe.snapshot()  # before loading: an installer may patch at import
    mod, fn = load_installer(target, gates)
    components, how = _claimed(target, mod)
    out = {"helper": observe.helper_state(), "calls": [], "components": [], "identities": [],
           "claims": components, "claims_how": how}
    for _ in range(installs):
        out["calls"].append(observe.call_installer(fn, mod))
        out["components"].append(observe.components_after(before))
        out["identities"].append(observe.identities())
    out["witness"] = observe.witness()
    return out


def install_observed(target, gates, before):
    """Load and run the installer once; returns (call, active), where active
    is ``observe.fast_path_installed`` against ``before`` (``observe.snapshot``)."""
    mod, fn = load_installer(target, gates)
    call = observe.call_installer(fn, mod)
    return call, observe.fast_path_installed(observe.components_after(before))


def _install_once(target, spec, gates, count_stock_runs=False):
    """Install once for P3 / P4; returns (call, before, active, stock_calls):
    with ``count_stock_runs`` (a real FlagGems), a counting shim replaces the
    stock ``LibEntry.run`` first, so that the fast run's fallbacks are
    witnessed; ``stock_calls()`` reads the count and ``before["run"]`` stays
    the true stock run."""
    prepare_flag_gems(target, spec)
    before = observe.snapshot()
    count = [0]
    if count_stock_runs:
        cls = sys.modules["flag_gems.utils.libentry"].LibEntry
        stock = cls.__dict__["run"]

        def counted_stock_run(self, *args, **kwargs):
            count[0] += 1
            return stock(self, *args, **kwargs)

        cls.run = counted_stock_run
        true_before, before = before, observe.snapshot()
        before["true_run"] = true_before["run"]
    call, active = install_observed(target, gates, before)
    return call, before, active, lambda: count[0]


def _real_unavailable(target):
    why = real_launch.available(target["device"]) if target["flag_gems"]["kind"] != "mock" else ""
    return {"active": False, "call": {"note": why}} if why else None


def key_case(target, spec, gates, spec_args, dns_args, const_args):
    """Install, then compare the patched key, helper and memos with stock (P4):
    on the mocks against a never-patched copy, on a real FlagGems against the
    functions the installer replaced. The argument lists hold values
    (``launch.value_from_json``)."""
    unavailable = _real_unavailable(target)
    if unavailable:
        return unavailable
    call, before, active, _stock_calls = _install_once(target, spec, gates)
    if not active:
        return {"active": False, "call": call}
    if target["flag_gems"]["kind"] == "mock":
        res = launch.compare_keys(spec, spec_args, dns_args, const_args, before)
    else:
        res = real_launch.compare_keys(spec_args, dns_args, const_args, before)
    res["active"] = True
    return res


def key_case_json(target, gates, case):
    """``key_case`` for a P4 case in its JSON form (``toJson(KeyCase)``)."""
    vals = [[launch.value_from_json(v) for v in case[k]] for k in ("spec_args", "dns_args", "const_args")]
    return key_case(target, case["mock"], gates, *vals)


def launch_case(target, spec, gates, launches_a, launches_b):
    """Install, then run the launch sequence on patched and stock mock
    entries (P3)."""
    call, _before, active, _stock_calls = _install_once(target, spec, gates)
    if not active:
        return {"active": False, "call": call}
    return {"active": True, "launches": launch.run_launches(spec, launches_a, launches_b)}


def launch_case_json(target, gates, case):
    """P3 for a case in its JSON form (``toJson(LaunchCase)``): on the mocks
    both launch lists come from the one builder, each with its own tensors;
    on a real FlagGems flagprop's Triton kernel is launched through real
    LibEntry objects (``real_launch.run_launches``)."""
    if target["flag_gems"]["kind"] == "mock":
        return launch_case(target, case["mock"], gates, launch.build_launches(case), launch.build_launches(case))
    unavailable = _real_unavailable(target)
    if unavailable:
        return unavailable
    call, before, active, stock_calls = _install_once(target, case["mock"], gates, count_stock_runs=True)
    if not active:
        return {"active": False, "call": call}
    return {"active": True,
            "launches": real_launch.run_launches(case, before["true_run"], stock_calls, target["device"])}


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
    _python_path(inst)
    root = importlib.import_module(inst["module"].split(".")[0])
    return {"accelerator": str(root._build_accelerator()),
            "routes_to_flaggems": bool(root._conf_routes_to_flaggems())}
