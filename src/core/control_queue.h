// A bounded FIFO of control packets (SACK, NACK, endpoint requests and responses) waiting for
// a transmit opportunity on any usable plane. Overflow drops the new packet and is counted: the
// information in a lost SACK is repeated by the next one, and NACKs are an optimisation over
// the timers, so a full queue never stalls a QP.
#pragma once

#include <cstdint>

#include "core/wire/packet.h"
#include "util/bounded_fifo.h"

namespace mrc {

struct ControlItem {
  wire::ControlPacket packet;
  // Preferred plane (e.g. a probe answer on the plane it came in on); -1 = any.
  int plane = -1;
};

using ControlQueue = BoundedFifo<ControlItem>;

}  // namespace mrc
