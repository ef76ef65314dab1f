/* net_harness: loads an NCCL net plugin and drives it through ncclNet_v8 the way NCCL does,
 * without NCCL or a GPU: dlopen(RTLD_NOW), the `ncclNetPlugin_v8` symbol, init with a logger,
 * devices, getProperties of each, then two ranks (two processes) that each listen on their
 * device and connect to the other's handle (connect/accept called again while they give a NULL
 * comm, as NCCL's proxy does), register host buffers (NCCL_PTR_HOST), and move messages both
 * ways at once with isend/irecv/test, several requests in flight per comm, every byte checked
 * against a pattern of its own message; then deregMr and the close calls. `--help` for the
 * options. Exit status 0 only if everything was verified; 1 for a failure, 2 for usage errors.
 *
 * Every wait is bounded: a request that does not finish, a connection that does not come up and
 * a peer that dies end the run with a message naming what, the size and the request; a plugin
 * call that never returns is ended by an alarm naming the call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net_v8.h"

#define MAX_SIZES 64
#define MAX_ENV 16
#define MAX_DEVS 64
#define GUARD 64 /* bytes after each receive that must stay untouched */
#define POISON 0xa5

struct options {
  const char* plugin;
  long sizes[MAX_SIZES];
  int nsizes;
  int inflight, messages, timeout, json, verbose, iflush;
  int dev[2];
  const char* env[2][MAX_ENV];
  int nenv[2];
  int rank; /* -1: fork both ranks */
  const char* rendezvous;
  int exit_rank, exit_after; /* --exit-after R:N */
};

static struct options opt;

/* A growable string, for the JSON report. */
struct text {
  char* p;
  size_t n, cap;
};

static void text_add(struct text* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct text* t, const char* fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (t->p && t->n + (size_t)k < t->cap) {
      t->n += (size_t)k;
      return;
    }
    t->cap = (t->cap + (size_t)k + 1) * 2;
    t->p = realloc(t->p, t->cap);
    if (t->p == NULL) abort();
  }
}

static void text_json_string(struct text* t, const char* s) {
  if (s == NULL) {
    text_add(t, "null");
    return;
  }
  text_add(t, "\"");
  for (; *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      text_add(t, "\\%c", c);
    else if (c < 0x20)
      text_add(t, "\\u%04x", c);
    else
      text_add(t, "%c", c);
  }
  text_add(t, "\"");
}

/* This rank's state, what the report and the error messages name. */
static int g_rank = -1;
static int g_result_fd = -1; /* where the rank's JSON goes (fork mode: a pipe to the parent) */
static struct text g_devices_json;
static const char* g_plugin_name = NULL;
static long g_sizes_done, g_sent, g_received;
static unsigned long long g_bytes_verified;
/* What the rank is doing, for the alarm: a literal, and the size and message if any. */
static const char* volatile g_phase = "starting";
static volatile long g_phase_size = -1, g_phase_msg = -1;

static void set_phase(const char* phase, long size, long msg) {
  g_phase = phase;
  g_phase_size = size;
  g_phase_msg = msg;
}

static void write_report(int passed, const char* error) {
  if (g_result_fd < 0 && !(opt.json && opt.rank >= 0)) return;
  struct text t = {0};
  text_add(&t, "{\"rank\":%d,\"device\":%d,\"plugin_name\":", g_rank,
           g_rank >= 0 ? opt.dev[g_rank] : -1);
  text_json_string(&t, g_plugin_name);
  text_add(&t, ",\"devices\":[%s]", g_devices_json.p ? g_devices_json.p : "");
  text_add(&t,
           ",\"sizes_done\":%ld,\"messages_sent\":%ld,\"messages_received\":%ld,"
           "\"bytes_verified\":%llu,\"passed\":%s,\"error\":",
           g_sizes_done, g_sent, g_received, g_bytes_verified, passed ? "true" : "false");
  text_json_string(&t, error);
  text_add(&t, "}");
  if (g_result_fd >= 0) {
    if (write(g_result_fd, t.p, t.n) != (ssize_t)t.n) perror("net_harness: report");
  } else {
    printf("{\"plugin\":");
    struct text p = {0};
    text_json_string(&p, opt.plugin);
    printf("%s,\"passed\":%s,\"ranks\":[%s]}\n", p.p, passed ? "true" : "false", t.p);
    free(p.p);
  }
  free(t.p);
}

static void fail(const char* fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (g_rank >= 0)
    fprintf(stderr, "net_harness: [rank %d] FAIL: %s\n", g_rank, msg);
  else
    fprintf(stderr, "net_harness: FAIL: %s\n", msg);
  fflush(stdout);
  write_report(0, msg);
  _exit(1);
}

