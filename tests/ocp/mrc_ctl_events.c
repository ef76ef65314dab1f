/* mrc_ctl_events: EV probes and EV events through the OCP controller API (mrc_ctl.h).
 *   - mrc_ctl_ep_batch_send_wait sends EV probes on chosen EVs (one per plane used) to the
 *     peer of a connected QP and returns one answer per request with the port it arrived on
 *     and an RTT; misuse gives the documented errno (bad EV or GID EINVAL, other EV formats and
 *     port status requests EOPNOTSUPP, an address where nobody answers ETIMEDOUT); probes with
 *     no QP at all: mrc_ctl_explicit.c;
 *   - with device A dropping a fraction of its packets (drop= in MRC_DEVICES, 5 %: a first loss on
 *     an EV only SKIPs it, so retirement needs a second loss on the same EV soon after), the engine marks
 *     an EV ASSUMED_BAD, and the EV event CQ reports it for profile 0 once its event mask asks.
 *
 *   mrc_ctl_events <device A> <device B>            the checks above
 *   mrc_ctl_events --serve <device A> <device B>    connect, print "ready", then run traffic
 *                                                   until stdin closes (for mrcctl's test)
 */
#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static uint32_t g_sent;

static void one_message(struct end *a, struct end *b, const struct peer_info *bi) {
  memset(a->buf, (int)(g_sent + 1), 4096);
  CHECK(post_write(a->qp, a->mr, a->buf, 4096, bi->addr, bi->rkey, 1, htonl(g_sent), 1, g_sent) == 0, "post");
  struct ibv_wc wc = wait_wc(b->recv_cq);
  CHECK(wc.status == IBV_WC_SUCCESS && ntohl(wc.imm_data) == g_sent, "receive %u", g_sent);
  CHECK(post_recvs(b->qp, 1) == 0, "post_recv");
  wc = wait_wc(a->send_cq);
  CHECK(wc.status == IBV_WC_SUCCESS, "send completion: %s", ibv_wc_status_str(wc.status));
  g_sent++;
}

static int ev_array(struct end *a, struct mrc_ctl_ev_op_entry *entries, int max) {
  struct mrc_ctl_ev_profile_attr q;
  memset(&q, 0, sizeof q);
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  q.ev_op.entries = entries;
  q.ev_op.entry_count = max;
  CHECK(mrc_ctl_query_ev_profile(a->ctx, 0, &q, MRC_CTL_EV_PROFILE_EV_OP) == 0, "query EV array of profile 0");
  return q.ev_op.entry_count;
}

static void probe_request(struct end *a, struct end *b, const struct mrc_ctl_ev *ev, uint16_t id,
                          struct mrc_ctl_ep_req *r) {
  memset(r, 0, sizeof *r);
  r->req_id = id;
  r->ev_fmt_mode = MRC_CTL_EV_FMT_MODE_UDP;
  r->req_ev = *ev;
  CHECK(ibv_query_gid(a->dev, ev->port, 3, &r->sgid) == 0, "our GID on port %u", ev->port);
  CHECK(ibv_query_gid(b->dev, ev->port, 3, &r->dgid) == 0, "peer GID on port %u", ev->port);
}

static void check_probes(struct end *a, struct end *b) {
  struct mrc_ctl_device_attr d;
  CHECK(mrc_ctl_query_device(a->dev, &d) == 0 && (d.opt_attr & MRC_CTL_OPT_CAP_EP_OP_EV_PROBE), "probe capability");
  struct mrc_ctl_ev_op_entry entries[256];
  const int n = ev_array(a, entries, 256);
  CHECK(n >= 2, "EVs in use: %d", n);
  struct mrc_ctl_ep_req req[2];
  struct mrc_ctl_ep_rsp rsp[2];
  int got = -1, second = 1;
  while (second < n && entries[second].ev.port == entries[0].ev.port) second++;
  CHECK(second < n, "an EV on another port");
  probe_request(a, b, &entries[0].ev, 11, &req[0]);
  probe_request(a, b, &entries[second].ev, 12, &req[1]);
  /* A drops a few of its packets (drop=): a lost probe times out, so try a few batches. */
  int rc = -1;
  for (int attempt = 0; attempt < 8 && rc != 0; attempt++) {
    rc = mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, req, 2, 500000000u, rsp, &got);
    CHECK(rc == 0 || (errno == ETIMEDOUT && got >= 0 && got < 2), "a batch is answered or times out");
  }
  CHECK(rc == 0 && got == 2, "two probes answered (got %d)", got);
  for (int i = 0; i < 2; i++) {
    CHECK(rsp[i].req_id == 11 || rsp[i].req_id == 12, "answer names its request (%u)", rsp[i].req_id);
    CHECK(rsp[i].port >= 1 && rsp[i].port <= 3 && rsp[i].rtt > 0, "port %u, rtt %u ns", rsp[i].port, rsp[i].rtt);
  }
  CHECK(rsp[0].req_id != rsp[1].req_id, "one answer per request");
  printf("EV probes: rtt %u ns and %u ns\n", rsp[0].rtt, rsp[1].rtt);
  struct mrc_ctl_ep_req bad = req[0];
  bad.req_ev.val[0] ^= 0x80; /* not one of the device's source ports on that plane */
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &bad, 1, 1000000, rsp, &got), EINVAL);
  bad = req[0];
  bad.dgid.raw[15] ^= 0x40; /* no device or peer has this address: sent, never answered */
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &bad, 1, 20000000, rsp, &got), ETIMEDOUT);
  CHECK(got == 0, "no answer from an address where nobody listens");
  bad.dgid.raw[10] = 0; /* not an IPv4-mapped GID */
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &bad, 1, 1000000, rsp, &got), EINVAL);
  bad = req[0];
  bad.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_STEV;
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &bad, 1, 1000000, rsp, &got), EOPNOTSUPP);
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_PORT_STATUS_UPDATE, req, 1, 1000000, rsp, &got),
               EOPNOTSUPP);
  bad = req[0]; /* a source GID that is not ours */
  CHECK(ibv_query_gid(b->dev, bad.req_ev.port, 3, &bad.sgid) == 0, "B's GID");
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &bad, 1, 1000000, rsp, &got), EINVAL);
}

