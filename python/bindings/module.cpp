// ringfire._core: the native half of the Python package. One binding file per
// C++ layer; the public, Pythonic API lives in python/ringfire/.
#include <cstring>
#include <vector>

#include "common.h"
#include "ringfire/base/warning.h"

namespace ringfire::python {

U64Array new_array(std::initializer_list<std::size_t> shape) {
  std::size_t total = 1;
  for (std::size_t s : shape) total *= s;
  auto* data = new std::uint64_t[total == 0 ? 1 : total]();
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<std::uint64_t*>(p); });
  std::vector<std::size_t> dims(shape);
  return U64Array(data, dims.size(), dims.data(), owner);
}

namespace {

// Library warnings become Python RuntimeWarnings, attributed to the caller of
// the ringfire function that raised them (stack level 2). Under
// `-W error` the warning is an exception, which propagates from here.
void warn_in_python(const std::string& message) {
  nb::gil_scoped_acquire gil;
  if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 2) < 0) throw nb::python_error();
}

}  // namespace

}  // namespace ringfire::python

NB_MODULE(_core, m) {
  using namespace ringfire::python;
  m.doc() = "ringfire native core (use the ringfire package, not this module)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ringfire::NotSupported& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    }
  });
  // A device that exists failed (CUDA error, device memory): ringfire.DeviceError.
  nb::exception<ringfire::DeviceError>(m, "DeviceError", PyExc_RuntimeError);
  ringfire::set_warning_handler(&warn_in_python);
  bind_base(m);
  bind_arith(m);
  bind_arith128(m);
  bind_ring(m);
  bind_bench(m);
  bind_rlwe(m);
  bind_ckks(m);
  bind_bgv(m);
  bind_io(m);
  bind_cuda(m);
  bind_tfhe(m);
  bind_tfhe_torus(m);
}
