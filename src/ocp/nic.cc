// The software NIC behind an opened mrc verbs device: one host::Host per device and process
// (`threads=` shards, each an engine, UDP datapath, progress thread and peer table under its
// own lock; shard 0's is the Nic's mutex), shared by every ibv_open_device() of it. After each
// round a shard's thread delivers what an application waits for outside the CQs, for its own
// QPs and queues: completion-channel events for armed CQs that turned non-empty there,
// asynchronous events (a QP entering ERROR; shard 0: a port going down or up) and EV events.
// Each opened device is also served to other processes on its control socket (ctl_server.h)
// unless MRC_CTL_SOCKET=off.
// A device is one process's: its UDP ports are bound by the owner, so a second process's open
// finds them in use. It then connects to the owner's control socket (a controller-only device,
// ctl_remote.h); if nobody serves it, the open fails with EBUSY. Either way the second process
// is told once which process owns the device and what to change (the `port=` / `ev-ports=` of
// the device's configuration entry, or another device).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "host/metrics.h"
#include "io/port_holder.h"
#include "mrc/mrc.hpp"
#include "ocp/ctl.h"
#include "ocp/ctl_server.h"
#include "ocp/ctl_socket.h"
#include "ocp/ocp_internal.h"
#include "util/errno_map.h"

namespace mrc::ocp {

namespace {

std::mutex g_nics_mutex;
// Never destroyed: at exit() the progress threads simply end with the process.
auto& g_nics = *new std::vector<std::unique_ptr<Nic>>();  // index = device index

Result<std::unique_ptr<host::Host>, Error> open_host(const DeviceSpec& spec, std::mutex& lock) {
  host::Options o = spec.host;
  o.context.secure = SecureMode::kOff;  // the device's QPs agree their keys in band (nic->key)
  // What a library user changes, in the error of a port in use: the device's entry.
  const std::string entry =
      " in " + spec.name + "'s entry of " + device_config().source + ", or open another device";
  o.context.port_setting = "port=" + entry;
  o.context.ev_port_setting = "ev-port-base=" + entry;
  auto dc = host::device_config(o.context);
  if (!dc.ok()) return Err{dc.error()};
  dc.value().planes = spec.planes;  // each on the entry's port
  return host::Host::open(dc.value(), o.context.threads, &lock);
}

// pcap=: every datagram the device's shards send and receive, in one capture file.
Result<Ok, Error> start_capture(Nic& nic) {
  const ContextOptions& c = nic.spec->host.context;
  if (c.pcap.empty()) return Ok{};
  auto captured = nic.host->capture(c.pcap, c.pcap_max_mib << 20);
  if (!captured.ok()) return fail(captured.error(), "pcap=: ");
  return Ok{};
}

// metrics-port=: the device's Prometheus metrics, rendered at each scrape holding every shard's
// lock.
Result<Ok, Error> serve_metrics(Nic& nic) {
  const ContextOptions& c = nic.spec->host.context;
  if (c.metrics_port < 0) return Ok{};
  auto served = nic.host->serve_metrics(c.metrics_bind, static_cast<uint16_t>(c.metrics_port),
                                        {{{"device", nic.spec->name}}, false});
  if (!served.ok()) return fail(served.error(), "metrics-port=: ");
  std::fprintf(stderr, "mrc: device %s: Prometheus metrics at http://%s:%u/metrics\n",
               nic.spec->name.c_str(), c.metrics_bind.c_str(), nic.host->metrics_port());
  return Ok{};
}

// Under g_nics_mutex: says why device `index` did not open, unless this very text was said
// already (a program that retries its open is told once).
void say_open_failed(int index, const std::string& why) {
  static auto& said = *new std::vector<std::string>();
  if (said.size() <= static_cast<size_t>(index)) said.resize(index + 1);
  if (said[index] == why) return;
  said[index] = why;
  std::fprintf(stderr, "mrc: cannot open device %s: %s\n",
               device_config().devices[index].name.c_str(), why.c_str());
}

// The process at the other end of a connected unix socket (the owner serving its control
// socket), 0 if unknown.
pid_t peer_pid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
}

}  // namespace

