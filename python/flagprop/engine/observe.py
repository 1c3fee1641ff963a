"""Python half of the installer properties: raw observations, no verdicts.

``flagprop.judging.verdicts`` decides pass / fail; this module only watches. Every
function returns plain data (dicts, lists, str, int, bool) so the C++ side can
read it without knowing Python types.

Components of the pointwise-dispatch installer (docs/design.md, "The
installer contract"); which of them an installer version has is read from
its source (``claimed_components``):

=====================  ==========================================  ===================
component              where it lives                              marker
=====================  ==========================================  ===================
descriptor_helper      flag_gems.utils.libentry._descriptor_cache_key  _torch_fl_hoisted
key                    LibEntry.key                                _torch_fl_fast
type_promotion_memo    flag_gems.utils.pointwise_dynamic.type_promotion  _torch_fl_memo
run                    LibEntry.run                                _torch_fl_fast
broadcast_memo         torch.broadcast_shapes                      _torch_fl_memoized
=====================  ==========================================  ===================
"""

import ast
import inspect
import logging
import os
import sys
import warnings

import torch

MISSING = object()

COMPONENTS = (
    ("descriptor_helper", "_torch_fl_hoisted"),
    ("key", "_torch_fl_fast"),
    ("type_promotion_memo", "_torch_fl_memo"),
    ("run", "_torch_fl_fast"),
    ("broadcast_memo", "_torch_fl_memoized"),
)

STATUS_ATTRS = ("_torch_fl_patch_status", "PATCH_STATUS")


def _owners():
    le = sys.modules.get("flag_gems.utils.libentry")
    pw = sys.modules.get("flag_gems.utils.pointwise_dynamic")
    cls = getattr(le, "LibEntry", None) if le is not None else None
    return {
        "descriptor_helper": (le, "_descriptor_cache_key"),
        "key": (cls, "key"),
        "type_promotion_memo": (pw, "type_promotion"),
        "run": (cls, "run"),
        "broadcast_memo": (torch, "broadcast_shapes"),
    }


def _raw(owner, attr):
    if owner is None:
        return MISSING
    d = getattr(owner, "__dict__", None)
    if d is None:
        return MISSING
    return d.get(attr, MISSING)


def snapshot():
    """Identity of every component's current object (MISSING if absent)."""
    return {name: _raw(owner, attr) for name, (owner, attr) in _owners().items()}


def apply(snap):
    """Puts every component back to the object ``snap`` (a ``snapshot``)
    holds for it (removing it where it was MISSING): switches an installed
    patch off (the snapshot before the install) or on again (after)."""
    for name, (owner, attr) in _owners().items():
        if owner is None or name not in snap:
            continue
        if snap[name] is MISSING:
            if attr in getattr(owner, "__dict__", {}):
                delattr(owner, attr)
        else:
            setattr(owner, attr, snap[name])


def _markers(obj):
    """Truthy ``_torch_fl_*`` attributes set on the object itself (wrappers
    are functions, whose attributes live in ``__dict__``)."""
    d = getattr(obj, "__dict__", None) if obj is not MISSING else None
    if not isinstance(d, dict):
        return []
    out = []
    for n, v in d.items():
        if n.startswith("_torch_fl_"):
            try:
                if v:
                    out.append(n)
            except Exception:
                pass
    return sorted(out)


def _chain_depth(obj):
    depth, seen = 0, set()
    while obj is not MISSING and hasattr(obj, "__wrapped__") and id(obj) not in seen:
        seen.add(id(obj))
        obj = obj.__wrapped__
        depth += 1
    return depth


def _short(exc):
    s = str(exc)
    return s if len(s) <= 300 else s[:297] + "..."


class _Tracer:
    """Records every exception raised in a frame that runs in the installer's
    module (``frame.f_globals is module_globals``), whichever file the code came
    from. The global trace function is installed only for the call and is always
    removed."""

    def __init__(self, module_globals):
        self.module_globals = module_globals
        self.events = []
        self._seen = set()
        self._alive = []  # strong references, so that an id() is never reused within a call

        self.files = set()  # co_filename of every installer frame seen

    def global_trace(self, frame, event, arg):
        if event == "call" and frame.f_globals is self.module_globals:
            self.files.add(frame.f_code.co_filename)
            return self.local_trace
        return None

    def local_trace(self, frame, event, arg):
        if event == "exception":
            etype, value, _tb = arg
            if id(value) not in self._seen:
                self._seen.add(id(value))
                self._alive.append(value)
                self.events.append(
                    {
                        "file": frame.f_code.co_filename,
                        "line": frame.f_lineno,
                        "function": frame.f_code.co_name,
                        "type": getattr(etype, "__name__", str(etype)),
                        "message": _short(value),
                    }
                )
        return self.local_trace


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        try:
            msg = record.getMessage()
        except Exception:
            msg = str(record.msg)
        self.records.append(
            {"logger": record.name, "level": record.levelname, "message": _short(msg),
             "file": record.pathname, "line": record.lineno}
        )


