// A device: one engine over one UDP datapath, with what every API on top needs of it, in one
// place. The native API (include/mrc: Context), the OCP verbs device (lib_mrc.so) and the
// tools sit on it, so each sees the same datapath, the same progress loop and the same rules:
//   - the UdpHost (and through it the one Endpoint) of this host's planes;
//   - the progress thread: it runs the datapath holding the device's lock and sleeps without
//     it (an API call takes the lock, does its work and wakes the thread);
//   - the peer table (the UdpHost's): a peer is its planes' receive addresses, and the same
//     addresses always give the same handle (RtrAttributes::peer), however many QPs connect;
//   - the EV-to-UDP-port mapping: every QP's EVs are source ports of this device's range,
//     plane p owning its own stride of it (configure() writes the QP's fields from it);
//   - the datapath's defaults for a QP, such as the EV burst that lets a burst leave as one
//     GSO send;
//   - completion events: every CQ created here reports to the device when it turns non-empty
//     (the engine's CompletionNotifier); after each round the device hands the API only those
//     CQs, instead of the API scanning every queue.
// Thread safety: everything but wake() and the progress thread's own calls is done holding
// lock(). Without a progress thread (start_thread not called), the owner calls progress().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/endpoint.h"
#include "io/udp_host.h"
#include "mrc/error.hpp"
#include "secure/inband_keys.h"
#include "util/prng.h"

namespace mrc::io {

// New data packets per EV burst on the UDP datapath when a QP leaves it to the datapath
// (QpConfig::ev_burst_packets = 0); docs/PROTOCOL.md "Spray granularity" says why this one.
inline constexpr uint16_t kUdpDefaultEvBurst = 8;
// The burst a QP that leaves it to the datapath gets: kUdpDefaultEvBurst, or fewer where that
// many packets of `mtu_bytes` would not leave as one GSO send.
uint16_t default_ev_burst(uint32_t mtu_bytes);
// SACK coalescing on the UDP datapath when a QP leaves it to the datapath
// (QpConfig::ack_every_packets = 0): a SACK per this many data packets. Each SACK is a system
// call of its own while data leaves in GSO bursts, so the receiver's CPU, not the wire, pays
// for a denser rate (docs/PROTOCOL.md "Spray granularity" measures the two together).
inline constexpr uint32_t kUdpDefaultAckEvery = 16;
// NSCC's queueing-delay target on the UDP datapath when a QP leaves it at 0 (which elsewhere
// means half the learned base RTT). A kernel UDP path's base RTT is learned at a few
// microseconds, but the host's own scheduling and socket queues add tens of microseconds of
// noise: a target below that reads the noise as congestion and holds the window at a few
// packets (BENCHMARKS.md, "The UDP datapath").
inline constexpr int64_t kUdpDefaultTargetDelayNs = 50'000;

struct DeviceConfig {
  std::vector<PlaneAddress> planes;
  uint16_t ev_port_base = 50000;
  Impairment impairment;
  bool gso = true;                  // UdpHostConfig::gso and ::gro
  Backend backend = Backend::kUdp;  // UdpHostConfig::backend
  wire::Srv6Paths srv6_paths;       // UdpHostConfig::srv6_paths (empty: ECMP mode)
  Duration busy_poll{0};            // UdpHostConfig::busy_poll (0: sleep when idle)
  uint64_t seed = 1;
  // QPNs with random tags (EndpointConfig::qpn_seed) and random initial PSNs (initial_psn()),
  // both drawn from the OS, so that neither can be guessed by a sender of forged packets.
  // False: sequential QPNs and PSNs from a fixed sequence (reproducible runs).
  bool unpredictable_ids = true;
  // The shard's number among a device group's (host/host.h), for unique QPNs across them.
  uint32_t shard = 0, shards = 1;
  std::string port_setting = "--port";             // UdpHostConfig::port_setting
  std::string ev_port_setting = "--ev-port-base";  // UdpHostConfig::ev_port_setting
};

class Device final : private CompletionNotifier {
 public:
  // Opens the datapath; the error names what failed and how to fix it.
  // `shared_lock`: the lock to run under, if the owner guards its own objects with the same
  // lock as the engine's (the OCP device); null: the device's own.
  static Result<std::unique_ptr<Device>, Error> open(const DeviceConfig& config,
                                                     std::mutex* shared_lock = nullptr);
  // Stops the progress thread (if any) and closes the sockets.
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  std::mutex& lock() const { return *lock_; }
  UdpHost& host() { return *host_; }
  const UdpHost& host() const { return *host_; }
  Endpoint& endpoint() { return host_->endpoint(); }
  int planes() const { return host_->planes(); }
  const DeviceConfig& config() const { return config_; }

  // An initial PSN for a new QP: random (24 bits) with unpredictable_ids, else the next of a
  // fixed sequence. Call holding the lock.
  Psn initial_psn();

  // The handle of the peer with these receive addresses (one per plane), added if new.
  Result<uint32_t, Error> peer(const std::vector<PlaneAddress>& planes) {
    return host_->add_peer(planes);
  }
  // Writes the datapath's part of a QP configuration: its EV source ports, the EV burst and
  // NSCC delay target if the QP leaves them to the datapath (0), and an MTU whose packets fit
  // the datapath's datagram, a `secure` QP's with its security header and tag (its keys come
  // later, at connect).
  void configure(QpConfig& config, SecureMode secure = SecureMode::kOff) const;
  // The largest MTU (payload bytes per packet) whose packets fit the datapath's datagram.
  uint32_t max_mtu_bytes(SecureMode secure = SecureMode::kOff) const;
  // A completion queue whose turning non-empty the device reports to on_completions, by its
  // tag: the device's CQs are numbered 0, 1, ... in the order they are created.
  CompletionQueue* create_cq(uint32_t capacity);

