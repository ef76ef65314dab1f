// The table of host settings and the checks between them (see options.h). Each parser takes
// the setting's text and says only what is wrong with the value; set() puts the setting's name,
// as the front door spells it, in front.
#include "host/options.h"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "host/port_plan.h"
#include "wire/srv6.h"

namespace mrc::host {
namespace {

// A whole number in [low, high], or nullopt.
std::optional<uint64_t> whole(const std::string& text, uint64_t low, uint64_t high) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
  if (v < low || v > high) return std::nullopt;
  return v;
}

std::string parse_planes(const std::string& text, Options& o) {
  std::vector<std::string> planes;
  std::istringstream list(text);
  for (std::string entry; std::getline(list, entry, ',');) {
    if (entry.empty()) continue;
    auto address = resolve_plane(entry);
    if (!address.ok()) return address.error().message;
    planes.push_back(address.value());
  }
  if (planes.empty()) return "names no plane (addresses, interfaces or IPv4 prefixes, by commas)";
  if (planes.size() > 16) return "names " + std::to_string(planes.size()) + " planes: at most 16";
  o.context.planes = std::move(planes);
  return "";
}

std::string parse_port(const std::string& text, uint16_t& out) {
  const auto v = whole(text, 1, 65535);
  if (!v) return "is not a UDP port (1..65535)";
  out = static_cast<uint16_t>(*v);
  return "";
}

std::string parse_backend(const std::string& text, Options& o) {
  auto backend = mrc::parse_backend(text);
  if (!backend.ok()) return backend.error().message;
  o.context.backend = backend.value();
  return "";
}

std::string parse_switch(const std::string& text, bool& out) {
  if (text == "on" || text == "1" || text == "true" || text == "yes") return out = true, "";
  if (text == "off" || text == "0" || text == "false" || text == "no") return out = false, "";
  return "is neither on nor off";
}

std::string parse_srv6_paths(const std::string& text, Options& o) {
  if (!text.empty()) {
    auto paths = wire::parse_srv6_paths(text);
    if (!paths.ok()) return paths.error().message;
  }
  o.context.srv6_paths = text;
  return "";
}

std::string parse_busy_poll(const std::string& text, Options& o) {
  const auto v = whole(text, 0, 1'000'000);
  if (!v) return "is not a whole number of microseconds in 0..1000000";
  o.context.busy_poll_us = static_cast<uint32_t>(*v);
  return "";
}

std::string parse_threads(const std::string& text, Options& o) {
  const auto v = whole(text, 1, mrc::kMaxDeviceThreads);
  if (!v)
    return "is not a number of engine threads (1.." + std::to_string(mrc::kMaxDeviceThreads) + ")";
  o.context.threads = static_cast<uint32_t>(*v);
  return "";
}

std::string parse_secure(const std::string& text, Options& o) {
  const auto mode = parse_secure_mode(text);
  if (!mode.ok()) return "is not off, auth or encrypt";
  o.context.secure = mode.value();
  return "";
}

std::string parse_key_file(const std::string& text, Options& o) {
  if (text.empty()) return "needs the path of a key file";
  o.key_file = text;
  return "";
}

std::string parse_drop(const std::string& text, Options& o) {
  char* end = nullptr;
  const double drop = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(drop >= 0 && drop < 1))
    return "is not a fraction in [0, 1)";
  o.context.impairment.drop = drop;
  return "";
}

std::string parse_metrics_port(const std::string& text, Options& o) {
  if (text == "off") return o.context.metrics_port = -1, "";
  const auto v = whole(text, 0, 65535);
  if (!v) return "is not a TCP port (0..65535; 0: a free one; off: no metrics)";
  o.context.metrics_port = static_cast<int32_t>(*v);
  return "";
}

std::string parse_pcap(const std::string& text, Options& o) {
  if (text.empty()) return "needs the path of the capture file to write";
  o.context.pcap = text;
  return "";
}

