// orbit: see orbit.hpp and docs/orbit.md.

#include "orbit/orbit.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "mpidict/support/json.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"
#include "mpidict/support/yielding.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/detail/huge_pages.hpp"
#include "mpidict/local/hash.hpp"

namespace mpidict::apps::orbit {

const char* to_string(backend which) {
    switch (which) {
    case backend::serial: return "serial";
    case backend::serial_flat: return "serial_flat";
    case backend::hash_map: return "hash_map";
    case backend::rma_lock_free: return "rma_lock_free";
    default: return "rma_owner_lock";
    }
}

namespace {

// ---- points --------------------------------------------------------------------

template <std::size_t Words>
struct packed_point {
    std::array<std::uint32_t, Words> words;
    // Word by word: the defaulted comparison of std::array called memcmp out of
    // line, 60% of the serial search's samples (perf, m24_5tuples).
    bool operator==(const packed_point& other) const {
        bool same = true;
        for (std::size_t i = 0; i < Words; ++i)
            same &= words[i] == other.words[i];
        return same;
    }
};

template <class Point>
struct point_hash {
    std::size_t operator()(const Point& point) const { return static_cast<std::size_t>(hasher<Point>{}(point)); }
};

constexpr int max_coordinates = max_point_bits;  // one bit per coordinate at least
using coordinates = std::array<std::uint16_t, max_coordinates>;

// Bit-packs `count` coordinates of `bits` bits each into a point of up to 32 bytes.
class point_codec {
public:
    explicit point_codec(const problem& input)
        : m_count(input.coordinates()), m_bits(input.bits_per_coordinate()),
          m_mask((std::uint64_t{1} << m_bits) - 1) {}

    template <class Point>
    Point pack(const std::uint16_t* values) const {
        std::uint64_t buffer[5] = {};
        for (int index = 0; index < m_count; ++index) {
            const int offset = index * m_bits;
            const int word = offset >> 6;
            const int shift = offset & 63;
            buffer[word] |= static_cast<std::uint64_t>(values[index]) << shift;
            if (shift + m_bits > 64)
                buffer[word + 1] |= static_cast<std::uint64_t>(values[index]) >> (64 - shift);
        }
        Point point;
        std::memcpy(static_cast<void*>(&point), buffer, sizeof(Point));
        return point;
    }

    template <class Point>
    void unpack(const Point& point, std::uint16_t* values) const {
        std::uint64_t buffer[5] = {};
        std::memcpy(buffer, &point, sizeof(Point));
        for (int index = 0; index < m_count; ++index) {
            const int offset = index * m_bits;
            const int word = offset >> 6;
            const int shift = offset & 63;
            std::uint64_t value = buffer[word] >> shift;
            if (shift + m_bits > 64)
                value |= buffer[word + 1] << (64 - shift);
            values[index] = static_cast<std::uint16_t>(value & m_mask);
        }
    }

    int count() const { return m_count; }

private:
    int m_count;
    int m_bits;
    std::uint64_t m_mask;
};

// The group's action on unpacked points.
class group_action {
public:
    explicit group_action(const problem& input)
        : m_kind(input.kind), m_action(input.action), m_count(input.coordinates()), m_field(input.field),
          m_dim(input.dim) {
        for (const std::vector<int>& generator : input.generators) {
            std::vector<std::uint32_t> table(generator.begin(), generator.end());
            m_tables.push_back(std::move(table));
        }
    }

    std::size_t generators() const { return m_tables.size(); }

    void apply(std::size_t generator, const std::uint16_t* in, std::uint16_t* out) const {
        const std::uint32_t* table = m_tables[generator].data();
        if (m_kind == group_kind::permutation) {
            for (int index = 0; index < m_count; ++index)
                out[index] = static_cast<std::uint16_t>(table[in[index]]);
            if (m_action == action_kind::on_sets)
                std::sort(out, out + m_count);
            return;
        }
        // Row vector times matrix: the sum of in[i] * row i, mod q.
        std::array<std::uint64_t, max_coordinates> sum{};
        for (int row = 0; row < m_dim; ++row) {
            const std::uint64_t factor = in[row];
            if (factor == 0)
                continue;
            const std::uint32_t* entries = table + static_cast<std::size_t>(row) * static_cast<std::size_t>(m_dim);
            for (int column = 0; column < m_dim; ++column)
                sum[static_cast<std::size_t>(column)] += factor * entries[column];
        }
        for (int column = 0; column < m_dim; ++column)
            out[column] = static_cast<std::uint16_t>(sum[static_cast<std::size_t>(column)] %
                                                     static_cast<std::uint64_t>(m_field));
    }

private:
    group_kind m_kind;
    action_kind m_action;
    int m_count;
    int m_field;
    int m_dim;
    std::vector<std::vector<std::uint32_t>> m_tables;
};

// ---- MPI helpers that yield while waiting (support/yielding.hpp) ------

template <std::size_t N>
std::array<std::uint64_t, N> reduce_yielding(std::array<std::uint64_t, N> values, MPI_Op op, MPI_Comm comm) {
    std::array<std::uint64_t, N> result{};
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(values.data(), result.data(), static_cast<int>(N), MPI_UINT64_T, op, comm, &request);
    support::wait_yielding(request);
    return result;
}

std::size_t peak_rss_bytes() {
    std::size_t peak = 0;
    if (std::FILE* status = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, status)) {
            unsigned long long kib = 0;
            if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1)
                peak = static_cast<std::size_t>(kib) * 1024;
        }
        std::fclose(status);
    }
    return peak;
}

