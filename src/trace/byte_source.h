// Where trace bytes come from: a file or memory, gzip-decompressed on the fly
// when the data starts with the gzip magic bytes. Reads in chunks, so a large
// trace never needs to be in memory whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace attnprof {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `n` bytes; returns how many (0 only at the end). Throws InputError.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
  // The input's name for error messages.
  virtual const std::string& label() const = 0;
  // Expected number of bytes read() will deliver; 0 when unknown.
  virtual std::uint64_t size_hint() const { return 0; }

  // Sources whose bytes are all addressable at once (a plain file, mapped)
  // hand them out instead of copying them: `view()` is every byte of the
  // input, writable (a private copy-on-write mapping: writes never reach the
  // file), followed by at least kViewPadding readable bytes. Empty when the
  // source can only be read(); a source is used one way or the other.
  static constexpr std::size_t kViewPadding = 4096;
  virtual std::span<char> view() { return {}; }
  // The caller is done with view()[0, offset): its pages may leave memory.
  virtual void release_before(std::uint64_t /*offset*/) {}
};

// Opens `path`; refuses missing files, folders and empty files (InputError).
// With `map`, a plain (not gzip) regular file is mapped and offers view().
std::unique_ptr<ByteSource> open_file_source(const std::string& path, bool map);
// Reads from memory that must outlive the source.
std::unique_ptr<ByteSource> open_memory_source(std::string_view bytes, std::string_view label);

}  // namespace attnprof
