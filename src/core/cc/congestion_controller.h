// The narrow congestion-control interface: a window in bytes, driven by acknowledgements (with
// an RTT sample and the ECN echo), trims, losses and timeouts. One instance per queue pair;
// time arrives as an argument. Implementations: NSCC (the MRC default), AIMD and a fixed
// window (for tests and comparisons).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "mrc/config.hpp"
#include "mrc/types.hpp"

namespace mrc {

struct AckSample {
  Instant now;
  uint64_t acked_bytes = 0;      // newly acknowledged by this SACK
  Duration rtt{-1};              // RTT of the packet that triggered the SACK; < 0 if none
  bool ecn = false;              // the triggering packet was ECN-marked
  uint64_t in_flight_bytes = 0;  // after this ack
  uint8_t receiver_penalty = 0;  // the SACK's rcv_cwnd_pen (0..127)
};

class CongestionController {
 public:
  virtual ~CongestionController() = default;
  virtual void on_ack(const AckSample& sample) = 0;
  virtual void on_trim(Instant now, uint32_t bytes) = 0;
  virtual void on_loss(Instant now, uint32_t bytes) = 0;
  virtual void on_timeout(Instant now) = 0;
  virtual uint64_t window_bytes() const = 0;
  virtual std::string_view name() const = 0;
};

std::unique_ptr<CongestionController> make_congestion_controller(const QpConfig& config);

}  // namespace mrc
