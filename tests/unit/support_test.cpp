// The support library's MPI-free parts: the option parser every program uses
// and the JSON lines every program prints.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mpidict/support/json.hpp"
#include "mpidict/support/options.hpp"

namespace {

using mpidict::support::option_parser;
using mpidict::support::parse_count;
using mpidict::support::usage_error;

// argv-style words for option_parser::parse.
struct words {
    explicit words(std::vector<std::string> list) : storage(std::move(list)) {
        for (std::string& word : storage)
            pointers.push_back(word.data());
    }
    std::span<char* const> span() const { return {pointers.data(), pointers.size()}; }
    std::vector<std::string> storage;
    std::vector<char*> pointers;
};

std::string error_of(option_parser& parser, std::vector<std::string> list) {
    const words argv(std::move(list));
    try {
        parser.parse(argv.span());
    } catch (const usage_error& problem) {
        return problem.what();
    }
    return "(no error)";
}

TEST(SupportOptions, CountsTakeSuffixesAndSeparators) {
    EXPECT_EQ(parse_count("200000", "--keys"), 200000u);
    EXPECT_EQ(parse_count("2e5", "--keys"), 200000u);
    EXPECT_EQ(parse_count("200k", "--keys"), 200000u);
    EXPECT_EQ(parse_count("64Ki", "--keys"), 65536u);
    EXPECT_EQ(parse_count("3Gi", "--keys"), 3ull << 30);
    EXPECT_EQ(parse_count("4'000'000", "--keys"), 4000000u);
    EXPECT_EQ(parse_count("4_000_000", "--keys"), 4000000u);
    EXPECT_EQ(parse_count("18446744073709551615", "--keys"), UINT64_MAX);
}

TEST(SupportOptions, BadCountsNameTheOptionAndTheText) {
    for (const char* bad : {"", "-1", "+1", "abc", "1.5", "5x", "_", "99999999999999999999", "20000000T"}) {
        try {
            parse_count(bad, "--keys");
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const usage_error& problem) {
            EXPECT_NE(std::string(problem.what()).find("--keys"), std::string::npos) << problem.what();
        }
    }
}

TEST(SupportOptions, ParsesEveryKindAndKeepsDefaults) {
    std::uint64_t keys = 10;
    std::uint32_t small = 3;
    double load = 0.5;
    std::string mode = "async";
    std::string file;
    bool quiet = false;
    bool baseline = true;
    std::size_t untouched = 77;
    option_parser parser("prog [options] FILE", "test");
    parser.add_count("keys", &keys, "keys", 1)
        .add_count("small", &small, "a 32-bit count", 1, 100)
        .add_count("untouched", &untouched, "left alone")
        .add_real("load", &load, "load", 0.1, 1)
        .add_choice("mode", &mode, {"async", "request"}, "mode")
        .add_flag("quiet", &quiet, "quiet")
        .add_flag("no-baseline", &baseline, "no baseline", false)
        .add_positional("input file", &file, "FILE");
    const words argv({"--keys", "2k", "--small=7", "in.txt", "--load", "0.25", "--mode=request", "--quiet",
                      "--no-baseline"});
    ASSERT_TRUE(parser.parse(argv.span()));
    EXPECT_EQ(keys, 2000u);
    EXPECT_EQ(small, 7u);
    EXPECT_EQ(untouched, 77u);
    EXPECT_DOUBLE_EQ(load, 0.25);
    EXPECT_EQ(mode, "request");
    EXPECT_EQ(file, "in.txt");
    EXPECT_TRUE(quiet);
    EXPECT_FALSE(baseline);
}

TEST(SupportOptions, MistakesAreUsageErrorsThatSayWhat) {
    std::uint64_t keys = 10;
    std::uint32_t small = 3;
    bool quiet = false;
    std::string file;
    option_parser parser("prog [options] FILE", "test");
    parser.add_count("keys", &keys, "keys", 1)
        .add_count("small", &small, "small", 1, 100)
        .add_flag("quiet", &quiet, "quiet")
        .add_positional("input file", &file, "FILE");
    EXPECT_EQ(error_of(parser, {"--keys", "0", "f"}), "--keys: must be at least 1 (got 0)");
    EXPECT_EQ(error_of(parser, {"--small", "101", "f"}), "--small: must be in [1, 100] (got 101)");
    // The target's own type bounds the range: 2^32 does not fit a uint32_t.
    EXPECT_EQ(error_of(parser, {"--small", "4Gi", "f"}).substr(0, 18), "--small: must be i");
    EXPECT_EQ(error_of(parser, {"--kyes", "5", "f"}), "unknown option --kyes");
    EXPECT_EQ(error_of(parser, {"--ke", "5", "f"}), "unknown option --ke; did you mean --keys?");
    EXPECT_EQ(error_of(parser, {"f", "--keys"}), "option --keys needs a value (N)");
    EXPECT_EQ(error_of(parser, {"--quiet=yes", "f"}), "option --quiet takes no value");
    EXPECT_EQ(error_of(parser, {"--keys", "5"}), "no input file given");
    EXPECT_EQ(error_of(parser, {"a", "b"}), "more than one input file given ('a' and 'b')");
    EXPECT_EQ(error_of(parser, {"-x", "f"}), "unexpected argument '-x' (options start with --)");
}

TEST(SupportOptions, HelpWinsAndListsEveryOption) {
    std::uint64_t keys = 10;
    option_parser parser("prog [options]", "Does things.");
    parser.add_count("keys", &keys, "how many keys", 1).add_epilogue("Exit codes: 0, 1, 2.\n");
    const words argv({"--keys", "0", "--help"});  // help even after a bad value
    EXPECT_FALSE(parser.parse(argv.span()));
    const std::string help = parser.help();
    EXPECT_EQ(help.rfind("usage: prog [options]\n", 0), 0u) << help;
    EXPECT_NE(help.find("--keys N"), std::string::npos) << help;
    EXPECT_NE(help.find("how many keys [10]"), std::string::npos) << help;
    EXPECT_NE(help.find("Exit codes"), std::string::npos) << help;
    EXPECT_THROW(option_parser("p", "d").add_flag("help", nullptr, "x"), std::logic_error);
}

TEST(SupportJson, StringsAndNumbers) {
    using mpidict::support::json_number;
    using mpidict::support::json_string;
    EXPECT_EQ(json_string("a\"b\\c\n\t\r\x01"), "\"a\\\"b\\\\c\\n\\t\\r\\u0001\"");
    EXPECT_EQ(json_number(10000000), "10000000");
    EXPECT_EQ(json_number(-3), "-3");
    EXPECT_EQ(json_number(0.25), "0.25");
    EXPECT_EQ(json_number(1.0 / 3), "0.3333333333");
    EXPECT_EQ(json_number(1e300), "1e+300");
    EXPECT_EQ(json_number(0.0 / 0.0), "null");
}

TEST(SupportJson, LinesStartWithTheSixFields) {
    mpidict::support::json_object fields;
    fields.add("keys", 5).add("name", "x").add("ok", true).add("list", std::vector<int>{1, 2});
    fields.add("inner", mpidict::support::json_object().add("a", 1.5));
    EXPECT_EQ(mpidict::support::json_line("b", "m", "1", "s", 2, 7, fields),
              "{\"bench\":\"b\",\"metric\":\"m\",\"value\":1,\"unit\":\"s\",\"ranks\":2,\"seed\":7,"
              "\"keys\":5,\"name\":\"x\",\"ok\":true,\"list\":[1,2],\"inner\":{\"a\":1.5}}");
}

}  // namespace
