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
#include <chrono>
#include <sstream>

#include "core/endpoint.h"
#include "io/device.h"
#include "host/host.h"
#include "host/options.h"
#include "io/key_exchange.h"
#include "io/udp_host.h"
#include "mrc/assert.hpp"
#include "mrc/mrc.hpp"

namespace mrc {

std::mutex& Context::mutex(uint32_t shard) const {
  return devices_->shard(shard).lock();
}

std::string ConnectionInfo::to_string() const {
  std::ostringstream out;
  out << "mrc1 qpn=" << qpn << " psn=" << psn << " planes=";
  for (size_t i = 0; i < planes.size(); ++i) out << (i ? "," : "") << planes[i];
  if (backend != io::Backend::kUdp) out << " backend=" << io::to_string(backend);
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
    auto parsed = io::parse_backend(value);
    if (parsed.ok()) info.backend = parsed.value();
    return parsed.ok();
  }
  if (name == "secure") return parse_secure_mode(value, info.secure);
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
    auto served = devices.value()->serve_metrics(
        options.metrics_bind, static_cast<uint16_t>(options.metrics_port), {});
    if (!served.ok()) return fail(served.error(), "ContextOptions::metrics_port: ");
  }
  std::unique_ptr<Context> ctx(new Context());
  ctx->options_ = options;
  ctx->devices_ = std::move(devices.value());
  ctx->devices_->on_completions(
      [c = ctx.get()](uint32_t shard, std::span<const uint32_t> tags) {
        c->signal_cqs(shard, tags);
      },
      options.caller_progress);
  ctx->devices_->start_threads(0);
  return ctx;
}

Context::~Context() {
  devices_.reset();  // stops the progress threads before the CQs' descriptors close
  for (auto& cq : cqs_) close(cq->event_fd_);
}

// Holding shard `shard`'s lock, after its round: the CQs whose queue there turned non-empty add
// their 1 to the eventfd (a semaphore), which poll() takes back when that queue is empty again.
void Context::signal_cqs(uint32_t shard, std::span<const uint32_t> tags) {
  for (uint32_t tag : tags)
    if (tag < cqs_.size() && cqs_[tag]->notify_.load(std::memory_order_relaxed))
      cqs_[tag]->signal_locked(shard);
}

uint16_t Context::metrics_port() const {
  return devices_->metrics_port();
}

int Context::planes() const {
  return devices_->planes();
}

uint32_t Context::alloc_pd() {
  return devices_->alloc_pd();
}

Result<MemoryRegionInfo, Error> Context::register_memory(uint32_t pd, void* address,
                                                         uint64_t length, uint32_t access) {
  auto r = devices_->register_region(pd, address, length, access);
  if (!r.ok()) return fail(r.error(), "register_memory: ");
  return r.value();
}

Result<Ok, Error> Context::deregister_memory(uint32_t lkey) {
  auto r = devices_->deregister(lkey);
  if (!r.ok()) return fail(r.error(), "deregister_memory: ");
  return Ok{};
}

// Every shard gets a queue for every CQ, so a CQ's tag is the same in all of them.
Cq* Context::create_cq(uint32_t capacity) {
  auto cq = std::make_unique<Cq>();
  cq->context_ = this;
  cq->event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
  cq->signalled_.assign(devices_->size(), 0);
  Cq* handle = cq.get();
  devices_->with_all_locked([&] {
    for (uint32_t s = 0; s < devices_->size(); ++s)
      cq->queues_.push_back(devices_->shard(s).create_cq(capacity));
    cqs_.push_back(std::move(cq));  // its tag is its index in cqs_
  });
  return handle;
}

