// Process state the code under test can change that the Python sandbox does
// not see, put back by the harness after each case.
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace flagprop {
namespace {

mode_t currentUmask() {
  const mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

// An op's os.umask(0o777) made every file written after its case (the
// target document, the report, the reproducers) unreadable to a non-root
// owner: the harness puts the mask back as the case ends.
TEST(HarnessState, AnOpsUmaskIsPutBackAfterItsCase) {
  const mode_t before = currentUmask();
  const auto o = test::runFixtureOp("ops-sets-umask", "P5", "tanh", "float32", 3);
  EXPECT_EQ(o.status, "pass") << o.reason;
  EXPECT_EQ(currentUmask(), before);
}

}  // namespace
}  // namespace flagprop
