#pragma once
// How the containers lay out their records: one named struct per fixed-size
// header, written with byte_writer and read with byte_reader (local/codec.hpp),
// so no handler counts offsets by hand and the writer and the reader of a record
// cannot disagree.  A record is a header struct followed by codec-encoded keys
// and values (or raw bytes) whose lengths the header or the codec gives.
//
// A header lists its fields, in wire order, in `fields()`: wire_bytes<R> is the
// sum of their sizes (no padding travels), write_record/read_record copy them
// one by one.  Fields are fixed-width integers; every rank runs the same binary,
// so byte order agrees (as for codec<T>).
//
// The layouts of hash_map (hash_map_wire) and linear_hash_map (lh_wire) are
// here, side by side, and the message fuzzer (tests/fuzz) builds its seed
// inputs from the same structs: a change of layout changes the seeds with it.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"

namespace mpidict::detail {

template <class Member>
struct member_of;
template <class Class, class Field>
struct member_of<Field Class::*> {
    using type = Field;
};

// The bytes a header occupies on the wire (the sum of its fields' sizes).
template <class Record>
inline constexpr std::size_t wire_bytes =
    std::apply([](auto... member) { return (std::size_t{0} + ... + sizeof(typename member_of<decltype(member)>::type)); },
               Record::fields());

// Writes one record into the bytes the engine reserved for it.  Every field is
// checked against the reserved size, and finish() checks the record filled it
// exactly: a size computed one way and written another fails loudly here, not
// as a garbled record at the receiver.
class byte_writer {
public:
    byte_writer(std::byte* out, std::size_t size) : m_cursor(out), m_end(out + size) {}

