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

namespace {

c10::optional<c10::OperatorHandle> findOverload(const std::string& overload) {
  const auto dot = overload.find('.');
  const std::string name = "aten::" + overload.substr(0, dot);
  const std::string over = dot == std::string::npos ? "" : overload.substr(dot + 1);
  return c10::Dispatcher::singleton().findSchema({name, over == "default" ? "" : over});
}

nlohmann::json defaultJson(const c10::IValue& v, bool& ok) {
  ok = true;
  if (v.isNone()) return nullptr;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isIntList()) return v.toIntVector();
  if (v.isDoubleList()) return v.toDoubleVector();
  ok = false;
  return nullptr;
}

// The argument's type as the schema writes it ("ScalarType?", "int[1]?",
// "Tensor"), alias annotations dropped: LibTorch 1.13's type() reads
// ScalarType, Layout and MemoryFormat as int.
std::string typeAsWritten(const c10::Argument& a) {
  std::ostringstream os;
  os << a;
  std::string text = os.str();
  const auto eq = text.find('=');
  if (eq != std::string::npos) text = text.substr(0, eq);
  const auto cut = text.rfind(" " + a.name());
  if (cut != std::string::npos) text = text.substr(0, cut);
  std::string out;
  int depth = 0;
  for (char ch : text) {
    if (ch == '(') ++depth;
    if (depth == 0 && ch != ' ') out += ch;
    if (ch == ')') --depth;
  }
  return out.empty() ? a.type()->str() : out;
}

}  // namespace

std::optional<OpSchema> atenOpSchema(const std::string& overload) {
  const auto op = findOverload(overload);
  if (!op) return std::nullopt;
  const c10::FunctionSchema& fs = op->schema();
  OpSchema out;
  out.name = overload;
  std::ostringstream os;
  os << fs;
  out.text = os.str();
  for (const auto& a : fs.arguments()) {
    SchemaArg arg;
    arg.name = a.name();
    arg.type = typeAsWritten(a);
    arg.listSize = a.N() ? *a.N() : 0;
    arg.kwargOnly = a.kwarg_only();
    arg.out = a.is_out();
    arg.aliased = a.alias_info() != nullptr;
    arg.written = arg.aliased && a.alias_info()->isWrite();
    if (a.default_value()) {
      bool ok = false;
      nlohmann::json d = defaultJson(*a.default_value(), ok);
      arg.hasDefault = true;
      arg.defaultKnown = ok;
      if (ok) arg.defaultValue = d;
    }
    out.args.push_back(std::move(arg));
  }
  for (const auto& r : fs.returns()) {
    SchemaReturn ret;
    ret.type = r.type()->str();
    ret.aliased = r.alias_info() != nullptr;
    ret.written = ret.aliased && r.alias_info()->isWrite();
    out.returns.push_back(std::move(ret));
  }
  out.cpuKernel = op->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU);
  out.randomized = op->hasTag(at::Tag::nondeterministic_seeded);
  out.dynamicShape = op->hasTag(at::Tag::dynamic_output_shape);
  return out;
}

std::string libtorchVersion() { return TORCH_VERSION; }

}  // namespace flagprop
