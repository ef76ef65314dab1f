// The connection manager: how a link's two ends meet (link.h).
//
// Each endpoint listens on a TCP port of its first plane's address; its name carries that
// address and port. A sender's first message to a peer creates a TxLink: a queue pair, a
// staging region, and a TCP connection to the peer's listener, over which it sends one line
//   mrcfi1 hello <sender name hex> <staging address> <staging rkey> <slots> <slot bytes>
//   <ConnectionInfo>
// The receiver creates the RxLink (queue pair, ring), connects its queue pair and answers
//   mrcfi1 ok <ring address> <ring rkey> <ConnectionInfo>      or      mrcfi1 error <why>
// and the sender connects its queue pair and starts sending. The TCP connection stays open for
// the link's life: its end tells either side the other is gone. A set-up that does not finish
// within FI_MRC_CONNECT_TIMEOUT_MS fails the link, and with it every message queued on it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "fabric/provider.h"

namespace mrc::fabric {
namespace {

constexpr size_t kMaxLine = 4096;
constexpr size_t kMaxAccepting = 1024;
constexpr int64_t kClosedGraceMs = 500;

int64_t now_ms() {
  return now_ns() / 1000000;
}

// A sockaddr for `name`'s listener.
socklen_t to_sockaddr(const EndpointName& name, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof out);
  if (name.family == 4) {
    auto& a = reinterpret_cast<sockaddr_in&>(out);
    a.sin_family = AF_INET;
    a.sin_port = name.port;
    std::memcpy(&a.sin_addr, name.address, 4);
    return sizeof a;
  }
  auto& a = reinterpret_cast<sockaddr_in6&>(out);
  a.sin6_family = AF_INET6;
  a.sin6_port = name.port;
  std::memcpy(&a.sin6_addr, name.address, 16);
  return sizeof a;
}

// The fewest exponential retries that make `c`'s retry budget at least `ms` (Requester::rto: the
// ACK timeout for the first retry_linear + 1 tries, then doubling; the collectives' rule,
// coll::retry_exp_for).
uint8_t retry_exp_for(const QpConfig& c, int64_t ms) {
  uint8_t e = 0;
  for (; e < 20; ++e) {
    const int64_t tries = c.retry_linear + 1 + ((int64_t{2} << e) - 2);
    if (c.ack_timeout().ns / 1000 * tries / 1000 >= ms) break;
  }
  return e;
}

QpConfig link_qp_config(uint32_t slots, uint32_t mtu_bytes, int peer_timeout_ms) {
  QpConfig c;
  c.set_mtu(mtu_bytes);
  // A peer whose datapath acknowledges nothing for FI_MRC_PEER_TIMEOUT_MS is gone. QpConfig's own
  // budget (about 1.1 s) ends links to ranks that a loaded host merely left unscheduled that long,
  // and their sends fail with FI_EIO (MPI jobs abort on it).
  c.retry_exp = retry_exp_for(c, peer_timeout_ms);
  c.max_recv_wr = slots + 16 + kMaxRendezvous;  // data or credits, and CTSs
  c.max_send_wr = slots + 16 + kMaxRendezvous;
  c.max_wimm = static_cast<uint16_t>(slots + 16);
  c.max_wimm_dest = static_cast<uint16_t>(slots + 16);
  return c;
}

// A queue pair of the domain (in RESET), and its registered region.
Result<Qp*, Error> new_qp(Domain& d, uint32_t slots, Registered& region, size_t bytes) {
  region.length = bytes;
  region.bytes = static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
  if (region.bytes == nullptr)
    return fail(Errc::kResourceExhausted, "out of memory for a link's slots");
  std::memset(region.bytes, 0, bytes);
  auto mr =
      d.context->register_memory(d.pd, region.bytes, bytes, kAccessLocalWrite | kAccessRemoteWrite);
  if (!mr.ok()) return Err{mr.error()};
  region.mr = mr.value();
  region.context = d.context.get();
  return d.context->create_qp(
      d.pd, d.cq, d.cq,
      link_qp_config(slots, static_cast<uint32_t>(d.config.mtu_bytes), d.config.peer_timeout_ms));
}

// Connects `qp` to the peer's and posts the receives its immediates consume (one per slot,
// spares for credits, which come at most one per slot, and one per rendezvous index for CTSs).
Result<Ok, Error> connect_qp(Qp& qp, const ConnectionInfo& peer, uint32_t slots) {
  if (auto r = qp.connect(peer); !r.ok()) return r;
  for (uint32_t i = 0; i < slots + 8 + kMaxRendezvous; ++i)
    if (auto r = qp.post_recv(0); !r.ok()) return r;
  return Ok{};
}

// Writes what the outbox holds; false if the socket failed.
bool flush(Domain& d, Control& c, WatchTag* tag) {
  while (!c.outbox.empty()) {
    const ssize_t n = ::send(c.fd, c.outbox.data(), c.outbox.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) return false;
    c.outbox.erase(0, static_cast<size_t>(n));
  }
  d.watch(c.fd, tag, !c.outbox.empty());
  return true;
}

// Reads into the inbox. Returns a whole line when one is there; `closed` when the peer is gone.
std::optional<std::string> read_line(Control& c, bool& closed) {
  char buf[1024];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.inbox.append(buf, static_cast<size_t>(n));
      if (c.inbox.size() > kMaxLine) closed = true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    closed = true;
    break;
  }
  const auto end = c.inbox.find('\n');
  if (end == std::string::npos) return std::nullopt;
  std::string line = c.inbox.substr(0, end);
  c.inbox.erase(0, end + 1);
  return line;
}

