// The UDP datapath: the only layer with sockets and a clock. A UdpHost drives one engine
// (core::Endpoint) over real UDP sockets, one plane per local address:
//   - per plane, a receive socket on (address, port) — the MRC port, 4791 by default;
//   - per plane, a pool of send sockets, one per EV: the engine's EVs are UDP source ports
//     (QpConfig::ev_port_base), so ECMP switches hash each EV onto its own path, and the
//     source port a receiver sees is the EV it echoes back;
//   - batched I/O (io/udp_batch.h): consecutive datagrams of one EV leave as one UDP GSO
//     super-datagram, or one sendmmsg where GSO is off; receive sockets use recvmmsg with
//     UDP_GRO, so a burst arrives as one buffer; each round reads every plane once and hands
//     the engine the datagrams in the order the kernel received them (SO_TIMESTAMPNS), so
//     reading planes one after another makes no reordering of its own;
//   - an epoll progress loop with nanosecond timeouts (epoll_pwait2) for the engine's deadlines;
//   - link state: every 20 ms (and at once after a send fails with ENETDOWN/ENETUNREACH) the
//     interface holding each plane's address is checked; a plane whose interface is down or
//     not running is reported to the engine as its port going down, and back up when it returns;
//   - impairments, off by default: take a plane down and up on a schedule or periodically (a
//     flap; seen by this host's engine as its port going down), and drop a fraction of packets,
//     delay and reorder them (a decorator around each plane's link: io/impaired_link.h), so
//     faults can be shown without root;
//   - captures of every datagram sent (a decorator below the impairments: io/capture_link.h)
//     and received.
// Two backends move the datagrams (UdpHostConfig::backend), each plane's behind one interface
// (io/backend.h: PlaneLink, and transmits, the batches it sends), so nothing here depends on
// which:
//   - udp (default, unprivileged, io/udp_link.h): the kernel's UDP sockets, as above;
//   - xdp (io/xdp_link.h): one AF_XDP socket per plane on the interface holding its address,
//     whole Ethernet/IPv4/UDP frames written by the link with the RoCEv2 ICRC, so any packet
//     takes any source port without a socket per EV. Root (or CAP_BPF, CAP_NET_ADMIN,
//     CAP_NET_RAW) only.
// Planes are IPv4 or IPv6 (the udp backend; xdp writes IPv4 frames only). With SRv6 paths
// (UdpHostConfig::srv6_paths, wire/srv6.h) every plane is IPv6 and each EV's packets go to a uSID
// container naming its path: the EV picks the path, the fabric follows it.
// Single-threaded: progress() does all the work; callers post work between calls.
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/endpoint.h"
#include "io/backend.h"
#include "io/link_watch.h"
#include "io/pcap_file.h"
#include "io/socket_address.h"
#include "mrc/datapath.hpp"
#include "mrc/error.hpp"
#include "wire/srv6.h"

