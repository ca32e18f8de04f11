#pragma once
// key_pattern: a multi-dimensional range query over ordered keys (seed 004,
// Section 1 and 3.3).  A key of D dimensions (std::array<T, D>, std::tuple or
// std::pair of integers and floats, see ordered_key.hpp) is matched dimension
// by dimension: each dimension is either an exact value or an interval
// [a, b], where either side may be open (unbounded) or exclude its end (the
// half-open windows [t0, t1) of a time dimension: interval_ends, as ranges'
// after_lo / before_hi).
//
// Text form.  Dimensions separated by '.', e.g. `4.[2,8].3.[1,3]`:
//   value          an exact value: an integer (`-12`, `+7`) or, for a float
//                  dimension, a decimal with optional fraction and exponent
//                  (`-74.5`, `1e-3`, `2.5E+4`); `[v]` is the same exact value;
//   [a,b]          a closed interval, a <= b; an empty side or `*` is open:
//                  `[,8]`, `[2,]`, `[*,*]`;
//   [a,b) (a,b] (a,b)   an end written with a parenthesis is excluded:
//                  `[0.5,1.5)` holds 0.5 and not 1.5 (after_lo / before_hi);
//   *              any value.
// An excluded end is kept as the closed end next to it (the key just above a,
// or just below b, in the dimension's order: for a double, the next
// representable value), so a pattern is still a box of closed intervals:
// matching, the wire form and to_string (which prints that closed end) are
// unchanged.  An interval that holds no value is refused as empty.
// Spaces around tokens are allowed.  In a float dimension a '.' directly
// followed by a digit is a decimal point (`40.7` is one value); write the value
// in brackets (`[4].3`) or with a fraction (`4.0.3`) when the next dimension
// starts with a digit.  A syntax error throws pattern_syntax_error, whose
// message quotes the pattern and names the position (0-based character offset)
// and what was expected there.
//
// Everything else works on ENCODED keys (ordered_codec output, compared with
// memcmp / std::string ordering), which is what the skip list nodes store: a
// dimension is a fixed-width field of the encoding, and the pattern keeps each
// dimension's bounds as encoded fields.  An open side is the field's smallest
// (all 0x00) or largest (all 0xff) byte value, so next_candidate may name a
// byte string that decodes to no key (e.g. a NaN pattern); it is a lower bound
// to seek to, never a key that is returned.
//   matches(k)         k is a key of this shape inside the box;
//   lower_bound()      the smallest encoded key that can match;
//   upper_bound()      the largest one;
//   next_candidate(k)  the smallest encoded key > k (byte order) that can
//                      match, or none; a node or a travelling query uses it to
//                      jump over the gaps between matching runs (lexicographic
//                      order keeps only the last dimension's matches
//                      contiguous, Section 3.3).
//   prev_candidate(k)  the largest encoded key < k that can match, or none
//                      (a descending query jumps with it).
// serialize / deserialize: a self-describing wire form (it travels inside
// runtime records); deserialize throws decode_error on anything malformed.

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/ordered_key.hpp"

