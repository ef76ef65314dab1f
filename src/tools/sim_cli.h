// `mrc sim`: runs a scenario file (or a sweep of seeds) on the deterministic simulator and
// prints the report as text or JSON, with the command that replays a failing seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mrc::tools {

struct SimOptions {
  std::string path;
  std::optional<uint64_t> seed;
  uint64_t sweep = 0;
  bool json = false;
  bool quiet = false;
  // Once a run is built, move its heap onto transparent huge pages (huge_pages.h).
  bool huge_pages = true;
  // Directory for report.json (everything, with series), report.md (tables) and, when Python's
  // matplotlib is there, report.png. Empty: none.
  std::string report_dir;
};

// Exit status: 0 every run passed its checks, 1 a run failed, 2 the scenario file is invalid
// (or the report directory cannot be written).
int run_sim(const SimOptions& options);

}  // namespace mrc::tools