  // Called holding the lock after every progress round: `completions` with the tags of the CQs
  // that turned non-empty since the last round (each once), `round` with nothing (for events
  // of other kinds).
  void on_completions(std::function<void(std::span<const uint32_t>)> completions);
  void on_round(std::function<void()> round);

  // In-band key agreement (secure/inband_keys.h) for a secure QP whose keys come later
  // (SecurityConfig::keys_later: the OCP device, whose users carry no key offers), connected to
  // `peer_qpn` at the peer handle `peer`, under the pre-shared `key`. When it ends the QP has
  // its keys (QueuePair::set_keys), or is moved to ERROR and on_key_failure's callback gets the
  // reason, naming `peer_name`. forget_keys drops it (the QP was reset or destroyed). A KEY
  // OFFER from its connected peer to a plain QP moves that QP to ERROR the same way: the two
  // ends' secure modes differ. Call holding the lock.
  Result<Ok, Error> agree_keys(const QueuePair& qp, std::span<const uint8_t> key, uint32_t peer,
                               Qpn peer_qpn, const std::string& peer_name);
  void forget_keys(Qpn qpn) { keys_.stop(qpn.value); }
  // KEY OFFERs sent, received and refused (malformed, for no agreement, not verified).
  const secure::InbandKeys::Counters& key_offers() const { return keys_.counters(); }
  void on_key_failure(std::function<void(Qpn, const std::string&)> failed) {
    key_failed_ = std::move(failed);
  }

  // Runs progress on a thread of its own until stop_thread() or the device is destroyed.
  void start_thread();
  // Ends the progress thread (if any) after its round and waits for it (unless called on it):
  // no hook of the device runs after it returns. Once stopped, it is not started again.
  void stop_thread();
  // Whether the calling thread is some device's progress thread (for exit paths, which must not
  // join the thread they run on, nor wait for a lock it may hold).
  static bool on_progress_thread();
  // One round of progress, sleeping up to `max_wait` if there was nothing to do: without a
  // thread, the owner's way of running the datapath. With one, a caller that waits anyway may
  // run the datapath itself (caller-driven progress): the thread then stands by, and takes over
  // again kCallerHandoff after the last such call, so that peers are answered while the caller
  // computes. On two cores this keeps a waiting rank from sharing its core with its own
  // progress thread and that thread's lock (BENCHMARKS.md, "All-reduce").
  void progress(Duration max_wait);
  static constexpr Duration kCallerHandoff = Duration::from_ms(2);
  // The caller stops driving (it is about to block elsewhere, on something the datapath must
  // bring): a standing-by thread takes over now instead of kCallerHandoff after the last
  // progress() call.
  void hand_back();
  // One round of progress beside the thread, which keeps running: for a caller that polls and
  // then waits elsewhere (perftest's ib_write_lat spins on memory between polls, where a
  // standing-by thread would leave the peer's WRITE unplaced for kCallerHandoff).
  void assist() { (void)step(Duration{0}); }
  // Makes a sleeping progress thread run a round now (after a post, a state change).
  void wake() { host_->wake(); }
  // After a post, holding lock(): run to completion. A thread that has not gone to sleep yet
  // runs a round, under the lock, that finds the post, and a caller that drives progress runs
  // the next one itself, so nothing is done. But while the progress thread sleeps, the posting
  // thread runs the round itself, so its packets leave now instead of after another thread's
  // wake-up (on this VM about as long as a loopback hop: BENCHMARKS.md, "Latency"); the sleeper
  // is woken only if the engine now needs attention before it planned to wake.
  void post_done();

 private:
  Device(const DeviceConfig& config, std::mutex* shared_lock, uint64_t psn_seed)
      : config_(config),
        lock_(shared_lock != nullptr ? shared_lock : &own_lock_),
        psns_(psn_seed) {}
  void on_nonempty(uint32_t tag) override;
  bool round();
  bool step(Duration max_wait);
  void loop();
  bool caller_driving() const;
  void run_key_agreements();
  void on_key_offer(std::span<const uint8_t> datagram, const SocketAddress& from,
                    bool icrc_checked);

  DeviceConfig config_;
  std::unique_ptr<UdpHost> host_;
  mutable std::mutex own_lock_;
  std::mutex* lock_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};  // read by a thread standing by without the lock
  std::atomic<int64_t> caller_round_ns_{INT64_MIN / 2};  // the host clock at the last progress()
  std::mutex standby_lock_;  // a standing-by thread waits on standby_ until hand_back()
  std::condition_variable standby_;
  // Threads between a round that found nothing to do (counted holding the lock) and the end of
  // the sleep after it.
  std::atomic<uint32_t> sleepers_{0};
  Instant sleeping_until_{0};  // when the sleeping thread plans to wake (guarded by the lock)
  std::vector<uint32_t>
      ready_;  // tags of the CQs turned non-empty since the last round (one entry per CQ at most)
  std::vector<bool> is_ready_;  // by tag, one per CQ created here
  std::function<void(std::span<const uint32_t>)> completions_;
  std::function<void()> round_;
  secure::InbandKeys keys_;
  std::function<void(Qpn, const std::string&)> key_failed_;
  Prng psns_;                   // initial PSNs (unpredictable_ids)
  uint32_t next_psn_ = 0x1000;  // initial PSNs otherwise
};

}  // namespace mrc::io
