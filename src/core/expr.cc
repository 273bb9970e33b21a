// Axis expressions: a hand-written lexer, a recursive-descent parser with
// Python's precedence, and a tree evaluator on checked int64 arithmetic.
//
// Precedence, loosest first (as in Python):
//   or < and < not < comparisons (chained) < + - < * / // % < unary + - < **
// `**` is right-associative and binds tighter than a unary operator on its
// left (-2**2 == -4) but takes a unary operand on its right (2**-1).
#include "core/expr.h"

#include <cctype>
#include <limits>
#include <string>
#include <utility>

namespace solbench {

namespace detail {

enum class NodeKind {
  Number,   // value
  Axis,     // name
  Unary,    // op, kids[0]
  Binary,   // op, kids[0], kids[1]
  Compare,  // kids[0] ops[0] kids[1] ops[1] kids[2] ...
  And,      // kids[0], kids[1]
  Or,       // kids[0], kids[1]
  Not,      // kids[0]
};

enum class Op { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Neg, Pos, Eq, Ne, Lt, Le, Gt, Ge };

struct Node {
  NodeKind kind;
  size_t pos = 0;  // offset of the operator (or operand) in the text, for errors
  int64_t value = 0;
  std::string name;
  Op op = Op::Add;
  std::vector<Op> ops;        // Compare only
  std::vector<size_t> op_pos; // Compare only: offsets of the operators
  std::vector<std::unique_ptr<Node>> kids;
};

}  // namespace detail

namespace {

using detail::Node;
using detail::NodeKind;
using detail::Op;

std::string at(size_t pos) { return " at offset " + std::to_string(pos); }

// ---------------------------------------------------------------- lexer

enum class Tok {
  End, Number, Name, LParen, RParen,
  Plus, Minus, Star, Slash, SlashSlash, Percent, StarStar,
  EqEq, NotEq, Lt, Le, Gt, Ge,
  And, Or, Not, True, False,
};

struct Token {
  Tok kind = Tok::End;
  size_t pos = 0;
  std::string_view text;
  int64_t value = 0;
};

std::string describe(const Token& t) {
  if (t.kind == Tok::End) return "end of expression";
  return "'" + std::string(t.text) + "'";
}

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (true) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    Token t;
    t.pos = i;
    if (i == s.size()) {
      out.push_back(t);
      return out;
    }
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      int64_t v = 0;
      bool overflow = false;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
        overflow |= __builtin_mul_overflow(v, int64_t{10}, &v);
        overflow |= __builtin_add_overflow(v, int64_t{s[j] - '0'}, &v);
        ++j;
      }
      // "2x" would silently read as "2" followed by a name; Python rejects it too.
      if (j < s.size() && (ident_char(s[j]) || s[j] == '.'))
        throw ExprError("invalid number literal '" + std::string(s.substr(i, j + 1 - i)) +
                            "'" + at(i) + " (only integers are allowed)",
                        i);
      if (overflow)
        throw ExprError("integer literal " + std::string(s.substr(i, j - i)) +
                            " does not fit in 64 bits" + at(i),
                        i);
      t.kind = Tok::Number;
      t.value = v;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (ident_start(c)) {
      size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      t.text = s.substr(i, j - i);
      if (t.text == "and") t.kind = Tok::And;
      else if (t.text == "or") t.kind = Tok::Or;
      else if (t.text == "not") t.kind = Tok::Not;
      else if (t.text == "True") t.kind = Tok::True;
      else if (t.text == "False") t.kind = Tok::False;
      else t.kind = Tok::Name;
      i = j;
    } else {
      auto two = [&](char next) { return i + 1 < s.size() && s[i + 1] == next; };
      size_t len = 1;
      switch (c) {
        case '(': t.kind = Tok::LParen; break;
        case ')': t.kind = Tok::RParen; break;
        case '+': t.kind = Tok::Plus; break;
        case '-': t.kind = Tok::Minus; break;
        case '%': t.kind = Tok::Percent; break;
        case '*':
          if (two('*')) { t.kind = Tok::StarStar; len = 2; }
          else t.kind = Tok::Star;
          break;
        case '/':
          if (two('/')) { t.kind = Tok::SlashSlash; len = 2; }
          else t.kind = Tok::Slash;
          break;
        case '<':
          if (two('=')) { t.kind = Tok::Le; len = 2; }
          else t.kind = Tok::Lt;
          break;
        case '>':
          if (two('=')) { t.kind = Tok::Ge; len = 2; }
          else t.kind = Tok::Gt;
          break;
        case '=':
          if (!two('=')) throw ExprError("unexpected '='" + at(i) + " (use '==' to compare)", i);
          t.kind = Tok::EqEq;
          len = 2;
          break;
        case '!':
          if (!two('=')) throw ExprError("unexpected '!'" + at(i) + " (use 'not' or '!=')", i);
          t.kind = Tok::NotEq;
          len = 2;
          break;
        default: {
          const auto u = static_cast<unsigned char>(c);
          static constexpr char kHex[] = "0123456789abcdef";
          const std::string shown = (u >= 0x20 && u < 0x7f)
                                        ? std::string(1, c)
                                        : std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
          throw ExprError("unexpected character '" + shown + "'" + at(i), i);
        }
      }
      t.text = s.substr(i, len);
      i += len;
    }
    out.push_back(t);
  }
}

