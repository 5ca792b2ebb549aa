// The ANTLR half of the parser: lexing, the token pass and parsing. Syntax
// error messages are worded in SyntaxErrors.cpp, parse trees become the
// AST in AstBuilder.cpp; these three files and AntlrParse.h are the only
// hand-written ones that see ANTLR types. The token pass (Driver) sits
// between the generated lexer and parser:
//   1. it reads bytes (a custom CharStream, so columns count bytes and no
//      input can make the runtime throw on decoding);
//   2. it reports stray characters, unterminated strings, bad escapes and
//      out-of-range numbers, and drops the stray characters;
//   3. it applies the layout rules (Layout, in Parser.cpp): keeps only the
//      newlines that may end a statement, measures the nesting depth;
//   4. it folds large all-number tensor literals into one PACKED_TENSOR token
//      whose AST is built directly (LiteralPacker, in Parser.cpp);
//   5. it cuts the stream into chunks at item keywords that start a line,
//      and parses each chunk on its own: memory stays bounded by the largest
//      item, and a broken item cannot swallow the next one;
//   6. it cuts a very large function into pieces after statements of its
//      body, so that even one huge function is parsed in bounded memory.
// In statements mode (the REPL's inputs) the whole buffer is one chunk of
// statements, parsed with the rule for the middle of a function body into
// a function item without a header.
// Each chunk is parsed with SLL prediction and a bail-out strategy first; on
// failure it is parsed again with full LL and ErrorReporter, which words the
// errors. TreeBuilder then converts the tree, quoting each grammar rule
// above its conversion.
#include "frontend/AntlrParse.h"

#include <algorithm>
#include <stdexcept>

