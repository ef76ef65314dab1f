// Cross-check of the simulator against ns-3 (docs/SIMULATION.md, "Cross-check against ns-3").
//
// Runs an `mrc sim` scenario file (leaf-spine, one plane) in ns-3 3.37 with the SAME protocol
// engine (src/core: one mrc::Endpoint per host, driven the way src/sim/host.cc and the UDP
// datapath drive it) inside an ns3::Application, over ns-3's own IPv4/UDP stack, point-to-point
// links and traffic-control queue discs:
//   - every engine datagram is a real UDP payload; the EV is the UDP source port (one bound
//     socket per EV port, QpConfig::ev_port_base), the receiver sees it as the source port;
//   - switches are ns-3 nodes with IPv4 global routing; forwarding is replaced by a subclass of
//     Ipv4GlobalRouting that picks among the equal-cost routes by a 5-tuple hash with a
//     per-switch salt ("ecmp") or uniformly at random per packet ("spray");
//   - every switch output port has MrcTrimQueueDisc: a strict-priority queue (control packets
//     and trimmed headers, by DSCP) and a data queue with step ECN marking and trim-on-overflow
//     (cut to the engine's data headers, DSCP set to "trimmed"), as src/sim/link.cc does;
//   - a host sends only when its NIC is idle (PhyTxEnd), as in the simulator;
//   - leaf-spine link faults ("down"/"up") are silent: a receive error model with rate 1.
// The workload plan (flows, sizes, WRITE vs WRITE-with-immediate, PSNs, immediates) is drawn
// with the same seeds and the same draw order as src/sim/run.cc, and checked the same way:
// every target byte equals its source, bytes placed == bytes written.
//
// Output: one JSON object on stdout with the keys `mrc sim --json` uses for the same things.
//   mrc-ns3 --scenario=scenarios/xcheck-ecmp.toml [--seed=N] [--ring-compensation=true]
// --ring-compensation lowers every switch threshold by one full packet, the packet an ns-3
// device's transmit queue holds outside the queue disc; --match-framing pads every packet to our
// 66 bytes of per-packet framing (the experiments in SIMULATION.md).
// This file is C++17 (ns-3 3.37's headers are not C++20); the engine is behind xcheck_engine.h.
#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/error-model.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/traffic-control-module.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/prng.h"  // mix64 and Prng: header-only, C++17-clean
#include "xcheck_engine.h"

using namespace ns3;

namespace {

// DSCP code points (the IP TOS byte is DSCP << 2 | ECN). ECN: every packet is sent ECT(0).
constexpr uint8_t kDscpData = 10;     // trimmable data class
constexpr uint8_t kDscpControl = 46;  // ACK/SACK/NACK/probes: strict priority
constexpr uint8_t kDscpTrimmed = 26;  // a data packet cut to its headers by a switch
constexpr uint8_t kEct0 = 0x02;
constexpr uint16_t kMrcPort = 4791;
constexpr uint16_t kEvPortBase = 10000;
// Bytes of Ethernet framing (header, FCS, preamble, inter-frame gap) a real link carries on top
// of the IP packet; the simulator counts them in its queues (kFramingBytes = 38 + IP + UDP).
constexpr uint32_t kEthernetFraming = 14 + 4 + 20;

// Simulation metadata (not on the wire): how long a data packet is after trimming, i.e. the
// engine's TxMeta::header_bytes. A real trimming switch cuts to a configured length.
class TrimLengthTag : public Tag {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("MrcTrimLengthTag").SetParent<Tag>().AddConstructor<TrimLengthTag>();
    return tid;
  }
  TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  uint32_t GetSerializedSize() const override { return 4; }
  void Serialize(TagBuffer i) const override { i.WriteU32(length); }
  void Deserialize(TagBuffer i) override { length = i.ReadU32(); }
  void Print(std::ostream& os) const override { os << "trim_to=" << length; }
  uint32_t length = 0;
};

struct SwitchCounters {
  uint64_t trims = 0;
  uint64_t drops_overflow = 0;
  uint64_t drops_priority = 0;
  uint64_t ecn_marks = 0;
};
SwitchCounters g_switch;
uint64_t g_fault_drops = 0;
uint64_t g_ring_bytes = 0;  // --ring-compensation
// --match-framing: bytes of padding after each datagram so that a packet takes as long on an ns-3
// link (IP + UDP + PPP = 30 bytes of overhead) as on ours (66 bytes); receivers strip it.
constexpr uint32_t kFramingPadding = 66 - 30;
uint32_t g_padding = 0;