void close_control(Domain& d, Control& c) {
  if (c.fd < 0) return;
  d.unwatch(c.fd);
  close(c.fd);
  c.fd = -1;
}

std::string peer_text(const EndpointName& n) {
  return to_string(n);
}

// The accepted connection `link`, taken out of the endpoint's accepting list.
std::unique_ptr<RxLink> take_accepted(Endpoint& ep, RxLink* link) {
  for (auto it = ep.accepting.begin(); it != ep.accepting.end(); ++it) {
    if (it->get() != link) continue;
    auto owned = std::move(*it);
    ep.accepting.erase(it);
    return owned;
  }
  return nullptr;
}

}  // namespace

std::optional<EndpointName> name_at(const std::string& address, uint16_t port) {
  EndpointName name;
  if (inet_pton(AF_INET, address.c_str(), name.address) == 1)
    name.family = 4;
  else if (inet_pton(AF_INET6, address.c_str(), name.address) == 1)
    name.family = 6;
  else
    return std::nullopt;
  name.port = port;
  return name;
}

int open_listener(Endpoint& ep, const EndpointName* source) {
  const std::string& first = ep.domain->planes.front();
  const auto at = source != nullptr ? std::optional(*source) : name_at(first, 0);
  if (!at) return -FI_EINVAL;
  EndpointName name = *at;
  sockaddr_storage sa{};
  const socklen_t len = to_sockaddr(name, sa);
  const int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  // An endpoint opened again at the address of one just closed (fi_av_xfer does) must not wait
  // out the old connections' TIME_WAIT; Linux still refuses two listeners on one port.
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd, 128) != 0) {
    const int e = errno;
    warn("cannot listen on " + to_string(name) + ": " + std::strerror(e));
    close(fd);
    return -e;
  }
  socklen_t got = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &got);
  name.port = sa.ss_family == AF_INET ? reinterpret_cast<sockaddr_in&>(sa).sin_port
                                      : reinterpret_cast<sockaddr_in6&>(sa).sin6_port;
  // A wildcard source (fi_getinfo's FI_SOURCE with a service and no node) listens on every
  // address; peers are told the first plane's.
  static constexpr uint8_t kAny[16] = {};
  if (std::memcmp(name.address, kAny, sizeof kAny) == 0) {
    if (const auto plane = name_at(first, name.port)) name = *plane;
  }
  std::random_device random;
  name.nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
  ep.name = name;
  ep.listen_fd = fd;
  ep.domain->watch(fd, &ep.listen_tag, false);
  return 0;
}