// ---------------------------------------------------------------- parser

class Parser {
 public:
  explicit Parser(std::string_view text) : toks_(lex(text)) {}

  std::unique_ptr<Node> parse_all() {
    auto n = parse_or();
    if (peek().kind != Tok::End)
      throw ExprError("unexpected " + describe(peek()) + at(peek().pos) +
                          ", expected an operator or end of expression",
                      peek().pos);
    return n;
  }

 private:
  // Recursion depth bound: each nesting level costs a few stack frames, and an
  // expression comes from a user file, so a pathological one must not crash us.
  static constexpr int kMaxDepth = 200;
  static constexpr size_t kMaxNodes = 10000;

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth)
        throw ExprError("expression nested too deeply" + at(p.peek().pos), p.peek().pos);
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token& peek() const { return toks_[i_]; }
  Token next() { return toks_[i_ == toks_.size() - 1 ? i_ : i_++]; }

  std::unique_ptr<Node> make(NodeKind k, size_t pos) {
    // Left-associative chains (1+1+...+1) build deep trees without deep
    // parsing; bounding the node count bounds evaluation and destruction depth.
    if (++nodes_ > kMaxNodes)
      throw ExprError("expression too long (more than " + std::to_string(kMaxNodes) +
                          " terms)" + at(pos),
                      pos);
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->pos = pos;
    return n;
  }
  std::unique_ptr<Node> binary(NodeKind k, Op op, size_t pos, std::unique_ptr<Node> l,
                                      std::unique_ptr<Node> r) {
    auto n = make(k, pos);
    n->op = op;
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }

  std::unique_ptr<Node> parse_or() {
    DepthGuard g(*this);
    auto l = parse_and();
    while (peek().kind == Tok::Or) {
      size_t pos = next().pos;
      l = binary(NodeKind::Or, Op::Add, pos, std::move(l), parse_and());
    }
    return l;
  }

  std::unique_ptr<Node> parse_and() {
    auto l = parse_not();
    while (peek().kind == Tok::And) {
      size_t pos = next().pos;
      l = binary(NodeKind::And, Op::Add, pos, std::move(l), parse_not());
    }
    return l;
  }

  std::unique_ptr<Node> parse_not() {
    if (peek().kind == Tok::Not) {
      DepthGuard g(*this);
      auto n = make(NodeKind::Not, next().pos);
      n->kids.push_back(parse_not());
      return n;
    }
    return parse_comparison();
  }

  static bool compare_op(Tok k, Op* op) {
    switch (k) {
      case Tok::EqEq: *op = Op::Eq; return true;
      case Tok::NotEq: *op = Op::Ne; return true;
      case Tok::Lt: *op = Op::Lt; return true;
      case Tok::Le: *op = Op::Le; return true;
      case Tok::Gt: *op = Op::Gt; return true;
      case Tok::Ge: *op = Op::Ge; return true;
      default: return false;
    }
  }

  // a < b <= c is one node so that b is evaluated once and the chain
  // short-circuits, as in Python.
  std::unique_ptr<Node> parse_comparison() {
    auto first = parse_sum();
    Op op;
    if (!compare_op(peek().kind, &op)) return first;
    auto n = make(NodeKind::Compare, peek().pos);
    n->kids.push_back(std::move(first));
    while (compare_op(peek().kind, &op)) {
      n->ops.push_back(op);
      n->op_pos.push_back(next().pos);
      n->kids.push_back(parse_sum());
    }
    return n;
  }

  std::unique_ptr<Node> parse_sum() {
    auto l = parse_term();
    while (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
      Token t = next();
      l = binary(NodeKind::Binary, t.kind == Tok::Plus ? Op::Add : Op::Sub, t.pos, std::move(l),
                 parse_term());
    }
    return l;
  }

  std::unique_ptr<Node> parse_term() {
    auto l = parse_factor();
    while (true) {
      Op op;
      switch (peek().kind) {
        case Tok::Star: op = Op::Mul; break;
        case Tok::Slash: op = Op::Div; break;
        case Tok::SlashSlash: op = Op::FloorDiv; break;
        case Tok::Percent: op = Op::Mod; break;
        default: return l;
      }
      size_t pos = next().pos;
      l = binary(NodeKind::Binary, op, pos, std::move(l), parse_factor());
    }
  }

  std::unique_ptr<Node> parse_factor() {
    if (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
      DepthGuard g(*this);
      Token t = next();
      auto n = make(NodeKind::Unary, t.pos);
      n->op = t.kind == Tok::Plus ? Op::Pos : Op::Neg;
      n->kids.push_back(parse_factor());
      return n;
    }
    return parse_power();
  }

  std::unique_ptr<Node> parse_power() {
    auto base = parse_atom();
    if (peek().kind != Tok::StarStar) return base;
    DepthGuard g(*this);
    size_t pos = next().pos;
    // The exponent is a factor: it may carry unary signs and is itself a
    // power, which makes ** right-associative.
    return binary(NodeKind::Binary, Op::Pow, pos, std::move(base), parse_factor());
  }

  std::unique_ptr<Node> parse_atom() {
    Token t = peek();
    switch (t.kind) {
      case Tok::Number: {
        next();
        auto n = make(NodeKind::Number, t.pos);
        n->value = t.value;
        return n;
      }
      case Tok::True:
      case Tok::False: {
        next();
        auto n = make(NodeKind::Number, t.pos);
        n->value = t.kind == Tok::True ? 1 : 0;
        return n;
      }
      case Tok::Name: {
        next();
        auto n = make(NodeKind::Axis, t.pos);
        n->name = std::string(t.text);
        return n;
      }
      case Tok::LParen: {
        next();
        auto n = parse_or();
        if (peek().kind != Tok::RParen)
          throw ExprError("expected ')'" + at(peek().pos) + " to close '(' at offset " +
                              std::to_string(t.pos) + ", found " + describe(peek()),
                          peek().pos);
        next();
        return n;
      }
      default:
        throw ExprError("expected a number, an axis name or '('" + at(t.pos) + ", found " +
                            describe(t),
                        t.pos);
    }
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
  size_t nodes_ = 0;
};

