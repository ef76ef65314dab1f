// A simulated host: one protocol engine (core::Endpoint) attached to the fabric by one NIC port
// per plane, driven exactly as the UDP datapath drives it: datagrams in, poll_transmit when a
// port is idle, handle_timeout at the engine's deadline, port up/down events.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/endpoint.h"
#include "sim/event_queue.h"
#include "sim/fabric.h"
#include "sim/transport.h"

namespace mrc::sim {

class alignas(64) SimHost final : public SimTransport {
 public:
  SimHost(HostId id, Fabric& fabric, const EndpointConfig& config);  // on fabric.events()

  Endpoint& endpoint() { return endpoint_; }
  HostId id() const { return id_; }

  // Fabric callbacks.
  void on_deliver(PlaneId plane, PacketPtr packet) override;
  void on_port_ready(PlaneId plane) override;
  void on_port_state(PlaneId plane, bool up) override;

  // Gives every idle port a chance to send and re-arms the engine's timer; call after posting.
  void kick() override;

 private:
  bool transmit_on(PlaneId plane);  // whether a packet was sent
  // Every idle port in plane order while the engine wants to send, then the timer (kick's body).
  void offer_ports(bool more);
  bool port_idle(PlaneId plane) const {
    return ask_fabric_ ? fabric_.port_idle(id_, plane) : ((busy_ports_ >> plane.value) & 1) == 0;
  }
  void arm_timer();
  void on_timer(uint64_t generation);
  // The engine's deadline: an event that prefetches, as the fabric's do (event_queue.h):
  // stage 0 the host, 1 its engine.
  struct Timer {
    SimHost* host;
    uint64_t generation;
    void operator()() const { host->on_timer(generation); }
    void prefetch(int stage) const;
  };

  // What every event of the host reads is its first line (the vtable pointer and these, up to
  // ask_fabric_), then the engine's first line.
  HostId id_;
  // The ports serializing a packet (bit p = plane p), kept here so that the questions of every
  // kick need not read the fabric's links: set after a transmit that left the port busy,
  // cleared at port_ready (which always follows: the uplink has no queue). Where switches can
  // pause a host's uplink (lossless links) a port may be idle yet not ready, so the fabric is
  // asked instead (ask_fabric_).
  uint32_t busy_ports_ = 0;
  Fabric& fabric_;   // and through it the event queue (its line is read by every event anyway)
  PacketPtr spare_;  // bytes sized for any datagram, handed to the engine to write into
  uint8_t* spare_bytes_ = nullptr;  // its bytes (kMaxDatagramBytes), so an opportunity with
                                    // nothing to send does not read the packet
  Instant timer_at_ = Instant::never();
  bool ask_fabric_ = false;
  Endpoint endpoint_;
  uint64_t timer_generation_ = 0;
};

}  // namespace mrc::sim
