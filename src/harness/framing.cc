#include "harness/framing.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace solbench::harness {
namespace {

// Milliseconds to pass to poll() for `deadline`; -1 for no deadline.
int poll_timeout_ms(Deadline deadline) {
  if (deadline == kNoDeadline) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  // Round up so we do not spin just before the deadline.
  return static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30));
}

// Waits until `fd` is ready for `events`. Returns 1 ready, 0 timeout, -1 error.
int wait_ready(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) {
      if (Clock::now() >= deadline) return 0;
      continue;
    }
    return 1;
  }
}

FrameResult error(std::string msg) {
  FrameResult r;
  r.status = FrameStatus::Error;
  r.error = std::move(msg);
  return r;
}

FrameResult no_frame_in_time() {
  FrameResult r;
  r.status = FrameStatus::Timeout;
  r.error = "no complete frame before the deadline";
  return r;
}

// Blocks SIGPIPE for the calling thread while writing, and swallows a SIGPIPE
// raised by the write, so that a closed peer is an error code, not a dead process.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace

std::string_view frame_status_name(FrameStatus s) {
  switch (s) {
    case FrameStatus::Ok: return "ok";
    case FrameStatus::Eof: return "eof";
    case FrameStatus::Timeout: return "timeout";
    case FrameStatus::Error: return "error";
  }
  return "?";
}

FrameResult write_frame(int fd, const json& message, Deadline deadline, uint32_t max_bytes) {
  std::string payload;
  try {
    payload = message.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return error(std::string("cannot encode frame: ") + e.what());
  }
  if (payload.size() > max_bytes)
    return error("frame of " + std::to_string(payload.size()) + " bytes exceeds the limit of " +
                 std::to_string(max_bytes));
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string wire(4 + payload.size(), '\0');
  wire[0] = static_cast<char>(n & 0xff);
  wire[1] = static_cast<char>((n >> 8) & 0xff);
  wire[2] = static_cast<char>((n >> 16) & 0xff);
  wire[3] = static_cast<char>((n >> 24) & 0xff);
  std::memcpy(wire.data() + 4, payload.data(), payload.size());

  // Non-blocking while we write so that a full pipe cannot block past the deadline.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return error(std::string("fcntl: ") + std::strerror(errno));
  const bool set_nonblock = !(flags & O_NONBLOCK);
  if (set_nonblock) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  SigpipeGuard guard;

  FrameResult result;
  result.status = FrameStatus::Ok;
  size_t off = 0;
  while (off < wire.size()) {
    ssize_t w = ::write(fd, wire.data() + off, wire.size() - off);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int r = wait_ready(fd, POLLOUT, deadline);
      if (r == 1) continue;
      if (r == 0) {
        result.status = FrameStatus::Timeout;
        result.error = "write timed out after " + std::to_string(off) + " of " +
                       std::to_string(wire.size()) + " bytes";
      } else {
        result = error(std::string("poll: ") + std::strerror(errno));
      }
      break;
    }
    if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      result = error("peer closed");
    } else {
      result = error(std::string("write: ") + std::strerror(errno));
    }
    break;
  }
  if (set_nonblock) ::fcntl(fd, F_SETFL, flags);
  return result;
}

FrameResult FrameReader::read(Deadline deadline) {
  for (;;) {
    // A complete frame buffered?
    if (buf_.size() >= 4) {
      const auto* b = reinterpret_cast<const unsigned char*>(buf_.data());
      const uint32_t n = uint32_t(b[0]) | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) |
                         (uint32_t(b[3]) << 24);
      if (n > max_bytes_)
        return error("incoming frame of " + std::to_string(n) + " bytes exceeds the limit of " +
                     std::to_string(max_bytes_));
      if (buf_.size() >= 4 + size_t(n)) {
        FrameResult r;
        try {
          r.message = json::parse(buf_.begin() + 4, buf_.begin() + 4 + n);
          r.status = FrameStatus::Ok;
        } catch (const std::exception& e) {
          r = error(std::string("invalid JSON in frame: ") + e.what());
        }
        buf_.erase(buf_.begin(), buf_.begin() + 4 + n);
        return r;
      }
    }
    int ready = wait_ready(fd_, POLLIN, deadline);
    if (ready == 0) return no_frame_in_time();
    if (ready < 0) return error(std::string("poll: ") + std::strerror(errno));
    // Read what is available, at most up to the end of the current frame plus a
    // chunk, so a huge announced length does not make us allocate it up front.
    char chunk[64 << 10];
    ssize_t got = ::read(fd_, chunk, sizeof chunk);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      if (errno == ECONNRESET) got = 0;  // treat as closed
      else return error(std::string("read: ") + std::strerror(errno));
    }
    if (got == 0) {
      if (buf_.empty()) {
        FrameResult r;
        r.status = FrameStatus::Eof;
        return r;
      }
      std::string msg = "peer closed in the middle of a frame (" + std::to_string(buf_.size()) +
                        " bytes buffered)";
      buf_.clear();
      return error(std::move(msg));
    }
    buf_.insert(buf_.end(), chunk, chunk + got);
  }
}

FrameResult read_frame(int fd, Deadline deadline, uint32_t max_bytes) {
  // Reads byte-exactly (header, then payload) so nothing past this frame is
  // consumed from the fd: the next caller finds the stream at a frame boundary.
  auto read_exact = [&](char* dst, size_t n, bool at_boundary) -> FrameResult {
    size_t off = 0;
    while (off < n) {
      int ready = wait_ready(fd, POLLIN, deadline);
      if (ready == 0) return no_frame_in_time();
      if (ready < 0) return error(std::string("poll: ") + std::strerror(errno));
      ssize_t got = ::read(fd, dst + off, n - off);
      if (got < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
        if (errno != ECONNRESET) return error(std::string("read: ") + std::strerror(errno));
        got = 0;
      }
      if (got == 0) {
        if (at_boundary && off == 0) {
          FrameResult r;
          r.status = FrameStatus::Eof;
          return r;
        }
        return error("peer closed in the middle of a frame");
      }
      off += static_cast<size_t>(got);
    }
    FrameResult r;
    r.status = FrameStatus::Ok;
    return r;
  };
  unsigned char hdr[4];
  FrameResult r = read_exact(reinterpret_cast<char*>(hdr), 4, true);
  if (!r.ok()) return r;
  const uint32_t n = uint32_t(hdr[0]) | (uint32_t(hdr[1]) << 8) | (uint32_t(hdr[2]) << 16) |
                     (uint32_t(hdr[3]) << 24);
  if (n > max_bytes)
    return error("incoming frame of " + std::to_string(n) + " bytes exceeds the limit of " +
                 std::to_string(max_bytes));
  std::string payload(n, '\0');
  r = read_exact(payload.data(), n, false);
  if (!r.ok()) return r;
  try {
    r.message = json::parse(payload);
  } catch (const std::exception& e) {
    return error(std::string("invalid JSON in frame: ") + e.what());
  }
  return r;
}

int serve_frames(int fd, const std::function<json(const json&)>& handle) {
  if (!write_frame(fd, json{{"ready", true}}).ok()) return 3;
  FrameReader reader(fd);
  for (;;) {
    FrameResult r = reader.read();
    if (r.status == FrameStatus::Eof) return 0;
    if (!r.ok()) return 3;
    if (!write_frame(fd, handle(r.message)).ok()) return 3;
  }
}

}  // namespace solbench::harness
