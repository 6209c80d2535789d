// error.hpp: pathlift's exceptions as Python exceptions. Each is a subclass of the built-in the
// standard base maps to, so `except ValueError` catches a NetworkError:
//   NetworkError, FormatError (std::invalid_argument) -> ValueError
//   CountOverflow (std::overflow_error)               -> OverflowError
//   TooLarge (std::length_error)                      -> MemoryError
// and, for the standard types themselves, std::length_error -> MemoryError (pybind11 would say
// ValueError); std::invalid_argument, std::out_of_range, std::overflow_error keep pybind11's
// ValueError, IndexError, OverflowError. The message is the C++ message.

#include <stdexcept>

#include "common.hpp"
#include "pathlift/error.hpp"

namespace pathlift::python {

void bind_error(py::module_& m) {
  // Translators are tried newest first: the generic one is registered before the specific ones.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });
  auto network_error = py::register_exception<NetworkError>(m, "NetworkError", PyExc_ValueError);
  network_error.doc() = "An invalid network (cycle, isolated node, ...): a ValueError.";
  auto format_error = py::register_exception<FormatError>(m, "FormatError", PyExc_ValueError);
  format_error.doc() = "Invalid input text or file (bad JSON, bad field): a ValueError.";
  auto count_overflow =
      py::register_exception<CountOverflow>(m, "CountOverflow", PyExc_OverflowError);
  count_overflow.doc() = "A count that does not fit in 64 bits where an exact one is needed.";
  auto too_large = py::register_exception<TooLarge>(m, "TooLarge", PyExc_MemoryError);
  too_large.doc() =
      "Work refused because its result would exceed the memory limit (max_memory): a "
      "MemoryError whose message gives P, nnz, d and the bytes needed.";
}

}  // namespace pathlift::python
