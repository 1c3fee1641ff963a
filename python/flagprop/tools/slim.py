"""Cuts flagprop's Python modules down to the code a standalone reproducer runs.

A reproducer judges its case with the very functions the suite used, so it
carries flagprop's own Python source; this module keeps of that source only
what the reproducer can reach, at the granularity of top-level statements
(a ``def``, a ``class``, an assignment, an import...), and renders it:

* ``slice_modules(modules, entries, bindings)`` starts from the entry points
  (``"flagprop.judging.checks:check"``) and follows every global name a kept
  statement uses -- a name of its own module, an imported one
  (``from .spec import full``), or an attribute of an imported module of the
  set (``session.install_case``, also after an import inside a function, and
  through subpackages: ``flagprop.engine.ops.setup`` after ``import
  flagprop.engine.ops``) --
  until nothing new is reached. A module used as a value (not only as
  ``module.name``), or one whose code reads its own globals by name
  (``globals()``, ``vars()``, ``eval`` / ``exec`` in its namespace), is
  kept whole. A statement that binds nothing (a docstring, a call made at
  import time) or changes an imported module (``torch.x = ...``,
  ``logging.getLogger().setLevel(...)``) is always kept; one that changes a
  top-level object of its own module (``X.attr = ...``, ``X[k] = ...``,
  ``X.update(...)``) is kept with it.
* ``bindings`` gives the values a parameter of an entry function has
  (``{"flagprop.judging.checks:check": {"kind": "install"}}``). They travel along
  direct calls that pass the parameter (or a string constant) on, and in
  each function that has them the branches of ``if kind == "..."`` /
  ``elif`` / ``if kind in (...)`` that cannot run are not followed. The
  functions' text is kept unchanged; the names only those branches use are
  left out and listed in the module's first comment.
* Every slice is checked before it is returned (``_verify``): it must
  compile, every global name it uses must be defined in it, a builtin, or one
  of the names left out with a branch not taken, and every import and
  ``module.name`` it runs must find its target. A failure raises
  ``SliceError``; a slice never silently drops code that can run.
* ``render(sliced, budget)`` writes the module table a reproducer runs:
  docstrings removed, readable source while it fits ``budget`` bytes, the
  machinery packed (zlib, base85) first when it does not.

Run as a script by the C++ reproducer writer (``python3 -I -S slim.py
--request REQ.json --out OUT.json``; stdlib only, no torch): see ``main``.
"""

import argparse
import ast
import base64
import builtins
import json
import os
import symtable
import sys
import textwrap
import zlib

_MODULE_DUNDERS = {"__name__", "__file__", "__doc__", "__spec__", "__package__", "__path__", "__loader__",
                   "__builtins__", "__cached__", "__annotations__", "__dict__"}
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_WHOLE = "*"


class SliceError(Exception):
    """The modules cannot be sliced safely; the message names the module and why."""


# ----------------------------------------------------------------- discovery


def discover(folders, packages):
    """The modules of ``packages`` (top-level package names, e.g.
    ``["flagprop", "flagprop_mocks"]``) found in ``folders`` (searched in
    order, like ``sys.path``; the first folder holding a package wins).

    Returns a list of dicts ``{"name", "package" (bool), "path"}``: each
    package's ``__init__.py``, every ``.py`` file in it, and so on down every
    subfolder that holds an ``__init__.py`` (a subpackage), sorted by name
    within each folder. Raises ``SliceError`` when a package is in none of
    the folders."""
    out = []

    def walk(name, root):
        out.append({"name": name, "package": True, "path": os.path.join(root, "__init__.py")})
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            if entry.endswith(".py") and entry != "__init__.py":
                out.append({"name": name + "." + entry[:-3], "package": False, "path": path})
            elif os.path.isfile(os.path.join(path, "__init__.py")):
                walk(name + "." + entry, path)

    for pkg in packages:
        for folder in folders:
            root = os.path.join(folder, pkg)
            if os.path.isfile(os.path.join(root, "__init__.py")):
                walk(pkg, root)
                break
        else:
            raise SliceError("package %s is in none of %s" % (pkg, ", ".join(folders) or "no folders"))
    return out


# ------------------------------------------------------------- one statement


def _assigned_roots(target):
    """(names bound, names whose object is changed) by an assignment target."""
    if isinstance(target, ast.Name):
        return {target.id}, set()
    if isinstance(target, (ast.Tuple, ast.List)):
        bound, changed = set(), set()
        for t in target.elts:
            b, c = _assigned_roots(t)
            bound |= b
            changed |= c
        return bound, changed
    if isinstance(target, ast.Starred):
        return _assigned_roots(target.value)
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return set(), ({node.id} if isinstance(node, ast.Name) else set())


