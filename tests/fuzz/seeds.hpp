#pragma once
// The message fuzzer's seed inputs, built in C++ from the containers' own record
// layouts (mpidict/detail/wire.hpp), so a change of layout changes the seeds
// with it.  The input format is message_fuzz.cpp's.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpidict::fuzz {

struct seed {
    std::string name;
    std::vector<std::uint8_t> bytes;
};

// Every seed: each names a handler path and is well formed, so it must run
// without a single decode_error (the driver's --strict-seeds checks it).
std::vector<seed> seeds();

// skiplist_map's seeds: messages a real skiplist_map sent (recorded in
// message_fuzz.cpp over its transport), so they follow the container's layouts.
std::vector<seed> skiplist_seeds();

// How many decode_errors the handlers raised since the process started
// (message_fuzz.cpp counts them; a malformed input may cause any number).
std::size_t decode_rejections();
// The message of the first decode_error since the previous call ("" if none).
std::string first_rejection();

// Writes every seed as a file named after it into `directory` (created).
void write_seeds(const std::string& directory);

}  // namespace mpidict::fuzz
