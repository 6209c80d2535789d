#include "arrays.hpp"

#include <utility>

namespace pathlift::python {

void set_read_only(const py::array& a) {
  // What ndarray.setflags(write=False) does, without a Python method call (a third of a small
  // result's call overhead): clearing WRITEABLE is always allowed.
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
}

py::array_t<double> owning_col_major(Eigen::MatrixXd&& m) {
  auto* heap = new Eigen::MatrixXd(std::move(m));
  py::capsule owner(heap, [](void* p) { delete static_cast<Eigen::MatrixXd*>(p); });
  const auto rows = static_cast<py::ssize_t>(heap->rows());
  const auto cols = static_cast<py::ssize_t>(heap->cols());
  constexpr auto size = static_cast<py::ssize_t>(sizeof(double));
  return py::array_t<double>({rows, cols}, {size, size * rows}, heap->data(), owner);
}

py::array_t<double> col_major_view(const Eigen::MatrixXd& m, const py::handle& base) {
  const auto rows = static_cast<py::ssize_t>(m.rows());
  const auto cols = static_cast<py::ssize_t>(m.cols());
  constexpr auto size = static_cast<py::ssize_t>(sizeof(double));
  py::array_t<double> a({rows, cols}, {size, size * rows}, m.data(), base);
  set_read_only(a);
  return a;
}

}  // namespace pathlift::python
