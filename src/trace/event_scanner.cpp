// The byte scanner behind streaming reads (see event_scanner.h).
#include "trace/event_scanner.h"

#include <cstdint>
#include <cstring>

namespace attnprof::json_scan {

const char* string_end(const char* p, const char* end) {
  for (;;) {
    const auto* q = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(end - p)));
    if (q == nullptr) return nullptr;
    // A quote is escaped when an odd number of backslashes precede it. The
    // opening quote stops the walk, so it never leaves the string.
    const char* b = q;
    while (b[-1] == '\\') --b;
    if (((q - b) & 1) == 0) return q + 1;
    p = q + 1;
  }
}

const char* value_end(const char* p, const char* end, bool at_eof) {
  if (p >= end) return nullptr;
  const char first = *p;
  if (first == '"') return string_end(p + 1, end);
  if (first != '{' && first != '[') {
    while (p < end) {
      const char c = *p;
      if (c == ',' || c == '}' || c == ']' || is_space(c)) return p;
      ++p;
    }
    return at_eof ? end : nullptr;
  }
  int depth = 0;
  while (p < end) {
    const char c = *p;
    if (c == '"') {
      p = string_end(p + 1, end);
      if (p == nullptr) return nullptr;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return p + 1;
    }
    ++p;
  }
  return nullptr;
}

}  // namespace attnprof::json_scan

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnprof::json_scan {

ElementScan scan_elements_scalar(const char* p, const char* end, std::vector<const char*>& ends) {
  int depth = 0;
  while (p < end) {
    const char c = *p;
    if (c == '"') {
      p = string_end(p + 1, end);
      if (p == nullptr) return {};
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return {p};
      if (--depth == 0) ends.push_back(p + 1);
    }
    ++p;
  }
  return {};
}

#if defined(__x86_64__)
namespace {

// Bits of the 64 bytes at `b` equal to `c`.
__attribute__((target("avx2"))) inline std::uint64_t eq_mask(__m256i lo, __m256i hi, char c) {
  const __m256i v = _mm256_set1_epi8(c);
  const auto l = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
  const auto h = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
  return static_cast<std::uint64_t>(l) | (static_cast<std::uint64_t>(h) << 32);
}

// Bit i set when an odd number of quote bits are at positions <= i.
__attribute__((target("pclmul,sse2"))) inline std::uint64_t prefix_xor(std::uint64_t bits) {
  const __m128i all_ones = _mm_set1_epi8(static_cast<char>(0xFF));
  const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(bits)), all_ones, 0);
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(r));
}

// Characters escaped by a backslash (the character after an odd run of
// backslashes). `prev_escaped` carries a pending escape into the next block.
inline std::uint64_t escaped_chars(std::uint64_t backslash, std::uint64_t& prev_escaped) {
  constexpr std::uint64_t kEven = 0x5555555555555555ULL;
  backslash &= ~prev_escaped;
  const std::uint64_t follows_escape = (backslash << 1) | prev_escaped;
  const std::uint64_t odd_starts = backslash & ~kEven & ~follows_escape;
  std::uint64_t even_starts = 0;
  prev_escaped = __builtin_add_overflow(odd_starts, backslash, &even_starts) ? 1 : 0;
  const std::uint64_t invert = even_starts << 1;
  return (kEven ^ invert) & follows_escape;
}

__attribute__((target("avx2,pclmul,bmi"))) ElementScan scan_elements_avx2(const char* p, const char* end,
                                                                          std::vector<const char*>& ends) {
  int depth = 0;
  std::uint64_t prev_escaped = 0;
  std::uint64_t prev_in_string = 0;  // all ones when a string continues into the block
  alignas(32) char tail[64];
  for (const char* block = p; block < end; block += 64) {
    const char* src = block;
    if (end - block < 64) {  // last partial block: pad with spaces
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, block, static_cast<std::size_t>(end - block));
      src = tail;
    }
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    const std::uint64_t quotes = eq_mask(lo, hi, '"') & ~escaped_chars(eq_mask(lo, hi, '\\'), prev_escaped);
    const std::uint64_t in_string = prefix_xor(quotes) ^ prev_in_string;
    prev_in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(in_string) >> 63);
    std::uint64_t brackets =
        (eq_mask(lo, hi, '{') | eq_mask(lo, hi, '[') | eq_mask(lo, hi, '}') | eq_mask(lo, hi, ']')) & ~in_string;
    while (brackets != 0) {
      const int i = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      const char c = src[i];
      if (c == '{' || c == '[') {
        ++depth;
      } else {
        if (depth == 0) return {block + i};
        if (--depth == 0) ends.push_back(block + i + 1);
      }
    }
  }
  return {};
}

}  // namespace

bool simd_scanner_available() {
  static const bool ok =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("bmi");
  return ok;
}

ElementScan scan_elements(const char* p, const char* end, std::vector<const char*>& ends) {
  return simd_scanner_available() ? scan_elements_avx2(p, end, ends) : scan_elements_scalar(p, end, ends);
}

#else

bool simd_scanner_available() { return false; }
ElementScan scan_elements(const char* p, const char* end, std::vector<const char*>& ends) {
  return scan_elements_scalar(p, end, ends);
}

#endif

}  // namespace attnprof::json_scan
