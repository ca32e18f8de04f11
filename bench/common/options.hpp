#pragma once
// Command-line options for the benchmarks: "--name value", "--name=value" and
// bare flags ("--name").  Every rank parses the same argv, so every rank reaches
// the same verdict on bad input and they can all exit together.
//
//   mpidict::bench::options args(argc, argv);
//   const auto n = args.get_u64("keys-per-rank", 4'000'000);
//   args.finish();   // throws on unknown options

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mpidict::bench {

class options {
public:
    options(int argc, char** argv) {
        for (int index = 1; index < argc; ++index) {
            std::string_view word = argv[index];
            if (word.substr(0, 2) != "--")
                throw std::invalid_argument("unexpected argument '" + std::string(word) + "' (options start with --)");
            word.remove_prefix(2);
            entry e;
            if (const auto equals = word.find('='); equals != std::string_view::npos) {
                e.name = std::string(word.substr(0, equals));
                e.value = std::string(word.substr(equals + 1));
                e.has_value = true;
            } else {
                e.name = std::string(word);
                if (index + 1 < argc && std::string_view(argv[index + 1]).substr(0, 2) != "--") {
                    e.value = argv[++index];
                    e.has_value = true;
                }
            }
            m_entries.push_back(std::move(e));
        }
    }

    // A non-negative integer option; accepts digit separators ' and _ (4'000'000).
    std::uint64_t get_u64(std::string_view name, std::uint64_t fallback) {
        entry* e = lookup(name);
        if (!e)
            return fallback;
        if (!e->has_value)
            throw std::invalid_argument("--" + std::string(name) + " needs a value");
        std::string digits;
        for (const char c : e->value)
            if (c != '\'' && c != '_' && c != ',')
                digits += c;
        char* end = nullptr;
        errno = 0;
        const unsigned long long value = std::strtoull(digits.c_str(), &end, 10);
        if (digits.empty() || *end != '\0' || errno != 0 || digits[0] == '-')
            throw std::invalid_argument("--" + std::string(name) + " = '" + e->value +
                                        "' is not a non-negative integer");
        return value;
    }

    double get_double(std::string_view name, double fallback) {
        entry* e = lookup(name);
        if (!e)
            return fallback;
        char* end = nullptr;
        const double value = e->has_value ? std::strtod(e->value.c_str(), &end) : 0;
        if (!e->has_value || *end != '\0')
            throw std::invalid_argument("--" + std::string(name) + " = '" + e->value + "' is not a number");
        return value;
    }

    // A bare flag; "--name=0" / "--name=false" turn it off.
    bool flag(std::string_view name) {
        entry* e = lookup(name);
        if (!e)
            return false;
        return !(e->has_value && (e->value == "0" || e->value == "false" || e->value == "no"));
    }

    // Throws if any option was given that no get_*/flag call asked for.
    void finish() const {
        for (const entry& e : m_entries)
            if (!e.used)
                throw std::invalid_argument("unknown option --" + e.name);
    }

private:
    struct entry {
        std::string name;
        std::string value;
        bool has_value = false;
        bool used = false;
    };

    entry* lookup(std::string_view name) {
        entry* found = nullptr;
        for (entry& e : m_entries) {
            if (e.name == name) {
                e.used = true;
                found = &e;  // the last occurrence wins
            }
        }
        return found;
    }

    std::vector<entry> m_entries;
};

}  // namespace mpidict::bench
