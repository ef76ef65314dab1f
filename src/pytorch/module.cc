// The Python module mrc_torch._C: the ProcessGroupMrc class (a torch.distributed.ProcessGroup)
// with its plane controls. python/mrc_torch/__init__.py reads the environment and registers the
// backend "mrc" with torch.distributed.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <string>

#include "host/options.h"
#include "host/port_plan.h"
#include "io/netdev.h"
#include "pytorch/process_group.h"

namespace py = pybind11;
using mrc::torchpg::BackendOptions;
using mrc::torchpg::ProcessGroupMrc;

namespace {

const mrc::host::Spelling kSpelling{mrc::host::kDoorTorch, "MRC_"};

// The host settings of process slot `slot` (a local rank of a group) from `settings`, the
// MRC_* variables of the host table that are set (host/options.h): its receive and EV ports
// are the slot's (host/port_plan.h), and its metrics port MRC_METRICS_PORT + slot.
mrc::ContextOptions host_options(const std::map<std::string, std::string>& settings,
                                 uint32_t slot) {
  mrc::host::Options h;
  h.context.ev_port_base = 20000;  // the torch backend's default
  for (const auto& [key, value] : settings) {
    auto set = mrc::host::set(h, key, value, kSpelling);
    TORCH_CHECK(set.ok(), "mrc: ", set.ok() ? "" : set.error().message);
  }
  mrc::host::PortPlan plan;  // host/port_plan.h: the one layout of a host's ports
  plan.port = h.context.port;
  plan.ev_port_base = h.context.ev_port_base;
  plan.planes = h.context.planes.size();
  plan.threads = h.context.threads;
  plan.port_setting = "MRC_PORT";
  plan.ev_port_setting = "MRC_EV_PORT_BASE";
  const auto ports = plan.check(slot);
  TORCH_CHECK(ports.ok(), "mrc: ", ports.ok() ? "" : ports.error().message);
  h.context.port = static_cast<uint16_t>(plan.receive_port(slot));
  h.context.ev_port_base = static_cast<uint16_t>(plan.ev_ports(slot).first);
  if (h.context.metrics_port > 0) {
    h.context.metrics_port += static_cast<int32_t>(slot);
    TORCH_CHECK(h.context.metrics_port <= 65535, "mrc: MRC_METRICS_PORT + slot ", slot,
                " is past 65535");
  }
  auto finished = mrc::host::finish(h, kSpelling);  // the key file, the planes' families
  TORCH_CHECK(finished.ok(), "mrc: ", finished.ok() ? "" : finished.error().message);
  return h.context;
}

c10::intrusive_ptr<ProcessGroupMrc> create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, const std::map<std::string, std::string>& host,
                                           uint32_t slot, std::chrono::milliseconds timeout,
                                           uint32_t chunk_bytes, uint32_t slots, uint32_t mtu,
                                           std::chrono::milliseconds peer_timeout,
                                           const std::string& path_policy) {
  BackendOptions o;
  o.context = host_options(host, slot);
  o.timeout = timeout;
  TORCH_CHECK(peer_timeout.count() >= 100, "mrc: MRC_PEER_TIMEOUT_S of ", peer_timeout.count(),
              " ms is too short (at least 0.1 s)");
  o.peer_timeout = peer_timeout;
  o.chunk_bytes = chunk_bytes;
  o.slots = slots;
  TORCH_CHECK(mtu == 0 || (mtu >= 256 && mtu <= 9000), "mrc: MRC_MTU ", mtu,
              " is not a packet payload size (256-9000, or 0: from the planes' MTU; the links' "
              "MTU must hold it plus ~90 bytes)");
  auto payload = mrc::io::choose_payload_bytes(mtu, o.context.planes);
  TORCH_CHECK(payload.ok(), "mrc: MRC_MTU: ", payload.ok() ? "" : payload.error().message);
  o.mtu_bytes = payload.value();
  const auto policy = mrc::parse_path_policy(path_policy);
  TORCH_CHECK(policy.ok(), "mrc: MRC_PATH_POLICY=", path_policy, ": one of ",
              mrc::path_policy_name_list());
  o.path_policy = policy.value();
  return c10::make_intrusive<ProcessGroupMrc>(store, rank, size, std::move(o));
}

py::dict plane_stats(const ProcessGroupMrc& pg, int plane) {
  const mrc::torchpg::PlaneCounters s = pg.plane_stats(plane);
  py::dict d;
  d["plane"] = plane;
  d["address"] = pg.plane_addresses().at(static_cast<size_t>(plane));
  d["up"] = s.up;
  d["packets_sent"] = s.packets_sent;
  d["bytes_sent"] = s.bytes_sent;
  d["packets_received"] = s.packets_received;
  d["bytes_received"] = s.bytes_received;
  d["send_errors"] = s.send_errors;
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "mrc_torch._C: the torch.distributed process group over mrc (see mrc_torch)";
  // ProcessGroup, Store and Work are registered with pybind11 by torch.distributed.
  py::module_::import("torch.distributed");

  py::class_<ProcessGroupMrc, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupMrc>>(
      m, "ProcessGroupMrc",
      "A torch.distributed process group whose collectives run over mrc: every transfer is "
      "sprayed over all planes and survives a plane failure.")
      .def(py::init(&create), py::arg("store"), py::arg("rank"), py::arg("size"), py::kw_only(),
           py::arg("host"), py::arg("slot") = 0u,
           py::arg("timeout") = std::chrono::milliseconds(30 * 60 * 1000),
           py::arg("chunk_bytes") = 0u, py::arg("slots") = 8u, py::arg("mtu") = 0u,
           py::arg("peer_timeout") = std::chrono::milliseconds(8000),
           py::arg("path_policy") = "p2c",
           // The rendezvous blocks until every rank has come: let other Python threads run.
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("planes", &ProcessGroupMrc::planes, "number of planes")
      .def_property_readonly("plane_addresses", &ProcessGroupMrc::plane_addresses)
      .def("plane_stats", &plane_stats, py::arg("plane"),
           "counters of one plane since the group was created: packets/bytes sent and received, "
           "send errors, and whether the plane is up")
      .def("set_plane_up", &ProcessGroupMrc::set_plane_up, py::arg("plane"), py::arg("up"),
           "takes a plane of this rank down or up, as if its link failed or came back",
           py::call_guard<py::gil_scoped_release>());

  m.def("ev_source_ports", &mrc::ev_source_ports, py::arg("planes"),
        "how many UDP source ports a rank with this many planes binds for its EVs");
  m.def(
      "host_settings",
      [] {
        std::vector<std::pair<std::string, std::string>> list;
        for (const mrc::host::Setting& s : mrc::host::settings())
          if ((s.doors & mrc::host::kDoorTorch) != 0)
            list.emplace_back(std::string(s.key), mrc::host::env_name("MRC_", s.key));
        return list;
      },
      "the host settings the backend takes, as (key, environment variable) pairs: the table "
      "every front door of mrc shares");
}
