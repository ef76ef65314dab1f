// The native C++ API of mrc: a context (this host's planes over UDP), protection domains and
// memory regions, completion queues you can poll or wait on through a file descriptor, and
// queue pairs with post_write / post_write_imm / post_recv. Background progress threads run
// the engine (one by default; ContextOptions::threads shards the QPs over several); every call
// is thread-safe. Connection setup exchanges a ConnectionInfo out of band (for example over
// TCP, as `mrc perf` does). Calls that can fail return a Result whose error is mrc::Error (a
// code and a message; include/mrc/error.hpp).
//
//   auto ctx = mrc::Context::open({.planes = {"127.0.0.1", "127.0.0.2"}}).value();
//   auto* cq = ctx->create_cq(1024);
//   auto mr = ctx->register_memory(pd, buf, len, mrc::kAccessLocalWrite | mrc::kAccessRemoteWrite);
//   auto* qp = ctx->create_qp(pd, cq, cq).value();
//   ... exchange qp->local_info() with the peer ...
//   qp->connect(remote_info);
//   qp->post_write_imm(wr_id, {local_sge}, remote_addr, rkey, imm);
//   cq->wait(...);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mrc/config.hpp"
#include "mrc/datapath.hpp"
#include "mrc/error.hpp"
#include "mrc/stats.hpp"
#include "mrc/types.hpp"
#include "mrc/verbs.hpp"

namespace mrc {

struct ContextOptions {
  std::vector<std::string> planes;  // this host's address per plane: IPv4[:port], IPv6, [IPv6]:port
  uint16_t port = 4791;             // UDP receive port where an address gives none
  uint16_t ev_port_base = 50000;    // first UDP source port for EVs
  Impairment impairment;            // off by default
  bool gso = true;                  // batched UDP send and receive (GSO, GRO) where offered
  // The datapath: Backend::kUdp (kernel UDP sockets, default) or kXdp (AF_XDP on the
  // planes' interfaces; root only).
  Backend backend = Backend::kUdp;
  // SRv6 uSID path mode (docs/PROTOCOL.md §2.2a): the paths through each plane's fabric as
  // hexadecimal uSIDs, "200,201"; the planes are then IPv6 locators. Empty: ECMP mode.
  std::string srv6_paths;
  // Caller-driven progress: Cq::poll and Cq::wait run the datapath on the calling thread (the
  // progress thread stands by while they do, and takes over 2 ms after the last call), so a
  // thread that waits for completions anyway does the work instead of waking another. For
  // one thread that mostly waits on the context (the collectives); off, the progress thread
  // does all the work and the calls only read the queues.
  bool caller_progress = false;
  // Opt-in busy polling for latency-critical users: for this many microseconds after work, the
  // datapath asks its sockets without waiting instead of sleeping (lower latency, for a core's
  // worth of CPU while it lasts). 0: sleep when idle.
  uint32_t busy_poll_us = 0;
  // Engine threads (1..16). Each runs a shard of the context (host/host.h): its own engine,
  // sockets and lock; new QPs are placed on the shards in turn, so several QPs use several cores.
  // Shard s listens on port + s and takes the s-th EV range after ev_port_base, so a context
  // with N threads uses N receive ports per plane and N * ev_source_ports() EV ports. With
  // caller_progress, the calling thread drives shard 0 and the others run on their threads.
  uint32_t threads = 1;
  // Secure mode for every QP of the context (QpConfig::security, docs/PROTOCOL.md §1.12):
  // kAuthenticate tags every packet with AES-GCM, kEncrypt encrypts payloads too. The keys come
  // from a key exchange at connect(), authenticated by `preshared_key`, which both ends must hold
  // (at least 16 bytes; read_key_file reads a key file). connect() fails, naming both ends,
  // when the modes or keys differ.
  SecureMode secure = SecureMode::kOff;
  std::vector<uint8_t> preshared_key;
  uint64_t seed = 1;
  // Prometheus metrics of the context's engines and planes (docs/METRICS.md) served at
  // http://metrics_bind:metrics_port/metrics while the context is open, rendered at each scrape
  // (holding each engine thread's lock for the time it takes). -1: not served; 0: on a free
  // port (Context::metrics_port() says which).
  int32_t metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";
  // A capture of every datagram the context sends and receives, written to this pcap file while
  // the context is open (`mrc decode` and Wireshark read it). "%p" in the path becomes the
  // process id, so the processes of a job can share one setting; a process that opens several
  // contexts gives each its own path. Empty: no capture.
  std::string pcap;
  uint64_t pcap_max_mib = 256;  // the capture's budget; datagrams past it are counted, not written
  // What a user of this context changes to move its ports, named when a port is in use (the
  // collectives' tools and the torch backend name their own options or variables).
  std::string port_setting = "ContextOptions::port";
  std::string ev_port_setting = "ContextOptions::ev_port_base";
};

// What the peer needs to connect to a queue pair.
struct ConnectionInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  std::vector<std::string> planes;  // "address:port" per plane
  // The peer's datapath: both ends need the same (the backends' ICRCs differ). Written into the
  // text only when not udp, so udp strings are what they always were.
  Backend backend = Backend::kUdp;
  // Secure mode's key exchange: mode, key id, key share and proof. Written
  // into the text only when secure.
  SecureMode secure = SecureMode::kOff;
  std::string key_id{};
  std::string key_share{};
  std::string key_proof{};
  std::string to_string() const;  // one line, for an out-of-band channel
  static Result<ConnectionInfo, Error> parse(const std::string& text);
};

