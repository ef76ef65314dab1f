/* mrc_bw: RDMA WRITE bandwidth and latency through the OCP MRC API, in the style of
 * perftest's ib_write_bw / ib_write_lat. A server and a client exchange QP numbers, PSNs,
 * GIDs and buffer keys over TCP, then sweep message sizes:
 *   bandwidth: the client keeps `depth` WRITEs in flight (one signalled per 16), ends each
 *              size with a WRITE with immediate the server waits for;
 *   latency (--lat): ping-pong of WRITE with immediate, half the round trip reported.
 *
 *   mrc_bw -d <device> [-p tcp-port] [--lat] [-m min] [-s max] [-n iters]            (server)
 *   mrc_bw -d <device> [-p tcp-port] [--lat] [-m min] [-s max] [-n iters] <server>   (client)
 * The client's sweep settings are sent to the server. Exit status 0 when every size finished.
 * --srv6-evs PORT:USID,... (an SRv6 device): the QP uses an explicit EV profile of those SRv6
 * EVs (EV format mode SRV6; port 1-based, uSID hexadecimal), built through the controller API.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ocp_common.h"

struct settings {
  uint32_t min_size, max_size, iters, lat;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The set-up connection: IPv4 or IPv6 (the server listens on both). */
static int tcp_setup(const char *server, uint16_t port) {
  struct sockaddr_in6 a;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  if (server != NULL) {
    struct sockaddr_in a4;
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    a4.sin_port = htons(port);
    const int v4 = inet_pton(AF_INET, server, &a4.sin_addr) == 1;
    CHECK(v4 || inet_pton(AF_INET6, server, &a.sin6_addr) == 1, "bad server address %s", server);
    int s = socket(v4 ? AF_INET : AF_INET6, SOCK_STREAM, 0);
    CHECK(s >= 0, "socket");
    const struct sockaddr *to = v4 ? (const struct sockaddr *)&a4 : (const struct sockaddr *)&a;
    const socklen_t len = v4 ? (socklen_t)sizeof a4 : (socklen_t)sizeof a;
    for (int i = 0; connect(s, to, len) != 0; i++) {
      CHECK(i < 100, "cannot connect to %s:%u", server, port);
      usleep(50000);
    }
    return s;
  }
  int s = socket(AF_INET6, SOCK_STREAM, 0);
  CHECK(s >= 0, "socket");
  int one = 1, zero = 0;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  a.sin6_addr = in6addr_any; /* any: the client may be in another namespace */
  CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 1) == 0, "listen on port %u", port);
  int c = accept(s, NULL, NULL);
  CHECK(c >= 0, "accept");
  close(s);
  return c;
}

static void exchange(int sock, const void *out, void *in, size_t n) {
  CHECK(write(sock, out, n) == (ssize_t)n, "tcp write");
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(sock, (char *)in + got, n - got);
    CHECK(r > 0, "tcp read");
    got += (size_t)r;
  }
}

static void bw_client(struct end *e, const struct peer_info *p, const struct settings *st, uint32_t size) {
  const uint32_t depth = 64, every = 16;
  uint32_t posted = 0, completed = 0;
  const double t0 = now_s();
  while (completed < st->iters) {
    while (posted < st->iters && posted - completed < depth) {
      const int sig = posted % every == every - 1 || posted == st->iters - 1;
      CHECK(post_write(e->qp, e->mr, e->buf, size, p->addr, p->rkey, 0, 0, sig, posted) == 0, "post WRITE");
      posted++;
    }
    struct ibv_wc wc[16];
    int n = mrc_poll_cq(e->send_cq, 16, wc);
    CHECK(n >= 0, "poll");
    for (int i = 0; i < n; i++) {
      CHECK(wc[i].status == IBV_WC_SUCCESS, "WRITE completion: %s", ibv_wc_status_str(wc[i].status));
      completed = (uint32_t)wc[i].wr_id + 1;
    }
  }
  const double dt = now_s() - t0;
  CHECK(post_write(e->qp, e->mr, e->buf, 8, p->addr, p->rkey, 1, htonl(size), 1, 0) == 0, "post WRITE_WITH_IMM");
  struct ibv_wc wc = wait_wc(e->send_cq);
  CHECK(wc.status == IBV_WC_SUCCESS, "signal completion");
  printf(" %-10u %-8u %-14.3f %-12.4f\n", size, st->iters, (double)size * st->iters * 8 / dt / 1e9,
         st->iters / dt / 1e6);
}

static void lat_round(struct end *e, const struct peer_info *p, uint32_t size, int first) {
  if (first) CHECK(post_write(e->qp, e->mr, e->buf, size, p->addr, p->rkey, 1, htonl(size), 1, 0) == 0, "post");
  struct ibv_wc wc = wait_wc(e->recv_cq);
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM, "receive completion");
  CHECK(post_recvs(e->qp, 1) == 0, "post_recv");
  if (!first) CHECK(post_write(e->qp, e->mr, e->buf, size, p->addr, p->rkey, 1, htonl(size), 1, 0) == 0, "post");
  wc = wait_wc(e->send_cq);
  CHECK(wc.status == IBV_WC_SUCCESS, "send completion: %s", ibv_wc_status_str(wc.status));
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void lat_size(struct end *e, const struct peer_info *p, const struct settings *st, uint32_t size, int client) {
  double *samples = calloc(st->iters, sizeof(double));
  CHECK(samples != NULL, "calloc");
  for (uint32_t i = 0; i < st->iters; i++) {
    const double t0 = now_s();
    lat_round(e, p, size, client);
    samples[i] = (now_s() - t0) / 2 * 1e6;
  }
  qsort(samples, st->iters, sizeof(double), cmp_double);
  double sum = 0;
  for (uint32_t i = 0; i < st->iters; i++) sum += samples[i];
  if (client)
    printf(" %-10u %-8u %-12.2f %-12.2f %-12.2f\n", size, st->iters, sum / st->iters, samples[st->iters / 2],
           samples[(uint32_t)(st->iters * 0.99)]);
  free(samples);
}

