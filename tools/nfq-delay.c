/* nfq-delay: a fixed-delay relay for the namespace testbed (scripts/testbed.sh), because this
 * kernel has no netem. iptables sends packets to an NFQUEUE; this program holds each one for
 * DELAY_US microseconds and then accepts it (re-injects it unchanged), in arrival order.
 *
 *   iptables -t mangle -A PREROUTING -i IFACE -j NFQUEUE --queue-num Q --queue-bypass
 *   nfq-delay Q DELAY_US [--pidfile PATH] [--max-held N]
 *
 * Only packet metadata is copied to user space (NFQNL_COPY_META): the payload stays in the
 * kernel. GSO packets are queued whole (NFQA_CFG_F_GSO). Every packet gets the same delay, so
 * due times are in id order and one batch verdict (accept every id <= the last due one)
 * releases a run of packets. When more than --max-held packets are held (default 65536), a new
 * packet is dropped, as a full switch queue would. On SIGTERM or SIGINT every held packet is
 * accepted before the queue is closed (closing it would drop them), and a counter line is
 * printed. With --queue-bypass on the rule, packets pass undelayed while no relay runs.
 *
 * Build: cc -O2 nfq-delay.c -o nfq-delay -lnetfilter_queue -lnfnetlink
 * (CMake builds it as tools/nfq-delay when libnetfilter-queue-dev is installed.) Needs root. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct held {
  uint32_t id;
  int64_t due_ns;
};

static struct held *ring;
static uint32_t ring_size, ring_head, ring_count;
static int64_t delay_ns;
static uint64_t delayed_total, dropped_full;
static volatile sig_atomic_t stop;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
  (void)msg;
  (void)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (ph == NULL) return 0;
  const uint32_t id = ntohl(ph->packet_id);
  if (ring_count == ring_size) {
    ++dropped_full;
    return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
  }
  ring[(ring_head + ring_count) % ring_size] = (struct held){id, now_ns() + delay_ns};
  ++ring_count;
  ++delayed_total;
  return 0;
}

/* Accepts every held packet due by `now` (all of them if `now` is INT64_MAX). */
static void release_due(struct nfq_q_handle *qh, int64_t now) {
  uint32_t last = 0;
  int any = 0;
  while (ring_count > 0 && ring[ring_head].due_ns <= now) {
    last = ring[ring_head].id;
    any = 1;
    ring_head = (ring_head + 1) % ring_size;
    --ring_count;
  }
  if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0)
    fprintf(stderr, "nfq-delay: verdict failed: %s\n", strerror(errno));
}

static void usage(void) {
  fprintf(stderr,
          "usage: nfq-delay QUEUE DELAY_US [--pidfile PATH] [--max-held N]\n"
          "  holds every packet of NFQUEUE number QUEUE for DELAY_US microseconds, then accepts it\n");
}

int main(int argc, char **argv) {
  const char *pidfile = NULL;
  long max_held = 65536;
  char *end = NULL;
  if (argc < 3) return usage(), 2;
  const long queue = strtol(argv[1], &end, 10);
  if (*end != '\0' || queue < 0 || queue > 65535) return usage(), 2;
  const double delay_us = strtod(argv[2], &end);
  if (*end != '\0' || delay_us < 0 || delay_us > 10e6) {
    fprintf(stderr, "nfq-delay: DELAY_US must be 0..10000000\n");
    return 2;
  }
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--pidfile") == 0 && i + 1 < argc) {
      pidfile = argv[++i];
    } else if (strcmp(argv[i], "--max-held") == 0 && i + 1 < argc) {
      max_held = strtol(argv[++i], &end, 10);
      if (*end != '\0' || max_held < 1 || max_held > (1 << 24)) return usage(), 2;
    } else {
      return usage(), 2;
    }
  }
  delay_ns = (int64_t)(delay_us * 1000.0);
  ring_size = (uint32_t)max_held;
  ring = calloc(ring_size, sizeof *ring);
  if (ring == NULL) return perror("nfq-delay: calloc"), 1;

  struct nfq_handle *h = nfq_open();
  if (h == NULL) {
    fprintf(stderr, "nfq-delay: nfq_open failed (needs root and nfnetlink_queue): %s\n", strerror(errno));
    return 1;
  }
  struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (qh == NULL) {
    fprintf(stderr, "nfq-delay: cannot bind NFQUEUE %ld (another relay on it?): %s\n", queue, strerror(errno));
    return 1;
  }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) return perror("nfq-delay: set mode"), 1;
  nfq_set_queue_maxlen(qh, (uint32_t)max_held + 1024);
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  const int fd = nfq_fd(h);
  nfnl_rcvbufsiz(nfq_nfnlh(h), 16u << 20);
  const int on = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  if (pidfile != NULL) {
    FILE *f = fopen(pidfile, "w");
    if (f == NULL) return perror("nfq-delay: pidfile"), 1;
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);
  }

  static char buf[65536] __attribute__((aligned));
  while (!stop) {
    const int64_t now = now_ns();
    release_due(qh, now);
    struct timespec timeout = {1, 0};
    if (ring_count > 0) {
      const int64_t wait = ring[ring_head].due_ns - now;
      timeout.tv_sec = wait > 0 ? wait / 1000000000 : 0;
      timeout.tv_nsec = wait > 0 ? wait % 1000000000 : 0;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    const int ready = ppoll(&pfd, 1, &timeout, NULL);
    if (ready < 0 && errno != EINTR) return perror("nfq-delay: ppoll"), 1;
    if (ready <= 0) continue;
    for (int n = 0; n < 256; ++n) {  /* drain what is there, then release again */
      const ssize_t len = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (len <= 0) break;
      nfq_handle_packet(h, buf, (int)len);
    }
  }
  release_due(qh, INT64_MAX);
  fprintf(stderr, "nfq-delay: queue %ld: %llu packets delayed by %.0f us, %llu dropped (more than %ld held)\n", queue,
          (unsigned long long)delayed_total, delay_us, (unsigned long long)dropped_full, max_held);
  nfq_destroy_queue(qh);
  nfq_close(h);
  if (pidfile != NULL) unlink(pidfile);
  return 0;
}
