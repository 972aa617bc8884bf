// Host memory beyond a RAM budget, backed by files on disk.
//
// Seed 001 ran models larger than DRAM in Optane's memory mode: DRAM caches
// a larger, slower memory and the hardware decides what stays in the cache.
// Here the kernel's page cache plays DRAM's part and a disk the slower
// memory's: the arena maps files in a directory and carves pool blocks from
// them, so the kernel keeps hot pages in RAM and writes cold ones back. A run
// larger than RAM then slows down instead of being killed.
//
// The files are unlinked as soon as they are created (nothing is left behind,
// even after a crash). Released blocks have their pages punched out of the
// file (the disk space returns) and are kept for reuse by the same capacity.
//
// Fork: the mappings are not inherited (MADV_DONTFORK), because a shared
// mapping would let a parent and its child overwrite each other's blocks. In a
// child, after_fork_in_child() maps the same ranges privately (copy on write)
// from the files, so inherited objects stay readable, and takes new blocks
// from files of its own; its private ranges are inherited as they are by its
// own children. Pages the parent rewrites or frees later can show through
// until the child writes them: a child's view of inherited blocks is a
// snapshot only while the parent leaves those blocks alone.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ringfire {

struct SpillStats {
  std::size_t bytes_mapped = 0;   // address space carved from the files so far
  std::size_t bytes_in_use = 0;   // of it, held by live or cached pool blocks
  std::size_t files = 0;          // chunks mapped
};

class SpillArena {
 public:
  // Raises InvalidArgument when `directory` cannot hold a temporary file.
  SpillArena(std::string directory, std::size_t chunk_bytes = std::size_t{1} << 30);
  ~SpillArena();
  SpillArena(const SpillArena&) = delete;
  SpillArena& operator=(const SpillArena&) = delete;

  const std::string& directory() const { return directory_; }
  // A block of `capacity` bytes (a multiple of page_bytes()) backed by a file; raises
  // DeviceError on an I/O error (a full disk shows up here, not later as
  // SIGBUS: the file space is reserved before the block is handed out).
  void* allocate(std::size_t capacity);
  bool owns(const void* block) const;
  // The system's page size: only whole pages spill.
  static std::size_t page_bytes();
  // Frees the block's disk pages and keeps its address range for reuse.
  void release(void* block, std::size_t capacity);
  SpillStats stats() const;
  // In a forked child: the inherited address ranges become private copies of
  // the files (see the header comment). Called by the pool's fork handler,
  // whose lock keeps every other arena call out while the process forks.
  void after_fork_in_child();

 private:
  struct Chunk {
    char* base;
    std::size_t bytes;
    std::size_t used;
    int fd;
    bool private_copy;  // remapped in a forked child: inherited normally from then on
  };
  void map_chunk(std::size_t bytes);

  std::string directory_;
  std::size_t chunk_bytes_;
  mutable std::mutex mutex_;
  std::vector<Chunk> chunks_;
  std::map<std::size_t, std::vector<void*>> free_;  // released blocks by capacity
  SpillStats stats_;
};

}  // namespace ringfire
