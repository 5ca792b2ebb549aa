// The in-memory form of an HLO text module, as the reader produces it and the
// translator consumes it: computations of instructions, each with its shape,
// opcode, operand names and attributes kept as raw text.
//
// Nothing here holds a large constant: a literal over the inline limit is
// streamed into the weight file while it is read, and the instruction keeps
// only the key it was stored under. Attribute values stay unparsed text until
// the translator asks for the few it understands, so an attribute that no
// one reads (metadata, backend_config, frontend_attributes, ...) costs a copy
// and nothing else, and an unknown one is never an error.
#pragma once

#include "ir/Type.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mdl::frontend::hlo {

/// A position in the `.hlo` file (1-based).
struct HloPos {
  uint32_t line = 0;
  uint32_t col = 0;
};

/// An HLO shape: an array (element type and dimensions) or a tuple of shapes.
struct HloShape {
  bool isTuple = false;
  std::vector<HloShape> elements; // tuple elements
  std::string type;               // element type spelling: f32, pred, u32, token, ...
  std::vector<int64_t> dims;      // bounds for dynamic dimensions
  bool dynamic = false;           // some dimension is `<=N` or `?`
  bool buffer = false;            // the `b(...)` buffer form

  /// Number of array leaves (a tuple's leaves, recursively; 1 for an array).
  size_t leafCount() const;
  /// Appends the array leaves in order.
  void leaves(std::vector<const HloShape *> &out) const;
  /// `f32[2,3]`, `(f32[], s32[])`.
  std::string str() const;
  int64_t numElements() const;
};

/// How an HLO element type is stored in mdl IR, or nullopt when mdl has no
/// faithful representation (s16, f8 variants, complex, token, ...).
/// `u32`/`u64` are stored in `i32`/`i64` with the same bits ("signless");
/// the few operations whose result depends on signedness carry the
/// information themselves.
std::optional<ir::DType> storageType(const std::string &hloType);
/// True for the unsigned types stored signless (u32, u64).
bool isSignlessUnsigned(const std::string &hloType);

/// A constant's literal: inline bytes (small), a key in the weight file
/// (large), or elided (`{...}`).
struct HloLiteral {
  enum class Kind { None, Inline, Weight, Elided, Unsupported };
  Kind kind = Kind::None;
  std::vector<uint8_t> bytes; // Inline: row-major element bytes
  std::string key;            // Weight: key in the weight file
  std::string why;            // Unsupported: what could not be stored
};

struct HloOperand {
  std::string name;
  HloPos pos;
};

struct HloAttr {
  std::string name;
  std::string value; // raw text, exactly as written
  HloPos pos;        // where the value starts
};

struct HloInstruction {
  std::string name;
  HloShape shape;
  std::string opcode;
  std::vector<HloOperand> operands;
  std::vector<HloAttr> attrs;
  int64_t parameterNumber = -1; // parameter(N)
  HloLiteral literal;           // constant(...)
  HloPos pos;                   // the instruction's name
  bool isRoot = false;

  const HloAttr *attr(const std::string &n) const {
    for (const HloAttr &a : attrs)
      if (a.name == n)
        return &a;
    return nullptr;
  }
};

struct HloComputation {
  std::string name;
  std::vector<HloInstruction> instructions;
  int root = -1; // index of the ROOT instruction (or the last one)
  HloPos pos;
  bool isEntry = false;

  const HloInstruction &rootInstruction() const { return instructions[size_t(root)]; }
};

struct HloModule {
  std::string name;
  std::vector<HloComputation> computations;
  int entry = -1; // ENTRY, or the last computation when none is marked
};

} // namespace mdl::frontend::hlo
