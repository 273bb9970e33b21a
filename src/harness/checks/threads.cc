#include "harness/checks/threads.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace solbench::harness {
namespace {

std::string read_text(const std::string& path, size_t limit = 4096) {
  std::ifstream in(path, std::ios::binary);
  std::string s;
  s.resize(limit);
  in.read(s.data(), static_cast<std::streamsize>(limit));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// Direct children of `pid`, over all its threads.
std::vector<int> children_of(const std::string& pid) {
  std::vector<int> out;
  const std::string task = "/proc/" + pid + "/task";
  DIR* d = ::opendir(task.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::istringstream in(read_text(task + "/" + e->d_name + "/children", 1 << 16));
    for (int child; in >> child;) out.push_back(child);
  }
  ::closedir(d);
  return out;
}

// State letter from /proc/<pid>/stat ('?' when gone); comm is between parentheses.
char state_of(int pid, std::string& name) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) return '?';
  name = stat.substr(open + 1, close - open - 1);
  return stat[close + 2];
}

}  // namespace

int count_threads() {
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

std::vector<ThreadInfo> list_threads() {
  std::vector<ThreadInfo> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ThreadInfo t;
    t.tid = std::atoi(e->d_name);
    t.name = read_text(std::string("/proc/self/task/") + e->d_name + "/comm", 64);
    while (!t.name.empty() && (t.name.back() == '\n' || t.name.back() == '\0')) t.name.pop_back();
    out.push_back(std::move(t));
  }
  ::closedir(d);
  return out;
}

std::vector<int> thread_ids() {
  std::vector<int> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') out.push_back(std::atoi(e->d_name));
  ::closedir(d);
  return out;
}

bool runtime_thread_name(const std::string& name) {
  // llvm-worker-N: LLVM's thread pool (MLIR passes in Triton's compiler).
  for (const char* prefix : {"cuda", "pt_", "nvrtc", "cupti", "llvm-worker"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string ProcessInfo::describe() const {
  return std::to_string(pid) + " (" + name + (command_line.empty() ? "" : ": " + command_line) + ")";
}

std::vector<ProcessInfo> live_descendants() {
  std::vector<ProcessInfo> out;
  std::vector<int> todo = children_of("self");
  // Bounded walk: a fork bomb must not make the check itself run away.
  for (size_t i = 0; i < todo.size() && i < 4096; ++i) {
    const int pid = todo[i];
    ProcessInfo p;
    p.pid = pid;
    const char st = state_of(pid, p.name);
    if (st == '?') continue;  // already gone
    for (int c : children_of(std::to_string(pid))) todo.push_back(c);
    if (st == 'Z' || st == 'X') continue;  // finished, not yet reaped: runs nothing
    std::string cmd = read_text("/proc/" + std::to_string(pid) + "/cmdline", 512);
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
    p.command_line = cmd;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace solbench::harness