/* Traffic until the EV event CQ shows an EV going ASSUMED_BAD (A drops some of its packets). */
static void check_assumed_bad_event(struct end *a, struct end *b, const struct peer_info *bi) {
  struct mrc_ctl_ev_profile_attr p;
  memset(&p, 0, sizeof p);
  p.ev_event_mask = MRC_CTL_EV_ASSUMED_BAD | MRC_CTL_EV_GOOD;
  CHECK(mrc_ctl_modify_ev_profile(a->ctx, 0, &p, MRC_CTL_EV_PROFILE_EVENT_MASK) == 0, "profile 0 event mask");
  struct mrc_cq *evcq = mrc_ctl_create_ev_event_cq(a->ctx, 1024, NULL, NULL, 0);
  CHECK(evcq != NULL, "EV event CQ");
  struct mrc_ctl_ev_event events[64];
  int bad = 0;
  for (uint32_t i = 0; i < 20000 && bad == 0; i++) {
    one_message(a, b, bi);
    int n = mrc_ctl_poll_ev_event(evcq, 64, events);
    CHECK(n >= 0, "poll EV events");
    for (int k = 0; k < n; k++)
      if (events[k].state == MRC_CTL_EV_ASSUMED_BAD && events[k].profile_id == 0) bad++;
  }
  CHECK(bad > 0, "an ASSUMED_BAD event after %u messages with packet drops", g_sent);
  printf("EV events: ASSUMED_BAD seen after %u messages\n", g_sent);
  CHECK(mrc_destroy_cq(evcq) == 0, "destroy the EV event CQ");
}

static void serve(struct end *a, struct end *b, const struct peer_info *bi) {
  uint32_t qpn = 0;
  CHECK(mrc_get_qpn(a->qp, &qpn) == 0, "qpn");
  printf("ready qpn %u\n", qpn);
  fflush(stdout);
  for (;;) {
    struct pollfd p = {0, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) return; /* stdin readable or closed: stop */
    one_message(a, b, bi);
    usleep(2000);
  }
}

int main(int argc, char **argv) {
  const int serving = argc >= 2 && strcmp(argv[1], "--serve") == 0;
  CHECK(argc >= 3 + serving, "usage: mrc_ctl_events [--serve] <device A> <device B>");
  struct end a, b;
  struct peer_info ai, bi;
  end_open(&a, argv[1 + serving], 1 << 16, 64, 8, 0);
  end_open(&b, argv[2 + serving], 1 << 16, 64, 64, 0);
  end_info(&a, 0x30, &ai);
  end_info(&b, 0x40, &bi);
  CHECK(end_connect(&a, 0x30, &bi, NULL, 0, 0, 0) == 0, "connect A");
  CHECK(end_connect(&b, 0x40, &ai, NULL, 0, 0, 0) == 0, "connect B");
  CHECK(post_recvs(b.qp, 64) == 0, "post_recv");
  for (int i = 0; i < 20; i++) one_message(&a, &b, &bi);
  if (serving) {
    serve(&a, &b, &bi);
  } else {
    check_probes(&a, &b);
    check_assumed_bad_event(&a, &b, &bi);
    printf("mrc_ctl_events: EV probes answered with RTTs, ASSUMED_BAD seen on the EV event CQ\n");
  }
  end_close(&a);
  end_close(&b);
  return 0;
}
