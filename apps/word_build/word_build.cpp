// word_build: see word_build.hpp and docs/linear_hash_map.md.

#include "word_build/word_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <unordered_set>

#include "mpidict/support/json.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"
#include "mpidict/support/yielding.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::apps::word_build {

// ---- the word file -----------------------------------------------------------------

word_list word_list::parse(std::string bytes, const std::string& name, std::size_t limit, std::size_t max_key_bytes) {
    if (bytes.size() > UINT32_MAX)
        throw word_file_error(name + ": the file is larger than 4 GiB");
    word_list list;
    list.m_bytes = std::move(bytes);
    const std::string_view all = list.m_bytes;
    std::size_t offset = 0;
    std::size_t line = 0;
    while (offset < all.size() && (limit == 0 || list.m_lines.size() < limit)) {
        ++line;
        std::size_t end = all.find('\n', offset);
        if (end == std::string_view::npos)
            end = all.size();
        const std::size_t length = end - offset;
        if (length == 0)
            throw word_file_error(name + ":" + std::to_string(line) + ": empty line (every line is a key)");
        if (length > max_key_bytes)
            throw word_file_error(name + ":" + std::to_string(line) + ": a word of " + std::to_string(length) +
                                  " bytes exceeds the maximum key size of " + std::to_string(max_key_bytes) + " bytes");
        list.m_lines.emplace_back(static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(length));
        list.m_key_bytes += length;
        list.m_longest = std::max(list.m_longest, length);
        offset = end + 1;
    }
    if (list.m_lines.empty())
        throw word_file_error(name + ": no words (empty file)");
    std::unordered_set<std::string_view> seen;
    seen.reserve(list.m_lines.size());
    for (std::size_t index = 0; index < list.m_lines.size(); ++index)
        if (!seen.insert(list[index]).second)
            ++list.m_duplicates;
    return list;
}

std::string read_file_bytes(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr)
        throw word_file_error(path + ": cannot open: " + std::strerror(errno));
    std::string bytes;
    char chunk[1 << 16];
    for (;;) {
        const std::size_t got = std::fread(chunk, 1, sizeof chunk, file);
        bytes.append(chunk, got);
        if (got < sizeof chunk)
            break;
    }
    const bool failed = std::ferror(file) != 0;
    const int code = errno;
    std::fclose(file);
    if (failed)
        throw word_file_error(path + ": cannot read: " + std::strerror(code));
    return bytes;
}

word_list word_list::read(const std::string& path, std::size_t limit, std::size_t max_key_bytes) {
    return parse(read_file_bytes(path), path, limit, max_key_bytes);
}

// ---- values ------------------------------------------------------------------------

