// Interns strings: each distinct text is stored once and named by a small id.
// Kernel and op names repeat millions of times in a large trace.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/event.h"

namespace attnprof {

class StringPool {
 public:
  StringPool();
  StringId intern(std::string_view text);
  std::string_view view(StringId id) const { return views_[id]; }
  std::size_t size() const { return views_.size(); }
  // Looks up without inserting; kNoString when absent (or when `text` is empty).
  StringId find(std::string_view text) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept;
  };
  std::deque<std::string> storage_;  // deque: element addresses never move
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StringId, Hash, std::equal_to<>> index_;
};

}  // namespace attnprof
