// The parser: mdl source text in, AST (frontend/AST.h) out.
//
// This is the first stage of the frontend. It lexes and parses with the
// ANTLR grammar in grammar/Mdl.g4, applies the layout rules (which newlines
// end a statement), and converts the parse tree into the AST; nothing here
// exposes ANTLR types. Every syntax error becomes an E0001 diagnostic.
#pragma once

#include "frontend/AST.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"

#include <cstddef>
#include <memory>

namespace mdl::frontend {

/// Parses one source buffer. Reports every syntax error (code E0001) to
/// `diags`; returns null if there was any, else the AST. Never throws.
std::unique_ptr<SourceFile> parseSource(const SourceBuffer &buf,
                                        ir::DiagnosticEngine &diags);

/// Parses one source buffer as a run of statements (a REPL input: `let`,
/// `on`, expressions; what a function body holds). Returns a function item
/// with no name, arguments or results whose body holds them, or null after
/// reporting syntax errors (E0001). Never throws.
std::unique_ptr<FnItem> parseStatements(const SourceBuffer &buf,
                                        ir::DiagnosticEngine &diags);

/// Maximum nesting depth of brackets/unary operators/blocks accepted (deeper
/// input gets E0001 "nesting too deep (N levels; the limit is M)"). A chain
/// of binary operators counts one level per operator, since it becomes a
/// tree of that depth.
constexpr int kMaxNesting = 1000;

/// At most this many syntax errors are reported for one file (at most one
/// per line); parsing stops after that.
constexpr int kMaxSyntaxErrors = 50;

/// Largest source accepted, in bytes (128 MiB); larger files get one E0001
/// diagnostic. Measured on one core for 100 MB: a numeric literal 11 s and
/// 1.9 GB, one huge function 50 s and 2.7 GB, many small functions 75-90 s
/// and 3.4 GB (mostly the AST itself). The limit keeps the worst case under
/// about two minutes and 5 GB.
constexpr size_t kMaxSourceBytes = size_t(128) << 20;

} // namespace mdl::frontend
