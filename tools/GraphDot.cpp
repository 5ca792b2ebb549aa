// The DOT text of `mdl graph`: the second half, from the picture's model
// (GraphModel.h) to Graphviz input.
//
// Layout of the output, always in the same order so the same program gives
// byte-identical text:
// 1. graph, node and edge defaults;
// 2. the host program cluster (inputs, results, control-flow headers,
//    print), then one cluster per declared device, in declaration order;
// 3. inside each of them, the nodes of the outermost scope, then one nested
//    sub-cluster per scope (call instance, loop body, branch) that holds a
//    node of that area, recursively, in the order the scopes were met;
// 4. all edges, in program order.
// Node ids are `n<index>`; cluster ids are `cluster_<device>` for devices,
// `"cluster:program"` for the host program and `"<parent>:s<scope>"` below.
#include "tools/GraphModel.h"
#include "stdlib/DeviceKinds.h"

#include <sstream>

namespace mdl::tools::graph {

using namespace ir;

namespace {

/// A DOT double-quoted string: quotes and backslashes escaped, line breaks
/// as centered `\n`, other control characters as spaces.
std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out + "\"";
}

const char *areaFill(const Module &m, int area) {
  if (area < 0)
    return "#f1f3f4";
  switch (stdlib::kindOf(m.devices[size_t(area)]).memory) {
  case stdlib::MemoryModel::Host:
    return "#e8f0fe";
  case stdlib::MemoryModel::Device:
    return "#e6f4ea";
  case stdlib::MemoryModel::Secret:
    return "#f3e8fd";
  }
  return "#ffffff";
}

std::string areaLabel(const Module &m, int area) {
  if (area < 0)
    return "host program";
  const Device &d = m.devices[area];
  // The kind, and the arguments that differ from the kind's defaults.
  std::string label = d.name + " (" + d.kind;
  const stdlib::DeviceKindInfo &kind = stdlib::kindOf(d);
  for (const NamedAttr &a : d.args) {
    bool dflt = false;
    for (const stdlib::ParamSpec &p : kind.args)
      dflt |= a.name == p.name && p.dflt && *p.dflt == a.value;
    if (!dflt && a.name != kind.ordinalArg)
      label += ", " + a.name + " " +
               (a.value.kind() == Attribute::Kind::String ? a.value.asString()
                                                         : std::to_string(a.value.asInt()));
  }
  if (d.implicit)
    label += ", implicit";
  return label + ")";
}

std::string nodeAttrs(const Node &n) {
  switch (n.kind) {
  case NodeKind::Op:
    return "";
  case NodeKind::Constant:
    return "style=\"rounded,dashed,filled\", fontsize=9";
  case NodeKind::Global:
    return "shape=cylinder, style=filled, fillcolor=\"#fff4cc\"";
  case NodeKind::Input:
    return "shape=invhouse, style=filled, fillcolor=\"#dadce0\"";
  case NodeKind::Output:
    return "shape=house, style=filled, fillcolor=\"#dadce0\"";
  case NodeKind::Header:
    return "shape=diamond, style=filled, fillcolor=\"#d2e3fc\", "
           "color=\"#1a73e8\", margin=0.02";
  case NodeKind::Footer:
    return "shape=box, style=\"rounded,filled\", fillcolor=\"#d2e3fc\", "
           "color=\"#1a73e8\", fontsize=8, height=0.2, margin=\"0.04,0.01\"";
  case NodeKind::Landing:
    return "shape=box, style=\"rounded,filled,bold\", fillcolor=\"#fce8e6\", "
           "color=\"#d93025\", fontcolor=\"#d93025\", "
           "fontname=\"Helvetica-Bold\", "
           "fontsize=9, height=0.2, margin=\"0.04,0.01\"";
  case NodeKind::Print:
    return "shape=parallelogram";
  }
  return "";
}

std::string edgeAttrs(const Edge &e) {
  std::string a;
  switch (e.kind) {
  case EdgeKind::Data:
    break;
  case EdgeKind::Transfer:
    a = "color=\"#d93025\", style=\"bold,dashed\", penwidth=2";
    if (!e.label.empty())
      a += ", tooltip=" + quote(e.label);
    return a;
  case EdgeKind::Control:
    a = "color=\"#1a73e8\", fontcolor=\"#1a73e8\"";
    break;
  case EdgeKind::Back:
    a = "color=\"#1a73e8\", fontcolor=\"#1a73e8\", style=dashed, "
        "constraint=false";
    break;
  case EdgeKind::Layout:
    a = "style=invis";
    break;
  }
  if (!e.label.empty())
    a += std::string(a.empty() ? "" : ", ") + "label=" + quote(e.label);
  return a;
}

std::string scopeStyle(ScopeKind k) {
  switch (k) {
  case ScopeKind::LoadTime:
    return "style=\"rounded,dotted\"; color=\"#9aa0a6\"; fontcolor=\"#5f6368\"";
  case ScopeKind::Call:
    return "style=rounded; color=\"#5f6368\"";
  case ScopeKind::LoopBody:
  case ScopeKind::WhileCond:
    return "style=\"rounded,dashed\"; color=\"#1a73e8\"; fontcolor=\"#1a73e8\"";
  case ScopeKind::Then:
  case ScopeKind::Else:
    return "style=\"rounded,dotted\"; color=\"#1a73e8\"; fontcolor=\"#1a73e8\"";
  case ScopeKind::Root:
    break;
  }
  return "";
}

class Writer {
public:
  Writer(const Graph &g, const Module &m) : g_(g), m_(m) {
    children_.resize(g.scopes.size());
    for (size_t s = 1; s < g.scopes.size(); ++s)
      children_[g.scopes[s].parent].push_back(int(s));
  }

