// Scenario runner and checker (see run.h). The run has three phases, as in TigerBeetle's VOPR:
// faults (scheduled and seeded random ones), heal (every fault removed at heal_at), and
// liveness (run until every operation has settled or the time limit says the run hung). The
// checker then compares every target byte with its source and the engines' counters with the
// workload: exactly-once placement is bytes_placed == bytes_written.
#include "sim/run.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>
#include <unordered_map>

#include "sim/baseline.h"
#include "sim/host.h"
#include "sim/oracle_policy.h"
#include "sim/payload_free.h"
#include "sim/payload_layout.h"
#include "sim/workload.h"
#include "util/index_set.h"
#include "util/prng.h"
#include "util/zeroed_buffer.h"

namespace mrc::sim {

namespace {

// What the run reads of a transfer while it runs, in one record of 32 bytes (at fabric scale
// each transfer's first touch is a miss to memory, and a 1024-host ring has two million of
// them, written at setup: their bytes were a large part of its setup time). The plan's
// Transfers are dropped once built; what the run needs of them beyond this record is kept apart
// (Runner::offsets_, delays_, groups_), only where a run has it.
struct alignas(32) Op {
  uint32_t flow = 0;
  uint32_t immediate = 0;
  uint32_t length = 0;            // a message is at most 4 GiB - 1 (scenario.cc)
  uint32_t waiting_for : 26 = 0;  // transfers not yet delivered among those it is planned after
  uint32_t imm : 1 = 0;
  uint32_t posted : 1 = 0;
  uint32_t settled : 1 = 0;
  uint32_t success : 1 = 0;
  uint32_t delivered : 1 = 0;
  Instant ready_at = Instant::never();  // set once waiting_for reaches 0 (plus the delay)
  Instant delivered_at = Instant::never();
};
static_assert(sizeof(Op) == 32);
constexpr uint32_t kMaxWaitingFor = (1u << 26) - 1;

// One direction of one queue-pair connection: writes from `src` into `dst`. Each flow is
// touched twice per step of a ring, cold at fabric scale: posting and completing a transfer (its
// sender's side) and receiving one (its receiver's). What both read is in its first two lines.
struct alignas(64) Flow {
  // Line 0: posting and counting.
  QueuePair* sender = nullptr;
  QueuePair* receiver = nullptr;
  std::vector<uint32_t> ops;  // transfer indices, in posting order
  uint32_t next_post = 0;
  uint32_t recv_posted = 0;
  uint32_t imm_total = 0;
  uint32_t settled = 0;
  uint32_t failed = 0;
  uint32_t imm_received = 0;
  // Line 1: the rest of what a post or a completion reads.
  bool order_violation = false;
  bool done = false;
  uint32_t index = 0;  // in Runner::flows_
  HostId src = 0;
  HostId dst = 0;
  uint64_t source_address = 0;  // the registered source and target (a work request's SGE
  uint64_t target_address = 0;  //   and remote address)
  uint32_t source_lkey = 0;
  uint32_t target_rkey = 0;
  std::vector<uint32_t> imm_order;  // WRITE-with-immediate transfers, in send order
  // Then what the run reads rarely.
  Instant wake_at = Instant::never();   // a wake-up is scheduled then (a transfer's delay ends)
  BaselineConn* base_sender = nullptr;  // baseline transports instead of the engine's QPs
  BaselineConn* base_receiver = nullptr;
  uint64_t bytes = 0;         // of all its transfers
  uint8_t* source = nullptr;  // payload runs: its source and target, in Runner::payload_
  uint8_t* target = nullptr;

  void set_regions(const MemoryRegionInfo& source_mr, const MemoryRegionInfo& target_mr) {
    source_address = source_mr.address;
    source_lkey = source_mr.lkey;
    target_address = target_mr.address;
    target_rkey = target_mr.rkey;
  }
};
static_assert(offsetof(Flow, order_violation) == 64 && offsetof(Flow, wake_at) == 128);

class Runner final : private CompletionNotifier {
 public:
  Runner(const Scenario& scenario, const RunOptions& options)
      : sc_(scenario), options_(options), prng_(scenario.seed ^ 0x5eed5eedULL) {}
  RunReport run();

 private:
  void build();
  void build_hosts();
  void build_flows();
  void build_waiters();
  void connect_flow(uint32_t index);
  uint32_t receiver_id(const Flow& f) const {
    return f.receiver != nullptr ? f.receiver->qpn().value : f.base_receiver->id();
  }
  bool sender_ready(const Flow& f) const {
    return f.sender != nullptr ? f.sender->state() == QpState::kRts : !f.base_sender->failed();
  }
  QueuePair* connect(HostId a, HostId b, QueuePair*& back);
  std::pair<QpConfig, QpConfig> connection_configs();
  void lay_out(Flow& flow);
  void allocate_payload();
  void map_targets() {
    payload_mapper_ = std::jthread([this] { payload_.prefault(targets_from_, payload_.size()); });
  }
  void setup_buffers(Flow& flow);
  void setup_shared(Flow& flow);
  uint64_t at(uint32_t transfer) const {
    return sc_.payload ? offsets_[transfer] : 0;
  }  // in the flow's buffers
  void check_payload(const Flow& flow, RunReport& report, std::string& why) const;
  void check_payload_free(const Flow& flow, RunReport& report, std::string& why) const;
  void post_work(Flow& flow, uint32_t transfer);
  bool top_up(Flow& flow);  // true: stays on the list to top up at the next tick
  void mark_dirty(uint32_t flow);
  void on_send_completion(const Completion& c);
  void on_recv_completion(HostId host, const Completion& c);
  void on_delivered(uint32_t transfer);
  void update_done(Flow& flow);
  // The application's side of the run, at every completion: it drains the completion queues,
  // posts what became ready and kicks the hosts it posted on, at the instant a completion
  // appears (one poll event per instant with new completions), as an application that polls
  // its CQs in a loop would. The 2 us tick polls too (posts that could not go out before).
  void poll_completions();
  void drain_completions();
  void schedule_poll();
  // `cqs`: which of an engine host's queues became non-empty (kSendCq, kRecvCq); baselines
  // name none and are polled whole.
  static constexpr uint8_t kSendCq = 1, kRecvCq = 2;
  // An engine host's CQ became non-empty: tag 2 h for its send queue, 2 h + 1 its receive queue.
  void on_nonempty(uint32_t tag) override {
    note_cq_ready(tag / 2, tag % 2 == 0 ? kSendCq : kRecvCq);
  }
  void note_cq_ready(HostId h, uint8_t cqs = 0) {
    schedule_poll();
    cq_ready_.insert(h);
    if (!cq_ready_bits_.empty()) cq_ready_bits_[h] |= cqs;
  }
  void schedule_faults();
  FaultAction resolve(const ScheduledFault& fault);
  void apply_path_target(const PathTarget& target);
  void apply_spine_denial(const SpineDenial& denial);
  void deny_through(QueuePair* qp, HostId from, HostId to, const SpineDenial& denial);
  void schedule_random_faults(Instant end);
  bool settled() const { return flows_done_ == flows_.size(); }
  // Ends the run (its completion time: now) once every flow has settled.
  bool stop_if_settled() {
    if (!settled()) return false;
    done_at_ = events_.now();
    events_.stop();
    return true;
  }
  void tick();
  uint64_t placed_bytes();
  void finish(RunReport& report);
  void collect(RunReport& report);
  void collect_baseline(RunReport& report);
  void report_groups(RunReport& report) const;
  void report_rates(RunReport& report) const;
  void report_links(RunReport& report) const;

