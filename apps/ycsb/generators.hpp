#pragma once
// The number generators of YCSB's core workload, rebuilt from their
// definitions in YCSB's source (site.ycsb.generator.*, site.ycsb.Utils, release
// 0.17.0 and master; docs/ycsb.md cites each file).  Same formulas and
// constants; a 64-bit xoshiro256** stream stands in for Java's
// ThreadLocalRandom, so the sequences are not YCSB's sequences, but the
// distributions are YCSB's distributions.
//
// Where YCSB relies on Java arithmetic the C++ reproduces it:
//   - fnv_hash64: the arithmetic right shift of a signed long and Math.abs
//     (which leaves Long.MIN_VALUE negative);
//   - Math.abs(nextLong()) % n: a 63-bit uniform value modulo n (the one Java
//     value whose abs stays negative, probability 2^-64, is not reproduced).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/detail/xoshiro.hpp"

namespace mpidict::apps::ycsb {

// Utils.fnvhash64: FNV-1a over the 8 bytes of val, least significant first,
// then the absolute value as a signed long.
std::int64_t fnv_hash64(std::int64_t val);

// A seeded xoshiro256** stream (detail/xoshiro.hpp).
class random_source {
public:
    explicit random_source(std::uint64_t seed) : m_stream(seed) {}
    std::uint64_t next_u64() { return m_stream.next(); }
    // Uniform in [0, 1) with 53 random bits (ThreadLocalRandom.nextDouble).
    double next_double() { return m_stream.unit(); }
    // Math.abs(nextLong()) % n for n >= 1.
    std::int64_t next_below(std::int64_t n) { return static_cast<std::int64_t>((next_u64() >> 1) % static_cast<std::uint64_t>(n)); }

private:
    detail::xoshiro256 m_stream;
};

// UniformLongGenerator(lb, ub): lb + abs(long) % (ub - lb + 1).
class uniform_generator {
public:
    uniform_generator(std::int64_t lb, std::int64_t ub) : m_lb(lb), m_interval(ub - lb + 1) {}
    std::int64_t next(random_source& random) const { return m_lb + random.next_below(m_interval); }

private:
    std::int64_t m_lb;
    std::int64_t m_interval;
};

// ZipfianGenerator(min, max, theta[, zetan]) (Gray et al., "Quickly
// generating billion-record synthetic databases"): item min is the most
// popular.  next_long(itemcount) grows the item count incrementally as YCSB
// does (eta keeps the item count of construction, as in YCSB).
class zipfian_generator {
public:
    static constexpr double zipfian_constant = 0.99;

    zipfian_generator(std::int64_t min, std::int64_t max, double theta = zipfian_constant);
    zipfian_generator(std::int64_t min, std::int64_t max, double theta, double zetan);

    std::int64_t next(random_source& random) { return next_long(random, m_items); }
    std::int64_t next_long(random_source& random, std::int64_t itemcount);

    // sum_{i=st}^{n-1} 1/(i+1)^theta + initial (ZipfianGenerator.zetastatic).
    static double zeta(std::int64_t st, std::int64_t n, double theta, double initial);

    std::int64_t items() const { return m_items; }
    double zetan() const { return m_zetan; }
    double theta() const { return m_theta; }

private:
    std::int64_t m_items;
    std::int64_t m_base;
    double m_theta;
    double m_zeta2theta;
    double m_alpha;
    double m_zetan;
    double m_eta;
    std::int64_t m_count_for_zeta;
};

// ScrambledZipfianGenerator(min, max): a zipfian over YCSB's fixed item count
// (10^10, zeta precomputed as 26.46902820178302 for theta 0.99), then
// min + fnv_hash64(item) % (max - min + 1), so the popular items are spread
// over the key space and do not move when the key space grows.
class scrambled_zipfian_generator {
public:
    static constexpr std::int64_t item_count = 10000000000LL;
    static constexpr double zetan_for_item_count = 26.46902820178302;

    scrambled_zipfian_generator(std::int64_t min, std::int64_t max);
    std::int64_t next(random_source& random);

private:
    zipfian_generator m_zipfian;
    std::int64_t m_min;
    std::int64_t m_itemcount;
};

// SkewedLatestGenerator over a counter: max - zipfian(max) where max is the
// counter's last acknowledged value, so the newest records are the most popular.
class skewed_latest_generator {
public:
    explicit skewed_latest_generator(std::int64_t initial_last);
    std::int64_t next(random_source& random, std::int64_t last);

private:
    zipfian_generator m_zipfian;
};

// HotspotIntegerGenerator(lb, ub, hot data fraction, hot operation fraction):
// a fraction of the operations uniformly on the first (hot) part of the range,
// the rest uniformly on the remainder.  The fractions must leave both parts
// non-empty where they are used (checked by the workload).
class hotspot_generator {
public:
    hotspot_generator(std::int64_t lb, std::int64_t ub, double hot_data_fraction, double hot_operation_fraction);
    std::int64_t next(random_source& random) const;
    std::int64_t hot_interval() const { return m_hot_interval; }
    std::int64_t cold_interval() const { return m_cold_interval; }

private:
    std::int64_t m_lb;
    std::int64_t m_hot_interval;
    std::int64_t m_cold_interval;
    double m_hot_operation_fraction;
};

// ExponentialGenerator(percentile, range): -ln(u) / gamma with
// gamma = -ln(1 - percentile/100) / range.
class exponential_generator {
public:
    exponential_generator(double percentile, double range);
    double next(random_source& random) const;
    double gamma() const { return m_gamma; }

private:
    double m_gamma;
};

// DiscreteGenerator: one of the values, with probability weight / sum of weights.
class discrete_generator {
public:
    void add(double weight, int value) { m_entries.push_back({weight, value}); m_sum += weight; }
    int next(random_source& random) const;
    bool empty() const { return m_entries.empty(); }

private:
    struct entry {
        double weight;
        int value;
    };
    std::vector<entry> m_entries;
    double m_sum = 0;
};

}  // namespace mpidict::apps::ycsb