std::string parse_pcap_max_mib(const std::string& text, Options& o) {
  const auto v = whole(text, 1, uint64_t{1} << 20);
  if (!v) return "is not a number of MiB in 1..1048576";
  o.context.pcap_max_mib = *v;
  return "";
}

std::string parse_metrics_bind(const std::string& text, Options& o) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return "is not an IPv4 address";
  o.context.metrics_bind = text;
  return "";
}

constexpr uint8_t kTextDoors = kDoorFlag | kDoorEntry | kDoorProvider | kDoorTorch;

const Setting kSettings[] = {
    {"planes", "LIST",
     "this host's planes: addresses (IPv4[:port], IPv6, [IPv6]:port), interfaces or IPv4 "
     "prefixes holding one of its addresses, by commas (1..16)",
     kTextDoors, parse_planes},
    {"port", "PORT", "UDP receive port of the planes that name none (default 4791)", kTextDoors,
     [](const std::string& t, Options& o) { return parse_port(t, o.context.port); }},
    {"ev-port-base", "PORT",
     "first UDP source port of the EVs; each engine thread takes its own range after it "
     "(default 50000)",
     kTextDoors,
     [](const std::string& t, Options& o) { return parse_port(t, o.context.ev_port_base); },
     "ev-ports"},
    {"backend", "NAME", "the datapath: udp (kernel sockets, default) or xdp (AF_XDP; root)",
     kTextDoors, parse_backend},
    {"gso", "on|off", "batched UDP send and receive (GSO/GRO) where offered (default on)",
     kTextDoors, [](const std::string& t, Options& o) { return parse_switch(t, o.context.gso); }},
    {"srv6-paths", "USIDS",
     "SRv6 uSID path mode: the paths' uSIDs in hex by commas, the planes then IPv6 locators "
     "(default empty: ECMP mode)",
     kTextDoors, parse_srv6_paths, "srv6"},
    {"busy-poll-us", "US",
     "after work, ask the sockets without sleeping for this long (0..1000000; default 0: sleep)",
     kTextDoors, parse_busy_poll},
    {"threads", "N",
     "engine threads, each a shard with its own sockets and ports (1..16; default 1)",
     kDoorFlag | kDoorEntry | kDoorTorch, parse_threads},
    {"secure", "MODE",
     "secure mode of every queue pair: off (default), auth (AES-GCM tags) or encrypt", kTextDoors,
     parse_secure},
    {"key-file", "PATH", "secure mode's pre-shared key: hex digits, the same file at both ends",
     kTextDoors, parse_key_file},
    {"drop", "FRACTION", "drop this fraction of sent packets (an impairment for tests; default 0)",
     kDoorFlag | kDoorEntry, parse_drop},
    {"metrics-port", "PORT",
     "serve Prometheus metrics at http://METRICS_BIND:PORT/metrics (0: a free port; default off)",
     kTextDoors, parse_metrics_port},
    {"metrics-bind", "ADDRESS", "the IPv4 address metrics are served on (default 127.0.0.1)",
     kTextDoors, parse_metrics_bind},
    {"pcap", "PATH",
     "write every datagram sent and received to this pcap file (%p: the process id; read it "
     "with mrc decode, tshark; default: no capture)",
     kTextDoors, parse_pcap},
    {"pcap-max-mib", "MIB", "stop capturing after this many MiB (1..1048576; default 256)",
     kTextDoors, parse_pcap_max_mib},
};

// This host's first IPv4 address (in getifaddrs order) that `wanted` takes, given the
// interface's name and the address.
template <typename Wanted>
std::optional<std::string> first_ipv4(Wanted wanted) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const in_addr a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if (!wanted(i->ifa_name, a)) continue;
    char text[INET_ADDRSTRLEN];
    found = inet_ntop(AF_INET, &a, text, sizeof text);
  }
  freeifaddrs(list);
  return found;
}