// ---------------------------------------------------------------- evaluator

const char* op_text(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::FloorDiv: return "//";
    case Op::Mod: return "%";
    case Op::Pow: return "**";
    case Op::Neg: return "-";
    case Op::Pos: return "+";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
  }
  return "?";
}

[[noreturn]] void overflow(int64_t a, Op op, int64_t b, size_t pos) {
  throw ExprError("integer overflow in " + std::to_string(a) + " " + op_text(op) + " " +
                      std::to_string(b) + at(pos),
                  pos);
}

int64_t power(int64_t base, int64_t exp, size_t pos) {
  if (exp < 0)
    throw ExprError("negative exponent in " + std::to_string(base) + " ** " +
                        std::to_string(exp) + at(pos) + " (the result would not be an integer)",
                    pos);
  // Square-and-multiply. The base is squared only while exponent bits remain,
  // and every squared base divides the final result, so an overflow here means
  // the result itself does not fit.
  int64_t result = 1;
  int64_t b = base;
  int64_t e = exp;
  while (e > 0) {
    if ((e & 1) && __builtin_mul_overflow(result, b, &result)) overflow(base, Op::Pow, exp, pos);
    e >>= 1;
    if (e > 0 && __builtin_mul_overflow(b, b, &b)) overflow(base, Op::Pow, exp, pos);
  }
  return result;
}