def _status_of(module, returned):
    status = {}
    src = None
    if isinstance(returned, dict):
        src = returned
    else:
        for attr in STATUS_ATTRS:
            cand = getattr(module, attr, None) if module is not None else None
            if callable(cand):
                try:
                    cand = cand()
                except Exception:
                    cand = None
            if isinstance(cand, dict):
                src = cand
                break
    if src:
        known = {name for name, _ in COMPONENTS} | {"*", "all"}
        for k, v in src.items():
            if str(k) in known:  # a mapping about something else is no status
                status[str(k)] = v if isinstance(v, str) else repr(v)
    return status


_HIDDEN_CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def call_installer(fn, module):
    """Call the installer once, watching it.

    Returns a dict: ``returned_normally`` (bool), ``raised`` (type: message or
    ""), ``exceptions`` (list of {file, line, function, type, message} for
    every exception raised inside the installer's own frames, whether caught
    or not), ``warnings`` (every warning seen: {category, message, file, line,
    from_installer, visible}; only those issued by installer code through
    ``warnings.warn`` with a category Python shows by default count as
    reports), ``logs`` (every record: {logger, level, message, file, line,
    from_installer}), ``status`` (component -> text, from the return value or
    the module's status attribute, component keys only), ``trace_lost`` (the
    installer replaced the trace function, so exception recording may be
    incomplete).
    """
    g = getattr(module, "__dict__", None)
    tracer = _Tracer(g)
    cap = _Capture()
    root = logging.getLogger()
    old_level = root.level
    old_disable = logging.root.manager.disable
    root.addHandler(cap)
    root.setLevel(logging.DEBUG)
    logging.disable(logging.NOTSET)
    old_trace = sys.gettrace()
    raised = ""
    returned = None
    issued = []  # (message, category, from_installer) for warnings.warn calls
    real_warn = warnings.warn

    def warn(message, category=None, stacklevel=1, *args, **kwargs):
        caller = sys._getframe(1)
        cat = category if category is not None else (
            type(message) if isinstance(message, Warning) else UserWarning)
        issued.append((str(message), cat, caller.f_globals is g))
        return real_warn(message, category, stacklevel + 1, *args, **kwargs)

    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        warnings.warn = warn
        sys.settrace(tracer.global_trace)
        try:
            returned = fn()
        except BaseException as e:  # noqa: B902 - recorded, never swallowed silently
            raised = "%s: %s" % (type(e).__name__, _short(e))
        finally:
            trace_lost = sys.gettrace() != tracer.global_trace  # bound methods: compare, not identity
            sys.settrace(old_trace)
            warnings.warn = real_warn
            root.removeHandler(cap)
            root.setLevel(old_level)
            logging.disable(old_disable)
    from_installer = {(m, c) for m, c, mine in issued if mine}
    out_warnings = []
    for w in wlist:
        msg = _short(w.message)
        mine = (str(w.message), w.category) in from_installer
        out_warnings.append({
            "category": w.category.__name__,
            "message": msg,
            "file": str(w.filename),
            "line": int(w.lineno or 0),
            "from_installer": mine,
            "visible": not issubclass(w.category, _HIDDEN_CATEGORIES),
        })
    for r in cap.records:
        r["from_installer"] = r["file"] in tracer.files
    return {
        "returned_normally": not raised,
        "raised": raised,
        "exceptions": tracer.events,
        "warnings": out_warnings,
        "logs": cap.records,
        "status": _status_of(module, returned),
        "trace_lost": trace_lost,
    }


