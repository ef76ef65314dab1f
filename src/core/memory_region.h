// Registered memory regions and protection domains.
//
// A region is a span of caller-owned memory with a local key (for the sender's gather lists)
// and a remote key (carried in every data packet's RETH). The responder places a packet's
// payload only after lookup_remote() has checked, overflow-safely, that the key is live, that
// the region belongs to the QP's protection domain, that it allows remote write, and that every
// byte [va, va+length) lies inside it. Keys carry a generation so a stale key of a deregistered
// region never matches a new one. The table has a fixed capacity.
//
// A region is of one of two kinds. Memory: the caller's bytes, read by gathers and written by
// placements. Virtual: an address range with no bytes behind it, for simulations at fabric
// scale (the protocol never reads payload bytes): every check is the same, but a gather from it
// yields no bytes (the datagram's payload stays as its buffer held it) and a placement into it
// writes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mrc/result.hpp"
#include "mrc/verbs.hpp"

namespace mrc {

enum class RegionKind : uint8_t { kMemory, kVirtual };

class MemoryRegionTable {
 public:
  explicit MemoryRegionTable(uint32_t capacity = 4096);

  uint32_t alloc_pd();
  bool pd_valid(uint32_t pd) const;
  // Frees a protection domain; fails if any region still uses it.
  bool dealloc_pd(uint32_t pd);

  Result<MemoryRegionInfo, MrError> register_region(uint32_t pd, void* address, uint64_t length,
                                                    uint32_t access,
                                                    RegionKind kind = RegionKind::kMemory);
  Result<Ok, MrError> deregister(uint32_t lkey);

  // Pointer to [va, va+length) for a remote write with `rkey` into protection domain `pd`
  // (key, domain, access and bounds checked); null for a virtual region.
  Result<uint8_t*, MrError> lookup_remote(uint32_t rkey, uint32_t pd, uint64_t va,
                                          uint64_t length) const;
  // A remote write of `bytes` at `va`: checked as lookup_remote, then written (a virtual region:
  // nothing written).
  Result<Ok, MrError> place(uint32_t rkey, uint32_t pd, uint64_t va,
                            std::span<const uint8_t> bytes) const;
  // Pointer to [address, address+length) for a local gather with `lkey`; null for a virtual
  // region (no bytes to gather).
  Result<const uint8_t*, MrError> lookup_local(uint32_t lkey, uint32_t pd, uint64_t address,
                                               uint64_t length) const;

  uint32_t regions_in_use() const { return in_use_; }

 private:
  struct Region {
    uint8_t* base = nullptr;
    uint64_t length = 0;
    uint32_t pd = 0;
    uint32_t access = 0;
    uint32_t generation = 0;
    bool live = false;
    RegionKind kind = RegionKind::kMemory;
  };
  const Region* find(uint32_t key, uint32_t pd, uint64_t va, uint64_t length, MrError* error) const;

  // A free slot (see the constructor), or none if all `capacity_` are in use.
  std::optional<uint32_t> take_slot();

  uint32_t capacity_;
  std::vector<Region> regions_;        // every slot ever used
  std::vector<uint32_t> free_slots_;   // deregistered slots, reused last-freed first
  std::vector<uint32_t> pd_refcount_;  // index = pd; UINT32_MAX = not allocated
  uint32_t in_use_ = 0;
};

}  // namespace mrc
