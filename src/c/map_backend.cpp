// The hash_map behind a C handle: typed_backend<K, V> implements the
// size-independent `backend` (map_internal.hpp) for each item type V (see
// mpidict_c.cpp's opening comment for the representation).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "map_internal.hpp"

namespace mpidict::c_map {

namespace {

// ---- item <-> value conversion ---------------------------------------------------

template <class V>
struct item_traits;

template <std::size_t N>
struct item_traits<std::array<std::byte, N>> {
    using value = std::array<std::byte, N>;
    static_assert(sizeof(value) == N, "std::array<std::byte, N> must have no padding for items to be copied in bulk.");
    static constexpr std::size_t wire_bytes(std::size_t) { return N; }
    static void read(const std::byte* in, std::size_t count, std::size_t, std::vector<value>& out) {
        out.resize(count);
        if (count != 0)
            std::memcpy(out.data(), in, count * N);
    }
    static value read_one(const std::byte* in, std::size_t) {
        value item;
        std::memcpy(item.data(), in, N);
        return item;
    }
    static void write(const value& item, std::byte* out, std::size_t) { std::memcpy(out, item.data(), N); }
};

template <>
struct item_traits<std::string> {
    using value = std::string;
    static std::size_t wire_bytes(std::size_t item_bytes) { return item_bytes + sizeof(std::uint32_t); }
    static void read(const std::byte* in, std::size_t count, std::size_t item_bytes, std::vector<value>& out) {
        out.resize(count);
        for (std::size_t index = 0; index < count; ++index)
            out[index].assign(reinterpret_cast<const char*>(in + index * item_bytes), item_bytes);
    }
    static value read_one(const std::byte* in, std::size_t item_bytes) {
        return value(reinterpret_cast<const char*>(in), item_bytes);
    }
    static void write(const value& item, std::byte* out, std::size_t item_bytes) {
        if (item.size() != item_bytes)
            throw mpidict::decode_error("mpidict: an item of " + str(item.size()) + " bytes arrived for a map of " +
                                        str(item_bytes) + "-byte items");
        std::memcpy(out, item.data(), item_bytes);
    }
};

template <class V>
class values_operation final : public operation {
public:
    values_operation(mpidict::request<std::vector<V>> request, std::byte* out, std::size_t max_items,
                     std::size_t item_bytes)
        : m_request(std::move(request)), m_out(out), m_max_items(max_items), m_item_bytes(item_bytes) {}
    bool test() override { return m_request.test(); }
    std::size_t finish() override {
        const std::vector<V> values = m_request.get();
        if (values.size() > m_max_items)
            throw mpidict::decode_error("mpidict: " + str(values.size()) + " items arrived for a request of at most " +
                                        str(m_max_items));
        if (m_out != nullptr)
            for (std::size_t index = 0; index < values.size(); ++index)
                item_traits<V>::write(values[index], m_out + index * m_item_bytes, m_item_bytes);
        return values.size();
    }

private:
    mpidict::request<std::vector<V>> m_request;
    std::byte* m_out;
    std::size_t m_max_items;
    std::size_t m_item_bytes;
};

void copy_op(const mpidict::runtime::op_statistics& in, mpidict_op_statistics& out) {
    out.operations += in.operations;
    out.requests += in.requests;
    out.items += in.values;
    out.initiation_seconds += in.initiation_seconds;
    out.completion_seconds += in.completion_seconds;
}

template <class K, class V>
class typed_backend final : public backend {
    using traits = item_traits<V>;
    using map_type = mpidict::hash_map<K, V>;
    static constexpr bool bytes_keyed = std::is_same_v<K, std::string>;

    static K key_of(const c_key& key) {
        if constexpr (bytes_keyed)
            return std::string(reinterpret_cast<const char*>(key.bytes), key.length);
        else
            return key.integer;
    }

public:
    typed_backend(MPI_Comm communicator, const mpidict::hash_map_config& settings, std::size_t item_bytes)
        : m_map(communicator, settings), m_item_bytes(item_bytes) {}

