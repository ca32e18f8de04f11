// The skip list's C API against C++ (issue 49, item 1: "C's batch insert >=
// 0.8x C++'s"), in the same process on the same keys: each round loads fresh
// lists with
//   c_insert_many     mpidict_skiplist_insert_many_i64 (8-byte values, value_size 8)
//   cpp_insert_many   skiplist_map<int64_t, uint64_t>::insert_many (what a C++ user writes)
//   cpp_string_many   skiplist_map<int64_t, std::string>::insert_many (the map the C API wraps)
//   c_async_insert    mpidict_skiplist_async_insert_i64 per key + flush
// in an order that rotates per round; rates are totals over ranks per second
// of the slowest rank, from a barrier through a collective flush; medians over
// rounds; every load checked (global size, a sample found with its value).
// JSON lines on stdout (rank 0), a table on stderr; exit 1 if a check fails.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/c/skiplist.h"
#include "mpidict/local/hash.hpp"
#include "mpidict/skiplist_map.hpp"
#include "mpidict/support/host.hpp"

namespace {

constexpr const char* bench_name = "skiplist_c";
constexpr const char* description =
    "The skip list's C API against C++ in the same run: batch inserts (C insert_many_i64 vs C++ insert_many)\n"
    "and C async inserts, fresh lists per load, medians over rounds.";

struct settings {
    std::uint64_t keys_per_rank = 1'000'000;
    std::uint64_t rounds = 3;
    std::uint64_t seed = 1;
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_count("keys-per-rank", &s.keys_per_rank, "8-byte keys (and 8-byte values) each rank inserts", 1)
        .add_count("rounds", &s.rounds, "rounds of the four loads (the median is reported)", 1, 1000, "R")
        .add_count("seed", &s.seed, "keys", 0, UINT64_MAX, "S");
}

constexpr std::uint64_t value_of(std::uint64_t key) { return mpidict::mix64(key ^ 0x5bd1e9955bd1e995ULL); }

class runner {
public:
    runner(const settings& s, const mpidict::bench::world& w)
        : m_s(s), m_w(w), m_out(bench_name, w.size, s.seed, w.rank == 0) {}

    int run() {
        m_out.context()
            .add("keys_per_rank", m_s.keys_per_rank)
            .add("load_average", mpidict::support::read_load_average());
        const std::uint64_t n = m_s.keys_per_rank;
        m_keys.resize(n);
        m_values.resize(n);
        const std::uint64_t salt = mpidict::mix64(m_s.seed + 0x9e3779b97f4a7c15ULL);
        for (std::uint64_t i = 0; i < n; ++i) {
            m_keys[i] = static_cast<std::int64_t>(mpidict::mix64((static_cast<std::uint64_t>(m_w.rank) * n + i) ^ salt));
            m_values[i] = value_of(static_cast<std::uint64_t>(m_keys[i]));
        }
        const char* names[] = {"c_insert_many", "cpp_insert_many", "cpp_string_many", "c_async_insert"};
        std::vector<double> rates[4], c_over_cpp, c_over_string;
        for (std::uint64_t round = 0; round < m_s.rounds; ++round) {
            const double load = mpidict::support::read_load_average();
            double rate[4] = {0, 0, 0, 0};
            for (int step = 0; step < 4; ++step) {
                const int what = static_cast<int>((step + round) % 4);
                rate[what] = load_one(what);
                rates[what].push_back(rate[what]);
            }
            c_over_cpp.push_back(rate[0] / rate[1]);
            c_over_string.push_back(rate[0] / rate[2]);
            if (m_w.rank == 0)
                std::fprintf(stderr,
                             "round %llu (load %.2f): C insert_many %.3f M/s, C++ insert_many %.3f M/s (string values "
                             "%.3f M/s), C async_insert %.3f M/s; C/C++ %.3f\n",
                             static_cast<unsigned long long>(round), load, rate[0] / 1e6, rate[1] / 1e6,
                             rate[2] / 1e6, rate[3] / 1e6, c_over_cpp.back());
        }
        auto median = [](std::vector<double> values) {
            std::sort(values.begin(), values.end());
            return values[values.size() / 2];
        };
        for (int what = 0; what < 4; ++what)
            m_out.figure(std::string(names[what]) + "_rate", median(rates[what]), "ops/s");
        m_out.figure("c_over_cpp_insert_many", median(c_over_cpp), "ratio",
                     mpidict::bench::json_object().add("target", 0.8).add("rounds", static_cast<double>(m_s.rounds)));
        m_out.figure("c_over_cpp_string_insert_many", median(c_over_string), "ratio");
        m_out.figure("load_average_after", mpidict::support::read_load_average(), "load");
        std::uint64_t failures = 0;
        MPI_Allreduce(&m_failures, &failures, 1, MPI_UINT64_T, MPI_SUM, m_w.comm);
        m_out.figure("verified", failures == 0 ? 1 : 0, "bool",
                     mpidict::bench::json_object().add("failures", static_cast<double>(failures)));
        m_out.print_table();
        return failures == 0 ? 0 : 1;
    }

private:
    void check(bool ok, const std::string& what) {
        if (!ok) {
            if (m_failures < 3)
                std::fprintf(stderr, "%s: rank %d: %s\n", bench_name, m_w.rank, what.c_str());
            ++m_failures;
        }
    }

