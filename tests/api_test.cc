// The native C++ API over real loopback sockets: two contexts in one process, each with its
// own progress thread; connect by exchanging ConnectionInfo; writes with immediate waited for
// through the CQ's file descriptor; errors that say what to fix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "io/pcap_file.h"
#include "mrc/mrc.hpp"

namespace mrc {
namespace {

ContextOptions options(int index) {
  ContextOptions o;
  for (int p = 0; p < 4; ++p) o.planes.push_back("127.0.0." + std::to_string(p + 1));
  o.port = static_cast<uint16_t>(24000 + index);
  o.ev_port_base = static_cast<uint16_t>(34000 + index * 400);
  return o;
}

// Why a pair of Context::open results is not two open contexts ("" if it is).
template <typename R>
std::string open_error(const R& a, const R& b) {
  if (!a.ok()) return a.error().message;
  return b.ok() ? "" : b.error().message;
}

// A queue pair in each context, each with one CQ for both directions, connected to each other.
struct Connected {
  Cq* cqa;
  Cq* cqb;
  Qp* qa;
  Qp* qb;
};
Connected connect_pair(Context& ca, uint32_t pa, Context& cb, uint32_t pb) {
  Connected c{ca.create_cq(64), cb.create_cq(64), nullptr, nullptr};
  c.qa = ca.create_qp(pa, c.cqa, c.cqa).value();
  c.qb = cb.create_qp(pb, c.cqb, c.cqb).value();
  // The info goes through its text form, as over an out-of-band channel.
  EXPECT_TRUE(c.qa->connect(ConnectionInfo::parse(c.qb->local_info().to_string()).value()).ok());
  EXPECT_TRUE(c.qb->connect(ConnectionInfo::parse(c.qa->local_info().to_string()).value()).ok());
  return c;
}

// A WRITE of `src` into `dst` over a new pair of connected queue pairs (ca's to cb's), waited
// for: how many send completions came within 10 s (1), the first in `wc`; the pair in `pair`.
size_t write_and_wait(Context& ca, uint32_t pa, Context& cb, uint32_t pb,
                      const std::vector<uint8_t>& src, std::vector<uint8_t>& dst, Completion& wc,
                      Connected& pair) {
  auto* source = const_cast<uint8_t*>(src.data());
  const auto src_mr = ca.register_memory(pa, source, src.size(), kAccessLocalWrite).value();
  const auto dst_mr = cb.register_memory(pb, dst.data(), dst.size(), kAccessRemoteWrite).value();
  pair = connect_pair(ca, pa, cb, pb);
  const Sge sge{src_mr.address, static_cast<uint32_t>(src.size()), src_mr.lkey};
  if (!pair.qa->post_write(1, std::span(&sge, 1), dst_mr.address, dst_mr.rkey).ok()) return 0;
  size_t got = 0;
  for (int i = 0; i < 200 && got == 0; ++i) got = pair.cqa->wait(std::span(&wc, 1), 50);
  return got;
}

TEST(Api, WriteWithImmediateBetweenTwoContexts) {
  auto a = Context::open(options(0));
  auto b = Context::open(options(1));
  ASSERT_TRUE(a.ok() && b.ok()) << open_error(a, b);
  Context& ca = *a.value();
  Context& cb = *b.value();
  std::vector<uint8_t> src(3 << 20), dst(3 << 20, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 13 + 5);
  const uint32_t pa = ca.alloc_pd(), pb = cb.alloc_pd();
  const auto src_mr = ca.register_memory(pa, src.data(), src.size(), kAccessLocalWrite).value();
  const auto dst_mr = cb.register_memory(pb, dst.data(), dst.size(), kAccessRemoteWrite).value();
  auto [cqa, cqb, qa, qb] = connect_pair(ca, pa, cb, pb);
  ASSERT_TRUE(qb->post_recv(42).ok());
  const Sge sge{src_mr.address, static_cast<uint32_t>(src.size()), src_mr.lkey};
  ASSERT_TRUE(
      qa->post_write_imm(7, std::span(&sge, 1), dst_mr.address, dst_mr.rkey, 0xC0FFEE).ok());
  Completion wc[4];
  size_t got_b = 0, got_a = 0;
  for (int i = 0; i < 200 && (got_b == 0 || got_a == 0); ++i) {
    if (got_b == 0) got_b = cqb->wait(wc, 50);
    if (got_b > 0 && got_a == 0) {
      EXPECT_EQ(wc[0].wr_id, 42u);
      EXPECT_EQ(wc[0].immediate, 0xC0FFEEu);
      EXPECT_EQ(wc[0].byte_len, src.size());
    }
    if (got_a == 0) got_a = cqa->wait(std::span(wc + 2, 2), 50);
  }
  ASSERT_EQ(got_b, 1u);
  ASSERT_EQ(got_a, 1u);
  EXPECT_EQ(wc[2].wr_id, 7u);
  EXPECT_EQ(wc[2].status, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), src.size()));
  EXPECT_EQ(qb->stats().data_bytes_placed, src.size());
}