static void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char* fmt, ...) {
  if (opt.json) return;
  va_list ap;
  va_start(ap, fmt);
  printf("net_harness: [rank %d] ", g_rank);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* The alarm: a plugin call that has not returned (or a rank without progress) for a while. Only
 * async-signal-safe calls. */
static size_t add_str(char* b, size_t n, size_t cap, const char* s) {
  while (*s && n + 1 < cap) b[n++] = *s++;
  return n;
}

static size_t add_num(char* b, size_t n, size_t cap, long v) {
  char d[24];
  int k = 0;
  if (v < 0) {
    n = add_str(b, n, cap, "-");
    v = -v;
  }
  do d[k++] = (char)('0' + v % 10);
  while ((v /= 10) > 0 && k < 23);
  while (k > 0 && n + 1 < cap) b[n++] = d[--k];
  return n;
}

static void on_alarm(int sig) {
  (void)sig;
  char what[256], line[512];
  size_t w = 0, l = 0;
  w = add_str(what, w, sizeof what, "no progress for ");
  w = add_num(what, w, sizeof what, opt.timeout + 5);
  w = add_str(what, w, sizeof what, " s in ");
  w = add_str(what, w, sizeof what, g_phase);
  if (g_phase_size >= 0) {
    w = add_str(what, w, sizeof what, " (size ");
    w = add_num(what, w, sizeof what, g_phase_size);
    if (g_phase_msg >= 0) {
      w = add_str(what, w, sizeof what, ", message ");
      w = add_num(what, w, sizeof what, g_phase_msg);
    }
    w = add_str(what, w, sizeof what, ")");
  }
  what[w] = '\0';
  l = add_str(line, l, sizeof line, "net_harness: [rank ");
  l = add_num(line, l, sizeof line, g_rank);
  l = add_str(line, l, sizeof line, "] FAIL: ");
  l = add_str(line, l, sizeof line, what);
  l = add_str(line, l, sizeof line, "\n");
  if (write(STDERR_FILENO, line, l) < 0) _exit(1);
  if (g_result_fd >= 0) {
    l = 0;
    l = add_str(line, l, sizeof line, "{\"rank\":");
    l = add_num(line, l, sizeof line, g_rank);
    l = add_str(line, l, sizeof line, ",\"passed\":false,\"error\":\"");
    l = add_str(line, l, sizeof line, what);
    l = add_str(line, l, sizeof line, "\"}");
    if (write(g_result_fd, line, l) < 0) _exit(1);
  }
  _exit(1);
}

static void watchdog(void) {
  alarm((unsigned)opt.timeout + 5);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char* result_name(ncclResult_t r) {
  static const char* names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                "ncclRemoteError",   "ncclInProgress"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "an unknown ncclResult_t";
}

#define CALL(call, ...)                                              \
  do {                                                               \
    const ncclResult_t r_ = (call);                                  \
    if (r_ != ncclSuccess) {                                         \
      char where_[256];                                              \
      snprintf(where_, sizeof where_, __VA_ARGS__);                  \
      fail("%s returned %d (%s)", where_, (int)r_, result_name(r_)); \
    }                                                                \
  } while (0)

/* The plugin's logger: WARN always, INFO and TRACE with --verbose or NCCL_DEBUG=INFO/TRACE. */
static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags;
  if (level == NCCL_LOG_NONE || (level != NCCL_LOG_WARN && level != NCCL_LOG_ABORT && !opt.verbose))
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t n = strlen(msg);
  while (n > 0 && msg[n - 1] == '\n') msg[--n] = '\0';
  const char* lv = level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_ABORT ? "ABORT" : "INFO";
  fprintf(stderr, "net_harness: [rank %d] plugin %s %s:%d: %s\n", g_rank, lv, file ? file : "?",
          line, msg);
}

/* The control connection between the ranks: handles, the closing barrier, and liveness (the
 * peer's end closes when it dies). */
static int g_ctl = -1;

static void ctl_send(const void* p, size_t n, const char* what) {
  const char* c = p;
  while (n > 0) {
    const ssize_t k = send(g_ctl, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("rank %d is gone (sending %s: %s)", 1 - g_rank, what, strerror(errno));
    c += k;
    n -= (size_t)k;
  }
}

static void ctl_recv(void* p, size_t n, const char* what) {
  char* c = p;
  const double deadline = now() + opt.timeout;
  while (n > 0) {
    struct pollfd f = {.fd = g_ctl, .events = POLLIN};
    const int left = (int)((deadline - now()) * 1000);
    if (left <= 0) fail("rank %d sent no %s within %d s", 1 - g_rank, what, opt.timeout);
    if (poll(&f, 1, left) <= 0) continue;
    const ssize_t k = recv(g_ctl, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("rank %d died or quit before sending %s", 1 - g_rank, what);
    c += k;
    n -= (size_t)k;
  }
}

/* Whether the peer is still there (its end of the control connection open). */
static void check_peer(const char* waiting_for) {
  char b;
  const ssize_t k = recv(g_ctl, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    fail("rank %d died or quit while this rank waited for %s", 1 - g_rank, waiting_for);
}

/* Message patterns: 64-bit words of splitmix64 from a seed of the message's sender, size and
 * number, so that no two messages carry the same bytes. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t seed_of(int sender, int size_index, long msg) {
  return mix(((uint64_t)sender << 56) ^ ((uint64_t)size_index << 40) ^ (uint64_t)msg);
}

static void fill(uint8_t* p, size_t n, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = mix(seed + i);
    memcpy(p + i, &w, 8);
  }
  if (i < n) {
    const uint64_t w = mix(seed + i);
    memcpy(p + i, &w, n - i);
  }
}

/* The offset of the first byte that differs from the pattern, or -1. */
static long check(const uint8_t* p, size_t n, uint64_t seed, uint8_t* expected) {
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t w = mix(seed + i);
    const size_t k = n - i < 8 ? n - i : 8;
    if (memcmp(p + i, &w, k) != 0) {
      for (size_t j = 0; j < k; j++)
        if (p[i + j] != ((const uint8_t*)&w)[j]) {
          *expected = ((const uint8_t*)&w)[j];
          return (long)(i + j);
        }
    }
  }
  return -1;
}

static const char* ptr_support_text(int s, char* b, size_t n) {
  snprintf(b, n, "%s%s%s%s", s & NCCL_PTR_HOST ? "HOST|" : "", s & NCCL_PTR_CUDA ? "CUDA|" : "",
           s & NCCL_PTR_DMABUF ? "DMABUF|" : "", s == 0 ? "none|" : "");
  b[strlen(b) - 1] = '\0';
  return b;
}

static ncclNet_v8_t* load_plugin(void) {
  set_phase("dlopen", -1, -1);
  void* lib = dlopen(opt.plugin, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) fail("dlopen(RTLD_NOW) of %s failed: %s", opt.plugin, dlerror());
  ncclNet_v8_t* net = dlsym(lib, "ncclNetPlugin_v8");
  if (net == NULL) {
    char found[256] = "";
    for (int v = 2; v <= 11; v++) {
      char name[32];
      snprintf(name, sizeof name, "ncclNetPlugin_v%d", v);
      if (dlsym(lib, name) != NULL)
        snprintf(found + strlen(found), sizeof found - strlen(found), " %s", name);
    }
    fail("%s has no symbol ncclNetPlugin_v8 (NCCL's ext-net v8 interface); it exports%s",
         opt.plugin, found[0] ? found : " no ncclNetPlugin_vN at all");
  }
  if (net->init == NULL) fail("ncclNetPlugin_v8.init is NULL");
  return net;
}

/* The calls NCCL makes, checked once init() has run (a plugin may fill its struct in init, as
 * the MRC plugin does). */
static void check_calls(const ncclNet_v8_t* net) {
  const struct {
    const char* name;
    const void* fn;
  } need[] = {{"init", (const void*)net->init},
              {"devices", (const void*)net->devices},
              {"getProperties", (const void*)net->getProperties},
              {"listen", (const void*)net->listen},
              {"connect", (const void*)net->connect},
              {"accept", (const void*)net->accept},
              {"regMr", (const void*)net->regMr},
              {"deregMr", (const void*)net->deregMr},
              {"isend", (const void*)net->isend},
              {"irecv", (const void*)net->irecv},
              {"test", (const void*)net->test},
              {"closeSend", (const void*)net->closeSend},
              {"closeRecv", (const void*)net->closeRecv},
              {"closeListen", (const void*)net->closeListen}};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (need[i].fn == NULL) fail("ncclNetPlugin_v8.%s is NULL", need[i].name);
  if (opt.iflush && net->iflush == NULL) fail("--iflush: ncclNetPlugin_v8.iflush is NULL");
}

static int list_devices(ncclNet_v8_t* net) {
  int n = -1;
  set_phase("devices", -1, -1);
  CALL(net->devices(&n), "devices()");
  if (n <= 0) fail("the plugin reports %d devices", n);
  say("plugin \"%s\" (%s): %d device%s", net->name ? net->name : "(no name)", opt.plugin, n,
      n == 1 ? "" : "s");
  for (int d = 0; d < n && d < MAX_DEVS; d++) {
    ncclNetProperties_v8_t p;
    memset(&p, 0, sizeof p);
    set_phase("getProperties", -1, -1);
    CALL(net->getProperties(d, &p), "getProperties(%d)", d);
    char ptr[64];
    ptr_support_text(p.ptrSupport, ptr, sizeof ptr);
    say("  dev %d: %s pciPath %s guid 0x%" PRIx64
        " ptrSupport %s speed %d Mbit/s port %d maxComms %d maxRecvs %d",
        d, p.name ? p.name : "(null)", p.pciPath ? p.pciPath : "(null)", p.guid, ptr, p.speed,
        p.port, p.maxComms, p.maxRecvs);
    text_add(&g_devices_json, "%s{\"name\":", d ? "," : "");
    text_json_string(&g_devices_json, p.name);
    text_add(&g_devices_json, ",\"pciPath\":");
    text_json_string(&g_devices_json, p.pciPath);
    text_add(&g_devices_json,
             ",\"guid\":%" PRIu64
             ",\"ptrSupport\":%d,\"speed\":%d,\"port\":%d,\"latency\":%g,\"maxComms\":%d,"
             "\"maxRecvs\":%d,\"netDeviceType\":%d}",
             p.guid, p.ptrSupport, p.speed, p.port, (double)p.latency, p.maxComms, p.maxRecvs,
             (int)p.netDeviceType);
    if (p.name == NULL) fail("getProperties(%d) gave no name", d);
    if (p.maxRecvs < 1 || p.maxComms < 1)
      fail("getProperties(%d): maxRecvs %d, maxComms %d (each must be at least 1)", d, p.maxRecvs,
           p.maxComms);
    if (d == opt.dev[g_rank] && !(p.ptrSupport & NCCL_PTR_HOST))
      fail("device %d does not take host memory (ptrSupport %s): this harness moves host buffers",
           d, ptr);
  }
  return n;
}

/* Both comms: this rank listens on its device, sends the handle, connects to the peer's. */
static void connect_both(ncclNet_v8_t* net, void** send_comm, void** recv_comm) {
  const int dev = opt.dev[g_rank];
  char handle[NCCL_NET_HANDLE_MAXSIZE], peer[NCCL_NET_HANDLE_MAXSIZE];
  void* listen_comm = NULL;
  memset(handle, 0, sizeof handle);
  set_phase("listen", -1, -1);
  CALL(net->listen(dev, handle, &listen_comm), "listen(%d)", dev);
  if (listen_comm == NULL) fail("listen(%d) gave no listen comm", dev);
  ctl_send(handle, sizeof handle, "its handle");
  ctl_recv(peer, sizeof peer, "its handle");
  ncclNetDeviceHandle_v8_t* send_dev = NULL;
  ncclNetDeviceHandle_v8_t* recv_dev = NULL;
  *send_comm = *recv_comm = NULL;
  const double deadline = now() + opt.timeout;
  long calls = 0;
  watchdog();
  while (*send_comm == NULL || *recv_comm == NULL) {
    if (*send_comm == NULL) {
      set_phase("connect", -1, -1);
      CALL(net->connect(dev, peer, send_comm, &send_dev), "connect(%d)", dev);
    }
    if (*recv_comm == NULL) {
      set_phase("accept", -1, -1);
      CALL(net->accept(listen_comm, recv_comm, &recv_dev), "accept");
    }
    calls++;
    if (*send_comm != NULL && *recv_comm != NULL) break;
    if (now() > deadline)
      fail("no %s after %d s (%ld calls of each; the plugin kept returning a NULL comm)",
           *send_comm == NULL ? "send comm from connect()" : "receive comm from accept()",
           opt.timeout, calls);
    check_peer("the connection");
    usleep(100);
  }
  /* NCCL closes the listen comm once accept() has given the receive comm. */
  set_phase("closeListen", -1, -1);
  CALL(net->closeListen(listen_comm), "closeListen");
  say("connected: device %d to rank %d's device %d, a send and a receive comm (%ld calls)", dev,
      1 - g_rank, opt.dev[1 - g_rank], calls);
}

/* One request slot of a comm: a buffer, the message it carries and its request. */
struct slot {
  int busy;
  long msg;
  void* req; /* NULL while isend/irecv have not given one */
  double since;
};

struct comm_side {
  const char* what; /* "send", "receive" */
  struct slot s[NCCL_NET_MAX_REQUESTS];
  long posted, requested, done; /* messages given a slot, given a request, finished */
};

static int slot_of(const struct comm_side* c, long msg) {
  for (int i = 0; i < opt.inflight; i++)
    if (c->s[i].busy && c->s[i].msg == msg) return i;
  abort(); /* every message between `requested` and `posted` holds a slot */
}

static int free_slot(struct comm_side* c) {
  for (int i = 0; i < opt.inflight; i++)
    if (!c->s[i].busy) return i;
  return -1;
}

static void maybe_exit_for_test(void) {
  if (opt.exit_rank == g_rank && g_received >= opt.exit_after) {
    fprintf(stderr, "net_harness: [rank %d] exiting after %ld messages, as --exit-after asked\n",
            g_rank, g_received);
    fflush(NULL);
    _exit(3);
  }
}

/* `opt.messages` messages of `size` bytes each way, at most opt.inflight requests per comm. */
static void run_size(ncclNet_v8_t* net, void* send_comm, void* recv_comm, void* send_mh,
                     void* recv_mh, uint8_t* send_buf, uint8_t* recv_buf, size_t stride,
                     int size_index, long size) {
  struct comm_side tx = {.what = "send"}, rx = {.what = "receive"};
  const long m = opt.messages;
  int isize = (int)size;
  watchdog();
  while (tx.done < m || rx.done < m) {
    int progress = 0;
    const double t = now();
    /* Receives first, as NCCL posts them ahead of the data. */
    for (int i; rx.posted < m && (i = free_slot(&rx)) >= 0;) {
      struct slot* s = &rx.s[i];
      s->busy = 1;
      s->msg = rx.posted++;
      s->req = NULL;
      s->since = t;
      memset(recv_buf + (size_t)i * stride + (size_t)size, POISON, GUARD);
    }
    for (int i; tx.posted < m && (i = free_slot(&tx)) >= 0;) {
      struct slot* s = &tx.s[i];
      s->busy = 1;
      s->msg = tx.posted++;
      s->req = NULL;
      s->since = t;
      fill(send_buf + (size_t)i * stride, (size_t)size, seed_of(g_rank, size_index, s->msg));
    }
    /* Requests in message order, as the plugin matches them: a NULL request stops the side. */
    while (rx.requested < rx.posted) {
      const int i = slot_of(&rx, rx.requested);
      struct slot* s = &rx.s[i];
      void* data = recv_buf + (size_t)i * stride;
      int tag = (int)(s->msg & 0x7fffffff);
      set_phase("irecv", size, s->msg);
      CALL(net->irecv(recv_comm, 1, &data, &isize, &tag, &recv_mh, &s->req),
           "irecv (size %ld, message %ld)", size, s->msg);
      if (s->req == NULL) break;
      rx.requested++;
      progress = 1;
    }
    while (tx.requested < tx.posted) {
      const int i = slot_of(&tx, tx.requested);
      struct slot* s = &tx.s[i];
      set_phase("isend", size, s->msg);
      CALL(net->isend(send_comm, send_buf + (size_t)i * stride, isize, (int)(s->msg & 0x7fffffff),
                      send_mh, &s->req),
           "isend (size %ld, message %ld)", size, s->msg);
      if (s->req == NULL) break;
      tx.requested++;
      progress = 1;
    }
    struct comm_side* sides[2] = {&rx, &tx};
    for (int k = 0; k < 2; k++) {
      struct comm_side* c = sides[k];
      for (int i = 0; i < opt.inflight; i++) {
        struct slot* s = &c->s[i];
        if (!s->busy || s->req == NULL) continue;
        int done = 0, got = -1;
        set_phase("test", size, s->msg);
        CALL(net->test(s->req, &done, &got), "test of the %s request of message %ld (size %ld)",
             c->what, s->msg, size);
        if (!done) continue;
        progress = 1;
        if (got != isize && (c == &rx || got != -1))
          fail("test of the %s request of message %ld (size %ld) reported %d bytes", c->what,
               s->msg, size, got);
        if (c == &rx) {
          uint8_t* data = recv_buf + (size_t)i * stride;
          uint8_t want = 0;
          const long at = check(data, (size_t)size, seed_of(1 - g_rank, size_index, s->msg), &want);
          if (at >= 0)
            fail("message %ld of size %ld from rank %d: byte %ld is 0x%02x, expected 0x%02x",
                 s->msg, size, 1 - g_rank, at, data[at], want);
          for (int g = 0; g < GUARD; g++)
            if (data[size + g] != POISON)
              fail("message %ld of size %ld from rank %d wrote past its end (byte %ld changed)",
                   s->msg, size, 1 - g_rank, size + g);
          g_bytes_verified += (unsigned long long)size;
          g_received++;
          if (opt.iflush) {
            void* freq = NULL;
            void* d = data;
            set_phase("iflush", size, s->msg);
            CALL(net->iflush(recv_comm, 1, &d, &isize, &recv_mh, &freq),
                 "iflush (size %ld, message %ld)", size, s->msg);
            const double until = now() + opt.timeout;
            for (int fdone = 0; freq != NULL && !fdone;) {
              CALL(net->test(freq, &fdone, NULL), "test of the flush of message %ld", s->msg);
              if (!fdone && now() > until)
                fail("the flush of message %ld (size %ld) did not finish within %d s", s->msg, size,
                     opt.timeout);
            }
          }
          maybe_exit_for_test();
        } else {
          g_sent++;
        }
        s->busy = 0;
        c->done++;
      }
    }
    if (progress) {
      watchdog();
      continue;
    }
    /* Nothing moved: name the oldest request past its time, see that the peer lives, yield. */
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < opt.inflight; i++) {
        const struct slot* s = &sides[k]->s[i];
        if (!s->busy || t - s->since <= opt.timeout) continue;
        if (s->req == NULL)
          fail("%s of message %ld (size %ld): the plugin gave no request for %d s (%s)",
               k ? "isend" : "irecv", s->msg, size, opt.timeout,
               k ? "it never saw the peer's receive" : "it never took the receive");
        fail(
            "the %s request of message %ld (size %ld, %ld of %ld done this way) did not finish "
            "within %d s",
            sides[k]->what, s->msg, size, sides[k]->done, m, opt.timeout);
      }
    check_peer("its messages");
    sched_yield();
  }
}

/* Both ranks must sweep the same sizes the same way (two --rank programs are given theirs). */
static void check_same_settings(void) {
  uint64_t mine[4] = {(uint64_t)opt.nsizes, (uint64_t)opt.messages, (uint64_t)opt.inflight, 0};
  for (int i = 0; i < opt.nsizes; i++) mine[3] = mix(mine[3] ^ (uint64_t)opt.sizes[i]);
  uint64_t theirs[4];
  ctl_send(mine, sizeof mine, "its settings");
  ctl_recv(theirs, sizeof theirs, "its settings");
  if (memcmp(mine, theirs, sizeof mine) != 0)
    fail(
        "rank %d was given other settings: --sizes, --messages and --inflight must be the same "
        "for both ranks",
        1 - g_rank);
}

static int run_rank(int rank) {
  g_rank = rank;
  for (int i = 0; i < opt.nenv[rank]; i++)
    if (putenv((char*)opt.env[rank][i]) != 0) fail("putenv %s", opt.env[rank][i]);
  signal(SIGALRM, on_alarm);
  watchdog();
  check_same_settings();
  ncclNet_v8_t* net = load_plugin();
  set_phase("init", -1, -1);
  CALL(net->init(logger), "init");
  g_plugin_name = net->name;
  check_calls(net);
  const int ndev = list_devices(net);
  if (opt.dev[rank] >= ndev)
    fail("device %d does not exist: the plugin reports %d (--dev%d)", opt.dev[rank], ndev, rank);
  void *send_comm, *recv_comm;
  connect_both(net, &send_comm, &recv_comm);

  long max = 0;
  for (int i = 0; i < opt.nsizes; i++)
    if (opt.sizes[i] > max) max = opt.sizes[i];
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t stride = ((size_t)max + GUARD + page - 1) / page * page;
  const size_t bytes = stride * (size_t)opt.inflight;
  uint8_t* send_buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint8_t* recv_buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (send_buf == MAP_FAILED || recv_buf == MAP_FAILED)
    fail("cannot map 2 x %zu bytes of buffers: %s", bytes, strerror(errno));
  void *send_mh = NULL, *recv_mh = NULL;
  set_phase("regMr", -1, -1);
  CALL(net->regMr(send_comm, send_buf, bytes, NCCL_PTR_HOST, &send_mh),
       "regMr of the send buffers (%zu bytes, NCCL_PTR_HOST)", bytes);
  CALL(net->regMr(recv_comm, recv_buf, bytes, NCCL_PTR_HOST, &recv_mh),
       "regMr of the receive buffers (%zu bytes, NCCL_PTR_HOST)", bytes);
  say("registered 2 x %zu bytes of host memory; %d sizes, %d messages each way per size, %d in "
      "flight per comm",
      bytes, opt.nsizes, opt.messages, opt.inflight);

  for (int i = 0; i < opt.nsizes; i++) {
    run_size(net, send_comm, recv_comm, send_mh, recv_mh, send_buf, recv_buf, stride, i,
             opt.sizes[i]);
    g_sizes_done++;
    if (opt.verbose) say("size %ld: %d messages each way verified", opt.sizes[i], opt.messages);
  }

  /* NCCL's teardown: after both ranks are done, deregister, then close the comms. */
  set_phase("the closing barrier", -1, -1);
  char done = 'D', peer_done = 0;
  ctl_send(&done, 1, "the closing barrier");
  ctl_recv(&peer_done, 1, "the closing barrier");
  set_phase("deregMr", -1, -1);
  CALL(net->deregMr(send_comm, send_mh), "deregMr of the send buffers");
  CALL(net->deregMr(recv_comm, recv_mh), "deregMr of the receive buffers");
  set_phase("closeSend", -1, -1);
  CALL(net->closeSend(send_comm), "closeSend");
  set_phase("closeRecv", -1, -1);
  CALL(net->closeRecv(recv_comm), "closeRecv");
  alarm(0);
  munmap(send_buf, bytes);
  munmap(recv_buf, bytes);
  say("passed: %d sizes from %ld to %ld bytes, %ld messages sent and %ld received, %llu bytes "
      "verified, comms closed",
      opt.nsizes, opt.sizes[0], max, g_sent, g_received, g_bytes_verified);
  write_report(1, NULL);
  return 0;
}

/* --rank R --rendezvous PATH: rank 0 listens on a unix socket at PATH, rank 1 connects to it. */
static int rendezvous(int rank, const char* path) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path) fail("--rendezvous %s: path too long", path);
  strcpy(a.sun_path, path);
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) fail("socket: %s", strerror(errno));
  const double deadline = now() + opt.timeout;
  if (rank == 0) {
    unlink(path);
    if (bind(s, (struct sockaddr*)&a, sizeof a) != 0 || listen(s, 1) != 0)
      fail("--rendezvous %s: %s", path, strerror(errno));
    struct pollfd f = {.fd = s, .events = POLLIN};
    if (poll(&f, 1, opt.timeout * 1000) <= 0)
      fail("rank 1 did not connect to %s within %d s", path, opt.timeout);
    const int c = accept(s, NULL, NULL);
    if (c < 0) fail("accept on %s: %s", path, strerror(errno));
    close(s);
    unlink(path);
    return c;
  }
  while (connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
    if (now() > deadline)
      fail("cannot reach rank 0 at %s within %d s: %s", path, opt.timeout, strerror(errno));
    usleep(50000);
  }
  return s;
}

