// mpidict._core, part 2: skiplist_map (module.cpp binds the other containers
// and calls bind_skiplist_maps).
//
// Keys: int64, uint64, float64 (C++ numbers), byte strings, and composite keys
// of 2 to 4 fields.  A composite key crosses as std::array<uint64_t, D> whose
// words are its fields' order-preserving bits (computed by python/mpidict/
// _skiplist.py: int64 with the sign bit flipped, float64 as ordered_codec
// does, uint64 as it is).  uint64's own encoding is big-endian, so the list
// stores exactly the bytes C++'s std::tuple of those field types would, ranges
// and patterns order them as C++ does, and one instantiation per D serves every
// mix of field types.  A pattern's text is parsed with the real field types
// (python passes them as a string of 'i', 'u', 'f') and its box carried over
// word by word to the array's pattern (the encoded bounds are equal).

#include <nanobind/stl/array.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>

#include "binding.hpp"
#include "skiplist_kinds.hpp"
#include "skiplist_snapshot.hpp"
#include "mpidict/skiplist_map.hpp"
#include "mpidict/skiplist_range_many.hpp"
#include "reference.hpp"

namespace mpidict_python {

void bind_skiplist_maps(nb::module_& mod);

}  // namespace mpidict_python

namespace {

using namespace mpidict_python;
using mpidict::dimension_kind;
using mpidict::dimension_type;

template <class K>
constexpr bool is_composite = false;
template <std::size_t D>
constexpr bool is_composite<composite<D>> = true;

// The field types of a composite key from Python's letters ('i' int64, 'u' uint64, 'f' float64).
std::vector<dimension_type> field_types(const std::string& letters) {
    std::vector<dimension_type> types;
    for (const char letter : letters) {
        if (letter == 'i')
            types.push_back({dimension_kind::signed_integer, 8});
        else if (letter == 'u')
            types.push_back({dimension_kind::unsigned_integer, 8});
        else if (letter == 'f')
            types.push_back({dimension_kind::floating, 8});
        else
            throw mpidict::invalid_argument_error(std::string("mpidict: composite key field type '") + letter +
                                                  "' is not 'i', 'u' or 'f'");
    }
    return types;
}

std::uint64_t big_endian_word(const std::string& field) {
    std::uint64_t word = 0;
    for (const char byte : field)
        word = (word << 8) | static_cast<unsigned char>(byte);
    return word;
}

// An absolute deadline (seconds since the epoch), or one `seconds` from now on
// the map's expiry clock (system_clock unless the configuration set one).
template <class Map>
typename Map::clock::time_point deadline(const Map& map, double seconds, bool from_now) {
    using clock = typename Map::clock;
    if (!std::isfinite(seconds))
        throw mpidict::invalid_argument_error("mpidict: skiplist_map expiry must be a finite number of seconds, not " +
                                              std::to_string(seconds));
    // system_clock counts nanoseconds in 64 bits (until the year 2262).
    if (std::abs(seconds) > 7e9)
        throw mpidict::invalid_argument_error("mpidict: skiplist_map expiry " + std::to_string(seconds) +
                                              " s is beyond what the clock holds (|seconds| <= 7e9)");
    const auto offset = std::chrono::duration_cast<typename clock::duration>(std::chrono::duration<double>(seconds));
    if (!from_now)
        return typename clock::time_point(offset);
    const auto& now = map.settings().expiry_clock;
    return (now ? now() : clock::now()) + offset;
}

// reduce's operators as Python names them: "add", "min", "max" over values of
// numpy dtype int64 ('i'), uint64 ('u') or float64 ('f'), which cross as
// uint64 bits.  Numbered kind * 3 + op (python/mpidict/_skiplist.py).  Python
// callables cannot run at the node (another rank, inside the library), so the
// set is fixed.
template <char Kind, int Op>
struct py_reduce_op {
    static std::uint64_t fold(std::uint64_t current, std::uint64_t operand) {
        if constexpr (Kind == 'f') {
            const double a = std::bit_cast<double>(current), b = std::bit_cast<double>(operand);
            return std::bit_cast<std::uint64_t>(Op == 0 ? a + b : Op == 1 ? std::fmin(a, b) : std::fmax(a, b));
        } else if constexpr (Kind == 'i') {
            const auto a = static_cast<std::int64_t>(current), b = static_cast<std::int64_t>(operand);
            return Op == 0 ? current + operand : static_cast<std::uint64_t>(Op == 1 ? std::min(a, b) : std::max(a, b));
        } else {
            return Op == 0 ? current + operand : Op == 1 ? std::min(current, operand) : std::max(current, operand);
        }
    }
    std::uint64_t operator()(std::uint64_t current, std::uint64_t operand) const { return fold(current, operand); }
};

template <class F>
decltype(auto) with_reduce_op(int code, F&& f) {
    switch (code) {
    case 0: return f(py_reduce_op<'i', 0>{});
    case 1: return f(py_reduce_op<'i', 1>{});
    case 2: return f(py_reduce_op<'i', 2>{});
    case 3: return f(py_reduce_op<'u', 0>{});
    case 4: return f(py_reduce_op<'u', 1>{});
    case 5: return f(py_reduce_op<'u', 2>{});
    case 6: return f(py_reduce_op<'f', 0>{});
    case 7: return f(py_reduce_op<'f', 1>{});
    case 8: return f(py_reduce_op<'f', 2>{});
    default:
        throw mpidict::invalid_argument_error("mpidict: skiplist_map reduce operator number " + std::to_string(code) +
                                              " is not 0 to 8");
    }
}

double finite_seconds(double seconds, const char* what) {
    if (!std::isfinite(seconds))
        throw mpidict::invalid_argument_error(std::string("mpidict: skiplist_map ") + what +
                                              " must be a finite number of seconds, not " + std::to_string(seconds));
    return seconds;
}

template <class K, class V>
class py_skiplist_map : public py_single_valued<mpidict::skiplist_map<K, V>, K, V> {
public:
    using map_type = mpidict::skiplist_map<K, V>;
    using entry_list = typename map_type::entry_list;
    using py_container<map_type>::m;
    ~py_skiplist_map() { this->abandon_if_alive("skiplist_map"); }
    py_skiplist_map(const py_skiplist_map&) = delete;
    py_skiplist_map& operator=(const py_skiplist_map&) = delete;
    py_skiplist_map(communicator c, mpidict::skiplist_map_config config, const std::string& fields) {
        if constexpr (is_composite<K>) {
            m_fields = field_types(fields);
            if (m_fields.size() != std::tuple_size_v<K>)
                throw mpidict::invalid_argument_error("mpidict: composite key field types '" + fields +
                                                      "' do not name " + std::to_string(std::tuple_size_v<K>) +
                                                      " fields");
        } else if (!fields.empty()) {
            throw mpidict::invalid_argument_error("mpidict: field types given for a map of one-field keys");
        }
        m = std::make_unique<map_type>(c.comm, config);
    }

