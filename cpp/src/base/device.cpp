#include "ringfire/base/device.h"

#include <array>
#include <atomic>
#include <cctype>
#include <mutex>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

constexpr std::size_t kMaxKinds = 32;

struct KindEntry {
  std::string name;
  std::atomic<PoolResolver> pool{nullptr};
  std::atomic<DeviceCopier> copier{nullptr};
};

// Entries are written once, before `count` grows past them (release), and
// read after an acquire of `count`: lookups need no lock.
struct KindTable {
  std::array<KindEntry, kMaxKinds> entries;
  std::atomic<std::size_t> count{1};
  std::mutex mutex;  // serialises registrations
  KindTable() { entries[kHostKind].name = "cpu"; }
};

KindTable& table() {
  static KindTable* t = new KindTable();  // leaked: used until the process ends
  return *t;
}

const KindEntry& entry(DeviceKind kind) {
  KindTable& t = table();
  require(kind < t.count.load(std::memory_order_acquire), "device", "unknown device kind " + std::to_string(kind));
  return t.entries[kind];
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The id of `name`, or kMaxKinds when it is not registered.
std::size_t find(const KindTable& t, const std::string& name) {
  const std::size_t n = t.count.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i)
    if (t.entries[i].name == name) return i;
  return kMaxKinds;
}

std::string names_text() {
  std::string out;
  for (const std::string& name : device_kind_names()) out += (out.empty() ? "'" : ", '") + name + "'";
  return out;
}

}  // namespace

DeviceKind register_device_kind(const std::string& name, PoolResolver pool, DeviceCopier copier) {
  require(valid_name(name), "device", "a device kind is named by letters, digits and '_', got '" + name + "'");
  require(name != "cpu", "device", "the host kind 'cpu' cannot be registered again");
  KindTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::size_t id = find(t, name);
  if (id == kMaxKinds) {
    id = t.count.load(std::memory_order_relaxed);
    require(id < kMaxKinds, "device", "too many device kinds (at most " + std::to_string(kMaxKinds) + ")");
    t.entries[id].name = name;
    t.entries[id].pool.store(pool);
    t.entries[id].copier.store(copier);
    t.count.store(id + 1, std::memory_order_release);
  } else {
    t.entries[id].pool.store(pool);
    t.entries[id].copier.store(copier);
  }
  return static_cast<DeviceKind>(id);
}

std::vector<std::string> device_kind_names() {
  const KindTable& t = table();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < t.count.load(std::memory_order_acquire); ++i) out.push_back(t.entries[i].name);
  return out;
}

const std::string& device_kind_name(DeviceKind kind) { return entry(kind).name; }
PoolResolver device_pool_resolver(DeviceKind kind) { return entry(kind).pool.load(); }
DeviceCopier device_copier(DeviceKind kind) { return entry(kind).copier.load(); }

Device Device::parse(const std::string& text) {
  const std::size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const std::size_t id = find(table(), name);
  if (id != kMaxKinds) {
    if (colon == std::string::npos) return Device{static_cast<DeviceKind>(id), 0};
    const std::string digits = text.substr(colon + 1);
    bool all_digits = !digits.empty() && digits.size() <= 4 && id != kHostKind;
    for (char c : digits) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
    if (all_digits) return Device{static_cast<DeviceKind>(id), std::stoi(digits)};
  }
  throw_invalid("device", "unknown device '" + text + "' (expected 'cpu', or 'name' / 'name:N' for one of the kinds " +
                              names_text() + ")");
}

std::string Device::str() const {
  if (is_host()) return "cpu";
  return device_kind_name(kind) + ":" + std::to_string(index);
}

std::string different_devices(const Device& a, const Device& b) {
  return "operands live on different devices: " + a.str() + " vs " + b.str() + " (move one with .to(device))";
}

}  // namespace ringfire
