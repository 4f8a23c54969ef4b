// The interning hash table (see string_index.h).
#include "trace/string_index.h"

#include <cstring>

namespace attnprof {
namespace {

constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;

inline std::uint64_t mix(std::uint64_t h, const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  h = (h ^ w) * kMul;
  return h ^ (h >> 29);
}

}  // namespace

// Eight bytes at a time with a multiply-xorshift; the low bits pick the slot,
// so the last step folds the high bits down.
std::uint64_t StringIndex::hash(std::string_view s) noexcept {
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
  return h ^ (h >> 32);
}

void StringIndex::place(const Slot& slot) {
  std::size_t i = slot.hash & mask_;
  while (slots_[i].id != kNoString) i = (i + 1) & mask_;
  slots_[i] = slot;
}

void StringIndex::insert(std::string_view text, std::uint64_t h, StringId id) {
  if (2 * (used_ + 1) > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old)
      if (s.id != kNoString) place(s);
  }
  place({h, text, id});
  ++used_;
}

}  // namespace attnprof
