// The provider's entry point (fi_prov_ini), its settings, fi_getinfo and the fabric object.
//
// fi_getinfo offers one fi_info: FI_EP_RDM with FI_MSG (and FI_MULTI_RECV), FI_TAGGED and FI_RMA
// reads and writes over this host's mrc planes. Hints that ask for anything else (another endpoint
// type, capabilities or modes it lacks, another address format, a fabric or domain of another name)
// get -FI_ENODATA, so what the provider cannot do is refused at fi_getinfo, never later. Threading,
// progress and AV types the hints ask for are echoed: the provider serialises its state behind the
// domain's lock and progresses on its own thread, which satisfies every threading and progress
// model.
#include "fabric/provider.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/providers/fi_log.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace mrc::fabric {
namespace {

constexpr uint32_t kVersion = FI_VERSION(0, 1);
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
constexpr uint64_t kOpFlags =
    FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MULTICAST;

char* dup(const char* s) {
  return strdup(s);
}

// The mr_mode answered when RMA is offered under `hints` at API `version`, or nullopt if they do
// not allow what RMA needs: kMrMode's bits (or FI_MR_BASIC, the same three). The answer never
// holds a bit the hints did not allow.
std::optional<int> rma_mr_mode(const fi_info* hints, uint32_t version) {
  if (hints == nullptr || hints->domain_attr == nullptr) return kMrMode;
  const int m = hints->domain_attr->mr_mode;
  if (m == FI_MR_BASIC) return FI_MR_BASIC;
  // FI_MR_UNSPEC (0): before API 1.5 the provider's choice; from 1.5 on, no mode bit allowed.
  if (m == FI_MR_UNSPEC && FI_VERSION_LT(version, FI_VERSION(1, 5))) return FI_MR_BASIC;
  if ((m & kMrMode) == kMrMode) return kMrMode;
  return std::nullopt;
}

bool mr_mode_ok(const fi_info* hints, uint32_t version) {
  return rma_mr_mode(hints, version).has_value();
}

// Orders other than FI_ORDER_SAS (MRC's in-order immediate completions give no more: a read is
// served in the target's progress, so a later write may overtake it), or completion orders.
bool order_refused(const fi_tx_attr* tx, const fi_rx_attr* rx) {
  if (tx != nullptr && ((tx->msg_order & ~FI_ORDER_SAS) != 0 || tx->comp_order != FI_ORDER_NONE))
    return true;
  return rx != nullptr && ((rx->msg_order & ~FI_ORDER_SAS) != 0 || rx->comp_order != FI_ORDER_NONE);
}

bool refused(const fi_info* hints, uint32_t version) {
  if ((hints->caps & ~(kCaps | FI_PRIORITY)) != 0) return true;
  // Explicit RMA needs our registration modes.
  if ((hints->caps & kRmaCaps) != 0 && !mr_mode_ok(hints, version)) return true;
  if (order_refused(hints->tx_attr, hints->rx_attr)) return true;
  if (hints->tx_attr != nullptr && (hints->tx_attr->caps & ~kCaps) != 0) return true;
  if (hints->rx_attr != nullptr && (hints->rx_attr->caps & ~kCaps) != 0) return true;
  if (hints->addr_format != FI_FORMAT_UNSPEC) return true;
  if (hints->ep_attr != nullptr) {
    const fi_ep_attr& e = *hints->ep_attr;
    if (e.type != FI_EP_UNSPEC && e.type != FI_EP_RDM) return true;
    if (e.max_msg_size > kMaxMessageBytes || e.auth_key_size != 0) return true;
    if (e.tx_ctx_cnt > 1 || e.rx_ctx_cnt > 1) return true;
  }
  if (hints->fabric_attr != nullptr && hints->fabric_attr->name != nullptr &&
      std::strcmp(hints->fabric_attr->name, "mrc") != 0)
    return true;
  if (hints->fabric_attr != nullptr && hints->fabric_attr->prov_name != nullptr &&
      std::strstr(hints->fabric_attr->prov_name, "mrc") == nullptr)
    return true;
  if (hints->domain_attr != nullptr) {
    const fi_domain_attr& d = *hints->domain_attr;
    if (d.name != nullptr && std::strcmp(d.name, "mrc") != 0) return true;
    if (d.cq_data_size > 8 || d.auth_key_size != 0) return true;
    // FI_SHARED_AV and the like: a domain offers local and remote communication only.
    if ((d.caps & ~(FI_LOCAL_COMM | FI_REMOTE_COMM)) != 0) return true;
    if (d.av_type != FI_AV_UNSPEC && d.av_type != FI_AV_MAP && d.av_type != FI_AV_TABLE)
      return true;
  }
  if (hints->tx_attr != nullptr && (hints->tx_attr->op_flags & ~kOpFlags) != 0) return true;
  if (hints->rx_attr != nullptr &&
      (hints->rx_attr->op_flags & ~(FI_COMPLETION | FI_MULTICAST | FI_MULTI_RECV)) != 0)
    return true;
  return false;
}

// The capabilities offered for `hints`: what they ask (FI_RMA alone then means reads and writes
// both ways, and FI_SEND/FI_RECV and the like are implied), or everything, RMA only where their
// registration modes allow it.
uint64_t offered_caps(const fi_info* hints, uint32_t version) {
  if (hints == nullptr || hints->caps == 0)
    return mr_mode_ok(hints, version) ? kCaps : kCaps & ~kRmaCaps;
  uint64_t caps = hints->caps & kCaps;
  if ((caps & FI_RMA) != 0 && (caps & (kRmaCaps & ~FI_RMA)) == 0) caps |= kRmaCaps;
  return caps;
}

void fill(fi_info& info, const fi_info* hints, uint32_t version) {
  const uint64_t caps = offered_caps(hints, version);
  info.caps = caps;
  info.mode = 0;
  info.addr_format = FI_FORMAT_UNSPEC;
  *info.tx_attr = fi_tx_attr{};
  info.tx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_WRITE | FI_READ);
  info.tx_attr->op_flags =
      hints != nullptr && hints->tx_attr != nullptr ? hints->tx_attr->op_flags : 0;
  info.tx_attr->msg_order = FI_ORDER_SAS;
  info.tx_attr->comp_order = FI_ORDER_NONE;
  info.tx_attr->inject_size = kInjectBytes;
  info.tx_attr->size = kQueueSize;
  info.tx_attr->iov_limit = kMaxIov;
  info.tx_attr->rma_iov_limit = 1;
  *info.rx_attr = fi_rx_attr{};
  info.rx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_WRITE |
                               FI_REMOTE_READ | FI_MULTI_RECV | FI_SOURCE | FI_DIRECTED_RECV);
  info.rx_attr->op_flags =
      hints != nullptr && hints->rx_attr != nullptr ? hints->rx_attr->op_flags : 0;
  info.rx_attr->msg_order = FI_ORDER_SAS;
  info.rx_attr->comp_order = FI_ORDER_NONE;
  info.rx_attr->size = kQueueSize;
  info.rx_attr->iov_limit = kMaxIov;
  fi_ep_attr& e = *info.ep_attr;
  e = fi_ep_attr{};
  e.type = FI_EP_RDM;
  e.protocol = FI_PROTO_UNSPEC;
  e.protocol_version = 1;
  e.max_msg_size = kMaxMessageBytes;
  const uint64_t tag_format =
      hints != nullptr && hints->ep_attr != nullptr ? hints->ep_attr->mem_tag_format : 0;
  e.mem_tag_format =
      tag_format != 0 ? tag_format : 0xAAAAAAAAAAAAAAAAull;  // every bit: any tag layout
  e.tx_ctx_cnt = 1;
  e.rx_ctx_cnt = 1;
}

