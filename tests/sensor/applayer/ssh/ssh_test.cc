// The SSH parser: identification lines (RFC 4253 4.2), binary packets up to NEWKEYS, HASSH.
// The client bytes are a real OpenSSH 9.2p1 client's banner and KEXINIT (captured on
// loopback against a listener that only sent a banner); the expected HASSH was computed
// independently (Python hashlib over the KEXINIT's lists).
#include "sensor/applayer/ssh/ssh.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/strings.h"

namespace picket::sensor::applayer::ssh {
namespace {

// 1600 bytes: "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u6\r\n" then a 1560-byte KEXINIT packet.
const char* const kOpenSsh92Client =
    "5353482d322e302d4f70656e5353485f392e3270312044656269616e2d322b646562313275360d0a0000061408148f"
    "e5"
    "27fb942fd6763b48df3ae3e8d94900000148736e747275703736317832353531392d7368613531322c736e74727570"
    "37"
    "36317832353531392d736861353132406f70656e7373682e636f6d2c637572766532353531392d7368613235362c63"
    "75"
    "72766532353531392d736861323536406c69627373682e6f72672c656364682d736861322d6e697374703235362c65"
    "63"
    "64682d736861322d6e697374703338342c656364682d736861322d6e697374703532312c6469666669652d68656c6c"
    "6d"
    "616e2d67726f75702d65786368616e67652d7368613235362c6469666669652d68656c6c6d616e2d67726f75703136"
    "2d"
    "7368613531322c6469666669652d68656c6c6d616e2d67726f757031382d7368613531322c6469666669652d68656c"
    "6c"
    "6d616e2d67726f757031342d7368613235362c6578742d696e666f2d632c6b65782d7374726963742d632d76303040"
    "6f"
    "70656e7373682e636f6d000001cf7373682d656432353531392d636572742d763031406f70656e7373682e636f6d2c"
    "65"
    "636473612d736861322d6e697374703235362d636572742d763031406f70656e7373682e636f6d2c65636473612d73"
    "68"
    "61322d6e697374703338342d636572742d763031406f70656e7373682e636f6d2c65636473612d736861322d6e6973"
    "74"
    "703532312d636572742d763031406f70656e7373682e636f6d2c736b2d7373682d656432353531392d636572742d76"
    "30"
    "31406f70656e7373682e636f6d2c736b2d65636473612d736861322d6e697374703235362d636572742d763031406f"
    "70"
    "656e7373682e636f6d2c7273612d736861322d3531322d636572742d763031406f70656e7373682e636f6d2c727361"
    "2d"
    "736861322d3235362d636572742d763031406f70656e7373682e636f6d2c7373682d656432353531392c6563647361"
    "2d"
    "736861322d6e697374703235362c65636473612d736861322d6e697374703338342c65636473612d736861322d6e69"
    "73"
    "74703532312c736b2d7373682d65643235353139406f70656e7373682e636f6d2c736b2d65636473612d736861322d"
    "6e"
    "69737470323536406f70656e7373682e636f6d2c7273612d736861322d3531322c7273612d736861322d3235360000"
    "00"
    "6c63686163686132302d706f6c7931333035406f70656e7373682e636f6d2c6165733132382d6374722c6165733139"
    "32"
    "2d6374722c6165733235362d6374722c6165733132382d67636d406f70656e7373682e636f6d2c6165733235362d67"
    "63"
    "6d406f70656e7373682e636f6d0000006c63686163686132302d706f6c7931333035406f70656e7373682e636f6d2c"
    "61"
    "65733132382d6374722c6165733139322d6374722c6165733235362d6374722c6165733132382d67636d406f70656e"
    "73"
    "73682e636f6d2c6165733235362d67636d406f70656e7373682e636f6d000000d5756d61632d36342d65746d406f70"
    "65"
    "6e7373682e636f6d2c756d61632d3132382d65746d406f70656e7373682e636f6d2c686d61632d736861322d323536"
    "2d"
    "65746d406f70656e7373682e636f6d2c686d61632d736861322d3531322d65746d406f70656e7373682e636f6d2c68"
    "6d"
    "61632d736861312d65746d406f70656e7373682e636f6d2c756d61632d3634406f70656e7373682e636f6d2c756d61"
    "63"
    "2d313238406f70656e7373682e636f6d2c686d61632d736861322d3235362c686d61632d736861322d3531322c686d"
    "61"
    "632d73686131000000d5756d61632d36342d65746d406f70656e7373682e636f6d2c756d61632d3132382d65746d40"
    "6f"
    "70656e7373682e636f6d2c686d61632d736861322d3235362d65746d406f70656e7373682e636f6d2c686d61632d73"
    "68"
    "61322d3531322d65746d406f70656e7373682e636f6d2c686d61632d736861312d65746d406f70656e7373682e636f"
    "6d"
    "2c756d61632d3634406f70656e7373682e636f6d2c756d61632d313238406f70656e7373682e636f6d2c686d61632d"
    "73"
    "6861322d3235362c686d61632d736861322d3531322c686d61632d736861310000001a6e6f6e652c7a6c6962406f70"
    "65"
    "6e7373682e636f6d2c7a6c69620000001a6e6f6e652c7a6c6962406f70656e7373682e636f6d2c7a6c696200000000"
    "00"
    "00000000000000000000000000000000";

constexpr const char* kClientHasshString =
    "sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,curve25519-sha256,"
    "curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,"
    "diffie-hellman-group-exchange-sha256,diffie-hellman-group16-sha512,"
    "diffie-hellman-group18-sha512,diffie-hellman-group14-sha256,ext-info-c,"
    "kex-strict-c-v00@openssh.com;chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,"
    "aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com;umac-64-etm@openssh.com,"
    "umac-128-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,"
    "hmac-sha1-etm@openssh.com,umac-64@openssh.com,umac-128@openssh.com,hmac-sha2-256,"
    "hmac-sha2-512,hmac-sha1;none,zlib@openssh.com,zlib";

std::vector<uint8_t> unhex(const char* h) {
    std::vector<uint8_t> out;
    for (size_t i = 0; h[i] != 0 && h[i + 1] != 0; i += 2) {
        out.push_back(
            static_cast<uint8_t>(strings::hex_value(h[i]) << 4 | strings::hex_value(h[i + 1])));
    }
    return out;
}

void put32(std::vector<uint8_t>& v, uint32_t n) {
    v.push_back(static_cast<uint8_t>(n >> 24));
    v.push_back(static_cast<uint8_t>(n >> 16));
    v.push_back(static_cast<uint8_t>(n >> 8));
    v.push_back(static_cast<uint8_t>(n));
}

// One binary packet (RFC 4253 6) of message type `type` with `payload` after the type byte,
// padded to a multiple of 8 with at least 4 bytes of padding.
std::vector<uint8_t> packet(uint8_t type, const std::vector<uint8_t>& payload) {
    const size_t body = 1 + 1 + payload.size();  // padding_length, type, payload
    size_t pad = 8 - (4 + body) % 8;
    if (pad < 4) {
        pad += 8;
    }
    std::vector<uint8_t> v;
    put32(v, static_cast<uint32_t>(body + pad));
    v.push_back(static_cast<uint8_t>(pad));
    v.push_back(type);
    v.insert(v.end(), payload.begin(), payload.end());
    v.insert(v.end(), pad, 0);
    return v;
}

std::vector<uint8_t> kexinit(const std::vector<std::string>& lists) {
    std::vector<uint8_t> p(16, 0xab);  // cookie
    for (const std::string& l : lists) {
        put32(p, static_cast<uint32_t>(l.size()));
        p.insert(p.end(), l.begin(), l.end());
    }
    p.push_back(0);  // first_kex_packet_follows
    put32(p, 0);
    return packet(20, p);
}

std::vector<uint8_t> server_kexinit() {
    return kexinit({"curve25519-sha256,ext-info-s", "ssh-ed25519", "aes128-ctr",
                    "chacha20-poly1305@openssh.com,aes256-ctr", "hmac-sha1",
                    "hmac-sha2-256-etm@openssh.com", "zlib", "none,zlib@openssh.com", "", ""});
}

std::vector<uint8_t> bytes(const std::string& s) {
    return std::vector<uint8_t>(s.begin(), s.end());
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

class SshParserTest : public ::testing::Test {
protected:
    uint32_t feed(Dir d, const std::vector<uint8_t>& v) { return p.feed(d, v.data(), v.size()); }
    SshCounters counters;
    SshConfig config;
    SshParser p{config, &counters};
};

TEST(SshMd5, Rfc1321Vectors) {
    EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
    EXPECT_EQ(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    EXPECT_EQ(md5_hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
}

TEST(SshProbe, SshDashAtTheStart) {
    EXPECT_EQ(probe(reinterpret_cast<const uint8_t*>("SSH-2.0-x"), 9), ProbeResult::kYes);
    EXPECT_EQ(probe(reinterpret_cast<const uint8_t*>("SS"), 2), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(reinterpret_cast<const uint8_t*>("GET / HTTP/1.1"), 14), ProbeResult::kNo);
    EXPECT_EQ(probe(reinterpret_cast<const uint8_t*>("ssh-2.0"), 7), ProbeResult::kNo);
}

TEST(SshProbe, ServerLinesBeforeTheBanner) {
    const std::string yes = "Authorized use only\r\nSSH-2.0-OpenSSH\r\n";
    const std::string no = "220 mail.example ESMTP\r\n250 ok\r\n";
    EXPECT_TRUE(probe_server_lines(reinterpret_cast<const uint8_t*>(yes.data()), yes.size()));
    EXPECT_FALSE(probe_server_lines(reinterpret_cast<const uint8_t*>(no.data()), no.size()));
}

TEST_F(SshParserTest, CapturedOpenSshClientBannerAndHassh) {
    const std::vector<uint8_t> c = unhex(kOpenSsh92Client);
    ASSERT_EQ(c.size(), 1600u);
    EXPECT_EQ(feed(Dir::kToServer, c), kBanner | kKexInit);
    const Side& s = p.client();
    EXPECT_TRUE(s.has_banner);
    EXPECT_EQ(s.proto_version, "2.0");
    EXPECT_EQ(s.software_version, "OpenSSH_9.2p1");
    EXPECT_EQ(s.comments, "Debian-2+deb12u6");
    EXPECT_TRUE(s.has_kex);
    EXPECT_EQ(s.hassh_string, kClientHasshString);
    EXPECT_EQ(s.hassh, "472b5de333ad665af5cbf10ff892c4df");
    EXPECT_EQ(p.events(), 0u);
    EXPECT_EQ(counters.banners.get(), 1u);
    EXPECT_EQ(counters.kexinits.get(), 1u);
}

TEST_F(SshParserTest, CapturedClientOneByteAtATime) {
    const std::vector<uint8_t> c = unhex(kOpenSsh92Client);
    uint32_t upd = 0;
    for (uint8_t b : c) {
        upd |= p.feed(Dir::kToServer, &b, 1);
    }
    EXPECT_EQ(upd, kBanner | kKexInit);
    EXPECT_EQ(p.client().hassh, "472b5de333ad665af5cbf10ff892c4df");
    EXPECT_EQ(p.client().software_version, "OpenSSH_9.2p1");
}

TEST_F(SshParserTest, ServerHasshTakesTheServerToClientLists) {
    auto s = cat(bytes("SSH-2.0-dropbear_2016.74\r\n"), server_kexinit());
    EXPECT_EQ(feed(Dir::kToClient, s), kBanner | kKexInit);
    EXPECT_EQ(p.server().software_version, "dropbear_2016.74");
    EXPECT_EQ(p.server().comments, "");
    EXPECT_EQ(p.server().hassh_string,
              "curve25519-sha256,ext-info-s;chacha20-poly1305@openssh.com,aes256-ctr;"
              "hmac-sha2-256-etm@openssh.com;none,zlib@openssh.com");
    EXPECT_EQ(p.server().hassh, "9ae112c9081fd5a2bb42ff62fbcb6e4c");
    EXPECT_FALSE(p.client().has_banner);
}

TEST_F(SshParserTest, ServerMayPrecedeItsBannerWithOtherLines) {
    EXPECT_EQ(feed(Dir::kToClient, bytes("Welcome\r\nto the host\r\nSSH-1.99-Cisco-1.25\r\n")),
              kBanner);
    EXPECT_EQ(p.server().proto_version, "1.99");
    EXPECT_EQ(p.server().software_version, "Cisco-1.25");
    EXPECT_EQ(p.events(), 0u);
}

TEST_F(SshParserTest, ClientLineThatIsNotABannerGivesUp) {
    EXPECT_EQ(feed(Dir::kToServer, bytes("hello\r\nSSH-2.0-x\r\n")), kNone);
    EXPECT_TRUE(p.has(Event::kInvalidBanner));
    EXPECT_FALSE(p.client().has_banner);
    EXPECT_EQ(counters.events[static_cast<size_t>(Event::kInvalidBanner)].get(), 1u);
}

TEST_F(SshParserTest, BannerWithoutSoftwareVersionIsInvalid) {
    EXPECT_EQ(feed(Dir::kToServer, bytes("SSH-2.0\r\n")), kNone);
    EXPECT_TRUE(p.has(Event::kInvalidBanner));
    EXPECT_FALSE(p.client().has_banner);
}

TEST_F(SshParserTest, LongBannerIsKeptTruncated) {
    const std::string sw(300, 'A');
    EXPECT_EQ(feed(Dir::kToServer, bytes("SSH-2.0-" + sw + "\r\n")), kBanner);
    EXPECT_TRUE(p.has(Event::kLongBanner));
    EXPECT_EQ(p.client().software_version, std::string(255 - 8, 'A'));
}

TEST_F(SshParserTest, ServerPreBannerFloodGivesUp) {
    const std::string line(100, 'x');
    std::string all;
    for (int i = 0; i < 100; ++i) {
        all += line + "\r\n";
    }
    EXPECT_EQ(feed(Dir::kToClient, bytes(all)), kNone);
    EXPECT_TRUE(p.has(Event::kInvalidBanner));
    EXPECT_EQ(feed(Dir::kToClient, bytes("SSH-2.0-late\r\n")), kNone);
    EXPECT_FALSE(p.server().has_banner);
}

TEST_F(SshParserTest, PacketLengthsThatDoNotHoldAreInvalidRecord) {
    std::vector<uint8_t> bad = bytes("SSH-2.0-x\r\n");
    put32(bad, 10);
    bad.push_back(12);  // padding longer than the packet
    bad.push_back(20);
    EXPECT_EQ(feed(Dir::kToServer, bad), kBanner);
    EXPECT_TRUE(p.has(Event::kInvalidRecord));
    EXPECT_FALSE(p.client().has_kex);
}

TEST_F(SshParserTest, KexInitOverTheLimitIsSkipped) {
    config.max_kex_record = 64;
    SshParser small(config, &counters);
    auto s = cat(bytes("SSH-2.0-x\r\n"), server_kexinit());
    auto more = packet(21, {});
    s = cat(s, more);
    EXPECT_EQ(small.feed(Dir::kToClient, s.data(), s.size()), kBanner | kEncrypted);
    EXPECT_TRUE(small.has(Event::kLongKexRecord));
    EXPECT_FALSE(small.server().has_kex);
    EXPECT_TRUE(small.server().encrypted);
}

TEST_F(SshParserTest, NewKeysEndsInspectionOfThatDirection) {
    auto c = cat(cat(bytes("SSH-2.0-c\r\n"), packet(21, {})), bytes("SSH-garbage after newkeys"));
    EXPECT_EQ(feed(Dir::kToServer, c), kBanner | kEncrypted);
    EXPECT_TRUE(p.client().encrypted);
    EXPECT_EQ(p.events(), 0u);
    EXPECT_FALSE(p.done());
    EXPECT_EQ(feed(Dir::kToClient, cat(bytes("SSH-2.0-s\r\n"), packet(21, {}))),
              kBanner | kEncrypted);
    EXPECT_TRUE(p.done());
}

TEST_F(SshParserTest, TruncatedKexInitListIsInvalidRecord) {
    std::vector<uint8_t> payload(16, 0);
    put32(payload, 1000);  // a name-list longer than the packet
    payload.push_back('x');
    EXPECT_EQ(feed(Dir::kToServer, cat(bytes("SSH-2.0-c\r\n"), packet(20, payload))), kBanner);
    EXPECT_TRUE(p.has(Event::kInvalidRecord));
    EXPECT_FALSE(p.client().has_kex);
}

TEST(SshEvents, SuricataNames) {
    EXPECT_STREQ(event_name(Event::kInvalidBanner), "invalid_banner");
    EXPECT_STREQ(event_name(Event::kLongBanner), "long_banner");
    EXPECT_STREQ(event_name(Event::kInvalidRecord), "invalid_record");
    EXPECT_STREQ(event_name(Event::kLongKexRecord), "long_kex_record");
}

}  // namespace
}  // namespace picket::sensor::applayer::ssh