namespace mpidict {

// A pattern's text does not parse; position() is the 0-based offset of the problem.
class pattern_syntax_error : public invalid_argument_error {
public:
    pattern_syntax_error(std::string message, std::size_t position)
        : invalid_argument_error(std::move(message)), m_position(position) {}
    std::size_t position() const noexcept { return m_position; }

private:
    std::size_t m_position;
};

enum class dimension_kind : std::uint8_t { signed_integer = 1, unsigned_integer = 2, floating = 3 };

// Which ends of a pattern interval are excluded (as range_options' flags of a
// range): after_lo, lo itself is not in it; before_hi, hi is not.  An open
// (unbounded) side ignores its flag.
struct interval_ends {
    bool after_lo = false;
    bool before_hi = false;
};

// The type of one dimension of a key: its kind and its encoded width in bytes.
struct dimension_type {
    dimension_kind kind = dimension_kind::signed_integer;
    std::uint8_t width = 8;
    friend bool operator==(const dimension_type&, const dimension_type&) = default;
};

namespace detail {

template <class T>
constexpr dimension_type dimension_of() {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                  "key_pattern dimensions are integers, float or double");
    if constexpr (std::is_floating_point_v<T>)
        return {dimension_kind::floating, static_cast<std::uint8_t>(sizeof(T))};
    else if constexpr (std::is_signed_v<T>)
        return {dimension_kind::signed_integer, static_cast<std::uint8_t>(sizeof(T))};
    else
        return {dimension_kind::unsigned_integer, static_cast<std::uint8_t>(sizeof(T))};
}

template <class K>
struct key_dimensions {
    static std::vector<dimension_type> get() { return {dimension_of<K>()}; }
};
template <class T, std::size_t D>
struct key_dimensions<std::array<T, D>> {
    static std::vector<dimension_type> get() { return std::vector<dimension_type>(D, dimension_of<T>()); }
};
template <class... T>
struct key_dimensions<std::tuple<T...>> {
    static std::vector<dimension_type> get() { return {dimension_of<T>()...}; }
};
template <class A, class B>
struct key_dimensions<std::pair<A, B>> {
    static std::vector<dimension_type> get() { return {dimension_of<A>(), dimension_of<B>()}; }
};

inline bool valid_dimension(dimension_type type) {
    switch (type.kind) {
    case dimension_kind::signed_integer:
    case dimension_kind::unsigned_integer:
        return type.width == 1 || type.width == 2 || type.width == 4 || type.width == 8;
    case dimension_kind::floating:
        return type.width == 4 || type.width == 8;
    }
    return false;
}

// Adds one to a big-endian field; false if it was all 0xff (no successor).
inline bool increment_field(std::string& field) {
    for (std::size_t index = field.size(); index-- > 0;) {
        auto& byte = reinterpret_cast<unsigned char&>(field[index]);
        if (byte != 0xff) {
            ++byte;
            return true;
        }
        byte = 0;
    }
    return false;
}

// Subtracts one from a big-endian field; false if it was all 0x00 (no predecessor).
inline bool decrement_field(std::string& field) {
    for (std::size_t index = field.size(); index-- > 0;) {
        auto& byte = reinterpret_cast<unsigned char&>(field[index]);
        if (byte != 0) {
            --byte;
            return true;
        }
        byte = 0xff;
    }
    return false;
}

}  // namespace detail

// The dimensions of key type K (a number, std::array, std::tuple or std::pair of numbers).
template <class K>
std::vector<dimension_type> key_dimensions() {
    return detail::key_dimensions<K>::get();
}

class key_pattern {
public:
    // One dimension of the box: inclusive encoded bounds of the dimension's width.
    struct dimension {
        dimension_type type;
        std::string lo;
        std::string hi;
        bool exact() const { return lo == hi; }
        friend bool operator==(const dimension&, const dimension&) = default;
    };

    // Every key of this shape (each dimension open on both sides).
    explicit key_pattern(std::span<const dimension_type> types) {
        if (types.empty())
            throw invalid_argument_error("mpidict: a key pattern needs at least one dimension");
        if (types.size() > max_dimensions)
            throw invalid_argument_error("mpidict: a key pattern has at most " + std::to_string(max_dimensions) +
                                         " dimensions, not " + std::to_string(types.size()));
        for (const dimension_type type : types) {
            if (!detail::valid_dimension(type))
                throw invalid_argument_error("mpidict: a key pattern dimension of kind " +
                                             std::to_string(static_cast<int>(type.kind)) + " and width " +
                                             std::to_string(type.width) + " is not an integer or float type");
            m_dims.push_back({type, std::string(type.width, '\0'), std::string(type.width, '\xff')});
            m_width += type.width;
        }
    }
    template <class K>
    static key_pattern for_key() {
        const auto types = key_dimensions<K>();
        return key_pattern(std::span<const dimension_type>(types));
    }

    // Parses the text form (see the top of this file) for keys of these dimensions.
    static key_pattern parse(std::string_view text, std::span<const dimension_type> types);
    template <class K>
    static key_pattern parse(std::string_view text) {
        const auto types = key_dimensions<K>();
        return parse(text, std::span<const dimension_type>(types));
    }