namespace mdl::frontend::detail {
namespace {

using grammar::MdlLexer;


// --- Input -------------------------------------------------------------------

/// The source bytes as ANTLR characters, one per byte: token offsets are
/// byte offsets into SourceBuffer::text and columns count bytes.
class ByteStream : public antlr4::CharStream {
public:
  ByteStream(const std::string &text, std::string name)
      : data_(text), name_(std::move(name)) {}
  void consume() override {
    if (pos_ >= data_.size())
      throw antlr4::IllegalStateException("cannot consume EOF");
    ++pos_;
  }
  size_t LA(ssize_t i) override {
    if (i == 0)
      return 0;
    ssize_t at = static_cast<ssize_t>(pos_) + (i < 0 ? i : i - 1);
    if (at < 0 || static_cast<size_t>(at) >= data_.size())
      return antlr4::IntStream::EOF;
    return static_cast<unsigned char>(data_[static_cast<size_t>(at)]);
  }
  ssize_t mark() override { return -1; }
  void release(ssize_t) override {}
  size_t index() override { return pos_; }
  void seek(size_t index) override { pos_ = std::min(index, data_.size()); }
  size_t size() override { return data_.size(); }
  std::string getSourceName() const override { return name_; }
  std::string getText(const antlr4::misc::Interval &iv) override {
    if (iv.a < 0 || iv.b < iv.a || static_cast<size_t>(iv.a) >= data_.size())
      return {};
    size_t b = std::min(static_cast<size_t>(iv.b), data_.size() - 1);
    return data_.substr(static_cast<size_t>(iv.a), b - iv.a + 1);
  }
  std::string toString() const override { return data_; }

private:
  const std::string &data_;
  std::string name_;
  size_t pos_ = 0;
};

// --- Token roles -------------------------------------------------------------

TokenRole roleOf(size_t type) {
  switch (type) {
  case P::ID:
  case P::INT:
  case P::FLOAT:
  case P::STRING:
  case P::UNTERMINATED_STRING:
  case P::TRUE:
  case P::FALSE:
  case P::ELEMTYPE:
  case P::PACKED_TENSOR:
    return TokenRole::Operand;
  case P::LET:
  case P::RETURN:
  case P::YIELD:
  case P::CARRY:
  case P::IN:
  case P::COLON:
  case P::DOTDOT:
    return TokenRole::ClauseStart;
  case P::LPAREN:
    return TokenRole::OpenParen;
  case P::LBRACK:
    return TokenRole::OpenBracket;
  case P::LBRACE:
    return TokenRole::OpenBrace;
  case P::RPAREN:
    return TokenRole::CloseParen;
  case P::RBRACK:
    return TokenRole::CloseBracket;
  case P::RBRACE:
    return TokenRole::CloseBrace;
  case P::PLUS:
  case P::STAR:
  case P::SLASH:
  case P::PERCENT:
  case P::AT:
  case P::EQ:
  case P::NE:
  case P::LT:
  case P::LE:
  case P::GT:
  case P::GE:
  case P::ANDAND:
  case P::OROR:
    return TokenRole::BinaryOp;
  case P::MINUS:
    return TokenRole::Minus;
  case P::NOT:
    return TokenRole::Not;
  case P::ON:
    return TokenRole::On;
  case P::COMMA:
  case P::ASSIGN:
  case P::ARROW:
    return TokenRole::Continuation;
  case P::SEMI:
    return TokenRole::Semicolon;
  case P::NL:
    return TokenRole::Newline;
  case P::ELSE:
    return TokenRole::Else;
  case P::IMPORT:
  case P::DEVICE:
  case P::PARAM:
  case P::CONST:
  case P::FN:
    return TokenRole::ItemKeyword;
  default:
    return TokenRole::Other;
  }
}

bool isOperandEnd(TokenRole r) {
  return r == TokenRole::Operand || r == TokenRole::CloseParen ||
         r == TokenRole::CloseBracket || r == TokenRole::CloseBrace;
}

/// Feeds a chunk's tokens to the parser, then an EOF where the chunk ends.
class ChunkTokenSource : public antlr4::TokenSource {
public:
  ChunkTokenSource(Chunk &chunk, ByteStream &stream)
      : chunk_(chunk), stream_(stream) {}
  std::unique_ptr<Token> nextToken() override {
    if (next_ < chunk_.tokens.size())
      return std::move(chunk_.tokens[next_++]);
    auto eof = std::make_unique<antlr4::CommonToken>(
        std::make_pair<antlr4::TokenSource *, antlr4::CharStream *>(this,
                                                                    &stream_),
        Token::EOF, Token::DEFAULT_CHANNEL, chunk_.eofOffset,
        chunk_.eofOffset - 1);
    eof->setLine(chunk_.eofLoc.line);
    eof->setCharPositionInLine(chunk_.eofLoc.col - 1);
    return eof;
  }
  size_t getLine() const override { return chunk_.eofLoc.line; }
  size_t getCharPositionInLine() override { return chunk_.eofLoc.col - 1; }
  antlr4::CharStream *getInputStream() override { return &stream_; }
  std::string getSourceName() override { return stream_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override {
    return antlr4::CommonTokenFactory::DEFAULT.get();
  }

private:
  Chunk &chunk_;
  ByteStream &stream_;
  size_t next_ = 0;
};

/// A token stream whose buffer is sized for the chunk up front (growing it
/// token by token costs more in the allocator than the parse itself).
class ChunkTokenStream : public antlr4::CommonTokenStream {
public:
  ChunkTokenStream(antlr4::TokenSource *source, size_t tokens)
      : CommonTokenStream(source) {
    _tokens.reserve(tokens + 1);
  }
};

// --- The driver --------------------------------------------------------------

/// Receives lexer errors; with the catch-all ERROR_CHAR rule there should be
/// none, but nothing may reach the console.
class LexerErrors : public antlr4::BaseErrorListener {
public:
  LexerErrors(SyntaxErrorLog &log, uint32_t fileId)
      : log_(log), fileId_(fileId) {}
  void syntaxError(antlr4::Recognizer *, Token *, size_t line, size_t col,
                   const std::string &, std::exception_ptr) override {
    log_.add(ErrorSource::Lexer,
             {fileId_, static_cast<uint32_t>(line),
              static_cast<uint32_t>(col + 1), 1},
             "unexpected input");
  }

private:
  SyntaxErrorLog &log_;
  uint32_t fileId_;
};

/// The first, fast parse: gives up at the first error without a word (the
/// rules call reportError before recover, so it must be silenced too).
class SilentBail : public antlr4::BailErrorStrategy {
public:
  void reportError(antlr4::Parser *,
                   const antlr4::RecognitionException &) override {}
};

/// Runs the token pass and parses chunk after chunk (see the file comment).
class Driver {
public:
  Driver(const SourceBuffer &buf, SyntaxErrorLog &log, bool statements)
      : statements_(statements), buf_(buf), src_(buf), log_(log), lexerErrors_(log, buf.fileId),
        stream_(buf.text, buf.path), lexer_(&stream_), parser_(nullptr),
        packer_(buf) {
    lexer_.removeErrorListeners();
    lexer_.addErrorListener(&lexerErrors_);
    parser_.removeErrorListeners();
    parser_.addErrorListener(&lexerErrors_); // unused: ErrorReporter reports
    file_ = std::make_unique<SourceFile>();
    file_->path = buf.path;
    file_->fileId = buf.fileId;
    lastEnd_ = {buf.fileId, 1, 1, 1};
    if (statements_) {
      pendingFn_ = std::make_unique<FnItem>(Location{buf.fileId, 1, 1, 1});
      pendingFn_->name.loc = pendingFn_->loc;
    }
  }

