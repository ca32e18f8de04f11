// Fuzz target of apps/serve's RESP request parser (apps/serve/resp.cpp).
//
// Contract: any bytes either parse into requests, ask for more, or give a
// protocol error; never a crash, a read past the input, or an allocation
// beyond the limits (the plain driver counts bytes allocated per input).
// Every complete request is re-encoded and must parse back to the same
// arguments, and the bytes consumed never exceed the input.
//
// libFuzzer:  clang++ -std=c++20 -fsanitize=fuzzer,address,undefined -Iapps
//               tests/fuzz/resp_fuzz.cpp apps/serve/resp.cpp -o fuzz_resp && ./fuzz_resp
// In CTest (any compiler): serve.resp_fuzz runs the plain driver below
// (MPIDICT_RESP_FUZZ_DRIVER) over the built-in seeds and deterministic mutations.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "serve/resp.hpp"

using namespace mpidict::apps::serve;

namespace {

resp_limits fuzz_limits() {
    resp_limits limits;
    limits.max_arguments = 4096;
    limits.max_bulk_bytes = 1 << 16;
    limits.max_inline_bytes = 1 << 12;
    limits.max_request_bytes = 1 << 18;
    return limits;
}

[[noreturn]] void broken(const char* what) {
    std::fprintf(stderr, "resp_fuzz: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const resp_limits limits = fuzz_limits();
    std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> arguments;
    std::size_t position = 0;
    while (position < input.size()) {
        const parse_result parsed = parse_request(input.substr(position), limits, arguments);
        if (parsed.status != parse_status::complete)
            break;
        if (parsed.consumed == 0 || parsed.consumed > input.size() - position)
            broken("a complete request consumed nothing or more than the input");
        if (arguments.size() > limits.max_arguments)
            broken("more arguments than the limit");
        std::size_t total = 0;
        for (const std::string& a : arguments)
            total += a.size();
        if (total > limits.max_request_bytes + limits.max_inline_bytes)
            broken("a request larger than the limits");
        if (!arguments.empty()) {
            // Re-encode as a multibulk request: it must parse back identically.
            std::string encoded;
            reply_array_header(encoded, arguments.size());
            for (const std::string& a : arguments)
                reply_bulk(encoded, a);
            std::vector<std::string> again;
            const parse_result back = parse_request(encoded, limits, again);
            if (back.status != parse_status::complete || back.consumed != encoded.size() || again != arguments)
                broken("a parsed request did not survive re-encoding");
        }
        position += parsed.consumed;
    }
    // The helpers clients' bytes reach.
    long long integer = 0;
    parse_integer(input.substr(0, 32), integer);
    double real = 0;
    if (parse_double(input.substr(0, 64), real))
        (void)format_double(real);
    const std::size_t half = input.size() / 2;
    (void)glob_match(input.substr(0, std::min<std::size_t>(half, 24)), input.substr(half, 256));
    return 0;
}

#ifdef MPIDICT_RESP_FUZZ_DRIVER
// The plain driver: seeds, then deterministic mutations of them.
int main(int argc, char** argv) {
    std::uint64_t mutations = 20000;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--mutations") == 0)
            mutations = std::strtoull(argv[i + 1], nullptr, 10);
    const std::vector<std::string> seeds = {
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
        "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n",
        "PING\r\nSET a \"b c\\x41\\n\" 'd\\'e'\r\n",
        "*0\r\n*-1\r\n\r\n\n",
        "*5\r\n$4\r\nZADD\r\n$1\r\nz\r\n$3\r\n1.5\r\n$1\r\na\r\n$4\r\n-inf\r\n",
        "*2\r\n$3\r\nGET\r\n:5\r\n",
        "*abc\r\n",
        "*1\r\n$-5\r\n",
        "*9999999999\r\n",
        "SET \"unbalanced x\r\n",
        "*1\r\n$70000\r\n",
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab",
        "*2\r\n$4\r\nSCAN\r\n$1\r\n0\r\n*4\r\n$4\r\nSCAN\r\n$1\r\n0\r\n$5\r\nMATCH\r\n$5\r\nk[a-c\r\n",
    };
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    for (const std::string& seed : seeds)
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(seed.data()), seed.size());
    for (std::uint64_t m = 0; m < mutations; ++m) {
        std::string input = seeds[next() % seeds.size()];
        const int edits = 1 + static_cast<int>(next() % 4);
        for (int e = 0; e < edits; ++e) {
            const std::uint64_t what = next() % 6;
            const std::size_t at = input.empty() ? 0 : next() % input.size();
            if (what == 0 && !input.empty())
                input[at] = static_cast<char>(next());
            else if (what == 1)
                input.insert(at, 1, "*$\r\n-0123456789\"'\\ x"[next() % 21]);
            else if (what == 2 && !input.empty())
                input.erase(at, 1 + next() % 4);
            else if (what == 3)
                input.resize(at);
            else if (what == 4)
                input += seeds[next() % seeds.size()];
            else if (!input.empty())
                input[at] ^= static_cast<char>(1u << (next() % 8));
        }
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    }
    std::printf("resp_fuzz: %zu seeds and %llu mutations, no finding\n", seeds.size(),
                static_cast<unsigned long long>(mutations));
    return 0;
}
#endif
