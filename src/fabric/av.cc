// Address vectors: endpoint names (wire.h) by fi_addr. FI_AV_MAP and FI_AV_TABLE alike hand out
// indices in insertion order (a map's fi_addr is opaque to the application, so an index serves),
// and a removed entry's index is not reused. A name already present gets its fi_addr again and
// one more use (provider.h, Av). Names that are not mrc endpoint names are refused one by one:
// their fi_addr is FI_ADDR_NOTAVAIL and the count returned leaves them out.
#include <cstring>

#include "fabric/provider.h"

namespace mrc::fabric {
namespace {

std::array<uint8_t, sizeof(EndpointName)> key_of(const EndpointName& name) {
  std::array<uint8_t, sizeof(EndpointName)> key;
  std::memcpy(key.data(), &name, sizeof name);
  return key;
}

// Drops a removed entry from the lookups: its name, the endpoints' cached link to it, and the
// source their receiving links name (a later insert of the name gets a new fi_addr, which their
// next message takes).
void forget(Av& av, uint64_t fi_addr) {
  av.by_name.erase(key_of(av.names[fi_addr]));
  for (Endpoint* ep : av.domain->endpoints) {
    if (ep->av != &av) continue;
    if (fi_addr < ep->tx_by_addr.size()) ep->tx_by_addr[fi_addr] = nullptr;
    for (auto& link : ep->rx_links)
      if (link->known_source == fi_addr) link->known_source = kAnySource;
  }
}

int av_insert(fid_av* f, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void*) {
  Av* av = reinterpret_cast<Av*>(f);
  if ((flags & ~FI_MORE) != 0) return -FI_EBADFLAGS;
  std::lock_guard lock(av->domain->lock);
  int inserted = 0;
  for (size_t i = 0; i < count; ++i) {
    const auto name = parse_name(static_cast<const uint8_t*>(addr) + i * sizeof(EndpointName),
                                 sizeof(EndpointName));
    if (!name) {
      if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      warn("fi_av_insert: entry " + std::to_string(i) + " is not an mrc endpoint name");
      continue;
    }
    const uint64_t at = av->insert(*name);
    if (fi_addr != nullptr) fi_addr[i] = at;
    ++inserted;
  }
  for (Endpoint* ep : av->domain->endpoints)
    if (ep->av == av) resolve_sources(*ep);
  return inserted;
}

// The endpoint listening at node and service (an endpoint opened from fi_getinfo(node, service,
// FI_SOURCE)), as fi_getinfo's dest_addr names it.
int av_insertsvc(fid_av* f, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void*) {
  if ((flags & ~FI_MORE) != 0) return -FI_EBADFLAGS;
  if (node == nullptr || service == nullptr) return -FI_EINVAL;
  const auto name = resolve_name(node, service);
  if (!name || name->port == 0) {
    if (fi_addr != nullptr) *fi_addr = FI_ADDR_NOTAVAIL;
    warn(std::string("fi_av_insertsvc: ") + node + ":" + service + " does not resolve");
    return 0;
  }
  return av_insert(f, &*name, 1, fi_addr, flags, nullptr);
}
int av_insertsym(fid_av*, const char*, size_t, const char*, size_t, fi_addr_t*, uint64_t, void*) {
  return -FI_ENOSYS;
}

int av_remove(fid_av* f, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  Av* av = reinterpret_cast<Av*>(f);
  if (flags != 0) return -FI_EBADFLAGS;
  std::lock_guard lock(av->domain->lock);
  for (size_t i = 0; i < count; ++i) {
    if (!av->live(fi_addr[i])) return -FI_EINVAL;
    if (--av->uses[fi_addr[i]] != 0) continue;  // inserted more often than removed: stays
    forget(*av, fi_addr[i]);
  }
  return 0;
}

int av_lookup(fid_av* f, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  Av* av = reinterpret_cast<Av*>(f);
  std::lock_guard lock(av->domain->lock);
  if (!av->live(fi_addr)) return -FI_EINVAL;
  std::memcpy(addr, &av->names[fi_addr], std::min(*addrlen, sizeof(EndpointName)));
  *addrlen = sizeof(EndpointName);
  return 0;
}

const char* av_straddr(fid_av*, const void* addr, char* buf, size_t* len) {
  const auto name = parse_name(addr, sizeof(EndpointName));
  const std::string text = name ? to_string(*name) : std::string("fi_mrc://invalid");
  if (*len > 0) {
    std::strncpy(buf, text.c_str(), *len - 1);
    buf[*len - 1] = '\0';
  }
  *len = text.size() + 1;
  return buf;
}

int av_set(fid_av*, fi_av_set_attr*, fid_av_set**, void*) {
  return -FI_ENOSYS;
}

int av_close(fid* f) {
  delete reinterpret_cast<Av*>(f);
  return 0;
}

fi_ops av_fi_ops{sizeof(fi_ops), av_close, no_bind, no_control, no_ops_open, no_tostr, no_ops_set};
fi_ops_av av_ops{sizeof(fi_ops_av), av_insert, av_insertsvc, av_insertsym,
                 av_remove,         av_lookup, av_straddr,   av_set};

}  // namespace

uint64_t Av::find(const EndpointName& name) const {
  auto it = by_name.find(key_of(name));
  if (it != by_name.end()) return it->second;
  // A name fi_getinfo built from node/service (nonce 0) stands for whichever endpoint listens
  // at its address and port.
  EndpointName any = name;
  any.nonce = 0;
  it = by_name.find(key_of(any));
  return it == by_name.end() ? kAnySource : it->second;
}

uint64_t Av::insert(const EndpointName& name) {
  const auto [it, added] = by_name.emplace(key_of(name), names.size());
  if (added) {
    names.push_back(name);
    uses.push_back(0);
  }
  ++uses[it->second];
  return it->second;
}

int open_av(fid_domain* domain, fi_av_attr* attr, fid_av** out, void* context) {
  if (attr == nullptr) return -FI_EINVAL;
  // A named (shared) AV lives in shared memory between processes; this provider has none.
  if (attr->name != nullptr || (attr->flags & (FI_READ | FI_SYMMETRIC)) != 0) return -FI_ENOSYS;
  if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
    return -FI_EINVAL;
  auto* av = new Av();
  av->domain = reinterpret_cast<Domain*>(domain);
  init_fid(av->fid, FI_CLASS_AV, context, &av_fi_ops, &av_ops);
  *out = &av->fid;
  return 0;
}

}  // namespace mrc::fabric
