// Without a CUDA toolkit there are no CUDA implementations.
#include "bench/implementations.h"

namespace attnprof::bench {

std::vector<Implementation> cuda_implementations() { return {}; }

std::string cuda_device_name(std::string* why) {
  if (why) *why = "attnprof was built without CUDA";
  return {};
}

}  // namespace attnprof::bench
