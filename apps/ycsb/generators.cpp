// YCSB's generators (generators.hpp): the formulas of site.ycsb.generator.*.
#include "ycsb/generators.hpp"

#include <cmath>
#include <stdexcept>

namespace mpidict::apps::ycsb {

std::int64_t fnv_hash64(std::int64_t val) {
    constexpr std::uint64_t offset_basis = 0xCBF29CE484222325ULL;
    constexpr std::uint64_t prime = 1099511628211ULL;
    std::uint64_t hash = offset_basis;
    for (int i = 0; i < 8; ++i) {
        const std::uint64_t octet = static_cast<std::uint64_t>(val) & 0xffU;
        val >>= 8;  // arithmetic, as Java's >> on a long
        hash ^= octet;
        hash *= prime;
    }
    // Math.abs(long): two's complement negation, Long.MIN_VALUE stays itself.
    const auto as_signed = static_cast<std::int64_t>(hash);
    return as_signed < 0 ? static_cast<std::int64_t>(0 - hash) : as_signed;
}

double zipfian_generator::zeta(std::int64_t st, std::int64_t n, double theta, double initial) {
    double sum = initial;
    for (std::int64_t i = st; i < n; ++i)
        sum += 1 / std::pow(static_cast<double>(i + 1), theta);
    return sum;
}

zipfian_generator::zipfian_generator(std::int64_t min, std::int64_t max, double theta)
    : zipfian_generator(min, max, theta, zeta(0, max - min + 1, theta, 0)) {}

zipfian_generator::zipfian_generator(std::int64_t min, std::int64_t max, double theta, double zetan)
    : m_items(max - min + 1),
      m_base(min),
      m_theta(theta),
      m_zeta2theta(zeta(0, 2, theta, 0)),
      m_alpha(1.0 / (1.0 - theta)),
      m_zetan(zetan),
      m_count_for_zeta(m_items) {
    if (!(theta > 0 && theta < 1))
        throw std::invalid_argument("zipfian constant must be in (0, 1), got " + std::to_string(theta));
    m_eta = (1 - std::pow(2.0 / static_cast<double>(m_items), 1 - m_theta)) / (1 - m_zeta2theta / m_zetan);
}

std::int64_t zipfian_generator::next_long(random_source& random, std::int64_t itemcount) {
    if (itemcount > m_count_for_zeta) {
        // YCSB adds the new terms to zetan; eta keeps the construction's item count.
        m_zetan = zeta(m_count_for_zeta, itemcount, m_theta, m_zetan);
        m_count_for_zeta = itemcount;
        m_eta = (1 - std::pow(2.0 / static_cast<double>(m_items), 1 - m_theta)) / (1 - m_zeta2theta / m_zetan);
    }
    const double u = random.next_double();
    const double uz = u * m_zetan;
    if (uz < 1.0)
        return m_base;
    if (uz < 1.0 + std::pow(0.5, m_theta))
        return m_base + 1;
    return m_base + static_cast<std::int64_t>(static_cast<double>(itemcount) *
                                              std::pow(m_eta * u - m_eta + 1, m_alpha));
}

scrambled_zipfian_generator::scrambled_zipfian_generator(std::int64_t min, std::int64_t max)
    : m_zipfian(0, item_count, zipfian_generator::zipfian_constant, zetan_for_item_count),
      m_min(min),
      m_itemcount(max - min + 1) {}

std::int64_t scrambled_zipfian_generator::next(random_source& random) {
    const std::int64_t item = m_zipfian.next(random);
    return m_min + fnv_hash64(item) % m_itemcount;
}

skewed_latest_generator::skewed_latest_generator(std::int64_t initial_last)
    // new ZipfianGenerator(basis.lastValue()): items 0 .. last - 1.
    : m_zipfian(0, initial_last - 1) {}

std::int64_t skewed_latest_generator::next(random_source& random, std::int64_t last) {
    return last - m_zipfian.next_long(random, last);
}

hotspot_generator::hotspot_generator(std::int64_t lb, std::int64_t ub, double hot_data_fraction,
                                     double hot_operation_fraction)
    : m_lb(lb), m_hot_operation_fraction(hot_operation_fraction) {
    const std::int64_t interval = ub - lb + 1;
    m_hot_interval = static_cast<std::int64_t>(static_cast<double>(interval) * hot_data_fraction);
    m_cold_interval = interval - m_hot_interval;
}

std::int64_t hotspot_generator::next(random_source& random) const {
    if (random.next_double() < m_hot_operation_fraction)
        return m_lb + random.next_below(m_hot_interval);
    return m_lb + m_hot_interval + random.next_below(m_cold_interval);
}

exponential_generator::exponential_generator(double percentile, double range)
    : m_gamma(-std::log(1.0 - percentile / 100.0) / range) {}

double exponential_generator::next(random_source& random) const {
    return -std::log(random.next_double()) / m_gamma;
}

int discrete_generator::next(random_source& random) const {
    double value = random.next_double();
    for (const entry& each : m_entries) {
        const double share = each.weight / m_sum;
        if (value < share)
            return each.value;
        value -= share;
    }
    return m_entries.back().value;  // rounding left a sliver past the last share
}

}  // namespace mpidict::apps::ycsb
