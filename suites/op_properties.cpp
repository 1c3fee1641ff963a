// The op properties over the catalog: one run per (property, op, dtype). P5
// numerics and P6 aliasing / metadata of the same op and dtype draw the same
// cases from the same seed, so P6 judges the observations P5 made; P8
// fast-path hits counts the op's LibEntry launches on the same cases.
#include "suites/op_properties.h"

#include "catalog/catalog.h"
#include "catalog/examples.h"
#include "catalog/families.h"
#include "catalog/opinfo_sampler.h"
#include "suites/phases.h"
#include "suites/registry.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

namespace flagprop {

// What the runs of one op and dtype share: the observations by case, and
// whether a case lost the device.
struct OpRunState {
  std::unordered_map<std::string, json> memo;
  bool lost = false;
  bool stockLost = false;  // the stock path (the control), not the op, lost it: later cases are discards
  // When the first run of this op and dtype started: the --run-time clock of them all.
  std::optional<std::chrono::steady_clock::time_point> started;
  // OpInfo's samples, once a run of these cases fell back to them: the
  // entry (its sampler over the samples) and its cases; later runs start there.
  std::shared_ptr<OpEntry> opinfoEntry;
  std::optional<rc::Gen<Case>> opinfoCases;
  // The explicit examples of these cases (catalog/examples.h), built once.
  std::optional<std::vector<PropertyRun::Example>> examples;
  // Results judged ahead in a batch (PropertyRun::judgeAhead), by case, until
  // the search draws the case; and why batches stopped for these cases
  // ("": they go on).
  std::unordered_map<std::string, json> ahead;
  std::string batchOff;
};

namespace {

// Totals over the cases of one run, for the report and the benchmark.
struct OpStats {
  int cases = 0;
  int reused = 0;  // judged from the other property's run of the same case
  int compilations = 0;
  double referenceUs = 0, deviceUs = 0, totalUs = 0, inputsUs = 0, verdictsUs = 0, sandboxUs = 0;
  double controlUs = 0, flagGemsOffUs = 0, tamperUs = 0;
  int sandboxReused = 0;                     // cases whose sandbox reused the last one's copies
  std::map<std::string, int> walkedBecause;  // why the others walked sys.modules
  int batches = 0, batched = 0;              // batches judged, and the cases of them the search took

