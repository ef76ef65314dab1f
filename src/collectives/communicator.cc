// Communicator setup and teardown: the store rendezvous (announce this rank and check that the
// ranks agree on the world, publish per-peer connection info, read the peers', connect, wait
// until every rank is connected) and the closing handshake (drain writes, then agree through
// the store that every rank has, so nobody's last packets are left without a receiver to
// acknowledge them). Every store wait goes through the FailureBoard, so a rank that failed ends
// the waits of the others at once.
#include "collectives/communicator.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "host/port_plan.h"

namespace mrc::coll {

QpConfig CommOptions::default_qp_config() {
  QpConfig qc;
  // Tolerate seconds-long stalls of a busy host (at least 8 s of retries: 8.6 s with the 4.2 ms
  // ACK timeout) before calling a peer gone.
  qc.timeout = 12;
  qc.retry_exp = retry_exp_for(qc, std::chrono::seconds(8));
  // NSCC's delay target 250 us, not the UDP datapath's 50 us: a rank's datapath runs only when
  // its process is scheduled and not reducing, so on a busy host SACKs leave hundreds of
  // microseconds late, and a lower target reads the ranks' own CPU contention as queueing and
  // holds the windows at a few packets (BENCHMARKS.md, "All-reduce over unshaped loopback
  // planes", has the targets measured on loopback and on shaped planes).
  qc.nscc.target_delay_ns = 250'000;
  return qc;
}

std::chrono::milliseconds retry_budget(const QpConfig& qp) {
  // Requester::rto: the ACK timeout for the first retry_linear + 1 tries, then doubling.
  const int64_t tries = qp.retry_linear + 1 + ((int64_t{2} << qp.retry_exp) - 2);
  return std::chrono::milliseconds(qp.ack_timeout().ns * tries / 1'000'000);
}

uint8_t retry_exp_for(const QpConfig& qp, std::chrono::milliseconds silence) {
  QpConfig q = qp;
  for (q.retry_exp = 0; q.retry_exp < 20 && retry_budget(q) < silence; ++q.retry_exp) {
  }
  return q.retry_exp;
}

void rank_ports(ContextOptions& context, uint16_t base_port, uint16_t ev_port_base,
                int local_rank) {
  host::PortPlan plan;
  plan.port = base_port;
  plan.ev_port_base = ev_port_base;
  plan.planes = std::max<size_t>(context.planes.size(), 1);
  plan.threads = std::max<uint32_t>(context.threads, 1);  // each thread its own ports
  const auto slot = static_cast<uint32_t>(local_rank);
  context.port = static_cast<uint16_t>(plan.receive_port(slot));
  context.ev_port_base = static_cast<uint16_t>(plan.ev_ports(slot).first);
}

const char* to_string(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kAuto:
      return "auto";
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kDirect:
      return "direct";
    case AllReduceAlgorithm::kRecursiveDoubling:
      return "recursive";
  }
  return "?";
}

uint32_t auto_chunk_bytes(int ranks, uint32_t slots) {
  constexpr uint32_t kLargest = 1u << 20, kSmallest = 256u << 10;
  const uint64_t per_chunk =
      2 * uint64_t{std::max(slots, 1u)} * static_cast<uint64_t>(std::max(ranks, 1));
  uint32_t chunk = kLargest;
  while (chunk > kSmallest && per_chunk * chunk > kAutoStagingBytes) chunk /= 2;
  return chunk;
}

Result<std::unique_ptr<Communicator>, Error> Communicator::create(Store& store,
                                                                  const CommOptions& options) {
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks)
    return fail(Errc::kInvalidArgument, "rank " + std::to_string(options.rank) + " of " +
                                            std::to_string(options.ranks) +
                                            ": need 0 <= rank < ranks");
  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = options.rank;
  c->ranks_ = options.ranks;
  c->options_ = options;
  if (c->options_.chunk_bytes == 0)
    c->options_.chunk_bytes = auto_chunk_bytes(options.ranks, options.slots);
  c->store_ = &store;
  c->board_ = std::make_unique<FailureBoard>(store, options.prefix + "/failed", options.rank,
                                             options.reports);
  ContextOptions context_options = options.context;
  context_options.caller_progress = options.caller_progress;
  auto context = Context::open(context_options);
  if (!context.ok()) return fail(context.error(), "rank " + std::to_string(options.rank) + ": ");
  c->context_ = std::move(context.value());
  TransportOptions to;
  to.chunk_bytes = c->options_.chunk_bytes;
  to.slots = options.slots;
  to.timeout = options.timeout;
  to.reports = options.reports;
  to.qp = options.qp;
  auto transport = Transport::create(*c->context_, options.rank, options.ranks, to);
  if (!transport.ok())
    return fail(transport.error(), "rank " + std::to_string(options.rank) + ": ");
  c->transport_ = std::move(transport.value());
  c->transport_->watch(c->board_.get());
  c->p2p_ = std::make_unique<PointToPoint>(*c->transport_);
  c->scratch_ = std::make_unique<uint8_t[]>(c->options_.chunk_bytes);
  auto connected = c->connect_all(store, options);
  if (!connected.ok()) {
    c->closed_ = true;  // nothing to drain; peers may never have connected
    return Err{c->publish_failure(connected.error())};
  }
  return c;
}

