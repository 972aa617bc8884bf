// Little-endian byte writer and a bounds-checked reader. The reader never
// reads past its end: every read checks the remaining length first and
// raises InvalidArgument ("[io.load] truncated: ...") otherwise.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/io/bit_pack.h"
#include "ringfire/io/checksum.h"

namespace ringfire::io {

// The format is little-endian; on a little-endian host a block of words is
// its own encoding and is copied whole (polynomials are most of every object).
inline constexpr bool kLittleEndianHost = std::endian::native == std::endian::little;

// Where a streamed object goes, and where one comes from: read(out, n)
// fills up to n bytes and returns how many (0: the stream ended).
using Sink = std::function<void(const std::uint8_t* data, std::size_t size)>;
using Source = std::function<std::size_t(std::uint8_t* out, std::size_t size)>;

// Writes into memory (the default), only counts (to size a payload before
// streaming it), or streams through a Sink in chunks, hashing what passes
// (io/checksum.h) so the envelope can close with its checksum.
class Writer {
 public:
  Writer() = default;
  explicit Writer(Sink sink) : mode_(Mode::stream), sink_(std::move(sink)) {}
  static Writer counting() {
    Writer w;
    w.mode_ = Mode::count;
    return w;
  }

  void u8(std::uint8_t v) { put(v, 1); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  }
  void raw(const void* data, std::size_t n) {
    written_ += n;
    if (mode_ == Mode::count) return;
    const auto* p = static_cast<const std::uint8_t*>(data);
    if (mode_ == Mode::stream && n >= kChunk) {  // a polynomial: straight through, no copy
      flush();
      emit(p, n);
      return;
    }
    bytes_.insert(bytes_.end(), p, p + n);
    if (mode_ == Mode::stream && bytes_.size() >= kChunk) flush();
  }
  void words(const std::uint64_t* data, std::size_t count) {
    if constexpr (kLittleEndianHost) {
      raw(data, count * 8);
    } else {
      for (std::size_t i = 0; i < count; ++i) u64(data[i]);
    }
  }
  // `count` residues in `bits` bits each (bit_pack.h); 64 bits: words.
  void packed(const std::uint64_t* data, std::size_t count, unsigned bits) {
    if (bits == 64) return words(data, count);
    const std::size_t n = packed_bytes(count, bits);
    if (mode_ == Mode::count) {
      written_ += n;
      return;
    }
    if (mode_ == Mode::memory) {  // packed where it lands
      const std::size_t at = bytes_.size();
      bytes_.resize(at + n);
      pack_residues(data, count, bits, bytes_.data() + at);
      written_ += n;
      return;
    }
    scratch_.resize(n);
    pack_residues(data, count, bits, scratch_.data());
    raw(scratch_.data(), n);
  }
  void reserve(std::size_t bytes) {
    if (mode_ == Mode::memory) bytes_.reserve(bytes);
  }
  // Memory mode: everything written.
  std::vector<std::uint8_t>& bytes() { return bytes_; }
  // Bytes written so far, in every mode.
  std::size_t written() const { return written_; }
  // Stream mode: hands the buffered bytes to the sink.
  void flush() {
    if (bytes_.empty()) return;
    emit(bytes_.data(), bytes_.size());
    bytes_.clear();
  }
  // Stream mode: flushes, then hands the sink the checksum of everything
  // written (little-endian, itself not covered), closing the envelope.
  void finish() {
    flush();
    std::uint8_t tail[8];
    const std::uint64_t digest = hash_.digest();
    for (int i = 0; i < 8; ++i) tail[i] = static_cast<std::uint8_t>(digest >> (8 * i));
    sink_(tail, 8);
  }

 private:
  enum class Mode { memory, count, stream };
  static constexpr std::size_t kChunk = std::size_t{1} << 20;