namespace {

std::uint64_t splitmix(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

void make_value(std::string_view word, std::uint64_t seed, std::size_t value_bytes, std::string& out) {
    // FNV-1a of the word, mixed with the seed and the length.
    std::uint64_t state = 0xcbf29ce484222325ULL;
    for (const char c : word) {
        state ^= static_cast<unsigned char>(c);
        state *= 0x100000001b3ULL;
    }
    state ^= seed * 0xd6e8feb86659fd93ULL + value_bytes;
    out.resize(value_bytes);
    std::size_t offset = 0;
    while (offset < value_bytes) {
        const std::uint64_t bits = splitmix(state);
        const std::size_t take = std::min<std::size_t>(8, value_bytes - offset);
        std::memcpy(out.data() + offset, &bits, take);
        offset += take;
    }
}

std::size_t default_server_capacity(std::uint64_t payload_bytes, std::uint64_t words, int servers_start,
                                    int servers_max, double split_load) {
    std::uint64_t buckets = static_cast<std::uint64_t>(std::max(servers_start, 1));
    while (buckets * 2 <= static_cast<std::uint64_t>(std::max(servers_max, 1)))
        buckets *= 2;
    const double largest_share = static_cast<double>(payload_bytes) / static_cast<double>(buckets);
    // Three standard deviations of a bucket's word count: hashing is random.
    const double words_in_bucket = std::max(1.0, static_cast<double>(words) / static_cast<double>(buckets));
    const double margin = 1.0 + 3.0 / std::sqrt(words_in_bucket);
    const double final_load = (split_load + 1.0) / 2.0;
    const auto capacity = static_cast<std::size_t>(std::ceil(largest_share * margin / final_load));
    return std::max<std::size_t>(capacity, 4096);
}

std::string check_options(const word_build_options& options, int ranks) {
    const linear_hash_map_config defaults;
    if (options.file.empty())
        return "no word file given";
    if (options.clients < 0 || options.clients > ranks)
        return "--clients: " + std::to_string(options.clients) + " is more than the " + std::to_string(ranks) +
               " ranks";
    if (options.servers_max < 0 || options.servers_max > ranks)
        return "--servers-max: " + std::to_string(options.servers_max) + " is more than the " +
               std::to_string(ranks) + " ranks";
    const int servers_max = options.servers_max == 0 ? ranks : options.servers_max;
    if (options.servers_start < 1)
        return "--servers-start: must be at least 1";
    if (options.servers_start > servers_max)
        return "--servers-start: " + std::to_string(options.servers_start) + " is more than the " +
               std::to_string(servers_max) + " servers allowed (--servers-max)";
    if (options.value_bytes > defaults.max_value_bytes)
        return "--value-bytes: " + std::to_string(options.value_bytes) + " is above the maximum value size of " +
               std::to_string(defaults.max_value_bytes) + " bytes (linear_hash_map_config::max_value_bytes)";
    if (options.window < 1 || options.window > 65536)
        return "--window: must be in [1, 65536]";
    if (!(options.split_load > 0 && options.split_load <= 1))
        return "--split-load: must be in (0, 1]";
    // A request record (key up to max_key_bytes, the value, headers) must fit one message.
    const std::size_t buffer = options.buffer_bytes != 0 ? options.buffer_bytes : defaults.runtime.buffer_bytes;
    const std::size_t record = options.value_bytes + defaults.max_key_bytes + 256;
    if (buffer < record)
        return "--buffer-bytes: " + std::to_string(buffer) + " cannot hold an insert of a " +
               std::to_string(options.value_bytes) + "-byte value and a key of up to " +
               std::to_string(defaults.max_key_bytes) + " bytes (at least " + std::to_string(record) + ")";
    return {};
}

namespace {

// ---- MPI helpers that yield while waiting (support::wait_yielding: common/yielding.hpp) --------

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

// Rank 0 receives every rank's vector, concatenated in rank order; `counts`
// gets each rank's length.
template <class T>
std::vector<T> gather_vectors(MPI_Comm comm, const std::vector<T>& mine, std::vector<int>* counts = nullptr) {
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (mine.size() > static_cast<std::size_t>(INT_MAX))
        throw error("word_build: more than 2^31 samples on one rank");
    const int count = static_cast<int>(mine.size());
    std::vector<int> all_counts(static_cast<std::size_t>(size));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Igather(&count, 1, MPI_INT, all_counts.data(), 1, MPI_INT, 0, comm, &request);
    support::wait_yielding(request);
    std::vector<int> offsets(static_cast<std::size_t>(size));
    std::size_t total = 0;
    if (rank == 0) {
        for (std::size_t index = 0; index < all_counts.size(); ++index) {
            offsets[index] = static_cast<int>(total);
            total += static_cast<std::size_t>(all_counts[index]);
        }
        if (total > static_cast<std::size_t>(INT_MAX))
            throw error("word_build: more than 2^31 samples in all");
    }
    std::vector<T> result(total);
    MPI_Igatherv(mine.data(), count, mpi_type<T>(), result.data(), all_counts.data(), offsets.data(), mpi_type<T>(),
                 0, comm, &request);
    support::wait_yielding(request);
    if (counts != nullptr)
        *counts = std::move(all_counts);
    return result;
}

template <std::size_t N>
std::array<std::uint64_t, N> reduce_sum(MPI_Comm comm, std::array<std::uint64_t, N> values) {
    std::array<std::uint64_t, N> result{};
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(values.data(), result.data(), static_cast<int>(N), MPI_UINT64_T, MPI_SUM, comm, &request);
    support::wait_yielding(request);
    return result;
}

double reduce_max(MPI_Comm comm, double value) {
    double result = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm, &request);
    support::wait_yielding(request);
    return result;
}

// Rank 0's bytes to every rank (in pieces below 2^31).
void broadcast_bytes(MPI_Comm comm, std::string& bytes) {
    std::uint64_t size = bytes.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm);
    bytes.resize(static_cast<std::size_t>(size));
    constexpr std::uint64_t piece = std::uint64_t{1} << 30;
    for (std::uint64_t offset = 0; offset < size; offset += piece) {
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Ibcast(bytes.data() + offset, static_cast<int>(std::min(piece, size - offset)), MPI_CHAR, 0, comm,
                   &request);
        support::wait_yielding(request);
    }
}

latency_summary summarize(std::vector<float> samples) {
    latency_summary summary;
    summary.samples = samples.size();
    if (samples.empty())
        return summary;
    std::sort(samples.begin(), samples.end());
    double sum = 0;
    for (const float sample : samples)
        sum += sample;
    auto at = [&](double fraction) {
        const auto index = static_cast<std::size_t>(fraction * static_cast<double>(samples.size() - 1) + 0.5);
        return static_cast<double>(samples[std::min(index, samples.size() - 1)]);
    };
    summary.mean_us = sum / static_cast<double>(samples.size());
    summary.median_us = at(0.5);
    summary.p90_us = at(0.9);
    summary.p99_us = at(0.99);
    summary.min_us = samples.front();
    summary.max_us = samples.back();
    return summary;
}

// ---- the clients' loop -------------------------------------------------------------

struct timings {
    std::vector<float> latency_us;   // by position in this client's share
    std::vector<double> done_at;     // seconds since t0, by position
    double last_done = 0;
};

// Issues `count` operations keeping up to `window` unanswered; an answered
// operation's latency is the time from issuing it to its get() returning
// (window 1: exact; larger windows wait on the oldest first).
template <class Request, class Issue, class Complete>
void run_windowed(std::size_t count, std::size_t window, double t0, Issue&& issue, Complete&& complete,
                  timings& timing) {
    timing.latency_us.assign(count, 0.0f);
    timing.done_at.assign(count, 0.0);
    struct slot {
        Request request;
        double start;
        std::size_t index;
    };
    std::vector<slot> slots;
    slots.reserve(window);
    std::size_t oldest = 0;  // position in `slots` of the oldest, when it is a ring
    auto finish = [&](slot& entry) {
        auto result = entry.request.get();
        const double now = runtime::now_seconds();
        timing.latency_us[entry.index] = static_cast<float>((now - entry.start) * 1e6);
        timing.done_at[entry.index] = now - t0;
        timing.last_done = std::max(timing.last_done, now - t0);
        complete(entry.index, std::move(result));
    };
    std::size_t next = 0;
    std::size_t open = 0;
    while (next < count || open > 0) {
        while (next < count && open < window) {
            const double start = runtime::now_seconds();
            Request request = issue(next);
            if (slots.size() < window) {
                slots.push_back(slot{std::move(request), start, next});
            } else {
                // Reuse the slot of the oldest finished: the ring position after the open ones.
                slot& entry = slots[(oldest + open) % window];
                entry.request = std::move(request);
                entry.start = start;
                entry.index = next;
            }
            ++open;
            ++next;
        }
        // Wait for the oldest, then take every later one already answered, in order.
        finish(slots[oldest]);
        oldest = (oldest + 1) % window;
        --open;
        while (open > 0 && slots[oldest].request.test()) {
            finish(slots[oldest]);
            oldest = (oldest + 1) % window;
            --open;
        }
    }
}

// The share of client `client` among `clients`: contiguous blocks or every
// clients-th word.
std::vector<std::size_t> share_of(std::size_t words, int client, int clients, share_kind share) {
    std::vector<std::size_t> indices;
    const auto c = static_cast<std::size_t>(client);
    const auto n = static_cast<std::size_t>(clients);
    if (share == share_kind::strided) {
        for (std::size_t index = c; index < words; index += n)
            indices.push_back(index);
    } else {
        const std::size_t begin = words * c / n;
        const std::size_t end = words * (c + 1) / n;
        for (std::size_t index = begin; index < end; ++index)
            indices.push_back(index);
    }
    return indices;
}

struct node_info {
    bool oversubscribed = false;
    int cores = 0;
    int ranks = 0;
};

node_info inspect_nodes(MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int cores = online > 0 ? static_cast<int>(online) : 1;
    // The most loaded node: ranks minus cores, maximal.
    int mine[2] = {local - cores, local};
    int worst[2] = {0, 0};
    MPI_Allreduce(mine, worst, 2, MPI_INT, MPI_MAX, comm);
    node_info info;
    info.oversubscribed = worst[0] > 0;
    info.ranks = worst[1];
    info.cores = worst[1] - worst[0];
    return info;
}

double mean_forwards(const linear_hash_map_statistics& stats, std::initializer_list<linear_hash_map_op::kind> ops, std::uint64_t* operations) {
    std::uint64_t count = 0;
    std::uint64_t hops = 0;
    for (const linear_hash_map_op::kind op : ops) {
        for (std::size_t bin = 0; bin < lh_hop_bins; ++bin) {
            const std::uint64_t n = stats.forwards[static_cast<std::size_t>(op)][bin];
            count += n;
            hops += n * bin;
        }
    }
    if (operations != nullptr)
        *operations = count;
    return count == 0 ? 0.0 : static_cast<double>(hops) / static_cast<double>(count);
}

}  // namespace

