// The per-case sandbox: nothing a case does leaks into the next.
#include "core/sandbox.h"

#include <gtest/gtest.h>

namespace flagprop {
using namespace pybind11::literals;
namespace {

// Everything a case could touch, as one Python fingerprint.
const char* kFingerprint = R"(
import sys, os, warnings, logging, torch
logging.getLogger("flagprop.leak")
le = sys.modules.get("flag_gems.utils.libentry")
fp = (
    tuple(sorted(sys.modules)),
    id(torch.broadcast_shapes), hasattr(torch, "_flagprop_leak"),
    id(le.LibEntry.run) if le else 0, id(le.LibEntry.key) if le else 0,
    "extra" in le.LibEntry.__dict__ if le else False,
    le.__dict__.get("_descriptor_cache_key") is not None if le else False,
    tuple(sys.path), os.environ.get("FLAGPROP_LEAK"), len(warnings.filters),
    tuple(logging.getLogger().handlers), logging.getLogger().level, sys.gettrace(),
    len(sys.meta_path), __import__("threading")._trace_hook, logging.getLogger("flagprop.leak").level,
    logging.root.manager.disable, hasattr(__import__("builtins"), "_flagprop_leak"),
    "_flagprop_leak" in torch.Tensor.__dict__, torch.get_default_dtype(), torch.is_grad_enabled(),
    os.getcwd(), sys.getrecursionlimit(),
)
)";

py::object fingerprint() {
  py::dict scope;
  py::exec(kFingerprint, scope);
  return scope["fp"];
}

const char* kTouchEverything = R"(
import sys, os, types, warnings, logging, torch
sys.modules["flag_gems.leak_module"] = types.ModuleType("flag_gems.leak_module")
sys.meta_path.append(object())
import threading; threading.settrace(lambda *a: None)
logging.getLogger("flagprop.leak").setLevel(logging.CRITICAL)
logging.disable(logging.CRITICAL)
import builtins; builtins._flagprop_leak = 1
torch.Tensor._flagprop_leak = 1
torch.set_default_dtype(torch.float64)
torch.set_grad_enabled(False)
os.chdir("/")
sys.setrecursionlimit(12345)
torch.broadcast_shapes = lambda *s: None
torch._flagprop_leak = True
le = sys.modules["flag_gems.utils.libentry"]
le.LibEntry.run = lambda self, *a, **k: None
le.LibEntry.key = lambda self, *a: None
le.LibEntry.extra = 1
le._descriptor_cache_key = lambda a: a
del sys.modules["flag_gems.runtime"]
sys.path.append("/flagprop/leak")
os.environ["FLAGPROP_LEAK"] = "1"
warnings.simplefilter("ignore")
logging.getLogger().addHandler(logging.NullHandler())
logging.getLogger().setLevel(logging.DEBUG)
sys.settrace(lambda *a: None)
)";

TEST(Sandbox, NothingACaseDoesLeaksIntoTheNext) {
  py::gil_scoped_acquire gil;
  // A "real" FlagGems that exists before the case: the mocks, registered
  // outside any sandbox, with the helper absent (R5-shaped).
  py::dict outer_mods = py::dict(py::module_::import("sys").attr("modules"));
  pyImport("flagprop_mocks").attr("install")(py::dict("helper"_a = "absent"));
  const py::object before = fingerprint();
  {
    Sandbox sb;
    py::exec(kTouchEverything);
    EXPECT_FALSE(fingerprint().equal(before)) << "the case did not change anything; the test has no teeth";
  }
  const py::object after = fingerprint();
  EXPECT_TRUE(after.equal(before)) << "before: " << py::repr(before).cast<std::string>()
                                   << "\nafter:  " << py::repr(after).cast<std::string>();
  // Second case sees a clean state too (restore is repeatable).
  {
    Sandbox sb;
    py::exec(kTouchEverything);
  }
  EXPECT_TRUE(fingerprint().equal(before));
  // Remove the outer mocks again.
  py::dict mods = py::module_::import("sys").attr("modules");
  for (auto k : py::list(mods.attr("keys")()))
    if (!outer_mods.contains(k)) mods.attr("pop")(k);
}