    double total(double value) const { return mpidict::bench::sum_over_ranks(value, m_w.comm); }

    template <class Body, class Finish>
    double timed(Body&& body, Finish&& finish) {
        MPI_Barrier(m_w.comm);
        const double start = MPI_Wtime();
        body();
        finish();
        const double seconds = mpidict::bench::max_over_ranks(MPI_Wtime() - start, m_w.comm);
        return total(static_cast<double>(m_keys.size())) / seconds;
    }

    // The sample of this rank's keys every load is checked with.
    std::vector<std::size_t> sample() const {
        std::vector<std::size_t> at;
        for (std::size_t i = 0; i < m_keys.size(); i += std::max<std::size_t>(1, m_keys.size() / 1000))
            at.push_back(i);
        return at;
    }

    double load_one(int what) {
        const std::size_t n = m_keys.size();
        const std::size_t expected = n * static_cast<std::size_t>(m_w.size);
        mpidict::skiplist_map_config config;
        config.max_key_bytes = 8;
        config.max_value_bytes = 8;
        config.node_slots_per_rank = static_cast<std::size_t>(std::max<std::uint64_t>(
            config.node_slots_per_rank, 8 * m_s.keys_per_rank / config.granularity + 64));
        if (what == 1 || what == 2) {
            double rate = 0;
            auto run = [&](auto& map, const auto& values) {
                rate = timed([&] { (void)map.insert_many(std::span<const std::int64_t>(m_keys), std::span(values)); },
                             [&] { map.flush(); });
                check(map.global_size() == expected, "C++ insert_many: not every key stored");
                for (const std::size_t i : sample()) {
                    const auto got = map.find(m_keys[i]).get();
                    std::uint64_t value = 0;
                    if constexpr (std::is_same_v<std::decay_t<decltype(values[0])>, std::string>) {
                        if (got && got->size() == 8)
                            std::memcpy(&value, got->data(), 8);
                    } else if (got) {
                        value = *got;
                    }
                    check(got && value == m_values[i], "C++ insert_many: a value is wrong");
                }
                map.flush();
                map.destroy();
            };
            if (what == 1) {
                mpidict::skiplist_map<std::int64_t, std::uint64_t> map(m_w.comm, config);
                run(map, m_values);
            } else {
                std::vector<std::string> strings(n);
                for (std::size_t i = 0; i < n; ++i)
                    strings[i].assign(reinterpret_cast<const char*>(&m_values[i]), 8);
                mpidict::skiplist_map<std::int64_t, std::string> map(m_w.comm, config);
                run(map, strings);
            }
            return rate;
        }
        mpidict_skiplist_options options;
        mpidict_skiplist_options_init(&options);
        options.max_key_bytes = 8;
        options.max_value_bytes = 8;
        options.node_slots_per_rank = config.node_slots_per_rank;
        mpidict_skiplist* list = nullptr;
        check(mpidict_skiplist_create(m_w.comm, MPIDICT_SKIPLIST_INT64, 8, &options, &list) == MPIDICT_OK,
              mpidict_last_error());
        const double rate = timed(
            [&] {
                if (what == 0) {
                    std::uint64_t stored = 0;
                    check(mpidict_skiplist_insert_many_i64(list, m_keys.data(), n, m_values.data(), nullptr, &stored,
                                                           nullptr, nullptr) == MPIDICT_OK && stored == n,
                          "C insert_many failed");
                } else {
                    for (std::size_t i = 0; i < n; ++i)
                        if (mpidict_skiplist_async_insert_i64(list, m_keys[i], &m_values[i], 8) != MPIDICT_OK) {
                            check(false, mpidict_last_error());
                            break;
                        }
                }
            },
            [&] { mpidict_skiplist_flush(list); });
        std::size_t entries = 0;
        mpidict_skiplist_global_size(list, &entries);
        check(entries == expected, std::string(what == 0 ? "C insert_many" : "C async_insert") + ": not every key stored");
        for (const std::size_t i : sample()) {
            std::uint64_t value = 0;
            int found = 0;
            mpidict_skiplist_find_i64(list, m_keys[i], &value, 8, nullptr, &found);
            check(found == 1 && value == m_values[i], "C: a value is wrong");
        }
        mpidict_skiplist_flush(list);
        mpidict_skiplist_free(&list);
        return rate;
    }

    const settings& m_s;
    const mpidict::bench::world& m_w;
    mpidict::bench::report m_out;
    std::uint64_t m_failures = 0;
    std::vector<std::int64_t> m_keys;
    std::vector<std::uint64_t> m_values;
};

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(
        argc, argv, bench_name, description, declare,
        [](const settings& s, const mpidict::bench::world& w) { return runner(s, w).run(); });
}