  std::string run() {
    os_ << "digraph mdl {\n"
        << "  graph [label=" << quote(g_.title)
        << ", labelloc=t, fontname=\"Helvetica\", fontsize=14, newrank=true, "
           "nodesep=0.25, ranksep=0.3, dpi=72, pad=0.25, bgcolor=white];\n"
        << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
           "fontname=\"Helvetica\", fontsize=10, height=0.3, "
           "margin=\"0.08,0.03\"];\n"
        << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#5f6368\", "
           "arrowsize=0.6];\n";
    area(-1, "\"cluster:program\"", "cluster:program");
    for (int d = 0; d < int(m_.devices.size()); ++d)
      area(d, "cluster_" + m_.devices[d].name, "cluster_" + m_.devices[d].name);
    for (const Edge &e : g_.edges) {
      std::string a = edgeAttrs(e);
      os_ << "  n" << e.from << " -> n" << e.to
          << (a.empty() ? "" : " [" + a + "]") << ";\n";
    }
    os_ << "}\n";
    return os_.str();
  }

private:
  void area(int a, const std::string &id, const std::string &name) {
    // The nodes of this area per scope, and which scopes hold one of them
    // directly or below.
    members_.assign(g_.scopes.size(), {});
    used_.assign(g_.scopes.size(), false);
    bool any = false;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node &n = g_.nodes[i];
      if (n.area != a)
        continue;
      any = true;
      members_[n.scope].push_back(int(i));
      for (int s = n.scope; s >= 0 && !used_[s]; s = g_.scopes[s].parent)
        used_[s] = true;
    }
    os_ << "  subgraph " << id << " {\n"
        << "    label=" << quote(areaLabel(m_, a))
        << "; style=\"rounded,filled\"; fillcolor=\"" << areaFill(m_, a)
        << "\"; color=\"#9aa0a6\"; fontsize=12;\n";
    if (!any) // Graphviz draws no empty cluster; every device gets one.
      os_ << "    " << quote("idle:" + (a < 0 ? "program" : m_.devices[a].name))
          << " [shape=plaintext, label=\"no operations\", fontsize=9];\n";
    scope(0, name, "    ");
    os_ << "  }\n";
  }

  void scope(int s, const std::string &name, const std::string &indent) {
    for (int i : members_[s]) {
      const Node &n = g_.nodes[i];
      std::string attrs = nodeAttrs(n);
      os_ << indent << "n" << i << " [label=" << quote(n.label)
          << (attrs.empty() ? "" : ", " + attrs) << "];\n";
    }
    for (int c : children_[s]) {
      if (!used_[c])
        continue;
      std::string child = name + ":s" + std::to_string(c);
      const Scope &sc = g_.scopes[c];
      os_ << indent << "subgraph " << quote(child) << " {\n"
          << indent << "  label=" << quote(sc.label) << "; "
          << scopeStyle(sc.kind) << "; fontsize=10;\n";
      scope(c, child, indent + "  ");
      os_ << indent << "}\n";
    }
  }

  const Graph &g_;
  const Module &m_;
  std::vector<std::vector<int>> children_;
  std::vector<std::vector<int>> members_; // of the area being written
  std::vector<bool> used_;
  std::ostringstream os_;
};

} // namespace

std::string renderDot(const Graph &g, const Module &m) {
  return Writer(g, m).run();
}

} // namespace mdl::tools::graph
