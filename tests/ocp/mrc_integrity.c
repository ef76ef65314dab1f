/* mrc_integrity: data integrity and WRITE-with-immediate ordering through the OCP MRC API.
 *
 * One process opens two software devices (two hosts' NICs) and connects a QP on each. For
 * every message the sender posts one to three unsignalled RDMA WRITEs of pattern data into a
 * slot of the receiver's buffer, then an RDMA WRITE with immediate carrying the message number.
 * The receiver checks, on every receive completion, that the immediates arrive in order, that
 * the completion's opcode and flags are right, and that every byte of that message (all the
 * writes posted before the immediate) is already in place: the reliable-connection guarantee.
 * Then inline data (cap.max_inline_data, IBV_SEND_INLINE): WRITEs with immediate from an
 * unregistered buffer overwritten right after each post arrive as posted, a send queue's worth
 * in flight at a time, round the QP's staging ring several times; more than granted is refused.
 *
 *   mrc_integrity <sender device> <receiver device> [messages]
 */
#include <arpa/inet.h>

#include "ocp_common.h"

/* A CQ with an unacknowledged event cannot be destroyed (it is in use by the QP anyway). */
#define EXPECT_DESTROY_BUSY(cq) CHECK(mrc_destroy_cq(cq) != 0 && errno == EBUSY, "destroy busy CQ")

enum { kSlots = 16, kSlotBytes = 96 * 1024, kWindow = 8 };

static uint8_t pattern(uint32_t message, uint32_t offset) {
  return (uint8_t)((message * 131u) ^ (offset * 7u) ^ (offset >> 8));
}

static uint32_t message_length(uint32_t message) {
  uint32_t x = message * 2654435761u;
  x ^= x >> 13;
  return 1 + x % (kSlotBytes - 1);
}

/* Sender side: message m as 1-3 plain writes plus the final write with immediate. */
static void send_message(struct end *s, const struct peer_info *r, uint32_t m) {
  const uint32_t len = message_length(m);
  const uint32_t slot = m % kSlots;
  uint8_t *local = s->buf + (size_t)slot * kSlotBytes;
  for (uint32_t i = 0; i < len; i++) local[i] = pattern(m, i);
  const uint32_t parts = 1 + m % 3;
  const uint32_t chunk = len / parts;
  uint32_t off = 0;
  for (uint32_t p = 0; p + 1 < parts && chunk > 0; p++, off += chunk)
    CHECK(post_write(s->qp, s->mr, local + off, chunk, r->addr + (uint64_t)slot * kSlotBytes + off, r->rkey, 0, 0,
                     0, m) == 0,
          "post WRITE of message %u", m);
  CHECK(post_write(s->qp, s->mr, local + off, len - off, r->addr + (uint64_t)slot * kSlotBytes + off, r->rkey, 1,
                   htonl(m), 1, m) == 0,
        "post WRITE_WITH_IMM of message %u", m);
}

static void check_message(struct end *r, const struct ibv_wc *wc, uint32_t expect) {
  CHECK(wc->status == IBV_WC_SUCCESS, "receive completion: %s", ibv_wc_status_str(wc->status));
  CHECK(wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM, "receive opcode %d", (int)wc->opcode);
  CHECK(wc->wc_flags & IBV_WC_WITH_IMM, "IBV_WC_WITH_IMM missing");
  const uint32_t m = ntohl(wc->imm_data);
  CHECK(m == expect, "immediate %u arrived where %u was due (out of order)", m, expect);
  const uint8_t *data = r->buf + (size_t)(m % kSlots) * kSlotBytes;
  const uint32_t len = message_length(m);
  for (uint32_t i = 0; i < len; i++)
    CHECK(data[i] == pattern(m, i), "message %u byte %u: 0x%02x, expected 0x%02x", m, i, data[i], pattern(m, i));
}

