"""Tests of flagprop.tools.slim, which cuts flagprop's Python modules down to what a
reproducer runs. Run: python3 -m unittest -v tests/repro/test_slim.py (from
the flagprop checkout; the real-module tests need torch)."""

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

from flagprop.tools import slim  # noqa: E402

KINDS = ("install", "install2", "launch", "key", "op", "hits", "streams", "timing")


def modules(**files):
    """A module set from {"pkg/__init__": source, "pkg/a": source, ...}."""
    out = []
    for key, src in files.items():
        name = key.replace("/", ".").replace(".__init__", "")
        out.append({"name": name, "package": key.endswith("__init__"), "path": key + ".py",
                    "source": textwrap.dedent(src)})
    return out


def load(sliced, prefix):
    """Runs sliced modules as the reproducer does: every module registered
    first, then each executed in order. Returns {name: module}; the modules
    are removed from sys.modules again by the caller (``unload``)."""
    mods = {}
    for s in sliced:
        m = types.ModuleType(s["name"])
        m.__package__ = s["name"] if s["package"] else s["name"].rpartition(".")[0]
        if s["package"]:
            m.__path__ = []
        mods[s["name"]] = sys.modules[s["name"]] = m
    for s in sliced:
        parent, _, leaf = s["name"].rpartition(".")
        if parent:
            setattr(mods[parent], leaf, mods[s["name"]])
    for s in sliced:
        exec(compile(s["source"], "<sliced %s>" % s["name"], "exec"), mods[s["name"]].__dict__)
    return mods


def unload(prefix):
    """Removes ``prefix`` and its submodules from sys.modules."""
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
        del sys.modules[name]


def by_name(sliced):
    """{module name: its slice}."""
    return {s["name"]: s for s in sliced}


def top_names(source):
    """The functions, classes and plain assignments at the top of ``source``."""
    tree = ast.parse(source)
    out = set()
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Assign):
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return out


