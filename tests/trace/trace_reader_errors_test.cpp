// Bad input: every case is a one-line InputError that names the input and says
// what is wrong; never a crash or a hang.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

std::string error_of(std::string_view bytes, std::string_view label = "bad.json") {
  try {
    read_trace_bytes(bytes, label);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

void expect_error(std::string_view bytes, std::string_view needle) {
  const std::string msg = error_of(bytes);
  EXPECT_NE(msg.find("bad.json: "), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
}

std::string gzip(std::string_view text) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, text.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

constexpr std::string_view kGood =
    R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";

TEST(TraceReaderErrors, GoodInputIsAccepted) { EXPECT_EQ(error_of(kGood), "no error"); }

TEST(TraceReaderErrors, EmptyFile) { expect_error("", "file is empty"); }
TEST(TraceReaderErrors, OnlyWhitespace) { expect_error(" \n\t ", "empty"); }
TEST(TraceReaderErrors, NotJson) { expect_error("hello world", "not a JSON trace"); }
TEST(TraceReaderErrors, BinaryGarbage) { expect_error(std::string("\x00\x01\x02", 3), "not a JSON trace"); }

// A Perfetto protobuf trace (Trace { repeated TracePacket packet = 1 }), as perfetto's proto
// definitions lay it out: two packets, each tag 0x0a and its length, holding timestamp = 8 (varint)
// and trusted_packet_sequence_id = 10 (varint) fields. Named as such, with how to get JSON.
TEST(TraceReaderErrors, PerfettoProtobufIsNamed) {
  const std::string packet = std::string("\x40\xe8\x07", 3) + std::string("\x50\x01", 2);  // ts 1000, seq 1
  const std::string one = std::string("\x0a", 1) + static_cast<char>(packet.size()) + packet;
  const std::string trace = one + one;
  const std::string err = error_of(trace);
  EXPECT_NE(err.find("a Perfetto protobuf trace, not JSON"), std::string::npos) << err;
  EXPECT_NE(err.find("traceconv json"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line";
  // A newline-led text file is not taken for one: 0x0a then text that is no packet.
  expect_error("\n\n\x01", "not a JSON trace");
}
TEST(TraceReaderErrors, MissingTraceEvents) {
  expect_error(R"({"schemaVersion": 1, "traceName": "x"})", "no \"traceEvents\"");
}
TEST(TraceReaderErrors, TraceEventsNotArray) {
  expect_error(R"({"traceEvents": {"a": 1}})", "\"traceEvents\" is not an array");
}
TEST(TraceReaderErrors, TruncatedInsideEvents) {
  const std::string_view good = kGood;
  for (std::size_t cut = 20; cut + 2 < good.size(); cut += 7) {
    SCOPED_TRACE(cut);
    expect_error(good.substr(0, cut), "truncated");
  }
}
TEST(TraceReaderErrors, TruncatedRealTrace) {
  std::ifstream in(test::example_trace("sdpa_flash.json"), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  expect_error(std::string_view(text).substr(0, text.size() / 2), "truncated");
}
TEST(TraceReaderErrors, WrongFieldTypes) {
  expect_error(R"({"traceEvents": [{"ph": "X", "name": "k", "ts": "soon", "dur": 1}]})",
               "traceEvents[0].ts: expected a number");
  expect_error(R"({"traceEvents": [{"ph": "X", "name": 5, "ts": 1, "dur": 1}]})",
               "traceEvents[0].name: expected a string");
  expect_error(
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "name": "b", "ts": 1, "dur": 1, "args": 3}]})",
      "traceEvents[1].args: expected an object");
  expect_error(R"({"traceEvents": [{"ph": 1, "ts": 1}]})", "traceEvents[0].ph: expected a string");
  expect_error(R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": -4}]})", "dur: expected a duration");
  expect_error(R"({"traceEvents": [{"ph": "X", "ts": 1, "pid": [1]}]})", "pid: expected a number or a string");
  expect_error(R"({"traceEvents": [5]})", "traceEvents[0] at byte 17 is not an object");
  expect_error(R"({"traceEvents": [], "deviceProperties": 7})", "\"deviceProperties\" must be an array");
  expect_error(R"({"traceEvents": [], "baseTimeNanoseconds": "x"})", "\"baseTimeNanoseconds\" must be a number");
  // Found by the fuzzer: numbers beyond int64 must be refused, not cast (undefined behaviour).
  expect_error(R"({"traceEvents": [], "baseTimeNanoseconds": 1.79086e22})", "\"baseTimeNanoseconds\" is out of range");
  expect_error(R"({"traceEvents": [{"ph": "X", "ts": 1, "pid": 1e300}]})", "pid: expected a number in range");
}
TEST(TraceReaderErrors, MissingRequiredFields) {
  expect_error(R"({"traceEvents": [{"name": "k", "ts": 1}]})", "missing \"ph\"");
  expect_error(R"({"traceEvents": [{"ph": "X", "name": "k"}]})", "missing \"ts\"");
}
TEST(TraceReaderErrors, InvalidJsonInsideEvent) {
  expect_error(R"({"traceEvents": [{"ph": "X", "ts": 1,, "dur": 2}]})", "invalid JSON in traceEvents[0]");
  expect_error(R"({"traceEvents": [{"ph": "X", "ts": 1} {"ph": "X", "ts": 2}]})", "expected ',' or ']'");
  expect_error(R"({"traceEvents": [{"ph": "X", "ts": 1},]})", "not an object");
}
TEST(TraceReaderErrors, TrailingGarbage) { expect_error(std::string(kGood) + " xyz", "after the end of the trace"); }
TEST(TraceReaderErrors, BadGzip) {
  std::string gz = gzip(kGood);
  EXPECT_EQ(error_of(gz), "no error");
  std::string corrupt = gz;
  for (std::size_t i = 12; i < corrupt.size() - 8; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  expect_error(corrupt, "bad gzip data");
  expect_error(std::string_view(gz).substr(0, gz.size() / 2), "truncated gzip");
  expect_error(std::string("\x1f\x8b", 2), "gzip");
}
TEST(TraceReaderErrors, MissingFileAndDirectory) {
  try {
    read_trace_file("/nonexistent/trace.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/trace.json: cannot open: No such file or directory");
  }
  try {
    read_trace_file(std::string(ATTNPROF_SOURCE_DIR) + "/examples");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
}
// ts and dur each fit in int64 nanoseconds, their sum does not.
TEST(TraceReaderErrors, EndPastTheClock) {
  expect_error(R"({"traceEvents": [{"ph": "X", "name": "k", "pid": 0, "tid": 7, "ts": 9000000000000000, )"
               R"("dur": 9000000000000000}]})",
               "ts + dur");
}
TEST(TraceReaderErrors, OversizedEventIsRefused) {
  std::string huge = R"({"traceEvents": [{"ph": "X", "ts": 1, "name": ")";
  huge += std::string(3000, 'a');
  huge += R"("}]})";
  ReadOptions small;
  small.chunk_bytes = 256;
  small.max_event_bytes = 1024;
  try {
    read_trace_bytes(huge, "big.json", small);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnprof
