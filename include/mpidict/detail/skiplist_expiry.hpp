#pragma once
// skiplist_map's expiry surface (issue 49, item 5), as a base class of
// skiplist_map<K, V> (which befriends it): inserts with a deadline (an
// absolute system_clock time) or a time to live (any std::chrono duration),
// insert_many with one deadline or TTL for the whole batch (on insert_many's
// own path: sorted runs per node carry it), ttl(key) with Redis PTTL's
// answers, expire / expire_at / persist.  See skiplist_map.md, "Expiry".
//
// Deadlines are judged by config.expiry_clock (the system clock unless a
// program sets its own).  A deadline that has already passed when the call
// is made stores nothing and changes nothing (stored = false; insert_many:
// stored = 0), on the caller, before anything is sent; bad input still throws.
// expire / expire_at with a deadline already passed remove the key (Redis
// EXPIRE with a time in the past).

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "mpidict/batch_results.hpp"
#include "mpidict/detail/payload.hpp"
#include "mpidict/detail/skiplist_core.hpp"
#include "mpidict/error.hpp"
#include "mpidict/results.hpp"
#include "mpidict/runtime/request.hpp"
#include "mpidict/skiplist_map_types.hpp"

namespace mpidict {

// ttl(key)'s answers besides the time left (Redis PTTL's -2 and -1).
inline constexpr std::chrono::milliseconds ttl_no_key{-2};     // the key is absent (or has expired)
inline constexpr std::chrono::milliseconds ttl_no_expiry{-1};  // the key is there and never expires

namespace detail {

template <class Map, class K, class V>
class skiplist_expiry_api {
public:
    using clock = std::chrono::system_clock;

    // Inserts (or replaces) key -> value, which expires at `expires_at`
    // (clock::time_point{}: never).  An insert replaces the key's deadline too.
    request<replace_result> insert(const K& key, const V& value, clock::time_point expires_at) {
        return insert_until(key, value, deadline_of(expires_at));
    }
    // ... which expires `ttl` from now (by config.expiry_clock).
    template <class Rep, class Period>
    request<replace_result> insert(const K& key, const V& value, std::chrono::duration<Rep, Period> ttl) {
        return insert_until(key, value, deadline_in(ttl));
    }
    void async_insert(const K& key, const V& value, clock::time_point expires_at) {
        async_insert_until(key, value, deadline_of(expires_at));
    }
    template <class Rep, class Period>
    void async_insert(const K& key, const V& value, std::chrono::duration<Rep, Period> ttl) {
        async_insert_until(key, value, deadline_in(ttl));
    }
    request<bool> insert_if_absent(const K& key, const V& value, clock::time_point expires_at) {
        return insert_if_absent_until(key, value, deadline_of(expires_at));
    }
    template <class Rep, class Period>
    request<bool> insert_if_absent(const K& key, const V& value, std::chrono::duration<Rep, Period> ttl) {
        return insert_if_absent_until(key, value, deadline_in(ttl));
    }
    // insert_many with one deadline (or TTL) for every pair; the same path and
    // result as insert_many(keys, values).
    insert_many_result insert_many(std::span<const K> keys, std::span<const V> values, clock::time_point expires_at) {
        return insert_many_until(keys, values, deadline_of(expires_at));
    }
    template <class Rep, class Period>
    insert_many_result insert_many(std::span<const K> keys, std::span<const V> values,
                                   std::chrono::duration<Rep, Period> ttl) {
        return insert_many_until(keys, values, deadline_in(ttl));
    }

    // The time left before the key expires, rounded up to whole milliseconds
    // (Redis PTTL); ttl_no_key if it is absent, ttl_no_expiry if it never
    // expires.  A read: ordered like find.
    request<std::chrono::milliseconds> ttl(const K& key) {
        return self().template start<std::chrono::milliseconds>(skiplist_map_op::find, skiplist_op::expiry, key, {}, 0,
                                                                &decode_ttl, &core());
    }
    // Sets the key's deadline (Redis EXPIRE / PEXPIREAT); true if the key was
    // there.  A deadline already passed removes the key.
    template <class Rep, class Period>
    request<bool> expire(const K& key, std::chrono::duration<Rep, Period> time_to_live) {
        return set_expiry(key, deadline_in(time_to_live), &decode_there);
    }
    request<bool> expire_at(const K& key, clock::time_point expires_at) {
        if (expires_at == clock::time_point{})
            throw invalid_argument_error("mpidict: skiplist_map expire_at needs a deadline (persist removes one)");
        return set_expiry(key, deadline_of(expires_at), &decode_there);
    }
    // Removes the key's deadline (Redis PERSIST): true if it had one.
    request<bool> persist(const K& key) { return set_expiry(key, 0, &decode_persisted); }

private:
    Map& self() { return static_cast<Map&>(*this); }
    skiplist_core& core() { return *self().m_core; }

    // Seconds since the epoch (the wire's expiry_time); 0: never.  A deadline
    // at or before the epoch still expires (it is not "never").
    static expiry_time deadline_of(clock::time_point at) {
        if (at == clock::time_point{})
            return 0;
        const double seconds = std::chrono::duration<double>(at.time_since_epoch()).count();
        return seconds > 0 ? seconds : 1e-9;
    }
    template <class Rep, class Period>
    expiry_time deadline_in(std::chrono::duration<Rep, Period> ttl) {
        const double seconds = core().clock_now() + std::chrono::duration<double>(ttl).count();
        if (!std::isfinite(seconds))
            throw invalid_argument_error("mpidict: skiplist_map: a time to live must be finite");
        return seconds > 0 ? seconds : 1e-9;
    }
    // A deadline already passed: the call stores nothing (after the checks any
    // call makes, so bad input still throws on this rank).
    bool passed(expiry_time deadline, const K* key, const V* value) {
        if (deadline == 0 || deadline > core().clock_now())
            return false;
        runtime::engine_lock lock(core().engine());
        core().engine().check_alive("insert");
        if (key)
            (void)self().encode(*key);
        if (value)
            core().check_value(payload_of(*value).size());
        return true;
    }
    request<replace_result> insert_until(const K& key, const V& value, expiry_time deadline) {
        if (passed(deadline, &key, &value))
            return request<replace_result>::completed(replace_result{false, false});
        return self().template start<replace_result>(skiplist_map_op::insert, skiplist_op::insert, key,
                                                     payload_of(value), deadline, &Map::decode_insert);
    }
    void async_insert_until(const K& key, const V& value, expiry_time deadline) {
        if (!passed(deadline, &key, &value))
            self().start_async(skiplist_map_op::insert, skiplist_op::insert, key, payload_of(value), deadline);
    }
    request<bool> insert_if_absent_until(const K& key, const V& value, expiry_time deadline) {
        if (passed(deadline, &key, &value))
            return request<bool>::completed(false);
        return self().template start<bool>(skiplist_map_op::insert_if_absent, skiplist_op::insert_if_absent, key,
                                           payload_of(value), deadline, &Map::decode_inserted);
    }
    insert_many_result insert_many_until(std::span<const K> keys, std::span<const V> values, expiry_time deadline) {
        if (keys.size() == values.size() && passed(deadline, nullptr, nullptr)) {
            for (std::size_t index = 0; index < keys.size(); ++index)
                (void)passed(deadline, &keys[index], &values[index]);
            return insert_many_result{};  // nothing stored, nothing refused for space
        }
        struct forget {
            skiplist_core& core;
            ~forget() {
                runtime::engine_lock lock(core.engine());
                core.set_batch_expiry(0);
            }
        } guard{core()};
        {
            runtime::engine_lock lock(core().engine());
            core().set_batch_expiry(deadline);
        }
        return self().insert_many(keys, values);
    }
    request<bool> set_expiry(const K& key, expiry_time deadline, typename request<bool>::decoder decode) {
        return self().template start<bool>(skiplist_map_op::insert, skiplist_op::set_expiry, key, {}, deadline, decode);
    }

    static expiry_time read_deadline(byte_reader& reader) {
        if (reader.remaining() != sizeof(expiry_time))
            throw decode_error("mpidict: skiplist_map expiry answer of " + std::to_string(reader.remaining()) +
                               " bytes");
        expiry_time deadline;
        std::memcpy(&deadline, reader.take(sizeof deadline), sizeof deadline);
        return deadline;
    }
    static std::chrono::milliseconds decode_ttl(std::uint32_t, byte_reader& reader, const void* context) {
        if (reader.read<std::uint8_t>() != skiplist_status::hit)
            return ttl_no_key;
        const expiry_time deadline = read_deadline(reader);
        if (deadline == 0)
            return ttl_no_expiry;
        const double left = (deadline - static_cast<const skiplist_core*>(context)->clock_now()) * 1000.0;
        return std::chrono::milliseconds(left > 0 ? static_cast<std::int64_t>(std::ceil(left)) : 0);
    }
    static bool decode_there(std::uint32_t, byte_reader& reader, const void*) {
        return reader.read<std::uint8_t>() == skiplist_status::hit;
    }
    static bool decode_persisted(std::uint32_t, byte_reader& reader, const void*) {
        return reader.read<std::uint8_t>() == skiplist_status::hit && read_deadline(reader) != 0;
    }
};

}  // namespace detail
}  // namespace mpidict
