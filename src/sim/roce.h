// RoCEv2 RC as deployed, modelled in the simulator: one path per queue pair (one NIC port and a
// fixed UDP source port, so every packet of the QP hashes to the same ECMP path), go-back-N
// (the responder accepts only the expected PSN; on a gap it sends one NAK carrying the expected
// PSN and discards until it arrives; the requester rewinds to it), a retransmission timeout with
// a retry limit after which the QP fails and every outstanding operation completes with
// kRetryExceeded, no trimming support (a trimmed packet fails its ICRC: a loss), and DCQCN rate
// control (Dcqcn below). The responder ACKs every ack_every packets and every message end.
#pragma once

#include <deque>

#include "sim/baseline.h"

namespace mrc::sim {

// DCQCN reaction point (Zhu et al., SIGCOMM 2015, section 3.1): a CNP cuts the current rate
// Rc by alpha/2 (remembering it as the target Rt) and raises alpha by g; alpha decays by (1-g)
// every `alpha_period` without a CNP. Rate increase events come from a timer (every
// `increase_period`) and a byte counter (every `byte_counter` bytes sent): while both counts
// are below F, fast recovery (Rc = (Rt+Rc)/2); once both exceed F, hyper increase (Rt +=
// i*R_HAI); otherwise additive increase (Rt += R_AI), each followed by Rc = (Rt+Rc)/2. At line
// rate the timers stop.
class Dcqcn {
 public:
  Dcqcn(const DcqcnConfig& config, double line_rate_gbps);

  double rate_gbps() const { return rc_; }
  double target_gbps() const { return rt_; }
  double alpha() const { return alpha_; }
  bool limited() const { return rc_ < line_; }
  // Back at line rate with timers still set (by a byte-counter increase): the next on_timer
  // call, due or not, stops them.
  bool idle_timers() const { return !limited() && !next_deadline().is_never(); }
  void on_cnp(Instant now);
  void on_sent(uint64_t bytes);
  void on_timer(Instant now);
  Instant next_deadline() const;

 private:
  void increase();

  const DcqcnConfig& config_;
  const double line_;
  double rc_;
  double rt_;
  double alpha_ = 1.0;
  uint32_t timer_count_ = 0;
  uint32_t byte_count_ = 0;
  uint64_t bytes_ = 0;
  Instant alpha_at_ = Instant::never();
  Instant increase_at_ = Instant::never();
};

class RoceQp final : public BaselineConn {
 public:
  RoceQp(BaselineHost& host, uint32_t id, const QpConfig& qp);

  bool post(const BaseWr& wr) override;
  bool failed() const override { return failed_; }
  PacketPtr poll_transmit(Instant now, PlaneId plane) override;
  void on_packet(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                 const SimPacket& packet) override;
  Instant next_deadline(Instant now) const override;
  void on_timer(Instant now) override;
  Instant send_ready_at(Instant now, PlaneId plane) const override;
  bool wants_every_timer() const override { return dcqcn_.idle_timers(); }

  PlaneId plane() const { return plane_; }
  Ev ev() const { return ev_; }
  const Dcqcn& dcqcn() const { return dcqcn_; }

 private:
  void receive_data(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                    const SimPacket& packet);
  void on_ack(Instant now, uint64_t next_expected);
  void fail();

  // A PSN window of 2^23 packets, as the 24-bit PSN space allows.
  static constexpr uint64_t kPsnWindow = 1ull << 23;

  const uint32_t mtu_;
  const uint32_t ack_every_;
  const Duration rto_;
  const uint32_t retry_limit_;
  PlaneId plane_;
  Ev ev_;
  // Requester.
  uint64_t next_psn_ = 0;  // the first PSN of the next posted message
  uint64_t snd_una_ = 0;
  uint64_t snd_nxt_ = 0;
  uint64_t max_sent_ = 0;
  Instant rto_at_ = Instant::never();
  uint32_t retries_ = 0;
  bool failed_ = false;
  Dcqcn dcqcn_;
  Instant next_send_at_{0};
  // Responder.
  uint64_t epsn_ = 0;
  bool nak_sent_ = false;
  uint32_t unacked_ = 0;
  Instant last_cnp_ = Instant::never();
};

}  // namespace mrc::sim