int64_t arith(Op op, int64_t a, int64_t b, size_t pos) {
  int64_t r = 0;
  switch (op) {
    case Op::Add:
      if (__builtin_add_overflow(a, b, &r)) overflow(a, op, b, pos);
      return r;
    case Op::Sub:
      if (__builtin_sub_overflow(a, b, &r)) overflow(a, op, b, pos);
      return r;
    case Op::Mul:
      if (__builtin_mul_overflow(a, b, &r)) overflow(a, op, b, pos);
      return r;
    case Op::Div:
    case Op::FloorDiv:
    case Op::Mod: {
      if (b == 0)
        throw ExprError(std::string(op == Op::Mod ? "modulo" : "division") + " by zero in " +
                            std::to_string(a) + " " + op_text(op) + " 0" + at(pos),
                        pos);
      // INT64_MIN / -1 is the one quotient that does not fit (and is UB in C++).
      if (b == -1) {
        if (op == Op::Mod) return 0;
        if (a == std::numeric_limits<int64_t>::min()) overflow(a, op, b, pos);
        return -a;
      }
      const int64_t q = a / b;  // truncates toward zero
      const int64_t m = a % b;  // sign of a
      if (op == Op::Div) {
        if (m != 0)
          throw ExprError(std::to_string(a) + " / " + std::to_string(b) +
                              " does not divide exactly" + at(pos) +
                              " (an axis must be an integer; use // to round down)",
                          pos);
        return q;
      }
      // Python floors: adjust when the remainder is nonzero and the operands
      // have opposite signs, so that % takes the sign of the divisor.
      const bool adjust = m != 0 && ((m < 0) != (b < 0));
      if (op == Op::FloorDiv) return adjust ? q - 1 : q;
      return adjust ? m + b : m;
    }
    case Op::Pow:
      return power(a, b, pos);
    default:
      break;
  }
  return 0;
}

bool compare(Op op, int64_t a, int64_t b) {
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    default: return false;
  }
}

int64_t eval_node(const Node& n, const AxisLookup& axes) {
  switch (n.kind) {
    case NodeKind::Number:
      return n.value;
    case NodeKind::Axis: {
      std::optional<int64_t> v;
      if (axes) v = axes(n.name);
      if (!v) throw ExprError("unknown axis '" + n.name + "'" + at(n.pos), n.pos);
      return *v;
    }
    case NodeKind::Unary: {
      const int64_t v = eval_node(*n.kids[0], axes);
      if (n.op == Op::Pos) return v;
      int64_t r = 0;
      if (__builtin_sub_overflow(int64_t{0}, v, &r))
        throw ExprError("integer overflow in -(" + std::to_string(v) + ")" + at(n.pos), n.pos);
      return r;
    }
    case NodeKind::Binary:
      return arith(n.op, eval_node(*n.kids[0], axes), eval_node(*n.kids[1], axes), n.pos);
    case NodeKind::Compare: {
      int64_t left = eval_node(*n.kids[0], axes);
      for (size_t k = 0; k < n.ops.size(); ++k) {
        const int64_t right = eval_node(*n.kids[k + 1], axes);
        if (!compare(n.ops[k], left, right)) return 0;
        left = right;
      }
      return 1;
    }
    // `and` / `or` return an operand, as in Python (2 or 3 == 2), and skip the
    // right side when the left decides, so `x == 0 or n // x > 1` is safe.
    case NodeKind::And: {
      const int64_t l = eval_node(*n.kids[0], axes);
      return l == 0 ? l : eval_node(*n.kids[1], axes);
    }
    case NodeKind::Or: {
      const int64_t l = eval_node(*n.kids[0], axes);
      return l != 0 ? l : eval_node(*n.kids[1], axes);
    }
    case NodeKind::Not:
      return eval_node(*n.kids[0], axes) == 0 ? 1 : 0;
  }
  return 0;
}

void collect_names(const Node& n, std::vector<std::string>& out) {
  if (n.kind == NodeKind::Axis) {
    for (const auto& s : out)
      if (s == n.name) return;
    out.push_back(n.name);
    return;
  }
  // Children are stored in text order, so a depth-first walk is first-seen order.
  for (const auto& k : n.kids) collect_names(*k, out);
}

}  // namespace

Expr Expr::parse(std::string_view text) {
  Expr e;
  e.text_ = std::string(text);
  Parser p(text);
  e.root_ = std::shared_ptr<const Node>(p.parse_all().release());
  return e;
}

int64_t Expr::eval(const AxisLookup& axes) const {
  if (!root_) throw ExprError("empty expression", 0);
  return eval_node(*root_, axes);
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  if (root_) collect_names(*root_, out);
  return out;
}

}  // namespace solbench
