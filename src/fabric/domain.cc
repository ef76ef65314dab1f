// The domain: this host's planes as one mrc::Context, the provider's progress thread, and
// memory registration.
//
// The host settings (planes, ports, backend, secure mode, metrics, ...) are the table every front
// door shares (host/options.h), read from FI_MRC_* variables. FI_MRC_PLANES entries may be
// addresses, interface names or IPv4 prefixes, so one setting serves every host of a job.
// Several processes on a host each need their own UDP ports: the domain tries FI_MRC_PORT and
// the EV range from FI_MRC_EV_PORT_BASE, then the next ports and the next range (the next slot),
// while another process holds them.
//
// The progress thread waits (epoll) on the context's completion-queue descriptor, the
// endpoints' connection listeners and link sockets, and a wake descriptor, and handles each
// under the domain's lock.
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "fabric/provider.h"
#include "host/port_plan.h"
#include "io/device.h"
#include "io/netdev.h"

namespace mrc::fabric {
namespace {

const host::Spelling kSpelling{host::kDoorProvider, "FI_MRC_"};

// The context of this process's slot: the first k whose receive port (FI_MRC_PORT + k) and EV
// range (the k-th after FI_MRC_EV_PORT_BASE) are free, serving metrics on FI_MRC_METRICS_PORT
// + k if asked.
Result<std::unique_ptr<Context>, Error> open_context(const Settings& s) {
  ContextOptions o = s.host.context;
  // The application's thread that reads a CQ runs the datapath itself (MPI polls its CQ
  // anyway): no hand-off to another thread on the way, and no thread competing with it.
  o.caller_progress = true;
  host::PortPlan plan;  // one engine thread: the k-th try takes slot k
  plan.port = s.host.context.port;
  plan.ev_port_base = s.host.context.ev_port_base;
  plan.planes = o.planes.size();
  for (uint32_t k = 0;; ++k) {
    if (!plan.fits(k) || (o.metrics_port > 0 && s.host.context.metrics_port + k > 65535))
      return fail(
          Errc::kAddressInUse,
          "every UDP port from FI_MRC_PORT and EV range from FI_MRC_EV_PORT_BASE is in use");
    o.port = static_cast<uint16_t>(plan.receive_port(k));
    o.ev_port_base = static_cast<uint16_t>(plan.ev_ports(k).first);
    if (o.metrics_port > 0) o.metrics_port = s.host.context.metrics_port + static_cast<int32_t>(k);
    o.seed = (static_cast<uint64_t>(getpid()) << 16) ^ k;
    auto ctx = Context::open(o);
    if (ctx.ok() && o.metrics_port >= 0)
      std::fprintf(stderr, "mrc: libfabric domain: Prometheus metrics at http://%s:%u/metrics\n",
                   o.metrics_bind.c_str(), ctx.value()->metrics_port());
    if (ctx.ok() || ctx.error().code != Errc::kAddressInUse) return ctx;
  }
}

std::optional<std::string> check(const Settings& s) {
  if (s.slots < 2 || s.slots > static_cast<int>(kMaxSlots)) return "FI_MRC_SLOTS must be 2..128";
  if (s.slot_bytes < static_cast<int>(kMinSlotBytes) ||
      s.slot_bytes > static_cast<int>(kMaxSlotBytes))
    return "FI_MRC_SLOT_BYTES must be 1024..1048576";
  if (s.connect_timeout_ms < 1) return "FI_MRC_CONNECT_TIMEOUT_MS must be positive";
  if (s.peer_timeout_ms < 1) return "FI_MRC_PEER_TIMEOUT_MS must be positive";
  if (s.stall_report_ms < 0) return "FI_MRC_STALL_REPORT_MS must be 0 (off) or positive";
  if (s.mtu_bytes != 0 && (s.mtu_bytes < 256 || s.mtu_bytes > 9000))
    return "FI_MRC_MTU must be 256..9000 (or unset: from the planes' interfaces)";
  return std::nullopt;
}

WatchTag cq_tag{WatchKind::kCq, nullptr};
WatchTag wake_tag{WatchKind::kWake, nullptr};

// How long after the application's last poll the progress thread stands by: the hand-off the
// device's own progress thread makes to a caller that drives it (io::Device::kCallerHandoff).
constexpr int64_t kPollerHandoffNs = io::Device::kCallerHandoff.ns;

// The context's CQ in the progress thread's epoll set and signalling it, or neither.
void watch_cq(Domain& d, bool on) {
  if (on) {
    d.watch(d.cq->event_fd(), &cq_tag, false);
    d.cq->set_notify(true);  // (signals at once what came while it was off)
  } else {
    d.cq->set_notify(false);
    d.unwatch(d.cq->event_fd());
  }
}

// The progress thread: the connection manager's sockets always; the datapath's completions only
// while the application does not poll (an application that polls runs them in its CQ reads,
// and waking this thread for each completion cost more system calls than the message itself).
void progress_loop(Domain* d) {
  epoll_event events[32];
  bool watching = true;
  while (!d->stopping.load()) {
    {
      std::lock_guard lock(d->lock);
      d->graveyard.clear();
    }
    const int64_t polled_ago = now_ns() - d->polled_ns.load(std::memory_order_relaxed);
    const bool app_polls = polled_ago < kPollerHandoffNs;
    if (app_polls == watching) watch_cq(*d, watching = !app_polls);
    const int timeout_ms =
        app_polls ? static_cast<int>((kPollerHandoffNs - polled_ago) / 1000000) + 1 : 100;
    const int n = epoll_wait(d->epoll_fd, events, 32, timeout_ms);
    std::lock_guard lock(d->lock);
    for (int i = 0; i < n; ++i) {
      auto* tag = static_cast<WatchTag*>(events[i].data.ptr);
      switch (tag->kind) {
        case WatchKind::kWake: {
          uint64_t v;
          [[maybe_unused]] ssize_t r = ::read(d->wake_fd, &v, sizeof v);
          break;
        }
        case WatchKind::kListener: {
          Endpoint& ep = *static_cast<Endpoint*>(tag->object);
          if (ep.listen_fd >= 0) on_listener(ep);
          break;
        }
        case WatchKind::kTxControl:
          on_tx_control(*static_cast<TxLink*>(tag->object), events[i].events);
          break;
        case WatchKind::kRxControl:
          on_rx_control(*static_cast<RxLink*>(tag->object), events[i].events);
          break;
        case WatchKind::kCq:
          break;
      }
    }
    if (!app_polls) d->progress(false);
    check_timeouts(*d);
    report_stalls(*d);
  }
}

int mr_close(fid* f) {
  Mr* mr = reinterpret_cast<Mr*>(f);
  {
    std::lock_guard lock(mr->domain->lock);
    mr->domain->mrs.erase(mr->info.rkey);
    (void)mr->domain->context->deregister_memory(mr->info.lkey);
  }
  delete mr;
  return 0;
}

fi_ops mr_fi_ops{sizeof(fi_ops), mr_close, no_bind, no_control, no_ops_open, no_tostr, no_ops_set};

int mr_reg(fid* f, const void* buf, size_t len, uint64_t access, uint64_t, uint64_t, uint64_t flags,
           fid_mr** out, void* context) {
  Domain* d = reinterpret_cast<Domain*>(f);
  if (flags != 0) return -FI_EBADFLAGS;
  uint32_t rights = kAccessLocalWrite;
  // Peers write only what FI_REMOTE_WRITE opens; a read (FI_REMOTE_READ) is served by this end's
  // own write from the region, which its local key allows.
  if ((access & FI_REMOTE_WRITE) != 0) rights |= kAccessRemoteWrite;
  std::lock_guard lock(d->lock);
  // A zero-length or null registration (MPI registers such) names nothing; it gets a key of 0.
  auto* mr = new Mr();
  mr->domain = d;
  if (buf != nullptr && len != 0) {
    auto info = d->context->register_memory(d->pd, const_cast<void*>(buf), len, rights);
    if (!info.ok()) {
      delete mr;
      warn("fi_mr_reg: " + info.error().message);
      return -FI_ENOMEM;
    }
    mr->info = info.value();
    mr->access = access;
    d->mrs[mr->info.rkey] = mr;
  }
  mr->fid.fid.fclass = FI_CLASS_MR;
  mr->fid.fid.context = context;
  mr->fid.fid.ops = &mr_fi_ops;
  mr->fid.mem_desc = mr;
  mr->fid.key = mr->info.rkey;
  *out = &mr->fid;
  return 0;
}

int mr_regv(fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key,
            uint64_t flags, fid_mr** mr, void* context) {
  if (count > 1) return -FI_EINVAL;
  return mr_reg(f, count == 0 ? nullptr : iov[0].iov_base, count == 0 ? 0 : iov[0].iov_len, access,
                offset, key, flags, mr, context);
}

int mr_regattr(fid* f, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr) {
  return mr_regv(f, attr->mr_iov, attr->iov_count, attr->access, attr->offset, attr->requested_key,
                 flags, mr, attr->context);
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const Mr* readable(const Domain& d, uint32_t key, uint64_t address, uint64_t length) {
  const auto it = d.mrs.find(key);
  if (key == 0 || it == d.mrs.end() || (it->second->access & FI_REMOTE_READ) == 0) return nullptr;
  const MemoryRegionInfo& r = it->second->info;
  const bool inside = address >= r.address && length <= r.length &&
                      address - r.address <= r.length - length;  // (no overflow)
  return inside ? it->second : nullptr;
}

namespace {

// Every open domain, for stop_all_domains. Never destroyed: the library's destructor reads it at
// exit, after other static objects may be gone.
struct OpenDomains {
  std::mutex lock;
  std::vector<Domain*> all;
};
OpenDomains& open_domains() {
  static auto* o = new OpenDomains();
  return *o;
}

// Stops and joins the domain's threads: its progress thread, then (once the closed endpoints
// its last events might name are gone) the context's device threads, destroying the context.
// Idempotent. Called on the domain's progress thread or a device thread (a process whose exit
// handlers run there, as a signal handler calling exit() may), the threads are left to end with
// the process, and so is the context: this thread cannot join itself, and may hold the lock the
// others wait for.
void stop_threads(Domain& d) {
  d.stopping = true;
  d.wake();
  const bool ours =
      d.progress_thread.joinable() && d.progress_thread.get_id() == std::this_thread::get_id();
  if (ours || io::Device::on_progress_thread()) {
    if (d.progress_thread.joinable()) d.progress_thread.detach();
    (void)d.context.release();
    return;
  }
  if (d.progress_thread.joinable()) d.progress_thread.join();
  d.graveyard.clear();
  d.context.reset();
}

int domain_close(fid* f) {
  Domain* d = reinterpret_cast<Domain*>(f);
  {
    std::lock_guard lock(d->lock);
    if (!d->endpoints.empty()) return -FI_EBUSY;
  }
  {
    std::lock_guard lock(open_domains().lock);
    std::erase(open_domains().all, d);
  }
  stop_threads(*d);
  close(d->epoll_fd);
  close(d->wake_fd);
  delete d;
  return 0;
}

int no_scalable_ep(fid_domain*, fi_info*, fid_ep**, void*) {
  return -FI_ENOSYS;
}
int no_poll_open(fid_domain*, fi_poll_attr*, fid_poll**) {
  return -FI_ENOSYS;
}
int no_stx(fid_domain*, fi_tx_attr*, fid_stx**, void*) {
  return -FI_ENOSYS;
}
int no_srx(fid_domain*, fi_rx_attr*, fid_ep**, void*) {
  return -FI_ENOSYS;
}
int no_query_atomic(fid_domain*, fi_datatype, fi_op, fi_atomic_attr*, uint64_t) {
  return -FI_EOPNOTSUPP;
}
int no_query_collective(fid_domain*, fi_collective_op, fi_collective_attr*, uint64_t) {
  return -FI_EOPNOTSUPP;
}
int endpoint2(fid_domain* d, fi_info* info, fid_ep** ep, uint64_t flags, void* context) {
  return flags != 0 ? -FI_EINVAL : open_endpoint(d, info, ep, context);
}

fi_ops domain_fi_ops{sizeof(fi_ops), domain_close, no_bind,   no_control,
                     no_ops_open,    no_tostr,     no_ops_set};
fi_ops_domain domain_ops{
    sizeof(fi_ops_domain), open_av, open_cq, open_endpoint,   no_scalable_ep,      open_cntr,
    no_poll_open,          no_stx,  no_srx,  no_query_atomic, no_query_collective, endpoint2};
fi_ops_mr mr_ops{sizeof(fi_ops_mr), mr_reg, mr_regv, mr_regattr};

}  // namespace

std::optional<std::string> first_plane(const Settings& s) {
  if (!s.error.empty() || s.host.context.planes.empty()) return std::nullopt;
  return s.host.context.planes.front();
}

void Domain::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(wake_fd, &one, sizeof one);
}

void Domain::watch(int fd, void* tag, bool want_write) {
  epoll_event e{};
  e.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
  e.data.ptr = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &e) != 0) epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e);
}