    // ---- building through the API -------------------------------------------
    // Values are converted to the dimension's type and must be representable
    // there exactly (4 for a double dimension is fine, 2.5 for an int is not).

    template <class T>
    key_pattern& exact(std::size_t index, T value) {
        dimension& dim = at(index);
        std::string field = encode_value(dim.type, value, index);
        dim.lo = field;
        dim.hi = std::move(field);
        return *this;
    }
    // [lo, hi]; std::nullopt is an open side; `ends` excludes lo (after_lo)
    // or hi (before_hi): interval(0, t0, t1, {.before_hi = true}) is [t0, t1).
    template <class T, class U = T>
    key_pattern& interval(std::size_t index, std::optional<T> lo, std::optional<U> hi, interval_ends ends = {}) {
        dimension& dim = at(index);
        std::string low = lo ? encode_value(dim.type, *lo, index) : std::string(dim.type.width, '\0');
        std::string high = hi ? encode_value(dim.type, *hi, index) : std::string(dim.type.width, '\xff');
        if (low > high || (lo && ends.after_lo && !exclude_end(dim.type, low, true)) ||
            (hi && ends.before_hi && !exclude_end(dim.type, high, false)) || low > high)
            throw invalid_argument_error("mpidict: key pattern dimension " + std::to_string(index) +
                                         ": empty interval (no value lies between its ends)");
        dim.lo = std::move(low);
        dim.hi = std::move(high);
        return *this;
    }
    template <class T, class U>
    key_pattern& interval(std::size_t index, T lo, U hi, interval_ends ends = {}) {
        return interval(index, std::optional<T>(lo), std::optional<U>(hi), ends);
    }
    key_pattern& any(std::size_t index) {
        dimension& dim = at(index);
        dim.lo.assign(dim.type.width, '\0');
        dim.hi.assign(dim.type.width, '\xff');
        return *this;
    }

    // ---- inspection ------------------------------------------------------------

    std::size_t size() const { return m_dims.size(); }
    const dimension& operator[](std::size_t index) const { return m_dims[index]; }
    // Bytes of an encoded key of this shape.
    std::size_t key_width() const { return m_width; }
    std::vector<dimension_type> types() const {
        std::vector<dimension_type> out;
        for (const auto& dim : m_dims)
            out.push_back(dim.type);
        return out;
    }
    // The text form; parse(to_string(), types()) gives this pattern back.
    std::string to_string() const;
    friend bool operator==(const key_pattern&, const key_pattern&) = default;

    // ---- queries on encoded keys -------------------------------------------------

    bool matches(std::string_view key) const {
        if (key.size() != m_width)
            return false;
        std::size_t offset = 0;
        for (const auto& dim : m_dims) {
            const std::string_view field = key.substr(offset, dim.type.width);
            if (field < std::string_view(dim.lo) || field > std::string_view(dim.hi))
                return false;
            offset += dim.type.width;
        }
        return true;
    }
    std::string lower_bound() const {
        std::string out;
        out.reserve(m_width);
        for (const auto& dim : m_dims)
            out += dim.lo;
        return out;
    }
    // Always present for these fixed-width keys (optional for symmetry with
    // byte-string ranges, whose upper end may be open).
    std::optional<std::string> upper_bound() const {
        std::string out;
        out.reserve(m_width);
        for (const auto& dim : m_dims)
            out += dim.hi;
        return out;
    }

    // The smallest byte string m > key (std::string ordering) with matches(m).
    std::optional<std::string> next_candidate(std::string_view key) const {
        // Reduce "> key" to ">= target" for a target of exactly key_width() bytes.
        std::string target;
        if (key.size() < m_width) {
            // Every m of key_width() bytes that is >= key padded with zeros is > key
            // (key is then a proper prefix of m, or m is larger at a byte).
            target.assign(key);
            target.resize(m_width, '\0');
        } else {
            // m == key[0, width) would be a prefix of (or equal to) key: not above it.
            target.assign(key.substr(0, m_width));
            if (!detail::increment_field(target))
                return std::nullopt;
        }
        return next_at_or_after(target);
    }
    // The smallest m >= target with matches(m) (target of key_width() bytes).
    std::optional<std::string> next_at_or_after(std::string_view target) const {
        MPIDICT_ASSERT(target.size() == m_width, "next_at_or_after needs a key of the pattern's width");
        return nearest_match(target, true);
    }

