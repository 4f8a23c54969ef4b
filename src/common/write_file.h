// Writing an output file whole or not at all: the text goes to a temporary file
// beside the target, which is renamed over it once complete, so a failure (a
// full disk, a missing folder) never leaves a half-written file.
#pragma once

#include <string>
#include <string_view>

namespace attnprof {

// Throws InputError "PATH: cannot write: REASON".
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace attnprof
