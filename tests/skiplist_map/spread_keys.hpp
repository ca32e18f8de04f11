#pragma once
// The key layout several skiplist_map tests load: every rank's keys
// r + size * (stride * i + offset) for i < per_rank go into the test's model
// with the value key * 7, and this rank's own keys and values are returned for
// its insert_many.

#include <cstdint>
#include <map>
#include <vector>

struct spread_keys_result {
    std::vector<std::int64_t> keys, values;
};

inline spread_keys_result spread_keys(std::map<std::int64_t, std::int64_t>& model, int rank, int size,
                                      std::int64_t per_rank, std::int64_t stride, std::int64_t offset = 0) {
    spread_keys_result mine;
    for (int r = 0; r < size; ++r)
        for (std::int64_t i = 0; i < per_rank; ++i) {
            const std::int64_t key = r + size * (stride * i + offset);
            model[key] = key * 7;
            if (r == rank) {
                mine.keys.push_back(key);
                mine.values.push_back(key * 7);
            }
        }
    return mine;
}
