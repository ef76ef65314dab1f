// SRv6 uSID path mode's pieces (wire/srv6.h) and plane addresses of both families
// (io/udp_host.h, io/socket_address.h): paths parsed and refused with the rule they break,
// containers built by inserting a path after the block, locators without room refused.
#include "wire/srv6.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

#include "io/udp_host.h"

namespace mrc::io {
namespace {

in6_addr v6(const char* text) {
  in6_addr a{};
  EXPECT_EQ(inet_pton(AF_INET6, text, &a), 1) << text;
  return a;
}

std::string text(const in6_addr& a) {
  char out[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &a, out, sizeof out);
  return out;
}

TEST(Srv6, PathsParseAndPrint) {
  const auto one = wire::parse_srv6_paths("200,201");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one.value(), (wire::Srv6Paths{{0x200}, {0x201}}));
  const auto two = wire::parse_srv6_paths("100:200,100:201,FFFF");
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two.value(), (wire::Srv6Paths{{0x100, 0x200}, {0x100, 0x201}, {0xFFFF}}));
  EXPECT_EQ(wire::to_string(two.value()), "100:200,100:201,ffff");
}

TEST(Srv6, BadPathsNameTheRule) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected uSIDs such as 200,201"},
      {"200,", "expected uSIDs such as 200,201"},
      {"zz", "1 to 4 hexadecimal digits"},
      {"12345", "1 to 4 hexadecimal digits"},
      {"200,,201", "bad SRv6 path '' in '200,,201': a path needs at least one uSID"},
      {"0", "uSID 0 ends a container"},
      {"200:", "at least one uSID"},
      {"1:2:3:4:5:6", "at most 5 uSIDs per path"},
  };
  for (const auto& [input, why] : cases) {
    const auto parsed = wire::parse_srv6_paths(input);
    ASSERT_FALSE(parsed.ok()) << "'" << input << "' was accepted";
    EXPECT_EQ(parsed.error().code, Errc::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(why), std::string::npos)
        << "'" << input << "': " << parsed.error().message;
  }
}

TEST(Srv6, APathGoesRightAfterTheBlock) {
  const in6_addr locator = v6("fd00:0:101:301::");
  EXPECT_EQ(text(wire::srv6_destination(locator, {0x200}).value()), "fd00:0:200:101:301::");
  EXPECT_EQ(text(wire::srv6_destination(locator, {0x100, 0x201}).value()),
            "fd00:0:100:201:101:301::");
  // The block is left alone whatever it holds; a locator of the block alone takes any path.
  EXPECT_EQ(text(wire::srv6_destination(v6("2001:db8::"), {0x1, 0x2, 0x3, 0x4, 0x5}).value()),
            "2001:db8:1:2:3:4:5:0");
}

TEST(Srv6, ALocatorWithoutRoomIsRefused) {
  const auto full = wire::srv6_destination(v6("fd00:0:101:301:1:2:3:4"), {0x200});
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("fd00:0:101:301:1:2:3:4 has no room for a path of 1 uSID"),
            std::string::npos)
      << full.error().message;
  EXPECT_FALSE(wire::srv6_destination(v6("fd00:0:101:301:0:0:3::"), {0x100, 0x200}).ok());
  EXPECT_TRUE(wire::srv6_destination(v6("fd00:0:101:301:0:0:3::"), {0x200}).ok());
}

TEST(Srv6, AnEvAddressCarriesItsPath) {
  // The form an SRv6 EV takes in the OCP controller API: the plane's block, the path, zeros.
  const in6_addr locator = v6("fd00:1:101:301::");
  EXPECT_EQ(text(wire::srv6_ev_address(locator, {0x200})), "fd00:1:200::");
  EXPECT_EQ(text(wire::srv6_ev_address(locator, {0x100, 0x201})), "fd00:1:100:201::");
  EXPECT_EQ(wire::srv6_ev_path(v6("fd00:1:200::"), locator).value(),
            (std::vector<uint16_t>{0x200}));
  EXPECT_EQ(wire::srv6_ev_path(v6("fd00:1:1:2:3:4:5::"), locator).value(),
            (std::vector<uint16_t>{1, 2, 3, 4, 5}));
  const std::pair<const char*, const char*> bad[] = {
      {"fd00:2:200::",
       "its block (first 32 bits) is not that of the plane's locator fd00:1:101:301::"},
      {"fd00:1::", "no uSID after the block names a path"},
      {"fd00:1:200:0:100::", "a uSID follows a zero one"},
      {"fd00:1:1:2:3:4:5:6", "at most 5 uSIDs per path"},
  };
  for (const auto& [ev, why] : bad) {
    const auto path = wire::srv6_ev_path(v6(ev), locator);
    ASSERT_FALSE(path.ok()) << ev << " was accepted";
    EXPECT_NE(path.error().message.find(std::string("SRv6 EV ") + ev), std::string::npos)
        << path.error().message;
    EXPECT_NE(path.error().message.find(why), std::string::npos) << path.error().message;
  }
}

TEST(PlaneAddress, BothFamiliesParseAndPrint) {
  const auto v4 = parse_plane_address("127.0.0.2:4800", 4791).value();
  EXPECT_FALSE(v4.v6);
  EXPECT_EQ(to_string(v4), "127.0.0.2:4800");
  const auto bare = parse_plane_address("fd00::1", 4791).value();
  EXPECT_TRUE(bare.v6);
  EXPECT_EQ(to_string(bare), "[fd00::1]:4791");
  const auto bracketed = parse_plane_address("[fd00:0:100:300::]:4792", 4791).value();
  EXPECT_EQ(to_string(bracketed), "[fd00:0:100:300::]:4792");
  EXPECT_EQ(to_string(parse_plane_address("[::1]", 4791).value()), "[::1]:4791");
  for (const char* bad : {"[fd00::1", "[fd00::1]x", "[fd00::1]:", "fd00::zz",
                          "127.0.0.1:", "[fd00::1]:0", "[127.0.0.1]:4791", "host.example"}) {
    const auto parsed = parse_plane_address(bad, 4791);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "' was accepted";
    EXPECT_NE(parsed.error().message.find(bad), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace mrc::io
