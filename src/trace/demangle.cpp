// Itanium C++ ABI demangling through the compiler runtime.
#include "trace/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace attnprof {

std::string demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  if (status != 0 || out == nullptr) return mangled;
  return std::string(out.get());
}

}  // namespace attnprof