namespace mrc::io {

// The public datapath vocabulary (include/mrc/datapath.hpp, namespace mrc) under the names the
// datapath's code has long used.
using mrc::Backend;
using mrc::Impairment;
using mrc::PlaneEvent;
using mrc::PlaneFlap;
using mrc::UdpPlaneStats;

// IPv6 planes need the udp backend, SRv6 paths IPv6 planes; the error names the plane.
Result<Ok, Error> check_plane_families(const std::vector<PlaneAddress>& planes, Backend backend,
                                       const wire::Srv6Paths& srv6_paths);

struct UdpHostConfig {
  std::vector<PlaneAddress> planes;
  Backend backend = Backend::kUdp;
  // First EV source port; plane p uses ports [base + p*n, base + (p+1)*n) with n = ev ports
  // per plane. Must match QpConfig::ev_port_base of every QP on this host.
  uint16_t ev_port_base = 50000;
  uint16_t ev_ports_per_plane = 40;
  // SRv6 uSID path mode (wire/srv6.h): empty, the EVs are ECMP entropy only; else every plane is
  // IPv6, a peer's plane address is its locator, and the EV of source port P takes path
  // P % paths (its uSIDs inserted after the locator's block). UDP checksums are zero then.
  wire::Srv6Paths srv6_paths;
  int socket_buffer_bytes = 8 << 20;
  // Batched send and receive (UDP GSO and GRO) where the kernel offers them; off: one datagram
  // per sendmmsg entry and per receive buffer.
  bool gso = true;
  bool gro = true;
  // After work, sleep_until() returns at once for this long instead of sleeping: a busy
  // connection keeps polling its sockets, so neither its peer's sends nor its own receives pay
  // for waking a sleeping thread (on a VM, most of a small datagram's cost). Only while the
  // thread is busy (its rounds with work took at least half of the last millisecond): a
  // link-bound connection, idle between datagrams, sleeps. 0: always sleep.
  Duration spin{Duration::from_us(100)};
  // Opt-in busy polling for latency-critical users (as SO_BUSY_POLL, or an RDMA application
  // polling its CQ): for this long after work, sleep_until() asks epoll without waiting which
  // sockets have datagrams instead of sleeping, so an arrival is not delayed by waking the
  // thread. It costs a core while it lasts; bounded by the setting (0: off).
  Duration busy_poll{0};
  Impairment impairment;
  uint64_t seed = 1;
  uint64_t qpn_seed = 0;  // EndpointConfig::qpn_seed
  uint32_t qpn_partition = 0,
           qpn_partitions = 1;  // EndpointConfig's: this host's share of a device group's QPNs
  // What the user changes to move the receive port and the EV source ports, named in the error
  // of a port already in use ("choose another with ..."): the tools' options by default; an API
  // on top names its own configuration.
  std::string port_setting = "--port";
  std::string ev_port_setting = "--ev-port-base";
};

class UdpHost {
 public:
  // Opens every socket; the error names the address and the system error.
  static Result<std::unique_ptr<UdpHost>, Error> open(const UdpHostConfig& config);
  ~UdpHost();
  UdpHost(const UdpHost&) = delete;
  UdpHost& operator=(const UdpHost&) = delete;

