// ConnSchedule answers what a scan over every baseline connection would: which connections may
// send on a plane now, in round-robin order from a position (paced ones once their time has
// come), the earliest deadline, and which connections' timers must run (due, or wanting every
// timer), in index order; and it re-reads a connection only after it was touched.
#include <gtest/gtest.h>

#include <vector>

#include "sim/baseline.h"
#include "sim/conn_schedule.h"

namespace mrc::sim {
namespace {

class FakeConn final : public BaselineConn {
 public:
  FakeConn(BaselineHost& host, uint32_t id) : BaselineConn(host, id) {}
  Instant deadline = Instant::never();
  Instant ready = Instant::never();  // on plane 0; never on the others
  bool every = false;

  bool post(const BaseWr&) override { return true; }
  bool failed() const override { return false; }
  PacketPtr poll_transmit(Instant, PlaneId) override { return nullptr; }
  void on_packet(Instant, const BaseHeader&, std::span<const uint8_t>, const SimPacket&) override {}
  Instant next_deadline(Instant) const override { return deadline; }
  void on_timer(Instant) override {}
  Instant send_ready_at(Instant, PlaneId plane) const override { return plane.value == 0 ? ready : Instant::never(); }
  bool wants_every_timer() const override { return every; }
};

struct Fixture {
  EventQueue events;
  FabricConfig config = [] {
    FabricConfig c;
    c.planes = 2;
    c.hosts = 2;
    return c;
  }();
  Fabric fabric{events, config, 1, [] {
                  FabricCallbacks cb;
                  cb.deliver = [](HostId, PlaneId, PacketPtr) {};
                  cb.port_ready = [](HostId, PlaneId) {};
                  cb.port_state = [](HostId, PlaneId, bool) {};
                  return cb;
                }()};
  TransportConfig transport;
  BaselineHost host{0, events, fabric, transport, 4096};
  ConnSchedule::Conns conns;
  ConnSchedule schedule{2};

  FakeConn& add() {
    conns.push_back(std::make_unique<FakeConn>(host, static_cast<uint32_t>(conns.size()) + 1));
    schedule.add();
    return static_cast<FakeConn&>(*conns.back());
  }
  FakeConn& at(uint32_t i) { return static_cast<FakeConn&>(*conns[i]); }
  std::vector<uint32_t> ready(Instant now, uint32_t from, uint8_t plane = 0) {
    schedule.refresh(now, conns);
    std::vector<uint32_t> out;
    schedule.ready_from(now, PlaneId(plane), from, out);
    return out;
  }
};

TEST(ConnSchedule, ReadyInRoundRobinOrderAndPacedOnesWhenTheirTimeComes) {
  Fixture f;
  for (int i = 0; i < 70; ++i) f.add();  // more than one 64-bit word of ready bits
  f.at(1).ready = Instant{0};
  f.at(3).ready = Instant{0};
  f.at(66).ready = Instant{0};
  f.at(2).ready = Instant{10};  // paced until t = 10
  EXPECT_EQ(f.ready(Instant{0}, 3), (std::vector<uint32_t>{3, 66, 1}));
  EXPECT_EQ(f.ready(Instant{0}, 3, 1), std::vector<uint32_t>{});  // nothing on plane 1
  EXPECT_EQ(f.ready(Instant{9}, 0), (std::vector<uint32_t>{1, 3, 66}));
  EXPECT_EQ(f.ready(Instant{10}, 67), (std::vector<uint32_t>{1, 2, 3, 66}));
  // A change is seen only once the connection is touched.
  f.at(3).ready = Instant::never();
  EXPECT_EQ(f.ready(Instant{10}, 0), (std::vector<uint32_t>{1, 2, 3, 66}));
  f.schedule.touch(3);
  EXPECT_EQ(f.ready(Instant{10}, 0), (std::vector<uint32_t>{1, 2, 66}));
  // Paced again, to a later time: out of the ready set until then.
  f.at(2).ready = Instant{30};
  f.schedule.touch(2);
  EXPECT_EQ(f.ready(Instant{20}, 0), (std::vector<uint32_t>{1, 66}));
  EXPECT_EQ(f.ready(Instant{30}, 0), (std::vector<uint32_t>{1, 2, 66}));
}

TEST(ConnSchedule, EarliestDeadlineAndDueTimersInIndexOrder) {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.add();
  f.at(4).deadline = Instant{5};
  f.at(1).deadline = Instant{5};
  f.at(2).deadline = Instant{7};
  f.schedule.refresh(Instant{0}, f.conns);
  EXPECT_EQ(f.schedule.next_deadline(), Instant{5});
  std::vector<uint32_t> due;
  f.schedule.due(Instant{6}, due);
  EXPECT_EQ(due, (std::vector<uint32_t>{1, 4}));
  // The host runs their timers and touches them; they come back with new deadlines.
  f.at(1).deadline = Instant::never();
  f.at(4).deadline = Instant{9};
  f.schedule.touch(1);
  f.schedule.touch(4);
  f.schedule.refresh(Instant{6}, f.conns);
  EXPECT_EQ(f.schedule.next_deadline(), Instant{7});
  // A connection wanting every timer is due at every timer, due or not, until it stops.
  f.at(3).every = true;
  f.schedule.touch(3);
  f.schedule.refresh(Instant{6}, f.conns);
  due.clear();
  f.schedule.due(Instant{6}, due);
  EXPECT_EQ(due, std::vector<uint32_t>{3});
  f.at(3).every = false;
  f.schedule.touch(3);
  f.schedule.refresh(Instant{6}, f.conns);
  due.clear();
  f.schedule.due(Instant{8}, due);
  EXPECT_EQ(due, std::vector<uint32_t>{2});
  EXPECT_EQ(f.schedule.next_deadline(), Instant{9});
}

}  // namespace
}  // namespace mrc::sim
