// Who holds a local UDP port (see port_holder.h).
#include "io/port_holder.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

namespace mrc::io {

namespace {

// The inode of a UDP socket bound to `a`'s address or to 0.0.0.0 on its port; 0 if none. A line
// of /proc/net/udp: "sl: local_ip:port remote_ip:port st tx:rx tr:when retrnsmt uid timeout
// inode ..."; the addresses are the raw 32-bit network-order value printed as one hex number,
// so they compare equal to in_addr::s_addr whatever the byte order.
unsigned long long bound_inode(const PlaneAddress& a) {
  std::ifstream table("/proc/net/udp");
  std::string line;
  std::getline(table, line);  // the column names
  while (std::getline(table, line)) {
    unsigned ip = 0, port = 0;
    unsigned long long inode = 0;
    if (std::sscanf(line.c_str(), " %*u: %X:%X %*X:%*X %*X %*X:%*X %*X:%*X %*X %*u %*d %llu", &ip,
                    &port, &inode) != 3)
      continue;
    if (port == a.port && (ip == a.address.s_addr || ip == 0) && inode != 0) return inode;
  }
  return 0;
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

pid_t udp_port_holder(const PlaneAddress& a) {
  const unsigned long long inode = bound_inode(a);
  if (inode == 0) return 0;
  const std::string link = "socket:[" + std::to_string(inode) + "]";
  // This process first: a socket shared with a child it forked is this process's to move.
  if (holds(std::to_string(getpid()), link)) return getpid();
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) return 0;
  while (const dirent* entry = readdir(proc.get())) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (holds(entry->d_name, link)) return static_cast<pid_t>(pid);
  }
  return 0;
}

}  // namespace mrc::io