// ContextOptions::pcap: every datagram the context sent and received is in the file ("%p": the
// process id), a write's data packets both ways (data out, SACKs in); a path that cannot be
// created and a budget out of range are refused, naming the option.
TEST(Api, PcapCapturesTheContextsDatagrams) {
  const std::string pattern = ::testing::TempDir() + "mrc-api-capture-%p.pcap";
  const std::string path =
      ::testing::TempDir() + "mrc-api-capture-" + std::to_string(getpid()) + ".pcap";
  {
    ContextOptions oa = options(0);
    oa.planes = {"127.0.0.201"};  // an address no other test uses
    oa.pcap = pattern;
    ContextOptions ob = options(1);
    ob.planes = {"127.0.0.202"};
    auto a = Context::open(oa);
    auto b = Context::open(ob);
    ASSERT_TRUE(a.ok() && b.ok()) << open_error(a, b);
    std::vector<uint8_t> src(200000, 7), dst(200000, 0);
    Completion wc;
    Connected pair{};
    Context& ca = *a.value();
    Context& cb = *b.value();
    ASSERT_EQ(write_and_wait(ca, ca.alloc_pd(), cb, cb.alloc_pd(), src, dst, wc, pair), 1u);
    ASSERT_EQ(wc.status, WcStatus::kSuccess);
  }  // the contexts close: the capture is complete
  auto reader = io::open_pcap(path);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  wire::CapturedDatagram d;
  size_t out = 0, in = 0;
  while (reader.value()->next(d)) {
    if (d.destination == "127.0.0.202:24001") ++out;        // to B: the write's data packets
    if (d.destination.rfind("127.0.0.201:", 0) == 0) ++in;  // from B: its acknowledgements
  }
  EXPECT_TRUE(reader.value()->error().empty()) << reader.value()->error();
  EXPECT_GE(out, 200000u / 9000u) << "data packets to the peer (payloads of at most 9000 bytes)";
  EXPECT_GE(in, 1u) << "acknowledgements from the peer";
  std::remove(path.c_str());

  ContextOptions nowhere = options(0);
  nowhere.planes = {"127.0.0.201"};
  nowhere.pcap = "/nonexistent-directory/capture.pcap";
  auto refused = Context::open(nowhere);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("ContextOptions::pcap: cannot create "
                                         "/nonexistent-directory/capture.pcap"),
            std::string::npos)
      << refused.error().message;
  ContextOptions no_budget = nowhere;
  no_budget.pcap = path;
  no_budget.pcap_max_mib = 0;
  auto zero = Context::open(no_budget);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("ContextOptions::pcap_max_mib 0"), std::string::npos)
      << zero.error().message;
}

