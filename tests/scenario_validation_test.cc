// Scenario validation: a corpus of bad scenarios, one per rule, each refused at load time with
// the message a user sees (the field, its value and what is allowed; the line and column of a
// TOML syntax error), and the shipped scenarios all loading.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario.h"

namespace mrc::sim {
namespace {

struct BadScenario {
  const char* text;
  const char* message;  // the whole message after "<source>: "
};

// clang-format off
const std::vector<BadScenario> kCorpus = {
  // Syntax and shape.
  {"[fabric]\nplanes = \n", "2:10: Error while parsing key-value pair: expected value, saw '\\n'"},
  {"[fabirc]\n", "fabirc: unknown key"},
  {"fabric = 3\n", "fabric: must be a table ([fabric])"},
  {"[fabric]\nplanes = 4 \xC2\xA7\n", "2:12: a non-ASCII character outside a comment (keys and values are ASCII)"},
  {"name = \"pl\xC3\xA4ne # x\"\n", "1:11: a non-ASCII character outside a comment (keys and values are ASCII)"},
  {"fault = 3\n", "fault: must be an array of tables ([[fault]])"},
  {"[workload]\npattern = 3\n", "workload.pattern: must be a string"},
  {"[fabric]\nplanes = 2.5\n", "fabric.planes: must be an integer"},
  {"[fabric]\necn_last_hop = 1\n", "fabric.ecn_last_hop: must be true or false"},
  {"seed = -1\n", "seed = -1: must be 0..18446744073709551615"},
  // Top level.
  {"time_limit_ms = 0\n", "time_limit_ms = 0: must be > 0 and at most 1e+12"},
  {"heal_at_us = -1\n", "heal_at_us = -1: must be >= 0 and at most 1e+12"},
  {"move_payload = false\n", "move_payload = false needs payload = false (a payload run compares every byte)"},
  // Fabric.
  {"[fabric]\nplanes = 0\n", "fabric.planes = 0: must be 1..16"},
  {"[fabric]\nhosts = 1\n", "fabric.hosts = 1: must be 2..1048576"},
  {"[fabric]\nhosts = 4294967297\n", "fabric.hosts = 4294967297: must be 0..4294967295"},
  {"[fabric]\nspines = 0\n", "fabric.spines = 0: must be 1..4096"},
  {"[fabric]\nhosts_per_leaf = 0\n", "fabric.hosts_per_leaf = 0: must be 1..4096"},
  {"[fabric]\ntopology = \"torus\"\n", "fabric.topology = \"torus\": must be \"leaf_spine\" or \"fat_tree\""},
  {"[fabric]\nrouting = \"random\"\n", "fabric.routing = \"random\": must be \"ecmp\", \"spray\" or \"source\""},
  {"[fabric]\necmp_hash = \"vendor\"\n", "fabric.ecmp_hash = \"vendor\": must be \"per_switch\" or \"same\""},
  {"[fabric]\ntopology = \"fat_tree\"\nk = 3\n", "fabric.k = 3: must be even, 2..64"},
  {"[fabric]\ntopology = \"fat_tree\"\nk = 4\nhosts = 17\n", "fabric.hosts: a k=4 FatTree has 16 host ports"},
  {"[fabric.host_link]\nrate_gbps = 0\n", "fabric.host_link.rate_gbps = 0: must be > 0 and at most 1e6"},
  {"[fabric.fabric_link]\nqueue_kib = 0\n", "fabric.fabric_link.queue_kib = 0: must be 1..1048576"},
  {"[fabric.core_link]\ntrim_kib = 2000000\n", "fabric.core_link.trim_kib = 2e+06: must be 0..1048576"},
  {"[fabric.fabric_link]\necn_kib = 64\necn_max_kib = 32\n", "fabric.fabric_link.ecn_max_kib = 32: must be above ecn_kib (64), or 0 for step marking"},
  {"[fabric.host_link]\necn_max_probability = 0\n", "fabric.host_link.ecn_max_probability = 0: must be in (0, 1]"},
  {"[fabric.host_link]\noverflow = \"spill\"\n", "fabric.host_link.overflow = \"spill\": must be \"trim\" or \"drop\""},
  {"[fabric.host_link]\npropagation_ns = 2000000000\n", "fabric.host_link.propagation_ns = 2e+09: must be 0..1e9"},
  // Queue pairs.
  {"[qp]\nev_count = 130\n", "qp: ev_count = 130 must be a multiple of the number of planes (4) so that every plane gets the same number of EVs"},
  {"[qp]\ntimeout = 300\n", "qp.timeout = 300: must be 0..255"},
  {"[qp]\nwindow_kib = 0\n", "qp.window_kib = 0: must be 1..4194304"},
  {"[qp]\ncc = \"bbr\"\n", "qp.cc = \"bbr\": must be \"nscc\", \"aimd\" or \"fixed\""},
  {"[qp]\neta = 0.0\n", "qp.eta = 0: must be in (0, 16] (the proportional gain)"},
  {"[qp]\nfi = -1.0\n", "qp.fi = -1: must be in (0, 64] (MTUs per RTT)"},
  {"[qp]\nincast_penalty = 128\n", "qp.incast_penalty = 128: must be 0..127 (the rcv_cwnd_pen an incast receiver sends; 0: none)"},
  {"[qp]\nincast_window_us = 2000\n", "qp.incast_window_us = 2000: must be 0..1000"},
  {"[qp]\ntarget_delay_us = -1\n", "qp.target_delay_us = -1: must be 0..1e6 (0: half the base RTT)"},
  {"[qp]\ninitial_window_kib = 0\n", "qp.initial_window_kib = 0: must be 1..window_kib (4096)"},
  {"[qp]\nqa_gate = 64\n", "qp.qa_gate = 64: must be 0..63 (a shift of the maximum window; 0: quick adapt on every lossy round)"},
  {"[qp]\nack_delay_us = 5000\n", "qp.ack_delay_us = 5000: must be 0..1000"},
  {"[qp]\npath_policy = \"ecmp\"\n", "qp.path_policy = \"ecmp\": must be \"rules\", \"oblivious\", \"reps\", \"health\", \"p2c\", \"hedge\" or \"oracle\""},
  {"[qp]\np2c_shift = 9\n", "qp.p2c_shift = 9: must be 1..7"},
  {"[qp]\nsecure = \"aes\"\n", "qp.secure = \"aes\": must be \"off\", \"auth\" or \"encrypt\""},
  {"[qp]\nsecure = \"auth\"\nrekey_packets = 0\n", "qp.rekey_packets = 0: must be 1..2^40"},
  {"[qp]\nsecure = \"encrypt\"\nmtu = 9000\n", "qp: mtu_bytes (secure mode) = 9000 is out of range: must be in [256, 8976]"},
  {"[qp]\np2c_mark_weight = 2.0\n", "qp.p2c_mark_weight = 2: must be 0..1"},
  {"[qp]\np2c_loss_weight = -0.5\n", "qp.p2c_loss_weight = -0.5: must be 0..1"},
  {"[qp]\nhedge_loss_penalty = 300.0\n", "qp.hedge_loss_penalty = 300: must be 0..255 (sixteenths of a halving)"},
  {"[qp]\nhedge_floor = 0.0\n", "qp.hedge_floor = 0: must be (0, 1] (a weight)"},
  {"[qp]\nwatchdog_fall = 1.0\n", "qp.watchdog_fall = 1: must be [0, 1) (a share of goodput)"},
  {"[qp]\nwatchdog_epoch_rtts = 0\n", "qp.watchdog_epoch_rtts = 0: must be 1..1000"},
  {"[qp]\npath_policy = \"oracle\"\npath_watchdog = true\n", "qp.path_watchdog = true: must be false with the oracle (it is the upper bound, not a policy to guard)"},
  {"[qp]\nhealth_ev_shift = 0\n", "qp.health_ev_shift = 0: must be 1..7"},
  {"[qp]\nhealth_ratio = -1.0\n", "qp.health_ratio = -1: must be 0..1000"},
  {"[qp]\nhealth_floor = 1.5\n", "qp.health_floor = 1.5: must be 0..1 (a loss share)"},
  {"[qp]\nev_burst = 0\n", "qp.ev_burst = 0: must be 1..64 (packets per EV burst; 1: every packet on the next EV)"},
  // Transport.
  {"[transport]\nkind = \"tcp\"\n", "transport.kind = \"tcp\": must be \"mrc\", \"roce\", \"roce_pfc\" or \"mptcp\""},
  {"[transport]\ndcqcn_g = 2.0\n", "transport.dcqcn_g = 2: must be in (0, 1]"},
  {"[transport]\ndcqcn_alpha_us = 0\n", "transport.dcqcn_alpha_us = 0: must be > 0 and at most 1e+12"},
  {"[transport]\ndcqcn_byte_counter_kib = 0\n", "transport.dcqcn_byte_counter_kib = 0: must be 1..2^40"},
  {"[transport]\ndcqcn_min_gbps = 0\n", "transport.dcqcn_min_gbps = 0: must be > 0 and at most 1e6"},
  {"[transport]\ncnp_interval_us = -5\n", "transport.cnp_interval_us = -5: must be >= 0 and at most 1e+12"},
  {"[transport]\nsubflows = 0\n", "transport.subflows = 0: must be 1..64"},
  {"[transport]\ninitial_window = 20\nmax_window = 10\n", "transport.max_window = 10: must be >= initial_window (20)"},
  {"[transport]\nrto_min_us = 100\nrto_max_us = 50\n", "transport.rto_max_us = 50: must be >= rto_min_us (100)"},
  {"[transport]\nsubflow_dead_after = 0\n", "transport.subflow_dead_after = 0: must be >= 1"},
  {"[transport]\npfc_xoff_kib = 10\npfc_xon_kib = 20\n", "transport.pfc_xon_kib = 20: must be at most pfc_xoff_kib (10)"},
  // Workload.
  {"[workload]\npattern = \"broadcast\"\n", "workload.pattern = \"broadcast\": must be pairs, incast, permutation, all_to_all, ring_allreduce or flows"},
  {"[workload]\npattern = \"all_to_all\"\nrank_order = \"random\"\n", "workload.rank_order = \"random\": must be \"hosts\" or \"shuffled\""},
  {"[workload]\npattern = \"all_to_all\"\nranks = 9\n", "workload.ranks = 9: must be 2..8 (the fabric's hosts)"},
  {"[workload]\npattern = \"ring_allreduce\"\nranks = 1\n", "workload.ranks = 1: must be 2..8 (the fabric's hosts)"},
  {"[workload]\nranks = 4\n", "workload.ranks, rank_order: only all_to_all and ring_allreduce place ranks"},
  {"[workload]\npattern = \"ring_allreduce\"\nranks = 4\nmessage_bytes = 3\n", "workload.message_bytes: a ring all-reduce needs at least one byte per rank and slice"},
  {"[workload]\nimm_fraction = 1.5\n", "workload.imm_fraction = 1.5: must be in [0, 1]"},
  {"[workload]\ncompute_us = -1\n", "workload.compute_us = -1: must be >= 0 and at most 1e+12"},
  {"[workload]\nmessage_bytes = 0\n", "workload.message_bytes = 0: must be 1..4294967295 (bytes per message)"},
  {"[workload]\nmessages = 0\n", "workload.messages = 0: must be 1..1000000"},
  {"[workload]\npattern = \"flows\"\nflows = [[0, 0]]\n", "workload.flows: [0, 0] sends to itself"},
  {"[workload]\npattern = \"flows\"\nflows = [[0, 9]]\n", "workload.flows: every entry must be [a, b] with integers 0..7"},
  {"[workload]\npattern = \"flows\"\n", "workload.flows: given exactly when pattern = \"flows\" (a list of [source, destination] hosts)"},
  {"[workload]\nmessages = 1000\nmessage_bytes = 10000000\n", "workload: 152587 MiB of writes in all; a payload run holds every byte written and allows 8192 MiB (payload = false has no such limit)"},
  {"payload = false\n[workload]\nmessages = 1000000\nqps = 1000000\nmessage_bytes = 4000000000\n", "workload: more than 2^62 bytes of writes in all"},
  // Faults.
  {"[[fault]]\naction = \"explode\"\n", "fault[0].action = \"explode\": must be faults, down, up, reboot, flap, degrade, blackhole, unblackhole, gray, nic_drop, deny_spine or heal"},
  {"[[fault]]\naction = \"deny_spine\"\nplane = 0\n", "fault[0].deny_spine needs a plane and a spine"},
  {"[[fault]]\naction = \"deny_spine\"\nplane = 0\nspine = 1\n", "fault[0].action = \"deny_spine\": must be used with fabric.routing = \"source\" (only a source-routed EV names its spine)"},
  {"[fabric]\nrouting = \"source\"\n[[fault]]\naction = \"deny_spine\"\nplane = 0\nspine = 9\n", "fault[0].spine = 9: must be 0..3 (4 in this fabric)"},
  {"[[fault]]\nat_us = -3\naction = \"heal\"\n", "fault[0].at_us = -3: must be >= 0 and at most 1e+12"},
  {"[[fault]]\naction = \"faults\"\nloss = 1.5\n", "fault[0].loss = 1.5: must be in [0, 1]"},
  {"[[fault]]\naction = \"faults\"\ncorrupt = nan\n", "fault[0].corrupt = nan: must be in [0, 1]"},
  {"[[fault]]\naction = \"faults\"\nreorder_max_us = -1\n", "fault[0].reorder_max_us = -1: must be >= 0 and at most 1e+12"},
  {"[[fault]]\naction = \"flap\"\ndown_us = 0\n", "fault[0].down_us = 0: must be > 0 and at most 1e+12"},
  {"[[fault]]\naction = \"flap\"\nup_us = 0\n", "fault[0].up_us = 0: must be > 0 and at most 1e+12"},
  {"[[fault]]\naction = \"flap\"\nduration_us = inf\n", "fault[0].duration_us = inf: must be > 0 and at most 1e+12"},
  {"[[fault]]\naction = \"reboot\"\ndown_us = -1\n", "fault[0].down_us = -1: must be > 0 and at most 1e+12"},
  {"[[fault]]\naction = \"degrade\"\nrate_fraction = 2.0\n", "fault[0].rate_fraction = 2: must be in (0, 1]"},
  {"[[fault]]\naction = \"blackhole\"\nev_slot = 100000\n", "fault[0].ev_slot = 100000: must be 0..127 (a slot of the QP's 128 EVs)"},
  {"[[fault]]\naction = \"blackhole\"\nflow = 16\n", "fault[0].flow = 16: must be 0..15 (the workload's 16 flows, in plan order)"},
  {"[[fault]]\naction = \"blackhole\"\nflow = 1\nevery_flow = true\n", "fault[0].flow: name one flow or every_flow"},
  {"[[fault]]\naction = \"blackhole\"\nev_fraction = 0\n", "fault[0].ev_fraction = 0: must be in (0, 1]"},
  {"[[fault]]\naction = \"blackhole\"\nev_fraction = 1.5\n", "fault[0].ev_fraction = 1.5: must be in [0, 1]"},
  {"[[fault]]\naction = \"blackhole\"\nev_fraction = 0.5\nev_slot = 2\n", "fault[0].ev_fraction: name one ev_slot or an ev_fraction"},
  {"[[fault]]\naction = \"gray\"\n", "fault[0].loss: a gray path needs its loss, in (0, 1]"},
  {"[[fault]]\naction = \"gray\"\nloss = 0\n", "fault[0].loss = 0: must be in (0, 1] (the share of the path's packets lost)"},
  {"[transport]\nkind = \"roce\"\n[[fault]]\naction = \"gray\"\nloss = 0.1\n", "fault[0].action = \"gray\": must be a link fault with transport roce (EV path faults aim at the EVs of MRC queue pairs)"},
  {"[[fault]]\naction = \"nic_drop\"\n", "fault[0].loss: a NIC drop needs its loss, in [0, 1] (0 clears it)"},
  {"[[fault]]\naction = \"nic_drop\"\nloss = 0.01\ndirection = \"in\"\n", "fault[0].direction = \"in\": must be rx, tx or both"},
  {"[[fault]]\naction = \"nic_drop\"\nloss = 0.01\nhost = 8\n", "fault[0].host = 8: must be 0..7 (8 in this fabric)"},
  {"[[fault]]\naction = \"flap\"\ndown_us = 10\nup_us = 20\njitter_us = 10\n", "fault[0].jitter_us = 10: must be less than down_us and up_us (every period stays positive)"},
  {"[[fault]]\naction = \"flap\"\njitter_us = -1\n", "fault[0].jitter_us = -1: must be >= 0 and at most 1e+12"},
  {"[[fault]]\naction = \"down\"\nplane = 9\n", "fault[0].plane = 9: must be a plane of this fabric, 0..3"},
  {"[[fault]]\naction = \"down\"\nplane = 0\nhost = 16\n", "fault[0].host = 16: must be 0..7 (8 in this fabric)"},
  {"[[fault]]\naction = \"down\"\nplane = 0\nspine = 4\n", "fault[0].spine = 4: must be 0..3 (4 in this fabric)"},
  {"[[fault]]\naction = \"down\"\nplane = 0\nlink = \"leaf_host\"\n", "fault[0].link = \"leaf_host\": must be all, host_up, host_down, leaf_spine or spine_leaf"},
  {"[[fault]]\naction = \"down\"\nlink = \"host_up\"\n", "fault[0].link: naming one link needs a plane"},
  {"[[fault]]\naction = \"reboot\"\nplane = 0\nswitch = \"core1\"\n", "fault[0].switch = \"core1\": must be a switch of this fabric (leafN, spineN, N from 0)"},
  {"[[fault]]\naction = \"down\"\nswitch = \"spine1\"\n", "fault[0].switch: naming a switch needs a plane (fault.plane)"},
  {"[[fault]]\naction = \"heal\"\n[[fault]]\naction = \"heal\"\nbogus = 1\n", "fault[1].bogus: unknown key"},
};
// clang-format on

TEST(ScenarioValidation, EveryBadScenarioIsRefusedWithItsMessage) {
  for (const BadScenario& bad : kCorpus) {
    Scenario s;
    std::string error;
    EXPECT_FALSE(load_scenario_text(bad.text, "bad.toml", s, error)) << bad.text;
    const std::string expected =
        std::string("bad.toml") +
        (std::isdigit(static_cast<unsigned char>(bad.message[0])) ? ":" : ": ") + bad.message;
    EXPECT_EQ(error, expected) << "scenario:\n" << bad.text;
  }
}

TEST(ScenarioValidation, FilesThatCannotBeReadAreNamed) {
  Scenario s;
  std::string error;
  EXPECT_FALSE(load_scenario("/nonexistent/x.toml", s, error));
  EXPECT_EQ(error, "/nonexistent/x.toml: cannot read the file");
}

TEST(ScenarioValidation, EveryShippedScenarioLoads) {
  size_t loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MRC_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".toml") continue;
    Scenario s;
    std::string error;
    EXPECT_TRUE(load_scenario(entry.path().string(), s, error)) << error;
    ++loaded;
  }
  EXPECT_GT(loaded, 10u);
}

TEST(ScenarioValidation, NonAsciiCommentsAreFine) {
  Scenario s;
  std::string error;
  EXPECT_TRUE(load_scenario_text(
      "# \xC2\xA7 4.2 of the paper\n[fabric] # pl\xC3\xA4ne\nplanes = 2\n", "c.toml", s, error))
      << error;
  EXPECT_EQ(s.fabric.planes, 2u);
}

TEST(ScenarioValidation, AnEmptyScenarioIsAllDefaults) {
  Scenario s;
  std::string error;
  EXPECT_TRUE(load_scenario_text("", "empty.toml", s, error)) << error;
  EXPECT_EQ(s.fabric.planes, Scenario{}.fabric.planes);
}

}  // namespace
}  // namespace mrc::sim
