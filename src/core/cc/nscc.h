// NSCC-style congestion window (UET 1.0 "nscc", the MRC default), after the four-quadrant rule:
//   no ECN, delay < target  -> proportional increase (the further below target, the faster)
//   no ECN, delay >= target -> fair increase (about fi MTUs per RTT; converges to fairness)
//   ECN,    delay >= target -> multiplicative decrease, at most once per base RTT, by
//                              gamma x (avg - target) / avg of the *average* delay (an EWMA,
//                              weight 1/80 per sample, as UET's avg_delay): with spraying, one
//                              sample's delay is one path's queue, the average is the QP's
//   ECN,    delay < target  -> no change (the EV is skipped instead: ECN steers load)
// Trims shrink the window by the trimmed bytes, and while the receiver reports an incast
// (rcv_cwnd_pen, our semantics) by pen/128 of it once per base RTT: MRC has no ECN on the last
// hop, so without this there is no multiplicative decrease where an incast queues. Quick
// adapt, after trims in an RTT, losses while the average delay is above target (congestion
// drops; random loss on quiet paths is a path signal only), or an average delay above
// qa_threshold (default 4 x target), cuts the window to what the receiver actually got in that
// RTT (a round lasts the smoothed RTT, at least two base RTTs), but only if that was less than
// max_window >> qa_gate (UET's gate: a QP that delivers that much is not in an incast, and one
// lost packet there is a path signal, not a rate signal). Delay = RTT - base RTT, with base
// RTT configured or learned as the minimum sample. Parameter names follow the OCP CC
// profile (base_rtt, target_delay, max_cwnd, eta, fi, gamma, max_md_jump, quick adapt).
#pragma once

#include "core/cc/congestion_controller.h"

namespace mrc {

class Nscc final : public CongestionController {
 public:
  Nscc(const NsccConfig& config, uint32_t mtu_bytes);
  void on_ack(const AckSample& sample) override;
  void on_trim(Instant now, uint32_t bytes) override;
  void on_loss(Instant now, uint32_t bytes) override;
  void on_timeout(Instant now) override;
  uint64_t window_bytes() const override { return static_cast<uint64_t>(window_bytes_); }
  std::string_view name() const override { return "nscc"; }

  Duration base_rtt() const { return Duration{base_rtt_ns_}; }
  Duration smoothed_rtt() const { return Duration{smoothed_rtt_ns_}; }

 private:
  void clamp();
  void end_of_round(Instant now);
  int64_t target_delay_ns() const;
  int64_t round_ns() const;

  NsccConfig config_;
  double mtu_bytes_;
  double window_bytes_;
  int64_t base_rtt_ns_;
  int64_t smoothed_rtt_ns_ = 0;
  double avg_delay_ns_ = 0;
  Instant last_decrease_{INT64_MIN / 2};
  uint8_t receiver_penalty_ = 0;  // rcv_cwnd_pen of the latest SACK
  Instant round_start_{0};
  uint64_t round_acked_bytes_ = 0;
  bool round_had_loss_ = false;
};

}  // namespace mrc