  std::unique_ptr<SourceFile> run() {
    while (!log_.full()) {
      std::unique_ptr<Token> t = lexer_.nextToken();
      if (t->getType() == Token::EOF)
        break;
      if (packer_.active()) {
        feedPacker(std::move(t));
        continue;
      }
      if (t->getType() == P::LBRACK &&
          chunk_.rejected == Chunk::Rejection::None &&
          (pendingNewline_ || !isOperandEnd(prevRole_))) {
        packer_.start(packToken(*t));
        continue;
      }
      onToken(std::move(t));
    }
    if (log_.full()) {
      log_.markStopped();
    } else {
      if (packer_.active())
        giveBack();
      finishChunk(nullptr);
    }
    if (!log_.empty())
      return nullptr;
    return std::move(file_);
  }

private:
  void feedPacker(std::unique_ptr<Token> t) {
    switch (packer_.add(packToken(*t))) {
    case LiteralPacker::Step::More:
      return;
    case LiteralPacker::Step::Packed: {
      auto tok = makeToken(P::PACKED_TENSOR, packer_.first().start,
                           packer_.last().start + packer_.last().len,
                           packer_.first().line, packer_.first().col);
      chunk_.packed[packer_.first().start] = packer_.takeLiteral();
      onToken(std::move(tok));
      return;
    }
    case LiteralPacker::Step::GiveBack:
      giveBack();
      return;
    case LiteralPacker::Step::GiveBackBefore:
      giveBack();
      onToken(std::move(t));
      return;
    }
  }

  void giveBack() {
    bool newline = packer_.endedWithNewline();
    for (const PackToken &r : packer_.takeRecords())
      onToken(makeToken(tokenType(r.kind), r.start, r.start + r.len, r.line,
                        r.col));
    if (newline)
      atLineStart_ = true;
  }

