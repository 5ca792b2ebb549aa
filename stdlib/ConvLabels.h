// The `dim_labels` of an HLO convolution, e.g. "b01f_01io->b01f": where the
// batch and feature dimensions of the input and output, the input and
// output feature dimensions of the kernel, and each spatial dimension are.
// Read by the convolution's shape rule and by its CPU kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mdl::stdlib {

/// One operand's labels: the positions of its two lettered dimensions
/// (b and f for the input and output, i and o for the kernel) and of
/// spatial dimension 0, 1, ...
struct DimLabels {
  int64_t a = -1, b = -1;
  std::vector<int64_t> spatial;
  int rank() const { return int(spatial.size()) + 2; }
};

struct ConvDimLabels {
  DimLabels input, kernel, output;
};

/// Parses "INPUT_KERNEL->OUTPUT". nullopt unless each part names its two
/// letters once and every spatial digit below its count once, and the three
/// parts have the same number of spatial dimensions.
std::optional<ConvDimLabels> parseConvDimLabels(const std::string &labels);

} // namespace mdl::stdlib
