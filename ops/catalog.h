// The op catalog: one declarative entry per ATen overload, in the spirit of
// PyTorch's OpInfo. An entry gives the sample generator, the CPU reference
// (LibTorch), the tolerances and the properties that apply; adding an op is
// one entry in ops/catalog.cpp and it gets P5 and P6 for free.
#pragma once

#include "generators/layouts.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace flagprop {

/// Elementwise closeness: |actual - expected| <= atol + rtol * |expected|, with
/// NaN in the same places and infinities equal. {0, 0} means the values must
/// be identical (NaN positions still compare as positions).
struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

/// Per-dtype resolution used as rtol for floating outputs: float16 1e-3,
/// float32 1.3e-6, bfloat16 0.016 (the figures of FlagGems' own accuracy
/// tests, `RESOLUTION` in tests/accuracy_utils.py); 0 for integer and bool.
double resolution(const std::string& dtype);

/// The reference computation of an op. `inputs` are the call's tensors in
/// order (CPU tensors, floating ones upcast to float64 where the entry says
/// `upcast`; or meta tensors in the original dtype when ATen's output
/// metadata is wanted); `call` gives the scalar arguments. Returns every
/// output of the overload in order. Throws c10::Error where ATen does.
using ReferenceFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>& inputs, const OpCall& call)>;

/// One catalog op.
struct OpEntry {
  std::string name;                 ///< ATen overload as torch.ops spells it: "add.Tensor", "tanh" (= tanh.default)
  std::string schema;               ///< the ATen schema, for reports
  std::vector<std::string> dtypes;  ///< dtypes the op is run in (one P5 / P6 result each)
  bool upcast = true;               ///< reference computes floating inputs in float64 and rounds to the output dtype
  /// Generates one call's tensors and arguments for `dtype` within `lim`.
  std::function<rc::Gen<OpCall>(const std::string& dtype, const gen::LayoutLimits& lim)> sample;
  ReferenceFn reference;
  /// Tolerance for output `index` of dtype `outDtype` (the output's, from
  /// ATen) when the op ran in `dtype` on `call`.
  std::function<Tolerance(const std::string& dtype, const std::string& outDtype, size_t index, const OpCall& call)>
      tolerance;
  std::vector<std::string> properties = {"P5", "P6"};
};

/// Every catalog entry, in a fixed order.
const std::vector<OpEntry>& catalog();

/// The entry called `name`, or nullptr.
const OpEntry* findOp(const std::string& name);

/// Whether `dtype` is one a catalog op can run in: float32, float16,
/// bfloat16, int32.
bool knownDtype(const std::string& dtype);

/// Checks a property id as a reproduce string, `--property` or a manifest's
/// `expect` names it: P1..P6, or P5 / P6 followed by "/op" or "/op/dtype"
/// with a catalog op and a known dtype. Returns "" when valid, else why not.
std::string checkRunKey(const std::string& key);

/// The fixed palette of `lim.palette` calls for `entry` in `dtype` (see
/// LayoutLimits::palette): a function of lim.paletteSeed, the op and the
/// dtype only, so that a reproduce string replays against the same palette
/// and Triton's on-disk cache is reused from run to run.
std::vector<OpCall> buildPalette(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim);

/// Generator of P5 / P6 cases for `entry` in `dtype`: 1..3 calls (weighted
/// toward 1), each from entry.sample, or (when `palette` is not empty) 15 of
/// 16 from the palette with fresh value seeds.
rc::Gen<OpCase> opCase(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim,
                       std::shared_ptr<const std::vector<OpCall>> palette = nullptr);

/// DESIGN.md's seed case: native_layer_norm on a float32 [101, 3, 320] input
/// with strides [320, 32320, 1], normalized_shape [320], weight and bias,
/// eps 1e-5. The native_layer_norm float32 generator reaches it directly.
OpCall layerNormSeedCall();

}  // namespace flagprop
