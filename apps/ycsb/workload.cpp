// YCSB's core workload: properties, the checked definition, key names, the
// choosers and the record format (workload.hpp).
#include "ycsb/workload.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "mpidict/local/hash.hpp"

namespace mpidict::apps::ycsb {

namespace {

std::string_view trim_left(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\f'))
        text.remove_prefix(1);
    return text;
}
std::string_view trim(std::string_view text) {
    text = trim_left(text);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    return text;
}

// Java's escapes in keys and values: \t \n \r \f \uXXXX (ASCII only here), \x -> x.
std::string unescape(std::string_view text, const std::string& origin) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\' || i + 1 == text.size()) {
            out += text[i];
            continue;
        }
        const char next = text[++i];
        switch (next) {
        case 't': out += '\t'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 'f': out += '\f'; break;
        case 'u': {
            unsigned code = 0;
            if (i + 4 >= text.size())
                throw workload_error(origin + ": malformed \\u escape");
            const auto [end, trouble] = std::from_chars(text.data() + i + 1, text.data() + i + 5, code, 16);
            if (trouble != std::errc() || end != text.data() + i + 5)
                throw workload_error(origin + ": malformed \\u escape");
            if (code > 0x7f)
                throw workload_error(origin + ": \\u escape beyond ASCII is not supported");
            out += static_cast<char>(code);
            i += 4;
            break;
        }
        default: out += next;
        }
    }
    return out;
}

}  // namespace

std::string properties::read_bytes(const std::string& path, std::size_t limit) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        throw workload_error(path + ": cannot open: " + std::strerror(errno));
    struct stat info {};
    std::string problem;
    if (::fstat(fd, &info) != 0)
        problem = path + ": cannot examine: " + std::strerror(errno);
    else if (S_ISDIR(info.st_mode))
        problem = path + " is a directory, not a workload file";
    else if (S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode))
        problem = path + " is a " + (S_ISFIFO(info.st_mode) ? "FIFO (named pipe)" : "socket") +
                  ", not a workload file";
    else if (S_ISREG(info.st_mode) && static_cast<std::uint64_t>(info.st_size) > limit)
        problem = path + ": " + std::to_string(info.st_size) + " bytes is too large for a workload file (at most " +
                  std::to_string(limit) + ")";
    std::string bytes;
    if (problem.empty()) {
        // A device (/dev/zero) has no size: read at most limit + 1 bytes.
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        char chunk[65536];
        while (bytes.size() <= limit) {
            const ssize_t got = ::read(fd, chunk, std::min(sizeof chunk, limit + 1 - bytes.size()));
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                problem = path + ": cannot read: " + std::strerror(errno);
                break;
            }
            if (got == 0)
                break;
            bytes.append(chunk, static_cast<std::size_t>(got));
        }
        if (problem.empty() && bytes.size() > limit)
            problem = path + ": more than " + std::to_string(limit) + " bytes is too large for a workload file";
    }
    ::close(fd);
    if (!problem.empty())
        throw workload_error(problem);
    return bytes;
}

properties properties::read_file(const std::string& path) { return parse(read_bytes(path), path); }

properties properties::parse(std::string_view text, const std::string& name) {
    properties result;
    std::size_t line_number = 0;
    std::string logical;
    std::size_t logical_line = 0;
    while (!text.empty()) {
        const std::size_t newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        ++line_number;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.find('\0') != std::string_view::npos)
            throw workload_error(name + ":" + std::to_string(line_number) + ": a NUL byte (not a properties file?)");
        std::string_view piece = logical.empty() ? trim_left(line) : trim_left(line);
        if (logical.empty()) {
            if (piece.empty() || piece.front() == '#' || piece.front() == '!')
                continue;
            logical_line = line_number;
        }
        // A line ending in an odd number of backslashes continues.
        std::size_t backslashes = 0;
        while (backslashes < piece.size() && piece[piece.size() - 1 - backslashes] == '\\')
            ++backslashes;
        const bool continues = backslashes % 2 == 1;
        if (continues)
            piece.remove_suffix(1);
        logical += piece;
        if (continues && !text.empty())
            continue;
        const std::string origin = name + ":" + std::to_string(logical_line);
        std::string_view entry = logical;
        // The key ends at the first unescaped '=', ':' or whitespace.
        std::size_t end = 0;
        while (end < entry.size()) {
            const char c = entry[end];
            if (c == '\\') {
                end += 2;
                continue;
            }
            if (c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f')
                break;
            ++end;
        }
        end = std::min(end, entry.size());
        std::string key = unescape(entry.substr(0, end), origin);
        std::string_view rest = trim_left(entry.substr(end));
        if (!rest.empty() && (rest.front() == '=' || rest.front() == ':'))
            rest = trim_left(rest.substr(1));
        std::string value = unescape(trim(rest), origin);
        result.m_values[key] = property_value{std::move(value), origin};
        logical.clear();
    }
    return result;
}