/* One more message, received by blocking on the receive CQ's completion channel. */
static void wait_on_channel(struct end *s, struct end *r, const struct peer_info *ri, uint32_t m) {
  CHECK(mrc_req_notify_cq(r->recv_cq, 0) == 0, "mrc_req_notify_cq");
  send_message(s, ri, m);
  struct mrc_cq *cq = NULL;
  void *cq_context = NULL;
  CHECK(mrc_get_cq_event(r->channel, &cq, &cq_context) == 0, "mrc_get_cq_event");
  CHECK(cq == r->recv_cq && cq_context == r, "the event names the armed CQ and its context");
  EXPECT_DESTROY_BUSY(r->recv_cq);
  mrc_ack_cq_events(cq, 1);
  struct ibv_wc wc = wait_wc(r->recv_cq);
  check_message(r, &wc, m);
  wc = wait_wc(s->send_cq);
  CHECK(wc.status == IBV_WC_SUCCESS, "send completion");
}

/* A QP pair with inline data on the two ends' contexts, PDs and CQs (the main pair idle). */
static void check_inline(struct end *s, struct end *r) {
  enum { kDepth = 8, kRounds = 6, kAsk = 100 };
  struct mrc_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.send_cq = s->send_cq;
  qa.recv_cq = s->recv_cq;
  qa.pd = s->pd;
  qa.cap.max_send_wr = kDepth;
  qa.cap.max_recv_wr = 1;
  qa.cap.max_send_sge = 1;
  qa.cap.max_inline_data = 257; /* more than mrc devices inline */
  errno = 0;
  CHECK(mrc_create_qp(s->ctx, &qa) == NULL && errno == EINVAL, "max_inline_data 257 must be refused");
  qa.cap.max_inline_data = kAsk;
  struct end si = *s, ri = *r;
  si.qp = mrc_create_qp(s->ctx, &qa);
  CHECK(si.qp != NULL, "mrc_create_qp with max_inline_data %d", kAsk);
  const uint32_t granted = qa.cap.max_inline_data;
  CHECK(granted >= kAsk && granted <= 256, "max_inline_data granted: %u", granted);
  struct mrc_qp_init_attr got;
  struct ibv_qp_attr v;
  struct mrc_qp_attr m;
  CHECK(mrc_query_qp(si.qp, &v, 0, &m, 0, &got) == 0 && got.cap.max_inline_data == granted,
        "mrc_query_qp reports the granted inline size");
  memset(&qa, 0, sizeof qa);
  qa.send_cq = r->send_cq;
  qa.recv_cq = r->recv_cq;
  qa.pd = r->pd;
  qa.cap.max_send_wr = 1;
  qa.cap.max_recv_wr = kDepth;
  ri.qp = mrc_create_qp(r->ctx, &qa);
  CHECK(ri.qp != NULL, "receiving QP");
  struct peer_info sp, rp;
  end_info(&si, 0x300, &sp);
  end_info(&ri, 0x400, &rp);
  CHECK(end_connect(&si, 0x300, &rp, NULL, 0, 0, 0) == 0 && end_connect(&ri, 0x400, &sp, NULL, 0, 0, 0) == 0,
        "connect the inline pair");
  CHECK(post_recvs(ri.qp, kDepth) == 0, "post_recv");
  memset(r->buf, 0, (size_t)kDepth * 256);
  uint8_t src[256];
  uint32_t m_sent = 0, m_done = 0;
  while (m_done < kDepth * kRounds) {
    while (m_sent < kDepth * kRounds && m_sent - m_done < kDepth) {
      const uint32_t len = 1 + (m_sent * 37) % granted, slot = m_sent % kDepth;
      for (uint32_t i = 0; i < len; i++) src[i] = pattern(m_sent, i);
      struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)src, .length = len, .lkey = 0};
      struct ibv_send_wr wr, *bad = NULL;
      memset(&wr, 0, sizeof wr);
      wr.wr_id = m_sent;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
      wr.imm_data = htonl(m_sent);
      wr.wr.rdma.remote_addr = rp.addr + (uint64_t)slot * 256;
      wr.wr.rdma.rkey = rp.rkey;
      CHECK(mrc_post_send(si.qp, &wr, &bad) == 0, "inline WRITE_WITH_IMM %u (%u bytes)", m_sent, len);
      memset(src, 0xEE, sizeof src); /* inline: the buffer is the caller's again at once */
      m_sent++;
    }
    struct ibv_wc wc = wait_wc(ri.recv_cq);
    CHECK(wc.status == IBV_WC_SUCCESS && ntohl(wc.imm_data) == m_done, "inline message %u: %s, immediate %u",
          m_done, ibv_wc_status_str(wc.status), ntohl(wc.imm_data));
    const uint32_t len = 1 + (m_done * 37) % granted;
    const uint8_t *data = r->buf + (size_t)(m_done % kDepth) * 256;
    for (uint32_t i = 0; i < len; i++)
      CHECK(data[i] == pattern(m_done, i), "inline message %u byte %u: 0x%02x, expected 0x%02x", m_done, i,
            data[i], pattern(m_done, i));
    CHECK(post_recvs(ri.qp, 1) == 0, "post_recv");
    wc = wait_wc(si.send_cq);
    CHECK(wc.status == IBV_WC_SUCCESS, "inline send completion: %s", ibv_wc_status_str(wc.status));
    m_done++;
  }
  struct ibv_sge big = {.addr = (uint64_t)(uintptr_t)src, .length = granted + 1, .lkey = 0};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &big;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_INLINE;
  wr.wr.rdma.remote_addr = rp.addr;
  wr.wr.rdma.rkey = rp.rkey;
  CHECK(mrc_post_send(si.qp, &wr, &bad) == EINVAL && bad == &wr, "inline data past max_inline_data must be refused");
  CHECK(mrc_destroy_qp(si.qp) == 0 && mrc_destroy_qp(ri.qp) == 0, "destroy the inline pair");
  printf("mrc_integrity: %u inline WRITEs with immediate (1-%u bytes) verified in place\n", m_done, granted);
}

