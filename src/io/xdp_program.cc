#include "io/xdp_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <netinet/in.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "util/errno_map.h"

namespace mrc::io {
namespace {

constexpr const char* kProgramName = "mrc_xdp";
constexpr int kRedirectMapHelper = 51;  // BPF_FUNC_redirect_map
// struct xdp_md: data at 0, data_end at 4, rx_queue_index at 16.
constexpr int16_t kMdData = 0, kMdDataEnd = 4, kMdRxQueue = 16;

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xF;
  i.src_reg = src & 0xF;
  i.off = off;
  i.imm = imm;
  return i;
}

// A 16-bit field in network byte order as a BPF_H load reads it on this host.
int32_t as_loaded(uint16_t host_order) {
  const uint16_t network = htons(host_order);
  uint16_t loaded;
  std::memcpy(&loaded, &network, 2);
  return loaded;
}

// The program (see the header); `pass_jumps` collects the jumps to the final XDP_PASS.
std::vector<bpf_insn> program(uint16_t port, int map_fd) {
  std::vector<bpf_insn> p;
  std::vector<size_t> pass_jumps;
  const auto jump_to_pass_unless = [&](int32_t value) {  // r5 != value -> pass
    pass_jumps.push_back(p.size());
    p.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 0, value));
  };
  p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0));      // r6 = ctx
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, kMdData, 0));  // r2 = data
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, kMdDataEnd, 0));
  p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_4, BPF_REG_2, 0, 0));
  p.push_back(insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_4, 0, 0, 42));  // headers
  pass_jumps.push_back(p.size());
  p.push_back(insn(BPF_JMP | BPF_JGT | BPF_X, BPF_REG_4, BPF_REG_3, 0, 0));   // too short
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_H, BPF_REG_5, BPF_REG_2, 12, 0));  // EtherType
  jump_to_pass_unless(as_loaded(0x0800));
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_B, BPF_REG_5, BPF_REG_2, 14, 0));  // version, IHL
  jump_to_pass_unless(0x45);
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_B, BPF_REG_5, BPF_REG_2, 23, 0));  // protocol
  jump_to_pass_unless(IPPROTO_UDP);
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_H, BPF_REG_5, BPF_REG_2, 20, 0));  // flags, offset
  p.push_back(insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_5, 0, 0, as_loaded(0x3FFF)));
  jump_to_pass_unless(0);                                                     // fragment
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_H, BPF_REG_5, BPF_REG_2, 36, 0));  // UDP dest port
  jump_to_pass_unless(as_loaded(port));
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_6, kMdRxQueue, 0));
  p.push_back(insn(BPF_LD | BPF_IMM | BPF_DW, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd));
  p.push_back(insn(0, 0, 0, 0, 0));                                           // imm64 high half
  p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, XDP_PASS));  // fallback
  p.push_back(insn(BPF_JMP | BPF_CALL, 0, 0, 0, kRedirectMapHelper));
  p.push_back(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  const size_t pass = p.size();
  p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS));
  p.push_back(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  for (size_t j : pass_jumps) p[j].off = static_cast<int16_t>(pass - j - 1);
  return p;
}

std::string permission_hint(int e) {
  if (e == EPERM || e == EACCES)
    return " (the xdp backend needs root, or CAP_BPF, CAP_NET_ADMIN and CAP_NET_RAW; or use "
           "--backend udp)";
  return "";
}

// Refuses an interface that already carries an XDP program, naming it.
Result<Ok, Error> check_free(const std::string& ifname, int ifindex) {
  uint32_t id = 0;
  if (bpf_xdp_query_id(ifindex, 0, &id) != 0 || id == 0) return Ok{};
  std::string name = "?";
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd >= 0) {
    bpf_prog_info info{};
    uint32_t length = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &length) == 0) name = info.name;
    close(fd);
  }
  if (name == kProgramName)
    return fail(Errc::kAddressInUse,
                "interface " + ifname +
                    " is in use by another mrc host with the xdp backend (its XDP program, id " +
                    std::to_string(id) + "): one per interface");
  return fail(Errc::kAddressInUse, "interface " + ifname + " already has an XDP program (" + name +
                                       ", id " + std::to_string(id) +
                                       "): remove it with `ip link set dev " + ifname +
                                       " xdp off` if it is not in use");
}

}  // namespace

