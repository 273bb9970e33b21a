// The page as a browser shows it: headless Chromium (Debian's `chromium`)
// renders the sample report to a screenshot, which must be the window's size
// and not blank, and dumps the DOM it built, which must hold the title and the
// charts. Skipped where chromium is not installed (scripts/setup.sh installs it).
//
// SOLBENCH_REPORT_KEEP=DIR keeps the page and its screenshot in DIR (that is
// how docs/img/report.png is made).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "png_image.h"
#include "report_fixture.h"
#include "test_support.h"

namespace solbench::report::testing {
namespace {

using solbench::testing::read;

// The chromium executable on PATH, or "".
std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / "chromium";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

// Runs chromium headless on `page` with `mode` (--screenshot=FILE or
// --dump-dom); returns its standard output. A browser that hangs is killed.
std::string chromium(const std::string& exe, const fs::path& page, const std::string& mode,
                     const fs::path& profile, int* status) {
  const std::string cmd = "timeout 120 '" + exe +
                          "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars "
                          "--user-data-dir='" + profile.string() +
                          "' --window-size=1280,2000 " + mode + " 'file://" + page.string() +
                          "' 2>/dev/null";
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  const int rc = ::pclose(f);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

struct PixelStats {
  size_t colours = 0;  // distinct pixel values (up to 1000 counted)
  double not_background = 0;  // share of pixels unlike the top-left one
};

PixelStats stats(const PngImage& img) {
  PixelStats s;
  std::set<uint32_t> seen;
  const uint32_t bg = img.pixel(0, 0);
  size_t differ = 0;
  for (uint32_t y = 0; y < img.height; ++y)
    for (uint32_t x = 0; x < img.width; ++x) {
      const uint32_t p = img.pixel(x, y);
      if (seen.size() < 1000) seen.insert(p);
      differ += p != bg;
    }
  s.colours = seen.size();
  s.not_background = double(differ) / (double(img.width) * img.height);
  return s;
}

TEST_F(ReportTest, ChromiumRendersTheChartsAndTheTitle) {
  const std::string exe = find_chromium();
  if (exe.empty())
    GTEST_SKIP() << "chromium is not installed: the page is not rendered in a browser "
                    "(Debian: apt-get install chromium; scripts/setup.sh installs it)";
  if (!analysis_available()) GTEST_SKIP() << "embedded Python with torch is not available";
  record_sample();
  const std::string html = render_html(collect_sample(options()));
  const fs::path page = dir_.path() / "report.html";
  const fs::path blank = dir_.path() / "blank.html";
  solbench::testing::write(page, html);
  solbench::testing::write(blank, "<!DOCTYPE html><html><head><title>blank</title></head><body></body></html>");

  // The screenshot: the window's size, many colours, much of it drawn.
  const fs::path shot = dir_.path() / "report.png";
  int status = -1;
  chromium(exe, page, "--screenshot='" + shot.string() + "'", dir_.path() / "profile", &status);
  ASSERT_EQ(status, 0) << "chromium --screenshot failed";
  ASSERT_TRUE(fs::exists(shot));
  const PngImage img = decode_png(read(shot));
  EXPECT_EQ(img.width, 1280u);
  EXPECT_EQ(img.height, 2000u);
  const PixelStats s = stats(img);
  EXPECT_GT(s.colours, 50u) << "the screenshot has hardly any colours: blank?";
  EXPECT_GT(s.not_background, 0.05) << "the screenshot is mostly background: blank?";

  // The same check on a blank page rendered the same way fails: it can tell.
  const fs::path blank_shot = dir_.path() / "blank.png";
  chromium(exe, blank, "--screenshot='" + blank_shot.string() + "'", dir_.path() / "profile", &status);
  ASSERT_EQ(status, 0);
  const PixelStats b = stats(decode_png(read(blank_shot)));
  EXPECT_EQ(b.colours, 1u);
  EXPECT_EQ(b.not_background, 0.0);

  // The DOM Chromium built from the page: the title, the charts, the escaped name as text.
  const std::string dom = chromium(exe, page, "--dump-dom", dir_.path() / "profile", &status);
  ASSERT_EQ(status, 0) << "chromium --dump-dom failed";
  EXPECT_HAS(dom, "<title>solbench report</title>");
  EXPECT_EQ(count(dom, "<svg class=\"roofline\""), 2u);
  EXPECT_EQ(count(dom, "<svg class=\"histogram\""), 1u);
  EXPECT_EQ(count(dom, "class=\"point sol\""), kWorkloads.size());
  EXPECT_GE(count(dom, "class=\"roof memory\""), 2u);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_HAS(dom, "&lt;script&gt;alert(1)&lt;/script&gt;");

  if (const char* keep = std::getenv("SOLBENCH_REPORT_KEEP"); keep && *keep) {
    fs::create_directories(keep);
    fs::copy_file(page, fs::path(keep) / "report.html", fs::copy_options::overwrite_existing);
    fs::copy_file(shot, fs::path(keep) / "report.png", fs::copy_options::overwrite_existing);
  }
}

TEST(PngImage, DecodesWhatItIsGiven) {
  // A 2x1 RGB image: a red and a blue pixel, rows filtered "Sub".
  const uint8_t raw[] = {1, 255, 0, 0, uint8_t(0 - 255), 0, 255};
  std::vector<uint8_t> z(compressBound(sizeof raw));
  uLongf zn = z.size();
  ASSERT_EQ(compress(z.data(), &zn, raw, sizeof raw), Z_OK);
  const auto be = [](uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  };
  std::string png("\x89PNG\r\n\x1a\n", 8);
  const std::string ihdr = be(2) + be(1) + std::string{8, 2, 0, 0, 0};
  png += be(uint32_t(ihdr.size())) + "IHDR" + ihdr + be(0);
  png += be(uint32_t(zn)) + "IDAT" + std::string(reinterpret_cast<char*>(z.data()), zn) + be(0);
  png += be(0) + "IEND" + be(0);
  const PngImage img = decode_png(png);
  ASSERT_EQ(img.width, 2u);
  ASSERT_EQ(img.channels, 3);
  EXPECT_EQ(img.pixel(0, 0), 0xff0000u);
  EXPECT_EQ(img.pixel(1, 0), 0x0000ffu);
  EXPECT_THROW(decode_png("not a png"), std::runtime_error);
}

}  // namespace
}  // namespace solbench::report::testing
