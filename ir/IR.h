// The mdl IR: SSA values, operations, single-block regions, functions,
// module-level devices and globals.
//
// Operations own their results and regions; regions own their arguments and
// operations. There are no unstructured branches: `if`, `for`, `while` and
// `segment` hold regions that end in `yield`, function bodies end in
// `return`. Every operation carries a source location and, once affinity has
// run, a device. Weights are `load` operations inside a global's initializer
// region: a reference to a file and key, never the data.
#pragma once

#include "ir/Attribute.h"
#include "ir/Location.h"
#include "ir/Type.h"

#include <map>
#include <unordered_map>
#include <memory>
#include <string>
#include <vector>

namespace mdl::ir {

/// What an operation is: an index into the operation table
/// (stdlib/Ops.def), which completes this enum with every kind
/// (stdlib/OpKind.h). The IR core stores kinds and never interprets them.
enum class OpKind : uint16_t;

class Operation;
class Region;
class Function;

/// How an operation came to have its device.
enum class PlacementKind : uint8_t {
  None,       // not decided (before affinity)
  Explicit,   // `on DEV`, `to(x, DEV)` or a pinned param
  Inferred,   // from operands, the default device or a loop's start
  Replicated, // a replicable value materialized on its consumer's device
};

/// An SSA value: an operation result or a region argument.
class Value {
public:
  TensorType type;
  Operation *def = nullptr;  // defining op; null for region arguments
  Region *region = nullptr;  // owning region of an argument
  unsigned index = 0;        // result or argument number
  int device = -1;           // set by affinity; -1 before it
  bool secret = false;       // lives secret-shared on an mpc device

  explicit Value(TensorType t) : type(std::move(t)) {}
};

/// A single-block region with typed arguments.
class Region {
public:
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Operation>> ops;
  Operation *parent = nullptr;

  Value *addArg(TensorType t);
  /// Appends an operation and takes ownership.
  Operation *push(std::unique_ptr<Operation> op);
};

class Operation {
public:
  OpKind kind;
  Location loc;
  std::vector<Value *> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<NamedAttr> attrs;
  std::vector<std::unique_ptr<Region>> regions;
  Region *parent = nullptr;
  int device = -1;
  PlacementKind placement = PlacementKind::None;

  explicit Operation(OpKind k, Location l = {}) : kind(k), loc(l) {}

  Value *addResult(TensorType t);
  Value *result(unsigned i = 0) const { return results[i].get(); }
  Region *addRegion();
  Region *region(unsigned i) const { return regions[i].get(); }

  /// Attribute lookup; null when absent.
  const Attribute *attr(const std::string &name) const;
  void setAttr(const std::string &name, Attribute value);
  int64_t intAttr(const std::string &name, int64_t dflt = 0) const;
  double floatAttr(const std::string &name, double dflt = 0) const;
  bool boolAttr(const std::string &name, bool dflt = false) const;
  const std::vector<int64_t> &intListAttr(const std::string &name) const;
  std::string stringAttr(const std::string &name) const;
};

/// Iterates every operation nested in a region, outer before inner.
template <typename Fn> void walk(Region &r, Fn &&fn) {
  for (auto &op : r.ops) {
    fn(*op);
    for (auto &sub : op->regions)
      walk(*sub, fn);
  }
}

/// A declared device (`device gpu0 = hip(0)`).
struct Device {
  std::string name;
  /// The name of its kind, registered in stdlib/DeviceKinds.h ("hip").
  std::string kind;
  std::vector<NamedAttr> args; // every argument of the kind, defaults included
  Location loc;
  bool implicit = false; // the `host = cpu()` of a program that declares none

  int64_t intArg(const std::string &name, int64_t dflt) const;
  std::string stringArg(const std::string &name, const std::string &dflt) const;
};

/// A `param` or `const`: a named tensor computed once at load time by its
/// initializer region (which yields one value).
struct Global {
  std::string name;
  bool isParam = false;
  TensorType type;
  int pinnedDevice = -1; // `param ... on DEV`
  Location loc;
  std::unique_ptr<Region> init;
};

/// A function: symbols (generic dimensions), arguments (the body's region
/// arguments), result types and a body ending in `return`.
class Function {
public:
  std::string name;
  std::vector<std::string> symbols;
  std::vector<TensorType> resultTypes;
  /// After affinity: the device each result is delivered on (empty before).
  std::vector<int> resultDevices;
  /// Source names of the arguments (for --input NAME=...); not part of the
  /// text form, may be empty.
  std::vector<std::string> argNames;
  std::unique_ptr<Region> body = std::make_unique<Region>();
  Location loc;
  /// For a specialization: the generic function it came from and the
  /// binding, printed as a comment-free attribute list.
  std::vector<NamedAttr> attrs;

  std::vector<Value *> args() const;
  /// A function with this one's name, symbols, result types and devices,
  /// argument names, location and attributes, and an empty body.
  std::unique_ptr<Function> cloneHeader() const;
};

/// A whole program.
class Module {
public:
  std::vector<Device> devices;
  std::vector<Global> globals;
  std::vector<std::unique_ptr<Function>> functions;

  int findDevice(const std::string &name) const;
  int findGlobal(const std::string &name) const;
  Function *findFunction(const std::string &name) const;
  Function *addFunction(std::unique_ptr<Function> f);
  /// The default device: the first declared one.
  int defaultDevice() const { return devices.empty() ? -1 : 0; }
  /// Rebuilds the name index after functions were added or removed.
  void reindex();

private:
  std::map<std::string, Function *> fnIndex_;
};

/// Maps values of an original to values of a copy (lookup only, never
/// iterated, so pointer keys do not make output order depend on addresses).
using ValueMap = std::unordered_map<const Value *, Value *>;

/// Deep-copies a region into `dst` (which must be empty), mapping values
/// through `map` (extended with every value the copy defines).
void cloneRegionInto(const Region &src, Region &dst, ValueMap &map);
/// Deep-copies one operation; operands are mapped through `map` (values not
/// in it are kept), new results and nested values are added to it.
std::unique_ptr<Operation> cloneOp(const Operation &op, ValueMap &map);
/// Deep-copies a global (its initializer included).
Global cloneGlobal(const Global &g);
/// Replaces the operands of `op` and of the operations nested in it that
/// `map` names by what it maps them to.
void remapOperands(Operation &op, const ValueMap &map);

} // namespace mdl::ir
