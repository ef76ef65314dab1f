// The memory-region table (src/core/memory_region.h): bounds checks that cannot overflow, keys
// and their generations after deregistration, access rights, and protection domains.
#include "core/memory_region.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace mrc {
namespace {

constexpr uint32_t kRemote = kAccessLocalWrite | kAccessRemoteWrite;

class MemoryRegion : public ::testing::Test {
 protected:
  MemoryRegion() : table_(8), buffer_(4096 * 4) {
    pd_ = table_.alloc_pd();
    mr_ = table_.register_region(pd_, buffer_.data() + 4096, 8192, kRemote).value();
  }
  uint64_t start() const { return mr_.address; }
  uint64_t end() const { return mr_.address + mr_.length; }
  MrError remote_error(uint64_t va, uint64_t length) const {
    auto r = table_.lookup_remote(mr_.rkey, pd_, va, length);
    EXPECT_FALSE(r.ok()) << "va offset " << (va - start()) << " length " << length;
    return r.ok() ? MrError::kTableFull : r.error();
  }

  MemoryRegionTable table_;
  std::vector<uint8_t> buffer_;
  uint32_t pd_ = 0;
  MemoryRegionInfo mr_;
};

TEST_F(MemoryRegion, RegistrationReportsTheRegion) {
  EXPECT_EQ(mr_.address, reinterpret_cast<uint64_t>(buffer_.data() + 4096));
  EXPECT_EQ(mr_.length, 8192u);
  EXPECT_EQ(mr_.lkey, mr_.rkey);
  EXPECT_EQ(table_.regions_in_use(), 1u);
}

TEST_F(MemoryRegion, LookupsInsideTheRegionPointAtTheRightBytes) {
  EXPECT_EQ(table_.lookup_remote(mr_.rkey, pd_, start(), 8192).value(), buffer_.data() + 4096);
  EXPECT_EQ(table_.lookup_remote(mr_.rkey, pd_, start() + 100, 1).value(), buffer_.data() + 4196);
  EXPECT_EQ(table_.lookup_remote(mr_.rkey, pd_, end() - 1, 1).value(),
            buffer_.data() + 4096 + 8191);
  EXPECT_EQ(table_.lookup_remote(mr_.rkey, pd_, end(), 0).value(), buffer_.data() + 4096 + 8192);
  EXPECT_EQ(table_.lookup_local(mr_.lkey, pd_, start() + 8, 16).value(), buffer_.data() + 4104);
}

TEST_F(MemoryRegion, BoundsAreCheckedWithoutOverflow) {
  EXPECT_EQ(remote_error(start() - 1, 1), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(start() - 1, 2), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(start(), 8193), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(end() - 1, 2), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(end(), 1), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(end() + 1, 0), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(0, 1), MrError::kOutOfBounds);
  // Ranges whose end wraps around 2^64 must not look small.
  EXPECT_EQ(remote_error(UINT64_MAX, 1), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(UINT64_MAX - 10, 4096), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(0ull - 4096, 4096), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(start() + 1, UINT64_MAX), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(start(), UINT64_MAX), MrError::kOutOfBounds);
  EXPECT_EQ(remote_error(start() + 4096, 0ull - 4096), MrError::kOutOfBounds);
  // Local lookups use the same checks.
  EXPECT_EQ(table_.lookup_local(mr_.lkey, pd_, end() - 1, 2).error(), MrError::kOutOfBounds);
  EXPECT_EQ(table_.lookup_local(mr_.lkey, pd_, UINT64_MAX, 2).error(), MrError::kOutOfBounds);
}

TEST_F(MemoryRegion, RegionAtTheTopOfTheAddressSpace) {
  // A region ending exactly at 2^64: only its address is used, never dereferenced here.
  auto* top = reinterpret_cast<void*>(uintptr_t{0} - 4096);
  const auto r = table_.register_region(pd_, top, 4096, kRemote).value();
  EXPECT_TRUE(table_.lookup_remote(r.rkey, pd_, r.address, 4096).ok());
  EXPECT_TRUE(table_.lookup_remote(r.rkey, pd_, UINT64_MAX, 1).ok());
  EXPECT_EQ(table_.lookup_remote(r.rkey, pd_, UINT64_MAX, 2).error(), MrError::kOutOfBounds);
  EXPECT_EQ(table_.lookup_remote(r.rkey, pd_, r.address - 1, 1).error(), MrError::kOutOfBounds);
}

TEST_F(MemoryRegion, UnknownKeysAreRejected) {
  const uint32_t keys[] = {0,           mr_.rkey + 1, mr_.rkey ^ (1u << 8), (7u << 8) | 1,
                           0xFFFFFFFFu, 8u << 8};
  for (uint32_t key : keys) {
    EXPECT_EQ(table_.lookup_remote(key, pd_, start(), 1).error(), MrError::kUnknownKey) << key;
    EXPECT_EQ(table_.lookup_local(key, pd_, start(), 1).error(), MrError::kUnknownKey) << key;
  }
}

TEST_F(MemoryRegion, StaleKeysStayDeadAfterTheSlotIsReused) {
  const uint32_t old_key = mr_.rkey;
  ASSERT_TRUE(table_.deregister(old_key).ok());
  EXPECT_EQ(table_.regions_in_use(), 0u);
  EXPECT_EQ(table_.lookup_remote(old_key, pd_, start(), 1).error(), MrError::kUnknownKey);
  EXPECT_EQ(table_.deregister(old_key).error(), MrError::kUnknownKey);  // twice
  // The same slot is handed out again, with a new generation.
  const auto again = table_.register_region(pd_, buffer_.data(), 4096, kRemote).value();
  EXPECT_EQ(again.rkey >> 8, old_key >> 8);
  EXPECT_NE(again.rkey, old_key);
  EXPECT_EQ(table_.lookup_remote(old_key, pd_, again.address, 1).error(), MrError::kUnknownKey);
  EXPECT_TRUE(table_.lookup_remote(again.rkey, pd_, again.address, 1).ok());
  // Many cycles: the generation keeps moving.
  uint32_t key = again.rkey;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(table_.deregister(key).ok());
    const uint32_t next = table_.register_region(pd_, buffer_.data(), 4096, kRemote).value().rkey;
    EXPECT_NE(next, key);
    EXPECT_EQ(table_.lookup_remote(key, pd_, reinterpret_cast<uint64_t>(buffer_.data()), 1).error(),
              MrError::kUnknownKey);
    key = next;
  }
}