    // The largest byte string m < key (std::string ordering) with matches(m).
    std::optional<std::string> prev_candidate(std::string_view key) const {
        // Reduce "< key" to "<= target" for a target of exactly key_width() bytes.
        std::string target(key.substr(0, std::min(key.size(), m_width)));
        if (key.size() <= m_width) {
            // m < key: m of key_width() bytes is below key at one of key's bytes
            // (m == key[0, width) is not below key when key is that long; a
            // longer m that starts with key is above it).
            if (!detail::decrement_field(target))
                return std::nullopt;
            target.resize(m_width, '\xff');
        }
        // A longer key: m <= key[0, width) is below it (a proper prefix or smaller).
        return prev_at_or_before(target);
    }
    // The largest m <= target with matches(m) (target of key_width() bytes).
    std::optional<std::string> prev_at_or_before(std::string_view target) const {
        MPIDICT_ASSERT(target.size() == m_width, "prev_at_or_before needs a key of the pattern's width");
        return nearest_match(target, false);
    }

    // ---- wire form ---------------------------------------------------------------
    // 'K', version 1, D; then per dimension: kind, width, lo, hi.

    void serialize(std::string& out) const {
        out.push_back('K');
        out.push_back('\x01');
        out.push_back(static_cast<char>(m_dims.size()));
        for (const auto& dim : m_dims) {
            out.push_back(static_cast<char>(dim.type.kind));
            out.push_back(static_cast<char>(dim.type.width));
            out += dim.lo;
            out += dim.hi;
        }
    }
    // The number of bytes serialize() appends.
    std::size_t serialized_size() const { return 3 + 2 * m_dims.size() + 2 * m_width; }

    // Reads a pattern from the start of `in` and advances it past the pattern.
    static key_pattern deserialize_prefix(std::string_view& in) {
        auto fail = [](const std::string& what) -> decode_error {
            return decode_error("mpidict: a serialized key pattern is malformed: " + what);
        };
        if (in.size() < 3)
            throw fail("only " + std::to_string(in.size()) + " bytes");
        if (in[0] != 'K' || in[1] != '\x01')
            throw fail("bad magic or version");
        const auto count = static_cast<unsigned char>(in[2]);
        if (count == 0 || count > max_dimensions)
            throw fail(std::to_string(count) + " dimensions");
        std::size_t offset = 3;
        key_pattern pattern;
        for (std::size_t index = 0; index < count; ++index) {
            if (in.size() - offset < 2)
                throw fail("truncated in dimension " + std::to_string(index));
            const dimension_type type{static_cast<dimension_kind>(static_cast<unsigned char>(in[offset])),
                                      static_cast<std::uint8_t>(in[offset + 1])};
            offset += 2;
            if (!detail::valid_dimension(type))
                throw fail("dimension " + std::to_string(index) + " has an invalid type");
            if (in.size() - offset < 2u * type.width)
                throw fail("truncated in dimension " + std::to_string(index));
            dimension dim{type, std::string(in.substr(offset, type.width)),
                          std::string(in.substr(offset + type.width, type.width))};
            offset += 2u * type.width;
            if (dim.lo > dim.hi)
                throw fail("dimension " + std::to_string(index) + " has an empty interval");
            pattern.m_width += type.width;
            pattern.m_dims.push_back(std::move(dim));
        }
        in.remove_prefix(offset);
        return pattern;
    }
    // The whole of `in` is one pattern (trailing bytes are an error).
    static key_pattern deserialize(std::string_view in) {
        key_pattern pattern = deserialize_prefix(in);
        if (!in.empty())
            throw decode_error("mpidict: a serialized key pattern is malformed: " + std::to_string(in.size()) +
                               " trailing bytes");
        return pattern;
    }