    // Expiry (the C++ insert(key, value, expires_at)): `seconds` since the
    // epoch, or from now with from_now (a ttl).
    // A ttl goes to C++'s duration form (ttl <= 0: a deadline already passed,
    // nothing stored, get() is False).
    request_handle insert_expiring(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in,
                                   double seconds, bool from_now) {
        const auto stored = [](const mpidict::replace_result& r) { return nb::bool_(r.stored); };
        if (from_now)
            return wrap(m->insert(kind<K>::value(key_in), kind<V>::value(value_in), ttl_of(seconds)), stored);
        return wrap(m->insert(kind<K>::value(key_in), kind<V>::value(value_in), deadline(*m, seconds, false)), stored);
    }
    void async_insert_expiring(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in,
                               double seconds, bool from_now) {
        if (from_now)
            m->async_insert(kind<K>::value(key_in), kind<V>::value(value_in), ttl_of(seconds));
        else
            m->async_insert(kind<K>::value(key_in), kind<V>::value(value_in), deadline(*m, seconds, false));
    }
    // insert_if_absent (C++'s; with a deadline or a ttl when `expiring`): get() is True if the key was new.
    request_handle insert_if_absent(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in,
                                    bool expiring, double seconds, bool from_now) {
        const auto fresh = [](bool inserted) { return nb::bool_(inserted); };
        const K key = kind<K>::value(key_in);
        const V value = kind<V>::value(value_in);
        if (!expiring)
            return wrap(m->insert_if_absent(key, value), fresh);
        if (from_now)
            return wrap(m->insert_if_absent(key, value, ttl_of(seconds)), fresh);
        return wrap(m->insert_if_absent(key, value, deadline(*m, seconds, false)), fresh);
    }
    // insert_many with one deadline or ttl for every pair (C++ insert_many(keys, values, deadline | ttl)).
    nb::tuple insert_many_expiring(const typename kind<K>::batch& keys, const typename kind<V>::batch& values,
                                   double seconds, bool from_now) {
        const auto [ks, vs] = pairs_of<K, V>(keys, values);
        const auto at = from_now ? typename map_type::clock::time_point{} : deadline(*m, seconds, false);
        const auto ttl = from_now ? ttl_of(seconds) : std::chrono::duration<double>{};
        mpidict::insert_many_result result;
        {
            nb::gil_scoped_release released;
            result = from_now ? m->insert_many(std::span<const K>(ks), std::span<const V>(vs), ttl)
                              : m->insert_many(std::span<const K>(ks), std::span<const V>(vs), at);
        }
        return insert_many_out(result);
    }
    // Redis TTL in float seconds (PTTL's milliseconds / 1000): -2.0 absent, -1.0 no deadline.
    request_handle ttl(const typename kind<K>::arg& key_in) {
        return wrap(m->ttl(kind<K>::value(key_in)), [](std::chrono::milliseconds left) {
            const auto ms = left.count();
            return nb::float_(ms < 0 ? static_cast<double>(ms) : static_cast<double>(ms) / 1000.0);
        });
    }
    request_handle expire(const typename kind<K>::arg& key_in, double seconds) {
        return wrap(m->expire(kind<K>::value(key_in), ttl_of(seconds)), [](bool there) { return nb::bool_(there); });
    }
    request_handle expire_at(const typename kind<K>::arg& key_in, double seconds) {
        return wrap(m->expire_at(kind<K>::value(key_in), deadline(*m, seconds, false)),
                    [](bool there) { return nb::bool_(there); });
    }
    request_handle persist(const typename kind<K>::arg& key_in) {
        return wrap(m->persist(kind<K>::value(key_in)), [](bool had) { return nb::bool_(had); });
    }
    // count / erase_range (C++'s, at the nodes); get() is the number.
    request_handle counted_request(const typename kind<K>::arg& lo_in, const typename kind<K>::arg& hi_in,
                                   bool after_lo, bool before_hi, bool erase) {
        mpidict::range_options options;
        options.after_lo = after_lo;
        options.before_hi = before_hi;
        const K lo = kind<K>::value(lo_in), hi = kind<K>::value(hi_in);
        auto pending = erase ? m->erase_range(lo, hi, options) : m->count(lo, hi, options);
        return wrap(std::move(pending), [](std::uint64_t n) { return nb::int_(n); });
    }
    // reduce at the node with operator number `op` (with_reduce_op); get() is True if stored.
    request_handle reduce(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in, int op) {
        if constexpr (std::is_same_v<V, std::uint64_t>) {
            const K key = kind<K>::value(key_in);
            const V value = kind<V>::value(value_in);
            return with_reduce_op(op, [&](auto o) {
                return wrap(m->reduce(key, value, o), [](const mpidict::replace_result& r) { return nb::bool_(r.stored); });
            });
        } else {
            throw mpidict::invalid_argument_error(no_reduce);
        }
    }
    void async_reduce(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in, int op) {
        if constexpr (std::is_same_v<V, std::uint64_t>) {
            const K key = kind<K>::value(key_in);
            const V value = kind<V>::value(value_in);
            with_reduce_op(op, [&](auto o) { m->async_reduce(key, value, o); });
        } else {
            throw mpidict::invalid_argument_error(no_reduce);
        }
    }
    static constexpr const char* no_reduce =
        "mpidict: skiplist_map reduce needs int64, uint64 or float64 values (the node folds numbers)";
    static std::chrono::duration<double> ttl_of(double seconds) {
        return std::chrono::duration<double>(finite_seconds(seconds, "ttl"));
    }