TEST_F(MemoryRegion, AccessRightsAreEnforcedForRemoteWrites) {
  const auto local_only =
      table_.register_region(pd_, buffer_.data(), 4096, kAccessLocalWrite).value();
  EXPECT_EQ(table_.lookup_remote(local_only.rkey, pd_, local_only.address, 1).error(),
            MrError::kAccessDenied);
  EXPECT_TRUE(table_.lookup_local(local_only.lkey, pd_, local_only.address, 1).ok());
  const auto read_only =
      table_.register_region(pd_, buffer_.data(), 4096, kAccessRemoteRead).value();
  EXPECT_EQ(table_.lookup_remote(read_only.rkey, pd_, read_only.address, 1).error(),
            MrError::kAccessDenied);
}

TEST_F(MemoryRegion, ProtectionDomainsSeparateRegions) {
  const uint32_t other = table_.alloc_pd();
  EXPECT_NE(other, pd_);
  EXPECT_NE(other, 0u);
  EXPECT_EQ(table_.lookup_remote(mr_.rkey, other, start(), 1).error(),
            MrError::kWrongProtectionDomain);
  EXPECT_EQ(table_.lookup_local(mr_.lkey, other, start(), 1).error(),
            MrError::kWrongProtectionDomain);
  // A PD in use cannot be freed; once its regions are gone it can, and then it is invalid.
  EXPECT_FALSE(table_.dealloc_pd(pd_));
  ASSERT_TRUE(table_.deregister(mr_.lkey).ok());
  EXPECT_TRUE(table_.dealloc_pd(pd_));
  EXPECT_FALSE(table_.pd_valid(pd_));
  EXPECT_FALSE(table_.dealloc_pd(pd_));
  EXPECT_EQ(table_.register_region(pd_, buffer_.data(), 16, kRemote).error(),
            MrError::kBadProtectionDomain);
  // PD 0 and never-allocated PDs are never valid.
  EXPECT_FALSE(table_.pd_valid(0));
  EXPECT_FALSE(table_.pd_valid(1000));
  EXPECT_EQ(table_.register_region(0, buffer_.data(), 16, kRemote).error(),
            MrError::kBadProtectionDomain);
  // A freed PD number is reused.
  EXPECT_EQ(table_.alloc_pd(), pd_);
}