void Domain::unwatch(int fd) {
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
}

int open_domain(fid_fabric*, fi_info* info, fid_domain** out, void* context) {
  if (info != nullptr && info->domain_attr != nullptr && info->domain_attr->name != nullptr &&
      std::strcmp(info->domain_attr->name, "mrc") != 0)
    return -FI_EINVAL;
  Settings s = settings();
  if (auto bad = s.error.empty() ? check(s) : s.error) {
    warn(*bad);
    return -FI_EINVAL;
  }
  if (auto finished = host::finish(s.host, kSpelling); !finished.ok()) {
    warn(finished.error().message);
    return -FI_EINVAL;
  }
  const std::vector<std::string> planes = s.host.context.planes;
  Settings config = s;
  if (config.mtu_bytes == 0) config.mtu_bytes = static_cast<int>(io::auto_payload_bytes(planes));
  auto ctx = open_context(s);
  if (!ctx.ok()) {
    std::string list;
    for (const std::string& p : planes) list += (list.empty() ? "" : ",") + p;
    warn("cannot open the planes " + list + ": " + ctx.error().message);
    return ctx.error().code == Errc::kAddressInUse ? -FI_EADDRINUSE : -FI_ENODEV;
  }
  auto* d = new Domain();
  d->config = config;
  d->context = std::move(ctx.value());
  d->planes = planes;
  d->pd = d->context->alloc_pd();
  d->cq = d->context->create_cq(65536);
  d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  d->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  d->watch(d->cq->event_fd(), &cq_tag, false);
  d->watch(d->wake_fd, &wake_tag, false);
  init_fid(d->fid, FI_CLASS_DOMAIN, context, &domain_fi_ops, &domain_ops);
  d->fid.mr = &mr_ops;
  d->progress_thread = std::thread(progress_loop, d);
  {
    std::lock_guard lock(open_domains().lock);
    open_domains().all.push_back(d);
  }
  *out = &d->fid;
  return 0;
}

void stop_all_domains() {
  std::vector<Domain*> open;
  {
    std::lock_guard lock(open_domains().lock);
    open.swap(open_domains().all);
  }
  for (Domain* d : open) stop_threads(*d);
}

void Domain::before_blocking() {
  if (polled_ns.exchange(0, std::memory_order_relaxed) != 0) wake();  // (to watch the CQ again)
  context->hand_back_progress();
}

void Domain::progress(bool drive) {
  Completion batch[64];
  for (;;) {
    const size_t n = drive ? cq->poll(batch) : cq->take(batch);
    for (size_t i = 0; i < n; ++i) {
      const Completion& c = batch[i];
      if (auto tx = tx_by_qpn.find(c.qpn.value); tx != tx_by_qpn.end())
        on_tx_completion(*tx->second, c);
      else if (auto rx = rx_by_qpn.find(c.qpn.value); rx != rx_by_qpn.end())
        on_rx_completion(*rx->second, c);
    }
    if (n < 64) break;
  }
  // Slots are taken once per round, so the credits for them go back in one write.
  for (RxLink* link : std::exchange(owing, {})) drain(*link);
  for (RxLink* link : arrivals) drain(*link);
  arrivals.clear();
}

}  // namespace mrc::fabric