class Slicing(unittest.TestCase):
    """slice_modules on small module sets written for the test."""

    def tearDown(self):
        unload("toy")

    def test_keeps_what_the_entries_reach_across_modules(self):
        mods = modules(**{
            "toy/__init__": '"""A toy package."""\n',
            "toy/a": """
                '''Module a.'''
                from . import b
                from .c import helper as aid

                LIMIT = 3


                def used(x):
                    '''Uses b and c.'''
                    return b.double(x) + aid(x) + LIMIT


                def unused():
                    return b.never()
                """,
            "toy/b": """
                def double(x):
                    return 2 * x


                def never():
                    return 0
                """,
            "toy/c": """
                def helper(x):
                    return x + 1
                """,
            "toy/d": """
                def lonely():
                    return 1
                """,
        })
        sliced = slim.slice_modules(mods, ["toy.a:used"])
        got = by_name(sliced)
        self.assertNotIn("toy.d", got)  # nothing reaches it
        self.assertEqual(top_names(got["toy.a"]["source"]), {"LIMIT", "used"})
        self.assertEqual(top_names(got["toy.b"]["source"]), {"double"})
        self.assertIn("unused", got["toy.a"]["left_out"])
        self.assertIn("never", got["toy.b"]["left_out"])
        # dependencies run first; the package before its modules need it
        order = [s["name"] for s in sliced]
        self.assertLess(order.index("toy.b"), order.index("toy.a"))
        self.assertLess(order.index("toy.c"), order.index("toy.a"))
        ran = load(sliced, "toy")
        self.assertEqual(ran["toy.a"].used(1), 2 + 2 + 3)

    def test_subpackages_their_relative_imports_and_dotted_module_paths(self):
        mods = modules(**{
            "toy/__init__": '"""A toy package."""\n',
            "toy/low/__init__": '"""A subpackage."""\n',
            "toy/low/b": """
                def double(x):
                    return 2 * x


                def never():
                    return 0
                """,
            "toy/high/__init__": "",
            "toy/high/a": """
                from ..low import b


                def used(x):
                    import toy.low.c

                    return b.double(x) + toy.low.c.triple(x)
                """,
            "toy/low/c": """
                def triple(x):
                    return 3 * x


                def unused():
                    return 0
                """,
        })
        sliced = slim.slice_modules(mods, ["toy.high.a:used"])
        got = by_name(sliced)
        self.assertIn("toy.low", got)  # the parents of every module kept
        self.assertIn("toy.high", got)
        self.assertEqual(top_names(got["toy.low.b"]["source"]), {"double"})
        self.assertEqual(top_names(got["toy.low.c"]["source"]), {"triple"})  # reached through toy.low.c.triple
        order = [s["name"] for s in sliced]
        self.assertLess(order.index("toy.low.b"), order.index("toy.high.a"))
        ran = load(sliced, "toy")
        self.assertEqual(ran["toy.high.a"].used(1), 2 + 3)

    def test_a_module_used_as_a_value_is_kept_whole(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                from . import b


                def f():
                    return getattr(b, "anything")
                """,
            "toy/b": """
                def anything():
                    return 1


                def other():
                    return 2
                """,
        })
        got = by_name(slim.slice_modules(mods, ["toy.a:f"]))
        self.assertEqual(top_names(got["toy.b"]["source"]), {"anything", "other"})

    def test_code_that_reads_its_globals_by_name_keeps_its_module_whole(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                def f(name):
                    return globals()[name]()


                def g():
                    return 7


                def h(code, ns):
                    return exec(code, ns)  # a namespace of its own: reads nothing of toy.a
                """,
        })
        self.assertEqual(top_names(by_name(slim.slice_modules(mods, ["toy.a:f"]))["toy.a"]["source"]),
                         {"f", "g", "h"})
        self.assertEqual(top_names(by_name(slim.slice_modules(mods, ["toy.a:h"]))["toy.a"]["source"]), {"h"})

    def test_an_import_inside_a_function_is_followed(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                def f():
                    from . import b
                    return b.g()
                """,
            "toy/b": """
                def g():
                    return 5


                def h():
                    return 6
                """,
        })
        sliced = slim.slice_modules(mods, ["toy.a:f"])
        self.assertEqual(top_names(by_name(sliced)["toy.b"]["source"]), {"g"})
        self.assertEqual(load(sliced, "toy")["toy.a"].f(), 5)

    def test_statements_that_change_a_kept_object_are_kept(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                import logging

                logging.getLogger("toy").setLevel(logging.ERROR)
                REGISTRY = {}
                REGISTRY["x"] = 1
                OTHER = []
                OTHER.append(2)


                class Thing:
                    pass


                Thing.__name__ = "Renamed"


                def f():
                    return REGISTRY["x"], Thing.__name__
                """,
        })
        sliced = slim.slice_modules(mods, ["toy.a:f"])
        src = by_name(sliced)["toy.a"]["source"]
        self.assertIn('REGISTRY["x"] = 1', src)
        self.assertIn('Thing.__name__ = "Renamed"', src)
        self.assertIn('logging.getLogger("toy").setLevel', src)  # changes another module: always kept
        self.assertNotIn("OTHER.append", src)
        self.assertIn("OTHER", by_name(sliced)["toy.a"]["left_out"])
        self.assertEqual(load(sliced, "toy")["toy.a"].f(), (1, "Renamed"))

    def test_a_bound_parameter_prunes_branches_through_calls(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                from . import b


                def check(kind, x):
                    return _check(kind, x)


                def _check(kind, x):
                    if kind == "one":
                        return _one(x)
                    elif kind in ("two", "three"):
                        return b.two(x)
                    if kind != "one":
                        return _other(x)
                    raise ValueError(kind)


                def _one(x):
                    return x + 1


                def _other(x):
                    return x


                def describe(kind):
                    return _one(0) if kind == "one" else b.three()
                """,
            "toy/b": """
                def two(x):
                    return 2 * x


                def three():
                    return 3
                """,
        })
        sliced = slim.slice_modules(mods, ["toy.a:check"], {"toy.a:check": {"kind": "one"}})
        got = by_name(sliced)
        self.assertEqual(top_names(got["toy.a"]["source"]), {"check", "_check", "_one"})
        self.assertNotIn("toy.b", got)  # only the branches not taken use it
        self.assertIn("_other", got["toy.a"]["pruned"])
        self.assertEqual(got["toy.a"]["bound"], {"_check": {"kind": ["one"]}})
        self.assertIn('if kind == "one":', got["toy.a"]["source"])  # the function's text is unchanged
        self.assertEqual(load(sliced, "toy")["toy.a"].check("one", 1), 2)
        # two values: both branches; an unbound call (describe) keeps everything it reaches
        two = by_name(slim.slice_modules(mods, ["toy.a:check"], {"toy.a:check": {"kind": ["one", "two"]}}))
        self.assertEqual(top_names(two["toy.b"]["source"]), {"two"})
        full = by_name(slim.slice_modules(mods, ["toy.a:check", "toy.a:describe"]))
        self.assertEqual(top_names(full["toy.a"]["source"]), {"check", "_check", "_one", "_other", "describe"})

    def test_a_reassigned_or_shadowed_parameter_is_not_trusted(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                def f(kind):
                    kind = kind.strip()
                    if kind == "one":
                        return _one()
                    return _two()


                def g(kind):
                    inner = lambda kind: _two() if kind == "two" else None
                    if kind == "one":
                        return inner("two")
                    return _three()


                def _one():
                    return 1


                def _two():
                    return 2


                def _three():
                    return 3
                """,
        })
        f = by_name(slim.slice_modules(mods, ["toy.a:f"], {"toy.a:f": {"kind": "one"}}))
        self.assertEqual(top_names(f["toy.a"]["source"]), {"f", "_one", "_two"})
        # a lambda's own ``kind`` shadows it: nothing in g is pruned
        g = by_name(slim.slice_modules(mods, ["toy.a:g"], {"toy.a:g": {"kind": "one"}}))
        self.assertEqual(top_names(g["toy.a"]["source"]), {"g", "_two", "_three"})

    def test_a_missing_name_or_entry_is_an_error(self):
        mods = modules(**{
            "toy/__init__": "",
            "toy/a": """
                from . import b


                def f():
                    return b.missing()
                """,
            "toy/b": "X = 1\n",
        })
        with self.assertRaises(slim.SliceError):
            slim.slice_modules(mods, ["toy.a:f"])
        with self.assertRaises(slim.SliceError):
            slim.slice_modules(mods, ["toy.a:nothing"])

    def test_verify_catches_a_slice_that_drops_a_used_name(self):
        mods = modules(**{"toy/__init__": "", "toy/a": "def f():\n    return g()\n\n\ndef g():\n    return 1\n"})
        sliced = slim.slice_modules(mods, ["toy.a:f"])
        self.assertIn("def g", by_name(sliced)["toy.a"]["source"])
        broken = [dict(s) for s in sliced]
        for s in broken:
            if s["name"] == "toy.a":
                s["source"] = "def f():\n    return g()\n"
        with self.assertRaises(slim.SliceError) as e:
            slim._verify(broken, {s["name"] for s in broken})
        self.assertIn("g", str(e.exception))


