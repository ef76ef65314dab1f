// Captures of what a plane sends (UdpHost::set_capture, mrc perf --pcap): a decorator around a
// link (backend.h) that writes each datagram added into the host's capture, if one is set,
// with the addresses and, where its link writes one, the RoCEv2 ICRC it has on the wire. Below
// the impairments, so a capture holds what left: no dropped datagram, a delayed one when it
// is released.
#pragma once

#include <memory>

#include "io/backend.h"
#include "io/pcap_file.h"

namespace mrc::io {

class CaptureLink final : public LinkDecorator {
 public:
  // `capture` is the host's: it outlives the link, and a null writer captures nothing.
  CaptureLink(std::unique_ptr<PlaneLink> inner, const PlaneAddress& local,
              PcapWriter* const& capture)
      : LinkDecorator(std::move(inner)), local_(local.socket()), capture_(capture) {}

  std::span<uint8_t> space() override { return written_at_ = inner().space(); }
  // REQUIRES: the datagram was written at space().
  void add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
           TxOutcome& out) override;

 private:
  SocketAddress local_;
  PcapWriter* const& capture_;
  std::span<uint8_t> written_at_;  // where the last space() pointed
};

}  // namespace mrc::io
