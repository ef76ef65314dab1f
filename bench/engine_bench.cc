// Engine cost per 4 KiB data packet, through the sans-IO call surface (core/endpoint.h):
//   send:    Endpoint::poll_transmit producing 4 KiB data packets (segmentation, EV choice,
//            send-window record, header, payload gather, ICRC), with the SACKs that keep the
//            window open fed back through Endpoint::handle_datagram;
//   receive: Endpoint::handle_datagram of valid 4 KiB packets with consecutive PSNs (decode,
//            ICRC check, window, length/key/bounds checks, placement, SACK coalescing);
//   floor:   a plain 4 KiB memcpy, which any implementation pays, and the 4 KiB ICRC alone.
//   policy:  the send path with SACKs under each path policy (core/path_policy.h); the
//            difference to the rules is what a policy costs per packet (its ship gate: 10 ns).
//   secure:  both paths with SACKs in secure mode (core/packet_protection.h), authenticated
//            only and encrypted: the engine plus AES-128-GCM per packet, SACKs sealed too.
//
// Engine benchmarks time batches of kBatch packets with a steady clock (manual time) so that the
// bookkeeping a real peer would do (encoding the SACKs, recycling the receive window) stays out
// of the measurement. Their "Time" column is per batch; the ns_per_pkt and Gbit_per_s counters
// are per packet and payload throughput. The "_with_sacks" variants also time the SACK traffic
// on the measured side (the requester handling SACKs, the responder encoding them).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/endpoint.h"
#include "core/ev_set.h"
#include "core/packet_protection.h"
#include "core/wire/packet.h"

