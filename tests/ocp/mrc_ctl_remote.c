/* mrc_ctl_remote: mrc_ctl_* calls from a process that does not own the device. Another process
 * (mrc_ctl_events --serve) owns mrc0 and runs traffic to mrc1; this one opens mrc0 too and gets
 * a controller-only context whose calls the owner runs (see docs/OCP-COMPAT.md):
 *   - the data path is refused (ibv_alloc_pd, mrc_create_cq: EBUSY);
 *   - port 2 set down reads DOWN here (ibv_query_port, mrc_ctl_query_port), then up again;
 *   - the owner's QP EVs are read (QUERY_EV_ARRAY, E2BIG with the count first), one is denied
 *     and reads DENIED, then allowed;
 *   - an explicit EV profile and a CC profile built here are read back here, with their arrays
 *     and NSCC parameters;
 *   - an EV event CQ lives in the owner and is polled and destroyed from here;
 *   - EV probes to mrc1's address are answered; misuse keeps its errno (EINVAL, EOPNOTSUPP).
 *
 *   mrc_ctl_remote <device> <peer device> <device's ev-ports base>
 */
#include <arpa/inet.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static void check_data_path_refused(struct ibv_context *dev, struct mrc_context *ctx) {
  errno = 0;
  CHECK(ibv_alloc_pd(dev) == NULL && errno == EBUSY, "ibv_alloc_pd is EBUSY on a controller-only device");
  errno = 0;
  CHECK(mrc_create_cq(ctx, 16, NULL, NULL, 0) == NULL && errno == EBUSY, "mrc_create_cq is EBUSY");
}

static void check_port(struct ibv_context *dev, struct mrc_context *ctx) {
  struct mrc_ctl_port_attr p = {.port_admin_state = MRC_CTL_PORT_ADMIN_DISABLED};
  CHECK(mrc_ctl_modify_port(ctx, 2, &p, MRC_CTL_PORT_ADMIN_STATE) == 0, "port 2 down from here");
  struct ibv_port_attr pa;
  CHECK(ibv_query_port(dev, 2, &pa) == 0 && pa.state == IBV_PORT_DOWN, "ibv_query_port reads DOWN");
  struct mrc_ctl_port_attr got = {.port_admin_state = MRC_CTL_PORT_ADMIN_ENABLED};
  CHECK(mrc_ctl_query_port(ctx, 2, &got, MRC_CTL_PORT_ADMIN_STATE) == 0 &&
            got.port_admin_state == MRC_CTL_PORT_ADMIN_DISABLED,
        "mrc_ctl_query_port reads DISABLED");
  p.port_admin_state = MRC_CTL_PORT_ADMIN_ENABLED;
  CHECK(mrc_ctl_modify_port(ctx, 2, &p, MRC_CTL_PORT_ADMIN_STATE) == 0, "port 2 up again");
  CHECK(ibv_query_port(dev, 2, &pa) == 0 && pa.state == IBV_PORT_ACTIVE, "ibv_query_port reads ACTIVE");
  EXPECT_ERRNO(mrc_ctl_modify_port(ctx, 9, &p, MRC_CTL_PORT_ADMIN_STATE), EINVAL);
}

static int ev_call(struct mrc_context *ctx, uint64_t id, enum mrc_ctl_ev_op op, struct mrc_ctl_ev_op_entry *e, int n,
                   int query, int *count_out) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.ev_op.op = op;
  a.ev_op.entries = e;
  a.ev_op.entry_count = n;
  const int rc = query ? mrc_ctl_query_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP)
                       : mrc_ctl_modify_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP);
  if (count_out != NULL) *count_out = a.ev_op.entry_count;
  return rc;
}

