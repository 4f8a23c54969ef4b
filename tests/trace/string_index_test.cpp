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
    const std::string& t = texts.emplace_back(
        id % 2 ? "op" + std::to_string(id) : std::string(300, 'k') + std::to_string(id) + std::string(300, 'k'));
    index.insert(t, id);
  }
  for (StringId id = 1; id <= 5000; ++id) {
    const std::string& t = texts[id - 1];
    EXPECT_EQ(index.find(t), id) << t;
  }
  EXPECT_EQ(index.find("op0"), kNoString);
  EXPECT_EQ(index.find(""), kNoString);
  EXPECT_FALSE(index.hashes_every_byte());  // these texts differ where the samples look
}

// Long texts that differ only between the sampled words share a sampled hash:
// each is still found, and past a few of them the index hashes every byte, so a
// lookup compares a handful of texts, not all of them.
TEST(StringIndex, TextsThatDefeatTheSamplesAreStillCheapToFind) {
  std::deque<std::string> texts;
  StringIndex index;
  for (StringId id = 1; id <= 3000; ++id) {
    std::string t(600, 'k');
    const std::string digits = std::to_string(100000 + id);
    t.replace(100, digits.size(), digits);  // bytes 100-105: between the samples of a 600-byte text
    texts.push_back(t);
  }
  ASSERT_EQ(StringIndex::sampled_hash(texts[0]), StringIndex::sampled_hash(texts[1]));
  ASSERT_NE(StringIndex::full_hash(texts[0]), StringIndex::full_hash(texts[1]));
  for (StringId id = 1; id <= 3000; ++id) index.insert(texts[id - 1], id);
  EXPECT_TRUE(index.hashes_every_byte());
  for (StringId id = 1; id <= 3000; ++id) EXPECT_EQ(index.find(texts[id - 1]), id);
  EXPECT_EQ(index.find(std::string(600, 'k')), kNoString);
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