void properties::override_with(std::string_view assignment) {
    const std::size_t equals = assignment.find('=');
    if (equals == std::string_view::npos || equals == 0)
        throw workload_error("-p " + std::string(assignment) + ": expected key=value");
    const std::string key(trim(assignment.substr(0, equals)));
    m_values[key] = property_value{std::string(trim(assignment.substr(equals + 1))), "-p " + std::string(assignment)};
}

const property_value* properties::find(const std::string& key) const {
    const auto found = m_values.find(key);
    return found == m_values.end() ? nullptr : &found->second;
}

std::string properties::text(const std::string& key, const std::string& fallback) const {
    const property_value* entry = find(key);
    return entry == nullptr ? fallback : entry->value;
}

std::int64_t properties::integer(const std::string& key, std::int64_t fallback) const {
    const property_value* entry = find(key);
    if (entry == nullptr)
        return fallback;
    std::int64_t value = 0;
    const std::string& text = entry->value;
    const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
    const auto [end, trouble] = std::from_chars(begin, text.data() + text.size(), value);
    if (trouble == std::errc::result_out_of_range)
        throw workload_error(entry->origin + ": " + key + "=" + text + " is out of range");
    if (trouble != std::errc() || end != text.data() + text.size() || text.empty())
        throw workload_error(entry->origin + ": " + key + "=" + text + " is not an integer");
    return value;
}

double properties::real(const std::string& key, double fallback) const {
    const property_value* entry = find(key);
    if (entry == nullptr)
        return fallback;
    const std::string& text = entry->value;
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
        throw workload_error(entry->origin + ": " + key + "=" + text + " is not a number");
    return value;
}

bool properties::boolean(const std::string& key, bool fallback) const {
    const property_value* entry = find(key);
    if (entry == nullptr)
        return fallback;
    std::string lower = entry->value;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    // Java's Boolean.parseBoolean: "true" (any case) is true, anything else false.
    // A value that is neither true nor false is more likely a mistake: say so.
    if (lower == "true")
        return true;
    if (lower == "false")
        return false;
    throw workload_error(entry->origin + ": " + key + "=" + entry->value + " is not true or false");
}

std::string_view distribution_name(distribution which) {
    switch (which) {
    case distribution::uniform: return "uniform";
    case distribution::zipfian: return "zipfian";
    case distribution::latest: return "latest";
    case distribution::hotspot: return "hotspot";
    case distribution::sequential: return "sequential";
    case distribution::exponential: return "exponential";
    }
    return "?";
}