namespace {

std::string hello_line(const TxLink& link) {
  std::ostringstream o;
  o << "mrcfi1 hello " << to_hex(link.ep->name) << ' '
    << reinterpret_cast<uint64_t>(link.staging.bytes) << ' ' << link.staging.mr.rkey << ' '
    << link.slots << ' ' << link.slot_bytes << ' ' << link.ep->domain->config.mtu_bytes << ' '
    << link.qp->local_info().to_string() << '\n';
  return o.str();
}

// A new link to `peer`: queue pair, staging slots, and the TCP connection under way.
std::unique_ptr<TxLink> start_link(Endpoint& ep, const EndpointName& peer) {
  Domain& d = *ep.domain;
  auto link = std::make_unique<TxLink>();
  link->ep = &ep;
  link->peer = peer;
  link->slots = static_cast<uint32_t>(d.config.slots);
  link->slot_bytes = static_cast<uint32_t>(d.config.slot_bytes);
  link->staging_busy.assign(link->slots, 0);
  link->deadline_ms = now_ms() + d.config.connect_timeout_ms;
  auto qp = new_qp(d, link->slots, link->staging,
                   size_t{link->slots} * link->slot_bytes + size_t{kMaxRendezvous} * kCtsBytes);
  if (!qp.ok()) {
    link->state = TxLink::State::kFailed;
    link->failure = "cannot create a queue pair to " + peer_text(peer) + ": " + qp.error().message;
    warn(link->failure);
    return link;
  }
  link->qp = qp.value();
  d.tx_by_qpn[link->qp->qpn()] = link.get();
  sockaddr_storage sa{};
  const socklen_t len = to_sockaddr(peer, sa);
  link->control.fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (link->control.fd < 0 ||
      (connect(link->control.fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 &&
       errno != EINPROGRESS)) {
    link->state = TxLink::State::kFailed;
    link->failure = "cannot connect to " + peer_text(peer) + ": " + std::strerror(errno);
    warn(link->failure);
    return link;
  }
  link->control.outbox = hello_line(*link);
  d.watch(link->control.fd, &link->tag, true);
  return link;
}

}  // namespace

TxLink* tx_link_to(Endpoint& ep, uint64_t fi_addr, int* err) {
  if (ep.av == nullptr || !ep.av->live(fi_addr)) {
    *err = -FI_EINVAL;
    return nullptr;
  }
  if (fi_addr < ep.tx_by_addr.size() && ep.tx_by_addr[fi_addr] != nullptr)
    return ep.tx_by_addr[fi_addr];
  const EndpointName& peer = ep.av->names[fi_addr];
  std::array<uint8_t, sizeof(EndpointName)> key;
  std::memcpy(key.data(), &peer, sizeof peer);
  auto it = ep.tx_links.find(key);
  if (it == ep.tx_links.end()) it = ep.tx_links.emplace(key, start_link(ep, peer)).first;
  if (ep.tx_by_addr.size() <= fi_addr) ep.tx_by_addr.resize(fi_addr + 1, nullptr);
  ep.tx_by_addr[fi_addr] = it->second.get();
  return it->second.get();
}

namespace {

// The receiver's answer to our hello.
void take_answer(TxLink& link, const std::string& line) {
  std::istringstream in(line);
  std::string magic, verdict;
  in >> magic >> verdict;
  if (magic != "mrcfi1" || verdict != "ok") {
    const auto at = line.find(verdict);
    fail_link(link, peer_text(link.peer) + " refused the link: " +
                        (verdict == "error" ? line.substr(at + verdict.size() + 1)
                                            : "not an mrc provider"));
    return;
  }
  in >> link.ring_address >> link.ring_rkey;
  std::string rest;
  std::getline(in, rest);
  auto info = ConnectionInfo::parse(rest.empty() ? rest : rest.substr(1));
  if (!in || !info.ok()) {
    fail_link(link, peer_text(link.peer) + " answered a malformed line");
    return;
  }
  if (auto r = connect_qp(*link.qp, info.value(), link.slots); !r.ok()) {
    fail_link(link, "cannot connect the queue pair to " + peer_text(link.peer) + ": " +
                        r.error().message);
    return;
  }
  link.state = TxLink::State::kReady;
  link.credits = link.slots;
  pump(link);
}

}  // namespace

void on_tx_control(TxLink& link, uint32_t events) {
  if (link.state == TxLink::State::kFailed || link.control.fd < 0) return;
  Domain& d = *link.ep->domain;
  if (!link.control.connected && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) {
    int error = 0;
    socklen_t len = sizeof error;
    getsockopt(link.control.fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      fail_link(link, "cannot reach " + peer_text(link.peer) + ": " + std::strerror(error));
      return;
    }
    link.control.connected = true;
  }
  if (link.control.connected && !flush(d, link.control, &link.tag)) {
    fail_link(link, "lost the connection to " + peer_text(link.peer));
    return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) return;
  bool closed = false;
  const auto line = read_line(link.control, closed);
  if (line && link.state == TxLink::State::kConnecting) take_answer(link, *line);
  if (!closed || link.state == TxLink::State::kFailed) return;
  if (link.state == TxLink::State::kConnecting) {
    fail_link(link, "the peer " + peer_text(link.peer) +
                        " closed the connection before the link was set up");
    return;
  }
  // The peer is gone, but credits it returned before it went may still be on their way over
  // the planes: the link fails (and with it what is still in flight) after a grace period.
  close_control(d, link.control);
  link.closed_at_ms = now_ms();
}

void on_listener(Endpoint& ep) {
  for (;;) {
    const int fd = accept4(ep.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (ep.accepting.size() >= kMaxAccepting) {
      close(fd);
      continue;
    }
    auto link = std::make_unique<RxLink>();
    link->ep = &ep;
    link->control.fd = fd;
    link->control.connected = true;
    ep.domain->watch(fd, &link->tag, false);
    ep.accepting.push_back(std::move(link));
  }
}

namespace {

// Sets up the receiving end from a hello; the answer line, or an error for the sender.
Result<std::string, Error> accept_hello(RxLink& link, const std::string& line) {
  std::istringstream in(line);
  std::string magic, verb, name_hex;
  uint32_t mtu = 0;
  in >> magic >> verb >> name_hex >> link.staging_address >> link.staging_rkey >> link.slots >>
      link.slot_bytes >> mtu;
  const auto name = name_from_hex(name_hex);
  if (magic != "mrcfi1" || verb != "hello" || !in || !name)
    return fail(Errc::kInvalidArgument, "not an mrc provider hello");
  const auto own_mtu = static_cast<uint32_t>(link.ep->domain->config.mtu_bytes);
  if (mtu != own_mtu)
    return fail(Errc::kInvalidArgument, "the sender sends " + std::to_string(mtu) +
                                            "-byte packets and this endpoint takes " +
                                            std::to_string(own_mtu) +
                                            ": set the same FI_MRC_MTU on every host");
  if (link.slots < 2 || link.slots > kMaxSlots || link.slot_bytes < kMinSlotBytes ||
      link.slot_bytes > kMaxSlotBytes)
    return fail(Errc::kInvalidArgument, "slots or slot size out of range");
  link.peer = *name;
  std::string rest;
  std::getline(in, rest);
  auto info = ConnectionInfo::parse(rest.empty() ? rest : rest.substr(1));
  if (!info.ok()) return Err{info.error()};
  Domain& d = *link.ep->domain;
  auto qp = new_qp(d, link.slots, link.ring,
                   size_t{link.slots} * link.slot_bytes + size_t{kMaxRendezvous} * kCtsBytes);
  if (!qp.ok()) return Err{qp.error()};
  link.qp = qp.value();
  d.rx_by_qpn[link.qp->qpn()] = &link;
  if (auto r = connect_qp(*link.qp, info.value(), link.slots); !r.ok()) return Err{r.error()};
  std::ostringstream o;
  o << "mrcfi1 ok " << reinterpret_cast<uint64_t>(link.ring.bytes) << ' ' << link.ring.mr.rkey
    << ' ' << link.qp->local_info().to_string() << '\n';
  return o.str();
}

}  // namespace

void on_rx_control(RxLink& link, uint32_t events) {
  if (link.control.fd < 0) return;
  Domain& d = *link.ep->domain;
  if (!flush(d, link.control, &link.tag)) {
    close_control(d, link.control);
    return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) return;
  bool closed = false;
  const auto line = read_line(link.control, closed);
  if (line && !link.linked) {
    auto answer = accept_hello(link, *line);
    link.linked = answer.ok();
    link.control.outbox =
        answer.ok() ? answer.value() : "mrcfi1 error " + answer.error().message + "\n";
    if (!answer.ok())
      warn("refused a link from " + to_string(link.peer) + ": " + answer.error().message);
    if (!flush(d, link.control, &link.tag) || !answer.ok()) closed = true;
    if (answer.ok()) link.ep->rx_links.push_back(take_accepted(*link.ep, &link));
  }
  // The link outlives its connection: its last messages may still be in the ring, and are
  // taken for a grace period before what the sender left unfinished fails (check_timeouts).
  if (closed) {
    close_control(d, link.control);
    if (link.linked) link.closed_at_ms = now_ms();
  }
}

void check_timeouts(Domain& d) {
  // The deadlines are hundreds of milliseconds and more: one look every 20 ms is enough, however
  // often the progress thread wakes.
  const int64_t now = now_ms();
  if (now - d.timeouts_checked_ms < 20) return;
  d.timeouts_checked_ms = now;
  for (Endpoint* ep : d.endpoints) {
    // Connections that closed before they became links.
    std::erase_if(ep->accepting, [](const auto& l) { return l->control.fd < 0; });
    for (auto& [key, link] : ep->tx_links)
      if (link->state == TxLink::State::kConnecting && now > link->deadline_ms)
        fail_link(*link, "no answer from " + peer_text(link->peer) +
                             " within FI_MRC_CONNECT_TIMEOUT_MS (" +
                             std::to_string(d.config.connect_timeout_ms) + " ms)");
      else if (link->closed_at_ms != 0 && now > link->closed_at_ms + kClosedGraceMs)
        fail_link(*link, "the peer " + peer_text(link->peer) +
                             " closed its end (it exited or closed the endpoint)");
    for (auto& link : ep->rx_links)
      if (link->closed_at_ms != 0 && now > link->closed_at_ms + kClosedGraceMs) {
        link->closed_at_ms = 0;
        drain(*link);
        abandon(*link, "the sender " + peer_text(link->peer) +
                           " closed its end before finishing the message");
      }
  }
}

namespace {

// FI_MRC_STATS: one line per link on stderr as the endpoint closes.
void print_stats(const char* direction, const EndpointName& peer, const Qp* qp) {
  if (qp == nullptr) return;
  const QpStats s = qp->stats();
  std::fprintf(
      stderr,
      "mrc-fi: link %s %s: data packets sent %llu received %llu, retransmits %llu, timeouts %llu, "
      "tail probes %llu, losses: fast %llu tail %llu timeout %llu\n",
      direction, to_string(peer).c_str(), static_cast<unsigned long long>(s.data_packets_sent),
      static_cast<unsigned long long>(s.data_packets_received),
      static_cast<unsigned long long>(s.retransmits), static_cast<unsigned long long>(s.timeouts),
      static_cast<unsigned long long>(s.tail_probes),
      static_cast<unsigned long long>(s.losses_fast),
      static_cast<unsigned long long>(s.losses_tail),
      static_cast<unsigned long long>(s.losses_timeout));
}

}  // namespace

void close_links(Endpoint& ep) {
  Domain& d = *ep.domain;
  if (d.config.stats) {
    for (auto& [key, link] : ep.tx_links) print_stats("to", link->peer, link->qp);
    for (auto& link : ep.rx_links) print_stats("from", link->peer, link->qp);
    std::fprintf(stderr, "mrc-fi: links dropped for breaking the protocol: %llu\n",
                 static_cast<unsigned long long>(d.links_dropped));
  }
  for (auto& [key, link] : ep.tx_links) {
    close_control(d, link->control);
    if (link->qp != nullptr) d.tx_by_qpn.erase(link->qp->qpn());
  }
  std::erase_if(d.owing, [&](const RxLink* l) { return l->ep == &ep; });
  for (auto* list : {&ep.rx_links, &ep.accepting})
    for (auto& link : *list) {
      close_control(d, link->control);
      if (link->qp != nullptr) d.rx_by_qpn.erase(link->qp->qpn());
    }
  // Their queue pairs go now (the engine never reuses a qpn, so completions of theirs still in
  // the domain's CQ name no other link); the links wait in the graveyard for the progress
  // thread's next round.
  const auto bury = [&](auto& link) {
    if (link->qp != nullptr) (void)d.context->destroy_qp(std::exchange(link->qp, nullptr));
    d.graveyard.push_back(std::move(link));
  };
  for (auto& [key, link] : ep.tx_links) bury(link);
  for (auto* list : {&ep.rx_links, &ep.accepting})
    for (auto& link : *list) bury(link);
  ep.tx_links.clear();
  ep.tx_by_addr.clear();
  ep.rx_links.clear();
  ep.accepting.clear();
}

}  // namespace mrc::fabric