def _module_level_nodes(node):
    """The nodes of ``node`` that run in the module's own scope: not the bodies
    of functions, classes, lambdas or comprehensions (their decorators,
    defaults, bases and first iterables do run there)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = n.args
            stack += n.decorator_list + [d for d in args.defaults + args.kw_defaults if d is not None]
            continue
        if isinstance(n, ast.ClassDef):
            stack += n.decorator_list + n.bases + [k.value for k in n.keywords]
            continue
        if isinstance(n, ast.Lambda):
            stack += [d for d in n.args.defaults + n.args.kw_defaults if d is not None]
            continue
        if isinstance(n, _COMPREHENSIONS):
            stack.append(n.generators[0].iter)
            continue
        stack += list(ast.iter_child_nodes(n))


def _binds_and_changes(stmt):
    """(names a top-level statement binds in the module, top-level names whose
    object it changes: ``X.a = ...``, ``X[k] = ...``, ``del X[k]``,
    ``X.method(...)`` at module level)."""
    bound, changed = set(), set()
    for n in _module_level_nodes(stmt):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                bound.add(a.asname or a.name.split(".")[0])
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                b, c = _assigned_roots(t)
                bound |= b
                changed |= c
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            b, c = _assigned_roots(n.target)
            if isinstance(n, ast.AugAssign):
                changed |= b
            bound |= b
            changed |= c
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            b, c = _assigned_roots(n.target)
            bound |= b
            changed |= c
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                if item.optional_vars is not None:
                    b, c = _assigned_roots(item.optional_vars)
                    bound |= b
                    changed |= c
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.NamedExpr):
            bound |= _assigned_roots(n.target)[0]
        elif isinstance(n, ast.Delete):
            for t in n.targets:
                b, c = _assigned_roots(t)
                changed |= b | c
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            root = n.func.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                changed.add(root.id)
    return bound, changed - bound


def _trusted(fn, binding):
    """The part of ``binding`` ({param: frozenset of str}) that holds all
    through function ``fn``: parameters the body never assigns and no nested
    function or lambda shadows."""
    own = {id(a) for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    known = {p: frozenset(v) for p, v in (binding or {}).items() if p in params}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            known.pop(n.id, None)
        elif isinstance(n, ast.arg) and id(n) not in own:
            known.pop(n.arg, None)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                known.pop(name, None)
    return known


def _decide(test, known):
    """True / False when ``test`` has that value for every value ``known``
    allows ({param: frozenset of str}), else None. Decided: ``p == "x"``,
    ``"x" == p``, ``p != "x"``, ``p in ("x", ...)``, ``p not in (...)``."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(right, ast.Name) and isinstance(left, ast.Constant) and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    if not isinstance(left, ast.Name) or left.id not in known:
        return None
    values = known[left.id]
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        consts, positive = {right.value}, isinstance(op, ast.Eq)
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in right.elts):
        consts, positive = {e.value for e in right.elts}, isinstance(op, ast.In)
    else:
        return None
    if values <= consts:
        return positive
    if not values & consts:
        return not positive
    return None


def _pruned_walk(fn, known):
    """The nodes of function ``fn`` that can run when its parameters have the
    values ``known`` allows (``_trusted``): an ``if`` whose test ``_decide``
    settles contributes only the branch taken."""
    stack = [fn]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.If):
            verdict = _decide(n.test, known)
            if verdict is not None:
                stack += [n.test] + (n.body if verdict else n.orelse)
                continue
        stack += list(ast.iter_child_nodes(n))


def _value(expr, known):
    """The values an argument expression can have (frozenset of str), or None."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return frozenset([expr.value])
    if isinstance(expr, ast.Name) and isinstance(expr.ctx, ast.Load):
        return known.get(expr.id)
    return None


def _call_info(call, known):
    """What a call passes that is known: (positional values, {keyword: values})
    with None for an unknown value; positional values stop at a ``*args``."""
    pos = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            break
        pos.append(_value(a, known))
    kw = {k.arg: _value(k.value, known) for k in call.keywords if k.arg is not None}
    return pos, kw


def _bind_call(fn, info):
    """The binding ({param: frozenset}) a call described by ``info``
    (``_call_info``) gives plain function ``fn``; {} for a decorated one."""
    if fn.decorator_list or info is None:
        return {}
    pos, kw = info
    out = {}
    for param, value in zip(fn.args.posonlyargs + fn.args.args, pos):
        if value is not None:
            out[param.arg] = value
    for param in fn.args.args + fn.args.kwonlyargs:
        if kw.get(param.arg) is not None:
            out[param.arg] = kw[param.arg]
    return out


def _merge(a, b):
    """What two bindings allow together: the parameters both know, with the
    values of either."""
    return {p: a[p] | b[p] for p in a.keys() & b.keys()}


class _Stmt:
    """One top-level statement: its lines, what it binds and changes, and the
    global names it uses (``globals``, from symtable)."""

    def __init__(self, node, start, end):
        self.node = node
        self.start, self.end = start, end  # 1-based, inclusive; start includes decorators
        self.binds, self.changes = _binds_and_changes(node)
        self.globals = set()

    def is_import(self):
        """Whether the statement is an ``import`` / ``from ... import``."""
        return isinstance(self.node, (ast.Import, ast.ImportFrom))

    def function(self):
        """The statement's node when it is a plain ``def``, else None."""
        return self.node if isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


