// Paths to the real traces the tests read.
#pragma once

#include <string>

namespace attnprof::test {

inline std::string example_trace(const std::string& name) {
  return std::string(ATTNPROF_SOURCE_DIR) + "/examples/traces/" + name;
}
inline std::string data_file(const std::string& name) {
  return std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/" + name;
}

}  // namespace attnprof::test
