// The engine side of the ns-3 cross-check (see xcheck_engine.h): one mrc::Endpoint per host
// and the workload runner/checker of src/sim/run.cc, reduced to what the cross-check scenarios
// use, with the same seeds and the same order of random draws (workload plan, immediates,
// initial PSNs, endpoint seeds), so both simulators run the same flows.
#include "xcheck_engine.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/endpoint.h"
#include "sim/scenario.h"
#include "sim/workload.h"
#include "util/prng.h"
#include "util/zeroed_buffer.h"

namespace xcheck {
namespace {

using namespace mrc;

struct Op {
  uint32_t flow = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool imm = false;
  uint32_t immediate = 0;
  bool posted = false, settled = false, success = false, delivered = false, ready = false;
  uint32_t waiting_for = 0;
};

struct Flow {
  uint32_t src = 0, dst = 0;
  QueuePair* sender = nullptr;
  QueuePair* receiver = nullptr;
  ZeroedBuffer source, target;
  MemoryRegionInfo source_mr, target_mr;
  std::vector<uint32_t> ops;
  uint32_t next_post = 0, settled = 0, failed = 0, imm_total = 0, imm_received = 0, recv_posted = 0;
  std::vector<uint32_t> imm_order;
  bool order_violation = false, done = false;
};

LinkParams params(const sim::LinkConfig& c, bool ecn) {
  LinkParams p;
  p.rate_gbps = c.rate_gbps;
  p.propagation_ns = c.propagation.ns;
  p.queue_limit = c.queue_limit_bytes;
  p.trim = c.overflow == sim::OverflowPolicy::kTrim;
  p.trim_at = c.trim_threshold_bytes != 0 ? std::min(c.trim_threshold_bytes, c.queue_limit_bytes)
                                          : c.queue_limit_bytes;
  p.ecn_threshold = ecn ? c.ecn_threshold_bytes : 0;
  p.priority_limit = c.priority_queue_limit_bytes;
  return p;
}

class EngineImpl final : public Engine {
 public:
  explicit EngineImpl(sim::Scenario sc) : sc_(std::move(sc)), prng_(sc_.seed ^ 0x5eed5eedULL) {
    for (uint32_t h = 0; h < sc_.fabric.hosts; ++h) {
      EndpointConfig ec;
      ec.planes = 1;
      ec.seed = sc_.seed * 1000003 + h;
      hosts_.push_back(std::make_unique<Endpoint>(ec));
      pds_.push_back(hosts_.back()->memory().alloc_pd());
      scq_.push_back(hosts_.back()->create_cq(4096));
      rcq_.push_back(hosts_.back()->create_cq(4096));
    }
  }
  std::string describe_unsupported() const;
  void fill_info();

  const ScenarioInfo& info() const override { return info_; }
  size_t poll_transmit(uint32_t host, int64_t now, uint8_t* out, size_t cap, TxInfo& tx) override {
    TxMeta meta;
    const size_t n =
        hosts_[host]->poll_transmit(Instant{now}, PlaneId(0), std::span<uint8_t>(out, cap), meta);
    tx.peer = meta.peer;
    tx.ev = meta.ev.value;
    tx.is_data = meta.is_data;
    tx.header_bytes = meta.header_bytes;
    return n;
  }
  void handle_datagram(uint32_t host, int64_t now, const uint8_t* data, size_t n,
                       const RxInfo& rx) override {
    RxMeta meta{PlaneId(0), Ev(rx.ev), rx.ecn_ce, rx.trimmed, rx.peer};
    hosts_[host]->handle_datagram(Instant{now}, std::span<const uint8_t>(data, n), meta);
  }
  void handle_timeout(uint32_t host, int64_t now) override {
    hosts_[host]->handle_timeout(Instant{now});
  }
  int64_t next_deadline(uint32_t host) const override { return hosts_[host]->next_deadline().ns; }
  void start() override;
  bool tick() override;
  void set_on_completion(std::function<void()> f) override {
    on_completion_ = std::move(f);
    for (CompletionQueue* cq : scq_) cq->set_on_nonempty([this] { on_completion_(); });
    for (CompletionQueue* cq : rcq_) cq->set_on_nonempty([this] { on_completion_(); });
  }
  std::string check_and_report(bool completed) override;

 private:
  void top_up(Flow& f);
  void delivered(uint32_t t);
  void update_done(Flow& f);

