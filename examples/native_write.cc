// The native C++ API in one program (docs/NATIVE-API.md): two contexts stand for two hosts, each
// on two loopback planes; one writes 1 MiB with an immediate into the other's registered
// memory, and the receiver checks every byte. Between real hosts the same calls run in two
// processes, and the three things marked "to the peer" travel over any channel the program
// already has (a TCP socket, a rendezvous store, MPI): the connection line, the address and
// the rkey.
//
// Build against an installed mrc:  c++ -std=c++20 native_write.cc $(pkg-config --cflags --libs mrc)
// Run:                              ./a.out [FIRST_UDP_PORT]   (default 40000)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mrc/mrc.hpp>
#include <vector>

namespace {

// A context on two loopback planes. Its UDP receive port and its EV source ports (one per EV:
// an EV is a UDP source port) must be free; another program may hold them, so try further on.
std::unique_ptr<mrc::Context> open_context(uint16_t& port) {
  for (;; port += 7) {
    mrc::ContextOptions o;
    o.planes = {"127.0.0.1", "127.0.0.2"};
    o.port = port;
    o.ev_port_base = static_cast<uint16_t>(port + 1);
    auto ctx = mrc::Context::open(o);
    if (ctx.ok()) return std::move(ctx.value());
    std::fprintf(stderr, "port %u: %s: %s\n", port, mrc::to_string(ctx.error().code),
                 ctx.error().message.c_str());
    if (ctx.error().code != mrc::Errc::kAddressInUse || port > 60000) return nullptr;
  }
}

int fail(const char* what, const mrc::Error& e) {
  std::fprintf(stderr, "%s: %s: %s\n", what, mrc::to_string(e.code), e.message.c_str());
  return 1;
}

// Connects two queue pairs: each side's local_info() goes to the peer as one line of text (to
// the peer), which the peer parses and connects to.
int connect_pair(mrc::Qp& qa, mrc::Qp& qb) {
  auto info_a = mrc::ConnectionInfo::parse(qa.local_info().to_string());
  auto info_b = mrc::ConnectionInfo::parse(qb.local_info().to_string());
  if (!info_a.ok()) return fail("parse", info_a.error());
  if (!info_b.ok()) return fail("parse", info_b.error());
  if (auto r = qa.connect(info_b.value()); !r.ok()) return fail("connect", r.error());
  if (auto r = qb.connect(info_a.value()); !r.ok()) return fail("connect", r.error());
  return 0;
}

// One successful completion from `cq` into `wc` within 30 s (Cq::wait sleeps until one is
// there), or false.
bool wait_one(mrc::Cq* cq, mrc::Completion& wc) {
  size_t got = 0;
  for (int i = 0; i < 600 && got == 0; ++i) got = cq->wait(std::span(&wc, 1), 50);
  return got == 1 && wc.status == mrc::WcStatus::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  // Bad configuration is an error with a message, never an exception or a crash.
  auto none = mrc::Context::open({});
  if (none.ok() || none.error().code != mrc::Errc::kInvalidArgument) return 1;
  std::printf("a context without planes is refused: %s\n", none.error().message.c_str());

  uint16_t port = static_cast<uint16_t>(argc > 1 ? std::atoi(argv[1]) : 40000);
  auto a = open_context(port);  // the writer
  port = static_cast<uint16_t>(port + 1 + mrc::ev_source_ports(2));
  auto b = open_context(port);  // the receiver
  if (!a || !b) return 1;

  // Memory: a protection domain, and regions registered in it. The receiver's region allows
  // remote writes; its address and rkey go to the peer.
  std::vector<uint8_t> src(1 << 20), dst(1 << 20, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  const uint32_t pa = a->alloc_pd(), pb = b->alloc_pd();
  auto smr = a->register_memory(pa, src.data(), src.size(), mrc::kAccessLocalWrite);
  auto dmr = b->register_memory(pb, dst.data(), dst.size(), mrc::kAccessRemoteWrite);
  if (!smr.ok()) return fail("register source", smr.error());
  if (!dmr.ok()) return fail("register target", dmr.error());

  // Completion queues and a queue pair on each side.
  mrc::Cq* ca = a->create_cq(16);
  mrc::Cq* cb = b->create_cq(16);
  auto qa = a->create_qp(pa, ca, ca);
  auto qb = b->create_qp(pb, cb, cb);
  if (!qa.ok()) return fail("create_qp", qa.error());
  if (!qb.ok()) return fail("create_qp", qb.error());

  if (connect_pair(*qa.value(), *qb.value()) != 0) return 1;

  // The receiver posts a receive for the immediate; the writer writes into the peer's region.
  if (auto r = qb.value()->post_recv(1); !r.ok()) return fail("post_recv", r.error());
  const mrc::Sge sge{smr.value().address, static_cast<uint32_t>(src.size()), smr.value().lkey};
  auto posted = qa.value()->post_write_imm(/*wr_id=*/2, std::span(&sge, 1), dmr.value().address,
                                           dmr.value().rkey, /*immediate=*/42);
  if (!posted.ok()) return fail("post_write_imm", posted.error());

  // Completions: the writer's when the receiver has acknowledged every packet, the
  // receiver's when the whole message is placed.
  mrc::Completion wc;
  if (!wait_one(cb, wc) || wc.immediate != 42) {
    std::fprintf(stderr, "no receive completion for the write\n");
    return 1;
  }
  if (!wait_one(ca, wc) || wc.wr_id != 2) {
    std::fprintf(stderr, "no send completion for the write\n");
    return 1;
  }
  if (std::memcmp(src.data(), dst.data(), src.size()) != 0) {
    std::fprintf(stderr, "the bytes differ\n");
    return 1;
  }
  const mrc::QpStats s = qa.value()->stats();
  std::printf(
      "native API: 1 MiB written over %d planes, verified: %llu data packets, %llu "
      "retransmitted, smoothed RTT %lld us\n",
      a->planes(), static_cast<unsigned long long>(s.data_packets_sent),
      static_cast<unsigned long long>(s.retransmits),
      static_cast<long long>(s.rtt.smoothed_ns / 1000));
  return 0;
}
