#pragma once
// The parser's state, shared by its statement half (parser.cpp) and its
// expression half (parse_expr.cpp). Internal to the parser.

#include <initializer_list>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace pagoda::jinja {

// How errors show a token: "'+'", "'}}'", "end of template".
std::string describe_token(const Token& token);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Expected<Body> parse_template();

 private:
  // ---- token stream ----
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool at_operator(std::string_view op) const {
    return current().kind == TokenKind::kOperator && current().text == op;
  }
  bool at_name(std::string_view name) const {
    return current().kind == TokenKind::kName && current().text == name;
  }
  bool skip_operator(std::string_view op);
  bool skip_name(std::string_view name);
  Status expect_operator(std::string_view op);
  Status expect_name(std::string_view name);
  Expected<std::string> expect_identifier();
  Status expect_block_end();
  Status fail(std::string_view what) const { return syntax_error(current().line, what); }
  Status unexpected() const;
  Status too_deep() const;

  // ---- statements (parser.cpp) ----
  // Statements until a {% name %} with a name in `end_names`; leaves that name current.
  Expected<Body> parse_body(std::initializer_list<std::string_view> end_names);
  Expected<Body> parse_body_until(std::string_view end_name);  // and consumes {% end %}
  Expected<StmtPtr> parse_statement();
  Expected<StmtPtr> parse_if();
  Expected<StmtPtr> parse_for();
  Expected<StmtPtr> parse_set();
  Expected<StmtPtr> parse_macro();
  Expected<StmtPtr> parse_call_block();
  Expected<StmtPtr> parse_filter_block();
  Expected<StmtPtr> parse_with();
  Expected<std::vector<MacroParam>> parse_signature();
  Expected<AssignTarget> parse_assign_target(bool with_namespace, std::string_view end_name);

  // ---- expressions (parse_expr.cpp) ----
 public:
  Expected<ExprPtr> parse_expression(bool with_condexpr = true);
  // A comma-separated list becomes a tuple: `{{ a, b }}`, `{% set x = 1, 2 %}`.
  Expected<ExprPtr> parse_tuple(bool with_condexpr = true,
                                std::initializer_list<std::string_view> end_names = {});
  // Filters after a value (or, with a null operand, at the start of a filter block).
  Expected<ExprPtr> parse_filters(ExprPtr operand, bool start_inline);

 private:
  Expected<ExprPtr> parse_condexpr();
  Expected<ExprPtr> parse_or();
  Expected<ExprPtr> parse_and();
  Expected<ExprPtr> parse_not();
  Expected<ExprPtr> parse_compare();
  Expected<ExprPtr> parse_math1();
  Expected<ExprPtr> parse_concat();
  Expected<ExprPtr> parse_math2();
  Expected<ExprPtr> parse_pow();
  Expected<ExprPtr> parse_unary(bool with_filter);
  Expected<ExprPtr> parse_primary();
  Expected<ExprPtr> parse_list();
  Expected<ExprPtr> parse_dict();
  Expected<ExprPtr> parse_postfix(ExprPtr node);
  Expected<ExprPtr> parse_filter_expr(ExprPtr node);
  Expected<ExprPtr> parse_subscript(ExprPtr node);
  Expected<ExprPtr> parse_test(ExprPtr node);
  Status parse_call_args(CallArgsExpr& args, int& height);
  bool is_tuple_end(std::initializer_list<std::string_view> end_names) const;
  // Sets node.height from its children's and checks it against kMaxExprHeight.
  Expected<ExprPtr> finish(ExprPtr node, int child_height);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;     // statements and parser recursion in progress
  int loop_depth_ = 0;  // enclosing {% for %} bodies, for break / continue
  friend class NestingGuard;
};

// Counts one level of parser recursion; too deep is a syntax error.
class NestingGuard {
 public:
  explicit NestingGuard(Parser& parser) : parser_(parser) { ++parser_.nesting_; }
  ~NestingGuard() { --parser_.nesting_; }
  bool too_deep() const { return parser_.nesting_ > kMaxExprHeight; }

 private:
  Parser& parser_;
};

}  // namespace pagoda::jinja