// destroy_qp: only a queue pair of this context, once; the qpn is not given again, and new queue
// pairs of the same contexts move data.
TEST(Api, DestroyedQueuePairsAreGoneAndOthersWork) {
  auto a = Context::open(options(10));
  auto b = Context::open(options(11));
  ASSERT_TRUE(a.ok() && b.ok()) << open_error(a, b);
  Context& ca = *a.value();
  Context& cb = *b.value();
  std::vector<uint8_t> src(64 << 10, 0x3C), dst(64 << 10, 0);
  const uint32_t pa = ca.alloc_pd(), pb = cb.alloc_pd();
  const auto src_mr = ca.register_memory(pa, src.data(), src.size(), kAccessLocalWrite).value();
  const auto dst_mr = cb.register_memory(pb, dst.data(), dst.size(), kAccessRemoteWrite).value();
  auto first = connect_pair(ca, pa, cb, pb);
  const uint32_t old_qpn = first.qb->qpn();
  EXPECT_FALSE(ca.destroy_qp(first.qb).ok());  // b's, not a's
  EXPECT_FALSE(ca.destroy_qp(nullptr).ok());
  ASSERT_TRUE(cb.destroy_qp(first.qb).ok());
  EXPECT_FALSE(cb.destroy_qp(first.qb).ok());  // gone (the pointer is compared, never followed)
  auto second = connect_pair(ca, pa, cb, pb);
  EXPECT_NE(second.qb->qpn(), old_qpn);
  ASSERT_TRUE(second.qb->post_recv(1).ok());
  const Sge sge{src_mr.address, static_cast<uint32_t>(src.size()), src_mr.lkey};
  ASSERT_TRUE(
      second.qa->post_write_imm(2, std::span(&sge, 1), dst_mr.address, dst_mr.rkey, 9).ok());
  Completion wc[4];
  size_t got = 0;
  for (int i = 0; i < 200 && got == 0; ++i) got = second.cqb->wait(wc, 50);
  ASSERT_EQ(got, 1u);
  EXPECT_EQ(wc[0].immediate, 9u);
  EXPECT_EQ(dst, src);
  EXPECT_TRUE(ca.destroy_qp(first.qa).ok());  // a queue pair whose peer is gone goes too
}

