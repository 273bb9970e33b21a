// Length-prefixed JSON frames over a pipe or socket: the worker protocol's wire format.
//
// A frame is a 4-byte little-endian payload length followed by that many bytes of
// UTF-8 JSON text. Frames larger than a maximum are refused on both sides, so a
// misbehaving peer cannot make the reader allocate without bound. Reads wait with a
// deadline (poll), writes too; both retry on EINTR and handle partial transfers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::harness {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// No deadline: wait forever.
inline constexpr Deadline kNoDeadline = Deadline::max();
inline Deadline deadline_after(std::chrono::duration<double> d) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(d);
}

inline constexpr uint32_t kDefaultMaxFrameBytes = 256u << 20;  // 256 MiB

enum class FrameStatus {
  Ok,       // a complete frame was read / written
  Eof,      // the peer closed its end cleanly between frames
  Timeout,  // the deadline passed; for reads with FrameReader, nothing is lost
  Error,    // I/O error, truncated frame, oversized frame or invalid JSON; see `error`
};

std::string_view frame_status_name(FrameStatus s);

struct FrameResult {
  FrameStatus status = FrameStatus::Error;
  json message;       // valid when status == Ok (reads only)
  std::string error;  // human-readable reason when status == Error
  bool ok() const { return status == FrameStatus::Ok; }
};

// Writes one frame. Never raises SIGPIPE (a closed peer is reported as Error with
// "peer closed"). Waits at most until `deadline` for the peer to drain the pipe; a
// Timeout may leave a partial frame on the wire, after which the stream is unusable.
FrameResult write_frame(int fd, const json& message, Deadline deadline = kNoDeadline,
                        uint32_t max_bytes = kDefaultMaxFrameBytes);

// Reads frames from one fd and keeps partial data between calls, so a Timeout in
// the middle of a frame can be resumed by calling read() again. Does not own the fd.
class FrameReader {
 public:
  explicit FrameReader(int fd, uint32_t max_bytes = kDefaultMaxFrameBytes)
      : fd_(fd), max_bytes_(max_bytes) {}

  // Next frame, EOF (peer closed between frames), Timeout, or Error (also for EOF
  // in the middle of a frame and for an oversized length prefix).
  FrameResult read(Deadline deadline = kNoDeadline);

  int fd() const { return fd_; }
  // Bytes of an incomplete frame currently buffered.
  size_t buffered() const { return buf_.size(); }

 private:
  int fd_;
  uint32_t max_bytes_;
  std::vector<char> buf_;
};

// A child process's service loop (`sol`'s tracer, `validate`'s tolerance probe):
// says {"ready": true}, then answers every frame on `fd` with handle(frame) until
// the peer closes it. Returns 0 at its end, 3 when the channel broke.
int serve_frames(int fd, const std::function<json(const json&)>& handle);

// One-shot read of a single frame (a timeout mid-frame loses the partial data; use
// FrameReader to resume).
FrameResult read_frame(int fd, Deadline deadline = kNoDeadline,
                       uint32_t max_bytes = kDefaultMaxFrameBytes);

}  // namespace solbench::harness