// This host's address in the IPv4 prefix `entry` ("198.18.0.0/24").
std::optional<std::string> in_prefix(const std::string& entry) {
  const auto slash = entry.find('/');
  in_addr net{};
  if (slash == std::string::npos || inet_pton(AF_INET, entry.substr(0, slash).c_str(), &net) != 1)
    return std::nullopt;
  const auto bits = whole(entry.substr(slash + 1), 1, 32);
  if (!bits) return std::nullopt;
  const uint32_t mask = *bits == 32 ? ~0u : ~((1u << (32 - *bits)) - 1);
  return first_ipv4([&](const char*, in_addr a) {
    return (ntohl(a.s_addr) & mask) == (ntohl(net.s_addr) & mask);
  });
}

}  // namespace

std::span<const Setting> settings() {
  return kSettings;
}

const Setting* find_setting(std::string_view key) {
  for (const Setting& s : kSettings)
    if (s.key == key) return &s;
  for (const Setting& s : kSettings)
    if (!s.alias.empty() && s.alias == key) return &s;
  return nullptr;
}

std::string env_name(std::string_view prefix, std::string_view key) {
  std::string name(prefix);
  for (char c : key) name += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return name;
}

std::string Spelling::name(std::string_view key) const {
  switch (door) {
    case kDoorFlag:
      return "--" + std::string(key);
    case kDoorEntry:
      return std::string(key) + "=";
    case kDoorProvider:
    case kDoorTorch:
      return env_name(prefix, key);
    default: {  // kDoorNative: the field
      std::string field(key);
      std::replace(field.begin(), field.end(), '-', '_');
      return "ContextOptions::" + field;
    }
  }
}

std::string setting_names(const Spelling& spelling) {
  std::string names;
  for (const Setting& s : kSettings) {
    if ((s.doors & spelling.door) == 0) continue;
    if (!names.empty()) names += ", ";
    names += spelling.name(s.key);
  }
  return names;
}

Result<Ok, Error> set(Options& o, std::string_view key, const std::string& text,
                      const Spelling& spelling) {
  const Setting* s = find_setting(key);
  if (s == nullptr || (s->doors & spelling.door) == 0)
    return fail(Errc::kInvalidArgument,
                "unknown setting " + spelling.name(key) +
                    (s != nullptr ? " (not one this front door takes)" : "") +
                    "; known: " + setting_names(spelling));
  if (std::string why = s->parse(text, o); !why.empty()) {
    // The table's own messages read on from the value ("is not a UDP port"); those of the
    // parsers it calls stand alone.
    const bool reads_on =
        why.rfind("is ", 0) == 0 || why.rfind("names ", 0) == 0 || why.rfind("needs ", 0) == 0;
    return fail(Errc::kInvalidArgument, spelling.name(key) +
                                            (spelling.door == kDoorEntry ? "" : "=") + text +
                                            (reads_on ? " " : ": ") + why);
  }
  return Ok{};
}

Result<Ok, Error> set_from_environment(Options& o, const Spelling& spelling) {
  for (const Setting& s : kSettings) {
    if ((s.doors & spelling.door) == 0) continue;
    const char* value = std::getenv(env_name(spelling.prefix, s.key).c_str());
    if (value == nullptr) continue;
    if (auto r = set(o, s.key, value, spelling); !r.ok()) return r;
  }
  return Ok{};
}

Result<Ok, Error> finish(Options& o, const Spelling& spelling) {
  if (auto checked = check(o, spelling); !checked.ok()) return checked;
  ContextOptions& c = o.context;
  if (c.secure != SecureMode::kOff && c.preshared_key.empty()) {
    auto key = preshared_key_for(c.secure, o.key_file, spelling.name("secure"),
                                 spelling.name("key-file"), "both ends");
    if (!key.ok()) return Err{key.error()};
    c.preshared_key = std::move(key.value());
  }
  return Ok{};
}