namespace {

// The largest count a run may use: key numbers and sizes stay far from overflow.
constexpr std::int64_t max_count = std::int64_t{1} << 40;

std::int64_t checked_count(const properties& source, const std::string& key, std::int64_t fallback,
                           std::int64_t minimum, std::int64_t maximum) {
    const std::int64_t value = source.integer(key, fallback);
    if (value < minimum || value > maximum) {
        const property_value* entry = source.find(key);
        const std::string where = entry == nullptr ? "default" : entry->origin;
        throw workload_error(where + ": " + key + "=" + std::to_string(value) + " is out of range [" +
                             std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
    }
    return value;
}

double checked_fraction(const properties& source, const std::string& key, double fallback, double maximum = 1.0) {
    const double value = source.real(key, fallback);
    if (value < 0 || value > maximum) {
        const property_value* entry = source.find(key);
        throw workload_error((entry == nullptr ? std::string("default") : entry->origin) + ": " + key + "=" +
                             (entry == nullptr ? std::to_string(value) : entry->value) + " is out of range [0, " +
                             (maximum == 1.0 ? std::string("1") : std::to_string(maximum)) + "]");
    }
    return value;
}

std::string origin_of(const properties& source, const std::string& key) {
    const property_value* entry = source.find(key);
    return entry == nullptr ? "default" : entry->origin;
}

// Every property YCSB's Client and CoreWorkload read, whether this program
// uses it or accepts it without effect (threadcount, measurementtype...).
// Namespaced properties ("redis.host", "measurement.interval") belong to
// bindings and exporters and are not checked.
constexpr std::string_view known_properties[] = {
    "core_workload_insertion_retry_interval", "core_workload_insertion_retry_limit", "dataintegrity", "db",
    "debug", "dotransactions", "exportfile", "exporter", "fieldcount", "fieldlength", "fieldlengthdistribution",
    "fieldlengthhistogram", "fieldnameprefix", "hotspotdatafraction", "hotspotopnfraction", "insertcount",
    "insertorder", "insertproportion", "insertstart", "maxexecutiontime", "maxscanlength", "measurementtype",
    "minfieldlength", "minscanlength", "operationcount", "readallfields", "readallfieldsbynames",
    "readmodifywriteproportion", "readproportion", "recordcount", "requestdistribution", "scanlengthdistribution",
    "scanproportion", "table", "target", "threadcount", "updateproportion", "workload", "writeallfields",
    "zeropadding"};

// Levenshtein distance, capped: enough to suggest the property a typo meant.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::vector<std::string> unknown_property_warnings(const properties& source) {
    std::vector<std::string> warnings;
    for (const auto& [key, entry] : source.all()) {
        if (key.find('.') != std::string::npos ||
            std::find(std::begin(known_properties), std::end(known_properties), key) != std::end(known_properties))
            continue;
        std::string_view closest;
        std::size_t best = 3;  // suggest only within two edits
        for (const std::string_view known : known_properties)
            if (const std::size_t distance = edit_distance(key, known); distance < best) {
                best = distance;
                closest = known;
            }
        warnings.push_back(entry.origin + ": unknown property \"" + key + "\" is ignored" +
                           (closest.empty() ? std::string(" (not a YCSB core workload or client property)")
                                            : " (did you mean \"" + std::string(closest) + "\"?)"));
    }
    return warnings;
}

}  // namespace

