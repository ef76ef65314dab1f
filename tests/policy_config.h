// An EV set configuration for path-policy tests: `planes` planes, `active` EVs over them, four
// backups per plane, a floor of one EV.
#pragma once

#include "core/ev_set.h"

namespace mrc {

inline EvSetConfig policy_config(PathPolicyKind kind, int planes = 2, uint16_t active = 16) {
  EvSetConfig c;
  c.planes = planes;
  c.active_count = active;
  c.backup_per_plane = 4;
  c.min_active = 1;
  c.path_policy = kind;
  return c;
}

}  // namespace mrc
