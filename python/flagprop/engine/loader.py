"""Loading the code under test: source mode and installed mode.

Source mode (docs/design.md, "Loading the code under test"): a target's
``torch_fl/flagos/__init__.py`` (any pin, or one of flagprop's own fixture
installers) is executed as module ``torch_fl.flagos`` inside a synthetic
``torch_fl`` package. The package's compiled parts (``_C``) and the
``torch_fl.flagos`` siblings it imports (``meta``, ``random``) are stubs, and
the two gates ``_build_accelerator()`` / ``_conf_routes_to_flaggems()`` return
the values the case asks for. A manifest may predefine module globals
(``installer.globals``), which are set before the module body runs. Nothing
from the real ``torch_fl`` package is imported: the synthetic packages have an
empty ``__path__``.

Installed mode imports the module a user would and reads the real gates.
"""

import importlib
import importlib.machinery
import os
import sys
import types

_CODE_CACHE = {}


class LoadError(Exception):
    """A target could not be loaded; the message is one line naming the cause."""


def _compiled(path):
    """The code object for ``path``, compiled once per (path, mtime, size)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise LoadError("installer source %s: %s" % (path, e.strerror)) from None
    key = (path, st.st_mtime_ns, st.st_size)
    code = _CODE_CACHE.get(key)
    if code is None:
        with open(path, "rb") as f:
            src = f.read()
        try:
            code = compile(src, path, "exec", dont_inherit=True)
        except SyntaxError as e:
            raise LoadError(
                "installer source %s does not compile: %s (line %s)" % (path, e.msg, e.lineno)
            ) from None
        _CODE_CACHE[key] = code
    return code


class _StubC(types.ModuleType):
    """``torch_fl._C`` stand-in: device count 0, every other call a no-op."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "_get_device_count":
            return lambda: 0
        if name in ("_get_device", "_exchangeDevice"):
            return lambda *a: 0
        return lambda *a, **k: None


def _package(name, path=None):
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    mod.__path__ = []
    mod.__package__ = name
    if path:
        mod.__file__ = path
    return mod


def load_source(path, module_name, gates, module_globals=None):
    """Execute ``path`` as ``module_name`` (default ``torch_fl.flagos``).

    ``gates`` is a dict with ``accelerator`` (str) and ``routes_to_flaggems``
    (bool); ``module_globals`` (dict or None) is put into the module's
    namespace before its body runs. Registers the synthetic parent packages and stubs in
    ``sys.modules`` (the caller's sandbox removes them). Returns the module.
    Raises LoadError for a missing file, a syntax error, or an exception raised
    while the module body runs.
    """
    code = _compiled(path)
    parts = module_name.split(".")
    if len(parts) < 2:
        raise LoadError("source-mode module %r must sit inside a package" % module_name)
    root = _package(parts[0])
    accel = str(gates.get("accelerator", "dcu"))
    routes = bool(gates.get("routes_to_flaggems", True))
    root._build_accelerator = lambda: accel
    root._conf_routes_to_flaggems = lambda: routes
    root._cuda_alias_active = False
    root.__version__ = "0+flagprop.source"
    c_mod = _StubC(parts[0] + "._C")
    c_mod.__spec__ = importlib.machinery.ModuleSpec(parts[0] + "._C", None)
    root._C = c_mod
    sys.modules[parts[0]] = root
    sys.modules[parts[0] + "._C"] = c_mod
    parent = root
    for i in range(1, len(parts) - 1):
        name = ".".join(parts[: i + 1])
        pkg = _package(name)
        setattr(parent, parts[i], pkg)
        sys.modules[name] = pkg
        parent = pkg
    mod = _package(module_name, path)
    for sib in ("meta", "random"):
        stub = types.ModuleType(module_name + "." + sib)
        stub.__all__ = []
        sys.modules[stub.__name__] = stub
        setattr(mod, sib, stub)
    setattr(parent, parts[-1], mod)
    sys.modules[module_name] = mod
    if module_globals:
        mod.__dict__.update(module_globals)
    try:
        exec(code, mod.__dict__)
    except Exception as e:
        raise LoadError(
            "installer source %s raised while loading: %s: %s" % (path, type(e).__name__, e)
        ) from None
    return mod


def load_installed(module_name):
    """Import ``module_name`` as a user would; raises LoadError if it fails."""
    try:
        return importlib.import_module(module_name)
    except Exception as e:
        raise LoadError("cannot import %s: %s: %s" % (module_name, type(e).__name__, e)) from None


def installer(module, function):
    """The installer callable ``module.function``; LoadError if missing."""
    fn = getattr(module, function, None)
    if fn is None:
        raise LoadError("%s has no installer %r" % (module.__name__, function))
    if not callable(fn):
        raise LoadError("%s.%s is not callable" % (module.__name__, function))
    return fn


def add_flag_gems_source(src_dir):
    """Put a FlagGems checkout's ``src`` folder first on ``sys.path``."""
    if not os.path.isdir(os.path.join(src_dir, "flag_gems")):
        raise LoadError("%s has no flag_gems package" % src_dir)
    if src_dir not in sys.path:
        sys.path.insert(0, src_dir)
