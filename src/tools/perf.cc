// `mrc perf` (see perf.h). One PerfSide per process: a device group (--threads shards, each an
// engine over its own sockets), queue pairs to the peer, a source ring and a target ring of
// message slots. Message i goes on QP i % qps into slot i % slots as a WRITE-with-immediate
// carrying i; slot s's bytes are area s % areas of each ring (--buffer: by default every slot
// has its own area; fewer areas make messages in flight share memory, as perftest's do); with
// --verify its bytes are a pattern of (i, offset) (tools/verify_pattern.h) that the receiver checks
// before returning a credit (a 0-byte WRITE-with-immediate with the high bit set) that frees the
// slot for reuse. QP q lives in shard q % threads. The main thread drives shard 0's datapath itself
// (no lock is contended there); shards 1.. run on their own threads, and the main thread takes a
// shard's lock to post to, poll or read one of its QPs.
#include "tools/perf.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "host/host.h"
#include "host/metrics.h"
#include "host/metrics_server.h"
#include "host/options.h"
#include "host/port_plan.h"
#include "host/queue_pairs.h"
#include "io/netdev.h"
#include "secure/key_exchange.h"
#include "tools/host_flags.h"
#include "tools/host_memory.h"
#include "tools/oob.h"
#include "tools/verify_pattern.h"
#include "util/prng.h"

