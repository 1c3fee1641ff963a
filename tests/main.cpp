// Test main: one embedded interpreter for the whole test process.
#include "core/python.h"

#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // The reproducers the tests run find the checkout through this, wherever
  // the build folder (their working directory) is: inside the checkout or not.
  setenv("FLAGPROP_ROOT", FLAGPROP_SOURCE_DIR, 0);
  // The runs the tests start keep no example database unless a test gives
  // one (--db): a failure stored by one test would be replayed by the next
  // without the search that test checks.
  setenv("FLAGPROP_DB", "off", 1);
  flagprop::ensureInterpreter();
  return RUN_ALL_TESTS();
}
