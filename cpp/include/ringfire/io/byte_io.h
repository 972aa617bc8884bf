// Little-endian byte writer and a bounds-checked reader. The reader never
// reads past its end: every read checks the remaining length first and
// raises InvalidArgument ("[io.load] truncated: ...") otherwise.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ringfire/base/errors.h"

namespace ringfire::io {

// The format is little-endian; on a little-endian host a block of words is
// its own encoding and is copied whole (polynomials are most of every object).
inline constexpr bool kLittleEndianHost = std::endian::native == std::endian::little;

class Writer {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  }
  void raw(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  void words(const std::uint64_t* data, std::size_t count) {
    if constexpr (kLittleEndianHost) {
      raw(data, count * 8);
    } else {
      for (std::size_t i = 0; i < count; ++i) u64(data[i]);
    }
  }
  void reserve(std::size_t bytes) { bytes_.reserve(bytes); }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

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
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
  }
  // `count` words, each checked to be below `bound` (a residue mod q).
  void residues(std::uint64_t* out, std::size_t count, std::uint64_t bound, const char* what) {
    need(count * 8, what);
    bool outside = false;
    if constexpr (kLittleEndianHost) {
      std::memcpy(out, data_ + pos_, count * 8);
      pos_ += count * 8;
      for (std::size_t i = 0; i < count; ++i) outside |= out[i] >= bound;  // no early exit: vectorizes
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = get(8, what);
        outside |= out[i] >= bound;
      }
    }
    if (outside) throw_invalid("io.load", std::string("corrupt: ") + what + " holds a value outside [0, q)");
  }
  void expect_end() const {
    if (remaining() != 0)
      throw_invalid("io.load", std::to_string(remaining()) + " unexpected trailing bytes in the payload");
  }

 private:
  std::uint64_t get(int n, const char* what) {
    need(static_cast<std::size_t>(n), what);
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(data_[pos_ + i]) << (8 * i);
    pos_ += static_cast<std::size_t>(n);
    return v;
  }
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace ringfire::io