  const Scenario& sc_;
  const RunOptions& options_;
  Prng prng_;
  EventQueue events_;
  std::unique_ptr<Fabric> fabric_;
  const bool baseline_ = sc_.transport.kind != TransportKind::kMrc;
  std::vector<std::unique_ptr<SimHost>> hosts_;            // MRC
  std::vector<std::unique_ptr<BaselineHost>> base_hosts_;  // baselines
  std::vector<SimTransport*> transports_;                  // either, per host
  std::vector<uint32_t> pds_;
  std::vector<CompletionQueue*> send_cqs_;
  std::vector<CompletionQueue*> recv_cqs_;
  // Hosts whose send or receive CQ became non-empty since the last poll: a poll visits
  // those, in host order, not every host.
  IndexSet cq_ready_;
  // Per engine host: which of its CQs signalled since its last drain. A queue that did not is
  // still empty (a push into an empty queue signals, and a drain empties it), so the drain skips
  // it instead of reading its cold line to find nothing.
  std::vector<uint8_t> cq_ready_bits_;
  bool poll_pending_ = false;
  std::vector<Completion> batch_ = std::vector<Completion>(512);  // poll scratch
  IndexSet scratch_hosts_;
  IndexSet scratch_flows_;
  WorkloadPlan plan_;    // its transfers are dropped once built into ops_
  std::vector<Op> ops_;  // one per planned transfer
  // Per transfer, what Op leaves out: its offset in its flow's buffers (runs with payload), its
  // delay (runs where some transfer has one) and its group (for the report).
  std::vector<uint64_t> offsets_;
  std::vector<Duration> delays_;
  std::vector<uint32_t> groups_;
  // Per transfer t, the transfers planned after it: waiter_list_[waiter_begin_[t] ..
  // waiter_begin_[t + 1]), in index order (one flat array, not a vector per transfer).
  std::vector<uint32_t> waiter_begin_;
  std::vector<uint32_t> waiter_list_;
  std::vector<std::unique_ptr<Flow>> flows_;
  // Payload runs: every flow's target and every group's source pattern (allocate_payload).
  ZeroedBuffer payload_;
  size_t targets_from_ = 0;      // where the targets begin in payload_
  std::jthread payload_mapper_;  // maps payload_'s targets; joined before payload_ is freed
  // Payload-free runs: one source and one scratch for every transfer, registered once per host.
  SharedPayload shared_;
  std::vector<MemoryRegionInfo> shared_source_mr_;
  std::vector<MemoryRegionInfo> shared_target_mr_;
  // Flows to top up at the next poll (something changed, or a post is still waiting), so a
  // poll costs the flows with work, not all of them; topped up in index order.
  IndexSet dirty_flows_;
  // (host << 32 | receiver id) -> flow: how a baseline's receive completion finds its flow (the
  // engine's carry the flow in their wr_id, top_up).
  std::unordered_map<uint64_t, uint32_t> flow_of_receiver_;
  // While connecting pairs: per (src << 32 | dst), its flows' indices, the lowest last.
  std::unordered_map<uint64_t, std::vector<uint32_t>> unpaired_;
  size_t flows_done_ = 0;
  RunReport report_;
  Instant done_at_ = Instant::never();
  Instant heal_at_ = Instant::never();
  Instant next_progress_{0};
  Instant next_sample_{0};
  // How often completion queues are polled; also the resolution of completion_time_ns.
  static constexpr Duration kCheckInterval{2'000};
};

void Runner::build() {
  FabricCallbacks callbacks;
  callbacks.deliver = [this](HostId h, PlaneId p, PacketPtr pkt) {
    transports_[h]->on_deliver(p, std::move(pkt));
  };
  callbacks.port_ready = [this](HostId h, PlaneId p) { transports_[h]->on_port_ready(p); };
  callbacks.port_state = [this](HostId h, PlaneId p, bool up) {
    transports_[h]->on_port_state(p, up);
  };
  FabricConfig fabric = sc_.fabric;
  if (sc_.transport.kind == TransportKind::kRocePfc) make_lossless(fabric, sc_.transport.pfc);
  fabric_ = std::make_unique<Fabric>(events_, fabric, sc_.seed, callbacks);
  events_.set_prefetch(fabric_->prefetching());
  build_hosts();
  plan_ = plan_workload(sc_.workload, sc_.fabric.hosts, prng_);
  build_flows();
  // Everything the run needs of each transfer is in its Op now; at fabric scale the plan's
  // own records and dependency list are a hundred megabytes.
  std::vector<Transfer>().swap(plan_.transfers);
  std::vector<uint32_t>().swap(plan_.after_list);
}

// One transport per host: the engine (SimHost) or a baseline (BaselineHost).
void Runner::build_hosts() {
  cq_ready_.reset(sc_.fabric.hosts);
  scratch_hosts_.reset(sc_.fabric.hosts);
  if (baseline_) {
    for (HostId h = 0; h < sc_.fabric.hosts; ++h) {
      base_hosts_.push_back(
          std::make_unique<BaselineHost>(h, events_, *fabric_, sc_.transport, sc_.qp.mtu_bytes));
      base_hosts_.back()->set_icrc_offload(sc_.icrc_offload);
      base_hosts_.back()->set_virtual_payload(!sc_.move_payload);
      base_hosts_.back()->set_on_completion([this, h] { note_cq_ready(h); });
      transports_.push_back(base_hosts_.back().get());
    }
    return;
  }
  cq_ready_bits_.assign(sc_.fabric.hosts, 0);
  for (HostId h = 0; h < sc_.fabric.hosts; ++h) {
    EndpointConfig ec;
    ec.planes = static_cast<int>(sc_.fabric.planes);
    ec.seed = sc_.seed * 1000003 + h;
    ec.icrc_offload = sc_.icrc_offload;
    hosts_.push_back(std::make_unique<SimHost>(h, *fabric_, ec));
    Endpoint& e = hosts_.back()->endpoint();
    pds_.push_back(e.memory().alloc_pd());
    // Completions are drained every kCheckInterval, so a CQ never holds more than the
    // transfers posted in a few microseconds; 4096 entries keep 1024-host runs from zeroing
    // gigabytes of CQ memory.
    send_cqs_.push_back(e.create_cq(4096));
    recv_cqs_.push_back(e.create_cq(4096));
    send_cqs_.back()->set_notifier(this, 2 * h);
    recv_cqs_.back()->set_notifier(this, 2 * h + 1);
    transports_.push_back(hosts_.back().get());
  }
}

// Counting sort of the plan's (before, after) pairs by `before`, each list in index order.
void Runner::build_waiters() {
  const size_t count = plan_.transfers.size();
  waiter_begin_.assign(count + 1, 0);
  for (const Transfer& tr : plan_.transfers) {
    for (const uint32_t before : plan_.after(tr)) ++waiter_begin_[before + 1];
  }
  for (size_t t = 0; t < count; ++t) waiter_begin_[t + 1] += waiter_begin_[t];
  waiter_list_.resize(waiter_begin_[count]);
  std::vector<uint32_t> next(waiter_begin_.begin(), waiter_begin_.end() - 1);
  for (uint32_t t = 0; t < count; ++t) {
    for (const uint32_t before : plan_.after(plan_.transfers[t])) waiter_list_[next[before]++] = t;
  }
}

// Every planned flow gets its own connected queue pair; pairs of flows in opposite directions
// between the same hosts (bidirectional pairs) share one.
void Runner::build_flows() {
  const size_t count = plan_.transfers.size();
  ops_.resize(count);
  if (sc_.payload) offsets_.resize(count);
  groups_.resize(count);
  const auto delayed = [](const Transfer& tr) { return tr.delay.ns != 0; };
  if (std::any_of(plan_.transfers.begin(), plan_.transfers.end(), delayed)) delays_.resize(count);
  build_waiters();
  for (const PlannedFlow& pf : plan_.flows) {
    auto flow = std::make_unique<Flow>();
    flow->index = static_cast<uint32_t>(flows_.size());
    flow->src = pf.src;
    flow->dst = pf.dst;
    flows_.push_back(std::move(flow));
  }
  for (uint32_t t = 0; t < plan_.transfers.size(); ++t) {
    const Transfer& tr = plan_.transfers[t];
    Op& op = ops_[t];
    MRC_ASSERT(tr.bytes <= UINT32_MAX && tr.after_count <= kMaxWaitingFor);
    op.flow = tr.flow;
    op.length = static_cast<uint32_t>(tr.bytes);
    op.imm = tr.imm;
    op.immediate = static_cast<uint32_t>(prng_.next_u32());
    op.waiting_for = tr.after_count & kMaxWaitingFor;  // checked above
    if (!delays_.empty()) delays_[t] = tr.delay;
    groups_[t] = tr.group;
    if (op.waiting_for == 0) op.ready_at = Instant{0} + tr.delay;
    flows_[tr.flow]->ops.push_back(t);
  }
  for (uint32_t i = static_cast<uint32_t>(flows_.size());
       sc_.workload.pattern == Pattern::kPairs && i-- > 0;) {
    unpaired_[(static_cast<uint64_t>(flows_[i]->src) << 32) | flows_[i]->dst].push_back(i);
  }
  for (uint32_t i = 0; i < flows_.size(); ++i) {
    Flow& f = *flows_[i];
    if (f.sender == nullptr && f.base_sender == nullptr) connect_flow(i);
    if (baseline_) flow_of_receiver_[(static_cast<uint64_t>(f.dst) << 32) | receiver_id(f)] = i;
    lay_out(f);
  }
  if (sc_.payload) allocate_payload();
  for (const auto& f : flows_) setup_buffers(*f);
}

void Runner::connect_flow(uint32_t i) {
  Flow& f = *flows_[i];
  QueuePair* back = nullptr;
  BaselinePair pair;
  if (baseline_) {
    pair = connect_baseline(*base_hosts_[f.src], *base_hosts_[f.dst], sc_.qp);
    f.base_sender = pair.a;
    f.base_receiver = pair.b;
  } else {
    f.sender = connect(f.src, f.dst, back);
    f.receiver = back;
  }
  if (sc_.workload.pattern != Pattern::kPairs) return;
  // The reverse flow, if planned: the first later unconnected flow from f.dst to f.src.
  std::vector<uint32_t>& later = unpaired_[(static_cast<uint64_t>(f.dst) << 32) | f.src];
  while (!later.empty()) {
    const uint32_t j = later.back();
    later.pop_back();
    Flow& r = *flows_[j];
    if (j <= i || r.sender != nullptr || r.base_sender != nullptr) continue;
    r.sender = back;
    r.receiver = f.sender;
    r.base_sender = pair.b;
    r.base_receiver = pair.a;
    break;
  }
}

// Secure mode: each connection's two traffic secrets, drawn from the run's generator (so a run
// replays from its seed), `a`'s send secret being `b`'s receive secret. Runs without secure mode
// draw nothing here.
std::pair<QpConfig, QpConfig> Runner::connection_configs() {
  std::pair<QpConfig, QpConfig> configs{sc_.qp, sc_.qp};
  if (sc_.qp.security.mode == SecureMode::kOff) return configs;
  SecurityConfig& a = configs.first.security;
  for (auto* secret : {&a.send_secret, &a.receive_secret})
    for (size_t i = 0; i < secret->size(); i += 8) {
      const uint64_t word = prng_.next_u64();
      std::memcpy(secret->data() + i, &word, 8);
    }
  configs.second.security = a;
  std::swap(configs.second.security.send_secret, configs.second.security.receive_secret);
  return configs;
}

QueuePair* Runner::connect(HostId a, HostId b, QueuePair*& back) {
  Endpoint& ea = hosts_[a]->endpoint();
  Endpoint& eb = hosts_[b]->endpoint();
  const auto [config_a, config_b] = connection_configs();
  QueuePair* qa = ea.create_qp(config_a, pds_[a], send_cqs_[a], recv_cqs_[a]).value();
  QueuePair* qb = eb.create_qp(config_b, pds_[b], send_cqs_[b], recv_cqs_[b]).value();
  const Psn psn_a(static_cast<uint32_t>(prng_.next_u32()));
  const Psn psn_b(static_cast<uint32_t>(prng_.next_u32()));
  // Fresh QPs of a validated configuration: a transition that fails is a bug.
  MRC_ASSERT(qa->to_init().ok() && qb->to_init().ok());
  MRC_ASSERT(qa->to_rtr(RtrAttributes{qb->qpn(), psn_b, b}).ok());
  MRC_ASSERT(qb->to_rtr(RtrAttributes{qa->qpn(), psn_a, a}).ok());
  MRC_ASSERT(qa->to_rts(RtsAttributes{psn_a}).ok() && qb->to_rts(RtsAttributes{psn_b}).ok());
  if (sc_.oracle_paths) {
    qa->evs()->set_policy(std::make_unique<OraclePolicy>(*fabric_, a, b, qa->evs()->size()));
    qb->evs()->set_policy(std::make_unique<OraclePolicy>(*fabric_, b, a, qb->evs()->size()));
  }
  back = qb;
  return qa;
}

// A flow's transfers, back to back in its buffers (payload runs), and its totals.
void Runner::lay_out(Flow& f) {
  uint64_t bytes = 0;
  for (const uint32_t t : f.ops) {
    if (sc_.payload) offsets_[t] = bytes;
    bytes += ops_[t].length;
    if (ops_[t].imm) {
      ++f.imm_total;
      f.imm_order.push_back(t);
    }
  }
  f.bytes = bytes;
}

// Payload runs keep each flow's target apart and read its source from a pattern a group of
// flows shares (payload_layout.h). The block stays on small pages: payload is bulk data, read or
// written once in order (ZeroedBuffer::keep_off_huge_pages), kept out of the heap that
// tools/huge_pages.h collapses. A run that completes writes every target byte, so the targets
// are mapped in one call (MADV_POPULATE_WRITE, no trap per 4 KiB page: faulting them in from
// the loop made runs slower) on a helper thread while the run goes on: mapping a gigabyte of
// fresh pages takes the kernel about as long as the run's setup otherwise, and the loop's
// writes meet the helper's mapping safely (a page either is mapped or faults in). Nothing the
// helper does reaches the run's results. It starts once the run is built (map_targets), after
// the caller's on_built: what that does to the address space (tools/huge_pages.h) would wait
// for the whole mapping otherwise.
void Runner::allocate_payload() {
  uint64_t lengths_gcd = 0;
  for (const Op& op : ops_) lengths_gcd = std::gcd(lengths_gcd, uint64_t{op.length});
  std::vector<uint64_t> flow_bytes;
  for (const auto& f : flows_) flow_bytes.push_back(f->bytes);
  const PayloadLayout l =
      lay_out_payload(flow_bytes, placement_grain(sc_.qp.mtu_bytes, lengths_gcd));
  payload_ = ZeroedBuffer(l.total_bytes);
  payload_.keep_off_huge_pages();
  for (uint64_t g = 0; g < l.pattern_at.size(); ++g)
    fill_pattern(payload_.data() + l.pattern_at[g], l.pattern_bytes[g],
                 mix64((g << 40) ^ sc_.seed));
  targets_from_ = l.targets_from;
  for (uint32_t i = 0; i < flows_.size(); ++i) {
    flows_[i]->source = payload_.data() + l.source_at[i];
    flows_[i]->target = payload_.data() + l.target_at[i];
  }
}

void Runner::setup_buffers(Flow& f) {
  const uint64_t bytes = f.bytes;
  if (!sc_.payload) {
    setup_shared(f);
    update_done(f);
    return;
  }
  const uint64_t region = std::max<uint64_t>(bytes, 1);
  if (baseline_) {
    f.base_receiver->bind_target(f.target, bytes);
    update_done(f);
    return;
  }
  MemoryRegionTable& src_memory = hosts_[f.src]->endpoint().memory();
  MemoryRegionTable& dst_memory = hosts_[f.dst]->endpoint().memory();
  // The source is read only by its own host (and shared with other flows' windows).
  f.set_regions(
      src_memory.register_region(pds_[f.src], f.source, region, kAccessLocalWrite).value(),
      dst_memory
          .register_region(pds_[f.dst], f.target, region, kAccessLocalWrite | kAccessRemoteWrite)
          .value());
  update_done(f);
}

// Payload-free: the run's shared source and scratch (allocated for the longest transfer on
// first use), registered once on each host that sends or receives.
void Runner::setup_shared(Flow& f) {
  if (shared_.size() == 0) {
    uint64_t longest = 1;
    for (const Op& op : ops_) longest = std::max<uint64_t>(longest, op.length);
    shared_ = SharedPayload(longest, sc_.seed);
    shared_source_mr_.assign(sc_.fabric.hosts, MemoryRegionInfo{});
    shared_target_mr_.assign(sc_.fabric.hosts, MemoryRegionInfo{});
  }
  if (baseline_) {
    f.base_receiver->bind_target(shared_.target(), shared_.size());
    return;
  }
  const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
  const auto reg = [&](HostId h, uint8_t* base, MemoryRegionInfo& mr) {
    const RegionKind kind = sc_.move_payload ? RegionKind::kMemory : RegionKind::kVirtual;
    if (mr.length == 0)
      mr = hosts_[h]
               ->endpoint()
               .memory()
               .register_region(pds_[h], base, shared_.size(), access, kind)
               .value();
    return mr;
  };
  f.set_regions(reg(f.src, shared_.source(), shared_source_mr_[f.src]),
                reg(f.dst, shared_.target(), shared_target_mr_[f.dst]));
}

void Runner::post_work(Flow& f, uint32_t transfer) {
  Op& op = ops_[transfer];
  if (baseline_) {
    const uint8_t* source = sc_.payload ? f.source : shared_.source();
    const BaseWr wr{transfer,     source + at(transfer), op.length,
                    at(transfer), op.imm != 0,           op.immediate};
    if (f.base_sender->post(wr)) {
      op.posted = true;
      ++report_.ops_posted;
      report_.bytes_written += op.length;
    }
    return;
  }
  Sge sge{f.source_address + at(transfer), op.length, f.source_lkey};
  SendWr wr;
  wr.wr_id = transfer;
  wr.opcode = op.imm ? SendOpcode::kWriteWithImm : SendOpcode::kWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = f.target_address + at(transfer);
  wr.rkey = f.target_rkey;
  wr.immediate = op.immediate;
  if (f.sender->post_send(wr).ok()) {
    op.posted = true;
    ++report_.ops_posted;
    report_.bytes_written += op.length;
  }
}

// Posts the flow's receives while its receive queue has room, and its next transfers in order
// while each is ready (everything it waits for delivered and its delay passed); a transfer
// whose delay is still running wakes the flow up when it ends. A full receive queue does not
// keep the flow on the list: each receive completion frees a slot and puts it back
// (on_recv_completion), so a ring's flows are not retried at every poll.
bool Runner::top_up(Flow& f) {
  bool again = false;
  while (f.receiver != nullptr && f.recv_posted < f.imm_total) {
    // The flow's index in the receive's wr_id: its completion finds the flow without a lookup.
    if (!f.receiver->post_recv(uint64_t{f.index} << 32 | f.recv_posted).ok()) break;
    ++f.recv_posted;
  }
  while (f.next_post < f.ops.size() && sender_ready(f)) {
    const uint32_t t = f.ops[f.next_post];
    const Op& op = ops_[t];
    if (op.ready_at.is_never()) break;
    if (op.ready_at > events_.now()) {
      // One wake-up per delay: polls until then have nothing to do for this flow.
      if (f.wake_at != op.ready_at) {
        f.wake_at = op.ready_at;
        Flow* flow = &f;
        events_.schedule(op.ready_at, [this, flow] {
          flow->wake_at = Instant::never();
          if (top_up(*flow)) mark_dirty(flow->index);
          transports_[flow->src]->kick();
        });
      }
      return again;
    }
    post_work(f, t);
    if (!op.posted) return true;
    ++f.next_post;
  }
  return again;
}

void Runner::mark_dirty(uint32_t flow) {
  dirty_flows_.insert(flow);
}

void Runner::on_delivered(uint32_t transfer) {
  Op& op = ops_[transfer];
  if (op.delivered) return;
  op.delivered = true;
  op.delivered_at = events_.now();
  for (uint32_t i = waiter_begin_[transfer]; i < waiter_begin_[transfer + 1]; ++i) {
    Op& next = ops_[waiter_list_[i]];
    if (--next.waiting_for == 0) {
      next.ready_at = events_.now() + (delays_.empty() ? Duration{0} : delays_[waiter_list_[i]]);
      mark_dirty(next.flow);
    }
  }
}

void Runner::update_done(Flow& f) {
  const bool done = f.settled == f.ops.size() && (f.failed > 0 || f.imm_received >= f.imm_total);
  if (done && !f.done) ++flows_done_;
  f.done = done;
}

void Runner::on_send_completion(const Completion& c) {
  const uint32_t t = static_cast<uint32_t>(c.wr_id);
  Op& op = ops_[t];
  Flow& f = *flows_[op.flow];
  op.settled = true;
  op.success = c.status == WcStatus::kSuccess;
  ++(op.success ? report_.ops_completed : report_.ops_failed);
  ++f.settled;
  if (!op.success) ++f.failed;
  if (op.success && !op.imm) on_delivered(t);
  update_done(f);
}

void Runner::on_recv_completion(HostId host, const Completion& c) {
  if (c.status != WcStatus::kSuccess) return;            // flushed receives of a failed QP
  uint32_t flow = static_cast<uint32_t>(c.wr_id >> 32);  // the engine's receives (top_up)
  if (baseline_) {
    const auto it = flow_of_receiver_.find((static_cast<uint64_t>(host) << 32) | c.qpn.value);
    if (it == flow_of_receiver_.end()) return;
    flow = it->second;
  }
  Flow& f = *flows_[flow];
  if (f.imm_received >= f.imm_order.size() ||
      ops_[f.imm_order[f.imm_received]].immediate != c.immediate) {
    f.order_violation = true;
  } else {
    on_delivered(f.imm_order[f.imm_received]);
  }
  ++f.imm_received;
  ++report_.wimm_delivered;
  update_done(f);
  if (f.recv_posted < f.imm_total) mark_dirty(flow);  // its receive queue has room again
}

// One poll at the current instant, however many completions appear in it.
void Runner::schedule_poll() {
  if (poll_pending_) return;
  poll_pending_ = true;
  events_.schedule(events_.now(), [this] {
    poll_pending_ = false;
    poll_completions();
    stop_if_settled();
  });
}

// The hosts with new completions, in host order (as a poll of every host would find them: the
// others' queues are empty).
void Runner::drain_completions() {
  IndexSet& ready = scratch_hosts_;
  ready.swap(cq_ready_);
  ready.drain([this](HostId h) {
    if (baseline_) {
      for (size_t n; (n = base_hosts_[h]->poll_send(batch_)) > 0;) {
        for (size_t i = 0; i < n; ++i) on_send_completion(batch_[i]);
      }
      for (size_t n; (n = base_hosts_[h]->poll_recv(batch_)) > 0;) {
        for (size_t i = 0; i < n; ++i) on_recv_completion(h, batch_[i]);
      }
      return;
    }
    const uint8_t cqs = cq_ready_bits_[h];
    cq_ready_bits_[h] = 0;
    for (size_t n; (cqs & kSendCq) != 0 && (n = send_cqs_[h]->poll(batch_)) > 0;) {
      for (size_t i = 0; i < n; ++i) on_send_completion(batch_[i]);
    }
    for (size_t n; (cqs & kRecvCq) != 0 && (n = recv_cqs_[h]->poll(batch_)) > 0;) {
      for (size_t i = 0; i < n; ++i) on_recv_completion(h, batch_[i]);
    }
  });
}

void Runner::poll_completions() {
  drain_completions();
  IndexSet& dirty = scratch_flows_;
  dirty.swap(dirty_flows_);
  IndexSet& posted_on = scratch_hosts_;  // empty: drain_completions drained it
  dirty.drain([&](uint32_t i) {
    Flow& f = *flows_[i];
    const uint32_t sends = f.next_post, receives = f.recv_posted;
    if (top_up(f)) mark_dirty(i);
    if (f.next_post != sends) posted_on.insert(f.src);
    if (f.recv_posted != receives) posted_on.insert(f.dst);
  });
  // Only the hosts it posted on: every other host's engine was told of all that happened to it
  // by its own events, and a port that goes idle with work left kicks its host
  // (SimHost::on_port_ready).
  posted_on.drain([this](HostId h) { transports_[h]->kick(); });
}

uint64_t Runner::placed_bytes() {
  uint64_t placed = 0;
  for (auto& h : base_hosts_) {
    for (const auto& c : h->connections()) placed += c->stats().data_bytes_placed;
  }
  for (auto& h : hosts_)
    h->endpoint().for_each_qp([&](QueuePair& qp) { placed += qp.data_bytes_placed(); });
  return placed;
}

// Completions are polled every kCheckInterval; the series for plots is sampled every
// sample_interval and the progress callback called every progress_interval.
void Runner::tick() {
  poll_completions();
  const Instant now = events_.now();
  if (now >= next_sample_ || (options_.on_progress && now >= next_progress_)) {
    const uint64_t placed = placed_bytes();
    if (now >= next_sample_) {
      next_sample_ = now + options_.sample_interval;
      report_.progress.emplace_back(now.ns, placed);
    }
    if (options_.on_progress && now >= next_progress_) {
      next_progress_ = now + options_.progress_interval;
      report_.sim_time_ns = now.ns;
      report_.bytes_placed = placed;
      options_.on_progress(report_);
    }
  }
  if (stop_if_settled()) return;
  events_.schedule_after(kCheckInterval, [this] { tick(); });
}

// Scenario files name links by role and indices; they become concrete once the fabric exists.
FaultAction Runner::resolve(const ScheduledFault& f) {
  FaultAction a = f.action;
  Scope& s = a.scope;
  if (s.kind == Scope::Kind::kLink && s.classes != kAllLinkClasses) {
    const HostId host = s.node.value;
    const uint32_t leaf = s.link.value >> 16, spine = s.link.value & 0xFFFF;
    LinkId id{0};
    if (s.classes == bit(LinkClass::kHostUp)) id = fabric_->host_uplink(host, s.plane);
    if (s.classes == bit(LinkClass::kHostDown)) id = fabric_->host_downlink(host, s.plane);
    if (s.classes == bit(LinkClass::kFabricUp)) id = fabric_->leaf_to_spine(s.plane, leaf, spine);
    if (s.classes == bit(LinkClass::kFabricDown)) id = fabric_->spine_to_leaf(s.plane, spine, leaf);
    s = Scope::of_link(id);
  }
  if (s.kind == Scope::Kind::kSwitch) {  // (tier << 24 | index) from the scenario file
    s.node = fabric_->topology().tier(s.node.value >> 24).at(s.node.value & 0xFFFFFF);
  }
  return a;
}

// An EV path fault aimed at flows and EV slots (PathTarget), applied when it starts: the EVs
// then in those slots of each flow's sending QP, from its source to its destination. A share
// of EVs is drawn per flow from (seed, flow), so `unblackhole` with the same share finds the
// same slots.
void Runner::apply_path_target(const PathTarget& target) {
  const size_t first = target.every_flow ? 0 : target.flow;
  const size_t end = target.every_flow ? flows_.size() : std::min(first + 1, flows_.size());
  for (size_t i = first; i < end; ++i) {
    const Flow& f = *flows_[i];
    if (f.sender == nullptr || f.sender->evs() == nullptr) continue;  // scenario.cc: MRC only
    const EvSet& evs = *f.sender->evs();
    std::vector<uint16_t> slots(evs.size());
    std::iota(slots.begin(), slots.end(), uint16_t{0});
    size_t count = 1;
    if (target.ev_fraction > 0) {
      const double share = target.ev_fraction * static_cast<double>(evs.size());
      count = std::max<size_t>(1, static_cast<size_t>(std::lround(share)));
      Prng draw(mix64(sc_.seed ^ mix64(0x7061746800000000ULL + i)));  // "path" + flow
      for (size_t k = 0; k < count; ++k)
        std::swap(slots[k], slots[k + draw.below(slots.size() - k)]);
    } else {
      slots[0] = static_cast<uint16_t>(target.ev_slot);  // scenario.cc: < the EV count
    }
    for (size_t k = 0; k < count; ++k) {
      const EvSet::Slot& slot = evs.slot(slots[k]);
      fabric_->set_path_fault(PathFault{slot.plane, slot.ev, f.src, f.dst, target.loss});
    }
  }
}

// A controller's denial (deny_spine): in every flow's two QPs, each EV of the plane whose
// route from the QP's host to its peer crosses the spine. With source routing the EV names its
// path, so this is what a controller that knows the spine is bad can do.
void Runner::apply_spine_denial(const SpineDenial& denial) {
  for (const auto& f : flows_) {
    deny_through(f->sender, f->src, f->dst, denial);
    deny_through(f->receiver, f->dst, f->src, denial);
  }
}

void Runner::deny_through(QueuePair* qp, HostId from, HostId to, const SpineDenial& denial) {
  if (qp == nullptr || qp->evs() == nullptr) return;
  EvSet& evs = *qp->evs();
  const Topology& topology = fabric_->topology();
  const NodeId spine = fabric_->spine_switch(denial.spine);
  for (size_t k = 0; k < evs.size(); ++k) {
    const auto i = static_cast<uint16_t>(k);
    const EvSet::Slot& slot = evs.slot(i);
    if (slot.plane != denial.plane || slot.state == EvState::kDenied) continue;
    for (const uint32_t link : topology.route(denial.plane, from, to, slot.ev, 0)) {
      if (topology.link(link).to != spine) continue;
      evs.set_denied(i, true);
      break;
    }
  }
}

void Runner::schedule_faults() {
  Instant last{0};
  for (const ScheduledFault& f : sc_.faults) {
    if (f.target) {
      events_.schedule(f.at, [this, target = *f.target] { apply_path_target(target); });
    } else if (f.deny) {
      events_.schedule(f.at, [this, denial = *f.deny] { apply_spine_denial(denial); });
    } else {
      fabric_->schedule(f.at, resolve(f));
    }
    last = std::max(last, f.at);
  }
  if (sc_.random_faults) {
    const Instant end = last + Duration::from_ms(2);
    schedule_random_faults(end);
    last = std::max(last, end);
  }
  const Instant heal = sc_.heal_at.ns > 0 ? sc_.heal_at : last + Duration::from_ms(1);
  if (!sc_.faults.empty() || sc_.random_faults) {
    fabric_->schedule(heal, FaultAction::heal_all());
    heal_at_ = heal;
  }
}

// Seeded "swarm" faults: each run draws a different mix of fault kinds and intensities.
void Runner::schedule_random_faults(Instant end) {
  const uint32_t planes = sc_.fabric.planes;
  auto plane = [&] { return PlaneId(static_cast<uint8_t>(prng_.below(planes))); };
  auto at = [&] {
    return Instant{static_cast<int64_t>(prng_.below(static_cast<uint64_t>(end.ns)))};
  };
  const int actions = 1 + static_cast<int>(prng_.below(6));
  for (int i = 0; i < actions; ++i) {
    LinkFaults lf;
    switch (prng_.below(7)) {
      case 0:
        lf.loss = 0.002 + 0.05 * prng_.unit();
        break;
      case 1:
        lf.duplicate = 0.05 * prng_.unit();
        break;
      case 2:
        lf.reorder = 0.2 * prng_.unit();
        break;
      case 3:
        lf.corrupt = 0.02 * prng_.unit();
        break;
      case 4:
        lf.trim = 0.1 * prng_.unit();
        break;
      case 5: {
        const PlaneId p = plane();
        const Instant t = at();
        fabric_->schedule(t, FaultAction::set_up(Scope::of_plane(p), false));
        fabric_->schedule(t + Duration{static_cast<int64_t>(prng_.below(1'000'000))},
                          FaultAction::set_up(Scope::of_plane(p), true));
        continue;
      }
      default: {
        FlapSpec flap;
        flap.down_for = Duration{static_cast<int64_t>(20'000 + prng_.below(200'000))};
        flap.up_for = Duration{static_cast<int64_t>(20'000 + prng_.below(200'000))};
        const LinkId link = fabric_->leaf_to_spine(
            plane(), 0, static_cast<uint32_t>(prng_.below(fabric_->leaf_uplinks())));
        fabric_->schedule(at(), FaultAction::start_flap(Scope::of_link(link), flap));
        continue;
      }
    }
    const Scope scope = prng_.chance(0.5) ? Scope::fabric() : Scope::of_plane(plane());
    fabric_->schedule(at(), FaultAction::set_faults(scope, lf));
  }
}

void add_loss_causes(std::map<std::string, uint64_t>& causes, const QpStats& s) {
  const std::pair<const char*, uint64_t> counts[] = {{"nack", s.losses_nack},
                                                     {"same_ev", s.losses_same_ev},
                                                     {"same_ev_late", s.losses_same_ev_late},
                                                     {"rack", s.losses_rack},
                                                     {"probe", s.losses_probe},
                                                     {"tail", s.losses_tail},
                                                     {"timeout", s.losses_timeout},
                                                     {"port", s.losses_port},
                                                     {"false", s.false_losses},
                                                     {"tail_probes", s.tail_probes},
                                                     {"spurious", s.spurious_retransmits}};
  for (const auto& [name, n] : counts)
    if (n > 0) causes[name] += n;
}

void Runner::collect(RunReport& r) {
  r.planes.assign(sc_.fabric.planes, PlaneReport{});
  r.bytes_placed = 0;
  r.transport = to_string(sc_.transport.kind);
  collect_baseline(r);
  for (auto& h : hosts_) {
    const EndpointStats e = h->endpoint().stats();
    r.hostile_drops += e.unknown_qp;
    for (size_t i = 0; i < e.decode_errors.size(); ++i) {
      r.hostile_drops += e.decode_errors[i];
      if (e.decode_errors[i] > 0)
        r.refused_by_reason[std::string("decode_") +
                            std::string(wire::to_string(static_cast<wire::DecodeError>(i)))] +=
            e.decode_errors[i];
    }
    if (e.unknown_qp > 0) r.refused_by_reason["unknown_qp"] += e.unknown_qp;
    for (size_t i = 0; i < e.security_drops.size(); ++i)  // secure mode: trimmed, bad tag, ...
      if (e.security_drops[i] > 0)
        r.refused_by_reason[std::string("security_") + to_string(static_cast<SecurityDrop>(i))] +=
            e.security_drops[i];
    h->endpoint().for_each_qp([&](QueuePair& qp) {
      const QpStats s = qp.stats();
      r.bytes_placed += s.data_bytes_placed;
      r.retransmits += s.retransmits;
      r.timeouts += s.timeouts;
      r.trims += s.trims_received;
      r.ecn_marks += s.ecn_marks_received;
      for (uint64_t n : s.nacks_sent) r.nacks += n;
      for (size_t i = 0; i < s.drops.size(); ++i) {
        r.hostile_drops += s.drops[i];
        if (s.drops[i] > 0)
          r.refused_by_reason[mrc::to_string(static_cast<mrc::DropReason>(i))] += s.drops[i];
      }
      r.stale_sacks += s.stale_sacks;
      add_loss_causes(r.losses_by_cause, s);
      for (uint32_t p = 0; p < sc_.fabric.planes; ++p) {
        r.planes[p].data_bytes_sent += s.planes[p].bytes_sent;
        r.planes[p].retransmits += s.planes[p].retransmits;
      }
      if (const EvSet* evs = qp.evs()) {
        const EvTransitions& t = evs->transitions();
        r.ev_transitions.to_skip += t.to_skip;
        r.ev_transitions.to_assumed_bad += t.to_assumed_bad;
        r.ev_transitions.revived += t.revived;
        r.ev_transitions.to_denied += t.to_denied;
        r.ev_transitions.replaced += t.replaced;
        r.ev_transitions.regenerated += t.regenerated;
        r.ev_transitions.floor_held += t.floor_held;
      }
    });
  }
  for (uint32_t p = 0; p < sc_.fabric.planes; ++p)
    r.planes[p].fabric_bytes_delivered =
        fabric_->plane_stats(PlaneId(static_cast<uint8_t>(p))).bytes_delivered;
  const LinkStats& links = fabric_->totals().links;
  r.fabric_drops = links.dropped();
  r.fabric_drops_control = links.dropped_control;
  const std::pair<const char*, uint64_t> causes[] = {{"overflow", links.dropped_overflow},
                                                     {"link_fault", links.dropped_fault},
                                                     {"down", links.dropped_down},
                                                     {"path_fault", links.dropped_path},
                                                     {"nic_drop", links.dropped_nic}};
  for (const auto& [name, n] : causes)
    if (n > 0) r.fabric_drops_by_cause[name] = n;
  r.pfc_pauses = links.pfc_pauses;
  r.pfc_paused_ns = links.pfc_paused_ns;
  r.pfc_headroom_overruns = links.pfc_headroom_overruns;
}

void Runner::collect_baseline(RunReport& r) {
  BaselineReport& b = r.baseline;
  for (auto& h : base_hosts_) {
    b.control_dropped += h->control_dropped();
    r.hostile_drops += h->corrupt_dropped();
    if (h->corrupt_dropped() > 0) r.refused_by_reason["bad_icrc"] += h->corrupt_dropped();
    for (const auto& conn : h->connections()) {
      const BaseStats& s = conn->stats();
      r.bytes_placed += s.data_bytes_placed;
      r.retransmits += s.retransmits;
      r.timeouts += s.timeouts;
      r.trims += s.trimmed_discarded;
      r.ecn_marks += s.ecn_marks_received;
      r.nacks += s.naks_sent;
      b.cnps += s.cnps_sent;
      b.rate_cuts += s.rate_cuts;
      b.duplicates += s.duplicates;
      b.out_of_order_dropped += s.out_of_order_dropped;
      b.fast_retransmits += s.fast_retransmits;
      b.reinjected += s.reinjected;
      for (uint32_t p = 0; p < sc_.fabric.planes && p < s.plane_bytes_sent.size(); ++p) {
        r.planes[p].data_bytes_sent += s.plane_bytes_sent[p];
        r.planes[p].retransmits += s.plane_retransmits[p];
      }
    }
  }
}

void Runner::report_groups(RunReport& r) const {
  r.groups.assign(plan_.group_names.size(), GroupReport{});
  for (size_t g = 0; g < r.groups.size(); ++g) r.groups[g].name = plan_.group_names[g];
  std::vector<bool> incomplete(r.groups.size(), false);
  std::vector<int64_t> fct;
  for (uint32_t t = 0; t < ops_.size(); ++t) {
    const Op& op = ops_[t];
    if (op.delivered) {
      fct.push_back(op.delivered_at.ns - op.ready_at.ns);
      r.bytes_delivered += op.length;
    }
    const uint32_t g = groups_[t];
    if (g == kNoGroup) continue;
    GroupReport& gr = r.groups[g];
    gr.bytes += op.length;
    if (!op.ready_at.is_never() && (gr.start_ns < 0 || op.ready_at.ns < gr.start_ns))
      gr.start_ns = op.ready_at.ns;
    if (!op.delivered)
      incomplete[g] = true;
    else
      gr.end_ns = std::max(gr.end_ns, op.delivered_at.ns);
  }
  for (size_t g = 0; g < r.groups.size(); ++g) {
    if (incomplete[g]) r.groups[g].end_ns = -1;
  }
  r.group_bytes = plan_.group_bytes;
  if (fct.empty()) return;
  r.fct_ns = fct;
  // The value a sorted copy would hold at index q * n, found in O(n): no full sort of what
  // is two million values at fabric scale (0.6 % of a 512-host ring's instructions).
  const auto at = [&](double q) {
    const size_t n = fct.size();
    const size_t i = std::min(n - 1, static_cast<size_t>(q * static_cast<double>(n)));
    std::nth_element(fct.begin(), fct.begin() + static_cast<std::ptrdiff_t>(i), fct.end());
    return fct[i];
  };
  r.fct_p50_ns = at(0.5);
  r.fct_p99_ns = at(0.99);
  r.fct_max_ns = *std::max_element(fct.begin(), fct.end());
}

// Goodput and the NIC-bound line rate, per run and per group. A transfer can go no faster than
// its sender's NIC sends or its receiver's NIC receives, so a set of transfers can reach at most
// min(distinct senders, distinct receivers) x planes x the host link rate: the line rate its
// goodput (payload bytes delivered per second of its window) is a fraction of. Distinct hosts
// are counted per flow and group (slot 0: the run; group g: slot g + 1), never per transfer: a
// 1024-host ring has two million transfers but ~1000 flows.
void Runner::report_rates(RunReport& r) const {
  std::vector<uint64_t> senders, receivers;  // slot << 32 | host, sorted and made unique below
  const auto add = [&](uint64_t slot, const Flow& f) {
    senders.push_back(slot << 32 | f.src);
    receivers.push_back(slot << 32 | f.dst);
  };
  for (const auto& f : flows_) {
    add(0, *f);
    uint32_t last = kNoGroup;
    for (const uint32_t t : f->ops) {
      if (groups_[t] == kNoGroup || groups_[t] == last) continue;
      last = groups_[t];
      add(uint64_t{last} + 1, *f);
    }
  }
  std::vector<uint32_t> distinct_senders(r.groups.size() + 1),
      distinct_receivers(r.groups.size() + 1);
  const auto count = [](std::vector<uint64_t>& keys, std::vector<uint32_t>& per_slot) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const uint64_t key : keys) per_slot[key >> 32]++;
  };
  count(senders, distinct_senders);
  count(receivers, distinct_receivers);
  const double nic_gbit_per_s = sc_.fabric.planes * sc_.fabric.host_link.rate_gbps;
  const auto line_rate = [&](size_t slot) {
    return std::min(distinct_senders[slot], distinct_receivers[slot]) * nic_gbit_per_s;
  };
  r.line_rate_gbit_per_s = line_rate(0);
  if (r.completion_time_ns > 0)
    r.goodput_gbit_per_s =
        static_cast<double>(r.bytes_delivered) * 8 / static_cast<double>(r.completion_time_ns);
  int64_t latest_end_ns = -1;  // of the groups before this one
  for (size_t g = 0; g < r.groups.size(); ++g) {
    GroupReport& gr = r.groups[g];
    gr.line_rate_gbit_per_s = line_rate(g + 1);
    if (gr.end_ns > gr.start_ns && gr.start_ns >= 0)
      gr.goodput_gbit_per_s =
          static_cast<double>(gr.bytes) * 8 / static_cast<double>(gr.end_ns - gr.start_ns);
    gr.overlaps_previous = gr.start_ns >= 0 && gr.start_ns < latest_end_ns;
    latest_end_ns = std::max(latest_end_ns, gr.end_ns);
  }
}

