// The op families of the coverage table and the order in which --jobs
// processes take ops (the costliest families first).
#pragma once

#include <string>

namespace flagprop {

/// The family an ATen overload belongs to in the coverage table: "linear
/// algebra", "nn", "reduction and scan", "index", "shape, copy and
/// creation" or "pointwise" (the rest). A rule on the overload's base name
/// (its leading "_" and a trailing "_backward", "_out", "_copy" or "_"
/// left out), flagprop's own: LibTorch 1.13 tags no op as pointwise.
std::string opFamily(const std::string& overload);

/// Where `overload` comes in the order --jobs processes take a target's
/// ops: lower first. Families whose ops cost most per op come first, so
/// that a costly op does not start last and leave one process running
/// alone: the measured seconds per op (P5 and P6, float32, 3 cases) on an
/// H200 with FlagGems ed2508bc over every registered overload were linear
/// algebra 27.7, nn 25.7, reduction and scan 9.9, pointwise 7.7, index 5.0,
/// shape, copy and creation 2.6 (docs/gpus.md). No throw.
int opCostRank(const std::string& overload);

/// Whether `overload` is one of the ops whose first cases on a GPU are
/// mostly FlagGems autotuning its kernels (compiling each config, then
/// benchmarking it on the device): the linear-algebra family and the
/// convolutions (a base name holding "conv", "convert" aside). --heavy-jobs
/// caps how many processes of one target run these at once. Measured on an
/// H200 with FlagGems ed2508bc, float32, 16 processes at once: single cases
/// of mm took 441 s, addbmm 165 s, _convolution_mode 81 s, with the op 93-99 %
/// of each case (docs/benchmarks.md). No throw.
bool opAutotunesHeavily(const std::string& overload);

}  // namespace flagprop