  void put(std::uint64_t v, int n) {
    std::uint8_t b[8];
    for (int i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
    raw(b, static_cast<std::size_t>(n));
  }
  void emit(const std::uint8_t* p, std::size_t n) {
    hash_.update(p, n);
    sink_(p, n);
  }

  Mode mode_ = Mode::memory;
  Sink sink_;
  Checksum64Stream hash_;
  std::vector<std::uint8_t> bytes_;
  std::vector<std::uint8_t> scratch_;  // stream mode: a limb packed before it is emitted
  std::size_t written_ = 0;
};

// Reads from memory, or from a Source that holds `size` bytes (hashing what
// it reads, so a streamed envelope's checksum is checked at its end).
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  Reader(Source source, std::size_t size) : data_(nullptr), size_(size), source_(std::move(source)) {}

  std::size_t remaining() const { return size_ - pos_; }
  void need(std::size_t n, const char* what) const {
    if (n > remaining())
      throw_invalid("io.load", std::string("truncated: ") + what + " needs " + std::to_string(n) +
                                   " bytes, only " + std::to_string(remaining()) + " remain");
  }
  std::uint8_t u8(const char* what) { return static_cast<std::uint8_t>(get(1, what)); }
  std::uint16_t u16(const char* what) { return static_cast<std::uint16_t>(get(2, what)); }
  std::uint32_t u32(const char* what) { return static_cast<std::uint32_t>(get(4, what)); }
  std::uint64_t u64(const char* what) { return get(8, what); }
  double f64(const char* what) {
    const std::uint64_t bits = u64(what);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  void raw(void* out, std::size_t n, const char* what) {
    need(n, what);
    fetch(static_cast<std::uint8_t*>(out), n, what);
  }
  // `count` words, each checked to be below `bound` (a residue mod q).
  void residues(std::uint64_t* out, std::size_t count, std::uint64_t bound, const char* what) {
    need(count * 8, what);
    bool outside = false;
    if constexpr (kLittleEndianHost) {
      fetch(reinterpret_cast<std::uint8_t*>(out), count * 8, what);
      for (std::size_t i = 0; i < count; ++i) outside |= out[i] >= bound;  // no early exit: vectorizes
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = get(8, what);
        outside |= out[i] >= bound;
      }
    }
    if (outside) throw_invalid("io.load", std::string("corrupt: ") + what + " holds a value outside [0, q)");
  }
  // `count` residues of `bits` bits each (bit_pack.h), each checked to be
  // below `bound`; 64 bits: residues().
  void packed_residues(std::uint64_t* out, std::size_t count, unsigned bits, std::uint64_t bound,
                       const char* what) {
    if (bits == 64) return residues(out, count, bound, what);
    const std::size_t n = packed_bytes(count, bits);
    need(n, what);
    const std::uint8_t* in;
    if (source_) {
      scratch_.resize(n);
      fetch(scratch_.data(), n, what);
      in = scratch_.data();
    } else {  // unpacked in place
      in = data_ + pos_;
      pos_ += n;
    }
    if (!unpack_residues(in, count, bits, bound, out))
      throw_invalid("io.load", std::string("corrupt: ") + what + " holds a value outside [0, q)");
  }
  void expect_end() const {
    if (remaining() != 0)
      throw_invalid("io.load", std::to_string(remaining()) + " unexpected trailing bytes in the payload");
  }
  // Stream mode: the checksum of everything read so far.
  std::uint64_t digest() const { return hash_.digest(); }
  // Stream mode: n bytes past the end (the checksum), not hashed.
  void trailer(std::uint8_t* out, std::size_t n) {
    pull(out, n, "the checksum");
  }

 private:
  std::uint64_t get(int n, const char* what) {
    std::uint8_t b[8];
    raw(b, static_cast<std::size_t>(n), what);
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(b[i]) << (8 * i);
    return v;
  }
  void fetch(std::uint8_t* out, std::size_t n, const char* what) {
    if (source_) {
      pull(out, n, what);
      hash_.update(out, n);
    } else {
      std::memcpy(out, data_ + pos_, n);
    }
    pos_ += n;
  }
  void pull(std::uint8_t* out, std::size_t n, const char* what) {
    while (n != 0) {
      const std::size_t got = source_(out, n);
      if (got == 0)
        throw_invalid("io.load", std::string("truncated: the stream ended inside ") + what);
      out += got;
      n -= got;
    }
  }
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  Source source_;
  Checksum64Stream hash_;
  std::vector<std::uint8_t> scratch_;  // stream mode: a packed limb as it arrives
};

}  // namespace ringfire::io