class Rendering(unittest.TestCase):
    """strip_docstrings, literal, packed and render."""

    def test_strip_docstrings(self):
        src = textwrap.dedent('''\
            """Module doc."""
            import os


            def f():
                """Only a docstring."""


            def g(x):
                """Doc
                over lines."""
                return x


            class C:
                """Doc."""

                def m(self): """Kept: it shares its line."""; return 1
            ''')
        out = slim.strip_docstrings(src)
        self.assertNotIn("Module doc", out)
        self.assertNotIn("over lines", out)
        self.assertIn("Kept: it shares its line", out)
        ns = {}
        exec(compile(out, "<stripped>", "exec"), ns)
        self.assertIsNone(ns["f"]())
        self.assertEqual(ns["g"](4), 4)
        self.assertEqual(ns["C"]().m(), 1)

    def test_literal_reads_back_exactly(self):
        for src in ("plain\nsource\n", "has ''' inside", "ends with a backslash\\", 'a "quote"\n\\n raw\n', "",
                    "tab\there \x00 nul", "non-ASCII \u00b5s"):
            lit = slim.literal(src)
            self.assertEqual(ast.literal_eval(lit), src, lit)
        self.assertTrue(slim.literal("x = 1\n").startswith("r'''"))

    def test_packed_reads_back(self):
        sources = {"a": "x = 1\n" * 100, "b": "\u00b5 \\ ''' \"\n"}
        text = slim.packed(sources)
        self.assertNotIn("\\", text)
        self.assertEqual(slim.unpack(ast.literal_eval(text)), sources)
        self.assertTrue(all(len(line) <= 82 for line in text.splitlines()))

    def test_strip_comments_keeps_the_code_and_strings(self):
        src = ('x = 1  # one\n'
               '# a line of its own\n'
               'y = "#not a comment"  # but this is\n'
               'if x:\n'
               '    # indented\n'
               '    z = """\n# inside a string\n"""\n')
        out = slim.strip_comments(src)
        self.assertEqual(out, 'x = 1\ny = "#not a comment"\nif x:\n    z = """\n# inside a string\n"""\n')
        ns = {}
        exec(out, ns)
        self.assertEqual((ns["x"], ns["y"], ns["z"]), (1, "#not a comment", "\n# inside a string\n"))

    def test_packed_modules_carry_no_comments(self):
        sliced = [{"name": "flagprop.engine.ops", "package": False,
                   "source": "def f():\n    # why\n    return %r  # what\n" % ("o" * 800), "full_bytes": 900}]
        tight = slim.render(sliced, 100)
        self.assertEqual(tight["packed"], ["flagprop.engine.ops"])
        ns = {}
        exec(tight["text"], ns)
        src = slim.unpack(ns["_PACKED"])["flagprop.engine.ops"]
        self.assertNotIn("#", src)
        self.assertIn("return", src)

    def test_render_packs_in_order_until_it_fits(self):
        sliced = [{"name": n, "package": False, "source": "def f():\n    return %r\n" % (n * 400),
                   "full_bytes": 1000} for n in ("flagprop.judging.checks", "flagprop_mocks.libentry", "flagprop.engine.ops")]
        loose = slim.render(sliced, 10 ** 9)
        self.assertEqual(loose["packed"], [])
        tight = slim.render(sliced, loose["bytes"] - 1000)
        self.assertEqual(tight["packed"][0], "flagprop_mocks.libentry")  # machinery first
        self.assertNotIn("flagprop.judging.checks", tight["packed"])
        self.assertLessEqual(tight["bytes"], loose["bytes"] - 1000)
        ns = {}
        exec(tight["text"], ns)
        unpacked = slim.unpack(ns["_PACKED"])
        for name, _pkg, src in ns["_MODULES"]:
            self.assertIn("def f", src if src is not None else unpacked[name])


