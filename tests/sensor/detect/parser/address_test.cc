#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

decode::Address ip(const char* text) {
    uint8_t b[16];
    if (inet_pton(AF_INET, text, b) == 1) {
        return decode::Address::from_v4(b);
    }
    EXPECT_EQ(inet_pton(AF_INET6, text, b), 1) << text;
    return decode::Address::from_v6(b);
}

std::string str(const decode::Address& a) {
    char buf[46];
    return a.to_string(buf);
}

AddressSet addr(const std::string& spec, const VarTable* vars = nullptr) {
    AddressSet s;
    std::string err;
    EXPECT_TRUE(parse_address_spec(spec, vars, &s, &err)) << spec << ": " << err;
    return s;
}

std::string addr_error(const std::string& spec, const VarTable* vars = nullptr) {
    AddressSet s;
    std::string err;
    EXPECT_FALSE(parse_address_spec(spec, vars, &s, &err)) << spec;
    return err;
}

PortSet ports(const std::string& spec, const VarTable* vars = nullptr) {
    PortSet s;
    std::string err;
    EXPECT_TRUE(parse_port_spec(spec, vars, &s, &err)) << spec << ": " << err;
    return s;
}

std::string port_error(const std::string& spec, const VarTable* vars = nullptr) {
    PortSet s;
    std::string err;
    EXPECT_FALSE(parse_port_spec(spec, vars, &s, &err)) << spec;
    return err;
}

TEST(AddressSpec, AnyMatchesBothFamilies) {
    const AddressSet s = addr("any");
    EXPECT_TRUE(s.any);
    EXPECT_TRUE(s.include.empty());
    EXPECT_TRUE(s.exclude.empty());
    EXPECT_TRUE(s.contains(ip("1.2.3.4")));
    EXPECT_TRUE(s.contains(ip("2001:db8::1")));
}

TEST(AddressSpec, SingleV4) {
    const AddressSet s = addr("10.0.0.1");
    EXPECT_FALSE(s.any);
    ASSERT_EQ(s.include.size(), 1u);
    EXPECT_EQ(str(s.include[0].lo), "10.0.0.1");
    EXPECT_EQ(str(s.include[0].hi), "10.0.0.1");
    EXPECT_TRUE(s.contains(ip("10.0.0.1")));
    EXPECT_FALSE(s.contains(ip("10.0.0.2")));
    EXPECT_FALSE(s.contains(ip("10.0.0.0")));
}

TEST(AddressSpec, CidrV4MasksHostBits) {
    const AddressSet s = addr("10.1.2.3/8");
    ASSERT_EQ(s.include.size(), 1u);
    EXPECT_EQ(str(s.include[0].lo), "10.0.0.0");
    EXPECT_EQ(str(s.include[0].hi), "10.255.255.255");
    EXPECT_TRUE(s.contains(ip("10.255.255.255")));
    EXPECT_FALSE(s.contains(ip("11.0.0.0")));
    EXPECT_FALSE(s.contains(ip("9.255.255.255")));
}

TEST(AddressSpec, NetmaskAndRangeForms) {
    const AddressSet m = addr("192.168.1.0/255.255.255.0");
    ASSERT_EQ(m.include.size(), 1u);
    EXPECT_EQ(str(m.include[0].lo), "192.168.1.0");
    EXPECT_EQ(str(m.include[0].hi), "192.168.1.255");
    const AddressSet r = addr("10.0.0.5-10.0.0.9");
    EXPECT_TRUE(r.contains(ip("10.0.0.5")));
    EXPECT_TRUE(r.contains(ip("10.0.0.9")));
    EXPECT_FALSE(r.contains(ip("10.0.0.10")));
    EXPECT_FALSE(r.contains(ip("10.0.0.4")));
}

TEST(AddressSpec, SingleAndCidrV6) {
    const AddressSet one = addr("2001:db8::1");
    EXPECT_TRUE(one.contains(ip("2001:db8::1")));
    EXPECT_FALSE(one.contains(ip("2001:db8::2")));
    const AddressSet net = addr("2001:db8::/32");
    ASSERT_EQ(net.include.size(), 1u);
    EXPECT_EQ(str(net.include[0].lo), "2001:db8::");
    EXPECT_EQ(str(net.include[0].hi), "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff");
    EXPECT_TRUE(net.contains(ip("2001:db8:ffff::1")));
    EXPECT_FALSE(net.contains(ip("2001:db9::")));
    EXPECT_FALSE(net.contains(ip("32.1.13.184")));  // same leading bytes, but IPv4
}

TEST(AddressSpec, V4CidrDoesNotMatchV6) {
    const AddressSet s = addr("0.0.0.0/0");
    EXPECT_TRUE(s.contains(ip("255.255.255.255")));
    EXPECT_FALSE(s.contains(ip("::1")));
}

