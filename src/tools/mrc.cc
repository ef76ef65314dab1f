// The mrc command-line tool. Subcommands:
//   mrc sim SCENARIO.toml [--seed N] [--sweep N] [--json] [--quiet]
//   mrc perf --server | --client ADDRESS [options]   (see tools/perf.h)
//   mrc allreduce-perf (alias coll-perf) [--coll C] [-b -e -f] [--ranks N | --rank R ...]
//                                                   (see tools/coll_perf.h)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "sim/run.h"
#include "sim/scenario.h"
#include "tools/coll_perf.h"
#include "tools/perf.h"

namespace {

using mrc::sim::RunReport;

nlohmann::json to_json(const RunReport& r, const std::string& name) {
  nlohmann::json planes = nlohmann::json::array();
  for (size_t p = 0; p < r.planes.size(); ++p) {
    planes.push_back({{"plane", p},
                      {"data_bytes_sent", r.planes[p].data_bytes_sent},
                      {"retransmits", r.planes[p].retransmits},
                      {"fabric_bytes_delivered", r.planes[p].fabric_bytes_delivered}});
  }
  const auto& t = r.ev_transitions;
  return {{"scenario", name},
          {"ok", r.ok},
          {"failure", r.failure},
          {"seed", r.seed},
          {"bytes_written", r.bytes_written},
          {"bytes_verified", r.bytes_verified},
          {"bytes_placed", r.bytes_placed},
          {"ops_posted", r.ops_posted},
          {"ops_completed", r.ops_completed},
          {"ops_failed", r.ops_failed},
          {"wimm_delivered", r.wimm_delivered},
          {"sim_time_ns", r.sim_time_ns},
          {"completion_time_ns", r.completion_time_ns},
          {"events", r.events},
          {"retransmits", r.retransmits},
          {"timeouts", r.timeouts},
          {"trims", r.trims},
          {"ecn_marks", r.ecn_marks},
          {"nacks", r.nacks},
          {"fabric_drops", r.fabric_drops},
          {"refused_packets", r.hostile_drops},
          {"refused_by_reason", r.refused_by_reason},
          {"stale_sacks", r.stale_sacks},
          {"planes", planes},
          {"ev_transitions",
           {{"to_skip", t.to_skip}, {"to_assumed_bad", t.to_assumed_bad}, {"revived", t.revived},
            {"to_denied", t.to_denied}, {"replaced", t.replaced}, {"regenerated", t.regenerated},
            {"floor_held", t.floor_held}}}};
}

void print_text(const RunReport& r, const std::string& name, double wall_s) {
  std::printf("scenario %s, seed %llu: %s\n", name.c_str(), static_cast<unsigned long long>(r.seed),
              r.ok ? "OK" : ("FAILED: " + r.failure).c_str());
  const double t_ms = static_cast<double>(r.completion_time_ns > 0 ? r.completion_time_ns : r.sim_time_ns) / 1e6;
  std::printf("  operations   %llu posted, %llu completed, %llu failed; %llu write-with-imm delivered\n",
              static_cast<unsigned long long>(r.ops_posted), static_cast<unsigned long long>(r.ops_completed),
              static_cast<unsigned long long>(r.ops_failed), static_cast<unsigned long long>(r.wimm_delivered));
  std::printf("  bytes        %llu written, %llu placed, %llu verified equal to source\n",
              static_cast<unsigned long long>(r.bytes_written), static_cast<unsigned long long>(r.bytes_placed),
              static_cast<unsigned long long>(r.bytes_verified));
  std::printf("  time         %.3f ms simulated (%.1f Gbit/s goodput), %llu events in %.2f s wall\n", t_ms,
              t_ms > 0 ? static_cast<double>(r.bytes_verified) * 8 / (t_ms * 1e6) : 0.0,
              static_cast<unsigned long long>(r.events), wall_s);
  std::printf("  recovery     %llu retransmits, %llu timeouts, %llu trims, %llu ECN marks, %llu NACKs, %llu fabric drops, %llu refused\n",
              static_cast<unsigned long long>(r.retransmits), static_cast<unsigned long long>(r.timeouts),
              static_cast<unsigned long long>(r.trims), static_cast<unsigned long long>(r.ecn_marks),
              static_cast<unsigned long long>(r.nacks), static_cast<unsigned long long>(r.fabric_drops),
              static_cast<unsigned long long>(r.hostile_drops));
  if (!r.refused_by_reason.empty()) {
    std::printf("  refused     ");
    for (const auto& [reason, n] : r.refused_by_reason) std::printf(" %s=%llu", reason.c_str(), static_cast<unsigned long long>(n));
    std::printf("\n");
  }
  const auto& t = r.ev_transitions;
  std::printf("  EV states    %llu->SKIP, %llu->ASSUMED_BAD, %llu replaced, %llu revived, %llu regenerated, %llu held by floor\n",
              static_cast<unsigned long long>(t.to_skip), static_cast<unsigned long long>(t.to_assumed_bad),
              static_cast<unsigned long long>(t.replaced), static_cast<unsigned long long>(t.revived),
              static_cast<unsigned long long>(t.regenerated), static_cast<unsigned long long>(t.floor_held));
  for (size_t p = 0; p < r.planes.size(); ++p) {
    std::printf("  plane %zu      %.2f MB data sent, %llu retransmits\n", p,
                static_cast<double>(r.planes[p].data_bytes_sent) / 1e6,
                static_cast<unsigned long long>(r.planes[p].retransmits));
  }
  if (r.ok && r.bytes_verified == r.bytes_written)
    std::printf("  every byte arrived exactly once and equals its source\n");
}

int run_sim(const std::string& path, std::optional<uint64_t> seed, uint64_t sweep, bool json, bool quiet) {
  mrc::sim::Scenario scenario;
  std::string error;
  if (!mrc::sim::load_scenario(path, scenario, error)) {
    std::fprintf(stderr, "mrc sim: %s\n", error.c_str());
    return 2;
  }
  if (seed) scenario.seed = *seed;
  const uint64_t first = scenario.seed;
  const uint64_t runs = sweep > 0 ? sweep : 1;
  nlohmann::json results = nlohmann::json::array();
  for (uint64_t i = 0; i < runs; ++i) {
    scenario.seed = first + i;
    const auto start = std::chrono::steady_clock::now();
    mrc::sim::RunOptions options;
    if (!quiet && !json && runs == 1) {
      options.progress_interval = mrc::Duration::from_us(500);
      options.on_progress = [](const RunReport& r) {
        std::fprintf(stderr, "\r  t=%8.3f ms  placed %10.2f MB", static_cast<double>(r.sim_time_ns) / 1e6,
                     static_cast<double>(r.bytes_placed) / 1e6);
      };
    }
    const RunReport r = mrc::sim::run_scenario(scenario, options);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.on_progress) std::fprintf(stderr, "\n");
    if (json) results.push_back(to_json(r, scenario.name));
    else if (runs == 1 || !r.ok) print_text(r, scenario.name, wall);
    else if (!quiet && (i + 1) % 100 == 0) std::fprintf(stderr, "  %llu/%llu seeds ok\n",
                                                        static_cast<unsigned long long>(i + 1), static_cast<unsigned long long>(runs));
    if (!r.ok) {
      if (json) std::cout << (runs == 1 ? results[0] : results).dump(2) << "\n";
      std::fprintf(stderr, "mrc sim: seed %llu failed; replay with: mrc sim %s --seed %llu\n",
                   static_cast<unsigned long long>(r.seed), path.c_str(), static_cast<unsigned long long>(r.seed));
      return 1;
    }
  }
  if (json) std::cout << (runs == 1 ? results[0] : results).dump(2) << "\n";
  else if (runs > 1) std::printf("sweep: %llu seeds from %llu, all ok\n", static_cast<unsigned long long>(runs),
                                 static_cast<unsigned long long>(first));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mrc: an open software implementation of MRC (Multipath Reliable Connection)"};
  app.require_subcommand(1);
  CLI::App* sim = app.add_subcommand("sim", "run a simulation scenario (TOML) on the deterministic fabric simulator");
  std::string path;
  std::optional<uint64_t> seed;
  uint64_t sweep = 0;
  bool json = false, quiet = false;
  sim->add_option("scenario", path, "scenario file (see scenarios/ and docs/SIMULATION.md)")->required()->check(CLI::ExistingFile);
  sim->add_option("--seed", seed, "seed (overrides the scenario's)");
  sim->add_option("--sweep", sweep, "run N seeds starting at the seed; stop at the first failure and print the replay command");
  sim->add_flag("--json", json, "print the report as JSON");
  sim->add_flag("--quiet", quiet, "no progress output");
  CLI::App* perf = app.add_subcommand("perf", "bandwidth and latency over real UDP planes (server and client)");
  mrc::tools::PerfOptions perf_options;
  mrc::tools::add_perf_options(*perf, perf_options);
  CLI::App* coll_perf = app.add_subcommand(
      "allreduce-perf", "collective bandwidth and correctness over real UDP planes, like nccl-tests (--coll for others)");
  coll_perf->alias("coll-perf");
  mrc::tools::CollPerfOptions coll_perf_options;
  mrc::tools::add_coll_perf_options(*coll_perf, coll_perf_options);
  CLI11_PARSE(app, argc, argv);
  if (sim->parsed()) return run_sim(path, seed, sweep, json, quiet);
  if (perf->parsed()) return mrc::tools::run_perf(perf_options);
  if (coll_perf->parsed()) return mrc::tools::run_coll_perf(coll_perf_options);
  return 0;
}