class _Module:
    """One module's parsed source, its statements and its imports of other
    modules of the set (``aliases``: name -> ("module", M) or ("name", M, attr))."""

    def __init__(self, name, package, path, source, names):
        self.name, self.package, self.path, self.source = name, package, path, source
        self.pkg = name if package else name.rpartition(".")[0]
        try:
            self.tree = ast.parse(source, path)
            self.table = symtable.symtable(source, path, "exec")
        except SyntaxError as e:
            raise SliceError("%s does not compile: %s (line %s)" % (path, e.msg, e.lineno)) from None
        self.lines = source.splitlines(True)
        self.stmts = []
        for node in self.tree.body:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            self.stmts.append(_Stmt(node, start, node.end_lineno))
        self.defs = {s.node.name: s for s in self.stmts if s.function() is not None}
        self.imported = set()  # names an import binds at module level (also inside try / if)
        for s in self.stmts:
            for n in _module_level_nodes(s.node):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    self.imported |= {a.asname or a.name.split(".")[0] for a in n.names}
        self.aliases = {}
        for s in self.stmts:
            if s.is_import():
                self.aliases.update(self.import_aliases(s.node, names))
        self._globals_of_statements()

    def binds(self, name):
        """Whether a top-level statement binds ``name``."""
        return any(name in s.binds for s in self.stmts)

    def resolve(self, node, alias):
        """The absolute module name an import ``node`` names for ``alias``."""
        if isinstance(node, ast.Import):
            return alias.name
        if node.level == 0:
            return node.module
        base = self.pkg
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        return base + ("." + node.module if node.module else "")

    def import_aliases(self, node, names):
        """{bound name: ("module", M) | ("name", M, attr)} for the modules of
        the set (``names``) an import statement names."""
        out = {}
        for a in node.names:
            mod = self.resolve(node, a)
            if isinstance(node, ast.Import):
                if a.asname and mod in names:
                    out[a.asname] = ("module", mod)
                elif not a.asname and mod.split(".")[0] in names:
                    out[mod.split(".")[0]] = ("module", mod.split(".")[0])
            elif (mod + "." + a.name) in names:
                out[a.asname or a.name] = ("module", mod + "." + a.name)
            elif mod in names:
                out[a.asname or a.name] = ("name", mod, a.name)
        return out

    def _globals_of_statements(self):
        """Each statement's global names: those used at module level, and
        those symtable says are global in the scopes the statement defines."""
        children = {}

        def collect(table, into):
            for sym in table.get_symbols():
                if sym.is_global() and (sym.is_referenced() or sym.is_declared_global()):
                    into.add(sym.get_name())
            for child in table.get_children():
                collect(child, into)

        for child in self.table.get_children():
            children.setdefault(child.get_lineno(), []).append(child)
        for s in self.stmts:
            found = {n.id for n in _module_level_nodes(s.node) if isinstance(n, ast.Name)}
            for line in range(s.start, s.end + 1):
                for child in children.get(line, []):
                    collect(child, found)
            s.globals = found

    def uses(self, stmt, binding, names):
        """What ``stmt`` needs when it runs with ``binding`` (a function's
        known parameter values, {param: frozenset}; None or {}: any).

        Returns (needs, pruned): ``needs`` a list of (module, name, call)
        where name is a top-level name, ``_WHOLE`` (the module is used as a
        value) or None (the module must only exist), and call is
        ``_call_info`` of a direct call of it (None when it is not called
        directly); ``pruned`` the global names only the branches that cannot
        run use."""
        fn = stmt.function()
        known = _trusted(fn, binding) if fn is not None and binding else {}
        if known:
            nodes = list(_pruned_walk(fn, known)) + list(_module_level_nodes(fn))
        else:
            nodes = list(ast.walk(stmt.node))
        called = {id(n.func): n for n in nodes if isinstance(n, ast.Call)}

        def call_of(node):
            c = called.get(id(node))
            return _call_info(c, known) if c is not None else None

        nested = {}
        needs = []
        for n in nodes:
            if isinstance(n, (ast.Import, ast.ImportFrom)) and n is not stmt.node:
                nested.update(self.import_aliases(n, names))
                for a in n.names:  # the import itself needs the module (and name) to exist
                    mod = self.resolve(n, a)
                    sub = mod + "." + a.name if isinstance(n, ast.ImportFrom) else None
                    if sub in names:
                        needs.append((sub, None, None))
                    elif mod in names:
                        needs.append((mod, a.name if sub else None, None))
        seen, attr_bases = set(), set()
        parent = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
        for n in nodes:
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and isinstance(n.ctx, ast.Load):
                base = n.value.id
                alias = nested.get(base) or (self.aliases.get(base) if base in stmt.globals else None)
                if alias and alias[0] == "module":
                    attr_bases.add(id(n.value))
                    seen.add(base)
                    needs.append((self.name, base, None) if base in stmt.globals else (alias[1], None, None))
                    mod, at = alias[1], n  # a dotted module path (pkg.sub.mod.name): down to its last module
                    while (mod + "." + at.attr) in names and isinstance(parent.get(id(at)), ast.Attribute) \
                            and parent[id(at)].value is at:
                        needs.append((mod, at.attr, None))
                        mod, at = mod + "." + at.attr, parent[id(at)]
                    needs.append((mod, at.attr, call_of(at)))
        for n in nodes:
            if not isinstance(n, ast.Name) or not isinstance(n.ctx, ast.Load) or id(n) in attr_bases:
                continue
            seen.add(n.id)
            alias = nested.get(n.id)
            if alias is None and n.id in stmt.globals:
                if self.aliases.get(n.id, ("",))[0] == "module":
                    needs.append((self.aliases[n.id][1], _WHOLE, None))
                needs.append((self.name, n.id, call_of(n)))
            elif alias is not None and alias[0] == "module":
                needs.append((alias[1], _WHOLE, None))
            elif alias is not None:
                needs.append((alias[1], alias[2], call_of(n)))
        for n in nodes:
            if isinstance(n, ast.Global):
                seen.update(n.names)
                needs += [(self.name, g, None) for g in n.names]
            elif self._reads_own_globals(n, stmt):
                needs.append((self.name, _WHOLE, None))
        return needs, stmt.globals - seen

    def _reads_own_globals(self, node, stmt):
        """Whether ``node`` reads this module's globals by name at run time:
        ``globals()``, ``vars()``, or ``eval`` / ``exec`` without a namespace
        of their own (the builtins, not names the module binds)."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            return False
        name = node.func.id
        if name not in stmt.globals or self.binds(name):
            return False
        if name in ("globals", "vars"):
            return not node.args
        return name in ("eval", "exec") and len(node.args) + len(node.keywords) < 2


# --------------------------------------------------------------------- slice


def _import_text(node, keep):
    """An import statement with only the aliases in ``keep``."""
    parts = ["%s as %s" % (a.name, a.asname) if a.asname else a.name for a in node.names if a in keep]
    if isinstance(node, ast.Import):
        return "import " + ", ".join(parts)
    return "from %s%s import %s" % ("." * node.level, node.module or "", ", ".join(parts))


def _order(mods, names_in_use):
    """The modules to run, dependencies first: a module's module-level imports
    of the set run before it (ties and cycles keep the given order)."""
    index = {m.name: i for i, m in enumerate(mods)}
    by_name = {m.name: m for m in mods}
    deps = {}
    for m in mods:
        d = set()
        for s in m.stmts:
            if s.is_import():
                for a in s.node.names:
                    mod = m.resolve(s.node, a)
                    for cand in (mod + "." + a.name if isinstance(s.node, ast.ImportFrom) else None, mod):
                        if cand in by_name and cand != m.name and cand != m.pkg:
                            d.add(cand)
                            break
        deps[m.name] = d
    out, state = [], {}

    def visit(name):
        if state.get(name) == 2 or state.get(name) == 1:
            return
        state[name] = 1
        for dep in sorted(deps[name], key=index.get):
            visit(dep)
        state[name] = 2
        out.append(name)

    for m in mods:
        if m.name in names_in_use:
            visit(m.name)
    return [by_name[n] for n in out if n in names_in_use]


class _Slicer:
    """One run of ``slice_modules`` over parsed modules (``_Module``): which
    modules are in use, the top-level names each needs, the statements each
    keeps and the bindings its functions run with. ``need`` asks for a name;
    ``follow`` reads what the kept statements use until nothing new is
    reached; ``slices`` gives the answer."""

    def __init__(self, mods, names):
        self.mods, self.names = mods, names
        self.by_name = {m.name: m for m in mods}
        self.needed = {m.name: set() for m in mods}  # module -> top-level names (or _WHOLE)
        self.kept = {m.name: set() for m in mods}  # module -> statement indices
        self.pruned = {m.name: set() for m in mods}
        self.state = {}  # (module, function) -> binding it runs with: {param: frozenset}
        self.processed = {}  # (module, statement index) -> the binding it was read with
        self.why = {}  # (module, name) -> the statement that first needed it
        self.in_use, self.work, self.fresh, self.done_aliases = set(), [], [], set()

    def keep(self, mod, i):
        """Keeps statement ``i`` of module ``mod``; a statement kept for the
        first time is read next (``follow``)."""
        if i not in self.kept[mod]:
            self.kept[mod].add(i)
            self.fresh.append((mod, i))

    def activate(self, mod):
        """Puts module ``mod`` (and its parent packages) in use: it keeps the
        statements that run whatever is used of it (a docstring, a call made
        at import time, a change to another module)."""
        if mod in self.in_use:
            return
        self.in_use.add(mod)
        m = self.by_name[mod]
        for i, s in enumerate(m.stmts):
            if not s.is_import() and ((not s.binds and not s.changes) or s.changes & m.imported):
                self.keep(mod, i)
        parent = mod.rpartition(".")[0]
        if parent in self.by_name:
            self.activate(parent)

    def need(self, mod, attr, via, binding=None):
        """Module ``mod`` must exist and, unless ``attr`` is None, its
        top-level name ``attr`` (``_WHOLE``: all of it), first needed by
        ``via``. ``binding``: what the function ``attr`` is called with;
        None: anything. Raises ``SliceError`` when ``mod`` is not one of the
        modules."""
        if mod not in self.by_name:
            raise SliceError("%s uses %s.%s, which is not one of the modules" % (via, mod, attr))
        self.activate(mod)
        if attr is None:
            return
        self.why.setdefault((mod, attr), via)
        m = self.by_name[mod]
        if attr in m.defs:
            old = self.state.get((mod, attr))
            new = dict(binding or {}) if old is None else _merge(old, binding or {})
            if new != old:
                self.state[(mod, attr)] = new
                i = m.stmts.index(m.defs[attr])
                if (mod, i) in self.processed and self.processed[(mod, i)] != new:
                    self.fresh.append((mod, i))
        if attr not in self.needed[mod]:
            self.needed[mod].add(attr)
            self.work.append((mod, attr))

    def follow(self):
        """Follows every use from what is needed so far until nothing new
        is reached (``_keep_binders``, ``_read_kept``, ``_need_imported``)."""
        while self.work or self.fresh:
            self._keep_binders()
            self._read_kept()
            self._need_imported()

    def _keep_binders(self):
        """Keeps, for each name asked for, the statements that bind it and
        those that change it (a submodule read as an attribute is needed
        itself). Raises ``SliceError`` for a name its module does not bind."""
        while self.work:
            mod, attr = self.work.pop()
            m = self.by_name[mod]
            if attr != _WHOLE and m.package and (mod + "." + attr) in self.by_name and not m.binds(attr):
                self.need(mod + "." + attr, None, self.why.get((mod, attr)))  # a submodule read as an attribute
                continue
            if attr != _WHOLE and not m.binds(attr):
                raise SliceError("%s uses %s.%s, which does not exist" % (self.why.get((mod, attr)), mod, attr))
            for i, s in enumerate(m.stmts):  # what binds it, and what changes it
                if attr == _WHOLE or attr in s.binds or attr in s.changes:
                    self.keep(mod, i)

    def _read_kept(self):
        """Reads each statement kept since the last time (or whose function
        runs with another binding now) and needs what it uses, with the
        binding each direct call gives its callee."""
        while self.fresh:
            mod, i = self.fresh.pop()
            m, s = self.by_name[mod], self.by_name[mod].stmts[i]
            if s.is_import():
                continue
            binding = self.state.get((mod, s.node.name)) if s.function() is not None else None
            self.processed[(mod, i)] = binding
            needs, left = m.uses(s, binding, self.names)
            self.pruned[mod] |= {n for n in left if m.binds(n)}
            via = "%s:%s" % (mod, ",".join(sorted(s.binds)) or "line %d" % s.start)
            for target, attr, call in needs:
                if target == mod and attr not in (None, _WHOLE) and not m.binds(attr):
                    continue  # a builtin, or a name _verify reports
                callee = self.by_name[target].defs.get(attr) if target in self.by_name and attr else None
                self.need(target, attr, via, _bind_call(callee.node, call) if callee is not None and call else None)

    def _need_imported(self):
        """For each name a kept import binds that is in use, needs what it
        names (the module, or the name in its module)."""
        for mod in sorted(self.in_use):
            m = self.by_name[mod]
            for i in sorted(self.kept[mod]):
                s = m.stmts[i]
                if not s.is_import():
                    continue
                for a in s.node.names:
                    bound = a.asname or a.name.split(".")[0]
                    if (bound in self.needed[mod] or _WHOLE in self.needed[mod]) \
                            and (mod, i, bound) not in self.done_aliases:
                        self.done_aliases.add((mod, i, bound))
                        one = ast.ImportFrom(module=s.node.module, names=[a], level=s.node.level) \
                            if isinstance(s.node, ast.ImportFrom) else ast.Import(names=[a])
                        for v in m.import_aliases(one, self.names).values():
                            self.need(v[1], None if v[0] == "module" else v[2], "%s:%s" % (mod, bound))

    def slices(self):
        """The sliced modules in use, in the order they must run
        (``slice_modules`` describes each dict); not yet verified."""
        out = []
        for m in _order(self.mods, self.in_use):
            bound = {f: {p: sorted(v) for p, v in b.items()} for (mod, f), b in sorted(self.state.items())
                     if mod == m.name and b and any(_decide_any(m.defs[f].node, b))}
            left = sorted(self.pruned[m.name] - self.needed[m.name])
            source, kept_names, left_out = _emit(m, self.kept[m.name], self.needed[m.name], left, bound)
            out.append({"name": m.name, "package": m.package, "path": m.path, "source": source, "kept": kept_names,
                        "left_out": left_out, "pruned": left, "bound": bound,
                        "full_bytes": len(m.source.encode("utf-8")),
                        "why": {n: self.why.get((m.name, n)) for n in sorted(self.needed[m.name])}})
        return out


def _parsed(module, names):
    """``_Module`` of one entry of ``slice_modules``' ``modules`` (its
    ``source``, else the file at its ``path``)."""
    src = module.get("source")
    if src is None:
        with open(module["path"], encoding="utf-8") as f:
            src = f.read()
    return _Module(module["name"], bool(module["package"]), module["path"], src, names)


def slice_modules(modules, entries, bindings=None):
    """Slices ``modules`` down to what ``entries`` reach.

    ``modules``: list of dicts ``{"name", "package" (bool), "path"}`` (as
    ``discover`` gives them), optionally with ``"source"`` (else read from
    ``path``). ``entries``: ``"module:name"`` strings, the top-level names the
    caller uses. ``bindings``: ``{"module:function": {param: value or list of
    values (str)}}``, the values an entry function is called with; they also
    reach the functions it calls with that parameter (or a string constant)
    as an argument, and branches that cannot run for them are not followed.

    Returns a list of dicts, in the order the modules must run: ``name``,
    ``package``, ``path``, ``source`` (the sliced source), ``kept`` and
    ``left_out`` (top-level names), ``pruned`` (names only the branches not
    followed use), ``bound`` ({function: {param: [values]}} where branches were
    decided), ``full_bytes`` (size of the whole module) and ``why`` ({name:
    the statement that first needed it}). Modules none of the code needs are
    not in the list; the parent package of a listed module always is. Raises
    ``SliceError`` when an entry or a used name does not exist, or a slice
    fails ``_verify``."""
    names = {m["name"] for m in modules}
    slicer = _Slicer([_parsed(m, names) for m in modules], names)
    for e in entries:
        mod, _, attr = e.partition(":")
        if mod not in slicer.by_name or not attr:
            raise SliceError("entry %r names no module of the set" % e)
        given = (bindings or {}).get(e) or {}
        slicer.need(mod, attr, "entry", {p: frozenset([v] if isinstance(v, str) else v) for p, v in given.items()})
    slicer.follow()
    out = slicer.slices()
    _verify(out, names)
    return out


def _decide_any(fn, binding):
    """For each ``if`` of ``fn``: whether ``binding`` decides it."""
    known = _trusted(fn, binding)
    return [_decide(n.test, known) is not None for n in ast.walk(fn) if isinstance(n, ast.If)]


def _emit(m, kept, needed, pruned, bound):
    """(sliced source, kept names, left-out names) of module ``m``: a comment
    saying what was left out (``pruned``: names only the branches not taken
    under ``bound`` use), then the kept statements verbatim, each with the
    comment lines above it; an import keeps only its needed names."""
    chunks = []
    prev_end = 0
    kept_names, left_out = set(), set()
    for i, s in enumerate(m.stmts):
        if i not in kept:
            left_out |= s.binds
            prev_end = s.end
            continue
        head = "".join(m.lines[prev_end:s.start - 1])
        if s.is_import() and _WHOLE not in needed:
            live = [a for a in s.node.names if (a.asname or a.name.split(".")[0]) in needed]
            left_out |= {a.asname or a.name.split(".")[0] for a in s.node.names if a not in live}
            if len(live) < len(s.node.names):
                if live:
                    chunks.append(head + _import_text(s.node, live) + "\n")
                    kept_names |= {a.asname or a.name.split(".")[0] for a in live}
                prev_end = s.end
                continue
        chunks.append(head + "".join(m.lines[s.start - 1:s.end]))
        kept_names |= s.binds
        prev_end = s.end
    text = "".join(chunks)
    while "\n\n\n\n" in text:
        text = text.replace("\n\n\n\n", "\n\n\n")
    text = text.lstrip("\n")
    left_out -= kept_names
    path = m.name.replace(".", "/") + ("/__init__.py" if m.package else ".py")
    defs = [i for i, s in enumerate(m.stmts) if s.binds and not s.is_import()]
    head = "%s, sliced: %d of its %d top-level definitions" % (path, len([i for i in defs if i in kept]), len(defs))
    if left_out:
        head += "; left out (this reproducer never reaches them): " + ", ".join(sorted(left_out))
    if bound:
        head += ". Runs only with " + "; ".join(
            "%s(%s)" % (f, ", ".join("%s=%s" % (p, "|".join(repr(v) for v in vs)) for p, vs in sorted(b.items())))
            for f, b in sorted(bound.items())) + ": the branches for other values are not followed"
        if pruned:
            head += " (" + ", ".join(pruned) + " only used there)"
    return _wrap_comment(head + ".") + text, sorted(kept_names), sorted(left_out)


def _wrap_comment(text, width=100):
    """``text`` as comment lines of at most ``width`` characters (a longer
    word stays whole)."""
    lines = textwrap.wrap(text, width - 2, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    return "".join("# " + line + "\n" for line in lines)


# -------------------------------------------------------------------- verify


def _verify(sliced, names):
    """Raises ``SliceError`` unless every sliced module compiles, every
    global name it uses is defined in it (or is a builtin, a module dunder, a
    submodule of the package, or left out with a branch not taken), every
    import of the set it runs finds its module and name, and every
    ``module.name`` it uses (outside the branches not taken, per the slice's
    ``bound``) exists in the sliced module."""
    by_name = {s["name"]: s for s in sliced}
    parsed = {s["name"]: _Module(s["name"], s["package"], s["path"], s["source"], names) for s in sliced}
    defined = {n: set().union(set(), *[t.binds for t in m.stmts]) for n, m in parsed.items()}
    allowed = set(dir(builtins)) | _MODULE_DUNDERS
    for s in sliced:
        mod = parsed[s["name"]]
        submodules = {n.rpartition(".")[2] for n in by_name if n.rpartition(".")[0] == s["name"]}
        ok = defined[s["name"]] | allowed | set(s["pruned"]) | submodules
        for t in mod.stmts:
            missing = sorted(t.globals - ok)
            if missing:
                raise SliceError("%s: the slice uses %s but does not define it" % (s["name"], ", ".join(missing)))
            if t.is_import():
                needs = []
                for a in t.node.names:
                    target = mod.resolve(t.node, a)
                    sub = target + "." + a.name if isinstance(t.node, ast.ImportFrom) else None
                    if sub in names:
                        needs.append((sub, None, None))
                    elif target in names or target.split(".")[0] in names and sub is None:
                        needs.append((target if target in names else target.split(".")[0],
                                      a.name if sub else None, None))
            else:
                binding = s["bound"].get(t.node.name) if t.function() is not None else None
                needs, _left = mod.uses(t, {p: frozenset(v) for p, v in (binding or {}).items()}, names)
            for target, attr, _call in needs:
                if target not in by_name:
                    raise SliceError("%s: the slice needs module %s, which is left out" % (s["name"], target))
                if attr in (None, _WHOLE) or attr in allowed and target == s["name"]:
                    continue
                if attr not in defined[target] and (target + "." + attr) not in by_name and not (
                        target == s["name"] and attr in s["pruned"]):
                    raise SliceError("%s: the slice uses %s.%s, which is left out" % (s["name"], target, attr))


# ------------------------------------------------------------------- render


def strip_docstrings(source):
    """``source`` without the docstrings of its module, classes and functions
    (a body that was only a docstring becomes ``pass``). A docstring that
    shares a line with other code is kept. Raises ``SliceError`` if the result
    does not compile."""
    tree = ast.parse(source)
    lines = source.splitlines(True)
    cuts = []
    for n in ast.walk(tree):
        if not isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not n.body:
            continue
        d = n.body[0]
        if not (isinstance(d, ast.Expr) and isinstance(d.value, ast.Constant) and isinstance(d.value.value, str)):
            continue
        first, last = lines[d.lineno - 1], lines[d.end_lineno - 1]
        if first[:d.col_offset].strip() or last[d.end_col_offset:].strip():
            continue  # shares a line with other code
        if len(n.body) > 1 and n.body[1].lineno == d.end_lineno:
            continue
        cuts.append((d.lineno, d.end_lineno, " " * d.col_offset + "pass\n" if len(n.body) == 1 else ""))
    for first, last, repl in sorted(cuts, reverse=True):
        lines[first - 1:last] = [repl] if repl else []
    out = "".join(lines)
    try:
        compile(out, "<stripped>", "exec", dont_inherit=True)
    except SyntaxError as e:
        raise SliceError("removing docstrings broke the source: %s (line %s)" % (e.msg, e.lineno)) from None
    return out


def strip_comments(source):
    """``source`` without its ``#`` comments: a line that held only a comment
    goes, a comment after code is cut with the blanks before it; the rest of
    the text is unchanged. For the packed block, which nobody reads as
    source (``render``). Raises ``SliceError`` if the result does not
    compile."""
    import io
    import tokenize

    lines = source.splitlines(True)
    cut = {}  # line number -> column where its comment starts
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            cut[tok.start[0]] = tok.start[1]
    out = []
    for i, line in enumerate(lines, 1):
        if i not in cut:
            out.append(line)
            continue
        code = line[:cut[i]].rstrip()
        if code:
            out.append(code + "\n")
    text = "".join(out)
    try:
        compile(text, "<uncommented>", "exec", dont_inherit=True)
    except SyntaxError as e:
        raise SliceError("stripping comments broke the source: %s" % e)
    return text


def literal(source):
    """A Python string literal whose value is ``source``: a raw
    triple-quoted string (readable, one source line per line) when that reads
    back exactly, else an escaped one-line literal."""
    text = "r'''" + source + "'''"
    try:
        if ast.literal_eval(text) == source:
            return text
    except (SyntaxError, ValueError):
        pass
    return repr(source)


def packed(sources, width=76):
    """``sources`` ({module name: source}) as one compressed block: JSON,
    zlib (level 9), base85 (no quote or backslash in its alphabet), as one
    triple-quoted string literal in lines of ``width`` characters (the line
    ends are layout, not data: one byte a line, where a string literal a
    line cost seven). ``unpack`` reads it back."""
    blob = json.dumps(sources, sort_keys=True).encode("utf-8")
    data = base64.b85encode(zlib.compress(blob, 9)).decode("ascii")
    return '"""\n' + "".join(data[i:i + width] + "\n" for i in range(0, len(data), width)) + '"""'


def unpack(data):
    """The {module name: source} that ``packed`` wrote as ``data`` (the
    string, its line ends dropped)."""
    return json.loads(zlib.decompress(base64.b85decode("".join(data.split()))).decode("utf-8"))


# Packed first when the code does not fit: the machinery that observes a case,
# before the judgement a reader checks (flagprop.judging.checks, flagprop.judging.verdicts).
PACK_ORDER = ("flagprop_mocks.libentry", "flagprop_mocks", "flagprop_mocks.spec", "flagprop.engine.launch",
              "flagprop.engine.real_launch", "flagprop.engine.observe", "flagprop.engine.loader",
              "flagprop.engine.session", "flagprop.observers.hits", "flagprop.observers.streams",
              "flagprop.observers.timing", "flagprop.engine.ops", "flagprop.engine.facts", "flagprop.judging.verdicts",
              "flagprop.judging.checks", "flagprop.engine", "flagprop.observers", "flagprop.judging", "flagprop")


def render(sliced, budget):
    """The module table a reproducer runs, as Python source text.

    ``sliced``: ``slice_modules``' answer. Docstrings are removed
    (``strip_docstrings``). The text defines ``_MODULES``, a list of
    ``(name, is_package, source or None)`` in the order the modules run, and
    ``_PACKED``, the ``packed`` block of the modules whose source is None
    there. Every module is readable source (``literal``) unless the text
    would exceed ``budget`` bytes: then modules move into the packed block
    (their comments stripped: ``strip_comments``), in ``PACK_ORDER``
    (modules not listed there first), until it fits or all are packed.

    Returns {"text", "bytes" (its size), "packed" (names packed), "modules"
    (names), "full_bytes" (size of the whole modules), "code_bytes" (size of
    the stripped slices)}."""
    stripped = [(s["name"], bool(s["package"]), strip_docstrings(s["source"])) for s in sliced]
    rank = {n: (PACK_ORDER.index(n) if n in PACK_ORDER else -1, i) for i, (n, _p, _s) in enumerate(stripped)}
    order = sorted(rank, key=rank.get)

    def table(pack):
        out = ["_MODULES = []\n"]
        for name, package, src in stripped:
            out.append("_MODULES.append((%r, %s, %s))\n" % (name, package, "None" if name in pack else literal(src)))
        out.append("_PACKED = %s\n" % (packed({n: strip_comments(src) for n, _p, src in stripped if n in pack})
                                         if pack else '""'))
        return "".join(out)

    pack = []
    text = table(pack)
    for name in order:
        if len(text.encode("utf-8")) <= budget:
            break
        pack.append(name)
        text = table(pack)
    return {"text": text, "bytes": len(text.encode("utf-8")), "packed": [n for n in order if n in pack],
            "modules": [n for n, _p, _s in stripped], "full_bytes": sum(s["full_bytes"] for s in sliced),
            "code_bytes": sum(len(src.encode("utf-8")) for _n, _p, src in stripped)}


# ----------------------------------------------------------------------- cli


def main(argv=None):
    """Command line: ``--request FILE`` and ``--out FILE``.

    The request (JSON): ``folders`` (where the packages are, as on
    ``sys.path``), ``packages``, ``entries``, ``bindings`` (see
    ``slice_modules``) and ``budget`` (bytes, see ``render``). The answer
    written to ``--out`` (JSON): ``ok`` true with ``table`` (``render``'s
    text), ``modules``, ``packed``, ``bytes``, ``full_bytes`` and ``sliced``
    (false when slicing failed and the whole modules are in the table;
    ``note`` says why), or ``ok`` false with ``error``. Exit status 0 when
    ``ok``, 1 when not, 2 on bad usage."""
    p = argparse.ArgumentParser(description="Slice flagprop's Python modules for a reproducer.")
    p.add_argument("--request", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    try:
        with open(args.request, encoding="utf-8") as f:
            req = json.load(f)
        mods = discover(req["folders"], req["packages"])
        budget = int(req.get("budget", 40000))
        try:
            sliced, note = slice_modules(mods, req["entries"], req.get("bindings")), ""
        except SliceError as e:  # the whole modules: bigger, never wrong
            note = "slicing failed (%s); the whole modules are embedded" % e
            sliced = slice_modules(mods, ["%s:%s" % (m["name"], _WHOLE) for m in mods])
        answer = dict(render(sliced, budget), ok=True, sliced=not note, note=note)
        code = 0
    except (SliceError, OSError, KeyError, ValueError, TypeError) as e:
        answer, code = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}, 1
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(answer, f)
    return code


if __name__ == "__main__":
    sys.exit(main())
