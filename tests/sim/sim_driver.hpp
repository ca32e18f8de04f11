#pragma once
// The command line and seed loop shared by the simulation tests.
//
//   --ranks P[,P...]   virtual rank counts (default: 1,2,3,7,16,64)
//   --seeds N          seeds per rank count (default: per test)
//   --first-seed S     first seed of the loop (default 1)
//   --seed S           replay exactly one seed (implies --seeds 1, prints the trace)
//   --trace            print every simulation event as it happens (with --seed)
//   --soak             many more seeds and larger workloads; --seeds/--minutes bound it
//   --minutes M        stop starting new seeds after M minutes
//   --ops N            operations per rank and phase (default: chosen from the rank count)
//   --verbose          one line per seed
//
// A failing seed prints the reason, the exact command that replays it and the
// last simulation events.  A crash (abort, segfault) prints the seed being run.

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "mpidict/runtime/sim_transport.hpp"

namespace mpidict::sim_test {

struct command_line {
    std::string program;
    std::vector<int> ranks{1, 2, 3, 7, 16, 64};
    bool ranks_given = false;
    long long seeds = -1;  // -1: the test's default
    std::uint64_t first_seed = 1;
    bool single_seed = false;
    bool trace = false;
    bool soak = false;
    double minutes = 0;
    int ops = 0;
    bool verbose = false;
    std::vector<std::string> extra;  // flags the test itself interprets
};

inline std::vector<int> parse_rank_list(std::string_view text) {
    std::vector<int> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string part(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (!part.empty())
            out.push_back(std::atoi(part.c_str()));
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    return out;
}

inline command_line parse_command_line(int argc, char** argv) {
    command_line cli;
    cli.program = argv[0];
    for (int index = 1; index < argc; ++index) {
        const std::string_view arg = argv[index];
        auto value = [&]() -> const char* {
            if (index + 1 >= argc) {
                std::fprintf(stderr, "%s: %s needs a value\n", argv[0], argv[index]);
                std::exit(2);
            }
            return argv[++index];
        };
        if (arg == "--ranks") {
            cli.ranks = parse_rank_list(value());
            cli.ranks_given = true;
        } else if (arg == "--seeds") {
            cli.seeds = std::atoll(value());
        } else if (arg == "--first-seed") {
            cli.first_seed = std::strtoull(value(), nullptr, 10);
        } else if (arg == "--seed") {
            cli.first_seed = std::strtoull(value(), nullptr, 10);
            cli.seeds = 1;
            cli.single_seed = true;
        } else if (arg == "--trace") {
            cli.trace = true;
        } else if (arg == "--soak") {
            cli.soak = true;
        } else if (arg == "--minutes") {
            cli.minutes = std::atof(value());
        } else if (arg == "--ops") {
            cli.ops = std::atoi(value());
        } else if (arg == "--verbose") {
            cli.verbose = true;
        } else if (arg == "--help" || arg == "-h") {
            std::fprintf(stderr,
                         "usage: %s [--ranks P[,P...]] [--seeds N] [--first-seed S] [--seed S [--trace]] "
                         "[--soak] [--minutes M] [--ops N] [--verbose] [test flags]\n",
                         argv[0]);
            std::exit(0);
        } else {
            cli.extra.emplace_back(arg);
            // Test flags may take a value: keep it next to its flag.
            if (index + 1 < argc && argv[index + 1][0] != '-')
                cli.extra.emplace_back(argv[++index]);
        }
    }
    for (int ranks : cli.ranks) {
        if (ranks < 1 || ranks > 4096) {
            std::fprintf(stderr, "%s: rank count %d outside [1, 4096]\n", argv[0], ranks);
            std::exit(2);
        }
    }
    return cli;
}

inline bool has_flag(const command_line& cli, std::string_view flag) {
    for (const auto& each : cli.extra)
        if (each == flag)
            return true;
    return false;
}

inline std::string flag_value(const command_line& cli, std::string_view flag, std::string fallback = {}) {
    for (std::size_t index = 0; index + 1 < cli.extra.size(); ++index)
        if (cli.extra[index] == flag)
            return cli.extra[index + 1];
    return fallback;
}

// What a crash handler prints: kept preformatted because a signal handler may
// only write().
inline char* crash_note() {
    static char note[512] = "";
    return note;
}

inline void crash_handler(int signal_number) {
    const char* note = crash_note();
    if (note[0] != '\0') {
        ssize_t ignored = write(STDERR_FILENO, note, std::strlen(note));
        (void)ignored;
    }
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
}

inline void install_crash_handler() {
    std::signal(SIGABRT, crash_handler);
    std::signal(SIGSEGV, crash_handler);
    std::signal(SIGBUS, crash_handler);
    std::signal(SIGFPE, crash_handler);
    std::signal(SIGILL, crash_handler);
}

inline std::string replay_command(const command_line& cli, int ranks, std::uint64_t seed, std::string_view flags) {
    std::string out = cli.program + " --ranks " + std::to_string(ranks) + " --seed " + std::to_string(seed);
    if (cli.ops != 0)
        out += " --ops " + std::to_string(cli.ops);
    if (cli.soak)
        out += " --soak";
    if (!flags.empty()) {
        out += ' ';
        out += flags;
    }
    return out;
}

inline void set_crash_note(const command_line& cli, int ranks, std::uint64_t seed, std::string_view flags) {
    const std::string text = "\nmpidict sim: crashed while running seed " + std::to_string(seed) + " with " +
                             std::to_string(ranks) + " virtual ranks; replay: " +
                             replay_command(cli, ranks, seed, flags) + " --trace\n";
    std::snprintf(crash_note(), 512, "%s", text.c_str());
}

inline void print_failure(const command_line& cli, const sim::result& outcome, std::string_view flags,
                          std::string_view description) {
    std::fprintf(stderr,
                 "\n==== simulation FAILED: %s\n"
                 "     configuration: %.*s\n"
                 "     replay: %s\n"
                 "     (add --trace to print every event; the last %s events follow)\n%s\n",
                 outcome.failure.c_str(), static_cast<int>(description.size()), description.data(),
                 replay_command(cli, outcome.ranks, outcome.seed, flags).c_str(), "kept", outcome.trace.c_str());
    std::fflush(stderr);
}

class stopwatch {
public:
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }

private:
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
};

}  // namespace mpidict::sim_test
