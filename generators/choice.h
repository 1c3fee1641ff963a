// Choice helpers shared by the RapidCheck generators.
#pragma once

#include <rapidcheck.h>

#include <utility>
#include <vector>

namespace flagprop::gen {

/// Draws `g` at RapidCheck's nominal size. RapidCheck scales inRange (and so
/// element) by the size parameter, which starves the later choices of a list
/// on small sizes; choices drawn at the nominal size keep their weights for
/// every case.
template <typename T>
rc::Gen<T> atNominalSize(rc::Gen<T> g) {
  return rc::gen::resize(rc::kNominalSize, std::move(g));
}

/// One of the values, uniformly; shrinks toward the first.
template <typename T, typename... Ts>
rc::Gen<T> element(T first, Ts... rest) {
  return atNominalSize(rc::gen::element<T>(std::move(first), std::move(rest)...));
}

/// Weighted choice (weight, value) that shrinks toward the first choice.
template <typename T>
rc::Gen<T> weighted(std::vector<std::pair<int, T>> choices) {
  int total = 0;
  for (const auto& c : choices) total += c.first;
  return rc::gen::map(atNominalSize(rc::gen::inRange(0, total)), [choices](int r) {
    for (const auto& c : choices) {
      if (r < c.first) return c.second;
      r -= c.first;
    }
    return choices.back().second;
  });
}

}  // namespace flagprop::gen