Result<Qp*, Error> Context::create_qp(uint32_t pd, Cq* send_cq, Cq* recv_cq,
                                      const QpConfig& config) {
  if (send_cq == nullptr || recv_cq == nullptr)
    return fail(Errc::kInvalidArgument, "create_qp: send and receive CQs are required");
  std::lock_guard objects(objects_lock_);
  const uint32_t shard = devices_->place_qp();
  io::Device& device = devices_->shard(shard);
  std::lock_guard lock(device.lock());
  QpConfig c = config;
  device.configure(c, options_.secure);  // a secure QP's keys come at connect()
  const std::string invalid = c.validate(device.planes());
  if (!invalid.empty()) return fail(Errc::kInvalidArgument, "create_qp: " + invalid);
  auto qp = device.endpoint().create_qp(c, pd, send_cq->queues_[shard], recv_cq->queues_[shard]);
  if (!qp.ok()) return fail(to_error(qp.error()), "create_qp: ");
  auto handle = std::make_unique<Qp>();
  handle->context_ = this;
  handle->shard_ = shard;
  handle->qp_ = qp.value();
  handle->psn_ = device.initial_psn().value;
  if (options_.secure != SecureMode::kOff) {
    auto exchange = io::KeyExchange::start(options_.secure, options_.preshared_key);
    if (!exchange.ok()) return fail(exchange.error(), "create_qp: ");
    handle->exchange_ = std::make_shared<io::KeyExchange>(std::move(exchange.value()));
  }
  qps_.push_back(std::move(handle));
  return qps_.back().get();
}

Result<Ok, Error> Context::destroy_qp(Qp* qp) {
  std::lock_guard objects(objects_lock_);
  const auto it = std::find_if(qps_.begin(), qps_.end(),
                               [&](const auto& handle) { return handle.get() == qp; });
  if (qp == nullptr || it == qps_.end())
    return fail(Errc::kInvalidArgument, "destroy_qp: not a queue pair of this context");
  {
    std::lock_guard lock(qp->device().lock());
    MRC_ASSERT(qp->device().endpoint().destroy_qp(qp->qp_->qpn()).ok());  // it exists: created here
  }
  qps_.erase(it);
  return Ok{};
}

void Context::set_plane_up(int plane, bool up) {
  for (uint32_t s = 0; s < devices_->size(); ++s) {
    {
      std::lock_guard lock(mutex(s));
      devices_->shard(s).host().set_plane_up(plane, up);
    }
    devices_->shard(s).wake();
  }
}

const io::UdpPlaneStats Context::plane_stats(int plane) const {
  return devices_->plane_stats(plane);
}

// ---- Cq ---------------------------------------------------------------------------------

// Holding shard s's lock: takes what its queue holds, and its 1 back from the eventfd once the
// queue is empty.
size_t Cq::poll_shard(uint32_t s, std::span<Completion> out) {
  std::lock_guard lock(context_->mutex(s));
  const size_t n = queues_[s]->poll(out);
  if (queues_[s]->size() == 0 && signalled_[s]) {
    uint64_t count = 0;
    (void)!read(event_fd_, &count, sizeof count);
    signalled_[s] = 0;
  }
  return n;
}

void Cq::signal_locked(uint32_t shard) {
  if (signalled_[shard] || queues_[shard]->size() == 0) return;
  const uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
  signalled_[shard] = 1;
}

// A round that saw notification off skipped its signal; turning it on signals what such rounds
// left waiting (each shard under its lock, so no round falls between the two).
void Cq::set_notify(bool on) {
  notify_.store(on, std::memory_order_relaxed);
  if (!on) return;
  for (uint32_t s = 0; s < queues_.size(); ++s) {
    std::lock_guard lock(context_->mutex(s));
    signal_locked(s);
  }
}

size_t Cq::poll(std::span<Completion> out) {
  if (context_->options_.caller_progress) context_->devices_->shard(0).progress(Duration{0});
  const uint32_t shards = static_cast<uint32_t>(queues_.size());
  const uint32_t first = shards == 1 ? 0 : next_shard_.fetch_add(1, std::memory_order_relaxed);
  size_t n = 0;
  for (uint32_t k = 0; k < shards && n < out.size(); ++k)
    n += poll_shard((first + k) % shards, out.subspan(n));
  return n;
}

size_t Cq::wait(std::span<Completion> out, int timeout_ms) {
  const size_t n = poll(out);
  if (n > 0) return n;
  if (context_->options_.caller_progress) {  // run rounds until a completion or the deadline
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
      if (timeout_ms >= 0 && waited_ms >= timeout_ms) return 0;
      // Shard 0's sleep ends when another shard completes something (Host::on_completions).
      context_->devices_->shard(0).progress(
          Duration::from_ms(timeout_ms < 0 ? 10 : timeout_ms - waited_ms));
      if (const size_t m = poll(out); m > 0) return m;
    }
  }
  pollfd p{event_fd_, POLLIN, 0};
  ::poll(&p, 1, timeout_ms);
  return poll(out);
}

// ---- Qp ---------------------------------------------------------------------------------

