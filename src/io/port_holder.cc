// Who holds a local UDP port (see port_holder.h).
#include "io/port_holder.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace mrc::io {

namespace {

// The inodes of the UDP sockets bound to `a`'s address or to the wildcard on its port. A line
// of /proc/net/udp (udp6 for IPv6): "sl: local_ip:port remote_ip:port st tx:rx tr:when
// retrnsmt uid timeout inode ..."; an address is its raw 32-bit words, each printed as one hex
// number, so they compare equal to the address's words in memory whatever the byte order.
std::vector<unsigned long long> bound_inodes(const PlaneAddress& a) {
  std::ifstream table(a.v6 ? "/proc/net/udp6" : "/proc/net/udp");
  const size_t words = a.v6 ? 4 : 1;
  uint32_t want[4] = {};
  std::memcpy(want,
              a.v6 ? static_cast<const void*>(a.address6.s6_addr)
                   : static_cast<const void*>(&a.address.s_addr),
              words * 4);
  std::string line;
  std::getline(table, line);  // the column names
  std::vector<unsigned long long> inodes;
  while (std::getline(table, line)) {
    char ip[33] = {};
    unsigned port = 0;
    unsigned long long inode = 0;
    if (std::sscanf(line.c_str(),
                    " %*u: %32[0-9A-Fa-f]:%X %*X:%*X %*X %*X:%*X %*X:%*X %*X %*u %*d %llu", ip,
                    &port, &inode) != 3 ||
        std::strlen(ip) != words * 8)
      continue;
    bool same = true, wildcard = true;
    for (size_t w = 0; w < words; ++w) {
      const auto value = static_cast<uint32_t>(std::stoul(std::string(ip + w * 8, 8), nullptr, 16));
      same = same && value == want[w];
      wildcard = wildcard && value == 0;
    }
    if (port == a.port && (same || wildcard) && inode != 0) inodes.push_back(inode);
  }
  return inodes;
}

// Whether one of `pid`'s descriptors is the socket `link` ("socket:[inode]") names.
bool holds(const std::string& pid, const std::string& link) {
  const std::string dir = "/proc/" + pid + "/fd";
  std::unique_ptr<DIR, int (*)(DIR*)> fds(opendir(dir.c_str()), closedir);
  if (!fds) return false;  // another user's process, or gone
  char target[64];
  while (const dirent* fd = readdir(fds.get())) {
    const ssize_t n = readlink((dir + "/" + fd->d_name).c_str(), target, sizeof target - 1);
    if (n > 0 && link.compare(0, std::string::npos, target, static_cast<size_t>(n)) == 0)
      return true;
  }
  return false;
}

}  // namespace

std::string describe_process(pid_t pid) {
  if (pid == getpid()) return "this process";
  std::string text = "process " + std::to_string(pid);
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (std::getline(comm, name) && !name.empty()) text += " (" + name + ")";
  return text;
}

namespace {

// Whether one of this process's own UDP sockets is bound to `a` (or to 0.0.0.0 on its port),
// asked of each socket descriptor directly: /proc/net/udp is read while other processes open
// and close sockets, and such a read can pass over a line.
bool this_process_binds(const PlaneAddress& a) {
  std::unique_ptr<DIR, int (*)(DIR*)> fds(opendir("/proc/self/fd"), closedir);
  if (!fds) return false;
  while (const dirent* entry = readdir(fds.get())) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || fd < 0) continue;
    int type = 0;
    socklen_t type_length = sizeof type;
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 ||
        type != SOCK_DGRAM)
      continue;
    sockaddr_in bound{};
    socklen_t length = sizeof bound;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&bound), &length) != 0 ||
        bound.sin_family != AF_INET)
      continue;
    if (ntohs(bound.sin_port) == a.port &&
        (bound.sin_addr.s_addr == a.address.s_addr || bound.sin_addr.s_addr == INADDR_ANY))
      return true;
  }
  return false;
}

}  // namespace

pid_t udp_port_holder(const PlaneAddress& a) {
  if (this_process_binds(a)) return getpid();
  std::vector<std::string> links;
  for (unsigned long long inode : bound_inodes(a))
    links.push_back("socket:[" + std::to_string(inode) + "]");
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc || links.empty()) return 0;
  while (const dirent* entry = readdir(proc.get())) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    for (const std::string& link : links)
      if (holds(entry->d_name, link)) return static_cast<pid_t>(pid);
  }
  return 0;
}

}  // namespace mrc::io
