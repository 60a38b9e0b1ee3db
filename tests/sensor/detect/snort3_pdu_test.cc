// PduCutter (sensor/detect/snort3_pdu.h): the exact PDUs Snort 3's ftp_server and ssl stream
// splitters would flush from crafted byte streams fed in acknowledged pieces.
#include "sensor/detect/snort3_pdu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picket::sensor::detect {
namespace {

// The PDUs that come out of feeding each piece in turn, then (end) flushing.
std::vector<std::string> cut(PduKind kind, const std::vector<std::string>& pieces,
                             bool end = false) {
    PduCutter c(kind);
    std::vector<std::string> out;
    auto emit = [&](const uint8_t* data, uint32_t len) {
        out.emplace_back(reinterpret_cast<const char*>(data), len);
    };
    for (const std::string& p : pieces) {
        c.feed(reinterpret_cast<const uint8_t*>(p.data()), p.size(), emit);
    }
    if (end) {
        c.flush(emit);
    }
    return out;
}

using Pdus = std::vector<std::string>;

TEST(Snort3PduFtp, OneLinePerPiece) {
    EXPECT_EQ(cut(PduKind::kFtpLines, {"USER anonymous\r\n", "PASS x@y\r\n"}),
              (Pdus{"USER anonymous\r\n", "PASS x@y\r\n"}));
}

TEST(Snort3PduFtp, LineSplitOverSegmentsIsOnePdu) {
    EXPECT_EQ(cut(PduKind::kFtpLines, {"RETR 1", "MB.zip", "\r\n"}), (Pdus{"RETR 1MB.zip\r\n"}));
}

TEST(Snort3PduFtp, CutAfterTheLastLineFeedOfEachPiece) {
    // Two commands acknowledged together are one PDU (the inspector splits pipelined
    // commands itself); what follows the last line feed waits for the next piece.
    EXPECT_EQ(cut(PduKind::kFtpLines, {"CWD a\r\nCWD b\r\nLI", "ST\r\n"}),
              (Pdus{"CWD a\r\nCWD b\r\n", "LIST\r\n"}));
    // A bare \n ends a line as well; a \r alone does not.
    EXPECT_EQ(cut(PduKind::kFtpLines, {"NOOP\rNOOP\n"}), (Pdus{"NOOP\rNOOP\n"}));
}

TEST(Snort3PduFtp, NoLineFeedWaitsThenFlushesAtTheEnd) {
    EXPECT_EQ(cut(PduKind::kFtpLines, {"QUIT"}), (Pdus{}));
    EXPECT_EQ(cut(PduKind::kFtpLines, {"QU", "IT"}, true), (Pdus{"QUIT"}));
    EXPECT_EQ(cut(PduKind::kFtpLines, {"\n"}, true), (Pdus{"\n"}));
}

TEST(Snort3PduFtp, LongRunWithoutLineFeedLeavesInMaxPduPieces) {
    const std::string run(PduCutter::kMaxPdu + 10, 'A');
    Pdus pdus = cut(PduKind::kFtpLines, {run.substr(0, 1000), run.substr(1000) + "\r\n"});
    ASSERT_EQ(pdus.size(), 2u);
    EXPECT_EQ(pdus[0], std::string(PduCutter::kMaxPdu, 'A'));
    EXPECT_EQ(pdus[1], "AAAAAAAAAA\r\n");
    // One piece holding a longer line: cut in kMaxPdu pieces too.
    pdus = cut(PduKind::kFtpLines, {run + "\n"});
    ASSERT_EQ(pdus.size(), 2u);
    EXPECT_EQ(pdus[0].size(), PduCutter::kMaxPdu);
    EXPECT_EQ(pdus[1], "AAAAAAAAAA\n");
}

std::string record(uint8_t type, const std::string& body) {
    std::string r;
    r.push_back(static_cast<char>(type));
    r += "\x03\x03";
    r.push_back(static_cast<char>(body.size() >> 8));
    r.push_back(static_cast<char>(body.size() & 0xff));
    return r + body;
}

TEST(Snort3PduTls, CutAfterTheLastCompleteRecord) {
    const std::string hello = record(22, std::string(40, 'h'));
    const std::string ccs = record(20, "\x01");
    const std::string app = record(23, std::string(300, 'd'));
    // Two records in one piece: one PDU; a record split over three pieces: one PDU.
    EXPECT_EQ(cut(PduKind::kTlsRecords,
                  {hello + ccs, app.substr(0, 3), app.substr(3, 100), app.substr(103)}),
              (Pdus{hello + ccs, app}));
    // A piece ending inside a record: the records before it go out, the rest waits.
    EXPECT_EQ(cut(PduKind::kTlsRecords, {hello + app.substr(0, 50), app.substr(50)}),
              (Pdus{hello, app}));
    // An empty record ends where its header does.
    EXPECT_EQ(cut(PduKind::kTlsRecords, {record(23, "")}), (Pdus{record(23, "")}));
}

TEST(Snort3PduTls, HeartbeatStopsTheCutting) {
    const std::string hello = record(22, std::string(40, 'h'));
    const std::string hb1 = record(24, std::string(3000, 'x'));
    const std::string hb2 = record(24, std::string(3000, 'y'));
    const std::string app = record(23, std::string(10, 'd'));
    PduCutter c(PduKind::kTlsRecords);
    Pdus out;
    auto emit = [&](const uint8_t* data, uint32_t len) {
        out.emplace_back(reinterpret_cast<const char*>(data), len);
    };
    const std::string stream = hello + hb1 + hb2 + app;
    // The handshake record leaves on its own; from the heartbeat on nothing is cut (record
    // ends included) until kMaxPdu bytes wait or the direction ends.
    c.feed(reinterpret_cast<const uint8_t*>(stream.data()), hello.size() + 10, emit);
    EXPECT_EQ(out, (Pdus{hello}));
    EXPECT_TRUE(c.gave_up());
    c.feed(reinterpret_cast<const uint8_t*>(stream.data()) + hello.size() + 10,
           stream.size() - hello.size() - 10, emit);
    EXPECT_EQ(out.size(), 1u);
    EXPECT_EQ(c.held(), hb1.size() + hb2.size() + app.size());
    c.flush(emit);
    EXPECT_EQ(out, (Pdus{hello, hb1 + hb2 + app}));
    // Once kMaxPdu bytes wait, all that was fed leaves as one PDU starting at the heartbeat
    // record: two 16 KB heartbeat records' headers in one PDU.
    const std::string big1 = record(24, std::string(PduCutter::kMaxPdu + 32, 'z'));
    const std::string big2 = record(24, std::string(PduCutter::kMaxPdu + 32, 'w'));
    const std::string both = big1 + big2.substr(0, 10);
    Pdus pdus = cut(PduKind::kTlsRecords,
                    {hello, both.substr(0, 10000), both.substr(10000), big2.substr(10)}, true);
    ASSERT_EQ(pdus.size(), 3u);
    EXPECT_EQ(pdus[0], hello);
    EXPECT_EQ(pdus[1], both);
    EXPECT_EQ(pdus[2], big2.substr(10));
}

TEST(Snort3PduTls, UnknownFirstByteGivesUpAtOnce) {
    EXPECT_EQ(cut(PduKind::kTlsRecords, {"GET / HTTP/1.0\r\n\r\n"}, true),
              (Pdus{"GET / HTTP/1.0\r\n\r\n"}));
}

TEST(Snort3PduNone, CutsNothing) {
    EXPECT_EQ(cut(PduKind::kNone, {"USER a\r\n"}, true), (Pdus{}));
}

}  // namespace
}  // namespace picket::sensor::detect
