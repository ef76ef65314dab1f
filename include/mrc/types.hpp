// Strong types for the quantities a transport confuses at its peril: packet sequence numbers
// (24-bit, modular), entropy values, planes, queue-pair numbers, time and durations in
// nanoseconds. Each is a distinct type so that a PSN cannot be passed where a QPN is expected
// and a duration cannot be added to a PSN. Time is always an argument to the engine (sans-IO):
// Instant is nanoseconds since an arbitrary epoch chosen by the caller (the simulator's virtual
// clock or the datapath's monotonic clock).
#pragma once

#include <compare>
#include <cstdint>

namespace mrc {

// A 24-bit packet sequence number with wrap-around (serial-number) arithmetic.
struct Psn {
  static constexpr uint32_t kBits = 24;
  static constexpr uint32_t kMask = (1u << kBits) - 1;
  static constexpr uint32_t kHalf = 1u << (kBits - 1);

  uint32_t value = 0;

  constexpr Psn() = default;
  constexpr explicit Psn(uint32_t v) : value(v & kMask) {}

  constexpr Psn operator+(uint32_t n) const { return Psn(value + n); }
  constexpr Psn operator-(uint32_t n) const { return Psn(value - n); }
  constexpr Psn& operator+=(uint32_t n) { return *this = *this + n; }
  // Signed distance from `from` to this PSN, in (-2^23, 2^23].
  constexpr int32_t since(Psn from) const {
    const uint32_t d = (value - from.value) & kMask;
    return d > kHalf ? static_cast<int32_t>(d) - static_cast<int32_t>(1u << kBits)
                     : static_cast<int32_t>(d);
  }
  constexpr bool before(Psn other) const { return other.since(*this) > 0; }
  constexpr bool operator==(const Psn&) const = default;
};

// Generic strong integer: a distinct type per Tag, explicit construction, comparisons only.
template <typename Tag, typename T>
struct StrongId {
  T value{};
  constexpr StrongId() = default;
  constexpr explicit StrongId(T v) : value(v) {}
  constexpr auto operator<=>(const StrongId&) const = default;
};

struct EvTag {};
struct PlaneTag {};
struct QpnTag {};
struct HostTag {};
// A 32-bit entropy value: selects the path a packet takes through its plane.
using Ev = StrongId<EvTag, uint32_t>;
// Index of a plane (one NIC port per plane), 0..kMaxPlanes-1.
using PlaneId = StrongId<PlaneTag, uint8_t>;
// One entry of an explicit EV list (OCP EV mode EXP): the controller names the path and its
// plane. An EV listed twice is used twice as often.
struct ExplicitEv {
  PlaneId plane{0};
  Ev ev{0};
  constexpr bool operator==(const ExplicitEv&) const = default;
};
// A 24-bit queue-pair number.
using Qpn = StrongId<QpnTag, uint32_t>;

inline constexpr int kMaxPlanes = 16;
inline constexpr uint32_t kQpnMask = 0xFFFFFF;

struct Duration {
  int64_t ns = 0;
  static constexpr Duration from_us(int64_t us) { return Duration{us * 1000}; }
  static constexpr Duration from_ms(int64_t ms) { return Duration{ms * 1000000}; }
  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return Duration{ns + o.ns}; }
  constexpr Duration operator-(Duration o) const { return Duration{ns - o.ns}; }
  constexpr Duration operator*(int64_t k) const { return Duration{ns * k}; }
};

struct Instant {
  int64_t ns = 0;
  static constexpr Instant never() { return Instant{INT64_MAX}; }
  constexpr auto operator<=>(const Instant&) const = default;
  constexpr Instant operator+(Duration d) const {
    return ns == INT64_MAX ? *this : Instant{ns + d.ns};
  }
  constexpr Duration operator-(Instant o) const { return Duration{ns - o.ns}; }
  constexpr bool is_never() const { return ns == INT64_MAX; }
};

}  // namespace mrc
