// LinkWatch: rtnetlink link and address events (link_watch.h).
#include "io/link_watch.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace mrc::io {

LinkWatch::LinkWatch() {
  fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd_ < 0) return;
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

LinkWatch::~LinkWatch() {
  if (fd_ >= 0) close(fd_);
}

bool LinkWatch::changed(Instant now, bool readable) {
  if (first_) {
    first_ = false;
    next_poll_ = now + kPoll;
    if (fd_ >= 0) (void)drain();  // what came before the first read is in it
    return true;
  }
  if (!readable && now < next_poll_) return false;
  next_poll_ = now + kPoll;
  return fd_ < 0 || drain();
}

bool LinkWatch::drain() {
  alignas(nlmsghdr) char buffer[8192];
  bool any = false;
  for (;;) {
    const ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
      any = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // ENOBUFS: the kernel dropped events for us; whatever they said, read the interfaces.
    return any || (n < 0 && errno == ENOBUFS);
  }
}

}  // namespace mrc::io