void signal_channel(mrc_cq* cq) {
  cq->armed = false;
  ++cq->events_delivered;
  (void)!write(cq->channel->write_fd, &cq,
               sizeof cq);  // NOLINT(bugprone-sizeof-expression): the pointer is the message
}

// A port's asynchronous event: to every MRC context (mrc_get_async_event) and every verbs
// context (ibv_get_async_event) of the device.
static void push_port_event(Nic& nic, ibv_event_type type, int port) {
  mrc_async_event event{};
  event.event_type = type;
  event.element.port_num = port;
  ibv_async_event verbs_event{};
  verbs_event.event_type = type;
  verbs_event.element.port_num = port;
  for (mrc_context* c : nic.contexts) c->async.push(event);
  for (SoftContext* c : nic.verbs_contexts) c->async.push(verbs_event);
}

// A QP's: to its MRC context, and to the verbs context that context was created on, which
// knows the QP as its verbs view.
static void push_qp_event(mrc_qp* qp, ibv_event_type type) {
  mrc_async_event event{};
  event.event_type = type;
  event.element.qp = qp;
  qp->context->async.push(event);
  ibv_async_event verbs_event{};
  verbs_event.event_type = type;
  verbs_event.element.qp = &qp->verbs_view;
  qp->context->device->async.push(verbs_event);
}

Nic::~Nic() {
  if (remote_fd >= 0) close(remote_fd);
}

std::vector<std::unique_lock<std::mutex>> Nic::lock_all() {
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.emplace_back(mutex);
  for (uint32_t s = 1; s < shards(); ++s) locks.emplace_back(host->shard(s).lock());
  return locks;
}

bool Nic::port_up(int plane) const {
  return host->shard(0).host().plane_stats(plane).up;  // the shards' planes go down together
}

void Nic::on_completions(uint32_t s, std::span<const uint32_t> tags) {
  for (uint32_t tag : tags) {
    mrc_cq* cq = tag < cqs_by_tag.size() ? cqs_by_tag[tag] : nullptr;
    if (cq == nullptr) continue;
    const auto waiting = static_cast<uint32_t>(cq->queues[s]->size());
    cq->ready[s].store(waiting, std::memory_order_release);
    if (waiting == 0) continue;
    {
      std::lock_guard events(events_mutex);
      if (cq->armed && cq->channel != nullptr) signal_channel(cq);
    }
    if (cq->verbs_cq != nullptr) cq->verbs_cq->notify();
  }
}

// Shard 0: the ports' events. Every shard: its QPs that entered ERROR, and EV events.
void Nic::after_progress(uint32_t s) {
  for (int p = 0; s == 0 && p < static_cast<int>(reported_up.size()); ++p) {
    const bool up = port_up(p);
    if (up == reported_up[p]) continue;
    reported_up[p] = up;
    push_port_event(*this, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, p + 1);
  }
  for (mrc_context* c : contexts) {
    for (mrc_qp* qp : c->qp_list) {
      if (qp->placed.shard != s || qp->fatal_reported ||
          qp->placed.qp->state() != QpState::kError || qp->state == IBV_QPS_ERR)
        continue;
      qp->fatal_reported = true;
      qp->state = IBV_QPS_ERR;
      qp->verbs_view.state = IBV_QPS_ERR;
      push_qp_event(qp, IBV_EVENT_QP_FATAL);
    }
  }
  ctl_after_progress(*this, s);
}

// Hooks every shard's rounds and key failures to the Nic and starts the progress threads.
static void start(Nic& nic) {
  Nic* raw = &nic;
  nic.host->on_completions(
      [raw](uint32_t s, std::span<const uint32_t> tags) { raw->on_completions(s, tags); }, false);
  nic.host->on_round([raw](uint32_t s) { raw->after_progress(s); });
  for (uint32_t s = 0; s < nic.shards(); ++s)
    nic.shard(s).on_key_failure([raw](Qpn qpn, const std::string& why) {
      std::fprintf(stderr, "mrc: device %s, queue pair %u: %s\n", raw->spec->name.c_str(),
                   qpn.value, why.c_str());
    });
  nic.host->start_threads(0);
}