  void add(const json& result, bool fromMemo) {
    if (fromMemo) {
      ++reused;
      return;
    }
    ++cases;
    const json ev = result.value("evidence", json::object());
    compilations += ev.value("compilations", 0);
    const json t = ev.value("time_us", json::object());
    referenceUs += t.value("reference", 0.0);
    deviceUs += t.value("device", 0.0);
    inputsUs += t.value("inputs", 0.0);
    verdictsUs += t.value("verdicts", 0.0);
    controlUs += t.value("control", 0.0);
    flagGemsOffUs += t.value("flaggems_off", 0.0);
    sandboxUs += result.value("sandbox_us", 0.0);
    tamperUs += result.value("tamper_us", 0.0);
    totalUs += result.value("time_us", 0.0);
    if (result.value("batch", 1) > 1) ++batched;
    if (result.value("sandbox_reused", false))
      ++sandboxReused;
    else if (result.contains("sandbox_walked"))
      ++walkedBecause[result.at("sandbox_walked").get<std::string>()];
  }
  // `runSeconds`: the run's whole time (PropertyOutcome::seconds), of which
  // `in_cases` is the share spent inside its executed cases.
  json toJson(double runSeconds) const {
    const double t = totalUs > 0 ? totalUs : 1;
    const double known = referenceUs + deviceUs + inputsUs + verdictsUs + sandboxUs + controlUs + tamperUs;
    return {{"cases_executed", cases},
            {"cases_reused", reused},
            {"compilations", compilations},
            {"compilations_per_100_cases", cases ? 100.0 * compilations / cases : 0.0},
            {"share",
             {{"reference", referenceUs / t},
              {"device_op", deviceUs / t},
              {"harness", std::max(0.0, (totalUs - referenceUs - deviceUs) / t)}}},
            // Where the harness's part goes: building the inputs from their
            // seeds, judging, the sandbox, the stock control (and, of it,
            // switching FlagGems off and on), the tamper check, and the rest
            // (the C++ <-> Python round trip, device copies of the inputs).
            {"harness_share",
             {{"inputs", inputsUs / t},
              {"verdicts", verdictsUs / t},
              {"sandbox", sandboxUs / t},
              {"control", controlUs / t},
              {"flaggems_off", flagGemsOffUs / t},
              {"tamper", tamperUs / t},
              {"other", std::max(0.0, (totalUs - known) / t)}}},
            {"us_per_case", cases ? totalUs / cases : 0.0},
            {"in_cases", runSeconds > 0 ? std::min(1.0, totalUs / (1e6 * runSeconds)) : 0.0},
            // The sandbox's warm path (see core/sandbox.h): how many cases
            // reused the last snapshot, and why the others walked sys.modules.
            {"sandbox", {{"reused", sandboxReused}, {"walked", walkedBecause}}},
            // Cases judged together (RunOptions::batch): batches made, the
            // cases of them the search took, and why batching stopped.
            {"batch", {{"batches", batches}, {"cases", batched}, {"stopped", batchOff}}}};
  }
  std::string batchOff;
};

// The fallback of an op run to OpInfo's valid samples of the overload
// (flagprop.engine.opinfo), shared through `state` by the runs of one op and dtype.
gen::LayoutLimits limitsOf(const Target& t);

// The explicit examples of `entry` in `dtype` (catalog/examples.h), with
// OpInfo's samples of the overload where the bank has them; built once and
// shared through `state` by the runs of one op and dtype (P6 judges P5's
// observations of them).
std::function<std::vector<PropertyRun::Example>()> explicitOf(TargetSession& s, const OpEntry& entry,
                                                              const std::string& dtype,
                                                              const std::shared_ptr<OpRunState>& state) {
  TargetSession* sp = &s;
  const OpEntry* e = &entry;
  return [sp, e, dtype, state]() {
    if (state->examples) return *state->examples;
    const int most = sp->target().explicitCases;
    std::shared_ptr<const json> opinfo;
    if (most > 0) try {  // no bank (no OpInfo here, a failed build): the other examples
        const json samples = compatibleSamples(sp->opinfoSamples(e->name).value("samples", json::array()), e->name);
        if (!samples.empty()) opinfo = std::make_shared<const json>(samples);
      } catch (const py::error_already_set&) {
      }
    std::vector<PropertyRun::Example> out;
    for (auto& x : explicitExamples(*e, dtype, limitsOf(sp->target()), opinfo, most))
      out.push_back({x.name, rc::gen::map(x.cases, [](const OpCase& c) { return Case{toJson(c)}; })});
    state->examples = out;
    return out;
  };
}

PropertyRun::Fallback opinfoFallback(TargetSession& s, const OpEntry& entry, const std::string& dtype,
                                     const gen::LayoutLimits& lim, std::shared_ptr<OpRunState> state) {
  PropertyRun::Fallback f;
  f.name = "opinfo";
  f.describes = "OpInfo's samples";
  TargetSession* sp = &s;
  const OpEntry* e = &entry;
  f.make = [sp, e, dtype, lim, state](std::string& why) -> std::optional<rc::Gen<Case>> {
    if (state->opinfoCases) return state->opinfoCases;
    json got;
    try {
      got = sp->opinfoSamples(e->name);
    } catch (const py::error_already_set& ex) {
      why = "the OpInfo bank failed: " + describe(ex);
      return std::nullopt;
    }
    const json all = got.value("samples", json::array());
    const json samples = compatibleSamples(all, e->name);
    if (samples.empty()) {
      why = all.empty() ? got.value("why", std::string("no OpInfo samples"))
                        : "none of OpInfo's " + std::to_string(all.size()) + " samples passes the types " + e->name +
                              "'s schema names";
      return std::nullopt;
    }
    if (fittingSamples(samples, lim.maxElements) == 0) {
      why = "none of OpInfo's " + std::to_string(samples.size()) + " samples fits within max_elements " +
            std::to_string(lim.maxElements);
      return std::nullopt;
    }
    auto entryCopy = std::make_shared<OpEntry>(*e);
    try {
      entryCopy->sample = opinfoSampler(std::make_shared<const json>(samples));
    } catch (const std::exception& ex) {
      why = ex.what();
      return std::nullopt;
    }
    state->opinfoEntry = entryCopy;
    state->opinfoCases = rc::gen::map(opCases(*entryCopy, dtype, lim), [](const OpCase& c) { return Case{toJson(c)}; });
    return state->opinfoCases;
  };
  // No run starts from the fallback because another did: P6 searches as P5
  // did (its judgings come from P5's memo), so that the two end alike.
  return f;
}

// Whether a message says the device context is gone for this process
// (flagprop.engine.facts.DEVICE_LOST reads the same list).
bool deviceLostText(const std::string& s) {
  for (const char* k : {"illegal memory access", "CUDA error", "HIP error", "hipError", "AcceleratorError",
                        "device-side assert", "unspecified launch failure"})
    if (s.find(k) != std::string::npos) return true;
  return false;
}

// The first finding or harness error of `result` that says the device is gone.
std::string lostDeviceIn(const json& result) {
  const json ev = result.value("evidence", json::object());
  for (const char* k : {"numerics", "aliasing"})
    for (const auto& f : ev.value(k, json::array()))
      if (deviceLostText(f.get<std::string>())) return f.get<std::string>();
  return "";
}

// PropertyRun::judgeAhead of an op run: the cases of `cases` neither
// remembered nor waiting, each once, judged in one TargetSession::checkBatch;
// their results wait in state.ahead for judgeOpCase. A batch in which a case
// changed the interpreter's state keeps only its first case's result (the
// others did not run as they would alone) and ends batching for these cases.
// Returns whether batches may follow.
bool judgeOpBatch(TargetSession& s, OpRunState& state, OpStats& stats, const OpEntry& entry,
                  const std::vector<Case>& cases, const std::function<void(size_t)>& beforeEach) {
  if (cases.empty()) {
    state.ahead.clear();
    return true;
  }
  if (state.lost || !state.batchOff.empty() || !s.deviceLost.empty()) return false;
  std::vector<json> todo;
  std::vector<size_t> at;
  std::set<std::string> keys;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string k = cases[i].value.dump();
    if (state.memo.count(k) || state.ahead.count(k) || !keys.insert(std::move(k)).second) continue;
    todo.push_back(cases[i].value);
    at.push_back(i);
  }
  if (todo.size() < 2 || at[0] != 0) return true;  // the case at hand alone, as ever
  TargetSession::Batch b;
  try {
    b = s.checkBatch("op", todo, entry.judging, [&](size_t i) { beforeEach(at[i]); });
  } catch (const std::exception& e) {
    state.batchOff = std::string("a batch's judging failed: ") + e.what();
    stats.batchOff = state.batchOff.substr(0, 300);
    throw;
  }
  if (b.results.empty()) return true;  // its first case raised: judged alone, as ever
  ++stats.batches;
  size_t keep = b.results.size();
  if (!b.changed.empty()) {
    keep = std::min<size_t>(keep, 1);
    state.batchOff = "a case changed " + b.changed + " (the cases after it in its batch judged again alone)";
    stats.batchOff = state.batchOff;
  }
  for (size_t i = 0; i < keep; ++i) state.ahead.emplace(todo[i].dump(), std::move(b.results[i]));
  return state.batchOff.empty();
}

json lostResult(const json& evidence, const std::string& why) {
  const json v = {{"pass", false}, {"reason", kDeviceLostReason + why}};
  return {{"verdicts", {{"P5", v}, {"P6", v}, {"P10", v}}}, {"evidence", evidence}};
}

// Judges one case of `entry`: from the memo, or by running it; marks the
// session's device lost when the case broke it.
json judgeOpCase(TargetSession& s, OpRunState& state, OpStats& stats, const OpEntry& entry, const std::string& key,
                 const Case& c, bool fresh = false) {
  if (state.lost && state.stockLost) return {{"discard", s.deviceLost}};  // never the op's: it did not run
  if (state.lost) throw StickyFailure(s.deviceLost);
  const std::string caseKey = c.value.dump();
  const auto hit = fresh ? state.memo.end() : state.memo.find(caseKey);
  if (hit != state.memo.end()) {
    stats.add(hit->second, true);
    return hit->second;
  }
  json result;
  if (const auto a = fresh ? state.ahead.end() : state.ahead.find(caseKey); a != state.ahead.end()) {
    result = std::move(a->second);  // judged in a batch, in the order the search draws
    state.ahead.erase(a);
  } else {
    try {
      result = s.check("op", c.value, entry.judging);
    } catch (const py::error_already_set& e) {
      if (!deviceLostText(e.what())) throw;
      result = lostResult({{"harness_error", e.what()}}, describe(e));
      state.lost = true;
    }
  }
  if (result.contains("discard") && result.value("evidence", json::object()).contains("stock_lost")) {
    // The same case with FlagGems off lost the device first: a sample that is
    // invalid on this device (or a stock fault), not a finding of the op.
    state.lost = state.stockLost = true;
    s.deviceLost = std::string(kStockLostReason) + " during " + key + ", before the op ran (" +
                   result.at("evidence").at("stock_lost").get<std::string>().substr(0, 200) + ")";
    stats.add(result, false);
    return {{"discard", s.deviceLost}};
  }
  const std::string lost = lostDeviceIn(result);
  if (!lost.empty()) {
    result = lostResult(result.value("evidence", json::object()), lost);
    state.lost = true;
  }
  if (state.lost) {
    s.deviceLost = "the device context was lost during " + key + " (" +
                   verdictOf(result, "P5").at("reason").get<std::string>() + ")";
    result.erase("tag");
  }
  if (!fresh) state.memo.emplace(caseKey, result);
  stats.add(result, false);
  return result;
}

gen::LayoutLimits limitsOf(const Target& t) {
  gen::LayoutLimits lim;
  lim.maxElements = t.maxElements;
  lim.specials = t.specials;
  lim.palette = t.layoutPalette;
  lim.paletteSeed = t.paletteSeed;
  return lim;
}

// Counts of a P8 run, summed over its cases: per kernel ({name, run,
// run_stock, key, key_stock}, sorted by name), LibEntry runs and keys, and
// how many of them entered the stock ones.
struct HitTotals {
  json kernels = json::array();
  void add(const json& result) {
    const json ks = result.value("evidence", json::object()).value("kernels", json::array());
    for (const auto& c : ks) {
      const std::string name = c.value("name", "");
      auto it =
          std::find_if(kernels.begin(), kernels.end(), [&](const json& k) { return k.value("name", "") == name; });
      if (it == kernels.end())
        it = kernels.insert(
            std::lower_bound(kernels.begin(), kernels.end(), name,
                             [](const json& k, const std::string& n) { return k.value("name", "") < n; }),
            json{{"name", name}});
      for (const char* f : {"run", "run_stock", "key", "key_stock"}) (*it)[f] = it->value(f, 0) + c.value(f, 0);
    }
  }
};

// What every op run of `def` on `entry` in `dtype` holds.
PropertyRun baseRun(const TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                    const rc::Gen<Case>& cases) {
  PropertyRun run;
  run.id = def.id;
  run.title = def.title;
  run.op = entry.name;
  run.dtype = dtype;
  run.checkKind = def.checkKind;
  run.judging = entry.judging;
  run.cases = def.cases ? def.cases : s.target().opCases;
  run.maxElements = s.target().maxElements;
  run.generator = cases;
  return run;
}

// An op run judged case by case by its property's check kind (P7); a lost
// device stops it as it stops P5 / P6.
PropertyRun checkedRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                       const rc::Gen<Case>& cases) {
  PropertyRun run = baseRun(s, def, entry, dtype, cases);
  TargetSession* sp = &s;
  const std::string kind = def.checkKind;
  const json judging = entry.judging;
  run.judge = [sp, kind, judging](const Case& c) { return sp->check(kind, c.value, judging); };
  run.precondition = [sp, run]() -> std::optional<PropertyOutcome> {
    if (sp->deviceLost.empty()) return std::nullopt;
    return outcomeFor(run, "error", "not run: " + sp->deviceLost);
  };
  return run;
}

