// Tensor passing between C++ and Python shares storage; dispatcher schemas;
// JSON conversion.
#include "core/tensor_bridge.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace flagprop {
namespace {

TEST(TensorBridge, WrapSharesStorageWithoutCopy) {
  py::gil_scoped_acquire gil;
  at::Tensor t = at::arange(10, at::kFloat).narrow(0, 3, 5);
  py::object p = wrapTensor(t);
  const auto ptr = p.attr("data_ptr")().cast<std::uintptr_t>();
  EXPECT_EQ(ptr, reinterpret_cast<std::uintptr_t>(t.data_ptr()));
  EXPECT_EQ(p.attr("storage_offset")().cast<int64_t>(), 3);
  p.attr("fill_")(7.0);  // a write from Python is seen in C++
  EXPECT_EQ(t[0].item<float>(), 7.0f);
  at::Tensor back = unwrapTensor(p);
  EXPECT_TRUE(back.is_same(t));
  EXPECT_THROW(unwrapTensor(py::int_(3)), std::invalid_argument);
}

TEST(TensorBridge, SchemasComeFromTheDispatcher) {
  EXPECT_EQ(atenSchema("add.Tensor"), "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(atenSchema("tanh").rfind("aten::tanh(Tensor self)", 0), 0u) << atenSchema("tanh");
  EXPECT_EQ(atenSchema("tanh.default"), atenSchema("tanh"));
  EXPECT_EQ(atenSchema("no_such_op.Tensor"), "");
  EXPECT_EQ(atenSchema("add.NoSuchOverload"), "");
}

TEST(JsonBridge, RoundTripsIncludingIntsBeyond64Bits) {
  py::gil_scoped_acquire gil;
  py::object v = py::eval("{'a': [1, 2.5, None, True, 'x'], 'big': 2**64 - 1, 'neg': -2**63 - 5}");
  json j = toJson(v);
  EXPECT_EQ(j["a"][0], 1);
  EXPECT_EQ(j["a"][1], 2.5);
  EXPECT_TRUE(j["a"][2].is_null());
  EXPECT_EQ(j["big"], "18446744073709551615");
  EXPECT_EQ(j["neg"], "-9223372036854775813");
  EXPECT_TRUE(fromJson(j["a"]).equal(py::eval("[1, 2.5, None, True, 'x']")));
}

}  // namespace
}  // namespace flagprop

#include "core/native_runtime.h"

#include <filesystem>

namespace flagprop {
namespace {

// The native witness loads HIP / CUDA when present and says what it sees; on
// a host without devices it says so, and knows no pointer.
TEST(NativeRuntime, WitnessSaysWhatItSeesAndNeverThrows) {
  const RuntimeWitness hip = hipWitness();
  const RuntimeWitness cuda = cudaWitness();
  EXPECT_EQ(hip.runtime, "hip");
  EXPECT_EQ(cuda.runtime, "cuda");
  for (const auto& w : {hip, cuda})
    EXPECT_TRUE(w.status == "ok" || w.status == "no device" || w.status == "no runtime") << w.toJson().dump();
  if (std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5") &&
      hip.library != "(built without HIP's headers)")
    EXPECT_NE(hip.status, "no runtime") << "Debian's HIP runtime is installed: it loads, and sees no device here";
  if (hip.status != "ok" && cuda.status != "ok") {
    int local = 0;
    EXPECT_FALSE(pointerWitness(reinterpret_cast<std::uintptr_t>(&local)).has_value());
    EXPECT_FALSE(nativeEventMs(0, [] {}).has_value());
  } else {
    EXPECT_FALSE(hip.status == "ok" ? hip.arch.empty() : cuda.arch.empty());
  }
  py::gil_scoped_acquire gil;
  const json fromPython = toJson(py::module_::import("flagprop_native").attr("witness")(0));
  EXPECT_EQ(fromPython.at("hip").at("status"), hip.status);
}

}  // namespace
}  // namespace flagprop
