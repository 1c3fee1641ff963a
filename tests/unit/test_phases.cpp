// The phases of a property run (suites/phases.h), each on its own over a
// made-up run: a judge that is a lambda over integer cases.
#include "suites/phases.h"

#include "core/files.h"
#include "runner/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unistd.h>

namespace flagprop::phases {
namespace {

PropertyRun intRun(int cases, std::function<json(const Case&)> judge) {
  PropertyRun run;
  run.id = "P1";
  run.title = "install status";
  run.checkKind = "install";
  run.cases = cases;
  run.generator = rc::gen::map(rc::gen::inRange(0, 1000), [](int n) { return Case{json(n)}; });
  run.judge = std::move(judge);
  return run;
}

json verdict(bool pass, const std::string& why = "wrong") { return {{"pass", pass}, {"reason", why}}; }

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
}

TEST(Phases, TheInflightRecordHoldsTheCaseWhileItRunsAndIsEmptiedAfter) {
  const std::string fly = tempPath("phases-inflight"), stage = tempPath("phases-stage");
  writeText(stage, "device          123.456789");  // the last case's stage and compile stamp
  const InflightRecord r(fly, stage);
  r.begin("P5/tanh/float32", json(7), "opinfo", {{"confirming", true}});
  EXPECT_EQ(flagprop::readStage(stage), "") << "the stage file is the case's own";
  EXPECT_EQ(flagprop::stageCompileAge(stage), -1) << "no stamp of the last case's compilations";
  EXPECT_EQ(readFile(stage).find_first_not_of(' '), std::string::npos) << "blanks only";
  const json j = json::parse(readFile(fly));
  EXPECT_EQ(j, json({{"key", "P5/tanh/float32"}, {"case", 7}, {"sampler", "opinfo"}, {"confirming", true}}));
  r.end();
  EXPECT_EQ(readFile(fly), "");
  InflightRecord("", "").begin("P1", json(1), "", json::object());  // no paths: nothing touched, no throw
  std::remove(fly.c_str());
  std::remove(stage.c_str());
}

TEST(Phases, TheRunClockIsPastOnlyWithALimitAndAStart) {
  RunClock c;
  EXPECT_FALSE(c.past()) << "no limit, no start";
  c.limitSeconds = 1;
  EXPECT_FALSE(c.past()) << "not started";
  c.start = std::chrono::steady_clock::now() - std::chrono::seconds(5);
  EXPECT_TRUE(c.past());
  c.limitSeconds = -1;
  EXPECT_FALSE(c.past());
}

TEST(Phases, PickSourceDrawsFromTheFallbackFirstOrSkipsARetriedCrash) {
  PropertyRun run = intRun(5, [](const Case&) { return verdict(true); });
  run.fallback = PropertyRun::Fallback{};
  run.fallback->name = "opinfo";
  run.fallback->describes = "OpInfo's samples";
  run.fallback->make = [](std::string&) -> std::optional<rc::Gen<Case>> { return rc::gen::just(Case{json(3)}); };
  run.fallback->first = []() { return true; };
  RunOptions opts;
  opts.seed = 1;
  RunState s(run, opts);
  EXPECT_FALSE(pickSource(s));
  EXPECT_EQ(s.md.id, "P1|opinfo");
  EXPECT_EQ(s.sampler(), "opinfo");
  EXPECT_EQ(s.out.observations.at("sampler"), "opinfo");
  // A retry after CPU ATen ended the process, with no fallback to draw from: a skip.
  run.fallback->make = [](std::string& why) -> std::optional<rc::Gen<Case>> {
    why = "no samples";
    return std::nullopt;
  };
  run.fallback->retriedAfter = "target process died with signal 11";
  RunState t(run, opts);
  const auto skip = pickSource(t);
  ASSERT_TRUE(skip);
  EXPECT_EQ(skip->status, "skip");
  EXPECT_EQ(skip->observations.at("crash_in"), "reference");
  EXPECT_NE(skip->reason.find("no fallback: no samples"), std::string::npos) << skip->reason;
}

TEST(Phases, ConfirmCrashJudgesTheCaseOnceInAFreshProcess) {
  bool fails = false;
  PropertyRun run = intRun(5, [&](const Case&) { return verdict(!fails, "still wrong"); });
  RunOptions opts;
  RunState none(run, opts);
  EXPECT_FALSE(confirmCrash(none)) << "no crash to confirm: the next phase goes on";
  run.confirmCrash = {{"counterexample", 4}, {"observations", {{"crash", "target process died with signal 11"}}}};
  RunState passes(run, opts);
  const auto flaky = confirmCrash(passes);
  ASSERT_TRUE(flaky);
  EXPECT_EQ(flaky->status, "flaky");
  EXPECT_EQ(flaky->observations.at("replays"), json({{"failed", 1}, {"of", 2}}));
  fails = true;
  RunState again(run, opts);
  const auto failed = confirmCrash(again);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, "fail");
  EXPECT_EQ(failed->counterexample, json(4));
  EXPECT_NE(failed->reason.find("still wrong (the target process died"), std::string::npos) << failed->reason;
}