workload workload::from(const properties& source, const std::string& name) {
    workload spec;
    spec.name = name;
    spec.warnings = unknown_property_warnings(source);
    // Client.java: recordcount 0 means Integer.MAX_VALUE there; here it is an error.
    spec.recordcount = checked_count(source, "recordcount", 0, 1, max_count);
    spec.operationcount = checked_count(source, "operationcount", 0, 0, std::numeric_limits<std::int32_t>::max());
    spec.insertstart = checked_count(source, "insertstart", 0, 0, spec.recordcount - 1);
    spec.insertcount = checked_count(source, "insertcount", spec.recordcount - spec.insertstart, 1, max_count);
    if (spec.insertstart + spec.insertcount > spec.recordcount)
        throw workload_error(origin_of(source, "insertcount") + ": insertstart + insertcount (" +
                             std::to_string(spec.insertstart + spec.insertcount) + ") exceeds recordcount (" +
                             std::to_string(spec.recordcount) + ")");
    spec.fieldcount = checked_count(source, "fieldcount", 10, 1, 1024);
    spec.fieldlength = checked_count(source, "fieldlength", 100, 1, 65535);
    spec.minfieldlength = checked_count(source, "minfieldlength", 1, 1, spec.fieldlength);
    spec.fieldlengthdistribution = source.text("fieldlengthdistribution", "constant");
    if (spec.fieldlengthdistribution != "constant" && spec.fieldlengthdistribution != "uniform" &&
        spec.fieldlengthdistribution != "zipfian")
        throw workload_error(origin_of(source, "fieldlengthdistribution") + ": unknown field length distribution \"" +
                             spec.fieldlengthdistribution + "\" (constant, uniform or zipfian; YCSB's histogram "
                             "files are not supported)");
    spec.readallfields = source.boolean("readallfields", true);
    spec.writeallfields = source.boolean("writeallfields", false);
    const std::string keys[operation_count] = {"readproportion", "updateproportion", "insertproportion",
                                               "scanproportion", "readmodifywriteproportion"};
    const double defaults[operation_count] = {0.95, 0.05, 0, 0, 0};
    double sum = 0;
    for (int i = 0; i < operation_count; ++i) {
        spec.proportions[i] = checked_fraction(source, keys[i], defaults[i]);
        sum += spec.proportions[i];
    }
    if (sum > 1.0 + 1e-9) {
        std::string where;
        for (int i = 0; i < operation_count; ++i)
            if (spec.proportions[i] > 0)
                where += (where.empty() ? "" : ", ") + keys[i] + "=" + std::to_string(spec.proportions[i]).substr(0, 6);
        throw workload_error(name + ": the operation proportions sum to " + std::to_string(sum).substr(0, 8) +
                             ", more than 1 (" + where + ")");
    }
    if (sum <= 0 && spec.operationcount > 0)
        throw workload_error(name + ": every operation proportion is 0 but operationcount is " +
                             std::to_string(spec.operationcount));
    const std::string request = source.text("requestdistribution", "uniform");
    if (request == "uniform")
        spec.request = distribution::uniform;
    else if (request == "zipfian")
        spec.request = distribution::zipfian;
    else if (request == "latest")
        spec.request = distribution::latest;
    else if (request == "hotspot")
        spec.request = distribution::hotspot;
    else if (request == "sequential")
        spec.request = distribution::sequential;
    else if (request == "exponential")
        spec.request = distribution::exponential;
    else
        throw workload_error(origin_of(source, "requestdistribution") + ": unknown request distribution \"" + request +
                             "\" (uniform, zipfian, latest, hotspot, sequential or exponential)");
    const std::string order = source.text("insertorder", "hashed");
    if (order != "hashed" && order != "ordered")
        throw workload_error(origin_of(source, "insertorder") + ": insertorder=" + order +
                             " is neither hashed nor ordered");
    spec.ordered_inserts = order == "ordered";
    spec.zeropadding = checked_count(source, "zeropadding", 1, 1, 64);
    spec.minscanlength = checked_count(source, "minscanlength", 1, 1, max_count);
    spec.maxscanlength = checked_count(source, "maxscanlength", 1000, spec.minscanlength, max_count);
    spec.scanlengthdistribution = source.text("scanlengthdistribution", "uniform");
    if (spec.scanlengthdistribution != "uniform" && spec.scanlengthdistribution != "zipfian")
        throw workload_error(origin_of(source, "scanlengthdistribution") + ": distribution \"" +
                             spec.scanlengthdistribution + "\" not allowed for scan length (uniform or zipfian)");
    spec.hotspotdatafraction = checked_fraction(source, "hotspotdatafraction", 0.2);
    spec.hotspotopnfraction = checked_fraction(source, "hotspotopnfraction", 0.8);
    if (spec.request == distribution::hotspot) {
        const hotspot_generator probe(0, spec.insertcount - 1, spec.hotspotdatafraction, spec.hotspotopnfraction);
        if ((probe.hot_interval() == 0 && spec.hotspotopnfraction > 0) ||
            (probe.cold_interval() == 0 && spec.hotspotopnfraction < 1))
            throw workload_error(origin_of(source, "hotspotdatafraction") + ": hotspotdatafraction=" +
                                 std::to_string(spec.hotspotdatafraction) + " leaves the " +
                                 (probe.hot_interval() == 0 ? "hot" : "cold") + " set of " +
                                 std::to_string(spec.insertcount) + " records empty");
    }
    spec.exponential_percentile = source.real("exponential.percentile", 95);
    if (!(spec.exponential_percentile > 0 && spec.exponential_percentile < 100))
        throw workload_error(origin_of(source, "exponential.percentile") + ": exponential.percentile must be in (0, 100)");
    spec.exponential_frac = source.real("exponential.frac", 0.8571428571);
    if (!(spec.exponential_frac > 0))
        throw workload_error(origin_of(source, "exponential.frac") + ": exponential.frac must be positive");
    if (spec.request == distribution::latest && spec.recordcount < 2)
        throw workload_error(origin_of(source, "recordcount") + ": requestdistribution=latest needs recordcount >= 2");
    return spec;
}

std::size_t workload::max_record_bytes() const {
    return static_cast<std::size_t>(fieldcount) * (static_cast<std::size_t>(fieldlength) + field_header_bytes);
}

std::int64_t workload::expected_new_keys() const {
    return static_cast<std::int64_t>(static_cast<double>(operationcount) *
                                     proportions[static_cast<int>(operation::insert)] * 2.0);
}

std::string key_name(std::int64_t keynum, const workload& spec) {
    const std::int64_t shown = spec.ordered_inserts ? keynum : fnv_hash64(keynum);
    const std::string digits = std::to_string(shown);
    std::string key = "user";
    if (static_cast<std::int64_t>(digits.size()) < spec.zeropadding)
        key.append(static_cast<std::size_t>(spec.zeropadding) - digits.size(), '0');
    return key + digits;
}

