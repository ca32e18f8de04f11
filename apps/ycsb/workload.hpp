#pragma once
// YCSB's core workload (site.ycsb.workloads.CoreWorkload) as mpidict runs it:
// the property file, the checked workload definition, key names, the
// per-rank key choosers and the record format.
//
// Properties.  Java's properties format as the workload files use it:
// "key=value", "key: value" or "key value" lines, '#' and '!' comments, a
// trailing backslash continuing a line; later definitions and -p overrides
// win.  Every problem is a workload_error naming the file and line (or the
// -p override) and what is wrong.
//
// Ranks as YCSB client threads.  Every rank is a client.  The load phase gives
// rank r the r-th contiguous share of [insertstart, insertstart + insertcount)
// (YCSB's threads share one counter; the result is the same set of records).
// The run phase divides operationcount like YCSB divides it among threads.
// Run-phase inserts take key numbers recordcount + r + k*p (rank r's k-th), so
// ranks never collide.  YCSB's transaction insert counter is shared and
// acknowledged: no key above its acknowledged limit is ever chosen.  Here
// rank r knows how many of its own inserts are acknowledged in order (c_r) and
// learns the others' from time to time (ycsb.cpp publishes them in an MPI
// window); with m = min c, every key up to recordcount - 1 + p*m + j is stored,
// j the number of ranks 0, 1, ... (in order) whose count exceeds m.  That is
// this rank's limit: a lower bound of YCSB's, so a chosen key is always stored.
//
// Records.  fieldcount fields; field i holds its length (2 bytes), a writer
// tag (8 bytes: the writing rank + 1 in the top 24 bits, that rank's write
// counter below) and `length` printable bytes derived from (key, field, tag),
// so any reader can check that a field is one some writer wrote for this key
// and field, and who wrote it.  With the defaults a record is 10 x (100 + 10)
// = 1,100 bytes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ycsb/generators.hpp"

namespace mpidict::apps::ycsb {

class workload_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A property's value and where it was defined ("workloada:24", "-p recordcount=...").
struct property_value {
    std::string value;
    std::string origin;
};

class properties {
public:
    // Reads a Java properties file; throws workload_error.
    static properties read_file(const std::string& path);
    // The bytes of a workload file of at most `limit` bytes; throws
    // workload_error for a directory, a FIFO or socket (checked before anything
    // is read, so nothing blocks) or a file (or device) longer than `limit`.
    static std::string read_bytes(const std::string& path, std::size_t limit = std::size_t{1} << 20);
    static properties parse(std::string_view text, const std::string& name);

    // "key=value" from the command line; throws workload_error on a missing '='.
    void override_with(std::string_view assignment);

    bool has(const std::string& key) const { return m_values.count(key) != 0; }
    const property_value* find(const std::string& key) const;
    std::string text(const std::string& key, const std::string& fallback) const;
    // Typed reads; a malformed value is a workload_error naming key and origin.
    std::int64_t integer(const std::string& key, std::int64_t fallback) const;
    double real(const std::string& key, double fallback) const;
    bool boolean(const std::string& key, bool fallback) const;
    const std::map<std::string, property_value>& all() const { return m_values; }

private:
    std::map<std::string, property_value> m_values;
};

enum class operation : int { read, update, insert, scan, read_modify_write };
inline constexpr int operation_count = 5;
inline constexpr std::string_view operation_names[] = {"read", "update", "insert", "scan", "read_modify_write"};

enum class distribution { uniform, zipfian, latest, hotspot, sequential, exponential };
std::string_view distribution_name(distribution which);

struct workload {
    std::string name;                 // the file's name, without its directory
    std::int64_t recordcount = 1000;
    std::int64_t operationcount = 1000;
    std::int64_t insertstart = 0;
    std::int64_t insertcount = 1000;  // default recordcount - insertstart
    std::int64_t fieldcount = 10;
    std::int64_t fieldlength = 100;
    std::int64_t minfieldlength = 1;
    std::string fieldlengthdistribution = "constant";  // constant | uniform | zipfian
    bool readallfields = true;
    bool writeallfields = false;
    double proportions[operation_count] = {0.95, 0.05, 0, 0, 0};  // YCSB's defaults
    distribution request = distribution::uniform;
    bool ordered_inserts = false;     // insertorder=ordered
    std::int64_t zeropadding = 1;
    std::int64_t minscanlength = 1;
    std::int64_t maxscanlength = 1000;
    std::string scanlengthdistribution = "uniform";  // uniform | zipfian
    double hotspotdatafraction = 0.2;
    double hotspotopnfraction = 0.8;
    double exponential_percentile = 95;
    double exponential_frac = 0.8571428571;
    // One line per property neither YCSB nor this program knows ("file:3:
    // unknown property ... (did you mean ...?)"): a typo is likelier than an
    // extension, and an ignored property silently changes the workload.
    std::vector<std::string> warnings;

