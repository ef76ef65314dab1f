// The native C++ API (include/mrc/mrc.hpp) on a device group (host/host.h): each shard's
// progress thread runs its datapath under the shard's lock and sleeps without it; API calls
// take the lock of the shard they touch and wake its thread (or, with caller-driven progress,
// the CQ calls run shard 0's rounds themselves while its thread stands by). A CQ has a queue in
// every shard; its eventfd is a semaphore holding 1 for each shard whose queue turned non-empty,
// taken back when poll() empties that queue, so it is readable exactly while one is not empty.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>

#include "core/endpoint.h"
#include "host/host.h"
#include "host/options.h"
#include "host/queue_pairs.h"
#include "io/device.h"
#include "io/udp_host.h"
#include "mrc/assert.hpp"
#include "mrc/mrc.hpp"
#include "secure/key_exchange.h"

namespace mrc {

// What the public classes hold (include/mrc/mrc.hpp keeps them opaque, so no engine or
// datapath name reaches a user's build).
struct Context::State {
  ContextOptions options;
  std::mutex objects_lock;  // qps (cqs grows holding every shard's lock: the shards read it)
  std::vector<std::unique_ptr<Cq>> cqs;  // by the devices' CQ tag (the same in every shard)
  std::vector<std::unique_ptr<Qp>> qps;
  std::unique_ptr<host::Host> devices;  // last: destroyed first, the progress threads with it

  std::mutex& mutex(uint32_t shard) const { return devices->shard(shard).lock(); }
  void signal_cqs(uint32_t shard, std::span<const uint32_t> tags);
};

struct Cq::State {
  Context::State* context = nullptr;
  // One engine queue per shard: a QP completes into the queue of its own shard. Each shard's
  // queue and its `signalled` flag are guarded by that shard's lock.
  std::vector<CompletionQueue*> queues;
  // The eventfd (a semaphore) holds 1 for every shard whose queue is non-empty and signalled.
  int event_fd = -1;
  std::vector<uint8_t> signalled;
  std::atomic<bool> notify{true};
  // With caller progress, whether event_fd() was asked for (wait() does not use it then).
  mutable std::atomic<bool> fd_wanted{false};
  std::atomic<uint32_t> next_shard{0};  // where poll() starts, in turn, so no shard starves

  void signal_locked(uint32_t shard);  // REQUIRES: shard's lock
  // What is waiting already, signalled: each shard under its lock, so no round falls between.
  void signal_waiting();
  // Whether a round signals this CQ: notification on and, with caller progress, the descriptor
  // asked for (wait() does not sleep on it then).
  bool rounds_signal() const;
  size_t poll_shard(uint32_t s, std::span<Completion> out);
};

struct Qp::State {
  Context::State* context = nullptr;
  host::HostQp placed;  // its shard (thread), the engine's QP, its PSN and key exchange

