// Where a host's UDP ports go: the one formula for receive ports and EV source ports.
//
// Several mrc processes (ranks, libfabric domains, torch process groups) share a host's plane
// addresses, and each runs one or more engine threads (shards, host/host.h). Every
// thread needs a UDP receive port per plane and a range of EV source ports: in port mode an
// EV *is* a UDP source port (core/ev_set.h), and the datapath binds one socket per EV.
// The plan lays them out from two bases:
//   process slot k (a local rank, a group's slot, or the k-th try of a process that looks for
//   free ports), thread t, plane p:
//     receive port      port + k * threads + t
//     EV source ports   ev_port_base + (k * threads + t) * ev_source_ports(planes)
//                       + p * ev_source_ports_per_plane(planes), that many
// so slots never overlap when each process uses the same bases and its own slot. Each front
// door used to repeat this arithmetic with its own bounds checks; they now ask the plan, and a
// plan that runs past port 65535 is refused with one message naming the setting to lower.
#pragma once

#include <cstdint>
#include <string>

#include "mrc/datapath.hpp"
#include "mrc/error.hpp"
#include "mrc/result.hpp"

namespace mrc::host {

// A run of ports [first, first + count).
struct PortSpan {
  uint32_t first = 0;
  uint32_t count = 0;
  uint32_t last() const { return first + count - 1; }
};

struct PortPlan {
  uint32_t port = 4791;           // receive port of slot 0, thread 0
  uint32_t ev_port_base = 50000;  // first EV source port of slot 0, thread 0
  size_t planes = 1;
  uint32_t threads = 1;  // engine threads per process slot
  // What a user changes to move the ports (a flag, a variable or a field), for messages.
  std::string port_setting = "port";
  std::string ev_port_setting = "ev_port_base";

  // EV source ports of one thread (all planes) and of one plane of it.
  uint32_t per_thread_ev_ports() const { return mrc::ev_source_ports(planes); }
  uint32_t per_plane_ev_ports() const { return mrc::ev_source_ports_per_plane(planes); }

  // Thread `t` of process slot `slot`: its receive port and EV source ports (all planes).
  uint32_t receive_port(uint32_t slot, uint32_t t = 0) const { return port + slot * threads + t; }
  PortSpan ev_ports(uint32_t slot, uint32_t t = 0) const {
    return {ev_port_base + (slot * threads + t) * per_thread_ev_ports(), per_thread_ev_ports()};
  }
  // Plane `plane`'s EV source ports within a thread's range that starts at `first`.
  PortSpan plane_ev_ports(uint32_t first, size_t plane) const {
    return {first + static_cast<uint32_t>(plane) * per_plane_ev_ports(), per_plane_ev_ports()};
  }
  // Every port of the slot's threads: receive ports, then EV source ports.
  PortSpan receive_ports(uint32_t slot) const { return {receive_port(slot), threads}; }
  PortSpan slot_ev_ports(uint32_t slot) const {
    return {ev_ports(slot).first, threads * per_thread_ev_ports()};
  }

  // Whether every port of the slot lies in 1..65535.
  bool fits(uint32_t slot) const {
    return port >= 1 && ev_port_base >= 1 && receive_ports(slot).last() <= 65535 &&
           slot_ev_ports(slot).last() <= 65535;
  }
  // The same, or an error naming the ports and the setting to lower.
  Result<Ok, Error> check(uint32_t slot = 0) const {
    if (port < 1 || port > 65535 || ev_port_base < 1 || ev_port_base > 65535)
      return fail(Errc::kInvalidArgument,
                  port_setting + " and " + ev_port_setting + " must be UDP ports, 1..65535");
    const PortSpan rx = receive_ports(slot);
    if (rx.last() > 65535)
      return fail(Errc::kInvalidArgument, "UDP receive ports " + std::to_string(rx.first) + ".." +
                                              std::to_string(rx.last()) + " go past 65535: lower " +
                                              port_setting + " or use fewer threads");
    const PortSpan ev = slot_ev_ports(slot);
    if (ev.last() > 65535)
      return fail(Errc::kInvalidArgument, "EV source ports " + std::to_string(ev.first) + ".." +
                                              std::to_string(ev.last()) + " go past 65535: lower " +
                                              ev_port_setting + " or use fewer threads");
    return Ok{};
  }
};

}  // namespace mrc::host