void fill_domain(fi_info& info, const fi_info* hints, uint32_t version) {
  fi_domain_attr& d = *info.domain_attr;
  const fi_domain_attr* h = hints != nullptr ? hints->domain_attr : nullptr;
  d = fi_domain_attr{};
  d.name = dup("mrc");
  d.threading = h != nullptr && h->threading != FI_THREAD_UNSPEC ? h->threading : FI_THREAD_SAFE;
  d.control_progress = h != nullptr && h->control_progress != FI_PROGRESS_UNSPEC
                           ? h->control_progress
                           : FI_PROGRESS_AUTO;
  d.data_progress =
      h != nullptr && h->data_progress != FI_PROGRESS_UNSPEC ? h->data_progress : FI_PROGRESS_AUTO;
  d.resource_mgmt = FI_RM_ENABLED;
  d.av_type = h != nullptr && h->av_type != FI_AV_UNSPEC ? h->av_type : FI_AV_UNSPEC;
  d.mr_mode = (info.caps & FI_RMA) == 0 ? 0 : rma_mr_mode(hints, version).value_or(0);
  d.mr_key_size = 4;
  d.cq_data_size = 8;
  d.cq_cnt = 256;
  d.ep_cnt = 256;
  d.tx_ctx_cnt = 256;
  d.rx_ctx_cnt = 256;
  d.max_ep_tx_ctx = 1;
  d.max_ep_rx_ctx = 1;
  d.cntr_cnt = 256;
  d.mr_iov_limit = 1;
  d.mr_cnt = 65536;
  d.caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  fi_fabric_attr& f = *info.fabric_attr;
  f = fi_fabric_attr{};
  f.name = dup("mrc");
  f.prov_version = kVersion;
  f.api_version = kApiVersion;
}

