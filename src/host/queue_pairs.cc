// The queue-pair lifecycle on a host's shards (queue_pairs.h).
#include "host/queue_pairs.h"

#include "core/endpoint.h"
#include "host/port_plan.h"
#include "mrc/assert.hpp"
#include "mrc/verbs.hpp"

namespace mrc::host {

std::string remote_name(uint32_t qpn, const std::vector<std::string>& planes) {
  return "queue pair " + std::to_string(qpn) + " at " +
         (planes.empty() ? std::string("?") : planes.front());
}

Result<HostQp, Error> create_qp(Host& host, const QpSpec& spec) {
  // Not value_or(place_qp()): its argument would take a turn even when the shard is named.
  const uint32_t shard = spec.shard.has_value() ? *spec.shard : host.place_qp();
  if (shard >= host.size())
    return fail(Errc::kInvalidArgument, "shard " + std::to_string(shard) + " of " +
                                            std::to_string(host.size()) + " does not exist");
  io::Device& device = host.shard(shard);
  std::lock_guard lock(device.lock());
  QpConfig config = spec.config;
  device.configure(config, spec.secure);  // a secure QP's keys come at connect
  if (spec.keys_in_band) {
    config.security.mode = spec.secure;
    config.security.keys_later = spec.secure != SecureMode::kOff;
  }
  if (auto valid = config.validate(device.planes()); !valid.ok()) return Err{valid.error()};
  auto created =
      device.endpoint().create_qp(config, spec.pd, spec.send_cq(shard), spec.recv_cq(shard));
  if (!created.ok()) return Err{to_error(created.error())};
  HostQp qp{shard, created.value(), device.initial_psn(), nullptr};
  if (spec.secure != SecureMode::kOff && !spec.keys_in_band) {
    auto exchange = secure::KeyExchange::start(spec.secure, spec.preshared_key);
    if (!exchange.ok()) {
      MRC_ASSERT(device.endpoint().destroy_qp(qp.qp->qpn()).ok());  // created just above
      return Err{exchange.error()};
    }
    qp.exchange = std::make_shared<secure::KeyExchange>(std::move(exchange.value()));
  }
  return qp;
}

namespace {

// Secure mode: the peer's offer checked and the QP's keys derived before it leaves RESET; a
// plain QP checks that the peer is plain too. REQUIRES: the shard's lock.
Result<Ok, Error> agree_keys(const HostQp& qp, const RemoteQp& remote) {
  if (!qp.exchange)
    return secure::check_secure_modes(SecureMode::kOff, remote.offer.mode, remote.name);
  return qp.exchange->finish_for(*qp.qp, qp.psn.value, remote.offer, remote.qpn.value,
                                 remote.psn.value, remote.name);
}

}  // namespace

std::vector<io::PlaneAddress> qp_planes(std::vector<io::PlaneAddress> planes, Qpn qpn,
                                        uint32_t threads) {
  if (threads <= 1) return planes;
  const uint32_t shard = Endpoint::qpn_partition_of(qpn, threads, EndpointConfig{}.max_queue_pairs);
  if (shard >= threads) return planes;  // no QPN of such a host: its shard 0 will refuse it
  PortPlan plan;
  plan.threads = threads;
  for (io::PlaneAddress& a : planes) {
    plan.port = a.port;
    a.port = static_cast<uint16_t>(std::min<uint32_t>(plan.receive_port(0, shard), 65535));
  }
  return planes;
}

Result<uint32_t, Error> add_peer(Host& host, uint32_t shard,
                                 const std::vector<io::PlaneAddress>& planes,
                                 const std::string& name) {
  io::Device& device = host.shard(shard);
  if (static_cast<int>(planes.size()) != device.planes())
    return fail(Errc::kInvalidArgument, name + " has " + std::to_string(planes.size()) +
                                            " planes, this end " + std::to_string(device.planes()) +
                                            ": both ends need the same planes");
  return device.peer(planes);
}

Result<Ok, Error> connect_qp(Host& host, const HostQp& qp, const RemoteQp& remote) {
  io::Device& device = host.shard(qp.shard);
  std::lock_guard lock(device.lock());
  if (static_cast<int>(remote.planes.size()) != device.planes())
    return Err{add_peer(host, qp.shard, remote.planes, remote.name).error()};
  QueuePair& engine_qp = *qp.qp;
  if (engine_qp.state() != QpState::kReset)
    return fail(Errc::kInvalidState, std::string("the queue pair is in ") +
                                         to_string(engine_qp.state()) +
                                         "; connecting needs a new queue pair (RESET)");
  if (auto agreed = agree_keys(qp, remote); !agreed.ok()) return agreed;
  const auto peer = add_peer(host, qp.shard, remote.planes, remote.name);
  if (!peer.ok()) return Err{peer.error()};
  auto moved = engine_qp.to_init();
  if (moved.ok()) moved = engine_qp.to_rtr(RtrAttributes{remote.qpn, remote.psn, peer.value()});
  if (moved.ok()) moved = engine_qp.to_rts(RtsAttributes{qp.psn});
  if (!moved.ok()) return Err{to_error(moved.error())};
  return Ok{};
}

void destroy_qp(Host& host, const HostQp& qp) {
  io::Device& device = host.shard(qp.shard);
  std::lock_guard lock(device.lock());
  device.forget_keys(qp.qp->qpn());
  MRC_ASSERT(device.endpoint().destroy_qp(qp.qp->qpn()).ok());  // it exists: created here
}

Result<Ok, Error> post_send(Host& host, const HostQp& qp, const SendWr& wr) {
  io::Device& device = host.shard(qp.shard);
  Result<Ok, PostError> posted = Ok{};
  {
    std::lock_guard lock(device.lock());
    posted = qp.qp->post_send(wr);
    if (!posted.ok() && posted.error() == PostError::kQpState)
      return fail(Errc::kInvalidState, std::string("the queue pair is in ") +
                                           to_string(qp.qp->state()) +
                                           ", sends need RTS (call connect() first)");
    if (posted.ok()) device.post_done();
  }
  if (!posted.ok()) return Err{to_error(posted.error())};
  return Ok{};
}

Result<Ok, Error> post_recv(Host& host, const HostQp& qp, uint64_t wr_id) {
  std::lock_guard lock(host.shard(qp.shard).lock());
  auto posted = qp.qp->post_recv(wr_id);
  if (!posted.ok()) return Err{to_error(posted.error())};
  return Ok{};
}

}  // namespace mrc::host
