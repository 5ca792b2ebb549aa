// The placement summary.
//
// 1. Count, per device, the operations inside its segments, and the params
//    whose reads are materialized on it.
// 2. Walk the entry function in program order, descending into loops,
//    branches and called instances, and list every transfer with the
//    context that multiplies it (a loop body runs once per iteration).
//    The entry's results computed on a device that is not host memory are
//    copied to the caller: one more transfer each.
// 3. Globals read on two or more devices are the replicated constants.
// 4. The IR size is the size of the printed partitioned module.
#include "ir/passes/PlacementSummary.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"
#include "ir/text/Printer.h"
#include "ir/passes/InsertTransfers.h"

#include <iomanip>
#include <map>
#include <set>
#include <sstream>

namespace mdl::passes {

using namespace ir;

std::string byteString(const TensorType &t) {
  int64_t n = int64_t(dtypeSize(t.dtype));
  std::string syms;
  for (const Dim &d : t.dims) {
    if (d.isStatic())
      n *= d.size;
    else
      syms += "*" + d.str();
  }
  return std::to_string(n) + syms + " B";
}

namespace {

class Summarizer {
public:
  explicit Summarizer(const Module &m) : m_(m) {}

  PlacementSummary run(const std::string &entry) {
    PlacementSummary s;
    s.entry = entry;
    for (const Device &d : m_.devices) {
      DeviceRecord r;
      r.name = d.name;
      r.kind = d.kind;
      s.devices.push_back(r);
    }
    std::map<std::string, std::set<int>> readsOn;
    for (auto &f : m_.functions)
      walk(*f->body, [&](const Operation &op) {
        if (op.kind == OpKind::Segment)
          walk(*op.regions[0], [&](const Operation &inner) {
            if (inner.kind != OpKind::Yield)
              ++s.devices[size_t(op.device)].operations;
          });
        if (op.kind == OpKind::Global && op.device >= 0)
          readsOn[op.stringAttr("name")].insert(op.device);
      });
    for (auto &[name, devs] : readsOn) {
      int g = m_.findGlobal(name);
      if (g < 0)
        continue;
      const Global &gl = m_.globals[size_t(g)];
      for (int d : devs)
        if (gl.isParam) {
          s.devices[size_t(d)].paramBytes += gl.type.isStatic() ? gl.type.byteSize() : 0;
          s.devices[size_t(d)].params.push_back(name);
        }
      if (devs.size() >= 2 && name.rfind("__hoisted.", 0) != 0) {
        std::string list;
        for (int d : devs)
          list += (list.empty() ? "" : ", ") + m_.devices[size_t(d)].name;
        s.replicated.push_back(std::string(gl.isParam ? "param " : "const ") + name + " on " +
                               list + " (" + byteString(gl.type) + " each)");
      } else if (devs.size() >= 2) {
        std::string list;
        for (int d : devs)
          list += (list.empty() ? "" : ", ") + m_.devices[size_t(d)].name;
        s.replicated.push_back("value computed from constants at line " +
                               std::to_string(gl.loc.line) + " on " + list + " (" +
                               byteString(gl.type) + " each)");
      }
    }
    if (const Function *f = m_.findFunction(entry)) {
      transfers(*f, "", s.transfers, 0);
      resultTransfers(*f, s.transfers);
    }
    s.irBytes = printModule(m_).size();
    return s;
  }

private:
  void transfers(const Function &f, const std::string &ctx, std::vector<TransferRecord> &out,
                 int depth) {
    if (depth > 64)
      return;
    region(*f.body, ctx, out, depth);
  }