  Endpoint& endpoint() { return *endpoint_; }
  // A peer's receive addresses, one per plane; returns the handle for RtrAttributes::peer. The
  // same addresses always give the same handle, however many QPs connect to that peer. Refused
  // (nothing added): a plane of the other IP family, an SRv6 locator without room for a path.
  Result<uint32_t, Error> add_peer(const std::vector<PlaneAddress>& planes);
  // SRv6 uSID path mode: the path the EV of source `port` on `plane` takes, from now on, at
  // this end (the EVs an OCP controller names by their paths; every other port keeps
  // port % paths). Refused, nothing changed: no SRv6 mode, a port outside the plane's range, a
  // path that does not parse, too many distinct paths, or a peer's locator without room for it.
  Result<Ok, Error> set_port_path(int plane, uint16_t port, const std::vector<uint16_t>& path);
  // The path of that EV (empty without SRv6 or for a port outside the plane's range).
  std::vector<uint16_t> port_path(int plane, uint16_t port) const;
  static constexpr size_t kMaxSrv6Paths = 1024;
  // The IPv6 flow label of the EV of source `port` on `plane` (0: the kernel's own), for
  // EVs that also carry a flow label (the OCP controller's STEV format). Refused: a port
  // outside the plane's range, a plane that is not IPv6 on the udp backend, a label over 20
  // bits. The kernel sends any label unless another socket of the namespace holds an exclusive
  // flow-label lease (then such sends fail and count as send errors).
  Result<Ok, Error> set_port_flow_label(int plane, uint16_t port, uint32_t label);
  uint32_t port_flow_label(int plane, uint16_t port) const;
  // Receives, runs due timers and impairment events, transmits; if nothing could be done,
  // sleeps until a packet arrives, a deadline passes, or `max_wait` elapses.
  void progress(Duration max_wait);
  // The two halves of progress(), for a progress thread that must not hold its lock while it
  // sleeps: run_once() does all pending work and says whether there was any; wake_at() is when
  // the engine next needs attention; sleep_until() blocks until then, a packet, or wake().
  bool run_once();
  Instant wake_at() const;
  void sleep_until(Instant until);
  // Makes a sleeping sleep_until() return now (from any thread).
  void wake();
  Instant now() const;
  int planes() const { return static_cast<int>(planes_.size()); }
  Backend backend() const { return config_.backend; }
  // The backend and its planes' links ("udp (GSO/GRO)", "xdp: veth0 native copy").
  std::string backend_description() const;
  // The largest datagram every plane can carry (the xdp backend's frames are smaller than the
  // UDP limit): QPs on this host must fit their packets in it (Device::configure).
  size_t max_datagram_bytes() const;
  // The plane's counters (with the xdp backend's, read from its link).
  UdpPlaneStats plane_stats(int plane) const;
  // Takes a plane down or up now (as the impairment schedule does).
  void set_plane_up(int plane, bool up);
  // Writes every datagram sent (as it leaves, after the impairments) and received into
  // `capture` (null: stop), with the addresses it had on the wire; with the xdp backend the
  // RoCEv2 ICRC its link writes. The writer must outlive the capture.
  void set_capture(PcapWriter* capture) { capture_ = capture; }
  // A side channel beside the engine's datagrams (the in-band key agreement's KEY OFFERs,
  // secure/inband_keys.h): received datagrams whose first byte is `opcode` go to `handler` instead
  // of the endpoint (`icrc_checked`: the xdp link checked the RoCEv2 ICRC, which then stands
  // where the UDP datapath's CRC would), and send_side sends one to a peer's MRC port on every
  // plane that is up, from this host's MRC port, through the backend (the xdp link writes its
  // ICRC), outside the impairments.
  using SideHandler =
      std::function<void(std::span<const uint8_t>, const SocketAddress& from, bool icrc_checked)>;
  void set_side_channel(uint8_t opcode, SideHandler handler) {
    side_opcode_ = opcode;
    side_handler_ = std::move(handler);
  }
  void send_side(uint32_t peer, std::span<const uint8_t> datagram);

 private:
  struct Plane {
    PlaneAddress local;
    bool link_up = true;     // the interface holding the address is up and running
    bool admin_up = true;    // not taken down by set_plane_up / the impairment schedule
    bool flap_down = false;  // held down by one of the impairment's flaps (PlaneFlap)
    // The backend's link inside its decorators: impairments (if any) around the capture.
    std::unique_ptr<PlaneLink> link;
    PlaneLink* unimpaired = nullptr;  // the link below the impairments (the side channel's)
    UdpPlaneStats stats;
  };
  // Where a datagram goes: from which source port (the EV's, or the MRC port), to which address.
  struct Route {
    uint16_t source_port = 0;
    SocketAddress to;
  };

  explicit UdpHost(const UdpHostConfig& config);
  Result<Ok, Error> open_links();
  bool receive(Instant now, uint32_t ready);  // ready: bit p, read plane p
  void deliver(int plane, const RxDatagram& d, Instant now);
  // RxMeta::source of a datagram from `from`, and back (a reply's address): IPv4 addresses and
  // ports fit in it; an IPv6 sender is kept in reply_cache_ under a hash the token carries.
  uint64_t source_token(const SocketAddress& from);
  bool reply_address(uint64_t token, SocketAddress& to) const;
  size_t transmit(int plane, Instant now, size_t budget);
  bool transmit_round_robin(Instant now);
  // Where a packet the engine produced goes; false if nowhere.
  bool route(int plane, const TxMeta& meta, Route& route);
  // Where the next datagram on a plane's link is written (empty: no room now); another
  // plane's open transmit is sent first.
  std::span<uint8_t> tx_space(int plane, Instant now);
  void flush_open_batch(Instant now);  // sends open_plane_'s transmit, counted as its
  void account(int plane, const TxOutcome& outcome);
  bool release_delayed(Instant now);  // the datagrams the impairments held, now due
  void apply_schedule(Instant now);
  void apply_flaps(Instant now);
  void check_links(Instant now, bool readable);  // readable: the link watch has events
  void update_plane(int plane);

