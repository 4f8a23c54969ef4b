// An open-addressing hash table from text to StringId, the lookup behind
// interning. It refers to text stored elsewhere (it never copies) and keeps
// each hash beside its id, so a probe that misses rarely compares strings.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/event.h"

namespace attnprof {

class StringIndex {
 public:
  // Kernel names are long (hundreds of bytes) and hashed once per event: long
  // strings hash their length, both ends and a few words between (equality is
  // still checked in full).
  static std::uint64_t hash(std::string_view s) noexcept;

  // The id stored for `text` (whose hash is `h`), or kNoString.
  StringId find(std::string_view text, std::uint64_t h) const noexcept {
    if (slots_.empty()) return kNoString;
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNoString) return kNoString;
      if (s.hash == h && s.text == text) return s.id;
    }
  }
  // Adds `text` (absent so far; it must outlive the index) as `id` (not kNoString).
  void insert(std::string_view text, std::uint64_t h, StringId id);

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::string_view text;
    StringId id = kNoString;  // kNoString: empty slot
  };
  void place(const Slot& slot);
  std::vector<Slot> slots_;  // a power of two in size, at most half full
  std::size_t mask_ = 0;
  std::size_t used_ = 0;
};

}  // namespace attnprof