// P9: one measured case (RapidCheck's first, a small input: the patch saves
// host time per launch), its samples and summary kept; a refusal (patch not
// active, no fast hits) makes the run a skip with the reason.
PropertyRun timingRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                      const rc::Gen<Case>& cases) {
  PropertyRun run = checkedRun(s, def, entry, dtype, cases);
  auto last = std::make_shared<json>();
  TargetSession* sp = &s;
  run.judge = [sp, last](const Case& c) {
    *last = sp->check("timing", c.value);
    return *last;
  };
  run.finish = [last](PropertyOutcome& o) {
    if (last->contains("refused")) {
      o.status = "skip";
      o.reason = "refused: " + last->at("refused").get<std::string>();
    } else if (o.status == "pass" && last->contains("reason")) {
      o.reason = last->at("reason").get<std::string>();  // the measurement
    }
    if (last->contains("evidence")) o.observations["timing"] = last->at("evidence");
  };
  return run;
}

PropertyRun hitsRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                    const rc::Gen<Case>& cases) {
  PropertyRun run = checkedRun(s, def, entry, dtype, cases);
  auto totals = std::make_shared<HitTotals>();
  TargetSession* sp = &s;
  run.judge = [sp, totals](const Case& c) {
    json r = sp->check("hits", c.value);
    totals->add(r);
    return r;
  };
  run.finish = [totals](PropertyOutcome& o) {
    int all = 0, stock = 0;
    for (const auto& k : totals->kernels) all += k.value("run", 0), stock += k.value("run_stock", 0);
    o.observations["hits"] = {{"kernels", totals->kernels},
                              {"runs", all},
                              {"fast_runs", all - stock},
                              {"hit_ratio", all ? double(all - stock) / all : 0.0}};
  };
  return run;
}

