// codec and byte_reader: round trips of trivially copyable types, std::string and
// std::vector<std::byte>; every truncation of an encoded stream throws
// decode_error, and decoding never touches a byte past the end (the input is
// placed right before a PROT_NONE guard page, so a stray read faults).

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"

namespace {

using mpidict::byte_reader;
using mpidict::codec;
using mpidict::decode_error;
using bytes = std::vector<std::byte>;

struct point {
    std::int32_t x;
    std::int32_t y;
    double weight;
    bool operator==(const point&) const = default;
};
static_assert(sizeof(point) == 16, "point has no padding");

static_assert(mpidict::encodable<std::uint64_t>);
static_assert(mpidict::encodable<point>);
static_assert(mpidict::encodable<std::string>);
static_assert(mpidict::encodable<bytes>);
static_assert(codec<std::uint32_t>::fixed_size);
static_assert(!codec<std::string>::fixed_size);
static_assert(!codec<bytes>::fixed_size);

template <class T>
bytes encode_all(const std::vector<T>& values) {
    std::size_t size = 0;
    for (const T& value : values)
        size += codec<T>::encoded_size(value);
    bytes out(size);
    std::byte* cursor = out.data();
    for (const T& value : values) {
        std::byte* end = codec<T>::encode(cursor, value);
        EXPECT_EQ(static_cast<std::size_t>(end - cursor), codec<T>::encoded_size(value));
        cursor = end;
    }
    EXPECT_EQ(cursor, out.data() + out.size());
    return out;
}

template <class T>
std::vector<T> decode_all(const bytes& in, std::size_t count) {
    byte_reader reader(in.data(), in.size());
    std::vector<T> out;
    for (std::size_t index = 0; index < count; ++index)
        out.push_back(codec<T>::decode(reader));
    EXPECT_TRUE(reader.empty());
    EXPECT_EQ(reader.remaining(), 0u);
    return out;
}

template <class T>
void round_trip(const std::vector<T>& values) {
    EXPECT_EQ(decode_all<T>(encode_all(values), values.size()), values);
}

bytes to_bytes(const std::string& text) {
    bytes out(text.size());
    std::memcpy(out.data(), text.data(), text.size());
    return out;
}

// `size` readable bytes that end exactly at an inaccessible page.
class guarded_buffer {
public:
    explicit guarded_buffer(std::size_t size) : m_size(size) {
        m_page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        m_pages = (size + m_page - 1) / m_page + 1;
        void* region = mmap(nullptr, m_pages * m_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED)
            throw std::runtime_error("mmap failed");
        m_region = static_cast<std::byte*>(region);
        if (mprotect(m_region + (m_pages - 1) * m_page, m_page, PROT_NONE) != 0)
            throw std::runtime_error("mprotect failed");
    }
    ~guarded_buffer() { munmap(m_region, m_pages * m_page); }
    guarded_buffer(const guarded_buffer&) = delete;
    guarded_buffer& operator=(const guarded_buffer&) = delete;
    std::byte* data() { return m_region + (m_pages - 1) * m_page - m_size; }
    std::size_t size() const { return m_size; }

private:
    std::byte* m_region = nullptr;
    std::size_t m_page = 0;
    std::size_t m_pages = 0;
    std::size_t m_size = 0;
};

// Decodes `count` values from every proper prefix of `encoded`, placed against a
// guard page: each must throw decode_error (never crash, never succeed).
template <class T>
void every_truncation_throws(const bytes& encoded, std::size_t count) {
    for (std::size_t length = 0; length < encoded.size(); ++length) {
        guarded_buffer buffer(length);
        if (length)
            std::memcpy(buffer.data(), encoded.data(), length);
        byte_reader reader(buffer.data(), length);
        EXPECT_THROW(
            {
                for (std::size_t index = 0; index < count; ++index)
                    (void)codec<T>::decode(reader);
            },
            decode_error)
            << "prefix of " << length << " of " << encoded.size() << " bytes";
        EXPECT_LE(reader.position(), buffer.data() + length);
    }
}

// ---- round trips ---------------------------------------------------------------

TEST(Codec, TriviallyCopyableRoundTrip) {
    round_trip<std::uint8_t>({0, 1, 255});
    round_trip<std::int32_t>({0, -1, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()});
    round_trip<std::uint64_t>({0, 1, 0x0123456789abcdefULL, std::numeric_limits<std::uint64_t>::max()});
    round_trip<double>({0.0, -0.0, 3.25, std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()});
    round_trip<point>({{1, 2, 0.5}, {-7, 9, 1e300}});
    round_trip<std::array<std::uint16_t, 3>>({{1, 2, 3}, {65535, 0, 7}});
    EXPECT_EQ(codec<point>::encoded_size(point{}), sizeof(point));
    EXPECT_EQ(codec<point>::payload_bytes(point{}), sizeof(point));
}

TEST(Codec, StringRoundTrip) {
    std::string binary;
    for (int c = 0; c < 256; ++c)
        binary.push_back(static_cast<char>(c));
    const std::vector<std::string> values{"", "a", std::string("nul\0inside", 10), std::string(1000, 'x'), binary, ""};
    round_trip(values);
    EXPECT_EQ(codec<std::string>::encoded_size("abc"), 4u + 3u);
    EXPECT_EQ(codec<std::string>::encoded_size(""), 4u);
    EXPECT_EQ(codec<std::string>::payload_bytes("abcd"), 4u);
}

TEST(Codec, StringWireFormatIsLengthPrefixed) {
    const bytes encoded = encode_all<std::string>({"hey"});
    ASSERT_EQ(encoded.size(), 7u);
    std::uint32_t length = 0;
    std::memcpy(&length, encoded.data(), 4);
    EXPECT_EQ(length, 3u);
    EXPECT_EQ(std::memcmp(encoded.data() + 4, "hey", 3), 0);
}

TEST(Codec, ByteVectorRoundTrip) {
    bytes big(4096);
    for (std::size_t index = 0; index < big.size(); ++index)
        big[index] = static_cast<std::byte>(index * 31);
    round_trip<bytes>({bytes{}, to_bytes("abc"), big, bytes{std::byte{0}}});
    EXPECT_EQ(codec<bytes>::encoded_size(big), 4u + 4096u);
}

TEST(Codec, MixedStreamDecodesInOrder) {
    bytes buffer(4 + 8 + codec<std::string>::encoded_size("hello") + codec<bytes>::encoded_size(to_bytes("xy")) + 2);
    std::byte* out = buffer.data();
    out = codec<std::uint32_t>::encode(out, 77);
    out = codec<double>::encode(out, 2.5);
    out = codec<std::string>::encode(out, "hello");
    out = codec<bytes>::encode(out, to_bytes("xy"));
    out = codec<std::uint16_t>::encode(out, 513);
    ASSERT_EQ(out, buffer.data() + buffer.size());

    byte_reader reader{std::span<const std::byte>(buffer)};
    EXPECT_EQ(reader.remaining(), buffer.size());
    EXPECT_EQ(codec<std::uint32_t>::decode(reader), 77u);
    EXPECT_EQ(codec<double>::decode(reader), 2.5);
    EXPECT_EQ(codec<std::string>::decode(reader), "hello");
    EXPECT_EQ(codec<bytes>::decode(reader), to_bytes("xy"));
    EXPECT_EQ(reader.remaining(), 2u);
    EXPECT_EQ(codec<std::uint16_t>::decode(reader), 513);
    EXPECT_TRUE(reader.empty());
    EXPECT_THROW(codec<std::uint8_t>::decode(reader), decode_error);
}

// ---- byte_reader bounds ----------------------------------------------------------

TEST(ByteReader, DefaultConstructedIsEmpty) {
    byte_reader reader;
    EXPECT_TRUE(reader.empty());
    EXPECT_EQ(reader.remaining(), 0u);
    EXPECT_NO_THROW(reader.take(0));
    EXPECT_THROW(reader.take(1), decode_error);
    EXPECT_THROW(reader.read<std::uint8_t>(), decode_error);
}

TEST(ByteReader, TakeChecksEveryRead) {
    const bytes data(10, std::byte{1});
    byte_reader reader(data.data(), data.size());
    EXPECT_EQ(reader.take(4), data.data());
    EXPECT_EQ(reader.position(), data.data() + 4);
    EXPECT_THROW(reader.take(7), decode_error);
    // A failed take consumes nothing.
    EXPECT_EQ(reader.remaining(), 6u);
    EXPECT_THROW(reader.read<std::uint64_t>(), decode_error);
    EXPECT_EQ(reader.remaining(), 6u);
    EXPECT_NO_THROW(reader.take(6));
    EXPECT_TRUE(reader.empty());
    // Sizes that would overflow pointer arithmetic are refused, not wrapped.
    byte_reader other(data.data(), data.size());
    EXPECT_THROW(other.take(std::numeric_limits<std::size_t>::max()), decode_error);
    EXPECT_THROW(other.take(std::numeric_limits<std::size_t>::max() - 5), decode_error);
    EXPECT_EQ(other.remaining(), 10u);
}

TEST(ByteReader, DecodeErrorIsAnMpidictError) {
    byte_reader reader;
    try {
        (void)reader.read<std::uint32_t>();
        FAIL() << "no exception";
    } catch (const mpidict::error& problem) {
        EXPECT_NE(std::string(problem.what()).find("truncated"), std::string::npos) << problem.what();
    }
}

TEST(ByteReader, EveryTruncationThrowsWithoutReadingPastTheEnd) {
    every_truncation_throws<std::uint64_t>(encode_all<std::uint64_t>({1, 2, 3}), 3);
    every_truncation_throws<point>(encode_all<point>({{1, 2, 3.0}}), 1);
    every_truncation_throws<std::string>(encode_all<std::string>({"first", "", std::string(300, 's')}), 3);
    every_truncation_throws<bytes>(encode_all<bytes>({to_bytes("abc"), bytes(100, std::byte{9})}), 2);
}

TEST(ByteReader, LyingLengthPrefixThrows) {
    // A length prefix larger than what follows: refused before allocating.
    for (const std::uint32_t claimed : {5u, 1000u, 0x7fffffffu, 0xffffffffu}) {
        guarded_buffer buffer(4 + 4);
        std::memcpy(buffer.data(), &claimed, 4);
        std::memcpy(buffer.data() + 4, "abcd", 4);
        byte_reader reader(buffer.data(), buffer.size());
        EXPECT_THROW(codec<std::string>::decode(reader), decode_error) << claimed;
        byte_reader again(buffer.data(), buffer.size());
        EXPECT_THROW(codec<bytes>::decode(again), decode_error) << claimed;
    }
    // Exactly right: decodes and reaches the guard page without touching it.
    guarded_buffer exact(4 + 4);
    const std::uint32_t four = 4;
    std::memcpy(exact.data(), &four, 4);
    std::memcpy(exact.data() + 4, "abcd", 4);
    byte_reader reader(exact.data(), exact.size());
    EXPECT_EQ(codec<std::string>::decode(reader), "abcd");
    EXPECT_TRUE(reader.empty());
}

TEST(ByteReader, FuzzedStreamsNeverOverrun) {
    // Random bytes read as a stream of strings: each read either succeeds within
    // bounds or throws decode_error.
    std::uint64_t state = 12345;
    auto next = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<std::uint32_t>(state >> 33);
    };
    for (int trial = 0; trial < 2000; ++trial) {
        const std::size_t length = next() % 64;
        guarded_buffer buffer(length);
        for (std::size_t index = 0; index < length; ++index) {
            // Small length prefixes are likely, so some decodes succeed.
            buffer.data()[index] = static_cast<std::byte>(index % 4 == 0 ? next() % 12 : next() % 3 == 0 ? 0 : next());
        }
        byte_reader reader(buffer.data(), length);
        try {
            while (!reader.empty()) {
                const std::string value = codec<std::string>::decode(reader);
                EXPECT_LE(value.size(), length);
            }
        } catch (const decode_error&) {
        }
        EXPECT_LE(reader.position(), buffer.data() + length);
    }
}

}  // namespace
