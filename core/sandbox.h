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
/// Restored: `sys.modules` (entries replaced or deleted are put back; entries
/// added under a watched root are removed, while other new imports -- a
/// library the case pulled in -- stay, as importing them twice can fail); the
/// `__dict__` of every *watched* module (attributes added, replaced or
/// deleted, e.g. `torch.broadcast_shapes`); the `__dict__` of every class
/// defined in a watched package and of `torch.Tensor` (e.g. `LibEntry.run` /
/// `.key`); `sys.path`, `sys.meta_path`, `sys.path_hooks`; `os.environ`, the
/// process environment itself (`os.putenv`, C code) and the working directory
/// (also one the case removed); `warnings.filters`; the root logger's
/// handlers and level, every existing logger's level, `disabled`,
/// `propagate` and handlers, and `logging.disable` (with the loggers' cached
/// answers cleared where a case assigned any of them); the trace /
/// profile functions, also those for new threads; torch's default dtype and
/// grad mode; the recursion limit. Not restored: a watched class's
/// `__doc__`.
///
/// Watched modules: `torch`, `torch.functional` and `builtins` exactly, and
/// the packages `flag_gems`, `torch_fl`, `triton` (the code under test),
/// `flagprop_target` (modules flagprop makes for it, e.g. a fixture's op
/// module), `flagprop` and `flagprop_mocks` (flagprop's own, all imported
/// before any case) with their submodules. Requires the GIL. A sandbox after
/// one that left every watched dict as it found it reuses its copies (by dict
/// version: docs/design.md, "Speed"): tens of µs on the CPU mocks, ~140-270
/// µs per case on an H200 host with FlagGems loaded (2,600 modules); the walk
/// over `sys.modules` it otherwise makes costs a few hundred µs to ms.
class Sandbox {
 public:
  /// Snapshots now. `extraRoots` adds watch roots (package prefixes).
  explicit Sandbox(const std::vector<std::string>& extraRoots = {});
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  /// Restores the snapshot now (idempotent; the destructor then does nothing).
  void restore();

  /// Whether this sandbox reused the last one's copies (the warm path: no
  /// walk over sys.modules), and else why it walked: "first", "sys.modules
  /// changed" or "module NAME changed" (a watched module's dict changed
  /// between two sandboxes, e.g. a cache the code under test keeps there).
  bool reused() const;
  const std::string& walkedBecause() const;

  /// After restore(): the first kind of state found changed since the
  /// snapshot and put back ("sys.modules (NAME added)", "a watched
  /// module's dict (MODULE.NAME replaced)",
  /// "os.environ", "the working directory", "logging", ...), or "" when the
  /// case(s) left every restored thing as they found it: a dict whose
  /// contents are what they were (written back within the case, or a
  /// library imported into sys.modules, which stays) is unchanged.
  const std::string& changed() const;

 private:
  void snapshot(const std::vector<std::string>& extraRoots);
  struct Impl;
  Impl* impl_;
};

}  // namespace flagprop
