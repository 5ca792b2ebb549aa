// Protocol programs: what the compile-time half of the mpc device will make
// from a segment of the IR, and what the run-time half executes on each
// party's Rep3Engine.
//
// A program is a straight-line list of instructions over numbered slots.
// Inputs fill slots with public tensors that one owner party secret-shares;
// each instruction reads operand slots and writes one result slot, which
// is assigned once (SSA) and carries its expected shape; outputs name slots
// to reveal to every party or to hand back still shared. Every party runs
// the same program; the only party-specific data are the owners' input
// values. The operation set is one enum with one table (name, operand
// count, attributes) that the verifier, the text form and the executor
// share. Text form (ProgramText.cpp), one item per line:
//
//   mpc.program slots 4
//   input %0 owner 0 fixed [2, 3]
//   input %1 owner 1 fixed [3]
//   %2 = add %0, %1 : [2, 3]
//   %3 = softmax %2 {axis = i[1]} : [2, 3]
//   output %3 reveal
#pragma once

#include "backend/mpc/Rep3Engine.h"

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace mdl::backend::mpc {

/// The operations of protocol programs (programOpInfo gives each one's
/// name, operands and attributes).
enum class ProgramOpKind {
  Constant,  ///< a public tensor as a sharing: value, value_shape, integer
  Add,       ///< x + y (broadcasting)
  Sub,       ///< x - y
  Neg,       ///< -x
  AddPublic, ///< x + value
  MulPublic, ///< x * value
  Mul,       ///< x * y
  MatMul,    ///< x @ y (NumPy matmul)
  Truncate,  ///< probabilistic truncation by bits
  Lt,        ///< x < y, secret bits
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  Select, ///< cond ? x : y
  Relu,
  Abs,
  Max, ///< element-wise
  Min,
  Clip,      ///< to [lo, hi]
  ReduceMax, ///< along axis, keepdims
  ReduceMin,
  ArgMax,
  ArgMin,
  Exp,
  Reciprocal,
  Div,
  Rsqrt,
  Sqrt,
  Sigmoid,
  Tanh,
  Gelu,      ///< approximate: 1 for the tanh form
  Softmax,   ///< along axis
  LayerNorm, ///< x[, gamma[, beta]] along axis with eps
  Sum,       ///< over axes (empty: all), keepdims
  Mean,
  Reshape,   ///< to the result shape
  Transpose, ///< perm
  Slice,     ///< starts, stops, steps
  Concat,    ///< any number of operands along axis
  Gather,    ///< indices, index_shape, axis
  Broadcast, ///< to the result shape
};

/// The kind of an attribute's values.
enum class AttrKind { Ints, Floats };

/// What the verifier knows of one operation.
struct ProgramOpInfo {
  ProgramOpKind kind;
  const char *name;
  int minOperands;
  int maxOperands; ///< -1: any number
  /// Required attributes as "name:i" or "name:f"; optional ones end in "?".
  std::vector<const char *> attrs;
};

/// The table entry of `kind`.
const ProgramOpInfo &programOpInfo(ProgramOpKind kind);
/// Every operation, in enum order (for listing what the device supports).
const std::vector<ProgramOpInfo> &programOps();
/// The operation named `name`, or null.
const ProgramOpInfo *programOpByName(const std::string &name);

/// A named attribute: a list of integers or of reals.
struct ProgramAttr {
  std::string name;
  AttrKind kind = AttrKind::Ints;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

/// One step: result = op(operands...) with attributes.
struct Instruction {
  ProgramOpKind op = ProgramOpKind::Add;
  std::vector<int> operands; ///< slots; -1 for an absent optional operand
  int result = -1;
  Shape shape; ///< the result's shape, checked when the step runs
  std::vector<ProgramAttr> attrs;
  /// Where in the source the step comes from (0: unknown); a failure of
  /// the step starts with "LINE:COL: ".
  int line = 0, col = 0;

  const ProgramAttr *attr(const std::string &name) const;
};

/// A tensor entering the program, secret-shared by its owner.
struct ProgramInput {
  int slot = -1;
  int owner = 0;
  Shape shape;
  EncodingKind encoding = EncodingKind::Fixed;
};

/// A result leaving it: revealed to all parties, or kept shared.
struct ProgramOutput {
  int slot = -1;
  bool reveal = true;
};

/// A whole protocol program.
struct Program {
  int numSlots = 0;
  std::vector<ProgramInput> inputs;
  std::vector<Instruction> instructions;
  std::vector<ProgramOutput> outputs;
};

/// Checks slots (in range, written once, defined before use), operand
/// counts and attributes against the table. Every problem is reported.
llvm::Error verifyProgram(const Program &program);

/// The text form (file comment); parseProgram(printProgram(p)) == p.
std::string printProgram(const Program &program);
/// Parses the text form; errors name the line. The result is verified.
llvm::Expected<Program> parseProgram(const std::string &text);

/// One output after a run.
struct ProgramValue {
  bool revealed = true;
  PlainTensor value;   ///< when revealed
  SharedTensor shared; ///< when kept shared
};

/// Runs `program` on this party's engine. `inputValues[i]` is input i's
/// value when this party owns it (ignored, and may be null, otherwise).
/// All revealed outputs are opened in one round. Every party gets the same
/// revealed values.
llvm::Expected<std::vector<ProgramValue>>
runProgram(Rep3Engine &engine, const Program &program,
           const std::vector<const PlainTensor *> &inputValues);

/// Runs `program` on secret values already shared: `inputs` fill the
/// program's input slots in order (their shapes and encodings must match);
/// every output comes back shared, whatever its reveal flag. What a
/// device runs for one segment between values that stay on the device.
llvm::Expected<std::vector<ProgramValue>>
runProgramShared(Rep3Engine &engine, const Program &program,
                 std::vector<SharedTensor> inputs);

} // namespace mdl::backend::mpc
