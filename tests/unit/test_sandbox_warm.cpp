// The sandbox's warm path against what a case or the time between cases can do:
// logger caches, replaced modules, environment bytes, a removed working
// directory, logging.config. Every case must find the state the last one found.
#include "core/sandbox.h"

#include <gtest/gtest.h>

namespace flagprop {
using namespace pybind11::literals;
namespace {

std::string ev(const char* code) {
  py::dict scope;
  py::exec(code, scope);
  return py::repr(scope["v"]).cast<std::string>();
}
void run(const char* code) { py::exec(code); }
// Runs `caseCode` as one case (in a Sandbox), then returns ev(fingerprint):
// what the next case would find.
std::string afterCase(const char* fingerprint, const char* caseCode) {
  {
    Sandbox sb;
    run(caseCode);
  }
  return ev(fingerprint);
}

struct Mocks {
  py::dict outer;
  Mocks() {
    outer = py::dict(py::module_::import("sys").attr("modules"));
    pyImport("flagprop_mocks").attr("install")(py::dict("helper"_a = "absent"));
  }
  ~Mocks() {
    py::dict mods = py::module_::import("sys").attr("modules");
    for (auto k : py::list(mods.attr("keys")()))
      if (!outer.contains(k)) mods.attr("pop")(k);
  }
};

// Logger caches: a case sets a level with setLevel (clears caches), fills a
// logger's cache, then puts the level back by plain assignment.
TEST(SandboxWarm, LoggerCacheRootLevelDirectRestore) {
  py::gil_scoped_acquire gil;
  run("import logging\nlogging.getLogger('flagprop.attack.cache')\n");
  const char* fp =
      "import logging\nlg = logging.getLogger('flagprop.attack.cache')\n"
      "v = (lg.isEnabledFor(10), 10 >= lg.getEffectiveLevel() and logging.root.manager.disable < 10)\n";
  const std::string before = ev(fp);
  { Sandbox warm; }
  EXPECT_EQ(afterCase(fp,
                      "import logging\nr = logging.getLogger(); old = r.level\nr.setLevel(10)\n"
                      "logging.getLogger('flagprop.attack.cache').isEnabledFor(10)\nr.level = old\n"),
            before)
      << "(isEnabledFor, what it should say)";
}

TEST(SandboxWarm, LoggerCacheDisableDirectRestore) {
  py::gil_scoped_acquire gil;
  run("import logging\nlogging.getLogger('flagprop.attack.cache2')\n");
  const char* fp =
      "import logging\nlg = logging.getLogger('flagprop.attack.cache2')\n"
      "v = (lg.isEnabledFor(40), 40 >= lg.getEffectiveLevel() and logging.root.manager.disable < 40)\n";
  const std::string before = ev(fp);
  { Sandbox warm; }
  EXPECT_EQ(
      afterCase(fp,
                "import logging\nold = logging.root.manager.disable\nlogging.disable(50)\n"
                "logging.getLogger('flagprop.attack.cache2').isEnabledFor(40)\nlogging.root.manager.disable = old\n"),
      before)
      << "(isEnabledFor(ERROR), what it should say)";
}

// Import a non-watched module and patch a watched one; then warm cases.
TEST(SandboxWarm, ImportPlusPatchThenWarm) {
  py::gil_scoped_acquire gil;
  Mocks m;
  const char* fp =
      "import sys, torch\nle = sys.modules['flag_gems.utils.libentry']\n"
      "v = (hasattr(torch, '_atk'), hasattr(le, '_atk'), hasattr(le.LibEntry, '_atk'), 'flag_gems.atk' in "
      "sys.modules)\n";
  const std::string before = ev(fp);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(
        afterCase(fp,
                  "import sys, types, torch\nimport colorsys, fractions\n"
                  "sys.modules.pop('colorsys'); sys.modules.pop('fractions')\n"  // keep re-importable
                  "import xml.dom.minidom\n"
                  "torch._atk = 1\nle = sys.modules['flag_gems.utils.libentry']\nle._atk = 1\nle.LibEntry._atk = 1\n"
                  "sys.modules['flag_gems.atk'] = types.ModuleType('flag_gems.atk')\n"),
        before)
        << "iteration " << i;
    EXPECT_EQ(
        afterCase(fp, "import torch, sys\ntorch._atk = 2\nsys.modules['flag_gems.utils.libentry'].LibEntry._atk = 2\n"),
        before)
        << "warm iteration " << i;
  }
}

// A case replaces a watched module object in sys.modules (and patches the
// replacement and the original); the next warm case patches the original.
TEST(SandboxWarm, ReplacedModuleObject) {
  py::gil_scoped_acquire gil;
  Mocks m;
  const char* fp =
      "import sys\nle = sys.modules['flag_gems.utils.libentry']\n"
      "v = (id(le), hasattr(le, '_atk'), hasattr(le.LibEntry, '_atk'))\n";
  const std::string before = ev(fp);
  { Sandbox warm; }
  EXPECT_EQ(afterCase(fp,
                      "import sys, types\nold = sys.modules['flag_gems.utils.libentry']\n"
                      "new = types.ModuleType('flag_gems.utils.libentry'); new.__dict__.update(old.__dict__)\n"
                      "sys.modules['flag_gems.utils.libentry'] = new\nold._atk = 1\nold.LibEntry._atk = 1\n"),
            before);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(afterCase(fp, "import sys\nsys.modules['flag_gems.utils.libentry']._atk = 1\n"), before) << i;
}

// Changes made between cases are the next case's start and are kept.
TEST(SandboxWarm, BetweenCasesKept) {
  py::gil_scoped_acquire gil;
  Mocks m;
  { Sandbox warm; }
  { Sandbox warm2; }
  // class via type.__setattr__ between cases; the case deletes it and adds another
  run("import sys\nLE = sys.modules['flag_gems.utils.libentry'].LibEntry\ntype.__setattr__(LE, 'BTW', 1)\n");
  {
    Sandbox sb;
    run("import sys\nLE = sys.modules['flag_gems.utils.libentry'].LibEntry\ndel LE.BTW\nLE.OTHER = 2\n");
  }
  EXPECT_EQ(ev("import sys\nLE = sys.modules['flag_gems.utils.libentry'].LibEntry\nv = (getattr(LE, 'BTW', None), "
               "hasattr(LE, 'OTHER'))\n"),
            "(1, False)");
  run("import sys\ndel sys.modules['flag_gems.utils.libentry'].LibEntry.BTW\n");
  { Sandbox settle; }
  // a watched module deleted between cases stays deleted
  run("import sys\nsaved_mod = sys.modules.pop('flag_gems.runtime')\nimport builtins; builtins._atk_saved = "
      "saved_mod\n");
  { Sandbox sb; }
  {
    Sandbox sb;
    run("import torch\ntorch._atk = 1\n");
  }
  EXPECT_EQ(ev("import sys\nv = 'flag_gems.runtime' in sys.modules\n"), "False");
  run("import sys, builtins\nsys.modules['flag_gems.runtime'] = builtins._atk_saved\ndel builtins._atk_saved\n");
  // a logger created between cases with a level; the case changes it
  run("import logging\nlogging.getLogger('flagprop.atk.btw').setLevel(30)\n");
  {
    Sandbox sb;
    run("import logging\nlogging.getLogger('flagprop.atk.btw').setLevel(10)\n");
  }
  EXPECT_EQ(ev("import logging\nv = logging.getLogger('flagprop.atk.btw').level\n"), "30");
  // level changed between cases (no new logger): kept, and put back to it
  run("import logging\nlogging.getLogger('flagprop.atk.btw').setLevel(20)\n");
  {
    Sandbox sb;
    run("import logging\nlogging.getLogger('flagprop.atk.btw').__dict__['level'] = 50\n");
  }
  EXPECT_EQ(ev("import logging\nv = logging.getLogger('flagprop.atk.btw').level\n"), "20");
  {
    Sandbox sb;
    run("import logging\ndel logging.getLogger('flagprop.atk.btw').level\n");
  }
  EXPECT_EQ(ev("import logging\nv = logging.getLogger('flagprop.atk.btw').level\n"), "20");
  // torch module attribute changed between cases (walk), then warm
  run("import torch\ntorch._atk_btw = 1\n");
  {
    Sandbox sb;
    run("import torch\ntorch._atk_btw = 2\n");
  }
  {
    Sandbox sb;
    run("import torch\ndel torch._atk_btw\n");
  }
  EXPECT_EQ(ev("import torch\nv = getattr(torch, '_atk_btw', None)\n"), "1");
  run("import torch\ndel torch._atk_btw\n");
}

TEST(SandboxWarm, EnvironNonAscii) {
  py::gil_scoped_acquire gil;
  const char* fp =
      "import os\nv = (os.environ.get('FP_ATK'), os.environb.get(b'FP_ATK_\\xe9'), "
      "__import__('sys').getfilesystemencoding(), os.environb.get(b'FP_ATK_B'),"
      " __import__('subprocess').run(['printenv', 'FP_ATK'], capture_output=True).stdout)\n";
  run("import os\nos.environb[b'FP_ATK'] = b'caf\\xc3\\xa9'\nos.environb[b'FP_ATK_B'] = b'\\xff\\xfe'\n");
  const std::string before = ev(fp);
  { Sandbox warm; }
  EXPECT_EQ(afterCase(fp,
                      "import os\nos.environ['FP_ATK'] = 'x\\udcff'\nos.environb[b'FP_ATK_\\xe9'] = b'\\xe9'\n"
                      "os.environb[b'FP_ATK_B'] = b'\\x80'\n"),
            before);
  EXPECT_EQ(afterCase(fp, "import os\ndel os.environ['FP_ATK']\ndel os.environb[b'FP_ATK_B']\n"), before);
  EXPECT_EQ(afterCase(fp, "import os\nos.putenv('FP_ATK', 'putenv')\n"), before) << "os.putenv";
  run("import os\nos.environ.pop('FP_ATK', None)\nos.environb.pop(b'FP_ATK_B', None)\n");
}

TEST(SandboxWarm, ExceptionInsideCase) {
  py::gil_scoped_acquire gil;
  Mocks m;
  const char* fp =
      "import sys, torch, os\nle = sys.modules['flag_gems.utils.libentry']\n"
      "v = (hasattr(torch, '_atk'), hasattr(le.LibEntry, '_atk'), os.environ.get('FP_EXC'), "
      "torch.get_default_dtype())\n";
  const std::string before = ev(fp);
  for (int i = 0; i < 3; ++i) {
    try {
      Sandbox sb;
      run("import sys, torch, os\ntorch._atk = 1\nsys.modules['flag_gems.utils.libentry'].LibEntry._atk = 1\n"
          "os.environ['FP_EXC'] = '1'\ntorch.set_default_dtype(torch.float64)\nimport wave\nraise "
          "RuntimeError('boom')\n");
    } catch (py::error_already_set&) {
    }
    EXPECT_EQ(ev(fp), before) << i;
  }
}

TEST(SandboxWarm, NestedInWarm) {
  py::gil_scoped_acquire gil;
  Mocks m;
  const char* fp =
      "import sys, torch\nle = sys.modules['flag_gems.utils.libentry']\n"
      "v = (hasattr(torch, '_o'), hasattr(torch, '_i'), hasattr(le.LibEntry, '_o'), hasattr(le.LibEntry, '_i'))\n";
  const std::string before = ev(fp);
  { Sandbox w1; }
  { Sandbox w2; }
  for (int i = 0; i < 2; ++i) {
    {
      Sandbox outer;
      run("import sys, torch\ntorch._o = 1\n");
      {
        Sandbox inner;
        run("import sys, torch\ntorch._i = 1\nsys.modules['flag_gems.utils.libentry'].LibEntry._i = 1\nimport "
            "sndhdr\n");
      }
      EXPECT_EQ(ev(fp), "(True, False, False, False)");
      run("import sys\nsys.modules['flag_gems.utils.libentry'].LibEntry._o = 1\n");
      {
        Sandbox inner2;
        run("import torch\ndel torch._o\n");
      }
      EXPECT_EQ(ev(fp), "(True, False, True, False)");
    }
    EXPECT_EQ(ev(fp), before) << i;
    {
      Sandbox after;
      run("import torch\ntorch._i = 1\n");
    }
    EXPECT_EQ(ev(fp), before) << i;
  }
}

// A case that leaves the process in a directory it deleted.
TEST(SandboxWarm, DeletedCwd) {
  py::gil_scoped_acquire gil;
  const std::string before = ev("import os\nv = os.getcwd()\n");
  try {
    Sandbox sb;
    run("import os, tempfile\nd = tempfile.mkdtemp()\nos.chdir(d)\nos.rmdir(d)\n");
  } catch (...) {
  }
  std::string after;
  try {
    after = ev("import os\nv = os.getcwd()\n");
  } catch (std::exception& e) {
    after = e.what();
  }
  EXPECT_EQ(after, before);
  bool threw = false;
  try {
    Sandbox next;
  } catch (std::exception& e) {
    threw = true;
    ADD_FAILURE() << "the next sandbox throws: " << e.what();
  }
  if (threw) run("import os\nos.chdir('/tmp')\n");
  for (int i = 0; i < 5; ++i) {
    Sandbox b;
    EXPECT_TRUE(b.reused() || i == 0) << i << " walked because: " << b.walkedBecause();
  }
}

TEST(SandboxWarm, DictConfigDisablesExistingLoggers) {
  py::gil_scoped_acquire gil;
  run("import logging\nlogging.getLogger('flagprop.atk.dc')\n");
  const char* fp =
      "import logging\nlg = logging.getLogger('flagprop.atk.dc')\nv = (lg.disabled, lg.propagate, len(lg.handlers))\n";
  const std::string before = ev(fp);
  EXPECT_EQ(afterCase(fp,
                      "import logging.config\nlogging.config.dictConfig({'version': 1})\n"
                      "lg = logging.getLogger('flagprop.atk.dc')\nlg.propagate = False\n"
                      "lg.addHandler(logging.NullHandler())\n"),
            before);
  run("import logging\nlg = logging.getLogger('flagprop.atk.dc')\nlg.disabled = False\nlg.propagate = "
      "True\nlg.handlers.clear()\n");
}
}  // namespace
}  // namespace flagprop
