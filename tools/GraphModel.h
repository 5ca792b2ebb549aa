// The picture `mdl graph` draws, as plain data between the IR and Graphviz.
//
// buildGraph walks the partitioned entry function (and, inline, every
// function instance it calls) and records nodes, edges and scopes; renderDot
// turns that record into DOT text. Keeping the two apart means the walk over
// the IR knows nothing about Graphviz syntax and the writer knows nothing
// about the IR. A scope is one structured region (a call instance, a loop
// body, a branch); the writer draws it as a sub-cluster inside every area
// (device or host program) that holds one of its nodes.
#pragma once

#include "ir/IR.h"

#include <string>
#include <vector>

namespace mdl::tools::graph {

enum class NodeKind : uint8_t {
  Op,       // a device operation inside a segment
  Constant, // a scalar literal inside a segment
  Global,   // a param or const read on a device
  Input,    // an argument of the entry function
  Output,   // a result of the entry function
  Header,   // a `for`, `while` or `if` of the host program
  Footer,   // where its iterations or branches end; its results leave here
  Landing,  // a transfer, drawn where it lands on its destination device
  Print,    // a `print` of the host program
};

enum class EdgeKind : uint8_t {
  Data,     // a value used on the device (or area) that computed it
  Transfer, // a `transfer`, `to` or `reveal` between devices
  Control, // control-flow plumbing: bounds, init, carried, next, branch results
  Back,    // from a loop's footer back to its header
  Layout,  // invisible: keeps a region's first operations below its header
};

enum class ScopeKind : uint8_t {
  Root,
  LoadTime,
  Call,
  LoopBody,
  WhileCond,
  Then,
  Else
};

struct Scope {
  int parent = -1; // -1 for the root
  ScopeKind kind = ScopeKind::Root;
  std::string label;
};

struct Node {
  NodeKind kind = NodeKind::Op;
  int area = -1; // a device index, or -1 for the host program
  int scope = 0; // index into Graph::scopes
  std::string label;
};

struct Edge {
  int from = 0, to = 0; // indices into Graph::nodes
  EdgeKind kind = EdgeKind::Data;
  /// Drawn along the edge; for a transfer, shown on hover (SVG tooltip)
  /// since its landing node already says what moved.
  std::string label;
};

struct Graph {
  std::string title;
  std::vector<Scope> scopes; // scopes[0] is the root
  std::vector<Node> nodes;   // in program order
  std::vector<Edge> edges;   // in program order, without duplicates
};

/// Builds the picture of entry `entry` of the partitioned module `m`.
/// Returns false with `error` set when the entry is missing or a call cannot
/// be followed.
bool buildGraph(const ir::Module &m, const std::string &entry, Graph &out,
                std::string &error);

/// Renders `g` as DOT text: one cluster per device of `m` and one for the
/// host program, scopes as nested sub-clusters.
std::string renderDot(const Graph &g, const ir::Module &m);

} // namespace mdl::tools::graph
