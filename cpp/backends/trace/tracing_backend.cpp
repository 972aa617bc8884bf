// Counting wrapper and the process-wide trace (ring/trace.h).
#include "backends/trace/tracing_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ring/trace.h"

namespace ringfire {

namespace {

constexpr std::uint64_t kWordBytes = sizeof(u64);

// One call's shape, the aggregation key.
struct Shape {
  const char* kernel;
  std::string label;
  DeviceKind kind;
  std::uint32_t n, limbs, source_limbs, terms;

  auto tie() const { return std::tie(label, kind, n, limbs, source_limbs, terms); }
  bool operator<(const Shape& o) const {
    const int c = std::string_view(kernel).compare(o.kernel);
    if (c != 0) return c < 0;
    return tie() < o.tie();
  }
};

struct Counts {
  std::uint64_t calls = 0, polys = 0, words = 0, bytes_read = 0, bytes_written = 0, nanoseconds = 0;
};

struct TraceState {
  std::atomic<bool> open{false};
  std::atomic<bool> dry_run{false};
  std::mutex mutex;
  std::map<Shape, Counts> counts;
  // Bumped by start_trace, so the time of a call still running when its trace
  // closed is dropped.
  std::uint64_t generation = 0;
};

TraceState& state() {
  static TraceState s;
  return s;
}

// What record() hands back: whether to run the call and, when it runs under
// an open trace, where its wall time goes. The time is added when the object
// dies, i.e. after the wrapped call returned.
class CallTimer {
 public:
  CallTimer() = default;  // run, untimed (no trace open)
  CallTimer(Counts* counts, std::uint64_t generation)
      : counts_(counts), generation_(generation), start_(std::chrono::steady_clock::now()) {}
  static CallTimer skip() {
    CallTimer t;
    t.run_ = false;
    return t;
  }
  CallTimer(CallTimer&& o) noexcept
      : run_(o.run_), counts_(std::exchange(o.counts_, nullptr)), generation_(o.generation_), start_(o.start_) {}
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;
  CallTimer& operator=(CallTimer&&) = delete;
  ~CallTimer() {
    if (counts_ == nullptr) return;
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    TraceState& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.open.load(std::memory_order_relaxed) && s.generation == generation_)
      counts_->nanoseconds +=
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  }
  explicit operator bool() const { return run_; }

 private:
  bool run_ = true;
  Counts* counts_ = nullptr;  // a node of TraceState::counts: stable until the trace closes
  std::uint64_t generation_ = 0;
  std::chrono::steady_clock::time_point start_{};
};

// Words of `batch` polynomials over `base`.
std::uint64_t words_of(std::size_t batch, const RnsBase& base) {
  return static_cast<std::uint64_t>(batch) * base.size() * base.n();
}

class TracingBackend final : public Backend {
 public:
  TracingBackend(Backend& inner, DeviceKind kind) : inner_(inner), kind_(kind) {}
  std::string name() const override { return inner_.name(); }
  void synchronize() override { inner_.synchronize(); }

  void ntt_forward(u64* d, std::size_t b, const RnsBase& base) override {
    if (const auto timer = count("ntt_forward", base, b, words_of(b, base), words_of(b, base))) {
      inner_.ntt_forward(d, b, base);
    }
  }
  void ntt_inverse(u64* d, std::size_t b, const RnsBase& base) override {
    if (const auto timer = count("ntt_inverse", base, b, words_of(b, base), words_of(b, base))) {
      inner_.ntt_inverse(d, b, base);
    }
  }
  void add(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    if (const auto timer = binary("add", n, base)) inner_.add(a, b, o, n, base);
  }
  void sub(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    if (const auto timer = binary("sub", n, base)) inner_.sub(a, b, o, n, base);
  }
  void negate(const u64* a, u64* o, std::size_t n, const RnsBase& base) override {
    if (const auto timer = count("negate", base, n, words_of(n, base), words_of(n, base))) inner_.negate(a, o, n, base);
  }
  void multiply(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base) override {
    if (const auto timer = binary("multiply", n, base)) inner_.multiply(a, b, o, n, base);
  }
  void multiply_add(const u64* a, const u64* b, u64* acc, std::size_t n, const RnsBase& base) override {
    if (const auto timer = count("multiply_add", base, n, 3 * words_of(n, base), words_of(n, base))) {
      inner_.multiply_add(a, b, acc, n, base);
    }
  }
  void inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                          u64* out0, u64* out1, const RnsBase& base) override {
    const std::uint64_t read = 3 * terms * words_of(1, base), written = 2 * words_of(1, base);
    if (const auto timer = count("inner_product_pair", base, 1, read, written, 0, terms)) {
      inner_.inner_product_pair(in, b, a, terms, out0, out1, base);
    }
  }
  void linear_combination(const u64* const* in, const u64* w, std::size_t terms, u64* out, std::size_t n,
                          const RnsBase& base) override {
    const std::uint64_t read = terms * words_of(n, base), written = words_of(n, base);
    if (const auto timer = count("linear_combination", base, n, read, written, 0, terms)) {
      inner_.linear_combination(in, w, terms, out, n, base);
    }
  }
  void multiply_scalar(const u64* a, const u64* s, u64* o, std::size_t n, const RnsBase& base) override {
    if (const auto timer = count("multiply_scalar", base, n, words_of(n, base), words_of(n, base))) {
      inner_.multiply_scalar(a, s, o, n, base);
    }
  }
  void add_scalar(const u64* a, const u64* s, u64* o, std::size_t n, const RnsBase& base) override {
    if (const auto timer = count("add_scalar", base, n, words_of(n, base), words_of(n, base))) {
      inner_.add_scalar(a, s, o, n, base);
    }
  }
  void copy(const u64* src, u64* dst, std::size_t words) override {
    if (const auto timer = move("copy", words, words)) inner_.copy(src, dst, words);
  }
  void zero(u64* dst, std::size_t words) override {
    if (const auto timer = move("zero", 0, words)) inner_.zero(dst, words);
  }
  void poly_multiply(const u64* a, const u64* b, u64* o, std::size_t n, const RnsBase& base,
                     PolyMulMethod m) override {
    if (const auto timer = binary("poly_multiply", n, base)) inner_.poly_multiply(a, b, o, n, base, m);
  }
  void base_convert(const u64* in, u64* out, std::size_t n, const BaseConverter& conv, BaseConversion k) override {
    if (const auto timer = convert("base_convert", conv, n)) inner_.base_convert(in, out, n, conv, k);
  }
  void base_convert_ntt(const u64* in, u64* scratch, u64* const* out_limbs, const BaseConverter& conv,
                        BaseConversion k) override {
    // Counted as one fused call (conversion + forward NTTs of the new limbs);
    // forwarded whole, so the inner backend's own fusion runs untraced.
    if (const auto timer = convert("base_convert_ntt", conv, 1)) {
      inner_.base_convert_ntt(in, scratch, out_limbs, conv, k);
    }
  }
  void automorphism(const u64* in, u64* out, std::size_t n, const RnsBase& base, u64 g, Form f) override {
    if (const auto timer = count("automorphism", base, n, words_of(n, base), words_of(n, base))) {
      inner_.automorphism(in, out, n, base, g, f);
    }
  }