  static PackToken packToken(const Token &t) {
    using Kind = PackToken::Kind;
    Kind kind;
    switch (t.getType()) {
    case P::LBRACK:
      kind = Kind::Open;
      break;
    case P::RBRACK:
      kind = Kind::Close;
      break;
    case P::COMMA:
      kind = Kind::Comma;
      break;
    case P::MINUS:
      kind = Kind::Minus;
      break;
    case P::INT:
      kind = Kind::Int;
      break;
    case P::FLOAT:
      kind = Kind::Float;
      break;
    case P::NL:
      kind = Kind::Newline;
      break;
    default:
      kind = Kind::Other;
      break;
    }
    return {kind, t.getStartIndex(),
            static_cast<uint32_t>(t.getStopIndex() + 1 - t.getStartIndex()),
            static_cast<uint32_t>(t.getLine()),
            static_cast<uint32_t>(t.getCharPositionInLine() + 1)};
  }
  static size_t tokenType(PackToken::Kind kind) {
    switch (kind) {
    case PackToken::Kind::Open:
      return P::LBRACK;
    case PackToken::Kind::Close:
      return P::RBRACK;
    case PackToken::Kind::Comma:
      return P::COMMA;
    case PackToken::Kind::Minus:
      return P::MINUS;
    case PackToken::Kind::Int:
      return P::INT;
    case PackToken::Kind::Float:
      return P::FLOAT;
    default:
      return P::NL; // never recorded
    }
  }

  std::unique_ptr<Token> makeToken(size_t type, size_t begin, size_t end,
                                   uint32_t line, uint32_t col) {
    auto t = std::make_unique<antlr4::CommonToken>(
        std::make_pair<antlr4::TokenSource *, antlr4::CharStream *>(&lexer_,
                                                                    &stream_),
        type, Token::DEFAULT_CHANNEL, begin, end - 1);
    t->setLine(line);
    t->setCharPositionInLine(col - 1);
    return t;
  }

  /// One token after the packer: reports lexical problems, applies the
  /// layout rules and appends what the parser must see to the chunk.
  void onToken(std::unique_ptr<Token> t) {
    size_t type = t->getType();
    if (type == P::NL) {
      atLineStart_ = true;
      if (!pendingNewline_ && layout_.newlineEndsStatement())
        pendingNewline_ = std::move(t);
      return;
    }
    if (type == P::ERROR_CHAR) {
      // Only the first stray character of a line is reported; checking
      // first keeps a file of garbage bytes fast.
      if (!log_.hasErrorOn(static_cast<uint32_t>(t->getLine())))
        log_.add(ErrorSource::Lexer, src_.loc(t.get()),
                 strayCharMessage(t->getStartIndex()));
      atLineStart_ = false;
      return;
    }
    TokenRole role = roleOf(type);
    if (role == TokenRole::ItemKeyword && atLineStart_ && chunk_.count > 0 && !statements_)
      finishChunk(t.get());
    atLineStart_ = false;
    if (pendingNewline_) {
      std::unique_ptr<Token> nl = std::move(pendingNewline_);
      // A newline before a token that only continues a construct (`else`,
      // `{`, `carry`, `->`) cannot end a statement.
      if (type != P::ELSE && type != P::LBRACE && type != P::CARRY &&
          type != P::ARROW)
        emit(std::move(nl), TokenRole::Newline);
    }
    checkToken(*t);
    Location l = src_.loc(t.get());
    lastEnd_ = {l.file, l.line, l.col + l.len, 1};
    emit(std::move(t), role);
  }

  std::string strayCharMessage(size_t offset) const {
    const std::string &text = buf_.text;
    std::string msg = "unexpected character ";
    char c = text[offset];
    char next = offset + 1 < text.size() ? text[offset + 1] : '\0';
    if (c == '\'')
      return msg + "\"'\" (strings are written with double quotes)";
    msg += describeChar(text, offset);
    if (c == '.' && next >= '0' && next <= '9')
      msg += " (write a digit before the point: 0.5)";
    return msg;
  }