// A switch output port as src/sim/link.cc models it.
class MrcTrimQueueDisc : public QueueDisc {
 public:
  static TypeId GetTypeId() {
    static TypeId tid =
        TypeId("MrcTrimQueueDisc").SetParent<QueueDisc>().AddConstructor<MrcTrimQueueDisc>();
    return tid;
  }
  MrcTrimQueueDisc() : QueueDisc(QueueDiscSizePolicy::NO_LIMITS) {}
  // `ring_bytes` > 0: subtract the bytes the device's transmit ring holds beyond this queue
  // disc (one packet) from the data thresholds, for the experiment in SIMULATION.md.
  void Configure(const xcheck::LinkParams& c, uint64_t ring_bytes) {
    const auto less = [ring_bytes](uint64_t v) { return v > ring_bytes ? v - ring_bytes : 1; };
    queue_limit_ = less(c.queue_limit);
    trim_ = c.trim;
    trim_at_ = less(c.trim_at);
    ecn_threshold_ = c.ecn_threshold > 0 ? less(c.ecn_threshold) : 0;
    priority_limit_ = c.priority_limit;
  }

 private:
  static uint32_t Wire(const Ptr<QueueDiscItem>& item) {
    return item->GetSize() + kEthernetFraming - g_padding;
  }

  bool AdmitPriority(Ptr<QueueDiscItem> item) {
    const uint32_t wire = Wire(item);
    if (priority_bytes_ + wire > priority_limit_) {
      ++g_switch.drops_priority;
      DropBeforeEnqueue(item, "priority queue full");
      return false;
    }
    priority_bytes_ += wire;
    return GetInternalQueue(0)->Enqueue(item);
  }

  bool DoEnqueue(Ptr<QueueDiscItem> item) override {
    Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
    const uint8_t dscp = ip ? static_cast<uint8_t>(ip->GetHeader().GetTos() >> 2) : kDscpControl;
    if (dscp != kDscpData) return AdmitPriority(item);
    const uint64_t wire = Wire(item);
    const uint64_t after = data_bytes_ + wire;
    if (trim_ && after > trim_at_) {
      TrimLengthTag tag;
      if (ip->GetPacket()->PeekPacketTag(tag)) {
        Ptr<Packet> p = ip->GetPacket()->Copy();
        UdpHeader udp;
        p->RemoveHeader(udp);
        if (tag.length < p->GetSize()) p->RemoveAtEnd(p->GetSize() - tag.length);
        if (g_padding > 0) p->AddPaddingAtEnd(g_padding);
        udp.ForcePayloadSize(static_cast<uint16_t>(p->GetSize() + udp.GetSerializedSize()));
        p->AddHeader(udp);
        Ipv4Header header = ip->GetHeader();
        header.SetPayloadSize(p->GetSize());
        header.SetTos(static_cast<uint8_t>(kDscpTrimmed << 2 | (header.GetTos() & 0x03)));
        ++g_switch.trims;
        return AdmitPriority(
            Create<Ipv4QueueDiscItem>(p, ip->GetAddress(), ip->GetProtocol(), header));
      }
    }
    if (after > queue_limit_) {
      ++g_switch.drops_overflow;
      DropBeforeEnqueue(item, "data queue full");
      return false;
    }
    if (ecn_threshold_ > 0 && data_bytes_ > ecn_threshold_) {
      const bool was_ce = (ip->GetHeader().GetTos() & 0x03) == 0x03;
      if (item->Mark() && !was_ce) ++g_switch.ecn_marks;
    }
    data_bytes_ = after;
    return GetInternalQueue(1)->Enqueue(item);
  }

  Ptr<QueueDiscItem> DoDequeue() override {
    if (Ptr<QueueDiscItem> item = GetInternalQueue(0)->Dequeue()) {
      priority_bytes_ -= Wire(item);
      return item;
    }
    if (Ptr<QueueDiscItem> item = GetInternalQueue(1)->Dequeue()) {
      data_bytes_ -= Wire(item);
      return item;
    }
    return nullptr;
  }

