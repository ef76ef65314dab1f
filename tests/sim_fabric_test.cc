// Tests of the simulator's network half: the event queue, and the fabric's timing, queues (ECN,
// trimming, drop-tail), routing over spines, every fault kind, determinism from the seed, and
// heal_all() for the liveness phase.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/event_queue.h"
#include "sim/fabric.h"
#include "sim/packet.h"
#include "util/prng.h"

namespace mrc::sim {
namespace {

constexpr uint32_t kTrimTo = 64;
constexpr uint32_t kPayload100ns = 1250 - kFramingBytes;  // 100 ns per hop at 100 Gbit/s

// A small deterministic payload per packet id, so a test can tell which bits changed.
std::vector<uint8_t> pattern(uint64_t id, size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(mix64(id * 0x10001 + i));
  return bytes;
}

uint64_t digest(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ULL;
  return h;
}

struct Delivery {
  int64_t at_ns;
  HostId host;
  uint32_t plane;
  uint64_t id;
  uint32_t ev;
  uint32_t size;
  bool trimmed;
  bool trimmed_last_hop;
  bool ce;
  uint64_t digest;
  bool operator==(const Delivery&) const = default;
};

struct PortEvent {
  int64_t at_ns;
  HostId host;
  uint32_t plane;
  bool up;
  bool operator==(const PortEvent&) const = default;
};

FabricConfig make_config(uint32_t hosts, uint32_t planes, uint32_t spines,
                         uint32_t hosts_per_leaf = 1) {
  FabricConfig config;
  config.hosts = hosts;
  config.planes = planes;
  config.spines = spines;
  config.hosts_per_leaf = hosts_per_leaf;
  return config;
}

// A fabric with trivial hosts: each (host, plane) port has a backlog it transmits as fast as
// the port allows; every delivery, port_ready and port_state is recorded.
class TestNet {
 public:
  explicit TestNet(const FabricConfig& config, uint64_t seed = 1)
      : fabric(events, config, seed, callbacks()) {}

  // Queues a packet at src's port on `plane` and transmits what the port allows now.
  uint64_t send(HostId src, HostId dst, PlaneId plane, Ev ev, uint32_t size = kPayload100ns) {
    auto packet = make_packet();
    packet->id = next_id_++;
    packet->dest_host = dst;
    packet->ev = ev;
    packet->trim_to_bytes = kTrimTo;
    packet->trimmable = !control;
    packet->high_priority = control;
    const std::vector<uint8_t> bytes = pattern(packet->id, size);
    packet->bytes.assign(bytes.begin(), bytes.end());
    const uint64_t id = packet->id;
    backlog_[{src, plane.value}].push_back(std::move(packet));
    pump(src, plane);
    return id;
  }
  void send_at(Instant at, HostId src, HostId dst, PlaneId plane, Ev ev,
               uint32_t size = kPayload100ns) {
    events.schedule(at, [this, src, dst, plane, ev, size] { send(src, dst, plane, ev, size); });
  }
  void run() { events.run_until(Instant::never()); }
  size_t delivered_with_ev(Ev ev) const {
    return static_cast<size_t>(std::count_if(deliveries.begin(), deliveries.end(),
                                             [&](const Delivery& d) { return d.ev == ev.value; }));
  }

  bool control = false;  // what send() queues: control packets (no data) or data packets
  EventQueue events;
  std::vector<Delivery> deliveries;
  std::vector<PortEvent> port_events;
  std::vector<int64_t> ready_ns;
  bool keep_bytes = false;
  std::vector<std::vector<uint8_t>> payloads;  // with keep_bytes, one per delivery
  Fabric fabric;

 private:
  FabricCallbacks callbacks() {
    FabricCallbacks cb;
    cb.deliver = [this](HostId host, PlaneId plane, PacketPtr p) {
      EXPECT_EQ(host, p->dest_host);
      EXPECT_EQ(plane, p->plane);
      deliveries.push_back(Delivery{events.now().ns, host, plane.value, p->id, p->ev.value,
                                    static_cast<uint32_t>(p->bytes.size()), p->trimmed,
                                    p->trimmed_last_hop, p->ecn_ce, digest(p->bytes)});
      if (keep_bytes) payloads.emplace_back(p->bytes.begin(), p->bytes.end());
    };
    cb.port_ready = [this](HostId host, PlaneId plane) {
      ready_ns.push_back(events.now().ns);
      pump(host, plane);
    };
    cb.port_state = [this](HostId host, PlaneId plane, bool up) {
      port_events.push_back(PortEvent{events.now().ns, host, plane.value, up});
    };
    return cb;
  }
  void pump(HostId host, PlaneId plane) {
    std::deque<PacketPtr>& queue = backlog_[{host, plane.value}];
    while (!queue.empty() && fabric.port_idle(host, plane)) {
      PacketPtr packet = std::move(queue.front());
      queue.pop_front();
      fabric.transmit(host, plane, std::move(packet));
    }
  }

