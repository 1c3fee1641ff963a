// P4 key equivalence: the fast LibEntry.key equals the stock key for generated
// argument lists (boundary ints, bools, floats, strings, None, tensors of each
// dtype with aligned and misaligned data_ptr, descriptor-like objects), after a
// warm-up key on the same entry; and the installed descriptor helper and the
// broadcast_shapes / type_promotion memos answer as the originals do.
#include "generators/gen.h"
#include "suites/property.h"

namespace flagprop {

PropertyOutcome runP4(TargetSession& session, const RunOptions& opts) {
  FailureRecord last;
  std::string skipped;
  const Gates gates = session.defaultGates();
  {
    KeyCase probe;
    probe.mock.params = {{"in_ptr", "spec"}, {"out_ptr", "spec"}};
    if (auto skipped = skipIfInactive("P4", "key equivalence", session.keyCase(probe, gates))) return *skipped;
  }
  auto body = [&]() {
    const KeyCase c = *gen::keyCase();
    const json obs = guarded(last, toJson(c), "key", [&] { return session.keyCase(c, gates); });
    if (!obs.at("active").get<bool>()) RC_DISCARD("patch not active");
    if (!obs.at("equal").get<bool>()) {
      std::string why = obs.at("raised").get<std::string>();
      if (why.empty()) why = "fast key " + obs.at("fast").get<std::string>() + " != stock key " + obs.at("stock").get<std::string>();
      last = {toJson(c), obs, why, "key"};
      RC_FAIL(last.why);
    }
    if (!obs.value("memo_mismatches", json::array()).empty()) {
      last = {toJson(c), obs, obs.at("memo_mismatches").at(0).get<std::string>(), "key"};
      RC_FAIL(last.why);
    }
  };
  return runProperty("P4", "key equivalence", session, opts, body, last, skipped);
}

}  // namespace flagprop