namespace mrc {
namespace {

constexpr uint32_t kPayload = 4096;
constexpr int kBatch = 64;               // packets per timed section
constexpr int kAckEvery = 4;             // one SACK per 4 packets, as the responder default
constexpr Duration kPacketGap{330};      // 4 KiB at ~100 Gbit/s
constexpr uint64_t kWrBytes = 1u << 20;  // one send work request: 256 packets
constexpr int kWrsOutstanding = 8;

using Clock = std::chrono::steady_clock;

// A page-aligned byte arena (the engine places payloads at page offsets of the region).
class Arena {
 public:
  explicit Arena(size_t bytes) : storage_(bytes + 4096) {
    const auto p = reinterpret_cast<uintptr_t>(storage_.data());
    base_ = storage_.data() + ((4096 - p % 4096) % 4096);
    for (size_t i = 0; i < bytes; ++i) base_[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  uint8_t* data() { return base_; }

 private:
  std::vector<uint8_t> storage_;
  uint8_t* base_;
};

void report(benchmark::State& state, double seconds, uint64_t packets) {
  state.SetItemsProcessed(static_cast<int64_t>(packets));
  state.counters["ns_per_pkt"] = seconds * 1e9 / static_cast<double>(packets);
  state.counters["Gbit_per_s"] = static_cast<double>(packets) * kPayload * 8 / seconds / 1e9;
}

// A path policy, and whether the watchdog wraps it.
struct PolicyChoice {
  PathPolicyKind kind = PathPolicyKind::kRules;
  bool watchdog = false;
};

QpConfig bench_config(PolicyChoice policy = {}, SecureMode secure = SecureMode::kOff) {
  QpConfig c;  // defaults: 4096 MTU, 128 EVs, MPR 32 (4096 PSNs), NSCC
  c.max_send_wr = 64;
  c.path_policy = policy.kind;
  c.path_watchdog.enabled = policy.watchdog;
  c.security.mode = secure;
  c.security.send_secret.fill(0x11);
  c.security.receive_secret.fill(0x22);
  return c;
}

// The other end's packet protection in secure mode (its secrets swapped), which seals what the
// measured side receives; nullptr in plain mode.
std::unique_ptr<PacketProtection> peer_protection(SecureMode secure) {
  if (secure == SecureMode::kOff) return nullptr;
  SecurityConfig peer = bench_config({}, secure).security;
  std::swap(peer.send_secret, peer.receive_secret);
  return std::make_unique<PacketProtection>(peer);
}

// Seals the plain datagram at bytes[kSechBytes, kSechBytes + length) with `peer` (ICRC
// included) and returns the secure datagram's length; or, without `peer`, seals the plain one
// where it lies and returns its offset-free length.
size_t seal_as_peer(PacketProtection* peer, std::span<uint8_t> bytes, size_t length) {
  if (peer == nullptr)
    return wire::seal(bytes.subspan(wire::kSechBytes), length - wire::kIcrcBytes);
  const size_t n = peer->seal(bytes, length);
  return wire::seal(bytes, n - wire::kIcrcBytes);
}

// ---- send path ---------------------------------------------------------------------------

struct Sent {
  Psn psn;
  Ev ev;
  Instant at;
};

class SendRig {
 public:
  explicit SendRig(PolicyChoice policy = {}, SecureMode secure = SecureMode::kOff)
      : source_(kWrBytes),
        out_storage_(wire::kMaxDatagramBytes + 8192),
        peer_(peer_protection(secure)) {
    const uint32_t pd = endpoint_.memory().alloc_pd();
    cq_ = endpoint_.create_cq(256);
    qp_ = endpoint_.create_qp(bench_config(policy, secure), pd, cq_, cq_).value();
    mr_ =
        endpoint_.memory().register_region(pd, source_.data(), kWrBytes, kAccessLocalWrite).value();
    (void)qp_->to_init();
    (void)qp_->to_rtr(RtrAttributes{Qpn(0x100), Psn(0)});
    (void)qp_->to_rts(RtsAttributes{Psn(0)});
    // The header is 36 bytes: put the payload 2 KiB away from the source modulo 4 KiB, so the
    // gather copy does not suffer 4K aliasing (see wire_bench.cc).
    const auto p = reinterpret_cast<uintptr_t>(out_storage_.data());
    const size_t offset = (4096 - p % 4096) % 4096 + 2048 - 36;
    out_ = std::span(out_storage_).subspan(offset, wire::kMaxDatagramBytes);
    for (int i = 0; i < kWrsOutstanding; ++i) post();
  }

  // Sends up to kBatch packets; returns how many.
  int send_batch() {
    int n = 0;
    for (; n < kBatch; ++n) {
      TxMeta meta;
      const size_t length = endpoint_.poll_transmit(now_, PlaneId(0), out_, meta);
      if (length == 0) break;
      if (!meta.is_data) ++not_data_;  // a probe or control packet: the PSN count would be off
      sent_[n] = Sent{next_psn_, meta.ev, now_};
      next_psn_ += 1;
      now_ = now_ + kPacketGap;
    }
    benchmark::DoNotOptimize(out_.data());
    return n;
  }

  // What the responder would answer to the last batch: one SACK per kAckEvery packets.
  void build_sacks(int sent) {
    sacks_.clear();
    for (int i = kAckEvery - 1; i < sent; i += kAckEvery) sacks_.push_back(sack_for(sent_[i]));
    if (sent % kAckEvery != 0) sacks_.push_back(sack_for(sent_[sent - 1]));
  }

  void feed_sacks() {
    RxMeta meta;
    for (const auto& sack : sacks_) endpoint_.handle_datagram(now_, sack, meta);
    sacks_.clear();
  }

  void repost_completed() {
    Completion done[64];
    const size_t n = cq_->poll(done);
    for (size_t i = 0; i < n; ++i) post();
  }

  bool any_sacks() const { return !sacks_.empty(); }
  uint64_t not_data() const { return not_data_; }

 private:
  void post() {
    Sge sge{mr_.address, static_cast<uint32_t>(kWrBytes), mr_.lkey};
    SendWr wr;
    wr.wr_id = next_wr_++;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = 0x7F0000000000ull;
    wr.rkey = 0x101;
    (void)qp_->post_send(wr);
  }

  std::vector<uint8_t> sack_for(const Sent& last) {
    wire::Sack s;
    s.cumulative_psn = last.psn + 1;
    s.ack_psn_offset = -1;
    s.echoed_entropy = last.ev.value;
    s.mpr = 32;
    s.cc.echoed_timestamp = wire::timestamp_of(last.at);
    received_bytes_ += kAckEvery * kPayload;
    s.cc.received_bytes = received_bytes_ & 0xFFFFFF;
    wire::ControlPacket c;
    c.bth.opcode = wire::Opcode::kSack;
    c.bth.dest_qp = qp_->qpn();
    c.bth.psn = s.cumulative_psn;
    c.body = s;
    std::vector<uint8_t> bytes(128);
    const size_t plain = wire::encode(wire::Packet{c}, std::span(bytes).subspan(wire::kSechBytes));
    const size_t n = seal_as_peer(peer_.get(), bytes, plain);
    if (peer_ == nullptr) bytes.erase(bytes.begin(), bytes.begin() + wire::kSechBytes);
    bytes.resize(n);
    return bytes;
  }

  Endpoint endpoint_{EndpointConfig{1, 4, 4, 1}};
  Arena source_;
  std::vector<uint8_t> out_storage_;
  std::span<uint8_t> out_;
  CompletionQueue* cq_ = nullptr;
  QueuePair* qp_ = nullptr;
  MemoryRegionInfo mr_;
  Instant now_{1'000'000};
  Psn next_psn_{0};
  uint64_t next_wr_ = 1;
  uint32_t received_bytes_ = 0;
  uint64_t not_data_ = 0;
  Sent sent_[kBatch];
  std::vector<std::vector<uint8_t>> sacks_;
  std::unique_ptr<PacketProtection> peer_;
};

void send_path(benchmark::State& state, bool time_sacks, PolicyChoice policy = {},
               SecureMode secure = SecureMode::kOff) {
  SendRig rig(policy, secure);
  double seconds = 0;
  uint64_t packets = 0;
  for (auto _ : state) {
    if (!time_sacks) rig.feed_sacks();
    const auto start = Clock::now();
    if (time_sacks) rig.feed_sacks();
    const int n = rig.send_batch();
    const std::chrono::duration<double> elapsed = Clock::now() - start;
    state.SetIterationTime(elapsed.count());
    if (n == 0 && !rig.any_sacks()) {
      state.SkipWithError("the send window closed and no SACK can open it");
      return;
    }
    seconds += elapsed.count();
    packets += static_cast<uint64_t>(n);
    rig.build_sacks(n);
    rig.repost_completed();
  }
  if (rig.not_data() > 0) state.SkipWithError("the requester produced packets other than data");
  report(state, seconds, packets);
}

void BM_EngineSend4K(benchmark::State& state) {
  send_path(state, false);
}
void BM_EngineSend4K_with_sacks(benchmark::State& state) {
  send_path(state, true);
}
BENCHMARK(BM_EngineSend4K)->UseManualTime();
BENCHMARK(BM_EngineSend4K_with_sacks)->UseManualTime();

void BM_PolicySend4K_with_sacks(benchmark::State& state, PathPolicyKind kind, bool watchdog) {
  send_path(state, true, PolicyChoice{kind, watchdog});
}
#define MRC_POLICY_BENCH(name, kind, watchdog)                                        \
  BENCHMARK_CAPTURE(BM_PolicySend4K_with_sacks, name, PathPolicyKind::kind, watchdog) \
      ->UseManualTime()
MRC_POLICY_BENCH(rules, kRules, false);
MRC_POLICY_BENCH(oblivious, kOblivious, false);
MRC_POLICY_BENCH(reps, kReps, false);
MRC_POLICY_BENCH(health, kHealth, false);
MRC_POLICY_BENCH(p2c, kP2c, false);
MRC_POLICY_BENCH(hedge, kHedge, false);
MRC_POLICY_BENCH(p2c_watchdog, kP2c, true);

void BM_SecureSend4K_with_sacks(benchmark::State& state, SecureMode secure) {
  send_path(state, true, {}, secure);
}
BENCHMARK_CAPTURE(BM_SecureSend4K_with_sacks, auth, SecureMode::kAuthenticate)->UseManualTime();
BENCHMARK_CAPTURE(BM_SecureSend4K_with_sacks, encrypt, SecureMode::kEncrypt)->UseManualTime();

// The EV choice alone, per policy: EvSet::next over 4 planes of the default QP's 128 EVs, a
// clean acknowledgement for every 8th choice (the SACK rate of a 16-packet coalescing with
// bursts) and an ECN mark for every 64th. What the ship gate's per-packet bound is about, apart
// from the rest of the send path's noise.
void BM_EvChoice(benchmark::State& state, PathPolicyKind kind) {
  EvSetConfig c;
  c.planes = 4;
  c.active_count = 128;
  c.path_policy = kind;
  EvSet evs(c, 1);
  uint64_t i = 0;
  for (auto _ : state) {
    const uint16_t slot = evs.next(PlaneId(static_cast<uint8_t>(i & 3)));
    benchmark::DoNotOptimize(slot);
    if ((i & 7) == 0) evs.on_clean_ack(slot, Instant{static_cast<int64_t>(i)});
    if ((i & 63) == 0) evs.on_ecn(slot);
    ++i;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK_CAPTURE(BM_EvChoice, rules, PathPolicyKind::kRules);
BENCHMARK_CAPTURE(BM_EvChoice, oblivious, PathPolicyKind::kOblivious);
BENCHMARK_CAPTURE(BM_EvChoice, reps, PathPolicyKind::kReps);
BENCHMARK_CAPTURE(BM_EvChoice, health, PathPolicyKind::kHealth);
BENCHMARK_CAPTURE(BM_EvChoice, p2c, PathPolicyKind::kP2c);
BENCHMARK_CAPTURE(BM_EvChoice, hedge, PathPolicyKind::kHedge);

// ---- receive path ------------------------------------------------------------------------

class ReceiveRig {
 public:
  static constexpr uint32_t kFirstPsn = 1000;
  static constexpr size_t kSlot = size_t{2} * 4096;

  explicit ReceiveRig(SecureMode secure = SecureMode::kOff)
      : target_(static_cast<size_t>(kBatch) * kPayload),
        packets_(static_cast<size_t>(kBatch) * kSlot),
        peer_(peer_protection(secure)) {
    const uint32_t pd = endpoint_.memory().alloc_pd();
    cq_ = endpoint_.create_cq(256);
    qp_ = endpoint_.create_qp(bench_config({}, secure), pd, cq_, cq_).value();
    mr_ = endpoint_.memory()
              .register_region(pd, target_.data(), static_cast<uint64_t>(kBatch) * kPayload,
                               kAccessLocalWrite | kAccessRemoteWrite)
              .value();
    build_packets();
    recycle();
  }

  // One 256 KiB message, FIRST, MIDDLE..., LAST, at consecutive PSNs. Each payload sits 2 KiB
  // away from its destination modulo 4 KiB (no 4K aliasing in the placement copy). In secure
  // mode they are sealed once, counters 0..63: recycle() gives the QP fresh keys and window.
  void build_packets() {
    for (int k = 0; k < kBatch; ++k) {
      wire::DataHeader h;
      h.bth.opcode = k == 0            ? wire::Opcode::kWriteFirst
                     : k == kBatch - 1 ? wire::Opcode::kWriteLast
                                       : wire::Opcode::kWriteMiddle;
      h.bth.dest_qp = qp_->qpn();
      h.bth.psn = Psn(kFirstPsn + static_cast<uint32_t>(k));
      h.bth.timestamp_present = true;
      h.bth.ack_request = k == kBatch - 1;
      h.meth = {0, 1};
      h.tseth.tx_timestamp = static_cast<uint16_t>(k * 5);
      h.reth = {mr_.address + static_cast<uint64_t>(k) * kPayload, mr_.rkey, kBatch * kPayload};
      const size_t header = wire::data_header_bytes(h.bth.opcode, true);
      const size_t before = header + (peer_ ? wire::kSechBytes : 0);
      const std::span<uint8_t> slot(packets_.data() + k * kSlot + 2048 - before, kSlot - 2048);
      const std::span<uint8_t> plain = peer_ ? slot.subspan(wire::kSechBytes) : slot;
      wire::write_data_header(h, plain);
      for (uint32_t i = 0; i < kPayload; ++i) plain[header + i] = static_cast<uint8_t>(i * 7 + k);
      const size_t length = header + kPayload + wire::kIcrcBytes;
      datagrams_[k] = peer_ ? slot.first(seal_as_peer(peer_.get(), slot, length))
                            : slot.first(wire::seal(slot, header + kPayload));
    }
  }

  // A fresh receive window expecting the batch's first PSN again. A secure QP forgets its
  // secrets at its first RTR (a nonce must not repeat under a key), so later ones get the same
  // secrets again as keys after RTR: fresh keys and replay window for the same sealed packets.
  void recycle() {
    placed_before_ = qp_->stats().data_packets_received;  // counters survive a reset
    qp_->to_reset();
    (void)qp_->to_init();
    (void)qp_->to_rtr(RtrAttributes{Qpn(0x100), Psn(kFirstPsn)});
    if (peer_ && qp_->awaiting_keys()) {
      const SecurityConfig keys = bench_config({}, SecureMode::kAuthenticate).security;
      (void)qp_->set_keys(keys.send_secret, keys.receive_secret);
    }
  }

  void receive(int k, bool emit_sacks) {
    RxMeta meta;
    meta.ev = Ev(0x12340000u + static_cast<uint32_t>(k % 16));
    endpoint_.handle_datagram(now_, datagrams_[k], meta);
    now_ = now_ + kPacketGap;
    if (emit_sacks) drain_sacks();
  }

  void drain_sacks() {
    TxMeta meta;
    while (endpoint_.poll_transmit(now_, PlaneId(0), sack_out_, meta) > 0) ++sacks_;
  }

  bool batch_placed() const {
    return qp_->stats().data_packets_received - placed_before_ == kBatch;
  }

 private:
  Endpoint endpoint_{EndpointConfig{1, 4, 4, 2}};
  Arena target_;
  Arena packets_;
  std::span<const uint8_t> datagrams_[kBatch];
  uint8_t sack_out_[256];
  CompletionQueue* cq_ = nullptr;
  QueuePair* qp_ = nullptr;
  MemoryRegionInfo mr_;
  Instant now_{1'000'000};
  uint64_t sacks_ = 0;
  uint64_t placed_before_ = 0;
  std::unique_ptr<PacketProtection> peer_;
};

void receive_path(benchmark::State& state, bool time_sacks, SecureMode secure = SecureMode::kOff) {
  ReceiveRig rig(secure);
  double seconds = 0;
  uint64_t packets = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    for (int k = 0; k < kBatch; ++k) rig.receive(k, time_sacks);
    const std::chrono::duration<double> elapsed = Clock::now() - start;
    state.SetIterationTime(elapsed.count());
    if (!rig.batch_placed()) {
      state.SkipWithError("a packet was not placed");
      return;
    }
    seconds += elapsed.count();
    packets += kBatch;
    rig.drain_sacks();
    rig.recycle();
  }
  report(state, seconds, packets);
}

void BM_EngineReceive4K(benchmark::State& state) {
  receive_path(state, false);
}
void BM_EngineReceive4K_with_sacks(benchmark::State& state) {
  receive_path(state, true);
}
BENCHMARK(BM_EngineReceive4K)->UseManualTime();
BENCHMARK(BM_EngineReceive4K_with_sacks)->UseManualTime();
void BM_SecureReceive4K_with_sacks(benchmark::State& state, SecureMode secure) {
  receive_path(state, true, secure);
}
BENCHMARK_CAPTURE(BM_SecureReceive4K_with_sacks, auth, SecureMode::kAuthenticate)->UseManualTime();
BENCHMARK_CAPTURE(BM_SecureReceive4K_with_sacks, encrypt, SecureMode::kEncrypt)->UseManualTime();

// ---- secure mode's crypto alone ----------------------------------------------------------

// PacketProtection::seal of one data packet with `state.range(0)` payload bytes (the SECH put,
// the tag computed, the payload encrypted in the encrypt mode): the crypto's share of the
// secure send path above, and at 0 bytes what a packet costs whatever it carries.
void BM_Seal(benchmark::State& state, SecureMode secure) {
  const auto payload = static_cast<size_t>(state.range(0));
  PacketProtection protection(bench_config({}, secure).security);
  std::vector<uint8_t> out(wire::kMaxDatagramBytes);
  wire::DataHeader h;
  h.bth.opcode = wire::Opcode::kWriteMiddle;
  h.bth.timestamp_present = true;
  const size_t header = wire::write_data_header(h, std::span(out).subspan(wire::kSechBytes));
  const size_t plain = header + payload + wire::kIcrcBytes;
  for (auto _ : state) {
    std::memmove(out.data() + wire::kSechBytes, out.data(), wire::kBthBytes);  // BTH back
    benchmark::DoNotOptimize(protection.seal(out, plain));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * payload));
}
BENCHMARK_CAPTURE(BM_Seal, auth, SecureMode::kAuthenticate)->Arg(0)->Arg(4096);
BENCHMARK_CAPTURE(BM_Seal, encrypt, SecureMode::kEncrypt)->Arg(0)->Arg(4096);

// ---- floor -------------------------------------------------------------------------------

// Source and destination 2 KiB apart modulo 4 KiB, as in the engine benchmarks above.
void BM_Memcpy4K(benchmark::State& state) {
  Arena source(kPayload);
  Arena dest(size_t{2} * kPayload);
  uint8_t* to = dest.data() + 2048;
  for (auto _ : state) {
    std::memcpy(to, source.data(), kPayload);
    benchmark::DoNotOptimize(to);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPayload));
}
BENCHMARK(BM_Memcpy4K);

void BM_Icrc4K(benchmark::State& state) {
  Arena data(kPayload + 64);
  const std::span<const uint8_t> bytes(data.data(), kPayload + 36);  // header + payload
  for (auto _ : state) {
    uint32_t crc = wire::icrc32(bytes);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPayload));
}
BENCHMARK(BM_Icrc4K);

}  // namespace
}  // namespace mrc

BENCHMARK_MAIN();