// ---- the run -----------------------------------------------------------------------

word_build_result run_word_build(MPI_Comm comm, const word_build_options& options) {
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    word_build_result result;
    result.ranks = ranks;
    if (std::string problem = support::agree_on_failure(comm, check_options(options, ranks)); !problem.empty()) {
        result.failure = problem;
        return result;
    }
    const linear_hash_map_config defaults;

    // Rank 0 reads the bytes and opens the trace; every rank parses them (the
    // same bytes give every rank the same verdict).
    std::string bytes;
    std::string trouble;
    if (rank == 0) {
        try {
            bytes = read_file_bytes(options.file);
        } catch (const word_file_error& bad) {
            trouble = bad.what();
        }
        if (trouble.empty() && !options.trace.empty()) {
            // Opened (and truncated) now so that an unwritable path fails before the run.
            if (std::FILE* trace = std::fopen(options.trace.c_str(), "w"))
                std::fclose(trace);
            else
                trouble = "--trace: cannot open " + options.trace + " for writing: " + std::strerror(errno);
        }
    }
    if (std::string problem = support::agree_on_failure(comm, trouble); !problem.empty()) {
        result.failure = problem;
        return result;
    }
    broadcast_bytes(comm, bytes);
    word_list words;
    try {
        words = word_list::parse(std::move(bytes), options.file, options.limit, defaults.max_key_bytes);
    } catch (const word_file_error& bad) {
        trouble = bad.what();
    }
    if (!trouble.empty()) {
        // Every rank found the same problem in the same bytes.
        result.failure = trouble;
        return result;
    }

    // Roles.
    const int clients = options.clients == 0 ? ranks : options.clients;
    const int servers_max = options.servers_max == 0 ? ranks : options.servers_max;
    result.clients = clients;
    result.servers_start = options.servers_start;
    result.servers_max = servers_max;
    for (int client = 0; client < clients; ++client)
        result.client_ranks.push_back(client);
    for (int server = 0; server < servers_max; ++server)
        result.server_ranks.push_back(ranks - 1 - server);
    const bool is_client = rank < clients;
    const int client_index = rank;

    const node_info nodes = inspect_nodes(comm);
    result.oversubscribed = nodes.oversubscribed;
    result.cores_per_node = nodes.cores;
    result.ranks_per_node = nodes.ranks;

    result.words = words.size();
    result.duplicates = words.duplicates();
    result.payload_bytes = words.key_bytes() + words.size() * options.value_bytes;
    result.capacity_automatic = options.server_capacity_bytes == 0;
    result.server_capacity_bytes =
        result.capacity_automatic
            ? default_server_capacity(result.payload_bytes, result.words, options.servers_start, servers_max,
                                      options.split_load)
            : options.server_capacity_bytes;

    const std::vector<std::size_t> mine =
        is_client ? share_of(words.size(), client_index, clients, options.share) : std::vector<std::size_t>{};

    runtime::config runtime_config;
    if (options.buffer_bytes != 0)
        runtime_config.buffer_bytes = options.buffer_bytes;
    runtime_config.blocking_factor = std::max(runtime_config.blocking_factor, options.window);

    std::string key;
    std::string value;
    std::string expected;

    // ---- the hash_map baseline -------------------------------------------------------
    // Run before or after LH*LH (options.baseline_first), so that repetitions
    // can alternate which side meets the warmer machine (issue 52).
    const auto run_baseline = [&] {
        timings base;
        std::uint64_t base_stored = 0;
        {
            hash_map_config config;
            config.runtime = runtime_config;
            config.expected_keys_per_rank = words.size() / static_cast<std::size_t>(servers_max) + 16;
            hash_map<std::string, std::string> map(comm, config);
            support::barrier_yielding(comm);
            const double start = runtime::now_seconds();
            if (is_client) {
                run_windowed<request<insert_result>>(
                    mine.size(), options.window, start,
                    [&](std::size_t position) {
                        const std::string_view word = words[mine[position]];
                        key.assign(word);
                        make_value(word, options.seed, options.value_bytes, value);
                        const std::uint64_t hash = hash_bytes(word.data(), word.size());
                        const int owner = result.server_ranks[static_cast<std::size_t>(
                            reduce_range(mix64(hash), static_cast<std::size_t>(servers_max)))];
                        return map.insert(target_rank{owner}, key, std::span<const std::string>(&value, 1));
                    },
                    [&](std::size_t, insert_result answer) { base_stored += answer.stored; }, base);
            }
            map.flush();
            map.destroy();
        }
        baseline_result baseline_summary;
        baseline_summary.build_seconds = reduce_max(comm, is_client ? base.last_done : 0.0);
        baseline_summary.stored = reduce_sum<1>(comm, {base_stored})[0];
        std::vector<float> latencies = gather_vectors(comm, base.latency_us);
        if (rank == 0)
            baseline_summary.insert_latency = summarize(std::move(latencies));
        result.baseline = baseline_summary;
    };
    if (options.baseline && options.baseline_first)
        run_baseline();

    // ---- LH*LH: build, flush, look up --------------------------------------------------
    timings build;
    timings lookup;
    std::uint64_t stored = 0, rejected = 0, retried = 0, found = 0, wrong = 0, missing = 0;
    double flush_end = 0;
    double t0 = 0;
    {
        linear_hash_map_config config;
        config.runtime = runtime_config;
        config.server_ranks = result.server_ranks;
        config.client_ranks = result.client_ranks;
        config.initial_servers = static_cast<std::size_t>(options.servers_start);
        config.server_capacity_bytes = result.server_capacity_bytes;
        config.split_load = options.split_load;
        // Records as large as this run's need: the buffer then only has to hold those.
        config.max_value_bytes = std::max<std::size_t>(options.value_bytes, 1);
        linear_hash_map<std::string, std::string> map(comm, config);

        support::barrier_yielding(comm);
        t0 = runtime::now_seconds();
        std::vector<std::size_t> refused;  // positions in `mine` refused for capacity
        if (is_client) {
            run_windowed<request<replace_result>>(
                mine.size(), options.window, t0,
                [&](std::size_t position) {
                    const std::string_view word = words[mine[position]];
                    key.assign(word);
                    make_value(word, options.seed, options.value_bytes, value);
                    return map.insert(key, value);
                },
                [&](std::size_t position, replace_result answer) {
                    if (answer.stored)
                        ++stored;
                    else
                        refused.push_back(position);
                },
                build);
            // With the automatic capacity the file is meant to hold every word: an
            // insert refused because its server filled up while the split that
            // relieves it was still under way (a split takes milliseconds; a few
            // large values fill the headroom sooner) is tried again once the
            // engine has made progress, for up to retry_seconds.  What is still
            // refused then counts as refused.
            const double give_up = runtime::now_seconds() + retry_seconds;
            while (result.capacity_automatic && !refused.empty() && runtime::now_seconds() < give_up) {
                const double pause_until = runtime::now_seconds() + 0.001;
                while (runtime::now_seconds() < pause_until) {
                    runtime::engine_lock lock(map.engine());
                    map.engine().progress();
                }
                std::vector<std::size_t> still;
                for (const std::size_t position : refused) {
                    const std::string_view word = words[mine[position]];
                    key.assign(word);
                    make_value(word, options.seed, options.value_bytes, value);
                    if (map.insert(key, value).get().stored) {
                        ++stored;
                        ++retried;
                    } else {
                        still.push_back(position);
                    }
                }
                refused.swap(still);
                build.last_done = runtime::now_seconds() - t0;
            }
            rejected = refused.size();
        }
        map.flush();
        flush_end = runtime::now_seconds() - t0;

        support::barrier_yielding(comm);
        const double t1 = runtime::now_seconds();
        if (is_client) {
            run_windowed<request<std::optional<std::string>>>(
                mine.size(), options.window, t1,
                [&](std::size_t position) {
                    key.assign(words[mine[position]]);
                    return map.find(key);
                },
                [&](std::size_t position, std::optional<std::string> answer) {
                    if (!answer) {
                        ++missing;
                        return;
                    }
                    make_value(words[mine[position]], options.seed, options.value_bytes, expected);
                    if (*answer == expected)
                        ++found;
                    else
                        ++wrong;
                },
                lookup);
        }
        map.flush();
        result.stats = map.gather_statistics();
        map.destroy();
    }

    // ---- gather the LH*LH results on rank 0 ------------------------------------------
    const auto counters = reduce_sum<6>(comm, {stored, rejected, found, wrong, missing, retried});
    result.words_inserted = counters[0];
    result.rejected = counters[1];
    result.words_found = counters[2];
    result.wrong_values = counters[3];
    result.missing = counters[4];
    result.retried = counters[5];
    result.build_seconds = reduce_max(comm, is_client ? build.last_done : 0.0);
    result.build_flush_seconds = reduce_max(comm, flush_end);
    result.lookup_seconds = reduce_max(comm, is_client ? lookup.last_done : 0.0);

    std::vector<int> latency_counts;
    std::vector<float> insert_latencies = gather_vectors(comm, build.latency_us, &latency_counts);
    const std::vector<double> done_at = gather_vectors(comm, build.done_at);
    const std::vector<float> find_latencies = gather_vectors(comm, lookup.latency_us);
    const std::vector<double> last_done = gather_vectors(comm, std::vector<double>{is_client ? build.last_done : -1.0});
    const std::vector<double> starts = gather_vectors(comm, std::vector<double>{t0});

    result.max_forwards = result.stats.max_forwards();
    result.forwards_per_op = mean_forwards(result.stats, {linear_hash_map_op::insert, linear_hash_map_op::find}, nullptr);
    result.forwards_per_insert = mean_forwards(result.stats, {linear_hash_map_op::insert}, nullptr);
    result.forwards_per_find = mean_forwards(result.stats, {linear_hash_map_op::find}, nullptr);

    if (rank == 0) {
        if (!latency_counts.empty())
            result.client0_latency_us.assign(insert_latencies.begin(), insert_latencies.begin() + latency_counts[0]);
        for (int client = 0; client < clients; ++client)
            result.client_build_seconds.push_back(last_done[static_cast<std::size_t>(client)]);
        result.insert_latency = summarize(std::move(insert_latencies));
        result.find_latency = summarize(find_latencies);
        std::vector<double> sorted_done = done_at;
        std::sort(sorted_done.begin(), sorted_done.end());
        // The curve: about 2000 points, and the last one.
        const std::size_t n = sorted_done.size();
        const std::size_t step = std::max<std::size_t>(1, n / 2000);
        for (std::size_t count = step; count <= n; count += step)
            result.curve.emplace_back(sorted_done[count - 1], count);
        if (n > 0 && (result.curve.empty() || result.curve.back().second != n))
            result.curve.emplace_back(sorted_done[n - 1], n);
        for (const lh_split_record& record : result.stats.splits) {
            split_point point;
            point.record = record;
            const double base =
                record.from_rank >= 0 && record.from_rank < ranks ? starts[static_cast<std::size_t>(record.from_rank)] : t0;
            point.start_seconds = record.start_seconds - base;
            point.end_seconds = record.end_seconds - base;
            point.insertions = static_cast<std::uint64_t>(
                std::upper_bound(sorted_done.begin(), sorted_done.end(), point.start_seconds) - sorted_done.begin());
            result.splits.push_back(point);
        }
    }

    if (options.baseline && !options.baseline_first)
        run_baseline();
    return result;
}

