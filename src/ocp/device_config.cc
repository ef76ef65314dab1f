// Parsing of the software devices' configuration (see device_config.h): a few key=value
// entries, validated with messages that name the source, the entry and the field.
#include "ocp/device_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mrc::ocp {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool parse_u16(const std::string& text, uint16_t& out) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  const unsigned long v = std::strtoul(text.c_str(), nullptr, 10);
  if (v == 0 || v > 65535) return false;
  out = static_cast<uint16_t>(v);
  return true;
}

// busy-poll-us=: a whole number of microseconds, 0..kMaxBusyPollUs.
bool parse_busy_poll_us(const std::string& text, uint32_t& out) {
  if (text.empty() || text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long v = std::strtoul(text.c_str(), nullptr, 10);
  if (v > kMaxBusyPollUs) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// The planes= list of an entry (every plane on the entry's port), checked against its backend
// and SRv6 paths; returns an error message or "".
std::string parse_planes(const std::string& planes_text, DeviceSpec& spec) {
  std::istringstream list(planes_text);
  for (std::string a; std::getline(list, a, ',');) {
    auto parsed = io::parse_plane_address(a, spec.port);
    if (!parsed.ok()) return parsed.error().message;
    parsed.value().port = spec.port;
    spec.planes.push_back(parsed.value());
  }
  if (spec.planes.size() > 16) return "at most 16 planes per device";
  if (auto families = io::check_plane_families(spec.planes, spec.backend, spec.srv6_paths);
      !families.ok())
    return families.error().message;
  return "";
}

// Parses one entry; returns an error message or "".
std::string parse_entry(const std::string& entry, DeviceSpec& spec, bool& is_peer) {
  std::istringstream in(entry);
  std::string name;
  in >> name;
  is_peer = name == "peer";
  if (!is_peer) spec.name = name;
  if (name.size() >= 64) return "device name '" + name + "' is longer than 63 characters";
  std::string planes_text;
  std::vector<std::string> seen;
  for (std::string item; in >> item;) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq),
                      value = eq == std::string::npos ? "" : item.substr(eq + 1);
    // A repeated key would silently overwrite the first (a ',' typed for a ';' between two
    // devices makes the second device's planes= a repeat of the first's).
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return "'" + key + "=' is given twice (entries are separated by ';' or new lines)";
    seen.push_back(key);
    if (key == "planes") {
      planes_text = value;
    } else if (key == "port") {
      if (!parse_u16(value, spec.port)) return "port=" + value + " is not a UDP port (1-65535)";
    } else if (key == "ev-ports" && !is_peer) {
      if (!parse_u16(value, spec.ev_port_base))
        return "ev-ports=" + value + " is not a UDP port (1-65535)";
    } else if (key == "drop" && !is_peer) {
      char* end = nullptr;
      spec.drop = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(spec.drop >= 0 && spec.drop < 1))
        return "drop=" + value + " is not a fraction in [0, 1)";
    } else if (key == "backend" && !is_peer) {
      auto backend = io::parse_backend(value);
      if (!backend.ok()) return "backend=" + value + ": " + backend.error().message;
      spec.backend = backend.value();
    } else if (key == "path-policy" && !is_peer) {
      if (!parse_path_policy(value, spec.path_policy))
        return "path-policy=" + value + ": one of " + path_policy_name_list();
    } else if (key == "secure" && !is_peer) {
      if (!parse_secure_mode(value, spec.secure))
        return "secure=" + value + ": one of off, auth, encrypt";
    } else if (key == "key-file" && !is_peer) {
      if (value.empty()) return "key-file= needs a path";
      spec.key_file = value;
    } else if (key == "busy-poll-us" && !is_peer) {
      if (!parse_busy_poll_us(value, spec.busy_poll_us))
        return "busy-poll-us=" + value + " is not a whole number of microseconds in 0.." +
               std::to_string(kMaxBusyPollUs);
    } else if (key == "srv6" && !is_peer) {
      auto paths = io::parse_srv6_paths(value);
      if (!paths.ok()) return "srv6=" + value + ": " + paths.error().message;
      spec.srv6_paths = paths.value();
    } else {
      return "unknown setting '" + item + "' (known: planes=, port=" +
             (is_peer ? ""
                      : ", ev-ports=, drop=, backend=, path-policy=, secure=, key-file=, srv6=, "
                        "busy-poll-us=") +
             ")";
    }
  }
  if (planes_text.empty()) return "'" + name + "' needs planes=<ip>[,<ip>...]";
  if (spec.secure != SecureMode::kOff && spec.key_file.empty())
    return "secure=" + std::string(to_string(spec.secure)) +
           " needs key-file=<path> (the pre-shared key both ends hold)";
  return parse_planes(planes_text, spec);
}

}  // namespace

