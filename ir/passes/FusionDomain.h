// The iteration space of a fusion cluster: which operations can be computed
// element by element inside one generated loop nest, and over which domain.
//
// A cluster computes every value at the points of one domain D (a static
// shape). Element-wise operations broadcast as NumPy does (right-aligned),
// so a value of a smaller shape is computed at the projection of the point.
// Reductions must all reduce the same trailing axes of D (the "inner"
// axes); their results are row values (one per point of the outer axes),
// readable by later members when they broadcast along the inner axes only.
// Outputs are values of shape D, row values, or reduction results.
//
// The fusion pass (Fuse.h) uses this analysis to decide which operations may
// share a cluster; the JIT uses it to generate the loop nest. It reads the
// IR and never changes it.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mdl::passes {

/// The iteration space of a valid cluster.
struct FusionDomain {
  std::vector<int64_t> dims; // D
  int innerRank = 0;         // trailing axes reduced by the reductions (0: none)
  bool hasReductions = false;
};

/// Operations a generated loop computes per element: those the operation
/// table marks fusible for their result's element type (element-wise
/// arithmetic, comparisons, logic, clip, select, cast, and sum / mean / max
/// / min over trailing axes), on every element type (bf16 and f16 are
/// computed in f32 between a load and a rounding store).
bool isFusible(const ir::Operation &op);

/// Constant-like operations (the table's FusionLeaf trait) that a cluster
/// copies into itself instead of reading them from memory: scalar and small
/// dense constants, zeros, ones, full, arange.
bool isFusionLeaf(const ir::Operation &op);

/// The domain of the cluster made of `members` (fusible operations in
/// program order) whose results `outputs` are read outside it; nullopt when
/// they cannot share one loop nest.
std::optional<FusionDomain> analyzeFusion(const std::vector<const ir::Operation *> &members,
                                          const std::vector<const ir::Value *> &outputs);

/// The domain of an existing `fusion` operation.
std::optional<FusionDomain> fusionDomain(const ir::Operation &fusion);

/// Shape `s` right-aligned into the rank of `dims`: leading 1s added.
std::vector<int64_t> alignShape(const std::vector<int64_t> &s, size_t rank);

/// The memory a fusion's loop nest reads and writes, each access as element
/// strides over the domain (0 along the axes it is broadcast over), and the
/// domain with neighbouring axes merged wherever every access allows it
/// (never across the outer / inner boundary; axes of extent 1 dropped).
/// What the CPU's loops and the GPU's kernels index by.
struct FusionAccesses {
  /// The accesses of `fusion` over `domain`: region argument j read with
  /// element strides `inputStrides[j]` (over its own shape), its dense
  /// constants (of more than one element) and aranges row-major, its
  /// outputs written row-major (over the domain, as row values, or as
  /// reduction results over the outer axes). nullopt, with `error`, for an
  /// input or output that does not fit the domain.
  static std::optional<FusionAccesses> of(const ir::Operation &fusion, const FusionDomain &domain,
                                          const std::vector<std::vector<int64_t>> &inputStrides,
                                          std::string &error);
  /// Adds an access with `strides` over the domain (before collapse()).
  int add(std::vector<int64_t> strides);
  /// The strides over the domain of a value of `shape` laid out with
  /// `strides`, right-aligned (0 along its axes of extent 1).
  std::vector<int64_t> aligned(const std::vector<int64_t> &shape,
                               const std::vector<int64_t> &strides) const;
  /// Merges neighbouring axes: sets `dims`, `outer`, `inner` and turns every
  /// access's strides into strides over `dims`.
  void collapse();

  FusionDomain domain;
  std::vector<int> inputs;                                // per region argument
  std::unordered_map<const ir::Operation *, int> leaves; // dense constants, aranges
  std::vector<int> outputs;                               // per output
  std::vector<bool> full;                                 // output k spans the domain
  std::vector<std::vector<int64_t>> strides;              // per access
  std::vector<int64_t> dims;                              // after collapse()
  size_t outer = 0, inner = 0;                            // axes of `dims`
};

} // namespace mdl::passes