    int rank() const override { return m_map.rank(); }
    int size() const override { return m_map.num_ranks(); }
    bool byte_keys() const override { return bytes_keyed; }
    int owner(const c_key& key) const override { return m_map.owner(key_of(key)); }
    bool destroyed() override { return m_map.engine().destroyed(); }
    std::size_t wire_item_bytes() const override { return traits::wire_bytes(m_item_bytes); }

    void async_insert(int target, const c_key& key, const std::byte* items, std::size_t n) override {
        if (n == 1) {
            m_map.async_insert(mpidict::target_rank{target}, key_of(key), traits::read_one(items, m_item_bytes));
            return;
        }
        traits::read(items, n, m_item_bytes, m_scratch);
        m_map.async_insert(mpidict::target_rank{target}, key_of(key), std::span<const V>(m_scratch));
    }
    std::unique_ptr<operation> insert(int target, const c_key& key, const std::byte* items, std::size_t n) override {
        traits::read(items, n, m_item_bytes, m_scratch);
        auto started = m_map.insert(mpidict::target_rank{target}, key_of(key), std::span<const V>(m_scratch));
        return std::make_unique<insert_operation>(std::move(started));
    }
    std::unique_ptr<operation> find(int target, const c_key& key, std::byte* out, std::size_t max_items) override {
        auto started = m_map.find(mpidict::target_rank{target}, key_of(key), max_items);
        return std::make_unique<values_operation<V>>(std::move(started), out, max_items, m_item_bytes);
    }
    std::unique_ptr<operation> take(int target, const c_key& key, std::byte* out, std::size_t max_items) override {
        auto started = m_map.take(mpidict::target_rank{target}, key_of(key), max_items);
        return std::make_unique<values_operation<V>>(std::move(started), out, max_items, m_item_bytes);
    }
    std::unique_ptr<operation> erase(int target, const c_key& key) override {
        return std::make_unique<count_operation<std::size_t>>(m_map.erase(mpidict::target_rank{target}, key_of(key)));
    }
    void async_erase(int target, const c_key& key) override {
        m_map.async_erase(mpidict::target_rank{target}, key_of(key));
    }
    std::unique_ptr<operation> insert_if_absent(int target, const c_key& key, const std::byte* item) override {
        return std::make_unique<count_operation<bool>>(
            m_map.insert_if_absent(mpidict::target_rank{target}, key_of(key), traits::read_one(item, m_item_bytes)));
    }
    void async_insert_if_absent(int target, const c_key& key, const std::byte* item) override {
        m_map.async_insert_if_absent(mpidict::target_rank{target}, key_of(key), traits::read_one(item, m_item_bytes));
    }
    std::unique_ptr<operation> count(int target, const c_key& key) override {
        return std::make_unique<count_operation<std::size_t>>(m_map.count(mpidict::target_rank{target}, key_of(key)));
    }

    void flush() override { m_map.flush(); }
    void destroy() override { m_map.destroy(); }

