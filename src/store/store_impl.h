// The Store's connection and its prepared statements, shared by store.cc
// (recording) and queries.cc (reading).
#pragma once

#include <filesystem>
#include <mutex>

#include "store/sqlite.h"
#include "store/store.h"

namespace solbench::store {

struct Store::Impl {
  Impl(const std::filesystem::path& file, const Options& options);

  std::filesystem::path file;
  // Serialises the Store's calls: a Store may be shared between threads.
  std::mutex mutex;
  detail::Database db;
  int version = 0;
  // Statements used once per trace are prepared once per connection. Declared
  // after `db`, so they are finalised before it closes.
  detail::Statement begin;
  detail::Statement commit;
  detail::Statement rollback;
  detail::Statement insert_trace;
  detail::Statement find_result;
};

}  // namespace solbench::store
