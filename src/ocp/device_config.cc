// Parsing of the software devices' configuration (see device_config.h): a few key=value
// entries, validated with messages that name the source, the entry and the field.
#include "ocp/device_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "wire/srv6.h"

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

const host::Spelling kEntry{host::kDoorEntry, ""};

// A peer's settings: planes= (addresses), port= and threads= (its device's); returns an error
// message or "".
std::string parse_peer_item(const std::string& key, const std::string& value, DeviceSpec& spec) {
  if (key == "threads") {
    auto set = host::set(spec.host, key, value, kEntry);
    return set.ok() ? "" : set.error().message;
  }
  if (key == "planes") {
    std::istringstream list(value);
    spec.host.context.planes.clear();
    for (std::string a; std::getline(list, a, ',');) spec.host.context.planes.push_back(a);
    return "";
  }
  if (key == "port")
    return parse_u16(value, spec.host.context.port)
               ? ""
               : "port=" + value + " is not a UDP port (1-65535)";
  return "unknown setting '" + key + "=" + value + "' (known for a peer: planes=, port=, threads=)";
}

// A device's: path-policy=, or a host setting (host/options.h); an error message or "".
std::string parse_device_item(const std::string& key, const std::string& value, DeviceSpec& spec) {
  if (key == "path-policy") {
    const auto policy = parse_path_policy(value);
    if (!policy.ok()) return "path-policy=" + value + ": one of " + path_policy_name_list();
    spec.path_policy = policy.value();
    return "";
  }
  auto set = host::set(spec.host, key, value, kEntry);
  return set.ok() ? "" : set.error().message + (host::find_setting(key) ? "" : ", path-policy=");
}

// The entry's planes as addresses on its port (the port of an address is the entry's), at
// most 16; an error message or "".
std::string resolve_planes(DeviceSpec& spec) {
  for (const std::string& text : spec.host.context.planes) {
    auto parsed = io::parse_plane_address(text, spec.host.context.port);
    if (!parsed.ok()) return parsed.error().message;
    parsed.value().port = spec.host.context.port;
    spec.planes.push_back(parsed.value());
  }
  if (spec.planes.size() > 16) return "at most 16 planes per device";
  if (!spec.host.context.srv6_paths.empty())  // checked by host::check
    spec.srv6_paths = wire::parse_srv6_paths(spec.host.context.srv6_paths).value();
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
  // Keys first: a repeated key would silently overwrite the first (a ',' typed for a ';'
  // between two devices makes the second device's planes= a repeat of the first's), and that
  // is what to say of it, before what is wrong with either value.
  std::vector<std::pair<std::string, std::string>> items;
  for (std::string item; in >> item;) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const host::Setting* setting = host::find_setting(key);  // an older name is the same key
    const std::string_view same = setting != nullptr ? setting->key : key;
    for (const auto& seen : items) {
      const host::Setting* other = host::find_setting(seen.first);
      if ((other != nullptr ? other->key : std::string_view(seen.first)) == same)
        return "'" + std::string(same) +
               "=' is given twice (entries are separated by ';' or new lines)";
    }
    items.emplace_back(key, eq == std::string::npos ? "" : item.substr(eq + 1));
  }
  for (const auto& [key, value] : items) {
    std::string error =
        is_peer ? parse_peer_item(key, value, spec) : parse_device_item(key, value, spec);
    if (!error.empty()) return error;
  }
  if (spec.host.context.planes.empty()) return "'" + name + "' needs planes=<ip>[,<ip>...]";
  if (!is_peer) {
    auto checked = host::check(spec.host, kEntry);
    if (!checked.ok()) return checked.error().message;
  }
  return resolve_planes(spec);
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
