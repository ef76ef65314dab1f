// The host's port layout (src/host/port_plan.h): process slots and their threads never share a
// receive port or an EV source port, every plane's EV ports lie in its thread's range, and a
// plan past port 65535 is refused naming the setting to lower.
#include "host/port_plan.h"

#include <gtest/gtest.h>

#include <set>

namespace mrc::host {
namespace {

PortPlan plan(size_t planes, uint32_t threads) {
  PortPlan p;
  p.port = 4791;
  p.ev_port_base = 20000;
  p.planes = planes;
  p.threads = threads;
  p.port_setting = "MRC_PORT";
  p.ev_port_setting = "MRC_EV_PORT_BASE";
  return p;
}

// Thread t of `slot`: its receive port and EV ports are new to `receive` and `ev`, and each
// plane's EV ports are its own share of the thread's range.
void check_thread(const PortPlan& p, uint32_t slot, uint32_t t, std::set<uint32_t>& receive,
                  std::set<uint32_t>& ev) {
  EXPECT_TRUE(receive.insert(p.receive_port(slot, t)).second)
      << "planes " << p.planes << " slot " << slot << " thread " << t;
  const PortSpan range = p.ev_ports(slot, t);
  EXPECT_EQ(range.count, mrc::ev_source_ports(p.planes));
  for (uint32_t port = range.first; port <= range.last(); ++port)
    ASSERT_TRUE(ev.insert(port).second) << "EV port " << port << " twice";
  for (size_t plane = 0; plane < p.planes; ++plane) {
    const PortSpan mine = p.plane_ev_ports(range.first, plane);
    EXPECT_GE(mine.first, range.first);
    EXPECT_LE(mine.last(), range.last());
    EXPECT_EQ(mine.count, mrc::ev_source_ports_per_plane(p.planes));
  }
}

TEST(PortPlan, SlotsAndThreadsNeverShareAPort) {
  for (size_t planes : {1u, 2u, 4u, 8u}) {
    for (uint32_t threads : {1u, 3u}) {
      const PortPlan p = plan(planes, threads);
      std::set<uint32_t> receive;
      std::set<uint32_t> ev;
      for (uint32_t slot = 0; slot < 4; ++slot) {
        for (uint32_t t = 0; t < threads; ++t) check_thread(p, slot, t, receive, ev);
        // A slot's spans cover exactly its threads' ports.
        EXPECT_EQ(p.receive_ports(slot).first, p.receive_port(slot, 0));
        EXPECT_EQ(p.receive_ports(slot).last(), p.receive_port(slot, threads - 1));
        EXPECT_EQ(p.slot_ev_ports(slot).last(), p.ev_ports(slot, threads - 1).last());
      }
    }
  }
}

TEST(PortPlan, APlanPastTheLastPortIsRefusedNamingTheSetting) {
  PortPlan p = plan(4, 16);
  EXPECT_TRUE(p.check(0).ok());
  p.ev_port_base = 64000;
  auto r = p.check(0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("MRC_EV_PORT_BASE"), std::string::npos) << r.error().message;
  EXPECT_FALSE(p.fits(0));
  p.ev_port_base = 20000;
  p.port = 65530;
  r = p.check(0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("MRC_PORT"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("65530..65545"), std::string::npos) << r.error().message;
  p.port = 0;
  EXPECT_FALSE(p.check(0).ok());
  // A later slot can run out where the first fits: the provider's search for free ports stops.
  p = plan(4, 1);
  p.ev_port_base = 60000;
  EXPECT_TRUE(p.fits(0));
  uint32_t slot = 0;
  while (p.fits(slot)) ++slot;
  EXPECT_GT(slot, 0u);
  EXPECT_GT(p.slot_ev_ports(slot).last(), 65535u);
}

}  // namespace
}  // namespace mrc::host
