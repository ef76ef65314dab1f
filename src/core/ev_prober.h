// Controller EV probes without a connection (the OCP endpoint request "EV probe", as
// mrc_ctl_ep_batch_send_wait sends them): a probe is an endpoint request addressed to QPN 0 —
// the endpoint itself, like InfiniBand's management QPs — sent to a peer on exactly the EV and
// plane the controller names, whatever the state of that path in any QP. Whoever receives a
// probe answers it from QPN 0, back to the datagram's sender (TxMeta::reply), whether or not
// the two hosts share a queue pair. The prober measures the RTT from transmission to the
// answer's arrival. Everything is bounded: outstanding probes and kept answers (kMaxProbes),
// answers waiting to go out (kMaxResponses; a flood of requests is dropped and counted).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "core/requester.h"
#include "core/responder.h"
#include "core/wire/packet.h"

namespace mrc {

// A probe's answer: the plane it arrived on and the time from sending the request to its arrival.
struct EvProbeAnswer {
  uint32_t request_id = 0;
  PlaneId plane{0};
  Duration rtt{0};
};

class EvProber {
 public:
  static constexpr size_t kMaxProbes = 256;
  static constexpr size_t kMaxResponses = 64;

  // Queues a probe to `peer` (the datapath's handle) on `plane` with EV `ev`; false if
  // kMaxProbes are outstanding.
  bool probe(uint32_t peer, PlaneId plane, Ev ev, uint32_t request_id);
  std::optional<EvProbeAnswer> take_answer();
  // Drops outstanding probes and untaken answers.
  void forget();

  // An EV-probe request or response addressed to QPN 0. `ports_up`: our port status mask.
  void on_request(Instant now, const wire::EndpointRequest& request, const RxMeta& meta,
                  uint32_t ports_up);
  void on_response(Instant now, const wire::EndpointResponse& response, const RxMeta& meta);

  // The next probe or answer to send on `plane`, or 0.
  size_t poll(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  bool wants_to_send() const { return to_send_ > 0; }
  uint64_t responses_dropped() const { return responses_dropped_; }

 private:
  struct Probe {
    uint32_t request_id = 0;
    uint32_t peer = 0;
    PlaneId plane{0};
    Ev ev{0};
    Instant sent_at = Instant::never();
  };
  struct Response {
    wire::EndpointResponse body;
    RxMeta to;  // the request's arrival: plane, sender
  };
  // Unsent probes plus answers waiting: first, as the one field every transmit opportunity of
  // the endpoint reads (the rest is touched only when probing).
  uint32_t to_send_ = 0;
  uint32_t unsent_ = 0;
  std::vector<Probe> probes_;
  std::deque<EvProbeAnswer> answers_;
  std::deque<Response> responses_;
  uint64_t responses_dropped_ = 0;
};

}  // namespace mrc
