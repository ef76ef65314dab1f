// `mrc sim` (see sim_cli.h): report formatting (text and JSON) and the seed-sweep loop.
// Collective workloads also get per-iteration times with algorithm and bus bandwidth (as
// nccl-tests defines them: busbw = algbw x 2(N-1)/N for a ring all-reduce), and every run
// reports its speed: events per wall-second and simulated Gbit per wall-second.
#include "tools/sim_cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/run.h"
#include "sim/scenario.h"
#include "tools/huge_pages.h"

namespace mrc::tools {
namespace {

using sim::GroupReport;
using sim::RunReport;

using ull = unsigned long long;

struct RunContext {
  std::string name;
  uint32_t ranks = 0;  // the job's ranks: busbw's N
  sim::Pattern pattern = sim::Pattern::kPairs;
  double wall_s = 0;
  double setup_wall_s = 0;     // building fabric, hosts, QPs and workload, before the first event
  size_t huge_page_bytes = 0;  // of the heap moved onto huge pages once built (--no-huge-pages: 0)
  double events_per_s(const RunReport& r) const {
    return wall_s > 0 ? static_cast<double>(r.events) / wall_s : 0.0;
  }
  // Events per wall-second of the event loop alone (the setup excluded).
  double loop_events_per_s(const RunReport& r) const {
    return wall_s > setup_wall_s ? static_cast<double>(r.events) / (wall_s - setup_wall_s) : 0.0;
  }
};

double group_ms(const GroupReport& g) {
  return g.end_ns < 0 || g.start_ns < 0 ? -1 : static_cast<double>(g.end_ns - g.start_ns) / 1e6;
}

// algbw and busbw in Gbit/s for one ring all-reduce iteration (-1 if it never finished).
std::pair<double, double> bandwidths(const RunReport& r, const GroupReport& g, uint32_t hosts) {
  const double ms = group_ms(g);
  if (ms <= 0 || r.group_bytes == 0) return {-1, -1};
  const double algbw = static_cast<double>(r.group_bytes) * 8 / (ms * 1e6);
  return {algbw, algbw * 2.0 * (hosts - 1) / hosts};
}

// goodput / line rate; -1 when either is unknown (a run or group that never ended).
double fraction_of_line_rate(double goodput_gbit_per_s, double line_rate_gbit_per_s) {
  return goodput_gbit_per_s < 0 || line_rate_gbit_per_s <= 0
             ? -1
             : goodput_gbit_per_s / line_rate_gbit_per_s;
}

nlohmann::json groups_json(const RunReport& r, const RunContext& c) {
  nlohmann::json out = nlohmann::json::array();
  for (const GroupReport& g : r.groups) {
    nlohmann::json j = {{"name", g.name},
                        {"start_ns", g.start_ns},
                        {"end_ns", g.end_ns},
                        {"bytes", g.bytes},
                        {"duration_ms", group_ms(g)},
                        {"goodput_gbit_per_s", g.goodput_gbit_per_s},
                        {"line_rate_gbit_per_s", g.line_rate_gbit_per_s},
                        {"fraction_of_line_rate",
                         fraction_of_line_rate(g.goodput_gbit_per_s, g.line_rate_gbit_per_s)},
                        {"overlaps_previous", g.overlaps_previous}};
    if (c.pattern == sim::Pattern::kRingAllreduce) {
      const auto [alg, bus] = bandwidths(r, g, c.ranks);
      j["algbw_gbit_per_s"] = alg;
      j["busbw_gbit_per_s"] = bus;
    }
    out.push_back(j);
  }
  return out;
}

nlohmann::json planes_json(const RunReport& r) {
  nlohmann::json planes = nlohmann::json::array();
  for (size_t p = 0; p < r.planes.size(); ++p) {
    planes.push_back({{"plane", p},
                      {"data_bytes_sent", r.planes[p].data_bytes_sent},
                      {"retransmits", r.planes[p].retransmits},
                      {"fabric_bytes_delivered", r.planes[p].fabric_bytes_delivered}});
  }
  return planes;
}

nlohmann::json baseline_json(const sim::BaselineReport& b) {
  return {{"cnps", b.cnps},
          {"rate_cuts", b.rate_cuts},
          {"duplicates", b.duplicates},
          {"out_of_order_dropped", b.out_of_order_dropped},
          {"fast_retransmits", b.fast_retransmits},
          {"reinjected", b.reinjected},
          {"control_dropped", b.control_dropped}};
}

nlohmann::json ev_transitions_json(const EvTransitions& t) {
  return {{"to_skip", t.to_skip},      {"to_assumed_bad", t.to_assumed_bad},
          {"revived", t.revived},      {"to_denied", t.to_denied},
          {"replaced", t.replaced},    {"regenerated", t.regenerated},
          {"floor_held", t.floor_held}};
}

nlohmann::json to_json(const RunReport& r, const RunContext& c) {
  return {{"scenario", c.name},
          {"ok", r.ok},
          {"failure", r.failure},
          {"seed", r.seed},
          {"transport", r.transport},
          {"baseline", baseline_json(r.baseline)},
          {"pfc",
           {{"pauses", r.pfc_pauses},
            {"paused_ns", r.pfc_paused_ns},
            {"headroom_overruns", r.pfc_headroom_overruns}}},
          {"bytes_written", r.bytes_written},
          {"bytes_verified", r.bytes_verified},
          {"payload", r.payload},
          {"icrc_offload", r.icrc_offload},
          {"move_payload", r.move_payload},
          {"bytes_placed", r.bytes_placed},
          {"ops_posted", r.ops_posted},
          {"ops_completed", r.ops_completed},
          {"ops_failed", r.ops_failed},
          {"wimm_delivered", r.wimm_delivered},
          {"sim_time_ns", r.sim_time_ns},
          {"completion_time_ns", r.completion_time_ns},
          {"bytes_delivered", r.bytes_delivered},
          {"goodput_gbit_per_s", r.goodput_gbit_per_s},
          {"line_rate_gbit_per_s", r.line_rate_gbit_per_s},
          {"fraction_of_line_rate",
           fraction_of_line_rate(r.goodput_gbit_per_s, r.line_rate_gbit_per_s)},
          {"events", r.events},
          {"wall_s", c.wall_s},
          {"events_per_wall_s", c.events_per_s(r)},
          {"setup_wall_s", c.setup_wall_s},
          {"loop_events_per_wall_s", c.loop_events_per_s(r)},
          {"huge_page_bytes", c.huge_page_bytes},
          {"retransmits", r.retransmits},
          {"timeouts", r.timeouts},
          {"trims", r.trims},
          {"ecn_marks", r.ecn_marks},
          {"nacks", r.nacks},
          {"fabric_drops", r.fabric_drops},
          {"fabric_drops_control", r.fabric_drops_control},
          {"fabric_drops_by_cause", r.fabric_drops_by_cause},
          {"refused_packets", r.hostile_drops},
          {"refused_by_reason", r.refused_by_reason},
          {"stale_sacks", r.stale_sacks},
          {"losses_by_cause", r.losses_by_cause},
          {"planes", planes_json(r)},
          {"fct_ns", {{"p50", r.fct_p50_ns}, {"p99", r.fct_p99_ns}, {"max", r.fct_max_ns}}},
          {"groups", groups_json(r, c)},
          {"ev_transitions", ev_transitions_json(r.ev_transitions)}};
}

void print_groups(const RunReport& r, const RunContext& c) {
  if (r.groups.empty()) return;
  const bool ring = c.pattern == sim::Pattern::kRingAllreduce;
  std::vector<double> ms;
  for (const GroupReport& g : r.groups) {
    if (group_ms(g) >= 0) ms.push_back(group_ms(g));
    if (r.groups.size() > 8 && &g != &r.groups.front() && &g != &r.groups.back()) continue;
    const double fraction = fraction_of_line_rate(g.goodput_gbit_per_s, g.line_rate_gbit_per_s);
    const char* overlap = g.overlaps_previous ? " (overlaps the one before)" : "";
    if (ring) {
      const auto [alg, bus] = bandwidths(r, g, c.ranks);
      std::printf("  %-12s %.3f ms, algbw %.1f Gbit/s, busbw %.1f Gbit/s, %.3f of line rate%s\n",
                  g.name.c_str(), group_ms(g), alg, bus, fraction, overlap);
    } else {
      std::printf("  %-12s %.3f ms for %.2f MB, %.3f of line rate%s\n", g.name.c_str(), group_ms(g),
                  static_cast<double>(g.bytes) / 1e6, fraction, overlap);
    }
  }
  const auto overlapping = std::count_if(r.groups.begin(), r.groups.end(),
                                         [](const GroupReport& g) { return g.overlaps_previous; });
  if (overlapping > 0)
    std::printf(
        "  note         %lld of %zu groups started before the one before ended: their windows "
        "overlap, so per-group bandwidths share time\n",
        static_cast<long long>(overlapping), r.groups.size());
  if (ms.size() < 2) return;
  std::sort(ms.begin(), ms.end());
  std::printf("  per group    p50 %.3f ms, p99 %.3f ms, max %.3f ms over %zu\n", ms[ms.size() / 2],
              ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], ms.back(), ms.size());
}

void print_counts(const char* label, const std::map<std::string, uint64_t>& counts) {
  if (counts.empty()) return;
  std::printf("%s", label);
  for (const auto& [name, n] : counts) std::printf(" %s=%llu", name.c_str(), static_cast<ull>(n));
  std::printf("\n");
}

// How the run carried payload bytes and who computed the ICRCs (Scenario::payload,
// move_payload, icrc_offload).
std::string modes(const RunReport& r) {
  const char* payload = r.payload        ? "payload in per-flow buffers, every byte compared"
                        : r.move_payload ? "payload-free (shared buffers, counted)"
                                         : "payload-free, no payload bytes moved (counted)";
  return std::string(payload) + "; ICRC " +
         (r.icrc_offload ? "offloaded to the simulated NICs" : "in the engines");
}

// Loss and recovery: counters, drops and losses by cause, baseline and PFC counters, EV states.
void print_recovery(const RunReport& r) {
  std::printf(
      "  recovery     %llu retransmits, %llu timeouts, %llu trims, %llu ECN marks, %llu NACKs, "
      "%llu fabric drops (%llu of them control), %llu refused\n",
      static_cast<ull>(r.retransmits), static_cast<ull>(r.timeouts), static_cast<ull>(r.trims),
      static_cast<ull>(r.ecn_marks), static_cast<ull>(r.nacks), static_cast<ull>(r.fabric_drops),
      static_cast<ull>(r.fabric_drops_control), static_cast<ull>(r.hostile_drops));
  print_counts("  fabric drops", r.fabric_drops_by_cause);
  print_counts("  refused     ", r.refused_by_reason);
  print_counts("  losses      ", r.losses_by_cause);
  const auto& b = r.baseline;
  if (r.transport != "mrc")
    std::printf(
        "  baseline     %llu CNPs, %llu rate cuts, %llu duplicates, %llu out-of-order discarded, "
        "%llu fast retransmits, %llu reinjected\n",
        static_cast<ull>(b.cnps), static_cast<ull>(b.rate_cuts), static_cast<ull>(b.duplicates),
        static_cast<ull>(b.out_of_order_dropped), static_cast<ull>(b.fast_retransmits),
        static_cast<ull>(b.reinjected));
  if (r.pfc_pauses > 0)
    std::printf(
        "  PFC          %llu pauses, %.3f ms of paused link-time, %llu packets beyond headroom\n",
        static_cast<ull>(r.pfc_pauses), static_cast<double>(r.pfc_paused_ns) / 1e6,
        static_cast<ull>(r.pfc_headroom_overruns));
  const auto& t = r.ev_transitions;
  std::printf(
      "  EV states    %llu->SKIP, %llu->ASSUMED_BAD, %llu replaced, %llu revived, %llu "
      "regenerated, %llu held by floor\n",
      static_cast<ull>(t.to_skip), static_cast<ull>(t.to_assumed_bad), static_cast<ull>(t.replaced),
      static_cast<ull>(t.revived), static_cast<ull>(t.regenerated), static_cast<ull>(t.floor_held));
}

void print_text(const RunReport& r, const RunContext& c) {
  std::printf("scenario %s, seed %llu, transport %s: %s\n", c.name.c_str(),
              static_cast<ull>(r.seed), r.transport.c_str(),
              r.ok ? "OK" : ("FAILED: " + r.failure).c_str());
  const double t_ms =
      static_cast<double>(r.completion_time_ns > 0 ? r.completion_time_ns : r.sim_time_ns) / 1e6;
  std::printf(
      "  operations   %llu posted, %llu completed, %llu failed; %llu write-with-imm delivered\n",
      static_cast<ull>(r.ops_posted), static_cast<ull>(r.ops_completed),
      static_cast<ull>(r.ops_failed), static_cast<ull>(r.wimm_delivered));
  std::printf("  bytes        %llu written, %llu placed, %llu verified %s\n",
              static_cast<ull>(r.bytes_written), static_cast<ull>(r.bytes_placed),
              static_cast<ull>(r.bytes_verified), r.payload ? "equal to source" : "by count");
  std::printf("  modes        %s\n", modes(r).c_str());
  std::printf(
      "  time         %.3f ms simulated: %.1f Gbit/s goodput, %.3f of the %.0f Gbit/s line rate\n",
      t_ms, r.goodput_gbit_per_s,
      fraction_of_line_rate(r.goodput_gbit_per_s, r.line_rate_gbit_per_s), r.line_rate_gbit_per_s);
  std::printf(
      "  speed        %llu events in %.2f s wall: %.2f M events/s, %.1f simulated Gbit per "
      "wall-second\n",
      static_cast<ull>(r.events), c.wall_s, c.events_per_s(r) / 1e6,
      c.wall_s > 0 ? static_cast<double>(r.bytes_verified) * 8 / 1e9 / c.wall_s : 0.0);
  std::printf(
      "               setup %.2f s, then the event loop %.2f M events/s (%.0f MiB of heap on huge "
      "pages)\n",
      c.setup_wall_s, c.loop_events_per_s(r) / 1e6,
      static_cast<double>(c.huge_page_bytes) / (1 << 20));
  if (r.fct_p50_ns >= 0)
    std::printf("  transfers    completion time p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                static_cast<double>(r.fct_p50_ns) / 1e6, static_cast<double>(r.fct_p99_ns) / 1e6,
                static_cast<double>(r.fct_max_ns) / 1e6);
  print_groups(r, c);
  print_recovery(r);
  for (size_t p = 0; p < r.planes.size(); ++p) {
    std::printf("  plane %zu      %.2f MB data sent, %llu retransmits\n", p,
                static_cast<double>(r.planes[p].data_bytes_sent) / 1e6,
                static_cast<ull>(r.planes[p].retransmits));
  }
  if (r.ok && r.bytes_verified == r.bytes_written) {
    std::printf(
        r.payload ? "  every byte arrived exactly once and equals its source\n"
        : r.move_payload
            ? "  every flow placed exactly its bytes once; the shared scratch equals the pattern\n"
            : "  every flow placed exactly its bytes once (counted: no payload bytes moved)\n");
  }
}

// Progress on stderr: a line rewritten in place on a terminal, else a new line every 2 s of wall
// time (logs stay readable).
sim::RunOptions progress_options() {
  sim::RunOptions options;
  options.progress_interval = Duration::from_us(500);
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto last =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  options.on_progress = [tty, last](const RunReport& r) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty && now - *last < std::chrono::seconds(2)) return;
    *last = now;
    std::fprintf(
        stderr, tty ? "\r  t=%8.3f ms  placed %10.2f MB" : "  t=%8.3f ms  placed %10.2f MB\n",
        static_cast<double>(r.sim_time_ns) / 1e6, static_cast<double>(r.bytes_placed) / 1e6);
  };
  return options;
}

