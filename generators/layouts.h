// Tensor layouts and op cases for the numerics and aliasing properties (P5, P6).
//
// A TensorLayout says how to rebuild one input exactly: a 1-D storage of
// `storage` elements whose values come from `seed` and the value kind
// (python/flagprop/engine/ops.py, `make_storage` / `build_cpu`, is the one builder,
// used by the suites and the reproducers), viewed with `shape`, `strides`
// and `offset`.
#pragma once

#include "core/dtypes.h"

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// One generated tensor input. Sizes and strides are in elements.
struct TensorLayout {
  std::string dtype = "float32";  ///< float32 | float16 | bfloat16 | int32 | int64 | bool
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;    ///< 0 for an expanded dim
  int64_t offset = 0;              ///< storage offset (elements)
  int64_t storage = 1;             ///< storage size (elements), >= offset + the view's extent
  std::string how = "contiguous";  ///< how the layout was made: contiguous, or any of permuted / sliced / expanded /
                                   ///< offset joined by '+'
  uint64_t seed = 0;               ///< values of the storage
  /// Value kind (flagprop.engine.ops.make_storage): normal (N(0, 1); ints in
  /// [-8, 8]) | grid (multiples of 0.5 in [-4, 4]) | positive | nonzero |
  /// unique | sorted (along the view's last dim) | index (ints in [0, high)) |
  /// given (`data`, copied into the view: a valid sample's own values).
  std::string values = "normal";
  int64_t high = 0;                                       ///< index values: the exclusive upper bound
  std::vector<std::pair<int64_t, std::string>> specials;  ///< storage index -> nan | inf | -inf | -0 | subnormal
  /// given values: the view's elements, flat in row-major order (numel()
  /// numbers or bools); null otherwise. Shared: layouts are copied while shrinking.
  std::shared_ptr<const json> data;

  bool contiguous() const;
  int64_t numel() const;
};

/// One call of the op: its tensors and the argument list, where
/// `{"tensor": i}` stands for tensors[i] and every other JSON value is passed
/// as is (JSON keeps 1 and 1.0 apart, so a Scalar keeps its Python type).
struct OpCall {
  std::vector<TensorLayout> tensors;
  json args = json::array();
  json kwargs = json::object();
};

/// A P5 / P6 case: one catalog op in one dtype, called 1..3 times in order
/// (later calls must leave earlier outputs alone).
struct OpCase {
  std::string op;     ///< catalog name, e.g. "add.Tensor"
  std::string dtype;  ///< the dtype this run of the op covers
  std::vector<OpCall> calls;
};

/// Strides of a view of `shape` made from a contiguous base laid out in
/// `order` (outermost first; a permutation of the dims), sliced with step
/// `steps[d]` along each dim and expanded (stride 0) where `expanded[d]`.
/// Also returns the storage extent (elements the view can touch, from 0).
/// Example (the published seed case, docs/design.md): shape [101, 3, 320], order [1, 0, 2],
/// steps 1 gives strides [320, 32320, 1].
std::pair<std::vector<int64_t>, int64_t> stridesFor(const std::vector<int64_t>& shape, const std::vector<int>& order,
                                                    const std::vector<int64_t>& steps,
                                                    const std::vector<bool>& expanded);

/// Number of elements of `shape` (1 for rank 0).
int64_t numelOf(const std::vector<int64_t>& shape);

/// Broadcast of two shapes as ATen does it; throws std::invalid_argument when
/// they do not broadcast.
std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

json toJson(const TensorLayout& t);
json toJson(const OpCall& c);
json toJson(const OpCase& c);

void showValue(const TensorLayout& v, std::ostream& os);
void showValue(const OpCall& v, std::ostream& os);
void showValue(const OpCase& v, std::ostream& os);

/// What a sampler asks of one tensor's values and layout beyond its shape
/// and dtype.
struct ValueSpec {
  /// "any": normal or grid (floats; weighted 3 : 1); else one value kind of
  /// TensorLayout::values ("given" takes `data`, never expanded, no specials).
  std::string kind = "any";
  int64_t high = 0;      ///< index: values in [0, high)
  bool specials = true;  ///< may carry special values (where the limits allow; floats of kinds any, normal, grid only)
  bool expand = true;    ///< may be expanded (stride 0); never for sorted or given values
  std::shared_ptr<const json> data;  ///< given: the values (see TensorLayout::data)
};

namespace gen {

/// Limits for generated layouts.
struct LayoutLimits {
  int64_t maxElements = 1 << 17;  ///< per tensor view and per storage (elements)
  int maxRank = 5;
  bool specials = true;  ///< nan, +-inf, -0.0 and subnormals in float inputs
  /// Specialization reuse (P5 / P6 on devices that JIT-compile): when > 0,
  /// 15 of 16 calls take their shapes, strides, storage offsets and scalar
  /// arguments from a fixed palette of this many calls (only the values'
  /// seeds are drawn afresh), so a run compiles at most about `palette`
  /// specializations per kernel plus those of the free calls.
  int palette = 0;
  uint64_t paletteSeed = 0;  ///< the palette is a function of this seed, the op and the dtype
  /// An explicit example's edge (the explicit phase, docs/design.md): what
  /// every shape(), layout() and broadcastableTo() gives, whatever else is
  /// drawn. "" none | "0d" (rank 0; a sampler that needs rank >= 1 discards
  /// the sample) | "empty" (the last dim of size 0) | "ones" (every dim 1) |
  /// "tail" (a last dim of 129 or 1000, not a power of 2) | "rows" (shape
  /// [65537, 3]: more rows than one launch-grid dimension holds, the last
  /// dim reduced or scanned) | "scalar-others" (the first tensor as drawn,
  /// every later one 0-d) | "nonfinite" (NaN, inf, -inf and -0 in every
  /// floating tensor) | "wide" (values past float32: integers above 2^24,
  /// float64 beyond 3.4e38).
  std::string edge;
  /// "" any layout | "contiguous" | "noncontiguous" (permuted, sliced or offset).
  std::string layoutForce;
};

/// The elements one explicit example of edge "rows" may have (its [65537, 3]
/// shape), whatever the target's max_elements.
constexpr int64_t kRowsEdgeElements = 65537 * 3;

/// Shapes of rank minRank..maxRank from a small pool of sizes (0, 1, 2, 3, 4,
/// 5, 8, 16, 17, 32, 64, 101, 128, 320), so that kernels specialised on sizes
/// are reused; a shape over the limit has its largest size replaced by the
/// next smaller pool size until it fits. Shrinks toward rank 0 / size 1.
rc::Gen<std::vector<int64_t>> shape(int minRank, int maxRank, const LayoutLimits& lim);

/// A layout for a view of exactly `shape`: contiguous (weighted), permuted
/// (transpose / permute of a contiguous base), sliced (steps 2 or 3),
/// expanded (stride 0, where `v.expand`), with a storage offset of 0..7
/// elements, values from a seed as `v` says, and (float dtypes) special
/// values.
rc::Gen<TensorLayout> layout(std::vector<int64_t> shape, std::string dtype, const LayoutLimits& lim, ValueSpec v = {});

/// A shape that broadcasts to `shape`: some leading dims dropped, some dims
/// set to 1.
rc::Gen<std::vector<int64_t>> broadcastableTo(std::vector<int64_t> shape);
/// The same under `lim`: 0-d where its edge is "scalar-others".
rc::Gen<std::vector<int64_t>> broadcastableTo(std::vector<int64_t> shape, const LayoutLimits& lim);

}  // namespace gen
}  // namespace flagprop
