// Shared helpers of the binding files.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "ringfire/base/errors.h"

namespace ringfire::python {

namespace nb = nanobind;

// A C-contiguous uint64 NumPy array on the CPU, any shape.
using U64Array = nb::ndarray<std::uint64_t, nb::numpy, nb::c_contig, nb::device::cpu>;
using ConstU64Array = nb::ndarray<const std::uint64_t, nb::numpy, nb::c_contig, nb::device::cpu>;

// A new zero-initialised 1-D..3-D uint64 NumPy array owning its memory.
U64Array new_array(std::initializer_list<std::size_t> shape);

// The rows of a (count, width) or (width,) array (one row), checked: InvalidArgument
// names the operation and the array otherwise.
template <class Array>
std::size_t rows_of(const Array& a, std::size_t width, const char* op, const char* name) {
  if (a.ndim() == 1) {
    require(a.shape(0) == width, op,
            std::string(name) + ": expected " + std::to_string(width) + " words, got " + std::to_string(a.shape(0)));
    return 1;
  }
  require(a.ndim() == 2 && a.shape(1) == width, op,
          std::string(name) + ": expected shape (count, " + std::to_string(width) + ")");
  return a.shape(0);
}

void bind_base(nb::module_& m);
void bind_arith(nb::module_& m);
void bind_arith128(nb::module_& m);
void bind_ring(nb::module_& m);
void bind_bench(nb::module_& m);

}  // namespace ringfire::python

namespace ringfire::python {

void bind_rlwe(nb::module_& m);
void bind_ckks(nb::module_& m);
void bind_bgv(nb::module_& m);
void bind_io(nb::module_& m);
void bind_cuda(nb::module_& m);
void bind_tfhe(nb::module_& m);
void bind_tfhe_torus(nb::module_& m);

}  // namespace ringfire::python