  UdpHostConfig config_;
  std::unique_ptr<Endpoint> endpoint_;
  std::vector<Plane> planes_;
  // A peer: its planes' receive addresses, and per plane where its packets go (one address,
  // or with SRv6 one per path of paths_).
  struct Peer {
    std::vector<PlaneAddress> planes;
    std::vector<std::vector<SocketAddress>> to;
  };
  // Peer p's destinations on its plane `plane` for each path of `paths` (wire::srv6_destination).
  // The index of EV source `port` among `plane`'s ports, if it is one of them.
  std::optional<uint32_t> port_index(int plane, uint16_t port) const;
  static Result<std::vector<SocketAddress>, Error> path_addresses(const PlaneAddress& a, int plane,
                                                                  const wire::Srv6Paths& paths);
  std::vector<Peer> peers_;
  // SRv6 paths (config_.srv6_paths, then those set_port_path added), and per plane the index
  // into it of each EV source port's path (plane p's port first_port + i: port_path_[p][i]).
  wire::Srv6Paths paths_;
  std::vector<std::vector<uint16_t>> port_path_;
  // Per plane, each EV source port's flow label (empty: none set on the plane).
  std::vector<std::vector<uint32_t>> port_flow_labels_;
  std::vector<SocketAddress> reply_cache_;  // IPv6 senders of recent datagrams, by hash
  SocketAddress last_v6_sender_;            // the last IPv6 sender, and its source token
  uint64_t last_v6_token_ = 0;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int64_t clock_origin_ns_ = 0;
  size_t next_schedule_ = 0;
  Instant next_flap_change_{0};  // no flap changes state before this (unused without flaps)
  int first_plane_ = 0;
  LinkWatch links_;
  bool link_check_due_ = false;  // a send failed as if a link were down: read them now
  // Which planes to read: after a sleep in epoll, the planes it reported (and bit kLinkBit for
  // the link watch); otherwise every plane. Set by sleep_until, which runs without the device's
  // lock, taken by receive under it. Epoll is level-triggered, so a plane left unread because
  // of a stale mask is reported again at the next sleep: a mask can delay a read, never lose it.
  static constexpr uint32_t kLinkBit = 1u << 31;
  std::atomic<uint32_t> ready_mask_{0};
  std::atomic<bool> ready_known_{false};
  // The planes the last round read and left empty: with no sleep since, the next round skips
  // them (a datagram that came meanwhile waits one round: the round after reads every plane,
  // and a sleep's epoll reports it). On a latency-bound exchange the round after a receive is
  // the one that sends the answer, and its read would find nothing.
  uint32_t emptied_mask_ = 0;
  uint32_t take_ready_mask();
  void note_ready(const epoll_event* events, int n);
  Instant last_busy_{INT64_MIN / 2};
  // How busy the thread is: the time its rounds with work took in the current 1 ms window, and
  // whether they filled at least half of the last one (sleep_until spins only then).
  Instant busy_window_start_{0};
  int64_t busy_ns_ = 0;
  bool busy_thread_ = false;
  void note_round(Instant start, Instant end, bool busy);
  // The one plane whose transmit may be open (TransmitGather): it stays open across that
  // plane's turns, so an EV burst the turn's budget cut in two still leaves as one, and is sent
  // before another plane writes.
  int open_plane_ = 0;
  // receive's scratch: every datagram of a round (in its plane's link, valid until the next
  // round), by the kernel's arrival time.
  struct Arrival {
    int64_t arrival_ns;
    int plane;
    const RxDatagram* datagram;
  };
  std::vector<Arrival> arrivals_;
  PcapWriter* capture_ = nullptr;
  uint8_t side_opcode_ = 0;
  SideHandler side_handler_;
};

}  // namespace mrc::io
