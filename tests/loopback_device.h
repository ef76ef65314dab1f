// A device configuration over the loopback planes 127.0.0.1 and 127.0.0.2, for the device tests.
#pragma once

#include "io/device.h"

namespace mrc::io {

inline DeviceConfig loopback_config(uint16_t port, uint16_t ev_port_base) {
  DeviceConfig c;
  for (const char* a : {"127.0.0.1", "127.0.0.2"})
    c.planes.push_back(parse_plane_address(a, port).value());
  c.ev_port_base = ev_port_base;
  return c;
}

}  // namespace mrc::io
