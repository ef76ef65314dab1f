// util/schedule.h answers what a scan over every item would: which items may send on a lane now,
// in round-robin order from a position (items waiting for a time once it has come), the
// earliest deadline, and which items' deadlines have come, in index order; and it reads an item
// again only after it was touched.
#include "util/schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace mrc {
namespace {

struct Item {
  Instant deadline = Instant::never();
  Instant ready = Instant::never();  // on lane 0; never on the others
};

struct Fixture {
  std::vector<Item> items;
  Schedule schedule{2};
  int reads = 0;

  Item& add() {
    items.emplace_back();
    schedule.add();
    return items.back();
  }
  void refresh() {
    schedule.refresh([this](uint32_t index, std::span<Instant> ready_at) {
      ++reads;
      ready_at[0] = items[index].ready;
      ready_at[1] = Instant::never();
      return items[index].deadline;
    });
  }
  std::vector<uint32_t> ready(Instant now, uint32_t from, uint32_t lane = 0) {
    refresh();
    schedule.promote(now);
    std::vector<uint32_t> out;
    schedule.ready_in_turn(lane, from, out);
    return out;
  }
};

TEST(Schedule, ReadyInRoundRobinOrderAndWaitingOnesWhenTheirTimeComes) {
  Fixture f;
  for (int i = 0; i < 70; ++i) f.add();  // more than one 64-bit word of ready bits
  f.items[1].ready = Schedule::kReadyNow;
  f.items[3].ready = Schedule::kReadyNow;
  f.items[66].ready = Schedule::kReadyNow;
  f.items[2].ready = Instant{10};  // not before t = 10
  EXPECT_EQ(f.ready(Instant{0}, 3), (std::vector<uint32_t>{3, 66, 1}));
  EXPECT_EQ(f.ready(Instant{0}, 3, 1), std::vector<uint32_t>{});  // nothing on lane 1
  EXPECT_EQ(f.ready(Instant{9}, 0), (std::vector<uint32_t>{1, 3, 66}));
  EXPECT_EQ(f.ready(Instant{10}, 67), (std::vector<uint32_t>{1, 2, 3, 66}));
  EXPECT_EQ(f.schedule.next_ready(0, 4, 66), 66u);
  EXPECT_EQ(f.schedule.next_ready(0, 4, 60), 60u);  // none in [4, 60)
  // A change is seen only once the item is touched, and only touched items are read again.
  f.items[3].ready = Instant::never();
  const int reads = f.reads;
  EXPECT_EQ(f.ready(Instant{10}, 0), (std::vector<uint32_t>{1, 2, 3, 66}));
  EXPECT_EQ(f.reads, reads);
  f.schedule.touch(3);
  f.schedule.touch(3);
  EXPECT_EQ(f.ready(Instant{10}, 0), (std::vector<uint32_t>{1, 2, 66}));
  EXPECT_EQ(f.reads, reads + 1);
  // Waiting again, for a later time: not ready until then.
  f.items[2].ready = Instant{30};
  f.schedule.touch(2);
  EXPECT_EQ(f.ready(Instant{20}, 0), (std::vector<uint32_t>{1, 66}));
  EXPECT_EQ(f.ready(Instant{30}, 0), (std::vector<uint32_t>{1, 2, 66}));
}

TEST(Schedule, EarliestDeadlineAndDueItemsInIndexOrder) {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.add();
  EXPECT_EQ(f.schedule.next_deadline(), Instant::never());
  f.items[4].deadline = Instant{5};
  f.items[1].deadline = Instant{5};
  f.items[2].deadline = Instant{7};
  f.refresh();
  EXPECT_EQ(f.schedule.next_deadline(), Instant{5});
  std::vector<uint32_t> due;
  f.schedule.due(Instant{6}, due);
  EXPECT_EQ(due, (std::vector<uint32_t>{1, 4}));
  // Due items are read again: they come back with their new deadlines.
  f.items[1].deadline = Instant::never();
  f.items[4].deadline = Instant{9};
  f.refresh();
  EXPECT_EQ(f.schedule.next_deadline(), Instant{7});
  due.clear();
  f.schedule.due(Instant{8}, due);
  EXPECT_EQ(due, std::vector<uint32_t>{2});
  f.items[2].deadline = Instant::never();
  f.refresh();
  EXPECT_EQ(f.schedule.next_deadline(), Instant{9});
}

}  // namespace
}  // namespace mrc