PropertyRun opRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                  const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& state) {
  PropertyRun run = baseRun(s, def, entry, dtype, cases);
  run.fallback = opinfoFallback(s, entry, dtype, limitsOf(s.target()), state);
  run.examples = explicitOf(s, entry, dtype, state);
  auto stats = std::make_shared<OpStats>();
  const std::string key = def.id + "/" + entry.name + "/" + dtype;
  TargetSession* sp = &s;
  const OpEntry* e = &entry;
  run.judge = [sp, state, stats, e, key](const Case& c) { return judgeOpCase(*sp, *state, *stats, *e, key, c); };
  run.judgeAgain = [sp, state, stats, e, key](const Case& c) {
    return judgeOpCase(*sp, *state, *stats, *e, key, c, true);
  };
  run.judgeAhead = [sp, state, stats, e](const std::vector<Case>& cases, const std::function<void(size_t)>& before) {
    return judgeOpBatch(*sp, *state, *stats, *e, cases, before);
  };
  run.judgedAhead = [state](const Case& c) { return state->ahead.count(c.value.dump()) > 0; };
  run.stockInOpPlace = [](bool on) {
    py::gil_scoped_acquire gil;
    pyImport("flagprop.engine.ops").attr("_STATE")["stock_in_op_place"] = py::bool_(on);
  };
  run.distinct = 3;  // up to three distinct failures per op and dtype
  run.clockStart = [state]() {
    if (!state->started) state->started = std::chrono::steady_clock::now();
    return *state->started;
  };
  // A derived entry samples ranks 0..4 for ops that may take only one (pdist:
  // 2-D, pixel_shuffle: 3-D and up): a 1-in-5 acceptance needs more tries.
  if (entry.judging.derived()) run.maxDiscardRatio = 10;
  run.precondition = [sp, run, state]() -> std::optional<PropertyOutcome> {
    if (sp->deviceLost.empty() || state->lost) return std::nullopt;
    return outcomeFor(run, "error", "not run: " + sp->deviceLost + "; rerun it alone with --op " + run.op);
  };
  run.finish = [stats, state](PropertyOutcome& o) {
    o.observations["stats"] = stats->toJson(o.seconds);
    if (state->lost) o.reproduce.clear();  // the device, not this case's inputs, decided the later cases
  };
  return run;
}

