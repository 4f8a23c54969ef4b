// Writing an output file whole or not at all: the text goes to a temporary file
// beside the target, which is renamed over it once complete, so a failure (a
// full disk, a missing folder) never leaves a half-written file.
#pragma once

#include <string>
#include <string_view>

namespace attnprof {

// One output file being written. Failures while writing are kept (the first
// one) and reported by commit(); a file never committed is removed.
class AtomicFile {
 public:
  // Throws InputError "PATH: cannot write: REASON" when the temporary cannot be made.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view text);  // nothing once a write has failed
  // Hands the descriptor to a writer of its own (gzdopen), which closes it; it
  // reports its failures through fail().
  int take_fd();
  void fail(std::string reason);  // the first reason is kept
  // Closes, then renames over the target. Throws InputError "PATH: cannot write: REASON".
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  std::string error_;
  bool committed_ = false;
};

// The whole of `text` as the file `path`. Throws InputError "PATH: cannot write: REASON".
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace attnprof