// A context with caller-driven progress (ContextOptions::caller_progress): its waits run the
// datapath; when its caller stops calling, the progress thread answers the peer, both as a
// receiver (the peer's writes complete though nobody polls here) and as a sender (a post made
// here goes out though nobody polls here).
TEST(Api, CallerDrivenProgressHandsBackToTheThread) {
  ContextOptions caller_options = options(5);
  caller_options.caller_progress = true;
  auto a = Context::open(caller_options);
  auto b = Context::open(options(6));
  ASSERT_TRUE(a.ok() && b.ok()) << open_error(a, b);
  Context& ca = *a.value();
  Context& cb = *b.value();
  std::vector<uint8_t> src_b(2 << 20), dst_a(2 << 20, 0), src_a(2 << 20), dst_b(2 << 20, 0);
  for (size_t i = 0; i < src_b.size(); ++i) src_b[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < src_a.size(); ++i) src_a[i] = static_cast<uint8_t>(i * 11 + 3);
  const uint32_t pa = ca.alloc_pd(), pb = cb.alloc_pd();
  const auto dst_a_mr =
      ca.register_memory(pa, dst_a.data(), dst_a.size(), kAccessRemoteWrite).value();
  const auto src_a_mr =
      ca.register_memory(pa, src_a.data(), src_a.size(), kAccessLocalWrite).value();
  const auto src_b_mr =
      cb.register_memory(pb, src_b.data(), src_b.size(), kAccessLocalWrite).value();
  const auto dst_b_mr =
      cb.register_memory(pb, dst_b.data(), dst_b.size(), kAccessRemoteWrite).value();
  auto [cqa, cqb, qa, qb] = connect_pair(ca, pa, cb, pb);
  Completion wc[4];
  const auto wait_one = [&](Cq* cq) {
    size_t n = 0;
    for (int i = 0; i < 200 && n == 0; ++i) n = cq->wait(wc, 50);
    return n == 1 && wc[0].status == WcStatus::kSuccess;
  };
  const Sge from_b{src_b_mr.address, static_cast<uint32_t>(src_b.size()), src_b_mr.lkey};
  // 1. a's caller drives: it waits for b's write to land.
  ASSERT_TRUE(qa->post_recv(1).ok());
  ASSERT_TRUE(
      qb->post_write_imm(2, std::span(&from_b, 1), dst_a_mr.address, dst_a_mr.rkey, 5).ok());
  ASSERT_TRUE(wait_one(cqa));
  EXPECT_EQ(wc[0].wr_id, 1u);
  ASSERT_TRUE(wait_one(cqb));
  EXPECT_EQ(0, std::memcmp(src_b.data(), dst_a.data(), src_b.size()));
  // 2. Nobody calls into a: b's next write still completes (a's thread acknowledges it).
  std::fill(dst_a.begin(), dst_a.end(), 0);
  ASSERT_TRUE(qb->post_write(3, std::span(&from_b, 1), dst_a_mr.address, dst_a_mr.rkey).ok());
  ASSERT_TRUE(wait_one(cqb));
  EXPECT_EQ(wc[0].wr_id, 3u);
  EXPECT_EQ(0, std::memcmp(src_b.data(), dst_a.data(), src_b.size()));
  // 3. a posts and does not poll: its thread sends the write.
  const Sge from_a{src_a_mr.address, static_cast<uint32_t>(src_a.size()), src_a_mr.lkey};
  ASSERT_TRUE(qb->post_recv(4).ok());
  ASSERT_TRUE(
      qa->post_write_imm(6, std::span(&from_a, 1), dst_b_mr.address, dst_b_mr.rkey, 9).ok());
  ASSERT_TRUE(wait_one(cqb));
  EXPECT_EQ(wc[0].wr_id, 4u);
  EXPECT_EQ(0, std::memcmp(src_a.data(), dst_b.data(), src_a.size()));
  ASSERT_TRUE(wait_one(cqa));
  EXPECT_EQ(wc[0].wr_id, 6u);
}

// The connection string carries the backend when it is not udp (so udp strings are unchanged);
// a peer on another backend is refused at connect, naming both; malformed numbers are errors.
TEST(Api, ConnectionInfoCarriesTheBackend) {
  ConnectionInfo info;
  info.qpn = 0x123;
  info.psn = 77;
  info.planes = {"127.0.0.1:4791", "127.0.0.2:4791"};
  EXPECT_EQ(info.to_string().find("backend"), std::string::npos);
  info.backend = mrc::Backend::kXdp;
  auto parsed = ConnectionInfo::parse(info.to_string());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->backend, mrc::Backend::kXdp);
  EXPECT_EQ(parsed->qpn, 0x123u);
  EXPECT_EQ(parsed->planes, info.planes);
  for (const char* bad :
       {"mrc1 qpn=x psn=1 planes=127.0.0.1:1", "mrc1 qpn=1 psn=99999999999 planes=127.0.0.1:1",
        "mrc1 qpn=1 psn=1 planes=127.0.0.1:1 backend=rdma", "mrc1 qpn=1 psn=1 planes=a backend"})
    EXPECT_FALSE(ConnectionInfo::parse(bad).ok()) << bad;

  ContextOptions o = options(7);
  o.planes.resize(2);
  auto ctx = Context::open(o);
  ASSERT_TRUE(ctx.ok());
  Cq* cq = ctx.value()->create_cq(8);
  Qp* qp = ctx.value()->create_qp(ctx.value()->alloc_pd(), cq, cq).value();
  auto refused = qp->connect(info);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find(
                "the peer uses the xdp backend and this context the udp backend"),
            std::string::npos)
      << refused.error().message;
}