uint32_t Qp::qpn() const {
  return qp_->qpn().value;
}

io::Device& Qp::device() const {
  return context_->devices_->shard(shard_);
}

QpState Qp::state() const {
  std::lock_guard lock(device().lock());
  return qp_->state();
}

ConnectionInfo Qp::local_info() const {
  ConnectionInfo info;
  info.qpn = qpn();
  info.psn = psn_;
  for (const io::PlaneAddress& a : device().config().planes)
    info.planes.push_back(io::to_string(a));
  info.backend = context_->options_.backend;
  if (exchange_) {
    const io::KeyOffer offer = exchange_->offer(info.qpn, info.psn);
    info.secure = offer.mode;
    info.key_id = offer.key_id;
    info.key_share = offer.share;
    info.key_proof = offer.proof;
  }
  return info;
}

// Secure mode: the peer's offer checked and the QP's keys derived before it leaves RESET.
// REQUIRES: the device's lock.
Result<Ok, Error> Qp::agree_keys(const ConnectionInfo& remote) {
  const std::string peer_name = "queue pair " + std::to_string(remote.qpn) + " at " +
                                (remote.planes.empty() ? std::string("?") : remote.planes.front());
  if (!exchange_) return io::check_secure_modes(SecureMode::kOff, remote.secure, peer_name);
  const io::KeyOffer offer{remote.secure, remote.key_id, remote.key_share, remote.key_proof};
  return exchange_->finish_for(*qp_, psn_, offer, remote.qpn, remote.psn, peer_name);
}

Result<Ok, Error> Qp::connect(const ConnectionInfo& remote) {
  std::vector<io::PlaneAddress> addresses;
  for (const std::string& text : remote.planes) {
    auto a = io::parse_plane_address(text, context_->options_.port);
    if (!a.ok()) return fail(a.error(), "connect: ");
    addresses.push_back(a.value());
  }
  if (remote.backend != context_->options_.backend)
    return fail(Errc::kInvalidArgument,
                std::string("connect: the peer uses the ") + io::to_string(remote.backend) +
                    " backend and this context the " + io::to_string(context_->options_.backend) +
                    " backend: both ends need the same (their ICRCs differ)");
  std::lock_guard lock(device().lock());
  if (static_cast<int>(addresses.size()) != device().planes())
    return fail(Errc::kInvalidArgument,
                "connect: the peer has " + std::to_string(addresses.size()) +
                    " planes, this context " + std::to_string(device().planes()) +
                    ": both ends need the same planes");
  if (qp_->state() != QpState::kReset)
    return fail(Errc::kInvalidState, std::string("connect: the queue pair is in ") +
                                         to_string(qp_->state()) +
                                         "; connect() needs a new queue pair (RESET)");
  if (auto agreed = agree_keys(remote); !agreed.ok()) return fail(agreed.error(), "connect: ");
  const auto peer = device().peer(addresses);
  if (!peer.ok()) return fail(peer.error(), "connect: ");
  auto moved = qp_->to_init();
  if (moved.ok())
    moved = qp_->to_rtr(RtrAttributes{Qpn(remote.qpn), Psn(remote.psn), peer.value()});
  if (moved.ok()) moved = qp_->to_rts(RtsAttributes{Psn(psn_)});
  if (!moved.ok()) return fail(to_error(moved.error()), "connect: ");
  return Ok{};
}

Result<Ok, Error> Qp::post(const SendWr& wr) {
  Result<Ok, PostError> r = Ok{};
  {
    std::lock_guard lock(device().lock());
    r = qp_->post_send(wr);
    if (!r.ok() && r.error() == PostError::kQpState)
      return fail(Errc::kInvalidState, std::string("post: the queue pair is in ") +
                                           to_string(qp_->state()) +
                                           ", sends need RTS (call connect() first)");
  }
  if (!r.ok()) return fail(to_error(r.error()), "post: ");
  device().wake_after_post();
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
  return post(wr);
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
  return post(wr);
}

Result<Ok, Error> Qp::post_recv(uint64_t wr_id) {
  std::lock_guard lock(device().lock());
  auto r = qp_->post_recv(wr_id);
  if (!r.ok()) return fail(to_error(r.error()), "post_recv: ");
  return Ok{};
}

QpStats Qp::stats() const {
  std::lock_guard lock(device().lock());
  return qp_->stats();
}

}  // namespace mrc