    template <class T>
    byte_writer& put(const T& value) {
        static_assert(std::is_trivially_copyable_v<T>, "byte_writer::put needs a trivially copyable type.");
        std::memcpy(claim(sizeof(T)), &value, sizeof(T));
        return *this;
    }
    // Raw bytes with no length in front (the header carries the length).
    byte_writer& put_bytes(const void* data, std::size_t size) {
        if (size != 0)
            std::memcpy(claim(size), data, size);
        return *this;
    }
    byte_writer& put_bytes(std::string_view bytes) { return put_bytes(bytes.data(), bytes.size()); }
    // A key or value as its codec encodes it.
    template <class T>
    byte_writer& encode(const T& value) {
        std::byte* at = claim(codec<T>::encoded_size(value));
        codec<T>::encode(at, value);
        return *this;
    }
    template <class Record>
    byte_writer& record(const Record& header) {
        std::apply([&](auto... member) { (put(header.*member), ...); }, Record::fields());
        return *this;
    }
    // Where the next byte goes, for a caller that encodes in place.
    std::byte* position() const { return m_cursor; }
    std::size_t remaining() const { return static_cast<std::size_t>(m_end - m_cursor); }
    void finish() const {
        MPIDICT_ASSERT(m_cursor == m_end, "a record was written shorter than the bytes reserved for it");
    }

private:
    std::byte* claim(std::size_t bytes) {
        MPIDICT_ASSERT(bytes <= remaining(), "a record was written past the bytes reserved for it");
        std::byte* at = m_cursor;
        m_cursor += bytes;
        return at;
    }
    std::byte* m_cursor;
    std::byte* m_end;
};

template <class Record>
Record read_record(byte_reader& reader) {
    Record header{};
    std::apply(
        [&](auto... member) {
            ((header.*member = reader.read<typename member_of<decltype(member)>::type>()), ...);
        },
        Record::fields());
    return header;
}

// Reads the header at the start of `record` (bounds-checked: decode_error).
template <class Record>
Record read_record(const std::byte* record, std::size_t bytes) {
    byte_reader reader(record, bytes);
    return read_record<Record>(reader);
}

// Writes a header over the start of an already reserved or copied record.
template <class Record>
void overwrite_record(std::byte* out, const Record& header) {
    byte_writer(out, wire_bytes<Record>).record(header).finish();
}

// ---------------------------------------------------------------------------
// hash_map.  A record of every kind is {header} key [values]; `slot` names the
// caller's request (no_slot: fire-and-forget).  Replies to a request go through
// the engine's reply records; the insert reply's payload is a count_record.
// ---------------------------------------------------------------------------
struct hash_map_wire {
    // insert: {slot, values} key value × values
    struct insert_header {
        std::uint32_t slot;
        std::uint32_t values;
        static constexpr auto fields() { return std::tuple{&insert_header::slot, &insert_header::values}; }
    };
    // find, take, erase: {slot, limit} key (erase ignores the limit)
    struct keyed_header {
        std::uint32_t slot;
        std::uint32_t limit;
        static constexpr auto fields() { return std::tuple{&keyed_header::slot, &keyed_header::limit}; }
    };
    // find_from (find with an offset): {slot, limit, offset} key
    struct find_from_header {
        std::uint32_t slot;
        std::uint32_t limit;
        std::uint32_t offset;  // the first value to return, 0: the oldest
        static constexpr auto fields() {
            return std::tuple{&find_from_header::slot, &find_from_header::limit, &find_from_header::offset};
        }
    };
    // insert_if_absent: {slot} key value
    struct keyed_value_header {
        std::uint32_t slot;
        static constexpr auto fields() { return std::tuple{&keyed_value_header::slot}; }
    };
    // visit: {slot, visitor} key argument
    struct visit_header {
        std::uint32_t slot;
        std::uint32_t visitor;  // index in registration order
        static constexpr auto fields() { return std::tuple{&visit_header::slot, &visit_header::visitor}; }
    };
    // visit_callable: {slot, visitor, if_contains} key arguments...; `visitor`
    // numbers the callable (with its argument types) in the map's callable_registry.
    struct callable_visit_header {
        std::uint32_t slot;
        std::uint32_t visitor;
        std::uint32_t if_contains;  // 1: skip an absent key
        static constexpr auto fields() {
            return std::tuple{&callable_visit_header::slot, &callable_visit_header::visitor,
                              &callable_visit_header::if_contains};
        }
    };
    // reduce (async_reduce, insert_or_assign): {slot, op} key value; `op`
    // numbers the operator in the value type's callable_registry.
    struct reduce_header {
        std::uint32_t slot;
        std::uint32_t op;
        static constexpr auto fields() { return std::tuple{&reduce_header::slot, &reduce_header::op}; }
    };
    // find_many, take_many: {batch, index, limit} key
    struct many_header {
        std::uint32_t batch;
        std::uint32_t index;  // the key's position in the caller's span
        std::uint32_t limit;
        static constexpr auto fields() {
            return std::tuple{&many_header::batch, &many_header::index, &many_header::limit};
        }
    };
    // find_many_reply: {batch, index, count} value × count, or with count ==
    // engine::error_count the reason the owner could not answer (raw text).
    struct many_reply_header {
        std::uint32_t batch;
        std::uint32_t index;
        std::uint32_t count;
        static constexpr auto fields() {
            return std::tuple{&many_reply_header::batch, &many_reply_header::index, &many_reply_header::count};
        }
    };
    // reduce streamed (what async_reduce of fixed-size keys and values sends):
    // reduce_op {op} names the operator of the reduce_pairs records (key value,
    // no header) that follow it from the same rank, until the next reduce_op.
    struct reduce_op {
        std::uint32_t op;
        static constexpr auto fields() { return std::tuple{&reduce_op::op}; }
    };
    // find_many, take_many streamed (what hash_map's find_many sends): to each
    // owner one many_begin {batch, limit, take}, then the keys bare (many_keys:
    // key).  The owner answers in the order of the keys: one many_reply_begin
    // {batch}, then per key either many_value: value (exactly one value of a
    // fixed-size type) or many_counted: {count} value × count (count ==
    // engine::error_count: the reason, raw text).  Per-pair order is the
    // engine's, so neither side carries a key's index.
    struct many_begin {
        std::uint32_t batch;
        std::uint32_t limit;
        std::uint32_t take;  // 1: take_many
        static constexpr auto fields() {
            return std::tuple{&many_begin::batch, &many_begin::limit, &many_begin::take};
        }
    };
    struct many_reply_begin {
        std::uint32_t batch;
        static constexpr auto fields() { return std::tuple{&many_reply_begin::batch}; }
    };
    // rejected: {count}; visit_failed: {count} then the first failure's text;
    // the insert reply's payload: {count} = values requested.
    struct count_record {
        std::uint32_t count;
        static constexpr auto fields() { return std::tuple{&count_record::count}; }
    };
};

// ---------------------------------------------------------------------------
// linear_hash_map (src/lh/lh_core.cpp).
// ---------------------------------------------------------------------------
struct lh_wire {
    // request: {header} key value.  `address` is the bucket it is sent to now
    // (rewritten when forwarded), `first_address` the one the client chose.
    struct request_header {
        std::uint8_t op;
        std::uint8_t hops;
        std::uint16_t reserved;
        std::uint32_t slot;
        std::uint32_t client;
        std::uint32_t address;
        std::uint32_t first_address;
        std::uint32_t key_bytes;
        std::uint32_t value_bytes;
        static constexpr auto fields() {
            return std::tuple{&request_header::op,      &request_header::hops,          &request_header::reserved,
                              &request_header::slot,    &request_header::client,        &request_header::address,
                              &request_header::first_address, &request_header::key_bytes, &request_header::value_bytes};
        }
    };
    // reply: {header} {u8 status} value.  The answering server's address and
    // level are the image adjustment (IAM); the engine request's result is what
    // follows the header (status and value).
    struct reply_header {
        std::uint32_t slot;
        std::uint32_t first_address;
        std::uint32_t server_address;
        std::uint32_t server_level;
        std::uint8_t op;
        std::uint8_t hops;
        std::uint8_t reserved;
        static constexpr auto fields() {
            return std::tuple{&reply_header::slot,         &reply_header::first_address, &reply_header::server_address,
                              &reply_header::server_level, &reply_header::op,            &reply_header::hops,
                              &reply_header::reserved};
        }
    };
    // The split token: bucket n and level i of the file.
    struct token {
        std::uint32_t next;
        std::uint32_t level;
        static constexpr auto fields() { return std::tuple{&token::next, &token::level}; }
    };
    // activate: the new bucket, its level, and the shape of the splitter's LH
    // table (to tell which of its buckets a key came from).
    struct activate {
        std::uint32_t address;
        std::uint32_t level;
        std::uint32_t from_address;
        std::uint32_t lh_level;
        std::uint32_t lh_next;
        static constexpr auto fields() {
            return std::tuple{&activate::address, &activate::level, &activate::from_address, &activate::lh_level,
                              &activate::lh_next};
        }
    };
    // ship: {header} then `entries` × ({ship_entry} key value).  complete_below:
    // every odd LH bucket of the splitter below it has now arrived.
    struct ship_header {
        std::uint32_t sequence;
        std::uint32_t entries;
        std::uint32_t complete_below;
        std::uint8_t last;
        std::uint8_t reserved8;
        std::uint16_t reserved16;
        static constexpr auto fields() {
            return std::tuple{&ship_header::sequence, &ship_header::entries,   &ship_header::complete_below,
                              &ship_header::last,     &ship_header::reserved8, &ship_header::reserved16};
        }
    };
    struct ship_entry {
        std::uint64_t hash;
        std::uint32_t key_bytes;
        std::uint32_t value_bytes;
        static constexpr auto fields() {
            return std::tuple{&ship_entry::hash, &ship_entry::key_bytes, &ship_entry::value_bytes};
        }
    };
    struct ship_ack {
        std::uint32_t sequence;
        static constexpr auto fields() { return std::tuple{&ship_ack::sequence}; }
    };
};

static_assert(wire_bytes<lh_wire::request_header> == 28 && wire_bytes<lh_wire::reply_header> == 19 &&
              wire_bytes<lh_wire::ship_header> == 16 && wire_bytes<lh_wire::ship_entry> == 16);

}  // namespace mpidict::detail
