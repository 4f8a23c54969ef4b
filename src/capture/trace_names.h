// Where each process of a recorded program writes its trace, and the list of
// what was written (CUDA-free, header-only: the injection library and the
// `attnprof record` command share it).
//
// The process `attnprof record` started writes PATH. Any other process that
// initializes CUDA (a launcher's workers, DataLoader or compile workers) writes
// PATH with ".rank<R>" before ".json" when the launcher set RANK (else
// LOCAL_RANK) to a number, else ".<pid>", and only if it launched GPU work. Each
// trace written is claimed in PATH.traces, a line "pid<TAB>rank<TAB>path" (path
// empty: a process that started CUDA but launched no GPU work, so wrote none),
// so two processes of one rank never overwrite each other and the command can
// list them at exit.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>

namespace attnprof::capture {

// RANK, else LOCAL_RANK, when one is a decimal number; else "".
inline std::string launcher_rank(const char* rank, const char* local_rank) {
  for (const char* v : {rank, local_rank}) {
    if (v == nullptr || *v == '\0') continue;
    const std::string s(v);
    if (s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos) return s;
  }
  return {};
}

// PATH with `tag` (".rank0", ".1234") before its ".json" (or at its end).
inline std::string tagged_trace_path(const std::string& path, const std::string& tag) {
  std::size_t ext = path.rfind(".json");
  if (ext == std::string::npos) ext = path.size();
  return fmt::format("{}{}{}", path.substr(0, ext), tag, path.substr(ext));
}

inline std::string process_trace_path(const std::string& path, bool main_process, long pid, const std::string& rank) {
  if (main_process) return path;
  return tagged_trace_path(path, rank.empty() ? fmt::format(".{}", pid) : fmt::format(".rank{}", rank));
}

inline std::string trace_list_path(const std::string& path) { return fmt::format("{}.traces", path); }

struct WrittenTrace {
  long pid = 0;
  std::string rank;  // "" when the launcher set none
  std::string path;  // "" : no GPU work, no trace
};

inline std::vector<WrittenTrace> read_trace_list(const std::string& list_path) {
  std::vector<WrittenTrace> out;
  std::ifstream in(list_path);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t a = line.find('\t');
    const std::size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos) continue;
    WrittenTrace t;
    t.pid = std::strtol(line.substr(0, a).c_str(), nullptr, 10);
    t.rank = line.substr(a + 1, b - a - 1);
    t.path = line.substr(b + 1);
    out.push_back(t);
  }
  return out;
}

// One line, appended in one write (O_APPEND: lines of concurrent processes do not interleave).
inline void append_trace_list(const std::string& list_path, long pid, const std::string& rank,
                              const std::string& path) {
  const std::string line = fmt::format("{}\t{}\t{}\n", pid, rank, path);
  const int fd = ::open(list_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const auto n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

// The path this process writes: `wanted`, unless another process claimed it first (two processes
// of one rank), then `wanted` with ".<pid>" added. The claim is appended to the list, read and
// appended under an exclusive lock on the list, so two processes claiming at once cannot both win.
inline std::string claim_trace_path(const std::string& list_path, const std::string& wanted, long pid,
                                    const std::string& rank) {
  const int fd = ::open(list_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::flock(fd, LOCK_EX);
  std::string path = wanted;
  for (const WrittenTrace& t : read_trace_list(list_path))
    if (t.path == wanted && t.pid != pid) path = tagged_trace_path(wanted, fmt::format(".{}", pid));
  append_trace_list(list_path, pid, rank, path);
  if (fd >= 0) ::close(fd);  // releases the lock
  return path;
}

}  // namespace attnprof::capture
