#include "bootstrap_dft.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ringfire/base/errors.h"

namespace ringfire::ckks::bootstrap {

namespace {

long long wrap(long long k, std::size_t n) {
  const long long m = static_cast<long long>(n);
  return ((k % m) + m) % m;
}

// exp(2 pi i (5^j mod 4 len) / (4 len)): the twiddle of butterfly j in a block of length len.
Complex twiddle(std::size_t len, std::size_t j) {
  const std::size_t m = 4 * len;
  std::size_t power = 1;
  for (std::size_t t = 0; t < j; ++t) power = power * 5 % m;
  const double angle = 2.0 * std::numbers::pi * static_cast<double>(power) / static_cast<double>(m);
  return Complex(std::cos(angle), std::sin(angle));
}

// Diagonal k of d, made (zero) on first use. The zero vector is built only
// then: try_emplace's argument would be built (n values set) on every call,
// and the stages call this for every butterfly.
std::vector<Complex>& diagonal(Diagonals& d, long long k, std::size_t n) {
  const long long key = wrap(k, n);
  auto it = d.find(key);
  if (it == d.end()) it = d.emplace(key, std::vector<Complex>(n, Complex(0.0, 0.0))).first;
  return it->second;
}

void check_dimension(std::size_t n, std::size_t len) {
  require(n >= 2 && (n & (n - 1)) == 0 && len >= 2 && len <= n && (len & (len - 1)) == 0, "ckks.bootstrap",
          "internal: bad DFT stage (n = " + std::to_string(n) + ", len = " + std::to_string(len) + ")");
}

}  // namespace

std::size_t dimension_of(const Diagonals& d) { return d.empty() ? 0 : d.begin()->second.size(); }

Diagonals forward_stage(std::size_t n, std::size_t len) {
  check_dimension(n, len);
  const std::size_t half = len / 2;
  Diagonals d;
  for (std::size_t j = 0; j < half; ++j) {
    const Complex w = twiddle(len, j);
    for (std::size_t block = 0; block < n; block += len) {
      const std::size_t top = block + j, bottom = top + half;
      // out[top] = v[top] + w v[top + half]; out[bottom] = v[bottom - half] - w v[bottom].
      diagonal(d, 0, n)[top] += 1.0;
      diagonal(d, static_cast<long long>(half), n)[top] += w;
      diagonal(d, -static_cast<long long>(half), n)[bottom] += 1.0;
      diagonal(d, 0, n)[bottom] -= w;
    }
  }
  return d;
}

Diagonals inverse_stage(std::size_t n, std::size_t len) {
  check_dimension(n, len);
  const std::size_t half = len / 2;
  Diagonals d;
  for (std::size_t j = 0; j < half; ++j) {
    const Complex w_bar = std::conj(twiddle(len, j));
    for (std::size_t block = 0; block < n; block += len) {
      const std::size_t top = block + j, bottom = top + half;
      // u = (a + b) / 2, t = (a - b) conj(w) / 2 undoes a = u + w t, b = u - w t.
      diagonal(d, 0, n)[top] += 0.5;
      diagonal(d, static_cast<long long>(half), n)[top] += 0.5;
      diagonal(d, -static_cast<long long>(half), n)[bottom] += 0.5 * w_bar;
      diagonal(d, 0, n)[bottom] -= 0.5 * w_bar;
    }
  }
  return d;
}

Diagonals multiply(const Diagonals& a, const Diagonals& b, std::size_t n) {
  // (diag(x) R_i)(diag(y) R_j) = diag(x * rot_i(y)) R_{i+j}, R_i the left rotation by i.
  Diagonals out;
  for (const auto& [i, x] : a)
    for (const auto& [j, y] : b) {
      std::vector<Complex>& target = diagonal(out, i + j, n);
      for (std::size_t t = 0; t < n; ++t) target[t] += x[t] * y[(t + static_cast<std::size_t>(i)) % n];
    }
  // Products of butterflies cancel on some diagonals (up to rounding); drop those.
  double largest = 0.0;
  for (const auto& [k, v] : out)
    for (const Complex& x : v) largest = std::max(largest, std::abs(x));
  for (auto it = out.begin(); it != out.end();) {
    bool zero = true;
    for (const Complex& v : it->second) zero = zero && std::abs(v) <= 1e-13 * largest;
    it = zero ? out.erase(it) : std::next(it);
  }
  return out;
}

std::vector<std::size_t> group_sizes(std::size_t stages, std::size_t levels) {
  require(levels >= 1 && levels <= stages, "ckks.bootstrap",
          "a DFT over 2^" + std::to_string(stages) + " slots takes between 1 and " + std::to_string(stages) +
              " levels, got " + std::to_string(levels));
  std::vector<std::size_t> sizes(levels, stages / levels);
  for (std::size_t i = 0; i < stages % levels; ++i) ++sizes[levels - 1 - i];
  return sizes;
}

namespace {

Diagonals scaled(Diagonals d, Complex c) {
  for (auto& [k, v] : d)
    for (Complex& x : v) x *= c;
  return d;
}

// [M 0; 0 0] in dimension 2n: M's diagonal k splits into k (x + k < n) and
// k + n (x + k >= n); rows n..2n-1 are zero.
Diagonals embed_top_left(const Diagonals& m, std::size_t n) {
  Diagonals out;
  for (const auto& [k, d] : m)
    for (std::size_t x = 0; x < n; ++x) {
      const long long target = x + static_cast<std::size_t>(k) < n ? k : k + static_cast<long long>(n);
      diagonal(out, target, 2 * n)[x] += d[x];
    }
  return out;
}

// M acting on n-periodic vectors, written in dimension 2n (diagonals tiled).
Diagonals tile_twice(const Diagonals& m, std::size_t n) {
  Diagonals out;
  for (const auto& [k, d] : m) {
    std::vector<Complex>& target = diagonal(out, k, 2 * n);
    for (std::size_t x = 0; x < 2 * n; ++x) target[x] = d[x % n];
  }
  return out;
}

// out[x] = u[x mod n] + i u[(x mod n) + n] on 2n-periodic u.
Diagonals repack(std::size_t n) {
  Diagonals out;
  std::vector<Complex>& d0 = diagonal(out, 0, 2 * n);
  std::vector<Complex>& dn = diagonal(out, static_cast<long long>(n), 2 * n);
  for (std::size_t x = 0; x < 2 * n; ++x) {
    d0[x] = x < n ? Complex(1.0, 0.0) : Complex(0.0, 1.0);
    dn[x] = x < n ? Complex(0.0, 1.0) : Complex(1.0, 0.0);
  }
  return out;
}

}  // namespace

std::vector<Diagonals> coeffs_to_slots(std::size_t n, std::size_t levels, Complex constant, bool embed) {
  std::size_t stages = 0;
  while ((std::size_t{1} << stages) < n) ++stages;
  const std::vector<std::size_t> sizes = group_sizes(stages, levels);
  const Complex share = std::pow(constant, 1.0 / static_cast<double>(levels));
  std::vector<Diagonals> out;
  std::size_t len = n;  // S_log(n)^-1 (block length n) runs first
  for (std::size_t g = 0; g < levels; ++g) {
    Diagonals m = inverse_stage(n, len);
    len /= 2;
    for (std::size_t s = 1; s < sizes[g]; ++s, len /= 2) m = multiply(inverse_stage(n, len), m, n);
    m = scaled(std::move(m), share);
    out.push_back(embed && g + 1 == levels ? embed_top_left(m, n) : std::move(m));
  }
  return out;
}

std::vector<Diagonals> slots_to_coeffs(std::size_t n, std::size_t levels, bool with_repack) {
  std::size_t stages = 0;
  while ((std::size_t{1} << stages) < n) ++stages;
  const std::vector<std::size_t> sizes = group_sizes(stages, levels);
  std::vector<Diagonals> out;
  std::size_t len = 2;  // S_1 (block length 2) runs first
  for (std::size_t g = 0; g < levels; ++g) {
    Diagonals m = forward_stage(n, len);
    len *= 2;
    for (std::size_t s = 1; s < sizes[g]; ++s, len *= 2) m = multiply(forward_stage(n, len), m, n);
    out.push_back(with_repack && g == 0 ? multiply(tile_twice(m, n), repack(n), 2 * n) : std::move(m));
  }
  return out;
}

}  // namespace ringfire::ckks::bootstrap