TEST(Api, ErrorsSayWhatToFix) {
  ContextOptions bad = options(2);
  bad.planes = {"127.0.0.1", "not-an-address"};
  auto r = Context::open(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not-an-address"), std::string::npos);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_FALSE(Context::open(ContextOptions{}).ok());

  auto ctx = Context::open(options(3));
  ASSERT_TRUE(ctx.ok());
  auto twice = Context::open(options(3));  // its ports are taken: the error names the setting
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("ContextOptions::port"), std::string::npos)
      << twice.error().message;
  EXPECT_EQ(twice.error().code, Errc::kAddressInUse);
  Context& c = *ctx.value();
  Cq* cq = c.create_cq(16);
  const uint32_t pd = c.alloc_pd();
  Qp* qp = c.create_qp(pd, cq, cq).value();
  const Sge none{};
  auto early = qp->post_write(1, std::span(&none, 0), 0, 0);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().message.find("connect()"), std::string::npos) << early.error().message;
  EXPECT_EQ(early.error().code, Errc::kInvalidState);
  ConnectionInfo two_planes{1, 1, {"127.0.0.1:1", "127.0.0.2:1"}};
  auto mismatch = qp->connect(two_planes);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message.find("same planes"), std::string::npos);
  QpConfig silly;
  silly.ev_count = 7;
  auto bad_qp = c.create_qp(pd, cq, cq, silly);
  ASSERT_FALSE(bad_qp.ok());
  EXPECT_NE(bad_qp.error().message.find("ev_count"), std::string::npos);
  EXPECT_EQ(bad_qp.error().code, Errc::kInvalidArgument);
  auto unknown_key = c.deregister_memory(0xDEAD);
  ASSERT_FALSE(unknown_key.ok());
  EXPECT_EQ(unknown_key.error().code, Errc::kNotFound);
  EXPECT_EQ(unknown_key.error().message.rfind("deregister_memory: ", 0), 0u)
      << unknown_key.error().message;
  EXPECT_FALSE(ConnectionInfo::parse("hello").ok());
}

