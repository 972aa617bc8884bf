#include "ringfire/io/key_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/io/byte_io.h"
#include "ringfire/io/checksum.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire::io {

namespace {

constexpr char kMagic[8] = {'R', 'F', 'K', 'E', 'Y', 'I', 'M', 'G'};
constexpr std::size_t kHeaderBytes = 80;
constexpr std::size_t kEntryBytes = 24;  // before the seeds
constexpr std::uint64_t kAlign = 4096;
constexpr std::string_view kOp = "io.key_image";

std::uint64_t align_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// One switching key of an image, as its table entry describes it.
struct Entry {
  u64 source = 0;
  std::uint32_t level = 0, digits = 0;
  std::uint8_t context = 0, halves = 2, seeded = 0;
  std::vector<Seed> seeds;
  std::uint64_t half_bytes = 0;  // one half: digits x poly_words x 8 (from the context, when mapping)
};

// ---- writing --------------------------------------------------------------------

// The image's file, written in order; every byte of the data region also
// enters its checksum.
class ImageFile {
 public:
  explicit ImageFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) throw_device_error(kOp, "cannot create " + path + ": " + std::strerror(errno));
  }
  ~ImageFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;

  void write(const void* data, std::size_t bytes, bool data_region) {
    if (data_region) sum_.update(data, bytes);
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_device_error(kOp, "cannot write " + path_ + ": " + std::strerror(errno));
      p += n;
      bytes -= static_cast<std::size_t>(n);
      written_ += static_cast<std::uint64_t>(n);
    }
  }
  // Zeros up to the next 4 KiB boundary.
  void pad(bool data_region) {
    static const std::uint8_t zeros[kAlign] = {};
    write(zeros, align_up(written_) - written_, data_region);
  }
  void rewrite_header(const std::vector<std::uint8_t>& header) {
    if (::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
      throw_device_error(kOp, "cannot write " + path_ + ": " + std::strerror(errno));
  }
  void finish() {
    if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
      fd_ = -1;
      throw_device_error(kOp, "cannot write " + path_ + ": " + std::strerror(errno));
    }
    fd_ = -1;
  }
  std::uint64_t written() const { return written_; }
  std::uint64_t data_checksum() const { return sum_.digest(); }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
  Checksum64Stream sum_;
};

struct Stored {
  const KeySwitchKey* key;
  std::uint8_t context;
};

std::vector<std::uint8_t> header_bytes(Kind kind, const Parameters& params, std::size_t count,
                                       std::uint64_t data_bytes, std::uint64_t data_checksum,
                                       const std::vector<std::uint8_t>& table) {
  Writer h;
  h.raw(kMagic, sizeof(kMagic));
  h.u16(kKeyImageVersion);
  h.u16(static_cast<std::uint16_t>(kind));
  h.u32(static_cast<std::uint32_t>(count));
  h.raw(params.identity().data(), params.identity().size());
  h.u64(data_bytes);
  h.u64(data_checksum);
  h.u64(table.size());
  Checksum64Stream sum;
  sum.update(h.bytes().data(), h.bytes().size());
  sum.update(table.data(), table.size());
  h.u64(sum.digest());
  return std::move(h.bytes());
}