// Under g_nics_mutex: a Nic without a host, whose controller calls go over `fd` (ctl_remote.h).
static Nic* open_remote(int index, int fd) {
  auto nic = std::make_unique<Nic>();
  nic->spec = &device_config().devices[index];
  nic->remote_fd = fd;
  nic->owner = peer_pid(fd);
  nic->admin_up.assign(nic->spec->planes.size(), true);
  nic->reported_up.assign(nic->spec->planes.size(), true);
  nic->opens = 1;
  Nic* raw = nic.get();
  g_nics[index] = std::move(nic);
  return raw;
}

Nic* nic_open(int index) {
  std::lock_guard lock(g_nics_mutex);
  const DeviceConfig& config = device_config();
  if (index < 0 || index >= static_cast<int>(config.devices.size()))
    return fail<Nic*>(ENODEV, nullptr);
  if (g_nics.size() < config.devices.size()) g_nics.resize(config.devices.size());
  if (g_nics[index]) {
    ++g_nics[index]->opens;
    return g_nics[index].get();
  }
  auto nic = std::make_unique<Nic>();
  const DeviceSpec& spec = config.devices[index];
  if (spec.host.context.secure != SecureMode::kOff) {
    auto key = mrc::read_key_file(spec.host.key_file);
    if (!key.ok()) {
      say_open_failed(index, "key-file=" + spec.host.key_file + ": " + key.error().message);
      return fail<Nic*>(to_errno(key.error().code), nullptr);
    }
    nic->key = std::move(key.value());
  }
  auto opened = open_host(spec, nic->mutex);
  if (!opened.ok()) {
    // Owned by another process that serves its controller: a controller-only device.
    const bool in_use = opened.error().code == Errc::kAddressInUse;
    const int fd = in_use ? ctl_connect(ctl_socket_path(config.devices[index].name)) : -1;
    if (fd >= 0) return open_remote(index, fd);
    say_open_failed(index, opened.error().message);
    return fail<Nic*>(to_errno(opened.error().code), nullptr);
  }
  nic->spec = &config.devices[index];
  nic->host = std::move(opened.value());
  nic->admin_up.assign(nic->spec->planes.size(), true);
  nic->reported_up.assign(nic->spec->planes.size(), true);
  nic->opens = 1;
  ctl_open(*nic);
  if (auto served = serve_metrics(*nic); !served.ok()) {
    say_open_failed(index, served.error().message);
    return fail<Nic*>(to_errno(served.error().code), nullptr);
  }
  if (auto captured = start_capture(*nic); !captured.ok()) {
    say_open_failed(index, captured.error().message);
    return fail<Nic*>(to_errno(captured.error().code), nullptr);
  }
  start(*nic);
  const char* serve = std::getenv("MRC_CTL_SOCKET");
  if (serve == nullptr || std::strcmp(serve, "off") != 0) nic->ctl_server = CtlServer::start(*nic);
  Nic* raw = nic.get();
  g_nics[index] = std::move(nic);
  return raw;
}

int refuse_data_path(Nic& nic) {
  if (!nic.owner_told.exchange(true)) {
    const std::string owner = nic.owner != 0 ? io::describe_process(nic.owner) : "another process";
    std::fprintf(
        stderr,
        "mrc: device %s is owned by %s: this process has its controller (mrc_ctl_*) only; to move "
        "data, stop that process or open another device (an entry of %s with its own planes or "
        "port=)\n",
        nic.spec->name.c_str(), owner.c_str(), device_config().source.c_str());
  }
  return EBUSY;
}

void nic_close(Nic* nic) {
  std::unique_ptr<Nic> doomed;
  {
    std::lock_guard lock(g_nics_mutex);
    if (--nic->opens > 0) return;
    for (auto& n : g_nics)
      if (n.get() == nic) doomed = std::move(n);
  }
  if (!doomed) return;
  doomed->ctl_server.reset();  // no controller request in flight past this point
  // The threads stop while `host` still points at the host: their last round's hooks read it
  // (reset() clears the pointer before the host's destructor would stop them).
  if (doomed->host != nullptr) doomed->host->stop_threads();  // (null: a controller-only device)
  doomed->host.reset();
}

bool port_gid(const DeviceSpec& spec, int port, int index, ibv_gid* gid, ibv_gid_type* type) {
  if (!plane_gid(spec, port, index, gid->raw)) return false;
  if (type != nullptr) *type = index % 2 == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  return true;
}

}  // namespace mrc::ocp
