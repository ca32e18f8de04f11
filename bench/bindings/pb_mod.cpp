#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <cstdint>
namespace py = pybind11;
struct counter { std::uint64_t total = 0; void add(std::uint64_t k) { total += k; } };
PYBIND11_MODULE(pb_mod, m) {
    py::class_<counter>(m, "counter").def(py::init<>()).def("add", &counter::add)
        .def("add_many", [](counter& c, py::array_t<std::uint64_t, py::array::c_style> a) {
            auto r = a.unchecked<1>(); for (py::ssize_t i = 0; i < r.shape(0); ++i) c.add(r(i)); })
        .def_readonly("total", &counter::total);
}
