// The udp backend (backend.h), unprivileged: one plane over the kernel's UDP sockets.
//   - a receive socket on the plane's (address, MRC port), read with recvmmsg and UDP_GRO, each
//     datagram with the kernel's arrival time (io/udp_batch.h);
//   - a send socket per EV source port (the engine's EVs are UDP source ports, so each EV is its
//     own ECMP path), and the receive socket for datagrams from the MRC port (replies to
//     connectionless requests, the side channel);
//   - a transmit leaves as one UDP GSO send, or one sendmmsg where GSO is off or refused; the
//     links of a host share one GSO switch, so a refusal turns GSO off for every plane.
// IPv4 or IPv6 planes; SRv6 planes send and accept UDP checksum zero (the kernel then refuses
// GSO, which stays off).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/backend.h"
#include "io/udp_batch.h"
#include "mrc/error.hpp"

namespace mrc::io {

// A UDP socket bound to `a` with the datapath's options (large buffers, ECT(0), the TOS or
// traffic class of what it receives, IPv6 flow labels from the destination, UDP checksum zero
// where `zero_checksum`); `what` and `setting` name the port in the error of one in use.
Result<int, Error> bound_socket(const PlaneAddress& a, int buffer_bytes, bool zero_checksum,
                                const char* what, const std::string& setting);

// Every plane's link; the error names the address and the system error.
Result<PlaneLinks, Error> open_udp_links(const LinkConfig& config);

class UdpLink final : public TransmitLink {
 public:
  UdpLink(const PlaneAddress& local, uint16_t first_port, std::shared_ptr<GsoSwitch> gso);
  ~UdpLink() override;
  UdpLink(const UdpLink&) = delete;
  UdpLink& operator=(const UdpLink&) = delete;
  // Opens the receive socket and the plane's EV source ports.
  Result<Ok, Error> open(const LinkConfig& config, int plane);

  int poll_fd() const override { return rx_fd_; }
  bool read_every_round() const override { return false; }
  bool owns_icrc() const override { return false; }
  size_t max_datagram_bytes() const override;
  std::string description() const override { return tx_.gso() ? "GSO/GRO" : "no GSO"; }
  void add_counters(UdpPlaneStats&) const override {}
  void prepare_peer(const SocketAddress&) override {}

  std::span<uint8_t> space() override { return tx_.next(); }
  void written(size_t length) override { tx_.written(length); }
  void send(const Transmit& t, Instant, TxOutcome& out) override {
    tx_.send(fd_for(t.source_port), t, out);
  }
  void kick(TxOutcome&) override {}  // every send() is a system call of its own
  std::span<const uint8_t> as_sent(uint16_t, const SocketAddress&,
                                   std::span<const uint8_t> datagram) override {
    return datagram;
  }

  std::span<const RxDatagram> receive() override { return rx_.receive(rx_fd_); }
  bool emptied() const override { return rx_.emptied(); }

 private:
  // The socket bound to `source_port`: an EV's, else the MRC port's receive socket.
  int fd_for(uint16_t source_port) const {
    const uint32_t index = static_cast<uint32_t>(source_port - first_port_);
    return index < tx_fds_.size() ? tx_fds_[index] : rx_fd_;
  }

  PlaneAddress local_;
  uint16_t first_port_;
  int rx_fd_ = -1;
  std::vector<int> tx_fds_;  // the EV source ports' sockets, from first_port_ on
  TxBatch tx_;
  RxBatch rx_;
};

}  // namespace mrc::io
