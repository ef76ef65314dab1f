// EV generation from field rules (OCP EV mode GEN). See ev_gen.h.
#include "ocp/ev_gen.h"

#include <bit>

#include "util/prng.h"

namespace mrc::ocp {

namespace {

uint32_t width_mask(uint32_t width) {
  return width >= 32 ? ~0u : (1u << width) - 1;
}

mrc_ctl_ev port_ev(uint32_t port, int plane) {
  mrc_ctl_ev ev{};
  ev.val[0] = static_cast<uint8_t>(port >> 8);
  ev.val[1] = static_cast<uint8_t>(port);
  ev.port = static_cast<uint8_t>(plane + 1);
  return ev;
}

int plane_of(uint32_t port, const std::vector<PortRange>& planes) {
  for (size_t p = 0; p < planes.size(); ++p)
    if (port >= planes[p].first && port < planes[p].first + planes[p].count)
      return static_cast<int>(p);
  return -1;
}

uint32_t draw_port(const std::vector<mrc_ctl_ev_field>& fields, Prng& prng) {
  uint32_t port = 0;
  for (const mrc_ctl_ev_field& f : fields) {
    const uint32_t r =
        f.min_val + static_cast<uint32_t>(prng.below(uint64_t{f.max_val} - f.min_val + 1));
    port = port << f.width | expand_ev_field(f, r);
  }
  return port;
}

}  // namespace

std::string check_ev_fields(const std::vector<mrc_ctl_ev_field>& fields) {
  if (fields.empty() || fields.size() > kMaxEvFields) return "1 to 8 fields";
  uint32_t total = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const mrc_ctl_ev_field& f = fields[i];
    const std::string name = "field " + std::to_string(i);
    if (f.width < 1 || f.width > 16) return name + ": width must be 1-16";
    if ((f.init_val & ~width_mask(f.width)) != 0) return name + ": init_val wider than the field";
    if ((f.mask & ~width_mask(f.width)) != 0) return name + ": mask has bits outside the field";
    if ((f.max_val & ~width_mask(static_cast<uint32_t>(std::popcount(f.mask)))) != 0)
      return name + ": max_val wider than the mask's bits";
    if (f.min_val > f.max_val) return name + ": min_val above max_val";
    total += f.width;
  }
  if (total > 16) return "fields wider than a UDP source port (16 bits)";
  return {};
}

uint32_t expand_ev_field(const mrc_ctl_ev_field& field, uint32_t r) {
  uint32_t value = field.init_val & ~field.mask;
  int bit = std::popcount(field.mask) - 1;  // r's next most significant bit
  for (int pos = 31; pos >= 0 && bit >= 0; --pos) {
    if (((field.mask >> pos) & 1) == 0) continue;
    value |= ((r >> bit) & 1) << pos;
    --bit;
  }
  return value;
}

std::vector<mrc_ctl_ev> generate_evs(const std::vector<mrc_ctl_ev_field>& fields, uint32_t count,
                                     const std::vector<PortRange>& planes, uint64_t seed) {
  Prng prng(seed);
  std::vector<mrc_ctl_ev> evs;
  std::vector<uint32_t> per_plane(planes.size(), 0);
  const uint32_t fair =
      (count + static_cast<uint32_t>(planes.size()) - 1) / static_cast<uint32_t>(planes.size());
  const uint64_t budget =
      uint64_t{count} * 256 + 4096;  // draws before giving up on balance, then on all
  for (uint64_t attempt = 0; evs.size() < count && attempt < 2 * budget; ++attempt) {
    const uint32_t port = draw_port(fields, prng);
    const int plane = plane_of(port, planes);
    if (plane < 0) continue;
    if (attempt < budget && per_plane[static_cast<size_t>(plane)] >= fair)
      continue;  // keep planes even
    ++per_plane[static_cast<size_t>(plane)];
    evs.push_back(port_ev(port, plane));
  }
  if (evs.size() < count) evs.clear();
  return evs;
}

}  // namespace mrc::ocp
