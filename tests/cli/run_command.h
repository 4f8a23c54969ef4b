// Runs a shell command and captures its exit code, stdout and stderr (tests only).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace attnprof::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline CommandResult run_command(const std::string& command) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("attnprof_cli_out_" + std::to_string(::getpid()) + "_" + std::to_string(counter));
  const auto err = dir / ("attnprof_cli_err_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const int status = std::system((command + " >" + out.string() + " 2>" + err.string() + " </dev/null").c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

inline std::string attnprof_binary() { return std::string(ATTNPROF_BINARY_DIR) + "/attnprof"; }

}  // namespace attnprof::test
