// The seed inputs of the message fuzzer, one per handler path, built from the
// record layouts the containers use (detail/wire.hpp) and written with the same
// byte_writer.  Input format (message_fuzz.cpp): a configuration byte, a byte of
// requests to open first, then messages as u16 length + bytes; a message is a
// sequence of groups {u16 handler, u16 0, u32 record_bytes, u32 count} + records.

#include "seeds.hpp"

#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "mpidict/detail/wire.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::fuzz {
namespace {

using bytes = std::vector<std::uint8_t>;
using hm = detail::hash_map_wire;
using lh = detail::lh_wire;

// The engine's own framing (runtime/engine.cpp), for the seeds only.
struct group_header {
    std::uint16_t handler;
    std::uint16_t reserved;
    std::uint32_t record_bytes;
    std::uint32_t count;
    static constexpr auto fields() {
        return std::tuple{&group_header::handler, &group_header::reserved, &group_header::record_bytes,
                          &group_header::count};
    }
};
struct reply_header {  // the engine's reply record: the request's slot and result count
    std::uint32_t slot;
    std::uint32_t count;
    static constexpr auto fields() { return std::tuple{&reply_header::slot, &reply_header::count}; }
};
static_assert(detail::wire_bytes<group_header> == runtime::group_header_bytes);
static_assert(detail::wire_bytes<reply_header> == runtime::reply_header_bytes);

constexpr std::uint32_t no_slot = std::numeric_limits<std::uint32_t>::max();

// Bytes with no length in front (the header carries their length).
struct raw {
    std::string_view text;
};

template <class T>
concept wire_header = requires { T::fields(); };

template <class T>
std::size_t part_size(const T& part) {
    if constexpr (wire_header<T>)
        return detail::wire_bytes<T>;
    else if constexpr (std::is_same_v<T, raw>)
        return part.text.size();
    else
        return codec<T>::encoded_size(part);
}

template <class T>
void write_part(detail::byte_writer& out, const T& part) {
    if constexpr (wire_header<T>)
        out.record(part);
    else if constexpr (std::is_same_v<T, raw>)
        out.put_bytes(part.text);
    else
        out.encode(part);
}

// One record: headers, codec-encoded keys and values, raw bytes, in order.
template <class... Parts>
bytes record(const Parts&... parts) {
    bytes out((std::size_t{0} + ... + part_size(parts)));
    detail::byte_writer writer(reinterpret_cast<std::byte*>(out.data()), out.size());
    (write_part(writer, parts), ...);
    writer.finish();
    return out;
}

bytes group(std::uint16_t handler, const std::vector<bytes>& records) {
    const std::size_t size = records.front().size();
    bytes out = record(group_header{handler, 0, static_cast<std::uint32_t>(size),
                                    static_cast<std::uint32_t>(records.size())});
    for (const bytes& each : records) {
        MPIDICT_ASSERT(each.size() == size, "a group's records all have one size");
        out.insert(out.end(), each.begin(), each.end());
    }
    return out;
}

// Grid routing's second hop (docs/runtime.md, "Message format"): a forwarded
// group names its origin after the header.  (Routed groups, the first hop, are
// refused on the direct channel, the only one the fuzzer delivers on.)
bytes forwarded_group(std::uint16_t handler, std::uint32_t origin, const std::vector<bytes>& records) {
    const std::size_t size = records.front().size();
    bytes out = record(group_header{handler, 2, static_cast<std::uint32_t>(size),
                                    static_cast<std::uint32_t>(records.size())},
                       std::uint32_t{origin});
    for (const bytes& each : records)
        out.insert(out.end(), each.begin(), each.end());
    return out;
}

bytes operator+(bytes left, const bytes& right) {
    left.insert(left.end(), right.begin(), right.end());
    return left;
}

bytes input(std::uint8_t configuration, std::uint8_t requests, const std::vector<bytes>& messages) {
    bytes out{configuration, requests};
    for (const bytes& message : messages) {
        const auto length = static_cast<std::uint16_t>(message.size());
        out.push_back(static_cast<std::uint8_t>(length & 0xff));
        out.push_back(static_cast<std::uint8_t>(length >> 8));
        out.insert(out.end(), message.begin(), message.end());
    }
    return out;
}

using u64 = std::uint64_t;
using str = std::string;

// Configuration bits (message_fuzz.cpp).
constexpr std::uint8_t map_u64 = 0x00, map_string = 0x01, capacity = 0x08, inside_batch = 0x20, take_batch = 0x40,
                       linear = 0x80, hosts_bucket0 = 0x08, buffer_1k = 0x02;

// Handler ids follow registration order: 0 the engine's reply, 1 its exchange, then hash_map's
// (hash_map::register_handlers), or linear_hash_map's (lh_core's constructor).
enum hash_map_handler : std::uint16_t {
    engine_reply = 0,
    engine_exchange,
    insert_one,
    insert,
    find,
    take,
    erase,
    insert_if_absent,
    visit,
    find_many,
    find_many_reply,
    take_many,
    rejected,
    visit_failed,
    reduce,
    visit_callable,
    count,
    find_from,
    many_begin,
    many_keys,
    many_reply_begin,
    many_value,
    many_counted,
    reduce_op,
    reduce_pairs
};
enum lh_handler : std::uint16_t { lh_request = 2, lh_reply, lh_token, lh_activate, lh_ship, lh_ship_ack };

bytes lh_request_record(std::uint8_t op, std::uint32_t slot, std::uint32_t client, std::uint32_t address,
                        std::string_view key, std::string_view value = {}, std::uint8_t hops = 0) {
    return record(lh::request_header{op, hops, 0, slot, client, address, address,
                                     static_cast<std::uint32_t>(key.size()), static_cast<std::uint32_t>(value.size())},
                  raw{key}, raw{value});
}

bytes lh_entry(std::uint64_t hash, std::string_view key, std::string_view value) {
    return record(lh::ship_entry{hash, static_cast<std::uint32_t>(key.size()), static_cast<std::uint32_t>(value.size())},
                  raw{key}, raw{value});
}

std::string_view text(const bytes& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

}  // namespace

std::vector<seed> seeds() {
    std::vector<seed> all;
    auto add = [&](std::string name, bytes data) { all.push_back({std::move(name), std::move(data)}); };

    // hash_map<uint64_t, uint64_t>: fixed-size records.
    add("u64_insert_one", input(map_u64, 0, {group(insert_one, {record(u64{0}, u64{0}), record(u64{2}, u64{20}),
                                                                record(u64{4}, u64{40})})}));
    {
        std::vector<bytes> records;
        for (u64 k = 0; k < 9; ++k)
            records.push_back(record(k, k));
        add("u64_insert_one_capacity", input(map_u64 | capacity, 0, {group(insert_one, records)}));
    }
    add("u64_insert_forwarded", input(map_u64, 0, {forwarded_group(insert_one, 1, {record(u64{4}, u64{40}), record(u64{6}, u64{60})})}));
    add("u64_insert_request",
        input(map_u64, 0, {group(insert, {record(hm::insert_header{3, 2}, u64{6}, u64{60}, u64{61})})}));
    add("u64_insert_async", input(map_u64 | capacity, 0,
                                  {group(insert, {record(hm::insert_header{no_slot, 3}, u64{6}, u64{1}, u64{2}, u64{3})})}));
    add("u64_find_take_erase", input(map_u64, 0, {group(find, {record(hm::keyed_header{0, 5}, u64{0})}) +
                                                  group(take, {record(hm::keyed_header{1, 1}, u64{2})}) +
                                                  group(erase, {record(hm::keyed_header{2, 0}, u64{4})})}));
    add("u64_insert_if_absent",
        input(map_u64, 0, {group(insert_if_absent, {record(hm::keyed_value_header{0}, u64{0}, u64{7}),
                                                    record(hm::keyed_value_header{no_slot}, u64{40}, u64{8})})}));
    add("u64_visit", input(map_u64, 0, {group(visit, {record(hm::visit_header{0, 0}, u64{2}, u64{5})})}));
    add("u64_visit_throws", input(map_u64, 0, {group(visit, {record(hm::visit_header{0, 1}, u64{2}, u64{5}),
                                                             record(hm::visit_header{no_slot, 1}, u64{4}, u64{6})})}));
    add("u64_visit_failed", input(map_u64, 0, {group(visit_failed, {record(hm::count_record{2}, raw{"visitor threw"}),
                                                                    record(hm::count_record{1}, raw{"second failed"})})}));
    add("u64_reduce", input(map_u64, 0, {group(reduce, {record(hm::reduce_header{no_slot, 0}, u64{0}, u64{5}),
                                                        record(hm::reduce_header{0, 1}, u64{2}, u64{7})})}));
    add("u64_reduce_capacity", input(map_u64 | capacity, 0,
                                     {group(reduce, {record(hm::reduce_header{0, 0}, u64{40}, u64{1}),
                                                     record(hm::reduce_header{no_slot, 0}, u64{42}, u64{1})})}));
    add("u64_visit_callable", input(map_u64, 0,
                                    {group(visit_callable, {record(hm::callable_visit_header{0, 0, 0}, u64{2}, u64{5}),
                                                            record(hm::callable_visit_header{no_slot, 0, 1}, u64{9}, u64{5})})}));
    add("u64_exchange", input(map_u64, 0, {group(engine_exchange, {record(u64{1}, u64{2}), record(u64{3}, u64{4})})}));
    add("u64_count", input(map_u64, 0, {group(count, {record(hm::keyed_header{0, 0}, u64{0}),
                                                      record(hm::keyed_header{no_slot, 0}, u64{2})})}));
    add("u64_find_from", input(map_u64, 0, {group(find_from, {record(hm::find_from_header{0, 5, 1}, u64{0}),
                                                              record(hm::find_from_header{1, 5, 900}, u64{2})})}));
    add("u64_find_many", input(map_u64, 0, {group(find_many, {record(hm::many_header{1, 0, 3}, u64{0}),
                                                              record(hm::many_header{1, 1, 3}, u64{1})})}));
    add("u64_take_many", input(map_u64, 0, {group(take_many, {record(hm::many_header{1, 0, 3}, u64{0})})}));
    // Replies to this rank's pending requests (opened in the order find, insert,
    // erase, insert_if_absent, visit: slots 0-4).
    add("u64_reply_find", input(map_u64, 1, {group(engine_reply, {record(reply_header{0, 2}, u64{11}, u64{12})})}));
    add("u64_replies_all_kinds",
        input(map_u64, 5,
              {group(engine_reply, {record(reply_header{0, 1}, u64{11})}),
               group(engine_reply, {record(reply_header{1, 0}, hm::count_record{0})}),
               group(engine_reply, {record(reply_header{2, 4})}), group(engine_reply, {record(reply_header{3, 1})}),
               group(engine_reply, {record(reply_header{4, 1}, u64{99})})}));
    add("u64_reply_abandoned", input(map_u64, 0x10, {group(engine_reply, {record(reply_header{0, 0})})}));
    // Found by libFuzzer: a reply claiming 0x93000000 values must not reserve for them.
    add("regression_reply_count_reserve",
        input(map_u64, 0x18, {group(engine_reply, {record(reply_header{0, 0x93000000u})})}));
    add("u64_rejected", input(map_u64, 0, {group(rejected, {record(hm::count_record{3}), record(hm::count_record{4})})}));
    {
        std::vector<bytes> found, taken;
        for (std::uint32_t i = 0; i < 6; ++i) {
            found.push_back(record(hm::many_reply_header{1, i, 1}, u64{i}));
            taken.push_back(record(hm::many_reply_header{1, i, 0}));
        }
        add("u64_find_many_reply", input(map_u64 | inside_batch, 0, {group(find_many_reply, found)}));
        add("u64_take_many_reply", input(map_u64 | inside_batch | take_batch, 0, {group(find_many_reply, taken)}));
    }
    // Streamed find_many / take_many (many_begin, bare keys) and their answers
    // (many_reply_begin, then many_value or many_counted per key, in order).
    add("u64_many_begin_keys", input(map_u64, 0, {group(many_begin, {record(hm::many_begin{1, 3, 0})}) +
                                                  group(many_keys, {record(u64{0}), record(u64{2}), record(u64{99})})}));
    add("u64_many_take_keys", input(map_u64, 0, {group(many_begin, {record(hm::many_begin{1, 1, 1})}) +
                                                 group(many_keys, {record(u64{0}), record(u64{4})})}));
    add("u64_many_capacity_keys", input(map_u64 | capacity, 0, {group(many_begin, {record(hm::many_begin{2, 0, 0})}) +
                                                                group(many_keys, {record(u64{2})})}));
    add("u64_many_answers",
        input(map_u64 | inside_batch, 0,
              {group(many_reply_begin, {record(hm::many_reply_begin{1})}) +
               group(many_value, {record(u64{0}), record(u64{1}), record(u64{2})}) +
               group(many_counted, {record(hm::count_record{2}, u64{3}, u64{30})}) +
               group(many_counted, {record(hm::count_record{0})}) +
               group(many_counted, {record(hm::count_record{runtime::engine::error_count}, raw{"too large"})})}));
    add("u64_many_take_answers",
        input(map_u64 | inside_batch | take_batch, 0,
              {group(many_reply_begin, {record(hm::many_reply_begin{1})}) +
               group(many_counted, {record(hm::count_record{0})}) +
               group(many_counted, {record(hm::count_record{1}, u64{7})})}));
    add("u64_many_answers_other_batch",
        input(map_u64 | inside_batch, 0, {group(many_reply_begin, {record(hm::many_reply_begin{7})}) +
                                          group(many_value, {record(u64{0})})}));
    // Streamed reduces: reduce_op names the operator of the bare pairs after it.
    add("u64_reduce_streamed", input(map_u64, 0, {group(reduce_op, {record(hm::reduce_op{0})}) +
                                                  group(reduce_pairs, {record(u64{0}, u64{5}), record(u64{42}, u64{1})}) +
                                                  group(reduce_op, {record(hm::reduce_op{1})}) +
                                                  group(reduce_pairs, {record(u64{2}, u64{7})})}));
    add("u64_reduce_streamed_capacity",
        input(map_u64 | capacity, 0, {group(reduce_op, {record(hm::reduce_op{0})}) +
                                      group(reduce_pairs, {record(u64{40}, u64{1}), record(u64{44}, u64{1})})}));
    add("u64_two_messages", input(map_u64, 1,
                                  {group(insert_one, {record(u64{8}, u64{1})}) +
                                       group(find, {record(hm::keyed_header{no_slot - 1, 1}, u64{8})}),
                                   group(engine_reply, {record(reply_header{0, 1}, u64{1})})}));

    // hash_map<std::string, std::string>: length-prefixed keys and values.
    add("string_insert",
        input(map_string, 0, {group(insert, {record(hm::insert_header{no_slot, 2}, str{"key0"}, str{"ab"}, str{"cd"})})}));
    add("string_find_take", input(map_string, 0, {group(find, {record(hm::keyed_header{0, 4}, str{"key0"})}) +
                                                  group(take, {record(hm::keyed_header{1, 1}, str{"key2"})})}));
    add("string_reduce", input(map_string, 0, {group(reduce, {record(hm::reduce_header{0, 0}, str{"key0"}, str{"zz"})}) +
                                                  group(reduce, {record(hm::reduce_header{no_slot, 1}, str{"new"}, str{"y"})})}));
    add("string_visit_callable",
        input(map_string, 0, {group(visit_callable, {record(hm::callable_visit_header{0, 0, 0}, str{"key2"}, str{"w"})})}));
    add("string_visit", input(map_string, 0, {group(visit, {record(hm::visit_header{0, 0}, str{"key4"}, str{"new"})})}));
    add("string_visit_throws",
        input(map_string, 0, {group(visit, {record(hm::visit_header{no_slot, 1}, str{"key4"}, str{"new"})})}));
    add("string_reply_find",
        input(map_string, 1, {group(engine_reply, {record(reply_header{0, 2}, str{"x"}, str{"yz"})})}));
    add("string_insert_if_absent",
        input(map_string | capacity, 0,
              {group(insert_if_absent, {record(hm::keyed_value_header{no_slot}, str{"new"}, str{"v"})})}));
    add("string_find_many_reply", input(map_string | inside_batch, 0,
                                        {group(find_many_reply, {record(hm::many_reply_header{1, 0, 1}, str{"vv"})})}));

    add("string_many_begin_keys",
        input(map_string, 0, {group(many_begin, {record(hm::many_begin{1, 2, 0})}) +
                              group(many_keys, {record(str{"key0"}), record(str{"none"})})}));
    add("string_many_answers",
        input(map_string | inside_batch, 0,
              {group(many_reply_begin, {record(hm::many_reply_begin{1})}) +
               group(many_counted, {record(hm::count_record{1}, str{"vv"})}) +
               group(many_counted, {record(hm::count_record{0})})}));
    add("string_reduce_streamed", input(map_string, 0, {group(reduce_op, {record(hm::reduce_op{0})}) +
                                                        group(reduce_pairs, {record(str{"key0"}, str{"zz"})})}));

    // linear_hash_map.  This rank dormant (bit 0x08 clear): activation as bucket
    // 1, one shipment, then a request for it.
    const bytes activate_bucket1 = record(lh::activate{1, 1, 0, 1, 0});
    const bytes two_entries = lh_entry(3, "ab", "xy") + lh_entry(7, "cd", "");
    add("lh_activate_ship_request",
        input(linear | buffer_1k, 0,
              {group(lh_activate, {activate_bucket1}) +
               group(lh_ship, {record(lh::ship_header{0, 2, 3, 1, 0, 0}, raw{text(two_entries)})}) +
               group(lh_request, {lh_request_record(1, no_slot, 1, 1, "ab")})}));
    add("lh_request_before_activation",
        input(linear | buffer_1k, 0,
              {group(lh_request, {lh_request_record(0, no_slot, 1, 1, "key", "v", 1)}),
               group(lh_activate, {activate_bucket1}) + group(lh_ship, {record(lh::ship_header{0, 0, 1, 1, 0, 0})})}));
    // Replies to this client's pending find, insert, erase (slots 0, 1, 2).
    add("lh_replies", input(linear | buffer_1k, 3,
                            {group(lh_reply, {record(lh::reply_header{0, 0, 0, 0, 1, 0, 0}, std::uint8_t{1}, raw{"val"})}) +
                             group(lh_reply, {record(lh::reply_header{1, 0, 1, 1, 0, 1, 0}, std::uint8_t{2})}) +
                             group(lh_reply, {record(lh::reply_header{2, 0, 0, 2, 2, 2, 0}, std::uint8_t{0})})}));
    // This rank holds bucket 0 and splits onto rank 1: acknowledge, hand the token back.
    add("lh_split_acks", input(linear | hosts_bucket0 | buffer_1k, 0,
                               {group(lh_ship_ack, {record(lh::ship_ack{0})}), group(lh_token, {record(lh::token{0, 1})})}));
    for (seed& each : skiplist_seeds())
        all.push_back(std::move(each));
    return all;
}

void write_seeds(const std::string& directory) {
    std::filesystem::create_directories(directory);
    for (const seed& each : seeds()) {
        std::ofstream out(std::filesystem::path(directory) / each.name, std::ios::binary);
        out.write(reinterpret_cast<const char*>(each.bytes.data()), static_cast<std::streamsize>(each.bytes.size()));
        if (!out)
            throw std::runtime_error("cannot write the seed " + each.name + " into " + directory);
    }
}

}  // namespace mpidict::fuzz
