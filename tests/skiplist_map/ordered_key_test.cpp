// ordered_codec: the encoding of every supported key type compares (std::string
// ordering, i.e. memcmp then length) exactly as the keys compare natively, over
// edge values and random pairs; decode(encode(k)) == k; NaN is refused; a wrong
// encoded size throws decode_error; prefix_successor bounds every extension.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/ordered_key.hpp"

namespace {

using mpidict::encode_ordered_key;
using mpidict::ordered_codec;

int sign_of(int value) { return (value > 0) - (value < 0); }

template <class K>
int native_compare(const K& a, const K& b) {
    return a < b ? -1 : (b < a ? 1 : 0);
}

// Checks every pair of `values`: encoding order == native order, round trip.
template <class K>
void check_all_pairs(const std::vector<K>& values) {
    std::vector<std::string> encoded;
    encoded.reserve(values.size());
    for (const K& value : values) {
        encoded.push_back(encode_ordered_key(value));
        if constexpr (ordered_codec<K>::fixed_width > 0) {
            ASSERT_EQ(encoded.back().size(), ordered_codec<K>::fixed_width);
        }
        const K back = ordered_codec<K>::decode(encoded.back());
        ASSERT_TRUE(native_compare(back, value) == 0) << "round trip of value " << encoded.size() - 1;
    }
    for (std::size_t i = 0; i < values.size(); ++i)
        for (std::size_t j = 0; j < values.size(); ++j)
            ASSERT_EQ(sign_of(encoded[i].compare(encoded[j])), native_compare(values[i], values[j]))
                << "values " << i << " and " << j;
}

template <class K>
std::vector<K> integer_values(std::mt19937_64& random, std::size_t count) {
    using limits = std::numeric_limits<K>;
    std::vector<K> values{limits::min(), static_cast<K>(limits::min() + 1), static_cast<K>(limits::max() - 1),
                          limits::max(), K(0), K(1)};
    if constexpr (std::is_signed_v<K>)
        values.push_back(K(-1));
    for (std::size_t index = 0; index < count; ++index)
        values.push_back(static_cast<K>(random()));
    for (std::size_t index = 0; index < count / 4; ++index)  // small values, many equal pairs
        values.push_back(static_cast<K>(static_cast<int>(random() % 7) - 3));
    return values;
}

template <class K>
class ordered_integer : public ::testing::Test {};
using integer_types = ::testing::Types<std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                                       std::uint32_t, std::int64_t, std::uint64_t, char, long long>;
TYPED_TEST_SUITE(ordered_integer, integer_types);

TYPED_TEST(ordered_integer, order_and_round_trip) {
    std::mt19937_64 random(17);
    check_all_pairs(integer_values<TypeParam>(random, 300));
}

TEST(ordered_integer_exhaustive, every_int16_in_order) {
    std::string previous = encode_ordered_key(std::numeric_limits<std::int16_t>::min());
    for (int value = std::numeric_limits<std::int16_t>::min() + 1; value <= std::numeric_limits<std::int16_t>::max();
         ++value) {
        const std::string current = encode_ordered_key(static_cast<std::int16_t>(value));
        ASSERT_LT(previous, current) << value;
        ASSERT_EQ(ordered_codec<std::int16_t>::decode(current), value);
        previous = current;
    }
}

template <class F>
std::vector<F> floating_values(std::mt19937_64& random, std::size_t count) {
    using limits = std::numeric_limits<F>;
    std::vector<F> values{-limits::infinity(),
                          limits::lowest(),
                          std::nextafter(limits::lowest(), F(0)),
                          F(-1),
                          -limits::min(),
                          -limits::denorm_min(),
                          -2 * limits::denorm_min(),
                          F(-0.0),
                          F(0.0),
                          limits::denorm_min(),
                          2 * limits::denorm_min(),
                          std::nextafter(limits::min(), F(0)),  // the largest denormal
                          limits::min(),
                          limits::epsilon(),
                          F(1),
                          std::nextafter(F(1), F(2)),
                          std::nextafter(F(1), F(0)),
                          limits::max(),
                          limits::infinity()};
    std::uniform_real_distribution<F> near(-10, 10);
    for (std::size_t index = 0; index < count; ++index) {
        // Random bit patterns cover every exponent; skip the NaNs among them.
        using bits_type = typename ordered_codec<F>::bits_type;
        F value = std::bit_cast<F>(static_cast<bits_type>(random()));
        if (std::isnan(value))
            value = near(random);
        values.push_back(value);
        values.push_back(near(random));
    }
    return values;
}

template <class F>
class ordered_floating : public ::testing::Test {};
using floating_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ordered_floating, floating_types);

