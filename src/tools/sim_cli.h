// `mrc sim`: runs a scenario file (or a sweep of seeds) on the deterministic simulator and
// prints the report as text or JSON, with the command that replays a failing seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mrc::tools {

// Exit status: 0 every run passed its checks, 1 a run failed, 2 the scenario file is invalid.
int run_sim(const std::string& path, std::optional<uint64_t> seed, uint64_t sweep, bool json, bool quiet);

}  // namespace mrc::tools