// The port a service names (a number or a name from /etc/services), network order; 0 for none.
std::optional<uint16_t> port_of(const char* service) {
  if (service == nullptr) return uint16_t{0};
  addrinfo want{};
  want.ai_flags = AI_PASSIVE;
  want.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(nullptr, service, &want, &found) != 0) return std::nullopt;
  const uint16_t port = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_port;
  freeaddrinfo(found);
  return port;
}

}  // namespace

std::optional<EndpointName> resolve_name(const char* node, const char* service) {
  const auto port = port_of(service);
  if (!port) return std::nullopt;
  addrinfo want{};
  want.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  // (No node: the loopback addresses, as getaddrinfo gives them for a service alone.)
  if (getaddrinfo(node, "0", &want, &found) != 0) return std::nullopt;
  std::optional<EndpointName> name;
  for (int family : {AF_INET, AF_INET6}) {
    for (addrinfo* a = found; a != nullptr && !name; a = a->ai_next) {
      if (a->ai_family != family) continue;
      char text[INET6_ADDRSTRLEN];
      const void* bytes =
          family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if (inet_ntop(family, bytes, text, sizeof text) != nullptr) name = name_at(text, *port);
    }
  }
  freeaddrinfo(found);
  return name;
}

namespace {

void set_address(void*& addr, size_t& len, const EndpointName& name) {
  addr = std::malloc(sizeof name);  // fi_freeinfo frees it
  std::memcpy(addr, &name, sizeof name);
  len = sizeof name;
}

// fi_info's src_addr and dest_addr (mrc names, nonce 0, addr_format FI_FORMAT_UNSPEC). With
// FI_SOURCE, node/service are the source (no node: the wildcard address at the service's port:
// the endpoint listens on every address and names the first plane's);
// else the destination, whichever endpoint listens there (Av::find). Addresses in the hints
// are taken if they are mrc names. The source is otherwise the first plane at a port the system
// picks. A node that does not resolve: -FI_ENODATA.
int fill_addresses(fi_info& info, const char* node, const char* service, uint64_t flags,
                   const fi_info* hints) {
  std::optional<EndpointName> source, dest;
  if (hints != nullptr && hints->src_addr != nullptr) {
    source = parse_name(hints->src_addr, hints->src_addrlen, true);
    if (!source) return -FI_ENODATA;
  }
  if (hints != nullptr && hints->dest_addr != nullptr) {
    // Port 0 too: a node without a service gets such a destination, and an application may
    // give the answer back as hints (fi_multi_ep does, once per endpoint).
    dest = parse_name(hints->dest_addr, hints->dest_addrlen, true);
    if (!dest) return -FI_ENODATA;
  }
  const bool named = node != nullptr || service != nullptr;
  const auto plane = first_plane(settings());
  if (named && (flags & FI_SOURCE) != 0) {
    if (node == nullptr && !plane) return -FI_ENODATA;
    const auto port = port_of(service);
    // No node: every address of this host (the wildcard of the first plane's family), so that
    // a client reaches the endpoint by any name of the host.
    const bool v6 = plane && plane->find(':') != std::string::npos;
    source = node != nullptr ? resolve_name(node, service)
             : port          ? name_at(v6 ? "::" : "0.0.0.0", *port)
                             : std::nullopt;
    if (!source) return -FI_ENODATA;
  } else if (named) {
    dest = resolve_name(node, service);
    if (!dest) return -FI_ENODATA;
  }
  if (!source && plane) source = name_at(*plane, 0);
  if (source) set_address(info.src_addr, info.src_addrlen, *source);
  if (dest) set_address(info.dest_addr, info.dest_addrlen, *dest);
  return 0;
}

int fabric_close(fid* f) {
  delete reinterpret_cast<Fabric*>(f);
  return 0;
}

// Success means the application sleeps on the CQs' descriptors next: their domains' datapath
// goes back to the threads that write them (Domain::before_blocking).
int fabric_trywait(fid_fabric*, fid** fids, int count) {
  for (int i = 0; i < count; ++i) {
    if (fids[i]->fclass != FI_CLASS_CQ) continue;
    Cq* cq = reinterpret_cast<Cq*>(fids[i]);
    std::lock_guard lock(cq->lock);
    if (!cq->entries.empty() || !cq->errors.empty()) return -FI_EAGAIN;
  }
  for (int i = 0; i < count; ++i)
    if (fids[i]->fclass == FI_CLASS_CQ && reinterpret_cast<Cq*>(fids[i])->domain != nullptr)
      reinterpret_cast<Cq*>(fids[i])->domain->before_blocking();
  return 0;
}

fi_ops fabric_fi_ops{sizeof(fi_ops), fabric_close, no_bind,   no_control,
                     no_ops_open,    no_tostr,     no_ops_set};

int no_passive_ep(fid_fabric*, fi_info*, fid_pep**, void*) {
  return -FI_ENOSYS;
}
int no_wait_open(fid_fabric*, fi_wait_attr*, fid_wait**) {
  return -FI_ENOSYS;
}
int domain2(fid_fabric* f, fi_info* info, fid_domain** d, uint64_t flags, void* context) {
  return flags != 0 ? -FI_EINVAL : open_domain(f, info, d, context);
}

fi_ops_fabric fabric_ops{sizeof(fi_ops_fabric), open_domain,    no_passive_ep, open_eq,
                         no_wait_open,          fabric_trywait, domain2};

int provider_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
                     const fi_info* hints, fi_info** info) {
  return get_info(version, node, service, flags, hints, info);
}

