// Interning of event names, categories and string lanes.
#include "trace/string_pool.h"

namespace attnprof {

StringPool::StringPool() {
  views_.emplace_back();  // id 0: the empty string
}

StringId StringPool::intern(std::string_view text) {
  if (text.empty()) return kNoString;
  if (const StringId id = index_.find(text); id != kNoString) return id;
  const std::string& stored = storage_.emplace_back(text);
  const auto id = static_cast<StringId>(views_.size());
  views_.emplace_back(stored);
  index_.insert(views_.back(), id);
  return id;
}

StringId StringPool::find(std::string_view text) const {
  if (text.empty()) return kNoString;
  return index_.find(text);
}

}  // namespace attnprof
