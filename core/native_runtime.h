// The native runtime witness: what the HIP or CUDA runtime itself says about
// a device, a pointer and the time between two events, independently of
// torch. The runtime libraries are loaded with dlopen when present (a build
// needs neither; a host without them gets "no runtime"), so one flagprop
// binary runs on CPU, NVIDIA and AMD / Hygon hosts alike.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace flagprop {

/// What one native runtime says about device `ordinal`.
struct RuntimeWitness {
  std::string runtime;  ///< "hip" (libamdhip64) or "cuda" (the driver API, libcuda)
  /// "ok"; "no device" (the runtime loaded, no device is visible); "no
  /// runtime" (the library is absent, or the HIP path was built without
  /// HIP's headers); or the runtime's error text.
  std::string status;
  std::string library;  ///< the library that was loaded, or tried
  int deviceCount = 0;
  std::string deviceName;  ///< e.g. "NVIDIA H200"
  std::string arch;        ///< e.g. "sm_90", "gfx936"
  int warpSize = 0;        ///< threads per warp / wavefront
  nlohmann::json toJson() const;
};

/// The HIP runtime's view of device `ordinal` (libamdhip64 of the major
/// version whose headers flagprop was built with: the device-properties
/// layout follows that version).
RuntimeWitness hipWitness(int ordinal = 0);

/// The CUDA driver API's view of device `ordinal` (libcuda.so.1; the
/// attribute numbers are the driver API's documented enum values).
RuntimeWitness cudaWitness(int ordinal = 0);

/// Where a pointer lives according to a native runtime.
struct PointerWitness {
  std::string runtime;
  std::string memoryType;  ///< "host", "device", "array", "unified"
  int device = -1;         ///< the device ordinal the memory belongs to
};

/// What HIP or CUDA (whichever has a device) says of `ptr`; nullopt when no
/// runtime with a device is there or the runtime does not know the pointer.
std::optional<PointerWitness> pointerWitness(std::uintptr_t ptr);

/// Milliseconds between native events recorded on the raw stream `stream`
/// (a cudaStream_t / hipStream_t handle; 0 for the default stream) before
/// and after `enqueue` ran; nullopt without a runtime that has a device.
std::optional<double> nativeEventMs(std::uintptr_t stream, const std::function<void()>& enqueue);

/// Registers the embedded Python module `flagprop_native` (witness(device),
/// pointer(ptr), event_ms(stream, fn)) so that flagprop's Python half can
/// ask the native runtime; called by ensureInterpreter.
void registerNativeModule();

}  // namespace flagprop