// What a restore found changed (Sandbox::changed, which decides whether a
// batch's later cases ran as they would alone): nothing after a case that
// only read, and each kind of change on its own, however it was undone.
TEST(Sandbox, SaysWhatTheCaseChanged) {
  py::gil_scoped_acquire gil;
  py::dict outerMods = py::dict(py::module_::import("sys").attr("modules"));
  pyImport("flagprop_mocks").attr("install")(py::dict("helper"_a = "absent"));
  const auto changedBy = [](const char* code) {
    Sandbox sb;
    py::exec(code);
    sb.restore();
    return sb.changed();
  };
  changedBy("x = 1");  // the first sandbox walks; later ones are warm
  EXPECT_EQ(changedBy("import torch\nx = torch.ones(3).sum()\n"), "");
  EXPECT_EQ(changedBy("import torch\ntorch._flagprop_leak = 1\n"),
            "a watched module's dict (torch._flagprop_leak added)");
  EXPECT_EQ(changedBy("import torch\ntorch._flagprop_leak = 1\ndel torch._flagprop_leak\n"), "")
      << "a change undone within the case leaves the next case the same state";
  EXPECT_EQ(changedBy("import sys\nsys.modules['flag_gems.leak'] = sys\n"), "sys.modules (flag_gems.leak added)");
  EXPECT_EQ(changedBy("import sys\ndel sys.modules['flag_gems.runtime']\n"), "sys.modules (flag_gems.runtime removed)");
  EXPECT_EQ(changedBy("import sys\nsys.modules['json'] = sys.modules['json']\n"), "");
  EXPECT_EQ(changedBy("import flag_gems.utils.libentry as le\nle.LibEntry.extra = 1\n"), "a watched class's dict");
  EXPECT_EQ(changedBy("import os\nos.environ['FLAGPROP_LEAK'] = '1'\n"), "os.environ");
  EXPECT_EQ(changedBy("import os\nos.putenv('FLAGPROP_LEAK', '1')\n"), "the process environment");
  EXPECT_EQ(changedBy("import os\nos.chdir('/')\n"), "the working directory");
  EXPECT_EQ(changedBy("import sys\nsys.path.append('/flagprop/leak')\n"), "sys.path");
  EXPECT_EQ(changedBy("import torch\ntorch.set_grad_enabled(False)\n"), "torch's grad mode");
  EXPECT_EQ(changedBy("import sys\nsys.setrecursionlimit(12345)\n"), "the recursion limit");
  EXPECT_EQ(changedBy("import warnings\nwarnings.simplefilter('ignore')\n"), "warnings.filters");
  EXPECT_EQ(changedBy("x = 2"), "");
  py::dict mods = py::module_::import("sys").attr("modules");
  for (auto k : py::list(mods.attr("keys")()))
    if (!outerMods.contains(k)) mods.attr("pop")(k);
}