// ---- output ----------------------------------------------------------------------

namespace {

using support::usage_error;

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string with_commas(std::uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (std::size_t index = 0; index < digits.size(); ++index) {
        if (index > 0 && (digits.size() - index) % 3 == 0)
            out.push_back(',');
        out.push_back(digits[index]);
    }
    return out;
}

std::string run_fields(const word_build_result& result, const word_build_options& options) {
    return ",\"clients\":" + std::to_string(result.clients) + ",\"servers_start\":" +
           std::to_string(result.servers_start) + ",\"servers_max\":" + std::to_string(result.servers_max) +
           ",\"value_bytes\":" + std::to_string(options.value_bytes) + ",\"words\":" + std::to_string(result.words) +
           ",\"oversubscribed\":" + (result.oversubscribed ? "true" : "false") +
           ",\"cores\":" + std::to_string(result.cores_per_node) + ",\"window\":" + std::to_string(options.window) +
           ",\"server_capacity_bytes\":" + std::to_string(result.server_capacity_bytes) +
           ",\"split_load\":" + support::json_number(options.split_load) +
           ",\"share\":" + support::json_string(options.share == share_kind::strided ? "strided" : "contiguous") +
           ",\"file\":" + support::json_string(base_name(options.file));
}

std::string latency_fields(const latency_summary& summary) {
    return ",\"median\":" + support::json_number(summary.median_us) + ",\"p90\":" + support::json_number(summary.p90_us) +
           ",\"p99\":" + support::json_number(summary.p99_us) + ",\"min\":" + support::json_number(summary.min_us) +
           ",\"max\":" + support::json_number(summary.max_us) + ",\"samples\":" + std::to_string(summary.samples);
}

void print_json(const word_build_result& result, const word_build_options& options) {
    const std::string common = run_fields(result, options);
    auto line = [&](std::string_view metric, double value, std::string_view unit, const std::string& extra = {}) {
        std::printf("{\"bench\":\"mpidict_words\",\"metric\":%s,\"value\":%s,\"unit\":%s,\"ranks\":%d,\"seed\":%llu%s%s}\n",
                    support::json_string(metric).c_str(), support::json_number(value).c_str(), support::json_string(unit).c_str(), result.ranks,
                    static_cast<unsigned long long>(options.seed), common.c_str(), extra.c_str());
    };
    const auto words = static_cast<double>(result.words);
    line("words_inserted", static_cast<double>(result.words_inserted), "count",
         ",\"rejected\":" + std::to_string(result.rejected) + ",\"retried\":" + std::to_string(result.retried) +
             ",\"duplicates\":" + std::to_string(result.duplicates));
    line("words_found", static_cast<double>(result.words_found), "count",
         ",\"wrong_values\":" + std::to_string(result.wrong_values) + ",\"missing\":" + std::to_string(result.missing));
    line("max_forwards", result.max_forwards, "count");
    line("splits", static_cast<double>(result.splits.size()), "count");
    line("servers_active", result.stats.servers_active, "count",
         ",\"level\":" + std::to_string(result.stats.level) + ",\"split_next\":" + std::to_string(result.stats.split_next));
    line("build_seconds", result.build_seconds, "s", ",\"with_flush\":" + support::json_number(result.build_flush_seconds));
    line("insert_rate", result.build_seconds > 0 ? words / result.build_seconds : 0, "ops/s");
    line("avg_insertion_time_us", result.words > 0 ? result.build_seconds * 1e6 / words : 0, "us");
    line("insert_latency_us", result.insert_latency.mean_us, "us", latency_fields(result.insert_latency));
    line("forwards_per_op", result.forwards_per_op, "forwards/op",
         ",\"insert\":" + support::json_number(result.forwards_per_insert) + ",\"find\":" + support::json_number(result.forwards_per_find));
    line("iams", static_cast<double>(result.stats.iams_sent), "count",
         ",\"iams_applied\":" + std::to_string(result.stats.iams_applied) +
             ",\"deferred\":" + std::to_string(result.stats.deferred));
    line("lookup_seconds", result.lookup_seconds, "s");
    line("find_latency_us", result.find_latency.mean_us, "us", latency_fields(result.find_latency));
    if (result.baseline) {
        const baseline_result& base = *result.baseline;
        line("hash_map_build_seconds", base.build_seconds, "s", ",\"stored\":" + std::to_string(base.stored));
        line("hash_map_insert_latency_us", base.insert_latency.mean_us, "us", latency_fields(base.insert_latency));
        line("insert_latency_vs_hash_map",
             base.insert_latency.mean_us > 0 ? result.insert_latency.mean_us / base.insert_latency.mean_us : 0, "ratio");
        line("build_time_vs_hash_map", base.build_seconds > 0 ? result.build_seconds / base.build_seconds : 0, "ratio");
    }
    line("verified", result.verified() ? 1 : 0, "bool");
    std::fflush(stdout);
}

// Medians over --repeat runs (rank 0): build time and mean insert latency of
// both sides and their ratios, each run's order and ratio listed.
void print_repeats(const std::vector<word_build_result>& runs, const word_build_options& options) {
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    std::vector<double> build, latency, base_build, base_latency, latency_ratio, build_ratio;
    std::string order = "[", ratios = "[";
    for (std::size_t rep = 0; rep < runs.size(); ++rep) {
        const word_build_result& r = runs[rep];
        build.push_back(r.build_seconds);
        latency.push_back(r.insert_latency.mean_us);
        if (r.baseline) {
            base_build.push_back(r.baseline->build_seconds);
            base_latency.push_back(r.baseline->insert_latency.mean_us);
            latency_ratio.push_back(r.insert_latency.mean_us / r.baseline->insert_latency.mean_us);
            build_ratio.push_back(r.build_seconds / r.baseline->build_seconds);
            ratios += (rep ? "," : "") + support::json_number(latency_ratio.back());
        }
        const bool baseline_first = options.baseline && (options.baseline_first != (rep % 2 == 1));
        order += std::string(rep ? "," : "") + (baseline_first ? "\"hash_map first\"" : "\"lhlh first\"");
    }
    order += "]";
    ratios += "]";
    const word_build_result& last = runs.back();
    double load[3] = {0, 0, 0};
    (void)getloadavg(load, 3);
    const std::string common = run_fields(last, options) + ",\"repeats\":" + std::to_string(runs.size()) +
                               ",\"order\":" + order + ",\"load_1m\":" + support::json_number(load[0]);
    auto line = [&](std::string_view metric, double value, std::string_view unit, const std::string& extra = {}) {
        if (options.json)
            std::printf("{\"bench\":\"mpidict_words\",\"metric\":%s,\"value\":%s,\"unit\":%s,\"ranks\":%d,\"seed\":%llu%s%s}\n",
                        support::json_string(metric).c_str(), support::json_number(value).c_str(),
                        support::json_string(unit).c_str(), last.ranks, static_cast<unsigned long long>(options.seed),
                        common.c_str(), extra.c_str());
    };
    line("median_build_seconds", median(build), "s");
    line("median_insert_latency_us", median(latency), "us");
    if (!latency_ratio.empty()) {
        line("median_hash_map_build_seconds", median(base_build), "s");
        line("median_hash_map_insert_latency_us", median(base_latency), "us");
        line("median_insert_latency_vs_hash_map", median(latency_ratio), "ratio",
             ",\"per_run\":" + ratios + ",\"lhlh_us\":" + support::json_number(median(latency)) +
                 ",\"hash_map_us\":" + support::json_number(median(base_latency)));
        line("median_build_time_vs_hash_map", median(build_ratio), "ratio",
             ",\"lhlh_s\":" + support::json_number(median(build)) +
                 ",\"hash_map_s\":" + support::json_number(median(base_build)));
    }
    std::fflush(stdout);
    if (!options.quiet) {
        std::fprintf(stderr, "median of %zu runs (%s, load %.2f %.2f %.2f): LH*LH build %.3f s, insert latency mean %.1f us",
                     runs.size(), last.oversubscribed ? "OVERSUBSCRIBED" : "ranks <= cores", load[0], load[1], load[2],
                     median(build), median(latency));
        if (!latency_ratio.empty())
            std::fprintf(stderr, "; hash_map build %.3f s, latency %.1f us; LH*LH/hash_map latency %.2f, build time %.2f "
                                 "(order alternates: %s)",
                         median(base_build), median(base_latency), median(latency_ratio), median(build_ratio),
                         order.c_str());
        std::fprintf(stderr, "\n");
    }
}

void print_table(const word_build_result& result, const word_build_options& options, const std::string& program) {
    std::FILE* out = stderr;
    auto ranks_text = [](const std::vector<int>& list) {
        std::string text;
        for (const int rank : list) {
            if (!text.empty())
                text.push_back(',');
            text.append(std::to_string(rank));
        }
        return text;
    };
    std::fprintf(out, "\n%s %s: %s words (%s duplicates), %zu-byte values, %s payload bytes\n", program.c_str(),
                 base_name(options.file).c_str(), with_commas(result.words).c_str(),
                 with_commas(result.duplicates).c_str(), options.value_bytes,
                 with_commas(result.payload_bytes).c_str());
    std::fprintf(out, "  ranks %d (%s: %d ranks on %d cores per node); window %zu; share %s\n", result.ranks,
                 result.oversubscribed ? "oversubscribed" : "not oversubscribed", result.ranks_per_node,
                 result.cores_per_node, options.window,
                 options.share == share_kind::strided ? "strided" : "contiguous");
    std::fprintf(out, "  clients %d (ranks %s); servers start %d, max %d (ranks in activation order %s)\n",
                 result.clients, ranks_text(result.client_ranks).c_str(), result.servers_start, result.servers_max,
                 ranks_text(result.server_ranks).c_str());
    std::fprintf(out, "  server capacity %s bytes (%s), split load %.2f\n",
                 with_commas(result.server_capacity_bytes).c_str(),
                 result.capacity_automatic ? "automatic" : "--server-capacity", options.split_load);
    std::fprintf(out, "build:   %s stored (%s on a retry), %s refused, %.3f s (%.3f s with the flush), %.0f inserts/s\n",
                 with_commas(result.words_inserted).c_str(), with_commas(result.retried).c_str(),
                 with_commas(result.rejected).c_str(),
                 result.build_seconds, result.build_flush_seconds,
                 result.build_seconds > 0 ? static_cast<double>(result.words) / result.build_seconds : 0.0);
    std::fprintf(out, "         insert latency mean %.1f us, median %.1f, p99 %.1f, max %.1f; "
                      "average insertion time (build / words) %.1f us\n",
                 result.insert_latency.mean_us, result.insert_latency.median_us, result.insert_latency.p99_us,
                 result.insert_latency.max_us,
                 result.words > 0 ? result.build_seconds * 1e6 / static_cast<double>(result.words) : 0.0);
    std::fprintf(out, "splits:  %zu; servers active %d; file level i = %d, n = %d\n", result.splits.size(),
                 result.stats.servers_active, result.stats.level, result.stats.split_next);
    if (!result.splits.empty()) {
        std::fprintf(out, "  %8s %9s %11s %9s %9s %14s %10s %6s\n", "address", "ranks", "insertion", "start s",
                     "end s", "shipped B", "entries", "msgs");
        for (const split_point& split : result.splits) {
            char ranks[32];
            std::snprintf(ranks, sizeof ranks, "%d->%d", split.record.from_rank, split.record.to_rank);
            char addresses[32];
            std::snprintf(addresses, sizeof addresses, "%d->%d", split.record.from_address, split.record.to_address);
            std::fprintf(out, "  %8s %9s %11s %9.3f %9.3f %14s %10s %6llu\n", addresses, ranks,
                         with_commas(split.insertions).c_str(), split.start_seconds, split.end_seconds,
                         with_commas(split.record.bytes_shipped).c_str(),
                         with_commas(split.record.entries_shipped).c_str(),
                         static_cast<unsigned long long>(split.record.messages));
        }
    }
    std::fprintf(out, "  %8s %5s %10s %14s %6s %10s %10s\n", "address", "rank", "entries", "payload B", "load",
                 "served", "forwarded");
    for (const lh_server_info& server : result.stats.servers) {
        std::fprintf(out, "  %8s %5d %10s %14s %6.3f %10s %10s\n",
                     server.address < 0 ? "dormant" : std::to_string(server.address).c_str(), server.rank,
                     with_commas(server.entries).c_str(), with_commas(server.payload_bytes).c_str(),
                     server.load_factor, with_commas(server.served).c_str(), with_commas(server.forwarded).c_str());
    }
    std::fprintf(out, "lookup:  %s found with the right value, %s wrong, %s missing, %.3f s; find latency mean %.1f us\n",
                 with_commas(result.words_found).c_str(), with_commas(result.wrong_values).c_str(),
                 with_commas(result.missing).c_str(), result.lookup_seconds, result.find_latency.mean_us);
    std::fprintf(out, "forwards: %.5f per operation (insert %.5f, find %.5f), max %d; IAMs sent %llu, applied %llu; "
                      "deferred %llu\n",
                 result.forwards_per_op, result.forwards_per_insert, result.forwards_per_find, result.max_forwards,
                 static_cast<unsigned long long>(result.stats.iams_sent),
                 static_cast<unsigned long long>(result.stats.iams_applied),
                 static_cast<unsigned long long>(result.stats.deferred));
    if (result.baseline) {
        const baseline_result& base = *result.baseline;
        std::fprintf(out, "hash_map baseline (static placement on the %d server ranks): %.3f s, insert latency mean "
                          "%.1f us, median %.1f; LH*LH/hash_map latency %.2f, build time %.2f\n",
                     result.servers_max, base.build_seconds, base.insert_latency.mean_us,
                     base.insert_latency.median_us,
                     base.insert_latency.mean_us > 0 ? result.insert_latency.mean_us / base.insert_latency.mean_us : 0.0,
                     base.build_seconds > 0 ? result.build_seconds / base.build_seconds : 0.0);
    }
    std::fprintf(out, "verified: %s\n", result.verified() ? "yes" : "NO");
    std::fflush(out);
}

bool write_trace(const word_build_result& result, const word_build_options& options) {
    std::FILE* out = std::fopen(options.trace.c_str(), "w");
    if (out == nullptr)
        return false;
    std::fprintf(out, "{\"bench\":\"mpidict_words\",\"ranks\":%d,\"seed\":%llu%s", result.ranks,
                 static_cast<unsigned long long>(options.seed), run_fields(result, options).c_str());
    std::fprintf(out, ",\n\"build_seconds\":%s,\"build_flush_seconds\":%s,\"lookup_seconds\":%s",
                 support::json_number(result.build_seconds).c_str(), support::json_number(result.build_flush_seconds).c_str(),
                 support::json_number(result.lookup_seconds).c_str());
    std::fprintf(out, ",\n\"insert_latency_us\":{\"mean\":%s%s}", support::json_number(result.insert_latency.mean_us).c_str(),
                 latency_fields(result.insert_latency).c_str());
    std::fprintf(out, ",\n\"forwards_per_op\":%s,\"max_forwards\":%d,\"iams\":%llu,\"servers_active\":%d",
                 support::json_number(result.forwards_per_op).c_str(), result.max_forwards,
                 static_cast<unsigned long long>(result.stats.iams_sent), result.stats.servers_active);
    std::fprintf(out, ",\n\"splits\":[");
    for (std::size_t index = 0; index < result.splits.size(); ++index) {
        const split_point& split = result.splits[index];
        std::fprintf(out,
                     "%s\n {\"from_address\":%d,\"to_address\":%d,\"from_rank\":%d,\"to_rank\":%d,\"start_seconds\":%s,"
                     "\"end_seconds\":%s,\"insertions\":%llu,\"bytes_shipped\":%llu,\"entries_shipped\":%llu,"
                     "\"messages\":%llu}",
                     index == 0 ? "" : ",", split.record.from_address, split.record.to_address, split.record.from_rank,
                     split.record.to_rank, support::json_number(split.start_seconds).c_str(),
                     support::json_number(split.end_seconds).c_str(), static_cast<unsigned long long>(split.insertions),
                     static_cast<unsigned long long>(split.record.bytes_shipped),
                     static_cast<unsigned long long>(split.record.entries_shipped),
                     static_cast<unsigned long long>(split.record.messages));
    }
    std::fprintf(out, "],\n\"servers\":[");
    for (std::size_t index = 0; index < result.stats.servers.size(); ++index) {
        const lh_server_info& server = result.stats.servers[index];
        std::fprintf(out,
                     "%s{\"rank\":%d,\"address\":%d,\"entries\":%llu,\"payload_bytes\":%llu,\"load_factor\":%s,"
                     "\"served\":%llu,\"forwarded\":%llu}",
                     index == 0 ? "" : ",", server.rank, server.address,
                     static_cast<unsigned long long>(server.entries),
                     static_cast<unsigned long long>(server.payload_bytes), support::json_number(server.load_factor).c_str(),
                     static_cast<unsigned long long>(server.served), static_cast<unsigned long long>(server.forwarded));
    }
    std::fprintf(out, "],\n\"client_build_seconds\":[");
    for (std::size_t index = 0; index < result.client_build_seconds.size(); ++index)
        std::fprintf(out, "%s%s", index == 0 ? "" : ",", support::json_number(result.client_build_seconds[index]).c_str());
    std::fprintf(out, "],\n\"curve\":[");
    for (std::size_t index = 0; index < result.curve.size(); ++index)
        std::fprintf(out, "%s[%s,%llu]", index == 0 ? "" : ",", support::json_number(result.curve[index].first).c_str(),
                     static_cast<unsigned long long>(result.curve[index].second));
    std::fprintf(out, "],\n\"client0_latency_us\":[");
    for (std::size_t index = 0; index < result.client0_latency_us.size(); ++index)
        std::fprintf(out, "%s%.2f", index == 0 ? "" : ",", static_cast<double>(result.client0_latency_us[index]));
    std::fprintf(out, "]");
    if (result.baseline)
        std::fprintf(out, ",\n\"hash_map\":{\"build_seconds\":%s,\"insert_latency_us\":{\"mean\":%s%s}}",
                     support::json_number(result.baseline->build_seconds).c_str(),
                     support::json_number(result.baseline->insert_latency.mean_us).c_str(),
                     latency_fields(result.baseline->insert_latency).c_str());
    std::fprintf(out, "}\n");
    const bool good = std::ferror(out) == 0;
    return std::fclose(out) == 0 && good;
}

// ---- options -------------------------------------------------------------------------

// The command line of the program (and of `mpidict words`), into `options`.
support::option_parser make_parser(const std::string& program, word_build_options& options, bool& trace_exit) {
    support::option_parser parser(
        "mpiexec -n <ranks> " + program + " [options] FILE",
        "Builds a linear_hash_map (LH*LH, seed 003) from a word list, one line = one\n"
        "key with a value of --value-bytes, while the file splits from --servers-start\n"
        "onto up to --servers-max servers; then finds every word and checks its value.\n"
        "Clients are ranks 0..C-1, servers ranks p-1, p-2, ..., p-S (a rank may be both).");
    // A rank count: at least 1, at most INT_MAX; `why` explains the minimum.
    const auto add_ranks = [&parser](std::string name, int* target, std::string help, std::string default_text,
                                     std::string why) {
        const std::string flag = "--" + name;
        parser.add_custom(name, "N", std::move(help), std::move(default_text), [=](std::string_view text) {
            const std::uint64_t value = support::parse_count(text, flag);
            if (value < 1)
                throw usage_error(flag + ": must be at least 1" + why);
            if (value > static_cast<std::uint64_t>(INT_MAX))
                throw usage_error(flag + ": '" + std::string(text) + "' is too large");
            *target = static_cast<int>(value);
        });
    };
    add_ranks("clients", &options.clients, "client ranks 0..C-1", "every rank", " (a client rank is needed)");
    add_ranks("servers-start", &options.servers_start, "servers active at the start", "1",
              " (a server must be active)");
    add_ranks("servers-max", &options.servers_max, "servers in all, ranks p-1 down to p-S", "every rank",
              " (no server rank)");
    parser.add_count("value-bytes", &options.value_bytes, "bytes of each value (at most 16384)", 0, SIZE_MAX, "B")
        .add_count("limit", &options.limit, "use only the first W words (0, the default: all)", 1, SIZE_MAX, "W")
        .add_count("server-capacity", &options.server_capacity_bytes,
                   "payload bytes a server holds (0, the default: automatic, sized so the file grows to S servers "
                   "and holds every word; an insert refused while a split is under way is retried)",
                   1, SIZE_MAX, "B")
        .add_custom("split-load", "X", "the token holder splits above this load", "0.8",
                    [&options](std::string_view text) {
                        const std::string copy(text);
                        char* end = nullptr;
                        const double value = std::strtod(copy.c_str(), &end);
                        if (end == copy.c_str() || *end != '\0' || !(value > 0 && value <= 1))
                            throw usage_error("--split-load: '" + copy + "' is not a number in (0, 1]");
                        options.split_load = value;
                    })
        .add_count("buffer-bytes", &options.buffer_bytes, "message buffer of the runtime (0: the default, 64Ki)", 1,
                   SIZE_MAX, "B")
        .add_count("window", &options.window,
                   "outstanding requests per client (1: synchronous, the paper's insert; the latency is per "
                   "request)",
                   1, 65536, "K")
        .add_custom("share", "KIND", "contiguous (block c of the list) or strided", "contiguous",
                    [&options](std::string_view kind) {
                        if (kind == "contiguous")
                            options.share = share_kind::contiguous;
                        else if (kind == "strided")
                            options.share = share_kind::strided;
                        else
                            throw usage_error("--share: '" + std::string(kind) +
                                              "' is not one of contiguous|strided");
                    })
        .add_count("repeat", &options.repeat,
                   "whole runs (the last printed in full, then medians); with --baseline the order of the two "
                   "alternates",
                   1, 1000, "R")
        .add_flag("baseline-first", &options.baseline_first, "with --baseline: build the hash_map first (in run 1)")
        .add_flag("baseline", &options.baseline,
                  "also build a hash_map<string,string> placed by hash on the S server ranks, same clients and "
                  "window")
        .add_flag("json", &options.json, "JSON lines (the benchmark format) on stdout")
        .add_custom("trace", "FILE", "write curve, split points and client 0's latencies (JSON)", "",
                    [&options](std::string_view file) {
                        if (file.empty())
                            throw usage_error("--trace: empty file name");
                        options.trace = std::string(file);
                    })
        .add_count("seed", &options.seed, "seed of the values", 0, UINT64_MAX, "S")
        .add_flag("quiet", &options.quiet, "no table on stderr")
        .add_flag("trace-exit", &trace_exit, "every rank prints its exit code (for tests)")
        .add_positional("word file", &options.file, "FILE")
        .add_epilogue("Counts take suffixes k, M, G (1000s) and Ki, Mi, Gi (1024s).  Exit code 0: every\n"
                      "word found with its value and no operation forwarded more than twice; 1: bad\n"
                      "input or a failed check; 2: usage.\n");
    return parser;
}

}  // namespace

