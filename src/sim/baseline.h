// Baseline transports in the simulator (RoCEv2 RC with go-back-N and DCQCN, MPTCP-like coupled
// subflows), so that comparisons with MRC run the same workloads over the same fabrics and are
// checked the same way. They are models, not engines: a fixed 64-byte header carried in the
// datagram and a 4-byte ICRC trailer, real payload bytes copied from the source buffer and placed
// at their offset in the target buffer, completions in the engine's Completion format so the
// runner's checker reads them exactly as it reads MRC's.
//
// BaselineHost is one host: its connection ends (BaselineConn), one small control-packet FIFO
// per NIC port (ACK/NAK/CNP go first, in the fabric's priority class), round-robin among the
// connections for data when a port is idle, and one timer at the earliest connection deadline
// (retransmission timeouts, DCQCN timers, pacing).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/completion_queue.h"
#include "mrc/config.hpp"
#include "sim/event_queue.h"
#include "sim/fabric.h"
#include "sim/transport.h"
#include "util/schedule.h"

namespace mrc::sim {

enum class BaseKind : uint8_t { kData = 1, kAck, kNak, kCnp };
enum BaseFlags : uint8_t { kFlagLast = 1, kFlagImm = 2, kFlagEcnEcho = 4 };

// The baseline wire header (carried as the first bytes of SimPacket::bytes, then the payload).
struct BaseHeader {
  uint8_t kind = 0;
  uint8_t flags = 0;
  uint16_t subflow = 0;
  uint32_t dest_conn = 0;  // the receiver's connection id
  uint64_t seq = 0;        // data: PSN (RoCE) / subflow sequence (MPTCP), in packets
  uint64_t dsn = 0;        // MPTCP data sequence number, in packets
  uint64_t offset = 0;     // data: where the payload goes in the target buffer
  uint32_t length = 0;     // data: payload bytes
  uint32_t immediate = 0;
  uint64_t ack = 0;       // ACK: next expected seq; NAK: the expected PSN
  uint64_t data_ack = 0;  // MPTCP: next expected DSN
  int64_t echo_ns = 0;    // data: send time; ACK: the echoed send time (RTT samples)
};
inline constexpr uint32_t kBaseHeaderBytes = sizeof(BaseHeader);
static_assert(kBaseHeaderBytes == 64);
inline constexpr uint32_t kBaseIcrcBytes = 4;  // trailer after the payload

// A message (transfer) posted on a baseline connection: a WRITE(-with-immediate) of `length`
// bytes from `source` to `remote_offset` in the peer's bound target buffer.
struct BaseWr {
  uint64_t wr_id = 0;
  const uint8_t* source = nullptr;
  uint64_t length = 0;
  uint64_t remote_offset = 0;
  bool imm = false;
  uint32_t immediate = 0;
};

struct BaseStats {
  uint64_t data_packets_sent = 0;
  uint64_t data_bytes_sent = 0;  // payload
  uint64_t retransmits = 0;      // data packets sent again (go-back-N rewinds, RTOs, ...)
  uint64_t timeouts = 0;
  uint64_t naks_sent = 0;
  uint64_t naks_received = 0;
  uint64_t cnps_sent = 0;
  uint64_t cnps_received = 0;
  uint64_t rate_cuts = 0;             // DCQCN rate decreases
  uint64_t ecn_marks_received = 0;    // CE-marked data packets seen by the receiver
  uint64_t data_bytes_placed = 0;     // payload placed, exactly once
  uint64_t duplicates = 0;            // data packets received again (not placed)
  uint64_t out_of_order_dropped = 0;  // RoCE: discarded after a gap (go-back-N receiver)
  uint64_t trimmed_discarded = 0;     // trimmed packets: no support, counted as a loss
  uint64_t fast_retransmits = 0;      // MPTCP: on 3 dupacks
  uint64_t reinjected = 0;            // MPTCP: packets re-sent on another subflow
  std::vector<uint64_t> plane_bytes_sent;
  std::vector<uint64_t> plane_retransmits;
};

class BaselineHost;

// One end of a baseline connection; each end both sends (its posted messages) and receives (the
// peer's), like an RC queue pair.
class BaselineConn {
 public:
  BaselineConn(BaselineHost& host, uint32_t id);
  virtual ~BaselineConn() = default;

  uint32_t id() const { return id_; }
  void set_peer(HostId host, uint32_t conn) { peer_host_ = host, peer_conn_ = conn; }
  void bind_target(uint8_t* base, uint64_t size) { target_ = base, target_size_ = size; }
  const BaseStats& stats() const { return stats_; }

  virtual bool post(const BaseWr& wr) = 0;  // false once the connection has failed
  virtual bool failed() const = 0;
  // A data packet allowed on `plane` now, or nullptr.
  virtual PacketPtr poll_transmit(Instant now, PlaneId plane) = 0;
  virtual void on_packet(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                         const SimPacket& packet) = 0;
  // The earliest timer (timeout, rate control) or pacing time after `now`; never if none. A
  // packet already allowed waits for its port to go idle, not for a timer.
  virtual Instant next_deadline(Instant now) const = 0;
  virtual void on_timer(Instant now) = 0;
  // The earliest time poll_transmit(plane) may return a packet if nothing else happens to the
  // connection (<= now: it may send now); never if it cannot until it is touched again.
  virtual Instant send_ready_at(Instant now, PlaneId plane) const = 0;
  // on_timer must run at every host timer, due or not (the host used to call every connection's
  // on_timer; a connection for which that is not a no-op says so here).
  virtual bool wants_every_timer() const { return false; }