// Everything in to_json plus the series a plot needs.
nlohmann::json full_json(const RunReport& r, const RunContext& c, const sim::Scenario& sc) {
  nlohmann::json j = to_json(r, c);
  nlohmann::json t = nlohmann::json::array(), placed = nlohmann::json::array();
  for (const auto& [time_ns, bytes] : r.progress) t.push_back(time_ns), placed.push_back(bytes);
  j["series"] = {{"t_ns", t}, {"placed_bytes", placed}};
  j["fct_all_ns"] = r.fct_ns;
  nlohmann::json links = nlohmann::json::array();
  for (const sim::LinkReport& l : r.links) {
    links.push_back({{"name", l.name},
                     {"plane", l.plane},
                     {"class", l.link_class},
                     {"bytes_sent", l.bytes_sent},
                     {"drops", l.drops},
                     {"ecn_marked", l.ecn_marked},
                     {"trimmed", l.trimmed},
                     {"utilization", l.utilization}});
  }
  j["links"] = links;
  nlohmann::json faults = nlohmann::json::array();
  for (const sim::FaultMark& f : r.faults) faults.push_back({{"at_ns", f.at_ns}, {"what", f.what}});
  j["faults"] = faults;
  j["fabric"] = {
      {"topology", sc.fabric.topology == sim::TopologyKind::kFatTree ? "fat_tree" : "leaf_spine"},
      {"planes", sc.fabric.planes},
      {"hosts", sc.fabric.hosts},
      {"host_link_gbps", sc.fabric.host_link.rate_gbps}};
  j["workload"] = sim::to_string(sc.workload.pattern);
  return j;
}