/* The owner's QP EVs (profile 0): read, one denied and allowed again. Returns one EV in use. */
static struct mrc_ctl_ev check_owner_evs(struct mrc_context *ctx) {
  static struct mrc_ctl_ev_op_entry entries[256];
  int count = 0;
  EXPECT_ERRNO(ev_call(ctx, 0, MRC_CTL_EV_OP_QUERY_EV_ARRAY, entries, 1, 1, &count), E2BIG);
  CHECK(count >= 2, "the owner's QP has %d EVs", count);
  CHECK(ev_call(ctx, 0, MRC_CTL_EV_OP_QUERY_EV_ARRAY, entries, 256, 1, &count) == 0, "QUERY_EV_ARRAY");
  struct mrc_ctl_ev_op_entry e = {.ev = entries[1].ev, .state = MRC_CTL_EV_DENIED};
  CHECK(ev_call(ctx, 0, MRC_CTL_EV_OP_MODIFY_EV_STATE, &e, 1, 0, NULL) == 0, "deny an EV of the owner's QP");
  struct mrc_ctl_ev_op_entry q = {.ev = entries[1].ev};
  CHECK(ev_call(ctx, 0, MRC_CTL_EV_OP_QUERY_EV_STATE, &q, 1, 1, NULL) == 0 && q.state == MRC_CTL_EV_DENIED,
        "it reads DENIED");
  e.state = MRC_CTL_EV_GOOD;
  CHECK(ev_call(ctx, 0, MRC_CTL_EV_OP_MODIFY_EV_STATE, &e, 1, 0, NULL) == 0, "allow it again");
  e.state = MRC_CTL_EV_ASSUMED_BAD;
  EXPECT_ERRNO(ev_call(ctx, 0, MRC_CTL_EV_OP_MODIFY_EV_STATE, &e, 1, 0, NULL), EINVAL);
  return entries[0].ev;
}

static void check_profiles(struct mrc_context *ctx, uint32_t base) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = MRC_CTL_EV_MODE_EXP;
  a.ev_count = 2;
  a.ev_min_active = 1;
  CHECK(mrc_ctl_modify_ev_profile(ctx, 21, &a,
                                  MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_COUNT |
                                      MRC_CTL_EV_PROFILE_MIN_ACTIVE) == 0,
        "explicit profile -> OFFLINE from here");
  struct mrc_ctl_ev_op_entry r[2];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 2; i++) {
    const uint32_t port = base + 101u * (uint32_t)i + 7; /* planes 1 and 2 */
    r[i].ev_new.val[0] = (uint8_t)(port >> 8);
    r[i].ev_new.val[1] = (uint8_t)port;
    r[i].ev_new.port = (uint8_t)(i + 1);
    r[i].state = MRC_CTL_EV_GOOD;
  }
  CHECK(ev_call(ctx, 21, MRC_CTL_EV_OP_REPLACE_EV, r, 2, 0, NULL) == 0, "REPLACE_EV x2 from here");
  a.profile_state = MRC_CTL_PROFILE_ONLINE;
  CHECK(mrc_ctl_modify_ev_profile(ctx, 21, &a, MRC_CTL_EV_PROFILE_STATE) == 0, "explicit profile -> ONLINE");
  struct mrc_ctl_ev_op_entry back[4];
  int count = 0;
  CHECK(ev_call(ctx, 21, MRC_CTL_EV_OP_QUERY_EV_ARRAY, back, 4, 1, &count) == 0 && count == 2 &&
            memcmp(&back[1].ev, &r[1].ev_new, sizeof back[1].ev) == 0,
        "the explicit array reads back (%d entries)", count);
  struct mrc_ctl_cc_nscc_cfg nscc;
  memset(&nscc, 0, sizeof nscc);
  nscc.max_cwnd = 300000;
  nscc.eta = 0.3f;
  struct mrc_ctl_cc_profile_attr cc;
  memset(&cc, 0, sizeof cc);
  cc.profile_state = MRC_CTL_PROFILE_OFFLINE;
  cc.algorithm = "uet-1.0-nscc";
  cc.cc_config = &nscc;
  CHECK(mrc_ctl_modify_cc_profile(ctx, 22, &cc,
                                  MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM | MRC_CTL_CC_PROFILE_CONFIG) == 0,
        "CC profile from here");
  struct mrc_ctl_cc_profile_attr got;
  memset(&got, 0, sizeof got);
  CHECK(mrc_ctl_query_cc_profile(ctx, 22, &got, MRC_CTL_CC_PROFILE_STATE) == 0 && got.algorithm != NULL &&
            strcmp(got.algorithm, "uet-1.0-nscc") == 0 && got.cc_config != NULL &&
            ((const struct mrc_ctl_cc_nscc_cfg *)got.cc_config)->max_cwnd == 300000 &&
            got.cur_profile_state == MRC_CTL_PROFILE_OFFLINE,
        "CC profile reads back");
  cc.algorithm = "cubic";
  EXPECT_ERRNO(mrc_ctl_modify_cc_profile(ctx, 23, &cc, MRC_CTL_CC_PROFILE_ALGORITHM), EINVAL);
}

