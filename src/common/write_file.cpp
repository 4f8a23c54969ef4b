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

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  const fs::path target(path_);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  tmp_ = (folder / fmt::format(".{}.tmp.XXXXXX", target.filename().string())).string();
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot write: {}", path_, std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFile::write(std::string_view text) {
  std::size_t done = 0;
  while (error_.empty() && done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fail(std::strerror(errno));
    else
      done += static_cast<std::size_t>(n);
  }
}

int AtomicFile::take_fd() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void AtomicFile::fail(std::string reason) {
  if (error_.empty()) error_ = std::move(reason);
}

void AtomicFile::commit() {
  if (fd_ >= 0) {
    if (::close(fd_) != 0) fail(std::strerror(errno));
    fd_ = -1;
  }
  if (error_.empty()) ::chmod(tmp_.c_str(), 0644);
  if (error_.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0) fail(std::strerror(errno));
  if (!error_.empty()) throw InputError(fmt::format("{}: cannot write: {}", path_, error_));  // ~ removes tmp
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

}  // namespace attnprof
