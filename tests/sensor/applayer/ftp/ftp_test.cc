// The FTP parser (commands, replies, multi-line replies, the line limit, PORT / EPRT / 227 / 229)
// and the data-channel expectation table.
#include "sensor/applayer/ftp/ftp.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sensor/applayer/ftp/expect.h"

namespace picket::sensor::applayer::ftp {
namespace {

FeedResult feed(FtpParser& p, Dir d, const std::string& s) {
    return p.feed(d, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string addr4(const Endpoint& e) {
    return std::to_string(e.addr[0]) + "." + std::to_string(e.addr[1]) + "." +
           std::to_string(e.addr[2]) + "." + std::to_string(e.addr[3]);
}

ProbeResult probe_s(Dir d, const std::string& s, bool port21) {
    return probe(d, reinterpret_cast<const uint8_t*>(s.data()), s.size(), port21);
}

TEST(FtpParserTest, CommandsAndRepliesSplitAcrossSegments) {
    FtpCounters c;
    FtpParser p(FtpConfig{}, &c);
    // The greeting: a transaction without a command.
    FeedResult r = feed(p, Dir::kToClient, "220 Service re");
    EXPECT_EQ(r.count, 0u);
    r = feed(p, Dir::kToClient, "ady\r\n");
    ASSERT_EQ(r.count, 1u);
    const FtpTx* g = p.find_tx(r.first_id);
    ASSERT_NE(g, nullptr);
    EXPECT_FALSE(g->has_command);
    EXPECT_EQ(g->codes, std::vector<std::string>({"220"}));
    EXPECT_EQ(g->replies, std::vector<std::string>({"Service ready"}));
    EXPECT_TRUE(g->complete);
    // A command split in three, lower case: the verb is upper-cased, the argument kept.
    EXPECT_EQ(feed(p, Dir::kToServer, "us").count, 0u);
    EXPECT_EQ(feed(p, Dir::kToServer, "er anonym").count, 0u);
    r = feed(p, Dir::kToServer, "ous\r\nPASS a b\r\n");
    ASSERT_EQ(r.count, 2u);
    const FtpTx* u = p.find_tx(r.first_id);
    EXPECT_EQ(u->command, "USER");
    EXPECT_EQ(u->command_data, "anonymous");
    const FtpTx* pw = p.find_tx(r.first_id + 1);
    EXPECT_EQ(pw->command, "PASS");
    EXPECT_EQ(pw->command_data, "a b");
    EXPECT_FALSE(u->complete);
    // Pipelined replies go to the oldest command waiting; a bare LF ends a line too.
    r = feed(p, Dir::kToClient, "331 Password required\n230 Logged in\r\n");
    EXPECT_EQ(r.first_id, u->id);
    EXPECT_EQ(r.count, 2u);
    EXPECT_EQ(u->codes, std::vector<std::string>({"331"}));
    EXPECT_EQ(pw->codes, std::vector<std::string>({"230"}));
    EXPECT_TRUE(pw->complete);
    EXPECT_EQ(c.commands.get(), 2u);
    EXPECT_EQ(c.replies.get(), 3u);
    // A command without an argument has an empty command_data.
    r = feed(p, Dir::kToServer, "SYST\r\n");
    EXPECT_EQ(p.find_tx(r.first_id)->command, "SYST");
    EXPECT_EQ(p.find_tx(r.first_id)->command_data, "");
}

TEST(FtpParserTest, MultiLineRepliesAndPreliminaryCodes) {
    FtpParser p(FtpConfig{}, nullptr);
    feed(p, Dir::kToServer, "FEAT\r\n");
    // RFC 959 4.2: "211-" opens, lines not starting with "211 " are text, "211 " ends; a line
    // starting with another code is text too.
    feed(p, Dir::kToClient, "211-Features:\r\n MDTM\r\n");
    const FtpTx* t = p.find_tx(0);
    EXPECT_FALSE(t->complete);
    feed(p, Dir::kToClient, "123 not the end\r\n211-still not\r\n211 End\r\n");
    EXPECT_TRUE(t->complete);
    EXPECT_EQ(t->codes, std::vector<std::string>({"211"}));
    EXPECT_EQ(t->replies, std::vector<std::string>(
                              {"Features:", " MDTM", "123 not the end", "211-still not", "End"}));
    // 150 then 226: one transaction, two replies, complete only at the final one.
    feed(p, Dir::kToServer, "NLST\r\n");
    feed(p, Dir::kToClient, "150 Here it comes\r\n");
    const FtpTx* n = p.find_tx(1);
    EXPECT_FALSE(n->complete);
    feed(p, Dir::kToClient, "226 Done\r\n");
    EXPECT_TRUE(n->complete);
    EXPECT_EQ(n->codes, std::vector<std::string>({"150", "226"}));
}

TEST(FtpParserTest, LongLinesAreCutAndRaiseEvents) {
    FtpCounters c;
    FtpConfig cfg;
    cfg.max_line = 16;
    FtpParser p(cfg, &c);
    feed(p, Dir::kToServer, "STOR " + std::string(20, 'a'));
    feed(p, Dir::kToServer, std::string(30, 'b') + "\r\nNOOP\r\n");
    const FtpTx* t = p.find_tx(0);
    EXPECT_EQ(t->command, "STOR");
    EXPECT_EQ(t->command_data, std::string(11, 'a'));  // 16 bytes of line kept
    EXPECT_TRUE(t->command_truncated);
    EXPECT_EQ(t->events, 1u << static_cast<unsigned>(Event::kRequestCommandTooLong));
    EXPECT_EQ(p.find_tx(1)->command, "NOOP");  // the next line is whole again
    EXPECT_EQ(p.find_tx(1)->events, 0u);
    feed(p, Dir::kToClient, "500 " + std::string(40, 'x') + "\r\n");
    EXPECT_TRUE(t->reply_truncated);
    EXPECT_EQ(t->replies, std::vector<std::string>({std::string(12, 'x')}));
    EXPECT_EQ(c.events[0].get(), 1u);
    EXPECT_EQ(c.events[1].get(), 1u);
    EXPECT_STREQ(event_name(Event::kRequestCommandTooLong), "request_command_too_long");
    EXPECT_STREQ(event_name(Event::kResponseCommandTooLong), "response_command_too_long");
}

TEST(FtpParserTest, MalformedLinesDoNotBreakIt) {
    FtpConfig cfg;
    cfg.max_tx = 4;
    FtpParser p(cfg, nullptr);
    feed(p, Dir::kToServer, std::string("\r\n\r\n\0\xff\x01 x\r\n", 11));
    ASSERT_EQ(p.tx_count(), 1u);  // blank lines are no commands
    EXPECT_EQ(p.tx_at(0).command, std::string("\0\xff\x01", 3));
    EXPECT_EQ(p.tx_at(0).command_data, "x");
    // A reply line without a code is text with an empty code, and completes.
    feed(p, Dir::kToClient, "garbage\r\n99 short\r\n");
    EXPECT_EQ(p.tx_at(0).codes, std::vector<std::string>({""}));
    EXPECT_TRUE(p.tx_at(0).complete);
    // Bounded: the oldest transactions go.
    for (int i = 0; i < 10; ++i) {
        feed(p, Dir::kToServer, "NOOP\r\n");
    }
    EXPECT_EQ(p.tx_count(), 4u);
    EXPECT_EQ(p.tx_at(0).id, 8u);
    // A PORT that does not parse announces nothing.
    feed(p, Dir::kToServer, "PORT 1,2,3,256,4,1\r\nRETR x\r\n");
    EXPECT_FALSE(p.tx_at(2).has_dyn_port);
    EXPECT_FALSE(p.tx_at(3).wants_expect);
}

TEST(FtpParserTest, PortAndEprt) {
    Endpoint e;
    ASSERT_TRUE(parse_port("192,168,1,2,7,138", &e));
    EXPECT_EQ(addr4(e), "192.168.1.2");
    EXPECT_EQ(e.port, 7 * 256 + 138);
    EXPECT_FALSE(e.v6);
    ASSERT_TRUE(parse_port(" 10 ,0, 0,9,4,1 ", &e));
    EXPECT_EQ(addr4(e), "10.0.0.9");
    EXPECT_EQ(e.port, 1025);
    EXPECT_FALSE(parse_port("10,0,0,256,4,1", &e));
    EXPECT_FALSE(parse_port("10,0,0,9,4", &e));
    EXPECT_FALSE(parse_port("a,b,c,d,e,f", &e));
    EXPECT_FALSE(parse_port("", &e));

    ASSERT_TRUE(parse_eprt("|1|132.235.1.2|6275|", &e));
    EXPECT_EQ(addr4(e), "132.235.1.2");
    EXPECT_EQ(e.port, 6275);
    ASSERT_TRUE(parse_eprt("|2|1080::8:800:200C:417A|5282|", &e));
    EXPECT_TRUE(e.v6);
    const uint8_t want6[16] = {0x10, 0x80, 0,    0, 0,    0,    0,    0,
                               0,    0x08, 0x08, 0, 0x20, 0x0c, 0x41, 0x7a};
    EXPECT_EQ(std::memcmp(e.addr, want6, 16), 0);
    EXPECT_EQ(e.port, 5282);
    ASSERT_TRUE(parse_eprt("!2!::ffff:10.0.0.1!21!", &e));
    const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    EXPECT_EQ(std::memcmp(e.addr, mapped, 16), 0);
    EXPECT_FALSE(parse_eprt("|3|1.2.3.4|5|", &e));
    EXPECT_FALSE(parse_eprt("|1|1.2.3|5|", &e));
    EXPECT_FALSE(parse_eprt("|1|1.2.3.4|70000|", &e));
    EXPECT_FALSE(parse_eprt("|1|1.2.3.4|5", &e));
    EXPECT_FALSE(parse_eprt("|2|1::2::3|5|", &e));
}

TEST(FtpParserTest, PassiveReplies) {
    Endpoint e;
    ASSERT_TRUE(parse_pasv_reply("Entering Passive Mode (192,0,2,7,195,149).", &e));
    EXPECT_EQ(addr4(e), "192.0.2.7");
    EXPECT_EQ(e.port, 195 * 256 + 149);
    ASSERT_TRUE(parse_pasv_reply("=10,1,2,3,0,21", &e));
    EXPECT_EQ(e.port, 21);
    EXPECT_FALSE(parse_pasv_reply("Entering Passive Mode", &e));
    EXPECT_FALSE(parse_pasv_reply("(1,2,3,4,0,0)", &e));  // port 0
    uint16_t port = 0;
    ASSERT_TRUE(parse_epsv_reply("Entering Extended Passive Mode (|||6446|)", &port));
    EXPECT_EQ(port, 6446);
    EXPECT_FALSE(parse_epsv_reply("Entering Extended Passive Mode (|||6446)", &port));
    EXPECT_FALSE(parse_epsv_reply("(||6446|)", &port));
    EXPECT_FALSE(parse_epsv_reply("no parens", &port));
}

TEST(FtpParserTest, DataChannelAnnouncements) {
    FtpParser p(FtpConfig{}, nullptr);
    feed(p, Dir::kToServer, "PASV\r\n");
    feed(p, Dir::kToClient, "227 Entering Passive Mode (10,0,0,2,195,80).\r\n");
    const FtpTx* pasv = p.find_tx(0);
    EXPECT_TRUE(pasv->has_dyn_port);
    EXPECT_FALSE(pasv->active);
    EXPECT_EQ(pasv->endpoint.port, 195 * 256 + 80);
    EXPECT_EQ(addr4(pasv->endpoint), "10.0.0.2");
    feed(p, Dir::kToServer, "RETR /pub/a.txt\r\nRETR again\r\n");
    const FtpTx* retr = p.find_tx(1);
    EXPECT_EQ(retr->data_command, DataCommand::kRetr);
    EXPECT_TRUE(retr->wants_expect);
    EXPECT_FALSE(retr->data_active);
    EXPECT_EQ(retr->data_port, 195 * 256 + 80);
    // The announcement is used once: the next transfer needs its own.
    EXPECT_EQ(p.find_tx(2)->data_command, DataCommand::kRetr);
    EXPECT_FALSE(p.find_tx(2)->wants_expect);
    // Active: PORT then STOR.
    feed(p, Dir::kToServer, "PORT 10,0,0,1,4,2\r\nSTOR up.bin\r\n");
    const FtpTx* port = p.find_tx(3);
    EXPECT_TRUE(port->active);
    EXPECT_TRUE(port->has_address);
    EXPECT_EQ(port->endpoint.port, 1026);
    const FtpTx* stor = p.find_tx(4);
    EXPECT_TRUE(stor->wants_expect);
    EXPECT_TRUE(stor->data_active);
    EXPECT_EQ(stor->data_port, 1026);
    EXPECT_TRUE(is_upload(stor->data_command));
    // EPSV's 229: passive, port only.
    feed(p, Dir::kToClient, "200 ok\r\n226 ok\r\n200 ok\r\n226 ok\r\n");
    feed(p, Dir::kToServer, "EPSV\r\nLIST\r\n");
    feed(p, Dir::kToClient, "229 Entering Extended Passive Mode (|||40001|)\r\n");
    EXPECT_TRUE(p.find_tx(5)->has_dyn_port);
    EXPECT_EQ(p.find_tx(5)->endpoint.port, 40001);
    // LIST came before the 229 reply: it has no channel of its own (pipelined too early).
    EXPECT_FALSE(p.find_tx(6)->wants_expect);
    feed(p, Dir::kToServer, "NLST\r\n");
    EXPECT_TRUE(p.find_tx(7)->wants_expect);
    EXPECT_EQ(p.find_tx(7)->data_port, 40001);
    EXPECT_STREQ(data_command_name(DataCommand::kNlst), "NLST");
}

TEST(FtpParserTest, Probe) {
    EXPECT_EQ(probe_s(Dir::kToClient, "220 ProFTPD Server\r\n", false), ProbeResult::kYes);
    EXPECT_EQ(probe_s(Dir::kToClient, "220 mail.example ESMTP\r\n", false), ProbeResult::kNo);
    EXPECT_EQ(probe_s(Dir::kToClient, "220 mail.example ESMTP\r\n", true), ProbeResult::kYes);
    EXPECT_EQ(probe_s(Dir::kToClient, "220-welcome", false), ProbeResult::kNeedMore);
    EXPECT_EQ(probe_s(Dir::kToClient, "22", true), ProbeResult::kNeedMore);
    EXPECT_EQ(probe_s(Dir::kToClient, "2200", true), ProbeResult::kNo);
    EXPECT_EQ(probe_s(Dir::kToClient, "HTTP/1.1 200 OK\r\n", true), ProbeResult::kNo);
    EXPECT_EQ(probe_s(Dir::kToServer, "USER anonymous\r\n", true), ProbeResult::kYes);
    EXPECT_EQ(probe_s(Dir::kToServer, "feat\r\n", true), ProbeResult::kYes);
    EXPECT_EQ(probe_s(Dir::kToServer, "USER anonymous\r\n", false), ProbeResult::kNo);
    EXPECT_EQ(probe_s(Dir::kToServer, "GET / HTTP/1.1\r\n", true), ProbeResult::kNo);
    EXPECT_EQ(probe_s(Dir::kToServer, "US", true), ProbeResult::kNeedMore);
}

ExpectKey key(uint8_t last, uint16_t port) {
    ExpectKey k;
    k.orig[0] = 10;
    k.orig[3] = 1;
    k.resp[0] = 10;
    k.resp[3] = last;
    k.resp_port = port;
    return k;
}

Expectation expectation(uint8_t last, uint16_t port, uint64_t owner, int64_t expires) {
    Expectation e;
    e.key = key(last, port);
    e.owner = owner;
    e.expires_ns = expires;
    e.command = DataCommand::kRetr;
    std::memcpy(e.filename, "a.txt", 5);
    e.filename_len = 5;
    return e;
}

TEST(FtpExpectTest, AddTakeExpireAndOwner) {
    ExpectTable t(16);
    EXPECT_EQ(t.capacity(), 16u);
    Expectation out;
    EXPECT_FALSE(t.take(key(2, 5000), 0, &out));
    ASSERT_TRUE(t.add(expectation(2, 5000, 7, 100), 0));
    EXPECT_EQ(t.live(), 1u);
    EXPECT_FALSE(t.take(key(2, 5001), 0, &out));  // another port
    ExpectKey other = key(2, 5000);
    other.orig[3] = 9;  // another client
    EXPECT_FALSE(t.take(other, 0, &out));
    ASSERT_TRUE(t.take(key(2, 5000), 50, &out));
    EXPECT_EQ(out.owner, 7u);
    EXPECT_EQ(out.name(), "a.txt");
    EXPECT_EQ(out.command, DataCommand::kRetr);
    EXPECT_EQ(t.live(), 0u);
    EXPECT_FALSE(t.take(key(2, 5000), 50, &out));  // taken once
    // Expired: dropped when met.
    ASSERT_TRUE(t.add(expectation(3, 6000, 7, 100), 0));
    EXPECT_FALSE(t.take(key(3, 6000), 101, &out));
    EXPECT_EQ(t.live(), 0u);
    // The control flow ends: its expectations go, others stay.
    ASSERT_TRUE(t.add(expectation(4, 7000, 7, 100), 0));
    ASSERT_TRUE(t.add(expectation(5, 7000, 8, 100), 0));
    t.remove_owner(7);
    EXPECT_EQ(t.live(), 1u);
    EXPECT_FALSE(t.take(key(4, 7000), 0, &out));
    EXPECT_TRUE(t.take(key(5, 7000), 0, &out));
}

TEST(FtpExpectTest, BoundedSlotsReuseExpiredOnes) {
    ExpectTable t(8);
    // 8 slots: every key's probe covers the whole table. A newer announcement of the same key
    // replaces the older one.
    ASSERT_TRUE(t.add(expectation(2, 5000, 1, 100), 0));
    ASSERT_TRUE(t.add(expectation(2, 5000, 2, 100), 0));
    EXPECT_EQ(t.live(), 1u);
    for (uint8_t i = 0; i < 7; ++i) {
        ASSERT_TRUE(t.add(expectation(static_cast<uint8_t>(10 + i), 5000, 1, 100), 0));
    }
    EXPECT_EQ(t.live(), 8u);
    EXPECT_FALSE(t.add(expectation(30, 5000, 1, 100), 0));   // full
    EXPECT_TRUE(t.add(expectation(30, 5000, 1, 300), 200));  // expired ones are reused
    Expectation out;
    EXPECT_TRUE(t.take(key(30, 5000), 200, &out));
}

TEST(FtpExpectTest, WorkersAddAndTakeConcurrently) {
    // Two threads each add 2000 expectations the other one takes: every one is taken exactly
    // once, none is lost or duplicated.
    ExpectTable t(1 << 15);  // lightly loaded: an add never finds its 8 slots taken
    std::atomic<int> taken{0};
    auto run = [&](uint8_t mine, uint8_t theirs) {
        for (uint16_t i = 1; i <= 2000; ++i) {
            ExpectKey k = key(mine, i);
            Expectation e;
            e.key = k;
            e.owner = mine;
            e.expires_ns = 1000;
            while (!t.add(e, 0)) {
            }
        }
        for (uint16_t i = 1; i <= 2000; ++i) {
            Expectation out;
            while (!t.take(key(theirs, i), 0, &out)) {
                std::this_thread::yield();
            }
            EXPECT_EQ(out.key.resp_port, i);
            ++taken;
        }
    };
    std::thread a(run, 1, 2);
    std::thread b(run, 2, 1);
    a.join();
    b.join();
    EXPECT_EQ(taken.load(), 4000);
    EXPECT_EQ(t.live(), 0u);
}

}  // namespace
}  // namespace picket::sensor::applayer::ftp
