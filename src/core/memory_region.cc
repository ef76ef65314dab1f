// Memory-region table: slots up to a fixed capacity; a key is (slot << 8 | generation) so that a
// key of a deregistered region is rejected even after its slot is reused (until the 8-bit
// generation wraps). Local and remote keys are equal, as in soft-RoCE. Bounds checks are
// written so that no addition can overflow: a hostile VA near 2^64 must fail, not wrap.
#include "core/memory_region.h"

#include <algorithm>
#include <cstring>

#include "mrc/assert.hpp"

namespace mrc {

const char* to_string(MrError e) {
  switch (e) {
    case MrError::kTableFull:
      return "memory region table is full";
    case MrError::kBadProtectionDomain:
      return "protection domain does not exist";
    case MrError::kNullAddress:
      return "region address is null";
    case MrError::kUnknownKey:
      return "no registered region has this key";
    case MrError::kWrongProtectionDomain:
      return "region belongs to another protection domain";
    case MrError::kAccessDenied:
      return "region does not allow this access";
    case MrError::kOutOfBounds:
      return "range is outside the registered region";
  }
  return "unknown";
}

// The table grows with its registrations, up to `capacity` (an endpoint of a simulated fabric
// registers two regions of its 4096: a table allocated whole cost 144 KiB per host, zeroed, and
// spread every host's engine state 144 KiB apart). Slots are handed out as from a stack holding
// [capacity - 1 .. 0] with freed slots pushed on top: the freed ones first (last freed first),
// then the never-used ones in ascending order.
MemoryRegionTable::MemoryRegionTable(uint32_t capacity) : capacity_(capacity) {
  MRC_ASSERT(capacity > 0 && capacity < (1u << 24));
}

std::optional<uint32_t> MemoryRegionTable::take_slot() {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  if (regions_.size() >= capacity_) return std::nullopt;
  if (regions_.size() == regions_.capacity()) {
    regions_.reserve(std::min<size_t>(capacity_, std::max<size_t>(4, 2 * regions_.size())));
  }
  regions_.emplace_back();
  return static_cast<uint32_t>(regions_.size() - 1);
}

uint32_t MemoryRegionTable::alloc_pd() {
  for (uint32_t i = 1; i < pd_refcount_.size(); ++i) {
    if (pd_refcount_[i] == UINT32_MAX) {
      pd_refcount_[i] = 0;
      return i;
    }
  }
  if (pd_refcount_.empty()) pd_refcount_.push_back(UINT32_MAX);  // pd 0 is never valid
  pd_refcount_.push_back(0);
  return static_cast<uint32_t>(pd_refcount_.size() - 1);
}

bool MemoryRegionTable::pd_valid(uint32_t pd) const {
  return pd != 0 && pd < pd_refcount_.size() && pd_refcount_[pd] != UINT32_MAX;
}

bool MemoryRegionTable::dealloc_pd(uint32_t pd) {
  if (!pd_valid(pd) || pd_refcount_[pd] != 0) return false;
  pd_refcount_[pd] = UINT32_MAX;
  return true;
}

Result<MemoryRegionInfo, MrError> MemoryRegionTable::register_region(uint32_t pd, void* address,
                                                                     uint64_t length,
                                                                     uint32_t access,
                                                                     RegionKind kind) {
  if (!pd_valid(pd)) return Err{MrError::kBadProtectionDomain};
  if (address == nullptr && length > 0) return Err{MrError::kNullAddress};
  const std::optional<uint32_t> taken = take_slot();
  if (!taken) return Err{MrError::kTableFull};
  const uint32_t slot = *taken;
  Region& r = regions_[slot];
  r.base = static_cast<uint8_t*>(address);
  r.length = length;
  r.pd = pd;
  r.access = access;
  r.kind = kind;
  r.generation = (r.generation + 1) & 0xFF;
  r.live = true;
  ++in_use_;
  ++pd_refcount_[pd];
  MRC_ASSERT(in_use_ <= regions_.size() && pd_refcount_[pd] != UINT32_MAX);
  const uint32_t key = (slot << 8) | r.generation;
  return MemoryRegionInfo{key, key, reinterpret_cast<uint64_t>(address), length};
}

Result<Ok, MrError> MemoryRegionTable::deregister(uint32_t lkey) {
  const uint32_t slot = lkey >> 8;
  if (slot >= regions_.size()) return Err{MrError::kUnknownKey};
  Region& r = regions_[slot];
  if (!r.live || r.generation != (lkey & 0xFF)) return Err{MrError::kUnknownKey};
  // A live region counts once in its PD's references and in the table's.
  MRC_ASSERT(in_use_ > 0 && pd_refcount_[r.pd] > 0 && pd_refcount_[r.pd] != UINT32_MAX);
  r.live = false;
  --in_use_;
  --pd_refcount_[r.pd];
  free_slots_.push_back(slot);
  return Ok{};
}

const MemoryRegionTable::Region* MemoryRegionTable::find(uint32_t key, uint32_t pd, uint64_t va,
                                                         uint64_t length, MrError* error) const {
  const uint32_t slot = key >> 8;
  if (slot >= regions_.size() || !regions_[slot].live ||
      regions_[slot].generation != (key & 0xFF)) {
    *error = MrError::kUnknownKey;
    return nullptr;
  }
  const Region& r = regions_[slot];
  if (r.pd != pd) {
    *error = MrError::kWrongProtectionDomain;
    return nullptr;
  }
  const uint64_t start = reinterpret_cast<uint64_t>(r.base);
  // Overflow-safe containment of [va, va+length) in [start, start+r.length).
  if (va < start || length > r.length || va - start > r.length - length) {
    *error = MrError::kOutOfBounds;
    return nullptr;
  }
  return &r;
}

Result<uint8_t*, MrError> MemoryRegionTable::lookup_remote(uint32_t rkey, uint32_t pd, uint64_t va,
                                                           uint64_t length) const {
  MrError error{};
  const Region* r = find(rkey, pd, va, length, &error);
  if (r == nullptr) return Err{error};
  if ((r->access & kAccessRemoteWrite) == 0) return Err{MrError::kAccessDenied};
  if (r->kind == RegionKind::kVirtual) return static_cast<uint8_t*>(nullptr);
  // Remote bytes land inside the registered region (find() checked it; debug builds check
  // again here, the only code between a peer's packet and the application's memory).
  const uint64_t start = reinterpret_cast<uint64_t>(r->base);
  MRC_ASSERT(r->live && r->pd == pd && va >= start && length <= r->length &&
             va - start <= r->length - length);
  return r->base + (va - start);
}

Result<Ok, MrError> MemoryRegionTable::place(uint32_t rkey, uint32_t pd, uint64_t va,
                                             std::span<const uint8_t> bytes) const {
  auto at = lookup_remote(rkey, pd, va, bytes.size());
  if (!at.ok()) return Err{at.error()};
  if (at.value() != nullptr && !bytes.empty()) std::memcpy(at.value(), bytes.data(), bytes.size());
  return Ok{};
}

Result<const uint8_t*, MrError> MemoryRegionTable::lookup_local(uint32_t lkey, uint32_t pd,
                                                                uint64_t address,
                                                                uint64_t length) const {
  MrError error{};
  const Region* r = find(lkey, pd, address, length, &error);
  if (r == nullptr) return Err{error};
  if (r->kind == RegionKind::kVirtual) return static_cast<const uint8_t*>(nullptr);
  // As for remote access: the bytes gathered lie inside the region find() checked.
  const uint64_t start = reinterpret_cast<uint64_t>(r->base);
  MRC_ASSERT(r->live && address >= start && length <= r->length &&
             address - start <= r->length - length);
  return r->base + (address - start);
}

}  // namespace mrc
