// The manifest fuzzer: every fixture and test manifest, mutated (a field
// added, renamed, removed, retyped or nested deep; the text cut short), must
// give a clean one-line error naming the file, or load. A mutation that
// makes a manifest wrong (an unknown field, a value of another type, deep
// nesting, broken JSON) must never be accepted silently.
#include "core/files.h"
#include "generators/choice.h"
#include "suites/registry.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <filesystem>

#include <unistd.h>

namespace fs = std::filesystem;

namespace flagprop {
namespace {

std::vector<std::string> baseManifests() {
  std::vector<std::string> out;
  for (const auto& dir : {fixturesDir() + "/targets", std::string(FLAGPROP_SOURCE_DIR) + "/tests/data"})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every JSON pointer into `j` below the root.
void pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) {
      out.push_back(at / it.key());
      pointers(it.value(), at / it.key(), out);
    }
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) {
      out.push_back(at / i);
      pointers(j[i], at / i, out);
    }
}

// `j` with every path it names made absolute against `dir`, so that a
// mutant written elsewhere still names the same files.
void absolutize(json& j, const fs::path& dir) {
  auto abs = [&](json& v) {
    if (v.is_string() && !v.get<std::string>().empty() && fs::path(v.get<std::string>()).is_relative())
      v = (dir / v.get<std::string>()).lexically_normal().string();
  };
  for (const char* section : {"installer", "flag_gems", "ops"})
    if (j.contains(section) && j[section].is_object() && j[section].contains("path")) abs(j[section]["path"]);
  if (j.contains("installer") && j["installer"].contains("python_path"))
    for (auto& v : j["installer"]["python_path"]) abs(v);
  if (j.contains("targets") && j["targets"].is_array())
    for (auto& v : j["targets"]) abs(v);
}

// Free-form objects (a module's globals) take any key and value.
bool freeForm(const json::json_pointer& p) {
  const std::string s = p.to_string();
  return s.find("/globals") != std::string::npos;
}

bool underMock(const json::json_pointer& p) { return p.to_string().rfind("/flag_gems/mock", 0) == 0; }

// A value of another JSON type than `v`.
json otherType(const json& v, int pick) {
  const std::vector<json> values = {
      json("fuzz"), json(7), json(2.5), json(true), json(nullptr), json::array({1}), json::object({{"k", 1}})};
  for (int i = 0; i < 7; ++i) {
    const json& c = values[(pick + i) % values.size()];
    const bool sameNumber = c.is_number() && v.is_number() && c.is_number_float() == v.is_number_float();
    if (c.type() != v.type() && !sameNumber) return c;
  }
  return nullptr;
}

struct Mutation {
  std::string kind;  ///< add | rename | remove | retype | nest | truncate
  std::string text;  ///< the mutated manifest
  bool mustFail = false;
  bool mockField = false;  ///< the mutation is inside flag_gems.mock (checked when the target loads)
  std::string where;
};

void showValue(const Mutation& m, std::ostream& os) { os << m.kind << " at " << m.where << ": " << m.text; }

rc::Gen<Mutation> mutations(std::vector<std::pair<std::string, json>> bases) {
  return rc::gen::exec([bases]() {
    const auto& [path, base] = bases[*gen::atNominalSize(rc::gen::inRange<size_t>(0, bases.size()))];
    std::vector<json::json_pointer> ps;
    pointers(base, json::json_pointer(), ps);
    Mutation m;
    m.kind = *gen::element<std::string>("add", "rename", "remove", "retype", "nest", "truncate");
    json j = base;
    const auto p = ps[*gen::atNominalSize(rc::gen::inRange<size_t>(0, ps.size()))];
    m.where = p.to_string();
    const bool free = freeForm(p) || freeForm(p.parent_pointer());
    m.mockField = underMock(p);
    if (m.kind == "truncate") {
      const std::string full = base.dump();
      m.text = full.substr(0, *gen::atNominalSize(rc::gen::inRange<size_t>(0, full.size())));
      m.mustFail = true;
      return m;
    }
    json& at = j[p];
    json& parent = j[p.parent_pointer()];
    if (m.kind == "rename" && !parent.is_object()) m.kind = "add";  // a list element has no name
    if (m.kind == "add") {
      // Decided before the field is added: adding may move what `at` refers to.
      const bool atObject = at.is_object(), parentObject = parent.is_object();
      json& obj = atObject ? at : parentObject ? parent : j;  // a list: add the field to the manifest itself
      m.mustFail = !(atObject ? freeForm(p) : parentObject ? free : false);
      obj["zz_fuzz_field"] = 1;
    } else if (m.kind == "rename") {
      const std::string key = p.back();
      json v = at;
      parent.erase(key);
      parent[key.substr(1) + "_"] = v;
      m.mustFail = !free;
    } else if (m.kind == "remove") {
      if (parent.is_object())
        parent.erase(std::string(p.back()));
      else
        parent.erase(static_cast<size_t>(std::stoul(p.back())));
    } else if (m.kind == "retype") {
      at = otherType(at, *gen::atNominalSize(rc::gen::inRange(0, 7)));
      m.mustFail = !free;
    } else if (m.kind == "nest") {
      json v = at;
      for (int i = 0; i < 40; ++i) v = json::array({v});
      at = v;
      m.mustFail = true;
    }
    m.text = j.dump();
    (void)path;
    return m;
  });
}

// "" when `text` loads (as manifest `path`), else the error.
std::string loadError(const std::string& path, const std::string& text, bool session) {
  writeText(path, text);
  try {
    for (const auto& t : expandManifest(path)) {
      Target target = loadTarget(t);
      targetProperties(target);
      if (session) TargetSession s(target);
    }
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "";
}

TEST(ManifestFuzz, EveryMutantIsACleanErrorOrLoadsAndNoWrongOneIsAccepted) {
  std::vector<std::pair<std::string, json>> bases;
  for (const auto& p : baseManifests()) {
    json j = json::parse(readFile(p));
    absolutize(j, fs::path(p).parent_path());
    bases.emplace_back(p, j);
  }
  const fs::path dir = fs::temp_directory_path() / ("flagprop-fuzz-" + std::to_string(getpid()));
  fs::create_directories(dir);
  rc::detail::TestParams params;
  params.maxSuccess = 800;
  params.seed = 777;
  rc::detail::TestMetadata md;
  md.id = "manifest-fuzz";
  int rejected = 0, tried = 0, mustFail = 0;
  const auto result = rc::detail::checkTestable(
      [&]() {
        const Mutation m = *mutations(bases);
        ++tried;
        mustFail += m.mustFail;
        const std::string path = (dir / "mutant.json").string();
        const std::string err = loadError(path, m.text, m.mockField && m.kind != "remove");
        RC_ASSERT(err.find('\n') == std::string::npos);
        if (!err.empty()) {
          ++rejected;
          RC_ASSERT(err.rfind("/", 0) == 0 && err.find(".json: ") != std::string::npos);  // names the manifest
        }
        if (m.mustFail) RC_ASSERT(!err.empty());
      },
      md, params);
  removeTree(dir.string());
  EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << [&] {
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    return os.str();
  }();
  std::cout << tried << " mutated manifests: " << rejected << " clean errors (" << mustFail
            << " had to be), the rest loaded" << std::endl;
  EXPECT_GT(mustFail, 200) << "the fuzzer made too few wrong manifests to mean anything";
}

}  // namespace
}  // namespace flagprop