class Context;

class Cq {
 public:
  // Moves up to out.size() completions into `out`; returns how many.
  size_t poll(std::span<Completion> out);
  // A file descriptor that is readable while completions are waiting (for poll/epoll), while
  // notification is on. With caller-driven progress (ContextOptions::caller_progress), where
  // wait() does not sleep on it, it is written only once it has been asked for here: a consumer
  // that only polls and waits pays no system call for it.
  int event_fd() const;
  // Notification on (the default) or off. Off, the descriptor is neither written nor read: a
  // consumer that only polls saves two system calls each time the queue turns non-empty, and
  // wait() without caller progress sleeps its whole timeout. Turned on again, it signals at once
  // if completions are waiting, so a waiter that turns it on before it sleeps misses none.
  void set_notify(bool on);
  // Blocks until at least one completion is waiting or `timeout_ms` passes; returns poll().
  size_t wait(std::span<Completion> out, int timeout_ms);
  // Moves completions already waiting, as poll() does, but never runs the datapath: for a thread
  // woken by event_fd() while another thread drives progress. (With caller progress, poll() runs
  // a round and so makes the progress threads stand by for a while: a thread that only answers
  // the descriptor would leave nobody to write it.)
  size_t take(std::span<Completion> out);

 private:
  friend class Context;
  struct State;  // the engine's queues behind it (src/api/context.cc)
  explicit Cq(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;

 public:
  ~Cq();
  Cq(const Cq&) = delete;
  Cq& operator=(const Cq&) = delete;
};

class Qp {
 public:
  uint32_t qpn() const;
  QpState state() const;
  ConnectionInfo local_info() const;
  // RESET -> INIT -> RTR -> RTS with the peer's information.
  Result<Ok, Error> connect(const ConnectionInfo& remote);
  Result<Ok, Error> post_write(uint64_t wr_id, std::span<const Sge> local, uint64_t remote_addr,
                               uint32_t rkey, bool signaled = true);
  Result<Ok, Error> post_write_imm(uint64_t wr_id, std::span<const Sge> local, uint64_t remote_addr,
                                   uint32_t rkey, uint32_t immediate, bool signaled = true);
  Result<Ok, Error> post_recv(uint64_t wr_id);
  QpStats stats() const;

 private:
  friend class Context;
  struct State;  // the engine's queue pair behind it (src/api/context.cc)
  explicit Qp(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;

 public:
  ~Qp();
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;
};

class Context {
 public:
  static Result<std::unique_ptr<Context>, Error> open(const ContextOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int planes() const;
  uint32_t alloc_pd();
  Result<MemoryRegionInfo, Error> register_memory(uint32_t pd, void* address, uint64_t length,
                                                  uint32_t access);
  Result<Ok, Error> deregister_memory(uint32_t lkey);
  Cq* create_cq(uint32_t capacity);
  Result<Qp*, Error> create_qp(uint32_t pd, Cq* send_cq, Cq* recv_cq, const QpConfig& config = {});
  // Destroys a queue pair and frees what it holds (as ibv_destroy_qp): its outstanding work ends
  // without completions, completions it already queued stay in their CQs (its qpn is never given
  // to another queue pair), and packets for it are dropped as for an unknown one. `qp` is invalid
  // afterwards; one this context did not create is refused.
  Result<Ok, Error> destroy_qp(Qp* qp);
  // With caller-driven progress: the caller stops driving the datapath (it is about to block
  // somewhere other than Cq::wait, e.g. on event_fd() or a condition of its own), so the progress
  // threads take it over now rather than a couple of milliseconds after its last poll.
  void hand_back_progress();
  // Takes a local plane down or up (as if its link failed), e.g. for demos and tests.
  void set_plane_up(int plane, bool up);
  const UdpPlaneStats plane_stats(int plane) const;
  // The TCP port the context's metrics are served on (ContextOptions::metrics_port), 0 if none.
  uint16_t metrics_port() const;

 private:
  friend class Cq;
  friend class Qp;
  struct State;  // the host's engines and the objects handed out (src/api/context.cc)
  explicit Context(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace mrc