static void sweep(struct end *e, const struct peer_info *p, const struct settings *st, int client) {
  if (client && st->lat) printf(" %-10s %-8s %-12s %-12s %-12s\n", "#bytes", "#iters", "t_avg[us]", "t_p50[us]", "t_p99[us]");
  if (client && !st->lat) printf(" %-10s %-8s %-14s %-12s\n", "#bytes", "#iters", "BW[Gb/s]", "MsgRate[Mpps]");
  for (uint32_t size = st->min_size; size <= st->max_size; size *= 2) {
    if (st->lat) {
      lat_size(e, p, st, size, client);
    } else if (client) {
      bw_client(e, p, st, size);
    } else {
      struct ibv_wc wc = wait_wc(e->recv_cq);
      CHECK(wc.status == IBV_WC_SUCCESS && ntohl(wc.imm_data) == size, "end-of-size signal for %u", size);
      CHECK(post_recvs(e->qp, 1) == 0, "post_recv");
    }
    if (size > UINT32_MAX / 2) break;
  }
}

/* --srv6-evs: profile 9 of those SRv6 EVs, for the QP (`m`). */
static void use_srv6_evs(struct end *e, const char *list, struct mrc_qp_attr *m) {
  struct mrc_ctl_ev evs[64];
  uint32_t n = 0;
  char text[512];
  snprintf(text, sizeof text, "%s", list);
  for (char *save = NULL, *t = strtok_r(text, ",", &save); t != NULL && n < 64; t = strtok_r(NULL, ",", &save)) {
    unsigned port = 0, usid = 0;
    CHECK(sscanf(t, "%u:%x", &port, &usid) == 2 && port >= 1 && port <= 255 && usid <= 0xffff,
          "--srv6-evs: '%s' is not PORT:USID", t);
    evs[n++] = srv6_ev(e->dev, (uint8_t)port, (uint16_t)usid);
  }
  CHECK(n > 0, "--srv6-evs: no EV");
  srv6_explicit_profile(e->ctx, 9, evs, n);
  m->profile.ev_profile_id = 9;
}

int main(int argc, char **argv) {
  const char *device = NULL;
  uint16_t port = 40010;
  struct settings st = {1, 1 << 20, 1000, 0};
  const char *srv6_evs = NULL;
  static const struct option longs[] = {
      {"lat", no_argument, NULL, 'l'}, {"srv6-evs", required_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};
  for (int c; (c = getopt_long(argc, argv, "d:p:m:s:n:", longs, NULL)) != -1;) {
    if (c == 'd') device = optarg;
    else if (c == 'p') port = (uint16_t)atoi(optarg);
    else if (c == 'm') st.min_size = (uint32_t)strtoul(optarg, NULL, 0);
    else if (c == 's') st.max_size = (uint32_t)strtoul(optarg, NULL, 0);
    else if (c == 'n') st.iters = (uint32_t)strtoul(optarg, NULL, 0);
    else if (c == 'l') st.lat = 1;
    else if (c == 'e') srv6_evs = optarg;
    else CHECK(0, "usage: mrc_bw -d <device> [-p port] [--lat] [-m min] [-s max] [-n iters] [--srv6-evs P:USID,...] [server]");
  }
  const char *server = optind < argc ? argv[optind] : NULL;
  const int client = server != NULL;
  CHECK(device != NULL && st.min_size >= 1 && st.min_size <= st.max_size && st.iters > 0, "bad arguments");
  int sock = tcp_setup(server, port);
  struct settings theirs;
  exchange(sock, &st, &theirs, sizeof st);
  if (!client) st = theirs;
  struct end e;
  end_open(&e, device, st.max_size, 128, 64, 0);
  const uint32_t psn = client ? 0x1111 : 0x2222;
  struct peer_info me, peer;
  end_info(&e, psn, &me);
  exchange(sock, &me, &peer, sizeof me);
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  if (srv6_evs != NULL) use_srv6_evs(&e, srv6_evs, &m);
  CHECK(end_connect(&e, psn, &peer, &m, srv6_evs != NULL ? MRC_QP_EV_PROFILE_ID : 0, 0, 0) == 0, "connect");
  CHECK(post_recvs(e.qp, 32) == 0, "post_recv");
  char sync = 1;
  exchange(sock, &sync, &sync, 1);  /* both QPs are in RTS with receives posted */
  sweep(&e, &peer, &st, client);
  exchange(sock, &sync, &sync, 1);
  close(sock);
  end_close(&e);
  if (client) printf("mrc_bw: done\n");
  return 0;
}
