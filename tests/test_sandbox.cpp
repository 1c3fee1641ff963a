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
