// The C API of skiplist_map, part 5: rebalancing, growing and draining
// (include/mpidict/c/skiplist.h; C++ rebalance, drain, local_rebalance,
// last_rebalance, active_servers).  The collective calls check their arguments in the C++
// core after every rank agreed on them, so a rank that passes something else
// gets an error instead of leaving the others waiting.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "skiplist_internal.hpp"

namespace {

using namespace mpidict::c_skiplist;

void copy_result(const mpidict::skiplist_rebalance_result& from, mpidict_skiplist_rebalance_result* to) {
    if (to == nullptr)
        return;
    using result = mpidict::skiplist_rebalance_result;
    *to = mpidict_skiplist_rebalance_result{};
    to->moved_nodes = from.moved_nodes;
    to->moved_entries = from.moved_entries;
    to->moved_bytes = from.moved_bytes;
    to->refused_nodes = from.refused_nodes;
    to->servers_added = from.servers_added;
    to->head_moved = from.head_moved ? 1 : 0;
    to->servers = from.servers.size();
    // (A result of nothing, before any rebalance, has no servers: ratios 0.)
    const auto ratio = [&](const std::vector<std::uint64_t>& load) { return result::ratio(load, from.servers); };
    to->entries_ratio_before = ratio(from.entries_before);
    to->entries_ratio_after = ratio(from.entries_after);
    to->load_ratio_before = ratio(from.load_before);
    to->load_ratio_after = ratio(from.load_after);
    to->seconds = from.seconds;
}

}  // namespace

extern "C" int mpidict_skiplist_rebalance(mpidict_skiplist* list, int metric, double target,
                                          mpidict_skiplist_rebalance_result* result) {
    constexpr const char* function = "mpidict_skiplist_rebalance";
    if (const int code = check_live(list, function))
        return code;
    // A metric C++ does not know still goes to the core (as a value no rank can
    // mean), which fails on every rank alike once they have compared arguments.
    const bool known = metric == MPIDICT_SKIPLIST_METRIC_ENTRIES || metric == MPIDICT_SKIPLIST_METRIC_REQUESTS;
    mpidict::skiplist_rebalance_options options;
    options.metric = static_cast<mpidict::skiplist_load_metric>(known ? metric : 0xff);
    options.target = target;
    const int code = guarded(function, [&] {
        copy_result(list->ints ? list->ints->rebalance(options) : list->bytes->rebalance(options), result);
        return MPIDICT_OK;
    });
    if (code != MPIDICT_OK && !known)
        return fail(code, function,
                    "metric " + std::to_string(metric) +
                        " is neither MPIDICT_SKIPLIST_METRIC_ENTRIES (0) nor MPIDICT_SKIPLIST_METRIC_REQUESTS (1)"
                        "; nothing moved");
    return code;
}

extern "C" int mpidict_skiplist_drain(mpidict_skiplist* list, int rank, mpidict_skiplist_rebalance_result* result) {
    constexpr const char* function = "mpidict_skiplist_drain";
    if (const int code = check_live(list, function))
        return code;
    return guarded(function, [&] {
        copy_result(list->ints ? list->ints->drain(rank) : list->bytes->drain(rank), result);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_local_rebalance(mpidict_skiplist* list, size_t nodes, int to, size_t* started) {
    constexpr const char* function = "mpidict_skiplist_local_rebalance";
    if (const int code = check_live(list, function))
        return code;
    return guarded(function, [&] {
        const std::size_t moves = list->ints ? list->ints->local_rebalance(nodes, to)
                                             : list->bytes->local_rebalance(nodes, to);
        if (started != nullptr)
            *started = moves;
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_last_rebalance(const mpidict_skiplist* list, mpidict_skiplist_rebalance_result* result) {
    constexpr const char* function = "mpidict_skiplist_last_rebalance";
    if (const int code = check_live(list, function))
        return code;
    if (result == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "result is NULL");
    return guarded(function, [&] {
        copy_result(list->ints ? list->ints->last_rebalance() : list->bytes->last_rebalance(), result);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_active_servers(const mpidict_skiplist* list, int* ranks, size_t capacity,
                                               size_t* count) {
    constexpr const char* function = "mpidict_skiplist_active_servers";
    if (const int code = check_live(list, function))
        return code;
    if (ranks == nullptr && capacity != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "ranks is NULL with capacity " + std::to_string(capacity));
    return guarded(function, [&] {
        const std::vector<int> servers = list->ints ? list->ints->active_servers() : list->bytes->active_servers();
        std::copy_n(servers.begin(), std::min(capacity, servers.size()), ranks);
        if (count != nullptr)
            *count = servers.size();
        return MPIDICT_OK;
    });
}
