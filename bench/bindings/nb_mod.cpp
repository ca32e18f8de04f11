#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <cstdint>
namespace nb = nanobind;
struct counter { std::uint64_t total = 0; void add(std::uint64_t k) { total += k; } };
NB_MODULE(nb_mod, m) {
    nb::class_<counter>(m, "counter").def(nb::init<>()).def("add", &counter::add)
        .def("add_many", [](counter& c, nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig> a) {
            for (std::size_t i = 0; i < a.shape(0); ++i) c.add(a.data()[i]); })
        .def_ro("total", &counter::total);
}
