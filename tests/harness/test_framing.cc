// Length-prefixed JSON frames: round trips, partial frames, corruption, limits.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "harness/framing.h"

namespace solbench::harness {
namespace {

using namespace std::chrono_literals;

// A pipe whose ends close on destruction.
struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    r = p[0];
    w = p[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (r >= 0) ::close(r);
    r = -1;
  }
  void close_write() {
    if (w >= 0) ::close(w);
    w = -1;
  }
  void raw(const std::string& bytes) {
    ASSERT_EQ(::write(w, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
};

std::string header(uint32_t n) {
  std::string h(4, '\0');
  for (int i = 0; i < 4; ++i) h[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return h;
}

TEST(Framing, RoundTripSeveralFrames) {
  Pipe p;
  json a = {{"type", "result"}, {"workload", "w1"}, {"values", {1.5, -2, 3}}};
  json b = {{"unicode", "µs → ok"}, {"nested", {{"x", nullptr}}}};
  ASSERT_TRUE(write_frame(p.w, a).ok());
  ASSERT_TRUE(write_frame(p.w, b).ok());
  ASSERT_TRUE(write_frame(p.w, json::array()).ok());
  FrameReader reader(p.r);
  auto r1 = reader.read(deadline_after(5s));
  auto r2 = reader.read(deadline_after(5s));
  auto r3 = reader.read(deadline_after(5s));
  ASSERT_TRUE(r1.ok()) << r1.error;
  ASSERT_TRUE(r2.ok()) << r2.error;
  ASSERT_TRUE(r3.ok()) << r3.error;
  EXPECT_EQ(r1.message, a);
  EXPECT_EQ(r2.message, b);
  EXPECT_EQ(r3.message, json::array());
  p.close_write();
  EXPECT_EQ(reader.read(deadline_after(5s)).status, FrameStatus::Eof);
}

TEST(Framing, WireFormatIsLittleEndianLengthThenJson) {
  Pipe p;
  ASSERT_TRUE(write_frame(p.w, json{{"a", 1}}).ok());
  char buf[64];
  ssize_t n = ::read(p.r, buf, sizeof buf);
  ASSERT_EQ(n, 4 + 7);
  EXPECT_EQ(std::string(buf, 4), header(7));
  EXPECT_EQ(std::string(buf + 4, 7), R"({"a":1})");
}

TEST(Framing, LargeFrameThroughAConcurrentReader) {
  // Bigger than a pipe buffer: the writer must block and resume.
  Pipe p;
  json big = {{"data", std::string(3 << 20, 'x')}};
  FrameResult got;
  std::thread reader([&] { got = read_frame(p.r, deadline_after(20s)); });
  auto w = write_frame(p.w, big, deadline_after(20s));
  reader.join();
  ASSERT_TRUE(w.ok()) << w.error;
  ASSERT_TRUE(got.ok()) << got.error;
  EXPECT_EQ(got.message.at("data").get<std::string>().size(), size_t(3) << 20);
}

TEST(Framing, PartialFrameTimesOutThenResumes) {
  Pipe p;
  const std::string payload = R"({"k":"value"})";
  p.raw(header(static_cast<uint32_t>(payload.size())) + payload.substr(0, 5));
  FrameReader reader(p.r);
  auto r = reader.read(deadline_after(50ms));
  EXPECT_EQ(r.status, FrameStatus::Timeout);
  EXPECT_EQ(reader.buffered(), 4u + 5u);
  p.raw(payload.substr(5));
  r = reader.read(deadline_after(5s));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.message.at("k"), "value");
}

TEST(Framing, TimeoutWithNothingSent) {
  Pipe p;
  const auto start = Clock::now();
  auto r = read_frame(p.r, deadline_after(100ms));
  EXPECT_EQ(r.status, FrameStatus::Timeout);
  EXPECT_GE(Clock::now() - start, 90ms);
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(Framing, TruncatedFrameIsAnError) {
  Pipe p;
  p.raw(header(100) + std::string(10, 'x'));
  p.close_write();
  FrameReader reader(p.r);
  auto r = reader.read(deadline_after(5s));
  EXPECT_EQ(r.status, FrameStatus::Error);
  EXPECT_NE(r.error.find("middle of a frame"), std::string::npos) << r.error;
}

TEST(Framing, TruncatedHeaderIsAnError) {
  Pipe p;
  p.raw(std::string("\x05\x00", 2));
  p.close_write();
  auto r = read_frame(p.r, deadline_after(5s));
  EXPECT_EQ(r.status, FrameStatus::Error);
  EXPECT_NE(r.error.find("middle of a frame"), std::string::npos) << r.error;
}

TEST(Framing, GarbagePayloadIsAnError) {
  Pipe p;
  const std::string junk = "{not json at all";
  p.raw(header(static_cast<uint32_t>(junk.size())) + junk);
  // The stream stays in sync: a good frame after the bad one is still read.
  ASSERT_TRUE(write_frame(p.w, json{{"after", true}}).ok());
  FrameReader reader(p.r);
  auto bad = reader.read(deadline_after(5s));
  EXPECT_EQ(bad.status, FrameStatus::Error);
  EXPECT_NE(bad.error.find("invalid JSON"), std::string::npos) << bad.error;
  auto good = reader.read(deadline_after(5s));
  ASSERT_TRUE(good.ok()) << good.error;
  EXPECT_EQ(good.message.at("after"), true);
}

TEST(Framing, OversizedLengthRefusedWithoutAllocating) {
  Pipe p;
  p.raw(header(0xfffffff0u) + "{}");
  FrameReader reader(p.r, 1 << 20);
  auto r = reader.read(deadline_after(5s));
  EXPECT_EQ(r.status, FrameStatus::Error);
  EXPECT_NE(r.error.find("exceeds the limit"), std::string::npos) << r.error;
  auto r2 = read_frame(p.r, deadline_after(50ms), 16);  // fresh header: none left
  EXPECT_NE(r2.status, FrameStatus::Ok);
}

TEST(Framing, WriterRefusesOversizedFrames) {
  Pipe p;
  auto r = write_frame(p.w, json{{"s", std::string(100, 'y')}}, kNoDeadline, 64);
  EXPECT_EQ(r.status, FrameStatus::Error);
  EXPECT_NE(r.error.find("exceeds the limit"), std::string::npos);
  EXPECT_EQ(read_frame(p.r, deadline_after(20ms)).status, FrameStatus::Timeout);  // nothing sent
}

TEST(Framing, WritingToAClosedPeerIsAnErrorNotSigpipe) {
  Pipe p;
  p.close_read();
  auto r = write_frame(p.w, json{{"x", 1}});
  EXPECT_EQ(r.status, FrameStatus::Error);
  EXPECT_NE(r.error.find("peer closed"), std::string::npos) << r.error;
}

TEST(Framing, WriteTimesOutWhenNobodyReads) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  auto r = write_frame(sv[0], json{{"d", std::string(8 << 20, 'z')}}, deadline_after(100ms));
  EXPECT_EQ(r.status, FrameStatus::Timeout);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(Framing, OneShotReadLeavesTheNextFrameInPlace) {
  Pipe p;
  ASSERT_TRUE(write_frame(p.w, json{{"n", 1}}).ok());
  ASSERT_TRUE(write_frame(p.w, json{{"n", 2}}).ok());
  auto a = read_frame(p.r, deadline_after(5s));
  auto b = read_frame(p.r, deadline_after(5s));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.message.at("n"), 1);
  EXPECT_EQ(b.message.at("n"), 2);
}

TEST(Framing, StatusNames) {
  EXPECT_EQ(frame_status_name(FrameStatus::Ok), "ok");
  EXPECT_EQ(frame_status_name(FrameStatus::Eof), "eof");
  EXPECT_EQ(frame_status_name(FrameStatus::Timeout), "timeout");
  EXPECT_EQ(frame_status_name(FrameStatus::Error), "error");
}

}  // namespace
}  // namespace solbench::harness
