// Child processes (runner/runner.h): a child that cannot be started is an
// error the supervisor reports, never the end of the run.
#include "runner/runner.h"

#include <gtest/gtest.h>

#include <csignal>

namespace flagprop {
namespace {

// A binary that is gone (removed mid-run) with a key to hand over through a
// pipe: the key is not written into a pipe nobody reads (SIGPIPE used to end
// the whole run, exit 141, no report); the result says why it did not start,
// and the document collected for it is a target error that says so.
TEST(Children, AChildThatCannotStartIsAnErrorNotTheEndOfTheRun) {
  struct sigaction old {};
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, &old);  // as a plain process has it: a write to a closed pipe kills it
  ChildSpec spec;
  spec.argv = {"/nonexistent/flagprop", "run-target"};
  spec.secret = std::string(64, 'a');
  const auto results = runChildren({spec}, 10);
  sigaction(SIGPIPE, &old, nullptr);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].exitCode, -1);
  EXPECT_EQ(results[0].spawnError, "No such file or directory");
  const json doc = collectChildDocument("/nonexistent/out.json", "/m/target.json", results[0], 60, "key");
  EXPECT_EQ(doc.value("status", ""), "error");
  EXPECT_EQ(doc.value("error", ""), "cannot start the target process (No such file or directory)");
  EXPECT_FALSE(doc.contains("crash")) << "not a crash to restart after";
}

}  // namespace
}  // namespace flagprop
