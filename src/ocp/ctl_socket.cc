// Control socket paths and connection (see ctl_socket.h).
#include "ocp/ctl_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mrc::ocp {

std::string ctl_socket_dir() {
  if (const char* dir = std::getenv("MRC_CTL_DIR"); dir != nullptr && *dir) return dir;
  if (geteuid() == 0) return "/run/mrc";
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run != nullptr && *run)
    return std::string(run) + "/mrc";
  return "/tmp/mrc-" + std::to_string(getuid());
}

std::string ctl_socket_path(const std::string& device) {
  return ctl_socket_dir() + "/" + device + ".sock";
}

std::string ctl_prepare_dir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return dir + ": " + std::strerror(errno);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + ": not a directory";
  if (st.st_uid != geteuid()) return dir + ": belongs to another user";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return dir + ": writable by others (chmod 700 it)";
  return "";
}

int ctl_connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace mrc::ocp