// The orbit's checksum: the sum (mod 2^64) of a hash of every point, added as
// the point leaves a frontier (every point of the orbit is in exactly one
// rank's frontier once), so every backend can be checked against the others.
// Its own mix (not hasher<Point>, which may change): a test pins one value.
template <class Point>
std::uint64_t point_checksum(const Point& point) {
    std::uint64_t h = 0x6a09e667f3bcc909ULL;
    for (const std::uint32_t word : point.words) {
        h = (h ^ word) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's finaliser
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

// ---- visited sets ------------------------------------------------------------------

// Contract of a visited set:
//   offer(point)          test-and-insert; a new point must end up in its owner's
//                         next frontier
//   end_level(next)       collective: completes the level, moves this rank's new
//                         points into `next`
//   not_stored()          points refused so far (full table)
//   global_size()         collective
//   table_bytes()         this rank's memory for the set

template <class Point>
class hash_map_visited {
public:
    using map_type = mpidict::hash_map<Point, std::uint8_t>;

    hash_map_visited(MPI_Comm comm, std::size_t expected_per_rank)
        : m_map(comm, make_config(expected_per_rank)) {
        m_visit = m_map.register_visitor("orbit.visit", &on_visit, this);
    }

    void offer(const Point& point) { m_map.async_visit(point, m_visit, std::uint8_t{0}); }
    void end_level(std::vector<Point>& next) {
        m_map.flush();
        next.swap(m_next);
        m_next.clear();
    }
    std::uint64_t not_stored() const { return m_map.async_rejected(); }
    std::uint64_t global_size() { return m_map.global_size(); }
    std::size_t table_bytes() const { return m_map.local_memory_bytes(); }
    bool shared_memory() const { return false; }
    void destroy() { m_map.destroy(); }

private:
    static hash_map_config make_config(std::size_t expected_per_rank) {
        hash_map_config config;
        config.expected_keys_per_rank = expected_per_rank;
        return config;
    }

    // Runs at the owner: the test-and-insert, and the owner's next frontier.
    static void on_visit(typename map_type::visit_context& context, const Point& point,
                         std::vector<std::uint8_t>& values, const std::uint8_t&) {
        if (!values.empty())
            return;
        values.push_back(1);
        static_cast<hash_map_visited*>(context.user_context)->m_next.push_back(point);
    }

    map_type m_map;
    typename map_type::template visitor<std::uint8_t, void> m_visit{};
    std::vector<Point> m_next;
};

template <class Point>
class rma_visited {
public:
    rma_visited(MPI_Comm comm, const rma_hash_set_config& config, std::size_t batch)
        : m_set(comm, config), m_comm(comm), m_batch_limit(std::max<std::size_t>(batch, 1)),
          m_outgoing(static_cast<std::size_t>(m_set.num_ranks())) {
        MPI_Type_contiguous(static_cast<int>(sizeof(Point)), MPI_BYTE, &m_point_type);
        MPI_Type_commit(&m_point_type);
        m_batch.reserve(m_batch_limit);
    }
    rma_visited(const rma_visited&) = delete;
    rma_visited& operator=(const rma_visited&) = delete;
    ~rma_visited() { MPI_Type_free(&m_point_type); }

    void offer(const Point& point) {
        m_batch.push_back(point);
        if (m_batch.size() >= m_batch_limit)
            drain();
    }

    void end_level(std::vector<Point>& next) {
        drain();
        // New points travel to their owners: one all-to-all per level.
        const auto size = static_cast<std::size_t>(m_set.num_ranks());
        std::vector<int> send_counts(size), receive_counts(size), send_offsets(size), receive_offsets(size);
        std::vector<Point> send;
        for (std::size_t rank = 0; rank < size; ++rank) {
            if (m_outgoing[rank].size() > static_cast<std::size_t>(INT_MAX) - send.size())
                throw error("orbit: more than 2^31 new points for one level on one rank");
            send_offsets[rank] = static_cast<int>(send.size());
            send_counts[rank] = static_cast<int>(m_outgoing[rank].size());
            send.insert(send.end(), m_outgoing[rank].begin(), m_outgoing[rank].end());
            m_outgoing[rank].clear();
        }
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Ialltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, m_comm, &request);
        support::wait_yielding(request);
        std::size_t total = 0;
        for (std::size_t rank = 0; rank < size; ++rank) {
            receive_offsets[rank] = static_cast<int>(total);
            total += static_cast<std::size_t>(receive_counts[rank]);
        }
        next.resize(total);
        MPI_Ialltoallv(send.data(), send_counts.data(), send_offsets.data(), m_point_type, next.data(),
                       receive_counts.data(), receive_offsets.data(), m_point_type, m_comm, &request);
        support::wait_yielding(request);
    }

    std::uint64_t not_stored() const { return m_not_stored; }
    std::uint64_t global_size() { return m_set.global_size(); }
    std::size_t table_bytes() const { return m_set.local_memory_bytes(); }
    bool shared_memory() const { return m_set.shared_memory(); }
    void destroy() { m_set.destroy(); }

private:
    void drain() {
        if (m_batch.empty())
            return;
        const insert_if_absent_many_result result = m_set.insert_if_absent_many(m_batch);
        for (std::size_t index = 0; index < m_batch.size(); ++index)
            if (result.status[index] == insert_status::inserted)
                m_outgoing[static_cast<std::size_t>(m_set.owner(m_batch[index]))].push_back(m_batch[index]);
        m_not_stored += result.not_inserted;
        m_batch.clear();
    }

    rma_hash_set<Point> m_set;
    MPI_Comm m_comm;
    std::size_t m_batch_limit;
    std::vector<std::vector<Point>> m_outgoing;
    std::vector<Point> m_batch;
    std::uint64_t m_not_stored = 0;
    MPI_Datatype m_point_type = MPI_DATATYPE_NULL;
};

// ---- the search ------------------------------------------------------------------

struct level_printer {
    const problem& input;
    backend which;
    bool enabled;
    void operator()(int level, std::uint64_t fresh, std::uint64_t visited, double seconds) const {
        if (!enabled)
            return;
        std::fprintf(stderr, "orbit %s [%s] level %d: %llu new, %llu visited, %.3f s\n", input.name.c_str(),
                     to_string(which), level, static_cast<unsigned long long>(fresh),
                     static_cast<unsigned long long>(visited), seconds);
    }
};

template <class Point, class Visited>
orbit_result distributed_search(Visited& visited, const problem& input, backend which, const orbit_options& options,
                                MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const point_codec codec(input);
    const group_action action(input);
    const level_printer print{input, which, options.progress && rank == 0};
    coordinates in{};
    coordinates out{};
    for (int index = 0; index < input.coordinates(); ++index)
        in[static_cast<std::size_t>(index)] = static_cast<std::uint16_t>(input.start[static_cast<std::size_t>(index)]);
    const Point start = codec.pack<Point>(in.data());

    orbit_result result;
    result.which = which;
    result.ran = true;
    support::barrier_yielding(comm);
    const double begin = MPI_Wtime();
    std::vector<Point> frontier;
    std::vector<Point> next;
    if (rank == 0)
        visited.offer(start);
    visited.end_level(frontier);
    std::uint64_t images = 0;
    auto totals = reduce_yielding<2>({frontier.size(), visited.not_stored()}, MPI_SUM, comm);
    std::uint64_t length = totals[0];
    print(0, totals[0], length, MPI_Wtime() - begin);
    int level = 0;
    std::uint64_t checksum = 0;
    while (totals[0] > 0 && totals[1] == 0) {
        for (const Point& point : frontier) {
            checksum += point_checksum(point);
            codec.unpack(point, in.data());
            for (std::size_t generator = 0; generator < action.generators(); ++generator) {
                action.apply(generator, in.data(), out.data());
                visited.offer(codec.pack<Point>(out.data()));
            }
        }
        images += frontier.size() * action.generators();
        next.clear();
        visited.end_level(next);
        frontier.swap(next);
        totals = reduce_yielding<2>({frontier.size(), visited.not_stored()}, MPI_SUM, comm);
        length += totals[0];
        ++level;
        if (totals[0] > 0)
            print(level, totals[0], length, MPI_Wtime() - begin);
    }
    support::barrier_yielding(comm);
    result.seconds = MPI_Wtime() - begin;
    result.levels = level;
    result.orbit_length = length;
    const auto sums = reduce_yielding<2>({images, checksum}, MPI_SUM, comm);
    result.images = sums[0];
    result.checksum = sums[1];
    result.set_size = visited.global_size();
    result.shared_memory = visited.shared_memory();
    if (totals[1] > 0)
        result.failure = "the visited set is full: " + std::to_string(totals[1]) +
                         " new points could not be stored (raise --slots-per-rank or lower --max-load)";
    return result;
}

// Growable visited sets (the serial baselines' and hash_map's) are pre-sized
// from the file's 'expected' only up to this many points and grow past it: a
// wrong 'expected' (3e7 for a 7,920-point orbit cost 418 MB per rank) must not
// cost memory up front.  The rma tables cannot grow; they are sized from it and
// refused, naming the size and the limit, when they cannot fit.
constexpr std::uint64_t max_presize_points = std::uint64_t{1} << 20;
// serial_flat, the strong baseline, gets the capacity hint the rma tables get (a
// table that grows while the clock runs is not the best serial code), up to
// 2^23 points: 16M slots, 64-128 MB for the 4- and 8-byte points of the
// repository's problems (the largest orbit, m24_5tuples, has 5.1M points).
constexpr std::uint64_t max_presize_flat_points = std::uint64_t{1} << 23;

// The strong serial baseline: linear probing over packed points in one array
// (an empty slot holds a sentinel point, all bits set, so a probe touches one
// cache line; a real all-ones point is kept in a flag), load <= 1/2, the
// hash of the distributed sets (hasher<Point>; the home slot is its low bits,
// a power-of-two table: a multiply-shift over an exact size measured slower),
// doubled when half full, on huge pages (detail::huge_page_allocator, as
// hash_map's tables are).  It is pre-sized from 'expected' like the rma tables (at most
// max_presize_flat_points) and built before the clock starts, as theirs are.
template <class Point>
class flat_point_set {
public:
    explicit flat_point_set(std::size_t expected) {
        std::memset(static_cast<void*>(&m_empty), 0xff, sizeof(Point));
        rebuild(std::bit_ceil(std::max<std::size_t>(16, 2 * expected)));
    }

    // True if `point` was new.
    bool insert(const Point& point) {
        if (2 * (m_size + 1) > m_slots.size())
            rebuild(2 * m_slots.size());
        return insert_at(point, home(point));
    }
    // Inserts a batch of images, calling on_new(point) for each that was new:
    // grown first, then every home slot prefetched before any is probed (the
    // serial search buffers as many images as the distributed backends do).
    template <class OnNew>
    void insert_batch(std::span<const Point> points, OnNew&& on_new) {
        while (2 * (m_size + points.size()) > m_slots.size())
            rebuild(2 * m_slots.size());
        m_home.resize(points.size());
        for (std::size_t i = 0; i < points.size(); ++i) {
            const std::size_t index = home(points[i]);
            m_home[i] = index;
            __builtin_prefetch(&m_slots[index], 1);
        }
        for (std::size_t i = 0; i < points.size(); ++i)
            if (insert_at(points[i], m_home[i]))
                on_new(points[i]);
    }
    std::size_t size() const { return m_size; }
    std::size_t memory_bytes() const { return m_slots.size() * sizeof(Point); }

private:
    std::size_t home(const Point& point) const { return static_cast<std::size_t>(hasher<Point>{}(point)) & m_mask; }

    bool insert_at(const Point& point, std::size_t index) {
        if (point == m_empty) [[unlikely]] {
            if (m_has_empty)
                return false;
            m_has_empty = true;
            ++m_size;
            return true;
        }
        Point* slots = m_slots.data();
        while (!(slots[index] == m_empty)) {
            if (slots[index] == point)
                return false;
            index = (index + 1) & m_mask;
        }
        slots[index] = point;
        ++m_size;
        return true;
    }

    void rebuild(std::size_t capacity) {
        slot_array slots(capacity, m_empty);
        slots.swap(m_slots);
        m_mask = capacity - 1;
        m_size = m_has_empty ? 1 : 0;
        for (const Point& point : slots)
            if (!(point == m_empty))
                insert_at(point, home(point));
    }

    using slot_array = std::vector<Point, detail::huge_page_allocator<Point>>;
    Point m_empty;
    bool m_has_empty = false;
    slot_array m_slots;
    std::vector<std::size_t> m_home;
    std::size_t m_mask = 0;
    std::size_t m_size = 0;
};

template <class Point>
struct unordered_point_set {
    explicit unordered_point_set(std::size_t expected) { set.reserve(expected); }
    bool insert(const Point& point) { return set.insert(point).second; }
    template <class OnNew>
    void insert_batch(std::span<const Point> points, OnNew&& on_new) {
        for (const Point& point : points)
            if (set.insert(point).second)
                on_new(point);
    }
    std::size_t size() const { return set.size(); }
    std::size_t memory_bytes() const {
        return set.bucket_count() * sizeof(void*) + set.size() * (sizeof(Point) + 2 * sizeof(void*));
    }
    std::unordered_set<Point, point_hash<Point>> set;
};

template <class Point, class Set>
orbit_result serial_search(const problem& input, backend which, const orbit_options& options) {
    const point_codec codec(input);
    const group_action action(input);
    const level_printer print{input, which, options.progress};
    coordinates in{};
    coordinates out{};
    for (int index = 0; index < input.coordinates(); ++index)
        in[static_cast<std::size_t>(index)] = static_cast<std::uint16_t>(input.start[static_cast<std::size_t>(index)]);
    orbit_result result;
    result.which = which;
    result.ran = true;
    // Built before the clock starts, as the distributed backends' sets are.
    const std::uint64_t presize_limit = which == backend::serial_flat ? max_presize_flat_points : max_presize_points;
    Set seen(input.expected != 0 ? std::min<std::uint64_t>(input.expected, presize_limit) : 1024);
    const double begin = MPI_Wtime();
    std::vector<Point> frontier{codec.pack<Point>(in.data())};
    std::vector<Point> next;
    seen.insert(frontier.front());
    print(0, 1, 1, 0.0);
    int level = 0;
    // Images are buffered and inserted --batch at a time, as the distributed
    // backends do (a set probed per image as computed was 1.7x slower, issue 52).
    std::vector<Point> batch;
    const std::size_t batch_limit = std::max<std::size_t>(options.batch, 1);
    batch.reserve(batch_limit);
    const auto drain = [&] {
        seen.insert_batch(std::span<const Point>(batch), [&](const Point& image) { next.push_back(image); });
        batch.clear();
    };
    while (!frontier.empty()) {
        next.clear();
        for (const Point& point : frontier) {
            result.checksum += point_checksum(point);
            codec.unpack(point, in.data());
            for (std::size_t generator = 0; generator < action.generators(); ++generator) {
                action.apply(generator, in.data(), out.data());
                batch.push_back(codec.pack<Point>(out.data()));
                if (batch.size() >= batch_limit)
                    drain();
            }
        }
        drain();
        result.images += frontier.size() * action.generators();
        frontier.swap(next);
        ++level;
        if (!frontier.empty())
            print(level, frontier.size(), seen.size(), MPI_Wtime() - begin);
    }
    result.seconds = MPI_Wtime() - begin;
    result.levels = level;
    result.orbit_length = seen.size();
    result.set_size = seen.size();
    result.table_bytes_per_rank = seen.memory_bytes();
    return result;
}

template <class Point>
orbit_result enumerate_with(const problem& input, backend which, const orbit_options& options, MPI_Comm comm) {
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    orbit_result result;
    result.which = which;
    const std::uint64_t expected_total = input.expected != 0 ? input.expected : (std::uint64_t{1} << 20);
    const std::size_t expected_per_rank =
        static_cast<std::size_t>((expected_total + static_cast<std::uint64_t>(size) - 1) / static_cast<std::uint64_t>(size));
    if (which == backend::serial || which == backend::serial_flat) {
        // The other ranks wait yielding their cores to rank 0.
        if (rank == 0 && which == backend::serial)
            result = serial_search<Point, unordered_point_set<Point>>(input, which, options);
        else if (rank == 0)
            result = serial_search<Point, flat_point_set<Point>>(input, which, options);
        support::barrier_yielding(comm);
    } else if (which == backend::hash_map) {
        hash_map_visited<Point> visited(comm, std::min<std::size_t>(expected_per_rank, max_presize_points));
        result = distributed_search<Point>(visited, input, which, options, comm);
        result.table_bytes_per_rank = visited.table_bytes();
        visited.destroy();
    } else {
        rma_hash_set_config config;
        config.slots_per_rank = options.slots_per_rank;
        // A little over expected/p: owners receive a binomial share.
        config.expected_per_rank = expected_per_rank + expected_per_rank / 16 + 64;
        config.max_load = options.max_load;
        config.sync = which == backend::rma_lock_free ? rma_sync::lock_free : rma_sync::owner_lock;
        config.access = options.access;
        rma_visited<Point> visited(comm, config, options.batch);
        result = distributed_search<Point>(visited, input, which, options, comm);
        result.table_bytes_per_rank = visited.table_bytes();
        visited.destroy();
    }
    const auto maxima = reduce_yielding<2>({result.table_bytes_per_rank, peak_rss_bytes()}, MPI_MAX, comm);
    result.table_bytes_per_rank = maxima[0];
    result.peak_rss_bytes = maxima[1];
    return result;
}

}  // namespace

