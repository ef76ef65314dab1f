// NSCC window update (see nscc.h for the rule). Arithmetic in doubles: the window is a rate
// proxy, not a count, and fractional growth per ACK must accumulate.
#include "core/cc/nscc.h"

#include <algorithm>
#include <cmath>

#include "mrc/assert.hpp"

namespace mrc {
namespace {
constexpr double kDelayAverageWeight = 1.0 / 80;
}  // namespace

Nscc::Nscc(const NsccConfig& config, uint32_t mtu_bytes)
    : config_(config),
      mtu_bytes_(mtu_bytes),
      window_bytes_(static_cast<double>(config.initial_window_bytes)),
      base_rtt_ns_(config.base_rtt_ns) {
  clamp();
}

void Nscc::clamp() {
  // Every update is arithmetic on finite samples; a NaN would pass std::clamp and stop the QP.
  MRC_ASSERT(std::isfinite(window_bytes_));
  MRC_ASSERT(config_.min_window_bytes > 0 && config_.min_window_bytes <= config_.max_window_bytes);
  window_bytes_ = std::clamp(window_bytes_, static_cast<double>(config_.min_window_bytes),
                             static_cast<double>(config_.max_window_bytes));
  MRC_ASSERT(window_bytes_ >= 1 && window_bytes_ <= static_cast<double>(config_.max_window_bytes));
}

int64_t Nscc::target_delay_ns() const {
  if (config_.target_delay_ns > 0) return config_.target_delay_ns;
  return std::max<int64_t>(base_rtt_ns_ / 2, 1000);
}

// A round spans at least one RTT as the packets see it now (base RTT plus queueing): quick
// adapt must cut the window to what one such RTT delivered. Rounds of base RTT alone, where
// queues are deep (no ECN to keep them short), would count a fraction of the delivered bytes
// and collapse the window.
int64_t Nscc::round_ns() const {
  return std::max(base_rtt_ns_ * 2, smoothed_rtt_ns_);
}

void Nscc::end_of_round(Instant now) {
  if (base_rtt_ns_ <= 0 || now - round_start_ < Duration{round_ns()}) return;
  const int64_t qa_threshold =
      config_.qa_threshold_ns > 0 ? config_.qa_threshold_ns : 4 * target_delay_ns();
  const bool trigger = round_had_loss_ || avg_delay_ns_ > static_cast<double>(qa_threshold);
  const bool gate =
      config_.qa_gate == 0 ||
      round_acked_bytes_ < (config_.max_window_bytes >> std::min<uint8_t>(config_.qa_gate, 63));
  if (config_.quick_adapt && trigger && gate) {
    window_bytes_ = std::min(window_bytes_, static_cast<double>(round_acked_bytes_));
    clamp();
  }
  round_start_ = now;
  round_acked_bytes_ = 0;
  round_had_loss_ = false;
}

void Nscc::on_ack(const AckSample& s) {
  round_acked_bytes_ += s.acked_bytes;
  receiver_penalty_ = s.receiver_penalty;
  if (s.rtt.ns > 0 && (base_rtt_ns_ <= 0 || (config_.base_rtt_ns == 0 && s.rtt.ns < base_rtt_ns_)))
    base_rtt_ns_ = s.rtt.ns;
  if (s.rtt.ns > 0)
    smoothed_rtt_ns_ =
        smoothed_rtt_ns_ == 0 ? s.rtt.ns : smoothed_rtt_ns_ + (s.rtt.ns - smoothed_rtt_ns_) / 8;
  // After a sample, both RTTs are positive and the base one (the minimum, or configured) is set.
  MRC_ASSERT(s.rtt.ns <= 0 || (base_rtt_ns_ > 0 && smoothed_rtt_ns_ > 0));
  end_of_round(s.now);
  if (s.rtt.ns <= 0 || s.acked_bytes == 0) return;
  const double acked = static_cast<double>(s.acked_bytes);
  const double target = static_cast<double>(target_delay_ns());
  const double delay = static_cast<double>(std::max<int64_t>(s.rtt.ns - base_rtt_ns_, 0));
  avg_delay_ns_ += (delay - avg_delay_ns_) * kDelayAverageWeight;
  if (!s.ecn && delay < target) {
    window_bytes_ += config_.proportional_gain * acked * (target - delay) / target;
  } else if (!s.ecn) {
    window_bytes_ += config_.fair_increase_mtus * mtu_bytes_ * acked / window_bytes_;
  } else if (delay >= target && avg_delay_ns_ > target &&
             s.now - last_decrease_ >= Duration{base_rtt_ns_}) {
    const double cut = std::min(config_.decrease_gain * (avg_delay_ns_ - target) / avg_delay_ns_,
                                config_.max_decrease);
    window_bytes_ *= 1.0 - cut;
    last_decrease_ = s.now;
  }
  clamp();
}

void Nscc::on_trim(Instant now, uint32_t bytes) {
  // An incast at the receiver (its SACKs carry rcv_cwnd_pen, core/incast_detector.h): the trim
  // is a rate signal, and takes pen/128 of the window, at most once per base RTT and not before
  // the first RTT sample. Elsewhere a trim is a path signal (the EV is skipped) and takes only
  // its own bytes.
  const double cut = receiver_penalty_ / 128.0;
  if (cut > 0 && base_rtt_ns_ > 0 && now - last_decrease_ >= Duration{base_rtt_ns_}) {
    window_bytes_ *= 1.0 - cut;
    last_decrease_ = now;
  }
  window_bytes_ -= bytes;
  round_had_loss_ = true;
  end_of_round(now);
  clamp();
}

void Nscc::on_loss(Instant now, uint32_t /*bytes*/) {
  // A real loss in MRC is first a path signal (the EV set reacts). It is a rate signal only
  // with evidence of congestion, an average delay above target (a drop-tail fabric without
  // trimming): then quick adapt acts at the end of the round. Random loss on quiet paths does
  // not shrink the window; doing so cut 1 %-loss all-to-alls to a fraction of the line rate.
  if (avg_delay_ns_ > static_cast<double>(target_delay_ns())) round_had_loss_ = true;
  end_of_round(now);
}

void Nscc::on_timeout(Instant /*now*/) {
  window_bytes_ /= 2;
  clamp();
}

}  // namespace mrc
