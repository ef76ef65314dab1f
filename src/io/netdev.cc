#include "io/netdev.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/errno_map.h"

namespace mrc::io {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool parse_mac(const std::string& text, wire::MacAddress& mac) {
  unsigned b[6];
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
    return false;
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(b[i]);
  return true;
}

uint32_t count_rx_queues(const std::string& ifname) {
  uint32_t n = 0;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/sys/class/net/" + ifname + "/queues", ec))
    if (e.path().filename().string().rfind("rx-", 0) == 0) ++n;
  return n == 0 ? 1 : n;
}

// The gateway towards `destination` on `ifname` from the main table (longest prefix), or the
// destination itself when it is directly connected (or no route names the interface).
uint32_t next_hop(const std::string& ifname, uint32_t destination) {
  std::ifstream in("/proc/net/route");
  std::string line;
  std::getline(in, line);  // header
  uint32_t best_gateway = destination;
  int best_bits = -1;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(fields >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask) ||
        iface != ifname)
      continue;
    const uint32_t d = static_cast<uint32_t>(std::stoul(dest, nullptr, 16));
    const uint32_t m = static_cast<uint32_t>(std::stoul(mask, nullptr, 16));
    const uint32_t g = static_cast<uint32_t>(std::stoul(gateway, nullptr, 16));
    const int bits = __builtin_popcount(m);
    if ((destination & m) == d && bits > best_bits) {
      best_bits = bits;
      best_gateway = g != 0 ? g : destination;
    }
  }
  return best_gateway;
}

// The kernel's complete neighbour entry for `address` on `ifname`.
bool arp_entry(const std::string& ifname, uint32_t address, wire::MacAddress& mac) {
  std::ifstream in("/proc/net/arp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string ip, type, flags, hw, mask, device;
    if (!(fields >> ip >> type >> flags >> hw >> mask >> device) || device != ifname) continue;
    in_addr a{};
    if (inet_pton(AF_INET, ip.c_str(), &a) != 1 || a.s_addr != address) continue;
    if ((std::stoul(flags, nullptr, 16) & 0x2) == 0) return false;  // ATF_COM: not resolved yet
    return parse_mac(hw, mac);
  }
  return false;
}

std::string driver_of(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq request{};
  std::strncpy(request.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  request.ifr_data = reinterpret_cast<char*>(&info);
  const bool ok = ioctl(fd, SIOCETHTOOL, &request) == 0;
  close(fd);
  return ok ? std::string(info.driver) : std::string();
}

}  // namespace

Result<NetInterface, Error> interface_of(in_addr address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Err{system_error("getifaddrs", errno)};
  NetInterface out;
  // The interface with this address, else the one whose network holds it (lo holds 127/8).
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const uint32_t a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    const uint32_t m = i->ifa_netmask != nullptr
                           ? reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr
                           : ~0u;
    if (a == address.s_addr) {
      out.name = i->ifa_name;
      break;
    }
    if ((a & m) == (address.s_addr & m) && out.name.empty()) out.name = i->ifa_name;
  }
  freeifaddrs(list);
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &address, text, sizeof text);
  if (out.name.empty()) return fail(Errc::kNotFound, std::string("no interface holds ") + text);
  out.index = static_cast<int>(if_nametoindex(out.name.c_str()));
  const std::string sys = "/sys/class/net/" + out.name;
  parse_mac(read_line(sys + "/address"), out.mac);
  out.mtu = static_cast<uint32_t>(std::strtoul(read_line(sys + "/mtu").c_str(), nullptr, 10));
  out.rx_queues = count_rx_queues(out.name);
  out.driver = driver_of(out.name);
  return out;
}

uint32_t smallest_plane_mtu(const std::vector<std::string>& planes) {
  uint32_t smallest = ~0u;
  for (const std::string& p : planes) {
    in_addr a{};
    if (inet_pton(AF_INET, p.c_str(), &a) != 1) return 0;
    auto nic = interface_of(a);
    if (!nic.ok() || nic.value().mtu == 0) return 0;
    smallest = std::min(smallest, nic.value().mtu);
  }
  return planes.empty() ? 0 : smallest;
}

uint32_t auto_payload_bytes(const std::vector<std::string>& planes) {
  const uint32_t mtu = smallest_plane_mtu(planes);
  if (mtu == 0) return 4096;
  for (const uint32_t payload : {8192u, 4096u}) {
    if (mtu >= payload + kPlaneHeaderBytes) return payload;
  }
  return 1024;
}

Result<uint32_t, Error> choose_payload_bytes(uint32_t asked,
                                             const std::vector<std::string>& planes) {
  if (asked == 0) return auto_payload_bytes(planes);
  const uint32_t mtu = smallest_plane_mtu(planes);
  if (mtu == 0 || asked + kPlaneHeaderBytes <= mtu) return asked;
  return fail(Errc::kInvalidArgument, std::to_string(asked) +
                                          "-byte payloads do not fit the planes' interfaces (MTU " +
                                          std::to_string(mtu) + "): at most " +
                                          std::to_string(mtu - kPlaneHeaderBytes) + " bytes");
}

Neighbours::Neighbours(std::string ifname, in_addr local)
    : ifname_(std::move(ifname)), local_(local) {}

Neighbours::Entry& Neighbours::entry(uint32_t address) {
  for (Entry& e : entries_)
    if (e.address == address) return e;
  if (entries_.size() < kMaxEntries) {
    entries_.push_back(Entry{address});
    return entries_.back();
  }
  Entry& e = entries_[next_replace_];
  next_replace_ = (next_replace_ + 1) % kMaxEntries;
  e = Entry{address};
  return e;
}

// Reads the kernel's answer into `e`.
bool Neighbours::read_kernel(Entry& e) {
  return e.known = arp_entry(ifname_, next_hop(ifname_, e.address), e.mac);
}

// Has the kernel send a datagram towards the entry's address, so that it resolves the next hop.
void Neighbours::make_kernel_resolve(const Entry& e) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr = local_;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = e.address;
  to.sin_port = htons(9);  // discard
  // Unbound, the probe still leaves (from the routing table's address): best effort either way.
  (void)bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from);
  (void)sendto(fd, "", 0, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  close(fd);
}

bool Neighbours::lookup(in_addr destination, Instant now, wire::MacAddress& mac) {
  Entry& e = entry(destination.s_addr);
  if (!e.known && now - e.last_try >= kRetryInterval) {
    e.last_try = now;
    if (!read_kernel(e)) make_kernel_resolve(e);
  }
  if (e.known) mac = e.mac;
  return e.known;
}

// Asks the kernel once, then reads its answer every 5 ms.
bool Neighbours::resolve(in_addr destination, Duration timeout) {
  Entry& first = entry(destination.s_addr);
  if (first.known || read_kernel(first)) return true;
  make_kernel_resolve(first);
  const timespec step{0, 5'000'000};
  for (int64_t waited = 0; waited <= timeout.ns; waited += step.tv_nsec) {
    nanosleep(&step, nullptr);
    if (read_kernel(entry(destination.s_addr))) return true;
  }
  return false;
}

void Neighbours::learn(in_addr source, const wire::MacAddress& mac) {
  // Per received frame: most come from the peer the last one came from.
  if (last_learned_ < entries_.size() && entries_[last_learned_].address == source.s_addr &&
      entries_[last_learned_].mac == mac)
    return;
  Entry& e = entry(source.s_addr);
  e.mac = mac;
  e.known = true;
  last_learned_ = static_cast<size_t>(&e - entries_.data());
}

}  // namespace mrc::io