/* Both ranks as child processes; the parent watches them and reports. */
static int run_forked(void) {
  int ctl[2], out[2][2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) != 0 || pipe(out[0]) != 0 || pipe(out[1]) != 0)
    fail("socketpair/pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid[2];
  for (int r = 0; r < 2; r++) {
    pid[r] = fork();
    if (pid[r] < 0) fail("fork: %s", strerror(errno));
    if (pid[r] == 0) {
      close(ctl[1 - r]);
      close(out[r][0]);
      close(out[1 - r][0]);
      close(out[1 - r][1]);
      g_ctl = ctl[r];
      g_result_fd = out[r][1];
      _exit(run_rank(r));
    }
  }
  close(ctl[0]);
  close(ctl[1]);
  close(out[0][1]);
  close(out[1][1]);
  int status[2] = {-1, -1}, left = 2;
  double kill_at = 0; /* once one rank has ended: when the other is ended for it */
  while (left > 0) {
    int st;
    const pid_t p = waitpid(-1, &st, WNOHANG);
    if (p < 0 && errno != EINTR) break;
    if (p > 0) {
      const int r = p == pid[0] ? 0 : 1;
      status[r] = st;
      left--;
      /* The other rank sees the control connection close within a moment if this one failed;
       * it gets its own time out if this one passed. */
      const int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      kill_at = now() + (ok ? opt.timeout + 10 : 5);
      continue;
    }
    if (left == 1 && now() > kill_at) {
      const int r = status[0] == -1 ? 0 : 1;
      fprintf(stderr, "net_harness: rank %d did not end after rank %d did: killed\n", r, 1 - r);
      kill(pid[r], SIGKILL);
      kill_at = now() + 60;
    }
    usleep(20000);
  }
  struct text json = {0};
  int passed = 1;
  for (int r = 0; r < 2; r++) {
    char buf[65536];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(out[r][0], buf + n, sizeof buf - 1 - n)) > 0)
      n += (size_t)k;
    buf[n] = '\0';
    const int st = status[r];
    const int ok = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
      passed = 0;
      char why[128];
      if (st != -1 && WIFSIGNALED(st))
        snprintf(why, sizeof why, "was killed by signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
      else
        snprintf(why, sizeof why, "exited with status %d", st == -1 ? -1 : WEXITSTATUS(st));
      fprintf(stderr, "net_harness: rank %d %s\n", r, why);
      if (n == 0) {
        snprintf(buf, sizeof buf, "{\"rank\":%d,\"passed\":false,\"error\":\"%s\"}", r, why);
        n = strlen(buf);
      }
    }
    text_add(&json, "%s%s", r ? "," : "", n ? buf : "{}");
  }
  if (opt.json) {
    struct text p = {0};
    text_json_string(&p, opt.plugin);
    printf("{\"plugin\":%s,\"passed\":%s,\"ranks\":[%s]}\n", p.p, passed ? "true" : "false",
           json.p);
    free(p.p);
  } else if (passed) {
    printf(
        "net_harness: PASSED: %s: %d sizes, %d messages each way per size, every byte verified "
        "on both ranks\n",
        opt.plugin, opt.nsizes, opt.messages);
  } else {
    printf("net_harness: FAILED: %s (the lines above say where)\n", opt.plugin);
  }
  free(json.p);
  return passed ? 0 : 1;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: net_harness PLUGIN.so [options]\n"
          "\n"
          "Loads an NCCL net plugin with dlopen(RTLD_NOW) and drives its ncclNetPlugin_v8 as NCCL\n"
          "does, with host memory and no GPU: init (with a logger), devices, getProperties of\n"
          "each device (printed), then two ranks, each a process: each listens on its device,\n"
          "passes the 128-byte handle to the other over a local socket and connects to the\n"
          "other's (connect and accept called again while they return a NULL comm), closes the\n"
          "listen comm, registers host buffers (regMr, NCCL_PTR_HOST) and sends messages both\n"
          "ways at once: irecv posted ahead, isend retried while it returns a NULL request, test\n"
          "until done; every received byte is compared with a pattern of its own message (sender,\n"
          "size, number), the reported sizes checked, and 64 bytes after each message must stay\n"
          "untouched. Then deregMr, closeSend and closeRecv. iflush is only called with\n"
          "--iflush (NCCL calls it for GPU memory only); regMrDmaBuf is never called.\n"
          "\n"
          "Exit status 0 only if both ranks verified every message; 1 on any failure (the\n"
          "message names the call, the size and the message); 2 for usage errors.\n"
          "\n"
          "options:\n"
          "  --sizes LIST      message sizes in bytes, comma-separated, K/M suffixes (1024-based)\n"
          "                    (default: 0, powers of two from 1 to 8M, and 3, 7, 1000, 4095,\n"
          "                    4097, 65537, 1000003, 3M+5, 8M-1)\n"
          "  --inflight N      requests in flight per comm, 1-%d (default 8)\n"
          "  --messages N      messages each way per size (default: 2 x inflight)\n"
          "  --dev0 N, --dev1 N  the device rank 0 and rank 1 use (default 0 and 1)\n"
          "  --env0 K=V, --env1 K=V  set K=V in rank 0's or rank 1's process before the dlopen\n"
          "                    (repeatable; e.g. a different device configuration per rank)\n"
          "  --rank R --rendezvous PATH  run one rank only (0 or 1) in this process; the two\n"
          "                    ranks meet on a unix socket at PATH (rank 0 creates it)\n"
          "  --timeout S       bound of every wait, seconds (default 30): connect/accept, each\n"
          "                    request, an isend or irecv without a request, the peer; a plugin\n"
          "                    call that does not return in S+5 s ends the rank\n"
          "  --iflush          call iflush after each completed receive and test its request\n"
          "  --json            one JSON object on stdout: plugin, passed, and per rank its\n"
          "                    devices, counts, passed and error\n"
          "  --verbose         the plugin's INFO lines and a line per size (also NCCL_DEBUG=INFO)\n"
          "  --exit-after R:N  rank R exits with status 3 after receiving N messages (a check of\n"
          "                    the harness's own handling of a dying peer)\n"
          "  --help\n",
          NCCL_NET_MAX_REQUESTS);
}

