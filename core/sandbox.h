// Per-case sandbox: everything a case changes in the interpreter is undone.
#pragma once

#include "core/python.h"

#include <string>
#include <vector>

namespace flagprop {

/// RAII guard that snapshots interpreter state on construction and restores
/// it on destruction (or on `restore()`), so that nothing one generated case
/// does can leak into the next.
///
/// Restored: every `sys.modules` entry (added ones removed, replaced ones put
/// back); the `__dict__` of every *watched* module (attributes added, replaced
/// or deleted, e.g. `torch.broadcast_shapes`); the `__dict__` of every class
/// defined in a watched module other than `torch` (e.g. `LibEntry.run` /
/// `.key`); `sys.path`; `os.environ`; `warnings.filters`; the root logger's
/// handlers and level; and the trace / profile functions.
///
/// A module is watched when its name equals a watch root or starts with
/// "root." (default roots: `torch` exactly, and the packages `flag_gems`,
/// `torch_fl`, `triton`, `flagprop_target`). Requires the GIL; cost grows with
/// the number of watched modules (a few µs for the CPU mocks).
class Sandbox {
 public:
  /// Snapshots now. `extraRoots` adds watch roots (package prefixes).
  explicit Sandbox(const std::vector<std::string>& extraRoots = {});
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  /// Restores the snapshot now (idempotent; the destructor then does nothing).
  void restore();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace flagprop
