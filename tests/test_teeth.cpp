// Teeth: every property catches the fixture mutant meant for it, and the
// well-behaved fixture passes all four.
#include "suites/property.h"

#include <gtest/gtest.h>

#include <map>

namespace flagprop {
namespace {

TargetSession& session(const std::string& name) {
  static std::map<std::string, std::unique_ptr<TargetSession>> sessions;
  auto& s = sessions[name];
  if (!s) s = std::make_unique<TargetSession>(loadTarget(fixturesDir() + "/targets/" + name + ".json"));
  return *s;
}

PropertyOutcome run(const std::string& target, const std::string& prop, int cases = 100) {
  RunOptions o;
  o.cases = cases;
  o.seed = 20261130;
  for (const auto& d : properties())
    if (prop == d.id) return d.run(session(target), o);
  throw std::runtime_error("no property " + prop);
}

TEST(Teeth, WellBehavedFixturePassesP1ToP4) {
  for (const char* p : {"P1", "P2", "P3", "P4"}) {
    const auto o = run("well-behaved", p);
    EXPECT_EQ(o.status, "pass") << p << ": " << o.reason << "\n" << o.counterexample.dump();
  }
}

TEST(Teeth, P1CatchesR5SilentSkipWithTheAttributeErrorAndItsLine) {
  const auto o = run("r5-silent-skip", "P1");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "silent-skip") << o.observations.dump(2);
  EXPECT_EQ(o.counterexample.at("mock").at("helper"), "absent") << "shrinks to the R5 shape";
  const auto& ex = o.observations.at("exceptions_caught");
  ASSERT_FALSE(ex.empty());
  EXPECT_EQ(ex[0].at("type"), "AttributeError");
  EXPECT_NE(ex[0].at("message").get<std::string>().find("_descriptor_cache_key"), std::string::npos);
  EXPECT_GT(ex[0].at("line").get<int>(), 0);
  EXPECT_TRUE(o.observations.at("returned_normally").get<bool>());
  EXPECT_FALSE(o.reproduce.empty());
  for (const char* c : {"key", "run"}) EXPECT_TRUE(o.observations.at("unchanged").at(c).get<bool>());
}

TEST(Teeth, P1CatchesPartialInstall) {
  const auto o = run("partial-install", "P1");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "partial") << o.observations.dump(2);
  EXPECT_EQ(o.observations.at("components").at("key"), "active");
}

TEST(Teeth, P1CatchesWrapperWithoutWrapped) {
  const auto o = run("no-wrapped", "P1");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "broken-wrap");
  EXPECT_NE(o.reason.find("__wrapped__"), std::string::npos) << o.reason;
}

TEST(Teeth, P2CatchesDoubleWrap) {
  EXPECT_EQ(run("double-wrap", "P1").status, "pass");
  const auto o = run("double-wrap", "P2");
  ASSERT_EQ(o.status, "fail");
  EXPECT_TRUE(o.reason.find("deep") != std::string::npos || o.reason.find("replaced") != std::string::npos) << o.reason;
}

TEST(Teeth, P3CatchesDroppedKeywordLaunch) {
  const auto o = run("kwargs-dropped", "P3");
  ASSERT_EQ(o.status, "fail");
  EXPECT_NE(o.reason.find("launch"), std::string::npos) << o.reason;
}

TEST(Teeth, P4CatchesMergedIntKeyAndShrinksToABoundaryInt) {
  const auto o = run("merged-int-key", "P4");
  ASSERT_EQ(o.status, "fail");
  const auto& dns = o.counterexample.at("dns_args");
  ASSERT_EQ(dns.size(), 1u) << o.counterexample.dump();
  // Shrunk to one int the stock key does not call i32 (outside [-2^31, 2^31 - 1]).
  const std::string v = dns[0].at("int");
  const long double x = std::stold(v);
  EXPECT_TRUE(x > 2147483647.0L || x < -2147483648.0L) << v;
  EXPECT_TRUE(o.counterexample.at("spec_args").empty());
  EXPECT_TRUE(o.counterexample.at("const_args").empty());
}