void Runner::report_links(RunReport& r) const {
  const double seconds =
      static_cast<double>(done_at_.is_never() ? events_.now().ns : done_at_.ns) / 1e9;
  static const char* const kClasses[] = {"?", "host_up", "host_down", "?",          "fabric_up",
                                         "?", "?",       "?",         "fabric_down"};
  for (uint32_t i = 0; i < fabric_->link_count(); ++i) {
    const LinkId id(i);
    const LinkStats& st = fabric_->link_stats(id);
    LinkReport l;
    l.name = fabric_->link_name(id);
    l.plane = fabric_->link_plane(id).value;
    l.link_class = kClasses[static_cast<uint8_t>(fabric_->link_class(id))];
    l.bytes_sent = st.bytes_sent;
    l.drops = st.dropped();
    l.ecn_marked = st.ecn_marked;
    l.trimmed = st.trimmed;
    const double capacity = fabric_->link_rate_gbps(id) * 1e9 / 8 * seconds;
    l.utilization = capacity > 0 ? static_cast<double>(st.bytes_sent) / capacity : 0;
    r.links.push_back(std::move(l));
  }
  for (const ScheduledFault& f : sc_.faults) r.faults.push_back({f.at.ns, f.description});
  if (!heal_at_.is_never()) r.faults.push_back({heal_at_.ns, "heal all"});
}

