// The installer properties' parts alone: the P1 verdict on hand-made
// observations, the installed-package mode, the observer's trace hook, P4's
// descriptor arguments, P3 / P4 without a GPU and the claims read from the
// installer source.
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

namespace flagprop {
namespace {

// --- the verdicts on hand-made observations --------------------------------

json component(bool changed) {
  return {{"changed", changed},   {"markers", json::array()}, {"wrapped_is_original", false},
          {"has_wrapped", false}, {"present_before", true},   {"present_after", true},
          {"chain_depth", 0}};
}

json observation(const json& call, const json& claims = nullptr) {
  json comps = json::object();
  for (const char* c : {"descriptor_helper", "key", "type_promotion_memo", "run", "broadcast_memo"})
    comps[c] = component(false);
  return {{"calls", json::array({call})}, {"components", json::array({comps})}, {"claims", claims}};
}

json quietCall() {
  return {{"status", json::object()},  {"warnings", json::array()},  {"logs", json::array()}, {"raised", ""},
          {"returned_normally", true}, {"exceptions", json::array()}};
}

json installStatus(const json& obs, bool gatesOpen) {
  py::gil_scoped_acquire gil;
  return toJson(pyImport("flagprop.judging.verdicts").attr("install_status")(fromJson(obs), gatesOpen));
}

TEST(Verdicts, NoSilentSkipWhenGatesAreClosedAndOnlyVisibleInstallerReportsCount) {
  json obs = observation(quietCall());
  EXPECT_EQ(installStatus(obs, false).at("install"), "gated-off");
  EXPECT_EQ(installStatus(obs, true).at("install"), "silent-skip");
  auto& call = obs["calls"][0];
  call["warnings"] = json::array({{{"message", "x"}, {"from_installer", false}, {"visible", true}}});
  EXPECT_EQ(installStatus(obs, true).at("install"), "silent-skip") << "not issued by the installer";
  call["warnings"] = json::array({{{"message", "x"}, {"from_installer", true}, {"visible", false}}});
  EXPECT_EQ(installStatus(obs, true).at("install"), "silent-skip") << "a category Python hides";
  call["warnings"] = json::array({{{"message", "skipped: no helper"}, {"from_installer", true}, {"visible", true}}});
  EXPECT_EQ(installStatus(obs, true).at("install"), "reported-skip");
  // Changing anything with the gates closed is its own failure.
  auto& key = obs["components"][0]["key"];
  key["changed"] = true;
  key["markers"] = json::array({"_torch_fl_fast"});
  key["wrapped_is_original"] = true;
  EXPECT_EQ(installStatus(obs, false).at("install"), "outside-gates");
}

TEST(Verdicts, AComponentTheInstallerDoesNotHaveIsNotApplicable) {
  json obs = observation(quietCall(), json::array({"descriptor_helper", "key", "run", "broadcast_memo"}));
  for (const char* c : {"descriptor_helper", "key", "run", "broadcast_memo"}) {
    auto& f = obs["components"][0][c];
    f["changed"] = true;
    f["markers"] = json::array({"_torch_fl_x"});
    f["wrapped_is_original"] = true;
  }
  json v = installStatus(obs, true);
  EXPECT_EQ(v.at("install"), "active") << v.dump();
  EXPECT_EQ(v.at("components").at("type_promotion_memo"), "not-applicable");
  EXPECT_TRUE(v.at("pass").get<bool>());
  obs["claims"] = nullptr;  // unknown claims: every component counts
  v = installStatus(obs, true);
  EXPECT_EQ(v.at("install"), "partial") << v.dump();
  EXPECT_FALSE(v.at("pass").get<bool>());
}

TEST(Verdicts, AnExceptionEscapingTheInstallerFailsP1) {
  json call = quietCall();
  call["raised"] = "ValueError: boom";
  call["returned_normally"] = false;
  const json v = installStatus(observation(call), true);
  EXPECT_FALSE(v.at("pass").get<bool>());
  EXPECT_EQ(v.at("install"), "raised");
}

TEST(InstalledMode, ImportsTheInstalledPackageAndCatchesItsSilentSkip) {
  TargetSession s(loadTarget(std::string(FLAGPROP_SOURCE_DIR) + "/tests/data/installed.json"));
  const PropertyOutcome p1 = runProperty(installerRun(s, *findProperty("P1")), test::fixedSeed(40));
  ASSERT_EQ(p1.status, "fail") << p1.reason;
  EXPECT_EQ(p1.observations.at("install"), "silent-skip");
  EXPECT_EQ(runProperty(installerRun(s, *findProperty("P2")), test::fixedSeed(40)).status, "pass");
  py::gil_scoped_acquire gil;
  EXPECT_FALSE(py::module_::import("sys").attr("modules").contains("torch_fl")) << "the sandbox removes it again";
}

TEST(Observe, TraceHookIsRemovedEvenWhenTheInstallerRaises) {
  py::gil_scoped_acquire gil;
  py::dict scope;
  py::exec(R"(
import sys, types
from flagprop.engine import observe
mod = types.ModuleType("flagprop_target_raiser")
exec("def install():\n    try:\n        {}['x']\n    except KeyError:\n        pass\n    raise ValueError('boom')\n", mod.__dict__)
before = sys.gettrace()
res = observe.call_installer(mod.install, mod)
after = sys.gettrace()
)",
           scope);
  EXPECT_TRUE(scope["after"].is(scope["before"]));
  const json res = toJson(scope["res"]);
  EXPECT_EQ(res.at("raised"), "ValueError: boom");
  ASSERT_EQ(res.at("exceptions").size(), 2u) << res.dump();
  EXPECT_EQ(res.at("exceptions")[0].at("type"), "KeyError");
  EXPECT_EQ(res.at("exceptions")[0].at("line"), 3);
}

// Triton's TensorDescriptor validates its base tensor on construction; P4
// builds descriptor arguments without running that validation, so a real
// Triton (GPU hosts) and the stand-in (CPU) behave alike.
TEST(KeyArgs, DescriptorsAreBuiltWithoutTheClassValidation) {
  py::gil_scoped_acquire gil;
  py::dict scope;
  py::exec(R"(
import flagprop_mocks as mocks
from flagprop.engine import launch
class Strict(mocks.MockTensorDescriptor):
    def __init__(self, base, *a, **k):
        base.data_ptr()  # what Triton's __post_init__ effectively needs
d = launch._bare_descriptor(Strict, {"descriptor": "triton", "shape": [4, 8], "strides": [8, 1], "block_shape": [2, 2]})
ok = isinstance(d, Strict) and d.shape == [4, 8] and d.block_shape == [2, 2]
)",
           scope);
  EXPECT_TRUE(scope["ok"].cast<bool>());
}

