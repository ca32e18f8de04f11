// Fuzz target for the two text parsers that read what another process wrote
// (issue 48): the flights service's control-port command lines
// (apps/flights/control_port.cpp, parse_command and error_line) and the
// checkpoint manifest (src/checkpoint/manifest.cpp, through
// detail::checkpoint::check_manifest_text, the checks a load and `mpidict
// inspect` make before any data file is opened).
//
// Input: the first byte chooses (even: control-port lines, one command per
// line; odd: a manifest), the rest is the text.  Contract, as for the message
// fuzzer: bad input is refused with an mpidict::error; no crash, no other
// exception, no unbounded allocation (the plain driver, fuzz_driver.cpp, aborts
// on one allocation over 1 GiB).
//
// The seeds (below) are well formed and must be accepted (--strict-seeds);
// tests/fuzz/corpus/parsers/ holds the probe's malformed inputs, replayed by CTest.

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "flights/control_port.hpp"
#include "mpidict/checkpoint.hpp"
#include "mpidict/error.hpp"
#include "seeds.hpp"

namespace {

std::size_t rejections_seen = 0;
std::string first_seen;

void rejected(const std::exception& problem) {
    if (rejections_seen++ == 0 || first_seen.empty())
        first_seen = problem.what();
}

std::string manifest(const std::string& container, const std::string& key, int key_bytes, const std::string& layout,
                     int ranks) {
    const bool strings = key_bytes == 0;
    const bool multi = container == "hash_map";
    const bool has_values = container != "rma_hash_set";
    std::string shards;
    std::uint64_t offset = 0;
    for (int r = 0; r < ranks; ++r) {
        const std::string file = layout == "shared_file" ? "data-3.bin" : "data-3-r" + std::to_string(r) + ".bin";
        std::string columns;
        auto column = [&](const std::string& name, const std::string& type, int width, int count) {
            const std::uint64_t bytes = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(count);
            columns += std::string(columns.empty() ? "" : ",") + "{\"name\":\"" + name + "\",\"type\":\"" + type +
                       "\",\"width\":" + std::to_string(width) + ",\"count\":" + std::to_string(count) +
                       ",\"offset\":" + std::to_string(offset) + ",\"bytes\":" + std::to_string(bytes) +
                       ",\"crc32\":" + std::to_string(1234567u + static_cast<unsigned>(offset)) + "}";
            offset += (bytes + 7) / 8 * 8;
        };
        if (layout != "shared_file")
            offset = 0;
        if (strings) {
            column("keys.offsets", "uint64", 8, 5);
            column("keys.data", key, 1, 20);
        } else {
            column("keys", key, key_bytes, 4);
        }
        if (multi)
            column("value_counts", "uint64", 8, 4);
        if (has_values)
            column("values", "int64", 8, multi ? 6 : 4);
        if (container == "skiplist_map")
            column("expiry", "float64", 8, 4);
        shards += std::string(r == 0 ? "" : ",") + "{\"rank\":" + std::to_string(r) + ",\"file\":\"" + file +
                  "\",\"entries\":4,\"columns\":[" + columns + "]}";
    }
    std::string text = "{\"format\":\"mpidict-checkpoint\",\"version\":1,\"container\":\"" + container +
                       "\",\"key\":{\"type\":\"" + key + "\",\"bytes\":" + std::to_string(key_bytes) +
                       "},\"multi_valued\":" + (multi ? "true" : "false") + ",\"tunables\":{\"x\":\"1\"},";
    if (has_values)
        text += "\"value\":{\"type\":\"int64\",\"bytes\":8},";
    return text + "\"byte_order\":\"little\",\"ranks\":" + std::to_string(ranks) + ",\"layout\":\"" + layout +
           "\",\"generation\":3,\"created\":\"2026-11-27T00:00:00Z\",\"entries\":" + std::to_string(4 * ranks) +
           ",\"shards\":[" + shards + "]}\n";
}

mpidict::fuzz::seed text_seed(std::string name, char kind, const std::string& text) {
    mpidict::fuzz::seed out{std::move(name), {}};
    out.bytes.push_back(static_cast<std::uint8_t>(kind));
    out.bytes.insert(out.bytes.end(), text.begin(), text.end());
    return out;
}

}  // namespace

std::vector<mpidict::fuzz::seed> mpidict::fuzz::seeds() {
    std::vector<seed> out;
    out.push_back(text_seed("control-status", 0, "status\nairports\n"));
    out.push_back(text_seed("control-query", 0, "query * *\nquery -74.6,40.4,-73.5,41 -125,30,-100,50 or\n"));
    out.push_back(text_seed("control-query-and", 0, "query -180,-90,180,90 * and\r\nauth 0123abcd\n"));
    if (std::endian::native == std::endian::little) {
        out.push_back(text_seed("manifest-hash_map", 1, manifest("hash_map", "uint64", 8, "shared_file", 2)));
        out.push_back(text_seed("manifest-skiplist", 1, manifest("skiplist_map", "string", 0, "file_per_rank", 3)));
        out.push_back(text_seed("manifest-set", 1, manifest("rma_hash_set", "uint32", 4, "shared_file", 1)));
        out.push_back(text_seed("manifest-linear", 1, manifest("linear_hash_map", "raw", 16, "file_per_rank", 2)));
    }
    return out;
}

std::vector<mpidict::fuzz::seed> mpidict::fuzz::skiplist_seeds() { return {}; }
std::size_t mpidict::fuzz::decode_rejections() { return rejections_seen; }
std::string mpidict::fuzz::first_rejection() {
    std::string message;
    message.swap(first_seen);
    return message;
}
void mpidict::fuzz::write_seeds(const std::string& directory) {
    std::filesystem::create_directories(directory);
    for (const seed& each : seeds()) {
        std::ofstream out(std::filesystem::path(directory) / each.name, std::ios::binary);
        out.write(reinterpret_cast<const char*>(each.bytes.data()), static_cast<std::streamsize>(each.bytes.size()));
        if (!out)
            throw std::runtime_error("cannot write the seed " + each.name + " into " + directory);
    }
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* directory = std::getenv("MPIDICT_FUZZ_WRITE_SEEDS"))
        mpidict::fuzz::write_seeds(directory);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1)
        return 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    if ((data[0] & 1) == 0) {
        std::size_t begin = 0;
        while (begin <= text.size()) {
            const std::size_t end = std::min(text.find('\n', begin), text.size());
            std::string_view line = text.substr(begin, end - begin);
            if (!line.empty() && line.back() == '\r')
                line.remove_suffix(1);
            if (!line.empty() || end < text.size()) {
                try {
                    const auto command = mpidict::apps::flights::parse_command(line);
                    if (command.departure && !(command.departure->west <= command.departure->east))
                        std::abort();  // a box the parser let through out of order
                } catch (const mpidict::error& problem) {
                    rejected(problem);
                    const std::string answer = mpidict::apps::flights::error_line(problem.what());
                    for (const char c : answer)
                        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
                            std::abort();  // the answer must stay printable ASCII
                }
            }
            begin = end + 1;
        }
    } else {
        try {
            mpidict::detail::checkpoint::check_manifest_text(std::string(text));
        } catch (const mpidict::error& problem) {
            rejected(problem);
        }
    }
    return 0;
}