TEST(AddressSpec, NegatedVariableIsAnyMinusHomeNet) {
    const VarTable vars = VarTable::suricata_defaults();
    const AddressSet s = addr("$EXTERNAL_NET", &vars);
    EXPECT_TRUE(s.any);
    ASSERT_EQ(s.exclude.size(), 3u);
    EXPECT_EQ(str(s.exclude[0].lo), "10.0.0.0");
    EXPECT_EQ(str(s.exclude[1].lo), "172.16.0.0");
    EXPECT_EQ(str(s.exclude[1].hi), "172.31.255.255");
    EXPECT_EQ(str(s.exclude[2].lo), "192.168.0.0");
    EXPECT_TRUE(s.contains(ip("8.8.8.8")));
    EXPECT_TRUE(s.contains(ip("2001:db8::1")));
    EXPECT_FALSE(s.contains(ip("10.1.2.3")));
    EXPECT_FALSE(s.contains(ip("192.168.255.255")));
    EXPECT_TRUE(s.contains(ip("172.32.0.0")));
}

TEST(AddressSpec, HomeNetDefault) {
    const VarTable vars = VarTable::suricata_defaults();
    const AddressSet s = addr("$HOME_NET", &vars);
    EXPECT_FALSE(s.any);
    EXPECT_EQ(s.include.size(), 3u);
    EXPECT_TRUE(s.contains(ip("172.16.0.1")));
    EXPECT_FALSE(s.contains(ip("172.15.255.255")));
    const AddressSet http = addr("$HTTP_SERVERS", &vars);
    EXPECT_EQ(http.include.size(), 3u);
    const AddressSet aim = addr("$AIM_SERVERS", &vars);
    EXPECT_TRUE(aim.any);
    EXPECT_EQ(aim.exclude.size(), 3u);
}

TEST(AddressSpec, NestedListsWithNegation) {
    const AddressSet s = addr("[10.0.0.0/8, ![10.1.0.0/16,!10.1.2.0/24], 192.0.2.1]");
    EXPECT_TRUE(s.contains(ip("10.2.0.1")));
    EXPECT_FALSE(s.contains(ip("10.1.5.5")));
    EXPECT_TRUE(s.contains(ip("10.1.2.7")));
    EXPECT_TRUE(s.contains(ip("192.0.2.1")));
    EXPECT_FALSE(s.contains(ip("192.0.2.2")));
    EXPECT_FALSE(s.contains(ip("11.0.0.0")));
}

TEST(AddressSpec, ListOfNegationsStartsFromAny) {
    const AddressSet s = addr("[!1.2.3.4,!5.6.7.8]");
    EXPECT_TRUE(s.any);
    EXPECT_EQ(s.exclude.size(), 2u);
    EXPECT_FALSE(s.contains(ip("1.2.3.4")));
    EXPECT_FALSE(s.contains(ip("5.6.7.8")));
    EXPECT_TRUE(s.contains(ip("1.2.3.5")));
    const AddressSet n = addr("![1.2.3.4,5.6.7.8]");
    EXPECT_TRUE(n.any);
    EXPECT_EQ(n.exclude.size(), 2u);
}

TEST(AddressSpec, AdjacentRangesMerge) {
    const AddressSet s = addr("[10.0.0.0/25,10.0.0.128/25,10.0.0.7]");
    ASSERT_EQ(s.include.size(), 1u);
    EXPECT_EQ(str(s.include[0].lo), "10.0.0.0");
    EXPECT_EQ(str(s.include[0].hi), "10.0.0.255");
}

TEST(AddressSpec, ErrorsNameTheBadPart) {
    EXPECT_EQ(addr_error("10.0.0.300"), "bad address '10.0.0.300'");
    EXPECT_EQ(addr_error("[1.2.3.4,10.0.0.0/33]"), "bad address '10.0.0.0/33'");
    EXPECT_EQ(addr_error("2001:db8::/129"), "bad address '2001:db8::/129'");
    EXPECT_EQ(addr_error("[1.2.3.4"), "bad address list '[1.2.3.4'");
    EXPECT_EQ(addr_error("[1.2.3.4,,5.6.7.8]"), "empty item in address list '[1.2.3.4,,5.6.7.8]'");
    EXPECT_EQ(addr_error("!any"), "address '!any' matches nothing");
    EXPECT_EQ(addr_error("[1.2.3.4,!1.2.3.4]"), "address '[1.2.3.4,!1.2.3.4]' matches nothing");
    EXPECT_EQ(addr_error("$NOPE"), "unknown address variable '$NOPE'");
    const VarTable vars = VarTable::suricata_defaults();
    EXPECT_EQ(addr_error("$HTTP_PORTS", &vars), "unknown address variable '$HTTP_PORTS'");
}