// A run that is not made: the op is excluded, and the reason says why.
PropertyRun excludedRun(const PropertyDef& def, const std::string& op, const std::string& dtype,
                        const std::string& why) {
  PropertyRun run;
  run.id = def.id;
  run.title = def.title;
  run.op = op;
  run.dtype = dtype;
  run.checkKind = def.checkKind;
  run.quiet = true;
  run.precondition = [run, why]() -> std::optional<PropertyOutcome> { return outcomeFor(run, "skip", why); };
  return run;
}

}  // namespace

PropertyRun judgedOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                        const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared) {
  return opRun(s, def, entry, dtype, cases, shared);
}

namespace {

// The scalars a P10 history call gives the case's numeric keyword
// arguments: 1 (which Triton specializes as a constant), 2, -1, 0.5.
const double kHistoryScalars[] = {1, 2, -1, 0.5};

// A history call of case `c`: the same op, dtype, shapes and layouts, its
// tensors' values from other seeds (+ `seedOffset`) and its numeric keyword
// arguments (not booleans) set to kHistoryScalars[scalar].
json historyCall(const json& c, int scalar, int seedOffset) {
  json h = c;
  h.erase("history");
  for (auto& call : h["calls"]) {
    for (auto& t : call["tensors"])
      if (t.contains("seed") && t["seed"].is_number_integer()) t["seed"] = t["seed"].get<int64_t>() + seedOffset;
    if (call.contains("kwargs") && call["kwargs"].is_object())
      for (auto it = call["kwargs"].begin(); it != call["kwargs"].end(); ++it)
        if (it.value().is_number() && !it.value().is_boolean())
          it.value() = it.value().is_number_integer() && kHistoryScalars[scalar] != 0.5
                           ? json(static_cast<int64_t>(kHistoryScalars[scalar]))
                           : json(kHistoryScalars[scalar]);
  }
  return h;
}

// P10's cases: each of `cases` with a history of up to 4 calls run before
// it in the same process (historyCall); RapidCheck shrinks the history
// (fewer calls, the first scalar, the nearest seed) with the case.
rc::Gen<Case> withHistory(const rc::Gen<Case>& cases) {
  return rc::gen::mapcat(cases, [](const Case& c) {
    const auto picks = rc::gen::container<std::vector<std::pair<int, int>>>(
        rc::gen::pair(rc::gen::inRange(0, 4), rc::gen::inRange(1, 1000)));
    return rc::gen::map(picks, [c](const std::vector<std::pair<int, int>>& ps) {
      if (!c.value.is_object() || !c.value.contains("calls")) return c;
      json v = c.value;
      v["history"] = json::array();
      for (size_t i = 0; i < ps.size() && i < 4; ++i)
        v["history"].push_back(historyCall(c.value, ps[i].first, ps[i].second));
      return Case{v};
    });
  });
}

}  // namespace