std::uint64_t write_image(Kind kind, const Parameters& params, const std::vector<Stored>& keys,
                          const std::string& path, bool expand) {
  Writer entries;
  for (const Stored& s : keys) {
    const KeySwitchKey& k = *s.key;
    require(k.device().kind == kHostKind, kOp, "keys must be on the host to be written as an image");
    const bool with_a = k.expanded() || expand;
    require(k.expanded() || k.seeds().size() == k.digits(), kOp, "a key without its a_j needs its seeds");
    const bool seeded = k.seeds().size() == k.digits();
    entries.u64(k.source());
    entries.u32(static_cast<std::uint32_t>(k.level()));
    entries.u32(static_cast<std::uint32_t>(k.digits()));
    const std::uint8_t flags[8] = {s.context, static_cast<std::uint8_t>(with_a ? 2 : 1),
                                   static_cast<std::uint8_t>(seeded ? 1 : 0)};
    entries.raw(flags, sizeof(flags));
    if (seeded)
      for (const Seed& seed : k.seeds()) entries.raw(seed.data(), seed.size());
  }
  const std::vector<std::uint8_t>& table = entries.bytes();
  ImageFile file(path);
  // The header's data fields are known only at the end: a placeholder first.
  file.write(std::vector<std::uint8_t>(kHeaderBytes).data(), kHeaderBytes, false);
  file.write(table.data(), table.size(), false);
  file.pad(false);
  const std::uint64_t data_start = file.written();
  std::vector<u64> digit_a;  // one digit's a_j, expanded from its seed (expand, seeded keys)
  for (const Stored& s : keys) {
    const KeySwitchKey& k = *s.key;
    const std::size_t half = k.digits() * k.poly_words() * sizeof(u64);
    file.write(k.b(0), half, true);
    file.pad(true);
    if (k.expanded()) {
      file.write(k.a(0), half, true);
      file.pad(true);
    } else if (expand) {
      digit_a.resize(k.poly_words());
      for (std::size_t j = 0; j < k.digits(); ++j) {
        expand_uniform(k.seeds()[j], *k.context()->extended_base(k.level()), digit_a.data());
        file.write(digit_a.data(), digit_a.size() * sizeof(u64), true);
      }
      file.pad(true);
    }
  }
  const std::uint64_t total = file.written();
  file.rewrite_header(header_bytes(kind, params, keys.size(), total - data_start, file.data_checksum(), table));
  file.finish();
  return total;
}

// ---- mapping --------------------------------------------------------------------

// A read-only private mapping of a whole file, unmapped with its last view.
struct Mapping {
  void* base = MAP_FAILED;
  std::size_t bytes = 0;
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, bytes);
  }
};

