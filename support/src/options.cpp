#include "mpidict/support/options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

namespace mpidict::support {

namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// Appends `text` to `out`, wrapped at `width` columns; continuation lines start
// `indent` columns in.  `column` is where the cursor is when it starts.
void append_wrapped(std::string& out, std::string_view text, std::size_t column, std::size_t indent,
                    std::size_t width = 79) {
    bool first_word = true;
    while (!text.empty()) {
        const std::size_t space = text.find(' ');
        const std::string_view word = text.substr(0, space);
        text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
        if (!first_word && column + 1 + word.size() > width) {
            out += '\n';
            out.append(indent, ' ');
            column = indent;
        } else if (!first_word) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        first_word = false;
    }
}

std::string format_real(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

std::uint64_t parse_count(std::string_view text, std::string_view what) {
    const auto fail = [&]() -> std::uint64_t {
        throw usage_error(std::string(what) + ": " + quoted(text) +
                          " is not a non-negative integer (examples: 200000, 2e5, 200k, 64Ki)");
    };
    if (text.empty() || text.front() == '-' || text.front() == '+')
        return fail();
    // Digit separators: 4'000'000 and 4_000_000 read as 4000000.
    std::string without_separators;
    if (text.find_first_of("'_") != std::string_view::npos) {
        for (const char c : text)
            if (c != '\'' && c != '_')
                without_separators += c;
        if (without_separators.empty())
            return fail();
        return parse_count(without_separators, what);
    }
    // Split off a suffix.
    std::size_t digits_end = text.size();
    while (digits_end > 0 && std::isalpha(static_cast<unsigned char>(text[digits_end - 1])) &&
           text[digits_end - 1] != 'e' && text[digits_end - 1] != 'E')
        --digits_end;
    const std::string_view number = text.substr(0, digits_end);
    const std::string_view suffix = text.substr(digits_end);
    if (number.empty())
        return fail();
    long double multiplier = 1;
    if (!suffix.empty()) {
        static constexpr std::pair<std::string_view, long double> units[] = {
            {"k", 1e3L}, {"K", 1e3L}, {"M", 1e6L}, {"G", 1e9L}, {"T", 1e12L},
            {"Ki", 1024.0L}, {"Mi", 1048576.0L}, {"Gi", 1073741824.0L}, {"Ti", 1099511627776.0L}};
        const auto unit = std::find_if(std::begin(units), std::end(units),
                                       [&](const auto& entry) { return entry.first == suffix; });
        if (unit == std::end(units))
            throw usage_error(std::string(what) + ": unknown suffix " + quoted(suffix) + " in " + quoted(text) +
                              " (use k, M, G, T or Ki, Mi, Gi, Ti)");
        multiplier = unit->second;
    }
    const std::string buffer(number);
    long double value = 0;
    const bool plain = buffer.find_first_not_of("0123456789") == std::string::npos;
    if (plain) {
        errno = 0;
        char* end = nullptr;
        const unsigned long long integer = std::strtoull(buffer.c_str(), &end, 10);
        if (errno == ERANGE || *end != '\0')
            throw usage_error(std::string(what) + ": " + quoted(text) + " is too large");
        value = static_cast<long double>(integer);
        if (multiplier == 1)
            return integer;
    } else {
        if (buffer.find_first_not_of("0123456789.eE+") != std::string::npos)
            return fail();
        char* end = nullptr;
        value = std::strtold(buffer.c_str(), &end);
        if (end == buffer.c_str() || *end != '\0' || !std::isfinite(value))
            return fail();
    }
    value *= multiplier;
    if (value != std::floor(value))
        throw usage_error(std::string(what) + ": " + quoted(text) + " is not a whole number");
    if (value >= 18446744073709551615.0L)
        throw usage_error(std::string(what) + ": " + quoted(text) + " is too large");
    return static_cast<std::uint64_t>(value);
}

option_parser::option_parser(std::string usage, std::string description)
    : m_usage(std::move(usage)), m_description(std::move(description)) {}

option_parser& option_parser::add(option entry) {
    if (find(entry.name) != nullptr || entry.name == "help")
        throw std::logic_error("option_parser: option --" + entry.name + " declared twice");
    m_options.push_back(std::move(entry));
    return *this;
}

option_parser& option_parser::add_count_to(std::string name, std::uint64_t current,
                                           std::function<void(std::uint64_t)> store, std::string help,
                                           std::uint64_t minimum, std::uint64_t maximum, std::string placeholder) {
    const std::string flag = "--" + name;
    return add({name, std::move(placeholder), std::move(help), std::to_string(current),
                [=](std::string_view text) {
                    const std::uint64_t value = parse_count(text, flag);
                    if (value < minimum || value > maximum) {
                        const std::string range = maximum == UINT64_MAX
                                                      ? "at least " + std::to_string(minimum)
                                                      : "in [" + std::to_string(minimum) + ", " +
                                                            std::to_string(maximum) + "]";
                        throw usage_error(flag + ": must be " + range + " (got " + std::string(text) + ")");
                    }
                    store(value);
                }});
}

option_parser& option_parser::add_real(std::string name, double* target, std::string help, double minimum,
                                       double maximum, std::string placeholder) {
    const std::string flag = "--" + name;
    return add({name, std::move(placeholder), std::move(help), format_real(*target),
                [=](std::string_view text) {
                    const std::string buffer(text);
                    char* end = nullptr;
                    const double value = std::strtod(buffer.c_str(), &end);
                    if (buffer.empty() || *end != '\0' || !std::isfinite(value))
                        throw usage_error(flag + ": " + quoted(text) + " is not a number");
                    if (value < minimum || value > maximum)
                        throw usage_error(flag + ": " + buffer + " is outside [" + format_real(minimum) + ", " +
                                          format_real(maximum) + "]");
                    *target = value;
                }});
}

option_parser& option_parser::add_choice(std::string name, std::string* target, std::vector<std::string> choices,
                                         std::string help) {
    std::string placeholder;
    for (const std::string& choice : choices)
        placeholder += (placeholder.empty() ? "" : "|") + choice;
    const std::string flag = "--" + name;
    return add({name, placeholder, std::move(help), *target, [=](std::string_view text) {
                    if (std::find(choices.begin(), choices.end(), text) == choices.end())
                        throw usage_error(flag + ": " + quoted(text) + " is not one of " + placeholder);
                    *target = std::string(text);
                }});
}

option_parser& option_parser::add_text(std::string name, std::string* target, std::string help,
                                       std::string placeholder) {
    return add({name, std::move(placeholder), std::move(help), *target,
                [=](std::string_view text) { *target = std::string(text); }});
}

option_parser& option_parser::add_flag(std::string name, bool* target, std::string help, bool when_given) {
    return add({name, "", std::move(help), "", [=](std::string_view) { *target = when_given; }});
}

option_parser& option_parser::add_custom(std::string name, std::string placeholder, std::string help,
                                         std::string default_text, std::function<void(std::string_view)> assign) {
    return add({std::move(name), std::move(placeholder), std::move(help), std::move(default_text),
                std::move(assign)});
}

option_parser& option_parser::add_positional(std::string what, std::string* target, std::string placeholder) {
    if (m_positional != nullptr)
        throw std::logic_error("option_parser: a second positional argument declared");
    m_positional_what = std::move(what);
    m_positional_placeholder = std::move(placeholder);
    m_positional = target;
    return *this;
}

option_parser& option_parser::add_check(std::function<void()> check) {
    m_checks.push_back(std::move(check));
    return *this;
}

option_parser& option_parser::add_epilogue(std::string text) {
    m_epilogue += text;
    return *this;
}

const option_parser::option* option_parser::find(std::string_view name) const {
    for (const option& entry : m_options)
        if (entry.name == name)
            return &entry;
    return nullptr;
}

bool option_parser::parse(std::span<char* const> arguments) {
    for (const std::string_view argument : arguments)
        if (argument == "-h" || argument == "--help")
            return false;
    bool positional_seen = false;
    for (std::size_t index = 0; index < arguments.size(); ++index) {
        const std::string_view argument = arguments[index];
        if (m_positional != nullptr && !argument.starts_with("-")) {
            if (positional_seen)
                throw usage_error("more than one " + m_positional_what + " given (" + quoted(*m_positional) +
                                  " and " + quoted(argument) + ")");
            *m_positional = std::string(argument);
            positional_seen = true;
            continue;
        }
        if (argument.size() < 3 || argument.substr(0, 2) != "--")
            throw usage_error("unexpected argument " + quoted(argument) + " (options start with --)");
        std::string_view name = argument.substr(2);
        std::string_view value;
        bool has_value = false;
        if (const auto equals = name.find('='); equals != std::string_view::npos) {
            value = name.substr(equals + 1);
            name = name.substr(0, equals);
            has_value = true;
        }
        const option* entry = find(name);
        if (entry == nullptr) {
            std::string message = "unknown option --" + std::string(name);
            // Suggest an option that starts the same way (a typo or a prefix).
            for (const option& candidate : m_options)
                if (!name.empty() && (candidate.name.starts_with(name) || name.starts_with(candidate.name))) {
                    message += "; did you mean --" + candidate.name + "?";
                    break;
                }
            throw usage_error(message);
        }
        if (entry->placeholder.empty()) {
            if (has_value)
                throw usage_error("option --" + entry->name + " takes no value");
            entry->assign("");
            continue;
        }
        if (!has_value) {
            if (index + 1 >= arguments.size())
                throw usage_error("option --" + entry->name + " needs a value (" + entry->placeholder + ")");
            value = arguments[++index];
        }
        entry->assign(value);
    }
    if (m_positional != nullptr && !positional_seen)
        throw usage_error("no " + m_positional_what + " given");
    for (const auto& check : m_checks)
        check();
    return true;
}

std::string option_parser::help() const {
    std::string text = "usage: " + m_usage + "\n\n" + m_description + "\n\noptions:\n";
    std::vector<std::string> left;
    std::size_t width = 0;
    for (const option& entry : m_options) {
        std::string flag = "  --" + entry.name;
        if (!entry.placeholder.empty())
            flag += " " + entry.placeholder;
        width = std::max(width, flag.size());
        left.push_back(std::move(flag));
    }
    left.emplace_back("  -h, --help");
    width = std::max(width, left.back().size());
    for (std::size_t index = 0; index < m_options.size(); ++index) {
        const option& entry = m_options[index];
        text += left[index] + std::string(width + 2 - left[index].size(), ' ');
        std::string help_text = entry.help;
        if (!entry.placeholder.empty() && !entry.default_text.empty())
            help_text += " [" + entry.default_text + "]";
        append_wrapped(text, help_text, width + 2, width + 2);
        text += "\n";
    }
    text += left.back() + std::string(width + 2 - left.back().size(), ' ') + "show this help\n";
    if (!m_epilogue.empty())
        text += "\n" + m_epilogue;
    return text;
}

}  // namespace mpidict::support