  /// Reports what is wrong inside a single token.
  void checkToken(Token &t) {
    size_t type = t.getType();
    std::string_view text = src_.text(&t);
    if (type == P::UNTERMINATED_STRING) {
      log_.add(ErrorSource::Lexer, src_.loc(&t),
               "unterminated string (the closing '\"' is missing)");
      static_cast<antlr4::CommonToken &>(t).setType(P::STRING);
    } else if (type == P::STRING) {
      size_t bad;
      unescape(text, &bad);
      if (bad != std::string_view::npos) {
        Location l = src_.loc(&t);
        l.col += static_cast<uint32_t>(bad);
        l.len = 2;
        log_.add(ErrorSource::Lexer, l,
                 "unknown escape sequence '" +
                     std::string(text.substr(bad, 2)) +
                     "' in string (the escapes are \\\", \\\\ and \\n)");
      }
    } else if (type == P::INT) {
      auto v = parseDigits(text);
      bool negatedMin = v && *v == kInt64Max + 1 &&
                        prevRole_ == TokenRole::Minus &&
                        !isOperandEnd(prevPrevRole_);
      if ((!v || *v > kInt64Max) && !negatedMin)
        log_.add(ErrorSource::Lexer, src_.loc(&t), intOverflowMessage(text));
    } else if (type == P::FLOAT) {
      double d;
      if (!parseFloat(text, d))
        log_.add(ErrorSource::Lexer, src_.loc(&t),
                 "float literal " + std::string(text) +
                     " is out of range for f64");
    }
  }

  void emit(std::unique_ptr<Token> t, TokenRole role) {
    int32_t index = chunk_.count++;
    if (index == 0)
      chunk_.firstType = t->getType();
    if (prevRole_ == TokenRole::Newline || prevRole_ == TokenRole::Semicolon ||
        prevRole_ == TokenRole::OpenBrace)
      chunk_.stmtStart = static_cast<size_t>(index);
    int32_t open = layout_.innermostOpen();
    int depth = layout_.push(role, index);
    prevPrevRole_ = prevRole_;
    prevRole_ = role;
    chunk_.maxDepth = std::max(chunk_.maxDepth, depth);
    if (chunk_.rejected == Chunk::Rejection::None) {
      if (depth > kMaxNesting)
        reject(Chunk::Rejection::TooDeep, src_.loc(t.get()), *t);
      else if (chunk_.tokens.size() >= kMaxChunkTokens)
        reject(Chunk::Rejection::TooLarge,
               src_.loc(chunk_.stmtStart < chunk_.tokens.size()
                            ? chunk_.tokens[chunk_.stmtStart].get()
                            : t.get()),
               *t);
    }
    if (chunk_.rejected != Chunk::Rejection::None)
      return;
    Location nl = role == TokenRole::Newline ? src_.loc(t.get()) : Location();
    chunk_.tokens.push_back(std::move(t));
    chunk_.enclosing.push_back(open);
    if (role == TokenRole::Newline)
      maybeCutFunction(nl);
  }

  /// Gives up on parsing the chunk: stops keeping its tokens, and reports
  /// why when it ends.
  /// `current` is the token being added, not yet in the chunk.
  void reject(Chunk::Rejection why, Location where, const Token &current) {
    chunk_.rejected = why;
    chunk_.rejectLoc = where;
    // A statement usually grows without end because a bracket was left
    // open: say which.
    int32_t open = layout_.innermostOpen();
    chunk_.openNote = Location();
    if (open >= 0) {
      const Token *t = static_cast<size_t>(open) < chunk_.tokens.size()
                           ? chunk_.tokens[static_cast<size_t>(open)].get()
                           : &current;
      if (t->getType() != P::LBRACE)
        chunk_.openNote = src_.loc(t);
    }
    std::vector<std::unique_ptr<Token>>().swap(chunk_.tokens);
    std::vector<int32_t>().swap(chunk_.enclosing);
    chunk_.packed.clear();
  }

