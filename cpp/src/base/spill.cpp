#include "ringfire/base/spill.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

constexpr const char* kOp = "memory.spill";

std::string system_error(const std::string& what, int error) { return what + ": " + std::strerror(error); }

// A new file in `directory`, already unlinked: it lives as long as its
// descriptor and mappings. Closed on exec (a forked child keeps it: it maps
// the file privately, see spill.h).
int anonymous_file(const std::string& directory) {
  std::string path = directory + "/ringfire-spill-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) throw_invalid(kOp, system_error("cannot create a file in '" + directory + "'", errno));
  ::unlink(name.data());
  return fd;
}

}  // namespace

SpillArena::SpillArena(std::string directory, std::size_t chunk_bytes)
    : directory_(std::move(directory)), chunk_bytes_(std::max(chunk_bytes, page_bytes()) / page_bytes() * page_bytes()) {
  ::close(anonymous_file(directory_));  // fail now, not at the first spilled block
}

SpillArena::~SpillArena() {
  for (const Chunk& c : chunks_) {
    ::munmap(c.base, c.bytes);
    ::close(c.fd);
  }
}

void SpillArena::map_chunk(std::size_t bytes) {
  int fd = -1;
  try {
    fd = anonymous_file(directory_);
  } catch (const InvalidArgument& e) {  // out of descriptors or inodes: an I/O failure now
    throw DeviceError(e.what());
  }
  // Reserve the disk space now: a full disk raises here instead of killing
  // the process with SIGBUS at the first write into a sparse page.
  if (const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
    ::close(fd);
    throw_device_error(kOp, system_error("cannot reserve " + std::to_string(bytes >> 20) + " MiB in '" +
                                             directory_ + "'",
                                         error));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    ::close(fd);
    throw_device_error(kOp, system_error("cannot map a spill file", error));
  }
  ::madvise(base, bytes, MADV_DONTFORK);
  chunks_.push_back(Chunk{static_cast<char*>(base), bytes, 0, fd, false});
  stats_.bytes_mapped += bytes;
  ++stats_.files;
}

void* SpillArena::allocate(std::size_t capacity) {
  require(capacity > 0 && capacity % page_bytes() == 0, kOp, "spilled blocks are whole pages");
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = free_.find(capacity); it != free_.end() && !it->second.empty()) {
    char* block = static_cast<char*>(it->second.back());
    const auto chunk = std::find_if(chunks_.begin(), chunks_.end(), [&](const Chunk& c) {
      return block >= c.base && block < c.base + c.bytes;
    });
    // Its pages were punched out on release: reserve them again.
    if (const int error = ::posix_fallocate(chunk->fd, block - chunk->base, static_cast<off_t>(capacity));
        error != 0)
      throw_device_error(kOp, system_error("cannot reserve disk space in '" + directory_ + "'", error));
    it->second.pop_back();
    stats_.bytes_in_use += capacity;
    return block;
  }
  if (chunks_.empty() || chunks_.back().private_copy || chunks_.back().bytes - chunks_.back().used < capacity)
    map_chunk(std::max(capacity, chunk_bytes_));
  Chunk& c = chunks_.back();
  void* block = c.base + c.used;
  c.used += capacity;
  stats_.bytes_in_use += capacity;
  return block;
}

std::size_t SpillArena::page_bytes() {
  // Blocks and punched ranges must be whole pages of the system's size.
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

bool SpillArena::owns(const void* block) const {
  const char* p = static_cast<const char*>(block);
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(chunks_.begin(), chunks_.end(), [&](const Chunk& c) { return p >= c.base && p < c.base + c.bytes; });
}

void SpillArena::release(void* block, std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  ::madvise(block, capacity, MADV_REMOVE);  // the pages leave RAM and the disk
  free_[capacity].push_back(block);
  stats_.bytes_in_use -= capacity;
}

SpillStats SpillArena::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void SpillArena::after_fork_in_child() {
  for (Chunk& c : chunks_) {
    if (c.private_copy) continue;  // already private: fork copied it like any memory
    if (::mmap(c.base, c.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, c.fd, 0) == MAP_FAILED) {
      // The inherited blocks would be unmapped: fail here, plainly, not at some later access.
      static const char kMessage[] = "ringfire: a forked child cannot map its parent's spill files\n";
      (void)::write(2, kMessage, sizeof(kMessage) - 1);
      ::_exit(70);
    }
    c.private_copy = true;
  }
  // The parent hands out its free blocks and its chunks' tails: new blocks come from new files.
  free_.clear();
}

}  // namespace ringfire
