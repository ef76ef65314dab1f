// SRv6 uSID containers: paths parsed, destinations built (srv6.h).
#include "wire/srv6.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "util/bytes.h"

namespace mrc::wire {

namespace {

constexpr int kUsidsAfterBlock = (128 - kSrv6BlockBits) / kSrv6UsidBits;  // 6
constexpr int kBlockUsids = kSrv6BlockBits / kSrv6UsidBits;               // 2

uint16_t usid_at(const in6_addr& a, int index) {  // index over the whole address, 0..7
  return load_be16(a.s6_addr + static_cast<size_t>(index) * 2);
}

void set_usid(in6_addr& a, int index, uint16_t value) {
  store_be16(a.s6_addr + static_cast<size_t>(index) * 2, value);
}

Result<std::vector<uint16_t>, Error> parse_path(const std::string& path, const std::string& text) {
  std::vector<uint16_t> usids;
  std::stringstream in(path);
  std::string usid;
  const auto bad = [&](const std::string& why) {
    return fail(Errc::kInvalidArgument, "bad SRv6 path '" + path + "' in '" + text + "': " + why);
  };
  while (std::getline(in, usid, ':')) {
    const bool hex = !usid.empty() && usid.size() <= 4 &&
                     std::all_of(usid.begin(), usid.end(), [](char c) { return std::isxdigit(c); });
    if (!hex) return bad("a uSID is 1 to 4 hexadecimal digits, such as 200");
    const auto value = static_cast<uint16_t>(std::stoul(usid, nullptr, 16));
    if (value == 0) return bad("uSID 0 ends a container and cannot name a switch");
    usids.push_back(value);
  }
  if (usids.empty() || path.back() == ':') return bad("a path needs at least one uSID");
  if (usids.size() > kSrv6MaxPathUsids)
    return bad("at most " + std::to_string(kSrv6MaxPathUsids) + " uSIDs per path");
  return usids;
}

}  // namespace

Result<Srv6Paths, Error> parse_srv6_paths(const std::string& text) {
  Srv6Paths paths;
  std::stringstream in(text);
  std::string path;
  while (std::getline(in, path, ',')) {
    auto parsed = parse_path(path, text);
    if (!parsed.ok()) return Err{parsed.error()};
    paths.push_back(parsed.value());
  }
  if (paths.empty() || text.back() == ',')
    return fail(Errc::kInvalidArgument,
                "bad SRv6 paths '" + text + "': expected uSIDs such as 200,201");
  if (paths.size() > kSrv6MaxPaths)
    return fail(Errc::kInvalidArgument, "bad SRv6 paths '" + text + "': at most " +
                                            std::to_string(kSrv6MaxPaths) + " paths");
  return paths;
}

std::string to_string(const Srv6Paths& paths) {
  std::string out;
  for (const auto& path : paths) {
    if (!out.empty()) out += ",";
    for (size_t i = 0; i < path.size(); ++i) {
      char usid[8];
      std::snprintf(usid, sizeof usid, "%s%x", i == 0 ? "" : ":", path[i]);
      out += usid;
    }
  }
  return out;
}

Result<in6_addr, Error> srv6_destination(const in6_addr& locator,
                                         const std::vector<uint16_t>& path) {
  const int shift = static_cast<int>(path.size());
  for (int i = kBlockUsids + kUsidsAfterBlock - shift; i < kBlockUsids + kUsidsAfterBlock; ++i) {
    if (usid_at(locator, i) == 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, &locator, text, sizeof text);
    return fail(Errc::kInvalidArgument, std::string("SRv6 locator ") + text +
                                            " has no room for a path of " + std::to_string(shift) +
                                            " uSID" + (shift == 1 ? "" : "s") + ": its last " +
                                            std::to_string(shift * kSrv6UsidBits) +
                                            " bits must be zero (block:leaf:host::)");
  }
  in6_addr out = locator;
  for (int i = kBlockUsids + kUsidsAfterBlock - 1; i >= kBlockUsids + shift; --i)
    set_usid(out, i, usid_at(locator, i - shift));
  for (int k = 0; k < shift; ++k) set_usid(out, kBlockUsids + k, path[k]);
  return out;
}

in6_addr srv6_ev_address(const in6_addr& locator, const std::vector<uint16_t>& path) {
  in6_addr out{};
  std::memcpy(out.s6_addr, locator.s6_addr, kSrv6BlockBits / 8);
  for (size_t k = 0; k < path.size() && k < static_cast<size_t>(kUsidsAfterBlock); ++k)
    set_usid(out, kBlockUsids + static_cast<int>(k), path[k]);
  return out;
}

Result<std::vector<uint16_t>, Error> srv6_ev_path(const in6_addr& ev, const in6_addr& locator) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &ev, text, sizeof text);
  const auto bad = [&](const std::string& why) {
    return fail(Errc::kInvalidArgument, std::string("SRv6 EV ") + text + ": " + why);
  };
  if (std::memcmp(ev.s6_addr, locator.s6_addr, kSrv6BlockBits / 8) != 0) {
    char plane[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, &locator, plane, sizeof plane);
    return bad(std::string("its block (first 32 bits) is not that of the plane's locator ") +
               plane);
  }
  std::vector<uint16_t> path;
  for (int i = kBlockUsids; i < kBlockUsids + kUsidsAfterBlock; ++i) {
    const uint16_t usid = usid_at(ev, i);
    if (usid != 0 && (path.size() + kBlockUsids != static_cast<size_t>(i)))
      return bad("a uSID follows a zero one, which ends the container");
    if (usid != 0) path.push_back(usid);
  }
  if (path.empty()) return bad("no uSID after the block names a path");
  if (path.size() > kSrv6MaxPathUsids)
    return bad("at most " + std::to_string(kSrv6MaxPathUsids) + " uSIDs per path");
  return path;
}

}  // namespace mrc::wire
