// Every failure confirmed alone: each failing op result's reproducer run in
// a fresh process; one that does not fail there is searched for the earlier
// calls of its process it needs (history-dependent), else called flaky.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// How failures are confirmed alone (flagprop run --confirm-time).
struct ConfirmOptions {
  /// A fresh target process's command without its target: `flagprop
  /// run-target` and the run's options (targetProcessOptions); each
  /// confirmation adds --manifest, --out and --confirm.
  std::vector<std::string> command;
  int seconds = 120;         ///< the whole confirmation of one target, s; 0: none is confirmed
  int processSeconds = 300;  ///< one confirming process at most, s (the run's --case-timeout)
  int tries = 2;             ///< fresh processes that must agree each way before a failure is history-dependent
  size_t maxPrefix = 256;    ///< the most recent calls before a failure that its history search considers
  /// Set in the confirming processes' environment (the run's Triton cache), "NAME=value".
  std::vector<std::string> env;
};

/// Delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating
/// Failure-Inducing Input", TSE 2002, the ddmin algorithm): a 1-minimal
/// subsequence of `items` (order kept) for which `fails` holds, given that
/// it holds for `items`; at most `maxTests` calls of `fails` (past it, the
/// smallest found so far). `fails` may throw; the exception propagates.
std::vector<size_t> ddmin(const std::vector<size_t>& items,
                          const std::function<bool(const std::vector<size_t>&)>& fails, int maxTests);

/// Confirms the failing op results of target document `doc` (targets[]
/// entry; each with observations.history {"file", "calls"} from
/// phases::HistoryLog) alone, within o.seconds, each judging in a fresh
/// target process (o.command with --confirm: the run's own sandboxed
/// judging, which the code under test cannot forge as it could a
/// standalone reproducer):
///  - it fails judged first in a fresh process: observations.alone
///    {"reproduced": true};
///  - it passes alone but fails after the calls its process judged before
///    it (in o.tries fresh processes each way): those calls are shrunk by
///    ddmin to the fewest that still make it fail; the result stays a fail,
///    its reason begins "history-dependent", observations.alone has
///    {"reproduced": false, "history_dependent": true, "prefix": run keys};
///    its reproducer is rewritten to run them first;
///  - neither: status flaky, observations.alone {"reproduced": false};
///  - no verdict (the process died, ran past its time, or could not judge
///    it): the result as it was, observations.alone {"judged": false, "why"}.
/// Distinct failures (observations.distinct_failures) are run alone; one
/// that does not fail alone says so in its reason (its history is not
/// searched: observations.alone {"reproduced": false, "searched": false}). The history files of the target's processes
/// (`outPath`, its document's path, then ".history.PID.jsonl") are removed, and observations.history with them.
/// Progress lines go to `log`. Never throws for a reproducer that cannot run.
void confirmAlone(json& doc, const std::string& outPath, const ConfirmOptions& o, std::ostream& log);

}  // namespace flagprop