key_chooser::key_chooser(const workload& spec, int rank, int ranks, std::uint64_t seed)
    : m_spec(spec),
      m_rank(rank),
      m_ranks(ranks),
      m_random(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) + 1),
      m_field(0, spec.fieldcount - 1) {
    for (int i = 0; i < operation_count; ++i)
        if (spec.proportions[i] > 0)
            m_operations.add(spec.proportions[i], i);
    const std::int64_t first = spec.insertstart;
    const std::int64_t last = spec.insertstart + spec.insertcount - 1;
    switch (spec.request) {
    case distribution::uniform: m_uniform.emplace(first, last); break;
    case distribution::zipfian: m_zipfian.emplace(first, last + spec.expected_new_keys() + 1); break;
    case distribution::latest: m_latest.emplace(spec.recordcount - 1); break;
    case distribution::hotspot:
        m_hotspot.emplace(first, last, spec.hotspotdatafraction, spec.hotspotopnfraction);
        break;
    case distribution::sequential: break;
    case distribution::exponential:
        m_exponential.emplace(spec.exponential_percentile,
                              static_cast<double>(spec.recordcount) * spec.exponential_frac);
        break;
    }
    if (spec.scanlengthdistribution == "zipfian")
        m_scan_zipfian.emplace(spec.minscanlength, spec.maxscanlength);
    else
        m_scan_uniform.emplace(spec.minscanlength, spec.maxscanlength);
    if (spec.fieldlengthdistribution == "uniform")
        m_field_length_uniform.emplace(spec.minfieldlength, spec.fieldlength);
    else if (spec.fieldlengthdistribution == "zipfian")
        m_field_length_zipfian.emplace(spec.minfieldlength, spec.fieldlength);
}

void key_chooser::learn_acknowledged(const std::vector<std::int64_t>& counts) {
    if (counts.size() == static_cast<std::size_t>(m_ranks))
        m_known = counts;
}

std::int64_t key_chooser::acknowledged_limit() const {
    // Rank r's k-th insert is recordcount + r + k*p: with m the smallest count,
    // every key below recordcount + p*m is stored, and then ranks 0, 1, ... in
    // order while their count exceeds m.
    const auto count_of = [&](int rank) {
        if (rank == m_rank || m_known.empty())
            return rank == m_rank ? m_inserts_contiguous : std::int64_t{0};
        return m_known[static_cast<std::size_t>(rank)];
    };
    std::int64_t least = m_inserts_contiguous;
    for (int rank = 0; rank < m_ranks; ++rank)
        least = std::min(least, count_of(rank));
    std::int64_t leading = 0;
    while (leading < m_ranks && count_of(static_cast<int>(leading)) > least)
        ++leading;
    return m_spec.recordcount - 1 + static_cast<std::int64_t>(m_ranks) * least + leading;
}

std::int64_t key_chooser::next_keynum() {
    const std::int64_t limit = acknowledged_limit();
    std::int64_t keynum = 0;
    if (m_exponential) {
        do {
            const double drawn = m_exponential->next(m_random);
            keynum = drawn < static_cast<double>(limit) + 1 ? limit - static_cast<std::int64_t>(drawn) : -1;
        } while (keynum < 0);
        return keynum;
    }
    do {
        switch (m_spec.request) {
        case distribution::uniform: keynum = m_uniform->next(m_random); break;
        case distribution::zipfian: keynum = m_zipfian->next(m_random); break;
        case distribution::latest: keynum = m_latest->next(m_random, limit); break;
        case distribution::hotspot: keynum = m_hotspot->next(m_random); break;
        case distribution::sequential:
            keynum = m_spec.insertstart + m_sequential++ % m_spec.insertcount;
            break;
        case distribution::exponential: break;
        }
    } while (keynum > limit);
    return keynum;
}

std::int64_t key_chooser::next_scan_length() {
    return m_scan_zipfian ? m_scan_zipfian->next(m_random) : m_scan_uniform->next(m_random);
}

std::int64_t key_chooser::next_field() { return m_field.next(m_random); }

std::int64_t key_chooser::next_field_length() {
    if (m_field_length_uniform)
        return m_field_length_uniform->next(m_random);
    if (m_field_length_zipfian)
        return m_field_length_zipfian->next(m_random);
    return m_spec.fieldlength;
}

std::int64_t key_chooser::next_insert_keynum() {
    return m_spec.recordcount + m_rank + static_cast<std::int64_t>(m_ranks) * m_inserts_issued++;
}

