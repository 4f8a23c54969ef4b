// The one error type for bad input: its message is a single line that names
// the input and says what is wrong ("trace.json: truncated inside traceEvents").
#pragma once

#include <stdexcept>
#include <string>

namespace attnprof {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnprof
