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

uint32_t draw_field(const mrc_ctl_ev_field& f, Prng& prng) {
  const uint32_t r =
      f.min_val + static_cast<uint32_t>(prng.below(uint64_t{f.max_val} - f.min_val + 1));
  return expand_ev_field(f, r);
}

uint32_t draw_port(const std::vector<mrc_ctl_ev_field>& fields, Prng& prng) {
  uint32_t port = 0;
  for (const mrc_ctl_ev_field& f : fields) port = port << f.width | draw_field(f, prng);
  return port;
}

// Writes `value` into `width` bits of `val` from bit `offset` (bit 0: val[0]'s most significant).
void pack_bits(uint8_t* val, uint32_t offset, uint32_t width, uint32_t value) {
  for (uint32_t b = 0; b < width; ++b) {
    const uint32_t bit = (value >> (width - 1 - b)) & 1;
    const uint32_t at = offset + b;
    val[at / 8] |= static_cast<uint8_t>(bit << (7 - at % 8));
  }
}

// `count` EVs from `draw`, each on the plane `plane_of` gives it (-1: drawn again), the planes
// kept even while they can be (a bounded number of draws), then filled as drawn.
std::vector<mrc_ctl_ev> draw_evs(uint32_t count, size_t planes,
                                 const std::function<mrc_ctl_ev()>& draw,
                                 const std::function<int(const mrc_ctl_ev&)>& plane_of) {
  std::vector<mrc_ctl_ev> evs;
  std::vector<uint32_t> per_plane(planes, 0);
  const uint32_t fair = (count + static_cast<uint32_t>(planes) - 1) / static_cast<uint32_t>(planes);
  const uint64_t budget =
      uint64_t{count} * 256 + 4096;  // draws before giving up on balance, then on all
  for (uint64_t attempt = 0; evs.size() < count && attempt < 2 * budget; ++attempt) {
    mrc_ctl_ev ev = draw();
    const int plane = plane_of(ev);
    if (plane < 0) continue;
    if (attempt < budget && per_plane[static_cast<size_t>(plane)] >= fair)
      continue;  // keep planes even
    ++per_plane[static_cast<size_t>(plane)];
    ev.port = static_cast<uint8_t>(plane + 1);
    evs.push_back(ev);
  }
  if (evs.size() < count) evs.clear();
  return evs;
}

}  // namespace

std::string check_ev_fields(const std::vector<mrc_ctl_ev_field>& fields, uint32_t field_bits,
                            uint32_t total_bits) {
  if (fields.empty() || fields.size() > kMaxEvFields) return "1 to 8 fields";
  uint32_t total = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const mrc_ctl_ev_field& f = fields[i];
    const std::string name = "field " + std::to_string(i);
    if (f.width < 1 || f.width > field_bits)
      return name + ": width must be 1-" + std::to_string(field_bits);
    if ((f.init_val & ~width_mask(f.width)) != 0) return name + ": init_val wider than the field";
    if ((f.mask & ~width_mask(f.width)) != 0) return name + ": mask has bits outside the field";
    if ((f.max_val & ~width_mask(static_cast<uint32_t>(std::popcount(f.mask)))) != 0)
      return name + ": max_val wider than the mask's bits";
    if (f.min_val > f.max_val) return name + ": min_val above max_val";
    total += f.width;
  }
  if (total > total_bits)
    return total_bits == 16
               ? "fields wider than a UDP source port (16 bits)"
               : "fields wider than the EV format (" + std::to_string(total_bits) + " bits)";
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
  return draw_evs(
      count, planes.size(), [&] { return port_ev(draw_port(fields, prng), 0); },
      [&](const mrc_ctl_ev& ev) {
        return plane_of(static_cast<uint32_t>(ev.val[0] << 8 | ev.val[1]), planes);
      });
}

std::vector<mrc_ctl_ev> generate_address_evs(const std::vector<mrc_ctl_ev_field>& fields,
                                             const std::vector<uint32_t>& fmt_widths,
                                             uint32_t count, size_t planes,
                                             const std::function<int(const mrc_ctl_ev&)>& plane_of,
                                             uint64_t seed) {
  if (fmt_widths.size() < fields.size()) return {};
  Prng prng(seed);
  const auto draw = [&] {
    mrc_ctl_ev ev{};
    uint32_t offset = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      pack_bits(ev.val, offset, fmt_widths[i], draw_field(fields[i], prng));
      offset += fmt_widths[i];
    }
    return ev;
  };
  return draw_evs(count, planes, draw, plane_of);
}

}  // namespace mrc::ocp