// P3 and P4 on a real FlagGems launch flagprop's Triton kernel through its
// LibEntry: on a CPU target they skip and say why.
TEST(RealFlagGems, P3AndP4SkipWithTheReasonWithoutAGpu) {
  TargetSession s(loadTarget(std::string(FLAGPROP_SOURCE_DIR) + "/tests/data/cpu_real_flaggems.json"));
  for (const char* p : {"P3", "P4"}) {
    const PropertyOutcome o = runProperty(installerRun(s, *findProperty(p)), test::fixedSeed(5));
    EXPECT_EQ(o.status, "skip") << p << ": " << o.reason;
    EXPECT_NE(o.reason.find("they need a GPU target"), std::string::npos) << o.reason;
  }
}

// The claims come from the installer source: what its function (and the
// functions it reaches) rebind.
TEST(Claims, ReadFromTheInstallerSource) {
  py::gil_scoped_acquire gil;
  py::dict scope;
  scope["path"] = fixturesDir() + "/installers/example_installer.py";
  py::exec(R"(
import types
from flagprop.engine import observe
mod = types.ModuleType("m")
mod.__file__ = path
full = observe.claimed_components(mod, "_patch_flaggems_pointwise_dispatch")["components"]
r5 = observe.claimed_components(mod, "_patch_flaggems_pointwise_dispatch_r5")["components"]
missing = observe.claimed_components(mod, "no_such_function")
)",
           scope);
  EXPECT_EQ(toJson(scope["full"]),
            json::array({"descriptor_helper", "key", "type_promotion_memo", "run", "broadcast_memo"}));
  EXPECT_EQ(toJson(scope["r5"]), json::array({"descriptor_helper", "key", "run", "broadcast_memo"}));
  EXPECT_TRUE(scope["missing"].is_none());
}

}  // namespace
}  // namespace flagprop
