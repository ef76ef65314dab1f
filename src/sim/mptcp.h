// MPTCP-like multipath transport, modelled in the simulator: a connection of N subflows, each on
// its own fixed path (subflow i on plane i mod P with its own fixed UDP source port / EV, so
// ECMP hashes it to one path; two subflows may collide, as in a real fabric). Each subflow is a
// TCP-like window sender in packets: slow start, congestion avoidance, SACK-less fast
// retransmit on three duplicate ACKs with NewReno partial-ACK recovery, and an RTO with
// exponential backoff (RTT from timestamps echoed in ACKs). Congestion avoidance is coupled
// across subflows with LIA (RFC 6356), so the connection takes no more than one TCP would on
// its best path. A connection-level scheduler serves, on an idle port, the subflows of that
// plane lowest-RTT first: the subflow's own retransmissions, then reinjected data, then new
// data. A subflow's RTO reinjects its unacknowledged data on the others; after
// `subflow_dead_after` consecutive RTOs it is abandoned, and when every subflow is, the
// connection fails (error completions). The receiver places each data-sequence packet once
// (duplicates from reinjection are counted and dropped), delivers in data-sequence order and
// completes WRITE-with-immediate messages in order. No ECN reaction (loss-based, as MPTCP over
// Reno); a trimmed packet is a loss.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <span>

#include "sim/baseline.h"

namespace mrc::sim {

// LIA's congestion-avoidance increase, in packets, for one ACKed packet on subflow `i`:
// min(alpha / cwnd_total, 1 / cwnd_i) with alpha = cwnd_total * max_k(cwnd_k / rtt_k^2) /
// (sum_k cwnd_k / rtt_k)^2 (RFC 6356 section 3, windows in packets).
double lia_increase(std::span<const double> cwnd, std::span<const double> rtt_s, size_t i);

class MptcpConn final : public BaselineConn {
 public:
  MptcpConn(BaselineHost& host, uint32_t id, const QpConfig& qp);

  bool post(const BaseWr& wr) override;
  bool failed() const override { return failed_; }
  PacketPtr poll_transmit(Instant now, PlaneId plane) override;
  void on_packet(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                 const SimPacket& packet) override;
  Instant next_deadline(Instant now) const override;
  void on_timer(Instant now) override;
  Instant send_ready_at(Instant now, PlaneId plane) const override;

  size_t subflow_count() const { return subflows_.size(); }
  double cwnd(size_t subflow) const { return subflows_[subflow].cwnd; }
  bool subflow_dead(size_t subflow) const { return subflows_[subflow].dead; }
  PlaneId subflow_plane(size_t subflow) const { return subflows_[subflow].plane; }
  Ev subflow_ev(size_t subflow) const { return subflows_[subflow].ev; }

 private:
  struct Subflow {
    uint16_t index = 0;
    PlaneId plane{0};
    Ev ev{0};
    // Sender.
    double cwnd = 10;
    double ssthresh = 1e9;
    uint64_t snd_una = 0;
    uint64_t snd_nxt = 0;
    uint64_t max_sent = 0;
    std::deque<uint64_t> dsn_of;  // the DSN carried by each SSN from snd_una to max_sent
    uint32_t dupacks = 0;
    bool in_recovery = false;
    bool retransmit_head = false;  // fast retransmit of snd_una pending
    uint64_t recover = 0;
    bool has_rtt = false;
    Duration srtt{0};
    Duration rttvar{0};
    Duration rto{0};
    Instant rto_at = Instant::never();
    uint32_t backoff = 0;  // consecutive RTOs
    bool dead = false;
    // Receiver.
    uint64_t rcv_nxt = 0;
    std::set<uint64_t> out_of_order;  // SSNs received above rcv_nxt
  };
  struct Arrived {  // a data-sequence packet received above data_rcv_nxt
    bool last = false;
    bool imm = false;
    uint32_t immediate = 0;
  };

  PacketPtr send_on(Instant now, Subflow& sf);
  PacketPtr build(Instant now, Subflow& sf, uint64_t ssn, uint64_t dsn);
  void receive_data(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                    const SimPacket& packet);
  void deliver_in_order();
  void on_ack(Instant now, const BaseHeader& h);
  void on_new_ack(Instant now, Subflow& sf, uint64_t ack);
  void on_dupack(Subflow& sf);
  void grow(Subflow& sf, uint64_t acked);
  void sample_rtt(Subflow& sf, Duration rtt);
  void on_subflow_timeout(Instant now, Subflow& sf);
  void reinject(const Subflow& sf);
  void fail();

  const MptcpConfig& config_;
  const uint32_t mtu_;
  std::vector<Subflow> subflows_;
  // Connection-level sender.
  uint64_t next_dsn_ = 0;  // first DSN of the next posted message
  uint64_t next_new_ = 0;  // next DSN never sent
  uint64_t data_una_ = 0;
  std::deque<uint64_t> reinject_;
  bool failed_ = false;
  // Connection-level receiver.
  uint64_t data_rcv_nxt_ = 0;
  std::map<uint64_t, Arrived> arrived_;
};

}  // namespace mrc::sim