Error Communicator::publish_failure(const Error& error) {
  board_->publish(error.message);
  return error;
}

namespace {

// "ranks=N pid=P host=H comm=C": C tells apart two communicators of one process.
std::string hello_of(int ranks, const void* communicator) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '?';
  std::ostringstream out;
  out << "ranks=" << ranks << " pid=" << getpid() << " host=" << host << " comm=" << communicator;
  return out.str();
}

int ranks_in(const std::string& hello) {
  return hello.rfind("ranks=", 0) == 0 ? std::atoi(hello.c_str() + 6) : -1;
}

}  // namespace

// Every rank must see the same world size, and each rank number must belong to one process:
// otherwise the rendezvous waits for ranks that will never come. A second claimant of this
// rank overwrites our announcement, which every wait below checks for.
Result<Ok, Error> Communicator::check_world(Store& store, const CommOptions& options) {
  const std::string prefix = options.prefix + "/hello/";
  const std::string own_key = prefix + std::to_string(rank_);
  const std::string mine = hello_of(ranks_, this);
  auto r = store.set(own_key, mine);
  if (!r.ok()) return r;
  const FailureBoard::Check still_mine = [&]() -> std::optional<Error> {
    auto now = store.try_get(own_key);
    if (!now.ok() || !now.value() || *now.value() == mine) return std::nullopt;
    return Error{Errc::kInvalidState,
                 "rank " + std::to_string(rank_) + " is claimed by two processes: this one (" +
                     mine + ") and another (" + *now.value() + "); give each its own rank"};
  };
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    auto hello = board_->wait_for(prefix + std::to_string(p), options.timeout,
                                  "rank " + std::to_string(p) + " to join", still_mine);
    if (!hello.ok()) return Err{hello.error()};
    if (ranks_in(hello.value()) != ranks_)
      return fail(Errc::kInvalidArgument, "the ranks disagree on the world size: rank " +
                                              std::to_string(p) + " has " + hello.value() +
                                              ", rank " + std::to_string(rank_) + " has " + mine +
                                              "; start every rank with the same world size");
  }
  if (auto twice = still_mine()) return Err{*twice};
  return Ok{};
}

Result<Ok, Error> Communicator::connect_all(Store& store, const CommOptions& options) {
  auto world = check_world(store, options);
  if (!world.ok()) return world;
  const std::string prefix = options.prefix + "/conn/";
  const std::string me = std::to_string(rank_);
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    auto r = store.set(prefix + me + "/" + std::to_string(p), transport_->local_info(p));
    if (!r.ok()) return r;
  }
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    auto info = board_->wait_for(prefix + std::to_string(p) + "/" + me, options.timeout,
                                 "rank " + std::to_string(p) + "'s connection information");
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
    auto got = board_->wait_for(key + std::to_string(p), options_.timeout,
                                "rank " + std::to_string(p) + " to be " + name);
    if (!got.ok()) return Err{got.error()};
  }
  return Ok{};
}

Result<Ok, Error> Communicator::close() {
  if (closed_) return Ok{};
  closed_ = true;
  if (transport_->failed()) return Err{transport_->failure()};
  auto drained = transport_->drain();
  if (!drained.ok()) return drained;
  auto r = store_barrier("drained");
  if (!r.ok()) return Err{publish_failure(r.error())};
  // Rank 0 often hosts the store: it leaves last, once every rank has read the keys above.
  auto left = store_->set(options_.prefix + "/left/" + std::to_string(rank_), "1");
  if (!left.ok()) return left;
  if (rank_ == 0) {
    for (int p = 1; p < ranks_; ++p) {
      auto got = board_->wait_for(options_.prefix + "/left/" + std::to_string(p), options_.timeout,
                                  "rank " + std::to_string(p) + " to leave");
      if (!got.ok()) return Err{got.error()};
    }
  }
  return Ok{};
}

Communicator::~Communicator() {
  // A communicator destroyed without close() closes here; a close that fails now (not one that
  // had failed already, whose error its caller saw) is said, since nobody can return it.
  if (transport_ && !closed_) {
    const bool had_failed = failed();
    auto closed = close();
    if (!closed.ok() && !had_failed)
      board_->reports().emit("mrc: rank " + std::to_string(rank_) +
                             " closing its communicator: " + closed.error().message);
  }
  p2p_.reset();
  transport_.reset();  // before the context: deregisters the staging memory
}

Result<Ok, Error> Communicator::check_root(int root) const {
  if (root < 0 || root >= ranks_)
    return fail(Errc::kInvalidArgument, "root " + std::to_string(root) + " is not a rank (0.." +
                                            std::to_string(ranks_ - 1) + ")");
  return Ok{};
}

}  // namespace mrc::coll
