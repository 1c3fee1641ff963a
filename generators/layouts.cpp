#include "generators/layouts.h"

#include "generators/choice.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace flagprop {

bool TensorLayout::contiguous() const {
  if (numel() == 0) return true;
  int64_t expect = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

int64_t TensorLayout::numel() const { return numelOf(shape); }

int64_t numelOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::pair<std::vector<int64_t>, int64_t> stridesFor(const std::vector<int64_t>& shape, const std::vector<int>& order,
                                                    const std::vector<int64_t>& steps,
                                                    const std::vector<bool>& expanded) {
  const size_t r = shape.size();
  std::vector<int64_t> strides(r, 0);
  int64_t running = 1;
  for (size_t i = r; i-- > 0;) {
    const int d = order[i];
    if (expanded[d]) continue;
    strides[d] = running * steps[d];
    running *= std::max<int64_t>(shape[d], 1) * steps[d];
  }
  int64_t extent = 1;
  for (size_t d = 0; d < r; ++d) {
    if (shape[d] == 0) return {strides, 0};
    extent += (shape[d] - 1) * strides[d];
  }
  return {strides, extent};
}

std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) throw std::invalid_argument("shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

json toJson(const TensorLayout& t) {
  json sp = json::array();
  for (const auto& [i, k] : t.specials) sp.push_back({i, k});
  json j = {{"dtype", t.dtype},   {"shape", t.shape},     {"strides", t.strides},
            {"offset", t.offset}, {"storage", t.storage}, {"how", t.how},
            {"seed", t.seed},     {"values", t.values},   {"specials", sp}};
  if (t.values == "index") j["high"] = t.high;
  if (t.data) j["data"] = *t.data;
  return j;
}

json toJson(const OpCall& c) {
  json ts = json::array();
  for (const auto& t : c.tensors) ts.push_back(toJson(t));
  return {{"tensors", ts}, {"args", c.args}, {"kwargs", c.kwargs}};
}

json toJson(const OpCase& c) {
  json calls = json::array();
  for (const auto& k : c.calls) calls.push_back(toJson(k));
  return {{"op", c.op}, {"dtype", c.dtype}, {"calls", calls}};
}

void showValue(const TensorLayout& v, std::ostream& os) { os << toJson(v).dump(); }
void showValue(const OpCall& v, std::ostream& os) { os << toJson(v).dump(); }
void showValue(const OpCase& v, std::ostream& os) { os << toJson(v).dump(); }

namespace gen {

namespace {
const std::vector<int64_t>& pool() {
  static const std::vector<int64_t> p = {0, 1, 2, 3, 4, 5, 8, 16, 17, 32, 64, 101, 128, 320};
  return p;
}
}  // namespace

namespace {

// A generator that never gives a value: the sample is discarded (RapidCheck
// reads a GenerationFailure as a discard), with `why`.
template <typename T>
rc::Gen<T> notApplicable(std::string why) {
  return rc::Gen<T>([why](const rc::Random&, int) -> rc::Shrinkable<T> { throw rc::GenerationFailure(why); });
}

// The shape an explicit example's edge gives (LayoutLimits::edge), or
// nullopt where it sets none.
std::optional<rc::Gen<std::vector<int64_t>>> edgeShape(int minRank, int maxRank, const LayoutLimits& lim) {
  const int lo = std::max(minRank, 1), hi = std::min(maxRank, lim.maxRank);
  using Shape = std::vector<int64_t>;
  if (lim.edge == "0d")
    return minRank > 0 ? notApplicable<Shape>("edge 0d: the op's sampler needs rank >= " + std::to_string(minRank))
                       : rc::gen::just(Shape{});
  if (lo > hi)
    return notApplicable<Shape>("edge " + lim.edge + ": no rank in " + std::to_string(minRank) + ".." +
                                std::to_string(maxRank));
  if (lim.edge == "empty")  // the last dim empty (the explicit example reduces or scans it)
    return rc::gen::map(atNominalSize(rc::gen::inRange(lo, std::min(hi, 3) + 1)), [](int rank) {
      Shape s(rank, 3);
      s.back() = 0;
      return s;
    });
  if (lim.edge == "ones")
    return rc::gen::map(atNominalSize(rc::gen::inRange(lo, std::min(hi, 3) + 1)), [](int r) { return Shape(r, 1); });
  if (lim.edge == "tail")
    return rc::gen::map(element<int64_t>(129, 1000), [lo](int64_t tail) {
      Shape s(lo, 2);
      s.back() = tail;
      return s;
    });
  if (lim.edge == "rows") {
    if (hi < 2) return notApplicable<Shape>("edge rows: the op's sampler takes rank 1 at most");
    Shape s(std::max(lo, 2) - 2, 1);  // leading dims of 1 where the sampler needs a higher rank
    s.push_back(65537);
    s.push_back(3);
    return rc::gen::just(s);
  }
  return std::nullopt;
}

}  // namespace

rc::Gen<std::vector<int64_t>> shape(int minRank, int maxRank, const LayoutLimits& lim) {
  if (auto forced = edgeShape(minRank, maxRank, lim)) return *forced;
  auto size = weighted<int64_t>({{5, 1},
                                 {3, 2},
                                 {3, 3},
                                 {2, 4},
                                 {2, 5},
                                 {2, 8},
                                 {1, 0},
                                 {2, 16},
                                 {1, 17},
                                 {1, 32},
                                 {1, 64},
                                 {1, 101},
                                 {1, 128},
                                 {1, 320}});
  const int hi = std::min(maxRank, lim.maxRank);
  return rc::gen::mapcat(atNominalSize(rc::gen::inRange(minRank, hi + 1)), [size, lim](int rank) {
    return rc::gen::map(rc::gen::container<std::vector<int64_t>>(rank, size), [lim](std::vector<int64_t> s) {
      while (numelOf(s) > lim.maxElements) {
        auto big = std::max_element(s.begin(), s.end());
        auto it = std::lower_bound(pool().begin(), pool().end(), *big);
        *big = *(it - 1);  // the next smaller pool size (pool()[0] is 0, never the largest of an oversized shape)
      }
      return s;
    });
  });
}

rc::Gen<TensorLayout> layout(std::vector<int64_t> shapeIn, std::string dtype, const LayoutLimits& lim, ValueSpec v) {
  const bool allowExpand = v.expand && v.kind != "sorted" && v.kind != "given";
  return rc::gen::exec([shapeIn, dtype, lim, v, allowExpand]() {
    TensorLayout t;
    t.dtype = dtype;
    t.shape = shapeIn;
    const size_t r = shapeIn.size();
    std::vector<int> order(r);
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> steps(r, 1);
    std::vector<bool> expanded(r, false);
    std::vector<std::string> how;
    const bool plain = lim.layoutForce == "contiguous", strided = lim.layoutForce == "noncontiguous";
    if (!plain && r >= 2 && (strided || *weighted<bool>({{3, false}, {2, true}}))) {
      // Sorting dims by generated keys gives any permutation; keys shrink to
      // 0, and a stable sort of equal keys is the identity.
      const auto keys = *rc::gen::container<std::vector<int>>(r, atNominalSize(rc::gen::inRange(0, 8)));
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] < keys[b]; });
      if (strided && std::is_sorted(order.begin(), order.end())) std::reverse(order.begin(), order.end());
      if (!std::is_sorted(order.begin(), order.end())) how.push_back("permuted");
    }
    if (!plain && r >= 1 && ((strided && r == 1) || *weighted<bool>({{3, false}, {1, true}}))) {
      steps = *rc::gen::container<std::vector<int64_t>>(r, weighted<int64_t>({{2, 1}, {2, 2}, {1, 3}}));
      if (strided && r == 1) steps[0] = 2;
      if (std::any_of(steps.begin(), steps.end(), [](int64_t s) { return s > 1; })) how.push_back("sliced");
    }
    if (!plain && !strided && allowExpand && r >= 1 && *weighted<bool>({{4, false}, {1, true}})) {
      const auto e = *rc::gen::container<std::vector<int>>(r, weighted<int>({{1, 0}, {1, 1}}));
      for (size_t d = 0; d < r; ++d) expanded[d] = e[d] && shapeIn[d] != 1;
      if (std::find(expanded.begin(), expanded.end(), true) != expanded.end()) how.push_back("expanded");
    }
    t.offset = plain ? 0 : *weighted<int64_t>({{3, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 5}, {1, 7}});
    if (strided && r == 0) t.offset = 1;  // a 0-d tensor is non-contiguous only by its offset
    if (t.offset) how.push_back("offset");
    auto [strides, extent] = stridesFor(t.shape, order, steps, expanded);
    const int64_t room = lim.edge == "rows" ? std::max(lim.maxElements, kRowsEdgeElements) : lim.maxElements;
    if (t.offset + extent > room) {  // steps made the storage too big: drop them
      std::fill(steps.begin(), steps.end(), 1);
      how.erase(std::remove(how.begin(), how.end(), "sliced"), how.end());
      std::tie(strides, extent) = stridesFor(t.shape, order, steps, expanded);
    }
    t.strides = strides;
    t.storage = std::max<int64_t>(t.offset + extent + (plain ? 0 : *weighted<int64_t>({{3, 0}, {1, 3}})), 1);
    std::string h;
    for (const auto& s : how) h += (h.empty() ? "" : "+") + s;
    t.how = h.empty() ? "contiguous" : h;
    t.seed = *atNominalSize(rc::gen::inRange<uint64_t>(0, 1u << 20));
    t.values = v.kind != "any"        ? v.kind
               : floatingDtype(dtype) ? *weighted<std::string>({{3, "normal"}, {1, "grid"}})
                                      : "normal";
    // Values past float32 (edge "wide"): where the dtype holds them, in place of free values.
    const bool wideable = dtype == "int32" || dtype == "int64" || dtype == "float64";
    if (lim.edge == "wide" && wideable && (v.kind == "any" || v.kind == "normal")) t.values = "wide";
    t.high = v.high;
    if (v.kind == "given") t.data = v.data;
    // Special values would break a value constraint (positive, sorted, ...).
    const bool free = v.kind == "any" || v.kind == "normal" || v.kind == "grid";
    if (lim.edge == "nonfinite" && floatingDtype(dtype) && free) {  // every kind, as far as the storage goes
      const char* kinds[] = {"nan", "inf", "-inf", "-0"};
      for (int64_t i = 0; i < 4 && i < t.storage; ++i)
        t.specials.emplace_back(t.offset + i < t.storage ? t.offset + i : i, kinds[i]);
    } else if (floatingDtype(dtype) && v.specials && free) {
      if (lim.specials && *weighted<bool>({{5, false}, {1, true}})) {
        const int n = *atNominalSize(rc::gen::inRange(1, 4));
        for (int i = 0; i < n; ++i) {
          const int64_t idx = *atNominalSize(rc::gen::inRange<int64_t>(0, t.storage));
          t.specials.emplace_back(idx, *element<std::string>("nan", "inf", "-inf", "-0", "subnormal"));
        }
      }
    }
    return t;
  });
}

rc::Gen<std::vector<int64_t>> broadcastableTo(std::vector<int64_t> s, const LayoutLimits& lim) {
  if (lim.edge == "scalar-others") return rc::gen::just(std::vector<int64_t>{});  // 0-d broadcasts to any shape
  return broadcastableTo(std::move(s));
}

rc::Gen<std::vector<int64_t>> broadcastableTo(std::vector<int64_t> s) {
  return rc::gen::exec([s]() {
    const size_t drop = *weighted<size_t>({{3, 0}, {1, 1}, {1, 2}});
    std::vector<int64_t> out(s.begin() + std::min(drop, s.size()), s.end());
    const auto ones = *rc::gen::container<std::vector<int>>(out.size(), weighted<int>({{3, 0}, {1, 1}}));
    for (size_t i = 0; i < out.size(); ++i)
      if (ones[i]) out[i] = 1;
    return out;
  });
}

}  // namespace gen
}  // namespace flagprop
