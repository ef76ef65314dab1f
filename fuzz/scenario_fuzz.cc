// Fuzz target for the scenario loader: any text, as a scenario file, either loads or is refused
// with a message that names its source; nothing aborts, throws out of the loader, or reads out
// of bounds (ASan). A scenario it accepts has the ranges the simulator relies on.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/scenario.h"

#define SCENARIO_FUZZ_CHECK(cond)                                       \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "scenario_fuzz: check failed: %s\n", #cond); \
      std::abort();                                                     \
    }                                                                   \
  } while (false)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mrc::sim::Scenario s;
  std::string error;
  if (!mrc::sim::load_scenario_text(text, "fuzz.toml", s, error)) {
    SCENARIO_FUZZ_CHECK(error.rfind("fuzz.toml", 0) == 0);
    return 0;
  }
  SCENARIO_FUZZ_CHECK(s.fabric.planes >= 1 && s.fabric.hosts >= 2 && s.fabric.hosts_per_leaf >= 1);
  SCENARIO_FUZZ_CHECK(s.time_limit.ns > 0 && s.heal_at.ns >= 0);
  for (const mrc::sim::ScheduledFault& f : s.faults) SCENARIO_FUZZ_CHECK(f.at.ns >= 0);
  return 0;
}