int main(int argc, char **argv) {
  CHECK(argc >= 3, "usage: mrc_integrity <sender device> <receiver device> [messages]");
  const uint32_t messages = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 2000;
  struct end s, r;
  struct peer_info si, ri;
  end_open(&s, argv[1], (size_t)kSlots * kSlotBytes, 64, 1, 0);
  end_open(&r, argv[2], (size_t)kSlots * kSlotBytes, 1, kWindow * 2, 1);
  end_info(&s, 0x100, &si);
  end_info(&r, 0x200, &ri);
  CHECK(end_connect(&s, 0x100, &ri, NULL, 0, 0, 0) == 0, "connect sender");
  CHECK(end_connect(&r, 0x200, &si, NULL, 0, 0, 0) == 0, "connect receiver");
  CHECK(post_recvs(r.qp, kWindow * 2) == 0, "post_recv");

  uint32_t sent = 0, verified = 0, send_done = 0;
  uint64_t bytes = 0;
  while (verified < messages) {
    while (sent < messages && sent - verified < kWindow) send_message(&s, &ri, sent++);
    struct ibv_wc wc[16];
    int n = mrc_poll_cq(s.send_cq, 16, wc);
    CHECK(n >= 0, "poll send CQ");
    for (int i = 0; i < n; i++) {
      CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RDMA_WRITE, "send completion %s opcode %d",
            ibv_wc_status_str(wc[i].status), (int)wc[i].opcode);
      send_done++;
    }
    n = mrc_poll_cq(r.recv_cq, 16, wc);
    CHECK(n >= 0, "poll receive CQ");
    for (int i = 0; i < n; i++) {
      check_message(&r, &wc[i], verified);
      bytes += message_length(verified++);
      CHECK(post_recvs(r.qp, 1) == 0, "post_recv");
    }
  }
  while (send_done < messages) {
    struct ibv_wc wc = wait_wc(s.send_cq);
    CHECK(wc.status == IBV_WC_SUCCESS, "send completion %s", ibv_wc_status_str(wc.status));
    send_done++;
  }
  wait_on_channel(&s, &r, &ri, messages);
  check_inline(&s, &r);
  end_close(&s);
  end_close(&r);
  printf("mrc_integrity: %u messages, %llu bytes verified in place, WRITE-with-immediate order kept\n", messages,
         (unsigned long long)bytes);
  return 0;
}