// A fail only where both processes show a fault of the first call: it
// failed first (and only first) in its own process and again first (and
// only first) in a fresh one. A case wrong on every judging here, or on some
// of them, stays flaky with the tally over both processes.
TEST(Phases, ConfirmFreshCallsOnlyAFirstCallFaultAFailure) {
  int calls = 0;
  std::function<bool(int)> failsOn;
  PropertyRun run = intRun(5, [&](const Case&) { return verdict(!failsOn(calls++), "wrong"); });
  run.confirmFlaky = {{"reason", "flaky: wrong"},
                      {"cases_run", 3},
                      {"counterexample", 9},
                      {"observations", {{"replays", {{"failed", 1}, {"of", 4}}}}}};
  RunOptions opts;
  opts.flakyReplays = 3;
  failsOn = [](int k) { return k == 0; };  // the first call of the process only
  RunState s(run, opts);
  const auto failed = confirmFresh(s);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, "fail") << failed->reason;
  EXPECT_EQ(failed->observations.at("replays"), json({{"failed", 2}, {"of", 8}}));
  EXPECT_EQ(failed->casesRun, 7);
  calls = 0;
  failsOn = [](int k) { return k % 2 == 0; };  // wrong on half its calls
  RunState t(run, opts);
  const auto flaky = confirmFresh(t);
  ASSERT_TRUE(flaky);
  EXPECT_EQ(flaky->status, "flaky") << flaky->reason;
  EXPECT_EQ(flaky->observations.at("replays"), json({{"failed", 3}, {"of", 8}}));
  calls = 0;
  failsOn = [](int) { return true; };
  run.confirmFlaky["observations"]["replays"] = {{"failed", 2}, {"of", 4}};
  RunState u(run, opts);
  EXPECT_EQ(confirmFresh(u)->status, "flaky") << "not a first-call pattern in its own process";
}

// A replay is judged as many times as the run judged: a case that held on
// the replay's first judging but fails on another is flaky, not fixed.
TEST(Phases, AReplayJudgesTheCaseAsOftenAsTheRunDid) {
  int calls = 0;
  PropertyRun run = intRun(5, [&](const Case&) { return verdict(calls++ != 1, "wrong"); });
  RunOptions opts;
  opts.flakyReplays = 3;
  RunState s(run, opts);
  s.out.status = "pass";
  s.tally.lastJudged = json(4);
  calls = 1;  // the next judging fails, the ones after hold
  replayAgain(s);
  EXPECT_EQ(s.out.status, "flaky");
  EXPECT_EQ(s.out.observations.at("replays"), json({{"failed", 1}, {"of", 4}}));
  EXPECT_EQ(s.out.counterexample, json(4));
}

TEST(Phases, ReuseReportsTheFirstStoredExampleThatStillFailsAndListsTheOthers) {
  PropertyRun run = intRun(5, [](const Case& c) { return verdict(c.value.get<int>() < 100); });
  RunOptions opts;
  opts.flakyReplays = 0;
  opts.examples = {{{"case", 1}, {"file", "a.json"}, {"stored_at", "t1"}},
                   {{"case", 500}, {"file", "b.json"}, {"stored_at", "t2"}}};
  RunState s(run, opts);
  json db;
  const auto failed = reuse(s, db);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, "fail");
  EXPECT_EQ(failed->counterexample, json(500));
  EXPECT_EQ(failed->observations.at("db").at("fixed").size(), 1u);
  EXPECT_EQ(failed->observations.at("db").at("replayed"), 2);
  opts.examples.pop_back();
  RunState t(run, opts);
  EXPECT_FALSE(reuse(t, db)) << "every stored example holds: the search goes on";
  EXPECT_EQ(db.at("fixed").size(), 1u);
  const RunOptions none;  // RunState keeps a reference: it must outlive the state
  RunState u(run, none);
  json empty = json::object();
  EXPECT_FALSE(reuse(u, empty));
  EXPECT_TRUE(empty.empty()) << "nothing stored: no db note";
}