  bool CheckConfig() override {
    for (int i = 0; i < 2; ++i) {
      AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
          "MaxSize", QueueSizeValue(QueueSize("1000000p"))));
    }
    return true;
  }
  void InitializeParams() override {}

  uint64_t queue_limit_ = 256 * 1024;
  uint64_t trim_at_ = 64 * 1024;
  uint64_t ecn_threshold_ = 0;
  uint64_t priority_limit_ = 64 * 1024;
  bool trim_ = true;
  uint64_t data_bytes_ = 0;
  uint64_t priority_bytes_ = 0;
};
NS_OBJECT_ENSURE_REGISTERED(MrcTrimQueueDisc);

// IPv4 global routing whose forwarding picks among equal-cost routes by a 5-tuple hash (the EV
// is the UDP source port, so each EV of a QP keeps one path) or at random per packet.
class MrcEcmpRouting : public Ipv4GlobalRouting {
 public:
  static TypeId GetTypeId() {
    static TypeId tid =
        TypeId("MrcEcmpRouting").SetParent<Ipv4GlobalRouting>().AddConstructor<MrcEcmpRouting>();
    return tid;
  }
  static bool spray;
  static uint64_t salt;

  void SetIpv4(Ptr<Ipv4> ipv4) override {
    Ipv4GlobalRouting::SetIpv4(ipv4);
    ip_ = ipv4;
  }
  void NotifyInterfaceUp(uint32_t i) override {
    cache_.clear();
    Ipv4GlobalRouting::NotifyInterfaceUp(i);
  }
  void NotifyInterfaceDown(uint32_t i) override {
    cache_.clear();
    Ipv4GlobalRouting::NotifyInterfaceDown(i);
  }

  bool RouteInput(Ptr<const Packet> p, const Ipv4Header& h, Ptr<const NetDevice> idev,
                  UnicastForwardCallback ucb, MulticastForwardCallback mcb,
                  LocalDeliverCallback lcb, ErrorCallback ecb) override {
    const uint32_t iif = ip_->GetInterfaceForDevice(idev);
    if (ip_->IsDestinationAddress(h.GetDestination(), iif) || !ip_->IsForwarding(iif) ||
        h.GetDestination().IsMulticast() || h.GetDestination().IsBroadcast()) {
      return Ipv4GlobalRouting::RouteInput(p, h, idev, ucb, mcb, lcb, ecb);
    }
    if (node_salt_ == 0) {
      node_salt_ =
          mrc::mix64(salt ^ (0x9E3779B97F4A7C15ULL * (ip_->GetObject<Node>()->GetId() + 1)));
      rng_ = mrc::Prng(node_salt_);
    }
    const std::vector<Ptr<Ipv4Route>>& c = Candidates(h.GetDestination());
    if (c.empty()) return Ipv4GlobalRouting::RouteInput(p, h, idev, ucb, mcb, lcb, ecb);
    size_t pick = 0;
    if (c.size() > 1) {
      if (spray) {
        pick = static_cast<size_t>(rng_.below(c.size()));
      } else {
        uint64_t x = (static_cast<uint64_t>(h.GetSource().Get()) << 32) ^ h.GetDestination().Get() ^
                     (static_cast<uint64_t>(h.GetProtocol()) << 56);
        if (h.GetProtocol() == UdpL4Protocol::PROT_NUMBER) {
          UdpHeader udp;
          p->PeekHeader(udp);
          x ^= (static_cast<uint64_t>(udp.GetSourcePort()) << 16) ^
               (static_cast<uint64_t>(udp.GetDestinationPort()) << 40);
        }
        pick = static_cast<size_t>(mrc::mix64(x ^ node_salt_) % c.size());
      }
    }
    ucb(c[pick], p, h);
    return true;
  }

