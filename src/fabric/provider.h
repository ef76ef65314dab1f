// The libfabric provider "mrc" (libmrc-fi.so): the objects behind libfabric's fids, and the
// functions the files of src/fabric share. docs/LIBFABRIC.md says what it offers and how.
//
// Every object starts with its libfabric fid, so a fid pointer is the object's pointer. A
// domain is one mrc::Context (this host's planes), one protection domain and one mrc CQ that
// all its endpoints' queue pairs complete into, a progress thread, and one lock that guards
// all provider state of the domain: the application's calls and the progress thread take it in
// turn. The application's completion queues and counters have their own locks, so reading
// them waits on no datapath work.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fabric/link.h"
#include "fabric/matching.h"
#include "fabric/wire.h"
#include "host/options.h"
#include "mrc/mrc.hpp"

namespace mrc::fabric {

extern fi_provider provider;

// The provider's settings, from FI_MRC_* environment variables (fi_param_*; `fi_info -e`
// lists them).
struct Settings {
  // The host settings every front door of mrc shares (host/options.h), each FI_MRC_ and its
  // key: FI_MRC_PLANES (addresses, interface names or IPv4 prefixes; default 127.0.0.1),
  // FI_MRC_PORT and FI_MRC_EV_PORT_BASE (the first tried: a process takes the first slot
  // whose ports are free), FI_MRC_BACKEND, FI_MRC_SECURE with FI_MRC_KEY_FILE,
  // FI_MRC_METRICS_PORT (the k-th slot serves on it + k), ...
  host::Options host;
  std::string error;  // the first refused host setting, said when a domain opens
  int slots = 32;     // per link
  int slot_bytes = 65536;
  // MRC payload per packet (QpConfig::mtu_bytes), the same on both ends; 0: from the planes' MTU
  int mtu_bytes = 0;
  size_t rendezvous_bytes = 65536;       // messages this large or larger go by rendezvous (0: none)
  size_t unexpected_bytes = 256u << 20;  // per endpoint
  int connect_timeout_ms = 10000;
  // How long a peer may acknowledge nothing sent to it before its link fails: the retry budget of
  // the links' queue pairs (a process a loaded host leaves unscheduled for seconds is not gone).
  int peer_timeout_ms = 8000;
  int stats = 0;  // print each link's counters when its endpoint closes
  // Report an endpoint's state on stderr when it has operations outstanding and none completed
  // for this long (stall_report.cc); 0: never.
  int stall_report_ms = 0;
};
Settings settings();
void define_settings();

inline constexpr uint64_t kMaxMessageBytes = 1ull << 30;
inline constexpr size_t kQueueSize = 1024;    // tx and rx operations outstanding per endpoint
inline constexpr size_t kInjectBytes = 4096;  // fi_inject's limit (tx_attr->inject_size)
inline constexpr uint64_t kRmaCaps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
inline constexpr uint64_t kCaps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_SEND | FI_RECV |
                                  kRmaCaps | FI_SOURCE | FI_DIRECTED_RECV | FI_LOCAL_COMM |
                                  FI_REMOTE_COMM;
// What fi_mr_reg's keys and addresses are: virtual addresses, keys the provider picks, memory
// that must exist (FI_MR_BASIC's three bits). Local buffers need no registration.
inline constexpr int kMrMode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

// fi_getinfo's answer, or -FI_ENODATA if `hints` ask for what the provider lacks or `node` does
// not resolve. node/service name the source address with FI_SOURCE in `flags`, else the
// destination (provider.cc, fill_addresses).
int get_info(uint32_t version, const char* node, const char* service, uint64_t flags,
             const fi_info* hints, fi_info** out);
// The mrc name (nonce 0: whichever endpoint listens there, Av::find) of `node` at `service`: its
// first IPv4 address, else its first IPv6 one (the planes are IPv4 unless FI_MRC_PLANES says
// otherwise); nullopt if it does not resolve.
std::optional<EndpointName> resolve_name(const char* node, const char* service);
// The address of the first plane FI_MRC_PLANES names (where endpoints listen), if it resolves.
std::optional<std::string> first_plane(const Settings& s);
// An mrc name for an address's text and a port (network order), nonce 0; nullopt if the text
// is no IPv4/IPv6 address.
std::optional<EndpointName> name_at(const std::string& address, uint16_t port);

struct Fabric {
  fid_fabric fid{};
};

struct Eq {
  fid_eq fid{};
  std::mutex lock;
  std::condition_variable changed;
  struct Event {
    uint32_t type;
    std::vector<uint8_t> bytes;
  };
  std::deque<Event> events;
};

struct CqEntry {
  fi_cq_tagged_entry entry{};
  uint64_t source = FI_ADDR_NOTAVAIL;
};

struct Domain;

struct Cq {
  fid_cq fid{};
  Domain* domain = nullptr;
  fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
  int wait_fd = -1;  // FI_WAIT_FD: an eventfd readable while entries wait
  std::mutex lock;
  std::condition_variable changed;
  std::deque<CqEntry> entries;
  // Error entries, each with the reason in words (handed out as err_data, which
  // fi_cq_strerror turns back into text: "the peer fi_mrc://... closed its end ...").
  std::deque<std::pair<fi_cq_err_entry, std::string>> errors;
  std::string last_error;  // the text of the entry read last: valid until the next read
  bool signaled = false;   // fi_cq_signal: wake one sread
  void push(const CqEntry& e);
  void push_error(const fi_cq_err_entry& e, std::string why = {});
};

struct Cntr {
  fid_cntr fid{};
  Domain* domain = nullptr;  // whose progress its reads run
  std::mutex lock;
  std::condition_variable changed;
  uint64_t value = 0;
  uint64_t errors = 0;
  void add(uint64_t n, bool error);
  void set(uint64_t n, bool error);
};

// An address vector holds each name once, as libfabric's own (util) AV does: inserting a name
// already present returns its fi_addr and counts one more use, and fi_av_remove takes one use
// away; the entry goes when none is left. Open MPI inserts peers again (MPI_Intercomm_create), and
// a second fi_addr for one peer would never match the messages that arrive from it (they take
// the first).
struct Av {
  fid_av fid{};
  Domain* domain = nullptr;
  std::vector<EndpointName> names;  // by fi_addr
  std::vector<uint32_t> uses;       // by fi_addr: inserts not yet removed (0: removed)
  std::map<std::array<uint8_t, sizeof(EndpointName)>, uint64_t> by_name;  // the live entries
  bool live(uint64_t fi_addr) const { return fi_addr < uses.size() && uses[fi_addr] != 0; }
  // The fi_addr of a name, kAnySource if it is not in the AV.
  uint64_t find(const EndpointName& name) const;
  // The fi_addr of `name`, added if it is not present, with one more use.
  uint64_t insert(const EndpointName& name);
};

struct Mr {
  fid_mr fid{};
  Domain* domain = nullptr;
  MemoryRegionInfo info{};
  uint64_t access = 0;  // fi_mr_reg's access flags (FI_REMOTE_READ: peers may read it)
};

struct Endpoint;

struct Domain {
  fid_domain fid{};
  Settings config;
  std::vector<std::string> planes;  // resolved addresses, one per plane
  uint64_t links_dropped = 0;  // receiving links dropped for breaking the protocol (FI_MRC_STATS)
  std::unique_ptr<Context> context;
  uint32_t pd = 0;
  mrc::Cq* cq = nullptr;  // every link's QP completes here
  std::mutex lock;        // all provider state below and in the endpoints
  std::vector<Endpoint*> endpoints;
  std::unordered_map<uint32_t, TxLink*> tx_by_qpn;
  std::unordered_map<uint32_t, RxLink*> rx_by_qpn;
  std::unordered_map<uint32_t, const Mr*> mrs;  // by key: what a peer's read may name
  // Closed endpoints and their links, kept until the progress thread's next round: events it
  // already took from epoll may still name them (their descriptors are closed, so handlers
  // return at once).
  std::vector<std::shared_ptr<void>> graveyard;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  // When the application last polled a CQ of this domain that has no wait object (steady clock,
  // ns). While it keeps polling, its reads run the datapath and the progress thread stands by:
  // it neither takes the lock for rounds nor has the context's CQ signal it (see progress_loop).
  std::atomic<int64_t> polled_ns{0};
  std::thread progress_thread;
  // REQUIRES: lock. Takes the mrc CQ's completions, running the datapath first if `drive` (an
  // application's read: with the context's caller progress its threads then stand by a while);
  // the progress thread, woken by the CQ's descriptor, takes what is there and drives nothing.
  void progress(bool drive = true);
  // An application thread about to block (fi_cntr_wait, fi_cq_sread): what its reads took over
  // goes back, the CQ's descriptor to the progress thread and the datapath to the context's
  // threads, so the completion it waits for is not left until their hand-off times out.
  void before_blocking();
  std::vector<RxLink*> arrivals;    // links with slots arrived in this round of progress()
  int64_t timeouts_checked_ms = 0;  // check_timeouts' last look
  std::vector<RxLink*> owing;       // links whose credits found their queue pair's send queue full
  void wake();
  void watch(int fd, void* tag, bool want_write);
  void unwatch(int fd);
};

// FI_MRC_STALL_REPORT_MS's watch of an endpoint (stall_report.cc).
struct EndpointWatch {
  uint64_t completions_seen = 0;  // Endpoint::completions at the last look that saw a change
  int64_t since_ns = 0;           // when it changed (steady clock)
  bool reported = false;          // this stall has been reported
};

struct Endpoint {
  fid_ep fid{};
  Domain* domain = nullptr;
  Av* av = nullptr;
  Cq* tx_cq = nullptr;
  Cq* rx_cq = nullptr;
  uint64_t tx_cq_flags = 0;  // the bind flags (FI_SELECTIVE_COMPLETION)
  uint64_t rx_cq_flags = 0;
  Cntr* send_cntr = nullptr;
  Cntr* recv_cntr = nullptr;
  Cntr* write_cntr = nullptr;         // FI_WRITE: this endpoint's RMA writes
  Cntr* remote_write_cntr = nullptr;  // FI_REMOTE_WRITE: writes with CQ data that reached it
  Cntr* read_cntr = nullptr;          // FI_READ: this endpoint's RMA reads
  Cntr* remote_read_cntr = nullptr;   // FI_REMOTE_READ: peers' reads it served
  uint64_t tx_op_flags = 0;           // the info's op_flags, fi_control(FI_SETOPSFLAG)
  uint64_t rx_op_flags = 0;
  bool enabled = false;
  bool directed_recv = false;  // FI_DIRECTED_RECV: receives name their source
  int listen_fd = -1;
  WatchTag listen_tag{WatchKind::kListener, this};
  EndpointName name;
  Matcher matcher{256u << 20};
  std::map<std::array<uint8_t, sizeof(EndpointName)>, std::unique_ptr<TxLink>>
      tx_links;                     // by peer name
  std::vector<TxLink*> tx_by_addr;  // the link to each fi_addr, once found (a send's lookup)
  std::vector<std::unique_ptr<RxLink>> rx_links;
  std::vector<std::unique_ptr<RxLink>> accepting;  // connections not yet a link
  size_t tx_outstanding = 0;
  size_t rx_outstanding = 0;
  uint64_t completions = 0;  // operations ended (completed or failed), for the stall watch
  EndpointWatch watch;
};

// Completion queue entries and counters of an endpoint's operations.
void complete_send(Endpoint& ep, const SendOp& op);
void fail_send(Endpoint& ep, const SendOp& op, int err, const std::string& why);
// A receive's completion: its entry (an FI_ETRUNC error entry when the message was longer than
// the buffers, which hold its first bytes) and the receive counter.
void complete_recv(Endpoint& ep, const PostedRecv& r, const MessageInfo& m);
// A receive that took a message its sender will never finish: an error entry naming why.
void fail_recv(Endpoint& ep, const PostedRecv& r, const MessageInfo& m, const std::string& why);
// Delivers a whole unexpected message to a receive that takes it, and drops it from the store.
void deliver_unexpected(Endpoint& ep, const PostedRecv& r, Unexpected* u);

// Links (link.cc): sending, receiving, credits.
void pump(TxLink& link);
void on_tx_completion(TxLink& link, const Completion& c);
void on_rx_completion(RxLink& link, const Completion& c);
void drain(RxLink& link);  // takes arrived slots while they can be taken, then returns credits
void fail_link(TxLink& link, const std::string& why);
// Stops taking a sender's slots (a broken or hostile peer): logged and counted; its ring and the
// buffers of receives it had are never written again by this endpoint.
void drop_link(RxLink& link, const std::string& why);
// The receives a gone sender's unfinished messages had taken fail (the message under way, the
// rendezvous messages answered but not finished); its unfinished unexpected message is dropped.
void abandon(RxLink& link, const std::string& why);
// The gather list of `op`'s first `bytes` bytes: each buffer's lkey from `desc` (an Mr of the
// domain), or a registration for this op when none is given. An error's reason, or nullopt.
std::optional<std::string> gather(Domain& d, SendOp& op, uint64_t bytes, void* const* desc);
// The steady clock in nanoseconds.
int64_t now_ns();
// The registration with key `key` that peers may read [address, address + length) of, if any.
const Mr* readable(const Domain& d, uint32_t key, uint64_t address, uint64_t length);
// Answers a rendezvous message with where `r` takes it (or 0 bytes to discard it).
void begin_rendezvous(RxLink& link, uint32_t index, const PostedRecv& r, const MessageInfo& m);
void retry_stalled(Endpoint& ep);
// Messages that arrived before their sender was in the AV (MPI adds peers lazily, when it first
// names one) take their source once it is, so directed receives find them.
void resolve_sources(Endpoint& ep);

// The connection manager (connect.cc).
// The endpoint's TCP listener, at `source` (fi_info's src_addr; port 0: the system's choice), or
// at the first plane with a port of the system's choice.
int open_listener(Endpoint& ep, const EndpointName* source);
TxLink* tx_link_to(Endpoint& ep, uint64_t fi_addr, int* err);
void on_listener(Endpoint& ep);
void on_tx_control(TxLink& link, uint32_t events);
void on_rx_control(RxLink& link, uint32_t events);
void check_timeouts(Domain& d);  // fails links whose set-up has taken too long
// FI_MRC_STALL_REPORT_MS: each endpoint that has waited that long with nothing completed has its
// state written to stderr (stall_report.cc). REQUIRES: the domain's lock.
void report_stalls(Domain& d);
void close_links(Endpoint& ep);

// Data operations (endpoint_ops.cc), each under the domain's lock.
ssize_t post_recv(Endpoint& ep, PostedRecv r);
ssize_t post_send(Endpoint& ep, std::unique_ptr<SendOp> op, uint64_t dest, uint64_t flags);
ssize_t cancel(Endpoint& ep, void* context);
// An RMA write (fi_write and its forms): `desc` per iov, or null for none given.
ssize_t post_write(Endpoint& ep, std::unique_ptr<SendOp> op, void* const* desc, uint64_t dest,
                   uint64_t flags);
// An RMA read (fi_read and its forms) from `source` into the op's buffer.
ssize_t post_read(Endpoint& ep, std::unique_ptr<SendOp> op, uint64_t source, uint64_t flags);

// Stops and joins the threads of every domain still open (each domain's progress thread and its
// context's device threads), leaving the domains unusable: the provider's cleanup (fi_fini) and
// the library's destructor run it, since libfabric unloads the provider at exit even while an
// application left domains open, and threads still running its code would crash the process.
void stop_all_domains();

// Object constructors (one per file).
int open_domain(fid_fabric* fabric, fi_info* info, fid_domain** out, void* context);
int open_eq(fid_fabric* fabric, fi_eq_attr* attr, fid_eq** out, void* context);
int open_cq(fid_domain* domain, fi_cq_attr* attr, fid_cq** out, void* context);
int open_cntr(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** out, void* context);
int open_av(fid_domain* domain, fi_av_attr* attr, fid_av** out, void* context);
int open_endpoint(fid_domain* domain, fi_info* info, fid_ep** out, void* context);

// Fills a fid's head: its class, the application's context, its fi_ops and its class's ops.
template <typename Fid, typename Ops>
void init_fid(Fid& f, size_t fclass, void* context, fi_ops* fid_ops, Ops* ops) {
  f.fid.fclass = fclass;
  f.fid.context = context;
  f.fid.ops = fid_ops;
  f.ops = ops;
}

// Unsupported-operation stubs that every ops table points at where it offers nothing.
int no_bind(fid*, fid*, uint64_t);
int no_control(fid*, int, void*);
int no_ops_open(fid*, const char*, uint64_t, void**, void*);
int no_tostr(const fid*, char*, size_t);
int no_ops_set(fid*, const char*, uint64_t, void*, void*);

// FI_WARN through the provider, for the reasons an error names.
void warn(const std::string& message);

}  // namespace mrc::fabric
