// A program text through the JIT's passes (specialize, affinity, transfers,
// partition, canonicalize, fuse), with main's buffers planned: what the
// buffer-plan and fast-path tests inspect.
#pragma once

#include "TestSupport.h"

#include "backend/jit/BufferPlan.h"
#include "ir/passes/Affinity.h"
#include "ir/passes/Canonicalize.h"
#include "ir/passes/Fuse.h"
#include "ir/passes/InsertTransfers.h"
#include "ir/passes/Partition.h"
#include "ir/passes/Specialize.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace mdl::test {

struct PlannedProgram {
  std::unique_ptr<Compiled> compiled;
  std::unique_ptr<ir::Module> module;
  const ir::Function *main = nullptr;
  backend::jit::FunctionPlan plan;

  /// The operations of kind `k` in `main`, in walk order.
  std::vector<const ir::Operation *> ops(ir::OpKind k) const {
    std::vector<const ir::Operation *> out;
    ir::walk(*main->body, [&](const ir::Operation &op) {
      if (op.kind == k)
        out.push_back(&op);
    });
    return out;
  }
  /// Their first results.
  std::vector<const ir::Value *> results(ir::OpKind k) const {
    std::vector<const ir::Value *> out;
    for (const ir::Operation *op : ops(k))
      out.push_back(op->results[0].get());
    return out;
  }
  const backend::jit::Root &root(const ir::Value *v) const { return plan.rootOf(v); }
};

inline PlannedProgram planProgram(const std::string &text) {
  PlannedProgram p;
  p.compiled = compileText(text);
  EXPECT_TRUE(p.compiled->module) << "does not compile";
  ir::DiagnosticEngine diags;
  auto specialized = passes::specialize(*p.compiled->module, {}, diags);
  p.module = passes::affinity(*specialized, {}, diags);
  passes::insertTransfers(*p.module, diags);
  passes::partition(*p.module);
  passes::canonicalize(*p.module);
  passes::fuse(*p.module);
  p.main = p.module->findFunction("main");
  p.plan = backend::jit::planBuffers(*p.module, *p.main, {}, {});
  return p;
}

} // namespace mdl::test
