// error.hpp: pathlift's exceptions as Python exceptions. Each is a subclass of the built-in the
// standard base maps to, so `except ValueError` catches a NetworkError:
//   NetworkError, FormatError (std::invalid_argument) -> ValueError
//   UnsupportedModel (std::invalid_argument)           -> UnsupportedModelError, a ValueError
//   CountOverflow (std::overflow_error)               -> OverflowError
//   TooLarge (std::length_error)                      -> MemoryError
//   RangeError (std::range_error)                     -> RangeError, an ArithmeticError
// and, for the standard types themselves, std::length_error -> MemoryError (pybind11 would say
// ValueError); std::invalid_argument, std::out_of_range, std::overflow_error keep pybind11's
// ValueError, IndexError, OverflowError. The message is the C++ message; a TooLarge refusal
// gets the Python way out appended (the library's messages name no argument of any layer).

#include <stdexcept>
#include <string>
#include <string_view>

#include "common.hpp"
#include "pathlift/error.hpp"

namespace pathlift::python {

namespace {

/// The hint a Python caller needs after a TooLarge message: how to raise the limit, or what
/// works without enumerating the paths.
std::string with_python_hint(const TooLarge& e) {
  switch (e.reason()) {
    case TooLarge::Reason::memory_limit:
      return std::string(e.what()) + "; raise the limit with the max_memory= argument (bytes)";
    case TooLarge::Reason::too_many_paths:
      break;
  }
  return std::string(e.what()) +
         "; path_norm, the kernel functions and rank(..., enumerate=False) need no enumeration";
}

}  // namespace

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
  auto unsupported =
      py::register_exception<UnsupportedModel>(m, "UnsupportedModelError", PyExc_ValueError);
  unsupported.doc() =
      "A model (PyTorch, ONNX) with operations pathlift cannot represent: a ValueError whose "
      "message lists every one of them.";
  auto count_overflow =
      py::register_exception<CountOverflow>(m, "CountOverflow", PyExc_OverflowError);
  count_overflow.doc() = "A count that does not fit in 64 bits where an exact one is needed.";
  auto range_error = py::register_exception<RangeError>(m, "RangeError", PyExc_ArithmeticError);
  range_error.doc() =
      "A float64 result that would overflow or underflow (an ArithmeticError): the message "
      "names the values and their magnitude; the scaled forms (path_norm's log10, "
      "kernel_trace) work at any magnitude.";
  auto& too_large = py::register_exception<TooLarge>(m, "TooLarge", PyExc_MemoryError);
  too_large.doc() =
      "Work refused because its result would exceed the memory limit (max_memory): a "
      "MemoryError whose message gives the sizes and the bytes needed.";
  // Newer than register_exception's own translator, so tried first: the message with the hint.
  // (pybind11 keeps the exception object for the life of the module.)
  static py::exception<TooLarge>* const too_large_type = &too_large;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const TooLarge& e) {
      (*too_large_type)(with_python_hint(e).c_str());
    }
  });
}

}  // namespace pathlift::python