 private:
  // The equal-cost routes of the longest matching prefix (host routes first, then networks).
  const std::vector<Ptr<Ipv4Route>>& Candidates(Ipv4Address dest) {
    auto it = cache_.find(dest.Get());
    if (it != cache_.end()) return it->second;
    std::vector<Ptr<Ipv4Route>> out;
    int best = -1;
    for (uint32_t i = 0; i < GetNRoutes(); ++i) {
      Ipv4RoutingTableEntry* e = GetRoute(i);
      const Ipv4Mask mask = e->GetDestNetworkMask();
      if (!mask.IsMatch(dest, e->GetDestNetwork())) continue;
      const int len = mask.GetPrefixLength();
      if (len < best) continue;
      if (len > best) {
        out.clear();
        best = len;
      }
      if (!ip_->IsUp(e->GetInterface())) continue;
      Ptr<Ipv4Route> r = Create<Ipv4Route>();
      r->SetDestination(dest);
      r->SetGateway(e->GetGateway());
      r->SetOutputDevice(ip_->GetNetDevice(e->GetInterface()));
      r->SetSource(ip_->GetAddress(e->GetInterface(), 0).GetLocal());
      out.push_back(r);
    }
    return cache_.emplace(dest.Get(), std::move(out)).first->second;
  }

  Ptr<Ipv4> ip_;
  uint64_t node_salt_ = 0;
  mrc::Prng rng_{1};
  std::unordered_map<uint32_t, std::vector<Ptr<Ipv4Route>>> cache_;
};
bool MrcEcmpRouting::spray = false;
uint64_t MrcEcmpRouting::salt = 0;
NS_OBJECT_ENSURE_REGISTERED(MrcEcmpRouting);

class MrcEcmpRoutingHelper : public Ipv4RoutingHelper {
 public:
  MrcEcmpRoutingHelper* Copy() const override { return new MrcEcmpRoutingHelper(*this); }
  Ptr<Ipv4RoutingProtocol> Create(Ptr<Node> node) const override {
    Ptr<GlobalRouter> router = CreateObject<GlobalRouter>();
    node->AggregateObject(router);
    Ptr<MrcEcmpRouting> routing = CreateObject<MrcEcmpRouting>();
    router->SetRoutingProtocol(routing);
    return routing;
  }
};

// One host: the real engine (through xcheck::Engine) behind UDP sockets, sending only when its
// NIC port is idle, as src/sim/host.cc does.
class MrcHostApp : public Application {
 public:
  MrcHostApp(uint32_t id, xcheck::Engine* engine, Ptr<PointToPointNetDevice> nic,
             const std::vector<Ipv4Address>* ips,
             const std::unordered_map<uint32_t, uint32_t>* host_of_ip)
      : id_(id),
        engine_(engine),
        nic_(nic),
        buffer_(xcheck::Engine::max_datagram()),
        ips_(ips),
        host_of_ip_(host_of_ip) {}

  uint64_t packets_sent = 0;

  // Gives the idle port a chance to send and re-arms the engine's timer (after posting).
  void Kick() {
    Transmit();
    ArmTimer();
  }

