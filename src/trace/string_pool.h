// Interns strings: each distinct text is stored once and named by a small id.
// Kernel and op names repeat millions of times in a large trace.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event.h"
#include "trace/string_index.h"

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
  std::deque<std::string> storage_;  // deque: element addresses never move
  std::vector<std::string_view> views_;
  StringIndex index_;
};

}  // namespace attnprof
