// File, memory and gzip byte sources for the trace reader.
#include "trace/byte_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "common/input_error.h"

namespace attnprof {
namespace {

bool gzip_magic(const unsigned char* head) { return head[0] == 0x1f && head[1] == 0x8b; }

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::string label, std::uint64_t size) : fd_(fd), label_(std::move(label)), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  std::size_t read(char* dst, std::size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: read failed: {}", label_, std::strerror(errno)));
    }
  }
  const std::string& label() const override { return label_; }
  std::uint64_t size_hint() const override { return size_; }

 private:
  int fd_;
  std::string label_;
  std::uint64_t size_;
};

// A plain regular file, mapped privately: the reader parses it in place. The
// mapping is followed by anonymous zero pages for the padding simdjson reads
// past the last byte; pages the reader is done with are dropped from memory
// (they stay in the page cache), so resident memory does not grow with the
// file.
class MappedFileSource final : public ByteSource {
 public:
  // Maps `fd` (which it then owns); nullptr when the kernel refuses, and the
  // caller reads the file instead.
  static std::unique_ptr<MappedFileSource> open(int fd, std::string label, std::uint64_t size) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t file_span = (size + page - 1) / page * page;
    const std::uint64_t total = file_span + (kViewPadding + page - 1) / page * page;
    if (size == 0 || total > SIZE_MAX) return nullptr;
    void* region = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return nullptr;
    if (::mmap(region, file_span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
      ::munmap(region, total);
      return nullptr;
    }
    ::madvise(region, file_span, MADV_SEQUENTIAL);
    return std::unique_ptr<MappedFileSource>(
        new MappedFileSource(fd, std::move(label), size, static_cast<char*>(region), total, page));
  }
  ~MappedFileSource() override {
    ::munmap(map_, map_bytes_);
    ::close(fd_);
  }
  MappedFileSource(const MappedFileSource&) = delete;
  MappedFileSource& operator=(const MappedFileSource&) = delete;

  std::size_t read(char* dst, std::size_t n) override {  // the reader takes view(); this copies
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - pos_));
    std::memcpy(dst, map_ + pos_, take);
    pos_ += take;
    return take;
  }
  const std::string& label() const override { return label_; }
  std::uint64_t size_hint() const override { return size_; }
  std::span<char> view() override { return {map_, static_cast<std::size_t>(size_)}; }
  void release_before(std::uint64_t offset) override {
    const std::uint64_t end = std::min(offset, size_) / page_ * page_;
    if (end <= released_) return;
    ::madvise(map_ + released_, static_cast<std::size_t>(end - released_), MADV_DONTNEED);
    released_ = end;
  }

 private:
  MappedFileSource(int fd, std::string label, std::uint64_t size, char* map, std::uint64_t map_bytes,
                   std::uint64_t page)
      : fd_(fd), label_(std::move(label)), size_(size), map_(map), map_bytes_(map_bytes), page_(page) {}
  int fd_;
  std::string label_;
  std::uint64_t size_;
  char* map_;
  std::uint64_t map_bytes_;
  std::uint64_t page_;
  std::uint64_t pos_ = 0;
  std::uint64_t released_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view bytes, std::string_view label) : bytes_(bytes), label_(label) {}
  std::size_t read(char* dst, std::size_t n) override {
    const std::size_t take = std::min(n, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  const std::string& label() const override { return label_; }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
  std::string label_;
};

// Inflates a gzip stream (several concatenated members allowed) from `raw`.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> raw, std::string prefix) : raw_(std::move(raw)), in_(kInBytes) {
    std::memcpy(in_.data(), prefix.data(), prefix.size());
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(prefix.size());
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK)
      throw InputError(fmt::format("{}: cannot start gzip decompression", label()));
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(char* dst, std::size_t n) override {
    if (done_) return 0;
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    const uInt want = zs_.avail_out;
    while (zs_.avail_out == want) {
      if (zs_.avail_in == 0 && !raw_eof_) {
        const std::size_t got = raw_->read(in_.data(), in_.size());
        if (got == 0) raw_eof_ = true;
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(got);
      }
      if (zs_.avail_in == 0 && raw_eof_) {
        if (!member_ended_)
          throw InputError(fmt::format("{}: truncated gzip data (the compressed stream ends early)", label()));
        done_ = true;
        break;
      }
      member_ended_ = false;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
        inflateReset(&zs_);  // another gzip member may follow
      } else if (rc == Z_BUF_ERROR) {
        continue;  // needs more input
      } else if (rc != Z_OK) {
        throw InputError(
            fmt::format("{}: bad gzip data ({})", label(), zs_.msg != nullptr ? zs_.msg : "corrupt stream"));
      }
    }
    return want - zs_.avail_out;
  }
  const std::string& label() const override { return raw_->label(); }
  std::uint64_t size_hint() const override { return raw_->size_hint() * 8; }  // JSON compresses ~8-20x

 private:
  static constexpr std::size_t kInBytes = 1u << 20;
  std::unique_ptr<ByteSource> raw_;
  std::vector<char> in_;
  z_stream zs_{};
  bool raw_eof_ = false;
  bool member_ended_ = false;
  bool done_ = false;
};

// Reads up to two bytes to look for the gzip magic; wraps the source if found.
std::unique_ptr<ByteSource> maybe_gunzip(std::unique_ptr<ByteSource> raw, bool require_bytes) {
  char head[2];
  std::size_t got = 0;
  while (got < 2) {
    const std::size_t n = raw->read(head + got, 2 - got);
    if (n == 0) break;
    got += n;
  }
  if (got == 0 && require_bytes) throw InputError(fmt::format("{}: file is empty", raw->label()));
  std::string prefix(head, got);
  if (got == 2 && gzip_magic(reinterpret_cast<const unsigned char*>(head)))
    return std::make_unique<GzipSource>(std::move(raw), std::move(prefix));

  // Not gzip: hand back the peeked bytes first.
  class Prefixed final : public ByteSource {
   public:
    Prefixed(std::unique_ptr<ByteSource> inner, std::string prefix)
        : inner_(std::move(inner)), prefix_(std::move(prefix)) {}
    std::size_t read(char* dst, std::size_t n) override {
      if (pos_ < prefix_.size()) {
        const std::size_t take = std::min(n, prefix_.size() - pos_);
        std::memcpy(dst, prefix_.data() + pos_, take);
        pos_ += take;
        return take;
      }
      return inner_->read(dst, n);
    }
    const std::string& label() const override { return inner_->label(); }
    std::uint64_t size_hint() const override { return inner_->size_hint(); }

   private:
    std::unique_ptr<ByteSource> inner_;
    std::string prefix_;
    std::size_t pos_ = 0;
  };
  return std::make_unique<Prefixed>(std::move(raw), std::move(prefix));
}

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path, bool map) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(fmt::format("{}: cannot stat: {}", path, std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(fmt::format("{}: is a directory, not a trace file", path));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (map && S_ISREG(st.st_mode) && size >= 2) {
    unsigned char head[2] = {0, 0};
    const bool gzip = ::pread(fd, head, 2, 0) == 2 && gzip_magic(head);
    if (!gzip)
      if (auto mapped = MappedFileSource::open(fd, path, size)) return mapped;
  }
  return maybe_gunzip(std::make_unique<FileSource>(fd, path, size), true);
}

std::unique_ptr<ByteSource> open_memory_source(std::string_view bytes, std::string_view label) {
  return maybe_gunzip(std::make_unique<MemorySource>(bytes, label), true);
}

}  // namespace attnprof