  void region(const Region &r, const std::string &ctx, std::vector<TransferRecord> &out,
              int depth) {
    for (auto &op : r.ops) {
      if (stdlib::isTransfer(op->kind)) {
        TransferRecord t;
        const Value *src = op->operands[0];
        bool hostScalar = op->kind == OpKind::Transfer && !op->attr("from");
        t.from = hostScalar ? "host program" : m_.devices[size_t(src->device)].name;
        t.to = m_.devices[size_t(op->device)].name;
        t.kind = hostScalar ? "loop index"
                 : op->kind == OpKind::Transfer ? "implicit"
                 : op->kind == OpKind::To       ? "to()"
                                                : "reveal";
        t.bytes = byteString(op->results[0]->type);
        t.staticBytes = op->results[0]->type.isStatic() ? op->results[0]->type.byteSize() : 0;
        t.loc = op->loc;
        t.context = ctx;
        out.push_back(t);
        continue;
      }
      std::string line = std::to_string(op->loc.line);
      switch (op->kind) {
      case OpKind::For:
        region(*op->regions[0], join(ctx, "per iteration of the for loop at line " + line), out,
               depth);
        break;
      case OpKind::While:
        region(*op->regions[0], join(ctx, "per test of the while loop at line " + line), out,
               depth);
        region(*op->regions[1], join(ctx, "per iteration of the while loop at line " + line),
               out, depth);
        break;
      case OpKind::If:
        region(*op->regions[0], join(ctx, "when the if at line " + line + " is true"), out, depth);
        region(*op->regions[1], join(ctx, "when the if at line " + line + " is false"), out, depth);
        break;
      case OpKind::Call:
        if (const Function *callee = m_.findFunction(op->stringAttr("callee")))
          transfers(*callee, join(ctx, "in " + callee->name + " called at line " + line), out,
                    depth + 1);
        break;
      default:
        break;
      }
    }
  }

  /// The entry's results reach the caller in host memory (LANGUAGE.md,
  /// placement rule 8): each one computed on a device with memory of its
  /// own is copied there when the call returns.
  void resultTransfers(const Function &f, std::vector<TransferRecord> &out) {
    const Operation *ret = stdlib::terminatorOf(*f.body);
    for (size_t i = 0; i < f.resultDevices.size() && i < f.resultTypes.size(); ++i) {
      int d = f.resultDevices[i];
      if (d < 0 || stdlib::isHostMemory(m_.devices[size_t(d)]))
        continue;
      TransferRecord t;
      t.from = m_.devices[size_t(d)].name;
      t.to = "host program";
      t.kind = "result " + std::to_string(i) + ", returned to the caller";
      t.bytes = byteString(f.resultTypes[i]);
      t.staticBytes = f.resultTypes[i].isStatic() ? f.resultTypes[i].byteSize() : 0;
      t.loc = ret ? ret->loc : f.loc;
      out.push_back(t);
    }
  }

  static std::string join(const std::string &a, const std::string &b) {
    return a.empty() ? b : a + ", " + b;
  }

  const Module &m_;
};

} // namespace

PlacementSummary summarizePlacement(const Module &m, const std::string &entry) {
  return Summarizer(m).run(entry);
}

std::string formatPlacementSummary(const PlacementSummary &s) {
  std::ostringstream os;
  os << "placement summary (entry '" << s.entry << "'):\n";
  size_t w = 6;
  for (auto &d : s.devices)
    w = std::max(w, d.name.size());
  os << "  " << std::left << std::setw(int(w)) << "device" << "  kind  " << std::right
     << std::setw(10) << "operations" << "  " << std::setw(12) << "param bytes" << "\n";
  for (auto &d : s.devices)
    os << "  " << std::left << std::setw(int(w)) << d.name << "  " << std::setw(4) << d.kind
       << "  " << std::right << std::setw(10) << d.operations << "  " << std::setw(12)
       << d.paramBytes << "\n";
  if (s.transfers.empty()) {
    os << "  transfers per call: none\n";
  } else {
    int64_t total = 0;
    bool symbolic = false;
    os << "  transfers per call of '" << s.entry << "':\n";
    for (auto &t : s.transfers) {
      os << "    " << t.from << " -> " << t.to << "  " << t.bytes << "  (" << t.kind
         << ", line " << t.loc.line << (t.context.empty() ? "" : ", " + t.context) << ")\n";
      total += t.staticBytes;
      symbolic |= t.staticBytes == 0;
    }
    os << "  " << s.transfers.size() << " transfer" << (s.transfers.size() == 1 ? "" : "s")
       << ", " << total << " B" << (symbolic ? " plus symbolic sizes" : "")
       << " (loop bodies count once)\n";
  }
  for (auto &r : s.replicated)
    os << "  replicated at load time: " << r << "\n";
  os << "  IR size: " << s.irBytes << " bytes (partitioned; weights are never in the IR)\n";
  return os.str();
}

} // namespace mdl::passes