 private:
  void StartApplication() override {
    rx_ = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    rx_->SetAttribute("RcvBufSize", UintegerValue(1u << 30));
    rx_->Bind(InetSocketAddress(Ipv4Address::GetAny(), kMrcPort));
    rx_->SetIpRecvTos(true);
    rx_->SetRecvCallback(MakeCallback(&MrcHostApp::OnReceive, this));
    nic_->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&MrcHostApp::OnTxEnd, this));
    Kick();
  }
  void StopApplication() override {}

  Ptr<Socket> SocketFor(uint16_t port) {
    auto it = tx_.find(port);
    if (it != tx_.end()) return it->second;
    Ptr<Socket> s = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    s->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
    tx_.emplace(port, s);
    return s;
  }

  static int64_t Now() { return Simulator::Now().GetNanoSeconds(); }

  void Transmit() {
    if (busy_) return;
    xcheck::TxInfo tx;
    const size_t n = engine_->poll_transmit(id_, Now(), buffer_.data(), buffer_.size(), tx);
    if (n == 0) return;
    Ptr<Packet> p = Create<Packet>(buffer_.data(), static_cast<uint32_t>(n));
    if (g_padding > 0) p->AddPaddingAtEnd(g_padding);
    if (tx.is_data) {
      TrimLengthTag tag;
      tag.length = tx.header_bytes;
      p->AddPacketTag(tag);
    }
    InetSocketAddress to((*ips_)[tx.peer], kMrcPort);
    to.SetTos(static_cast<uint8_t>((tx.is_data ? kDscpData : kDscpControl) << 2 | kEct0));
    busy_ = true;
    ++packets_sent;
    SocketFor(static_cast<uint16_t>(tx.ev))->SendTo(p, 0, to);
  }

  void OnTxEnd(Ptr<const Packet>) {
    busy_ = false;
    Simulator::ScheduleNow(&MrcHostApp::Kick, this);
  }

  void OnReceive(Ptr<Socket> socket) {
    Address from;
    while (Ptr<Packet> p = socket->RecvFrom(from)) {
      const InetSocketAddress src = InetSocketAddress::ConvertFrom(from);
      SocketIpTosTag tos;
      uint8_t t = 0;
      if (p->RemovePacketTag(tos)) t = tos.GetTos();
      const uint32_t size = p->GetSize() - g_padding;
      if (rx_buffer_.size() < size) rx_buffer_.resize(size);
      p->CopyData(rx_buffer_.data(), size);
      xcheck::RxInfo rx;
      rx.ev = src.GetPort();
      rx.ecn_ce = (t & 0x03) == 0x03;
      rx.trimmed = (t >> 2) == kDscpTrimmed;
      auto h = host_of_ip_->find(src.GetIpv4().Get());
      rx.peer = h != host_of_ip_->end() ? h->second : UINT32_MAX;
      engine_->handle_datagram(id_, Now(), rx_buffer_.data(), size, rx);
    }
    Kick();
  }

  void ArmTimer() {
    const int64_t deadline = engine_->next_deadline(id_);
    if (deadline == INT64_MAX || deadline >= timer_at_) return;
    timer_at_ = deadline;
    const uint64_t generation = ++timer_generation_;
    Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, deadline - Now())), &MrcHostApp::OnTimer,
                        this, generation);
  }
  void OnTimer(uint64_t generation) {
    if (generation != timer_generation_) return;
    timer_at_ = INT64_MAX;
    engine_->handle_timeout(id_, Now());
    Kick();
  }

  uint32_t id_;
  xcheck::Engine* engine_;
  Ptr<PointToPointNetDevice> nic_;
  std::vector<uint8_t> buffer_;
  std::vector<uint8_t> rx_buffer_;
  const std::vector<Ipv4Address>* ips_;
  const std::unordered_map<uint32_t, uint32_t>* host_of_ip_;
  Ptr<Socket> rx_;
  std::unordered_map<uint16_t, Ptr<Socket>> tx_;
  bool busy_ = false;
  int64_t timer_at_ = INT64_MAX;
  uint64_t timer_generation_ = 0;
};

void CountFaultDrop(Ptr<const Packet>) {
  ++g_fault_drops;
}

class Network {
 public:
  explicit Network(xcheck::Engine& engine) : engine_(engine), info_(engine.info()) {}
  void Build();
  void ScheduleFaults();
  void StartTicks() {
    engine_.set_on_completion([this] {
      if (poll_pending_) return;
      poll_pending_ = true;
      Simulator::ScheduleNow(&Network::Poll, this);
    });
    Simulator::Schedule(NanoSeconds(2000), &Network::Tick, this);
  }
  int64_t done_at() const { return done_at_; }
  uint64_t packets_sent() const {
    uint64_t n = 0;
    for (const auto& a : apps_) n += a->packets_sent;
    return n;
  }

 private:
  // As src/sim/run.cc: completions are polled at the instant a completion queue becomes
  // non-empty and every 2 us, then every host is given a chance to send (run.cc kicks only
  // the hosts it posted on, and a host whose port goes idle with work left kicks its other
  // idle ports itself; a kick that finds nothing changes nothing).
  bool PollAndKick() {
    const bool done = engine_.tick();
    for (auto& a : apps_) a->Kick();
    if (done && done_at_ < 0) {
      done_at_ = Simulator::Now().GetNanoSeconds();
      Simulator::Stop();
    }
    return done;
  }
  void Poll() {
    poll_pending_ = false;
    PollAndKick();
  }
  void Tick() {
    if (PollAndKick()) return;
    Simulator::Schedule(NanoSeconds(2000), &Network::Tick, this);
  }
  void SetLinkFailed(uint32_t leaf, uint32_t spine, bool leaf_to_spine, bool failed);

