"""flagprop's Python subpackages depend one way: a module imports only from
its own subpackage and the ones below it. The order (lowest first):
engine, observers, judging, reporting, tools (docs/design.md, "Layers";
tests/unit/test_layers.cpp checks the C++ side the same way). Every import
counts: at module level or inside a function, ``import a.b`` or ``from .x
import y``, relative or absolute.

Run from this folder: python3 -B -m unittest -v test_python_layers.
"""

import ast
import os
import tempfile
import textwrap
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

#: The subpackages of ``flagprop``, lowest layer first.
LAYERS = ("engine", "observers", "judging", "reporting", "tools")
PACKAGE = "flagprop"


def modules(root):
    """{dotted module name: path} of every ``.py`` file of the package
    ``PACKAGE`` under folder ``root`` (``root/flagprop/...``)."""
    out = {}
    base = os.path.join(root, PACKAGE)
    for folder, dirs, files in os.walk(base):
        dirs.sort()
        rel = os.path.relpath(folder, root).split(os.sep)
        for f in sorted(files):
            if f.endswith(".py"):
                parts = rel + ([] if f == "__init__.py" else [f[:-3]])
                out[".".join(parts)] = os.path.join(folder, f)
    return out


def imported(name, path):
    """[(line, absolute name)] of every import in module ``name`` (its file
    at ``path``), wherever it stands: ``import a.b`` names ``a.b``; ``from
    M import x`` names ``M.x`` (``x`` may be a module of ``M``, or a name
    in it: the layer is the same unless ``M`` is the package itself);
    relative imports resolved against the module's package."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            out += [(node.lineno, module + "." + a.name) for a in node.names]
    return out


def layer(name):
    """The subpackage of ``flagprop`` that module ``name`` is in; "" for
    the package itself; None for a module outside ``flagprop``."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else ""


def rank(sub):
    """The position of subpackage ``sub`` in ``LAYERS`` (-1 for the package
    itself, which every layer may import and which imports none; None for
    a subpackage the order does not name)."""
    if sub == "":
        return -1
    return LAYERS.index(sub) if sub in LAYERS else None


def back_edges(root):
    """"module: imports higher.module (line N)" for every import, under
    ``root``, of a module in a higher layer than the importer's; a module
    of a subpackage ``LAYERS`` does not name is one too ("not in the
    layer order")."""
    out = []
    for name, path in sorted(modules(root).items()):
        own = layer(name)
        if rank(own) is None:
            out.append("%s: is in %s.%s, which is not in the layer order %s" % (name, PACKAGE, own, LAYERS))
            continue
        for line, target in imported(name, path):
            sub = layer(target)
            if sub is None or sub == own:
                continue
            if rank(sub) is None or rank(sub) > rank(own):
                out.append("%s: imports %s (line %d)" % (name, target, line))
    return out


def write_tree(root, files):
    """Writes ``files`` ({relative path: source}) under ``root``."""
    for rel, source in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(source))


class PythonLayers(unittest.TestCase):

    def test_no_lower_layer_imports_a_higher_one(self):
        root = os.path.join(SOURCE_DIR, "python")
        found = modules(root)
        self.assertIn("flagprop.judging.checks", found)  # the walk sees the real tree
        self.assertEqual(back_edges(root), [])
        for sub in LAYERS:
            self.assertTrue(os.path.isfile(os.path.join(root, PACKAGE, sub, "__init__.py")), sub)

    def test_the_check_catches_each_kind_of_back_edge(self):
        """A made-up tree with one back edge of each kind (relative,
        absolute, from the package, inside a function, a whole-module
        import) and forward edges that must pass."""
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {
                "flagprop/__init__.py": '"""root"""\n',
                "flagprop/engine/__init__.py": "",
                "flagprop/engine/ops.py": """\
                    import os
                    from . import facts
                    from ..judging import verdicts


                    def later():
                        from ..observers import streams
                        return streams
                    """,
                "flagprop/engine/facts.py": "import math\n",
                "flagprop/observers/__init__.py": "",
                "flagprop/observers/streams.py": """\
                    from ..engine import ops
                    from .. import reporting
                    """,
                "flagprop/judging/__init__.py": "",
                "flagprop/judging/verdicts.py": "from ..engine.facts import overlap\n",
                "flagprop/judging/checks.py": """\
                    from ..observers import streams
                    from ..engine import ops
                    from . import verdicts
                    import flagprop.tools.slim
                    """,
                "flagprop/reporting/__init__.py": "",
                "flagprop/reporting/drafts.py": "from flagprop.judging.verdicts import finding_kind\n",
                "flagprop/tools/__init__.py": "",
                "flagprop/tools/slim.py": "import flagprop.engine.ops as ops\n",
            })
            self.assertEqual(back_edges(root), [
                "flagprop.engine.ops: imports flagprop.judging.verdicts (line 3)",
                "flagprop.engine.ops: imports flagprop.observers.streams (line 7)",
                "flagprop.judging.checks: imports flagprop.tools.slim (line 4)",
                "flagprop.observers.streams: imports flagprop.reporting (line 2)",
            ])
            write_tree(root, {"flagprop/extras/__init__.py": "", "flagprop/engine/more.py": "from ..extras import x\n"})
            edges = back_edges(root)
            self.assertIn("flagprop.engine.more: imports flagprop.extras.x (line 1)", edges)
            self.assertIn("flagprop.extras: is in flagprop.extras, which is not in the layer order %s" % (LAYERS,),
                          edges)


if __name__ == "__main__":
    unittest.main()
