// AIMD window with ECN (DCTCP-flavoured, without the alpha estimator), the simple baseline NSCC
// is compared against: +1 MTU per RTT; halve at most once per RTT on ECN, trim or loss.
// Also FixedWindow: a constant window, for tests that want congestion control out of the way.
#pragma once

#include "core/cc/congestion_controller.h"

namespace mrc {

class Aimd final : public CongestionController {
 public:
  Aimd(uint64_t initial_window_bytes, uint64_t min_window_bytes, uint64_t max_window_bytes,
       uint32_t mtu_bytes);
  void on_ack(const AckSample& sample) override;
  void on_trim(Instant now, uint32_t bytes) override {
    decrease(now);
    (void)bytes;
  }
  void on_loss(Instant now, uint32_t bytes) override {
    decrease(now);
    (void)bytes;
  }
  void on_timeout(Instant now) override;
  uint64_t window_bytes() const override { return static_cast<uint64_t>(window_bytes_); }
  std::string_view name() const override { return "aimd"; }

 private:
  void decrease(Instant now);
  double window_bytes_;
  double min_bytes_;
  double max_bytes_;
  double mtu_bytes_;
  int64_t srtt_ns_ = 0;
  Instant last_decrease_{INT64_MIN / 2};
};

class FixedWindow final : public CongestionController {
 public:
  explicit FixedWindow(uint64_t window_bytes) : window_bytes_(window_bytes) {}
  void on_ack(const AckSample&) override {}
  void on_trim(Instant, uint32_t) override {}
  void on_loss(Instant, uint32_t) override {}
  void on_timeout(Instant) override {}
  uint64_t window_bytes() const override { return window_bytes_; }
  std::string_view name() const override { return "fixed"; }

 private:
  uint64_t window_bytes_;
};

}  // namespace mrc
