#include "core/expr.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace solbench {
namespace {

AxisLookup axes(std::map<std::string, int64_t> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<int64_t> {
    auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

int64_t ev(std::string_view text, std::map<std::string, int64_t> values = {}) {
  return Expr::parse(text).eval(axes(std::move(values)));
}

// Expects an ExprError from parse or eval whose message contains `fragment`;
// returns its position.
size_t error_of(std::string_view text, const std::string& fragment,
                std::map<std::string, int64_t> values = {}) {
  try {
    ev(text, std::move(values));
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "expression: " << text << "\nmessage: " << e.what();
    return e.position();
  }
  ADD_FAILURE() << "no error for: " << text;
  return std::string::npos;
}

TEST(Expr, Precedence) {
  EXPECT_EQ(ev("2+3*4"), 14);
  EXPECT_EQ(ev("(2+3)*4"), 20);
  EXPECT_EQ(ev("2**3**2"), 512);  // right-associative
  EXPECT_EQ(ev("(2**3)**2"), 64);
  EXPECT_EQ(ev("-2**2"), -4);  // ** binds tighter than a unary minus on its left
  EXPECT_EQ(ev("(-2)**2"), 4);
  EXPECT_EQ(ev("2**-0"), 1);  // a unary sign is allowed on the right of **
  EXPECT_EQ(ev("10-4-3"), 3);  // left-associative
  EXPECT_EQ(ev("100//10//3"), 3);
  EXPECT_EQ(ev("2*3%4"), 2);  // * and % share a level, left to right
  EXPECT_EQ(ev("8/2*3"), 12);
  EXPECT_EQ(ev("1+2 == 3"), 1);  // arithmetic binds tighter than comparison
  EXPECT_EQ(ev("  7 \t* 6 "), 42);
}

TEST(Expr, Division) {
  EXPECT_EQ(ev("8/2"), 4);
  EXPECT_EQ(ev("-8/2"), -4);
  EXPECT_EQ(ev("-8/-2"), 4);
  EXPECT_EQ(ev("7//2"), 3);
  EXPECT_EQ(ev("-7//2"), -4);  // floors, unlike C++
  EXPECT_EQ(ev("7//-2"), -4);
  EXPECT_EQ(ev("-7//-2"), 3);
  EXPECT_EQ(ev("6//3"), 2);
  EXPECT_EQ(ev("-6//3"), -2);
  EXPECT_EQ(ev("7%3"), 1);
  EXPECT_EQ(ev("-7%3"), 2);  // sign of the divisor
  EXPECT_EQ(ev("7%-3"), -2);
  EXPECT_EQ(ev("-7%-3"), -1);
  EXPECT_EQ(ev("6%3"), 0);
  EXPECT_EQ(ev("(-9223372036854775807-1) // -2"), 4611686018427387904);
  EXPECT_EQ(ev("(-9223372036854775807-1) % -1"), 0);

  EXPECT_EQ(error_of("7/2", "does not divide exactly"), 1u);
  error_of("7 / 2", "7 / 2 does not divide exactly");
  error_of("1/0", "division by zero");
  error_of("1//0", "division by zero");
  error_of("1%0", "modulo by zero");
  error_of("n // (m - 4)", "division by zero", {{"n", 8}, {"m", 4}});
}

TEST(Expr, Power) {
  EXPECT_EQ(ev("2**10"), 1024);
  EXPECT_EQ(ev("0**0"), 1);
  EXPECT_EQ(ev("(-1)**1000000000000"), 1);
  EXPECT_EQ(ev("(-1)**1000000000001"), -1);
  EXPECT_EQ(ev("(-2)**63"), INT64_MIN);
  EXPECT_EQ(ev("2**62"), int64_t{1} << 62);
  EXPECT_EQ(ev("3**39"), 4052555153018976267);
  EXPECT_EQ(error_of("2**-1", "negative exponent"), 1u);
  error_of("2**63", "overflow");
  error_of("3**40", "overflow");
  error_of("(-2)**64", "overflow");
  error_of("10**100", "overflow");
}

TEST(Expr, UnaryMinus) {
  EXPECT_EQ(ev("-3"), -3);
  EXPECT_EQ(ev("--3"), 3);
  EXPECT_EQ(ev("-+-3"), 3);
  EXPECT_EQ(ev("+3"), 3);
  EXPECT_EQ(ev("-x", {{"x", 5}}), -5);
  EXPECT_EQ(ev("2*-3"), -6);
  EXPECT_EQ(ev("2--3"), 5);
}

TEST(Expr, Overflow) {
  EXPECT_EQ(ev("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ev("-9223372036854775807-1"), INT64_MIN);
  error_of("9223372036854775807+1", "overflow");
  error_of("-9223372036854775807-2", "overflow");
  error_of("-(-9223372036854775807-1)", "overflow");
  error_of("4611686018427387904*2", "overflow");
  error_of("(-9223372036854775807-1) // -1", "overflow");
  error_of("(-9223372036854775807-1) / -1", "overflow");
  error_of("x*x", "overflow", {{"x", int64_t{1} << 32}});
  EXPECT_EQ(error_of("1 + 9223372036854775808", "does not fit in 64 bits"), 4u);
}

TEST(Expr, Axes) {
  EXPECT_EQ(ev("H_qo // H_kv", {{"H_qo", 32}, {"H_kv", 8}}), 4);
  EXPECT_EQ(ev("hidden_size * 3 + _x1", {{"hidden_size", 7}, {"_x1", 1}}), 22);
  EXPECT_EQ(error_of("a + missing_axis", "unknown axis 'missing_axis'", {{"a", 1}}), 4u);
  // An empty lookup knows no axis.
  EXPECT_THROW(Expr::parse("a").eval(AxisLookup{}), ExprError);
  EXPECT_EQ(Expr::parse("3").eval(AxisLookup{}), 3);
}

TEST(Expr, SyntaxErrors) {
  EXPECT_EQ(error_of("(1 + 2", "expected ')' at offset 6"), 6u);
  EXPECT_EQ(error_of("(a + b * c", "expected ')' at offset 10"), 10u);
  EXPECT_EQ(error_of("1 +", "expected a number, an axis name or '(' at offset 3"), 3u);
  EXPECT_EQ(error_of("", "at offset 0"), 0u);
  EXPECT_EQ(error_of("1 2", "unexpected '2' at offset 2"), 2u);
  EXPECT_EQ(error_of("a b", "unexpected 'b' at offset 2"), 2u);
  EXPECT_EQ(error_of("(1))", "unexpected ')' at offset 3"), 3u);
  EXPECT_EQ(error_of("a = b", "unexpected '=' at offset 2"), 2u);
  EXPECT_EQ(error_of("1 $ 2", "unexpected character '$' at offset 2"), 2u);
  EXPECT_EQ(error_of("2x", "invalid number literal '2x' at offset 0"), 0u);
  EXPECT_EQ(error_of("1.5", "invalid number literal"), 0u);
  EXPECT_EQ(error_of("a == not b", "expected a number"), 5u);
  EXPECT_EQ(error_of("* 2", "at offset 0"), 0u);
  // Pathological nesting is an error, not a stack overflow.
  EXPECT_NE(error_of(std::string(5000, '(') + "1" + std::string(5000, ')'), "too deeply"),
            std::string::npos);
  std::string long_sum = "1";
  for (int i = 0; i < 20000; ++i) long_sum += "+1";
  error_of(long_sum, "too long");
}

TEST(Expr, Constraints) {
  auto holds = [](std::string_view text, std::map<std::string, int64_t> v) {
    return Expr::parse(text).holds(axes(std::move(v)));
  };
  EXPECT_TRUE(holds("H_qo == H_kv * G", {{"H_qo", 32}, {"H_kv", 8}, {"G", 4}}));
  EXPECT_FALSE(holds("H_qo == H_kv * G", {{"H_qo", 32}, {"H_kv", 8}, {"G", 2}}));

  // Chained like Python: a < b and b <= c.
  EXPECT_TRUE(holds("a < b <= c", {{"a", 1}, {"b", 2}, {"c", 2}}));
  EXPECT_FALSE(holds("a < b <= c", {{"a", 1}, {"b", 3}, {"c", 2}}));
  EXPECT_FALSE(holds("a < b <= c", {{"a", 2}, {"b", 2}, {"c", 9}}));
  EXPECT_FALSE(holds("3 > 2 > 1 > 1", {}));
  EXPECT_TRUE(holds("3 > 2 > 1 >= 1", {}));
  // Not ((1 < 3) < 2), which would be true in C.
  EXPECT_FALSE(holds("1 < 3 < 2", {}));
  // The chain short-circuits: the unknown axis on the right is never looked up.
  EXPECT_FALSE(holds("2 < 1 < missing", {}));

  // not > and > or.
  const char* c = "not (x == 1) and y > 0 or False";
  EXPECT_TRUE(holds(c, {{"x", 2}, {"y", 1}}));
  EXPECT_FALSE(holds(c, {{"x", 1}, {"y", 1}}));
  EXPECT_FALSE(holds(c, {{"x", 2}, {"y", 0}}));
  EXPECT_TRUE(holds("False or True and not False", {}));
  EXPECT_FALSE(holds("not True or False", {}));
  EXPECT_TRUE(holds("not not True", {}));
  EXPECT_TRUE(holds("x != 3 and x % 2 == 0", {{"x", 4}}));
  EXPECT_FALSE(holds("x >= 5", {{"x", 4}}));

  // Values of and/or as in Python, and short-circuit.
  EXPECT_EQ(ev("2 or 3"), 2);
  EXPECT_EQ(ev("0 or 3"), 3);
  EXPECT_EQ(ev("2 and 3"), 3);
  EXPECT_EQ(ev("0 and 3"), 0);
  EXPECT_EQ(ev("True + True"), 2);
  EXPECT_EQ(ev("x == 0 or 10 // x > 1", {{"x", 0}}), 1);
  EXPECT_EQ(ev("x != 0 and 10 // x > 1", {{"x", 0}}), 0);
}

TEST(Expr, NamesAndText) {
  const Expr e = Expr::parse("b * (a + b) // c - a ** d");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"b", "a", "c", "d"}));
  EXPECT_EQ(e.text(), "b * (a + b) // c - a ** d");
  EXPECT_TRUE(Expr::parse("1 + 2 and True").names().empty());
  // Keywords are not axis names; names that merely start with one are.
  EXPECT_EQ(Expr::parse("not order and android or nota").names(),
            (std::vector<std::string>{"order", "android", "nota"}));
  EXPECT_TRUE(Expr().names().empty());
  EXPECT_THROW(Expr().eval(axes({})), ExprError);
}

}  // namespace
}  // namespace solbench