void write_markdown(const RunReport& r, const RunContext& c, std::FILE* out) {
  std::fprintf(out, "# %s, seed %llu: %s\n\n", c.name.c_str(), static_cast<ull>(r.seed),
               r.ok ? "OK" : r.failure.c_str());
  std::fprintf(
      out,
      "| | |\n|---|---|\n| bytes written / verified | %llu / %llu |\n| completion | %.3f ms "
      "simulated |\n"
      "| transfers p50 / p99 / max | %.3f / %.3f / %.3f ms |\n| retransmits, timeouts, trims, ECN "
      "marks | %llu, %llu, %llu, %llu |\n"
      "| goodput | %.1f Gbit/s, %.3f of the %.0f Gbit/s line rate |\n"
      "| speed | %.2f M events/s (the event loop %.2f M events/s after %.2f s of setup) |\n"
      "| modes | %s |\n\n",
      static_cast<ull>(r.bytes_written), static_cast<ull>(r.bytes_verified),
      static_cast<double>(r.completion_time_ns) / 1e6, static_cast<double>(r.fct_p50_ns) / 1e6,
      static_cast<double>(r.fct_p99_ns) / 1e6, static_cast<double>(r.fct_max_ns) / 1e6,
      static_cast<ull>(r.retransmits), static_cast<ull>(r.timeouts), static_cast<ull>(r.trims),
      static_cast<ull>(r.ecn_marks), r.goodput_gbit_per_s,
      fraction_of_line_rate(r.goodput_gbit_per_s, r.line_rate_gbit_per_s), r.line_rate_gbit_per_s,
      c.events_per_s(r) / 1e6, c.loop_events_per_s(r) / 1e6, c.setup_wall_s, modes(r).c_str());
  if (!r.groups.empty()) {
    std::fprintf(out,
                 "| group | ms | goodput Gbit/s | of line rate | algbw Gbit/s | busbw Gbit/s | "
                 "overlaps the one before |\n|---|---:|---:|---:|---:|---:|---|\n");
    for (const GroupReport& g : r.groups) {
      const auto [alg, bus] = bandwidths(r, g, c.ranks);
      std::fprintf(out, "| %s | %.3f | %.1f | %.3f | %.1f | %.1f | %s |\n", g.name.c_str(),
                   group_ms(g), g.goodput_gbit_per_s,
                   fraction_of_line_rate(g.goodput_gbit_per_s, g.line_rate_gbit_per_s), alg, bus,
                   g.overlaps_previous ? "yes" : "no");
    }
    std::fprintf(out, "\n");
  }
  std::vector<const sim::LinkReport*> busiest;
  for (const sim::LinkReport& l : r.links) busiest.push_back(&l);
  std::sort(busiest.begin(), busiest.end(),
            [](auto* a, auto* b) { return a->utilization > b->utilization; });
  std::fprintf(
      out,
      "| busiest links | utilisation | drops | ECN marks | trims |\n|---|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < std::min<size_t>(10, busiest.size()); ++i) {
    const sim::LinkReport& l = *busiest[i];
    std::fprintf(out, "| %s | %.3f | %llu | %llu | %llu |\n", l.name.c_str(), l.utilization,
                 static_cast<ull>(l.drops), static_cast<ull>(l.ecn_marked),
                 static_cast<ull>(l.trimmed));
  }
}

