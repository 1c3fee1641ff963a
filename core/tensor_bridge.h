// Tensor passing between C++ (LibTorch) and the embedded Python, without
// copies, and what LibTorch's dispatcher knows about an op.
//
// The only header of flagprop's core that mentions at::Tensor, so that only a
// few translation units include LibTorch's headers.
#pragma once

#include "core/python.h"

#include <string>

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

/// Version string of the LibTorch that flagprop was compiled against.
std::string libtorchVersion();

}  // namespace flagprop
