// The one error type for bad input, shared by every part (trace, analysis,
// attention, bench, CLI): its message is a single line that names the input
// and says what is wrong ("trace.json: truncated inside traceEvents"). The CLI
// turns it into exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace attnprof {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnprof
