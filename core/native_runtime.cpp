#include "core/native_runtime.h"

#include "core/python.h"

#include <dlfcn.h>

#include <cstring>
#include <vector>

#if __has_include(<hip/hip_runtime_api.h>)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>
#define FLAGPROP_HIP_HEADERS 1
#endif

namespace flagprop {

json RuntimeWitness::toJson() const {
  json j = {{"runtime", runtime}, {"status", status}, {"library", library}};
  if (status == "ok" || deviceCount)
    j.update({{"device_count", deviceCount}, {"device", deviceName}, {"arch", arch}, {"warp_size", warpSize}});
  return j;
}

namespace {

// A library opened once per process (nullptr when absent).
void* openOnce(const char* soname) {
  static std::vector<std::pair<std::string, void*>> opened;
  for (const auto& [n, h] : opened)
    if (n == soname) return h;
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  opened.emplace_back(soname, h);
  return h;
}

template <typename F>
F sym(void* lib, const char* name) {
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

// --- CUDA driver API (values from cuda.h, stable across CUDA releases) ----
constexpr int kCuWarpSize = 10, kCuCcMajor = 75, kCuCcMinor = 76;
constexpr int kCuPointerMemoryType = 2, kCuPointerDeviceOrdinal = 9;
const char* kCuda = "libcuda.so.1";

void* cudaLib() {
  void* lib = openOnce(kCuda);
  static bool initialised = false;
  if (lib && !initialised) {
    initialised = true;
    if (auto init = sym<int (*)(unsigned)>(lib, "cuInit")) init(0);
  }
  return lib;
}

#ifdef FLAGPROP_HIP_HEADERS
const std::string kHip = "libamdhip64.so." + std::to_string(HIP_VERSION_MAJOR);
#if HIP_VERSION_MAJOR >= 6
const char* kHipProps = "hipGetDevicePropertiesR0600";
#else
const char* kHipProps = "hipGetDeviceProperties";
#endif
#endif

}  // namespace

RuntimeWitness cudaWitness(int ordinal) {
  RuntimeWitness w{"cuda", "no runtime", kCuda};
  void* lib = cudaLib();
  auto count = sym<int (*)(int*)>(lib, "cuDeviceGetCount");
  if (!count) return w;
  if (count(&w.deviceCount) != 0 || w.deviceCount <= ordinal) {
    w.status = "no device";
    return w;
  }
  int dev = 0;
  auto get = sym<int (*)(int*, int)>(lib, "cuDeviceGet");
  auto name = sym<int (*)(char*, int, int)>(lib, "cuDeviceGetName");
  auto attr = sym<int (*)(int*, int, int)>(lib, "cuDeviceGetAttribute");
  if (!get || !name || !attr || get(&dev, ordinal) != 0) {
    w.status = "the driver API lacks cuDeviceGet / cuDeviceGetName / cuDeviceGetAttribute";
    return w;
  }
  char buf[256] = {0};
  name(buf, sizeof buf - 1, dev);
  int major = 0, minor = 0;
  attr(&w.warpSize, kCuWarpSize, dev);
  attr(&major, kCuCcMajor, dev);
  attr(&minor, kCuCcMinor, dev);
  w.deviceName = buf;
  w.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  w.status = "ok";
  return w;
}

RuntimeWitness hipWitness(int ordinal) {
#ifndef FLAGPROP_HIP_HEADERS
  (void)ordinal;
  return {"hip", "no runtime", "(built without HIP's headers)"};
#else
  RuntimeWitness w{"hip", "no runtime", kHip};
  void* lib = openOnce(kHip.c_str());
  auto count = sym<hipError_t (*)(int*)>(lib, "hipGetDeviceCount");
  if (!count) return w;
  if (count(&w.deviceCount) != hipSuccess || w.deviceCount <= ordinal) {
    w.status = "no device";
    return w;
  }
  auto props = sym<hipError_t (*)(hipDeviceProp_t*, int)>(lib, kHipProps);
  hipDeviceProp_t p;
  std::memset(&p, 0, sizeof p);
  if (!props || props(&p, ordinal) != hipSuccess) {
    w.status = std::string("cannot read the device properties (") + kHipProps + ")";
    return w;
  }
  w.deviceName = p.name;
  w.arch = std::string(p.gcnArchName).substr(0, std::string(p.gcnArchName).find(':'));  // "gfx936:sramecc+" -> "gfx936"
  w.warpSize = p.warpSize;
  w.status = "ok";
  return w;
#endif
}

namespace {
// Which runtime has a device: asked once per process (0 none, 1 CUDA, 2 HIP).
int runtimeWithDevice() {
  static const int which = cudaWitness().status == "ok" ? 1 : hipWitness().status == "ok" ? 2 : 0;
  return which;
}
}  // namespace

std::optional<PointerWitness> pointerWitness(std::uintptr_t ptr) {
  if (runtimeWithDevice() == 1) {
    auto get = sym<int (*)(void*, int, unsigned long long)>(cudaLib(), "cuPointerGetAttribute");
    unsigned int type = 0;
    int device = -1;
    if (get && get(&type, kCuPointerMemoryType, ptr) == 0 && get(&device, kCuPointerDeviceOrdinal, ptr) == 0) {
      static const char* names[] = {"?", "host", "device", "array", "unified"};
      return PointerWitness{"cuda", names[type < 5 ? type : 0], device};
    }
    return std::nullopt;
  }
#ifdef FLAGPROP_HIP_HEADERS
  if (runtimeWithDevice() == 2) {
    auto get =
        sym<hipError_t (*)(hipPointerAttribute_t*, const void*)>(openOnce(kHip.c_str()), "hipPointerGetAttributes");
    hipPointerAttribute_t a;
    std::memset(&a, 0, sizeof a);
    if (get && get(&a, reinterpret_cast<const void*>(ptr)) == hipSuccess) {
      static const char* names[] = {"host", "device", "array", "unified"};
      const int t = static_cast<int>(a.memoryType);
      return PointerWitness{"hip", t >= 0 && t < 4 ? names[t] : "?", a.device};
    }
  }
#endif
  return std::nullopt;
}

std::optional<double> nativeEventMs(std::uintptr_t stream, const std::function<void()>& enqueue) {
  if (runtimeWithDevice() == 1) {
    void* lib = cudaLib();
    auto create = sym<int (*)(void**, unsigned)>(lib, "cuEventCreate");
    auto record = sym<int (*)(void*, void*)>(lib, "cuEventRecord");
    auto wait = sym<int (*)(void*)>(lib, "cuEventSynchronize");
    auto elapsed = sym<int (*)(float*, void*, void*)>(lib, "cuEventElapsedTime");
    auto destroy = sym<int (*)(void*)>(lib, "cuEventDestroy_v2");
    void *a = nullptr, *b = nullptr;
    if (!create || !record || !wait || !elapsed || create(&a, 0) != 0 || create(&b, 0) != 0) return std::nullopt;
    float ms = 0;
    bool ok = record(a, reinterpret_cast<void*>(stream)) == 0;
    enqueue();
    ok = ok && record(b, reinterpret_cast<void*>(stream)) == 0 && wait(b) == 0 && elapsed(&ms, a, b) == 0;
    if (destroy) (void)destroy(a), (void)destroy(b);
    return ok ? std::optional<double>(ms) : std::nullopt;
  }
#ifdef FLAGPROP_HIP_HEADERS
  if (runtimeWithDevice() == 2) {
    void* lib = openOnce(kHip.c_str());
    auto create = sym<hipError_t (*)(hipEvent_t*)>(lib, "hipEventCreate");
    auto record = sym<hipError_t (*)(hipEvent_t, hipStream_t)>(lib, "hipEventRecord");
    auto wait = sym<hipError_t (*)(hipEvent_t)>(lib, "hipEventSynchronize");
    auto elapsed = sym<hipError_t (*)(float*, hipEvent_t, hipEvent_t)>(lib, "hipEventElapsedTime");
    auto destroy = sym<hipError_t (*)(hipEvent_t)>(lib, "hipEventDestroy");
    hipEvent_t a = nullptr, b = nullptr;
    if (!create || !record || !wait || !elapsed || create(&a) != hipSuccess || create(&b) != hipSuccess)
      return std::nullopt;
    float ms = 0;
    bool ok = record(a, reinterpret_cast<hipStream_t>(stream)) == hipSuccess;
    enqueue();
    ok = ok && record(b, reinterpret_cast<hipStream_t>(stream)) == hipSuccess && wait(b) == hipSuccess &&
         elapsed(&ms, a, b) == hipSuccess;
    if (destroy) (void)destroy(a), (void)destroy(b);
    return ok ? std::optional<double>(ms) : std::nullopt;
  }
#endif
  return std::nullopt;
}

void registerNativeModule() {
  static bool done = false;
  if (done) return;
  done = true;
  py::module_ m = py::module_::create_extension_module("flagprop_native", "the native runtime witness",
                                                       new py::module_::module_def);
  m.def("witness", [](int ordinal) {
    return fromJson({{"hip", hipWitness(ordinal).toJson()}, {"cuda", cudaWitness(ordinal).toJson()}});
  });
  m.def("pointer", [](std::uintptr_t ptr) -> py::object {
    const auto w = pointerWitness(ptr);
    if (!w) return py::none();
    return fromJson({{"runtime", w->runtime}, {"memory_type", w->memoryType}, {"device", w->device}});
  });
  m.def("event_ms", [](std::uintptr_t stream, py::function fn) -> py::object {
    const auto ms = nativeEventMs(stream, [&] { fn(); });
    return ms ? py::object(py::float_(*ms)) : py::object(py::none());
  });
  py::module_::import("sys").attr("modules")["flagprop_native"] = m;
}

}  // namespace flagprop
