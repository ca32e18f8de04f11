#pragma once
// What the engine-backed facades (hash_map, linear_hash_map, skiplist_map)
// share at construction and teardown, so that each says it once.

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

// Names a container's operation kinds in its engine (the statistics' rows).
template <class Names>
void register_op_kinds(runtime::engine& engine, const Names& names) {
    for (const std::string_view name : names)
        engine.register_op_kind(name);
}

// A fixed-size value type must fit max_value_bytes (byte strings are checked per value).
template <class V>
void check_value_type(const char* container, std::size_t max_value_bytes) {
    if constexpr (!std::is_same_v<V, std::string> && !std::is_same_v<V, std::vector<std::byte>>) {
        if (sizeof(V) > max_value_bytes)
            throw invalid_argument_error(std::string("mpidict: ") + container + " value type of " +
                                         std::to_string(sizeof(V)) + " bytes exceeds max_value_bytes = " +
                                         std::to_string(max_value_bytes));
    }
}

// local_statistics() and reset_statistics() of a facade over a core whose
// counters the engine's handlers change (so read under the engine's lock).
template <class Core>
auto locked_local_statistics(Core& core) {
    runtime::engine_lock lock(core.engine());
    return core.local_statistics();
}
template <class Core>
void reset_statistics(Core& core) {
    runtime::engine_lock lock(core.engine());
    core.engine().reset_statistics();
    core.reset_local_statistics();
}

// A facade's destructor: the collective destroy() while the engine is alive and
// no exception is unwinding (otherwise the engine abandons without waiting); a
// failure is printed, never thrown out of a destructor.
template <class Destroy>
void destroy_from_destructor(runtime::engine* engine, const char* container, Destroy&& destroy) noexcept {
    if (engine == nullptr || engine->destroyed() || std::uncaught_exceptions() != 0)
        return;
    try {
        destroy();
    } catch (const std::exception& problem) {
        std::fprintf(stderr, "mpidict: %s teardown on rank %d failed: %s\n", container, engine->rank(),
                     problem.what());
    }
}

}  // namespace mpidict::detail
