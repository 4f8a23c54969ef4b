// Interning of event names, categories and string lanes.
#include "trace/string_pool.h"

#include <cstring>

namespace attnprof {

// Kernel names are long (hundreds of bytes) and hashed once per event: long
// strings hash their length, both ends and a few words between (equality is
// still checked in full), eight bytes at a time with a multiply-xorshift.
namespace {

constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;

inline std::uint64_t mix(std::uint64_t h, const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  h = (h ^ w) * kMul;
  return h ^ (h >> 29);
}

}  // namespace

std::size_t StringPool::Hash::operator()(std::string_view s) const noexcept {
  std::uint64_t h = (s.size() + 1) * kMul;
  const char* p = s.data();
  const std::size_t n = s.size();
  if (n <= 64) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) h = mix(h, p + i);
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    h = (h ^ w) * kMul;
  } else {
    for (std::size_t i = 0; i < 32; i += 8) h = mix(h, p + i);
    for (std::size_t k = 1; k <= 7; ++k) h = mix(h, p + (n - 8) * k / 8);
    for (std::size_t i = n - 32; i < n; i += 8) h = mix(h, p + i);
  }
  return static_cast<std::size_t>(h ^ (h >> 32));
}

StringPool::StringPool() {
  views_.emplace_back();  // id 0: the empty string
}

StringId StringPool::intern(std::string_view text) {
  if (text.empty()) return kNoString;
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  const std::string& stored = storage_.emplace_back(text);
  const auto id = static_cast<StringId>(views_.size());
  views_.emplace_back(stored);
  index_.emplace(views_.back(), id);
  return id;
}

StringId StringPool::find(std::string_view text) const {
  if (text.empty()) return kNoString;
  auto it = index_.find(text);
  return it == index_.end() ? kNoString : it->second;
}

}  // namespace attnprof