 protected:
  // Copies a data packet's payload to the target buffer; false if it is out of bounds.
  bool place(const BaseHeader& h, std::span<const uint8_t> payload);

  // The work requests not yet acknowledged, in sequence order: each is ceil(length / mtu)
  // packets (at least one) numbered from the sequence number it was queued at.
  struct Message {
    BaseWr wr;
    uint64_t first = 0;
    uint64_t packets = 0;
  };
  // Queues `wr` from sequence number `next`; returns the next free one.
  uint64_t queue_message(const BaseWr& wr, uint64_t next, uint32_t mtu);
  const Message* message_of(uint64_t seq) const;
  // Completes every message whose packets are all below `acked`.
  void complete_through(uint64_t acked);
  // Completes every queued message with kRetryExceeded (the connection failed).
  void fail_messages();
  std::deque<Message> messages_;
  PacketPtr make_data(Instant now, PlaneId plane, Ev ev, BaseHeader h, const uint8_t* payload);
  void send_control(PlaneId plane, Ev ev, const BaseHeader& h);

  BaselineHost& host_;
  const uint32_t id_;
  HostId peer_host_ = 0;
  uint32_t peer_conn_ = 0;
  uint8_t* target_ = nullptr;
  uint64_t target_size_ = 0;
  BaseStats stats_;
};

class BaselineHost final : public SimTransport {
 public:
  BaselineHost(HostId id, EventQueue& events, Fabric& fabric, const TransportConfig& config,
               uint32_t mtu_bytes);

  HostId id() const { return id_; }
  uint32_t planes() const { return fabric_.planes(); }
  uint32_t mtu() const { return mtu_; }
  const TransportConfig& config() const { return config_; }
  double port_rate_gbps() const { return fabric_.config().host_link.rate_gbps; }

  // Creates a connection end of this host's transport kind; ids start at 1.
  BaselineConn& add_connection(const QpConfig& qp);
  BaselineConn* connection(uint32_t id);
  const std::vector<std::unique_ptr<BaselineConn>>& connections() const { return conns_; }

  // Completions, in the engine's format (qpn = connection id).
  void complete_send(const Completion& c) {
    send_done_.push_back(c);
    if (on_completion_) on_completion_();
  }
  void complete_recv(const Completion& c) {
    recv_done_.push_back(c);
    if (on_completion_) on_completion_();
  }
  // Called on every completion (as a CQ's on_nonempty: the application learns of it at once).
  void set_on_completion(std::function<void()> f) { on_completion_ = std::move(f); }
  size_t poll_send(std::vector<Completion>& out) { return drain(send_done_, out); }
  size_t poll_recv(std::vector<Completion>& out) { return drain(recv_done_, out); }

  // A connection's state may have changed outside the host's own calls (a post).
  void touch(uint32_t conn_id) { schedule_.touch(conn_id - 1); }

  void queue_control(PlaneId plane, PacketPtr packet);
  uint64_t control_dropped() const { return control_dropped_; }
  uint64_t corrupt_dropped() const { return corrupt_dropped_; }  // failed the ICRC
  // ICRC offload (Scenario::icrc_offload): packets leave with their ICRC to the fabric.
  void set_icrc_offload(bool offload) { icrc_offload_ = offload; }
  bool icrc_offload() const { return icrc_offload_; }
  // Virtual payload (Scenario::move_payload = false): data packets carry no payload bytes and
  // received payloads are counted, not written.
  void set_virtual_payload(bool virtual_payload) { virtual_payload_ = virtual_payload; }
  bool virtual_payload() const { return virtual_payload_; }

  // SimTransport.
  void on_deliver(PlaneId plane, PacketPtr packet) override;
  void on_port_ready(PlaneId plane) override;
  void on_port_state(PlaneId plane, bool up) override;
  void kick() override;

 private:
  static size_t drain(std::deque<Completion>& from, std::vector<Completion>& out);
  void transmit_on(PlaneId plane);
  void arm_timer();
  void on_timer(uint64_t generation);
  // Reads the touched connections again (Schedule::refresh) and keeps the list of those that
  // want every timer.
  void read_touched(Instant now);

  static constexpr size_t kControlQueuePackets = 4096;

  HostId id_;
  EventQueue& events_;
  Fabric& fabric_;
  const TransportConfig& config_;
  uint32_t mtu_;
  std::vector<std::unique_ptr<BaselineConn>> conns_;
  std::vector<std::deque<PacketPtr>> control_;  // per plane
  std::vector<size_t> next_conn_;               // per plane: round-robin position
  Schedule schedule_;                           // which connections have work, a lane per plane
  std::vector<uint8_t> every_timer_;            // per connection: wants every timer (as last read)
  std::vector<uint32_t> every_timer_list_;      // those that do, maybe since stopped; no repeats
  std::vector<uint8_t> every_timer_listed_;     // per connection: in the list
  std::vector<uint32_t> scratch_;
  std::function<void()> on_completion_;
  std::deque<Completion> send_done_;
  std::deque<Completion> recv_done_;
  uint64_t control_dropped_ = 0;
  uint64_t corrupt_dropped_ = 0;
  bool icrc_offload_ = false;
  bool virtual_payload_ = false;
  Instant timer_at_ = Instant::never();
  uint64_t timer_generation_ = 0;
};

// A connected pair of connection ends (a flow's sender at `a`, its receiver at `b`).
struct BaselinePair {
  BaselineConn* a = nullptr;
  BaselineConn* b = nullptr;
};
BaselinePair connect_baseline(BaselineHost& a, BaselineHost& b, const QpConfig& qp);

}  // namespace mrc::sim
