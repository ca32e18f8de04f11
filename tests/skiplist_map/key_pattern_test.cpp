// key_pattern: the text parser (good patterns, and bad ones each named by
// position and problem), building through the API, to_string round trips,
// matches / lower_bound / upper_bound / next_candidate / prev_candidate against brute-force
// enumeration over small domains for D = 1..4, a skip scan over stored keys,
// and the wire form (round trip; truncation and garbage throw decode_error).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/key_pattern.hpp"
#include "mpidict/ordered_key.hpp"

namespace {

using mpidict::encode_ordered_key;
using mpidict::key_pattern;
using mpidict::pattern_syntax_error;

using key4 = std::array<std::int32_t, 4>;

TEST(key_pattern_parse, seed_example) {
    const auto pattern = key_pattern::parse<key4>("4.[2,8].3.[1,3]");
    ASSERT_EQ(pattern.size(), 4u);
    EXPECT_TRUE(pattern[0].exact());
    EXPECT_FALSE(pattern[1].exact());
    for (int a = 0; a < 10; ++a)
        for (int b = 0; b < 10; ++b)
            for (int c = 0; c < 10; ++c)
                for (int d = -1; d < 5; ++d) {
                    const bool expected = a == 4 && b >= 2 && b <= 8 && c == 3 && d >= 1 && d <= 3;
                    ASSERT_EQ(pattern.matches(encode_ordered_key(key4{a, b, c, d})), expected) << a << b << c << d;
                }
    EXPECT_EQ(pattern.lower_bound(), encode_ordered_key(key4{4, 2, 3, 1}));
    EXPECT_EQ(pattern.upper_bound(), encode_ordered_key(key4{4, 8, 3, 3}));
    EXPECT_FALSE(pattern.matches(encode_ordered_key(key4{4, 2, 3, 1}).substr(1)));  // wrong width
    EXPECT_EQ(pattern.to_string(), "[4].[2,8].[3].[1,3]");
}

TEST(key_pattern_parse, spellings) {
    using key2 = std::array<std::int64_t, 2>;
    EXPECT_EQ(key_pattern::parse<key2>(" 4 . [ 2 , 8 ] "), key_pattern::for_key<key2>().exact(0, 4).interval(1, 2, 8));
    EXPECT_EQ(key_pattern::parse<key2>("[4].*"), key_pattern::for_key<key2>().exact(0, 4));
    EXPECT_EQ(key_pattern::parse<key2>("*.[*,*]"), key_pattern::for_key<key2>());
    EXPECT_EQ(key_pattern::parse<key2>("[,8].[-3,]"),
              key_pattern::for_key<key2>()
                  .interval(0, std::optional<int>(), std::optional<int>(8))
                  .interval(1, std::optional<int>(-3), std::optional<int>()));
    EXPECT_EQ(key_pattern::parse<key2>("+7.-9223372036854775808"),
              key_pattern::for_key<key2>().exact(0, 7).exact(1, std::numeric_limits<std::int64_t>::min()));
    using small = std::tuple<std::int8_t, std::uint8_t, std::uint64_t>;
    EXPECT_EQ(key_pattern::parse<small>("[-128,127].255.18446744073709551615"),
              key_pattern::for_key<small>().interval(0, -128, 127).exact(1, 255).exact(2,
                                                                                          ~std::uint64_t(0)));
}

TEST(key_pattern_parse, doubles) {
    using point = std::tuple<double, double>;
    const auto box = key_pattern::parse<point>("[-74.5,-70.1].40.7");
    EXPECT_TRUE(box.matches(encode_ordered_key(point{-72.0, 40.7})));
    EXPECT_TRUE(box.matches(encode_ordered_key(point{-74.5, 40.7})));
    EXPECT_FALSE(box.matches(encode_ordered_key(point{-74.6, 40.7})));
    EXPECT_FALSE(box.matches(encode_ordered_key(point{-72.0, 40.70000001})));
    EXPECT_EQ(key_pattern::parse<point>("1e-3.[2.5E+4,3e5]"),
              key_pattern::for_key<point>().exact(0, 1e-3).interval(1, 2.5e4, 3e5));
    // A '.' followed by a non-digit separates; -0 is 0.
    EXPECT_EQ(key_pattern::parse<point>("4.[-0,0]"), key_pattern::for_key<point>().exact(0, 4.0).exact(1, 0.0));
    EXPECT_EQ(key_pattern::parse<point>("4.0.3"), key_pattern::for_key<point>().exact(0, 4.0).exact(1, 3.0));
    EXPECT_EQ(key_pattern::parse<point>("[4].3"), key_pattern::for_key<point>().exact(0, 4.0).exact(1, 3.0));
    EXPECT_EQ(key_pattern::parse<point>("4.3.*"), key_pattern::for_key<point>().exact(0, 4.3));
}

TEST(key_pattern_parse, floats_and_denormals) {
    using point = std::array<float, 2>;
    const auto pattern = key_pattern::parse<point>("0.1.[1e-45,3.4028235e38]");
    EXPECT_TRUE(pattern.matches(encode_ordered_key(point{0.1f, std::numeric_limits<float>::denorm_min()})));
    EXPECT_TRUE(pattern.matches(encode_ordered_key(point{0.1f, std::numeric_limits<float>::max()})));
    EXPECT_FALSE(pattern.matches(encode_ordered_key(point{0.1f, 0.0f})));
    EXPECT_FALSE(pattern.matches(encode_ordered_key(point{0.1f, std::numeric_limits<float>::infinity()})));
    using one = std::array<double, 1>;
    EXPECT_TRUE(key_pattern::parse<one>("[4.9e-324,1e-320]").matches(encode_ordered_key(one{5e-321})));
}

struct bad_case {
    std::string text;
    std::size_t position;
    std::string problem;  // a part of the message
};

void expect_bad(const std::string& text, std::size_t position, const std::string& problem,
                const std::vector<mpidict::dimension_type>& types) {
    try {
        (void)key_pattern::parse(text, types);
        ADD_FAILURE() << "parsed: \"" << text << "\"";
    } catch (const pattern_syntax_error& error) {
        const std::string message = error.what();
        EXPECT_EQ(error.position(), position) << text << ": " << message;
        EXPECT_NE(message.find(problem), std::string::npos) << text << ": " << message;
        EXPECT_NE(message.find("position " + std::to_string(position)), std::string::npos) << message;
    }
}

TEST(key_pattern_parse, bad_integer_patterns_are_named) {
    const auto types = mpidict::key_dimensions<key4>();
    const std::vector<bad_case> cases{
        {"", 0, "expected dimension 0"},
        {"4.[2,8].3", 9, "expected '.' and dimension 3 (the key has 4 dimensions, the pattern ends after 3)"},
        {"4.[2,8", 6, "expected ']'"},
        {"4.[2 8].3.1", 5, "expected ',' or ']'"},
        {"4.[8,2].3.1", 3, "empty interval in dimension 1"},
        {"4.x.3.1", 2, "expected dimension 1: a value, '[' or '*'"},
        {"4.[2,8].3.[1,3].5", 15, "the key has 4 dimensions; expected the end"},
        {"4.[2,8].3.[1,3]x", 15, "expected the end of the pattern"},
        {"4..3.1", 2, "expected dimension 1"},
        {"-.1.2.3", 1, "expected digits after the sign"},
        {"4;3.1.2", 1, "expected '.' before dimension 1"},
        {"4.[].3.1", 3, "expected a value inside '[]'"},
        {"4.[2,x].3.1", 5, "expected a value, ']' or ')'"},
        {"4.(3].3.1", 4, "expected ',' (an interval opened with '(' has two ends)"},
        {"4.[2,8}.3.1", 6, "expected ']' or ')'"},
        {"4.[5,5).3.1", 3, "empty interval in dimension 1"},
        {"4.(5,5].3.1", 3, "empty interval in dimension 1"},
        {"4.(5,6).3.1", 3, "empty interval in dimension 1"},
        {"2e3.1.2.3", 1, "unexpected 'e' after the number"},
        {"4.2147483648.1.1", 2, "out of the dimension's range"},
        {"4.1.1.99999999999999999999", 6, "out of the range of dimension 3"},
        {"4.[1,2,3].1.1", 6, "expected ']'"},
        {std::string("4.\0.1.1", 7), 2, "('?')"},
    };
    for (const auto& bad : cases)
        expect_bad(bad.text, bad.position, bad.problem, types);
}

TEST(key_pattern_parse, bad_typed_patterns_are_named) {
    const auto small = mpidict::key_dimensions<std::tuple<std::int8_t, std::uint16_t>>();
    expect_bad("128.1", 0, "out of the dimension's range", small);
    expect_bad("-129.1", 0, "out of the dimension's range", small);
    expect_bad("1.65536", 2, "out of the dimension's range", small);
    expect_bad("1.-1", 2, "dimension 1 is unsigned", small);
    expect_bad("1.5.2", 3, "the key has 2 dimensions", small);
    const auto reals = mpidict::key_dimensions<std::tuple<double, float>>();
    expect_bad("1e.2", 2, "expected the digits of an exponent", reals);
    expect_bad("1e+.2", 3, "expected the digits of an exponent", reals);
    expect_bad("1e999.2", 0, "out of the range of a double", reals);
    expect_bad("1.0.1e39", 4, "out of the range of a float", reals);
    expect_bad("nan.1", 0, "expected dimension 0", reals);
    expect_bad("-inf.1", 1, "expected digits after the sign", reals);
    expect_bad("[3.5,-3.5].1", 1, "empty interval in dimension 0", reals);
    expect_bad("[1.5,1.5).1", 1, "empty interval in dimension 0", reals);
    expect_bad("(-128,-127).1", 1, "empty interval in dimension 0", small);
    expect_bad("[,-128).1", 1, "empty interval in dimension 0", small);
    expect_bad("(127,].1", 1, "empty interval in dimension 0", small);
    expect_bad("1.5", 3, "expected '.' and dimension 1", reals);
}

// Half-open intervals (issue 49, item 7): an excluded end is the closed end
// next to it, in the text form and through the API alike.
TEST(key_pattern_half_open, text_and_api_agree_with_closed_neighbours) {
    using key = std::tuple<std::int32_t, double, std::uint8_t>;
    const auto types = mpidict::key_dimensions<key>();
    const auto half = key_pattern::parse<key>("[2,8).[0.5,1.5).(3,7]");
    EXPECT_EQ(half, key_pattern::parse<key>("[2,7].[0.5,1.4999999999999998].[4,7]"));
    auto built = key_pattern::for_key<key>();
    built.interval(0, 2, 8, {.before_hi = true})
        .interval(1, 0.5, 1.5, {.before_hi = true})
        .interval(2, 3, 7, {.after_lo = true});
    EXPECT_EQ(built, half);
    EXPECT_EQ(key_pattern::parse<key>("(2,8).(-1,0).(,9)"), key_pattern::parse<key>("[3,7].(-1,0).[,8]"));
    // Open sides ignore the flags.
    EXPECT_EQ(key_pattern::parse<key>("(,8).(*,*).[,)"), key_pattern::parse<key>("[,7].*.[,]"));
    EXPECT_EQ(key_pattern::for_key<key>().interval(0, std::optional<int>(), std::optional<int>(8),
                                                   {.after_lo = true, .before_hi = true}),
              key_pattern::parse<key>("[,7].*.*"));
    auto encode = [](const key& k) { return encode_ordered_key(k); };
    EXPECT_TRUE(half.matches(encode(key{2, 0.5, 4})));
    EXPECT_FALSE(half.matches(encode(key{8, 0.5, 4})));
    EXPECT_TRUE(half.matches(encode(key{7, 1.4999999999999998, 7})));
    EXPECT_FALSE(half.matches(encode(key{7, 1.5, 7})));
    EXPECT_FALSE(half.matches(encode(key{7, 1.0, 3})));
    // Zero and the infinities: (-1, 0) holds neither zero; [0, inf) holds DBL_MAX, not inf.
    const auto around_zero = key_pattern::parse<key>("*.(-1,0).*");
    EXPECT_FALSE(around_zero.matches(encode(key{0, 0.0, 0})));
    EXPECT_FALSE(around_zero.matches(encode(key{0, -0.0, 0})));
    EXPECT_TRUE(around_zero.matches(encode(key{0, -4.9e-324, 0})));
    auto up_to_infinity = key_pattern::for_key<key>();
    up_to_infinity.interval(1, 0.0, std::numeric_limits<double>::infinity(), {.before_hi = true});
    EXPECT_TRUE(up_to_infinity.matches(encode(key{0, std::numeric_limits<double>::max(), 0})));
    EXPECT_FALSE(up_to_infinity.matches(encode(key{0, std::numeric_limits<double>::infinity(), 0})));
    EXPECT_THROW(key_pattern::for_key<key>().interval(1, std::optional<double>(std::numeric_limits<double>::infinity()),
                                                      std::optional<double>(), {.after_lo = true}),
                 mpidict::invalid_argument_error);
    EXPECT_THROW(key_pattern::for_key<key>().interval(0, 5, 5, {.before_hi = true}), mpidict::invalid_argument_error);
    EXPECT_THROW(key_pattern::for_key<key>().interval(2, 254, 255, {.after_lo = true, .before_hi = true}),
                 mpidict::invalid_argument_error);
    // to_string prints the closed ends, and parses back to the same box.
    EXPECT_EQ(key_pattern::parse(half.to_string(), types), half);
    EXPECT_EQ(half.to_string(), "[2,7].[0.5,1.4999999999999998].[4,7]");
}

TEST(key_pattern_api, conversions_and_errors) {
    using key = std::tuple<std::int8_t, double, std::uint32_t, float>;
    auto pattern = key_pattern::for_key<key>();
    EXPECT_NO_THROW(pattern.exact(0, 4.0).exact(1, 3).exact(2, 7u).exact(3, 0.5));
    EXPECT_THROW(pattern.exact(0, 2.5), mpidict::invalid_argument_error);
    EXPECT_THROW(pattern.exact(0, 300), mpidict::invalid_argument_error);
    EXPECT_THROW(pattern.exact(2, -1), mpidict::invalid_argument_error);
    EXPECT_THROW(pattern.exact(3, 0.1), mpidict::invalid_argument_error);  // not a float exactly
    EXPECT_THROW(pattern.exact(1, std::numeric_limits<double>::quiet_NaN()), mpidict::invalid_argument_error);
    EXPECT_THROW(pattern.exact(4, 1), mpidict::invalid_argument_error);
    EXPECT_THROW(pattern.interval(1, 2.0, 1.0), mpidict::invalid_argument_error);
    EXPECT_EQ(pattern, key_pattern::parse<key>("4.[3].7.0.5")) << "a failed call changes nothing";
    EXPECT_THROW((key_pattern(std::vector<mpidict::dimension_type>{})), mpidict::invalid_argument_error);
    EXPECT_THROW(
        (key_pattern(std::vector<mpidict::dimension_type>{{mpidict::dimension_kind::floating, 2}})),
        mpidict::invalid_argument_error);
}

// A random pattern over dimensions `types` whose bounded values lie in [0, 7].
key_pattern random_small_pattern(std::mt19937_64& random, const std::vector<mpidict::dimension_type>& types) {
    key_pattern pattern(types);
    for (std::size_t index = 0; index < types.size(); ++index) {
        const int a = static_cast<int>(random() % 8);
        const int b = static_cast<int>(random() % 8);
        switch (random() % 5) {
        case 0:
            pattern.exact(index, a);
            break;
        case 1:
            pattern.any(index);
            break;
        case 2:
            pattern.interval(index, std::optional<int>(), std::optional<int>(std::max(a, b)));
            break;
        case 3:
            pattern.interval(index, std::optional<int>(std::min(a, b)), std::optional<int>());
            break;
        default:
            pattern.interval(index, std::min(a, b), std::max(a, b));
        }
    }
    return pattern;
}

// Every byte string of `dims` bytes whose bytes lie in [0, top].
std::vector<std::string> enumerate_keys(std::size_t dims, int top) {
    std::vector<std::string> keys{std::string()};
    for (std::size_t level = 0; level < dims; ++level) {
        std::vector<std::string> longer;
        for (const auto& key : keys)
            for (int byte = 0; byte <= top; ++byte)
                longer.push_back(key + static_cast<char>(byte));
        keys = std::move(longer);
    }
    return keys;
}

template <std::size_t D>
void check_next_candidate_brute_force(std::uint64_t seed, int patterns) {
    using key = std::array<std::uint8_t, D>;
    const auto types = mpidict::key_dimensions<key>();
    std::mt19937_64 random(seed);
    // Domain: every key with fields in [0, 9]; queries: every key with fields in
    // [0, 8].  With bounds in [0, 7] (or open), the smallest match above such a
    // query keeps query fields, raises one to at most query + 1 <= 9 or to a
    // bound, and puts lower bounds after it: it lies in the domain, so the
    // domain's smallest match above the query is the exact answer.
    const std::vector<std::string> domain = enumerate_keys(D, 9);
    const std::vector<std::string> queries = enumerate_keys(D, 8);
    for (int round = 0; round < patterns; ++round) {
        const key_pattern pattern = random_small_pattern(random, types);
        std::vector<std::string> matching;
        for (const auto& candidate : domain) {
            bool inside = true;  // the definition, from the pattern's parts
            for (std::size_t index = 0; index < D; ++index)
                inside = inside && candidate.substr(index, 1) >= pattern[index].lo &&
                         candidate.substr(index, 1) <= pattern[index].hi;
            ASSERT_EQ(pattern.matches(candidate), inside);
            if (inside)
                matching.push_back(candidate);
        }
        std::sort(matching.begin(), matching.end());
        if (!matching.empty()) {
            ASSERT_EQ(pattern.lower_bound(), matching.front()) << pattern.to_string();
        }
        for (const auto& query : queries) {
            const auto expected = std::upper_bound(matching.begin(), matching.end(), query);
            const auto got = pattern.next_candidate(query);
            if (expected == matching.end()) {
                ASSERT_FALSE(got) << pattern.to_string();
            } else {
                ASSERT_TRUE(got) << pattern.to_string();
                ASSERT_EQ(*got, *expected) << pattern.to_string();
            }
        }
        // Arbitrary byte strings, shorter and longer than a key: the answer is a
        // match above the query and no domain match lies between them.
        for (int probe = 0; probe < 300; ++probe) {
            std::string query(random() % (D + 2), '\0');
            for (char& c : query)
                c = static_cast<char>(random() % 3 == 0 ? random() : random() % 10);
            const auto got = pattern.next_candidate(query);
            const auto first_above = std::upper_bound(matching.begin(), matching.end(), query);
            if (!got) {
                ASSERT_EQ(first_above, matching.end()) << pattern.to_string();
                continue;
            }
            ASSERT_TRUE(pattern.matches(*got));
            ASSERT_GT(*got, query);
            if (first_above != matching.end()) {
                ASSERT_LE(*got, *first_above);
            }
        }
    }
}

TEST(key_pattern_next_candidate, brute_force_d1) { check_next_candidate_brute_force<1>(1, 200); }
TEST(key_pattern_next_candidate, brute_force_d2) { check_next_candidate_brute_force<2>(2, 200); }
TEST(key_pattern_next_candidate, brute_force_d3) { check_next_candidate_brute_force<3>(3, 40); }
TEST(key_pattern_next_candidate, brute_force_d4) { check_next_candidate_brute_force<4>(4, 6); }

TEST(key_pattern_next_candidate, edges) {
    using key = std::array<std::uint8_t, 2>;
    const auto all = key_pattern::for_key<key>();
    EXPECT_EQ(all.next_candidate(""), std::string(2, '\0'));
    EXPECT_EQ(all.next_candidate(std::string(1, '\0')), std::string(2, '\0'));
    EXPECT_EQ(all.next_candidate(std::string(2, '\0')), std::string("\0\1", 2));
    EXPECT_EQ(all.next_candidate(std::string(2, '\xff')), std::nullopt);
    EXPECT_EQ(all.next_candidate(std::string("\xff\xff\x00", 3)), std::nullopt);
    EXPECT_EQ(all.next_candidate(std::string("\x01\xff\x00", 3)), std::string("\x02\x00", 2));
    const auto last = key_pattern::for_key<key>().exact(0, 255).exact(1, 255);
    EXPECT_EQ(last.next_candidate(""), std::string(2, '\xff'));
    EXPECT_EQ(last.next_candidate(std::string(2, '\xff')), std::nullopt);
}

// The skip-scan tests' stored keys (5,000 random ones, seeded) and the patterns they scan with.
using scan_key = std::tuple<std::int16_t, double, std::int32_t>;
std::set<std::string> scan_keys(std::uint64_t seed) {
    std::mt19937_64 random(seed);
    std::set<std::string> stored;
    for (int index = 0; index < 5000; ++index)
        stored.insert(encode_ordered_key(scan_key{static_cast<std::int16_t>(random() % 11) - 5,
                                                  static_cast<double>(static_cast<int>(random() % 21) - 10) / 4,
                                                  static_cast<std::int32_t>(random() % 15) - 7}));
    return stored;
}
constexpr const char* scan_patterns[] = {"[-2,3].[-1.5,0.25].[0,2]", "0.*.-7", "[,-4].[2.5,].*", "*.*.[3]",
                                         "5.2.5.6", "[-5,5].[-2.5,2.5].[-7,7]", "1.[0.1,0.2].*"};

// The use a node makes of it: walk stored keys, jumping to the next candidate
// whenever a key does not match; the result is exactly the filtered keys.
TEST(key_pattern_next_candidate, skip_scan_over_stored_keys) {
    const std::set<std::string> stored = scan_keys(77);
    for (const char* text : scan_patterns) {
        const auto pattern = key_pattern::parse<scan_key>(text);
        std::vector<std::string> expected;
        for (const auto& k : stored)
            if (pattern.matches(k))
                expected.push_back(k);
        std::vector<std::string> found;
        std::size_t probes = 0;
        auto at = stored.lower_bound(pattern.lower_bound());
        while (at != stored.end()) {
            ++probes;
            if (pattern.matches(*at)) {
                found.push_back(*at);
                ++at;
                continue;
            }
            const auto next = pattern.next_candidate(*at);
            if (!next)
                break;
            at = stored.lower_bound(*next);
        }
        EXPECT_EQ(found, expected) << text;
        // At most one jump per match and per (dimension 0, dimension 1) prefix.
        EXPECT_LE(probes, 2 * (expected.size() + 11 * 21) + 2) << text << ": the scan skips the gaps";
    }
}

// prev_candidate (descending queries, issue 49) against brute force: the
// largest match below a query keeps query fields, lowers one to query - 1 or
// to an upper bound (at most 7, or 255 when open) and puts upper bounds after
// it, so over the domain of fields in [0, 9] and 255 and queries with fields
// in [0, 9] the domain's largest match below the query is the exact answer.
template <std::size_t D>
void check_prev_candidate_brute_force(std::uint64_t seed, int patterns) {
    using key = std::array<std::uint8_t, D>;
    const auto types = mpidict::key_dimensions<key>();
    std::mt19937_64 random(seed);
    std::vector<std::string> domain;
    for (auto candidate : enumerate_keys(D, 10)) {
        for (char& c : candidate)
            if (c == 10)
                c = static_cast<char>(255);
        domain.push_back(candidate);
    }
    const std::vector<std::string> queries = enumerate_keys(D, 9);
    for (int round = 0; round < patterns; ++round) {
        const key_pattern pattern = random_small_pattern(random, types);
        std::vector<std::string> matching;
        for (const auto& candidate : domain)
            if (pattern.matches(candidate))
                matching.push_back(candidate);
        std::sort(matching.begin(), matching.end());
        for (const auto& query : queries) {
            const auto below = std::lower_bound(matching.begin(), matching.end(), query);
            const auto got = pattern.prev_candidate(query);
            if (below == matching.begin()) {
                ASSERT_FALSE(got) << pattern.to_string();
            } else {
                ASSERT_TRUE(got) << pattern.to_string();
                ASSERT_EQ(*got, *std::prev(below)) << pattern.to_string();
            }
        }
        // Arbitrary byte strings, shorter and longer than a key: the answer is a
        // match below the query and no domain match lies between them.
        for (int probe = 0; probe < 300; ++probe) {
            std::string query(random() % (D + 2), '\0');
            for (char& c : query)
                c = static_cast<char>(random() % 3 == 0 ? random() : random() % 10);
            const auto got = pattern.prev_candidate(query);
            const auto below = std::lower_bound(matching.begin(), matching.end(), query);
            if (!got) {
                ASSERT_EQ(below, matching.begin()) << pattern.to_string();
                continue;
            }
            ASSERT_TRUE(pattern.matches(*got));
            ASSERT_LT(*got, query);
            if (below != matching.begin()) {
                ASSERT_GE(*got, *std::prev(below));
            }
        }
    }
}

TEST(key_pattern_prev_candidate, brute_force_d1) { check_prev_candidate_brute_force<1>(11, 200); }
TEST(key_pattern_prev_candidate, brute_force_d2) { check_prev_candidate_brute_force<2>(12, 200); }
TEST(key_pattern_prev_candidate, brute_force_d3) { check_prev_candidate_brute_force<3>(13, 40); }
TEST(key_pattern_prev_candidate, brute_force_d4) { check_prev_candidate_brute_force<4>(14, 6); }

TEST(key_pattern_prev_candidate, edges) {
    using key = std::array<std::uint8_t, 2>;
    const auto all = key_pattern::for_key<key>();
    EXPECT_EQ(all.prev_candidate(""), std::nullopt);
    EXPECT_EQ(all.prev_candidate(std::string(1, '\0')), std::nullopt);
    EXPECT_EQ(all.prev_candidate(std::string(2, '\0')), std::nullopt);
    EXPECT_EQ(all.prev_candidate(std::string("\0\0\0", 3)), std::string(2, '\0'));
    EXPECT_EQ(all.prev_candidate(std::string(1, '\x01')), std::string("\x00\xff", 2));
    EXPECT_EQ(all.prev_candidate(std::string("\x02\x00", 2)), std::string("\x01\xff", 2));
    EXPECT_EQ(all.prev_candidate(std::string(3, '\xff')), std::string(2, '\xff'));
    const auto first = key_pattern::for_key<key>().exact(0, 0).exact(1, 0);
    EXPECT_EQ(first.prev_candidate(std::string(2, '\xff')), std::string(2, '\0'));
    EXPECT_EQ(first.prev_candidate(std::string(2, '\0')), std::nullopt);
}

// The use a descending query makes of it: walk stored keys from the top,
// jumping to the previous candidate whenever a key does not match.
TEST(key_pattern_prev_candidate, skip_scan_down_over_stored_keys) {
    const std::set<std::string> stored = scan_keys(78);
    for (const char* text : scan_patterns) {
        const auto pattern = key_pattern::parse<scan_key>(text);
        std::vector<std::string> expected;
        for (auto k = stored.rbegin(); k != stored.rend(); ++k)
            if (pattern.matches(*k))
                expected.push_back(*k);
        std::vector<std::string> found;
        std::size_t probes = 0;
        // The largest stored key <= the pattern's upper bound, then down.
        auto above = stored.upper_bound(*pattern.upper_bound());
        while (above != stored.begin()) {
            const auto at = std::prev(above);
            ++probes;
            if (pattern.matches(*at)) {
                found.push_back(*at);
                above = at;
                continue;
            }
            const auto previous = pattern.prev_candidate(*at);
            if (!previous)
                break;
            above = stored.upper_bound(*previous);
        }
        EXPECT_EQ(found, expected) << text;
        EXPECT_LE(probes, 2 * (expected.size() + 11 * 21) + 2) << text << ": the scan skips the gaps";
    }
}

TEST(key_pattern_text, to_string_round_trips) {
    std::mt19937_64 random(31);
    using key = std::tuple<std::int8_t, std::uint16_t, std::int64_t, double, float>;
    const auto types = mpidict::key_dimensions<key>();
    for (int round = 0; round < 500; ++round) {
        key_pattern pattern(types);
        for (std::size_t index = 0; index < types.size(); ++index) {
            const double scale = index >= 3 ? 0.125 : 1;
            const double a = static_cast<double>(static_cast<int>(random() % 200) - (index == 1 ? 0 : 100)) * scale;
            double b = a + static_cast<double>(random() % 50) * scale;
            if (index == 0)
                b = std::min(b, 127.0);  // int8
            switch (random() % 4) {
            case 0:
                pattern.exact(index, a);
                break;
            case 1:
                pattern.interval(index, std::optional<double>(), std::optional<double>(b));
                break;
            case 2:
                pattern.interval(index, a, b);
                break;
            default:
                break;
            }
        }
        if (round % 50 == 0)
            pattern.exact(2, std::numeric_limits<std::int64_t>::min()).exact(3, -5e-324);
        const std::string text = pattern.to_string();
        EXPECT_EQ(key_pattern::parse(text, types), pattern) << text;
    }
}


TEST(key_pattern_wire, round_trip_truncation_and_garbage) {
    using key = std::tuple<std::int8_t, double, std::uint32_t, float>;
    const auto pattern = key_pattern::parse<key>("[-3,5].[-1.5e3,].7.*");
    std::string wire;
    pattern.serialize(wire);
    ASSERT_EQ(wire.size(), pattern.serialized_size());
    EXPECT_EQ(key_pattern::deserialize(wire), pattern);
    std::string_view rest = wire + "tail";
    std::string with_tail = wire + "tail";
    rest = with_tail;
    EXPECT_EQ(key_pattern::deserialize_prefix(rest), pattern);
    EXPECT_EQ(rest, "tail");
    EXPECT_THROW(key_pattern::deserialize(with_tail), mpidict::decode_error);
    for (std::size_t cut = 0; cut < wire.size(); ++cut)
        EXPECT_THROW(key_pattern::deserialize(wire.substr(0, cut)), mpidict::decode_error) << cut;

    auto corrupt = [&](std::size_t at, char byte) {
        std::string bad = wire;
        bad[at] = byte;
        return bad;
    };
    EXPECT_THROW(key_pattern::deserialize(corrupt(0, 'X')), mpidict::decode_error);     // magic
    EXPECT_THROW(key_pattern::deserialize(corrupt(1, '\x02')), mpidict::decode_error);  // version
    EXPECT_THROW(key_pattern::deserialize(corrupt(2, '\0')), mpidict::decode_error);    // no dimensions
    EXPECT_THROW(key_pattern::deserialize(corrupt(2, '\x41')), mpidict::decode_error);  // 65 dimensions
    EXPECT_THROW(key_pattern::deserialize(corrupt(3, '\x07')), mpidict::decode_error);  // kind
    EXPECT_THROW(key_pattern::deserialize(corrupt(4, '\x03')), mpidict::decode_error);  // width
    EXPECT_THROW(key_pattern::deserialize(corrupt(5, '\x90')), mpidict::decode_error);  // lo above hi

    // Random bytes and random mutations: a decode_error or a well-formed pattern
    // that serializes back to the same bytes; never anything else.
    std::mt19937_64 random(99);
    int accepted = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string input;
        if (round % 2 == 0) {
            input = wire;
            for (int flips = 1 + static_cast<int>(random() % 3); flips > 0; --flips)
                input[random() % input.size()] = static_cast<char>(random());
        } else {
            input.assign(random() % 40, '\0');
            for (char& c : input)
                c = static_cast<char>(random() % 4 == 0 ? random() % 5 : random());
            if (input.size() >= 2) {
                input[0] = 'K';
                input[1] = '\x01';
            }
        }
        try {
            const auto decoded = key_pattern::deserialize(input);
            std::string again;
            decoded.serialize(again);
            ASSERT_EQ(again, input);
            ++accepted;
        } catch (const mpidict::decode_error&) {
        }
    }
    EXPECT_GT(accepted, 0);
}

}  // namespace