namespace mrc::tools {

using host::MetricsOptions;
using host::MetricsServer;

namespace {

using nlohmann::json;
constexpr uint32_t kCreditBit = 0x80000000u;
// The largest message: a work request's length is 32 bits and a queue pair's largest message
// 2^31 bytes; 1 GiB keeps the two rings of a run within reach of a test machine.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 30;
// The largest --depth and --qps, on the command line and from a client alike.
constexpr uint32_t kMaxDepth = 128;
constexpr uint32_t kMaxQps = 64;
// --pingpong's timed exchanges per size when no --iterations, --bytes or --duration is given.
constexpr uint64_t kDefaultExchanges = 10'000;
// The set-up's version, "mrc_perf" in both hellos: the two ends must speak the same one. A
// change to the set-up messages or to what --verify writes makes a new one (2: the verify
// pattern of one hash per 64-byte block; 3: the ping-pong mode's parameter).
constexpr int kPerfProtocol = 3;

// Why the peer's hello is of another version ("" if it is of this one).
std::string protocol_error(const json& peer) {
  if (!peer.is_object() || !peer.contains("mrc_perf") || !peer["mrc_perf"].is_number_integer())
    return "the peer's set-up message names no mrc perf version (another program?)";
  const auto theirs = peer["mrc_perf"].get<int64_t>();
  if (theirs == kPerfProtocol) return "";
  return "the peer speaks mrc perf set-up version " + std::to_string(theirs) + " and this side " +
         std::to_string(kPerfProtocol) + ": run the same mrc build at both ends";
}

// Message areas of each ring (source and target): one per slot (2 x depth), or as many as
// --buffer holds (at least one).
uint64_t message_areas(const PerfOptions& o) {
  const uint64_t slots = uint64_t{std::max<uint32_t>(o.depth, 1)} * 2;
  const uint64_t slot_bytes = std::max<uint64_t>(o.size, 8);
  return o.buffer_bytes == 0 ? slots : std::clamp<uint64_t>(o.buffer_bytes / slot_bytes, 1, slots);
}

// Why a run with these parameters cannot start here, or "": the client checks its own, the
// server the client's (which arrive over the network and are not trusted).
std::string test_params_error(const PerfOptions& o) {
  if (o.size < 1 || o.size > kMaxMessageBytes)
    return "--size must be 1 byte to 1 GiB (was " + std::to_string(o.size) + ")";
  if (o.depth < 1 || o.depth > kMaxDepth)
    return "--depth must be 1 to " + std::to_string(kMaxDepth) + " (was " +
           std::to_string(o.depth) + ")";
  if (o.qps < 1 || o.qps > kMaxQps)
    return "--qps must be 1 to " + std::to_string(kMaxQps) + " (was " + std::to_string(o.qps) + ")";
  if (o.pingpong && (o.qps != 1 || o.depth != 1 || o.bidir))
    return "--pingpong runs one queue pair with one message each way at a time: drop --qps, "
           "--depth and --bidir";
  const uint64_t ring_bytes = message_areas(o) * std::max<uint64_t>(o.size, 8);
  if (std::string why = buffers_too_large(
          2 * ring_bytes,
          "message buffers (source and target, 2 x --depth messages of --size each)");
      !why.empty())
    return why + ": use a smaller --size or --depth, or --buffer";
  return "";
}

// "3s", "1500ms", "250us" or "2" (seconds): true if well formed, finite and at most 1e9 s
// either way (so that its nanoseconds fit an int64_t).
bool parse_seconds(const std::string& t, double& seconds) {
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const std::string unit(end);
  const double scale = unit == "s" || unit.empty() ? 1
                       : unit == "ms"              ? 1e-3
                       : unit == "us"              ? 1e-6
                                                   : -1;
  seconds = v * scale;
  return end != t.c_str() && scale > 0 && std::isfinite(seconds) && std::fabs(seconds) <= 1e9;
}

// "2@3s" or "2@1500ms+500ms": plane 2 down at 3 s (and up again 500 ms later).
Result<Ok, Error> parse_fail_plane(const std::string& text, std::vector<mrc::PlaneEvent>& out) {
  auto parse_time = [](const std::string& t, double& seconds) {
    return parse_seconds(t, seconds) && seconds >= 0;
  };
  const size_t at = text.find('@');
  const size_t plus = text.find('+');
  double when = 0, down_for = -1;
  const std::string plane_text = text.substr(0, std::min(at, text.size()));
  const bool plane_ok = !plane_text.empty() && plane_text.size() <= 2 &&
                        plane_text.find_first_not_of("0123456789") == std::string::npos;
  if (!plane_ok || at == std::string::npos ||
      !parse_time(
          text.substr(at + 1, plus == std::string::npos ? std::string::npos : plus - at - 1),
          when) ||
      (plus != std::string::npos && !parse_time(text.substr(plus + 1), down_for))) {
    return fail(Errc::kInvalidArgument,
                "--fail-plane '" + text +
                    "': expected PLANE@TIME or PLANE@TIME+DURATION, e.g. 2@3s or 1@500ms+1s");
  }
  const int plane = std::stoi(plane_text);
  out.push_back({Duration{static_cast<int64_t>(when * 1e9)}, plane, false});
  if (down_for >= 0)
    out.push_back({Duration{static_cast<int64_t>((when + down_for) * 1e9)}, plane, true});
  return Ok{};
}

// "1:500ms:3s": plane 1 down for 500 ms in every 3 s (down at 3 s, 6 s, ...), for as long as the
// side runs (mrc::PlaneFlap: no event list, whatever the length of the run).
Result<Ok, Error> parse_flap_plane(const std::string& text, int planes,
                                   std::vector<mrc::PlaneFlap>& out) {
  const size_t first = text.find(':');
  const size_t second = first == std::string::npos ? first : text.find(':', first + 1);
  const std::string plane_text = text.substr(0, first);
  double down_for = 0, every = 0;
  if (second == std::string::npos || plane_text.empty() || plane_text.size() > 3 ||
      plane_text.find_first_not_of("0123456789") != std::string::npos ||
      !parse_seconds(text.substr(first + 1, second - first - 1), down_for) ||
      !parse_seconds(text.substr(second + 1), every)) {
    return fail(
        Errc::kInvalidArgument,
        "--flap-plane '" + text +
            "': expected PLANE:DOWN_FOR:EVERY, times in s, ms or us, e.g. 1:500ms:3s (plane "
            "1 down for 500 ms every 3 s)");
  }
  const mrc::PlaneFlap flap{std::atoi(plane_text.c_str()),
                            Duration{static_cast<int64_t>(down_for * 1e9)},
                            Duration{static_cast<int64_t>(every * 1e9)}};
  const std::string what = "--flap-plane '" + text + "': ";
  if (flap.plane >= planes) {
    return fail(Errc::kInvalidArgument, what + "plane " + std::to_string(flap.plane) +
                                            " does not exist (planes are 0.." +
                                            std::to_string(planes - 1) + ")");
  }
  if (flap.down_for.ns <= 0 || flap.every.ns <= 0)
    return fail(Errc::kInvalidArgument, what + "DOWN_FOR and EVERY must be greater than zero");
  if (flap.down_for >= flap.every) {
    return fail(Errc::kInvalidArgument,
                what + "DOWN_FOR must be shorter than EVERY (the plane would never come up)");
  }
  out.push_back(flap);
  return Ok{};
}

// The impairments the command line asks for, on a side with `planes` planes.
Result<Ok, Error> impairment_from_options(const PerfOptions& o, int planes, mrc::Impairment& imp) {
  imp.drop = o.drop;
  imp.delay = Duration{static_cast<int64_t>(o.delay_us * 1000)};
  imp.reorder = o.reorder;
  for (const std::string& f : o.fail_plane) {
    if (auto parsed = parse_fail_plane(f, imp.schedule); !parsed.ok()) return parsed;
  }
  for (const mrc::PlaneEvent& e : imp.schedule) {
    if (e.plane < 0 || e.plane >= planes) {
      return fail(Errc::kInvalidArgument, "--fail-plane: plane " + std::to_string(e.plane) +
                                              " does not exist (planes are 0.." +
                                              std::to_string(planes - 1) + ")");
    }
  }
  for (const std::string& f : o.flap_plane) {
    if (auto parsed = parse_flap_plane(f, planes, imp.flaps); !parsed.ok()) return parsed;
  }
  return Ok{};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

namespace {

class PerfSide {
 public:
  PerfSide(const PerfOptions& o, bool is_server) : o_(o), server_(is_server) {}

  Result<Ok, Error> open();
  json hello() const;
  Result<Ok, Error> connect(const json& peer);

  // Sender: messages of `size` bytes until `count` are sent (0: until stop_sending()).
  void start_sending(uint64_t size, uint64_t count);
  void stop_sending() { send_limit_ = next_message_; }
  bool sending_done() const {
    return next_message_ >= send_limit_ && completed_ == next_message_ &&
           (!o_.pingpong || server_ || pongs_ == next_message_);
  }
  void step();  // progress + completions + posting
  void attach_metrics(MetricsServer* metrics) { metrics_ = metrics; }
  bool pingpong() const { return o_.pingpong; }

  int planes() const { return devices_->planes(); }
  mrc::UdpPlaneStats plane_stats(int p) const { return devices_->plane_stats(p); }
  // The UDP receive port of thread 0's planes: --port, or this side's default.
  uint16_t udp_port() const;
  std::string backend_description() const {
    return devices_->shard(0).host().backend_description();
  }
  uint64_t messages_sent() const { return completed_; }
  uint64_t bytes_sent() const { return bytes_completed_; }
  uint64_t messages_received() const { return received_; }
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t bytes_verified() const { return bytes_verified_; }
  uint64_t mismatches() const { return mismatches_; }
  uint64_t send_errors() const { return send_errors_; }
  // Non-empty once a queue pair has failed: the test cannot finish and must stop.
  const std::string& failure() const { return failure_; }
  const std::vector<double>& latencies_us() const { return latencies_us_; }
  void clear_latencies() {
    latencies_us_.clear();
    latencies_seen_ = 0;
  }
  // Calls fn(qp) for every QP, holding its shard's lock.
  template <typename Fn>
  void for_each_qp(Fn fn) {
    for (size_t q = 0; q < placed_.size(); ++q) {
      std::lock_guard lock(shard_of(q).lock());
      fn(*placed_[q].qp);
    }
  }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint32_t mtu_bytes() const { return mtu_; }
  // --pcap: what the capture holds, for the summary ("" without one).
  std::string capture_note() const { return devices_->capture_note("--pcap-max-mib"); }
  // The engines' endpoint counters (datagrams that reached no QP: malformed, bad ICRC, unknown
  // QPN), summed over the shards, each read under its shard's lock.
  EndpointStats endpoint_stats() const {
    EndpointStats sum;
    for (uint32_t s = 0; s < devices_->size(); ++s) {
      io::Device& shard = devices_->shard(s);
      std::lock_guard lock(shard.lock());
      const EndpointStats e = shard.endpoint().stats();
      sum.datagrams_received += e.datagrams_received;
      sum.datagrams_sent += e.datagrams_sent;
      sum.unknown_qp += e.unknown_qp;
      for (size_t i = 0; i < e.decode_errors.size(); ++i)
        sum.decode_errors[i] += e.decode_errors[i];
      for (size_t i = 0; i < e.security_drops.size(); ++i)
        sum.security_drops[i] += e.security_drops[i];
    }
    return sum;
  }

 private:
  io::Device& shard_of(size_t q) const {
    return devices_->shard(static_cast<uint32_t>(q % devices_->size()));
  }
  Result<Ok, Error> choose_mtu();
  QpConfig qp_config(size_t q, uint32_t mtu_bytes) const;
  Result<Ok, Error> open_qps();
  Result<Ok, Error> connect_qp(size_t q, const json& peer);
  void poll_shard(uint32_t s);
  std::string render() const;
  void post_messages();
  // Posts message i of size_ bytes from its slot; false if the send queue is full.
  bool post_message(uint64_t i, uint32_t immediate);
  // --pingpong: the server answers every message with one of the same size and number; the
  // client times the exchange and sends the next.
  void on_ping(const Completion& c);
  void on_pong(const Completion& c);
  void on_completion(const Completion& c);
  void on_receive(const Completion& c, QueuePair* qp);
  // Frees the peer's slot of `message`; a credit the send queue has no room for waits in
  // pending_credits_ and goes out at the shard's next poll (dropped, its slot would stay busy
  // and the peer would stall).
  void send_credit(QueuePair* qp, uint32_t message);

  const PerfOptions& o_;
  bool server_;
  struct PendingCredit {
    uint32_t shard;
    QueuePair* qp;
    uint32_t message;
  };
  std::deque<PendingCredit> pending_credits_;  // at most one per slot
  uint32_t polling_shard_ = 0;
  MetricsServer* metrics_ = nullptr;     // --metrics-port: refreshed from step()
  std::unique_ptr<host::Host> devices_;  // shard 0 driven by step(), the others by threads
  uint32_t pd_ = 0;
  std::vector<CompletionQueue*> cqs_;  // one per shard
  std::vector<host::HostQp> placed_;   // QP q in shard q % threads, its PSN and key exchange
  std::vector<uint8_t> posted_;        // per shard: posted to since its thread was last woken
  uint32_t slots_ = 0;
  uint32_t areas_ = 0;  // memory areas of slot_bytes_ each; slot s uses area s % areas_
  uint64_t area_offset(uint32_t slot) const { return (slot % areas_) * slot_bytes_; }
  uint64_t slot_bytes_ = 0;
  std::vector<uint8_t> source_, target_;
  MemoryRegionInfo source_mr_{}, target_mr_{};
  uint64_t peer_addr_ = 0;
  uint32_t peer_rkey_ = 0;
  std::vector<bool> slot_busy_;
  uint64_t size_ = 0;
  uint64_t next_message_ = 0;
  uint64_t send_limit_ = 0;
  uint64_t completed_ = 0;
  uint64_t bytes_completed_ = 0;
  uint64_t received_ = 0;
  uint64_t bytes_received_ = 0;
  uint64_t bytes_verified_ = 0;
  uint64_t mismatches_ = 0;
  uint64_t send_errors_ = 0;
  std::string failure_;
  // Secure mode: the pre-shared key and each QP's key exchange (secure/key_exchange.h).
  SecureMode secure_ = SecureMode::kOff;
  uint32_t mtu_ = 4096;  // payload bytes per packet (choose_mtu, then agreed at connect)
  std::vector<uint8_t> key_;
  Result<Ok, Error> read_key();
  std::string peer_name(size_t q) const;
  std::map<uint64_t, std::chrono::steady_clock::time_point> posted_at_;
  uint64_t pongs_ = 0;        // --pingpong client: answers received
  uint64_t warmup_left_ = 0;  // --pingpong client: exchanges of this size not yet timed
  std::chrono::steady_clock::time_point ping_at_;
  // A uniform sample (reservoir) of at most kMaxLatencySamples of the latencies seen, so a run of
  // any length keeps bounded memory; the percentiles are exact until then.
  static constexpr size_t kMaxLatencySamples = size_t{1} << 20;
  void note_latency(double us);
  std::vector<double> latencies_us_;
  uint64_t latencies_seen_ = 0;
  Prng latency_pick_{0x1a7e};
};

// The default UDP port and first EV source port of a side (PerfOptions::port, ev_port_base):
// the client's start past what a server of the most threads binds on the same addresses.
host::PortPlan default_ports(size_t planes) {
  host::PortPlan plan;  // slot 0 the server's, slot 1 the client's
  plan.port = 4791;
  plan.ev_port_base = 50000;
  plan.planes = planes;
  plan.threads = mrc::kMaxDeviceThreads;
  return plan;
}
uint16_t default_port(bool server) {
  return static_cast<uint16_t>(default_ports(1).receive_port(server ? 0 : 1));
}
uint32_t default_ev_port_base(bool server, size_t planes) {
  return default_ports(planes).ev_ports(server ? 0 : 1).first;
}

uint16_t PerfSide::udp_port() const {
  return o_.port != 0 ? o_.port : default_port(server_);
}

Result<Ok, Error> PerfSide::read_key() {
  secure_ = o_.host.context.secure;
  auto key =
      host::preshared_key_for(secure_, o_.host.key_file, "--secure ", "--key-file", "both sides");
  if (!key.ok()) return Err{key.error()};
  key_ = std::move(key.value());
  return Ok{};
}

std::string PerfSide::peer_name(size_t q) const {
  return (server_ ? std::string("the client") : "the server at " + o_.connect) + ", queue pair " +
         std::to_string(q);
}

namespace {

// The datapath's settings from the options: plane addresses, EV ports, backend, SRv6 paths and
// impairments, checked as far as they can be without opening anything (a server checks them
// before it waits for a client).
Result<io::DeviceConfig, Error> device_config(const PerfOptions& o, bool server) {
  ContextOptions c;  // the host settings, converted as every front door's are (host/options.h)
  c.planes = o.planes;
  c.port = o.port != 0 ? o.port : default_port(server);
  const uint32_t ev_base =
      o.ev_port_base != 0 ? o.ev_port_base : default_ev_port_base(server, o.planes.size());
  if (ev_base > 65535) {  // the host checks where the range ends
    return fail(Errc::kInvalidArgument, "the default EV source ports for " +
                                            std::to_string(o.planes.size()) +
                                            " planes start past 65535: choose --ev-port-base");
  }
  c.ev_port_base = static_cast<uint16_t>(ev_base);
  c.gso = o.gso;
  c.backend = o.host.context.backend;
  c.srv6_paths = o.host.context.srv6_paths;
  c.busy_poll_us = o.host.context.busy_poll_us;
  auto hc = host::device_config(c, host::Spelling{host::kDoorFlag, ""});
  if (!hc.ok()) return Err{hc.error()};
  auto impaired =
      impairment_from_options(o, static_cast<int>(o.planes.size()), hc.value().impairment);
  if (!impaired.ok()) return Err{impaired.error()};
  return hc;
}

}  // namespace

Result<Ok, Error> PerfSide::open() {
  if (auto keyed = read_key(); !keyed.ok()) return keyed;
  auto config = device_config(o_, server_);
  if (!config.ok()) return Err{config.error()};
  const io::DeviceConfig& hc = config.value();
  auto devices = host::Host::open(hc, o_.host.context.threads);
  if (!devices.ok()) return Err{devices.error()};
  devices_ = std::move(devices.value());
  const ContextOptions& c = o_.host.context;
  if (!c.pcap.empty())
    if (auto captured = devices_->capture(c.pcap, c.pcap_max_mib << 20); !captured.ok())
      return fail(captured.error(), "--pcap: ");
  pd_ = devices_->alloc_pd();
  for (uint32_t s = 0; s < devices_->size(); ++s)
    cqs_.push_back(devices_->shard(s).create_cq(1 << 16));
  posted_.assign(devices_->size(), 0);
  if (auto opened = open_qps(); !opened.ok()) return opened;
  slots_ = std::max<uint32_t>(o_.depth, 1) * 2;
  slot_bytes_ = std::max<uint64_t>(o_.size, 8);
  areas_ = static_cast<uint32_t>(message_areas(o_));
  source_.resize(areas_ * slot_bytes_);
  target_.assign(areas_ * slot_bytes_, 0);
  for (size_t i = 0; i < source_.size(); ++i) source_[i] = static_cast<uint8_t>(i * 131 + 7);
  slot_busy_.assign(slots_, false);
  source_mr_ =
      devices_->register_region(pd_, source_.data(), source_.size(), kAccessLocalWrite).value();
  target_mr_ =
      devices_->register_region(pd_, target_.data(), target_.size(), kAccessRemoteWrite).value();
  // Another shard's completions wake shard 0, which step() may be sleeping in.
  devices_->on_completions([](uint32_t, std::span<const uint32_t>) {}, true);
  devices_->start_threads(1);
  return Ok{};
}

// The payload per packet: --mtu, or the largest every plane's interface carries (the peer's
// hello may lower it: the two sides agree on the smaller).
Result<Ok, Error> PerfSide::choose_mtu() {
  auto chosen = io::choose_payload_bytes(o_.mtu, o_.planes);
  if (!chosen.ok()) return fail(chosen.error(), "--mtu: ");
  mtu_ = chosen.value();
  return Ok{};
}

// QP q's configuration at `mtu_bytes` payload bytes: the datapath's defaults, then what the
// command line asks for.
QpConfig PerfSide::qp_config(size_t q, uint32_t mtu_bytes) const {
  QpConfig c;
  c.ev_count = static_cast<uint16_t>(o_.ev_count);
  c.ack_every_packets = o_.ack_every;
  c.timeout = 12;
  c.retry_exp = 10;  // tolerate seconds-long scheduling stalls of a busy host (~8 s in all)
  c.cc = parse_cc_algorithm(o_.cc).value();                   // the CLI accepts the names only
  c.path_policy = parse_path_policy(o_.path_policy).value();  // likewise the policies' names
  c.nscc.max_window_bytes = c.fixed_window_bytes = static_cast<uint64_t>(o_.window_kib) << 10;
  c.nscc.initial_window_bytes =
      std::min<uint64_t>(c.nscc.initial_window_bytes, c.nscc.max_window_bytes);
  c.set_mtu(mtu_bytes);
  shard_of(q).configure(c, secure_);  // keys come at connect
  if (o_.ev_burst != 0)
    c.ev_burst_packets = static_cast<uint16_t>(std::min<uint32_t>(o_.ev_burst, 0xFFFF));
  if (o_.target_delay_us >= 0)
    c.nscc.target_delay_ns = static_cast<int64_t>(o_.target_delay_us * 1000);
  return c;
}

// The QPs, before any thread runs: QP q in shard q % threads, with that shard's EV ports.
Result<Ok, Error> PerfSide::open_qps() {
  if (auto chosen = choose_mtu(); !chosen.ok()) return chosen;
  for (uint32_t q = 0; q < o_.qps; ++q) {
    host::QpSpec spec;
    spec.config = qp_config(q, mtu_);
    spec.pd = pd_;
    spec.send_cq = spec.recv_cq = [this](uint32_t shard) { return cqs_[shard]; };
    spec.secure = secure_;
    spec.preshared_key = key_;
    spec.shard = q % devices_->size();
    auto placed = host::create_qp(*devices_, spec);
    if (!placed.ok()) return fail(placed.error(), "queue pair " + std::to_string(q) + ": ");
    placed_.push_back(std::move(placed.value()));
  }
  return Ok{};
}

json PerfSide::hello() const {
  json qps = json::array();
  for (size_t i = 0; i < placed_.size(); ++i) {
    json planes = json::array();  // where the QP's shard listens
    for (const io::PlaneAddress& a : shard_of(i).config().planes)
      planes.push_back(io::to_string(a));
    const uint32_t psn = placed_[i].psn.value;
    const uint32_t qpn = placed_[i].qp->qpn().value;
    qps.push_back({{"qpn", qpn}, {"psn", psn}, {"planes", planes}});
    if (placed_[i].exchange) {
      const secure::KeyOffer offer = placed_[i].exchange->offer(qpn, psn);
      qps.back()["key"] = {{"id", offer.key_id}, {"share", offer.share}, {"proof", offer.proof}};
    }
  }
  return {{"mrc_perf", kPerfProtocol},
          {"planes", o_.planes},
          {"port", udp_port()},
          {"qps", qps},
          {"rkey", target_mr_.rkey},
          {"addr", target_mr_.address},
          {"len", target_.size()},
          {"backend", mrc::to_string(o_.host.context.backend)},
          {"secure", to_string(o_.host.context.secure)},
          {"mtu", mtu_}};
}

// REQUIRES: protocol_error(peer) is "" (both callers check the version first).
Result<Ok, Error> PerfSide::connect(const json& peer) {
  if (peer.at("qps").size() != placed_.size() || peer.at("planes").size() != o_.planes.size()) {
    return fail(Errc::kInvalidArgument,
                "peer configuration does not match: both sides need the same number of planes "
                "(--planes) and QPs (--qps)");
  }
  // The backends' ICRCs differ (docs/PROTOCOL.md §1.9): each end would drop all the other sends.
  const std::string ours = mrc::to_string(o_.host.context.backend);
  if (const std::string theirs = peer.value("backend", std::string("udp")); theirs != ours) {
    return fail(Errc::kInvalidArgument,
                "the peer uses the " + theirs + " backend and this side the " + ours +
                    " backend: both ends need the same --backend (their ICRCs differ)");
  }
  const auto parsed = parse_secure_mode(peer.value("secure", std::string("off")));
  const SecureMode theirs = parsed.ok() ? parsed.value() : SecureMode::kOff;
  if (auto same = secure::check_secure_modes(secure_, theirs, peer_name(0)); !same.ok())
    return fail(same.error(), "");
  peer_addr_ = peer.at("addr").get<uint64_t>();
  peer_rkey_ = peer.at("rkey").get<uint32_t>();
  if (peer.at("len").get<uint64_t>() < areas_ * slot_bytes_) {
    return fail(Errc::kInvalidArgument,
                "peer buffer too small: use the same --size, --depth and --buffer on both sides");
  }
  // A peer without the field (an older build) sends 4096-byte payloads.
  const uint32_t agreed = std::min(mtu_, peer.value("mtu", 4096u));
  for (size_t q = 0; q < placed_.size(); ++q) {
    if (agreed != mtu_) {
      std::lock_guard lock(shard_of(q).lock());
      if (auto set = placed_[q].qp->set_config(qp_config(q, agreed)); !set.ok())
        return fail(to_error(set.error()), "queue pair " + std::to_string(q) + ": ");
    }
    if (auto connected = connect_qp(q, peer); !connected.ok()) return connected;
  }
  mtu_ = agreed;
  return Ok{};
}

// QP q to the peer's QP q, at the ports of the peer's shard that holds it; then its receives.
Result<Ok, Error> PerfSide::connect_qp(size_t q, const json& peer) {
  const json& theirs = peer.at("qps").at(q);
  const json& planes = theirs.contains("planes") ? theirs.at("planes") : peer.at("planes");
  host::RemoteQp remote{Qpn(theirs.at("qpn").get<uint32_t>()),
                        Psn(theirs.at("psn").get<uint32_t>()),
                        {},
                        {},
                        peer_name(q)};
  for (const auto& text : planes) {
    auto a = io::parse_plane_address(text.get<std::string>(), peer.at("port").get<uint16_t>());
    if (!a.ok()) return fail(a.error(), "the peer's queue pair " + std::to_string(q) + ": ");
    remote.planes.push_back(a.value());
  }
  remote.offer.mode = secure_;  // (connect() checked that the two ends' modes agree)
  if (secure_ != SecureMode::kOff) {
    if (!theirs.contains("key"))
      return fail(Errc::kInvalidArgument, peer_name(q) + " sent no key exchange");
    const json& k = theirs.at("key");
    remote.offer =
        secure::KeyOffer{secure_, k.value("id", ""), k.value("share", ""), k.value("proof", "")};
  }
  auto connected = host::connect_qp(*devices_, placed_[q], remote);
  if (!connected.ok())
    return fail(connected.error(), "connecting queue pair " + std::to_string(q) + ": ");
  for (uint32_t r = 0; r < 200; ++r) {
    if (auto posted = host::post_recv(*devices_, placed_[q], r); !posted.ok())
      return fail(posted.error(), "queue pair " + std::to_string(q) + ": posting receive " +
                                      std::to_string(r) + ": ");
  }
  return Ok{};
}

void PerfSide::start_sending(uint64_t size, uint64_t count) {
  size_ = size;
  send_limit_ = count == 0 ? UINT64_MAX : next_message_ + count;
  warmup_left_ = o_.warmup;
}

void PerfSide::post_messages() {
  while (next_message_ < send_limit_) {
    const uint64_t i = next_message_;
    if (o_.pingpong) {  // one exchange at a time, timed from here to its answer
      if (i != pongs_) return;
      ping_at_ = std::chrono::steady_clock::now();
      if (!post_message(i, static_cast<uint32_t>(i) & ~kCreditBit)) return;
      continue;
    }
    const uint32_t slot = static_cast<uint32_t>(i % slots_);
    if (slot_busy_[slot] || i - completed_ >= o_.depth) return;
    if (!post_message(i, static_cast<uint32_t>(i) & ~kCreditBit)) return;
    slot_busy_[slot] = true;
    posted_at_[i] = std::chrono::steady_clock::now();
  }
}

bool PerfSide::post_message(uint64_t i, uint32_t immediate) {
  const uint32_t slot = immediate % slots_;
  const size_t q = i % placed_.size();
  QueuePair* qp = placed_[q].qp;
  uint8_t* src = source_.data() + area_offset(slot);
  if (o_.verify) fill_pattern(src, immediate, size_);
  Sge sge{reinterpret_cast<uint64_t>(src), static_cast<uint32_t>(size_), source_mr_.lkey};
  SendWr wr;
  wr.wr_id = i;
  wr.opcode = SendOpcode::kWriteWithImm;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = peer_addr_ + area_offset(slot);
  wr.rkey = peer_rkey_;
  wr.immediate = immediate;
  {
    std::unique_lock lock(shard_of(q).lock(), std::defer_lock);
    if (!server_ || !o_.pingpong) lock.lock();  // (the server answers from poll_shard)
    if (!qp->post_send(wr).ok()) return false;  // send queue full: try again after completions
  }
  posted_[q % posted_.size()] = 1;
  ++next_message_;
  return true;
}

void PerfSide::on_ping(const Completion& c) {
  size_ = c.byte_len;
  if (!post_message(next_message_, c.immediate) && failure_.empty())
    failure_ = "queue pair " + std::to_string(c.qpn.value) +
               ": the send queue had no room for a ping-pong answer";
}

void PerfSide::on_pong(const Completion& c) {
  if (c.immediate != static_cast<uint32_t>(pongs_)) {
    if (failure_.empty())
      failure_ = "ping-pong answer " + std::to_string(c.immediate) + " arrived while " +
                 std::to_string(pongs_) + " was awaited";
    return;
  }
  ++pongs_;
  if (warmup_left_ > 0) {
    --warmup_left_;
    return;
  }
  note_latency(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - ping_at_)
          .count());
}

void PerfSide::send_credit(QueuePair* qp, uint32_t message) {
  SendWr wr;
  wr.wr_id = UINT64_MAX;  // credits are not counted as messages
  wr.opcode = SendOpcode::kWriteWithImm;
  wr.remote_addr = peer_addr_;
  wr.rkey = peer_rkey_;
  wr.immediate = message | kCreditBit;
  wr.signaled = false;
  if (!qp->post_send(wr).ok()) pending_credits_.push_back({polling_shard_, qp, message});
}

void PerfSide::on_receive(const Completion& c, QueuePair* qp) {
  if (auto reposted = qp->post_recv(c.wr_id); !reposted.ok() && failure_.empty())
    failure_ = "queue pair " + std::to_string(c.qpn.value) +
               ": reposting a receive: " + to_string(reposted.error());
  if (c.immediate & kCreditBit) {  // the peer verified a message of ours: its slot is free
    slot_busy_[(c.immediate & ~kCreditBit) % slots_] = false;
    return;
  }
  ++received_;
  bytes_received_ += c.byte_len;
  if (o_.verify) {
    const uint32_t slot = c.immediate % slots_;
    if (check_pattern(target_.data() + area_offset(slot), c.immediate, c.byte_len)) {
      bytes_verified_ += c.byte_len;
    } else {
      ++mismatches_;
    }
  }
  if (o_.pingpong) return server_ ? on_ping(c) : on_pong(c);
  if (o_.verify) send_credit(qp, c.immediate);
}

void PerfSide::on_completion(const Completion& c) {
  QueuePair* qp = nullptr;
  for (const host::HostQp& q : placed_)
    if (q.qp->qpn() == c.qpn) qp = q.qp;
  if (c.status != WcStatus::kSuccess) {
    ++send_errors_;
    if (failure_.empty())
      failure_ = "queue pair " + std::to_string(c.qpn.value) + " failed: " + to_string(c.status) +
                 (c.status == WcStatus::kRetryExceeded
                      ? " (the peer stopped answering for longer than the retry limit)"
                      : "");
    return;
  }
  if (c.opcode == WcOpcode::kRecvRdmaWithImm) return on_receive(c, qp);
  if (c.wr_id == UINT64_MAX) return;
  ++completed_;
  bytes_completed_ += c.byte_len;
  if (!o_.verify) slot_busy_[c.wr_id % slots_] = false;
  auto it = posted_at_.find(c.wr_id);
  if (it != posted_at_.end()) {
    note_latency(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - it->second)
            .count());
    posted_at_.erase(it);
  }
}

void PerfSide::note_latency(double us) {
  if (latencies_us_.size() < kMaxLatencySamples) {
    latencies_us_.push_back(us);
  } else {
    const uint64_t j = latency_pick_.below(latencies_seen_ + 1);
    if (j < kMaxLatencySamples) latencies_us_[j] = us;
  }
  ++latencies_seen_;
}

// Holding shard s's lock: its completions, and the receives and credits they post.
void PerfSide::poll_shard(uint32_t s) {
  std::lock_guard lock(devices_->shard(s).lock());
  polling_shard_ = s;
  // Credits that found the send queue full, in their order (each is re-queued if still full).
  const size_t waiting = pending_credits_.size();
  for (size_t i = 0; i < waiting; ++i) {
    const PendingCredit c = pending_credits_.front();
    pending_credits_.pop_front();
    if (c.shard == s) {
      send_credit(c.qp, c.message);
    } else {
      pending_credits_.push_back(c);
    }
  }
  Completion wc[64];
  for (size_t n; (n = cqs_[s]->poll(wc)) > 0;) {
    for (size_t k = 0; k < n; ++k) on_completion(wc[k]);
    posted_[s] = 1;
  }
}

void PerfSide::step() {
  devices_->shard(0).progress(Duration::from_us(200));
  for (uint32_t s = 0; s < devices_->size(); ++s) poll_shard(s);
  post_messages();
  for (uint32_t s = 1; s < devices_->size(); ++s)  // shard 0 runs in the next step()
    if (posted_[s]) devices_->shard(s).wake();
  std::fill(posted_.begin(), posted_.end(), 0);
  if (metrics_ != nullptr) metrics_->maybe_publish([&] { return render(); });
}

// The metrics text (host::Host::metrics_text): one engine's, or every shard's with its thread.
std::string PerfSide::render() const {
  return devices_->metrics_text(MetricsOptions{{{"role", server_ ? "server" : "client"}}});
}

}  // namespace

namespace {

using Clock = std::chrono::steady_clock;

struct Interval {
  double t_s;
  double gbit_s;
  std::vector<double> plane_gbit_s;
  std::vector<bool> plane_up;
};

// Per-interval reporting: total goodput and per-plane wire throughput since the last line.
class Reporter {
 public:
  Reporter(PerfSide& side, const PerfOptions& o)
      : side_(side), o_(o), start_(Clock::now()), last_(start_) {
    last_plane_bytes_.assign(side.planes(), 0);
  }
  void maybe_report(bool final_line = false) {
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_).count();
    if (dt < o_.interval_s && !final_line) return;
    if (dt <= 0) return;
    Interval iv;
    iv.t_s = std::chrono::duration<double>(now - start_).count();
    const uint64_t bytes = side_.bytes_sent() + side_.bytes_received();
    iv.gbit_s = static_cast<double>(bytes - last_bytes_) * 8 / dt / 1e9;
    last_bytes_ = bytes;
    for (int p = 0; p < side_.planes(); ++p) {
      const auto& s = side_.plane_stats(p);
      iv.plane_gbit_s.push_back(
          static_cast<double>(s.bytes_sent + s.bytes_received - last_plane_bytes_[p]) * 8 / dt /
          1e9);
      iv.plane_up.push_back(s.up);
      last_plane_bytes_[p] = s.bytes_sent + s.bytes_received;
    }
    last_ = now;
    intervals_.push_back(iv);
    if (o_.json) return;
    std::fprintf(stderr, "[%6.2fs] %7.2f Gbit/s |", iv.t_s, iv.gbit_s);
    for (size_t p = 0; p < iv.plane_gbit_s.size(); ++p) {
      if (iv.plane_up[p])
        std::fprintf(stderr, " p%zu %6.2f", p, iv.plane_gbit_s[p]);
      else
        std::fprintf(stderr, " p%zu  DOWN ", p);
    }
    std::fprintf(stderr, " Gbit/s\n");
  }
  const std::vector<Interval>& intervals() const { return intervals_; }
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  PerfSide& side_;
  const PerfOptions& o_;
  Clock::time_point start_, last_;
  uint64_t last_bytes_ = 0;
  std::vector<uint64_t> last_plane_bytes_;
  std::vector<Interval> intervals_;
};

double us(int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

// A reason's name as a JSON key: "bad ICRC" -> "bad_icrc".
std::string key_of(std::string_view name) {
  std::string key(name);
  for (char& c : key)
    c = c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

// One QP's counters in the --json summary.
json qp_json(Qpn qpn, const QpStats& s) {
  return {{"qpn", qpn.value},
          {"retransmits", s.retransmits},
          {"losses_fast", s.losses_fast},
          {"losses_nack", s.losses_nack},
          {"losses_same_ev", s.losses_same_ev},
          {"losses_same_ev_late", s.losses_same_ev_late},
          {"losses_rack", s.losses_rack},
          {"losses_probe", s.losses_probe},
          {"losses_tail", s.losses_tail},
          {"losses_timeout", s.losses_timeout},
          {"losses_port", s.losses_port},
          {"false_losses", s.false_losses},
          {"spurious_retransmits", s.spurious_retransmits},
          {"timeouts", s.timeouts},
          {"tail_probes", s.tail_probes},
          {"ev_probes", s.ev_probes},
          {"stale_sacks", s.stale_sacks},
          {"rtt_us",
           {{"min", us(s.rtt.min_ns)},
            {"avg", us(s.rtt.avg_ns())},
            {"max", us(s.rtt.max_ns)},
            {"smoothed", us(s.rtt.smoothed_ns)}}},
          {"window_bytes", s.window_bytes}};
}

json plane_and_ev_summary(PerfSide& side) {
  json planes = json::array();
  json qps = json::array();
  std::vector<uint64_t> retransmits(side.planes(), 0);
  std::map<std::string, uint64_t> ev_states;
  std::map<std::string, uint64_t> drops;  // by DropReason, over the QPs
  json worst = json::array();
  side.for_each_qp([&](QueuePair& q) {
    QueuePair* qp = &q;
    const QpStats s = qp->stats();
    for (int p = 0; p < side.planes(); ++p) retransmits[p] += s.planes[p].retransmits;
    for (size_t r = 0; r < s.drops.size(); ++r)
      if (s.drops[r] > 0) drops[to_string(static_cast<DropReason>(r))] += s.drops[r];
    qps.push_back(qp_json(qp->qpn(), s));
    if (const EvSet* evs = qp->evs()) {
      for (size_t i = 0; i < evs->size(); ++i) {
        const EvSet::Slot& slot = evs->slot(static_cast<uint16_t>(i));
        if (slot.active) ++ev_states[to_string(slot.state)];
        const EvStats stats = evs->stats(static_cast<uint16_t>(i));
        if (stats.losses > 0)
          worst.push_back({{"ev", slot.ev.value},
                           {"plane", slot.plane.value},
                           {"state", to_string(slot.state)},
                           {"packets", stats.packets},
                           {"losses", stats.losses}});
      }
    }
  });
  for (int p = 0; p < side.planes(); ++p) {
    const auto& s = side.plane_stats(p);
    planes.push_back({{"plane", p},
                      {"packets_sent", s.packets_sent},
                      {"bytes_sent", s.bytes_sent},
                      {"packets_received", s.packets_received},
                      {"bytes_received", s.bytes_received},
                      {"retransmits", retransmits[p]},
                      {"send_errors", s.send_errors},
                      {"send_calls", s.send_calls},
                      {"receive_calls", s.receive_calls},
                      {"impairment_drops", s.impairment_drops},
                      {"receive_refused", s.receive_refused},
                      {"unresolved_neighbour", s.unresolved_neighbour},
                      {"up", s.up}});
  }
  const EndpointStats e = side.endpoint_stats();
  json decode_errors = json::object();
  for (size_t i = 0; i < e.decode_errors.size(); ++i)
    if (e.decode_errors[i] > 0)
      decode_errors[key_of(wire::to_string(static_cast<wire::DecodeError>(i)))] =
          e.decode_errors[i];
  json security_drops = json::object();  // secure mode's refusals (PROTOCOL.md §1.12)
  for (size_t i = 0; i < e.security_drops.size(); ++i)
    if (e.security_drops[i] > 0)
      security_drops[to_string(static_cast<SecurityDrop>(i))] = e.security_drops[i];
  return {{"backend", side.backend_description()},
          {"mtu_bytes", side.mtu_bytes()},
          {"planes", planes},
          {"qps", qps},
          {"active_ev_states", ev_states},
          {"evs_with_losses", worst},
          {"decode_errors", decode_errors},
          {"unknown_qp", e.unknown_qp},
          {"security_drops", security_drops},
          {"drops", drops}};
}

void print_summary(const json& r) {
  std::printf("\n%s: %llu messages of %llu bytes in %.2f s: %.2f Gbit/s, %.0f msg/s\n",
              r["role"].get<std::string>().c_str(),
              static_cast<unsigned long long>(r["messages"].get<uint64_t>()),
              static_cast<unsigned long long>(r["size"].get<uint64_t>()),
              r["seconds"].get<double>(), r["gbit_per_s"].get<double>(),
              r["messages_per_s"].get<double>());
  std::printf("latency (%s): p50 %.1f us, p99 %.1f us, p99.9 %.1f us\n",
              r["latency_measures"].get<std::string>().c_str(),
              r["latency_us"]["p50"].get<double>(), r["latency_us"]["p99"].get<double>(),
              r["latency_us"]["p999"].get<double>());
  std::printf("datapath: %s; %u payload bytes per packet\n",
              r["summary"]["backend"].get<std::string>().c_str(),
              r["summary"]["mtu_bytes"].get<uint32_t>());
  std::printf(
      "plane  packets_sent  MB_sent  per_send_call  retransmits  impairment_drops  state\n");
  for (const auto& p : r["summary"]["planes"])
    std::printf("%5d  %12llu  %7.1f  %13.1f  %11llu  %16llu  %s\n", p["plane"].get<int>(),
                static_cast<unsigned long long>(p["packets_sent"].get<uint64_t>()),
                static_cast<double>(p["bytes_sent"].get<uint64_t>()) / 1e6,
                static_cast<double>(p["packets_sent"].get<uint64_t>()) /
                    static_cast<double>(std::max<uint64_t>(p["send_calls"].get<uint64_t>(), 1)),
                static_cast<unsigned long long>(p["retransmits"].get<uint64_t>()),
                static_cast<unsigned long long>(p["impairment_drops"].get<uint64_t>()),
                p["up"].get<bool>() ? "up" : "DOWN");
  std::printf("active EVs by state:");
  for (const auto& [state, n] : r["summary"]["active_ev_states"].items())
    std::printf(" %s=%llu", state.c_str(), static_cast<unsigned long long>(n.get<uint64_t>()));
  std::printf("; EVs that saw losses: %zu\n", r["summary"]["evs_with_losses"].size());
  // Datagrams refused: malformed or bad ICRC (decode errors), to no QP of ours, or refused by
  // a QP (duplicate, out of window, bad key, ...): none on a clean run but duplicates.
  uint64_t refused = r["summary"]["unknown_qp"].get<uint64_t>();
  for (const char* group : {"decode_errors", "security_drops", "drops"})
    for (const auto& [name, n] : r["summary"][group].items()) refused += n.get<uint64_t>();
  if (!r["capture"].get<std::string>().empty())
    std::printf("%s\n", r["capture"].get<std::string>().c_str());
  std::printf("datagrams refused: %llu", static_cast<unsigned long long>(refused));
  for (const auto& [name, n] : r["summary"]["decode_errors"].items())
    std::printf(" %s=%llu", name.c_str(), static_cast<unsigned long long>(n.get<uint64_t>()));
  if (r["summary"]["unknown_qp"].get<uint64_t>() > 0)
    std::printf(" unknown_qp=%llu",
                static_cast<unsigned long long>(r["summary"]["unknown_qp"].get<uint64_t>()));
  for (const char* group : {"security_drops", "drops"})
    for (const auto& [name, n] : r["summary"][group].items())
      std::printf(" %s=%llu", name.c_str(), static_cast<unsigned long long>(n.get<uint64_t>()));
  std::printf("\n");
}

}  // namespace

namespace {

json result_json(PerfSide& side, Reporter& rep, const char* role, uint64_t size, double seconds) {
  const auto& lat = side.latencies_us();
  const double bytes = static_cast<double>(side.bytes_sent() + side.bytes_received());
  json intervals = json::array();
  for (const Interval& iv : rep.intervals())
    intervals.push_back({{"t_s", iv.t_s},
                         {"gbit_per_s", iv.gbit_s},
                         {"plane_gbit_per_s", iv.plane_gbit_s},
                         {"plane_up", iv.plane_up}});
  return {
      {"role", role},
      {"size", size},
      {"messages", side.messages_sent() + side.messages_received()},
      {"messages_sent", side.messages_sent()},
      {"messages_received", side.messages_received()},
      {"bytes", side.bytes_sent() + side.bytes_received()},
      {"seconds", seconds},
      {"gbit_per_s", seconds > 0 ? bytes * 8 / seconds / 1e9 : 0.0},
      {"messages_per_s",
       seconds > 0 ? static_cast<double>(side.messages_sent() + side.messages_received()) / seconds
                   : 0.0},
      {"latency_measures", side.pingpong() ? "round trip, last size" : "post to completion"},
      {"latency_us",
       {{"p50", percentile(lat, 0.50)},
        {"p99", percentile(lat, 0.99)},
        {"p999", percentile(lat, 0.999)}}},
      {"bytes_verified", side.bytes_verified()},
      {"mismatches", side.mismatches()},
      {"error_completions", side.send_errors()},
      {"intervals", intervals},
      {"summary", plane_and_ev_summary(side)},
      {"capture", side.capture_note()}};
}

// `check`, called at most once per millisecond (false in between): a wait on the setup
// connection that read its socket in every datapath round spent a system call per round.
template <typename Check>
auto at_most_every_ms(Check check) {
  return [check, next = Clock::now()]() mutable {
    const auto now = Clock::now();
    if (now < next) return false;
    next = now + std::chrono::milliseconds(1);
    return check();
  };
}

// Steps `side` until `done()`, the deadline, or a queue pair failing; false unless done().
template <typename Done>
bool step_until(PerfSide& side, Reporter* rep, Done done, double timeout_s) {
  const auto give_up = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (Clock::now() > give_up || !side.failure().empty()) return false;
    side.step();
    if (rep != nullptr) rep->maybe_report();
  }
  return true;
}

// --metrics-port: listens before the test starts, so a port in use stops the run at once.
bool start_metrics(const PerfOptions& o, std::unique_ptr<MetricsServer>& out) {
  if (o.metrics_port == 0) return true;
  auto m = MetricsServer::start(o.metrics_bind, o.metrics_port);
  if (!m.ok())
    return std::fprintf(stderr, "mrc perf: --metrics-port: %s\n", m.error().message.c_str()), false;
  out = std::move(m.value());
  if (!o.json)
    std::fprintf(stderr, "mrc perf: Prometheus metrics at http://%s:%u/metrics\n",
                 o.metrics_bind.c_str(), out->port());
  return true;
}

// The client's test parameters into `mine`; why they are refused, or "". They come over the
// network: a missing or mistyped field, or a value out of range, is refused, never trusted.
std::string take_client_params(const json& params, PerfOptions& mine) {
  const auto number = [&](const char* key, uint64_t fallback, uint64_t& out) {
    if (!params.contains(key)) return (out = fallback), true;
    if (!params[key].is_number_unsigned()) return false;
    out = params[key].get<uint64_t>();
    return true;
  };
  uint64_t size = 0, depth = 0, buffer = 0, qps = 0;
  if (!params.is_object() || !params.contains("verify") || !params["verify"].is_boolean() ||
      !params.contains("bidir") || !params["bidir"].is_boolean() || !params.contains("pingpong") ||
      !params["pingpong"].is_boolean() || !number("size", 0, size) || !number("depth", 0, depth) ||
      !number("buffer", 0, buffer) || !number("qps", 1, qps))
    return "malformed test parameters (another mrc perf version?)";
  if (depth > kMaxDepth || qps > kMaxQps)  // before narrowing them to 32 bits
    return "--depth must be 1 to " + std::to_string(kMaxDepth) + " and --qps 1 to " +
           std::to_string(kMaxQps);
  mine.size = size;
  mine.depth = static_cast<uint32_t>(depth);
  mine.qps = static_cast<uint32_t>(qps);
  mine.buffer_bytes = buffer;
  mine.verify = params["verify"].get<bool>();
  mine.bidir = params["bidir"].get<bool>();
  mine.pingpong = params["pingpong"].get<bool>();
  return test_params_error(mine);
}

int serve_one(const PerfOptions& o) {
  std::unique_ptr<MetricsServer> metrics;
  if (!start_metrics(o, metrics)) return 2;
  if (!o.json)
    std::fprintf(stderr, "mrc perf server: %zu planes, waiting for a client on TCP port %u\n",
                 o.planes.size(), o.oob_port);
  if (auto config = device_config(o, true); !config.ok())
    return std::fprintf(stderr, "mrc perf: %s\n", config.error().message.c_str()), 2;
  auto accepted = OobChannel::accept_one(o.oob_port);
  if (!accepted.ok())
    return std::fprintf(stderr, "mrc perf: %s\n", accepted.error().message.c_str()), 2;
  OobChannel& oob = accepted.value();
  json peer;
  if (!oob.receive(peer) || !peer.contains("params"))
    return std::fprintf(stderr, "mrc perf: client went away or spoke another protocol\n"), 2;
  if (const std::string why = protocol_error(peer); !why.empty()) {
    oob.send({{"error", why}});
    return std::fprintf(stderr, "mrc perf: refused the client: %s\n", why.c_str()), 2;
  }
  PerfOptions mine = o;  // the client's test parameters win, once checked
  if (const std::string why = take_client_params(peer["params"], mine); !why.empty()) {
    oob.send({{"error", why}});
    return std::fprintf(stderr, "mrc perf: refused the client's test: %s\n", why.c_str()), 2;
  }
  PerfSide s(mine, true);
  s.attach_metrics(metrics.get());
  if (auto opened = s.open(); !opened.ok()) {
    oob.send({{"error", opened.error().message}});
    return std::fprintf(stderr, "mrc perf: %s\n", opened.error().message.c_str()), 2;
  }
  oob.send(s.hello());
  if (auto connected = s.connect(peer); !connected.ok())
    return std::fprintf(stderr, "mrc perf: %s\n", connected.error().message.c_str()), 2;
  Reporter rep(s, mine);
  if (mine.bidir) s.start_sending(mine.size, 0);
  json done;
  step_until(s, &rep, at_most_every_ms([&] { return oob.try_receive(done) || oob.closed(); }), 1e9);
  if (!s.failure().empty() || !done.contains("sent")) {
    std::fprintf(stderr, "mrc perf: FAILED: %s\n",
                 s.failure().empty() ? "the client went away" : s.failure().c_str());
    return 1;
  }
  if (mine.bidir) s.stop_sending();
  const uint64_t expect = done["sent"];
  const bool ok = step_until(
      s, &rep, [&] { return s.messages_received() >= expect && s.sending_done(); }, 60);
  oob.send({{"received", s.messages_received()},
            {"verified", s.bytes_verified()},
            {"mismatches", s.mismatches()},
            {"sent", s.messages_sent()},
            {"ok", ok}});
  json bye;
  step_until(
      s, nullptr, [&] { return oob.try_receive(bye) || oob.closed(); }, 30);
  const json r = result_json(s, rep, "server", mine.size, rep.elapsed_s());
  if (o.json)
    std::cout << r.dump(2) << "\n";
  else
    print_summary(r);
  return ok && s.mismatches() == 0 ? 0 : 1;
}

// Sends at each message size in turn (one size unless --sweep-sizes); one JSON row per size.
json send_sizes(PerfSide& s, Reporter& rep, const PerfOptions& o, std::FILE* samples) {
  json sweep = json::array();
  std::vector<uint64_t> sizes;
  const uint64_t smallest = std::min<uint64_t>(o.pingpong ? 8 : 4096, o.size);
  for (uint64_t sz = o.sweep_sizes ? smallest : o.size; sz <= o.size; sz *= 2) sizes.push_back(sz);
  for (uint64_t size : sizes) {
    // --pingpong without a count or duration: kDefaultExchanges timed exchanges per size.
    const uint64_t timed = o.iterations > 0                  ? o.iterations
                           : o.bytes > 0                     ? std::max<uint64_t>(1, o.bytes / size)
                           : o.pingpong && o.duration_s <= 0 ? kDefaultExchanges
                                                             : 0;
    const uint64_t count = timed > 0 && o.pingpong ? timed + o.warmup : timed;
    const double duration = count == 0 ? (o.duration_s > 0 ? o.duration_s : 5.0) : 1e9;
    const uint64_t before_bytes = s.bytes_sent(), before_msgs = s.messages_sent();
    s.clear_latencies();
    const auto start = Clock::now();
    s.start_sending(size, count);
    step_until(
        s, &rep,
        [&] {
          if (count == 0 && std::chrono::duration<double>(Clock::now() - start).count() >= duration)
            s.stop_sending();
          return s.sending_done();
        },
        1e9);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const auto& lat = s.latencies_us();
    if (samples != nullptr)
      for (double us : lat)
        std::fprintf(samples, "%llu,%.3f\n", static_cast<unsigned long long>(size), us);
    sweep.push_back(
        {{"size", size},
         {"messages", s.messages_sent() - before_msgs},
         {"seconds", secs},
         {"gbit_per_s", static_cast<double>(s.bytes_sent() - before_bytes) * 8 / secs / 1e9},
         {"messages_per_s", static_cast<double>(s.messages_sent() - before_msgs) / secs},
         {"timed", lat.size()},
         {"p50_us", percentile(lat, 0.5)},
         {"p99_us", percentile(lat, 0.99)},
         {"p999_us", percentile(lat, 0.999)},
         {"max_us", lat.empty() ? 0.0 : *std::max_element(lat.begin(), lat.end())},
         {"mean_us", lat.empty() ? 0.0
                                 : std::accumulate(lat.begin(), lat.end(), 0.0) /
                                       static_cast<double>(lat.size())}});
    if (!s.failure().empty()) break;
  }
  return sweep;
}

// The --pingpong table: round trips per message size.
void print_pingpong(const json& sweep, const PerfOptions& o) {
  std::printf(
      "ping-pong: round trips of a WRITE-with-immediate each way, one queue pair, %llu "
      "untimed exchanges first at each size; microseconds\n",
      static_cast<unsigned long long>(o.warmup));
  std::printf("%8s %10s %9s %9s %9s %9s %9s\n", "size", "exchanges", "p50", "p99", "p99.9", "max",
              "mean");
  for (const auto& row : sweep)
    std::printf("%8llu %10llu %9.1f %9.1f %9.1f %9.1f %9.1f\n",
                static_cast<unsigned long long>(row["size"].get<uint64_t>()),
                static_cast<unsigned long long>(row["timed"].get<uint64_t>()),
                row["p50_us"].get<double>(), row["p99_us"].get<double>(),
                row["p999_us"].get<double>(), row["max_us"].get<double>(),
                row["mean_us"].get<double>());
}

// The --sweep-sizes table: one row per message size.
void print_sweep(const json& sweep) {
  std::printf("%10s %10s %10s %12s %10s %10s %10s\n", "size", "messages", "Gbit/s", "msg/s",
              "p50_us", "p99_us", "p99.9_us");
  for (const auto& row : sweep)
    std::printf("%10llu %10llu %10.2f %12.0f %10.1f %10.1f %10.1f\n",
                static_cast<unsigned long long>(row["size"].get<uint64_t>()),
                static_cast<unsigned long long>(row["messages"].get<uint64_t>()),
                row["gbit_per_s"].get<double>(), row["messages_per_s"].get<double>(),
                row["p50_us"].get<double>(), row["p99_us"].get<double>(),
                row["p999_us"].get<double>());
}

using SamplesFile = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// --samples: the CSV file every timed latency goes to, with its header (null without the option);
// false if it cannot be written, said on stderr.
bool open_samples(const PerfOptions& o, SamplesFile& out) {
  if (o.samples_file.empty()) return true;
  out.reset(std::fopen(o.samples_file.c_str(), "w"));
  if (!out) {
    std::fprintf(stderr, "mrc perf: --samples %s: %s\n", o.samples_file.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(out.get(), "size_bytes,%s_us\n", o.pingpong ? "round_trip" : "post_to_completion");
  return true;
}

int run_client(const PerfOptions& o) {
  SamplesFile samples(nullptr, &std::fclose);
  if (!open_samples(o, samples)) return 2;
  std::unique_ptr<MetricsServer> metrics;
  if (!start_metrics(o, metrics)) return 2;
  PerfSide s(o, false);
  s.attach_metrics(metrics.get());
  if (auto opened = s.open(); !opened.ok())
    return std::fprintf(stderr, "mrc perf: %s\n", opened.error().message.c_str()), 2;
  auto reached = OobChannel::connect_to(o.connect, o.oob_port, 5000);
  if (!reached.ok())
    return std::fprintf(stderr, "mrc perf: %s\n", reached.error().message.c_str()), 2;
  OobChannel& oob = reached.value();
  json hello = s.hello();
  hello["params"] = {{"size", o.size},        {"verify", o.verify},       {"bidir", o.bidir},
                     {"depth", o.depth},      {"buffer", o.buffer_bytes}, {"qps", o.qps},
                     {"pingpong", o.pingpong}};
  json peer;
  // A runtime failure (1), not a usage error (2): the server went away during the set-up.
  if (!oob.send(hello) || !oob.receive(peer))
    return std::fprintf(stderr, "mrc perf: the server closed the connection\n"), 1;
  if (peer.contains("error"))
    return std::fprintf(stderr, "mrc perf: server: %s\n", peer["error"].get<std::string>().c_str()),
           2;
  if (const std::string why = protocol_error(peer); !why.empty())
    return std::fprintf(stderr, "mrc perf: %s\n", why.c_str()), 2;
  if (auto connected = s.connect(peer); !connected.ok())
    return std::fprintf(stderr, "mrc perf: %s\n", connected.error().message.c_str()), 2;
  Reporter rep(s, o);
  const json sweep = send_sizes(s, rep, o, samples.get());
  rep.maybe_report(true);
  if (!s.failure().empty()) {
    std::fprintf(stderr, "mrc perf: FAILED: %s\n", s.failure().c_str());
    return 1;
  }
  oob.send({{"sent", s.messages_sent()}});
  json reply;
  step_until(
      s, &rep, [&] { return oob.try_receive(reply) || oob.closed(); }, 120);
  const uint64_t expect = reply.value("sent", uint64_t{0});
  const bool received_all = step_until(
      s, &rep, [&] { return s.messages_received() >= expect; }, 60);
  oob.send({{"bye", true}});
  json r = result_json(s, rep, "client", o.size, rep.elapsed_s());
  r["sweep"] = sweep;
  r["server"] = reply;
  const bool ok = reply.value("ok", false) && received_all && reply.value("mismatches", 1) == 0 &&
                  s.mismatches() == 0 && s.send_errors() == 0;
  const uint64_t verified = reply.value("verified", uint64_t{0}) + s.bytes_verified();
  r["ok"] = ok;
  r["bytes_verified_total"] = verified;
  if (o.json) {
    std::cout << r.dump(2) << "\n";
  } else {
    if (o.pingpong) {
      print_pingpong(sweep, o);
    } else if (o.sweep_sizes) {
      print_sweep(sweep);
    }
    print_summary(r);
    if (o.verify && ok)
      std::printf("every byte verified: %" PRIu64 " bytes written, %" PRIu64
                  " bytes checked equal at the receiver, 0 mismatches\n",
                  uint64_t{s.bytes_sent() + s.bytes_received()}, uint64_t{verified});
    if (!ok)
      std::printf("FAILED: %s\n",
                  !received_all ? "messages missing" : "mismatches or error completions");
  }
  return ok ? 0 : 1;
}

}  // namespace

namespace {

// The test: who, where, how much, how long, and the output.
void add_test_options(CLI::App& app, PerfOptions& o) {
  app.add_flag("--server,-s", o.server, "run as server: wait for a client");
  app.add_option("--client,-c", o.connect,
                 "run as client of the server at this address (its TCP setup port)");
  app.add_option("--oob-port", o.oob_port, "TCP port for connection setup (default 18515)");
  app.add_option("--planes", o.planes,
                 "local plane addresses, one per plane, IPv4[:port] or IPv6 / [IPv6]:port "
                 "(default 127.0.0.1-4)")
      ->delimiter(',');
  app.add_option(
      "--port", o.port,
      "UDP receive port on every plane (default 4791 server, 4807 client; thread t uses port + t)");
  app.add_option("--ev-port-base", o.ev_port_base,
                 "first UDP source port used for EVs (default 50000 server; client: past 16 server "
                 "threads' ranges, 55120 with 4 planes)");
  app.add_option(
         "--size", o.size,
         "message size in bytes, 1 to 1G, K/M/G suffixes (1024-based) allowed (default 1M; with "
         "--pingpong 8, or 64K with --sweep-sizes); with --sweep-sizes the largest")
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--sweep-sizes", o.sweep_sizes,
               "run sizes 4 KiB, 8 KiB, ... (with --pingpong 8 B, 16 B, ...) up to --size");
  app.add_option("--bytes", o.bytes, "bytes to send (per size), K/M/G suffixes allowed")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--duration", o.duration_s,
                 "seconds to send (default 5 if neither --bytes nor --iterations)");
  app.add_option("--iterations", o.iterations, "messages to send (per size)");
  app.add_option("--qps", o.qps, "queue pairs (default 1)")->check(CLI::Range(1u, kMaxQps));
  app.add_option("--depth", o.depth, "messages in flight (default 16; 1 with --pingpong)")
      ->check(CLI::Range(1u, kMaxDepth));
  app.add_flag("--pingpong", o.pingpong,
               "latency: each side writes-with-immediate when it sees the other's, as "
               "ib_write_lat; round trips per size (p50, p99, p99.9, max); 10000 exchanges per "
               "size unless --iterations or --duration");
  app.add_option("--samples", o.samples_file,
                 "write every timed latency to this CSV file (size_bytes, microseconds), for "
                 "distributions (at most 2^20 per size: a uniform sample beyond)");
  app.add_option("--warmup", o.warmup,
                 "--pingpong: exchanges at each size before timing starts (default 100)");
  add_host_flags(app, o.host, {"threads"},
                 "QP q runs on thread q % THREADS, thread t on --port + t and the t-th EV range "
                 "after --ev-port-base; use --qps of THREADS or more");
  app.add_flag("--bidir", o.bidir, "both sides send");
  app.add_flag("--verify", o.verify, "check every byte at the receiver");
  app.add_option("--buffer", o.buffer_bytes,
                 "bytes of source and of target memory the messages cycle through, K/M/G suffixes "
                 "allowed (default: 2 x depth x size, each message in flight its own); smaller, "
                 "messages in flight share memory as perftest's do (at least --size; not with "
                 "--verify)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--interval", o.interval_s, "seconds between live report lines (default 1)");
  app.add_flag("--json", o.json, "print the result as JSON");
}

// Faults to apply, and the transport's and datapath's settings.
void add_fault_and_transport_options(CLI::App& app, PerfOptions& o) {
  app.add_option(
      "--fail-plane", o.fail_plane,
      "take a local plane down at a time, e.g. 2@3s, or down then up: 2@3s+1s (repeatable)");
  app.add_option("--flap-plane", o.flap_plane,
                 "take a local plane down for DOWN_FOR in every EVERY for the whole run, "
                 "PLANE:DOWN_FOR:EVERY (times in s, ms or us): "
                 "1:500ms:3s is plane 1 down at 3 s, 6 s, 9 s, ... (from this side's start) for "
                 "500 ms each (repeatable)");
  app.add_option("--drop", o.drop, "impairment: drop this fraction of sent packets")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--delay-us", o.delay_us, "impairment: delay every sent packet");
  app.add_option("--reorder", o.reorder,
                 "impairment: delay this fraction of packets by up to 200 us")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--cc", o.cc, "congestion control: nscc, aimd or fixed")
      ->check(CLI::IsMember({"nscc", "aimd", "fixed"}));
  app.add_option("--path-policy", o.path_policy,
                 "how each QP chooses among its GOOD EVs: p2c (default: the learned score "
                 "policy), rules (MRC's own), oblivious, reps, health or hedge")
      ->check(CLI::IsMember(path_policy_names()));
  app.add_option("--ev-count", o.ev_count, "EVs per QP (multiple of the plane count, at most 256)");
  app.add_option("--window-kib", o.window_kib, "largest congestion window, KiB (default 2048)");
  app.add_option("--ev-burst", o.ev_burst,
                 "new data packets per EV before the next EV (1..64; default 0: the datapath's, " +
                     std::to_string(io::kUdpDefaultEvBurst) +
                     ", or 7 at payloads above 7 KiB): a burst leaves as one UDP GSO send");
  app.add_option("--mtu", o.mtu,
                 "payload bytes per packet, 256-9000 (default: 8192 where every plane's interface "
                 "carries it with the headers, as a 9000-byte link or loopback does, else 4096 or "
                 "1024; the two sides use the smaller of their choices)")
      ->check(CLI::Range(256, 9000));
  app.add_option("--target-delay-us", o.target_delay_us,
                 "NSCC queueing-delay target in microseconds (0: half the learned base RTT; "
                 "default: the UDP datapath's, 50)");
  app.add_option(
         "--ack-every", o.ack_every,
         "the receiver SACKs every this many data packets (1..64; default 0: the datapath's, " +
             std::to_string(io::kUdpDefaultAckEvery) + ")")
      ->check(CLI::Range(0u, 64u));
  app.add_flag("!--no-gso", o.gso, "send and receive one datagram per buffer (no UDP GSO/GRO)");
  add_host_flags(app, o.host, {"busy-poll-us", "backend", "srv6-paths"}, "both sides alike");
  add_host_flags(app, o.host, {"secure", "key-file"}, "both sides alike");
  add_host_flags(app, o.host, {"pcap", "pcap-max-mib"});
  app.add_option("--metrics-port", o.metrics_port,
                 "serve Prometheus metrics at http://BIND:PORT/metrics (default 0: off)");
  app.add_option("--metrics-bind", o.metrics_bind,
                 "address for --metrics-port (default 127.0.0.1)");
}

}  // namespace

void add_perf_options(CLI::App& app, PerfOptions& o) {
  add_test_options(app, o);
  add_fault_and_transport_options(app, o);
}

int run_perf(const PerfOptions& given) {
  PerfOptions o = given;  // the defaults that depend on the mode
  if (o.size == 0) o.size = o.pingpong ? (o.sweep_sizes ? 64 << 10 : 8) : 1 << 20;
  if (o.depth == 0) o.depth = o.pingpong ? 1 : 16;
  if (o.server == !o.connect.empty()) {
    std::fprintf(stderr, "mrc perf: give exactly one of --server or --client ADDRESS\n");
    return 2;
  }
  if (o.buffer_bytes != 0 && (o.buffer_bytes < o.size || o.verify)) {
    std::fprintf(stderr, "mrc perf: --buffer %s\n",
                 o.verify ? "cannot go with --verify (messages in flight would share memory)"
                          : "must hold at least one message (--size)");
    return 2;
  }
  if (!o.server)
    if (const std::string why = test_params_error(o); !why.empty())
      return std::fprintf(stderr, "mrc perf: %s\n", why.c_str()), 2;
  // The peer's set-up messages are read as JSON of a known shape; one that is not (another
  // program on the port, another version) ends the run with a message, not an abort.
  try {
    return o.server ? serve_one(o) : run_client(o);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "mrc perf: the peer's set-up message is malformed: %s\n", e.what());
    return 2;
  }
}

}  // namespace mrc::tools