    // Reads and checks every property CoreWorkload reads; throws workload_error.
    static workload from(const properties& source, const std::string& name);

    // The largest record in bytes (fieldcount * (max field length + 10)).
    std::size_t max_record_bytes() const;
    // Expected new keys of the scrambled zipfian: (int)(operationcount * insertproportion * 2).
    std::int64_t expected_new_keys() const;
};

// CoreWorkload.buildKeyName: "user" + (ordered ? keynum : fnv_hash64(keynum)),
// zero-padded to zeropadding digits.
std::string key_name(std::int64_t keynum, const workload& spec);

// One rank's choosers (its own random stream, its view of the insert counter).
class key_chooser {
public:
    key_chooser(const workload& spec, int rank, int ranks, std::uint64_t seed);

    operation next_operation() { return static_cast<operation>(m_operations.next(m_random)); }
    // CoreWorkload.nextKeynum against this rank's view of the acknowledged limit.
    std::int64_t next_keynum();
    std::int64_t next_scan_length();
    std::int64_t next_field();
    std::int64_t next_field_length();
    // The next run-phase insert of this rank, and its acknowledgement (in any order).
    std::int64_t next_insert_keynum();
    void acknowledge_insert(std::int64_t keynum);
    // This rank's own inserts acknowledged in order (c_r).
    std::int64_t own_acknowledged() const { return m_inserts_contiguous; }
    // What this rank last learnt of every rank's c (its own entry is ignored).
    void learn_acknowledged(const std::vector<std::int64_t>& counts);
    std::int64_t acknowledged_limit() const;
    random_source& random() { return m_random; }

private:
    const workload& m_spec;
    int m_rank;
    int m_ranks;
    random_source m_random;
    discrete_generator m_operations;
    std::optional<uniform_generator> m_uniform;
    std::optional<scrambled_zipfian_generator> m_zipfian;
    std::optional<skewed_latest_generator> m_latest;
    std::optional<hotspot_generator> m_hotspot;
    std::optional<exponential_generator> m_exponential;
    std::int64_t m_sequential = 0;
    std::optional<uniform_generator> m_scan_uniform;
    std::optional<zipfian_generator> m_scan_zipfian;
    std::optional<uniform_generator> m_field_uniform;
    std::optional<zipfian_generator> m_field_length_zipfian;
    std::optional<uniform_generator> m_field_length_uniform;
    uniform_generator m_field;
    std::int64_t m_inserts_issued = 0;
    std::int64_t m_inserts_contiguous = 0;  // own inserts 0..this-1 acknowledged
    std::vector<bool> m_acknowledged;        // own insert index -> acknowledged (beyond contiguous)
    std::vector<std::int64_t> m_known;       // every rank's c as last learnt
};

// ---- records -------------------------------------------------------------------

inline constexpr std::size_t field_header_bytes = 10;  // length (2) + tag (8)

// A writer tag: (rank + 1) << 40 | sequence.
inline std::uint64_t make_tag(int rank, std::uint64_t sequence) {
    return (static_cast<std::uint64_t>(rank) + 1) << 40 | (sequence & ((std::uint64_t{1} << 40) - 1));
}
inline int tag_rank(std::uint64_t tag) { return static_cast<int>(tag >> 40) - 1; }
inline std::uint64_t tag_sequence(std::uint64_t tag) { return tag & ((std::uint64_t{1} << 40) - 1); }

// Appends field `field` of `key` with `tag` and `length` bytes to `out`.
void append_field(std::string& out, std::string_view key, std::int64_t field, std::uint64_t tag, std::size_t length);

struct field_view {
    std::uint64_t tag = 0;
    std::size_t offset = 0;  // of the field's header in the record
    std::size_t bytes = 0;   // header + data
};

// Splits a record into its fields and checks each against (key, field, tag).
// Returns the empty string if the record is well-formed for `key`, else what
// is wrong; fills `fields` either way (as far as it got).
std::string check_record(std::string_view record, std::string_view key, const workload& spec,
                         std::vector<field_view>& fields);

// Splits a record into its fields by their lengths alone (no content check);
// false if it is malformed.
bool split_record(std::string_view record, std::vector<field_view>& fields);

// `record` with field `field` replaced by `replacement` (one field as
// append_field writes it).  `fields` is check_record's split of `record`.
std::string replace_field(std::string_view record, const std::vector<field_view>& fields, std::int64_t field,
                          std::string_view replacement);

}  // namespace mpidict::apps::ycsb
