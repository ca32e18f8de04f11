#pragma once
// What the hash_map C API's sources share (src/c/mpidict_c.cpp: the extern "C"
// functions; src/c/map_backend.cpp: typed_backend, the hash_map behind a
// handle).  Not installed.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mpidict/c/mpidict.h"
#include "mpidict/error.hpp"
#include "mpidict/hash_map.hpp"
#include "c_support.hpp"

namespace mpidict::c_map {

using key_type = std::int64_t;

// A key as the C functions pass it: an integer (maps from mpidict_map_create)
// or a byte string (mpidict_map_create_bytes).
struct c_key {
    key_type integer = 0;
    const std::byte* bytes = nullptr;
    std::size_t length = 0;
};

inline constexpr std::uint64_t map_magic = 0x31746369'6469706dULL;      // "mpidict1"
inline constexpr std::uint64_t request_magic = 0x31716572'6469706dULL;  // "mpidreq1"

// Bytes a message spends besides the items of one operation: the engine's group
// header (12) and, for an insert, the hash_map record header (slot, count: 8)
// and the key (8).  A reply needs 8 bytes less, so this bound serves both.
inline constexpr std::size_t per_operation_overhead_bytes = mpidict::runtime::group_header_bytes + mpidict::runtime::routing_overhead_bytes + 8 + sizeof(key_type);
inline constexpr std::size_t minimum_buffer_bytes = 256;               // as the engine requires
inline constexpr std::size_t maximum_buffer_bytes = std::size_t{1} << 30;

// ---- errors: src/c/c_support.hpp (shared with the skiplist C API) ------------

using mpidict::c_detail::fail;
using mpidict::c_detail::guarded;
using mpidict::c_detail::strip_prefix;

inline std::string str(std::size_t value) { return std::to_string(value); }

// ---- operations in flight --------------------------------------------------------

// One started operation whose result is still to be collected.
class operation {
public:
    virtual ~operation() = default;
    // Makes progress; true once the result has arrived.
    virtual bool test() = 0;
    // Waits, writes the items (if any) where the caller asked, returns the count.
    // Called once.
    virtual std::size_t finish() = 0;
};

class insert_operation final : public operation {
public:
    explicit insert_operation(mpidict::request<mpidict::insert_result> request) : m_request(std::move(request)) {}
    bool test() override { return m_request.test(); }
    std::size_t finish() override { return m_request.get().stored; }

private:
    mpidict::request<mpidict::insert_result> m_request;
};

// A request whose result is its count (erase: values removed; count) or a flag (insert_if_absent: 1 if stored).
template <class T>
class count_operation final : public operation {
public:
    explicit count_operation(mpidict::request<T> request) : m_request(std::move(request)) {}
    bool test() override { return m_request.test(); }
    std::size_t finish() override { return static_cast<std::size_t>(m_request.get()); }

private:
    mpidict::request<T> m_request;
};

// ---- the size-independent map interface ---------------------------------------------

class backend {
public:
    virtual ~backend() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual bool byte_keys() const = 0;
    virtual int owner(const c_key& key) const = 0;
    virtual bool destroyed() = 0;
    // Bytes one item occupies in a message.
    virtual std::size_t wire_item_bytes() const = 0;

    virtual void async_insert(int target, const c_key& key, const std::byte* items, std::size_t n) = 0;
    virtual std::unique_ptr<operation> insert(int target, const c_key& key, const std::byte* items, std::size_t n) = 0;
    virtual std::unique_ptr<operation> find(int target, const c_key& key, std::byte* out, std::size_t max_items) = 0;
    virtual std::unique_ptr<operation> take(int target, const c_key& key, std::byte* out, std::size_t max_items) = 0;
    virtual std::unique_ptr<operation> erase(int target, const c_key& key) = 0;
    virtual void async_erase(int target, const c_key& key) = 0;
    virtual std::unique_ptr<operation> insert_if_absent(int target, const c_key& key, const std::byte* item) = 0;
    virtual void async_insert_if_absent(int target, const c_key& key, const std::byte* item) = 0;
    virtual std::unique_ptr<operation> count(int target, const c_key& key) = 0;

    virtual void flush() = 0;
    virtual void destroy() = 0;

    virtual std::size_t local_keys() const = 0;
    virtual std::size_t local_items() const = 0;
    virtual std::size_t local_find(const c_key& key, std::byte* out, std::size_t max_items) const = 0;
    // Calls fn(key, items, n, user) on every key of the shard until it returns non-zero.
    virtual void local_foreach(mpidict_foreach_fn fn, void* user) const = 0;
    virtual void global_size(std::size_t* keys, std::size_t* items) = 0;
    virtual void statistics(mpidict_statistics& out) = 0;
    virtual void reset_statistics() = 0;
};

// A backend over hash_map<K, V> for items of `item_bytes` (map_backend.cpp):
// K is key_type or std::string (byte-string keys).
template <class K>
std::shared_ptr<backend> make_backend(MPI_Comm communicator, const mpidict::hash_map_config& settings,
                                      std::size_t item_bytes);
extern template std::shared_ptr<backend> make_backend<key_type>(MPI_Comm, const mpidict::hash_map_config&,
                                                                std::size_t);
extern template std::shared_ptr<backend> make_backend<std::string>(MPI_Comm, const mpidict::hash_map_config&,
                                                                   std::size_t);

}  // namespace mpidict::c_map

// ---- handles ---------------------------------------------------------------------

struct mpidict_map {
    std::uint64_t magic = mpidict::c_map::map_magic;
    std::shared_ptr<mpidict::c_map::backend> store;
    std::size_t item_bytes = 0;
    std::size_t max_items = 0;     // per operation: what one message carries (byte keys: with an empty key)
    std::size_t buffer_bytes = 0;
    std::size_t max_key_bytes = 0; // byte-string keys: the longest that fits with one item
    // Fire-and-forget finds and deletes with output, completed by flush/destroy.
    // Declared after `store` so they are released before it.
    std::vector<std::unique_ptr<mpidict::c_map::operation>> detached;
};

struct mpidict_request {
    std::uint64_t magic = mpidict::c_map::request_magic;
    std::shared_ptr<mpidict::c_map::backend> store;  // keeps the engine alive while `work` refers to it
    std::unique_ptr<mpidict::c_map::operation> work;
};
