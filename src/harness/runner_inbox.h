// A worker's channel as the parent reads it (runner_internal.h): on a thread of
// its own, which checks seals, answers values requests at once and queues every
// other frame for the runner's loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "harness/framing.h"
#include "harness/values.h"

namespace solbench::harness::runner_detail {

// A worker's channel, read on a thread of its own so that a values request is
// answered at once whatever the runner's thread is doing (an event callback may
// trace the reference for T_SOL: seconds on a cold start). In the stream's order it
// checks every frame's seal, answers values requests (values.h: the issuer begins
// with each "begin" frame) and queues every other frame for the runner's loop,
// a result with the issuer as it stood then.
class ChannelInbox {
 public:
  struct Item {
    FrameResult frame;
    std::string violation;                 // why the worker is to end as REWARD_HACK
    std::optional<ValueIssuer> at_result;  // for a "result" frame
  };
  // `workload(pos)`: the uuid and the number of kept calls of plan position pos
  // (nullopt: no such position). `answers`: false for a reference worker, which
  // draws its own values.
  using Workload = std::function<std::optional<std::pair<std::string, int>>(int)>;
  ChannelInbox(int fd, std::string seal, ValueIssuer issuer, bool answers, Workload workload,
               std::mutex& write_mu)
      : fd_(fd),
        seal_(std::move(seal)),
        issuer_(std::move(issuer)),
        answers_(answers),
        workload_(std::move(workload)),
        write_mu_(write_mu) {
    thread_ = std::thread([this] { loop(); });
  }
  ~ChannelInbox() { stop(); }
  ChannelInbox(const ChannelInbox&) = delete;
  ChannelInbox& operator=(const ChannelInbox&) = delete;

  // The next item, or nullopt once `deadline` passed.
  std::optional<Item> next(Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return !items_.empty(); })) return std::nullopt;
    Item it = std::move(items_.front());
    items_.pop_front();
    return it;
  }
  // Nothing is read after this (before the channel is closed).
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void push(Item it) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(it));
    }
    cv_.notify_one();
  }
  void loop();

  int fd_;
  std::string seal_;
  ValueIssuer issuer_;
  bool answers_;
  Workload workload_;
  std::mutex& write_mu_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  std::thread thread_;
};

}  // namespace solbench::harness::runner_detail
