// A queue pair: the QP state machine (RESET -> INIT -> RTR -> RTS, and ERROR), the EV set and
// congestion controller it owns, its requester and responder halves, the control-packet queue,
// and plane (port) status for both ends.
//
// The responder exists from RTR, the requester from RTS, each sized from the configuration in
// force at that transition (so OCP-style modify attributes can change windows before then).
// ERROR completes every outstanding send with an error status (the failing one with "retry
// exceeded" when the retry limit was the cause) and flushes posted receives. A plane is used
// only while the local port and the peer's port on it are both up; port changes are announced
// to the peer with an endpoint request (port status update), repeated until answered.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/cc/congestion_controller.h"
#include "core/control_queue.h"
#include "core/ev_set.h"
#include "core/incast_detector.h"
#include "core/packet_protection.h"
#include "core/requester.h"
#include "core/responder.h"
#include "mrc/config.hpp"
#include "mrc/stats.hpp"
#include "mrc/verbs.hpp"
#include "util/schedule.h"

namespace mrc {

struct RtrAttributes {
  Qpn dest_qp{0};
  Psn expected_psn{0};  // first PSN the peer will send
  uint32_t peer = 0;    // opaque peer handle echoed in TxMeta
  uint32_t peer_ports_up = 0xFFFFFFFF;
};

struct RtsAttributes {
  Psn initial_psn{0};  // first PSN this QP sends
};

class QueuePair {
 public:
  QueuePair(Qpn qpn, const QpConfig& config, int planes, uint64_t seed, uint32_t pd,
            CompletionQueue* send_cq, CompletionQueue* recv_cq, const MemoryRegionTable* mrs);

  Qpn qpn() const { return qpn_; }
  QpState state() const { return state_; }
  const QpConfig& config() const { return config_; }
  // Configuration may change only in RESET or INIT (windows are sized at RTR/RTS).
  Result<Ok, QpError> set_config(const QpConfig& config);
  // In RTR (the requester does not exist yet): takes the requester's settings from `config`
  // (mpr, max_wimm, timeout, retry_linear, retry_exp), as OCP's RTR -> RTS modify sets them.
  Result<Ok, QpError> set_requester_config(const QpConfig& config);
  const std::string& config_error() const { return config_error_; }

  Result<Ok, QpError> to_init();
  Result<Ok, QpError> to_rtr(const RtrAttributes& attributes);
  Result<Ok, QpError> to_rts(const RtsAttributes& attributes);
  // The traffic secrets of a keys_later QP, once, in RTR or RTS (else kBadTransition).
  Result<Ok, QpError> set_keys(const std::array<uint8_t, kTrafficSecretBytes>& send_secret,
                               const std::array<uint8_t, kTrafficSecretBytes>& receive_secret);
  void to_error();
  void to_reset();

  Result<Ok, PostError> post_send(const SendWr& wr);
  Result<Ok, PostError> post_recv(uint64_t wr_id);

  void handle(Instant now, const wire::Packet& packet, const RxMeta& meta);
  size_t poll_transmit(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  bool wants_to_send(Instant now) const;  // send_ready_at() <= now
  // Whether this QP is in the middle of an EV burst on `plane` (Requester::in_burst): with
  // EndpointConfig::burst_turns the endpoint then keeps its transmit turn, so that the burst's
  // packets leave back to back.
  bool in_burst(PlaneId plane) const { return requester_ && requester_->in_burst(plane); }
  // The earliest time poll_transmit may produce a packet: Schedule::kReadyNow if something is
  // queued, else the next EV probe time, else never. Before it poll_transmit changes nothing.
  Instant send_ready_at() const;
  void on_timer(Instant now);
  Instant next_deadline() const;
  // The owning endpoint's schedule, told of every call that may change this QP's state.
  void attach(Schedule* schedule, uint32_t index, IncastDetector* incast = nullptr) {
    schedule_ = schedule;
    schedule_index_ = index;
    incast_ = incast;
  }

  void set_local_ports(uint32_t ports_up_mask, Instant now);
  uint32_t usable_planes() const { return local_ports_ & peer_ports_; }

  QpStats stats() const;
  // stats().data_bytes_placed without copying the whole QpStats (the simulator samples it for
  // every QP at a fixed interval).
  uint64_t data_bytes_placed() const { return stats_.data_bytes_placed; }
  const EvSet* evs() const { return evs_ ? &*evs_ : nullptr; }
  EvSet* evs();  // a controller may change EV states through it
  const CongestionController* congestion() const { return cc_.get(); }
  // Secure mode (QpConfig::security), from RTR on: the endpoint opens this QP's packets with it
  // before the QP sees them; poll_transmit seals what it sends. nullptr without secure mode, and
  // while a secure QP's keys are not set (SecurityConfig::keys_later): it then sends nothing
  // and the endpoint refuses its packets.
  bool secure() const { return config_.security.mode != SecureMode::kOff; }
  bool awaiting_keys() const { return secure() && !protection_; }
  // The peer QP and handle given at RTR.
  const RtrAttributes& remote() const { return remote_; }
  PacketProtection* protection() { return protection_.get(); }
  const PacketProtection* protection() const { return protection_.get(); }
  int planes() const { return planes_; }

 private:
  void handle_control(Instant now, const wire::ControlPacket& packet, const RxMeta& meta);
  void handle_endpoint_request(const wire::EndpointRequest& request, const RxMeta& meta);
  void set_peer_ports(uint32_t mask);
  void queue_port_status(Instant now);
  size_t poll_control(PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  size_t poll_plain(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  void after_event(Instant now);
  // Moves the responder's deliverable completions to the receive CQ (if it has any pending).
  void deliver();
  // Called first by every call that may change the QP's state: the endpoint's schedule then
  // reads its deadline and readiness again before its next question.
  void changed() {
    if (schedule_ != nullptr) schedule_->touch(schedule_index_);
  }

  Qpn qpn_;
  QpState state_ = QpState::kReset;
  // The responder holds WRITE-with-immediate completions not yet delivered (pending_wimm() > 0),
  // updated after each responder call: the events of a QP's requester need not read it.
  bool responder_pending_ = false;
  // Port status update to the peer, repeated until answered.
  bool port_status_unanswered_ = false;
  uint32_t schedule_index_ = 0;
  Schedule* schedule_ = nullptr;
  uint32_t all_planes_ = 0;
  uint32_t local_ports_ = 0;
  uint32_t peer_ports_ = 0;
  uint32_t port_status_request_id_ = 0;
  uint32_t port_status_attempts_ = 0;
  Instant port_status_next_at_ = Instant::never();  // read only while unanswered
  IncastDetector* incast_ = nullptr;                // the endpoint's, shared by its QPs' responders
  RtrAttributes remote_;
  ControlQueue control_{256};
  QpConfig config_;
  std::string config_error_;
  int planes_;
  uint64_t seed_;
  uint32_t pd_;
  CompletionQueue* send_cq_;
  CompletionQueue* recv_cq_;
  const MemoryRegionTable* mrs_;
  mutable QpStats stats_;
  std::optional<EvSet> evs_;
  std::unique_ptr<CongestionController> cc_;
  std::optional<Responder> responder_;
  std::optional<Requester> requester_;
  std::unique_ptr<PacketProtection> protection_;
  std::vector<uint64_t> early_receives_;  // posted in INIT
};

}  // namespace mrc
