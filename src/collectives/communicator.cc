// Communicator setup and teardown: the store rendezvous (publish per-peer connection info,
// read the peers', connect, wait until every rank is connected) and the closing handshake
// (drain writes, then agree through the store that every rank has, so nobody's last packets
// are left without a receiver to acknowledge them).
#include "collectives/communicator.h"

#include <cstring>

namespace mrc::coll {

QpConfig CommOptions::default_qp_config() {
  QpConfig qc;
  // Tolerate seconds-long stalls of a busy host (~8 s of retries) before calling a peer gone.
  qc.timeout = 12;
  qc.retry_exp = 10;
  return qc;
}

void rank_ports(ContextOptions& context, uint16_t base_port, uint16_t ev_port_base,
                int local_rank) {
  const uint32_t stride = ev_source_ports(std::max<size_t>(context.planes.size(), 1));
  context.port = static_cast<uint16_t>(base_port + local_rank);
  context.ev_port_base =
      static_cast<uint16_t>(ev_port_base + static_cast<uint32_t>(local_rank) * stride);
}

const char* to_string(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kAuto:
      return "auto";
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kDirect:
      return "direct";
  }
  return "?";
}

Result<std::unique_ptr<Communicator>, Error> Communicator::create(Store& store,
                                                                  const CommOptions& options) {
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks)
    return Err{Error{"rank " + std::to_string(options.rank) + " of " +
                     std::to_string(options.ranks) + ": need 0 <= rank < ranks"}};
  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = options.rank;
  c->ranks_ = options.ranks;
  c->options_ = options;
  c->store_ = &store;
  ContextOptions context_options = options.context;
  context_options.caller_progress = options.caller_progress;
  auto context = Context::open(context_options);
  if (!context.ok())
    return Err{Error{"rank " + std::to_string(options.rank) + ": " + context.error().message}};
  c->context_ = std::move(context.value());
  TransportOptions to;
  to.chunk_bytes = options.chunk_bytes;
  to.slots = options.slots;
  to.timeout = options.timeout;
  to.qp = options.qp;
  auto transport = Transport::create(*c->context_, options.rank, options.ranks, to);
  if (!transport.ok())
    return Err{Error{"rank " + std::to_string(options.rank) + ": " + transport.error().message}};
  c->transport_ = std::move(transport.value());
  c->scratch_ = std::make_unique<uint8_t[]>(options.chunk_bytes);
  auto connected = c->connect_all(store, options);
  if (!connected.ok()) {
    c->closed_ = true;  // nothing to drain; peers may never have connected
    return Err{connected.error()};
  }
  return c;
}

Result<Ok, Error> Communicator::connect_all(Store& store, const CommOptions& options) {
  const std::string prefix = options.prefix + "/conn/";
  const std::string me = std::to_string(rank_);
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    auto r = store.set(prefix + me + "/" + std::to_string(p), transport_->local_info(p));
    if (!r.ok()) return r;
  }
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    auto info = store.get(prefix + std::to_string(p) + "/" + me, options.timeout);
    if (!info.ok()) return Err{info.error()};
    auto r = transport_->connect(p, info.value());
    if (!r.ok()) return r;
  }
  // Data may flow as soon as every rank has moved its queue pairs to RTS.
  return store_barrier("connected");
}

Result<Ok, Error> Communicator::store_barrier(const std::string& name) {
  const std::string key = options_.prefix + "/" + name + "/";
  auto r = store_->set(key + std::to_string(rank_), "1");
  if (!r.ok()) return r;
  for (int p = 0; p < ranks_; ++p) {
    auto got = store_->get(key + std::to_string(p), options_.timeout);
    if (!got.ok()) return Err{got.error()};
  }
  return Ok{};
}

Result<Ok, Error> Communicator::close() {
  if (closed_) return Ok{};
  closed_ = true;
  if (!transport_->failure().empty()) return Err{Error{transport_->failure()}};
  auto drained = transport_->drain();
  if (!drained.ok()) return drained;
  auto r = store_barrier("drained");
  if (!r.ok()) return r;
  // Rank 0 often hosts the store: it leaves last, once every rank has read the keys above.
  auto left = store_->set(options_.prefix + "/left/" + std::to_string(rank_), "1");
  if (!left.ok()) return left;
  if (rank_ == 0) {
    for (int p = 1; p < ranks_; ++p) {
      auto got = store_->get(options_.prefix + "/left/" + std::to_string(p), options_.timeout);
      if (!got.ok()) return Err{got.error()};
    }
  }
  return Ok{};
}

Communicator::~Communicator() {
  if (transport_) (void)close();
  transport_.reset();  // before the context: deregisters the staging memory
}

Result<Ok, Error> Communicator::check_root(int root) const {
  if (root < 0 || root >= ranks_)
    return Err{Error{"root " + std::to_string(root) + " is not a rank (0.." +
                     std::to_string(ranks_ - 1) + ")"}};
  return Ok{};
}

}  // namespace mrc::coll
