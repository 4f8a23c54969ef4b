// An open-addressing hash table from text to StringId, the lookup behind
// interning. It refers to text stored elsewhere (it never copies) and keeps
// each hash beside its id, so a probe that misses rarely compares strings.
//
// Long strings are hashed from samples (length, both ends, a few words between):
// kernel names run to hundreds of bytes and are looked up once per event. Names
// that differ only between the samples share a hash; once 8 of them would share
// one, the index hashes every byte from then on. Both hashes start from a
// per-process random seed, so texts cannot be crafted offline to share a full
// hash either: no trace can make lookups compare long runs of texts.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/event.h"

namespace attnprof {

class StringIndex {
 public:
  // The id stored for `text`, or kNoString.
  StringId find(std::string_view text) const noexcept { return find(text, hash(text)); }
  // Adds `text` (absent so far; it must outlive the index) as `id` (not kNoString).
  void insert(std::string_view text, StringId id);
  // Whether sampled hashes collided often enough to hash every byte.
  bool hashes_every_byte() const noexcept { return every_byte_; }

  static std::uint64_t sampled_hash(std::string_view s) noexcept;
  static std::uint64_t full_hash(std::string_view s) noexcept;

 private:
  static constexpr int kMaxSharedHash = 8;  // texts under one sampled hash before hashing every byte

  std::uint64_t hash(std::string_view s) const noexcept { return every_byte_ ? full_hash(s) : sampled_hash(s); }
  StringId find(std::string_view text, std::uint64_t h) const noexcept {
    if (slots_.empty()) return kNoString;
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNoString) return kNoString;
      if (s.hash == h && s.text == text) return s.id;
    }
  }
  struct Slot {
    std::uint64_t hash = 0;
    std::string_view text;
    StringId id = kNoString;  // kNoString: empty slot
  };
  void place(const Slot& slot);
  void rebuild(std::size_t size);  // rehashes every slot into `size` slots
  std::vector<Slot> slots_;        // a power of two in size, at most half full
  std::size_t mask_ = 0;
  std::size_t used_ = 0;
  bool every_byte_ = false;
};

}  // namespace attnprof
