// ddmin (tools/confirm.h): the fewest earlier calls a history-dependent
// failure needs, from a test that says whether a subsequence still fails.
#include "tools/confirm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace {

std::vector<size_t> upTo(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

bool holds(const std::vector<size_t>& s, size_t x) { return std::find(s.begin(), s.end(), x) != s.end(); }

}  // namespace

// One poisoning call among 100: found alone, in about 2·log2(100) tests.
TEST(Ddmin, OneCallThatMattersIsFoundAloneInLogarithmicTests) {
  int tests = 0;
  const auto least = flagprop::ddmin(
      upTo(100), [&](const std::vector<size_t>& s) { return ++tests, holds(s, 42); }, 100);
  EXPECT_EQ(least, std::vector<size_t>({42}));
  EXPECT_LE(tests, 16);
}

// Two calls that matter only together (a cache filled by one, read stale by
// the other): both kept, in their order; the rest dropped.
TEST(Ddmin, TwoCallsThatMatterTogetherAreBothKeptInOrder) {
  const auto least = flagprop::ddmin(
      upTo(64), [](const std::vector<size_t>& s) { return holds(s, 7) && holds(s, 50); }, 200);
  EXPECT_EQ(least, std::vector<size_t>({7, 50}));
}

// Past its test budget it returns a subsequence that failed (the whole
// input at worst), never one that was not seen to fail.
TEST(Ddmin, PastItsBudgetItReturnsTheSmallestSeenToFail) {
  std::vector<std::vector<size_t>> failed = {upTo(40)};
  const auto least = flagprop::ddmin(
      upTo(40),
      [&](const std::vector<size_t>& s) {
        const bool f = holds(s, 3) && holds(s, 30);
        if (f) failed.push_back(s);
        return f;
      },
      3);
  EXPECT_TRUE(std::find(failed.begin(), failed.end(), least) != failed.end());
  EXPECT_TRUE(holds(least, 3) && holds(least, 30));
}
