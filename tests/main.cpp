// Test main: one embedded interpreter for the whole test process.
#include "core/python.h"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  flagprop::ensureInterpreter();
  return RUN_ALL_TESTS();
}