// A warm run: most cases change nothing, so a sandbox reuses the last one's
// copies (by dict version) instead of walking sys.modules. Every path of
// that reuse must still restore: after an untouched case, after a case that
// changed everything, after a change made outside any sandbox (which is the
// next case's starting point, not undone), and with a sandbox nested in one.
TEST(Sandbox, ReusedSnapshotsStillRestoreEverything) {
  py::gil_scoped_acquire gil;
  py::dict outer_mods = py::dict(py::module_::import("sys").attr("modules"));
  pyImport("flagprop_mocks").attr("install")(py::dict("helper"_a = "absent"));
  py::exec("import os\nos.environ['FLAGPROP_KEPT'] = 'a'\nos.environ['FLAGPROP_GONE'] = 'b'\n");
  const char* kEnv = "import os\nos.environ['FLAGPROP_KEPT'] = 'changed'\ndel os.environ['FLAGPROP_GONE']\n";
  const char* kEnvFp =
      "import os\nenv = (os.environ.get('FLAGPROP_KEPT'), os.environ.get('FLAGPROP_GONE'), "
      "os.getenv('FLAGPROP_LEAK'))\n";
  const auto env = [&] {
    py::dict scope;
    py::exec(kEnvFp, scope);
    return py::object(scope["env"]);
  };
  const py::object before = fingerprint(), envBefore = env();
  for (int round = 0; round < 3; ++round) {
    { Sandbox untouched; }
    EXPECT_TRUE(fingerprint().equal(before)) << "round " << round << ": an untouched case";
    {
      Sandbox sb;
      py::exec(kTouchEverything);
      py::exec(kEnv);
      EXPECT_FALSE(env().equal(envBefore)) << "no teeth";
    }
    EXPECT_TRUE(fingerprint().equal(before))
        << "round " << round << ": " << py::repr(fingerprint()).cast<std::string>();
    EXPECT_TRUE(env().equal(envBefore)) << "round " << round << ": os.environ " << py::repr(env()).cast<std::string>();
  }
  // Changed between cases (outside a sandbox): the next case starts from it
  // and is put back to it.
  py::exec("import sys\nsys.modules['flag_gems.utils.libentry'].BETWEEN = 1\n");
  {
    Sandbox sb;
    py::exec("import sys\nle = sys.modules['flag_gems.utils.libentry']\nle.BETWEEN = 2\nle.LibEntry.run = None\n");
  }
  py::dict scope;
  py::exec("import sys\nle = sys.modules['flag_gems.utils.libentry']\nv = (le.BETWEEN, le.LibEntry.run is None)\n",
           scope);
  EXPECT_EQ(py::repr(scope["v"]).cast<std::string>(), "(1, False)");
  py::exec("import sys\ndel sys.modules['flag_gems.utils.libentry'].BETWEEN\n");
  { Sandbox settle; }  // the module dict changed: this one walks sys.modules; the next reuses its copies
  // A class changed between cases (its module's dict unchanged): the same.
  py::exec("import sys\nsys.modules['flag_gems.utils.libentry'].LibEntry.BETWEEN = 1\n");
  {
    Sandbox sb;
    py::exec("import sys\nsys.modules['flag_gems.utils.libentry'].LibEntry.BETWEEN = 2\n");
  }
  scope = py::dict();
  py::exec("import sys\nv = getattr(sys.modules['flag_gems.utils.libentry'].LibEntry, 'BETWEEN', None)\n", scope);
  EXPECT_EQ(py::repr(scope["v"]).cast<std::string>(), "1") << "a class changed between cases";
  py::exec("import sys\ndel sys.modules['flag_gems.utils.libentry'].LibEntry.BETWEEN\n");
  // Nested: the inner sandbox undoes the inner change, the outer one the outer.
  {
    Sandbox outer;
    py::exec("import torch\ntorch._flagprop_outer = 1\n");
    {
      Sandbox inner;
      py::exec("import torch\ntorch._flagprop_inner = 1\ntorch.broadcast_shapes = None\n");
    }
    py::dict s2;
    py::exec(
        "import torch\nv = (hasattr(torch, '_flagprop_outer'), hasattr(torch, '_flagprop_inner'), "
        "torch.broadcast_shapes is None)\n",
        s2);
    EXPECT_EQ(py::repr(s2["v"]).cast<std::string>(), "(True, False, False)");
  }
  EXPECT_TRUE(fingerprint().equal(before)) << "after the nested sandboxes";
  py::exec("import os\nos.environ.pop('FLAGPROP_KEPT', None)\nos.environ.pop('FLAGPROP_GONE', None)\n");
  py::dict mods = py::module_::import("sys").attr("modules");
  for (auto k : py::list(mods.attr("keys")()))
    if (!outer_mods.contains(k)) mods.attr("pop")(k);
}

TEST(Sandbox, RestoreIsIdempotent) {
  py::gil_scoped_acquire gil;
  const py::object before = fingerprint();
  Sandbox sb;
  py::exec("import torch\ntorch._flagprop_leak = 1\n");
  sb.restore();
  sb.restore();
  EXPECT_TRUE(fingerprint().equal(before));
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

TEST(Sandbox, KeepsLibrariesACaseImportedButDropsCodeUnderTest) {
  py::gil_scoped_acquire gil;
  {
    Sandbox sb;
    py::exec("import sys, types\nimport json.tool\nsys.modules['torch_fl.x'] = types.ModuleType('torch_fl.x')\n");
  }
  py::dict mods = py::module_::import("sys").attr("modules");
  EXPECT_TRUE(mods.contains("json.tool")) << "a library import is not case state";
  EXPECT_FALSE(mods.contains("torch_fl.x")) << "code under test is";
}

}  // namespace
}  // namespace flagprop