Result<std::vector<uint8_t>, Error> preshared_key_for(SecureMode mode, const std::string& key_file,
                                                      const std::string& mode_setting,
                                                      const std::string& file_setting,
                                                      const std::string& holders) {
  if (mode == SecureMode::kOff) return std::vector<uint8_t>{};
  if (key_file.empty())
    return fail(Errc::kInvalidArgument,
                mode_setting + to_string(mode) + " needs " + file_setting +
                    " FILE, the pre-shared key that " + holders +
                    " must hold (make one with: openssl rand -hex 32 > FILE; chmod 600 FILE)");
  return read_key_file(key_file);
}

Result<Ok, Error> check(Options& o, const Spelling& spelling) {
  ContextOptions& c = o.context;
  if (c.planes.empty())
    return fail(Errc::kInvalidArgument, spelling.name("planes") + " names no plane");
  if (c.secure != SecureMode::kOff && c.preshared_key.empty() && o.key_file.empty())
    return fail(Errc::kInvalidArgument,
                spelling.name("secure") + (spelling.door == kDoorEntry ? "" : "=") +
                    to_string(c.secure) + " needs " + spelling.name("key-file") +
                    (spelling.door == kDoorEntry ? "" : "=") +
                    "PATH (the pre-shared key both ends hold)");
  c.port_setting = spelling.name("port");
  c.ev_port_setting = spelling.name("ev-port-base");
  ContextOptions families = c;  // the planes' families and SRv6 paths, before any key is read
  families.secure = SecureMode::kOff;
  auto config = device_config(families, spelling);
  if (!config.ok()) return Err{config.error()};
  PortPlan plan;
  plan.port = c.port;
  plan.ev_port_base = c.ev_port_base;
  plan.planes = c.planes.size();
  plan.threads = c.threads;
  plan.port_setting = c.port_setting;
  plan.ev_port_setting = c.ev_port_setting;
  return plan.check();
}

Result<io::DeviceConfig, Error> device_config(const ContextOptions& o, const Spelling& spelling) {
  io::DeviceConfig dc;
  for (const std::string& text : o.planes) {
    auto a = io::parse_plane_address(text, o.port);
    if (!a.ok()) return Err{a.error()};
    dc.planes.push_back(a.value());
  }
  if (dc.planes.empty())
    return fail(Errc::kInvalidArgument, "a context needs at least one plane address");
  if (o.secure != SecureMode::kOff && o.preshared_key.size() < mrc::kMinPresharedKeyBytes)
    return fail(Errc::kInvalidArgument,
                "secure mode needs a pre-shared key (at least 16 bytes: " +
                    (spelling.door == kDoorNative ? std::string("ContextOptions::preshared_key")
                                                  : spelling.name("key-file")) +
                    "): the key both ends hold");
  dc.ev_port_base = o.ev_port_base;
  dc.impairment = o.impairment;
  dc.gso = o.gso;
  dc.busy_poll = Duration::from_us(o.busy_poll_us);
  dc.backend = o.backend;
  if (!o.srv6_paths.empty()) {
    auto paths = wire::parse_srv6_paths(o.srv6_paths);
    if (!paths.ok()) return fail(paths.error(), spelling.name("srv6-paths") + ": ");
    dc.srv6_paths = paths.value();
  }
  if (auto families = io::check_plane_families(dc.planes, dc.backend, dc.srv6_paths);
      !families.ok())
    return Err{families.error()};
  dc.seed = o.seed;
  dc.port_setting = o.port_setting;
  dc.ev_port_setting = o.ev_port_setting;
  return dc;
}

Result<std::string, Error> resolve_plane(const std::string& entry) {
  if (io::parse_plane_address(entry, 4791).ok()) return entry;
  std::optional<std::string> address =
      entry.find('/') != std::string::npos
          ? in_prefix(entry)
          : first_ipv4([&](const char* name, in_addr) { return entry == name; });
  if (!address)
    return fail(Errc::kNotFound, "'" + entry +
                                     "' is no address, no interface with an IPv4 address, and no "
                                     "IPv4 prefix holding one of this host's addresses");
  return *address;
}

}  // namespace mrc::host
