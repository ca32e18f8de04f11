#pragma once
// A small command-line option parser for the `mpidict` tool's subcommands.
//
// Options are long-only: `--name value` or `--name=value`; `-h`/`--help` asks
// for help.  Counts accept a decimal or scientific integer with an optional
// suffix: k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024), so
// `--keys 2e5`, `--keys 200k` and `--buffer-bytes 64Ki` all work.  Every
// mistake throws usage_error with a message that names the option and the value.

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mpidict::tool {

// A mistake on the command line: the tool prints it with a hint and exits 2.
class usage_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses "200000", "2e5", "200k", "64Ki"; throws usage_error naming `what`.
std::uint64_t parse_count(std::string_view text, std::string_view what);

class option_parser {
public:
    // `usage` is the synopsis after the program name, e.g. "hash [options]".
    option_parser(std::string usage, std::string description);

    // A non-negative integer in [minimum, maximum]; the target's value is the default.
    option_parser& add_count(std::string name, std::uint64_t* target, std::string help,
                             std::uint64_t minimum = 0, std::uint64_t maximum = UINT64_MAX,
                             std::string placeholder = "N");
    // A real number in [minimum, maximum].
    option_parser& add_real(std::string name, double* target, std::string help, double minimum,
                            double maximum, std::string placeholder = "X");
    // One word out of `choices`.
    option_parser& add_choice(std::string name, std::string* target, std::vector<std::string> choices,
                              std::string help);
    // Free text (a file name, ...).
    option_parser& add_text(std::string name, std::string* target, std::string help,
                            std::string placeholder = "TEXT");
    // A switch without a value.
    option_parser& add_flag(std::string name, bool* target, std::string help);
    // A check across options run after parsing; it throws usage_error.
    option_parser& add_check(std::function<void()> check);
    // Free text appended to the help (examples, notes).
    option_parser& add_epilogue(std::string text);

    // Parses `arguments` (those after the command name).  Returns false if help
    // was asked for; throws usage_error on any mistake.
    bool parse(std::span<char* const> arguments);

    std::string help() const;
    const std::string& usage() const { return m_usage; }

private:
    struct option {
        std::string name;         // without the leading "--"
        std::string placeholder;  // empty for flags
        std::string help;
        std::string default_text;
        std::function<void(std::string_view)> assign;  // flags get ""
    };
    const option* find(std::string_view name) const;
    option_parser& add(option entry);

    std::string m_usage;
    std::string m_description;
    std::string m_epilogue;
    std::vector<option> m_options;
    std::vector<std::function<void()>> m_checks;
};

}  // namespace mpidict::tool
