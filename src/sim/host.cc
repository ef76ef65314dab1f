// SimHost: the simulator's datapath. One packet per idle port per opportunity (the port then
// serializes it and calls back), one pending timer event at the engine's earliest deadline
// (older timer events are ignored by generation). The engine writes each datagram into the
// packet that carries it.
#include "sim/host.h"

#include "mrc/assert.hpp"
#include "util/prefetch.h"

namespace mrc::sim {

SimHost::SimHost(HostId id, Fabric& fabric, const EndpointConfig& config)
    : id_(id), fabric_(fabric), ask_fabric_(fabric.can_pause_hosts()), endpoint_(config) {
  fabric.set_host_lines(id, Fabric::HostLines{this, &endpoint_});
}

void SimHost::Timer::prefetch(int stage) const {
  if (stage == 0) {
    mrc::prefetch(host);
  } else {
    mrc::prefetch(&host->endpoint_);
  }
}

void SimHost::on_deliver(PlaneId plane, PacketPtr packet) {
  RxMeta meta{plane, packet->ev, packet->ecn_ce, packet->trimmed, packet->source_host};
  meta.icrc_checked = packet->icrc_deferred;  // bytes unchanged since the sender wrote them
  endpoint_.handle_datagram(fabric_.events().now(), packet->bytes, meta);
  kick();
}

void SimHost::on_port_ready(PlaneId plane) {
  busy_ports_ &= ~(1u << plane.value);
  // This port first; if the engine still has something, every idle port (kick): an EV probe
  // may have come due for a plane whose port went idle earlier, and only an event of this host
  // would otherwise send it.
  transmit_on(plane);
  offer_ports(endpoint_.wants_to_send(fabric_.events().now()));
}

void SimHost::on_port_state(PlaneId plane, bool up) {
  endpoint_.set_port_up(plane, up, fabric_.events().now());
  kick();
}

// Each idle port gets a packet while the engine has one: once it has nothing, the remaining
// planes' polls would find nothing either (Endpoint::wants_to_send is a superset of what a poll
// sends). A poll that sends nothing changes nothing, so the engine is asked again only after a
// send.
void SimHost::kick() {
  offer_ports(endpoint_.wants_to_send(fabric_.events().now()));
}

// `more`: what the engine last said of wanting to send, so it is not asked twice in a row.
void SimHost::offer_ports(bool more) {
  const Instant now = fabric_.events().now();
  for (uint32_t p = 0; p < fabric_.planes() && more; ++p) {
    if (transmit_on(PlaneId(static_cast<uint8_t>(p)))) more = endpoint_.wants_to_send(now);
  }
  arm_timer();
}

bool SimHost::transmit_on(PlaneId plane) {
  if (!port_idle(plane) || !endpoint_.port_up(plane)) return false;
  // The engine writes the datagram straight into the packet's bytes (sized without zeroing);
  // a packet it had nothing for waits for the next opportunity.
  if (spare_ == nullptr) {
    spare_ = make_packet();
    spare_->bytes.resize(wire::kMaxDatagramBytes);
    spare_bytes_ = spare_->bytes.data();
  }
  TxMeta meta;
  const size_t n = endpoint_.poll_transmit(fabric_.events().now(), plane,
                                           {spare_bytes_, wire::kMaxDatagramBytes}, meta);
  if (n == 0) return false;
  PacketPtr packet = std::move(spare_);
  packet->bytes.resize(n);
  packet->dest_host = meta.peer;
  packet->plane = plane;
  packet->ev = meta.ev;
  packet->trimmable = meta.is_data;
  packet->high_priority = !meta.is_data;
  packet->trim_to_bytes = meta.header_bytes;
  packet->icrc_deferred = meta.icrc_deferred;
  fabric_.transmit(id_, plane, std::move(packet));
  if (!fabric_.port_idle(id_, plane))
    busy_ports_ |= 1u << plane.value;  // not if dropped at once (port down)
  return true;
}

void SimHost::arm_timer() {
  const Instant deadline = endpoint_.next_deadline();
  if (deadline.is_never() || deadline >= timer_at_) return;
  timer_at_ = deadline;
  const uint64_t generation = ++timer_generation_;
  fabric_.events().schedule(deadline, Timer{this, generation});
}

void SimHost::on_timer(uint64_t generation) {
  if (generation != timer_generation_) return;
  timer_at_ = Instant::never();
  endpoint_.handle_timeout(fabric_.events().now());
  kick();
}

}  // namespace mrc::sim
