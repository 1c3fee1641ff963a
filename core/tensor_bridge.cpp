#include "core/tensor_bridge.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/version.h>

#include <sstream>
#include <stdexcept>

namespace flagprop {

py::object wrapTensor(const at::Tensor& t) { return py::reinterpret_steal<py::object>(THPVariable_Wrap(t)); }

at::Tensor unwrapTensor(py::handle obj) {
  if (!THPVariable_Check(obj.ptr())) throw std::invalid_argument("flagprop: not a torch.Tensor");
  return THPVariable_Unpack(obj.ptr());
}

std::string atenSchema(const std::string& overload) {
  const auto dot = overload.find('.');
  const std::string name = "aten::" + overload.substr(0, dot);
  const std::string over = dot == std::string::npos ? "" : overload.substr(dot + 1);
  const auto op = c10::Dispatcher::singleton().findSchema({name, over == "default" ? "" : over});
  if (!op) return "";
  std::ostringstream os;
  os << op->schema();
  return os.str();
}

std::string libtorchVersion() { return TORCH_VERSION; }

}  // namespace flagprop