    static constexpr std::size_t max_dimensions = 64;

private:
    key_pattern() = default;

    dimension& at(std::size_t index) {
        if (index >= m_dims.size())
            throw invalid_argument_error("mpidict: key pattern dimension " + std::to_string(index) +
                                         " does not exist (the pattern has " + std::to_string(m_dims.size()) + ")");
        return m_dims[index];
    }

    // Encodes `value` as a field of `type`, refusing values the type cannot hold exactly.
    template <class T>
    static std::string encode_value(dimension_type type, T value, std::size_t index) {
        static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "pattern values are numbers");
        auto refuse = [&](const char* why) {
            return invalid_argument_error("mpidict: key pattern dimension " + std::to_string(index) + ": " + why);
        };
        std::string out;
        if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(value))
                throw refuse("NaN is not a key value");
        }
        switch (type.kind) {
        case dimension_kind::floating: {
            const long double wide = static_cast<long double>(value);
            if (type.width == 4) {
                const auto narrow = static_cast<float>(value);
                if (static_cast<long double>(narrow) != wide)
                    throw refuse("the value is not exactly representable as a float");
                ordered_codec<float>::encode(narrow, out);
            } else {
                const auto narrow = static_cast<double>(value);
                if (static_cast<long double>(narrow) != wide)
                    throw refuse("the value is not exactly representable as a double");
                ordered_codec<double>::encode(narrow, out);
            }
            return out;
        }
        case dimension_kind::signed_integer: {
            std::int64_t whole = 0;
            if constexpr (std::is_floating_point_v<T>) {
                if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0) || std::trunc(value) != value)
                    throw refuse("the value is not an integer");
                whole = static_cast<std::int64_t>(value);
            } else if constexpr (std::is_unsigned_v<T>) {
                if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                    throw refuse("the value is out of the dimension's range");
                whole = static_cast<std::int64_t>(value);
            } else {
                whole = value;
            }
            const int bits = 8 * type.width;
            if (bits < 64 && (whole < -(std::int64_t(1) << (bits - 1)) || whole >= (std::int64_t(1) << (bits - 1))))
                throw refuse("the value is out of the dimension's range");
            std::uint64_t raw = static_cast<std::uint64_t>(whole) ^ (std::uint64_t(1) << (bits - 1));
            put_field(raw, type.width, out);
            return out;
        }
        case dimension_kind::unsigned_integer: {
            std::uint64_t whole = 0;
            if constexpr (std::is_floating_point_v<T>) {
                if (!(value >= 0 && value < 18446744073709551616.0) || std::trunc(value) != value)
                    throw refuse(value < 0 ? "the value is out of the dimension's range" : "the value is not an integer");
                whole = static_cast<std::uint64_t>(value);
            } else if constexpr (std::is_signed_v<T>) {
                if (value < 0)
                    throw refuse("the value is out of the dimension's range");
                whole = static_cast<std::uint64_t>(value);
            } else {
                whole = value;
            }
            const int bits = 8 * type.width;
            if (bits < 64 && whole >= (std::uint64_t(1) << bits))
                throw refuse("the value is out of the dimension's range");
            put_field(whole, type.width, out);
            return out;
        }
        }
        throw refuse("unknown dimension kind");
    }

    // The nearest m with matches(m) at or after target (upward) or at or before it
    // (target of key_width() bytes). Upward: keep target's first j dimensions, raise
    // dimension j to the smallest value above target's (at least lo), and take lo for
    // the rest; the longest j that works gives the smallest result. Downward is the
    // mirror image (lower, at most hi, hi for the rest). No allocation but the result.
    std::optional<std::string> nearest_match(std::string_view target, bool upward) const {
        // inside: how many leading dimensions of target lie in their intervals;
        // offset: where dimension `inside` starts.
        std::size_t inside = 0;
        std::size_t offset = 0;
        for (; inside < m_dims.size(); ++inside) {
            const auto& dim = m_dims[inside];
            const std::string_view field = target.substr(offset, dim.type.width);
            if (field < std::string_view(dim.lo) || field > std::string_view(dim.hi))
                break;
            offset += dim.type.width;
        }
        if (inside == m_dims.size())
            return std::string(target);
        for (std::size_t j = inside + 1; j-- > 0;) {
            const auto& dim = m_dims[j];
            if (j < inside)
                offset -= dim.type.width;  // now where dimension j starts
            const auto before_near_end = [&](const std::string& field) {
                return upward ? field < dim.lo : field > dim.hi;
            };
            std::string field(target.substr(offset, dim.type.width));
            if (j == inside && before_near_end(field)) {
                field = upward ? dim.lo : dim.hi;
            } else {
                if (!(upward ? detail::increment_field(field) : detail::decrement_field(field)))
                    continue;
                if (before_near_end(field))
                    field = upward ? dim.lo : dim.hi;
            }
            if (upward ? field > dim.hi : field < dim.lo)
                continue;
            std::string out(target.substr(0, offset));
            out.reserve(m_width);
            out += field;
            for (std::size_t rest = j + 1; rest < m_dims.size(); ++rest)
                out += upward ? m_dims[rest].lo : m_dims[rest].hi;
            return out;
        }
        return std::nullopt;
    }

    // Replaces an excluded end by the closed end next to it: the field just
    // above (upward, for lo) or just below; false if there is none or, for a
    // float, it would be a NaN encoding (no key lies beyond: the interval is empty).
    static bool exclude_end(dimension_type type, std::string& field, bool upward) {
        if (!(upward ? detail::increment_field(field) : detail::decrement_field(field)))
            return false;
        if (type.kind != dimension_kind::floating)
            return true;
        return type.width == 4 ? !std::isnan(ordered_codec<float>::decode(field))
                               : !std::isnan(ordered_codec<double>::decode(field));
    }

    static void put_field(std::uint64_t raw, std::size_t width, std::string& out) {
        for (std::size_t index = 0; index < width; ++index)
            out.push_back(static_cast<char>(raw >> (8 * (width - 1 - index))));
    }

    friend class key_pattern_parser;

    std::vector<dimension> m_dims;
    std::size_t m_width = 0;
};

