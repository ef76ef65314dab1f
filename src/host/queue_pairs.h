// The queue-pair lifecycle on a host's shards (host.h), written once for the front doors that
// drive engine queue pairs themselves (the native API, `mrc perf`):
//   - create: the QP goes to a shard (the host's next in turn, or one named), gets the
//     datapath's settings for what the user left at 0 (Device::configure), is checked against
//     the shard's planes, and gets an initial PSN and, in secure mode, its key exchange;
//   - connect: to a peer QP at the peer's planes: the peer's key offer checked and the QP's
//     keys derived while it is still in RESET, the peer's planes added to the shard's peer
//     table, then RESET -> INIT -> RTR -> RTS;
//   - post, and destroy;
// each under its shard's lock. A front door with a connect flow of its own (the OCP device's
// verbs state machine, its keys agreed in band) creates, posts and destroys here and takes the
// peer from add_peer. Errors name what is wrong without the front door's spelling:
// the caller adds its own prefix ("connect: ", "queue pair 3: ").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "host/host.h"
#include "secure/key_exchange.h"

namespace mrc::host {

// A queue pair as the host placed it.
struct HostQp {
  uint32_t shard = 0;
  QueuePair* qp = nullptr;                        // the engine's, in that shard
  Psn psn;                                        // this end's initial PSN
  std::shared_ptr<secure::KeyExchange> exchange;  // secure mode only
};

struct QpSpec {
  QpConfig config;  // the user's settings; the datapath fills in what is left at 0
  uint32_t pd = 0;
  // The completion queues in the QP's shard (a CQ of a multi-shard front door has a queue in
  // each shard).
  std::function<CompletionQueue*(uint32_t shard)> send_cq, recv_cq;
  SecureMode secure = SecureMode::kOff;
  std::span<const uint8_t> preshared_key;  // secure mode: both ends hold it
  // Secure mode with the keys agreed over the QP's own path after it connects
  // (io::Device::agree_keys, the OCP device): no key exchange here, the QP waits for its keys.
  bool keys_in_band = false;
  std::optional<uint32_t> shard;  // where; default: the host's next in turn
};

// The peer QP, as its connection information says.
struct RemoteQp {
  Qpn qpn;
  Psn psn;
  std::vector<io::PlaneAddress> planes;  // where its shard listens, one per plane
  secure::KeyOffer offer;                // its secure mode and, if on, its key offer
  std::string name;                      // for messages: "queue pair 7 at 127.0.0.1"
};

// The connection information's peer name: "queue pair N at FIRST-PLANE".
std::string remote_name(uint32_t qpn, const std::vector<std::string>& planes);

Result<HostQp, Error> create_qp(Host& host, const QpSpec& spec);
// Where the QP `qpn` of a peer host of `threads` shards listens, given where its shard 0 listens
// (`planes`, one per plane): its shard's ports (port_plan.h), the shard read from the QPN
// (Endpoint::qpn_partition_of). For a front door whose peer names a QP by number only (the OCP
// device: a GID and a QPN).
std::vector<io::PlaneAddress> qp_planes(std::vector<io::PlaneAddress> planes, Qpn qpn,
                                        uint32_t threads);
// The handle of the peer with `planes` in `shard`'s peer table (added if new), after checking
// that it has as many planes as this host; `name` names it in the error. REQUIRES: the shard's
// lock.
Result<uint32_t, Error> add_peer(Host& host, uint32_t shard,
                                 const std::vector<io::PlaneAddress>& planes,
                                 const std::string& name);
Result<Ok, Error> connect_qp(Host& host, const HostQp& qp, const RemoteQp& remote);
// Ends any key agreement and removes the QP from its shard's engine.
void destroy_qp(Host& host, const HostQp& qp);
// Posts under the shard's lock and sends what it can at once if the shard's thread sleeps
// (Device::post_done).
Result<Ok, Error> post_send(Host& host, const HostQp& qp, const SendWr& wr);
Result<Ok, Error> post_recv(Host& host, const HostQp& qp, uint64_t wr_id);

}  // namespace mrc::host