static void check_ev_cq_and_probes(struct mrc_context *ctx, struct ibv_context *peer, struct mrc_ctl_ev ev) {
  struct mrc_comp_channel *channel = NULL;
  CHECK(mrc_create_comp_channel(ctx, &channel) == 0, "a completion channel");
  errno = 0;
  CHECK(mrc_ctl_create_ev_event_cq(ctx, 16, NULL, channel, 0) == NULL && errno == EOPNOTSUPP,
        "a remote EV event CQ is polled, not notified");
  CHECK(mrc_destroy_comp_channel(channel) == 0, "destroy the channel");
  struct mrc_cq *cq = mrc_ctl_create_ev_event_cq(ctx, 16, NULL, NULL, 0);
  CHECK(cq != NULL, "EV event CQ in the owner");
  struct mrc_ctl_ev_event events[16];
  CHECK(mrc_ctl_poll_ev_event(cq, 16, events) >= 0, "poll it from here");
  CHECK(mrc_destroy_cq(cq) == 0, "destroy it from here");
  struct mrc_ctl_ep_req req[4];
  struct mrc_ctl_ep_rsp rsp[4];
  memset(req, 0, sizeof req);
  for (int i = 0; i < 4; i++) {
    req[i].req_id = (uint16_t)(i + 1);
    req[i].ev_fmt_mode = MRC_CTL_EV_FMT_MODE_UDP;
    req[i].req_ev = ev;
    CHECK(ibv_query_gid(peer, ev.port, 3, &req[i].dgid) == 0, "peer GID");
  }
  int got = 0;
  const int rc = mrc_ctl_ep_batch_send_wait(ctx, 0, MRC_CTL_EP_OP_EV_PROBE, req, 4, 2000000000u, rsp, &got);
  CHECK((rc == 0 && got == 4) || (errno == ETIMEDOUT && got >= 1), "probes answered (got %d; the owner drops 2%%)", got);
  CHECK(rsp[0].port == ev.port && rsp[0].rtt > 0, "answer on port %u, rtt %u ns", rsp[0].port, rsp[0].rtt);
  req[0].ev_fmt_mode = MRC_CTL_EV_FMT_MODE_STEV;
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(ctx, 0, MRC_CTL_EP_OP_EV_PROBE, req, 1, 1000000, rsp, &got), EOPNOTSUPP);
}

int main(int argc, char **argv) {
  CHECK(argc >= 4, "usage: mrc_ctl_remote <device> <peer device> <device's ev-ports base>");
  struct ibv_context *dev = open_named(argv[1]);
  struct ibv_context *peer = open_named(argv[2]);
  struct mrc_context_attr attr = {.mrc_api_version_used = MRC_API_CURRENT_VERSION};
  struct mrc_context *ctx = mrc_create_context(dev, &attr);
  CHECK(ctx != NULL, "mrc_create_context on a controller-only device");
  struct mrc_ctl_device_attr d;
  CHECK(mrc_ctl_query_device(dev, &d) == 0 && (d.ev.ev_mode_mask & MRC_CTL_EV_MODE_EXP), "mrc_ctl_query_device");
  check_data_path_refused(dev, ctx);
  check_port(dev, ctx);
  const struct mrc_ctl_ev ev = check_owner_evs(ctx);
  check_profiles(ctx, (uint32_t)atoi(argv[3]));
  check_ev_cq_and_probes(ctx, peer, ev);
  CHECK(mrc_destroy_context(ctx) == 0, "mrc_destroy_context");
  CHECK(ibv_close_device(peer) == 0 && ibv_close_device(dev) == 0, "ibv_close_device");
  printf("mrc_ctl_remote: controller calls from another process act on the owner's engine\n");
  return 0;
}