// ---- text form ----------------------------------------------------------------

class key_pattern_parser {
public:
    key_pattern_parser(std::string_view text, std::span<const dimension_type> types)
        : m_text(text), m_pattern(types) {}

    key_pattern run() {
        const std::size_t count = m_pattern.size();
        for (std::size_t index = 0; index < count; ++index) {
            skip_spaces();
            if (index > 0) {
                if (!take('.'))
                    fail(at_end() ? "expected '.' and dimension " + std::to_string(index) + " (the key has " +
                                        std::to_string(count) + " dimensions, the pattern ends after " +
                                        std::to_string(index) + ")"
                                  : "expected '.' before dimension " + std::to_string(index));
                skip_spaces();
            }
            dimension(index);
        }
        skip_spaces();
        if (!at_end())
            fail(m_text[m_at] == '.' ? "the key has " + std::to_string(count) + " dimensions; expected the end"
                                     : "expected the end of the pattern");
        return std::move(m_pattern);
    }

private:
    void dimension(std::size_t index) {
        const dimension_type type = m_pattern.m_dims[index].type;
        if (at_end())
            fail("expected dimension " + std::to_string(index) + ": a value, '[' or '*'");
        if (take('*'))
            return;  // open on both sides already
        const bool after_lo = !at_end() && m_text[m_at] == '(';
        if (take('[') || take('(')) {
            skip_spaces();
            const std::size_t lo_at = m_at;
            std::optional<std::string> lo = bound(type, index, after_lo ? "a value or ','" : "a value, ',' or ']'");
            skip_spaces();
            if (!after_lo && take(']')) {
                if (!lo)
                    fail_at(lo_at, "expected a value inside '[]'");
                m_pattern.m_dims[index].lo = *lo;
                m_pattern.m_dims[index].hi = *lo;
                return;
            }
            if (!take(','))
                fail(after_lo ? "expected ',' (an interval opened with '(' has two ends)" : "expected ',' or ']'");
            skip_spaces();
            std::optional<std::string> hi = bound(type, index, "a value, ']' or ')'");
            skip_spaces();
            const bool before_hi = !at_end() && m_text[m_at] == ')';
            if (!take(']') && !take(')'))
                fail("expected ']' or ')'");
            auto& dim = m_pattern.m_dims[index];
            dim.lo = lo ? *lo : std::string(type.width, '\0');
            dim.hi = hi ? *hi : std::string(type.width, '\xff');
            if (dim.lo > dim.hi || (lo && after_lo && !key_pattern::exclude_end(type, dim.lo, true)) ||
                (hi && before_hi && !key_pattern::exclude_end(type, dim.hi, false)) || dim.lo > dim.hi)
                fail_at(lo_at, "empty interval in dimension " + std::to_string(index) +
                                   " (no value lies between its ends)");
            return;
        }
        const std::size_t value_at = m_at;
        std::optional<std::string> value =
            bound(type, index, "dimension " + std::to_string(index) + ": a value, '[' or '*'");
        if (!value)
            fail_at(value_at, "expected dimension " + std::to_string(index) + ": a value, '[' or '*'");
        m_pattern.m_dims[index].lo = *value;
        m_pattern.m_dims[index].hi = std::move(*value);
    }