orbit_result enumerate(const problem& input, backend which, const orbit_options& options, MPI_Comm comm) {
    const int bits = input.point_bits();
    if (bits <= 32)
        return enumerate_with<packed_point<1>>(input, which, options, comm);
    if (bits <= 64)
        return enumerate_with<packed_point<2>>(input, which, options, comm);
    if (bits <= 128)
        return enumerate_with<packed_point<4>>(input, which, options, comm);
    return enumerate_with<packed_point<8>>(input, which, options, comm);
}

// ---- the program -----------------------------------------------------------------

namespace {

using support::usage_error;

// The command line of the program (and of `mpidict orbit`), into `options`.
support::option_parser make_parser(const std::string& program, orbit_options& options, bool& trace_exit) {
    support::option_parser parser(
        "mpiexec -n <ranks> " + program + " [options] FILE",
        "Enumerates the orbit of the start point of FILE (data/orbits format)\n"
        "by distributed breadth-first search with each visited-set backend, checks the\n"
        "orbit length against the file's 'expected', and reports time, points/s, the\n"
        "speedup over the serial baseline and memory per rank.");
    parser
        .add_custom("backends", "LIST",
                    "comma-separated: serial, serial_flat, hash_map, rma_lock_free, rma_owner_lock, all", "all",
                    [&options](std::string_view list) {
                        options.backends.clear();
                        while (!list.empty()) {
                            const auto comma = list.find(',');
                            const std::string_view name = list.substr(0, comma);
                            list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
                            if (name == "all")
                                options.backends = {backend::serial, backend::serial_flat, backend::hash_map,
                                                    backend::rma_lock_free, backend::rma_owner_lock};
                            else if (name == "serial")
                                options.backends.push_back(backend::serial);
                            else if (name == "serial_flat")
                                options.backends.push_back(backend::serial_flat);
                            else if (name == "hash_map")
                                options.backends.push_back(backend::hash_map);
                            else if (name == "rma_lock_free")
                                options.backends.push_back(backend::rma_lock_free);
                            else if (name == "rma_owner_lock")
                                options.backends.push_back(backend::rma_owner_lock);
                            else
                                throw usage_error("--backends: unknown backend '" + std::string(name) +
                                                  "' (serial, serial_flat, hash_map, rma_lock_free, rma_owner_lock, "
                                                  "all)");
                        }
                        if (options.backends.empty())
                            throw usage_error("--backends: empty list");
                    })
        .add_custom("access", "KIND",
                    "rma backends: automatic (shared-memory window when all ranks share a node), shared, rma "
                    "(force MPI RMA)",
                    "automatic",
                    [&options](std::string_view kind) {
                        if (kind == "automatic")
                            options.access = rma_access::automatic;
                        else if (kind == "shared")
                            options.access = rma_access::shared_memory;
                        else if (kind == "rma")
                            options.access = rma_access::mpi_rma;
                        else
                            throw usage_error("--access: '" + std::string(kind) +
                                              "' is not one of automatic|shared|rma");
                    })
        .add_count("slots-per-rank", &options.slots_per_rank,
                   "rma backends: table slots per rank (0, the default: from expected / ranks / max-load)", 1)
        .add_custom("max-load", "X", "rma backends: sizing load factor in (0, 1]", "0.5",
                    [&options](std::string_view text) {
                        const std::string copy(text);
                        char* end = nullptr;
                        const double value = std::strtod(copy.c_str(), &end);
                        if (end == copy.c_str() || *end != '\0' || !(value > 0 && value <= 1))
                            throw usage_error("--max-load: '" + copy + "' is not a number in (0, 1]");
                        options.max_load = value;
                    })
        .add_count("batch", &options.batch, "images per batch: the rma backends' insert_if_absent_many and the serial baselines' batched inserts", 1,
                   std::uint64_t{1} << 24)
        .add_count("repeat", &options.repeat, "runs of every backend (order reversed on odd runs); seconds are medians",
                   1, 1000, "R")
        .add_flag("quiet", &options.progress, "no progress line per BFS level", false)
        .add_flag("trace-exit", &trace_exit, "every rank prints its exit code (for tests)")
        .add_positional("problem file", &options.file, "FILE")
        .add_epilogue("JSON lines on stdout (rank 0), progress and a table on stderr.  Exit code 0:\n"
                      "every backend found the expected orbit; 1: bad input or a wrong result; 2: usage.\n");
    return parser;
}

std::string hex64(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

void json_line(int ranks, std::string_view metric, double value, std::string_view unit, const std::string& fields) {
    std::printf("{\"bench\":\"orbit\",\"metric\":%s,\"value\":%s,\"unit\":%s,\"ranks\":%d,\"seed\":0%s}\n",
                support::json_string(metric).c_str(), support::json_number(value).c_str(), support::json_string(unit).c_str(), ranks,
                fields.c_str());
    std::fflush(stdout);
}

}  // namespace

int run_orbit(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "orbit");
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    const support::exit_reporter finish(argc, argv, program, comm);