  /// Parses a large function in pieces: once the chunk holds kPieceTokens
  /// tokens and a newline has just ended a statement directly in the body
  /// of the function the chunk starts with, the statements so far are
  /// parsed and converted, and the chunk starts again from there. The
  /// memory for tokens and parse tree is then bounded by the piece, not by
  /// the function (the generated code of an imported model can be one
  /// function of a hundred megabytes).
  void maybeCutFunction(Location newline) {
    if (statements_ || chunk_.rejected != Chunk::Rejection::None ||
        chunk_.tokens.size() < kPieceTokens || !layout_.insideOneBrace() ||
        (!inPieces_ && chunk_.firstType != P::FN))
      return;
    if (!inPieces_) {
      int32_t brace = layout_.innermostOpen();
      outerBrace_ = src_.loc(chunk_.tokens[static_cast<size_t>(brace)].get());
    }
    chunk_.enclosing.push_back(layout_.innermostOpen());
    chunk_.eofLoc = {newline.file, newline.line, newline.col + 1, 1};
    chunk_.eofOffset = chunk_.tokens.back()->getStopIndex() + 1;
    chunk_.eofWhat = "end of line";
    parseChunk(inPieces_ ? Piece::Middle : Piece::Head);
    inPieces_ = true;
    chunk_.reset();
    chunk_.outerBrace = outerBrace_;
    layout_.detachOpeners();
  }

  /// Parses the chunk read so far; `next` is the item keyword that starts
  /// the next one, or null at the end of the file.
  void finishChunk(const Token *next) {
    chunk_.enclosing.push_back(layout_.innermostOpen());
    if (next) {
      chunk_.eofLoc = src_.loc(next);
      chunk_.eofOffset = next->getStartIndex();
      chunk_.eofWhat = "'" + std::string(src_.text(next)) + "'";
    } else {
      chunk_.eofLoc = lastEnd_;
      chunk_.eofOffset = buf_.text.size();
      chunk_.eofWhat = "end of file";
    }
    pendingNewline_.reset();
    switch (chunk_.rejected) {
    case Chunk::Rejection::TooDeep:
      log_.add(ErrorSource::Lexer, chunk_.rejectLoc,
               "nesting too deep (" + std::to_string(chunk_.maxDepth) +
                   " levels; the limit is " + std::to_string(kMaxNesting) + ")",
               {{{},
                 "each bracket, block, unary operator and operator of a "
                 "chain counts as a level; split the expression with "
                 "'let'"}});
      break;
    case Chunk::Rejection::TooLarge:
      if (chunk_.openNote.valid())
        log_.add(ErrorSource::Lexer, chunk_.rejectLoc,
                 "statement too large to parse (more than " +
                     std::to_string(kMaxChunkTokens) + " tokens)",
                 {{chunk_.openNote, "this bracket is still open there; is a "
                                    "closing bracket missing?"}});
      else
        log_.add(ErrorSource::Lexer, chunk_.rejectLoc,
                 "statement too large to parse (more than " +
                     std::to_string(kMaxChunkTokens) + " tokens)",
                 {{{},
                   "split it into several statements; a large constant "
                   "belongs in a weight file"}});
      break;
    case Chunk::Rejection::None:
      parseChunk(statements_ ? Piece::Middle : inPieces_ ? Piece::Tail : Piece::Whole);
      break;
    }
    pendingFn_.reset();
    inPieces_ = false;
    chunk_.reset();
    chunk_.outerBrace = Location();
    layout_.reset();
    prevRole_ = prevPrevRole_ = TokenRole::Newline;
  }

  /// What a chunk holds: whole items, or a piece of a large function.
  enum class Piece { Whole, Head, Middle, Tail };

  antlr4::ParserRuleContext *parse(Piece piece) {
    switch (piece) {
    case Piece::Whole:
      return parser_.file();
    case Piece::Head:
      return parser_.fnHead();
    case Piece::Middle:
      return parser_.fnMiddle();
    case Piece::Tail:
      return parser_.fnTail();
    }
    return nullptr;
  }