class ImageReader {
 public:
  explicit ImageReader(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw_invalid(kOp, "cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw_invalid(kOp, "cannot read " + path + ": " + std::strerror(errno));
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~ImageReader() {
    if (fd_ >= 0) ::close(fd_);
  }
  ImageReader(const ImageReader&) = delete;
  ImageReader& operator=(const ImageReader&) = delete;

  std::vector<std::uint8_t> read(std::uint64_t offset, std::uint64_t bytes) {
    require(offset <= size_ && bytes <= size_ - offset, kOp, "truncated: " + path_ + " ends at byte " +
                                                                   std::to_string(size_) + " inside the image's header");
    std::vector<std::uint8_t> out(bytes);
    std::size_t done = 0;
    while (done < bytes) {
      const ssize_t n = ::pread(fd_, out.data() + done, bytes - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_invalid(kOp, "cannot read " + path_ + ": " + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
    return out;
  }
  // `populate`: every page mapped now, in one pass, where a reader of all of
  // them would otherwise take a fault per few pages.
  std::shared_ptr<const Mapping> map(bool populate) {
    auto m = std::make_shared<Mapping>();
    m->base = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd_, 0);
    if (m->base == MAP_FAILED) throw_device_error(kOp, "cannot map " + path_ + ": " + std::strerror(errno));
    m->bytes = size_;
    return m;
  }
  std::uint64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

struct Header {
  Kind kind;
  std::uint32_t count;
  Sha256Digest identity;
  std::uint64_t data_bytes, data_checksum, table_bytes;
};

Header read_header(ImageReader& file, std::vector<std::uint8_t>& table) {
  const std::vector<std::uint8_t> h = file.read(0, kHeaderBytes);
  require(std::memcmp(h.data(), kMagic, sizeof(kMagic)) == 0, kOp, "not a ringfire key image (bad magic)");
  Reader r(h.data() + sizeof(kMagic), kHeaderBytes - sizeof(kMagic));
  const std::uint16_t version = r.u16("the image's version");
  require(version == kKeyImageVersion, kOp,
          "key image version " + std::to_string(version) + " is not " + std::to_string(kKeyImageVersion) +
              " (an image is a cache: write it again from the keys)");
  Header out{};
  out.kind = static_cast<Kind>(r.u16("the image's kind"));
  out.count = r.u32("the key count");
  r.raw(out.identity.data(), out.identity.size(), "the parameter identity");
  out.data_bytes = r.u64("the data's length");
  out.data_checksum = r.u64("the data's checksum");
  out.table_bytes = r.u64("the table's length");
  const std::uint64_t header_checksum = r.u64("the header's checksum");
  // A key's entry is at most 24 bytes and 32 per digit; digits are few.
  require(out.table_bytes <= static_cast<std::uint64_t>(out.count) * (kEntryBytes + 64 * 32), kOp,
          "corrupt: the table's length does not fit its key count");
  table = file.read(kHeaderBytes, out.table_bytes);
  Checksum64Stream sum;
  sum.update(h.data(), 72);
  sum.update(table.data(), table.size());
  require(sum.digest() == header_checksum, kOp, "corrupt: the header's checksum does not match");
  return out;
}

// The table's entries, each checked against the context it belongs to, and
// the image's exact size checked against the layout they imply.
std::vector<Entry> read_entries(const Header& h, const std::vector<std::uint8_t>& table,
                                const RlweContextPtr contexts[2], std::uint64_t file_size) {
  std::vector<Entry> entries;
  Reader r(table.data(), table.size());  // truncations raise InvalidArgument, naming the field
  std::uint64_t offset = align_up(kHeaderBytes + table.size());
  for (std::uint32_t i = 0; i < h.count; ++i) {
    Entry e;
    e.source = r.u64("a key's source");
    e.level = r.u32("a key's level");
    e.digits = r.u32("a key's digit count");
    e.context = r.u8("a key's context");
    e.halves = r.u8("a key's halves");
    e.seeded = r.u8("a key's seed flag");
    std::uint8_t zeros[5];
    r.raw(zeros, sizeof(zeros), "a key's table entry");
    require(e.context <= 1 && contexts[e.context] != nullptr, kOp, "corrupt: key " + std::to_string(i) +
                                                                       " names a context this kind has not");
    const RlweContext& ctx = *contexts[e.context];
    require(e.level <= ctx.max_level(), kOp, "corrupt: key level " + std::to_string(e.level) + " is out of range");
    require(e.digits == ctx.digit_count(e.level), kOp,
            "corrupt: key has " + std::to_string(e.digits) + " digits, its level needs " +
                std::to_string(ctx.digit_count(e.level)));
    require(e.seeded <= 1 && (e.halves == 2 || (e.halves == 1 && e.seeded == 1)), kOp,
            "corrupt: a key stores its a_j or the seeds to expand them from");
    if (e.seeded) {
      r.need(e.digits * std::size_t{32}, "a key's seeds");  // before the allocation
      e.seeds.resize(e.digits);
      for (Seed& s : e.seeds) r.raw(s.data(), s.size(), "a key's seed");
    }
    e.half_bytes = static_cast<std::uint64_t>(e.digits) * (e.level + 1 + ctx.special_count()) * ctx.n() * sizeof(u64);
    offset += e.halves * align_up(e.half_bytes);
    entries.push_back(std::move(e));
  }
  require(r.remaining() == 0, kOp, "corrupt: bytes after the table's last key");
  const std::uint64_t data_start = align_up(kHeaderBytes + table.size());
  require(offset == file_size && offset - data_start == h.data_bytes, kOp,
          "truncated or padded: the keys' layout needs " + std::to_string(offset) + " bytes, the file has " +
              std::to_string(file_size));
  return entries;
}

// The image's keys as views of one mapping, with the header's kind required.
std::vector<KeySwitchKey> map_keys(const RlweContextPtr& ctx, const std::string& path, Kind expected, bool verify) {
  ImageReader file(path);
  std::vector<std::uint8_t> table;
  const Header h = read_header(file, table);
  require(h.kind == expected, kOp,
          std::string("this image holds a ") + kind_name(h.kind) + ", not a " + kind_name(expected));
  require(h.identity == ctx->params().identity(), kOp, "these keys were made for other parameters");
  RlweContextPtr contexts[2] = {ctx, nullptr};
  if (expected == Kind::bootstrap_keys) contexts[1] = ckks::encapsulation_context(*ctx);
  const std::vector<Entry> entries = read_entries(h, table, contexts, file.size());
  const std::shared_ptr<const Mapping> mapping = file.map(verify);
  const auto* base = static_cast<const std::uint8_t*>(mapping->base);
  const std::uint64_t data_start = align_up(kHeaderBytes + table.size());
  if (verify)
    require(checksum64(base + data_start, h.data_bytes) == h.data_checksum, kOp,
            "corrupt: the keys' checksum does not match (a damaged or partly written image: write it again)");
  std::vector<KeySwitchKey> keys;
  std::uint64_t offset = data_start;
  for (const Entry& e : entries) {
    const std::size_t words = e.half_bytes / sizeof(u64);
    Buffer b = Buffer::view(reinterpret_cast<const u64*>(base + offset), words, mapping);
    offset += align_up(e.half_bytes);
    Buffer a;
    if (e.halves == 2) {
      a = Buffer::view(reinterpret_cast<const u64*>(base + offset), words, mapping);
      offset += align_up(e.half_bytes);
    }
    keys.push_back(KeySwitchKey::from_parts(contexts[e.context], e.source, e.level, std::move(b), std::move(a),
                                            e.seeds));
  }
  return keys;
}

GaloisKeys galois_set(const RlweContextPtr& ctx, std::vector<KeySwitchKey>& keys, std::size_t count) {
  GaloisKeys set(ctx);
  for (std::size_t i = 0; i < count; ++i) {
    require(keys[i].source() % 2 == 1 && !set.has(keys[i].source()), kOp,
            "corrupt: key " + std::to_string(i) + " repeats a Galois element or is not a Galois key");
    set.insert(std::move(keys[i]));
  }
  return set;
}

}  // namespace

std::uint64_t save_image(const RelinKey& key, const std::string& path, bool expand) {
  return write_image(Kind::relin_key, key.key().context()->params(), {{&key.key(), 0}}, path, expand);
}

std::uint64_t save_image(const GaloisKeys& keys, const std::string& path, bool expand) {
  std::vector<Stored> stored;
  for (u64 g : keys.elements()) stored.push_back({&keys.get(g), 0});
  return write_image(Kind::galois_keys, keys.context()->params(), stored, path, expand);
}

std::uint64_t save_image(const ckks::BootstrapKeys& keys, const std::string& path, bool expand) {
  std::vector<Stored> stored;
  for (u64 g : keys.galois.elements()) stored.push_back({&keys.galois.get(g), 0});
  stored.push_back({&keys.to_sparse, 1});
  stored.push_back({&keys.from_sparse, 0});
  return write_image(Kind::bootstrap_keys, keys.galois.context()->params(), stored, path, expand);
}

Kind image_kind(const std::string& path) {
  ImageReader file(path);
  std::vector<std::uint8_t> table;
  return read_header(file, table).kind;
}

RelinKey map_relin_key(const RlweContextPtr& ctx, const std::string& path, bool verify) {
  std::vector<KeySwitchKey> keys = map_keys(ctx, path, Kind::relin_key, verify);
  require(keys.size() == 1 && keys[0].source() == kRelinearizationSource, kOp,
          "corrupt: a relinearization key image holds one key, from s^2");
  return RelinKey(std::move(keys[0]));
}

GaloisKeys map_galois_keys(const RlweContextPtr& ctx, const std::string& path, bool verify) {
  std::vector<KeySwitchKey> keys = map_keys(ctx, path, Kind::galois_keys, verify);
  return galois_set(ctx, keys, keys.size());
}

ckks::BootstrapKeys map_bootstrap_keys(const RlweContextPtr& ctx, const std::string& path, bool verify) {
  std::vector<KeySwitchKey> keys = map_keys(ctx, path, Kind::bootstrap_keys, verify);
  const std::size_t n = keys.size();
  require(n >= 2 && keys[n - 2].source() == kToSparseSource && keys[n - 1].source() == kFromSparseSource &&
              keys[n - 2].fingerprint() != ctx->fingerprint() && keys[n - 1].fingerprint() == ctx->fingerprint(),
          kOp, "corrupt: bootstrapping keys end with the keys to and from the sparse secret, in their contexts");
  GaloisKeys galois = galois_set(ctx, keys, n - 2);
  ckks::BootstrapKeys out{std::move(galois), std::move(keys[n - 2]), std::move(keys[n - 1])};
  out.set_expand_per_use(true);  // as keygen and the loaders make them (bootstrap.h)
  return out;
}

}  // namespace ringfire::io
