// apps/ycsb's pieces without MPI: YCSB's FNV hash against known values (the
// keys every YCSB user has seen: record 0 is user6284781860667377211), the
// generators against their analytic distributions (chi-square with a fixed
// seed; the threshold is the 1e-4 upper tail, so a correct generator fails
// with that probability per seed, and the seeds are fixed), the property
// parser and its errors, the record format, and the latency histogram.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ycsb/generators.hpp"
#include "ycsb/workload.hpp"
#include "ycsb/ycsb.hpp"

namespace {

using namespace mpidict::apps::ycsb;

// The chi-square statistic's 1e-4 upper tail for `df` degrees of freedom
// (Wilson-Hilferty).
double chi_square_limit(double df) {
    const double z = 3.719;
    const double a = 2.0 / (9.0 * df);
    return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

// Chi-square of `observed` counts against `expected` probabilities over
// `samples`; bins expected below 5 are pooled into the next.
void expect_fits(const std::vector<std::uint64_t>& observed, const std::vector<double>& expected,
                 std::uint64_t samples, const std::string& what) {
    ASSERT_EQ(observed.size(), expected.size());
    double statistic = 0;
    double pooled_expected = 0;
    double pooled_observed = 0;
    int bins = 0;
    for (std::size_t i = 0; i < observed.size(); ++i) {
        pooled_expected += expected[i] * static_cast<double>(samples);
        pooled_observed += static_cast<double>(observed[i]);
        if (pooled_expected < 5 && i + 1 < observed.size())
            continue;
        if (pooled_expected <= 0) {  // an impossible value, drawn or not
            EXPECT_EQ(pooled_observed, 0) << what << ": " << pooled_observed << " draws of impossible values";
            break;
        }
        statistic += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
        ++bins;
        pooled_expected = 0;
        pooled_observed = 0;
    }
    EXPECT_LT(statistic, chi_square_limit(bins - 1)) << what << ": chi-square " << statistic << " over " << bins << " bins";
}

// P(X < k) of YCSB's zipfian generator over n items (Gray et al.'s
// construction): items 0 and 1 exactly, then the inverse of
// n * (eta * u - eta + 1)^alpha.
double zipfian_cdf_below(std::int64_t k, std::int64_t n, double theta, double zetan) {
    if (k <= 0)
        return 0;
    if (k == 1)
        return 1 / zetan;
    const double zeta2 = 1 + std::pow(0.5, theta);
    if (k == 2)
        return zeta2 / zetan;
    if (k >= n)
        return 1;
    const double eta = (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) / (1 - zeta2 / zetan);
    const double u = (std::pow(static_cast<double>(k) / static_cast<double>(n), 1 - theta) - 1 + eta) / eta;
    return std::max(zeta2 / zetan, std::min(1.0, u));
}

// The probabilities of items 0 .. n-1 of YCSB's zipfian over n items.
std::vector<double> zipfian_pmf(std::int64_t n, double zetan) {
    std::vector<double> pmf(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k)
        pmf[static_cast<std::size_t>(k)] = zipfian_cdf_below(k + 1, n, 0.99, zetan) - zipfian_cdf_below(k, n, 0.99, zetan);
    return pmf;
}

// Counts `samples` values of draw() in the bins first .. first + bins - 1; a
// value outside them fails the test (and ends the counting).
template <class Draw>
std::vector<std::uint64_t> count_draws(std::int64_t first, std::size_t bins, std::uint64_t samples, Draw&& draw) {
    std::vector<std::uint64_t> counts(bins);
    for (std::uint64_t i = 0; i < samples; ++i) {
        const std::int64_t value = draw();
        if (value < first || value >= first + static_cast<std::int64_t>(bins)) {
            ADD_FAILURE() << "drew " << value << ", outside [" << first << ", " << first + static_cast<std::int64_t>(bins)
                          << ")";
            break;
        }
        ++counts[static_cast<std::size_t>(value - first)];
    }
    return counts;
}

TEST(Fnv, KnownValues) {
    // Computed independently (Python integers) and, for 0 and 1, the first keys
    // of every YCSB load with hashed inserts.
    EXPECT_EQ(fnv_hash64(0), 6284781860667377211LL);
    EXPECT_EQ(fnv_hash64(1), 8517097267634966620LL);
    EXPECT_EQ(fnv_hash64(2), 1820151046732198393LL);
    EXPECT_EQ(fnv_hash64(42), 55488592825689361LL);
    EXPECT_EQ(fnv_hash64(1000), 5952875239596136740LL);
    EXPECT_EQ(fnv_hash64(-1), 8289690350564177859LL);  // the arithmetic shift
    EXPECT_EQ(fnv_hash64(INT64_MAX), 8289549613075766851LL);
}

TEST(Keys, NamesLikeYcsb) {
    workload spec;
    EXPECT_EQ(key_name(0, spec), "user6284781860667377211");
    EXPECT_EQ(key_name(1, spec), "user8517097267634966620");
    spec.ordered_inserts = true;
    EXPECT_EQ(key_name(7, spec), "user7");
    spec.zeropadding = 5;
    EXPECT_EQ(key_name(7, spec), "user00007");
    EXPECT_EQ(key_name(123456, spec), "user123456");
}

TEST(Uniform, ChiSquare) {
    random_source random(11);
    const uniform_generator generator(100, 199);
    const std::uint64_t samples = 200000;
    const std::vector<std::uint64_t> counts = count_draws(100, 100, samples, [&] { return generator.next(random); });
    expect_fits(counts, std::vector<double>(100, 0.01), samples, "uniform");
}

TEST(Uniform, DetectsABias) {
    // The test above can fail: a generator that favours one value is rejected.
    random_source random(11);
    const uniform_generator generator(0, 99);
    std::vector<std::uint64_t> counts(100);
    const std::uint64_t samples = 200000;
    for (std::uint64_t i = 0; i < samples; ++i) {
        std::int64_t value = generator.next(random);
        if (i % 50 == 0)
            value = 0;
        ++counts[static_cast<std::size_t>(value)];
    }
    double statistic = 0;
    for (const std::uint64_t count : counts)
        statistic += std::pow(static_cast<double>(count) - 2000.0, 2) / 2000.0;
    EXPECT_GT(statistic, chi_square_limit(99));
}

TEST(Zipfian, MatchesItsAnalyticDistribution) {
    const std::int64_t n = 1000;
    zipfian_generator generator(0, n - 1);
    const double zetan = zipfian_generator::zeta(0, n, 0.99, 0);
    EXPECT_NEAR(generator.zetan(), zetan, 1e-12);
    random_source random(5);
    const std::uint64_t samples = 400000;
    const std::vector<std::uint64_t> counts =
        count_draws(0, static_cast<std::size_t>(n), samples, [&] { return generator.next(random); });
    expect_fits(counts, zipfian_pmf(n, zetan), samples, "zipfian");
    // And it is close to the true zipf law it approximates: item 0 has 1/zeta(n).
    EXPECT_NEAR(static_cast<double>(counts[0]) / samples, 1 / zetan, 0.005);
    EXPECT_NEAR(static_cast<double>(counts[9]) / samples, std::pow(10, -0.99) / zetan, 0.004);
}

TEST(Zipfian, GrowsItsItemCount) {
    // next_long with a larger count extends zetan incrementally, as YCSB does.
    zipfian_generator generator(0, 99);
    random_source random(3);
    (void)generator.next_long(random, 200);
    EXPECT_NEAR(generator.zetan(), zipfian_generator::zeta(0, 200, 0.99, 0), 1e-9);
}

TEST(ScrambledZipfian, HotItemsAreHashedOverTheRange) {
    const std::int64_t n = 1000;
    scrambled_zipfian_generator generator(0, n - 1);
    random_source random(9);
    const std::uint64_t samples = 400000;
    const std::vector<std::uint64_t> counts =
        count_draws(0, static_cast<std::size_t>(n), samples, [&] { return generator.next(random); });
    // Item 0 of the 10^10-item zipfian has probability 1/26.469...; it lands on
    // fnv(0) % n (with a few other items' mass on the same slot).
    const double zetan = scrambled_zipfian_generator::zetan_for_item_count;
    const auto hottest = static_cast<std::size_t>(fnv_hash64(0) % n);
    const auto second = static_cast<std::size_t>(fnv_hash64(1) % n);
    EXPECT_NEAR(static_cast<double>(counts[hottest]) / samples, 1 / zetan, 0.004);
    EXPECT_NEAR(static_cast<double>(counts[second]) / samples, std::pow(0.5, 0.99) / zetan, 0.003);
    EXPECT_EQ(std::max_element(counts.begin(), counts.end()) - counts.begin(), static_cast<std::ptrdiff_t>(hottest));
    // Not sorted by key: the popular keys are spread (the first 10 keys are not the top 10).
    std::uint64_t first_ten = 0;
    for (std::size_t i = 0; i < 10; ++i)
        first_ten += counts[i];
    EXPECT_LT(static_cast<double>(first_ten) / samples, 0.1);
}

TEST(ScrambledZipfian, ZetaConstantIsTheSumItClaims) {
    // ZETAN is zeta(10^10, 0.99); check the first 10^7 terms and the tail's integral.
    const double head = zipfian_generator::zeta(0, 10000000, 0.99, 0);
    // sum_{i=10^7+1}^{10^10} i^-0.99 ~ integral from 10^7+0.5 to 10^10+0.5 of x^-0.99 dx
    const auto integral = [](double x) { return std::pow(x, 0.01) / 0.01; };
    const double tail = integral(1e10 + 0.5) - integral(1e7 + 0.5);
    EXPECT_NEAR(head + tail, scrambled_zipfian_generator::zetan_for_item_count, 1e-3);
}

TEST(SkewedLatest, FavoursTheNewest) {
    const std::int64_t last = 999;
    skewed_latest_generator generator(last);
    random_source random(21);
    const std::uint64_t samples = 300000;
    // last - X (the distance from the newest, X in 1 .. last) is YCSB's zipfian
    // over `last` items (0 .. last - 1).
    const std::vector<std::uint64_t> counts =
        count_draws(0, static_cast<std::size_t>(last), samples, [&] { return last - generator.next(random, last); });
    expect_fits(counts, zipfian_pmf(last, zipfian_generator::zeta(0, last, 0.99, 0)), samples, "latest");
}

TEST(Hotspot, HotSetGetsItsShare) {
    const hotspot_generator generator(0, 999, 0.2, 0.8);
    EXPECT_EQ(generator.hot_interval(), 200);
    EXPECT_EQ(generator.cold_interval(), 800);
    random_source random(4);
    const std::uint64_t samples = 200000;
    const std::vector<std::uint64_t> counts = count_draws(0, 1000, samples, [&] { return generator.next(random); });
    std::vector<double> expected(1000);
    for (std::size_t i = 0; i < 1000; ++i)
        expected[i] = i < 200 ? 0.8 / 200 : 0.2 / 800;
    expect_fits(counts, expected, samples, "hotspot");
}

TEST(Exponential, MeanAndPercentile) {
    const exponential_generator generator(95, 1000);
    random_source random(8);
    double sum = 0;
    int below = 0;
    const int samples = 200000;
    for (int i = 0; i < samples; ++i) {
        const double value = generator.next(random);
        sum += value;
        below += value < 1000;
    }
    EXPECT_NEAR(sum / samples, 1 / generator.gamma(), 3);
    EXPECT_NEAR(static_cast<double>(below) / samples, 0.95, 0.003);
}

TEST(Discrete, Proportions) {
    discrete_generator generator;
    generator.add(0.5, 0);
    generator.add(0.3, 1);
    generator.add(0.2, 2);
    random_source random(2);
    std::vector<std::uint64_t> counts(3);
    const std::uint64_t samples = 100000;
    for (std::uint64_t i = 0; i < samples; ++i)
        ++counts[static_cast<std::size_t>(generator.next(random))];
    expect_fits(counts, {0.5, 0.3, 0.2}, samples, "discrete");
}

// ---- properties and the workload ------------------------------------------------

workload parse_workload(const std::string& text, const std::vector<std::string>& overrides = {}) {
    properties source = properties::parse(text, "test.properties");
    for (const std::string& each : overrides)
        source.override_with(each);
    return workload::from(source, "test.properties");
}

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
    try {
        parse_workload(text, overrides);
    } catch (const workload_error& error) {
        return error.what();
    }
    return "(no error)";
}

TEST(Properties, JavaSyntax) {
    const properties source = properties::parse(
        "# comment\n! another\n  recordcount = 5000\noperationcount: 7\nfieldcount 3\n"
        "requestdistribution=zip\\\n    fian\nempty=\nwith\\ space=1\r\n",
        "p");
    EXPECT_EQ(source.text("recordcount", ""), "5000");
    EXPECT_EQ(source.text("operationcount", ""), "7");
    EXPECT_EQ(source.text("fieldcount", ""), "3");
    EXPECT_EQ(source.text("requestdistribution", ""), "zipfian");
    EXPECT_EQ(source.text("empty", "x"), "");
    EXPECT_EQ(source.text("with space", ""), "1");
    EXPECT_EQ(source.find("recordcount")->origin, "p:3");
}

TEST(Properties, OverridesWin) {
    const workload spec = parse_workload("recordcount=1000\noperationcount=10\n",
                                         {"recordcount=50", "readproportion=0.5", "updateproportion=0.5"});
    EXPECT_EQ(spec.recordcount, 50);
    EXPECT_EQ(spec.insertcount, 50);
    EXPECT_DOUBLE_EQ(spec.proportions[0], 0.5);
}

TEST(Properties, BadFilesAreNamedClearly) {
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\nrequestdistribution=pareto\n")
                  .find("test.properties:3: unknown request distribution \"pareto\""),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\nreadproportion=0.7\nupdateproportion=0.5\n")
                  .find("proportions sum to 1.2"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=-5\noperationcount=10\n").find("test.properties:1: recordcount=-5 is out of range"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=ten\n").find("operationcount=ten is not an integer"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\nreadproportion=-0.1\n").find("readproportion=-0.1 is out of range"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\nscanlengthdistribution=latest\n")
                  .find("not allowed for scan length"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\nrequestdistribution=hotspot\nhotspotdatafraction=0.01\n")
                  .find("leaves the hot set of 10 records empty"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\nreadallfields=yes\n").find("readallfields=yes is not true or false"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=10\n", {"fieldcount"}).find("-p fieldcount: expected key=value"),
              std::string::npos);
    EXPECT_NE(error_of("recordcount=99999999999999999999\n").find("is out of range"), std::string::npos);
    EXPECT_NE(error_of("operationcount=10\n").find("recordcount=0 is out of range"), std::string::npos);
    EXPECT_NE(error_of("recordcount=10\noperationcount=5\nreadproportion=0\nupdateproportion=0\n")
                  .find("every operation proportion is 0"),
              std::string::npos);
    try {
        properties::read_file("/nonexistent/workloadz");
        ADD_FAILURE() << "no error";
    } catch (const workload_error& error) {
        EXPECT_NE(std::string(error.what()).find("/nonexistent/workloadz: cannot open"), std::string::npos);
    }
}

TEST(Properties, TheRepositorysWorkloadFiles) {
    const std::string directory = MPIDICT_YCSB_WORKLOADS;
    struct expectation {
        const char* file;
        double proportions[operation_count];
        distribution request;
    };
    const expectation expected[] = {
        {"workloada", {0.5, 0.5, 0, 0, 0}, distribution::zipfian},
        {"workloadb", {0.95, 0.05, 0, 0, 0}, distribution::zipfian},
        {"workloadc", {1, 0, 0, 0, 0}, distribution::zipfian},
        {"workloadd", {0.95, 0, 0.05, 0, 0}, distribution::latest},
        {"workloade", {0, 0, 0.05, 0.95, 0}, distribution::zipfian},
        {"workloadf", {0.5, 0, 0, 0, 0.5}, distribution::zipfian},
    };
    for (const expectation& each : expected) {
        const std::string path = directory + "/" + each.file;
        ASSERT_TRUE(std::ifstream(path)) << path << " is missing from the checkout (data/ycsb)";
        const workload spec = workload::from(properties::read_file(path), each.file);
        for (int i = 0; i < operation_count; ++i)
            EXPECT_DOUBLE_EQ(spec.proportions[i], each.proportions[i]) << each.file << " " << operation_names[i];
        EXPECT_EQ(spec.request, each.request) << each.file;
        EXPECT_EQ(spec.fieldcount, 10);
        EXPECT_EQ(spec.fieldlength, 100);
        EXPECT_EQ(spec.recordcount, 1000);
        EXPECT_TRUE(spec.warnings.empty()) << each.file << ": " << (spec.warnings.empty() ? "" : spec.warnings[0]);
    }
}

TEST(Properties, UnknownPropertiesAreNamedWithTheLikelyIntent) {
    const workload spec = parse_workload(
        "recordcount=10\noperationcount=10\nscanlenghtdistribution=zipfian\nthreadcount=4\n"
        "redis.host=127.0.0.1\nmeasurement.interval=op\nflavour=vanilla\n",
        {"readproportionn=0.5"});
    ASSERT_EQ(spec.warnings.size(), 3u);
    // std::map order: flavour, readproportionn, scanlenghtdistribution.
    EXPECT_EQ(spec.warnings[0], "test.properties:7: unknown property \"flavour\" is ignored "
                                "(not a YCSB core workload or client property)");
    EXPECT_EQ(spec.warnings[1], "-p readproportionn=0.5: unknown property \"readproportionn\" is ignored "
                                "(did you mean \"readproportion\"?)");
    EXPECT_EQ(spec.warnings[2], "test.properties:3: unknown property \"scanlenghtdistribution\" is ignored "
                                "(did you mean \"scanlengthdistribution\"?)");
    // The typo changed nothing: the default scan length distribution stands.
    EXPECT_EQ(spec.scanlengthdistribution, "uniform");
}

TEST(KeyChooser, InsertsAreDisjointAndAcknowledgedInOrder) {
    const workload spec = parse_workload("recordcount=100\noperationcount=100\ninsertproportion=1\nreadproportion=0\n"
                                         "updateproportion=0\nrequestdistribution=latest\n");
    key_chooser rank0(spec, 0, 3, 1);
    key_chooser rank2(spec, 2, 3, 1);
    EXPECT_EQ(rank0.next_insert_keynum(), 100);
    EXPECT_EQ(rank0.next_insert_keynum(), 103);
    EXPECT_EQ(rank2.next_insert_keynum(), 102);
    EXPECT_EQ(rank0.acknowledged_limit(), 99);
    rank0.acknowledge_insert(103);  // out of order: c_0 waits for 100
    EXPECT_EQ(rank0.own_acknowledged(), 0);
    rank0.acknowledge_insert(100);
    EXPECT_EQ(rank0.own_acknowledged(), 2);
    // Nothing learnt of ranks 1 and 2: their counts are 0, so only key 100 is
    // known stored (rank 0's first insert, the next key 101 being rank 1's).
    EXPECT_EQ(rank0.acknowledged_limit(), 100);
    rank0.learn_acknowledged({0, 1, 0});   // rank 1 stored 101
    EXPECT_EQ(rank0.acknowledged_limit(), 101);
    rank0.learn_acknowledged({0, 1, 1});   // and rank 2 stored 102: m = 1
    EXPECT_EQ(rank0.acknowledged_limit(), 103);  // 100..102, then rank 0's 103
    rank0.learn_acknowledged({7, 2, 5});   // rank 0's own entry is ignored: c_0 = 2
    EXPECT_EQ(rank0.acknowledged_limit(), 105);  // m = 2: 100..105; 106 is rank 0's third, not done
    for (int i = 0; i < 1000; ++i)
        EXPECT_LE(rank0.next_keynum(), rank0.acknowledged_limit());
}

// ---- records ----------------------------------------------------------------------

TEST(Records, RoundTripAndCorruption) {
    workload spec;
    spec.fieldcount = 4;
    spec.fieldlength = 30;
    std::string record;
    for (int field = 0; field < 4; ++field)
        append_field(record, "user1", field, make_tag(2, 7 + field), 30);
    EXPECT_EQ(record.size(), spec.max_record_bytes());
    std::vector<field_view> fields;
    EXPECT_EQ(check_record(record, "user1", spec, fields), "");
    ASSERT_EQ(fields.size(), 4u);
    EXPECT_EQ(tag_rank(fields[3].tag), 2);
    EXPECT_EQ(tag_sequence(fields[3].tag), 10u);
    for (const char c : record.substr(field_header_bytes, 30))
        EXPECT_TRUE(c >= ' ' && c <= '~') << int(c);
    // Another key's record, a flipped byte, a truncation: all caught.
    EXPECT_NE(check_record(record, "user2", spec, fields), "");
    std::string flipped = record;
    flipped[field_header_bytes + 5] ^= 1;
    EXPECT_NE(check_record(flipped, "user1", spec, fields).find("field 0"), std::string::npos);
    EXPECT_NE(check_record(record.substr(0, record.size() - 1), "user1", spec, fields), "");
    // Replacing a field keeps the others.
    ASSERT_EQ(check_record(record, "user1", spec, fields), "");
    std::string field;
    append_field(field, "user1", 2, make_tag(0, 99), 30);
    const std::string patched = replace_field(record, fields, 2, field);
    std::vector<field_view> after;
    EXPECT_EQ(check_record(patched, "user1", spec, after), "");
    EXPECT_EQ(tag_sequence(after[2].tag), 99u);
    EXPECT_EQ(tag_sequence(after[1].tag), 8u);
    std::vector<field_view> split;
    EXPECT_TRUE(split_record(patched, split));
    EXPECT_EQ(split.size(), 4u);
    EXPECT_FALSE(split_record(patched.substr(0, 5), split));
}

TEST(Histogram, Quantiles) {
    latency_histogram histogram;
    for (int i = 1; i <= 1000; ++i)
        histogram.add(static_cast<std::uint64_t>(i) * 1000);  // 1 .. 1000 us
    EXPECT_EQ(histogram.count(), 1000u);
    EXPECT_NEAR(histogram.quantile_us(0.5), 500, 500 * 0.035);
    EXPECT_NEAR(histogram.quantile_us(0.99), 990, 990 * 0.035);
    EXPECT_NEAR(histogram.quantile_us(0.999), 999, 999 * 0.035);
    EXPECT_NEAR(histogram.mean_us(), 500.5, 1e-9);
    EXPECT_DOUBLE_EQ(histogram.max_us(), 1000);
    for (std::uint64_t ns : {0ULL, 63ULL, 64ULL, 1000ULL, 123456789ULL, 1ULL << 45})  // up to 9.8 hours
        EXPECT_LE(std::abs(latency_histogram::bucket_middle_ns(latency_histogram::bucket_of(ns)) - static_cast<double>(ns)),
                  std::max(1.0, static_cast<double>(ns) / 32))
            << ns;
}

}  // namespace
