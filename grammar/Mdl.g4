// The grammar of mdl (see LANGUAGE.md), lexer and parser.
//
// The lexer emits every newline as an NL token; the token pass in
// frontend/AntlrDriver.cpp drops the ones that cannot end a statement (inside
// `()` and `[]`, after a binary operator, `on`, a comma, `=`, `->` or `{`,
// before `else`, `{`, `carry` or `->`) and collapses runs, so the parser
// only sees an NL where a statement may end and the rules below treat it as
// an ordinary separator. The token pass also drops ERROR_CHAR tokens after
// reporting them, and may fold a large numeric tensor literal into one
// PACKED_TENSOR token.
//
// Expressions use ANTLR's left-recursive rule form, which builds one context
// per operator instead of one per precedence level; earlier alternatives bind
// tighter. Comparisons are left-associative here and the AST builder rejects
// a chained comparison with a precise message.
grammar Mdl;

// Never produced by the lexer: the token pass folds a large tensor literal
// made only of numbers (`[[1.0, -2.0], ...]`, thousands of elements) into one
// token and builds its AST directly, so huge inline constants do not cost a
// parse-tree node per number.
tokens { PACKED_TENSOR }

// ---- Items --------------------------------------------------------------------

file : sep* (item (sep+ item)*)? sep* EOF ;

// A function too large to parse at once is parsed in pieces cut after a
// newline in its body (see AntlrDriver.cpp): its header with the first
// statements, runs of statements, then the last ones, the closing brace and
// whatever follows on that line.
fnHead : fnHeader LBRACE sep* (stmt (sep+ stmt)* sep*)? EOF ;
fnMiddle : sep* (stmt (sep+ stmt)* sep*)? EOF ;
fnTail : sep* (stmt (sep+ stmt)* sep*)? RBRACE (sep+ item)* sep* EOF ;

sep : NL | SEMI ;

item
  : IMPORT STRING                                            # importItem
  | DEVICE name=ID ASSIGN kind=ID LPAREN argList? RPAREN     # deviceItem
  | CONST ID ASSIGN expr                                     # constItem
  | PARAM name=ID COLON type (ON device=ID)? ASSIGN expr     # paramItem
  | fnHeader block                                           # fnItem
  ;

fnHeader : FN ID LPAREN (fnParam (COMMA fnParam)* COMMA?)? RPAREN
           (ARROW results)? ;

fnParam : ID COLON type ;

results
  : type                                                     # singleResult
  | LPAREN type (COMMA type)* COMMA? RPAREN                  # tupleResult
  ;

// `f32`, `f32[4, B]` in a declaration. A type in an expression is a
// separate alternative of `primary`: there `f32 [` could also start an
// index, while here `[` always starts the shape, which keeps the error
// messages inside a shape precise.
type : ELEMTYPE shape? ;

shape : LBRACK (dim (COMMA dim)* COMMA?)? RBRACK ;

dim : INT | ID ;

// ---- Statements ---------------------------------------------------------------

block : LBRACE sep* (stmt (sep+ stmt)* sep*)? RBRACE ;

stmt
  : LET (ID (COLON type)? | LPAREN ID (COMMA ID)* COMMA? RPAREN)
    ASSIGN expr                                              # letStmt
  | ON ID block                                              # onStmt
  | RETURN exprList?                                         # returnStmt
  | YIELD exprList?                                          # yieldStmt
  | expr                                                     # exprStmt
  ;

exprList : expr (COMMA expr)* ;

// ---- Expressions --------------------------------------------------------------

expr
  : primary                                                  # primaryExpr
  | expr LBRACK indexItem (COMMA indexItem)* COMMA? RBRACK   # indexExpr
  | op=(MINUS | NOT) expr                                    # unaryExpr
  | expr op=(STAR | SLASH | PERCENT | AT) expr               # binaryExpr
  | expr op=(PLUS | MINUS) expr                              # binaryExpr
  | expr op=(EQ | NE | LT | LE | GT | GE) expr               # compareExpr
  | expr op=ANDAND expr                                      # binaryExpr
  | expr op=OROR expr                                        # binaryExpr
  | expr ON ID                                               # onExpr
  ;