    orbit_options options;
    bool trace_exit = false;  // read by `finish`
    support::option_parser parser = make_parser(program, options, trace_exit);
    if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(argc, argv), program))
        return finish(*stop);

    std::string trouble;
    // Every rank reads the file; they agree before any collective work.
    problem input;
    try {
        input = read_problem(options.file);
    } catch (const problem_error& bad) {
        trouble = bad.what();
    }
    if (const std::string message = support::agree_on_failure(comm, trouble); !message.empty()) {
        if (rank == 0)
            std::fprintf(stderr, "%s: error: %s\n", program.c_str(), message.c_str());
        return finish(1);
    }

    const int point_bytes = input.point_bits() <= 32 ? 4 : input.point_bits() <= 64 ? 8 : input.point_bits() <= 128 ? 16 : 32;
    if (rank == 0) {
        std::fprintf(stderr, "orbit %s: %s group, %s on %d coordinates of %d bits (%d-byte points), %zu generators, "
                             "expected orbit %llu, %d ranks\n",
                     input.name.c_str(), input.kind == group_kind::permutation ? "permutation" : "matrix",
                     to_string(input.action), input.coordinates(), input.bits_per_coordinate(), point_bytes,
                     input.generators.size(), static_cast<unsigned long long>(input.expected), ranks);
    }

    // --repeat R: every backend R times, the order reversed on odd repetitions
    // (issue 52: no backend always runs first); seconds are medians, the other
    // figures the last run's.
    std::vector<orbit_result> results(options.backends.size());
    std::vector<std::vector<double>> seconds(options.backends.size());
    std::vector<bool> good_runs(options.backends.size(), true);
    bool all_good = true;
    // Every good run of every backend must find the same orbit: the same
    // checksum as the first good run.
    bool have_reference = false;
    std::uint64_t reference_checksum = 0;
    backend reference_backend = backend::serial;
    const std::size_t repeats = std::max<std::size_t>(options.repeat, 1);
    for (std::size_t rep = 0; rep < repeats; ++rep)
        for (std::size_t k = 0; k < options.backends.size(); ++k) {
            const std::size_t index = rep % 2 == 0 ? k : options.backends.size() - 1 - k;
            const backend which = options.backends[index];
            orbit_result result = enumerate(input, which, options, comm);
            if (rank == 0) {
                const bool length_ok = input.expected == 0 || result.orbit_length == input.expected;
                const bool size_ok = result.set_size == result.orbit_length;
                bool good = result.failure.empty() && length_ok && size_ok;
                if (good && !have_reference) {
                    have_reference = true;
                    reference_checksum = result.checksum;
                    reference_backend = which;
                } else if (good && result.checksum != reference_checksum) {
                    good = false;
                    std::fprintf(stderr, "%s: WRONG [%s]: orbit checksum %016llx differs from %016llx of [%s]\n",
                                 program.c_str(), to_string(which), static_cast<unsigned long long>(result.checksum),
                                 static_cast<unsigned long long>(reference_checksum), to_string(reference_backend));
                }
                all_good = all_good && good;
                good_runs[index] = good_runs[index] && good;
                if (!result.failure.empty())
                    std::fprintf(stderr, "%s: error: [%s] %s\n", program.c_str(), to_string(which),
                                 result.failure.c_str());
                else if (!good)
                    std::fprintf(stderr, "%s: WRONG [%s]: orbit length %llu, visited set holds %llu, expected %llu\n",
                                 program.c_str(), to_string(which), static_cast<unsigned long long>(result.orbit_length),
                                 static_cast<unsigned long long>(result.set_size),
                                 static_cast<unsigned long long>(input.expected));
            }
            seconds[index].push_back(result.seconds);
            results[index] = std::move(result);
        }
    for (std::size_t index = 0; index < results.size(); ++index) {
        std::vector<double> sorted = seconds[index];
        std::sort(sorted.begin(), sorted.end());
        const std::size_t n = sorted.size();
        results[index].seconds = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
    double load[3] = {0, 0, 0};
    (void)getloadavg(load, 3);
    const bool oversubscribed = support::node_oversubscribed(comm);
    for (std::size_t index = 0; index < results.size(); ++index) {
        const orbit_result& result = results[index];
        const backend which = options.backends[index];
        if (rank != 0)
            continue;
        const bool good = good_runs[index];
        std::string fields = ",\"problem\":" + support::json_string(input.name) + ",\"backend\":" + support::json_string(to_string(which));
        if (which == backend::rma_lock_free || which == backend::rma_owner_lock)
            fields += ",\"access\":" + support::json_string(result.shared_memory ? "shared_memory" : "mpi_rma");
        fields += ",\"orbit_length\":" + std::to_string(result.orbit_length) +
                  ",\"expected\":" + std::to_string(input.expected) + ",\"verified\":" + (good ? "true" : "false") +
                  ",\"levels\":" + std::to_string(result.levels) + ",\"images\":" + std::to_string(result.images) +
                  ",\"point_bytes\":" + std::to_string(point_bytes) +
                  ",\"table_bytes_per_rank\":" + std::to_string(result.table_bytes_per_rank) +
                  ",\"peak_rss_bytes\":" + std::to_string(result.peak_rss_bytes) +
                  ",\"reps\":" + std::to_string(repeats) + ",\"oversubscribed\":" + (oversubscribed ? "true" : "false") +
                  ",\"load_1m\":" + support::json_number(load[0]) + ",\"orbit_checksum\":\"" + hex64(result.checksum) + "\"";
        std::string all_seconds = ",\"seconds_per_rep\":[";
        for (std::size_t rep = 0; rep < seconds[index].size(); ++rep)
            all_seconds += (rep ? "," : "") + support::json_number(seconds[index][rep]);
        json_line(ranks, "orbit_seconds", result.seconds, "s", fields + all_seconds + "]");
        json_line(ranks, "points_per_second", static_cast<double>(result.orbit_length) / result.seconds, "points/s",
                  fields);
    }
    // Ratios against the serial baselines of this run.
    const orbit_result* serial = nullptr;
    const orbit_result* serial_flat = nullptr;
    for (const orbit_result& result : results) {
        if (result.which == backend::serial)
            serial = &result;
        if (result.which == backend::serial_flat)
            serial_flat = &result;
    }
    if (rank == 0) {
        for (const orbit_result& result : results) {
            if (result.which == backend::serial || result.which == backend::serial_flat)
                continue;
            const std::string fields =
                ",\"problem\":" + support::json_string(input.name) + ",\"backend\":" + support::json_string(to_string(result.which));
            const std::string ours = ",\"ours_seconds\":" + support::json_number(result.seconds) +
                                     ",\"oversubscribed\":" + (oversubscribed ? "true" : "false") +
                                     ",\"load_1m\":" + support::json_number(load[0]) + ",\"reps\":" + std::to_string(repeats);
            if (serial != nullptr)
                json_line(ranks, "speedup_vs_serial", serial->seconds / result.seconds, "ratio",
                          fields + ours + ",\"baseline_seconds\":" + support::json_number(serial->seconds));
            if (serial_flat != nullptr)
                json_line(ranks, "speedup_vs_serial_flat", serial_flat->seconds / result.seconds, "ratio",
                          fields + ours + ",\"baseline_seconds\":" + support::json_number(serial_flat->seconds));
        }
        std::fprintf(stderr, "\norbit %s (%d rank%s%s), expected %llu; seconds: median of %zu (order alternating), load %.2f %.2f %.2f\n",
                     input.name.c_str(), ranks, ranks == 1 ? "" : "s", oversubscribed ? ", OVERSUBSCRIBED" : "",
                     static_cast<unsigned long long>(input.expected), repeats, load[0], load[1], load[2]);
        std::fprintf(stderr, "  %-15s %12s %10s %14s %9s %9s %7s %14s %14s\n", "backend", "orbit", "seconds",
                     "points/s", "vs serial", "vs flat", "levels", "table B/rank", "peak RSS B");
        for (const orbit_result& result : results) {
            const double speedup = serial != nullptr ? serial->seconds / result.seconds : NAN;
            const double speedup_flat = serial_flat != nullptr ? serial_flat->seconds / result.seconds : NAN;
            std::fprintf(stderr, "  %-15s %12llu %10.3f %14.0f %9.2f %9.2f %7d %14zu %14zu%s\n",
                         to_string(result.which), static_cast<unsigned long long>(result.orbit_length), result.seconds,
                         static_cast<double>(result.orbit_length) / result.seconds, speedup, speedup_flat, result.levels,
                         result.table_bytes_per_rank, result.peak_rss_bytes,
                         result.which == backend::rma_lock_free || result.which == backend::rma_owner_lock
                             ? (result.shared_memory ? "  (shared memory)" : "  (MPI RMA)")
                             : "");
        }
        std::fprintf(stderr, "  verified: %s (length, set size and orbit checksum %s of every run)\n",
                     all_good ? "yes" : "NO", hex64(reference_checksum).c_str());
        json_line(ranks, "verified", all_good ? 1 : 0, "bool", ",\"problem\":" + support::json_string(input.name));
    }
    int verdict = all_good ? 0 : 1;
    MPI_Bcast(&verdict, 1, MPI_INT, 0, comm);
    return finish(verdict);
}

}  // namespace mpidict::apps::orbit