    // A number, '*' or nothing (std::nullopt for the last two: an open side).
    std::optional<std::string> bound(dimension_type type, std::size_t index, const std::string& expected) {
        if (take('*'))
            return std::nullopt;
        const std::size_t start = m_at;
        std::size_t end = start;
        if (end < m_text.size() && (m_text[end] == '+' || m_text[end] == '-'))
            ++end;
        const std::size_t digits_at = end;
        while (end < m_text.size() && is_digit(m_text[end]))
            ++end;
        if (type.kind == dimension_kind::floating) {
            bool mantissa = end > digits_at;
            if (end + 1 < m_text.size() && m_text[end] == '.' && is_digit(m_text[end + 1])) {
                end += 2;
                while (end < m_text.size() && is_digit(m_text[end]))
                    ++end;
                mantissa = true;
            }
            if (mantissa && end < m_text.size() && (m_text[end] == 'e' || m_text[end] == 'E')) {
                std::size_t exponent = end + 1;
                if (exponent < m_text.size() && (m_text[exponent] == '+' || m_text[exponent] == '-'))
                    ++exponent;
                if (exponent < m_text.size() && is_digit(m_text[exponent])) {
                    end = exponent;
                    while (end < m_text.size() && is_digit(m_text[end]))
                        ++end;
                } else {
                    fail_at(exponent, "expected the digits of an exponent");
                }
            }
        }
        if (end == digits_at) {
            if (end != start)
                fail_at(end, "expected digits after the sign");
            if (!at_end() && (m_text[m_at] == ',' || m_text[m_at] == ']' || m_text[m_at] == ')'))
                return std::nullopt;  // an empty side
            fail("expected " + expected);
        }
        std::string_view token = m_text.substr(start, end - start);
        m_at = end;
        if (!at_end() && is_alpha(m_text[m_at]))
            fail("unexpected '" + std::string(1, m_text[m_at]) + "' after the number");
        if (token.front() == '+')
            token.remove_prefix(1);
        try {
            switch (type.kind) {
            case dimension_kind::floating: {
                if (type.width == 4)
                    return key_pattern::encode_value(type, parse_floating<float>(token, start, "a float"), index);
                return key_pattern::encode_value(type, parse_floating<double>(token, start, "a double"), index);
            }
            case dimension_kind::signed_integer: {
                std::int64_t value = 0;
                const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
                if (ec != std::errc() || ptr != token.data() + token.size())
                    fail_at(start, "the integer is out of the range of dimension " + std::to_string(index));
                return key_pattern::encode_value(type, value, index);
            }
            case dimension_kind::unsigned_integer: {
                if (token.front() == '-')
                    fail_at(start, "dimension " + std::to_string(index) + " is unsigned; expected no '-'");
                std::uint64_t value = 0;
                const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
                if (ec != std::errc() || ptr != token.data() + token.size())
                    fail_at(start, "the integer is out of the range of dimension " + std::to_string(index));
                return key_pattern::encode_value(type, value, index);
            }
            }
        } catch (const pattern_syntax_error&) {
            throw;
        } catch (const invalid_argument_error& problem) {
            fail_at(start, std::string(problem.what()).substr(std::string_view("mpidict: ").size()));
        }
        fail_at(start, "unknown dimension kind");
    }

