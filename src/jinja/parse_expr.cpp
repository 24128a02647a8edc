// Expressions, by jinja2's precedence (loosest first): a if b else c, or, and, not,
// comparisons (==, !=, <, <=, >, >=, in, not in; chained), + -, ~, * / // %, **,
// unary - +, then postfix (.attr, [item], [a:b:c], call) and filters / tests.
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/parser_impl.h"

namespace pagoda::jinja {

namespace {

int height_of(const ExprPtr& e) {
  return e ? e->height : 0;
}

std::unique_ptr<BinaryExpr> binary(ExprKind kind, int line, BinaryOp op, ExprPtr a, ExprPtr b) {
  return std::make_unique<BinaryExpr>(kind, line, op, std::move(a), std::move(b));
}

}  // namespace

Expected<ExprPtr> Parser::finish(ExprPtr node, int child_height) {
  node->height = child_height + 1;
  if (node->height > kMaxExprHeight) {
    return syntax_error(node->line, "the template nests deeper than " +
                                        std::to_string(kMaxExprHeight) +
                                        " levels of brackets, expressions or blocks");
  }
  return node;
}

Expected<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

Expected<ExprPtr> Parser::parse_condexpr() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr then_value, parse_or());
  while (skip_name("if")) {
    auto node = std::make_unique<ConditionalExpr>(then_value->line);
    PAGODA_ASSIGN_OR_RETURN(node->condition, parse_or());
    if (skip_name("else")) {
      NestingGuard guard(*this);
      if (guard.too_deep()) return too_deep();
      PAGODA_ASSIGN_OR_RETURN(node->else_value, parse_condexpr());
    }
    node->then_value = std::move(then_value);
    const int h = std::max(
        {height_of(node->condition), height_of(node->then_value), height_of(node->else_value)});
    PAGODA_ASSIGN_OR_RETURN(then_value, finish(std::move(node), h));
  }
  return then_value;
}

Expected<ExprPtr> Parser::parse_or() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (at_name("or")) {
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    const int h = std::max(left->height, right->height);
    PAGODA_ASSIGN_OR_RETURN(
        left,
        finish(binary(ExprKind::kOr, line, BinaryOp::kAdd, std::move(left), std::move(right)), h));
  }
  return left;
}

Expected<ExprPtr> Parser::parse_and() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (at_name("and")) {
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    const int h = std::max(left->height, right->height);
    PAGODA_ASSIGN_OR_RETURN(
        left,
        finish(binary(ExprKind::kAnd, line, BinaryOp::kAdd, std::move(left), std::move(right)), h));
  }
  return left;
}

Expected<ExprPtr> Parser::parse_not() {
  if (!at_name("not")) return parse_compare();
  const int line = current().line;
  advance();
  NestingGuard guard(*this);
  if (guard.too_deep()) return too_deep();
  PAGODA_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
  const int h = operand->height;
  return finish(std::make_unique<UnaryExpr>(ExprKind::kNot, line, std::move(operand)), h);
}

Expected<ExprPtr> Parser::parse_compare() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
  std::unique_ptr<CompareExpr> node;
  int h = first->height;
  while (true) {
    CompareOp op;
    const Token& token = current();
    if (token.kind == TokenKind::kOperator && token.text == "==")
      op = CompareOp::kEq;
    else if (token.kind == TokenKind::kOperator && token.text == "!=")
      op = CompareOp::kNe;
    else if (token.kind == TokenKind::kOperator && token.text == "<")
      op = CompareOp::kLt;
    else if (token.kind == TokenKind::kOperator && token.text == "<=")
      op = CompareOp::kLe;
    else if (token.kind == TokenKind::kOperator && token.text == ">")
      op = CompareOp::kGt;
    else if (token.kind == TokenKind::kOperator && token.text == ">=")
      op = CompareOp::kGe;
    else if (at_name("in"))
      op = CompareOp::kIn;
    else if (at_name("not") && peek().kind == TokenKind::kName && peek().text == "in")
      op = CompareOp::kNotIn;
    else
      break;
    advance();
    if (op == CompareOp::kNotIn) advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
    if (!node) node = std::make_unique<CompareExpr>(first->line, nullptr);
    h = std::max(h, operand->height) + 1;  // a chain costs a level per link when evaluated
    node->rest.emplace_back(op, std::move(operand));
  }
  if (!node) return first;
  node->first = std::move(first);
  return finish(std::move(node), h);
}

Expected<ExprPtr> Parser::parse_math1() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  while (at_operator("+") || at_operator("-")) {
    const BinaryOp op = current().text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    const int h = std::max(left->height, right->height);
    PAGODA_ASSIGN_OR_RETURN(
        left, finish(binary(ExprKind::kBinary, line, op, std::move(left), std::move(right)), h));
  }
  return left;
}

Expected<ExprPtr> Parser::parse_concat() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  while (at_operator("~")) {
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    const int h = std::max(left->height, right->height);
    PAGODA_ASSIGN_OR_RETURN(left, finish(binary(ExprKind::kBinary, line, BinaryOp::kConcat,
                                                std::move(left), std::move(right)),
                                         h));
  }
  return left;
}

Expected<ExprPtr> Parser::parse_math2() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
    const std::string& text = current().text;
    const BinaryOp op = text == "*"    ? BinaryOp::kMul
                        : text == "/"  ? BinaryOp::kDiv
                        : text == "//" ? BinaryOp::kFloorDiv
                                       : BinaryOp::kMod;
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    const int h = std::max(left->height, right->height);
    PAGODA_ASSIGN_OR_RETURN(
        left, finish(binary(ExprKind::kBinary, line, op, std::move(left), std::move(right)), h));
  }
  return left;
}