void Runner::finish(RunReport& r) {
  collect(r);
  report_groups(r);
  report_links(r);
  r.seed = sc_.seed;
  r.payload = sc_.payload;
  r.icrc_offload = sc_.icrc_offload;
  r.move_payload = sc_.move_payload;
  r.sim_time_ns = events_.now().ns;
  r.events = events_.events_run();
  r.completion_time_ns = done_at_.is_never() ? -1 : done_at_.ns;
  report_rates(r);
  std::string& why = r.failure;
  if (done_at_.is_never()) why = "hang: operations still outstanding at the time limit";
  for (const auto& f : flows_) {
    if (sc_.payload)
      check_payload(*f, r, why);
    else
      check_payload_free(*f, r, why);
  }
  if (!sc_.payload && sc_.move_payload && why.empty()) {
    uint64_t longest = 0;
    for (const Op& op : ops_)
      longest = op.settled && op.success ? std::max<uint64_t>(longest, op.length) : longest;
    why = shared_.check_target(longest);
  }
  if (why.empty() && r.ops_failed == 0 && r.bytes_placed != r.bytes_written)
    why = "bytes placed (" + std::to_string(r.bytes_placed) + ") != bytes written (" +
          std::to_string(r.bytes_written) + "): not exactly once";
  if (why.empty() && sc_.workload.expect_failure && r.ops_failed == 0)
    why = "expected the retry limit to fail operations, but all completed";
  r.ok = why.empty();
}