TEST(Phases, SearchEndsNotRunWhereCpuAtenTakesNoSampleInTheDtype) {
  PropertyRun run = intRun(5, [](const Case&) {
    return json{{"discard", "CPU ATen rejects call 0: RuntimeError: \"tanh\" not implemented for 'Int'"}};
  });
  run.dtype = "int32";
  run.op = "tanh";
  RunOptions opts;
  opts.seed = 3;
  RunState s(run, opts);
  auto searched = search(s);
  ASSERT_TRUE(std::holds_alternative<PropertyOutcome>(searched));
  const auto& o = std::get<PropertyOutcome>(searched);
  EXPECT_EQ(o.status, "skip");
  EXPECT_EQ(o.reason.rfind("not run in int32", 0), 0u) << o.reason;
  EXPECT_EQ(s.tally.dtypeRejected, SearchTally::kDtypeRejections);
}

TEST(Phases, SearchFallsBackWhenTheGeneratorGivesUp) {
  PropertyRun run = intRun(3, [](const Case& c) {
    return c.value.get<int>() == -1 ? verdict(true) : json{{"discard", "CPU ATen rejects call 0: wrong rank"}};
  });
  run.fallback = PropertyRun::Fallback{};
  run.fallback->name = "opinfo";
  run.fallback->describes = "OpInfo's samples";
  run.fallback->make = [](std::string&) -> std::optional<rc::Gen<Case>> { return rc::gen::just(Case{json(-1)}); };
  RunOptions opts;
  opts.seed = 5;
  RunState s(run, opts);
  auto searched = search(s);
  ASSERT_TRUE(std::holds_alternative<Found>(searched));
  record(s, std::get<Found>(searched));
  EXPECT_EQ(s.out.status, "pass") << s.out.reason;
  EXPECT_TRUE(s.out.observations.contains("gave_up_first"));
  closeSearch(s);
  EXPECT_NE(s.out.reason.find("cases from OpInfo's samples (the schema's samples gave up"), std::string::npos)
      << s.out.reason;
}

TEST(Phases, ConfirmByReplaysCallsACaseThatPassesOnceFlaky) {
  int calls = 0;
  PropertyRun run = intRun(5, [&](const Case&) { return verdict(++calls % 2 == 0); });
  RunOptions opts;
  opts.flakyReplays = 3;
  RunState s(run, opts);
  PropertyOutcome o = outcomeFor(run, "fail", "wrong");
  confirmByReplays(s, o, Case{json(1)}, "");
  EXPECT_EQ(o.status, "flaky");
  EXPECT_EQ(o.observations.at("replays"), json({{"failed", 3}, {"of", 4}})) << "failed on the 1st and 3rd replays";
  PropertyOutcome steady = outcomeFor(run, "fail", "wrong");
  run.judge = [](const Case&) { return verdict(false); };
  RunState t(run, opts);
  confirmByReplays(t, steady, Case{json(1)}, "");
  EXPECT_EQ(steady.status, "fail");
  EXPECT_EQ(steady.observations.at("replays"), json({{"failed", 4}, {"of", 4}}));
}

TEST(Phases, NoteShrinkSaysWhatStoppedShrinking) {
  PropertyOutcome o;
  o.reason = "wrong";
  noteShrink(o, json());
  EXPECT_FALSE(o.observations.contains("shrink"));
  noteShrink(o, {{"stopped", true}, {"accepted", 2}, {"budget_s", 5}});
  EXPECT_EQ(o.reason,
            "wrong (shrinking stopped after 5 s (--shrink-time), 2 smaller failing case(s) found: the "
            "counterexample may not be the smallest)");
  o.reason = "wrong";
  noteShrink(o, {{"stopped", true}, {"accepted", 0}, {"by", "run-time"}});
  EXPECT_NE(o.reason.find("when the run's --run-time ran out, 0 smaller"), std::string::npos) << o.reason;
}

