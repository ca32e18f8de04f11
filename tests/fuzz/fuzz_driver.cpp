// A plain driver for the fuzz target, for compilers without libFuzzer (g++):
// runs every file of the given corpus directories, then a fixed number of
// deterministic mutations of them (bit flips, byte changes, insertions,
// deletions, truncations, splices).  Same contract as under libFuzzer: an input
// may only be rejected with an mpidict::error; anything else (a crash, an
// AddressSanitizer report, another exception, one allocation over 1 GiB, as
// libFuzzer's -malloc_limit_mb would report) fails the run.
//
// The built-in seeds (seeds.cpp) are always part of the corpus; with
// --strict-seeds each must also run without a single decode_error, so a seed
// that no longer matches its record layout fails the run instead of silently
// testing nothing.  --write-seeds DIR writes them as files and exits.
//
//   fuzz_message_driver [--mutations N] [--seed S] [--strict-seeds] [--write-seeds DIR] [<corpus dir or file>...]

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "seeds.hpp"

// Every plain allocation goes through here: a size read off the wire must never
// turn into an unbounded allocation (overcommit would hide it otherwise).
namespace {
constexpr std::size_t allocation_limit_bytes = std::size_t{1} << 30;
void* limited_allocation(std::size_t bytes) {
    if (bytes > allocation_limit_bytes) {
        std::fprintf(stderr, "fuzz_message_driver: one allocation of %zu bytes (limit %zu): an unbounded size from "
                             "the input\n", bytes, allocation_limit_bytes);
        std::abort();
    }
    if (void* memory = std::malloc(bytes == 0 ? 1 : bytes))
        return memory;
    throw std::bad_alloc();
}
}  // namespace
void* operator new(std::size_t bytes) { return limited_allocation(bytes); }
void* operator new[](std::size_t bytes) { return limited_allocation(bytes); }
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

class random_source {
public:
    explicit random_source(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next() { return mix(m_state += 0x9e3779b97f4a7c15ULL); }
    std::size_t below(std::size_t bound) { return bound == 0 ? 0 : static_cast<std::size_t>(next() % bound); }

private:
    std::uint64_t m_state;
};

std::vector<std::uint8_t> mutate(const std::vector<std::vector<std::uint8_t>>& corpus, random_source& random) {
    std::vector<std::uint8_t> out = corpus[random.below(corpus.size())];
    const std::size_t edits = 1 + random.below(4);
    for (std::size_t edit = 0; edit < edits; ++edit) {
        switch (random.below(7)) {
        case 0:  // flip a bit
            if (!out.empty())
                out[random.below(out.size())] ^= static_cast<std::uint8_t>(1u << random.below(8));
            break;
        case 1:  // an interesting byte
            if (!out.empty()) {
                static const std::uint8_t interesting[] = {0, 1, 2, 7, 8, 12, 16, 0x7f, 0x80, 0xfe, 0xff};
                out[random.below(out.size())] = interesting[random.below(sizeof interesting)];
            }
            break;
        case 2:  // insert random bytes
            for (std::size_t count = 1 + random.below(8); count > 0; --count)
                out.insert(out.begin() + static_cast<std::ptrdiff_t>(random.below(out.size() + 1)),
                           static_cast<std::uint8_t>(random.next()));
            break;
        case 3:  // delete a range
            if (!out.empty()) {
                const std::size_t start = random.below(out.size());
                const std::size_t length = 1 + random.below(std::min<std::size_t>(16, out.size() - start));
                out.erase(out.begin() + static_cast<std::ptrdiff_t>(start),
                          out.begin() + static_cast<std::ptrdiff_t>(start + length));
            }
            break;
        case 4:  // truncate
            out.resize(random.below(out.size() + 1));
            break;
        case 5: {  // splice another input's tail
            const auto& other = corpus[random.below(corpus.size())];
            const std::size_t from = random.below(other.size() + 1);
            out.resize(random.below(out.size() + 1));
            out.insert(out.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
            break;
        }
        default:  // a large 32-bit field (counts, lengths, slots)
            if (out.size() >= 4) {
                const std::size_t at = random.below(out.size() - 3);
                const std::uint32_t value = random.below(2) ? 0xffffffffu : static_cast<std::uint32_t>(random.next());
                std::memcpy(out.data() + at, &value, 4);
            }
            break;
        }
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    long long mutations = 2000;
    std::uint64_t seed = 1;
    bool strict_seeds = false;
    std::vector<std::vector<std::uint8_t>> corpus;
    for (int index = 1; index < argc; ++index) {
        const std::string arg = argv[index];
        if (arg == "--strict-seeds") {
            strict_seeds = true;
        } else if (arg == "--write-seeds" && index + 1 < argc) {
            mpidict::fuzz::write_seeds(argv[++index]);
            std::printf("fuzz_message_driver: wrote %zu seeds into %s\n", mpidict::fuzz::seeds().size(), argv[index]);
            return 0;
        } else if (arg == "--mutations" && index + 1 < argc) {
            mutations = std::atoll(argv[++index]);
        } else if (arg == "--seed" && index + 1 < argc) {
            seed = std::strtoull(argv[++index], nullptr, 10);
        } else {
            std::vector<std::filesystem::path> files;
            if (std::filesystem::is_directory(arg)) {
                for (const auto& entry : std::filesystem::directory_iterator(arg))
                    if (entry.is_regular_file())
                        files.push_back(entry.path());
            } else {
                files.emplace_back(arg);
            }
            std::sort(files.begin(), files.end());
            for (const auto& file : files) {
                std::ifstream in(file, std::ios::binary);
                corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            }
        }
    }
    long long inputs = 0;
    const std::size_t files = corpus.size();
    int stale = 0;
    for (const mpidict::fuzz::seed& each : mpidict::fuzz::seeds()) {
        const std::size_t before = mpidict::fuzz::decode_rejections();
        (void)mpidict::fuzz::first_rejection();
        LLVMFuzzerTestOneInput(each.bytes.data(), each.bytes.size());
        ++inputs;
        const std::size_t rejected = mpidict::fuzz::decode_rejections() - before;
        if (strict_seeds && rejected != 0) {
            std::fprintf(stderr, "fuzz_message_driver: seed %s was rejected %zu times (decode_error): it no longer "
                                 "matches what the handlers expect; first: %s\n", each.name.c_str(), rejected,
                         mpidict::fuzz::first_rejection().c_str());
            ++stale;
        }
        corpus.push_back(each.bytes);
    }
    for (std::size_t index = 0; index < files; ++index) {
        const auto& input = corpus[index];
        LLVMFuzzerTestOneInput(input.data(), input.size());
        ++inputs;
    }
    random_source random(seed);
    for (long long index = 0; index < mutations; ++index) {
        const std::vector<std::uint8_t> input = mutate(corpus, random);
        LLVMFuzzerTestOneInput(input.data(), input.size());
        ++inputs;
    }
    std::printf("fuzz_message_driver: %zu seeds, %zu corpus files and %lld mutations (seed %llu)\n",
                corpus.size() - files, files, mutations, static_cast<unsigned long long>(seed));
    if (stale != 0) {
        std::printf("%d of %zu seeds rejected\n", stale, corpus.size() - files);
        return 1;
    }
    std::printf("%lld passed, 0 failed\n", inputs);
    return 0;
}
