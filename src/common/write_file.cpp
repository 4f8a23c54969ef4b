#include "common/write_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/input_error.h"

namespace attnprof {

void write_file_atomically(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp = (folder / fmt::format(".{}.tmp.XXXXXX", target.filename().string())).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  std::string error;
  std::size_t done = 0;
  while (error.empty() && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      error = std::strerror(errno);
    else
      done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error.empty()) error = std::strerror(errno);
  if (error.empty()) ::chmod(tmp.c_str(), 0644);
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) error = std::strerror(errno);
  if (!error.empty()) {
    std::remove(tmp.c_str());
    throw InputError(fmt::format("{}: cannot write: {}", path, error));
  }
}

}  // namespace attnprof