static long parse_size(const char* s) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end == 'K' || *end == 'k')
    v *= 1024, end++;
  else if (*end == 'M' || *end == 'm')
    v *= 1024 * 1024, end++;
  if (end == s || *end != '\0' || errno != 0 || v < 0 || v > INT_MAX - GUARD) return -1;
  return v;
}

static int cmp_long(const void* a, const void* b) {
  const long x = *(const long*)a, y = *(const long*)b;
  return x < y ? -1 : x > y;
}

static void usage_error(const char* fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void usage_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "net_harness: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (--help for usage)\n");
  va_end(ap);
  exit(2);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  opt.inflight = NCCL_NET_MAX_REQUESTS;
  opt.timeout = 30;
  opt.dev[0] = 0;
  opt.dev[1] = 1;
  opt.rank = -1;
  opt.exit_rank = -1;
  const char* d = getenv("NCCL_DEBUG");
  opt.verbose = d != NULL && (strcasecmp(d, "INFO") == 0 || strcasecmp(d, "TRACE") == 0);
  enum {
    O_SIZES = 256,
    O_INFLIGHT,
    O_MESSAGES,
    O_DEV0,
    O_DEV1,
    O_ENV0,
    O_ENV1,
    O_RANK,
    O_RDV,
    O_TIMEOUT,
    O_IFLUSH,
    O_JSON,
    O_VERBOSE,
    O_EXIT,
    O_HELP
  };
  static const struct option longs[] = {{"sizes", required_argument, NULL, O_SIZES},
                                        {"inflight", required_argument, NULL, O_INFLIGHT},
                                        {"messages", required_argument, NULL, O_MESSAGES},
                                        {"dev0", required_argument, NULL, O_DEV0},
                                        {"dev1", required_argument, NULL, O_DEV1},
                                        {"env0", required_argument, NULL, O_ENV0},
                                        {"env1", required_argument, NULL, O_ENV1},
                                        {"rank", required_argument, NULL, O_RANK},
                                        {"rendezvous", required_argument, NULL, O_RDV},
                                        {"timeout", required_argument, NULL, O_TIMEOUT},
                                        {"iflush", no_argument, NULL, O_IFLUSH},
                                        {"json", no_argument, NULL, O_JSON},
                                        {"verbose", no_argument, NULL, O_VERBOSE},
                                        {"exit-after", required_argument, NULL, O_EXIT},
                                        {"help", no_argument, NULL, O_HELP},
                                        {NULL, 0, NULL, 0}};
  for (int c; (c = getopt_long(argc, argv, "", longs, NULL)) != -1;) {
    char* end = NULL;
    long v = optarg ? strtol(optarg, &end, 10) : 0;
    const int number = optarg && end != optarg && *end == '\0';
    switch (c) {
      case O_SIZES: {
        opt.nsizes = 0;
        char* copy = strdup(optarg);
        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t;
             t = strtok_r(NULL, ",", &save)) {
          if (opt.nsizes == MAX_SIZES) usage_error("--sizes: at most %d sizes", MAX_SIZES);
          const long s = parse_size(t);
          if (s < 0) usage_error("--sizes: '%s' is not a size in bytes (0 to 2G-65)", t);
          opt.sizes[opt.nsizes++] = s;
        }
        free(copy);
        if (opt.nsizes == 0) usage_error("--sizes: no size");
        break;
      }
      case O_INFLIGHT:
        if (!number || v < 1 || v > NCCL_NET_MAX_REQUESTS)
          usage_error("--inflight must be 1-%d", NCCL_NET_MAX_REQUESTS);
        opt.inflight = (int)v;
        break;
      case O_MESSAGES:
        if (!number || v < 1 || v > 1000000) usage_error("--messages must be 1-1000000");
        opt.messages = (int)v;
        break;
      case O_DEV0:
      case O_DEV1:
        if (!number || v < 0 || v >= MAX_DEVS)
          usage_error("--dev%d must be 0-%d", c - O_DEV0, MAX_DEVS - 1);
        opt.dev[c - O_DEV0] = (int)v;
        break;
      case O_ENV0:
      case O_ENV1: {
        const int r = c - O_ENV0;
        if (strchr(optarg, '=') == NULL || optarg[0] == '=') usage_error("--env%d wants K=V", r);
        if (opt.nenv[r] == MAX_ENV) usage_error("--env%d: at most %d", r, MAX_ENV);
        opt.env[r][opt.nenv[r]++] = optarg;
        break;
      }
      case O_RANK:
        if (!number || (v != 0 && v != 1)) usage_error("--rank must be 0 or 1");
        opt.rank = (int)v;
        break;
      case O_RDV:
        opt.rendezvous = optarg;
        break;
      case O_TIMEOUT:
        if (!number || v < 1 || v > 3600) usage_error("--timeout must be 1-3600 seconds");
        opt.timeout = (int)v;
        break;
      case O_IFLUSH:
        opt.iflush = 1;
        break;
      case O_JSON:
        opt.json = 1;
        break;
      case O_VERBOSE:
        opt.verbose = 1;
        break;
      case O_EXIT:
        if (sscanf(optarg, "%d:%d", &opt.exit_rank, &opt.exit_after) != 2 || opt.exit_rank < 0 ||
            opt.exit_rank > 1 || opt.exit_after < 0)
          usage_error("--exit-after wants R:N (rank 0 or 1, messages)");
        break;
      case O_HELP:
        usage(stdout);
        return 0;
      default:
        usage_error("unknown option");
    }
  }
  if (optind != argc - 1) usage_error("one plugin path expected");
  opt.plugin = argv[optind];
  if ((opt.rank >= 0) != (opt.rendezvous != NULL))
    usage_error("--rank and --rendezvous go together");
  if (opt.nsizes == 0) {
    static const long odd[] = {
        3, 7, 1000, 4095, 4097, 65537, 1000003, 3 * 1048576 + 5, 8 * 1048576 - 1};
    opt.sizes[opt.nsizes++] = 0;
    for (long s = 1; s <= 8 * 1048576; s *= 2) opt.sizes[opt.nsizes++] = s;
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) opt.sizes[opt.nsizes++] = odd[i];
    qsort(opt.sizes, (size_t)opt.nsizes, sizeof(long), cmp_long);
  }
  if (opt.messages == 0) opt.messages = 2 * opt.inflight;
  signal(SIGPIPE, SIG_IGN);
  if (opt.rank < 0) return run_forked();
  g_rank = opt.rank;
  g_ctl = rendezvous(opt.rank, opt.rendezvous);
  return run_rank(opt.rank);
}
