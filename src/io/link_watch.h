// LinkWatch: when the kernel's interfaces may have changed, so that the datapath re-reads them
// (getifaddrs) only then. It listens to rtnetlink's link and address groups: the kernel sends a
// message for every interface that goes up or down, loses its carrier or gains or loses an
// address. Reading the interface list costs tens of microseconds (a netlink dump), so reading it
// on a timer (every 20 ms) put that stall into one round trip in a few hundred of a
// ping-pong; the events cost nothing while nothing changes. The socket is drained when epoll
// says it is readable, and every 20 ms otherwise (a busy datapath that never sleeps in epoll
// still sees a change within 20 ms, for one non-blocking read). Without the socket (refused),
// changed() says yes every 20 ms, as before.
#pragma once

#include "mrc/types.hpp"

namespace mrc::io {

class LinkWatch {
 public:
  LinkWatch();
  ~LinkWatch();
  LinkWatch(const LinkWatch&) = delete;
  LinkWatch& operator=(const LinkWatch&) = delete;

  // The socket to watch for reading (epoll), or -1 without one.
  int fd() const { return fd_; }
  // True the first time, and whenever the interfaces may have changed since the last true:
  // an event arrived, events were lost (the socket's buffer overflowed), or, without a socket,
  // kPoll passed. `readable`: epoll reported the socket readable.
  bool changed(Instant now, bool readable);
  static constexpr Duration kPoll = Duration::from_ms(20);

 private:
  bool drain();  // reads every waiting message; true if there was one or some were lost
  int fd_ = -1;
  bool first_ = true;
  Instant next_poll_{0};
};

}  // namespace mrc::io
