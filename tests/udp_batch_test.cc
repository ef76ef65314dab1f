// Batched UDP I/O over loopback sockets (io/udp_batch.h), with transmits formed as the datapath
// forms them (TransmitGather, io/backend.h): a transmit of equal datagrams with a shorter last
// one arrives as exactly those datagrams, with GSO and GRO, with either alone and with neither;
// a datagram from another source port or for another address, or after a shorter one, starts a
// new send; a transmit is bounded in datagrams and bytes.
#include "io/udp_batch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

namespace mrc::io {
namespace {

int bound(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  return fd;
}

uint16_t port_of(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

// A TxBatch behind the link interface, sending from the socket bound to a transmit's source
// port (as the udp link does), with the transmits formed as every backend's (TransmitLink).
class BatchLink final : public TransmitLink {
 public:
  BatchLink(bool gso, const std::vector<int>& fds) : tx(9000, gso) {
    for (int fd : fds) fd_of[port_of(fd)] = fd;
  }
  int poll_fd() const override { return -1; }
  bool read_every_round() const override { return false; }
  bool owns_icrc() const override { return false; }
  size_t max_datagram_bytes() const override { return 9000; }
  std::string description() const override { return "test"; }
  void add_counters(UdpPlaneStats&) const override {}
  void prepare_peer(const SocketAddress&) override {}
  std::span<uint8_t> space() override { return tx.next(); }
  void written(size_t length) override { tx.written(length); }
  void send(const Transmit& t, Instant, TxOutcome& out) override {
    tx.send(fd_of.at(t.source_port), t, out);
  }
  void kick(TxOutcome&) override {}
  std::span<const uint8_t> as_sent(uint16_t, const SocketAddress&,
                                   std::span<const uint8_t> d) override {
    return d;
  }
  std::span<const RxDatagram> receive() override { return {}; }

  TxBatch tx;
  std::map<uint16_t, int> fd_of;
  void flush_all(TxOutcome& out) { flush(Instant{0}, out); }
  size_t size() const { return open_datagrams(); }
};

// Writes datagram i (length `length`, bytes derived from i) at the link's space and adds it to
// the transmit, from the port of `fd`.
void add_datagram(BatchLink& link, int fd, const sockaddr_in& to, size_t length, uint8_t i,
                  TxOutcome& out) {
  const std::span<uint8_t> space = link.space();
  for (size_t b = 0; b < length; ++b)
    space[b] = static_cast<uint8_t>(static_cast<size_t>(i) * 31 + b);
  link.add(port_of(fd), SocketAddress::ipv4(to.sin_addr, ntohs(to.sin_port)), length, Instant{0},
           out);
}

// Receives until `want` datagrams came (or a bounded number of empty polls).
std::vector<std::vector<uint8_t>> receive(RxBatch& rx, int fd, size_t want,
                                          std::vector<uint16_t>* ports = nullptr) {
  std::vector<std::vector<uint8_t>> got;
  for (int polls = 0; got.size() < want && polls < 100000; ++polls) {
    for (const RxDatagram& d : rx.receive(fd)) {
      got.emplace_back(d.bytes.begin(), d.bytes.end());
      if (ports != nullptr) ports->push_back(d.from.port());
    }
  }
  return got;
}

void check_datagram(const std::vector<uint8_t>& d, size_t length, uint8_t i) {
  ASSERT_EQ(d.size(), length) << "datagram " << int(i);
  for (size_t b = 0; b < length; ++b)
    ASSERT_EQ(d[b], static_cast<uint8_t>(static_cast<size_t>(i) * 31 + b)) << "datagram " << int(i);
}

TEST(UdpBatch, EqualDatagramsAndAShorterLastArriveAsSent) {
  for (const bool gso : {true, false}) {
    for (const bool gro : {true, false}) {
      SCOPED_TRACE(testing::Message() << "gso " << gso << " gro " << gro);
      const int rx_fd = bound(0);
      sockaddr_in local{};
      socklen_t len = sizeof local;
      getsockname(rx_fd, reinterpret_cast<sockaddr*>(&local), &len);
      if (gro) {
        ASSERT_TRUE(enable_gro(rx_fd));
      }
      const int tx_fd = bound(0);
      BatchLink tx(gso && gso_supported(tx_fd), {tx_fd});
      TxOutcome out;
      for (uint8_t i = 0; i < 11; ++i) add_datagram(tx, tx_fd, local, i < 10 ? 4136 : 700, i, out);
      EXPECT_EQ(tx.size(), 11u);
      tx.flush_all(out);
      EXPECT_EQ(out.packets, 11u);
      EXPECT_EQ(out.errors, 0u);
      EXPECT_EQ(out.calls, 1u);  // one GSO send, or one sendmmsg
      RxBatch rx;
      const auto got = receive(rx, rx_fd, 11);
      ASSERT_EQ(got.size(), 11u);
      for (uint8_t i = 0; i < 11; ++i) check_datagram(got[i], i < 10 ? 4136 : 700, i);
      close(tx_fd);
      close(rx_fd);
    }
  }
}

TEST(UdpBatch, AnotherSocketAddressOrSizeStartsANewSend) {
  const int rx_a = bound(0), rx_b = bound(0);
  sockaddr_in a{}, b{};
  socklen_t len = sizeof a;
  getsockname(rx_a, reinterpret_cast<sockaddr*>(&a), &len);
  getsockname(rx_b, reinterpret_cast<sockaddr*>(&b), &len);
  enable_gro(rx_a);
  const int tx1 = bound(0), tx2 = bound(0);
  sockaddr_in p1{}, p2{};
  getsockname(tx1, reinterpret_cast<sockaddr*>(&p1), &len);
  getsockname(tx2, reinterpret_cast<sockaddr*>(&p2), &len);
  BatchLink tx(gso_supported(tx1), {tx1, tx2});
  TxOutcome out;
  add_datagram(tx, tx1, a, 1000, 0, out);
  add_datagram(tx, tx1, a, 1000, 1, out);
  add_datagram(tx, tx2, a, 1000, 2, out);  // another source port (EV): a new send
  add_datagram(tx, tx2, a, 500, 3, out);   // shorter: joins, and closes the batch
  add_datagram(tx, tx2, a, 500, 4, out);   // after a shorter one: a new send
  add_datagram(tx, tx2, b, 500, 5, out);   // another address: a new send
  add_datagram(tx, tx2, b, 800, 6, out);   // longer than the batch's size: a new send
  tx.flush_all(out);
  EXPECT_EQ(out.packets, 7u);
  EXPECT_EQ(out.calls, 5u);
  RxBatch rx;
  std::vector<uint16_t> ports;
  const auto at_a = receive(rx, rx_a, 5, &ports);
  ASSERT_EQ(at_a.size(), 5u);
  const size_t lengths[] = {1000, 1000, 1000, 500, 500};
  for (uint8_t i = 0; i < 5; ++i) check_datagram(at_a[i], lengths[i], i);
  EXPECT_EQ(ports,
            (std::vector<uint16_t>{ntohs(p1.sin_port), ntohs(p1.sin_port), ntohs(p2.sin_port),
                                   ntohs(p2.sin_port), ntohs(p2.sin_port)}));
  const auto at_b = receive(rx, rx_b, 2);
  ASSERT_EQ(at_b.size(), 2u);
  check_datagram(at_b[0], 500, 5);
  check_datagram(at_b[1], 800, 6);
  for (int fd : {rx_a, rx_b, tx1, tx2}) close(fd);
}

TEST(UdpBatch, ABatchIsBoundedInSegmentsAndBytes) {
  const int rx_fd = bound(0);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  getsockname(rx_fd, reinterpret_cast<sockaddr*>(&local), &len);
  enable_gro(rx_fd);
  const int tx_fd = bound(0);
  BatchLink tx(gso_supported(tx_fd), {tx_fd});
  TxOutcome out;
  // 100-byte datagrams: the 64-segment limit binds first; 4136-byte ones: the 64 KiB limit.
  for (uint8_t i = 0; i < 70; ++i) add_datagram(tx, tx_fd, local, 100, i, out);
  EXPECT_EQ(tx.size(), 70u - kMaxGsoSegments);
  for (uint8_t i = 70; i < 90; ++i) add_datagram(tx, tx_fd, local, 4136, i, out);
  EXPECT_LE(tx.size() * 4136, kMaxGsoBytes);
  tx.flush_all(out);
  EXPECT_EQ(out.packets, 90u);
  RxBatch rx;
  const auto got = receive(rx, rx_fd, 90);
  ASSERT_EQ(got.size(), 90u);
  for (uint8_t i = 0; i < 90; ++i) check_datagram(got[i], i < 70 ? 100 : 4136, i);
  close(tx_fd);
  close(rx_fd);
}

}  // namespace
}  // namespace mrc::io
