// The interning hash table (see string_index.h).
#include "trace/string_index.h"

#include <cstring>
#include <random>

namespace attnprof {
namespace {

constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;

// A per-process seed, so texts cannot be crafted offline to share a full hash.
// Ids are handed out in insertion order, so no output depends on it.
const std::uint64_t kSeed = [] {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}();

inline std::uint64_t mix(std::uint64_t h, const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  h = (h ^ w) * kMul;
  return h ^ (h >> 29);
}

}  // namespace

// Eight bytes at a time with a multiply-xorshift; the low bits pick the slot,
// so the last step folds the high bits down.
std::uint64_t StringIndex::sampled_hash(std::string_view s) noexcept {
  if (s.size() <= 64) return full_hash(s);
  std::uint64_t h = kSeed ^ ((s.size() + 1) * kMul);
  const char* p = s.data();
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < 32; i += 8) h = mix(h, p + i);
  for (std::size_t k = 1; k <= 7; ++k) h = mix(h, p + (n - 8) * k / 8);
  for (std::size_t i = n - 32; i < n; i += 8) h = mix(h, p + i);
  return h ^ (h >> 32);
}

std::uint64_t StringIndex::full_hash(std::string_view s) noexcept {
  std::uint64_t h = kSeed ^ ((s.size() + 1) * kMul);
  const char* p = s.data();
  const std::size_t n = s.size();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) h = mix(h, p + i);
  // The last 1-7 bytes, by fixed-size loads (a copy of variable length into a
  // word, then reading the word, stalls on store forwarding): overlapping the
  // bytes before when there are 8 or more, else two overlapping halves.
  std::uint64_t w = 0;
  if (i < n) {
    if (n >= 8) {
      std::memcpy(&w, p + n - 8, 8);
    } else if (n >= 4) {
      std::uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      w = a | (static_cast<std::uint64_t>(b) << 32);
    } else {
      w = static_cast<unsigned char>(p[0]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8) |
          (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n - 1])) << 16);
    }
  }
  h = (h ^ w) * kMul;
  return h ^ (h >> 32);
}

void StringIndex::place(const Slot& slot) {
  std::size_t i = slot.hash & mask_;
  while (slots_[i].id != kNoString) i = (i + 1) & mask_;
  slots_[i] = slot;
}

void StringIndex::rebuild(std::size_t size) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(size, Slot{});
  mask_ = size - 1;
  for (Slot& s : old)
    if (s.id != kNoString) {
      s.hash = hash(s.text);
      place(s);
    }
}

void StringIndex::insert(std::string_view text, StringId id) {
  if (2 * (used_ + 1) > slots_.size()) rebuild(slots_.empty() ? 64 : 2 * slots_.size());
  std::uint64_t h = hash(text);
  if (!every_byte_) {
    int shared = 0;
    for (std::size_t i = h & mask_; slots_[i].id != kNoString; i = (i + 1) & mask_) shared += slots_[i].hash == h;
    if (shared + 1 >= kMaxSharedHash) {
      every_byte_ = true;
      rebuild(slots_.size());
      h = hash(text);
    }
  }
  place({h, text, id});
  ++used_;
}

}  // namespace attnprof
