// Commands at a key's owner (store.hpp): Redis's semantics and error replies
// over one hash_map entry per key.
#include "serve/store.hpp"

#include <algorithm>
#include <chrono>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>

#include "serve/resp.hpp"

namespace mpidict::apps::serve {

namespace {

constexpr std::size_t header_bytes = 13;  // type, epoch (u32), expiry (i64 ms)

const char* const wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
const char* const not_integer = "ERR value is not an integer or out of range";
const char* const not_float = "ERR value is not a valid float";
const char* const syntax = "ERR syntax error";

struct hash_object {
    std::unordered_map<std::string, std::string> fields;
};
struct zset_object {
    std::set<std::pair<double, std::string>> order;
    std::unordered_map<std::string, double> scores;
};

// This rank's state.  The visitors run on the owner's thread only.
struct rank_state {
    std::uint32_t epoch = 1;
    std::uint64_t next_object = 1;
    std::unordered_map<std::uint64_t, std::unique_ptr<hash_object>> hashes;
    std::unordered_map<std::uint64_t, std::unique_ptr<zset_object>> zsets;
    bool maybe_dead = false;
    rank_counters count;
};
rank_state& state() {
    static rank_state s;
    return s;
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

struct entry {
    char type = 0;
    std::uint32_t epoch = 0;
    std::int64_t expires = 0;
    std::string_view payload;
};

entry read_entry(const std::string& value) {
    entry e;
    if (value.size() < header_bytes)
        return e;
    e.type = value[0];
    std::memcpy(&e.epoch, value.data() + 1, 4);
    std::memcpy(&e.expires, value.data() + 5, 8);
    e.payload = std::string_view(value).substr(header_bytes);
    return e;
}

std::string make_entry(char type, std::int64_t expires, std::string_view payload) {
    std::string value(header_bytes, '\0');
    value[0] = type;
    std::memcpy(value.data() + 1, &state().epoch, 4);
    std::memcpy(value.data() + 5, &expires, 8);
    value += payload;
    if (expires != 0)
        state().maybe_dead = true;
    return value;
}

void set_expiry(std::string& value, std::int64_t expires) {
    std::memcpy(value.data() + 5, &expires, 8);
    if (expires != 0)
        state().maybe_dead = true;
}

std::uint64_t object_id(const entry& e) {
    std::uint64_t id = 0;
    if (e.payload.size() == 8)
        std::memcpy(&id, e.payload.data(), 8);
    return id;
}

bool is_dead(const entry& e, std::int64_t now) {
    return e.type == 0 || e.epoch != state().epoch || (e.expires != 0 && e.expires <= now);
}

void free_object(const entry& e) {
    rank_state& s = state();
    if (e.type == 'h' && s.hashes.erase(object_id(e)))
        --s.count.objects;
    if (e.type == 'z' && s.zsets.erase(object_id(e)))
        --s.count.objects;
}

// Removes the key (and its object).
void drop(keyspace::values_ref& values) {
    if (values.empty())
        return;
    free_object(read_entry(values[0]));
    values.clear();
}

// The live entry of the key, or nullptr (a dead one is removed first).
std::string* live(keyspace::values_ref& values, std::int64_t now) {
    if (values.empty())
        return nullptr;
    if (is_dead(read_entry(values[0]), now)) {
        drop(values);
        return nullptr;
    }
    return &values[0];
}

void store(keyspace::values_ref& values, std::string value) {
    if (values.empty())
        values.push_back(value);
    else
        values[0] = std::move(value);
}

hash_object* hash_of(const std::string& value) {
    auto found = state().hashes.find(object_id(read_entry(value)));
    return found == state().hashes.end() ? nullptr : found->second.get();
}
zset_object* zset_of(const std::string& value) {
    auto found = state().zsets.find(object_id(read_entry(value)));
    return found == state().zsets.end() ? nullptr : found->second.get();
}

std::string new_object_payload(std::uint64_t id) {
    std::string payload(8, '\0');
    std::memcpy(payload.data(), &id, 8);
    return payload;
}

hash_object& create_hash(keyspace::values_ref& values) {
    rank_state& s = state();
    const std::uint64_t id = s.next_object++;
    auto& object = s.hashes[id];
    object = std::make_unique<hash_object>();
    ++s.count.objects;
    store(values, make_entry('h', 0, new_object_payload(id)));
    return *object;
}
zset_object& create_zset(keyspace::values_ref& values) {
    rank_state& s = state();
    const std::uint64_t id = s.next_object++;
    auto& object = s.zsets[id];
    object = std::make_unique<zset_object>();
    ++s.count.objects;
    store(values, make_entry('z', 0, new_object_payload(id)));
    return *object;
}

std::string upper(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string bulk(std::string_view bytes) {
    std::string out;
    reply_bulk(out, bytes);
    return out;
}
const std::string ok = "+OK\r\n";
const std::string null_bulk = "$-1\r\n";
const std::string empty_array = "*0\r\n";

// ---- strings ----------------------------------------------------------------

std::string command_set(keyspace::values_ref& values, const std::vector<std::string>& argv, std::int64_t now) {
    bool nx = false, xx = false, get = false, keepttl = false;
    int unit = 0;  // 1 EX, 2 PX, 3 EXAT, 4 PXAT
    const std::string* expire_text = nullptr;
    for (std::size_t i = 3; i < argv.size(); ++i) {
        const std::string option = upper(argv[i]);
        const bool has_next = i + 1 < argv.size();
        if (option == "NX" && !xx) {
            nx = true;
        } else if (option == "XX" && !nx) {
            xx = true;
        } else if (option == "GET") {
            get = true;
        } else if (option == "KEEPTTL" && unit == 0) {
            keepttl = true;
        } else if ((option == "EX" || option == "PX" || option == "EXAT" || option == "PXAT") && unit == 0 &&
                   !keepttl && has_next) {
            unit = option == "EX" ? 1 : option == "PX" ? 2 : option == "EXAT" ? 3 : 4;
            expire_text = &argv[++i];
        } else {
            return error_reply(syntax);
        }
    }
    std::int64_t expires = 0;
    if (unit != 0) {
        long long amount = 0;
        if (!parse_integer(*expire_text, amount))
            return error_reply(not_integer);
        const bool seconds = unit == 1 || unit == 3;
        if (amount <= 0 || (seconds && amount > LLONG_MAX / 1000))
            return error_reply("ERR invalid expire time in 'set' command");
        long long ms = seconds ? amount * 1000 : amount;
        if (unit <= 2) {
            if (ms > LLONG_MAX - now)
                return error_reply("ERR invalid expire time in 'set' command");
            ms += now;
        }
        expires = ms;
    }
    std::string* current = live(values, now);
    std::string old_reply = null_bulk;
    if (get && current) {
        const entry e = read_entry(*current);
        if (e.type != 's')
            return error_reply(wrongtype);
        old_reply = bulk(e.payload);
    }
    if ((nx && current) || (xx && !current))
        return get ? old_reply : null_bulk;
    if (keepttl && current)
        expires = read_entry(*current).expires;
    if (current)
        free_object(read_entry(*current));
    store(values, make_entry('s', expires, argv[2]));
    if (unit != 0 && expires <= now)
        drop(values);  // EXAT/PXAT in the past: set and expired at once
    return get ? old_reply : ok;
}

std::string command_incr(keyspace::values_ref& values, const std::vector<std::string>& argv, long long sign,
                         std::int64_t now) {
    long long by = 1;
    if (argv.size() > 2 && !parse_integer(argv[2], by))
        return error_reply(not_integer);
    if (sign < 0) {
        if (by == LLONG_MIN)
            return error_reply("ERR decrement would overflow");
        by = -by;
    }
    std::string* current = live(values, now);
    long long value = 0;
    std::int64_t expires = 0;
    if (current) {
        const entry e = read_entry(*current);
        if (e.type != 's')
            return error_reply(wrongtype);
        if (!parse_integer(e.payload, value))
            return error_reply(not_integer);
        expires = e.expires;
    }
    if ((by < 0 && value < 0 && by < LLONG_MIN - value) || (by > 0 && value > 0 && by > LLONG_MAX - value))
        return error_reply("ERR increment or decrement would overflow");
    value += by;
    store(values, make_entry('s', expires, std::to_string(value)));
    return integer_reply(value);
}

// ---- expiry -----------------------------------------------------------------

std::string command_expire(keyspace::values_ref& values, const std::vector<std::string>& argv, bool seconds,
                           std::int64_t now) {
    const char* name = seconds ? "expire" : "pexpire";
    long long amount = 0;
    if (!parse_integer(argv[2], amount))
        return error_reply(not_integer);
    bool nx = false, xx = false, gt = false, lt = false;
    for (std::size_t i = 3; i < argv.size(); ++i) {
        const std::string option = upper(argv[i]);
        if (option == "NX")
            nx = true;
        else if (option == "XX")
            xx = true;
        else if (option == "GT")
            gt = true;
        else if (option == "LT")
            lt = true;
        else
            return error_reply("ERR Unsupported option " + argv[i]);
    }
    if (nx && (xx || gt || lt))
        return error_reply("ERR NX and XX, GT or LT options at the same time are not compatible");
    if (gt && lt)
        return error_reply("ERR GT and LT options at the same time are not compatible");
    long long when = amount;
    if (seconds) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
            return error_reply(std::string("ERR invalid expire time in '") + name + "' command");
        when *= 1000;
    }
    if (when > LLONG_MAX - now)
        return error_reply(std::string("ERR invalid expire time in '") + name + "' command");
    when += now;
    std::string* current = live(values, now);
    if (!current)
        return integer_reply(0);
    const std::int64_t had = read_entry(*current).expires;
    if (nx && had != 0)
        return integer_reply(0);
    if (xx && had == 0)
        return integer_reply(0);
    if (gt && (had == 0 || when <= had))
        return integer_reply(0);
    if (lt && had != 0 && when >= had)
        return integer_reply(0);
    if (when <= now) {
        drop(values);
        return integer_reply(1);
    }
    set_expiry(*current, when);
    return integer_reply(1);
}

std::string command_ttl(keyspace::values_ref& values, bool seconds, std::int64_t now) {
    std::string* current = live(values, now);
    if (!current)
        return integer_reply(-2);
    const std::int64_t expires = read_entry(*current).expires;
    if (expires == 0)
        return integer_reply(-1);
    const long long left = std::max<long long>(0, expires - now);
    return integer_reply(seconds ? (left + 500) / 1000 : left);
}

// ---- hashes -----------------------------------------------------------------

std::string command_hash(const std::string& name, keyspace::values_ref& values,
                         const std::vector<std::string>& argv, std::int64_t now) {
    std::string* current = live(values, now);
    if (current && read_entry(*current).type != 'h')
        return error_reply(wrongtype);
    hash_object* h = current ? hash_of(*current) : nullptr;
    if (name == "HSET" || name == "HMSET") {
        if (argv.size() % 2 != 0)
            return error_reply("ERR wrong number of arguments for '" +
                               std::string(name == "HSET" ? "hset" : "hmset") + "' command");
        if (!h)
            h = &create_hash(values);
        long long added = 0;
        for (std::size_t i = 2; i + 1 < argv.size(); i += 2)
            added += h->fields.insert_or_assign(argv[i], argv[i + 1]).second ? 1 : 0;
        return name == "HSET" ? integer_reply(added) : ok;
    }
    if (name == "HGET") {
        if (!h)
            return null_bulk;
        auto found = h->fields.find(argv[2]);
        return found == h->fields.end() ? null_bulk : bulk(found->second);
    }
    if (name == "HMGET") {
        std::string out;
        reply_array_header(out, argv.size() - 2);
        for (std::size_t i = 2; i < argv.size(); ++i) {
            auto found = h ? h->fields.find(argv[i]) : decltype(h->fields.find(argv[i])){};
            if (h && found != h->fields.end())
                reply_bulk(out, found->second);
            else
                reply_null(out);
        }
        return out;
    }
    if (name == "HGETALL") {
        if (!h)
            return empty_array;
        std::string out;
        reply_array_header(out, h->fields.size() * 2);
        for (const auto& [field, value] : h->fields) {
            reply_bulk(out, field);
            reply_bulk(out, value);
        }
        return out;
    }
    if (name == "HDEL") {
        if (!h)
            return integer_reply(0);
        long long removed = 0;
        for (std::size_t i = 2; i < argv.size(); ++i)
            removed += static_cast<long long>(h->fields.erase(argv[i]));
        if (h->fields.empty())
            drop(values);
        return integer_reply(removed);
    }
    if (name == "HLEN")
        return integer_reply(h ? static_cast<long long>(h->fields.size()) : 0);
    if (name == "HEXISTS")
        return integer_reply(h && h->fields.count(argv[2]) ? 1 : 0);
    return error_reply("ERR internal: no hash command " + name);
}

// ---- sorted sets ------------------------------------------------------------

void reply_member(std::string& out, const std::pair<double, std::string>& item, bool scores) {
    reply_bulk(out, item.second);
    if (scores)
        reply_bulk(out, format_double(item.first));
}

struct score_bound {
    double value = 0;
    bool exclusive = false;
};
bool parse_score_bound(std::string_view text, score_bound& bound) {
    bound.exclusive = !text.empty() && text[0] == '(';
    if (bound.exclusive)
        text.remove_prefix(1);
    return parse_double(text, bound.value);
}

struct lex_bound {
    std::string value;
    bool exclusive = false;
    int infinity = 0;  // -1 "-", +1 "+"
};
bool parse_lex_bound(std::string_view text, lex_bound& bound) {
    if (text == "+") {
        bound.infinity = 1;
        return true;
    }
    if (text == "-") {
        bound.infinity = -1;
        return true;
    }
    if (text.empty() || (text[0] != '(' && text[0] != '['))
        return false;
    bound.exclusive = text[0] == '(';
    bound.value = std::string(text.substr(1));
    return true;
}
bool lex_at_least(const std::string& member, const lex_bound& min) {
    if (min.infinity != 0)
        return min.infinity < 0;
    return min.exclusive ? member > min.value : member >= min.value;
}
bool lex_at_most(const std::string& member, const lex_bound& max) {
    if (max.infinity != 0)
        return max.infinity > 0;
    return max.exclusive ? member < max.value : member <= max.value;
}

enum class range_kind { rank, score, lex };

// ZRANGE and its older forms (redis-server's zrangeGenericCommand).
std::string command_zrange(const std::string& name, keyspace::values_ref& values,
                           const std::vector<std::string>& argv, std::int64_t now) {
    range_kind kind = range_kind::rank;
    bool reverse = false, scores = false, limited = false;
    long long offset = 0, count = -1;
    std::size_t first_option = 4;
    if (name == "ZRANGEBYSCORE" || name == "ZREVRANGEBYSCORE")
        kind = range_kind::score;
    if (name == "ZRANGEBYLEX" || name == "ZREVRANGEBYLEX")
        kind = range_kind::lex;
    if (name == "ZREVRANGE" || name == "ZREVRANGEBYSCORE" || name == "ZREVRANGEBYLEX")
        reverse = true;
    for (std::size_t i = first_option; i < argv.size(); ++i) {
        const std::string option = upper(argv[i]);
        const std::size_t left = argv.size() - i - 1;
        if (option == "WITHSCORES") {
            scores = true;
        } else if (option == "LIMIT" && left >= 2 && name != "ZREVRANGE") {
            if (!parse_integer(argv[i + 1], offset) || !parse_integer(argv[i + 2], count))
                return error_reply(not_integer);
            limited = true;
            i += 2;
        } else if (name == "ZRANGE" && option == "BYSCORE") {
            kind = range_kind::score;
        } else if (name == "ZRANGE" && option == "BYLEX") {
            kind = range_kind::lex;
        } else if (name == "ZRANGE" && option == "REV") {
            reverse = true;
        } else {
            return error_reply(syntax);
        }
    }
    if (limited && kind == range_kind::rank)
        return error_reply("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    if (scores && kind == range_kind::lex)
        return error_reply("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    // The reverse forms name the range from the top.
    std::string low = argv[2], high = argv[3];
    if (reverse && kind != range_kind::rank)
        std::swap(low, high);
    score_bound smin, smax;
    lex_bound lmin, lmax;
    long long start = 0, stop = 0;
    if (kind == range_kind::score && (!parse_score_bound(low, smin) || !parse_score_bound(high, smax)))
        return error_reply("ERR min or max is not a float");
    if (kind == range_kind::lex && (!parse_lex_bound(low, lmin) || !parse_lex_bound(high, lmax)))
        return error_reply("ERR min or max not valid string range item");
    if (kind == range_kind::rank && (!parse_integer(low, start) || !parse_integer(high, stop)))
        return error_reply(not_integer);
    std::string* current = live(values, now);
    if (!current)
        return empty_array;
    if (read_entry(*current).type != 'z')
        return error_reply(wrongtype);
    const zset_object& z = *zset_of(*current);
    std::vector<const std::pair<double, std::string>*> picked;
    if (kind == range_kind::rank) {
        const long long length = static_cast<long long>(z.order.size());
        if (start < 0)
            start += length;
        if (stop < 0)
            stop += length;
        if (start < 0)
            start = 0;
        if (start > stop || start >= length)
            return empty_array;
        if (stop >= length)
            stop = length - 1;
        if (!reverse) {
            auto it = z.order.begin();
            std::advance(it, start);
            for (long long i = start; i <= stop; ++i, ++it)
                picked.push_back(&*it);
        } else {
            auto it = z.order.rbegin();
            std::advance(it, start);
            for (long long i = start; i <= stop; ++i, ++it)
                picked.push_back(&*it);
        }
    } else {
        if (limited && offset < 0)
            return empty_array;
        auto in_low = [&](const std::pair<double, std::string>& item) {
            if (kind == range_kind::score)
                return smin.exclusive ? item.first > smin.value : item.first >= smin.value;
            return lex_at_least(item.second, lmin);
        };
        auto in_high = [&](const std::pair<double, std::string>& item) {
            if (kind == range_kind::score)
                return smax.exclusive ? item.first < smax.value : item.first <= smax.value;
            return lex_at_most(item.second, lmax);
        };
        long long skip = offset, take = count;
        auto visit = [&](const std::pair<double, std::string>& item) {
            if (skip > 0) {
                --skip;
                return true;
            }
            if (take == 0)
                return false;
            picked.push_back(&item);
            if (take > 0)
                --take;
            return true;
        };
        if (!reverse) {
            auto it = kind == range_kind::score
                          ? z.order.lower_bound({smin.value, std::string()})
                          : z.order.begin();
            for (; it != z.order.end() && !in_low(*it); ++it) {
            }
            for (; it != z.order.end() && in_high(*it); ++it)
                if (!visit(*it))
                    break;
        } else {
            auto it = z.order.rbegin();
            if (kind == range_kind::score && smax.value != HUGE_VAL)  // past the last element of score <= max
                it = std::make_reverse_iterator(
                    z.order.lower_bound({std::nextafter(smax.value, HUGE_VAL), std::string()}));
            for (; it != z.order.rend() && !in_high(*it); ++it) {
            }
            for (; it != z.order.rend() && in_low(*it); ++it)
                if (!visit(*it))
                    break;
        }
    }
    if (!scores) {
        // One pass into a buffer of the right size: appending three pieces
        // per member was a third of a ZRANGEBYSCORE's time at the owner
        // (docs/serve.md "What bounds us").
        std::size_t bytes = 24;
        for (const auto* item : picked)
            bytes += item->second.size() + 24;
        std::string out(bytes, '\0');
        char* at = out.data();
        auto line = [&](char prefix, std::size_t value) {
            *at++ = prefix;
            at = std::to_chars(at, at + 20, value).ptr;
            *at++ = '\r';
            *at++ = '\n';
        };
        line('*', picked.size());
        for (const auto* item : picked) {
            line('$', item->second.size());
            std::memcpy(at, item->second.data(), item->second.size());
            at += item->second.size();
            *at++ = '\r';
            *at++ = '\n';
        }
        out.resize(static_cast<std::size_t>(at - out.data()));
        return out;
    }
    std::string out;
    reply_array_header(out, picked.size() * 2);
    for (const auto* item : picked)
        reply_member(out, *item, scores);
    return out;
}

std::string command_zadd(keyspace::values_ref& values, const std::vector<std::string>& argv, std::int64_t now) {
    bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
    std::size_t i = 2;
    for (; i < argv.size(); ++i) {
        const std::string option = upper(argv[i]);
        if (option == "NX")
            nx = true;
        else if (option == "XX")
            xx = true;
        else if (option == "GT")
            gt = true;
        else if (option == "LT")
            lt = true;
        else if (option == "CH")
            ch = true;
        else if (option == "INCR")
            incr = true;
        else
            break;
    }
    const std::size_t elements = argv.size() - i;
    if (elements % 2 != 0 || elements == 0)
        return error_reply(syntax);
    if (incr && elements > 2)
        return error_reply("ERR INCR option supports a single increment-element pair");
    if (nx && xx)
        return error_reply("ERR XX and NX options at the same time are not compatible");
    if ((gt && nx) || (lt && nx) || (gt && lt))
        return error_reply("ERR GT, LT, and/or NX options at the same time are not compatible");
    std::vector<double> new_scores;
    for (std::size_t j = i; j < argv.size(); j += 2) {
        double score = 0;
        if (!parse_double(argv[j], score))
            return error_reply(not_float);
        new_scores.push_back(score);
    }
    std::string* current = live(values, now);
    if (current && read_entry(*current).type != 'z')
        return error_reply(wrongtype);
    if (!current && xx)
        return incr ? null_bulk : integer_reply(0);
    zset_object& z = current ? *zset_of(*current) : create_zset(values);
    long long added = 0, updated = 0;
    bool performed = false;
    double last = 0;
    for (std::size_t j = i, k = 0; j < argv.size(); j += 2, ++k) {
        double score = new_scores[k];
        const std::string& member = argv[j + 1];
        auto found = z.scores.find(member);
        if (found != z.scores.end()) {
            if (nx)
                continue;
            const double old = found->second;
            if (incr) {
                score += old;
                if (std::isnan(score)) {
                    if (z.scores.empty())
                        drop(values);
                    return error_reply("ERR resulting score is not a number (NaN)");
                }
            }
            if ((lt && score >= old) || (gt && score <= old))
                continue;
            performed = true;
            last = score;
            if (score != old) {
                z.order.erase({old, member});
                z.order.insert({score, member});
                found->second = score;
                ++updated;
            }
        } else {
            if (xx)
                continue;
            z.scores.emplace(member, score);
            z.order.insert({score, member});
            ++added;
            performed = true;
            last = score;
        }
    }
    if (z.scores.empty())
        drop(values);
    if (incr)
        return performed ? bulk(format_double(last)) : null_bulk;
    return integer_reply(ch ? added + updated : added);
}

std::string command_zset(const std::string& name, keyspace::values_ref& values,
                         const std::vector<std::string>& argv, std::int64_t now) {
    if (name == "ZADD")
        return command_zadd(values, argv, now);
    if (name.rfind("ZRANGE", 0) == 0 || name.rfind("ZREVRANGE", 0) == 0)
        return command_zrange(name, values, argv, now);
    std::string* current = live(values, now);
    if (current && read_entry(*current).type != 'z')
        return error_reply(wrongtype);
    zset_object* z = current ? zset_of(*current) : nullptr;
    if (name == "ZSCORE") {
        if (!z)
            return null_bulk;
        auto found = z->scores.find(argv[2]);
        return found == z->scores.end() ? null_bulk : bulk(format_double(found->second));
    }
    if (name == "ZCARD")
        return integer_reply(z ? static_cast<long long>(z->scores.size()) : 0);
    if (name == "ZREM") {
        if (!z)
            return integer_reply(0);
        long long removed = 0;
        for (std::size_t i = 2; i < argv.size(); ++i) {
            auto found = z->scores.find(argv[i]);
            if (found == z->scores.end())
                continue;
            z->order.erase({found->second, found->first});
            z->scores.erase(found);
            ++removed;
        }
        if (z->scores.empty())
            drop(values);
        return integer_reply(removed);
    }
    return error_reply("ERR internal: no sorted-set command " + name);
}

}  // namespace

std::string key_command::operator()(const std::string&, keyspace::values_ref& values,
                                    const std::vector<std::string>& argv) const {
    ++state().count.commands;
    const std::int64_t now = now_ms();
    const std::string& name = argv[0];
    if (name == "GET" || name == "MGET1") {
        std::string* current = live(values, now);
        if (!current)
            return null_bulk;
        const entry e = read_entry(*current);
        if (e.type != 's')
            return name == "GET" ? error_reply(wrongtype) : null_bulk;
        return bulk(e.payload);
    }
    if (name == "SET")
        return command_set(values, argv, now);
    if (name == "INCR" || name == "INCRBY")
        return command_incr(values, argv, 1, now);
    if (name == "DECR" || name == "DECRBY")
        return command_incr(values, argv, -1, now);
    if (name == "DEL1") {
        const bool had = live(values, now) != nullptr;
        drop(values);
        return integer_reply(had ? 1 : 0);
    }
    if (name == "EXISTS1")
        return integer_reply(live(values, now) ? 1 : 0);
    if (name == "TYPE") {
        std::string* current = live(values, now);
        const char type = current ? read_entry(*current).type : 0;
        return type == 's' ? "+string\r\n" : type == 'h' ? "+hash\r\n" : type == 'z' ? "+zset\r\n" : "+none\r\n";
    }
    if (name == "STRLEN" || name == "APPEND") {
        std::string* current = live(values, now);
        if (current && read_entry(*current).type != 's')
            return error_reply(wrongtype);
        if (name == "STRLEN")
            return integer_reply(current ? static_cast<long long>(read_entry(*current).payload.size()) : 0);
        if (!current) {
            store(values, make_entry('s', 0, argv[2]));
            return integer_reply(static_cast<long long>(argv[2].size()));
        }
        current->append(argv[2]);
        return integer_reply(static_cast<long long>(current->size() - header_bytes));
    }
    if (name == "EXPIRE" || name == "PEXPIRE")
        return command_expire(values, argv, name == "EXPIRE", now);
    if (name == "TTL" || name == "PTTL")
        return command_ttl(values, name == "TTL", now);
    if (name == "PERSIST") {
        std::string* current = live(values, now);
        if (!current || read_entry(*current).expires == 0)
            return integer_reply(0);
        set_expiry(*current, 0);
        return integer_reply(1);
    }
    if (name[0] == 'H')
        return command_hash(name, values, argv, now);
    if (name[0] == 'Z')
        return command_zset(name, values, argv, now);
    return error_reply("ERR internal: no key command " + name);
}

std::string rank_command::operator()(keyspace::visit_context& context, const std::string&, keyspace::values_ref&,
                                     const std::vector<std::string>& argv) const {
    rank_state& s = state();
    ++s.count.commands;
    const std::int64_t now = now_ms();
    const std::string& name = argv[0];
    if (name == "FLUSHALL") {
        ++s.epoch;
        s.maybe_dead = true;
        return ok;
    }
    if (name == "DBSIZE") {
        long long live_keys = 0;
        context.map.local_for_each([&](const std::string&, const auto& values) {
            if (!values.empty() && !is_dead(read_entry(values[0]), now))
                ++live_keys;
        });
        return integer_reply(live_keys);
    }
    if (name == "INFO") {
        long long live_keys = 0, expiring = 0;
        context.map.local_for_each([&](const std::string&, const auto& values) {
            if (values.empty())
                return;
            const entry e = read_entry(values[0]);
            if (!is_dead(e, now)) {
                ++live_keys;
                expiring += e.expires != 0 ? 1 : 0;
            }
        });
        // One line of numbers, summed by the dispatcher.
        return bulk(std::to_string(live_keys) + " " + std::to_string(expiring) + " " +
                    std::to_string(context.map.local_memory_bytes()) + " " + std::to_string(s.count.commands) + " " +
                    std::to_string(s.count.objects));
    }
    if (name == "SCAN") {
        // argv: SCAN position count [pattern].  Keys in the order of a 48-bit
        // hash; a page never splits keys of equal hash, so a key present for
        // the whole iteration is returned at least once.
        long long position_value = 0, count = 10;
        parse_integer(argv[1], position_value);
        parse_integer(argv[2], count);
        const std::uint64_t from = static_cast<std::uint64_t>(position_value);
        std::vector<std::pair<std::uint64_t, std::string>> keys;
        context.map.local_for_each([&](const std::string& key, const auto& values) {
            if (values.empty() || is_dead(read_entry(values[0]), now))
                return;
            const std::uint64_t h = std::hash<std::string>{}(key) & scan_position_mask;
            if (h >= from)
                keys.emplace_back(h, key);
        });
        const std::size_t want = static_cast<std::size_t>(std::max<long long>(1, count));
        std::sort(keys.begin(), keys.end());
        std::size_t end = std::min(want, keys.size());
        while (end < keys.size() && end > 0 && keys[end].first == keys[end - 1].first)
            ++end;
        // next: 0 when this rank is done, else the position after the page's last hash.
        const std::uint64_t next = end == keys.size() ? 0 : keys[end - 1].first + 1;
        std::string out;
        std::size_t matched = 0;
        std::string body;
        for (std::size_t i = 0; i < end; ++i)
            if (argv.size() < 4 || glob_match(argv[3], keys[i].second)) {
                reply_bulk(body, keys[i].second);
                ++matched;
            }
        reply_array_header(out, matched + 1);
        reply_bulk(out, std::to_string(next));
        return out + body;
    }
    return error_reply("ERR internal: no rank command " + name);
}

void drop_if_dead::operator()(const std::string&, keyspace::values_ref& values) const {
    if (!values.empty() && is_dead(read_entry(values[0]), now_ms()))
        drop(values);
}

std::vector<std::string> dead_local_keys(const keyspace& map, std::size_t limit) {
    std::vector<std::string> dead;
    const std::int64_t now = now_ms();
    bool expiring = false;  // a live entry with an expiry time: sweep again later
    map.local_for_each([&](const std::string& key, const auto& values) {
        if (values.empty())
            return;
        const entry e = read_entry(values[0]);
        if (is_dead(e, now)) {
            if (dead.size() < limit)
                dead.push_back(key);
            else
                expiring = true;
        } else if (e.expires != 0) {
            expiring = true;
        }
    });
    state().maybe_dead = expiring;
    return dead;
}

bool sweep_wanted() { return state().maybe_dead; }

rank_counters counters() { return state().count; }

}  // namespace mpidict::apps::serve