int word_build_main(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "word_build");
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    const support::exit_reporter finish(argc, argv, program, comm);

    word_build_options options;
    bool trace_exit = false;  // read by `finish`
    support::option_parser parser = make_parser(program, options, trace_exit);
    parser.add_check([&] {
        if (const std::string trouble = check_options(options, ranks); !trouble.empty())
            throw usage_error(trouble);
    });
    if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(argc, argv), program))
        return finish(*stop);

    // --repeat R: R whole runs; with --baseline, odd runs build the hash_map
    // first, so the two sides alternate (issue 52).  The last run is printed in
    // full, then medians over the runs.
    std::vector<word_build_result> runs;
    bool all_verified = true;
    for (std::size_t rep = 0; rep < std::max<std::size_t>(options.repeat, 1); ++rep) {
        word_build_options this_run = options;
        this_run.baseline_first = options.baseline && (options.baseline_first != (rep % 2 == 1));
        runs.push_back(run_word_build(comm, this_run));
        if (!runs.back().failure.empty()) {
            if (rank == 0)
                std::fprintf(stderr, "%s: error: %s\n", program.c_str(), runs.back().failure.c_str());
            return finish(1);
        }
        all_verified = all_verified && (rank != 0 || runs.back().verified());
    }
    const word_build_result& result = runs.back();
    int verdict = 0;
    if (rank == 0 && runs.size() > 1)
        print_repeats(runs, options);
    if (rank == 0 && !all_verified && result.verified()) {
        std::fprintf(stderr, "%s: error: verification failed in an earlier repetition\n", program.c_str());
        verdict = 1;
    }
    if (rank == 0) {
        if (options.json)
            print_json(result, options);
        if (!options.quiet)
            print_table(result, options, program);
        if (!options.trace.empty() && !write_trace(result, options)) {
            std::fprintf(stderr, "%s: error: --trace: cannot write %s: %s\n", program.c_str(), options.trace.c_str(),
                         std::strerror(errno));
            verdict = 1;
        }
        if (!result.verified()) {
            std::string why;
            if (result.words_found != result.words)
                why = std::to_string(result.words - std::min(result.words, result.words_found)) + " of " +
                      std::to_string(result.words) + " words not found with their value (" +
                      std::to_string(result.rejected) + " inserts refused for capacity, " +
                      std::to_string(result.wrong_values) + " wrong values, " + std::to_string(result.missing) +
                      " missing)";
            if (result.max_forwards > 2)
                why += std::string(why.empty() ? "" : "; ") + "an operation was forwarded " +
                       std::to_string(result.max_forwards) + " times (LH* allows 2)";
            std::fprintf(stderr, "%s: error: verification failed: %s\n", program.c_str(), why.c_str());
            verdict = 1;
        }
    }
    MPI_Bcast(&verdict, 1, MPI_INT, 0, comm);
    return finish(verdict);
}

}  // namespace mpidict::apps::word_build