TEST(Phases, DistinctSearchesAgainWithTheKindsFoundCountedAsPasses) {
  auto kinded = [](bool pass, const std::string& kind) {
    json r;
    r["verdicts"]["P1"] = {{"pass", pass}, {"reason", kind}, {"kinds", json::array({kind})}};
    return r;
  };
  PropertyRun run = intRun(50, [&](const Case& c) {
    const int n = c.value.get<int>();
    return kinded(n < 10, n % 2 ? "odd" : "even");
  });
  run.generator = rc::gen::map(rc::gen::resize(100, rc::gen::inRange(0, 1000000)), [](int n) { return Case{json(n)}; });
  run.distinct = 3;
  RunOptions opts;
  opts.seed = 11;
  opts.flakyReplays = 0;
  RunState s(run, opts);
  auto searched = search(s);
  ASSERT_TRUE(std::holds_alternative<Found>(searched));
  record(s, std::get<Found>(searched));
  ASSERT_EQ(s.out.status, "fail");
  const json first = s.out.observations.at("kinds");
  distinct(s);
  const json more = s.out.observations.value("distinct_failures", json::array());
  ASSERT_EQ(more.size(), 1u) << s.out.observations.dump();
  EXPECT_NE(more.at(0).at("kinds"), first) << "the second failure is of the other kind";
}

// A run over integer cases whose judgings are logged in the order they run,
// with a memo and PropertyRun::judgeAhead as the op runs have them (a case
// judged before is answered from the memo; a batch leaves out the cases
// remembered or waiting, stops after a discard and keeps its results for
// `judge`).
struct Logged {
  std::vector<int> ran;  // every judging, in order
  std::map<int, json> waiting, memo;
  int batches = 0;
  std::function<json(int)> verdictOf;
  PropertyRun run(int cases) {
    PropertyRun r = intRun(cases, [this](const Case& c) {
      const int n = c.value.get<int>();
      if (auto it = waiting.find(n); it != waiting.end()) {
        memo[n] = it->second;
        waiting.erase(it);
      }
      if (!memo.count(n)) {
        ran.push_back(n);
        memo[n] = verdictOf(n);
      }
      return memo[n];
    });
    r.judgeAhead = [this](const std::vector<Case>& cases, const std::function<void(size_t)>& before) {
      if (cases.empty()) {
        waiting.clear();
        return true;
      }
      std::vector<size_t> todo;
      std::set<int> keys;
      for (size_t i = 0; i < cases.size(); ++i) {
        const int n = cases[i].value.get<int>();
        if (!memo.count(n) && !waiting.count(n) && keys.insert(n).second) todo.push_back(i);
      }
      if (todo.size() < 2 || todo[0] != 0) return true;
      ++batches;
      for (size_t i : todo) {
        before(i);
        const int n = cases[i].value.get<int>();
        ran.push_back(n);
        waiting[n] = verdictOf(n);
        if (waiting[n].contains("discard")) break;
      }
      return true;
    };
    r.judgedAhead = [this](const Case& c) { return waiting.count(c.value.get<int>()) > 0; };
    return r;
  }
};

// Judgings in batches of `batch` (1: one at a time): what ran, the outcome.
std::pair<Logged, PropertyOutcome> searchLogged(int batch, const std::function<json(int)>& verdictOf, int cases = 60) {
  Logged log;
  log.verdictOf = verdictOf;
  PropertyRun run = log.run(cases);
  RunOptions opts;
  opts.seed = 11;
  opts.batch = batch;
  RunState s(run, opts);
  auto searched = search(s);
  if (auto* f = std::get_if<Found>(&searched)) record(s, *f);
  return {log, s.out};
}