int provider_fabric(fi_fabric_attr* attr, fid_fabric** out, void* context) {
  if (attr != nullptr && attr->name != nullptr && std::strcmp(attr->name, "mrc") != 0)
    return -FI_EINVAL;
  auto* f = new Fabric();
  init_fid(f->fid, FI_CLASS_FABRIC, context, &fabric_fi_ops, &fabric_ops);
  *out = &f->fid;
  return 0;
}

void provider_cleanup() {
  stop_all_domains();
}

// At exit the library's static objects go (before libfabric's fi_fini, which runs later since
// libfabric was loaded first), so the threads must stop here too.
[[gnu::destructor]] void at_unload() {
  stop_all_domains();
}

}  // namespace

fi_provider provider{kVersion,        kApiVersion,     {}, "mrc", provider_getinfo,
                     provider_fabric, provider_cleanup};

int get_info(uint32_t version, const char* node, const char* service, uint64_t flags,
             const fi_info* hints, fi_info** out) {
  // (An API version after 1.x is one this provider does not know; MPICH asks with version 0.)
  if (FI_MAJOR(version) > 1) return -FI_ENODATA;
  if (hints != nullptr && refused(hints, version)) return -FI_ENODATA;
  fi_info* info = fi_allocinfo();
  if (info == nullptr) return -FI_ENOMEM;
  fill(*info, hints, version);
  fill_domain(*info, hints, version);
  if (const int r = fill_addresses(*info, node, service, flags, hints); r != 0) {
    fi_freeinfo(info);
    return r;
  }
  *out = info;
  return 0;
}

// The fi_param names of the host settings the provider takes ("busy_poll_us" for
// busy-poll-us), kept for the process's life: libfabric keeps the pointers it is given.
const std::vector<std::pair<const host::Setting*, std::string>>& host_params() {
  static const auto* params = [] {
    auto* list = new std::vector<std::pair<const host::Setting*, std::string>>();
    for (const host::Setting& h : host::settings()) {
      if ((h.doors & host::kDoorProvider) == 0) continue;
      std::string name = host::env_name("", h.key);
      for (char& c : name) c = static_cast<char>(std::tolower(c));
      list->emplace_back(&h, name);
    }
    return list;
  }();
  return *params;
}