TEST_F(MemoryRegion, RegistrationErrors) {
  EXPECT_EQ(table_.register_region(pd_, nullptr, 16, kRemote).error(), MrError::kNullAddress);
  EXPECT_TRUE(table_.register_region(pd_, nullptr, 0, kRemote).ok());  // empty region
  // The table holds 8 regions.
  while (table_.regions_in_use() < 8)
    ASSERT_TRUE(table_.register_region(pd_, buffer_.data(), 16, kRemote).ok());
  EXPECT_EQ(table_.register_region(pd_, buffer_.data(), 16, kRemote).error(), MrError::kTableFull);
  EXPECT_EQ(table_.deregister(0xFFFFFF00u).error(), MrError::kUnknownKey);
}

// The table grows with its registrations; keys come out as from a stack of every slot with
// freed slots on top: freed slots last-freed first, then unused ones in ascending order. Keys
// are (slot << 8 | generation).
TEST(MemoryRegionTable, SlotsComeFreedFirstThenAscendingUpToTheCapacity) {
  MemoryRegionTable table(6);
  const uint32_t pd = table.alloc_pd();
  uint8_t byte = 0;
  auto reg = [&] { return table.register_region(pd, &byte, 1, kAccessRemoteWrite); };
  std::vector<uint32_t> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(reg().value().lkey);
  EXPECT_EQ(keys, (std::vector<uint32_t>{0x001, 0x101, 0x201, 0x301}));
  ASSERT_TRUE(table.deregister(keys[1]).ok());
  ASSERT_TRUE(table.deregister(keys[2]).ok());
  EXPECT_EQ(reg().value().lkey, 0x202u);  // the last freed, next generation
  EXPECT_EQ(reg().value().lkey, 0x102u);
  EXPECT_EQ(reg().value().lkey, 0x401u);  // then the unused ones
  EXPECT_EQ(reg().value().lkey, 0x501u);
  EXPECT_EQ(reg().error(), MrError::kTableFull);
  EXPECT_EQ(table.lookup_remote(0x601, pd, reinterpret_cast<uint64_t>(&byte), 1).error(),
            MrError::kUnknownKey);
  EXPECT_EQ(table.lookup_remote(0x401, pd, reinterpret_cast<uint64_t>(&byte), 1).value(), &byte);
  EXPECT_EQ(table.regions_in_use(), 6u);
}

TEST_F(MemoryRegion, EmptyRegionAcceptsOnlyEmptyRanges) {
  const auto empty = table_.register_region(pd_, buffer_.data(), 0, kRemote).value();
  EXPECT_TRUE(table_.lookup_remote(empty.rkey, pd_, empty.address, 0).ok());
  EXPECT_EQ(table_.lookup_remote(empty.rkey, pd_, empty.address, 1).error(), MrError::kOutOfBounds);
  EXPECT_EQ(table_.lookup_remote(empty.rkey, pd_, empty.address + 1, 0).error(),
            MrError::kOutOfBounds);
}

// place() writes exactly the checked range of a memory region; a virtual region is checked
// alike but has no bytes: nothing is written and a gather finds nothing to read.
TEST_F(MemoryRegion, PlaceWritesMemoryRegionsAndNothingOfVirtualOnes) {
  const std::vector<uint8_t> bytes{1, 2, 3};
  ASSERT_TRUE(table_.place(mr_.rkey, pd_, start() + 10, bytes).ok());
  EXPECT_EQ(buffer_[4096 + 10], 1);
  EXPECT_EQ(buffer_[4096 + 12], 3);
  EXPECT_EQ(buffer_[4096 + 13], 0);
  EXPECT_EQ(table_.place(mr_.rkey, pd_, end() - 2, bytes).error(), MrError::kOutOfBounds);
  EXPECT_EQ(buffer_[4096 + 8190], 0);
  const auto virt =
      table_.register_region(pd_, buffer_.data(), 4096, kRemote, RegionKind::kVirtual).value();
  ASSERT_TRUE(table_.place(virt.rkey, pd_, virt.address + 10, bytes).ok());
  EXPECT_EQ(buffer_[10], 0);
  EXPECT_EQ(table_.place(virt.rkey, pd_, virt.address + 4095, bytes).error(),
            MrError::kOutOfBounds);
  EXPECT_EQ(table_.lookup_local(virt.lkey, pd_, virt.address, 100).value(), nullptr);
  EXPECT_EQ(table_.lookup_local(virt.lkey, pd_, virt.address, 4097).error(), MrError::kOutOfBounds);
}

}  // namespace
}  // namespace mrc
