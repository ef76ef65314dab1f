// The packet pool (see packet.h): per thread, bounded; a recycled packet is reset to the
// defaults except for its byte buffer's capacity.
#include "sim/packet.h"

#include <cstring>
#include <memory>
#include <vector>

#include "core/wire/packet.h"

namespace mrc::sim {

namespace {

// At most this many idle packets are kept (a few MiB of buffers); beyond it they are freed.
constexpr size_t kMaxPooled = 1 << 16;

struct Pool {
  std::vector<SimPacket*> idle;
  ~Pool() {
    for (SimPacket* p : idle) delete p;
  }
};

Pool& pool() {
  thread_local Pool p;
  return p;
}

}  // namespace

void PacketRecycler::operator()(SimPacket* packet) const {
  Pool& p = pool();
  if (p.idle.size() >= kMaxPooled) {
    delete packet;
    return;
  }
  PacketBytes bytes = std::move(packet->bytes);
  bytes.clear();
  *packet = SimPacket{};
  packet->bytes = std::move(bytes);
  p.idle.push_back(packet);
}

PacketPtr make_packet() {
  Pool& p = pool();
  if (p.idle.empty()) return PacketPtr(new SimPacket());
  SimPacket* packet = p.idle.back();
  p.idle.pop_back();
  return PacketPtr(packet);
}

PacketPtr make_packet(const SimPacket& other) {
  PacketPtr packet = make_packet();
  PacketBytes bytes = std::move(packet->bytes);
  *packet = other;
  bytes.resize(other.bytes.size());  // no insert/assign: see PacketBytes
  if (!bytes.empty()) std::memcpy(bytes.data(), other.bytes.data(), bytes.size());
  packet->bytes = std::move(bytes);
  return packet;
}

void seal_deferred_icrc(SimPacket& packet) {
  if (!packet.icrc_deferred) return;
  packet.icrc_deferred = false;
  if (packet.bytes.size() < wire::kIcrcBytes) return;
  wire::seal(packet.bytes, packet.bytes.size() - wire::kIcrcBytes);
}

}  // namespace mrc::sim