// report.json, report.md, and report.png by scripts/sim_plot.py when matplotlib is present.
bool write_report(const std::string& dir, const RunReport& r, const RunContext& c,
                  const sim::Scenario& sc) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string json_path = dir + "/report.json";
  std::FILE* json = std::fopen(json_path.c_str(), "w");
  std::FILE* md = std::fopen((dir + "/report.md").c_str(), "w");
  if (json == nullptr || md == nullptr) {
    std::fprintf(stderr, "mrc sim: cannot write into %s: %s\n", dir.c_str(), std::strerror(errno));
    if (json) std::fclose(json);
    if (md) std::fclose(md);
    return false;
  }
  std::fputs(full_json(r, c, sc).dump(1).c_str(), json);
  std::fclose(json);
  write_markdown(r, c, md);
  std::fclose(md);
  const std::string script = std::string(MRC_SOURCE_DIR) + "/scripts/sim_plot.py";
  const std::string command =
      "/usr/bin/python3 '" + script + "' '" + json_path + "' '" + dir + "/report.png' 2>&1";
  const int status = std::system(command.c_str());
  if (status != 0)
    std::fprintf(stderr, "mrc sim: no plot (%s needs /usr/bin/python3 with matplotlib)\n",
                 script.c_str());
  std::fprintf(stderr, "mrc sim: report in %s\n", dir.c_str());
  return true;
}

}  // namespace