TEST(Api, UnreachablePeerFailsWithRetryExceeded) {
  auto ctx = Context::open(options(4));
  ASSERT_TRUE(ctx.ok());
  Context& c = *ctx.value();
  Cq* cq = c.create_cq(16);
  const uint32_t pd = c.alloc_pd();
  QpConfig quick;
  quick.timeout = 6;
  quick.retry_linear = 2;
  quick.retry_exp = 2;
  Qp* qp = c.create_qp(pd, cq, cq, quick).value();
  std::vector<uint8_t> buf(4096);
  const auto mr = c.register_memory(pd, buf.data(), buf.size(), kAccessLocalWrite).value();
  // Nobody listens on these ports.
  ASSERT_TRUE(qp->connect(ConnectionInfo{0x100,
                                         5,
                                         {"127.0.0.1:24999", "127.0.0.2:24999", "127.0.0.3:24999",
                                          "127.0.0.4:24999"}})
                  .ok());
  const Sge sge{mr.address, 4096, mr.lkey};
  ASSERT_TRUE(qp->post_write(9, std::span(&sge, 1), 0x1000, 1).ok());
  Completion wc[2];
  size_t n = 0;
  for (int i = 0; i < 100 && n == 0; ++i) n = cq->wait(wc, 50);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(qp->state(), QpState::kError);
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

// QPNs and initial PSNs cannot be guessed from the order of creation or from another context's:
// a forged packet must name a live QPN and land in its PSN window.
TEST(Api, QpnsAndInitialPsnsAreUnpredictable) {
  auto a = Context::open(options(8));
  auto b = Context::open(options(9));
  ASSERT_TRUE(a.ok() && b.ok()) << open_error(a, b);
  std::vector<ConnectionInfo> infos[2];
  for (int side = 0; side < 2; ++side) {
    Context& c = side == 0 ? *a.value() : *b.value();
    Cq* cq = c.create_cq(16);
    const uint32_t pd = c.alloc_pd();
    for (int q = 0; q < 4; ++q)
      infos[side].push_back(c.create_qp(pd, cq, cq).value()->local_info());
  }
  int sequential = 0, same_as_other_context = 0, same_psn = 0;
  for (size_t q = 0; q < 4; ++q) {
    if (q > 0 && infos[0][q].qpn == infos[0][q - 1].qpn + 1) ++sequential;
    same_as_other_context += infos[0][q].qpn == infos[1][q].qpn ? 1 : 0;
    same_psn += infos[0][q].psn == infos[1][q].psn ? 1 : 0;
  }
  EXPECT_LT(sequential, 3);  // all three by chance: 2^-39
  EXPECT_LT(same_as_other_context, 4);
  EXPECT_LT(same_psn, 4);
  EXPECT_NE(infos[0][0].psn, infos[0][1].psn);  // equal by chance: 2^-24
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

ContextOptions secure_options(int index, SecureMode mode, uint8_t key_byte) {
  ContextOptions o = options(index);
  o.secure = mode;
  o.preshared_key.assign(32, key_byte);
  return o;
}

// Secure mode through the API: the key exchange rides in the connection strings, the write
// verifies, the wire carried only secure packets; modes or keys that differ fail connect() on
// both ends with both named, before any packet.
TEST(ApiSecure, EncryptedWriteAndConnectErrors) {
  auto a = Context::open(secure_options(10, SecureMode::kEncrypt, 7));
  auto b = Context::open(secure_options(11, SecureMode::kEncrypt, 7));
  ASSERT_TRUE(a.ok() && b.ok()) << open_error(a, b);
  Context& ca = *a.value();
  Context& cb = *b.value();
  std::vector<uint8_t> src(1 << 20), dst(1 << 20, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  const uint32_t pa = ca.alloc_pd(), pb = cb.alloc_pd();
  Completion wc;
  Connected pair{};
  ASSERT_EQ(write_and_wait(ca, pa, cb, pb, src, dst, wc, pair), 1u);
  auto [cqa, cqb, qa, qb] = pair;
  EXPECT_NE(qa->local_info().to_string().find(" secure=encrypt key="), std::string::npos);
  EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), src.size()));

  // The same key files, another mode; then another key.
  auto plain = Context::open(options(12));
  ASSERT_TRUE(plain.ok());
  Cq* cq = plain.value()->create_cq(4);
  Qp* qp = plain.value()->create_qp(plain.value()->alloc_pd(), cq, cq).value();
  Qp* qs = ca.create_qp(pa, cqa, cqa).value();
  auto refused = qp->connect(qs->local_info());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("this end is 'off', the peer (queue pair"),
            std::string::npos)
      << refused.error().message;
  refused = qs->connect(qp->local_info());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("this end is 'encrypt'"), std::string::npos);
  auto other = Context::open(secure_options(13, SecureMode::kEncrypt, 9));
  ASSERT_TRUE(other.ok());
  Cq* cq2 = other.value()->create_cq(4);
  Qp* qo = other.value()->create_qp(other.value()->alloc_pd(), cq2, cq2).value();
  refused = qo->connect(qs->local_info());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("pre-shared keys differ: this end's key id is "),
            std::string::npos)
      << refused.error().message;
  ConnectionInfo forged = qs->local_info();
  forged.psn ^= 1;  // an offer altered on the way
  Qp* qf = cb.create_qp(pb, cqb, cqb).value();
  refused = qf->connect(forged);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("does not prove the pre-shared key"), std::string::npos);
  ContextOptions keyless = options(14);  // refused before it binds a port
  keyless.secure = SecureMode::kAuthenticate;
  auto no_key = Context::open(keyless);
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.error().message.find("preshared_key"), std::string::npos);
}

}  // namespace
}  // namespace mrc