  void parseChunk(Piece piece) {
    ChunkTokenSource source(chunk_, stream_);
    ChunkTokenStream tokens(&source, chunk_.tokens.size());
    auto reporter = std::make_shared<ErrorReporter>(
        src_, chunk_, tokens, parser_.getVocabulary(), log_);
    parser_.setTokenStream(&tokens);
    auto *sim = parser_.getInterpreter<antlr4::atn::ParserATNSimulator>();
    // Fast SLL prediction first; only a chunk that fails it (almost always
    // a real syntax error) is parsed again with full LL and error reporting.
    sim->setPredictionMode(antlr4::atn::PredictionMode::SLL);
    parser_.setErrorHandler(bail_);
    antlr4::ParserRuleContext *tree = nullptr;
    try {
      tree = parse(piece);
    } catch (const antlr4::ParseCancellationException &) {
      tokens.seek(0);
      parser_.reset();
      sim->setPredictionMode(antlr4::atn::PredictionMode::LL);
      parser_.setErrorHandler(reporter);
      tree = parse(piece);
    }
    if (tree && reporter->errors == 0)
      build(piece, tree);
    else
      pendingFn_.reset(); // a broken piece: the function is not built
    if (!log_.empty()) {
      file_->items.clear(); // the file is rejected: free memory early
      pendingFn_.reset();
    }
    parser_.setTokenStream(nullptr); // frees the parse tree
    parser_.setErrorHandler(bail_);
  }

  void build(Piece piece, antlr4::ParserRuleContext *tree) {
    TreeBuilder builder(src_, chunk_, log_);
    std::vector<std::unique_ptr<Item>> items;
    switch (piece) {
    case Piece::Whole:
      builder.buildFile(static_cast<P::FileContext *>(tree), items);
      break;
    case Piece::Head:
      pendingFn_ = builder.buildHead(static_cast<P::FnHeadContext *>(tree));
      return;
    case Piece::Middle:
      if (pendingFn_)
        builder.buildMiddle(static_cast<P::FnMiddleContext *>(tree),
                            *pendingFn_);
      if (statements_ && pendingFn_ && log_.empty())
        file_->items.push_back(std::move(pendingFn_));
      return;
    case Piece::Tail:
      if (!pendingFn_)
        return;
      builder.buildTail(static_cast<P::FnTailContext *>(tree), *pendingFn_,
                        items);
      items.insert(items.begin(), std::move(pendingFn_));
      break;
    }
    if (log_.empty())
      for (auto &item : items)
        file_->items.push_back(std::move(item));
  }

  /// Tokens in a piece of a large function: about 400 KB of source and
  /// 40 MB of tokens and parse tree.
  static constexpr size_t kPieceTokens = size_t(1) << 17;
  /// Tokens in a chunk that cannot be cut (one huge statement or item):
  /// about 1 GB of tokens and parse tree.
  static constexpr size_t kMaxChunkTokens = size_t(1) << 22;

  bool statements_; // the whole buffer is statements (parseStatements)
  const SourceBuffer &buf_;
  SourceText src_;
  SyntaxErrorLog &log_;
  LexerErrors lexerErrors_;
  ByteStream stream_;
  MdlLexer lexer_;
  P parser_;
  std::shared_ptr<SilentBail> bail_ = std::make_shared<SilentBail>();
  Layout layout_;
  LiteralPacker packer_;
  Chunk chunk_;
  std::unique_ptr<Token> pendingNewline_;
  bool atLineStart_ = true;
  TokenRole prevRole_ = TokenRole::Newline;
  TokenRole prevPrevRole_ = TokenRole::Newline;
  Location lastEnd_;
  std::unique_ptr<SourceFile> file_;
  // A large function parsed in pieces.
  bool inPieces_ = false;
  std::unique_ptr<FnItem> pendingFn_;
  Location outerBrace_;
};

} // namespace

std::unique_ptr<SourceFile> parseWithAntlr(const SourceBuffer &buf,
                                           SyntaxErrorLog &log, bool statements) {
  return Driver(buf, log, statements).run();
}

} // namespace mdl::frontend::detail
