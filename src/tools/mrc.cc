// The mrc command-line tool (`mrc --version` prints its version). Subcommands:
//   mrc sim SCENARIO.toml [--seed N] [--sweep N] [--json] [--quiet] [--no-huge-pages] [--report
//   DIR] mrc perf --server | --client ADDRESS [options]   (see tools/perf.h) mrc allreduce-perf
//   (alias coll-perf) [--coll C] [-b -e -f] [--ranks N | --rank R ...]
//                                                   (see tools/coll_perf.h)
//   mrc decode FILE.pcap [--port P] [--json] [--brief] [--limit N]   (see tools/decode.h)
//   mrc run [--devices FILE] [--lib PATH] [--no-sysfs] -- CMD [ARGS]   (see tools/run.h)
// GCC 12 at -O2 reports a false -Wnull-dereference inside std::string as CLI11's parsing is
// inlined into main(); nothing here dereferences a null pointer.
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string_view>

#include "tools/coll_perf.h"
#include "tools/decode.h"
#include "tools/huge_pages.h"
#include "tools/perf.h"
#include "tools/run.h"
#include "tools/sim_cli.h"

namespace {

// `mrc run [options] -- CMD ARGS`: CMD and ARGS are the program's, never parsed here; they go
// to `options.command` and the arguments left for the parser end before "--".
int take_run_command(int argc, char** argv, mrc::tools::RunOptions& options) {
  if (argc < 2 || std::string_view(argv[1]) != "run") return argc;
  for (int i = 2; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      options.command.assign(argv + i + 1, argv + argc);
      return i;
    }
  return argc;
}

int run_main(int argc, char** argv) {
  CLI::App app{"mrc: an open software implementation of MRC (Multipath Reliable Connection)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("mrc ") + MRC_VERSION,
                       "print the version and exit");
  CLI::App* sim = app.add_subcommand(
      "sim", "run a simulation scenario (TOML) on the deterministic fabric simulator");
  mrc::tools::SimOptions sim_options;
  sim->add_option("scenario", sim_options.path,
                  "scenario file (see scenarios/ and docs/SIMULATION.md)")
      ->required()
      ->check(CLI::ExistingFile);
  sim->add_option("--seed", sim_options.seed, "seed (overrides the scenario's)");
  sim->add_option(
      "--sweep", sim_options.sweep,
      "run N seeds starting at the seed; stop at the first failure and print the replay command");
  sim->add_flag("--json", sim_options.json, "print the report as JSON");
  sim->add_flag("--quiet", sim_options.quiet, "no progress output");
  bool no_huge_pages = false;
  sim->add_flag(
      "--no-huge-pages", no_huge_pages,
      "keep the run's heap on 4 KiB pages (by default mrc sim re-executes itself with "
      "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 so malloc builds the run on transparent huge "
      "pages, and moves what is still on 4 KiB pages onto them once built: runs of "
      "hundreds of hosts and payload runs are faster; results are the same either way)");
  sim->add_option("--report", sim_options.report_dir,
                  "write report.json, report.md and (with python3-matplotlib) report.png into this "
                  "directory (one run, not with --sweep)");
  CLI::App* perf =
      app.add_subcommand("perf", "bandwidth and latency over real UDP planes (server and client)");
  mrc::tools::PerfOptions perf_options;
  mrc::tools::add_perf_options(*perf, perf_options);
  CLI::App* coll_perf = app.add_subcommand("allreduce-perf",
                                           "collective bandwidth and correctness over real UDP "
                                           "planes, like nccl-tests (--coll for others)");
  coll_perf->alias("coll-perf");
  mrc::tools::CollPerfOptions coll_perf_options;
  mrc::tools::add_coll_perf_options(*coll_perf, coll_perf_options);
  CLI::App* decode = app.add_subcommand(
      "decode", "the MRC packets of a capture (pcap, pcapng), field by field, ICRC checked");
  mrc::tools::DecodeToolOptions decode_options;
  mrc::tools::add_decode_options(*decode, decode_options);
  CLI::App* run = app.add_subcommand(
      "run",
      "run a program as if mrc's devices were kernel RDMA devices: lib_mrc.so preloaded, the "
      "device configuration, and their /sys/class/infiniband entries (private mount namespace). "
      "Usage: mrc run [--devices FILE] [--lib PATH] [--no-sysfs] -- CMD [ARGS...]");
  mrc::tools::RunOptions run_options;
  mrc::tools::add_run_options(*run, run_options);
  argc = take_run_command(argc, argv, run_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error (unknown option, value out of range, a
    // missing argument) exits 2, as the tools' own configuration errors do.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (sim->parsed()) {
    sim_options.huge_pages = !no_huge_pages;
    if (sim_options.huge_pages) mrc::tools::reexec_with_malloc_huge_pages(argv);
    return mrc::tools::run_sim(sim_options);
  }
  if (perf->parsed()) return mrc::tools::run_perf(perf_options);
  if (coll_perf->parsed()) return mrc::tools::run_coll_perf(coll_perf_options);
  if (decode->parsed()) return mrc::tools::run_decode(decode_options);
  if (run->parsed()) return mrc::tools::run_run(run_options);
  return 0;
}

}  // namespace

// Every tool reports its own errors; what escapes (an allocation that failed, a bug) ends the
// program with a message instead of std::terminate.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mrc: %s\n", e.what());
    return 1;
  }
}
