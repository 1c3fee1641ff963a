// Named samplers shared by the catalog's op families: each makes one call's
// tensors and arguments for a dtype within the layout limits.
//
// A sampler is a value (a function from the sample context to a RapidCheck
// generator); the combinators compose them. The placeholder {"tensor": i}
// stands for the call's i-th tensor.
#pragma once

#include "generators/layouts.h"

#include <functional>
#include <string>
#include <vector>

namespace flagprop {

/// What a sampler is asked for: the dtype of this run of the op and the
/// target's layout limits.
struct SampleContext {
  std::string dtype;
  gen::LayoutLimits lim;
};

/// Generates one call of an op.
using Sampler = std::function<rc::Gen<OpCall>(const SampleContext&)>;

/// Scalar arguments by the run's dtype: Python values, so an int stays an
/// int and a float a float (JSON keeps 1 and 1.0 apart).
struct ScalarSet {
  std::vector<json> floating;  ///< for float runs
  std::vector<json> integral;  ///< for integer runs
};

/// {"tensor": i}: the call's i-th tensor.
json placeholder(int i);

namespace samplers {

/// One tensor of any shape (rank 0..5) and layout: `tanh(self)`.
Sampler unary(ValueSpec values = {});

/// A tensor and one scalar from `scalars`: `eq.Scalar(self, other)`.
Sampler tensorScalar(ScalarSet scalars);

/// A tensor and two optional scalars (each None or from `scalars`, not both
/// None): `clamp(self, min, max)`.
Sampler tensorTwoOptionalScalars(ScalarSet scalars);

/// Two tensors that broadcast (either may be the smaller), the second's
/// values as `other` says; with `alpha`, an `alpha` keyword from `alphas`:
/// `add.Tensor(self, other, *, alpha)`, `mul.Tensor(self, other)`.
Sampler binary(ValueSpec other = {}, const ScalarSet* alphas = nullptr);

/// A bool condition and two tensors, all broadcasting: `where.self`.
Sampler where();

/// A tensor, a broadcasting bool mask and a scalar: `masked_fill.Scalar`.
Sampler maskedFill(ScalarSet scalars);

/// A tensor of rank >= 1, a non-empty list of distinct dims (either sign)
/// and keepdim: `sum.dim_IntList(self, dim, keepdim)`.
Sampler dimListReduction();

/// A tensor (rank >= `minRank`), one dim (either sign; None too when
/// `optionalDim`), then `trailing` arguments: `cumsum(self, dim)`,
/// `max.dim(self, dim, keepdim)`, `sort(self, dim, descending)`.
Sampler alongDim(std::vector<rc::Gen<json>> trailing = {}, bool optionalDim = false, int minRank = 0,
                 ValueSpec values = {});

/// `native_layer_norm(input, normalized_shape, weight?, bias?, eps)` on
/// well-conditioned rows; float32 reaches the published seed case directly.
Sampler layerNorm();

/// `gather(self, dim, index)`: an int64 index no larger than self in every
/// dim but `dim`, values in range for `dim`.
Sampler gather();

/// `index_select(self, dim, index)`: a 1-D int64 index in range for `dim`.
Sampler indexSelect();

/// `searchsorted.Tensor(sorted_sequence, self, *, out_int32, right)`: a
/// sequence sorted along its last dim (1-D, or with self's leading dims).
Sampler searchsorted();

/// `s` with the keyword argument `name` drawn from `value`.
Sampler withKwarg(Sampler s, std::string name, rc::Gen<json> value);

}  // namespace samplers

/// Argument generators for the combinators.
namespace args {
rc::Gen<json> boolean();          ///< false or true
rc::Gen<json> fixed(json value);  ///< always `value`
rc::Gen<int64_t> dim(int rank);   ///< a valid dim of a tensor of `rank`, either sign (0 or -1 for rank 0)
rc::Gen<json> dims(int rank);     ///< a non-empty list of distinct dims of a tensor of `rank`, either sign
}  // namespace args

/// The published seed case: native_layer_norm on a float32 [101, 3, 320]
/// input with strides [320, 32320, 1], normalized_shape [320], weight and
/// bias, eps 1e-5 (docs/design.md).
OpCall layerNormSeedCall();

}  // namespace flagprop