Result<XdpProgram, Error> XdpProgram::attach(const std::string& ifname, int ifindex, uint16_t port,
                                             uint32_t queues, bool prefer_generic) {
  if (auto free = check_free(ifname, ifindex); !free.ok()) return Err{free.error()};
  XdpProgram x;
  x.map_fd_ = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "mrc_xsks", 4, 4, queues, nullptr);
  if (x.map_fd_ < 0) {
    const int e = errno;
    Error error = system_error("creating the AF_XDP socket map", e);
    error.message += permission_hint(e);
    return Err{error};
  }
  const std::vector<bpf_insn> insns = program(port, x.map_fd_);
  std::vector<char> log(16384);
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_level = 1,
              .log_size = static_cast<uint32_t>(log.size()), .log_buf = log.data());
  opts.prog_flags = BPF_F_XDP_HAS_FRAGS;
  x.prog_fd_ =
      bpf_prog_load(BPF_PROG_TYPE_XDP, kProgramName, "GPL", insns.data(), insns.size(), &opts);
  if (x.prog_fd_ < 0) {  // a kernel before multi-buffer XDP: without the flag
    opts.prog_flags = 0;
    x.prog_fd_ =
        bpf_prog_load(BPF_PROG_TYPE_XDP, kProgramName, "GPL", insns.data(), insns.size(), &opts);
  }
  if (x.prog_fd_ < 0) {
    const int e = errno;
    Error error = system_error("loading the XDP program", e);
    error.message += permission_hint(e);
    if (log[0] != 0) error.message += std::string("; verifier: ") + log.data();
    return Err{error};
  }
  // A BPF link, not a plain attachment: the kernel detaches the program when the link's last
  // descriptor closes, so a process that dies leaves nothing attached.
  const std::array<uint32_t, 2> order = prefer_generic
                                            ? std::array{XDP_FLAGS_SKB_MODE, XDP_FLAGS_DRV_MODE}
                                            : std::array{XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE};
  for (uint32_t mode : order) {
    LIBBPF_OPTS(bpf_link_create_opts, link_opts, .flags = mode);
    x.link_fd_ = bpf_link_create(x.prog_fd_, ifindex, BPF_XDP, &link_opts);
    if (x.link_fd_ >= 0) {
      x.attach_flags_ = mode;
      return x;
    }
  }
  const int e = errno;
  Error error = system_error("attaching the XDP program to " + ifname, e);
  error.message += permission_hint(e);
  return Err{error};
}

Result<Ok, Error> XdpProgram::add_socket(uint32_t queue, int xsk_fd) {
  if (bpf_map_update_elem(map_fd_, &queue, &xsk_fd, 0) != 0)
    return Err{system_error("adding the AF_XDP socket to the XDP map", errno)};
  return Ok{};
}

const char* XdpProgram::mode() const {
  return attach_flags_ == XDP_FLAGS_DRV_MODE ? "native" : "generic";
}

void XdpProgram::release() {
  if (link_fd_ >= 0) close(link_fd_);  // detaches the program
  if (prog_fd_ >= 0) close(prog_fd_);
  if (map_fd_ >= 0) close(map_fd_);
  attach_flags_ = 0;
  prog_fd_ = map_fd_ = link_fd_ = -1;
}

XdpProgram::XdpProgram(XdpProgram&& o) noexcept
    : prog_fd_(o.prog_fd_),
      map_fd_(o.map_fd_),
      link_fd_(o.link_fd_),
      attach_flags_(o.attach_flags_) {
  o.prog_fd_ = o.map_fd_ = o.link_fd_ = -1;
  o.attach_flags_ = 0;
}

XdpProgram& XdpProgram::operator=(XdpProgram&& o) noexcept {
  if (this != &o) {
    release();
    prog_fd_ = o.prog_fd_;
    map_fd_ = o.map_fd_;
    link_fd_ = o.link_fd_;
    attach_flags_ = o.attach_flags_;
    o.prog_fd_ = o.map_fd_ = o.link_fd_ = -1;
    o.attach_flags_ = 0;
  }
  return *this;
}

XdpProgram::~XdpProgram() {
  release();
}

}  // namespace mrc::io