  xcheck::Engine& engine_;
  const xcheck::ScenarioInfo& info_;
  NodeContainer hosts_, leaves_, spines_;
  std::vector<Ipv4Address> host_ips_;
  std::unordered_map<uint32_t, uint32_t> host_of_ip_;
  std::vector<Ptr<MrcHostApp>> apps_;
  // leaf-spine cables: [leaf * spines + spine] = (leaf-side device, spine-side device)
  std::vector<std::pair<Ptr<PointToPointNetDevice>, Ptr<PointToPointNetDevice>>> fabric_links_;
  int64_t done_at_ = -1;
  bool poll_pending_ = false;  // a Poll is scheduled at the current instant
};

void SetLinkAttributes(PointToPointHelper& p2p, const xcheck::LinkParams& c) {
  p2p.SetDeviceAttribute("DataRate",
                         DataRateValue(DataRate(static_cast<uint64_t>(c.rate_gbps * 1e9))));
  p2p.SetDeviceAttribute("Mtu", UintegerValue(9000));
  p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(c.propagation_ns)));
  // A port's transmit ring holds one packet; the queue disc holds the rest.
  p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
}

void Network::Build() {
  const uint32_t leaves = (info_.hosts + info_.hosts_per_leaf - 1) / info_.hosts_per_leaf;
  hosts_.Create(info_.hosts);
  leaves_.Create(leaves);
  spines_.Create(info_.spines);
  MrcEcmpRouting::spray = info_.spray;
  MrcEcmpRouting::salt = info_.ecmp_salt;
  Ipv4StaticRoutingHelper static_routing;
  MrcEcmpRoutingHelper ecmp;
  Ipv4ListRoutingHelper list;
  list.Add(static_routing, 0);
  list.Add(ecmp, -10);
  InternetStackHelper stack;
  stack.SetRoutingHelper(list);
  stack.Install(hosts_);
  stack.Install(leaves_);
  stack.Install(spines_);

  TrafficControlHelper tch;
  tch.SetRootQueueDisc("MrcTrimQueueDisc");
  Ipv4AddressHelper address;
  address.SetBase("10.0.0.0", "255.255.255.252");
  PointToPointHelper host_p2p, fabric_p2p;
  SetLinkAttributes(host_p2p, info_.host_link);
  SetLinkAttributes(fabric_p2p, info_.fabric_link);

  host_ips_.resize(info_.hosts);
  std::vector<Ptr<PointToPointNetDevice>> nics(info_.hosts);
  for (uint32_t h = 0; h < info_.hosts; ++h) {
    NetDeviceContainer d = host_p2p.Install(hosts_.Get(h), leaves_.Get(h / info_.hosts_per_leaf));
    QueueDiscContainer q = tch.Install(d.Get(1));  // leaf -> host
    DynamicCast<MrcTrimQueueDisc>(q.Get(0))->Configure(info_.host_link, g_ring_bytes);
    Ipv4InterfaceContainer ifs = address.Assign(d);
    address.NewNetwork();
    TrafficControlHelper none;
    none.Uninstall(d.Get(0));  // the NIC has no queue: it asks the engine when idle
    host_ips_[h] = ifs.GetAddress(0);
    host_of_ip_[host_ips_[h].Get()] = h;
    nics[h] = DynamicCast<PointToPointNetDevice>(d.Get(0));
  }
  fabric_links_.resize(static_cast<size_t>(leaves) * info_.spines);
  for (uint32_t l = 0; l < leaves; ++l) {
    for (uint32_t s = 0; s < info_.spines; ++s) {
      NetDeviceContainer d = fabric_p2p.Install(leaves_.Get(l), spines_.Get(s));
      QueueDiscContainer q = tch.Install(d);
      DynamicCast<MrcTrimQueueDisc>(q.Get(0))->Configure(info_.fabric_link, g_ring_bytes);
      DynamicCast<MrcTrimQueueDisc>(q.Get(1))->Configure(info_.fabric_link, g_ring_bytes);
      address.Assign(d);
      address.NewNetwork();
      fabric_links_[l * info_.spines + s] = {DynamicCast<PointToPointNetDevice>(d.Get(0)),
                                             DynamicCast<PointToPointNetDevice>(d.Get(1))};
    }
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  for (uint32_t h = 0; h < info_.hosts; ++h) {
    Ptr<MrcHostApp> app = CreateObject<MrcHostApp>(h, &engine_, nics[h], &host_ips_, &host_of_ip_);
    hosts_.Get(h)->AddApplication(app);
    app->SetStartTime(Seconds(0));
    apps_.push_back(app);
  }
}

void Network::SetLinkFailed(uint32_t leaf, uint32_t spine, bool leaf_to_spine, bool failed) {
  auto& link = fabric_links_[leaf * info_.spines + spine];
  // leaf -> spine fails at the spine's receiver, spine -> leaf at the leaf's: silently, with no
  // routing reaction (as the simulator's ECMP does not reconverge either).
  Ptr<PointToPointNetDevice> receiver = leaf_to_spine ? link.second : link.first;
  PointerValue pv;
  receiver->GetAttribute("ReceiveErrorModel", pv);
  Ptr<ErrorModel> em = pv.Get<ErrorModel>();
  if (!em) {
    Ptr<RateErrorModel> rem = CreateObject<RateErrorModel>();
    rem->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    rem->SetRate(1.0);
    receiver->SetReceiveErrorModel(rem);
    receiver->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&CountFaultDrop));
    em = rem;
  }
  if (failed)
    em->Enable();
  else
    em->Disable();
}