 private:
  // Records one call; the result says whether to run it (not in a dry run)
  // and times it while it lives. A call that arrives after the trace closed
  // runs uncounted.
  CallTimer record(const char* kernel, std::uint32_t n, std::uint32_t limbs, std::uint32_t source_limbs,
                   std::uint32_t terms, std::uint64_t polys, std::uint64_t words, std::uint64_t read_words,
                   std::uint64_t written_words) {
    TraceState& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.open.load(std::memory_order_relaxed)) return CallTimer();
    Counts& c = s.counts[Shape{kernel, current_op_label(), kind_, n, limbs, source_limbs, terms}];
    c.calls += 1;
    c.polys += polys;
    c.words += words;
    c.bytes_read += read_words * kWordBytes;
    c.bytes_written += written_words * kWordBytes;
    if (s.dry_run.load(std::memory_order_relaxed)) return CallTimer::skip();
    return CallTimer(&c, s.generation);
  }
  CallTimer count(const char* kernel, const RnsBase& base, std::size_t batch, std::uint64_t read_words,
                  std::uint64_t written_words, std::uint32_t source_limbs = 0, std::size_t terms = 0) {
    return record(kernel, static_cast<std::uint32_t>(base.n()), static_cast<std::uint32_t>(base.size()), source_limbs,
                  static_cast<std::uint32_t>(terms), batch, 0, read_words, written_words);
  }
  CallTimer binary(const char* kernel, std::size_t batch, const RnsBase& base) {
    return count(kernel, base, batch, 2 * words_of(batch, base), words_of(batch, base));
  }
  CallTimer convert(const char* kernel, const BaseConverter& conv, std::size_t batch) {
    return record(kernel, static_cast<std::uint32_t>(conv.to().n()), static_cast<std::uint32_t>(conv.to().size()),
                  static_cast<std::uint32_t>(conv.from().size()), 0, batch, 0, words_of(batch, conv.from()),
                  words_of(batch, conv.to()));
  }
  CallTimer move(const char* kernel, std::uint64_t read_words, std::uint64_t words) {
    return record(kernel, 0, 0, 0, 0, 0, words, read_words, words);
  }

  Backend& inner_;
  DeviceKind kind_;
};

}  // namespace

void start_trace(bool dry_run) {
  TraceState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  require(!s.open.load(), "trace", "a trace is already open (one at a time per process)");
  s.counts.clear();
  ++s.generation;
  s.dry_run.store(dry_run);
  s.open.store(true);
}

std::vector<TraceEntry> stop_trace() {
  TraceState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  require(s.open.load(), "trace", "no trace is open");
  s.open.store(false);
  s.dry_run.store(false);
  std::vector<TraceEntry> out;
  out.reserve(s.counts.size());
  for (const auto& [shape, c] : s.counts) {
    out.push_back(TraceEntry{shape.kernel, shape.label, device_kind_name(shape.kind), shape.n, shape.limbs,
                             shape.source_limbs, shape.terms, c.calls, c.polys, c.words, c.bytes_read,
                             c.bytes_written, c.nanoseconds});
  }
  s.counts.clear();
  std::sort(out.begin(), out.end(), [](const TraceEntry& a, const TraceEntry& b) {
    return std::tie(a.label, a.kernel, a.device, a.n, a.limbs, a.source_limbs, a.terms) <
           std::tie(b.label, b.kernel, b.device, b.n, b.limbs, b.source_limbs, b.terms);
  });
  return out;
}

bool trace_open() { return state().open.load(std::memory_order_relaxed); }
bool trace_dry_run() { return state().dry_run.load(std::memory_order_relaxed); }

namespace trace {

Backend& wrap(Backend& inner, DeviceKind kind) {
  static std::mutex mutex;
  static std::map<const Backend*, std::unique_ptr<TracingBackend>> wrappers;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = wrappers[&inner];
  if (!slot) slot = std::make_unique<TracingBackend>(inner, kind);
  return *slot;
}

}  // namespace trace

}  // namespace ringfire
