// Statements and the token stream helpers of the parser.
#include "jinja/parser.h"

#include "jinja/parser_impl.h"

namespace pagoda::jinja {

std::string describe_token(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd:
      return "end of template";
    case TokenKind::kText:
      return "template text";
    case TokenKind::kVariableBegin:
      return "'{{'";
    case TokenKind::kVariableEnd:
      return "'}}'";
    case TokenKind::kBlockBegin:
      return "'{%'";
    case TokenKind::kBlockEnd:
      return "'%}'";
    case TokenKind::kString:
      return "string";
    default:
      return quote(token.text);
  }
}

namespace {
std::string describe(const Token& token) {
  return describe_token(token);
}
}  // namespace

Expected<Body> parse_tokens(std::vector<Token> tokens) {
  return Parser(std::move(tokens)).parse_template();
}

bool Parser::skip_operator(std::string_view op) {
  if (!at_operator(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  advance();
  return true;
}

Status Parser::expect_operator(std::string_view op) {
  if (skip_operator(op)) return {};
  return fail("expected '" + std::string(op) + "', got " + describe(current()));
}

Status Parser::expect_name(std::string_view name) {
  if (skip_name(name)) return {};
  return fail("expected '" + std::string(name) + "', got " + describe(current()));
}

Expected<std::string> Parser::expect_identifier() {
  if (current().kind != TokenKind::kName)
    return fail("expected a name, got " + describe(current()));
  std::string name = current().text;
  advance();
  return name;
}

Status Parser::expect_block_end() {
  if (current().kind == TokenKind::kBlockEnd) {
    advance();
    return {};
  }
  return fail("expected end of statement '%}', got " + describe(current()));
}

Status Parser::unexpected() const {
  return fail("unexpected " + describe(current()));
}

Status Parser::too_deep() const {
  return fail("the template nests deeper than " + std::to_string(kMaxExprHeight) +
              " levels of brackets, expressions or blocks");
}

Expected<Body> Parser::parse_template() {
  PAGODA_ASSIGN_OR_RETURN(Body body, parse_body({}));
  if (current().kind != TokenKind::kEnd) {
    return fail("unexpected '" + current().text + "': no open block ends here");
  }
  return body;
}

Expected<Body> Parser::parse_body(std::initializer_list<std::string_view> end_names) {
  NestingGuard guard(*this);
  if (guard.too_deep()) return too_deep();
  Body body;
  while (current().kind != TokenKind::kEnd) {
    const Token& token = current();
    if (token.kind == TokenKind::kText) {
      body.push_back(std::make_unique<TextStmt>(token.line, token.text));
      advance();
    } else if (token.kind == TokenKind::kVariableBegin) {
      const int line = token.line;
      advance();
      PAGODA_ASSIGN_OR_RETURN(ExprPtr expr, parse_tuple());
      if (current().kind != TokenKind::kVariableEnd)
        return fail("expected '}}', got " + describe(current()));
      advance();
      body.push_back(std::make_unique<PrintStmt>(line, std::move(expr)));
    } else if (token.kind == TokenKind::kBlockBegin) {
      advance();
      for (std::string_view name : end_names) {
        if (at_name(name)) return body;
      }
      PAGODA_ASSIGN_OR_RETURN(StmtPtr stmt, parse_statement());
      body.push_back(std::move(stmt));
    } else {
      return unexpected();
    }
  }
  if (end_names.size() != 0) {
    std::string names;
    for (std::string_view name : end_names)
      names += (names.empty() ? "'" : " or '") + std::string(name) + "'";
    return fail("unexpected end of template: expected " + names);
  }
  return body;
}

Expected<Body> Parser::parse_body_until(std::string_view end_name) {
  skip_operator(":");
  PAGODA_TRY(expect_block_end());
  PAGODA_ASSIGN_OR_RETURN(Body body, parse_body({end_name}));
  advance();  // the end name
  return body;
}

Expected<StmtPtr> Parser::parse_statement() {
  const Token& token = current();
  if (token.kind != TokenKind::kName) return fail("tag name expected");
  const std::string tag = token.text;
  const int line = token.line;
  Expected<StmtPtr> stmt = invalid_argument("");
  if (tag == "if")
    stmt = parse_if();
  else if (tag == "for")
    stmt = parse_for();
  else if (tag == "set")
    stmt = parse_set();
  else if (tag == "macro")
    stmt = parse_macro();
  else if (tag == "call")
    stmt = parse_call_block();
  else if (tag == "filter")
    stmt = parse_filter_block();
  else if (tag == "with")
    stmt = parse_with();
  else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return fail("'" + tag + "' outside of a loop");
    advance();
    stmt = std::make_unique<Stmt>(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, line);
  } else if (tag == "generation") {
    advance();
    auto scope = std::make_unique<ScopeStmt>(line);
    PAGODA_ASSIGN_OR_RETURN(scope->body, parse_body_until("endgeneration"));
    stmt = StmtPtr(std::move(scope));
  } else if (tag == "extends" || tag == "include" || tag == "import" || tag == "from" ||
             tag == "block") {
    return fail("'" + tag + "' is not supported: a chat template must be self-contained");
  } else {
    return fail("unknown tag '" + tag + "'");
  }
  if (!stmt.ok()) return stmt;
  PAGODA_TRY(expect_block_end());
  return stmt;
}

Expected<StmtPtr> Parser::parse_if() {
  auto stmt = std::make_unique<IfStmt>(current().line);
  advance();
  while (true) {
    PAGODA_ASSIGN_OR_RETURN(ExprPtr condition, parse_tuple(false));
    skip_operator(":");
    PAGODA_TRY(expect_block_end());
    PAGODA_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}));
    stmt->branches.emplace_back(std::move(condition), std::move(body));
    if (skip_name("elif")) continue;
    if (skip_name("else")) {
      PAGODA_ASSIGN_OR_RETURN(stmt->else_body, parse_body_until("endif"));
    } else {
      advance();  // endif
    }
    return StmtPtr(std::move(stmt));
  }
}

