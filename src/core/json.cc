#include "core/json.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <vector>
#include <system_error>

namespace solbench {

namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

// nlohmann's message starts with "[json.exception.parse_error.101] parse error
// at line 1, column 5: "; we report our own position, so keep only the reason.
std::string parse_error_reason(const std::string& what) {
  std::string s = what;
  if (auto close = s.find("] "); s.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
    s = s.substr(close + 2);
  if (s.rfind("parse error", 0) == 0) {
    if (auto colon = s.find(": "); colon != std::string::npos) s = s.substr(colon + 2);
  }
  return s;
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
  // POSIX calls rather than iostreams: they report why a read failed (errno),
  // including EISDIR for a folder, which ifstream would hide.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path.string(), 0, "", "cannot read: " + errno_text(errno));
  std::string out;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw InputError(path.string(), 0, "", "cannot read: " + errno_text(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

namespace {

// nlohmann keeps the last of two equal keys without a word; a definition with two
// `inputs.x` entries would silently lose one. This parser callback follows the
// JSON path while parsing and reports the first repeated key.
class DuplicateKeyCheck {
 public:
  std::string duplicate_path;  // empty while none was seen

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::object_start: frames_.push_back({false, 0, {}, {}}); break;
      case E::array_start: frames_.push_back({true, 0, {}, {}}); break;
      case E::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && duplicate_path.empty()) duplicate_path = path();
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        advance();
        break;
      case E::value: advance(); break;
    }
    return true;
  }

 private:
  struct Frame {
    bool array;
    size_t index;
    std::set<std::string> keys;
    std::string key;
  };
  std::vector<Frame> frames_;

  void advance() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.array) {
        out += "[" + std::to_string(f.index) + "]";
      } else {
        if (!out.empty()) out += ".";
        out += f.key;
      }
    }
    return out;
  }
};

}  // namespace

json parse_json_text(const std::string& text, const std::string& file, int line) {
  try {
    DuplicateKeyCheck check;
    json j = json::parse(text, std::ref(check));
    if (!check.duplicate_path.empty()) {
      const std::string& p = check.duplicate_path;
      const std::string key = p.substr(p.find_last_of('.') == std::string::npos ? 0 : p.find_last_of('.') + 1);
      throw InputError(file, line, p,
                       "duplicate key \"" + key + "\" (expected each key once per object)");
    }
    return j;
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based index of the byte where parsing failed; turn it
    // into a line and a byte column within that line.
    size_t offset = e.byte == 0 ? 0 : e.byte - 1;
    if (offset > text.size()) offset = text.size();
    int text_line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++text_line;
        line_start = i + 1;
      }
    }
    const size_t column = offset - line_start + 1;
    // For a JSONL record the caller's line number is the file line; the text
    // is normally one line, but a record with embedded newlines still maps
    // onto the right file line.
    const int report_line = line > 0 ? line + text_line - 1 : text_line;
    throw InputError(file, report_line, "",
                     "invalid JSON at column " + std::to_string(column) + ": " +
                         parse_error_reason(e.what()));
  }
}

void for_each_jsonl_record(const std::filesystem::path& path, Diagnostics& diags,
                           const std::function<void(const json&, int)>& record) {
  const std::string file = path.string();
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const InputError& e) {
    diags.append(e.diagnostics());
    return;
  }
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string_view raw(text.data() + pos, end - pos);
    pos = end + 1;
    if (raw.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      record(parse_json_text(std::string(raw), file, line), line);
    } catch (const InputError& e) {
      diags.append(e.diagnostics());
    }
  }
}

json load_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_text_file(path), path.string());
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  const std::string shown = path.string();
  auto fail = [&](const std::string& what, int err) {
    throw InputError(shown, 0, "", what + ": " + errno_text(err));
  };

  const std::filesystem::path parent = path.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw InputError(shown, 0, "", "cannot create folder " + parent.string() + ": " + ec.message());
  }

  // The temp file sits in the destination folder so rename() stays on one
  // file system and is atomic: readers see the old file or the new one, never
  // a partial write. The name is unique per process and call; O_EXCL guards
  // against leftovers. 0666 lets the umask decide permissions, like a plain open.
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) fail("cannot write", errno);
  }
  if (fd < 0) fail("cannot create a temporary file", EEXIST);

  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("cannot write", err);
    }
    done += static_cast<size_t>(n);
  }
  // No fsync: atomicity against concurrent readers is what callers need; crash
  // durability is not worth a disk flush per result file.
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot write", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot write", err);
  }
}

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(k);
    if (it == cur->end()) return std::nullopt;
    cur = &*it;
  }
  if (!cur->is_number()) return std::nullopt;
  return cur->get<double>();
}

double sum_numbers(const json& obj) {
  double s = 0;
  if (obj.is_object())
    for (const auto& [k, v] : obj.items())
      if (v.is_number()) s += v.get<double>();
  return s;
}

}  // namespace solbench
