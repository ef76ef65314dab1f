// The objects behind lib_mrc.so's C handles. Two families:
//   - the software verbs device (what libibverbs would give for a real NIC): SoftDevice (an
//     ibv_device), SoftContext (an opened device: an ibv_context inside a verbs_context),
//     SoftPd and SoftMr;
//   - the OCP MRC objects: mrc_context, mrc_comp_channel, mrc_cq, mrc_qp_hint, mrc_qp.
// Every opened device in a process shares one Nic: a host (host/host.h) of `threads=` shards,
// each an engine (core::Endpoint) on its UDP datapath (io::UdpHost) with its progress thread and
// its lock. A QP lives in one shard; a CQ has a queue in every shard. Locks (Nic says which
// guards what): every shard's lock, taken in shard order (Nic::lock_all), guards the OCP objects;
// one shard's lock guards that shard's engine and its QPs and lets its progress thread read the
// objects; Nic::events_mutex, taken last, guards what every shard's round writes. With one shard
// Nic::mutex is that shard's lock, and the one lock of the device.
// Handles carry a magic number so a stale or foreign pointer is refused (EINVAL), not followed.
#pragma once

#include <infiniband/verbs.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/host.h"
#include "host/metrics_server.h"
#include "host/port_plan.h"
#include "host/queue_pairs.h"
#include "io/device.h"
#include "io/udp_host.h"
#include "mrc.h"
#include "mrc/config.hpp"
#include "mrc_ctl.h"
#include "ocp/device_config.h"
#include "ocp/ev_gen.h"