PropertyRun historyOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                         const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared) {
  PropertyRun run = opRun(s, def, entry, dtype, withHistory(cases), shared);
  run.fallback.reset();  // OpInfo's samples and the explicit examples are P5's: P10's cases carry a history
  run.examples = nullptr;
  run.distinct = 1;
  return run;
}

PropertyRun checkedOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                         const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>&) {
  return checkedRun(s, def, entry, dtype, cases);
}

PropertyRun hitsOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                      const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>&) {
  return hitsRun(s, def, entry, dtype, cases);
}

PropertyRun timingOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                        const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>&) {
  return timingRun(s, def, entry, dtype, cases);
}

namespace {
// What `entry` (op `name`) runs in when target `t` names no dtypes: every
// dtype ATen takes by its schema, the hand-written entry's first
// (defaultDtypesOf); the entry's own for an integral-only op and for a
// module's ops (flagprop's models of the contract, written for those; a
// module target that lists dtypes gets them all).
std::vector<std::string> ownDtypesOf(const Target& t, const OpEntry& entry, const std::string& name) {
  if (entry.judging.integerOnly || t.ops.kind == "module")
    return entry.defaultDtypes.empty() ? entry.dtypes : entry.defaultDtypes;
  return defaultDtypesOf(name);
}
}  // namespace

