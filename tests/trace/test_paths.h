// Paths to the real traces the tests read.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace attnprof::test {

inline std::string example_trace(const std::string& name) {
  return std::string(ATTNPROF_SOURCE_DIR) + "/examples/traces/" + name;
}
inline std::string data_file(const std::string& name) {
  return std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/" + name;
}

// Every real trace the tests carry (examples/traces and tests/data, plain and
// gzip), sorted; `plain_only` leaves the gzip ones out.
inline std::vector<std::string> real_trace_files(bool plain_only = false) {
  std::vector<std::string> files;
  for (const auto& dir :
       {std::string(ATTNPROF_SOURCE_DIR) + "/examples/traces", std::string(ATTNPROF_SOURCE_DIR) + "/tests/data"})
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const auto ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".json" || (!plain_only && ext == ".gz")))
        files.push_back(entry.path().string());
    }
  // The real-program corpus (gzip only: facts.json beside it is not a trace).
  if (!plain_only)
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/corpus"))
      if (entry.path().extension() == ".gz") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace attnprof::test