DeviceConfig parse_device_config(const std::string& text, const std::string& source) {
  DeviceConfig config;
  config.source = source;
  std::string normalized = text;
  for (char& c : normalized)
    if (c == ';') c = '\n';
  std::istringstream in(normalized);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string entry = trim(line.substr(0, line.find('#')));
    if (entry.empty()) continue;
    DeviceSpec spec;
    bool is_peer = false;
    const std::string error = parse_entry(entry, spec, is_peer);
    if (!error.empty()) {
      config.error = source + ": entry " + std::to_string(number) + " ('" + entry + "'): " + error;
      config.devices.clear();
      return config;
    }
    for (const DeviceSpec& d : config.devices)
      if (!is_peer && d.name == spec.name) {
        config.error = source + ": device '" + spec.name + "' is defined twice";
        config.devices.clear();
        return config;
      }
    (is_peer ? config.peers : config.devices).push_back(spec);
  }
  return config;
}

const DeviceConfig& device_config() {
  static const DeviceConfig config = [] {
    DeviceConfig c;
    if (const char* inline_text = std::getenv("MRC_DEVICES");
        inline_text != nullptr && *inline_text) {
      c = parse_device_config(inline_text, "MRC_DEVICES");
    } else {
      const char* env_path = std::getenv("MRC_CONFIG");
      const std::string path =
          env_path != nullptr && *env_path ? env_path : "/etc/mrc/devices.conf";
      std::ifstream file(path);
      if (file) {
        std::stringstream buffer;
        buffer << file.rdbuf();
        c = parse_device_config(buffer.str(), path);
      } else if (env_path != nullptr && *env_path) {
        c.error = "MRC_CONFIG=" + path + ": cannot read the file";
      } else {  // no configuration anywhere: say where one goes, once
        std::fprintf(stderr,
                     "mrc: no software devices configured: set MRC_DEVICES (for example "
                     "MRC_DEVICES=\"mrc0 planes=127.0.0.1\"), MRC_CONFIG=FILE or write %s "
                     "(docs/OCP-COMPAT.md)\n",
                     path.c_str());
      }
    }
    if (!c.error.empty())
      std::fprintf(stderr, "mrc: software devices unavailable: %s\n", c.error.c_str());
    return c;
  }();
  return config;
}

bool gid_ipv4(const uint8_t (&gid)[16], uint32_t& ipv4) {
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid, kMapped, sizeof kMapped) != 0) return false;
  std::memcpy(&ipv4, gid + 12, 4);
  return true;
}

std::string gid_text(const uint8_t (&gid)[16]) {
  uint32_t ipv4 = 0;
  if (gid_ipv4(gid, ipv4)) return io::address_text(io::SocketAddress::ipv4(in_addr{ipv4}, 0));
  in6_addr ipv6{};
  std::memcpy(ipv6.s6_addr, gid, 16);
  return io::address_text(io::SocketAddress::ipv6(ipv6, 0));
}

std::optional<DeviceSpec> find_peer_by_gid(const DeviceConfig& config, const uint8_t (&gid)[16]) {
  uint32_t ipv4 = 0;
  if (gid_ipv4(gid, ipv4)) return find_peer(config, ipv4);
  for (const auto* list : {&config.devices, &config.peers})
    for (const DeviceSpec& spec : *list)
      for (const io::PlaneAddress& a : spec.planes)
        if (a.v6 && std::memcmp(a.address6.s6_addr, gid, 16) == 0) return spec;
  return std::nullopt;
}

std::optional<DeviceSpec> find_peer(const DeviceConfig& config, uint32_t ipv4) {
  for (const auto* list : {&config.devices, &config.peers})
    for (const DeviceSpec& spec : *list)
      for (const io::PlaneAddress& a : spec.planes)
        if (!a.v6 && a.address.s_addr == ipv4) return spec;
  return std::nullopt;
}

bool plane_gid(const DeviceSpec& spec, int port, int index, uint8_t (&gid)[16]) {
  if (port < 1 || port > static_cast<int>(spec.planes.size()) || index < 0 || index > 3)
    return false;
  std::memset(gid, 0, sizeof gid);
  const io::PlaneAddress& plane = spec.planes[port - 1];
  if (plane.v6) {  // the address itself (indices 2, 3); link-local: fe80::/64 + its low 64 bits
    std::memcpy(gid, plane.address6.s6_addr, 16);
    if (index < 2) {
      std::memset(gid, 0, 8);
      gid[0] = 0xfe;
      gid[1] = 0x80;
    }
    return true;
  }
  const uint32_t ip = plane.address.s_addr;  // network order
  const auto* b = reinterpret_cast<const uint8_t*>(&ip);
  if (index < 2) {
    // fe80::/64 with the EUI-64 interface id of a locally administered MAC 02:00:<ipv4>.
    const uint8_t link_local[16] = {0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                                    0x00, 0x00, b[0], 0xff, 0xfe, b[1], b[2], b[3]};
    std::memcpy(gid, link_local, 16);
  } else {
    gid[10] = 0xff;
    gid[11] = 0xff;
    std::memcpy(gid + 12, b, 4);
  }
  return true;
}

}  // namespace mrc::ocp
