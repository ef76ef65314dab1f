// The engine of one host ("the NIC"): its planes and port states, memory regions, completion
// queues and queue pairs. This is the whole sans-IO call surface the datapath and the simulator
// drive:
//   handle_datagram(now, bytes, meta)   a datagram arrived on a plane
//   poll_transmit(now, plane, out, meta) the plane's port can send: give me a datagram
//   handle_timeout(now)                  the deadline from next_deadline() has passed
//   next_deadline()                      when handle_timeout must be called next
//   set_port_up(plane, up, now)          the local link on a plane went down or up
// Datagrams to QPN 0 are the endpoint's own: connectionless EV probes and their answers.
// QPN = tag << index_bits | (kFirstQpn + index of the QP in the table). With
// EndpointConfig::qpn_seed 0 the tag is 0 (QPNs 0x100, 0x101, ...: the simulator and the tests);
// otherwise each QP's tag is drawn from that seed, so that a QPN cannot be guessed from the
// order of creation (a forged packet must name a live QPN). An engine that is one of several
// behind one device (EndpointConfig::qpn_partitions) puts its number in the tag's low bits, so
// QPNs stay unique across them. A datagram's QPN must match the QP at its index exactly.
// Deadlines and transmit opportunities reach only the QPs that have something due or queued
// (util/schedule.h), in the order a scan over every QP would. It makes no system calls, reads no
// clock and draws randomness only from its seed.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/completion_queue.h"
#include "core/ev_prober.h"
#include "core/incast_detector.h"
#include "core/memory_region.h"
#include "core/queue_pair.h"
#include "mrc/stats.hpp"
#include "util/prng.h"
#include "util/schedule.h"

namespace mrc {

struct EndpointConfig {
  int planes = 1;
  uint32_t max_queue_pairs = 1024;
  uint32_t max_memory_regions = 4096;
  uint64_t seed = 1;
  // ICRC offload (as a NIC's checksum offload): packets (data and control) leave the engine
  // with their ICRC field zero and TxMeta::icrc_deferred set, and the datapath fills it in (or
  // carries the bytes untouched to a receiver it tells so, RxMeta::icrc_checked). Decided in
  // Endpoint::poll_transmit alone: every producer leaves the field zero.
  bool icrc_offload = false;
  // Transmit turns of a whole EV burst (QpConfig::ev_burst_packets): a QP keeps its turn on a
  // plane until its burst ends, so that its burst's datagrams leave back to back and a batching
  // datapath sends them as one (the UDP datapath turns it on). Off: a turn is one packet, and
  // the QPs' bursts interleave. In the fabric, whole-burst turns send k packets to one
  // destination at a time, and all-to-all traffic pays for it (docs/PROTOCOL.md, "Spray
  // granularity").
  bool burst_turns = false;
  uint64_t qpn_seed = 0;  // 0: sequential QPNs; else the seed of their random tags (see above)
  // This engine is number qpn_partition of qpn_partitions (1..16) sharing one QPN space.
  uint32_t qpn_partition = 0;
  uint32_t qpn_partitions = 1;
};

class Endpoint {
 public:
  static constexpr uint32_t kFirstQpn = 0x100;
  // The partition (EndpointConfig::qpn_partition) a QPN of an engine of `partitions` partitions
  // and `max_queue_pairs` names: for a peer that knows a QP's number but not which of a host's
  // engines holds it (the OCP device's RTR, whose peer is a GID and a QPN).
  static uint32_t qpn_partition_of(Qpn qpn, uint32_t partitions, uint32_t max_queue_pairs);

  explicit Endpoint(const EndpointConfig& config);

  MemoryRegionTable& memory() { return memory_; }
  CompletionQueue* create_cq(uint32_t capacity);
  Result<QueuePair*, QpError> create_qp(const QpConfig& config, uint32_t pd,
                                        CompletionQueue* send_cq, CompletionQueue* recv_cq);
  Result<Ok, QpError> destroy_qp(Qpn qpn);
  QueuePair* qp(Qpn qpn);

  void handle_datagram(Instant now, std::span<const uint8_t> datagram, const RxMeta& meta);
  size_t poll_transmit(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  void handle_timeout(Instant now);
  Instant next_deadline() const;
  bool wants_to_send(Instant now) const;

  void set_port_up(PlaneId plane, bool up, Instant now);
  bool port_up(PlaneId plane) const { return (ports_up_ >> plane.value) & 1; }
  int planes() const { return config_.planes; }

  // Controller EV probes to any host, with or without a QP to it (see ev_prober.h).
  EvProber& prober() { return prober_; }

  EndpointStats stats() const { return stats_; }
  template <typename F>
  void for_each_qp(F&& f) {
    for (auto& qp : qps_)
      if (qp) f(*qp);
  }

 private:
  bool handle_endpoint_packet(Instant now, const wire::Packet& packet, const RxMeta& meta);
  void handle_secure(Instant now, std::span<const uint8_t> datagram, const RxMeta& meta);
  void count(SecurityDrop drop);
  void count(wire::DecodeError error);
  // The next datagram from the prober or a QP, its ICRC field zero; 0 if none.
  size_t next_datagram(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  // The schedule reads the touched QPs again; update_schedule also lets QPs whose probe time
  // has come become candidates.
  void read_touched() const;
  void update_schedule(Instant now) const;
  uint32_t next_candidate(uint32_t from, uint32_t to) const {
    return schedule_->next_ready(0, from, to);
  }

  EndpointConfig config_;
  uint16_t ports_up_;                            // bit p: plane p's port is up (kMaxPlanes = 16)
  std::vector<std::unique_ptr<QueuePair>> qps_;  // index = qpn - kFirstQpn
  // Owned through a pointer: QPs keep its address, which must survive moving the endpoint.
  std::unique_ptr<Schedule> schedule_ = std::make_unique<Schedule>();
  uint32_t transmit_cursor_ = 0;  // the QP whose turn it is to transmit
  std::vector<uint32_t> due_;     // scratch for handle_timeout
  EvProber prober_;
  EndpointStats stats_;
  // Where a secure datagram is opened (headers, then the payload in the clear); sized at the
  // first one, so that endpoints without secure QPs hold nothing.
  std::vector<uint8_t> open_buffer_;
  MemoryRegionTable memory_;
  std::vector<std::unique_ptr<CompletionQueue>> cqs_;
  // Owned through a pointer for the same reason: the QPs' responders keep its address.
  std::unique_ptr<IncastDetector> incast_ = std::make_unique<IncastDetector>();
  // QPN layout (see above): the bits of kFirstQpn + index, and the tags' generator.
  uint32_t index_bits_;
  Prng qpn_tags_;
  // The table index a QPN names if it is one of ours; nullopt otherwise.
  std::optional<uint32_t> index_of(Qpn qpn) const;
  uint32_t partition_bits() const {
    return static_cast<uint32_t>(std::bit_width(config_.qpn_partitions - 1));
  }
};

}  // namespace mrc
