// The property registry (suites/registry.h): each property is one record,
// checked when the registry is built and against the Python half it names.
#include "suites/registry.h"

#include "core/python.h"
#include "tools/options.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace flagprop {
namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Every record is whole, and what it names exists: its observer among the
// modules imported before any case and in the reproducers' packing order,
// its check kind among flagprop.judging.checks' kinds.
TEST(Registry, EveryPropertyIsOneRecordWhoseNamesExist) {
  ASSERT_EQ(registryProblem(properties()), "");
  ensureInterpreter();
  py::gil_scoped_acquire gil;
  const auto kinds = pyImport("flagprop.judging.checks").attr("KINDS").cast<std::vector<std::string>>();
  const auto packed = pyImport("flagprop.tools.slim").attr("PACK_ORDER").cast<std::vector<std::string>>();
  const auto imported = importedModules();
  for (const auto& d : properties()) {
    EXPECT_TRUE(has(kinds, d.checkKind)) << d.id << ": check kind " << d.checkKind << " is not a checks.KINDS kind";
    EXPECT_TRUE(has(imported, d.observer)) << d.id << ": observer " << d.observer << " is not imported before a case";
    EXPECT_TRUE(has(packed, d.observer)) << d.id << ": observer " << d.observer << " is not in slim.PACK_ORDER";
    EXPECT_NE(optionsHelp().find(properties().back().id), std::string::npos) << "the help names the registry's ids";
  }
}

// The check has teeth: a record with a missing part, a duplicate id or one
// out of order is refused, naming it.
TEST(Registry, ABrokenRecordIsRefusedByName) {
  std::vector<PropertyDef> defs = properties();
  defs[1].observer.clear();
  EXPECT_EQ(registryProblem(defs), "P2 lacks a title, a statement, a check kind or an observer");
  defs = properties();
  defs[2].id = "P2";
  EXPECT_EQ(registryProblem(defs), "P2 is out of order or given twice");
  defs = properties();
  defs[4].opRun = nullptr;
  EXPECT_EQ(registryProblem(defs), "P5 is an op property without opRun");
  defs = properties();
  defs[0].id = "install";
  EXPECT_EQ(registryProblem(defs), "property id 'install' is not P<n>");
}

}  // namespace
}  // namespace flagprop