Expected<StmtPtr> Parser::parse_for() {
  auto stmt = std::make_unique<ForStmt>(current().line);
  advance();
  PAGODA_ASSIGN_OR_RETURN(stmt->target, parse_assign_target(false, "in"));
  PAGODA_TRY(expect_name("in"));
  PAGODA_ASSIGN_OR_RETURN(stmt->iterable, parse_tuple(false, {"recursive"}));
  if (skip_name("if")) {
    PAGODA_ASSIGN_OR_RETURN(stmt->filter, parse_expression());
  }
  stmt->recursive = skip_name("recursive");
  skip_operator(":");
  PAGODA_TRY(expect_block_end());
  ++loop_depth_;
  Expected<Body> body = parse_body({"endfor", "else"});
  --loop_depth_;
  if (!body.ok()) return std::move(body).take_status();
  stmt->body = std::move(body).value();
  if (skip_name("else")) {
    // The else body runs outside the loop: no break / continue there.
    const int saved = loop_depth_;
    loop_depth_ = 0;
    Expected<Body> else_body = parse_body_until("endfor");
    loop_depth_ = saved;
    if (!else_body.ok()) return std::move(else_body).take_status();
    stmt->else_body = std::move(else_body).value();
  } else {
    advance();  // endfor
  }
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parse_set() {
  const int line = current().line;
  advance();
  PAGODA_ASSIGN_OR_RETURN(AssignTarget target, parse_assign_target(true, ""));
  if (skip_operator("=")) {
    auto stmt = std::make_unique<SetStmt>(line);
    stmt->target = std::move(target);
    PAGODA_ASSIGN_OR_RETURN(stmt->value, parse_tuple());
    return StmtPtr(std::move(stmt));
  }
  if (target.kind != AssignTarget::Kind::kName) return fail("a block {% set %} assigns one name");
  auto stmt = std::make_unique<SetBlockStmt>(line);
  stmt->target = std::move(target);
  if (at_operator("|")) {
    PAGODA_ASSIGN_OR_RETURN(stmt->filter, parse_filters(nullptr, false));
  }
  PAGODA_ASSIGN_OR_RETURN(stmt->body, parse_body_until("endset"));
  return StmtPtr(std::move(stmt));
}

// A name, `a, b` / `(a, b)` (unpacking), or with_namespace, `ns.attr`.
Expected<AssignTarget> Parser::parse_assign_target(bool with_namespace, std::string_view end_name) {
  NestingGuard guard(*this);
  if (guard.too_deep()) return too_deep();
  AssignTarget tuple;
  tuple.kind = AssignTarget::Kind::kTuple;
  bool is_tuple = false;
  while (true) {
    AssignTarget item;
    if (skip_operator("(")) {
      PAGODA_ASSIGN_OR_RETURN(item, parse_assign_target(false, ""));
      PAGODA_TRY(expect_operator(")"));
    } else {
      PAGODA_ASSIGN_OR_RETURN(item.name, expect_identifier());
      if (item.name == "true" || item.name == "false" || item.name == "none" ||
          item.name == "True" || item.name == "False" || item.name == "None") {
        return fail("can't assign to '" + item.name + "'");
      }
      if (with_namespace && skip_operator(".")) {
        item.kind = AssignTarget::Kind::kNamespaceAttribute;
        PAGODA_ASSIGN_OR_RETURN(item.attribute, expect_identifier());
      }
    }
    tuple.items.push_back(std::move(item));
    if (!skip_operator(",")) break;
    is_tuple = true;
    if (current().kind == TokenKind::kBlockEnd || (!end_name.empty() && at_name(end_name)) ||
        at_operator("=") || at_operator(")")) {
      break;  // trailing comma
    }
  }
  if (!is_tuple) return std::move(tuple.items.front());
  for (const AssignTarget& item : tuple.items) {
    if (item.kind == AssignTarget::Kind::kNamespaceAttribute)
      return fail("can't assign to a namespace attribute in a tuple");
  }
  return tuple;
}

}  // namespace pagoda::jinja
