#pragma once
// The syntax tree of a parsed template: expressions and statements, each with the line
// it starts on (errors name it). The parser builds it once; rendering only reads it,
// so one tree serves any number of renders at once.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace pagoda::jinja {

// Built-in filters and tests, resolved by name when parsing (an unknown name is a
// syntax error, as in jinja2). Defined in builtins.h.
using FilterFn = Expected<Value> (*)(Interpreter& interpreter, const Value& input, CallArgs args);
using TestFn = Expected<bool> (*)(Interpreter& interpreter, const Value& input, CallArgs args);

// ---- Expressions ----

enum class ExprKind : uint8_t {
  kLiteral,
  kName,
  kList,
  kTuple,
  kDict,
  kNegate,
  kPlus,
  kNot,
  kBinary,
  kAnd,
  kOr,
  kCompare,
  kConditional,
  kAttribute,
  kItem,
  kSlice,
  kCall,
  kFilter,
  kTest,
};

// Expression trees are at most this high, and statements and brackets nest at most
// this deep: parsing, evaluating and freeing them recurse, so the parser refuses
// deeper ones (a syntax error, not a stack overflow).
constexpr int kMaxExprHeight = 128;

struct Expr {
  Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
  int height = 1;  // 1 + the height of the highest child (set by the parser)
};
using ExprPtr = std::unique_ptr<Expr>;

struct LiteralExpr : Expr {
  LiteralExpr(int l, Value v) : Expr(ExprKind::kLiteral, l), value(std::move(v)) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(int l, std::string n) : Expr(ExprKind::kName, l), name(std::move(n)) {}
  std::string name;
};

// [a, b] (kList) and (a, b) (kTuple).
struct SequenceExpr : Expr {
  using Expr::Expr;
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(ExprKind::kDict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};

// -x (kNegate), +x (kPlus), not x (kNot).
struct UnaryExpr : Expr {
  UnaryExpr(ExprKind k, int l, ExprPtr o) : Expr(k, l), operand(std::move(o)) {}
  ExprPtr operand;
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };

// Arithmetic and ~ (kBinary, with op); `and` / `or` (kAnd / kOr, short-circuit).
struct BinaryExpr : Expr {
  BinaryExpr(ExprKind k, int l, BinaryOp o, ExprPtr a, ExprPtr b)
      : Expr(k, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left;
  ExprPtr right;
};

enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

// a < b <= c: chained as Python chains them.
struct CompareExpr : Expr {
  CompareExpr(int l, ExprPtr f) : Expr(ExprKind::kCompare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

// `then if condition else otherwise`; without else, an Undefined when false.
struct ConditionalExpr : Expr {
  explicit ConditionalExpr(int l) : Expr(ExprKind::kConditional, l) {}
  ExprPtr condition;
  ExprPtr then_value;
  ExprPtr else_value;  // may be null
};

// obj.name
struct AttributeExpr : Expr {
  AttributeExpr(int l, ExprPtr o, std::string n)
      : Expr(ExprKind::kAttribute, l), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};

// obj[index]
struct ItemExpr : Expr {
  ItemExpr(int l, ExprPtr o, ExprPtr i)
      : Expr(ExprKind::kItem, l), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;
};

// obj[start:stop:step], any part may be null.
struct SliceExpr : Expr {
  SliceExpr(int l, ExprPtr o) : Expr(ExprKind::kSlice, l), object(std::move(o)) {}
  ExprPtr object;
  ExprPtr start;
  ExprPtr stop;
  ExprPtr step;
};

// f(a, b, key=c, *args, **kwargs)
struct CallArgsExpr {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;    // may be null
  ExprPtr star_kwargs;  // may be null
};

struct CallExpr : Expr {
  CallExpr(int l, ExprPtr c) : Expr(ExprKind::kCall, l), callee(std::move(c)) {}
  ExprPtr callee;
  CallArgsExpr args;
};

// operand | name(args). The operand is null in {% filter %} and {% set x | f %}
// blocks, where the block's output is the input.
struct FilterExpr : Expr {
  FilterExpr(int l, ExprPtr o, std::string n, FilterFn f)
      : Expr(ExprKind::kFilter, l), operand(std::move(o)), name(std::move(n)), fn(f) {}
  ExprPtr operand;
  std::string name;
  FilterFn fn;
  CallArgsExpr args;
};

// operand is [not] name(args)
struct TestExpr : Expr {
  TestExpr(int l, ExprPtr o, std::string n, TestFn f, bool neg)
      : Expr(ExprKind::kTest, l), operand(std::move(o)), name(std::move(n)), fn(f), negated(neg) {}
  ExprPtr operand;
  std::string name;
  TestFn fn;
  bool negated;
  CallArgsExpr args;
};

// ---- Statements ----

// Where {% set %}, {% for %} and {% with %} store: a name, a tuple of targets
// (unpacking), or an attribute of a namespace() (ns.attr).
struct AssignTarget {
  enum class Kind : uint8_t { kName, kTuple, kNamespaceAttribute };
  Kind kind = Kind::kName;
  std::string name;                 // the variable (kName), or the namespace's variable
  std::string attribute;            // kNamespaceAttribute
  std::vector<AssignTarget> items;  // kTuple
};

enum class StmtKind : uint8_t {
  kText,
  kPrint,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kWith,
  kBreak,
  kContinue,
  kScope,
};

struct Stmt {
  Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(StmtKind::kText, l), text(std::move(t)) {}
  std::string text;
};

struct PrintStmt : Stmt {
  PrintStmt(int l, ExprPtr e) : Stmt(StmtKind::kPrint, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(StmtKind::kIf, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body else_body;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(StmtKind::kFor, l) {}
  AssignTarget target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in y if cond`; may be null
  bool recursive = false;
  Body body;
  Body else_body;  // rendered when no item was iterated
};

struct SetStmt : Stmt {
  explicit SetStmt(int l) : Stmt(StmtKind::kSet, l) {}
  AssignTarget target;
  ExprPtr value;
};

// {% set x | filters %}body{% endset %}
struct SetBlockStmt : Stmt {
  explicit SetBlockStmt(int l) : Stmt(StmtKind::kSetBlock, l) {}
  AssignTarget target;
  ExprPtr filter;  // a FilterExpr chain whose innermost operand is null; may be null
  Body body;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null: a required parameter
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(StmtKind::kMacro, l) {}
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  // As in jinja2, a macro takes extra positional / keyword arguments only when its body
  // names `varargs` / `kwargs`.
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

// {% call(params) macro(args) %}body{% endcall %}: the macro's `caller()` renders body.
struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(int l) : Stmt(StmtKind::kCallBlock, l) {}
  std::unique_ptr<CallExpr> call;
  std::vector<MacroParam> caller_params;
  Body body;
};

// {% filter f | g %}body{% endfilter %}
struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::kFilterBlock, l) {}
  ExprPtr filter;  // a FilterExpr chain whose innermost operand is null
  Body body;
};

// {% with a = 1, b = 2 %}body{% endwith %}: a new scope holding the assignments.
struct WithStmt : Stmt {
  explicit WithStmt(int l) : Stmt(StmtKind::kWith, l) {}
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;
  Body body;
};

// {% generation %}body{% endgeneration %} (Hugging Face's marker of assistant text,
// which renders its body unchanged).
struct ScopeStmt : Stmt {
  explicit ScopeStmt(int l) : Stmt(StmtKind::kScope, l) {}
  Body body;
};

}  // namespace pagoda::jinja
