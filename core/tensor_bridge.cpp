#include "core/tensor_bridge.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/version.h>

#include <stdexcept>

namespace flagprop {

namespace {
at::ScalarType dtypeOf(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float16") return at::kHalf;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float64") return at::kDouble;
  if (name == "int8") return at::kChar;
  if (name == "uint8") return at::kByte;
  if (name == "int32") return at::kInt;
  if (name == "int64") return at::kLong;
  if (name == "bool") return at::kBool;
  throw std::invalid_argument("flagprop: unknown dtype '" + name + "'");
}
}  // namespace

py::object wrapTensor(const at::Tensor& t) {
  return py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
}

at::Tensor unwrapTensor(py::handle obj) {
  if (!THPVariable_Check(obj.ptr())) throw std::invalid_argument("flagprop: not a torch.Tensor");
  return THPVariable_Unpack(obj.ptr());
}

py::object makeTensorArg(const TensorArgSpec& spec) {
  const auto st = dtypeOf(spec.dtype);
  const int64_t total = spec.numel + spec.offset;
  at::Tensor base = at::arange(total, at::TensorOptions().dtype(at::kDouble));
  base = (base * 0.25 + static_cast<double>(spec.seed % 97) - 3.0);
  if (st == at::kBool) {
    base = (base.remainder(2.0) >= 1.0);
  } else {
    base = base.to(st);
  }
  at::Tensor view = base.narrow(0, spec.offset, spec.numel);
  return wrapTensor(view);
}

std::pair<std::uintptr_t, int64_t> tensorAddress(py::handle obj) {
  at::Tensor t = unwrapTensor(obj);
  return {reinterpret_cast<std::uintptr_t>(t.storage().data()), t.storage_offset()};
}

std::string libtorchVersion() { return TORCH_VERSION; }

}  // namespace flagprop