int run_sim(const SimOptions& o) {
  sim::Scenario scenario;
  std::string error;
  if (!sim::load_scenario(o.path, scenario, error)) {
    std::fprintf(stderr, "mrc sim: %s\n", error.c_str());
    return 2;
  }
  if (o.seed) scenario.seed = *o.seed;
  if (!o.report_dir.empty() && o.sweep > 1) {
    std::fprintf(stderr,
                 "mrc sim: --report describes one run; use it with --seed S instead of --sweep\n");
    return 2;
  }
  const uint64_t first = scenario.seed;
  const uint64_t runs = o.sweep > 0 ? o.sweep : 1;
  const bool tty = isatty(STDERR_FILENO) != 0;
  nlohmann::json results = nlohmann::json::array();
  for (uint64_t i = 0; i < runs; ++i) {
    scenario.seed = first + i;
    const auto start = std::chrono::steady_clock::now();
    sim::RunOptions options =
        !o.quiet && !o.json && runs == 1 ? progress_options() : sim::RunOptions{};
    double setup_s = 0;
    size_t huge_bytes = 0;
    options.on_built = [&] {
      if (o.huge_pages) huge_bytes = back_heap_with_huge_pages().bytes_collapsed;
      setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const RunReport r = sim::run_scenario(scenario, options);
    RunContext c{scenario.name,
                 sim::job_ranks(scenario.workload, scenario.fabric.hosts),
                 scenario.workload.pattern,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                 setup_s,
                 huge_bytes};
    if (options.on_progress && tty) std::fprintf(stderr, "\n");
    if (o.json)
      results.push_back(to_json(r, c));
    else if (runs == 1 || !r.ok)
      print_text(r, c);
    else if (!o.quiet && (i + 1) % 100 == 0)
      std::fprintf(stderr, "  %llu/%llu seeds ok\n", static_cast<ull>(i) + 1,
                   static_cast<ull>(runs));
    if (!o.report_dir.empty() && runs == 1 && !write_report(o.report_dir, r, c, scenario)) return 2;
    if (!r.ok) {
      if (o.json) std::cout << (runs == 1 ? results[0] : results).dump(2) << "\n";
      std::fprintf(stderr, "mrc sim: seed %llu failed; replay with: mrc sim %s --seed %llu\n",
                   static_cast<ull>(r.seed), o.path.c_str(), static_cast<ull>(r.seed));
      return 1;
    }
  }
  if (o.json)
    std::cout << (runs == 1 ? results[0] : results).dump(2) << "\n";
  else if (runs > 1)
    std::printf("sweep: %llu seeds from %llu, all ok\n", static_cast<ull>(runs),
                static_cast<ull>(first));
  return 0;
}

}  // namespace mrc::tools