void define_settings() {
  static std::vector<std::string> helps;  // (as the names: libfabric keeps the pointers)
  helps.reserve(host_params().size());
  for (const auto& [h, name] : host_params()) {
    std::string help = std::string(h->help) + (h->key == "planes" ? " (default: 127.0.0.1)" : "") +
                       (h->key == "port" || h->key == "ev-port-base"
                            ? "; the first tried: a process takes the first free slot"
                            : "");
    // libfabric prints a help text as a format: a '%' of the text ("%p") is written '%%'.
    for (size_t at = help.find('%'); at != std::string::npos; at = help.find('%', at + 2))
      help.insert(at, 1, '%');
    helps.push_back(std::move(help));
    fi_param_define(&provider, name.c_str(), FI_PARAM_STRING, helps.back().c_str());
  }
  fi_param_define(
      &provider, "mtu", FI_PARAM_INT,
      "Payload bytes per MRC packet, 256..9000 (default: 8192, 4096 or 1024, the largest every "
      "plane's interface MTU carries); every process of a job needs the same");
  fi_param_define(&provider, "slots", FI_PARAM_INT, "Receive slots per link, 2..128 (default: 32)");
  fi_param_define(&provider, "slot_bytes", FI_PARAM_INT,
                  "Bytes per slot, 1024..1048576 (default: 65536)");
  fi_param_define(&provider, "rndv_bytes", FI_PARAM_SIZE_T,
                  "Messages of this many bytes or more are written straight into the receive "
                  "buffer (rendezvous); 0: never (default: 65536)");
  fi_param_define(&provider, "unexpected_bytes", FI_PARAM_SIZE_T,
                  "Unexpected-message store per endpoint (default: 268435456)");
  fi_param_define(&provider, "connect_timeout_ms", FI_PARAM_INT,
                  "Link set-up timeout (default: 10000)");
  fi_param_define(&provider, "peer_timeout_ms", FI_PARAM_INT,
                  "How long a peer may acknowledge nothing sent to it before its link fails "
                  "(default: 8000)");
  fi_param_define(&provider, "stats", FI_PARAM_BOOL,
                  "Print each link's counters on stderr when its endpoint closes (default: no)");
  fi_param_define(&provider, "stall_report_ms", FI_PARAM_INT,
                  "Write an endpoint's state (posted receives, unexpected messages, links) on "
                  "stderr when it has operations outstanding and none completed for this long; "
                  "0: never (default: 0)");
}

Settings settings() {
  Settings s;
  s.host.context.planes = {"127.0.0.1"};
  const host::Spelling spelling{host::kDoorProvider, "FI_MRC_"};
  for (const auto& [h, name] : host_params()) {
    char* value = nullptr;
    if (fi_param_get_str(&provider, name.c_str(), &value) != 0 || value == nullptr) continue;
    if (auto set = host::set(s.host, h->key, value, spelling); !set.ok() && s.error.empty())
      s.error = set.error().message;
  }
  fi_param_get_int(&provider, "slots", &s.slots);
  fi_param_get_int(&provider, "slot_bytes", &s.slot_bytes);
  fi_param_get_int(&provider, "mtu", &s.mtu_bytes);
  fi_param_get_size_t(&provider, "unexpected_bytes", &s.unexpected_bytes);
  fi_param_get_size_t(&provider, "rndv_bytes", &s.rendezvous_bytes);
  fi_param_get_int(&provider, "connect_timeout_ms", &s.connect_timeout_ms);
  fi_param_get_int(&provider, "peer_timeout_ms", &s.peer_timeout_ms);
  fi_param_get_bool(&provider, "stats", &s.stats);
  fi_param_get_int(&provider, "stall_report_ms", &s.stall_report_ms);
  return s;
}

void warn(const std::string& message) {
  FI_WARN(&provider, FI_LOG_CORE, "%s\n", message.c_str());
}

int no_bind(fid*, fid*, uint64_t) {
  return -FI_ENOSYS;
}
int no_control(fid*, int, void*) {
  return -FI_ENOSYS;
}
int no_ops_open(fid*, const char*, uint64_t, void**, void*) {
  return -FI_ENOSYS;
}
int no_tostr(const fid*, char*, size_t) {
  return -FI_ENOSYS;
}
int no_ops_set(fid*, const char*, uint64_t, void*, void*) {
  return -FI_ENOSYS;
}

}  // namespace mrc::fabric

extern "C" FI_EXT_INI {
  mrc::fabric::define_settings();
  return &mrc::fabric::provider;
}
