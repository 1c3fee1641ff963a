// Tensor passing between C++ (LibTorch) and the embedded Python, without
// copies, and what LibTorch's dispatcher knows about an op.
//
// The only header of flagprop's core that mentions at::Tensor, so that only a
// few translation units include LibTorch's headers.
#pragma once

#include "core/python.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace flagprop {

/// Wraps an at::Tensor as a Python `torch.Tensor` sharing the same storage
/// (THPVariable_Wrap). Requires the GIL.
py::object wrapTensor(const at::Tensor& t);

/// The at::Tensor behind a Python `torch.Tensor` (THPVariable_Unpack), same
/// storage. Throws std::invalid_argument if `obj` is not a tensor.
at::Tensor unwrapTensor(py::handle obj);

/// The schema LibTorch's dispatcher registers for an ATen overload named as
/// torch.ops spells it ("add.Tensor", "tanh" for tanh.default), e.g.
/// "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
/// "" when no such overload is registered.
std::string atenSchema(const std::string& overload);

/// One argument of an ATen schema, as LibTorch's dispatcher registers it.
struct SchemaArg {
  std::string name;           ///< e.g. "self", "dim", "out"
  std::string type;           ///< the schema's type, e.g. "Tensor", "Tensor?", "Tensor[]", "int[]", "SymInt", "Scalar"
  int listSize = 0;           ///< N of a fixed-size list type ("int[2]"), else 0
  bool kwargOnly = false;     ///< after the schema's `*`
  bool out = false;           ///< an `out=` argument (keyword-only and written)
  bool written = false;       ///< annotated `(a!)`: the op writes it
  bool aliased = false;       ///< carries an alias annotation (`(a)` or `(a!)`)
  bool hasDefault = false;    ///< the schema gives a default
  bool defaultKnown = false;  ///< hasDefault and defaultValue holds it
  /// The default as JSON (null for None; numbers, bools, strings, int and
  /// float lists); absent where the default has no JSON form (a dtype enum).
  nlohmann::json defaultValue;
};

/// One return of an ATen schema.
struct SchemaReturn {
  std::string type;      ///< "Tensor", "Tensor[]", "int", ...
  bool aliased = false;  ///< aliases an argument (`Tensor(a)`, `Tensor(a!)`)
  bool written = false;  ///< the aliased argument is written (`(a!)`)
};

/// An ATen overload's schema and the dispatcher's facts about it.
struct OpSchema {
  std::string name;  ///< as torch.ops spells it: "add.Tensor", "tanh"
  std::string text;  ///< the schema as text
  std::vector<SchemaArg> args;
  std::vector<SchemaReturn> returns;
  bool cpuKernel = false;     ///< a CPU kernel, own or composite (hasComputedKernelForDispatchKey(CPU))
  bool randomized = false;    ///< tagged nondeterministic_seeded (draws from a generator)
  bool dynamicShape = false;  ///< tagged dynamic_output_shape (e.g. nonzero, index.Tensor)
};

/// The schema of an ATen overload named as torch.ops spells it, or
/// std::nullopt when the dispatcher has no such overload.
std::optional<OpSchema> atenOpSchema(const std::string& overload);

/// Version string of the LibTorch that flagprop was compiled against.
std::string libtorchVersion();

}  // namespace flagprop