    // The ordered queries as requests (get() gives (keys, values)); `bounded`
    // false is range_from (hi unused).
    request_handle range_request(const typename kind<K>::arg& lo_in, const typename kind<K>::arg& hi_in, bool bounded,
                                 std::uint64_t limit, bool descending, bool after_lo, bool before_hi) {
        const mpidict::range_options options{limit, descending, after_lo, before_hi && bounded};
        const K lo = kind<K>::value(lo_in);
        auto pending = bounded ? m->range(lo, kind<K>::value(hi_in), options) : m->range_from(lo, options);
        return wrap(std::move(pending), [](const entry_list& entries) { return entries_out(entries); });
    }
    request_handle match_request(const std::string& text, std::uint64_t limit, bool descending) {
        mpidict::range_options options;
        options.limit = limit;
        options.descending = descending;
        if constexpr (is_composite<K>) {
            // The box in the real field types, carried over to the words.
            const auto typed = mpidict::key_pattern::parse(text, std::span<const dimension_type>(m_fields));
            auto words = mpidict::key_pattern::for_key<K>();
            for (std::size_t i = 0; i < typed.size(); ++i)
                words.interval(i, big_endian_word(typed[i].lo), big_endian_word(typed[i].hi));
            return wrap(m->match(words, options), [](const entry_list& entries) { return entries_out(entries); });
        } else if constexpr (std::is_arithmetic_v<K>) {
            return wrap(m->match(std::string_view(text), options),
                        [](const entry_list& entries) { return entries_out(entries); });
        } else {
            throw mpidict::invalid_argument_error(
                "mpidict: skiplist_map match: pattern queries need numeric or composite keys (use range or prefix for "
                "byte-string keys)");
        }
    }
    // Several ranges in one call (C++ mpidict::range_many, up to `window` in
    // flight): a list of (keys, values), one per (lo, hi) pair, in order.  The
    // GIL is released while the ranges run; the entries are converted after.
    nb::list range_many(const typename kind<K>::batch& los, const typename kind<K>::batch& his, std::uint64_t limit,
                        bool descending, bool after_lo, bool before_hi, std::size_t window) {
        auto l = kind<K>::open(los);
        auto h = kind<K>::open(his);
        same_length(l, h);
        std::vector<std::pair<K, K>> ranges;
        ranges.reserve(l.size());
        for (std::size_t i = 0; i < l.size(); ++i)
            ranges.emplace_back(l.at(i), h.at(i));
        const mpidict::range_options options{limit, descending, after_lo, before_hi};
        std::vector<entry_list> lists;
        {
            nb::gil_scoped_release released;
            lists = mpidict::range_many(*m, std::span<const std::pair<K, K>>(ranges), options, window);
        }
        nb::list out;
        for (const auto& entries : lists)
            out.append(entries_out(entries));
        return out;
    }
    // This caller's consistency mode (C++ consistency / set_consistency, which
    // waits for this caller's earlier operations: the GIL is released).
    std::string consistency() const { return mpidict::to_string(m->consistency()); }
    void set_consistency(const std::string& name) {
        const auto mode = mpidict::skiplist_consistency_named(name);
        if (!mode)
            throw mpidict::invalid_argument_error("mpidict: consistency '" + name +
                                                  "' is not one of total_order, sequential, none");
        nb::gil_scoped_release released;
        m->set_consistency(*mode);
    }
    // Elastic servers (C++ rebalance, drain, last_rebalance, active_servers):
    // the collective calls release the GIL; results go out as dicts that
    // mpidict.RebalanceResult wraps.  A metric C++ does not know still reaches
    // the core (as a value no rank can mean), which fails on every rank alike
    // once they compared arguments, so a rank alone with a typo waits for no one.
    nb::dict rebalance(const std::string& metric, double target) {
        mpidict::skiplist_rebalance_options options;
        const bool known = metric == "entries" || metric == "requests";
        options.metric = metric == "requests" ? mpidict::skiplist_load_metric::requests
                                              : static_cast<mpidict::skiplist_load_metric>(known ? 0 : 0xff);
        options.target = target;
        try {
            mpidict::skiplist_rebalance_result result;
            {
                nb::gil_scoped_release released;
                result = m->rebalance(options);
            }
            return result_out(result);
        } catch (const mpidict::error&) {
            if (!known)
                throw mpidict::invalid_argument_error("mpidict: rebalance metric '" + metric +
                                                      "' is neither 'entries' nor 'requests'; nothing moved");
            throw;
        }
    }
    nb::dict drain(int rank) {
        mpidict::skiplist_rebalance_result result;
        {
            nb::gil_scoped_release released;
            result = m->drain(rank);
        }
        return result_out(result);
    }
    std::size_t local_rebalance(std::size_t nodes, int to) {
        nb::gil_scoped_release released;
        return m->local_rebalance(nodes, to);
    }
    nb::dict last_rebalance() const { return result_out(m->last_rebalance()); }
    std::vector<int> active_servers() const { return m->active_servers(); }
    static nb::dict result_out(const mpidict::skiplist_rebalance_result& result) {
        nb::dict out;
        out["entries_before"] = result.entries_before;
        out["entries_after"] = result.entries_after;
        out["load_before"] = result.load_before;
        out["load_after"] = result.load_after;
        out["moved_nodes"] = result.moved_nodes;
        out["moved_entries"] = result.moved_entries;
        out["moved_bytes"] = result.moved_bytes;
        out["refused_nodes"] = result.refused_nodes;
        out["servers_added"] = result.servers_added;
        out["head_moved"] = result.head_moved;
        out["servers"] = result.servers;
        out["seconds"] = result.seconds;
        // max/mean over the servers, as C++ computes it (0 before any rebalance).
        using R = mpidict::skiplist_rebalance_result;
        out["entries_ratio_before"] = R::ratio(result.entries_before, result.servers);
        out["entries_ratio_after"] = R::ratio(result.entries_after, result.servers);
        out["load_ratio_before"] = R::ratio(result.load_before, result.servers);
        out["load_ratio_after"] = R::ratio(result.load_after, result.servers);
        return out;
    }
    // Every entry whose key starts with `prefix` (byte-string keys).
    request_handle prefix_request(const nb::bytes& prefix, std::uint64_t limit, bool descending) {
        if constexpr (std::is_same_v<K, std::string>) {
            mpidict::range_options options;
            options.limit = limit;
            options.descending = descending;
            return wrap(m->prefix(std::string_view(prefix.c_str(), prefix.size()), options),
                        [](const entry_list& entries) { return entries_out(entries); });
        } else {
            throw mpidict::invalid_argument_error("mpidict: skiplist_map prefix needs bytes or str keys");
        }
    }
    // Blocking forms: the request, waited for with the GIL released.
    nb::object range(const typename kind<K>::arg& lo, const typename kind<K>::arg& hi, bool bounded,
                     std::uint64_t limit, bool descending, bool after_lo, bool before_hi) {
        return range_request(lo, hi, bounded, limit, descending, after_lo, before_hi).get();
    }
    nb::object match(const std::string& text, std::uint64_t limit, bool descending) {
        return match_request(text, limit, descending).get();
    }

