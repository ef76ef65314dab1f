// The native C++ API (include/mrc/mrc.hpp) on a device (io/device.h): the device's progress
// thread runs the datapath under the device's lock and sleeps without it; API calls take the
// lock and wake the thread (or, with caller-driven progress, the CQ calls run the rounds
// themselves while the thread stands by). A CQ's eventfd is made readable when the device
// reports that the CQ turned non-empty, and reset when poll() empties it.
#include "mrc/mrc.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <sstream>

namespace mrc {

std::string ConnectionInfo::to_string() const {
  std::ostringstream out;
  out << "mrc1 qpn=" << qpn << " psn=" << psn << " planes=";
  for (size_t i = 0; i < planes.size(); ++i) out << (i ? "," : "") << planes[i];
  if (backend != io::Backend::kUdp) out << " backend=" << io::to_string(backend);
  return out.str();
}

Result<ConnectionInfo, ApiError> ConnectionInfo::parse(const std::string& text) {
  std::istringstream in(text);
  std::string magic, qpn, psn, planes, backend;
  in >> magic >> qpn >> psn >> planes >> backend;
  ConnectionInfo info;
  const auto number = [](const std::string& digits, uint32_t& out) {
    if (digits.empty() || digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
    const unsigned long long v = std::stoull(digits);
    out = static_cast<uint32_t>(v);
    return v <= 0xFFFFFFFFull;
  };
  if (magic != "mrc1" || qpn.rfind("qpn=", 0) != 0 || psn.rfind("psn=", 0) != 0 || planes.rfind("planes=", 0) != 0 ||
      !number(qpn.substr(4), info.qpn) || !number(psn.substr(4), info.psn))
    return Err{ApiError{"not an mrc connection string: '" + text + "'"}};
  std::istringstream list(planes.substr(7));
  for (std::string item; std::getline(list, item, ',');) info.planes.push_back(item);
  if (!backend.empty()) {
    auto parsed = io::parse_backend(backend.rfind("backend=", 0) == 0 ? backend.substr(8) : "");
    if (!parsed.ok()) return Err{ApiError{"not an mrc connection string: '" + text + "': " + parsed.error()}};
    info.backend = parsed.value();
  }
  return info;
}

Result<std::unique_ptr<Context>, ApiError> Context::open(const ContextOptions& options) {
  io::DeviceConfig dc;
  for (const std::string& text : options.planes) {
    auto a = io::parse_plane_address(text, options.port);
    if (!a.ok()) return Err{ApiError{a.error()}};
    dc.planes.push_back(a.value());
  }
  if (dc.planes.empty()) return Err{ApiError{"a context needs at least one plane address"}};
  dc.ev_port_base = options.ev_port_base;
  dc.impairment = options.impairment;
  dc.gso = options.gso;
  dc.backend = options.backend;
  dc.seed = options.seed;
  dc.port_setting = options.port_setting;
  dc.ev_port_setting = options.ev_port_setting;
  auto device = io::Device::open(dc);
  if (!device.ok()) return Err{ApiError{device.error()}};
  std::unique_ptr<Context> ctx(new Context());
  ctx->options_ = options;
  ctx->device_ = std::move(device.value());
  ctx->device_->on_completions([c = ctx.get()](std::span<const uint32_t> tags) { c->signal_cqs(tags); });
  ctx->device_->start_thread();
  return ctx;
}

Context::~Context() {
  device_.reset();  // stops the progress thread before the CQs' descriptors close
  for (auto& cq : cqs_) close(cq->event_fd_);
}

// Holding the lock, after a round: the CQs that turned non-empty make their eventfd readable.
void Context::signal_cqs(std::span<const uint32_t> tags) {
  for (uint32_t tag : tags) {
    if (tag >= cqs_.size()) continue;
    Cq& cq = *cqs_[tag];
    if (cq.signalled_ || cq.queue_->size() == 0) continue;
    const uint64_t one = 1;
    (void)!write(cq.event_fd_, &one, sizeof one);
    cq.signalled_ = true;
  }
}

int Context::planes() const { return device_->planes(); }

uint32_t Context::alloc_pd() {
  std::lock_guard lock(mutex());
  return device_->endpoint().memory().alloc_pd();
}

Result<MemoryRegionInfo, ApiError> Context::register_memory(uint32_t pd, void* address, uint64_t length,
                                                            uint32_t access) {
  std::lock_guard lock(mutex());
  auto r = device_->endpoint().memory().register_region(pd, address, length, access);
  if (!r.ok()) return Err{ApiError{std::string("register_memory: ") + to_string(r.error())}};
  return r.value();
}

Result<Ok, ApiError> Context::deregister_memory(uint32_t lkey) {
  std::lock_guard lock(mutex());
  auto r = device_->endpoint().memory().deregister(lkey);
  if (!r.ok()) return Err{ApiError{std::string("deregister_memory: ") + to_string(r.error())}};
  return Ok{};
}

Cq* Context::create_cq(uint32_t capacity) {
  std::lock_guard lock(mutex());
  auto cq = std::make_unique<Cq>();
  cq->context_ = this;
  cq->queue_ = device_->create_cq(capacity);  // its tag is its index in cqs_
  cq->event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  cqs_.push_back(std::move(cq));
  return cqs_.back().get();
}

Result<Qp*, ApiError> Context::create_qp(uint32_t pd, Cq* send_cq, Cq* recv_cq, const QpConfig& config) {
  std::lock_guard lock(mutex());
  QpConfig c = config;
  device_->configure(c);
  const std::string invalid = c.validate(device_->planes());
  if (!invalid.empty()) return Err{ApiError{"create_qp: " + invalid}};
  if (send_cq == nullptr || recv_cq == nullptr) return Err{ApiError{"create_qp: send and receive CQs are required"}};
  auto qp = device_->endpoint().create_qp(c, pd, send_cq->queue_, recv_cq->queue_);
  if (!qp.ok()) return Err{ApiError{std::string("create_qp: ") + to_string(qp.error())}};
  auto handle = std::make_unique<Qp>();
  handle->context_ = this;
  handle->qp_ = qp.value();
  handle->psn_ = device_->initial_psn().value;
  qps_.push_back(std::move(handle));
  return qps_.back().get();
}

void Context::set_plane_up(int plane, bool up) {
  {
    std::lock_guard lock(mutex());
    device_->host().set_plane_up(plane, up);
  }
  device_->wake();
}

const io::UdpPlaneStats Context::plane_stats(int plane) const {
  std::lock_guard lock(mutex());
  return device_->host().plane_stats(plane);
}

// ---- Cq ---------------------------------------------------------------------------------

size_t Cq::poll(std::span<Completion> out) {
  if (context_->options_.caller_progress) context_->device_->progress(Duration{0});
  std::lock_guard lock(context_->mutex());
  const size_t n = queue_->poll(out);
  if (queue_->size() == 0 && signalled_) {
    uint64_t count = 0;
    (void)!read(event_fd_, &count, sizeof count);
    signalled_ = false;
  }
  return n;
}

size_t Cq::wait(std::span<Completion> out, int timeout_ms) {
  const size_t n = poll(out);
  if (n > 0) return n;
  if (context_->options_.caller_progress) {  // run rounds until a completion or the deadline
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
      if (timeout_ms >= 0 && waited_ms >= timeout_ms) return 0;
      context_->device_->progress(Duration::from_ms(timeout_ms < 0 ? 10 : timeout_ms - waited_ms));
      if (const size_t m = poll(out); m > 0) return m;
    }
  }
  pollfd p{event_fd_, POLLIN, 0};
  ::poll(&p, 1, timeout_ms);
  return poll(out);
}

// ---- Qp ---------------------------------------------------------------------------------

uint32_t Qp::qpn() const { return qp_->qpn().value; }

QpState Qp::state() const {
  std::lock_guard lock(context_->mutex());
  return qp_->state();
}

ConnectionInfo Qp::local_info() const {
  ConnectionInfo info;
  info.qpn = qpn();
  info.psn = psn_;
  for (const std::string& text : context_->options_.planes)
    info.planes.push_back(io::to_string(io::parse_plane_address(text, context_->options_.port).value()));
  info.backend = context_->options_.backend;
  return info;
}

Result<Ok, ApiError> Qp::connect(const ConnectionInfo& remote) {
  std::vector<io::PlaneAddress> addresses;
  for (const std::string& text : remote.planes) {
    auto a = io::parse_plane_address(text, context_->options_.port);
    if (!a.ok()) return Err{ApiError{"connect: " + a.error()}};
    addresses.push_back(a.value());
  }
  if (remote.backend != context_->options_.backend)
    return Err{ApiError{std::string("connect: the peer uses the ") + io::to_string(remote.backend) +
                        " backend and this context the " + io::to_string(context_->options_.backend) +
                        " backend: both ends need the same (their ICRCs differ)"}};
  std::lock_guard lock(context_->mutex());
  if (static_cast<int>(addresses.size()) != context_->device_->planes())
    return Err{ApiError{"connect: the peer has " + std::to_string(addresses.size()) + " planes, this context " +
                        std::to_string(context_->device_->planes()) + ": both ends need the same planes"}};
  if (qp_->state() != QpState::kReset)
    return Err{ApiError{std::string("connect: the queue pair is in ") + to_string(qp_->state()) +
                        "; connect() needs a new queue pair (RESET)"}};
  const uint32_t peer = context_->device_->peer(addresses);
  auto moved = qp_->to_init();
  if (moved.ok()) moved = qp_->to_rtr(RtrAttributes{Qpn(remote.qpn), Psn(remote.psn), peer});
  if (moved.ok()) moved = qp_->to_rts(RtsAttributes{Psn(psn_)});
  if (!moved.ok()) return Err{ApiError{std::string("connect: ") + to_string(moved.error())}};
  return Ok{};
}

Result<Ok, ApiError> Qp::post(const SendWr& wr) {
  Result<Ok, PostError> r = Ok{};
  {
    std::lock_guard lock(context_->mutex());
    r = qp_->post_send(wr);
    if (!r.ok() && r.error() == PostError::kQpState)
      return Err{ApiError{std::string("post: the queue pair is in ") + to_string(qp_->state()) +
                          ", sends need RTS (call connect() first)"}};
  }
  if (!r.ok()) return Err{ApiError{std::string("post: ") + to_string(r.error())}};
  context_->device_->wake();
  return Ok{};
}

Result<Ok, ApiError> Qp::post_write(uint64_t wr_id, std::span<const Sge> local, uint64_t remote_addr,
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

Result<Ok, ApiError> Qp::post_write_imm(uint64_t wr_id, std::span<const Sge> local, uint64_t remote_addr,
                                        uint32_t rkey, uint32_t immediate, bool signaled) {
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

Result<Ok, ApiError> Qp::post_recv(uint64_t wr_id) {
  std::lock_guard lock(context_->mutex());
  auto r = qp_->post_recv(wr_id);
  if (!r.ok()) return Err{ApiError{std::string("post_recv: ") + to_string(r.error())}};
  return Ok{};
}

QpStats Qp::stats() const {
  std::lock_guard lock(context_->mutex());
  return qp_->stats();
}

}  // namespace mrc