def components_after(before):
    """Per-component facts after an install, against ``before`` (a snapshot).

    For each component: ``present_before``, ``present_after``, ``changed``
    (a different object now), ``markers`` (truthy ``_torch_fl_*`` attributes),
    ``wrapped_is_original`` (``__wrapped__`` is the object seen before),
    ``has_wrapped``, ``chain_depth`` (length of the ``__wrapped__`` chain).
    """
    now = snapshot()
    out = {}
    for name, _marker in COMPONENTS:
        b, a = before.get(name, MISSING), now.get(name, MISSING)
        wrapped = getattr(a, "__wrapped__", MISSING) if a is not MISSING else MISSING
        out[name] = {
            "present_before": b is not MISSING,
            "present_after": a is not MISSING,
            "changed": a is not b,
            "markers": _markers(a),
            "has_wrapped": wrapped is not MISSING,
            "wrapped_is_original": wrapped is not MISSING and wrapped is b,
            "chain_depth": _chain_depth(a),
        }
    return out


def fast_path_installed(components):
    """Whether something replaced the stock ``LibEntry.key`` and ``.run``
    (``components`` as ``components_after`` gives them): then there is a
    fast path for P3, P4 and P5 to compare with the stock one, whether or
    not it was installed properly (P1's question, which
    ``flagprop.judging.verdicts`` answers)."""
    return all(components[c]["changed"] for c in ("key", "run"))


def identities():
    """id() of each component's current object as a decimal string (a 64-bit
    address: JSON readers such as jq lose integers above 2**53), None when
    absent."""
    return {k: (None if v is MISSING else str(id(v))) for k, v in snapshot().items()}


def helper_state():
    """``present`` / ``absent`` / ``raising`` for libentry's descriptor helper."""
    le = sys.modules.get("flag_gems.utils.libentry")
    if le is None:
        return "no-libentry"
    try:
        getattr(le, "_descriptor_cache_key")
        return "present"
    except AttributeError:
        return "absent"
    except Exception as e:
        return "raising (%s)" % type(e).__name__


def witness():
    """The mock libentry's call counters (empty for a real FlagGems)."""
    le = sys.modules.get("flag_gems.utils.libentry")
    w = getattr(le, "WITNESS", None)
    return dict(w) if w is not None else {}


# Where each component lives, as the installer rebinds it: the attribute name,
# and for LibEntry's methods the class the attribute is set on.
_REBINDS = {
    "descriptor_helper": ("_descriptor_cache_key", None),
    "key": ("key", "LibEntry"),
    "type_promotion_memo": ("type_promotion", None),
    "run": ("run", "LibEntry"),
    "broadcast_memo": ("broadcast_shapes", None),
}


def _owner_name(node):
    """The last name of an attribute chain or name (``a.b.LibEntry`` ->
    ``LibEntry``), or None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _rebound(tree):
    """Component names whose attribute ``tree`` assigns (``x.attr = ...`` or
    ``setattr(x, "attr", ...)``)."""
    found = set()

    def note(owner, attr):
        for comp, (name, cls) in _REBINDS.items():
            if attr == name and (cls is None or _owner_name(owner) == cls):
                found.add(comp)

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute):
                    note(t.value, t.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
            note(node.args[0], node.args[1].value)
    return found


_CLAIMS = {}


def claimed_components(module, function):
    """Which components the installer ``module.function`` has, read from the
    module's source: the components whose attribute is rebound (assigned, or
    set with ``setattr`` and a literal name) in the installer function or in
    any module-level function it names (calls or passes along), transitively.

    Returns ``{"components": [...], "how": text}``, or ``None`` when the
    source cannot be read or parsed (then every component counts). Cached
    per file (path, modification time, size) and function."""
    path = getattr(module, "__file__", None)
    try:
        st = os.stat(path) if path else None
    except OSError:
        st = None
    key = (path, st.st_mtime_ns, st.st_size, function) if st else None
    if key is not None and key in _CLAIMS:
        return _CLAIMS[key]
    result = _read_claims(module, function)
    if key is not None:
        _CLAIMS[key] = result
    return result


def _read_claims(module, function):
    try:
        src = inspect.getsource(module)
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if function not in defs:
        return None
    seen, todo, found = set(), [function], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        found |= _rebound(defs[name])
        for node in ast.walk(defs[name]):  # calls, and functions passed along by name
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in defs:
                todo.append(node.id)
    order = [c for c, _ in COMPONENTS]
    return {
        "components": [c for c in order if c in found],
        "how": "read from %s: attributes rebound by %s() and the %d module function(s) it reaches"
               % (getattr(module, "__file__", module.__name__), function, len(seen) - 1),
    }
