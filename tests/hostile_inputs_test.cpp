// Issue 19 (items 2, 3, 6, 7): the library's readers and constructors against hostile input:
// the one bounded file reader, numbers beyond a double in JSON, node counts no network can
// have, absurd built-in sizes, and names that would break a message.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/onnx.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::error_of;
using testing::TempPath;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// --- the bounded reader (item 6, and "a directory reads as theta has 0 entries") ---

TEST(ReadInputFile, ReadsAFileUpToTheBound) {
  const TempPath p("small.txt");
  write_text(p.str(), "0123456789");
  EXPECT_EQ(read_input_file(p.str(), 10), "0123456789");
  EXPECT_EQ(read_input_file(p.str(), 100), "0123456789");
}

TEST(ReadInputFile, RefusesAFileOverTheBoundNamingItAndTheBound) {
  const TempPath p("big.txt");
  write_text(p.str(), "0123456789");
  const std::string what = error_of<TooLarge>([&] { (void)read_input_file(p.str(), 9); });
  EXPECT_TRUE(contains(what, p.str()));
  EXPECT_TRUE(contains(what, "9 bytes"));
}

TEST(ReadInputFile, RefusesAHugeSparseFileFromItsSizeWithoutReadingIt) {
  const TempPath p("sparse.bin");
  { std::ofstream(p.str(), std::ios::binary); }
  fs::resize_file(p.str(), std::uintmax_t{1} << 40);  // 1 TiB of holes
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW((void)read_input_file(p.str(), 1 << 20), TooLarge);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(ReadInputFile, StopsReadingAnEndlessDeviceAtTheBound) {
  // /dev/zero has no size and no end: the reader stops one byte past the bound.
  const std::string what = error_of<TooLarge>([] { (void)read_input_file("/dev/zero", 1 << 20); });
  EXPECT_TRUE(contains(what, "'/dev/zero' is too large"));
}

TEST(ReadInputFile, RefusesADirectoryAndAMissingFileWithTheReason) {
  const TempPath dir("dir");
  fs::create_directory(dir.str());
  EXPECT_TRUE(contains(error_of<FormatError>([&] { (void)read_input_file(dir.str(), 100); }),
                       "is a directory"));
  const std::string missing = dir.str() + "/missing.json";
  const std::string what = error_of<FormatError>([&] { (void)read_input_file(missing, 100); });
  EXPECT_TRUE(contains(what, missing));
  EXPECT_TRUE(contains(what, "No such file or directory"));
}

TEST(ReadInputFile, EveryReaderUsesIt) {
  const TempPath dir("readers");
  fs::create_directory(dir.str());
  EXPECT_TRUE(
      contains(error_of<FormatError>([&] { (void)read_network(dir.str()); }), "is a directory"));
  EXPECT_TRUE(
      contains(error_of<FormatError>([&] { (void)read_onnx(dir.str()); }), "is a directory"));
  // A network file over the bound of its memory limit (1 MiB / 16 = 64 KiB of JSON).
  const TempPath big("big.json");
  write_text(big.str(), std::string(100'000, ' ') + "{}");
  EXPECT_EQ(max_input_bytes(InputKind::json, 1 << 20), std::size_t{1} << 16);
  EXPECT_THROW((void)read_network(big.str(), {.max_memory = 1 << 20}), TooLarge);
}

// --- numbers a double cannot hold (item 3) ---

std::string network_with_weight(const std::string& weight) {
  return R"({"format": "pathlift-network", "version": 1, "nodes": ["a", "b"],
             "edges": [["a", "b"]], "weights": [)" +
         weight + "]}";
}

TEST(JsonNumbers, AWeightThatUnderflowsToZeroIsRefusedNamingIt) {
  const std::string what =
      error_of<FormatError>([] { (void)parse_network(network_with_weight("1e-400")); });
  EXPECT_TRUE(contains(what, "\"weights\"[0]"));
  EXPECT_TRUE(contains(what, "1e-400"));
  EXPECT_TRUE(contains(what, "underflows to 0"));
  EXPECT_THROW((void)parse_network(network_with_weight("-0.5e-330")), FormatError);
}

TEST(JsonNumbers, AWeightThatOverflowsIsRefusedNamingIt) {
  const std::string what =
      error_of<FormatError>([] { (void)parse_network(network_with_weight("-1e400")); });
  EXPECT_TRUE(contains(what, "\"weights\"[0]"));
  EXPECT_TRUE(contains(what, "-1e400"));
  // An integer too long for 64 bits is read as a double, and one beyond 1.8e308 is refused too.
  EXPECT_THROW((void)parse_network(network_with_weight(std::string(400, '9'))), FormatError);
}

TEST(JsonNumbers, SubnormalsAndZerosAreNumbers) {
  EXPECT_EQ(parse_network(network_with_weight("1e-310")).weights()[0], 1e-310);
  EXPECT_EQ(parse_network(network_with_weight("0.0e-400")).weights()[0], 0.0);
  EXPECT_EQ(parse_network(network_with_weight("-0e5")).weights()[0], 0.0);
}

TEST(JsonNumbers, TheLayerGraphReaderChecksToo) {
  const std::string text = R"({"format": "pathlift-layers", "version": 1, "layers": [],
                                "weights": [1e999]})";
  EXPECT_TRUE(contains(error_of<FormatError>([&] { (void)parse_layer_graph(text); }),
                       "out of the range of a double"));
}

// --- node counts and built-in sizes (item 6) ---

TEST(NodeCount, AHugeCountIsRefusedBeforeANameIsMade) {
  const auto start = std::chrono::steady_clock::now();
  const std::string what =
      error_of<FormatError>([] { (void)NodeNames::numbered(std::uint64_t{1} << 40, 3, "nodes"); });
  EXPECT_TRUE(contains(what, "node count 1099511627776 is out of range"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(NodeNames::numbered(4, 2, "nodes").size(), 4);
}

TEST(BuiltIns, FeedForwardRefusesSizesWhoseCountsOverflow) {
  constexpr Index huge = std::numeric_limits<Index>::max();
  const std::string what =
      error_of<std::invalid_argument>([] { (void)feed_forward(huge, {huge}, huge); });
  EXPECT_TRUE(contains(what, "too large"));
  EXPECT_TRUE(contains(what, std::to_string(huge)));
  EXPECT_THROW((void)feed_forward(3, {huge / 2, huge / 2}, 1, false), std::invalid_argument);
}

TEST(BuiltIns, RandomDagRefusesSizesItCannotDrawQuickly) {
  const std::string what =
      error_of<std::invalid_argument>([] { (void)builtin_network("random-dag:1000000,0.1,1"); });
  EXPECT_TRUE(contains(what, "at most 8192"));
  EXPECT_NO_THROW((void)random_dag(300, 0.01, 1));
}

// --- names in messages (item 7) ---

TEST(Printable, EscapesControlCharactersAndCutsLongText) {
  EXPECT_EQ(printable("a\n\x1b[31mb\\"), "a\\n\\x1b[31mb\\\\");
  EXPECT_EQ(printable("h\xc3\xa9llo"), "h\xc3\xa9llo");  // UTF-8 stays readable
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");        // stray bytes do not
  EXPECT_EQ(printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
}

TEST(Printable, NodeNamesInNetworkErrorsAreEscaped) {
  // A cycle between nodes whose names hold a newline and an escape sequence.
  const std::string text = R"({"format": "pathlift-network", "version": 1,
      "nodes": ["a\nb", "\u001b[2J"], "edges": [[0, 1], [1, 0]]})";
  const std::string what = error_of<NetworkError>([&] { (void)parse_network(text); });
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
  EXPECT_TRUE(contains(what, "a\\nb"));
  const std::string unknown = R"({"format": "pathlift-network", "version": 1, "nodes": ["a", "b"],
      "edges": [["a", "b"]], "outputs": ["x\u0007y"]})";
  EXPECT_TRUE(contains(error_of<FormatError>([&] { (void)parse_network(unknown); }),
                       "unknown node 'x\\x07y'"));
}

}  // namespace
}  // namespace pathlift