TEST(Teeth, ClassifierSeesNoSilentSkipWhenGatesAreClosed) {
  json obs = {{"calls", json::array({{{"status", json::object()},
                                      {"warnings", json::array()},
                                      {"logs", json::array()},
                                      {"raised", ""},
                                      {"returned_normally", true},
                                      {"exceptions", json::array()}}})}};
  json comps = json::object();
  for (const char* c : {"descriptor_helper", "key", "type_promotion_memo", "run", "broadcast_memo"})
    comps[c] = {{"changed", false},      {"markers", json::array()}, {"wrapped_is_original", false},
                {"has_wrapped", false},  {"present_before", true},   {"present_after", true}};
  obs["components"] = json::array({comps});
  EXPECT_EQ(classifyInstall(obs, false).at("install"), "gated-off");
  EXPECT_EQ(classifyInstall(obs, true).at("install"), "silent-skip");
  // A warning counts only if the installer issued it and users can see it.
  obs["calls"][0]["warnings"] = json::array({{{"message", "x"}, {"from_installer", false}, {"visible", true}}});
  EXPECT_EQ(classifyInstall(obs, true).at("install"), "silent-skip");
  obs["calls"][0]["warnings"] = json::array({{{"message", "x"}, {"from_installer", true}, {"visible", false}}});
  EXPECT_EQ(classifyInstall(obs, true).at("install"), "silent-skip");
  obs["calls"][0]["warnings"] = json::array({{{"message", "skipped: no helper"}, {"from_installer", true}, {"visible", true}}});
  EXPECT_EQ(classifyInstall(obs, true).at("install"), "reported-skip");
  // Changing anything with the gates closed is its own failure.
  obs["components"][0]["key"]["changed"] = true;
  obs["components"][0]["key"]["markers"] = json::array({"_torch_fl_fast"});
  obs["components"][0]["key"]["wrapped_is_original"] = true;
  EXPECT_EQ(classifyInstall(obs, false).at("install"), "outside-gates");
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

TEST(InstalledMode, ImportsTheInstalledPackageAndCatchesItsSilentSkip) {
  TargetSession s(loadTarget(std::string(FLAGPROP_SOURCE_DIR) + "/tests/data/installed.json"));
  RunOptions o;
  o.seed = 5;
  const PropertyOutcome p1 = runP1(s, o);
  ASSERT_EQ(p1.status, "fail") << p1.reason;
  EXPECT_EQ(p1.observations.at("install"), "silent-skip");
  EXPECT_EQ(runP2(s, o).status, "pass");
  py::gil_scoped_acquire gil;
  EXPECT_FALSE(py::module_::import("sys").attr("modules").contains("torch_fl")) << "the sandbox removes it again";
}

TEST(Observe, TraceHookIsRemovedEvenWhenTheInstallerRaises) {
  py::gil_scoped_acquire gil;
  py::dict scope;
  py::exec(R"(
import sys, types
from flagprop import observe
mod = types.ModuleType("flagprop_target_raiser")
exec("def install():\n    try:\n        {}['x']\n    except KeyError:\n        pass\n    raise ValueError('boom')\n", mod.__dict__)
before = sys.gettrace()
res = observe.call_installer(mod.install, mod)
after = sys.gettrace()
)", scope);
  EXPECT_TRUE(scope["after"].is(scope["before"]));
  const json res = toJson(scope["res"]);
  EXPECT_EQ(res.at("raised"), "ValueError: boom");
  ASSERT_EQ(res.at("exceptions").size(), 2u) << res.dump();
  EXPECT_EQ(res.at("exceptions")[0].at("type"), "KeyError");
  EXPECT_EQ(res.at("exceptions")[0].at("line"), 3);
}

TEST(Teeth, P1FailsAnInstallerThatLetsAnExceptionEscape) {
  json call = {{"status", json::object()}, {"warnings", json::array()}, {"logs", json::array()},
               {"raised", "ValueError: boom"}, {"returned_normally", false}, {"exceptions", json::array()}};
  json comps = json::object();
  for (const char* c : {"descriptor_helper", "key", "type_promotion_memo", "run", "broadcast_memo"})
    comps[c] = {{"changed", false},      {"markers", json::array()}, {"wrapped_is_original", false},
                {"has_wrapped", false},  {"present_before", true},   {"present_after", true}};
  const json v = classifyInstall({{"calls", json::array({call})}, {"components", json::array({comps})}}, true);
  EXPECT_FALSE(v.at("pass").get<bool>());
  EXPECT_EQ(v.at("install"), "raised");
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

TEST(Teeth, P3CatchesAFastRunThatIgnoresTheKey) {
  const auto r = run("any-kernel", "P3");
  ASSERT_EQ(r.status, "fail");
  EXPECT_NE(r.reason.find("result differs"), std::string::npos) << r.reason;
}

TEST(Teeth, P4CatchesAStaleBroadcastMemo) {
  const auto r = run("stale-memo", "P4");
  ASSERT_EQ(r.status, "fail");
  EXPECT_NE(r.reason.find("broadcast_shapes"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

// Triton's TensorDescriptor validates its base tensor on construction; P4
// builds descriptor arguments without running that validation, so a real
// Triton (GPU hosts) and the stand-in (CPU) behave alike.
TEST(KeyArgs, DescriptorsAreBuiltWithoutTheClassValidation) {
  py::gil_scoped_acquire gil;
  py::dict scope;
  py::exec(R"(
from flagprop import mocks, launch
class Strict(mocks.MockTensorDescriptor):
    def __init__(self, base, *a, **k):
        base.data_ptr()  # what Triton's __post_init__ effectively needs
saved = list(mocks._DESCRIPTOR_CLASS)
mocks._DESCRIPTOR_CLASS[:] = [Strict]
try:
    d = launch._materialize({"descriptor": "triton", "shape": [4, 8], "strides": [8, 1], "block_shape": [2, 2]}, Strict)
finally:
    mocks._DESCRIPTOR_CLASS[:] = saved
ok = isinstance(d, Strict) and d.shape == [4, 8] and d.block_shape == [2, 2]
)", scope);
  EXPECT_TRUE(scope["ok"].cast<bool>());
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

TEST(Teeth, P4CatchesAValueKeyedTypePromotionMemo) {
  const auto r = run("value-keyed-memo", "P4", 20);
  ASSERT_EQ(r.status, "fail");
  EXPECT_NE(r.reason.find("type_promotion"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace flagprop
