// Demangles C++ symbol names (CUPTI reports kernels mangled: "_Z..."); any
// other text is returned unchanged.
#pragma once

#include <string>
#include <string_view>

namespace attnprof {

std::string demangle(std::string_view name);

}  // namespace attnprof