    static nb::tuple entries_out(const entry_list& entries) {
        pair_columns<K, V> out;
        out.reserve(entries.size());
        for (const auto& [k, v] : entries)
            out.add(k, v);
        return out.release();
    }

private:
    std::vector<dimension_type> m_fields;  // composite keys: the real field types
};

template <class K, class V>
void bind_skiplist_map(nb::module_& mod, const char* name) {
    using M = py_skiplist_map<K, V>;
    auto c = nb::class_<M>(mod, name)
                 .def(nb::init<communicator, mpidict::skiplist_map_config, const std::string&>())
                 .def("insert_expiring", &M::insert_expiring)
                 .def("async_insert_expiring", &M::async_insert_expiring)
                 .def("insert_many_expiring", &M::insert_many_expiring)
                 .def("insert_if_absent", &M::insert_if_absent)
                 .def("ttl", &M::ttl)
                 .def("expire", &M::expire)
                 .def("expire_at", &M::expire_at)
                 .def("persist", &M::persist)
                 .def("counted_request", &M::counted_request)
                 .def("reduce", &M::reduce)
                 .def("async_reduce", &M::async_reduce)
                 .def("range", &M::range)
                 .def("range_request", &M::range_request)
                 .def("range_many", &M::range_many)
                 .def("match", &M::match)
                 .def("match_request", &M::match_request)
                 .def("prefix_request", &M::prefix_request)
                 .def("consistency", &M::consistency)
                 .def("set_consistency", &M::set_consistency)
                 .def("rebalance", &M::rebalance)
                 .def("drain", &M::drain)
                 .def("local_rebalance", &M::local_rebalance)
                 .def("last_rebalance", &M::last_rebalance)
                 .def("active_servers", &M::active_servers)
                 .def("snapshot", [](M& self) {
                     // Collective: the GIL is released while every rank takes it.
                     std::optional<mpidict::skiplist_snapshot<K, V>> taken;
                     {
                         nb::gil_scoped_release released;
                         taken.emplace(self.map().snapshot());
                     }
                     return py_skiplist_snapshot<K, V>(std::move(*taken));
                 });
    bind_single_valued(c);
    if constexpr (std::is_same_v<K, std::int64_t> && std::is_same_v<V, std::uint64_t>) {
        namespace ref = mpidict_python::reference;
        using span = std::span<const std::int64_t>;
        c.def("cpp_reference_insert", [](M& self, const array_in<std::int64_t>& keys) {
            nb::gil_scoped_release released;
            return ref::skiplist_insert(self.map(), span(keys.data(), keys.shape(0)));
        });
        c.def("cpp_reference_find", [](M& self, const array_in<std::int64_t>& keys) {
            nb::gil_scoped_release released;
            return ref::skiplist_find(self.map(), span(keys.data(), keys.shape(0)));
        });
        c.def("cpp_reference_range", [](M& self, const array_in<std::int64_t>& lo, const array_in<std::int64_t>& hi,
                                        const array_in<std::uint64_t>& expected, std::size_t window) {
            if (lo.shape(0) != hi.shape(0) || lo.shape(0) != expected.shape(0))
                throw mpidict::invalid_argument_error("cpp_reference_range: lo, hi and expected differ in length");
            nb::gil_scoped_release released;
            return ref::skiplist_range(self.map(), span(lo.data(), lo.shape(0)), span(hi.data(), hi.shape(0)),
                                       std::span<const std::uint64_t>(expected.data(), expected.shape(0)), window);
        });
    }
}

}  // namespace

