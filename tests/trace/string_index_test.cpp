// The interning hash table and the pool built on it.
#include "trace/string_index.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>

#include "trace/string_pool.h"

namespace attnprof {
namespace {

TEST(StringIndex, FindsEveryTextAcrossGrowth) {
  std::deque<std::string> texts;
  StringIndex index;
  for (StringId id = 1; id <= 5000; ++id) {
    // Short names and long kernel-like names that differ only in the middle.
    const std::string& t = texts.emplace_back(id % 2 ? "op" + std::to_string(id)
                                                     : std::string(300, 'k') + std::to_string(id) + std::string(300, 'k'));
    index.insert(t, StringIndex::hash(t), id);
  }
  for (StringId id = 1; id <= 5000; ++id) {
    const std::string& t = texts[id - 1];
    EXPECT_EQ(index.find(t, StringIndex::hash(t)), id) << t;
  }
  EXPECT_EQ(index.find("op0", StringIndex::hash("op0")), kNoString);
  EXPECT_EQ(index.find("", StringIndex::hash("")), kNoString);
}

TEST(StringIndex, EqualHashesAreToldApartByText) {
  StringIndex index;
  index.insert("first", 42, 1);
  index.insert("second", 42, 2);
  EXPECT_EQ(index.find("first", 42), 1u);
  EXPECT_EQ(index.find("second", 42), 2u);
  EXPECT_EQ(index.find("third", 42), kNoString);
}

TEST(StringPool, InternsOncePerTextAndFinds) {
  StringPool pool;
  EXPECT_EQ(pool.intern(""), kNoString);
  const StringId a = pool.intern("aten::mm");
  const StringId b = pool.intern(std::string(700, 'x'));
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.intern(std::string("aten::mm")), a);
  EXPECT_EQ(pool.find(std::string(700, 'x')), b);
  EXPECT_EQ(pool.find("aten::bmm"), kNoString);
  EXPECT_EQ(pool.view(b), std::string(700, 'x'));
  EXPECT_EQ(pool.size(), 3u);
}

}  // namespace
}  // namespace attnprof