TEST(Phases, BatchesJudgeTheCasesTheSearchDrawsInItsOrder) {
  // Discards every seventh value: the lookahead follows RapidCheck's sizes
  // after a discard too, or it would stop after the first one.
  const auto verdictOf = [](int n) {
    return n % 7 == 3 ? json{{"discard", "CPU ATen rejects call 0: wrong rank"}} : verdict(true);
  };
  const auto [alone, aloneOut] = searchLogged(1, verdictOf);
  const auto [batched, batchedOut] = searchLogged(8, verdictOf);
  EXPECT_EQ(aloneOut.status, "pass");
  EXPECT_EQ(batchedOut.status, "pass");
  EXPECT_EQ(alone.batches, 0);
  EXPECT_EQ(batched.ran, alone.ran) << "the same cases judged, in the same order, each once";
  // 60 passes and their discards in batches of up to 8: a lookahead that
  // lost the search would leave the rest one at a time.
  EXPECT_GE(batched.batches, 8);
  EXPECT_LE(batched.batches, 20);
}

TEST(Phases, ABatchWithAFailureEndsAsOneCaseAtATimeWould) {
  // Fails from 900 up: the first failure is shrunk to 900 either way.
  const auto verdictOf = [](int n) { return verdict(n < 900); };
  const auto [alone, aloneOut] = searchLogged(1, verdictOf, 100);
  const auto [batched, batchedOut] = searchLogged(8, verdictOf, 100);
  ASSERT_EQ(aloneOut.status, "fail");
  EXPECT_EQ(batchedOut.status, "fail");
  EXPECT_EQ(batchedOut.counterexample, aloneOut.counterexample);
  EXPECT_EQ(batchedOut.counterexample, json(900));
  EXPECT_GT(batched.batches, 0);
  // What ran: the same cases up to the failure, then at most the rest of
  // its batch (never taken as results), then the same shrink.
  const auto firstFail = std::find_if(alone.ran.begin(), alone.ran.end(), [](int n) { return n >= 900; });
  ASSERT_NE(firstFail, alone.ran.end());
  const size_t upTo = static_cast<size_t>(firstFail - alone.ran.begin()) + 1;
  ASSERT_GE(batched.ran.size(), upTo);
  EXPECT_TRUE(std::equal(alone.ran.begin(), alone.ran.begin() + upTo, batched.ran.begin()))
      << ::testing::PrintToString(alone.ran) << "\n"
      << ::testing::PrintToString(batched.ran);
  const size_t extra = batched.ran.size() - alone.ran.size();
  EXPECT_LT(extra, 8u);
  EXPECT_TRUE(std::equal(alone.ran.begin() + upTo, alone.ran.end(), batched.ran.begin() + upTo + extra))
      << "the shrink judges the same candidates";
}

TEST(Phases, TheLookaheadPredictsRapidChecksDrawsAndTurnsOffOnAWrongGuess) {
  rc::detail::TestParams params;
  params.maxSuccess = 30;
  params.maxSize = 100;
  params.seed = 99;
  const rc::Gen<Case> gen = rc::gen::map(rc::gen::inRange(0, 1000000), [](int n) { return Case{json(n)}; });
  std::vector<json> drawn;
  int attempt = 0;
  const auto property = rc::detail::toProperty([&] {
    const Case c = *gen;
    drawn.push_back(c.value);
    if (++attempt % 4 == 0) RC_DISCARD("every fourth");
  });
  struct Deaf : rc::detail::TestListener {
    void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
    void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
    void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  } deaf;
  rc::detail::checkProperty(property, rc::detail::TestMetadata{}, params, deaf);
  ASSERT_GT(drawn.size(), 30u);
  Lookahead ahead(gen, params);
  for (size_t i = 0; i < drawn.size(); ++i) {
    const bool discarded = (i + 1) % 4 == 0;
    if (!discarded) {  // predicted as if each passed: right up to the next discard
      const std::vector<Case> next = ahead.next(3);
      for (size_t k = 0; k < next.size() && i + k < drawn.size(); ++k) {
        EXPECT_EQ(next[k].value, drawn[i + k]) << "attempt " << i << " + " << k;
        if ((i + k + 1) % 4 == 0) break;
      }
    }
    ASSERT_TRUE(ahead.at(drawn[i])) << "attempt " << i;
    ahead.ended(!discarded);
  }
  EXPECT_TRUE(ahead.next(1).empty()) << "no successes left to make";
  Lookahead wrong(gen, params);
  EXPECT_FALSE(wrong.at(json(-1)));
  EXPECT_FALSE(wrong.on());
  EXPECT_TRUE(wrong.next(4).empty());
}

}  // namespace
}  // namespace flagprop::phases