TYPED_TEST(ordered_floating, order_and_round_trip) {
    std::mt19937_64 random(23);
    check_all_pairs(floating_values<TypeParam>(random, 200));
}

TYPED_TEST(ordered_floating, minus_zero_is_plus_zero) {
    EXPECT_EQ(encode_ordered_key(TypeParam(-0.0)), encode_ordered_key(TypeParam(0.0)));
    const TypeParam back = ordered_codec<TypeParam>::decode(encode_ordered_key(TypeParam(-0.0)));
    EXPECT_EQ(back, TypeParam(0));
    EXPECT_FALSE(std::signbit(back));
}

TYPED_TEST(ordered_floating, nan_is_refused) {
    std::string out;
    EXPECT_THROW(ordered_codec<TypeParam>::encode(std::numeric_limits<TypeParam>::quiet_NaN(), out),
                 mpidict::invalid_argument_error);
    EXPECT_THROW(ordered_codec<TypeParam>::encode(-std::numeric_limits<TypeParam>::quiet_NaN(), out),
                 mpidict::invalid_argument_error);
    EXPECT_TRUE(out.empty()) << "nothing is appended for a refused key";
}

TEST(ordered_float_sweep, every_997th_bit_pattern) {
    // About 4.3 million floats spread over every exponent of both signs: sorted
    // by value, their encodings are sorted too, equal exactly when the values are.
    std::vector<float> values;
    for (std::uint64_t bits = 0; bits < (std::uint64_t(1) << 32); bits += 997) {
        const float value = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
        if (!std::isnan(value))
            values.push_back(value);
    }
    std::sort(values.begin(), values.end());
    std::string previous = encode_ordered_key(values.front());
    for (std::size_t index = 1; index < values.size(); ++index) {
        const std::string current = encode_ordered_key(values[index]);
        if (values[index] == values[index - 1]) {
            ASSERT_EQ(previous, current);
        } else {
            ASSERT_LT(previous, current) << values[index];
        }
        previous = current;
    }
}

std::vector<std::string> string_values(std::mt19937_64& random, std::size_t count) {
    std::vector<std::string> values{std::string(),
                                    std::string(1, '\0'),
                                    std::string(2, '\0'),
                                    std::string("a"),
                                    std::string("a\0", 2),
                                    std::string("a\0b", 3),
                                    std::string("ab"),
                                    std::string("abc"),
                                    std::string(1, '\x7f'),
                                    std::string(1, '\x80'),
                                    std::string(1, '\xff'),
                                    std::string(2, '\xff'),
                                    std::string("\xff\x00", 2)};
    for (std::size_t index = 0; index < count; ++index) {
        std::string value(random() % 6, '\0');
        for (char& c : value)
            c = static_cast<char>("\0\1a\x7f\x80\xff"[random() % 6]);
        values.push_back(value);
        // A prefix and an extension of it, so prefix pairs are common.
        values.push_back(value.substr(0, value.size() / 2));
        values.push_back(value + static_cast<char>(random()));
    }
    return values;
}

TEST(ordered_bytes, strings_embedded_zeros_and_prefixes) {
    std::mt19937_64 random(5);
    const auto values = string_values(random, 150);
    // Native comparison of std::string is by unsigned char (char_traits<char>::compare is memcmp-like for the encoding too).
    std::vector<std::string> encoded;
    for (const auto& value : values) {
        encoded.push_back(encode_ordered_key(value));
        ASSERT_EQ(ordered_codec<std::string>::decode(encoded.back()), value);
    }
    auto unsigned_less = [](const std::string& a, const std::string& b) {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
            return static_cast<unsigned char>(x) < static_cast<unsigned char>(y);
        });
    };
    for (std::size_t i = 0; i < values.size(); ++i)
        for (std::size_t j = 0; j < values.size(); ++j) {
            const int native = unsigned_less(values[i], values[j]) ? -1 : (unsigned_less(values[j], values[i]) ? 1 : 0);
            ASSERT_EQ(sign_of(encoded[i].compare(encoded[j])), native) << i << " " << j;
        }
}

