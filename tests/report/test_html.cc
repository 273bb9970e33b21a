// Escaping, anchors and the page template.
#include <gtest/gtest.h>

#include <stdexcept>

#include "report/html.h"

namespace solbench::report {
namespace {

TEST(Escape, EveryMarkupCharacterBecomesAnEntity) {
  EXPECT_EQ(escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(escape(R"(a & b "c" 'd')"), "a &amp; b &quot;c&quot; &#39;d&#39;");
  EXPECT_EQ(escape("plain text, 1.5 ms"), "plain text, 1.5 ms");
  EXPECT_EQ(escape("&lt;"), "&amp;lt;");  // already-escaped text is escaped again, not trusted
}

TEST(AnchorId, KeepsSafeCharactersAndEncodesTheRest) {
  EXPECT_EQ(anchor_id("001_rmsnorm-h4096"), "001_rmsnorm-h4096");
  EXPECT_EQ(anchor_id("a b"), "a.20b");
  EXPECT_EQ(anchor_id("\"><script>"), ".22.3e.3cscript.3e");
  EXPECT_NE(anchor_id("a b"), anchor_id("a_b"));
  EXPECT_NE(anchor_id("a.b"), anchor_id("a.2eb"));  // "." is encoded too: no two texts meet
  EXPECT_EQ(anchor_id("a.b"), "a.2eb");
}

TEST(Template, TextSlotsAreEscapedMarkupSlotsAreNot) {
  const std::string page = Template("<h1>{{title}}</h1>{{{body}}}<p>{{title}}</p>")
                               .text("title", "<b>x</b>")
                               .markup("body", "<svg></svg>")
                               .render();
  EXPECT_EQ(page, "<h1>&lt;b&gt;x&lt;/b&gt;</h1><svg></svg><p>&lt;b&gt;x&lt;/b&gt;</p>");
}

TEST(Template, AValueIsNotScannedForSlots) {
  EXPECT_EQ(Template("{{a}}|{{b}}").text("a", "{{b}}").text("b", "B").render(), "{{b}}|B");
}

TEST(Template, DisagreementsWithTheCallerThrow) {
  EXPECT_THROW(Template("{{a}} {{b}}").text("a", "x").render(), std::logic_error);  // b unfilled
  EXPECT_THROW(Template("{{a}}").text("a", "x").text("c", "y").render(), std::logic_error);
  EXPECT_THROW(Template("{{{a}}}").text("a", "x").render(), std::logic_error);  // wrong kind
  EXPECT_THROW(Template("{{a").render(), std::logic_error);
}

}  // namespace
}  // namespace solbench::report