primary
  : INT                                                      # intLit
  | FLOAT                                                    # floatLit
  | STRING                                                   # stringLit
  | (TRUE | FALSE)                                           # boolLit
  | ID LPAREN argList? RPAREN                                # callExpr
  | ID                                                       # nameExpr
  | ELEMTYPE shape?                                          # typeExpr
  | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK               # tensorLit
  | PACKED_TENSOR                                            # packedTensorLit
  | LPAREN expr RPAREN                                       # parenExpr
  | ifExpr                                                   # ifPrimary
  | FOR ID IN lo=expr DOTDOT hi=expr carryList? block        # forExpr
  | WHILE expr carryList? block                              # whileExpr
  ;

// `else if` chains nest: the else branch is a block or another ifExpr.
ifExpr : IF expr block (ELSE (block | ifExpr))? ;

argList : arg (COMMA arg)* COMMA? ;

arg : (ID ASSIGN)? expr ;

carryList : CARRY LPAREN carry (COMMA carry)* COMMA? RPAREN ;

carry : ID ASSIGN expr ;

// `x[i]`, `x[a:b]`, `x[::2]`, `x[..., 0]`
indexItem
  : ELLIPSIS                                                 # ellipsisIndex
  | expr sliceTail?                                          # exprIndex
  | sliceTail                                                # openSliceIndex
  ;

sliceTail : COLON upper=expr? (COLON step=expr?)? ;

// ---- Lexer --------------------------------------------------------------------

IMPORT : 'import' ;
DEVICE : 'device' ;
PARAM : 'param' ;
CONST : 'const' ;
FN : 'fn' ;
LET : 'let' ;
RETURN : 'return' ;
ON : 'on' ;
IF : 'if' ;
ELSE : 'else' ;
FOR : 'for' ;
WHILE : 'while' ;
IN : 'in' ;
CARRY : 'carry' ;
YIELD : 'yield' ;
TRUE : 'true' ;
FALSE : 'false' ;
ELEMTYPE : 'bool' | 'i8' | 'u8' | 'i32' | 'i64' | 'f16' | 'bf16' | 'f32' | 'f64' ;

ID : [A-Za-z_] [A-Za-z0-9_]* ;

// `2.` is a float, but in `0..3` the first dot belongs to `..`: a dot
// followed by another dot never continues a number. The action gives the
// dot back and makes the token an INT. (A predicate after the dot would say
// the same, but it stops the lexer from caching DFA edges there, which made
// lexing a third slower.)
FLOAT
  : ( DIGITS '.' DIGITS? EXPONENT?
    | DIGITS EXPONENT
    ) { if (_input->LA(-1) == '.' && _input->LA(1) == '.') {
          _input->seek(_input->index() - 1);
          setCharPositionInLine(getCharPositionInLine() - 1);
          setType(INT);
        } }
  ;
INT : DIGITS ;

STRING : '"' (ESCAPE | ~["\\\r\n])* '"' ;
// Reported by the token pass with a clear message.
UNTERMINATED_STRING : '"' (ESCAPE | ~["\\\r\n])* ;

ELLIPSIS : '...' ;
DOTDOT : '..' ;
ARROW : '->' ;
EQ : '==' ;
NE : '!=' ;
LE : '<=' ;
GE : '>=' ;
ANDAND : '&&' ;
OROR : '||' ;
LT : '<' ;
GT : '>' ;
ASSIGN : '=' ;
NOT : '!' ;
PLUS : '+' ;
MINUS : '-' ;
STAR : '*' ;
SLASH : '/' ;
PERCENT : '%' ;
AT : '@' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACK : '[' ;
RBRACK : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
COMMA : ',' ;
COLON : ':' ;
SEMI : ';' ;

NL : '\r'? '\n' ;
WS : [ \t\r\f]+ -> skip ;
COMMENT : '#' ~[\r\n]* -> skip ;

// Any other character; the token pass reports it and drops it.
ERROR_CHAR : . ;

fragment DIGITS : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
fragment ESCAPE : '\\' ~[\r\n] ;