    std::size_t local_keys() const override { return m_map.local_size(); }
    std::size_t local_items() const override { return m_map.local_value_count(); }
    std::size_t local_find(const c_key& key, std::byte* out, std::size_t max_items) const override {
        const std::vector<V> values = m_map.local_find(key_of(key), max_items);
        for (std::size_t index = 0; index < values.size(); ++index)
            traits::write(values[index], out + index * m_item_bytes, m_item_bytes);
        return values.size();
    }
    void local_foreach(mpidict_foreach_fn fn, void* user) const override {
        // The items of a key are copied into one contiguous buffer; the walk
        // stops at the first non-zero return (an exception cannot carry it out
        // of local_for_each cleanly, so a flag does).
        std::vector<std::byte> items;
        bool stopped = false;
        m_map.local_for_each([&](const K& key, const typename map_type::values_view& values) {
            if (stopped)
                return;
            items.resize(values.size() * m_item_bytes);
            for (std::size_t index = 0; index < values.size(); ++index)
                traits::write(values[index], items.data() + index * m_item_bytes, m_item_bytes);
            mpidict_key view{};
            if constexpr (bytes_keyed) {
                view.bytes = key.data();
                view.length = key.size();
            } else {
                view.integer = key;
            }
            stopped = fn(&view, items.data(), values.size(), user) != 0;
        });
    }
    void global_size(std::size_t* keys, std::size_t* items) override {
        // Two collectives, always both, so every rank makes the same calls
        // whichever pointers it passed.
        const std::size_t key_total = m_map.global_size();
        const std::size_t item_total = m_map.global_value_count();
        if (keys != nullptr)
            *keys = key_total;
        if (items != nullptr)
            *items = item_total;
    }
    void statistics(mpidict_statistics& out) override {
        const mpidict::runtime::statistics& in = m_map.stats();
        out = mpidict_statistics{};
        copy_op(in[mpidict::hash_map_op::insert], out.op_insert);
        copy_op(in[mpidict::hash_map_op::find], out.op_find);
        copy_op(in[mpidict::hash_map_op::take], out.op_delete);
        copy_op(in[mpidict::hash_map_op::erase], out.op_delete);
        out.messages_sent = in.messages_sent;
        out.messages_received = in.messages_received;
        out.bytes_sent = in.bytes_sent;
        out.bytes_received = in.bytes_received;
        out.waits = in.waits;
        out.window_stalls = in.window_stalls;
        out.queue_stalls = in.queue_stalls;
        out.flushes = in.flushes;
        out.barrier_seconds = in.barrier_seconds;
        out.async_rejected = m_map.async_rejected();
        out.local_rejected = m_map.local_rejected();
        out.local_keys = destroyed() ? 0 : m_map.local_size();
        out.local_items = destroyed() ? 0 : m_map.local_value_count();
        out.buffer_bytes_high_water = in.buffer_bytes_high_water;
        out.outstanding_requests_high_water = in.outstanding_requests_high_water;
    }
    void reset_statistics() override { m_map.reset_statistics(); }

private:
    map_type m_map;
    std::size_t m_item_bytes;
    std::vector<V> m_scratch;  // items of the insert being encoded
};

template <std::size_t N>
using bytes = std::array<std::byte, N>;

}  // namespace

template <class K>
std::shared_ptr<backend> make_backend(MPI_Comm communicator, const mpidict::hash_map_config& settings,
                                      std::size_t item_bytes) {
    switch (item_bytes) {
        case 4: return std::make_shared<typed_backend<K, bytes<4>>>(communicator, settings, item_bytes);
        case 8: return std::make_shared<typed_backend<K, bytes<8>>>(communicator, settings, item_bytes);
        case 12: return std::make_shared<typed_backend<K, bytes<12>>>(communicator, settings, item_bytes);
        case 16: return std::make_shared<typed_backend<K, bytes<16>>>(communicator, settings, item_bytes);
        case 24: return std::make_shared<typed_backend<K, bytes<24>>>(communicator, settings, item_bytes);
        case 32: return std::make_shared<typed_backend<K, bytes<32>>>(communicator, settings, item_bytes);
        default: {
            mpidict::hash_map_config string_settings = settings;
            string_settings.fixed_value_bytes = item_bytes;
            return std::make_shared<typed_backend<K, std::string>>(communicator, string_settings, item_bytes);
        }
    }
}

template std::shared_ptr<backend> make_backend<key_type>(MPI_Comm, const mpidict::hash_map_config&, std::size_t);
template std::shared_ptr<backend> make_backend<std::string>(MPI_Comm, const mpidict::hash_map_config&, std::size_t);

}  // namespace mpidict::c_map
