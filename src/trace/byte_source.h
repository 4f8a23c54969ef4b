// Where trace bytes come from: a file or memory, gzip-decompressed on the fly
// when the data starts with the gzip magic bytes. Reads in chunks, so a large
// trace never needs to be in memory whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
};

// Opens `path`; refuses missing files, folders and empty files (InputError).
std::unique_ptr<ByteSource> open_file_source(const std::string& path);
// Reads from memory that must outlive the source.
std::unique_ptr<ByteSource> open_memory_source(std::string_view bytes, std::string_view label);

}  // namespace attnprof