// Left-associative, as in jinja2 (2 ** 3 ** 2 == 64).
Expected<ExprPtr> Parser::parse_pow() {
  PAGODA_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  while (at_operator("**")) {
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    const int h = std::max(left->height, right->height);
    PAGODA_ASSIGN_OR_RETURN(left, finish(binary(ExprKind::kBinary, line, BinaryOp::kPow,
                                                std::move(left), std::move(right)),
                                         h));
  }
  return left;
}

// -x and +x bind tighter than filters: -x|abs is abs(-x).
Expected<ExprPtr> Parser::parse_unary(bool with_filter) {
  NestingGuard guard(*this);
  if (guard.too_deep()) return too_deep();
  ExprPtr node;
  if (at_operator("-") || at_operator("+")) {
    const ExprKind kind = current().text == "-" ? ExprKind::kNegate : ExprKind::kPlus;
    const int line = current().line;
    advance();
    PAGODA_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    const int h = operand->height;
    PAGODA_ASSIGN_OR_RETURN(node,
                            finish(std::make_unique<UnaryExpr>(kind, line, std::move(operand)), h));
  } else {
    PAGODA_ASSIGN_OR_RETURN(node, parse_primary());
  }
  PAGODA_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
  if (with_filter) return parse_filter_expr(std::move(node));
  return node;
}

Expected<ExprPtr> Parser::parse_primary() {
  const Token& token = current();
  const int line = token.line;
  switch (token.kind) {
    case TokenKind::kName: {
      const std::string name = token.text;
      advance();
      if (name == "true" || name == "True")
        return ExprPtr(std::make_unique<LiteralExpr>(line, Value(true)));
      if (name == "false" || name == "False")
        return ExprPtr(std::make_unique<LiteralExpr>(line, Value(false)));
      if (name == "none" || name == "None")
        return ExprPtr(std::make_unique<LiteralExpr>(line, Value(None{})));
      return ExprPtr(std::make_unique<NameExpr>(line, name));
    }
    case TokenKind::kString: {
      std::string text;
      while (current().kind == TokenKind::kString) {  // 'a' 'b' is 'ab'
        text += current().text;
        advance();
      }
      return ExprPtr(std::make_unique<LiteralExpr>(line, Value(std::move(text))));
    }
    case TokenKind::kInteger: {
      const int64_t value = token.integer;
      advance();
      return ExprPtr(std::make_unique<LiteralExpr>(line, Value(value)));
    }
    case TokenKind::kFloat: {
      const double value = token.number;
      advance();
      return ExprPtr(std::make_unique<LiteralExpr>(line, Value(value)));
    }
    case TokenKind::kOperator:
      if (token.text == "(") {
        advance();
        PAGODA_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true, {}));
        PAGODA_TRY(expect_operator(")"));
        return inner;
      }
      if (token.text == "[") return parse_list();
      if (token.text == "{") return parse_dict();
      break;
    default:
      break;
  }
  return unexpected();
}

bool Parser::is_tuple_end(std::initializer_list<std::string_view> end_names) const {
  const Token& token = current();
  if (token.kind == TokenKind::kVariableEnd || token.kind == TokenKind::kBlockEnd ||
      token.kind == TokenKind::kEnd || (token.kind == TokenKind::kOperator && token.text == ")")) {
    return true;
  }
  for (std::string_view name : end_names) {
    if (at_name(name)) return true;
  }
  return false;
}

Expected<ExprPtr> Parser::parse_tuple(bool with_condexpr,
                                      std::initializer_list<std::string_view> end_names) {
  const int line = current().line;
  auto tuple = std::make_unique<SequenceExpr>(ExprKind::kTuple, line);
  bool is_tuple = false;
  int h = 0;
  while (true) {
    if (!tuple->items.empty()) PAGODA_TRY(expect_operator(","));
    if (is_tuple_end(end_names)) break;
    PAGODA_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
    h = std::max(h, item->height);
    tuple->items.push_back(std::move(item));
    if (!at_operator(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!tuple->items.empty()) return std::move(tuple->items.front());
    // Only "()" may be an empty tuple.
    if (!at_operator(")")) return fail("expected an expression, got " + describe_token(current()));
  }
  return finish(std::move(tuple), h);
}

Expected<ExprPtr> Parser::parse_list() {
  auto list = std::make_unique<SequenceExpr>(ExprKind::kList, current().line);
  PAGODA_TRY(expect_operator("["));
  int h = 0;
  while (!at_operator("]")) {
    if (!list->items.empty()) PAGODA_TRY(expect_operator(","));
    if (at_operator("]")) break;  // trailing comma
    PAGODA_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
    h = std::max(h, item->height);
    list->items.push_back(std::move(item));
  }
  PAGODA_TRY(expect_operator("]"));
  return finish(std::move(list), h);
}

Expected<ExprPtr> Parser::parse_dict() {
  auto dict = std::make_unique<DictExpr>(current().line);
  PAGODA_TRY(expect_operator("{"));
  int h = 0;
  while (!at_operator("}")) {
    if (!dict->entries.empty()) PAGODA_TRY(expect_operator(","));
    if (at_operator("}")) break;
    PAGODA_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
    PAGODA_TRY(expect_operator(":"));
    PAGODA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
    h = std::max({h, key->height, value->height});
    dict->entries.emplace_back(std::move(key), std::move(value));
  }
  PAGODA_TRY(expect_operator("}"));
  return finish(std::move(dict), h);
}

}  // namespace pagoda::jinja