    template <class F>
    F parse_floating(std::string_view token, std::size_t start, const char* name) const {
        F value = 0;
        const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
        if (ec == std::errc::result_out_of_range)
            fail_at(start, std::string("the number is out of the range of ") + name);
        if (ec != std::errc() || ptr != token.data() + token.size())
            fail_at(start, "expected a number");
        return value;
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }
    static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
    bool at_end() const { return m_at >= m_text.size(); }
    bool take(char c) {
        if (!at_end() && m_text[m_at] == c) {
            ++m_at;
            return true;
        }
        return false;
    }
    void skip_spaces() {
        while (!at_end() && (m_text[m_at] == ' ' || m_text[m_at] == '\t'))
            ++m_at;
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(m_at, what); }
    [[noreturn]] void fail_at(std::size_t position, const std::string& what) const {
        std::string shown;
        for (const char c : m_text)
            shown += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) ? '?' : c;
        std::string found = position < m_text.size() ? "'" + std::string(1, shown[position]) + "'" : "the end";
        throw pattern_syntax_error("mpidict: key pattern \"" + shown + "\" at position " + std::to_string(position) +
                                       " (" + found + "): " + what,
                                   position);
    }

    std::string_view m_text;
    key_pattern m_pattern;
    std::size_t m_at = 0;
};

inline key_pattern key_pattern::parse(std::string_view text, std::span<const dimension_type> types) {
    return key_pattern_parser(text, types).run();
}

inline std::string key_pattern::to_string() const {
    auto field_text = [](const dimension& dim, const std::string& field) {
        char buffer[64];
        char* end = buffer;
        switch (dim.type.kind) {
        case dimension_kind::floating:
            if (dim.type.width == 4)
                end = std::to_chars(buffer, buffer + sizeof buffer, ordered_codec<float>::decode(field)).ptr;
            else
                end = std::to_chars(buffer, buffer + sizeof buffer, ordered_codec<double>::decode(field)).ptr;
            break;
        case dimension_kind::signed_integer: {
            std::uint64_t raw = 0;
            for (const char c : field)
                raw = (raw << 8) | static_cast<unsigned char>(c);
            const int bits = 8 * dim.type.width;
            raw ^= std::uint64_t(1) << (bits - 1);
            std::int64_t value = static_cast<std::int64_t>(raw);
            if (bits < 64 && (raw >> (bits - 1)) & 1)
                value = static_cast<std::int64_t>(raw | (~std::uint64_t(0) << bits));
            end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
            break;
        }
        case dimension_kind::unsigned_integer: {
            std::uint64_t raw = 0;
            for (const char c : field)
                raw = (raw << 8) | static_cast<unsigned char>(c);
            end = std::to_chars(buffer, buffer + sizeof buffer, raw).ptr;
            break;
        }
        }
        return std::string(buffer, end);
    };
    std::string out;
    for (std::size_t index = 0; index < m_dims.size(); ++index) {
        const auto& dim = m_dims[index];
        if (index > 0)
            out += '.';
        const bool open_lo = dim.lo == std::string(dim.type.width, '\0');
        const bool open_hi = dim.hi == std::string(dim.type.width, '\xff');
        // A float bound at an extreme byte value is a NaN encoding: only an open side has it.
        if (open_lo && open_hi) {
            out += '*';
        } else if (dim.exact()) {
            out += '[' + field_text(dim, dim.lo) + ']';
        } else {
            out += '[' + (open_lo ? std::string() : field_text(dim, dim.lo)) + ',' +
                   (open_hi ? std::string() : field_text(dim, dim.hi)) + ']';
        }
    }
    return out;
}

}  // namespace mpidict