void Network::ScheduleFaults() {
  for (const xcheck::LinkFault& f : info_.faults) {
    Simulator::Schedule(NanoSeconds(f.at_ns), &Network::SetLinkFailed, this, f.leaf, f.spine,
                        f.leaf_to_spine, f.failed);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path;
  uint64_t seed = 0;
  CommandLine cmd(__FILE__);
  cmd.AddValue("scenario", "mrc sim scenario file (TOML)", scenario_path);
  cmd.AddValue("seed", "override the scenario's seed (0: keep)", seed);
  bool ring = false;
  bool match_framing = false;
  cmd.AddValue("match-framing",
               "pad every packet so that it takes as long on a link as in our simulator (66 bytes "
               "of framing)",
               match_framing);
  cmd.AddValue(
      "ring-compensation",
      "lower the switch queue thresholds by one MTU packet, the one a port's transmit ring holds",
      ring);
  cmd.Parse(argc, argv);
  if (scenario_path.empty()) {
    std::fprintf(stderr, "usage: mrc-ns3 --scenario=FILE.toml [--seed=N]\n");
    return 2;
  }
  std::string error;
  g_ring_bytes = 0;
  if (match_framing) g_padding = kFramingPadding;
  std::unique_ptr<xcheck::Engine> engine = xcheck::Engine::load(scenario_path, seed, error);
  if (!engine) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  if (ring) g_ring_bytes = engine->info().mtu_wire_bytes;
  Network net(*engine);
  net.Build();
  engine->start();
  net.ScheduleFaults();
  net.StartTicks();
  Simulator::Stop(NanoSeconds(engine->info().time_limit_ns));
  const auto wall0 = std::chrono::steady_clock::now();
  Simulator::Run();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const uint64_t events = Simulator::GetEventCount();
  const int64_t sim_time = Simulator::Now().GetNanoSeconds();
  const bool completed = net.done_at() >= 0;
  const std::string engine_part = engine->check_and_report(completed);
  std::printf("{\"simulator\": \"ns-3.37\", \"name\": \"%s\", %s, \"sim_time_ns\": %" PRId64
              ", \"completion_time_ns\": %" PRId64 ", \"events\": %" PRIu64
              ", \"wall_s\": %.3f, \"events_per_wall_s\": %.0f, \"fabric_drops\": %" PRIu64
              ", \"switch_trims\": %" PRIu64 ", \"switch_ecn_marks\": %" PRIu64
              ", \"overflow_drops\": %" PRIu64 ", \"fault_drops\": %" PRIu64
              ", \"packets_sent\": %" PRIu64 "}\n",
              engine->info().name.c_str(), engine_part.c_str(), sim_time, net.done_at(), events,
              wall, wall > 0 ? static_cast<double>(events) / wall : 0.0,
              g_switch.drops_overflow + g_switch.drops_priority + g_fault_drops, g_switch.trims,
              g_switch.ecn_marks, g_switch.drops_overflow + g_switch.drops_priority, g_fault_drops,
              net.packets_sent());
  Simulator::Destroy();
  return engine_part.find("\"ok\": true") == 0 ? 0 : 1;
}