class RealModules(unittest.TestCase):
    """flagprop's own modules, sliced for every check kind as the reproducer
    writer asks (reports/reproducer.cpp)."""

    @classmethod
    def setUpClass(cls):
        cls.mods = slim.discover([os.path.join(SOURCE_DIR, "python"), os.path.join(SOURCE_DIR, "mocks")],
                                 ["flagprop_mocks", "flagprop"])

    def slice(self, kind):
        """flagprop's modules sliced as the reproducer writer asks for ``kind``."""
        entries = ["flagprop.judging.checks:check", "flagprop.judging.checks:describe", "flagprop.judging.checks:verdict_of"]
        if kind == "op":
            entries += ["flagprop.engine.ops:setup", "flagprop.engine.ops:build_cpu"]
        bind = {"kind": kind}
        return slim.slice_modules(self.mods, entries,
                                  {"flagprop.judging.checks:check": bind, "flagprop.judging.checks:describe": bind})

    def test_every_kind_slices_and_keeps_less(self):
        full = sum(m["full_bytes"] for m in slim.slice_modules(self.mods, ["flagprop.judging.checks:check"]))
        for kind in KINDS:
            with self.subTest(kind=kind):
                sliced = self.slice(kind)
                got = by_name(sliced)
                self.assertIn("check", got["flagprop.judging.checks"]["kept"])
                self.assertLess(sum(len(s["source"]) for s in sliced), full)
                if kind in ("install", "install2", "launch", "key"):
                    self.assertNotIn("flagprop.engine.ops", got)  # installer properties never build op inputs
                    self.assertNotIn("flagprop.observers.timing", got)
                if kind == "op":
                    self.assertIn("observe_judged", got["flagprop.judging.checks"]["kept"])
                    self.assertIn("findings_of", got["flagprop.judging.checks"]["kept"])
                    self.assertNotIn("flagprop.observers.timing", got)

    def test_a_sliced_check_judges_like_the_whole_modules(self):
        """P1 on a fixture installer (the R5 silent skip) through the sliced
        install kind, loaded alone, and through the whole modules: the same
        verdict and evidence."""
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("needs torch")
        target = {
            "name": "t", "device": "cpu", "gate_builds": ["dcu", "cuda"], "reports_once": False,
            "default_gates": {"accelerator": "dcu", "routes_to_flaggems": True},
            "installer": {"mode": "source", "module": "torch_fl.flagos", "function": "_patch_flaggems_pointwise_dispatch",
                          "path": os.path.join(SOURCE_DIR, "fixtures", "installers", "example_installer.py"),
                          "python_path": [], "globals": {"FAULTS": ["silent_skip"]}, "components": []},
            "flag_gems": {"kind": "mock", "path": "", "supply_helper": False, "mock": {}},
            "ops": {"kind": "aten", "path": "", "globals": {}, "enable": ""},
        }
        case = {"gates": {"accelerator": "dcu", "routes_to_flaggems": True}, "mock": {"helper": "absent"}}
        roots = ("flagprop", "flagprop_mocks", "flag_gems", "torch_fl", "triton")
        saved = {n: m for n, m in sys.modules.items() if n.split(".")[0] in roots}
        path = list(sys.path)

        def fresh():
            for n in [n for n in sys.modules if n.split(".")[0] in roots]:
                del sys.modules[n]

        try:
            fresh()
            sliced = self.slice("install")
            self.assertNotIn("flagprop.engine.ops", by_name(sliced))
            mods = load(sliced, "flagprop")
            cut = mods["flagprop.judging.checks"].check("install", target, case)
            fresh()
            sys.path[:0] = [os.path.join(SOURCE_DIR, "python"), os.path.join(SOURCE_DIR, "mocks")]
            import flagprop.judging.checks as whole_checks

            self.assertNotIn("<sliced", whole_checks.check.__code__.co_filename)
            whole = whole_checks.check("install", target, case)
            self.assertFalse(cut["pass"], cut["reason"])
            self.assertIn("silent-skip", cut["reason"])
            self.assertEqual((cut["pass"], cut["reason"], cut["tag"]), (whole["pass"], whole["reason"], whole["tag"]))
            self.assertEqual(cut["evidence"]["components"], whole["evidence"]["components"])
        finally:
            fresh()
            sys.modules.update(saved)
            sys.path[:] = path

    def test_command_line(self):
        work = tempfile.mkdtemp()
        try:
            req = os.path.join(work, "req.json")
            out = os.path.join(work, "out.json")
            folders = [os.path.join(SOURCE_DIR, "python"), os.path.join(SOURCE_DIR, "mocks")]
            with open(req, "w") as f:
                json.dump({"folders": folders, "packages": ["flagprop_mocks", "flagprop"],
                           "entries": ["flagprop.judging.checks:check"],
                           "bindings": {"flagprop.judging.checks:check": {"kind": "key"}},
                           # The key slice packs to about 20.1 KB; its header lists every definition left
                           # out, which grows with the modules even where the code kept does not.
                           "budget": 21000}, f)
            script = os.path.join(SOURCE_DIR, "python", "flagprop", "tools", "slim.py")
            rc = subprocess.call([sys.executable, "-I", "-S", script, "--request", req, "--out", out])
            self.assertEqual(rc, 0)
            with open(out) as f:
                answer = json.load(f)
            self.assertTrue(answer["ok"] and answer["sliced"], answer.get("note"))
            self.assertLessEqual(answer["bytes"], 21000)
            self.assertLess(answer["code_bytes"], answer["full_bytes"])
            # an entry that does not exist: the whole modules, said so
            with open(req, "w") as f:
                json.dump({"folders": folders, "packages": ["flagprop_mocks", "flagprop"],
                           "entries": ["flagprop.judging.checks:no_such_function"], "budget": 10 ** 9}, f)
            self.assertEqual(subprocess.call([sys.executable, "-I", "-S", script, "--request", req, "--out", out]), 0)
            with open(out) as f:
                answer = json.load(f)
            self.assertFalse(answer["sliced"])
            self.assertIn("no_such_function", answer["note"])
            self.assertIn("flagprop.observers.timing", answer["modules"])
        finally:
            shutil.rmtree(work)


if __name__ == "__main__":
    unittest.main()