TEST(AddressSpec, VariableLoopIsDetected) {
    VarTable vars;
    vars.address["A"] = "[1.2.3.4,$B]";
    vars.address["B"] = "!$A";
    EXPECT_EQ(addr_error("$A", &vars), "address variable loop at '$A'");
    vars.address["SELF"] = "$SELF";
    EXPECT_EQ(addr_error("[$SELF]", &vars), "address variable loop at '$SELF'");
}

TEST(PortSpec, Forms) {
    const PortSet any = ports("any");
    EXPECT_TRUE(any.any);
    EXPECT_TRUE(any.contains(0));
    EXPECT_TRUE(any.contains(65535));

    const PortSet one = ports("80");
    EXPECT_FALSE(one.any);
    ASSERT_EQ(one.include.size(), 1u);
    EXPECT_EQ(one.include[0].lo, 80);
    EXPECT_EQ(one.include[0].hi, 80);
    EXPECT_TRUE(one.contains(80));
    EXPECT_FALSE(one.contains(81));

    const PortSet from = ports("1024:");
    EXPECT_FALSE(from.contains(1023));
    EXPECT_TRUE(from.contains(1024));
    EXPECT_TRUE(from.contains(65535));

    const PortSet upto = ports(":1023");
    EXPECT_TRUE(upto.contains(0));
    EXPECT_TRUE(upto.contains(1023));
    EXPECT_FALSE(upto.contains(1024));

    const PortSet list = ports("[80,443, 8000:8100]");
    ASSERT_EQ(list.include.size(), 3u);
    EXPECT_TRUE(list.contains(443));
    EXPECT_TRUE(list.contains(8050));
    EXPECT_FALSE(list.contains(8101));
    EXPECT_FALSE(list.contains(444));
}

TEST(PortSpec, Negation) {
    const PortSet s = ports("!80");
    EXPECT_TRUE(s.any);
    ASSERT_EQ(s.exclude.size(), 1u);
    EXPECT_FALSE(s.contains(80));
    EXPECT_TRUE(s.contains(79));
    EXPECT_TRUE(s.contains(81));

    const PortSet l = ports("[1:100,!50,![60:70]]");
    EXPECT_TRUE(l.contains(1));
    EXPECT_FALSE(l.contains(50));
    EXPECT_FALSE(l.contains(65));
    EXPECT_TRUE(l.contains(71));
    EXPECT_FALSE(l.contains(101));
    EXPECT_FALSE(l.contains(0));
}

TEST(PortSpec, Variables) {
    const VarTable vars = VarTable::suricata_defaults();
    const PortSet f = ports("$FILE_DATA_PORTS", &vars);
    ASSERT_EQ(f.include.size(), 3u);
    EXPECT_TRUE(f.contains(80));
    EXPECT_TRUE(f.contains(110));
    EXPECT_TRUE(f.contains(143));
    EXPECT_FALSE(f.contains(443));
    const PortSet sc = ports("$SHELLCODE_PORTS", &vars);
    EXPECT_FALSE(sc.contains(80));
    EXPECT_TRUE(sc.contains(8080));
    const PortSet o = ports("[$ORACLE_PORTS,$SSH_PORTS]", &vars);
    EXPECT_TRUE(o.contains(1521));
    EXPECT_TRUE(o.contains(22));
    EXPECT_FALSE(o.contains(23));
}

TEST(PortSpec, Errors) {
    EXPECT_EQ(port_error("70000"), "bad port '70000'");
    EXPECT_EQ(port_error("100:50"), "bad port '100:50'");
    EXPECT_EQ(port_error("[80,http]"), "bad port 'http'");
    EXPECT_EQ(port_error(":"), "bad port ':'");
    EXPECT_EQ(port_error("!any"), "port '!any' matches nothing");
    EXPECT_EQ(port_error("$HOME_NET"), "unknown port variable '$HOME_NET'");
}

TEST(VarTable, OverridesAndValidation) {
    const VarTable vars = VarTable::with_overrides({{"HOME_NET", "[198.51.100.0/24]"}},
                                                   {{"HTTP_PORTS", "[80,8080]"}});
    const AddressSet ext = addr("$EXTERNAL_NET", &vars);
    EXPECT_TRUE(ext.contains(ip("10.0.0.1")));
    EXPECT_FALSE(ext.contains(ip("198.51.100.7")));
    EXPECT_TRUE(ports("$HTTP_PORTS", &vars).contains(8080));
    std::string err;
    EXPECT_TRUE(vars.validate(&err)) << err;

    const VarTable bad = VarTable::with_overrides({{"HOME_NET", "[10.0.0.0/8,300.1.1.1]"}}, {});
    EXPECT_FALSE(bad.validate(&err));
    EXPECT_EQ(err, "address variable AIM_SERVERS: bad address '300.1.1.1'");
}

}  // namespace
}  // namespace picket::sensor::detect