void mpidict_python::bind_skiplist_maps(nb::module_& mod) {
    nb::class_<mpidict::skiplist_map_config>(mod, "SkiplistMapConfig")
        .def(nb::init<>())
        .def_rw("runtime", &mpidict::skiplist_map_config::runtime)
        .def_rw("granularity", &mpidict::skiplist_map_config::granularity)
        .def_rw("node_slots_per_rank", &mpidict::skiplist_map_config::node_slots_per_rank)
        .def_rw("memory_limit_per_rank", &mpidict::skiplist_map_config::memory_limit_per_rank)
        .def_rw("max_key_bytes", &mpidict::skiplist_map_config::max_key_bytes)
        .def_rw("max_value_bytes", &mpidict::skiplist_map_config::max_value_bytes)
        .def_rw("initial_servers", &mpidict::skiplist_map_config::initial_servers)
        .def_rw("grow_entries", &mpidict::skiplist_map_config::grow_entries)
        .def_rw("grow_memory_fraction", &mpidict::skiplist_map_config::grow_memory_fraction)
        .def_rw("rebalance_threshold", &mpidict::skiplist_map_config::rebalance_threshold)
        .def_rw("online_rebalance", &mpidict::skiplist_map_config::online_rebalance)
        .def_rw("online_rebalance_seconds", &mpidict::skiplist_map_config::online_rebalance_seconds)
        .def_rw("server_ranks", &mpidict::skiplist_map_config::server_ranks)
        .def_prop_rw(
            "consistency", [](const mpidict::skiplist_map_config& c) { return std::string(mpidict::to_string(c.consistency)); },
            [](mpidict::skiplist_map_config& c, const std::string& name) {
                const auto mode = mpidict::skiplist_consistency_named(name);
                if (!mode)
                    throw mpidict::invalid_argument_error("mpidict: consistency '" + name +
                                                          "' is not one of total_order, sequential, none");
                c.consistency = *mode;
            });

    for_each_skiplist_class(
        [&]<class K, class V>(const char* name, const char*) { bind_skiplist_map<K, V>(mod, name); });
    bind_skiplist_snapshots(mod);  // skiplist_snapshot.cpp
}