const OpEntry* targetEntry(const Target&, const std::string& op, const std::string& dtype) {
  // The op under test is an ATen overload, whatever implements it: it takes
  // what ATen's schema does (a module's op too), where the hand-written
  // entry runs fewer dtypes the schema-derived one runs the others.
  return opIn(op, dtype, true);
}

std::vector<PlannedOpRun> planOpRuns(const Target& t, const std::vector<const PropertyDef*>& defs,
                                     const Selection& sel) {
  std::vector<PlannedOpRun> out;
  for (const auto& name : targetOpNames(t)) {
    const OpEntry* found = findOp(name);
    if (!found) {  // excluded (a registered overload flagprop cannot sample or judge): a skip with the reason
      const std::string dtype = t.dtypes.empty() ? kFloating[0] : t.dtypes[0];
      for (const auto* d : defs)
        if (d->reportsExcluded && sel.takes(d->id, name, dtype) && sel.inPart(t.name, name, dtype))
          out.push_back({d, nullptr, name, dtype, "excluded: " + whyExcluded(name)});
      continue;
    }
    const OpEntry& entry = *found;
    const std::vector<std::string> defaults = ownDtypesOf(t, entry, name);
    // An integral-only op is judged in its own dtypes when the target asks for
    // floating dtypes only (else it would silently not run at all).
    bool anyWanted = t.dtypes.empty();
    for (const auto& dtype : entry.dtypes)
      anyWanted |= std::find(t.dtypes.begin(), t.dtypes.end(), dtype) != t.dtypes.end();
    const bool ownDtypes = !anyWanted && entry.judging.integerOnly;
    const bool fallback = true;  // see targetEntry
    for (const auto& dtype : t.dtypes.empty() || ownDtypes ? defaults : t.dtypes) {
      // Every dtype the target asks for ends as a result: run by the entry
      // that takes it, or a skip that says why none does.
      const OpEntry* e = targetEntry(t, name, dtype);
      for (const auto* d : defs)
        if (sel.takes(d->id, name, dtype) && sel.inPart(t.name, name, dtype))
          out.push_back({d, e, name, dtype, e ? "" : "not run in " + dtype + ": " + whyNotIn(name, dtype, fallback)});
    }
  }
  return out;
}

