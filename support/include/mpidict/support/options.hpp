#pragma once
// The one command-line option parser of the apps, the `mpidict` tool, the
// benchmarks and the examples.
//
// Options are long-only: `--name value` or `--name=value`; `-h`/`--help` asks
// for help.  Counts accept a decimal or scientific integer with an optional
// suffix: k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024), and
// digit separators ' and _, so `--keys 2e5`, `--keys 200k`, `--keys 200_000`
// and `--buffer-bytes 64Ki` all work.  A program may take one positional
// argument (a file).  Every mistake throws usage_error with a message that
// names the option and the value; parse_collectively() (program.hpp) makes
// every rank of an MPI program agree on the outcome before any collective.
//
//   std::uint64_t keys = 1000;
//   bool quiet = false;
//   mpidict::support::option_parser parser("orbit [options] FILE", "What it does.");
//   parser.add_count("keys", &keys, "keys per rank", 1)
//         .add_flag("quiet", &quiet, "no progress line");
//   if (!parser.parse(arguments)) { /* --help: print parser.help() */ }

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mpidict::support {

// A mistake on the command line: the program prints it with a hint and exits
// with exit_usage (2).
class usage_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses "200000", "2e5", "200k", "64Ki", "200_000"; throws usage_error naming `what`.
std::uint64_t parse_count(std::string_view text, std::string_view what);

class option_parser {
public:
    // `usage` is the synopsis after "usage: ", e.g. "mpidict hash [options]".
    option_parser(std::string usage, std::string description);

    // A non-negative integer in [minimum, maximum] stored in any unsigned
    // integer type; the target's value is the default.
    template <class Unsigned>
        requires std::is_unsigned_v<Unsigned> && (!std::is_same_v<Unsigned, bool>)
    option_parser& add_count(std::string name, Unsigned* target, std::string help, std::uint64_t minimum = 0,
                             std::uint64_t maximum = std::numeric_limits<Unsigned>::max(),
                             std::string placeholder = "N") {
        return add_count_to(std::move(name), static_cast<std::uint64_t>(*target),
                            [target](std::uint64_t value) { *target = static_cast<Unsigned>(value); }, std::move(help),
                            minimum, maximum < std::numeric_limits<Unsigned>::max() ? maximum
                                                                                     : std::numeric_limits<Unsigned>::max(),
                            std::move(placeholder));
    }
    // A real number in [minimum, maximum].
    option_parser& add_real(std::string name, double* target, std::string help, double minimum,
                            double maximum, std::string placeholder = "X");
    // One word out of `choices`.
    option_parser& add_choice(std::string name, std::string* target, std::vector<std::string> choices,
                              std::string help);
    // Free text (a file name, ...).
    option_parser& add_text(std::string name, std::string* target, std::string help,
                            std::string placeholder = "TEXT");
    // A switch without a value: sets *target to `when_given`.
    option_parser& add_flag(std::string name, bool* target, std::string help, bool when_given = true);
    // An option whose value `assign` parses (throwing usage_error); the help
    // shows `placeholder` and `default_text`.
    option_parser& add_custom(std::string name, std::string placeholder, std::string help, std::string default_text,
                              std::function<void(std::string_view)> assign);
    // The one positional argument, described as `what` ("problem file"):
    // "no <what> given" when it is missing, "more than one <what> given" when
    // there are two.
    option_parser& add_positional(std::string what, std::string* target, std::string placeholder);
    // A check across options run after parsing; it throws usage_error.
    option_parser& add_check(std::function<void()> check);
    // Free text appended to the help (examples, notes).
    option_parser& add_epilogue(std::string text);

    // Parses `arguments` (those after the program or command name).  Returns
    // false if help was asked for; throws usage_error on any mistake.
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
    option_parser& add_count_to(std::string name, std::uint64_t current, std::function<void(std::uint64_t)> store,
                                std::string help, std::uint64_t minimum, std::uint64_t maximum,
                                std::string placeholder);

    std::string m_usage;
    std::string m_description;
    std::string m_epilogue;
    std::vector<option> m_options;
    std::vector<std::function<void()>> m_checks;
    std::string m_positional_what;
    std::string m_positional_placeholder;
    std::string* m_positional = nullptr;
};

}  // namespace mpidict::support
