// The Python module mrc_torch._C: the ProcessGroupMrc class (a torch.distributed.ProcessGroup)
// with its plane controls. python/mrc_torch/__init__.py reads the environment and registers the
// backend "mrc" with torch.distributed.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <string>

#include "host/port_plan.h"
#include "io/key_exchange.h"
#include "io/netdev.h"
#include "io/srv6.h"
#include "pytorch/process_group.h"

namespace py = pybind11;
using mrc::torchpg::BackendOptions;
using mrc::torchpg::ProcessGroupMrc;

namespace {

uint16_t port_number(int value, const char* what) {
  TORCH_CHECK(value > 0 && value < 65536, "mrc: ", what, " ", value, " is not a UDP port");
  return static_cast<uint16_t>(value);
}

// MRC_SECURE and MRC_KEY_FILE: the mode, and the pre-shared key every rank holds.
void read_security(const std::string& secure, const std::string& key_file, BackendOptions& o) {
  TORCH_CHECK(mrc::parse_secure_mode(secure, o.secure), "mrc: MRC_SECURE=", secure,
              ": one of off, auth, encrypt");
  auto key =
      mrc::io::preshared_key_for(o.secure, key_file, "MRC_SECURE=", "MRC_KEY_FILE", "every rank");
  TORCH_CHECK(key.ok(), "mrc: ", key.ok() ? "" : key.error().message);
  o.preshared_key = std::move(key.value());
}

c10::intrusive_ptr<ProcessGroupMrc> create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, const std::vector<std::string>& planes,
                                           int port, int ev_port_base,
                                           std::chrono::milliseconds timeout, uint32_t chunk_bytes,
                                           uint32_t slots, uint32_t mtu, const std::string& backend,
                                           std::chrono::milliseconds peer_timeout, uint32_t threads,
                                           const std::string& path_policy,
                                           const std::string& secure, const std::string& key_file,
                                           const std::string& srv6_paths) {
  BackendOptions o;
  o.planes = planes;
  o.port = port_number(port, "port");
  o.ev_port_base = port_number(ev_port_base, "ev_port_base");
  TORCH_CHECK(threads >= 1 && threads <= mrc::io::kMaxDeviceThreads, "mrc: MRC_THREADS=", threads,
              ": a rank runs 1 to ", mrc::io::kMaxDeviceThreads, " engine threads");
  o.threads = threads;
  mrc::host::PortPlan plan;
  plan.port = static_cast<uint32_t>(port);
  plan.ev_port_base = static_cast<uint32_t>(ev_port_base);
  plan.planes = planes.size();
  plan.threads = threads;
  plan.port_setting = "MRC_PORT";
  plan.ev_port_setting = "MRC_EV_PORT_BASE";
  const auto ports = plan.check();
  TORCH_CHECK(ports.ok(), "mrc: ", ports.ok() ? "" : ports.error().message);
  o.timeout = timeout;
  TORCH_CHECK(peer_timeout.count() >= 100, "mrc: MRC_PEER_TIMEOUT_S of ", peer_timeout.count(),
              " ms is too short (at least 0.1 s)");
  o.peer_timeout = peer_timeout;
  o.chunk_bytes = chunk_bytes;
  o.slots = slots;
  TORCH_CHECK(mtu == 0 || (mtu >= 256 && mtu <= 9000), "mrc: MRC_MTU ", mtu,
              " is not a packet payload size (256-9000, or 0: from the planes' MTU; the links' "
              "MTU must hold it plus ~90 bytes)");
  auto payload = mrc::io::choose_payload_bytes(mtu, o.planes);
  TORCH_CHECK(payload.ok(), "mrc: MRC_MTU: ", payload.ok() ? "" : payload.error().message);
  o.mtu_bytes = payload.value();
  auto parsed = mrc::io::parse_backend(backend);
  TORCH_CHECK(parsed.ok(), "mrc: MRC_BACKEND: ", parsed.ok() ? "" : parsed.error().message);
  o.backend = parsed.value();
  TORCH_CHECK(mrc::parse_path_policy(path_policy, o.path_policy),
              "mrc: MRC_PATH_POLICY=", path_policy, ": one of ", mrc::path_policy_name_list());
  read_security(secure, key_file, o);
  if (!srv6_paths.empty()) {  // checked here, before the rendezvous (the planes' families later)
    auto paths = mrc::io::parse_srv6_paths(srv6_paths);
    TORCH_CHECK(paths.ok(), "mrc: MRC_SRV6_PATHS: ", paths.ok() ? "" : paths.error().message);
  }
  o.srv6_paths = srv6_paths;
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
           py::arg("planes"), py::arg("port"), py::arg("ev_port_base"),
           py::arg("timeout") = std::chrono::milliseconds(30 * 60 * 1000),
           py::arg("chunk_bytes") = 0u, py::arg("slots") = 8u, py::arg("mtu") = 0u,
           py::arg("backend") = "udp", py::arg("peer_timeout") = std::chrono::milliseconds(8000),
           py::arg("threads") = 1u, py::arg("path_policy") = "p2c", py::arg("secure") = "off",
           py::arg("key_file") = "", py::arg("srv6_paths") = "",
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
      "slot_ports",
      [](uint32_t port, uint32_t ev_port_base, size_t planes, uint32_t threads, uint32_t slot) {
        mrc::host::PortPlan plan;  // host/port_plan.h: the one layout of a host's ports
        plan.port = port;
        plan.ev_port_base = ev_port_base;
        plan.planes = planes;
        plan.threads = threads;
        return std::make_pair(plan.receive_port(slot), plan.ev_ports(slot).first);
      },
      py::arg("port"), py::arg("ev_port_base"), py::arg("planes"), py::arg("threads"),
      py::arg("slot"),
      "the first receive port and first EV source port of process slot `slot` on a host whose "
      "slots share these bases");
}