void key_chooser::acknowledge_insert(std::int64_t keynum) {
    const std::int64_t index = (keynum - m_spec.recordcount - m_rank) / m_ranks;
    const auto offset = static_cast<std::size_t>(index - m_inserts_contiguous);
    if (m_acknowledged.size() <= offset)
        m_acknowledged.resize(offset + 1, false);
    m_acknowledged[offset] = true;
    std::size_t done = 0;
    while (done < m_acknowledged.size() && m_acknowledged[done])
        ++done;
    if (done > 0) {
        m_acknowledged.erase(m_acknowledged.begin(), m_acknowledged.begin() + static_cast<std::ptrdiff_t>(done));
        m_inserts_contiguous += static_cast<std::int64_t>(done);
    }
}

// ---- records -------------------------------------------------------------------

namespace {

void put_le(std::string& out, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((value >> (8 * i)) & 0xff);
}
std::uint64_t get_le(std::string_view in, std::size_t at, int bytes) {
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i)
        value |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)])) << (8 * i);
    return value;
}

// The field's printable bytes: a stream seeded by (key, field, tag), 6 bytes
// per draw in the character ranges of YCSB's RandomByteIterator.
void fill_field(char* out, std::size_t length, std::string_view key, std::int64_t field, std::uint64_t tag) {
    std::uint64_t state = hash_bytes(key.data(), key.size()) ^ mix64(static_cast<std::uint64_t>(field) * 0x9E37 + tag);
    std::size_t i = 0;
    while (i < length) {
        state = mix64(state + 0x9E3779B97F4A7C15ULL);
        const std::uint64_t bits = state;
        static constexpr int masks[6] = {31, 63, 95, 31, 63, 95};
        for (int j = 0; j < 6 && i < length; ++j, ++i)
            out[i] = static_cast<char>(((bits >> (10 * j)) & static_cast<std::uint64_t>(masks[j])) + ' ');
    }
}

}  // namespace

void append_field(std::string& out, std::string_view key, std::int64_t field, std::uint64_t tag, std::size_t length) {
    put_le(out, length, 2);
    put_le(out, tag, 8);
    const std::size_t at = out.size();
    out.resize(at + length);
    fill_field(out.data() + at, length, key, field, tag);
}

std::string check_record(std::string_view record, std::string_view key, const workload& spec,
                         std::vector<field_view>& fields) {
    fields.clear();
    std::size_t at = 0;
    std::string expected;
    for (std::int64_t field = 0; field < spec.fieldcount; ++field) {
        if (record.size() - at < field_header_bytes)
            return "record of " + std::to_string(record.size()) + " bytes ends inside field " + std::to_string(field);
        const std::size_t length = get_le(record, at, 2);
        const std::uint64_t tag = get_le(record, at + 2, 8);
        if (length < static_cast<std::size_t>(spec.minfieldlength) || length > static_cast<std::size_t>(spec.fieldlength))
            return "field " + std::to_string(field) + " has length " + std::to_string(length);
        if (record.size() - at - field_header_bytes < length)
            return "record of " + std::to_string(record.size()) + " bytes ends inside field " + std::to_string(field);
        expected.resize(length);
        fill_field(expected.data(), length, key, field, tag);
        if (record.compare(at + field_header_bytes, length, expected) != 0)
            return "field " + std::to_string(field) + " (writer rank " + std::to_string(tag_rank(tag)) + ", write " +
                   std::to_string(tag_sequence(tag)) + ") does not hold what was written for this key";
        fields.push_back(field_view{tag, at, field_header_bytes + length});
        at += field_header_bytes + length;
    }
    if (at != record.size())
        return "record has " + std::to_string(record.size() - at) + " bytes after its last field";
    return {};
}

bool split_record(std::string_view record, std::vector<field_view>& fields) {
    fields.clear();
    std::size_t at = 0;
    while (at < record.size()) {
        if (record.size() - at < field_header_bytes)
            return false;
        const std::size_t length = get_le(record, at, 2);
        if (record.size() - at - field_header_bytes < length)
            return false;
        fields.push_back(field_view{get_le(record, at + 2, 8), at, field_header_bytes + length});
        at += field_header_bytes + length;
    }
    return true;
}

std::string replace_field(std::string_view record, const std::vector<field_view>& fields, std::int64_t field,
                          std::string_view replacement) {
    const field_view& old = fields.at(static_cast<std::size_t>(field));
    std::string out;
    out.reserve(record.size() - old.bytes + replacement.size());
    out.append(record.substr(0, old.offset));
    out.append(replacement);
    out.append(record.substr(old.offset + old.bytes));
    return out;
}

}  // namespace mpidict::apps::ycsb