TEST(ordered_bytes, byte_vectors) {
    std::mt19937_64 random(6);
    const auto strings = string_values(random, 100);
    std::vector<std::vector<std::byte>> values;
    for (const auto& s : strings) {
        const auto* data = reinterpret_cast<const std::byte*>(s.data());
        values.emplace_back(data, data + s.size());
    }
    check_all_pairs(values);  // std::vector<std::byte> compares bytes unsigned
}

TEST(ordered_multi, arrays_of_every_dimension) {
    std::mt19937_64 random(9);
    std::vector<std::array<std::int32_t, 3>> triples;
    for (int index = 0; index < 400; ++index)
        triples.push_back({static_cast<std::int32_t>(random() % 5) - 2, static_cast<std::int32_t>(random()),
                           static_cast<std::int32_t>(random() % 3) - 1});
    triples.push_back({std::numeric_limits<std::int32_t>::min(), 0, 0});
    triples.push_back({std::numeric_limits<std::int32_t>::max(), -1, std::numeric_limits<std::int32_t>::max()});
    check_all_pairs(triples);

    std::vector<std::array<double, 2>> points;
    const auto doubles = floating_values<double>(random, 20);
    for (const double x : {-1.0, -0.0, 0.0, 2.5})
        for (const double y : doubles)
            points.push_back({x, y});
    check_all_pairs(points);
}

TEST(ordered_multi, mixed_tuples_and_pairs) {
    std::mt19937_64 random(10);
    std::vector<std::tuple<std::uint8_t, double, std::int64_t>> tuples;
    const auto doubles = floating_values<double>(random, 10);
    for (int index = 0; index < 300; ++index)
        tuples.emplace_back(static_cast<std::uint8_t>(random() % 3), doubles[random() % doubles.size()],
                            static_cast<std::int64_t>(random() % 5) - 2);
    check_all_pairs(tuples);

    std::vector<std::pair<std::int16_t, float>> pairs;
    for (int index = 0; index < 200; ++index)
        pairs.emplace_back(static_cast<std::int16_t>(random() % 4) - 2,
                           static_cast<float>(static_cast<int>(random() % 9) - 4) / 3.0f);
    check_all_pairs(pairs);
}

TEST(ordered_decode, wrong_size_is_a_decode_error) {
    EXPECT_THROW(ordered_codec<std::int32_t>::decode("abc"), mpidict::decode_error);
    EXPECT_THROW(ordered_codec<double>::decode(std::string(9, 'x')), mpidict::decode_error);
    EXPECT_THROW((ordered_codec<std::array<std::int16_t, 3>>::decode(std::string(5, '\0'))), mpidict::decode_error);
    EXPECT_THROW((ordered_codec<std::tuple<std::int8_t, double>>::decode(std::string())), mpidict::decode_error);
    EXPECT_THROW((ordered_codec<std::pair<std::int8_t, float>>::decode(std::string(6, '\0'))), mpidict::decode_error);
}

TEST(ordered_prefix, successor_bounds_every_extension) {
    std::mt19937_64 random(12);
    const auto values = string_values(random, 200);
    for (const std::string& prefix : {std::string("a"), std::string("a\xff", 2), std::string("\xff\xff", 2),
                                     std::string(1, '\0'), std::string("ab\0", 3), std::string()}) {
        const std::string bound = mpidict::prefix_successor(prefix);
        for (const auto& value : values) {
            const bool has_prefix = value.compare(0, prefix.size(), prefix) == 0 && value.size() >= prefix.size();
            const bool in_range = value >= prefix && (bound.empty() || value < bound);
            ASSERT_EQ(has_prefix, in_range) << "prefix of " << prefix.size() << " bytes";
        }
    }
    EXPECT_EQ(mpidict::prefix_successor("ab"), "ac");
    EXPECT_EQ(mpidict::prefix_successor(std::string("a\xff\xff", 3)), "b");
    EXPECT_EQ(mpidict::prefix_successor(std::string("\xff", 1)), "");
}

}  // namespace