std::vector<PropertyRun> opRuns(TargetSession& session, const std::vector<const PropertyDef*>& defs,
                                const Selection& sel) {
  const Target& t = session.target();
  std::vector<PropertyRun> runs;
  std::vector<std::string> names;
  const gen::LayoutLimits lim = limitsOf(t);
  const std::vector<PlannedOpRun> plan = planOpRuns(t, defs, sel);
  for (size_t i = 0; i < plan.size();) {
    if (!plan[i].entry) {
      runs.push_back(excludedRun(*plan[i].def, plan[i].op, plan[i].dtype, plan[i].skip));
      ++i;
      continue;
    }
    // The runs of one op and dtype draw the same cases and share their observations.
    const OpEntry& entry = *plan[i].entry;
    const std::string dtype = plan[i].dtype;
    const auto palette = std::make_shared<const std::vector<rc::Random>>(paletteRandoms(entry, dtype, lim));
    const rc::Gen<Case> cases =
        rc::gen::map(opCases(entry, dtype, lim, palette), [](const OpCase& c) { return Case{toJson(c)}; });
    auto state = std::make_shared<OpRunState>();
    for (; i < plan.size() && plan[i].entry == &entry && plan[i].dtype == dtype; ++i) {
      const PropertyDef* d = plan[i].def;
      runs.push_back(d->opRun(session, *d, entry, dtype, cases, state));
    }
    if (std::find(names.begin(), names.end(), entry.name) == names.end()) names.push_back(entry.name);
  }
  if (!runs.empty()) session.setupOps(names);
  return runs;
}

std::vector<json> precompileCases(const Target& t, const std::vector<PropertyRun>& runs, const RunOptions& opts) {
  const gen::LayoutLimits lim = limitsOf(t);
  std::vector<json> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& r : runs) {
    if (r.op.empty() || !seen.insert({r.op, r.dtype}).second) continue;
    const OpEntry* entry = findOp(r.op);
    if (!entry) continue;
    // First the explicit examples, which the runs judge first: each is a
    // shape of its own (0-d, empty, 65,537 rows, OpInfo's samples), so in a
    // cold run they compile one after another before any generated case.
    // Not for the ops that autotune heavily: their cost is benchmarking
    // configs on the one device, which workers at once do not speed up (on
    // an H100, 14 workers on addmm, addbmm and conv2d were each still on
    // their first to seventh call when stopped at 37 s, nothing kept, and
    // the run then judged nothing within its --budget; bench/README.md).
    std::vector<json> drawn;
    try {
      if (!opAutotunesHeavily(r.op)) drawn = phases::explicitFirstDraws(r, opts);
    } catch (const std::exception&) {  // examples that cannot be built here: they compile as they come
    }
    for (const auto& c : drawn)
      for (const auto& call : c.value("calls", json::array())) {
        json one = c;
        one["calls"] = json::array({call});
        out.push_back(std::move(one));
      }
    std::vector<OpCall> calls;
    try {
      if (lim.palette > 0) {
        calls = buildPalette(*entry, r.dtype, lim);
      } else {
        uint64_t seed = 0x5EEDC0DEull;
        for (char ch : r.op + "/" + r.dtype) seed = (seed ^ static_cast<unsigned char>(ch)) * 0x100000001B3ull;
        rc::Random random(seed);
        const auto g = entry->sample({r.dtype, lim});
        for (int i = 0; i < kFreePrecompileCalls; ++i) {
          const auto shrinkable = g(random.split(), i * 100 / kFreePrecompileCalls);
          calls.push_back(shrinkable.value());
        }
      }
    } catch (const std::exception&) {  // a sampler that cannot draw here: its cases compile as they come
    }
    for (auto& c : calls) {
      OpCase one;
      one.op = r.op;
      one.dtype = r.dtype;
      one.calls.push_back(std::move(c));
      out.push_back(toJson(one));
    }
  }
  return out;
}

}  // namespace flagprop
