// Tensor passing between C++ (LibTorch) and the embedded Python, without copies.
//
// The only header of flagprop's core that mentions at::Tensor, so that only a
// few translation units include LibTorch's headers.
#pragma once

#include "core/python.h"

#include <cstdint>
#include <string>

namespace at {
class Tensor;
}

namespace flagprop {

/// Description of a 1-D tensor argument for a generated kernel launch.
/// `numel` elements (>= 0) starting `offset` elements into a fresh storage of
/// `numel + offset` elements, so `data_ptr()` is misaligned for a 16-byte
/// divisibility whenever `offset * itemsize % 16 != 0`. Values are a
/// deterministic function of `seed` and the index.
struct TensorArgSpec {
  std::string dtype = "float32";  ///< torch dtype name: float32, float16, bfloat16, float64, int8, uint8, int32, int64, bool
  int64_t numel = 4;
  int64_t offset = 0;
  int seed = 0;
};

/// Wraps an at::Tensor as a Python `torch.Tensor` sharing the same storage
/// (THPVariable_Wrap). Requires the GIL.
py::object wrapTensor(const at::Tensor& t);

/// The at::Tensor behind a Python `torch.Tensor` (THPVariable_Unpack), same
/// storage. Throws std::invalid_argument if `obj` is not a tensor.
at::Tensor unwrapTensor(py::handle obj);

/// Builds the tensor described by `spec` in C++ on the CPU and returns it
/// wrapped for Python. Throws std::invalid_argument for an unknown dtype.
py::object makeTensorArg(const TensorArgSpec& spec);

/// Storage data pointer and storage offset (elements) of a Python tensor as
/// seen from C++; used to prove that no copy was made.
std::pair<std::uintptr_t, int64_t> tensorAddress(py::handle obj);

/// Version string of the LibTorch that flagprop was compiled against.
std::string libtorchVersion();

}  // namespace flagprop