  io::Device& device() const { return context->devices->shard(placed.shard); }
  Result<Ok, Error> post(const SendWr& wr);
};

Context::Context(std::unique_ptr<State> state) : state_(std::move(state)) {}
Cq::Cq(std::unique_ptr<State> state) : state_(std::move(state)) {}
Cq::~Cq() = default;
Qp::Qp(std::unique_ptr<State> state) : state_(std::move(state)) {}
Qp::~Qp() = default;

std::string ConnectionInfo::to_string() const {
  std::ostringstream out;
  out << "mrc1 qpn=" << qpn << " psn=" << psn << " planes=";
  for (size_t i = 0; i < planes.size(); ++i) out << (i ? "," : "") << planes[i];
  if (backend != mrc::Backend::kUdp) out << " backend=" << mrc::to_string(backend);
  if (secure != SecureMode::kOff)
    out << " secure=" << mrc::to_string(secure) << " key=" << key_id << " share=" << key_share
        << " proof=" << key_proof;
  return out.str();
}

namespace {

// The optional `name=value` fields after planes=; false for one it does not know.
bool parse_option(const std::string& field, ConnectionInfo& info) {
  const size_t eq = field.find('=');
  if (eq == std::string::npos) return false;
  const std::string name = field.substr(0, eq);
  const std::string value = field.substr(eq + 1);
  if (name == "backend") {
    auto parsed = mrc::parse_backend(value);
    if (parsed.ok()) info.backend = parsed.value();
    return parsed.ok();
  }
  if (name == "secure") {
    auto mode = parse_secure_mode(value);
    if (mode.ok()) info.secure = mode.value();
    return mode.ok();
  }
  std::string* text = name == "key"     ? &info.key_id
                      : name == "share" ? &info.key_share
                      : name == "proof" ? &info.key_proof
                                        : nullptr;
  if (text != nullptr) *text = value;
  return text != nullptr;
}

}  // namespace

Result<ConnectionInfo, Error> ConnectionInfo::parse(const std::string& text) {
  std::istringstream in(text);
  std::string magic, qpn, psn, planes;
  in >> magic >> qpn >> psn >> planes;
  ConnectionInfo info;
  const auto number = [](const std::string& digits, uint32_t& out) {
    if (digits.empty() || digits.size() > 10 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    const unsigned long long v = std::stoull(digits);
    out = static_cast<uint32_t>(v);
    return v <= 0xFFFFFFFFull;
  };
  if (magic != "mrc1" || qpn.rfind("qpn=", 0) != 0 || psn.rfind("psn=", 0) != 0 ||
      planes.rfind("planes=", 0) != 0 || !number(qpn.substr(4), info.qpn) ||
      !number(psn.substr(4), info.psn))
    return fail(Errc::kInvalidArgument, "not an mrc connection string: '" + text + "'");
  std::istringstream list(planes.substr(7));
  for (std::string item; std::getline(list, item, ',');) info.planes.push_back(item);
  for (std::string field; in >> field;) {
    if (!parse_option(field, info))
      return fail(Errc::kInvalidArgument,
                  "not an mrc connection string: '" + text + "': bad field '" + field + "'");
  }
  return info;
}

Result<std::unique_ptr<Context>, Error> Context::open(const ContextOptions& options) {
  auto dc = host::device_config(options);
  if (!dc.ok()) return Err{dc.error()};
  auto devices = host::Host::open(dc.value(), options.threads);
  if (!devices.ok()) return Err{devices.error()};
  if (options.metrics_port >= 0) {
    if (options.metrics_port > 65535)
      return fail(Errc::kInvalidArgument, "ContextOptions::metrics_port " +
                                              std::to_string(options.metrics_port) +
                                              " is not a TCP port (-1: off, 0: a free one)");
    auto served = devices.value()->serve_metrics(options.metrics_bind,
                                                 static_cast<uint16_t>(options.metrics_port), {});
    if (!served.ok()) return fail(served.error(), "ContextOptions::metrics_port: ");
  }
  if (!options.pcap.empty()) {
    if (options.pcap_max_mib < 1 || options.pcap_max_mib > (uint64_t{1} << 20))
      return fail(Errc::kInvalidArgument, "ContextOptions::pcap_max_mib " +
                                              std::to_string(options.pcap_max_mib) +
                                              " is not a number of MiB in 1..1048576");
    auto captured = devices.value()->capture(options.pcap, options.pcap_max_mib << 20);
    if (!captured.ok()) return fail(captured.error(), "ContextOptions::pcap: ");
  }
  auto state = std::make_unique<State>();
  state->options = options;
  state->devices = std::move(devices.value());
  state->devices->on_completions(
      [c = state.get()](uint32_t shard, std::span<const uint32_t> tags) {
        c->signal_cqs(shard, tags);
      },
      options.caller_progress);
  state->devices->start_threads(0);
  return std::unique_ptr<Context>(new Context(std::move(state)));
}

Context::~Context() {
  state_->devices.reset();  // stops the progress threads before the CQs' descriptors close
  for (auto& cq : state_->cqs) close(cq->state_->event_fd);
}

// Holding shard `shard`'s lock, after its round: the CQs whose queue there turned non-empty add
// their 1 to the eventfd (a semaphore), which poll() takes back when that queue is empty again.
void Context::State::signal_cqs(uint32_t shard, std::span<const uint32_t> tags) {
  for (uint32_t tag : tags) {
    if (tag < cqs.size() && cqs[tag]->state_->rounds_signal())
      cqs[tag]->state_->signal_locked(shard);
  }
}

void Context::hand_back_progress() {
  if (!state_->options.caller_progress) return;
  for (uint32_t s = 0; s < state_->devices->size(); ++s) state_->devices->shard(s).hand_back();
}

uint16_t Context::metrics_port() const {
  return state_->devices->metrics_port();
}

int Context::planes() const {
  return state_->devices->planes();
}

uint32_t Context::alloc_pd() {
  return state_->devices->alloc_pd();
}

Result<MemoryRegionInfo, Error> Context::register_memory(uint32_t pd, void* address,
                                                         uint64_t length, uint32_t access) {
  auto r = state_->devices->register_region(pd, address, length, access);
  if (!r.ok()) return fail(r.error(), "register_memory: ");
  return r.value();
}

Result<Ok, Error> Context::deregister_memory(uint32_t lkey) {
  auto r = state_->devices->deregister(lkey);
  if (!r.ok()) return fail(r.error(), "deregister_memory: ");
  return Ok{};
}

// Every shard gets a queue for every CQ, so a CQ's tag is the same in all of them.
Cq* Context::create_cq(uint32_t capacity) {
  host::Host& devices = *state_->devices;
  auto cq_state = std::make_unique<Cq::State>();
  cq_state->context = state_.get();
  cq_state->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
  cq_state->signalled.assign(devices.size(), 0);
  std::unique_ptr<Cq> cq(new Cq(std::move(cq_state)));
  Cq* handle = cq.get();
  devices.with_all_locked([&] {
    for (uint32_t s = 0; s < devices.size(); ++s)
      cq->state_->queues.push_back(devices.shard(s).create_cq(capacity));
    state_->cqs.push_back(std::move(cq));  // its tag is its index in cqs
  });
  return handle;
}

Result<Qp*, Error> Context::create_qp(uint32_t pd, Cq* send_cq, Cq* recv_cq,
                                      const QpConfig& config) {
  if (send_cq == nullptr || recv_cq == nullptr)
    return fail(Errc::kInvalidArgument, "create_qp: send and receive CQs are required");
  std::lock_guard objects(state_->objects_lock);
  host::QpSpec spec;
  spec.config = config;
  spec.pd = pd;
  spec.send_cq = [send_cq](uint32_t shard) { return send_cq->state_->queues[shard]; };
  spec.recv_cq = [recv_cq](uint32_t shard) { return recv_cq->state_->queues[shard]; };
  spec.secure = state_->options.secure;
  spec.preshared_key = state_->options.preshared_key;
  auto placed = host::create_qp(*state_->devices, spec);
  if (!placed.ok()) return fail(placed.error(), "create_qp: ");
  auto qp_state = std::make_unique<Qp::State>();
  qp_state->context = state_.get();
  qp_state->placed = std::move(placed.value());
  state_->qps.push_back(std::unique_ptr<Qp>(new Qp(std::move(qp_state))));
  return state_->qps.back().get();
}

Result<Ok, Error> Context::destroy_qp(Qp* qp) {
  std::lock_guard objects(state_->objects_lock);
  const auto it = std::find_if(state_->qps.begin(), state_->qps.end(),
                               [&](const auto& handle) { return handle.get() == qp; });
  if (qp == nullptr || it == state_->qps.end())
    return fail(Errc::kInvalidArgument, "destroy_qp: not a queue pair of this context");
  host::destroy_qp(*state_->devices, qp->state_->placed);
  state_->qps.erase(it);
  return Ok{};
}

void Context::set_plane_up(int plane, bool up) {
  host::Host& devices = *state_->devices;
  for (uint32_t s = 0; s < devices.size(); ++s) {
    {
      std::lock_guard lock(state_->mutex(s));
      devices.shard(s).host().set_plane_up(plane, up);
    }
    devices.shard(s).wake();
  }
}

const mrc::UdpPlaneStats Context::plane_stats(int plane) const {
  return state_->devices->plane_stats(plane);
}

// ---- Cq ---------------------------------------------------------------------------------

// Holding shard s's lock: takes what its queue holds, and its 1 back from the eventfd once the
// queue is empty.
size_t Cq::State::poll_shard(uint32_t s, std::span<Completion> out) {
  std::lock_guard lock(context->mutex(s));
  const size_t n = queues[s]->poll(out);
  if (queues[s]->size() == 0 && signalled[s]) {
    uint64_t count = 0;
    (void)!read(event_fd, &count, sizeof count);
    signalled[s] = 0;
  }
  return n;
}

void Cq::State::signal_locked(uint32_t shard) {
  if (signalled[shard] || queues[shard]->size() == 0) return;
  const uint64_t one = 1;
  (void)!write(event_fd, &one, sizeof one);
  signalled[shard] = 1;
}

// With caller progress the descriptor is signalled from the first time it is asked for: what
// is waiting already is signalled now (as set_notify(true) does), so its reader misses nothing.
int Cq::event_fd() const {
  State& st = *state_;
  if (st.context->options.caller_progress && !st.fd_wanted.exchange(true) &&
      st.notify.load(std::memory_order_relaxed))
    st.signal_waiting();
  return st.event_fd;
}

void Cq::State::signal_waiting() {
  for (uint32_t s = 0; s < queues.size(); ++s) {
    std::lock_guard lock(context->mutex(s));
    signal_locked(s);
  }
}

bool Cq::State::rounds_signal() const {
  return notify.load(std::memory_order_relaxed) &&
         (!context->options.caller_progress || fd_wanted.load(std::memory_order_relaxed));
}

// A round that saw notification off skipped its signal; turning it on signals what such rounds
// left waiting (each shard under its lock, so no round falls between the two).
void Cq::set_notify(bool on) {
  state_->notify.store(on, std::memory_order_relaxed);
  if (on) state_->signal_waiting();
}

size_t Cq::poll(std::span<Completion> out) {
  State& st = *state_;
  if (st.context->options.caller_progress) st.context->devices->shard(0).progress(Duration{0});
  return take(out);
}

size_t Cq::take(std::span<Completion> out) {
  State& st = *state_;
  const uint32_t shards = static_cast<uint32_t>(st.queues.size());
  const uint32_t first = shards == 1 ? 0 : st.next_shard.fetch_add(1, std::memory_order_relaxed);
  size_t n = 0;
  for (uint32_t k = 0; k < shards && n < out.size(); ++k)
    n += st.poll_shard((first + k) % shards, out.subspan(n));
  return n;
}

size_t Cq::wait(std::span<Completion> out, int timeout_ms) {
  const size_t n = poll(out);
  if (n > 0) return n;
  Context::State& context = *state_->context;
  if (context.options.caller_progress) {  // run rounds until a completion or the deadline
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
      if (timeout_ms >= 0 && waited_ms >= timeout_ms) return 0;
      // Shard 0's sleep ends when another shard completes something (Host::on_completions).
      context.devices->shard(0).progress(
          Duration::from_ms(timeout_ms < 0 ? 10 : timeout_ms - waited_ms));
      if (const size_t m = poll(out); m > 0) return m;
    }
  }
  pollfd p{state_->event_fd, POLLIN, 0};
  ::poll(&p, 1, timeout_ms);
  return poll(out);
}

// ---- Qp ---------------------------------------------------------------------------------

uint32_t Qp::qpn() const {
  return state_->placed.qp->qpn().value;
}

QpState Qp::state() const {
  std::lock_guard lock(state_->device().lock());
  return state_->placed.qp->state();
}

ConnectionInfo Qp::local_info() const {
  ConnectionInfo info;
  info.qpn = qpn();
  info.psn = state_->placed.psn.value;
  for (const io::PlaneAddress& a : state_->device().config().planes)
    info.planes.push_back(io::to_string(a));
  info.backend = state_->context->options.backend;
  if (state_->placed.exchange) {
    const secure::KeyOffer offer = state_->placed.exchange->offer(info.qpn, info.psn);
    info.secure = offer.mode;
    info.key_id = offer.key_id;
    info.key_share = offer.share;
    info.key_proof = offer.proof;
  }
  return info;
}

Result<Ok, Error> Qp::connect(const ConnectionInfo& remote) {
  const ContextOptions& options = state_->context->options;
  host::RemoteQp peer{Qpn(remote.qpn), Psn(remote.psn), {}, {}, {}};
  for (const std::string& text : remote.planes) {
    auto a = io::parse_plane_address(text, options.port);
    if (!a.ok()) return fail(a.error(), "connect: ");
    peer.planes.push_back(a.value());
  }
  if (remote.backend != options.backend)
    return fail(Errc::kInvalidArgument,
                std::string("connect: the peer uses the ") + mrc::to_string(remote.backend) +
                    " backend and this context the " + mrc::to_string(options.backend) +
                    " backend: both ends need the same (their ICRCs differ)");
  peer.offer = secure::KeyOffer{remote.secure, remote.key_id, remote.key_share, remote.key_proof};
  peer.name = host::remote_name(remote.qpn, remote.planes);
  auto connected = host::connect_qp(*state_->context->devices, state_->placed, peer);
  if (!connected.ok()) return fail(connected.error(), "connect: ");
  return Ok{};
}

Result<Ok, Error> Qp::State::post(const SendWr& wr) {
  auto posted = host::post_send(*context->devices, placed, wr);
  if (!posted.ok()) return fail(posted.error(), "post: ");
  return Ok{};
}

Result<Ok, Error> Qp::post_write(uint64_t wr_id, std::span<const Sge> local, uint64_t remote_addr,
                                 uint32_t rkey, bool signaled) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = local.data();
  wr.num_sge = static_cast<uint32_t>(local.size());
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  wr.signaled = signaled;
  return state_->post(wr);
}

Result<Ok, Error> Qp::post_write_imm(uint64_t wr_id, std::span<const Sge> local,
                                     uint64_t remote_addr, uint32_t rkey, uint32_t immediate,
                                     bool signaled) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = SendOpcode::kWriteWithImm;
  wr.sg_list = local.data();
  wr.num_sge = static_cast<uint32_t>(local.size());
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  wr.immediate = immediate;
  wr.signaled = signaled;
  return state_->post(wr);
}

Result<Ok, Error> Qp::post_recv(uint64_t wr_id) {
  auto posted = host::post_recv(*state_->context->devices, state_->placed, wr_id);
  if (!posted.ok()) return fail(posted.error(), "post_recv: ");
  return Ok{};
}

QpStats Qp::stats() const {
  std::lock_guard lock(state_->device().lock());
  return state_->placed.qp->stats();
}

}  // namespace mrc