// Every completed transfer's target bytes equal their source.
void Runner::check_payload(const Flow& f, RunReport& r, std::string& why) const {
  bool flow_failed = false;
  for (const uint32_t t : f.ops) {
    const Op& op = ops_[t];
    const uint64_t offset = offsets_[t];
    if (!op.settled || !op.success) {
      flow_failed |= op.settled;
      continue;
    }
    if (std::memcmp(f.source + offset, f.target + offset, op.length) != 0) {
      if (why.empty()) why = "data mismatch at offset " + std::to_string(offset);
    } else {
      r.bytes_verified += op.length;
    }
  }
  if (f.order_violation && why.empty()) why = "WRITE-with-immediate completions out of order";
  if (flow_failed && !sc_.workload.expect_failure && why.empty())
    why = "an operation failed with an error completion";
}

// Payload-free: a flow whose transfers all completed placed exactly their bytes, once (a flow
// still outstanding is a hang, reported as such).
void Runner::check_payload_free(const Flow& f, RunReport& r, std::string& why) const {
  bool flow_failed = false, outstanding = false;
  for (const uint32_t t : f.ops) {
    flow_failed |= ops_[t].settled && !ops_[t].success;
    outstanding |= !ops_[t].settled;
  }
  if (f.order_violation && why.empty()) why = "WRITE-with-immediate completions out of order";
  if (flow_failed && !sc_.workload.expect_failure && why.empty())
    why = "an operation failed with an error completion";
  if (flow_failed || outstanding) return;
  const uint64_t placed = f.receiver != nullptr ? f.receiver->stats().data_bytes_placed
                                                : f.base_receiver->stats().data_bytes_placed;
  const std::string error = check_placed_once(f.index, placed, f.bytes);
  if (error.empty())
    r.bytes_verified += f.bytes;
  else if (why.empty())
    why = error;
}

RunReport Runner::run() {
  if (std::string e = payload_modes_error(sc_); !e.empty()) {
    RunReport r;
    r.failure = std::move(e);
    return r;
  }
  build();
  dirty_flows_.reset(flows_.size());
  scratch_flows_.reset(flows_.size());
  for (auto& f : flows_) {
    if (top_up(*f)) mark_dirty(f->index);
  }
  schedule_faults();
  for (SimTransport* t : transports_) t->kick();
  events_.schedule_after(kCheckInterval, [this] { tick(); });
  if (options_.on_built) options_.on_built();
  if (sc_.payload) map_targets();
  events_.run_until(sc_.time_limit);
  poll_completions();
  report_.progress.emplace_back(events_.now().ns, placed_bytes());  // the series ends at the end
  finish(report_);
  return report_;
}

}  // namespace

RunReport run_scenario(const Scenario& scenario, const RunOptions& options) {
  Runner runner(scenario, options);
  return runner.run();
}

}  // namespace mrc::sim
