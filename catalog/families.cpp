#include "catalog/families.h"

#include <cstring>
#include <initializer_list>

namespace flagprop {

std::string opFamily(const std::string& overload) {
  std::string base = overload.substr(0, overload.find('.'));
  while (!base.empty() && base.front() == '_') base.erase(0, 1);
  for (const char* tail : {"_backward", "_forward", "_out", "_copy", "_"})
    if (base.size() > std::strlen(tail) && base.compare(base.size() - std::strlen(tail), std::string::npos, tail) == 0)
      base.erase(base.size() - std::strlen(tail));
  auto starts = [&](std::initializer_list<const char*> v) {
    for (const char* p : v)
      if (base.rfind(p, 0) == 0) return true;
    return false;
  };
  auto has = [&](std::initializer_list<const char*> v) {
    for (const char* p : v)
      if (base.find(p) != std::string::npos) return true;
    return false;
  };
  auto is = [&](std::initializer_list<const char*> v) {
    for (const char* p : v)
      if (base == p) return true;
    return false;
  };
  if ((starts({"linalg", "cholesky", "lu", "triangular_solve", "svd", "qr", "slogdet", "logdet", "det", "inverse",
               "pinverse", "matrix_", "compute_linear_combination"}) &&
       !starts({"detach"})) ||
      is({"mm",           "bmm",   "addmm", "addmv", "addr",  "baddbmm", "addbmm",    "matmul",
          "mv",           "dot",   "vdot",  "outer", "ger",   "kron",    "tensordot", "einsum",
          "chain_matmul", "trace", "geqrf", "orgqr", "ormqr", "cross"}))
    return "linear algebra";
  if (has({"conv",     "pool",     "norm",         "loss",          "softmax",     "dropout",       "embedding",
           "pad",      "upsample", "grid_sampler", "affine_grid",   "interpolate", "pixel_shuffle", "pixel_unshuffle",
           "unfold",   "im2col",   "col2im",       "fake_quantize", "qparams",     "attention",     "linear",
           "bilinear", "glu",      "adam",         "sgd",           "one_hot"}))
    return "nn";
  if (is({"sum",        "mean",        "prod",    "std",          "var",
          "var_mean",   "std_mean",    "amax",    "amin",         "aminmax",
          "max",        "min",         "argmax",  "argmin",       "all",
          "any",        "nansum",      "nanmean", "logsumexp",    "count_nonzero",
          "median",     "nanmedian",   "mode",    "kthvalue",     "cumsum",
          "cumprod",    "cummax",      "cummin",  "logcumsumexp", "sort",
          "argsort",    "topk",        "histc",   "histogram",    "bincount",
          "quantile",   "nanquantile", "dist",    "unique",       "unique_consecutive",
          "unique_dim", "msort",       "diff",    "trapz",        "trapezoid"}))
    return "reduction and scan";
  if (starts({"index", "scatter", "gather", "take", "masked", "put", "select", "slice", "nonzero", "searchsorted",
              "bucketize", "embedding", "diagonal_scatter", "argwhere"}))
    return "index";
  if (starts({"view",       "reshape",    "permute", "transpose", "expand",     "repeat",     "flip",     "roll",
              "split",      "chunk",      "unbind",  "squeeze",   "unsqueeze",  "narrow",     "diag",     "tril",
              "triu",       "cat",        "stack",   "hstack",    "vstack",     "concat",     "t",        "alias",
              "as_strided", "unflatten",  "flatten", "movedim",   "contiguous", "clone",      "copy",     "fill",
              "zero",       "ones",       "full",    "empty",     "arange",     "linspace",   "logspace", "eye",
              "new_",       "resize",     "to_",     "lift",      "detach",     "block_diag", "rot90",    "meshgrid",
              "tile",       "pin_memory", "nested",  "conj",      "resolve",    "polar",      "complex",  "view_as"}) &&
      !starts({"tan", "trunc", "true_divide"}))
    return "shape, copy and creation";
  return "pointwise";
}

int opCostRank(const std::string& overload) {
  const std::string f = opFamily(overload);
  int rank = 0;
  for (const char* family :
       {"linear algebra", "nn", "reduction and scan", "pointwise", "index", "shape, copy and creation"}) {
    if (f == family) return rank;
    ++rank;
  }
  return rank;
}

bool opAutotunesHeavily(const std::string& overload) {
  if (opFamily(overload) == "linear algebra") return true;
  const std::string base = overload.substr(0, overload.find('.'));
  return base.find("conv") != std::string::npos && base.find("convert") == std::string::npos;
}

}  // namespace flagprop