  sim::Scenario sc_;
  ScenarioInfo info_;
  std::function<void()> on_completion_;
  Prng prng_;
  std::vector<std::unique_ptr<Endpoint>> hosts_;
  std::vector<uint32_t> pds_;
  std::vector<CompletionQueue*> scq_, rcq_;
  sim::WorkloadPlan plan_;
  std::vector<Op> ops_;
  std::vector<std::vector<uint32_t>> waiters_;
  std::vector<std::unique_ptr<Flow>> flows_;
  std::unordered_map<uint64_t, uint32_t> flow_of_receiver_;
  size_t flows_done_ = 0;
  uint64_t ops_posted_ = 0, ops_completed_ = 0, ops_failed_ = 0, bytes_written_ = 0;
};

// Empty if the ns-3 side models the scenario; else what it does not model.
std::string EngineImpl::describe_unsupported() const {
  const sim::FabricConfig& f = sc_.fabric;
  if (f.topology != sim::TopologyKind::kLeafSpine) return "only leaf_spine topologies";
  if (f.planes != 1) return "only one plane";
  if (f.routing == sim::Routing::kSource) return "routing \"source\" (use ecmp or spray)";
  if (sc_.transport.kind != sim::TransportKind::kMrc) return "only transport mrc";
  if (sc_.random_faults) return "random faults";
  for (const sim::LinkConfig* c : {&f.host_link, &f.fabric_link}) {
    if (c->ecn_max_bytes != 0) return "ECN ramps (ecn_max_kib): step marking only";
    if (c->lossless) return "lossless queues";
  }
  for (const sim::ScheduledFault& sf : sc_.faults) {
    const sim::FaultAction& a = sf.action;
    const bool link = a.scope.kind == sim::Scope::Kind::kLink &&
                      (a.scope.classes == sim::bit(sim::LinkClass::kFabricUp) ||
                       a.scope.classes == sim::bit(sim::LinkClass::kFabricDown));
    if (a.kind != sim::FaultAction::Kind::kHealAll &&
        !(a.kind == sim::FaultAction::Kind::kSetUp && link))
      return "fault '" + sf.description + "' (only leaf_spine/spine_leaf down and up)";
  }
  return "";
}

void EngineImpl::fill_info() {
  const sim::FabricConfig& f = sc_.fabric;
  info_.name = sc_.name;
  info_.seed = sc_.seed;
  info_.hosts = f.hosts;
  info_.hosts_per_leaf = f.hosts_per_leaf;
  info_.spines = f.spines;
  info_.spray = f.routing == sim::Routing::kSpray;
  info_.ecmp_salt = f.ecmp_salt;
  info_.host_link = params(f.host_link, f.ecn_last_hop);
  info_.fabric_link = params(f.fabric_link, true);
  info_.time_limit_ns = sc_.time_limit.ns;
  // A full-size packet in the middle of a message: BTH, METH, TSETH, payload, ICRC, framing.
  info_.mtu_wire_bytes =
      static_cast<uint32_t>(sc_.qp.mtu_bytes + wire::kBthBytes + wire::kMethBytes +
                            wire::kTsethBytes + wire::kIcrcBytes + sim::kFramingBytes);
  // As src/sim/run.cc: every fault is healed at heal_at (0: 1 ms after the last fault).
  int64_t last = 0;
  std::vector<LinkFault> touched;
  for (const sim::ScheduledFault& sf : sc_.faults) {
    last = std::max(last, sf.at.ns);
    if (sf.action.kind != sim::FaultAction::Kind::kSetUp) continue;
    LinkFault lf;
    lf.at_ns = sf.at.ns;
    lf.leaf = sf.action.scope.link.value >> 16;
    lf.spine = sf.action.scope.link.value & 0xFFFF;
    lf.leaf_to_spine = sf.action.scope.classes == sim::bit(sim::LinkClass::kFabricUp);
    lf.failed = !sf.action.on;
    info_.faults.push_back(lf);
    touched.push_back(lf);
  }
  if (!sc_.faults.empty()) {
    const int64_t heal = sc_.heal_at.ns > 0 ? sc_.heal_at.ns : last + 1'000'000;
    for (LinkFault lf : touched) {
      lf.at_ns = heal;
      lf.failed = false;
      info_.faults.push_back(lf);
    }
  }
}

void EngineImpl::start() {
  plan_ = sim::plan_workload(sc_.workload, sc_.fabric.hosts, prng_);
  ops_.resize(plan_.transfers.size());
  waiters_.resize(plan_.transfers.size());
  for (const sim::PlannedFlow& pf : plan_.flows) {
    auto flow = std::make_unique<Flow>();
    flow->src = pf.src;
    flow->dst = pf.dst;
    flows_.push_back(std::move(flow));
  }
  for (uint32_t t = 0; t < plan_.transfers.size(); ++t) {
    const sim::Transfer& tr = plan_.transfers[t];
    Op& op = ops_[t];
    op.flow = tr.flow;
    op.length = tr.bytes;
    op.imm = tr.imm;
    op.immediate = static_cast<uint32_t>(prng_.next_u32());
    op.waiting_for = tr.after_count;
    for (const uint32_t before : plan_.after(tr)) waiters_[before].push_back(t);
    op.ready = op.waiting_for == 0;
    flows_[tr.flow]->ops.push_back(t);
  }
  QpConfig qc = sc_.qp;
  qc.ev_port_base = kEvPortBase;  // EVs are UDP source ports, as on a real network
  for (uint32_t i = 0; i < flows_.size(); ++i) {
    Flow& f = *flows_[i];
    Endpoint& ea = *hosts_[f.src];
    Endpoint& eb = *hosts_[f.dst];
    QueuePair* qa = ea.create_qp(qc, pds_[f.src], scq_[f.src], rcq_[f.src]).value();
    QueuePair* qb = eb.create_qp(qc, pds_[f.dst], scq_[f.dst], rcq_[f.dst]).value();
    const Psn psn_a(static_cast<uint32_t>(prng_.next_u32()));
    const Psn psn_b(static_cast<uint32_t>(prng_.next_u32()));
    (void)qa->to_init();
    (void)qb->to_init();
    (void)qa->to_rtr(RtrAttributes{qb->qpn(), psn_b, f.dst});
    (void)qb->to_rtr(RtrAttributes{qa->qpn(), psn_a, f.src});
    (void)qa->to_rts(RtsAttributes{psn_a});
    (void)qb->to_rts(RtsAttributes{psn_b});
    f.sender = qa;
    f.receiver = qb;
    flow_of_receiver_[(static_cast<uint64_t>(f.dst) << 32) | qb->qpn().value] = i;
    uint64_t bytes = 0;
    for (const uint32_t t : f.ops) {
      ops_[t].offset = bytes;
      bytes += ops_[t].length;
      if (ops_[t].imm) {
        ++f.imm_total;
        f.imm_order.push_back(t);
      }
    }
    f.source = ZeroedBuffer(bytes);
    f.target = ZeroedBuffer(bytes);
    const uint64_t key = mix64((static_cast<uint64_t>(i) << 40) ^ sc_.seed);
    const auto word = [key](uint64_t k) { return ((k + 1) * 0x9E3779B97F4A7C15ULL) ^ key; };
    uint8_t* out = f.source.data();
    for (uint64_t k = 0; k < bytes / 8; ++k) {
      const uint64_t w = word(k);
      std::memcpy(out + 8 * k, &w, 8);
    }
    const uint64_t tail = word(bytes / 8);
    std::memcpy(out + bytes / 8 * 8, &tail, bytes % 8);
    const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
    const uint64_t region = std::max<uint64_t>(bytes, 1);
    f.source_mr = ea.memory().register_region(pds_[f.src], f.source.data(), region, access).value();
    f.target_mr = eb.memory().register_region(pds_[f.dst], f.target.data(), region, access).value();
    update_done(f);
  }
  for (auto& f : flows_) top_up(*f);
}

void EngineImpl::top_up(Flow& f) {
  while (f.recv_posted < f.imm_total && f.receiver->post_recv(f.recv_posted).ok()) ++f.recv_posted;
  while (f.next_post < f.ops.size() && f.sender->state() == QpState::kRts) {
    const uint32_t t = f.ops[f.next_post];
    Op& op = ops_[t];
    if (!op.ready) break;
    Sge sge{f.source_mr.address + op.offset, static_cast<uint32_t>(op.length), f.source_mr.lkey};
    SendWr wr;
    wr.wr_id = t;
    wr.opcode = op.imm ? SendOpcode::kWriteWithImm : SendOpcode::kWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = f.target_mr.address + op.offset;
    wr.rkey = f.target_mr.rkey;
    wr.immediate = op.immediate;
    if (!f.sender->post_send(wr).ok()) break;
    op.posted = true;
    ++ops_posted_;
    bytes_written_ += op.length;
    ++f.next_post;
  }
}

void EngineImpl::delivered(uint32_t t) {
  Op& op = ops_[t];
  if (op.delivered) return;
  op.delivered = true;
  for (const uint32_t w : waiters_[t]) {
    if (--ops_[w].waiting_for == 0) ops_[w].ready = true;
  }
}

void EngineImpl::update_done(Flow& f) {
  const bool done = f.settled == f.ops.size() && (f.failed > 0 || f.imm_received >= f.imm_total);
  if (done && !f.done) ++flows_done_;
  f.done = done;
}

bool EngineImpl::tick() {
  std::vector<Completion> batch(512);
  for (uint32_t h = 0; h < hosts_.size(); ++h) {
    for (size_t n; (n = scq_[h]->poll(batch)) > 0;) {
      for (size_t i = 0; i < n; ++i) {
        const uint32_t t = static_cast<uint32_t>(batch[i].wr_id);
        Op& op = ops_[t];
        Flow& f = *flows_[op.flow];
        op.settled = true;
        op.success = batch[i].status == WcStatus::kSuccess;
        ++(op.success ? ops_completed_ : ops_failed_);
        ++f.settled;
        if (!op.success) ++f.failed;
        if (op.success && !op.imm) delivered(t);
        update_done(f);
      }
    }
    for (size_t n; (n = rcq_[h]->poll(batch)) > 0;) {
      for (size_t i = 0; i < n; ++i) {
        const Completion& c = batch[i];
        if (c.status != WcStatus::kSuccess) continue;
        const auto it = flow_of_receiver_.find((static_cast<uint64_t>(h) << 32) | c.qpn.value);
        if (it == flow_of_receiver_.end()) continue;
        Flow& f = *flows_[it->second];
        if (f.imm_received >= f.imm_order.size() ||
            ops_[f.imm_order[f.imm_received]].immediate != c.immediate) {
          f.order_violation = true;
        } else {
          delivered(f.imm_order[f.imm_received]);
        }
        ++f.imm_received;
        update_done(f);
      }
    }
  }
  for (auto& f : flows_) top_up(*f);
  return flows_done_ == flows_.size();
}

std::string EngineImpl::check_and_report(bool completed) {
  uint64_t placed = 0, retransmits = 0, timeouts = 0, trims = 0, ecn = 0, nacks = 0, refused = 0;
  uint64_t to_assumed_bad = 0, replaced = 0, revived = 0;
  for (auto& h : hosts_) {
    refused += h->stats().unknown_qp;
    for (uint64_t e : h->stats().decode_errors) refused += e;
    h->for_each_qp([&](QueuePair& qp) {
      const QpStats s = qp.stats();
      placed += s.data_bytes_placed;
      retransmits += s.retransmits;
      timeouts += s.timeouts;
      trims += s.trims_received;
      ecn += s.ecn_marks_received;
      for (uint64_t n : s.nacks_sent) nacks += n;
      for (uint64_t d : s.drops) refused += d;
      if (const EvSet* evs = qp.evs()) {
        to_assumed_bad += evs->transitions().to_assumed_bad;
        replaced += evs->transitions().replaced;
        revived += evs->transitions().revived;
      }
    });
  }
  std::string why;
  uint64_t verified = 0;
  if (!completed) why = "hang: operations still outstanding at the time limit";
  for (const auto& f : flows_) {
    for (const uint32_t t : f->ops) {
      const Op& op = ops_[t];
      if (!op.settled || !op.success) {
        if (op.settled && why.empty()) why = "an operation failed with an error completion";
        continue;
      }
      if (std::memcmp(f->source.data() + op.offset, f->target.data() + op.offset, op.length) != 0) {
        if (why.empty()) why = "data mismatch at offset " + std::to_string(op.offset);
      } else {
        verified += op.length;
      }
    }
    if (f->order_violation && why.empty()) why = "WRITE-with-immediate completions out of order";
  }
  if (why.empty() && placed != bytes_written_)
    why = "bytes placed != bytes written: not exactly once";
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "\"ok\": %s, \"failure\": \"%s\", \"seed\": %" PRIu64 ", \"bytes_written\": %" PRIu64
      ", \"bytes_verified\": %" PRIu64 ", \"bytes_placed\": %" PRIu64 ", \"ops_posted\": %" PRIu64
      ", \"ops_completed\": %" PRIu64 ", \"ops_failed\": %" PRIu64 ", \"retransmits\": %" PRIu64
      ", \"timeouts\": %" PRIu64 ", \"trims\": %" PRIu64 ", \"ecn_marks\": %" PRIu64
      ", \"nacks\": %" PRIu64 ", \"refused_packets\": %" PRIu64
      ", \"ev_transitions\": {\"to_assumed_bad\": %" PRIu64 ", \"revived\": %" PRIu64
      ", \"replaced\": %" PRIu64 "}",
      why.empty() ? "true" : "false", why.c_str(), sc_.seed, bytes_written_, verified, placed,
      ops_posted_, ops_completed_, ops_failed_, retransmits, timeouts, trims, ecn, nacks, refused,
      to_assumed_bad, revived, replaced);
  return buf;
}

}  // namespace

size_t Engine::max_datagram() {
  return mrc::wire::kMaxDatagramBytes;
}

std::unique_ptr<Engine> Engine::load(const std::string& path, uint64_t seed, std::string& error) {
  sim::Scenario sc;
  if (!sim::load_scenario(path, sc, error)) return nullptr;
  if (seed != 0) sc.seed = seed;
  auto engine = std::make_unique<EngineImpl>(std::move(sc));
  const std::string unsupported = engine->describe_unsupported();
  if (!unsupported.empty()) {
    error = path + ": the ns-3 side does not model " + unsupported;
    return nullptr;
  }
  engine->fill_info();
  return engine;
}

}  // namespace xcheck