namespace mrc::ocp {

enum Magic : uint32_t {
  kMagicContext = 0x4d524331,
  kMagicPd = 0x4d524332,
  kMagicMr = 0x4d524333,
  kMagicMrcContext = 0x4d524334,
  kMagicChannel = 0x4d524335,
  kMagicCq = 0x4d524336,
  kMagicHint = 0x4d524337,
  kMagicQp = 0x4d524338,
  kMagicVerbsCq = 0x4d524339,
  kMagicVerbsChannel = 0x4d52433a,
  kMagicVerbsQp = 0x4d52433b,
  kDead = 0xdeadbeef,
};

// Inline data (IBV_SEND_INLINE) a QP may be given, and the size its staging slots round to.
constexpr uint32_t kMaxInlineData = 256;
constexpr uint32_t kInlineSlotAlign = 64;

// Controller state of a device (mrc_ctl.h): profiles by id, kept by the Nic.
struct EvProfile {
  mrc_ctl_profile_state state = MRC_CTL_PROFILE_INIT;
  mrc_ctl_ev_mode mode = MRC_CTL_EV_MODE_AUTO;
  bool mode_set = false;  // MODE given since the profile was last INIT (the move OFFLINE needs it)
  uint64_t fmt_id = 0;
  uint32_t count = 0;
  uint32_t min_active = 0;
  int event_mask = 0;
  std::vector<mrc_ctl_ev_field> fields;
  std::vector<mrc_ctl_ev_op_entry> evs;  // denied EVs (value, port, state)
  std::vector<mrc_ctl_ev> list;          // mode EXP: the explicit array (zero = unpopulated)
  int qps = 0;                           // QPs using it
};
struct EvFmtProfile {
  mrc_ctl_profile_state state = MRC_CTL_PROFILE_INIT;
  mrc_ctl_ev_fmt_mode mode = MRC_CTL_EV_FMT_MODE_UDP;
  bool mode_set = false;  // as EvProfile::mode_set
  std::vector<mrc_ctl_ev_fmt_field> fields;
};
// An EV value's pieces as the device's EV formats lay them out (ctl.cc): the UDP source port
// in val[0..1], big-endian (a UDP or STEV EV), an address in val[0..15] (an SRv6 EV); all zero:
// an unpopulated entry of an explicit profile.
inline uint16_t ev_source_port(const mrc_ctl_ev& ev) {
  return static_cast<uint16_t>(ev.val[0] << 8 | ev.val[1]);
}
inline in6_addr ev_address(const mrc_ctl_ev& ev) {
  in6_addr a{};
  std::memcpy(a.s6_addr, ev.val, sizeof a.s6_addr);
  return a;
}
inline bool ev_unpopulated(const mrc_ctl_ev& ev) {
  static const mrc_ctl_ev kUnpopulated{};
  return std::memcmp(&ev, &kUnpopulated, sizeof ev) == 0;
}
// The EV source ports of the device's plane `plane` (0-based).
inline PortRange plane_ev_ports(const DeviceSpec& spec, int plane) {
  host::PortPlan plan;
  plan.planes = spec.planes.size();
  const host::PortSpan span =
      plan.plane_ev_ports(spec.host.context.ev_port_base, static_cast<size_t>(plane));
  return PortRange{span.first, span.count};
}

// The EV format of EV profiles naming format profile `fmt_id`: 0, or one not found, is the
// device's own (UDP source ports).
inline mrc_ctl_ev_fmt_mode ev_format_of(const std::map<uint64_t, EvFmtProfile>& formats,
                                        uint64_t fmt_id) {
  auto it = formats.find(fmt_id);
  return fmt_id == 0 || it == formats.end() ? MRC_CTL_EV_FMT_MODE_UDP : it->second.mode;
}
struct CcProfile {
  mrc_ctl_profile_state state = MRC_CTL_PROFILE_INIT;
  std::string algorithm;  // "" = congestion control off
  bool has_config = false;
  mrc_ctl_cc_nscc_cfg nscc{};
  int qps = 0;
};

class CtlServer;
struct SoftContext;

// Asynchronous events waiting for a consumer: an MRC context's (mrc_get_async_event) or a verbs
// context's (ibv_get_async_event). The progress thread pushes (Nic::after_progress); a bounded
// queue, the oldest event lost first. close() wakes every waiter and waits until they have left,
// so the owner can be freed while a thread was blocked in a get.
template <typename Event>
class AsyncEvents {
 public:
  static constexpr size_t kMax = 256;
  void push(const Event& event) {
    std::lock_guard lock(mutex_);
    if (events_.size() >= kMax) events_.pop_front();
    events_.push_back(event);
    ready_.notify_all();
  }
  // The oldest event; blocks until there is one. False once closed.
  bool wait_pop(Event& out) {
    std::unique_lock lock(mutex_);
    ++waiters_;
    ready_.wait(lock, [&] { return closed_ || !events_.empty(); });
    --waiters_;
    if (closed_) {
      left_.notify_all();
      return false;
    }
    out = events_.front();
    events_.pop_front();
    return true;
  }
  void close() {
    std::unique_lock lock(mutex_);
    closed_ = true;
    ready_.notify_all();
    left_.wait(lock, [&] { return waiters_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_, left_;
  std::deque<Event> events_;
  bool closed_ = false;
  int waiters_ = 0;
};

// An EV state change as `mrcctl watch` sees it: every QP, every change, whatever the masks.
struct WatchEvent {
  uint64_t seq = 0;
  uint32_t qpn = 0;
  uint64_t profile = 0;
  mrc_ctl_ev ev{};
  mrc_ctl_ev_state state = MRC_CTL_EV_UNKNOWN;
};

struct Nic {
  const DeviceSpec* spec = nullptr;
  // The shards (host/host.h), null for a controller-only device. Shard 0 runs under `mutex`.
  // What guards what:
  //   - lock_all() (every shard's lock, shard 0's = `mutex` first): the members below but the
  //     event ones, and every OCP object of the device (contexts and their lists, CQs, hints,
  //     PDs, MRs, profiles); a writer holds it, a reader holds at least one shard's lock;
  //   - a QP's shard lock (held by lock_all too): its engine QP and the mrc_qp's state fields,
  //     which that shard's progress thread updates (fatal events, EV scans); a CQ's queue in a
  //     shard, likewise;
  //   - events_mutex, taken after any shard lock and with nothing taken under it: CQs' arming
  //     and event counts, EV event queues, the watch log.
  // Shard 0 (under `mutex` alone) also holds the device's port state and runs its EV probes.
  std::mutex mutex;
  std::unique_ptr<host::Host> host;
  std::mutex events_mutex;
  std::vector<uint8_t> key;  // the pre-shared key of a secure device (spec->key_file)
  int opens = 0;
  std::vector<mrc_context*> contexts;
  std::vector<SoftContext*> verbs_contexts;  // every ibv_open_device of it (async events)
  std::vector<bool> admin_up;     // per port (plane); false = MRC_CTL_PORT_ADMIN_DISABLED
  std::vector<bool> reported_up;  // per port, last state announced (under `mutex`: shard 0's)
  std::map<uint64_t, EvProfile> ev_profiles;  // profile 0 made at open: rounds read, never add
  std::map<uint64_t, EvFmtProfile> ev_fmt_profiles;
  std::map<uint64_t, CcProfile> cc_profiles;
  // SRv6 EVs (ev_srv6.h): the EV source port bound to each (plane, path) an EV named.
  std::map<std::pair<int, std::vector<uint16_t>>, uint16_t> srv6_ports;
  // EV state changes for watchers of the control socket: the newest kWatchLog, numbered
  // (events_mutex).
  static constexpr size_t kWatchLog = 1024;
  std::deque<WatchEvent> watch_log;
  uint64_t watch_seq = 0;
  int watch_wake_fd = -1;  // eventfd written when watch_log grows (the control server polls it)
  // EV probes (mrc_ctl_ep_batch_send_wait): one batch at a time, numbered.
  std::mutex probe_mutex;
  uint32_t probe_batch = 0;
  // The control socket serving this device to other processes (ctl_server.h); may be absent.
  std::unique_ptr<CtlServer> ctl_server;
  // A controller-only device (ctl_remote.h): another process owns it; host is null, and
  // mrc_ctl_* calls go over this connection to the owner's control socket. `owner`: that
  // process (the socket's peer credentials), 0 if unknown.
  int remote_fd = -1;
  pid_t owner = 0;
  std::atomic<bool> owner_told{false};  // refuse_data_path has said who owns the device
  std::mutex remote_mutex;
  std::string remote_buffer;
  std::map<uint64_t, mrc_ctl_cc_nscc_cfg> remote_cc_configs;  // returned by remote CC queries
  bool remote() const { return host == nullptr; }

  ~Nic();
  // Every shard's lock, in shard order (Host::with_all_locked's): `mutex` alone with one shard
  // or none (a controller-only device).
  std::vector<std::unique_lock<std::mutex>> lock_all();
  uint32_t shards() const { return host != nullptr ? host->size() : 1; }
  io::Device& shard(uint32_t s) { return host->shard(s); }
  const io::Device& shard(uint32_t s) const { return host->shard(s); }
  // What to add to an EV source port of shard 0's ranges (the device's, as the controller names
  // EVs) for the same EV slot in shard `s`'s ranges.
  int ev_port_offset(uint32_t s) const {
    return host->shard(s).config().ev_port_base - host->shard(0).config().ev_port_base;
  }
  // Called by shard s's progress thread holding its lock, after each round: async and EV events.
  void after_progress(uint32_t s);
  // Likewise, with the CQs whose queue in shard s turned non-empty.
  void on_completions(uint32_t s, std::span<const uint32_t> tags);
  bool port_up(int plane) const;  // shard 0's link state; REQUIRES `mutex`
  // Every mrc_cq of the device's engine CQs, by the devices' tag, the same in every shard (null
  // once destroyed).
  std::vector<mrc_cq*> cqs_by_tag;
};

struct SoftDevice {
  ibv_device device;
  int index = 0;  // into device_config().devices
};

struct SoftContext {
  uint32_t magic = kMagicContext;
  Nic* nic = nullptr;
  int pds = 0;
  int mrc_contexts = 0;
  int cqs = 0, channels = 0;  // verbs CQs and completion channels (verbs_cq.cc)
  // The MRC context behind the verbs RC QPs of this context (verbs_qp.cc): created with the
  // first such QP under qp_mutex, destroyed by ibv_close_device.
  std::mutex qp_mutex;
  mrc_context* verbs_mrc = nullptr;
  AsyncEvents<ibv_async_event> async;  // ibv_get_async_event
  verbs_context vctx;                  // ends with the ibv_context handed out
};

struct SoftChannel;
struct SoftPd;

// A verbs CQ of an mrc context (ibv_create_cq): a bounded ring of work completions with its own
// lock, so that whatever reports into it (a verbs QP, under a shard's lock) calls push() and the
// application's ibv_poll_cq takes only this lock.
struct SoftCq {
  ibv_cq cq;  // first: the handle
  uint32_t magic = kMagicVerbsCq;
  SoftContext* owner = nullptr;
  SoftChannel* channel = nullptr;
  std::mutex mutex;  // guards what follows
  std::deque<ibv_wc> entries;
  size_t capacity = 0;
  bool overrun = false;  // a push found it full (the completion is lost, as on a NIC)
  bool armed = false;
  unsigned events_delivered = 0, events_acked = 0;
  int users = 0;  // QPs reporting into it
  // The MRC CQ the verbs RC QPs reporting here complete into (verbs_qp.cc), created with the
  // first of them under backing_mutex (never taken under a shard's lock or `mutex`); ibv_poll_cq
  // drains `entries` first, then it.
  std::mutex backing_mutex;
  std::atomic<mrc_cq*> backing{nullptr};
  // Adds a completion; tells the completion channel if the CQ is armed. False if it was full.
  bool push(const ibv_wc& wc);
  // Under a shard's lock, when the backing CQ's queue there turned non-empty: an event if the
  // CQ is armed.
  void notify();
};

// A verbs RC queue pair of an mrc context (ibv_create_qp): an MRC QP of the context's
// verbs_mrc, reporting into the backing CQs of its verbs CQs. The ibv_qp handle comes first;
// its `handle` field holds kMagicVerbsQp, which tells it from an MRC QP's verbs view (0 there).
// Inline sends pass through to the MRC QP, which stages them (mrc_qp::staging).
struct SoftQp {
  ibv_qp qp;  // first: the handle
  uint32_t magic = kMagicVerbsQp;
  SoftPd* pd = nullptr;
  SoftCq* send_cq = nullptr;
  SoftCq* recv_cq = nullptr;
  mrc_qp* mrc = nullptr;
  ibv_qp_cap cap{};  // as granted
  int sq_sig_all = 0;
  std::mutex post_mutex;  // one ibv_post_send list at a time
};

// A completion channel of an mrc context: a pipe carrying SoftCq pointers; `channel.fd` is its
// read end, which an application may poll().
struct SoftChannel {
  ibv_comp_channel channel;  // first: the handle
  uint32_t magic = kMagicVerbsChannel;
  SoftContext* owner = nullptr;
  int write_fd = -1;
  int cqs = 0;  // guarded by Nic::lock_all
};

struct SoftPd {
  ibv_pd pd;
  uint32_t magic = kMagicPd;
  uint32_t engine_pd = 0;
  int users = 0;  // memory regions and QPs
  SoftContext* owner = nullptr;
};

struct SoftMr {
  ibv_mr mr;
  uint32_t magic = kMagicMr;
  SoftPd* pd = nullptr;
};

// Lookups: the object behind a verbs handle if it is one of ours, else nullptr.
SoftContext* soft_context(ibv_context* context);
SoftPd* soft_pd(ibv_pd* pd);
SoftDevice* soft_device(ibv_device* device);
SoftCq* soft_cq(ibv_cq* cq);
SoftChannel* soft_channel(ibv_comp_channel* channel);
SoftQp* soft_qp(ibv_qp* qp);
// True if `context` is an mrc context (the object behind it need not be valid further).
inline bool ours(ibv_context* context) {
  return soft_context(context) != nullptr;
}
// Fills the context's ops (ibv_context_ops: the slots verbs.h's inline functions call) with
// functions that work or return an errno (verbs_cq.cc, verbs_refused.cc).
void fill_context_ops(ibv_context_ops& ops);
void fill_refused_ops(ibv_context_ops& ops, verbs_context& vctx);
void fill_qp_ops(ibv_context_ops& ops);  // post_send, post_recv (verbs_qp.cc)
// The verbs QP calls for a verbs RC QP (verbs_qp.cc); verbs_refused.cc hands them over.
int verbs_modify_qp(SoftQp& qp, ibv_qp_attr* attr, int mask);
int verbs_query_qp(SoftQp& qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init);
int verbs_destroy_qp(SoftQp& qp);
ibv_qp* verbs_create_qp(SoftPd& pd, ibv_qp_init_attr* attr);
// ibv_close_device's part: frees the context's verbs_mrc; EBUSY while QPs or CQs use it.
int close_verbs_qps(SoftContext& context);
// Prints "mrc: <text>" on stderr, once per distinct text in the process: a verb an mrc device
// refuses says so once, with what MRC supports instead.
void say_once(const std::string& text);
// Opens (or shares) the Nic of device `index`; errno set on failure. A device another process
// owns is opened controller-only if that process serves its control socket, else refused with
// EBUSY and a message (once per device and text) naming the process and what to change.
Nic* nic_open(int index);
void nic_close(Nic* nic);
// The answer to a data-path call (ibv_alloc_pd, mrc_create_cq) on a controller-only device:
// EBUSY, and once per device a message naming the owning process and what to do instead.
int refuse_data_path(Nic& nic);
// Writes a completion-channel event for `cq` and disarms it. REQUIRES: Nic::events_mutex.
void signal_channel(mrc_cq* cq);
// The GID of `port` (1-based) at `index` (0-3: link-local RoCEv1/v2, IPv4 RoCEv1/v2).
bool port_gid(const DeviceSpec& spec, int port, int index, ibv_gid* gid, ibv_gid_type* type);

// Sets errno and returns `value` (for "return fail(EINVAL, -1)").
template <typename T>
T fail(int error, T value) {
  errno = error;
  return value;
}

}  // namespace mrc::ocp

struct mrc_context {
  uint32_t magic = mrc::ocp::kMagicMrcContext;
  mrc::ocp::SoftContext* device = nullptr;
  mrc::ocp::Nic* nic = nullptr;
  int channels = 0, cqs = 0, qps = 0, hints = 0;
  std::vector<mrc_cq*> cq_list;
  std::vector<mrc_qp*> qp_list;
  // Asynchronous events (a shard's progress thread adds under its lock).
  mrc::ocp::AsyncEvents<mrc_async_event> async;
};

struct mrc_comp_channel {
  uint32_t magic = mrc::ocp::kMagicChannel;
  mrc_context* context = nullptr;
  int read_fd = -1, write_fd = -1;  // a pipe carrying mrc_cq pointers
  int cqs = 0;
};

struct mrc_cq {
  uint32_t magic = mrc::ocp::kMagicCq;
  mrc_context* context = nullptr;
  // The engine CQ in each shard (a QP completes into its shard's); none for an EV event CQ.
  std::vector<mrc::CompletionQueue*> queues;
  uint32_t tag = 0;  // the engine CQs' tag in their devices (Nic::cqs_by_tag)
  mrc_comp_channel* channel = nullptr;
  void* cq_context = nullptr;
  bool armed = false;  // Nic::events_mutex
  // Completions waiting in each shard's queue, as of its last progress round or poll: lets
  // mrc_poll_cq() on an empty CQ return without a lock (a spinning poller would starve the
  // engine).
  std::array<std::atomic<uint32_t>, mrc::kMaxDeviceThreads> ready{};
  std::atomic<uint32_t> next_shard{0};              // where the next poll starts, in turn
  unsigned events_delivered = 0, events_acked = 0;  // Nic::events_mutex
  int qps = 0;
  // EV event CQ: bounded queue and count of events that did not fit (Nic::events_mutex).
  bool ev_cq = false;
  uint32_t ev_capacity = 0;
  std::deque<mrc_ctl_ev_event> ev_events;
  uint32_t ev_dropped = 0;
  uint64_t remote_id = 0;  // an EV event CQ living in the owning process (ctl_remote.h)
  mrc::ocp::SoftCq* verbs_cq = nullptr;  // the verbs CQ this one backs (verbs_qp.cc), if any
  // Whether a shard's queue has completions waiting: the device's shards only (an empty poll
  // spins on this, so it reads one counter with one shard, not kMaxDeviceThreads).
  bool any_ready() const {
    for (size_t s = 0; s < queues.size(); ++s)
      if (ready[s].load(std::memory_order_acquire) > 0) return true;
    return false;
  }
};

struct mrc_qp_hint {
  uint32_t magic = mrc::ocp::kMagicHint;
  mrc_context* context = nullptr;
  mrc_qp_hint_attr attr{};
  int qps = 0;
};

struct mrc_qp {
  uint32_t magic = mrc::ocp::kMagicQp;
  mrc_context* context = nullptr;
  mrc::host::HostQp placed;  // its shard and engine QP (host/queue_pairs.h)
  mrc_qp_init_attr init{};
  mrc::QpConfig config;  // in force or to be applied at the next transition
  ibv_qp_state state = IBV_QPS_RESET;
  ibv_qp_attr vattr{};  // verbs attributes as last set (for mrc_query_qp)
  mrc_qp_attr mattr{};  // MRC attributes as last set
  uint64_t ev_profile = 0, cc_profile = 0;
  bool has_ev_profile = false, has_cc_profile = false;
  bool fatal_reported = false;
  // The QP as a verbs handle of the device's verbs context: the element of its asynchronous
  // events delivered by ibv_get_async_event (qp_num, qp_context, context, state).
  ibv_qp verbs_view{};
  // EV states as last seen by the controller's event scan, and the transition count then.
  std::vector<uint8_t> ev_seen;
  uint64_t ev_transitions_seen = 0;
  // Inline data: each IBV_SEND_INLINE request's bytes are copied at the post into the next slot
  // of a staging ring registered with the host (under the QP's shard lock), so the caller's buffer
  // is free at once. 2 x max_send_wr slots of max_inline bytes: a slot is rewritten only after
  // 2 x max_send_wr later inline posts, by when the send queue (max_send_wr deep) has retired
  // the request that read it.
  uint32_t max_inline = 0;  // granted cap.max_inline_data (a multiple of kInlineSlotAlign)
  uint32_t inline_slots = 0;
  std::unique_ptr<uint8_t[]> staging;
  uint32_t staging_lkey = 0;
  uint64_t staged = 0;  // inline requests posted so far
};