  std::map<std::pair<HostId, uint8_t>, std::deque<PacketPtr>> backlog_;
  uint64_t next_id_ = 1;
};

const PlaneId kP0{0};
const PlaneId kP1{1};

// ================================================================ EventQueue

TEST(EventQueueTest, OrdersByTimeThenSchedulingOrder) {
  EventQueue q;
  std::vector<std::string> order;
  q.schedule(Instant{30}, [&] { order.push_back("30"); });
  q.schedule(Instant{10}, [&] { order.push_back("10a"); });
  q.schedule(Instant{20}, [&] { order.push_back("20"); });
  q.schedule(Instant{10}, [&] { order.push_back("10b"); });
  q.schedule(Instant{10}, [&] {
    order.push_back("10c");
    q.schedule(Instant{10}, [&] { order.push_back("10d"); });  // same time, scheduled later
  });
  EXPECT_EQ(q.pending(), 5u);
  q.run_until(Instant::never());
  EXPECT_EQ(order, (std::vector<std::string>{"10a", "10b", "10c", "10d", "20", "30"}));
  EXPECT_EQ(q.now(), Instant{30});
  EXPECT_EQ(q.events_run(), 6u);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(EventQueueTest, PastIsClampedAndRunUntilAdvancesClock) {
  EventQueue q;
  std::vector<int64_t> at;
  q.schedule(Instant{50}, [&] {
    at.push_back(q.now().ns);
    q.schedule(Instant{10}, [&] { at.push_back(q.now().ns); });  // in the past: runs at 50
    q.schedule_after(Duration{150}, [&] { at.push_back(q.now().ns); });
  });
  q.run_until(Instant{100});
  EXPECT_EQ(at, (std::vector<int64_t>{50, 50}));
  EXPECT_EQ(q.now(), Instant{100});
  EXPECT_EQ(q.pending(), 1u);
  EXPECT_FALSE(q.run_one(Instant{150}));
  EXPECT_EQ(q.now(), Instant{150});
  EXPECT_TRUE(q.run_one());
  EXPECT_EQ(at.back(), 200);
  EXPECT_FALSE(q.run_one());
  EXPECT_EQ(q.now(), Instant{200});
}

TEST(EventQueueTest, StopEndsRunUntil) {
  EventQueue q;
  int runs = 0;
  for (int i = 1; i <= 5; ++i) {
    q.schedule(Instant{i}, [&, i] {
      ++runs;
      if (i == 2) q.stop();
    });
  }
  q.run_until(Instant::never());
  EXPECT_TRUE(q.stopped());
  EXPECT_EQ(runs, 2);
  q.run_until(Instant::never());
  EXPECT_EQ(runs, 5);
}

// The wheel (events due within kWheelNs), the far heap and the moves between them keep the
// exact (time, scheduling order) of one reference ordered set, for delays from 0 (and the
// past) to well beyond the wheel, with boxed (large) and inline callables and run_one(until)
// stops in between.
TEST(EventQueueTest, WheelAndFarHeapKeepTimeThenSchedulingOrder) {
  EventQueue q;
  Prng prng(7);
  std::set<std::pair<int64_t, uint64_t>> expected;  // (time, sequence) of pending events
  uint64_t sequence = 0, ran = 0;
  std::function<void(uint64_t)> body;
  auto add = [&] {
    const uint64_t kind = prng.below(6);
    const int64_t delay = kind == 0   ? 0
                          : kind == 1 ? -static_cast<int64_t>(prng.below(50))
                          : kind == 2 ? static_cast<int64_t>(prng.below(400))
                          : kind == 3 ? static_cast<int64_t>(prng.below(9000))
                          : kind == 4 ? static_cast<int64_t>(8192 + prng.below(3))
                                      : static_cast<int64_t>(prng.below(200'000));
    const int64_t at = std::max(q.now().ns, q.now().ns + delay);
    const uint64_t id = sequence++;
    expected.emplace(at, id);
    if (prng.below(4) == 0) {
      const std::array<uint64_t, 8> big{id};  // boxed: larger than the inline storage
      q.schedule(Instant{q.now().ns + delay}, [&body, big] { body(big[0]); });
    } else {
      q.schedule(Instant{q.now().ns + delay}, [&body, id] { body(id); });
    }
  };
  body = [&](uint64_t id) {
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(*expected.begin(), std::make_pair(q.now().ns, id));
    expected.erase(expected.begin());
    if (++ran < 20'000) {
      for (uint64_t n = prng.below(3) + (expected.size() < 50 ? 1 : 0); n > 0; --n) add();
    }
  };
  for (int i = 0; i < 100; ++i) add();
  while (!expected.empty()) {
    const Instant stop{q.now().ns + static_cast<int64_t>(prng.below(20'000))};
    while (q.run_one(stop)) {
    }
    EXPECT_EQ(q.pending(), expected.size());
  }
  EXPECT_EQ(q.events_run(), ran);
  EXPECT_GE(ran, 20'000u);
}

// Events with a prefetch(stage) are asked, as they come closer, for stages 0 and 1 in that
// order (event_queue.h, "Prefetch"), across buckets and with boxed events in between; asking
// never changes what runs when.
struct PrefetchLog {
  std::vector<std::pair<int, int>> calls;  // (event id, stage); stage -1 = it ran
};
struct LoggingEvent {
  PrefetchLog* log;
  int id;
  void operator()() const { log->calls.emplace_back(id, -1); }
  void prefetch(int stage) const { log->calls.emplace_back(id, stage); }
};

TEST(EventQueueTest, AsksTheEventsAheadToPrefetchInStages) {
  EventQueue q;
  q.set_prefetch(true);
  PrefetchLog log;
  std::vector<int> boxed_ran;
  for (int id = 0; id < 12; ++id)
    q.schedule(Instant{int64_t{id / 3} * 1000}, LoggingEvent{&log, id});  // 3 per bucket
  const std::array<int, 8> big{99};  // boxed: larger than the inline storage, no prefetch
  q.schedule(Instant{1500}, [&boxed_ran, big] { boxed_ran.push_back(big[0]); });
  q.run_until(Instant::never());
  std::vector<int> ran;
  std::map<int, std::vector<int>> stages;  // per event, the stages asked before it ran
  for (const auto& [id, stage] : log.calls) {
    if (stage < 0) {
      ran.push_back(id);
    } else {
      EXPECT_EQ(std::count(ran.begin(), ran.end(), id), 0)
          << "event " << id << " asked after it ran";
      stages[id].push_back(stage);
    }
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(boxed_ran, std::vector<int>{99});
  for (int id = 2; id < 12; ++id) EXPECT_EQ(stages[id], (std::vector<int>{0, 1})) << "event " << id;
  EXPECT_EQ(stages[1], std::vector<int>{1});  // asked only by event 0, as the next one
}

TEST(EventQueueTest, AsksNothingUnlessPrefetchIsOn) {
  EventQueue q;
  PrefetchLog log;
  for (int id = 0; id < 6; ++id) q.schedule(Instant{int64_t{id} * 10}, LoggingEvent{&log, id});
  q.run_until(Instant::never());
  ASSERT_EQ(log.calls.size(), 6u);
  for (const auto& call : log.calls) EXPECT_EQ(call.second, -1);
}

// ================================================================ timing and topology

FabricConfig timing_config() {
  FabricConfig config = make_config(2, 1, 1);
  config.host_link.rate_gbps = 100;
  config.host_link.propagation = Duration{100};
  config.fabric_link.rate_gbps = 100;
  config.fabric_link.propagation = Duration{200};
  return config;
}

TEST(FabricTest, SerializationAndPropagationTimingIsExact) {
  TestNet net(timing_config());
  net.send(0, 1, kP0, Ev{1});
  net.send(0, 1, kP0, Ev{2});
  net.run();
  // 4 hops of 100 ns serialization (1250 wire bytes at 100 Gbit/s), 2 x 100 ns host-link and
  // 2 x 200 ns fabric-link propagation.
  ASSERT_EQ(net.deliveries.size(), 2u);
  EXPECT_EQ(net.deliveries[0].at_ns, 1000);
  EXPECT_EQ(net.deliveries[1].at_ns, 1100);  // pipelined: one serialization behind
  EXPECT_EQ(net.ready_ns, (std::vector<int64_t>{100, 200}));
  EXPECT_EQ(net.fabric.link_stats(net.fabric.host_uplink(0, kP0)).bytes_sent, 2500u);
}

TEST(FabricTest, FractionalSerializationKeepsExactLineRate) {
  TestNet net(timing_config());
  // 1000 B + 66 B framing = 8528 bits = 85.28 ns at 100 Gbit/s.
  for (int i = 0; i < 100; ++i) net.send(0, 1, kP0, Ev{static_cast<uint32_t>(i)}, 1000);
  net.run();
  ASSERT_EQ(net.ready_ns.size(), 100u);
  EXPECT_EQ(net.ready_ns[0], 86);
  EXPECT_EQ(net.ready_ns[1], 171);
  EXPECT_EQ(net.ready_ns[2], 256);
  EXPECT_EQ(net.ready_ns[99], 8528);  // no rounding drift over 100 packets
  ASSERT_EQ(net.deliveries.size(), 100u);
  // Every hop runs at the same rate, so the deliveries keep the exact spacing too.
  EXPECT_NEAR(static_cast<double>(net.deliveries[99].at_ns - net.deliveries[0].at_ns), 99 * 85.28,
              1.0);
}

TEST(FabricTest, SameLeafHostsTakeTwoHops) {
  TestNet net(make_config(4, 1, 2, 2));
  EXPECT_EQ(net.fabric.leaves(), 2u);
  EXPECT_EQ(net.fabric.path_count(0, 1), 1u);
  EXPECT_EQ(net.fabric.path_count(0, 2), 2u);
  EXPECT_EQ(net.fabric.path_of(0, 1, kP0, Ev{5}), kNoSpine);
  EXPECT_EQ(net.fabric.route_of(0, 1, kP0, Ev{5}).size(), 2u);
  EXPECT_EQ(net.fabric.route_of(0, 3, kP0, Ev{5}).size(), 4u);
  net.send(0, 1, kP0, Ev{5});
  net.send(3, 2, kP0, Ev{5});
  net.run();
  ASSERT_EQ(net.deliveries.size(), 2u);
  EXPECT_EQ(net.fabric.link_name(net.fabric.leaf_to_spine(kP0, 1, 0)), "p0:leaf1->spine0");
}

TEST(FabricTest, PathOfSpreadsEvsEvenlyOverSpinesAndMatchesForwarding) {
  const uint32_t spines = 8;
  TestNet net(make_config(2, 2, spines));
  EXPECT_EQ(net.fabric.paths_per_plane(), spines);
  std::vector<int> count(spines, 0);
  int differs_by_plane = 0;
  for (uint32_t ev = 0; ev < 8000; ++ev) {
    const uint32_t spine = net.fabric.path_of(0, 1, kP0, Ev{ev});
    ASSERT_LT(spine, spines);
    ++count[spine];
    differs_by_plane += spine != net.fabric.path_of(0, 1, kP1, Ev{ev});
  }
  for (const int c : count) {
    EXPECT_GT(c, 800);
    EXPECT_LT(c, 1200);
  }
  EXPECT_GT(differs_by_plane, 5000);  // planes hash independently
  // A packet goes exactly where path_of says.
  for (uint32_t ev = 100; ev < 140; ++ev) net.send(0, 1, kP0, Ev{ev});
  net.run();
  std::vector<uint64_t> expected(spines, 0);
  for (uint32_t ev = 100; ev < 140; ++ev) ++expected[net.fabric.path_of(0, 1, kP0, Ev{ev})];
  for (uint32_t s = 0; s < spines; ++s) {
    EXPECT_EQ(net.fabric.link_stats(net.fabric.leaf_to_spine(kP0, 0, s)).packets_sent, expected[s]);
    EXPECT_EQ(net.fabric.link_stats(net.fabric.spine_to_leaf(kP0, s, 1)).packets_sent, expected[s]);
  }
}

// ================================================================ queues: ECN, trimming

TEST(FabricTest, EcnMarksAboveThresholdOnFabricLinks) {
  FabricConfig config = make_config(2, 1, 1);
  config.fabric_link.rate_gbps = 25;  // 4x slower than the host: the leaf uplink queues
  config.fabric_link.ecn_threshold_bytes = 10000;
  config.fabric_link.overflow = OverflowPolicy::kDrop;
  config.fabric_link.queue_limit_bytes = 1 << 20;
  TestNet net(config);
  for (uint32_t i = 0; i < 60; ++i) net.send(0, 1, kP0, Ev{i});
  net.run();
  ASSERT_EQ(net.deliveries.size(), 60u);
  const LinkId uplink = net.fabric.leaf_to_spine(kP0, 0, 0);
  const LinkStats& stats = net.fabric.link_stats(uplink);
  const auto marked = static_cast<uint64_t>(std::count_if(
      net.deliveries.begin(), net.deliveries.end(), [](const Delivery& d) { return d.ce; }));
  // A packet is marked when more than 10000 B (8 packets of 1250 B) wait ahead of it.
  EXPECT_FALSE(net.deliveries[0].ce);
  EXPECT_FALSE(net.deliveries[8].ce);
  EXPECT_TRUE(net.deliveries[59].ce);
  EXPECT_GT(marked, 30u);
  EXPECT_EQ(stats.ecn_marked, marked);
  EXPECT_GT(stats.max_queue_bytes, 10000u);
  EXPECT_EQ(net.fabric.totals().links.ecn_marked, marked);
}

FabricConfig incast_config(OverflowPolicy policy, bool ecn_last_hop) {
  FabricConfig config = make_config(5, 1, 1, /*hosts_per_leaf=*/5);  // one leaf
  config.host_link.overflow = policy;
  config.host_link.queue_limit_bytes = 64 * 1024;
  config.host_link.trim_threshold_bytes = 0;  // trim at the queue limit
  config.host_link.priority_queue_limit_bytes = 64 * 1024;
  config.host_link.ecn_threshold_bytes = 10000;
  config.ecn_last_hop = ecn_last_hop;
  return config;
}

// Four hosts send 50 x 4 KB each to host 4 at once: the last hop is 4x overloaded.
void run_incast(TestNet& net) {
  for (HostId src = 0; src < 4; ++src) {
    for (uint32_t i = 0; i < 50; ++i) net.send(src, 4, kP0, Ev{src * 100 + i}, 4096);
  }
  net.run();
}

TEST(FabricTest, NoEcnAtLastHopByDefault) {
  TestNet net(incast_config(OverflowPolicy::kTrim, false));
  run_incast(net);
  const LinkStats& last_hop = net.fabric.link_stats(net.fabric.host_downlink(4, kP0));
  EXPECT_GT(last_hop.max_queue_bytes, 10000u);
  EXPECT_EQ(last_hop.ecn_marked, 0u);
  for (const Delivery& d : net.deliveries) EXPECT_FALSE(d.ce);

  TestNet marking(incast_config(OverflowPolicy::kTrim, true));
  run_incast(marking);
  EXPECT_GT(marking.fabric.link_stats(marking.fabric.host_downlink(4, kP0)).ecn_marked, 0u);
}

TEST(FabricTest, IncastTrimsInsteadOfDropping) {
  TestNet net(incast_config(OverflowPolicy::kTrim, false));
  run_incast(net);
  const LinkStats& last_hop = net.fabric.link_stats(net.fabric.host_downlink(4, kP0));
  ASSERT_EQ(net.deliveries.size(), 200u);  // every packet arrives, whole or as a header
  size_t trimmed = 0;
  std::set<uint64_t> ids;
  for (const Delivery& d : net.deliveries) {
    ids.insert(d.id);
    if (!d.trimmed) {
      EXPECT_EQ(d.size, 4096u);
      continue;
    }
    ++trimmed;
    EXPECT_EQ(d.size, kTrimTo);
    EXPECT_TRUE(d.trimmed_last_hop);
  }
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_GT(trimmed, 50u);
  EXPECT_EQ(last_hop.trimmed, trimmed);
  EXPECT_EQ(last_hop.dropped(), 0u);
  EXPECT_LE(last_hop.max_queue_bytes, 2u * 64 * 1024);
  // Trimmed headers jump the data queue: the first one arrives long before the last data.
  const auto first_trimmed = std::find_if(net.deliveries.begin(), net.deliveries.end(),
                                          [](const Delivery& d) { return d.trimmed; });
  EXPECT_LT(first_trimmed - net.deliveries.begin(), 100);
}

TEST(FabricTest, IncastDropTailDrops) {
  TestNet net(incast_config(OverflowPolicy::kDrop, false));
  run_incast(net);
  const LinkStats& last_hop = net.fabric.link_stats(net.fabric.host_downlink(4, kP0));
  EXPECT_LT(net.deliveries.size(), 200u);
  EXPECT_EQ(last_hop.dropped_overflow, 200u - net.deliveries.size());
  EXPECT_EQ(last_hop.trimmed, 0u);
  EXPECT_LE(last_hop.max_queue_bytes, 64u * 1024);
  for (const Delivery& d : net.deliveries) EXPECT_FALSE(d.trimmed);
}

TEST(FabricTest, PriorityQueueOverflowDrops) {
  FabricConfig config = incast_config(OverflowPolicy::kTrim, false);
  config.host_link.priority_queue_limit_bytes = 100;  // no room for a 130 B header
  TestNet net(config);
  run_incast(net);
  const LinkStats& last_hop = net.fabric.link_stats(net.fabric.host_downlink(4, kP0));
  EXPECT_GT(last_hop.dropped_overflow, 50u);
  EXPECT_EQ(net.deliveries.size() + last_hop.dropped_overflow, 200u);
  for (const Delivery& d : net.deliveries) EXPECT_FALSE(d.trimmed);
}

// ================================================================ faults

// Sends `n` packets host 0 -> host 1 on plane 0, one every 200 ns, with EVs 0..n-1.
void stream(TestNet& net, uint32_t n, Instant start = Instant{0}, uint32_t src = 0,
            uint32_t dst = 1, PlaneId plane = kP0) {
  for (uint32_t i = 0; i < n; ++i) {
    net.send_at(start + Duration{200 * static_cast<int64_t>(i)}, src, dst, plane, Ev{i});
  }
}

TEST(FabricFaultTest, RandomLossDropsAFractionAndCountsIt) {
  TestNet net(make_config(2, 1, 2));
  const LinkId link = net.fabric.host_uplink(0, kP0);
  net.fabric.set_link_faults(link, LinkFaults{.loss = 0.3});
  stream(net, 1000);
  net.run();
  const LinkStats& stats = net.fabric.link_stats(link);
  EXPECT_GT(stats.dropped_fault, 230u);
  EXPECT_LT(stats.dropped_fault, 370u);
  EXPECT_EQ(net.deliveries.size() + stats.dropped_fault, 1000u);
  EXPECT_EQ(net.fabric.totals().links.dropped(), stats.dropped_fault);
}

TEST(FabricFaultTest, DuplicationDeliversCopies) {
  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.spine_to_leaf(kP0, 0, 1);
  net.fabric.set_link_faults(link, LinkFaults{.duplicate = 0.5});
  stream(net, 1000);
  net.run();
  const LinkStats& stats = net.fabric.link_stats(link);
  EXPECT_GT(stats.duplicated, 400u);
  EXPECT_LT(stats.duplicated, 600u);
  EXPECT_EQ(net.deliveries.size(), 1000u + stats.duplicated);
  std::map<uint64_t, int> copies;
  for (const Delivery& d : net.deliveries) ++copies[d.id];
  EXPECT_EQ(copies.size(), 1000u);
}

size_t inversions(const std::vector<Delivery>& deliveries) {
  size_t n = 0;
  for (size_t i = 1; i < deliveries.size(); ++i) n += deliveries[i].id < deliveries[i - 1].id;
  return n;
}

TEST(FabricFaultTest, ReorderingLetsPacketsOvertake) {
  TestNet calm(make_config(2, 1, 1));
  stream(calm, 500);
  calm.run();
  EXPECT_EQ(inversions(calm.deliveries), 0u);

  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.leaf_to_spine(kP0, 0, 0);
  net.fabric.set_link_faults(link,
                             LinkFaults{.reorder = 0.2, .reorder_max_delay = Duration::from_us(5)});
  stream(net, 500);
  net.run();
  const LinkStats& stats = net.fabric.link_stats(link);
  EXPECT_EQ(net.deliveries.size(), 500u);
  EXPECT_GT(stats.reordered, 60u);
  EXPECT_LT(stats.reordered, 140u);
  EXPECT_GT(inversions(net.deliveries), 20u);
}

TEST(FabricFaultTest, CorruptionFlipsExactlyOneBit) {
  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.host_downlink(1, kP0);
  net.fabric.set_link_faults(link, LinkFaults{.corrupt = 1.0});
  net.keep_bytes = true;
  stream(net, 50);
  net.run();
  ASSERT_EQ(net.deliveries.size(), 50u);
  EXPECT_EQ(net.fabric.link_stats(link).corrupted, 50u);
  ASSERT_EQ(net.payloads.size(), 50u);
  for (size_t i = 0; i < net.deliveries.size(); ++i) {
    const std::vector<uint8_t> sent = pattern(net.deliveries[i].id, kPayload100ns);
    const std::vector<uint8_t>& got = net.payloads[i];
    ASSERT_EQ(got.size(), sent.size());
    int flipped_bits = 0;
    for (size_t byte = 0; byte < sent.size(); ++byte) {
      flipped_bits += std::popcount(static_cast<unsigned>(sent[byte] ^ got[byte]));
    }
    EXPECT_EQ(flipped_bits, 1) << "packet " << net.deliveries[i].id;
  }
}

TEST(FabricFaultTest, ForcedTrimmingTrimsEveryDataPacket) {
  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.leaf_to_spine(kP0, 0, 0);
  net.fabric.set_link_faults(link, LinkFaults{.trim = 1.0});
  stream(net, 100);
  net.run();
  ASSERT_EQ(net.deliveries.size(), 100u);
  for (const Delivery& d : net.deliveries) {
    EXPECT_TRUE(d.trimmed);
    EXPECT_FALSE(d.trimmed_last_hop);
    EXPECT_EQ(d.size, kTrimTo);
  }
  EXPECT_EQ(net.fabric.link_stats(link).trimmed_forced, 100u);
  EXPECT_EQ(net.fabric.link_stats(link).trimmed, 100u);
}

// Drops of packets without data (control packets, trimmed headers) are also counted apart.
TEST(FabricFaultTest, DropsOfPacketsWithoutDataAreCountedApart) {
  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.spine_to_leaf(kP0, 0, 1);
  net.fabric.set_link_up(link, false);
  stream(net, 12);
  net.run();
  net.control = true;
  stream(net, 5, net.events.now());
  net.run();
  net.control = false;
  net.fabric.set_link_faults(net.fabric.host_uplink(0, kP0), LinkFaults{.trim = 1.0});
  stream(net, 3, net.events.now());
  net.run();
  EXPECT_TRUE(net.deliveries.empty());
  EXPECT_EQ(net.fabric.link_stats(link).dropped_down, 20u);
  EXPECT_EQ(net.fabric.link_stats(link).dropped_control, 8u);  // 5 control, 3 trimmed headers
}

TEST(FabricFaultTest, FabricLinkDownDropsSilently) {
  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.spine_to_leaf(kP0, 0, 1);
  net.fabric.set_link_up(link, false);
  EXPECT_FALSE(net.fabric.link_up(link));
  stream(net, 20);
  net.run();
  EXPECT_TRUE(net.deliveries.empty());
  EXPECT_EQ(net.fabric.link_stats(link).dropped_down, 20u);
  EXPECT_TRUE(net.port_events.empty());  // not a host cable: no NIC signal
  net.fabric.set_link_up(link, true);
  stream(net, 20, net.events.now());
  net.run();
  EXPECT_EQ(net.deliveries.size(), 20u);
}

TEST(FabricFaultTest, HostCableDownSignalsPortState) {
  TestNet net(make_config(2, 2, 1));
  net.fabric.set_link_up(net.fabric.host_downlink(1, kP0), false);
  EXPECT_EQ(net.port_events, (std::vector<PortEvent>{{0, 1, 0, false}}));
  EXPECT_FALSE(net.fabric.port_up(1, kP0));
  EXPECT_TRUE(net.fabric.port_up(1, kP1));
  EXPECT_TRUE(net.fabric.port_up(0, kP0));
  // The uplink going down too changes nothing the NIC can see.
  net.fabric.set_link_up(net.fabric.host_uplink(1, kP0), false);
  EXPECT_EQ(net.port_events.size(), 1u);
  stream(net, 10, Instant{0}, 0, 1, kP0);  // dropped at host 1's downlink
  stream(net, 10, Instant{0}, 1, 0, kP0);  // dropped at transmit: port down
  net.run();
  EXPECT_TRUE(net.deliveries.empty());
  EXPECT_EQ(net.fabric.link_stats(net.fabric.host_downlink(1, kP0)).dropped_down, 10u);
  EXPECT_EQ(net.fabric.link_stats(net.fabric.host_uplink(1, kP0)).dropped_down, 10u);
  net.fabric.set_link_up(net.fabric.host_uplink(1, kP0), true);
  net.fabric.set_link_up(net.fabric.host_downlink(1, kP0), true);
  ASSERT_EQ(net.port_events.size(), 2u);
  EXPECT_TRUE(net.port_events[1].up);
}

TEST(FabricFaultTest, LinkDownLosesQueuedAndInFlightPackets) {
  FabricConfig config = make_config(2, 1, 1);
  config.fabric_link.rate_gbps = 10;  // queue up behind the leaf uplink
  TestNet net(config);
  const LinkId link = net.fabric.leaf_to_spine(kP0, 0, 0);
  for (uint32_t i = 0; i < 20; ++i) net.send(0, 1, kP0, Ev{i});
  net.fabric.schedule(Instant{3000}, FaultAction::set_up(Scope::of_link(link), false));
  net.fabric.schedule(Instant{3001}, FaultAction::set_up(Scope::of_link(link), true));
  net.run();
  const LinkStats& stats = net.fabric.link_stats(link);
  EXPECT_GT(stats.dropped_down, 5u);
  EXPECT_EQ(net.deliveries.size() + stats.dropped_down, 20u);
}

TEST(FabricFaultTest, SwitchDownAndSwitchFaults) {
  TestNet net(make_config(2, 1, 2));
  const NodeId spine0 = net.fabric.spine_switch(0);
  net.fabric.set_switch_up(kP0, spine0, false);
  EXPECT_FALSE(net.fabric.link_up(net.fabric.leaf_to_spine(kP0, 0, 0)));
  EXPECT_FALSE(net.fabric.link_up(net.fabric.spine_to_leaf(kP0, 0, 1)));
  EXPECT_TRUE(net.fabric.link_up(net.fabric.leaf_to_spine(kP0, 0, 1)));
  stream(net, 200);
  net.run();
  size_t via_spine0 = 0;
  for (uint32_t ev = 0; ev < 200; ++ev) via_spine0 += net.fabric.path_of(0, 1, kP0, Ev{ev}) == 0;
  EXPECT_EQ(net.deliveries.size(), 200u - via_spine0);
  EXPECT_EQ(net.fabric.link_stats(net.fabric.leaf_to_spine(kP0, 0, 0)).dropped_down, via_spine0);
  EXPECT_TRUE(net.port_events.empty());

  // A down leaf takes its hosts' cables down: the NICs see it.
  net.fabric.set_switch_up(kP0, net.fabric.leaf_switch(1), false);
  EXPECT_EQ(net.port_events, (std::vector<PortEvent>{{net.events.now().ns, 1, 0, false}}));
  // Bringing the spine back does not revive the link to the still-down leaf.
  net.fabric.set_switch_up(kP0, spine0, true);
  EXPECT_TRUE(net.fabric.link_up(net.fabric.leaf_to_spine(kP0, 0, 0)));
  EXPECT_FALSE(net.fabric.link_up(net.fabric.spine_to_leaf(kP0, 0, 1)));
  net.fabric.set_switch_up(kP0, net.fabric.leaf_switch(1), true);
  EXPECT_TRUE(net.fabric.port_up(1, kP0));

  // Faults on a switch apply to the links it transmits on.
  net.deliveries.clear();
  net.fabric.set_faults(Scope::of_switch(kP0, spine0), LinkFaults{.loss = 1.0});
  stream(net, 200, net.events.now());
  net.run();
  EXPECT_EQ(net.deliveries.size(), 200u - via_spine0);
  EXPECT_EQ(net.fabric.link_stats(net.fabric.spine_to_leaf(kP0, 0, 1)).dropped_fault, via_spine0);
}

TEST(FabricFaultTest, PlaneFaultsStayInTheirPlane) {
  TestNet net(make_config(2, 2, 2));
  net.fabric.set_faults(Scope::of_plane(kP1), LinkFaults{.loss = 1.0});
  stream(net, 50, Instant{0}, 0, 1, kP0);
  stream(net, 50, Instant{0}, 0, 1, kP1);
  net.run();
  EXPECT_EQ(net.fabric.plane_stats(kP0).packets_delivered, 50u);
  EXPECT_EQ(net.fabric.plane_stats(kP1).packets_delivered, 0u);
  EXPECT_EQ(net.fabric.plane_stats(kP1).links.dropped_fault, 50u);
  EXPECT_EQ(net.fabric.plane_stats(kP0).links.dropped(), 0u);
  EXPECT_EQ(net.fabric.plane_stats(kP0).bytes_delivered, 50u * kPayload100ns);
}

TEST(FabricFaultTest, FabricScopeWithClassFilterHitsOnlyNicCables) {
  TestNet net(make_config(2, 1, 2));
  const uint8_t nic = bit(LinkClass::kHostUp) | bit(LinkClass::kHostDown);
  net.fabric.set_faults(Scope::fabric().only(nic), LinkFaults{.loss = 0.5});
  EXPECT_EQ(net.fabric.link_faults(net.fabric.host_uplink(0, kP0)).loss, 0.5);
  EXPECT_EQ(net.fabric.link_faults(net.fabric.host_downlink(1, kP0)).loss, 0.5);
  EXPECT_EQ(net.fabric.link_faults(net.fabric.leaf_to_spine(kP0, 0, 1)).loss, 0.0);
  EXPECT_EQ(net.fabric.link_faults(net.fabric.spine_to_leaf(kP0, 1, 0)).loss, 0.0);
}

TEST(FabricFaultTest, FlappingTogglesThePortAndEndsUp) {
  TestNet net(make_config(2, 1, 1));
  const LinkId link = net.fabric.host_uplink(0, kP0);
  const FlapSpec flap{Duration::from_us(10), Duration::from_us(10), Duration::from_us(100)};
  net.fabric.schedule(Instant{5000}, FaultAction::start_flap(Scope::of_link(link), flap));
  stream(net, 1000);  // 200 us of traffic
  net.run();
  ASSERT_EQ(net.port_events.size(), 10u);
  for (size_t i = 0; i < net.port_events.size(); ++i) {
    EXPECT_EQ(net.port_events[i].at_ns, 5000 + 10000 * static_cast<int64_t>(i));
    EXPECT_EQ(net.port_events[i].up, i % 2 == 1);
  }
  EXPECT_TRUE(net.fabric.port_up(0, kP0));
  const LinkStats& stats = net.fabric.link_stats(link);
  EXPECT_GT(stats.dropped_down, 200u);  // ~50 us down of 200 us
  EXPECT_LT(stats.dropped_down, 300u);
  EXPECT_EQ(net.deliveries.size() + stats.dropped_down, 1000u);
}

// With jitter, each down and up period is its length plus a draw from [-jitter, +jitter]: the
// port events keep that spacing, vary, and replay from the seed.
TEST(FabricFaultTest, FlapJitterVariesEachPeriodWithinItsBounds) {
  const auto flap_events = [] {
    TestNet net(make_config(2, 1, 1));
    const FlapSpec flap{Duration::from_us(10), Duration::from_us(10), Duration::from_us(200),
                        Duration::from_us(3)};
    net.fabric.start_flap(Scope::of_link(net.fabric.host_uplink(0, kP0)), flap);
    net.run();
    std::vector<int64_t> at_ns;
    for (const PortEvent& e : net.port_events) at_ns.push_back(e.at_ns);
    return at_ns;
  };
  const std::vector<int64_t> at_ns = flap_events();
  ASSERT_GT(at_ns.size(), 10u);
  std::set<int64_t> periods;
  for (size_t i = 1; i + 1 < at_ns.size(); ++i) {  // the last is cut short by the duration
    const int64_t period = at_ns[i] - at_ns[i - 1];
    EXPECT_GE(period, 7000) << i;
    EXPECT_LE(period, 13000) << i;
    periods.insert(period);
  }
  EXPECT_GT(periods.size(), 3u);
  EXPECT_EQ(flap_events(), at_ns);
}

TEST(FabricFaultTest, BlackholedEvLosesEverythingOthersNothing) {
  TestNet net(make_config(2, 2, 4));
  const Ev black{77};
  net.fabric.set_path_fault(PathFault{kP0, black});
  EXPECT_EQ(net.fabric.path_loss(kP0, black, 0, 1), 1.0);
  EXPECT_EQ(net.fabric.path_loss(kP1, black, 0, 1), 0.0);
  for (uint32_t i = 0; i < 200; ++i) {
    const Instant at{200 * static_cast<int64_t>(i)};
    net.send_at(at, 0, 1, kP0, i % 2 == 0 ? black : Ev{1000 + i});
    net.send_at(at, 0, 1, kP1, black);  // same EV on another plane is fine
  }
  net.run();
  EXPECT_EQ(net.fabric.plane_stats(kP0).packets_delivered, 100u);
  EXPECT_EQ(net.fabric.plane_stats(kP1).packets_delivered, 200u);
  for (const Delivery& d : net.deliveries) EXPECT_TRUE(d.plane == 1 || d.ev != black.value);
  const LinkId path_link = net.fabric.route_of(0, 1, kP0, black)[1];
  EXPECT_EQ(net.fabric.link_stats(path_link).dropped_path, 100u);
  EXPECT_EQ(net.fabric.totals().links.dropped(), 100u);
  EXPECT_TRUE(net.port_events.empty());  // silent
  net.fabric.set_path_fault(PathFault{kP0, black, kAnyHost, kAnyHost, 0.0});
  net.send(0, 1, kP0, black);
  net.run();
  EXPECT_EQ(net.delivered_with_ev(black), 201u);
}

// A gray path loses its share of one EV's packets from its source to its destination, and
// nothing of the same EV between other hosts.
TEST(FabricFaultTest, GrayPathLosesItsShareBetweenItsHostsOnly) {
  TestNet net(make_config(3, 1, 4));
  const Ev gray{5};
  net.fabric.set_path_fault(PathFault{kP0, gray, 0, 1, 0.3});
  EXPECT_EQ(net.fabric.path_loss(kP0, gray, 0, 1), 0.3);
  EXPECT_EQ(net.fabric.path_loss(kP0, gray, 0, 2), 0.0);
  for (uint32_t i = 0; i < 1000; ++i) {
    const Instant at{300 * static_cast<int64_t>(i)};
    net.send_at(at, 0, 1, kP0, gray);
    if (i % 5 == 0) net.send_at(at, 0, 2, kP0, gray);  // another destination
    if (i % 5 == 1) net.send_at(at, 2, 1, kP0, gray);  // another source
  }
  net.run();
  const uint64_t dropped = net.fabric.totals().links.dropped_path;
  EXPECT_GT(dropped, 230u);
  EXPECT_LT(dropped, 370u);
  EXPECT_EQ(net.fabric.totals().links.dropped(), dropped);
  EXPECT_EQ(net.deliveries.size(), 1400u - dropped);
}

// A NIC drop loses its share of what the port receives (rx) or sends (tx), counted on the
// host's downlink or uplink; other ports lose nothing.
TEST(FabricFaultTest, NicDropLosesItsShareOfWhatThePortReceivesOrSends) {
  TestNet net(make_config(3, 2, 2));
  net.fabric.set_nic_drop(NicDrop{.host = 1, .plane = 0, .rx = 0.2});
  net.fabric.set_nic_drop(NicDrop{.host = 2, .rx = 0, .tx = 0.5});  // every plane
  stream(net, 1000, Instant{0}, 0, 1, kP0);
  stream(net, 1000, Instant{0}, 0, 1, kP1);  // host 1's other plane: no drop
  stream(net, 1000, Instant{0}, 2, 0, kP1);
  net.run();
  const uint64_t rx = net.fabric.link_stats(net.fabric.host_downlink(1, kP0)).dropped_nic;
  const uint64_t tx = net.fabric.link_stats(net.fabric.host_uplink(2, kP1)).dropped_nic;
  EXPECT_GT(rx, 150u);
  EXPECT_LT(rx, 250u);
  EXPECT_GT(tx, 440u);
  EXPECT_LT(tx, 560u);
  EXPECT_EQ(net.fabric.totals().links.dropped(), rx + tx);
  EXPECT_EQ(net.fabric.plane_stats(kP1).packets_delivered, 2000u - tx);
  net.fabric.set_nic_drop(NicDrop{});  // every port, 0 and 0: cleared
  stream(net, 100, net.events.now(), 2, 1, kP0);
  net.run();
  EXPECT_EQ(net.fabric.totals().links.dropped(), rx + tx);
}

TEST(FabricFaultTest, PlaneDownSignalsEveryHostAndDrops) {
  TestNet net(make_config(4, 2, 2));
  net.fabric.set_plane_up(kP1, false);
  ASSERT_EQ(net.port_events.size(), 4u);
  std::set<HostId> hosts;
  for (const PortEvent& e : net.port_events) {
    EXPECT_EQ(e.plane, 1u);
    EXPECT_FALSE(e.up);
    hosts.insert(e.host);
  }
  EXPECT_EQ(hosts.size(), 4u);
  for (HostId h = 0; h < 4; ++h) {
    EXPECT_FALSE(net.fabric.port_up(h, kP1));
    EXPECT_TRUE(net.fabric.port_up(h, kP0));
  }
  stream(net, 50, Instant{0}, 0, 3, kP0);
  stream(net, 50, Instant{0}, 0, 3, kP1);
  net.run();
  EXPECT_EQ(net.fabric.plane_stats(kP0).packets_delivered, 50u);
  EXPECT_EQ(net.fabric.plane_stats(kP1).packets_delivered, 0u);
  EXPECT_EQ(net.fabric.plane_stats(kP1).links.dropped_down, 50u);

  net.fabric.heal_all();
  EXPECT_EQ(net.port_events.size(), 8u);
  for (size_t i = 4; i < 8; ++i) EXPECT_TRUE(net.port_events[i].up);
  stream(net, 50, net.events.now(), 0, 3, kP1);
  net.run();
  EXPECT_EQ(net.fabric.plane_stats(kP1).packets_delivered, 50u);
}

TEST(FabricFaultTest, HealAllRestoresDelivery) {
  TestNet net(make_config(4, 2, 2));
  net.fabric.set_faults(Scope::fabric(), LinkFaults{.loss = 0.5, .duplicate = 0.2, .trim = 0.3});
  net.fabric.set_link_up(net.fabric.leaf_to_spine(kP0, 0, 1), false);
  net.fabric.set_switch_up(kP1, net.fabric.spine_switch(0), false);
  net.fabric.set_plane_up(kP1, false);
  net.fabric.set_path_fault(PathFault{kP0, Ev{3}});
  net.fabric.set_nic_drop(NicDrop{.rx = 0.5, .tx = 0.5});
  net.fabric.start_flap(
      Scope::of_link(net.fabric.host_uplink(2, kP0)),
      FlapSpec{Duration::from_us(1), Duration::from_us(1), Duration::from_ms(10)});
  net.fabric.schedule(Instant{50000}, FaultAction::heal_all());
  for (HostId src = 0; src < 4; ++src) {
    for (uint8_t plane = 0; plane < 2; ++plane) {
      stream(net, 50, Instant{60000}, src, (src + 1) % 4, PlaneId(plane));
    }
  }
  net.run();
  EXPECT_EQ(net.deliveries.size(), 400u);
  for (const Delivery& d : net.deliveries) EXPECT_FALSE(d.trimmed);
  for (HostId h = 0; h < 4; ++h) {
    EXPECT_TRUE(net.fabric.port_up(h, kP0));
    EXPECT_TRUE(net.fabric.port_up(h, kP1));
  }
  EXPECT_LT(net.events.now(), Instant{1000000});  // the flap's events were cut short
}

// ================================================================ determinism

std::vector<Delivery> chaos_trace(uint64_t seed) {
  TestNet net(make_config(8, 2, 4, 2), seed);
  net.fabric.set_faults(
      Scope::fabric(),
      LinkFaults{.loss = 0.02, .duplicate = 0.02, .corrupt = 0.02, .reorder = 0.1, .trim = 0.02});
  Prng traffic(1234);  // the traffic is the same for every fabric seed
  for (int i = 0; i < 2000; ++i) {
    const auto src = static_cast<HostId>(traffic.below(8));
    const auto dst = static_cast<HostId>((src + 1 + traffic.below(7)) % 8);
    net.send_at(Instant{static_cast<int64_t>(traffic.below(200000))}, src, dst,
                PlaneId(static_cast<uint8_t>(traffic.below(2))), Ev{traffic.next_u32()},
                static_cast<uint32_t>(256 + traffic.below(4000)));
  }
  net.run();
  return net.deliveries;
}

TEST(FabricTest, SameSeedSameTraceDifferentSeedDifferentTrace) {
  const std::vector<Delivery> a = chaos_trace(7);
  const std::vector<Delivery> b = chaos_trace(7);
  const std::vector<Delivery> c = chaos_trace(8);
  EXPECT_GT(a.size(), 1500u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(FabricTest, FaultOnOneLinkDoesNotChangeAnotherLinksDraws) {
  // Loss on plane 1 must not change which packets plane 0 loses.
  const auto run = [](bool fault_plane1) {
    TestNet net(make_config(2, 2, 2), 99);
    net.fabric.set_link_faults(net.fabric.host_uplink(0, kP0), LinkFaults{.loss = 0.3});
    if (fault_plane1) {
      net.fabric.set_faults(Scope::of_plane(kP1), LinkFaults{.loss = 0.3, .reorder = 0.5});
    }
    stream(net, 300, Instant{0}, 0, 1, kP0);
    stream(net, 300, Instant{0}, 0, 1, kP1);
    net.run();
    std::vector<uint64_t> plane0;
    for (const Delivery& d : net.deliveries) {
      if (d.plane == 0) plane0.push_back(d.id);
    }
    return plane0;
  };
  EXPECT_EQ(run(false), run(true));
}

}  // namespace
}  // namespace mrc::sim
