/* An MPI test set for the mrc libfabric provider: run under Open MPI's OFI MTL or MPICH's
 * ch4:ofi with the provider selected. Every rank checks what it received, byte for byte, and
 * the program exits non-zero, naming the check, on the first mismatch.
 *
 *   point-to-point: blocking and non-blocking, 0 bytes to 4 MiB, to every other rank and to self
 *   tags: many tags in flight, received in reverse order; MPI_ANY_TAG and MPI_ANY_SOURCE
 *   probes: MPI_Probe, MPI_Iprobe, MPI_Mprobe/MPI_Mrecv
 *   collectives: barrier, bcast, allreduce (small and 8 MiB), allgather, alltoall, reduce
 *   one-sided: MPI_Put, MPI_Get (to 1 MiB) and MPI_Accumulate in fence epochs, and Put/Get under
 *   MPI_Win_lock (MPICH's ch4:ofi makes them the provider's RMA writes and reads)
 *   loop N: `mpi_suite loop N` runs N all-reduces of 1 MiB and checks each (a plane cut during it
 *   must cost nothing but time) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static const char* phase = "init";  /* named in the report of an MPI error */

static void on_mpi_error(MPI_Comm* comm, int* code, ...) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(*code, text, &len);
  fprintf(stderr, "mpi_suite: rank %d: FAILED in %s: %s\n", rank, phase, text);
  MPI_Abort(*comm, 1);
}

static void check(int ok, const char* what) {
  if (ok) return;
  fprintf(stderr, "mpi_suite: rank %d: FAILED: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(int from, int to, size_t i, int salt) {
  return (unsigned char)(from * 31 + to * 17 + i * 7 + salt * 13);
}

static void fill(unsigned char* b, size_t n, int from, int to, int salt) {
  for (size_t i = 0; i < n; ++i) b[i] = pattern(from, to, i, salt);
}

static int same(const unsigned char* b, size_t n, int from, int to, int salt) {
  for (size_t i = 0; i < n; ++i)
    if (b[i] != pattern(from, to, i, salt)) return 0;
  return 1;
}

static void point_to_point(void) {
  phase = "point-to-point";
  static const size_t sizes[] = {0, 1, 7, 64, 1000, 4096, 65536, 65537, 262144, 1 << 20, 4 << 20};
  unsigned char* out = malloc(4 << 20);
  unsigned char* in = malloc(4 << 20);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    const size_t n = sizes[s];
    for (int peer = 0; peer < size; ++peer) {
      MPI_Request rq[2];
      MPI_Status st;
      fill(out, n, rank, peer, (int)s);
      memset(in, 0, n);
      MPI_Irecv(in, (int)n, MPI_BYTE, peer, 100 + (int)s, MPI_COMM_WORLD, &rq[0]);
      MPI_Isend(out, (int)n, MPI_BYTE, peer, 100 + (int)s, MPI_COMM_WORLD, &rq[1]);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
      MPI_Wait(&rq[0], &st);
      int count = -1;
      MPI_Get_count(&st, MPI_BYTE, &count);
      check(count == (int)n && st.MPI_SOURCE == peer, "point-to-point count and source");
      check(same(in, n, peer, rank, (int)s), "point-to-point data");
    }
  }
  phase = "sendrecv ring";
  /* Blocking send/recv around a ring. */
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  fill(out, 100000, rank, next, 99);
  MPI_Sendrecv(out, 100000, MPI_BYTE, next, 7, in, 100000, MPI_BYTE, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  check(same(in, 100000, prev, rank, 99), "sendrecv ring");
  free(out);
  free(in);
}

static void tags_and_wildcards(void) {
  phase = "tags";
  enum { kTags = 64 };
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int out[kTags], in[kTags];
  MPI_Request rq[2 * kTags];
  for (int t = 0; t < kTags; ++t) out[t] = rank * 1000 + t;
  /* Receives posted in reverse tag order: each must get the message of its own tag. */
  for (int t = 0; t < kTags; ++t) MPI_Irecv(&in[kTags - 1 - t], 1, MPI_INT, prev, kTags - 1 - t, MPI_COMM_WORLD, &rq[t]);
  for (int t = 0; t < kTags; ++t) MPI_Isend(&out[t], 1, MPI_INT, next, t, MPI_COMM_WORLD, &rq[kTags + t]);
  MPI_Waitall(2 * kTags, rq, MPI_STATUSES_IGNORE);
  for (int t = 0; t < kTags; ++t) check(in[t] == prev * 1000 + t, "tag matching");
  phase = "wildcards";
  /* Wildcards: everyone sends one message to rank 0, which takes them with ANY_SOURCE/ANY_TAG. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0) {
    int v = rank * 7;
    MPI_Send(&v, 1, MPI_INT, 0, 500 + rank, MPI_COMM_WORLD);
  } else {
    int seen = 0;
    for (int i = 1; i < size; ++i) {
      int v;
      MPI_Status st;
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      check(v == st.MPI_SOURCE * 7 && st.MPI_TAG == 500 + st.MPI_SOURCE, "wildcard receive");
      seen |= 1 << st.MPI_SOURCE;
    }
    check(seen == ((1 << size) - 2), "wildcard receives from every rank");
  }
  /* No rank starts the next phase's sends while rank 0's ANY_TAG receives could take them. */
  MPI_Barrier(MPI_COMM_WORLD);
}

static void probes(void) {
  phase = "probes";
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const int n = 12345 + rank;
  unsigned char* out = malloc((size_t)n);
  fill(out, (size_t)n, rank, next, 5);
  MPI_Request rq;
  MPI_Isend(out, n, MPI_BYTE, next, 42, MPI_COMM_WORLD, &rq);
  MPI_Status st;
  MPI_Probe(prev, 42, MPI_COMM_WORLD, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  check(count == 12345 + prev && st.MPI_SOURCE == prev, "MPI_Probe size and source");
  unsigned char* in = malloc((size_t)count);
  MPI_Recv(in, count, MPI_BYTE, prev, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  check(same(in, (size_t)count, prev, rank, 5), "probed message data");
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  /* Iprobe until it arrives, then a matched probe (Mprobe/Mrecv). */
  int v = rank, got = 0, flag = 0;
  MPI_Isend(&v, 1, MPI_INT, next, 43, MPI_COMM_WORLD, &rq);
  while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, 43, MPI_COMM_WORLD, &flag, &st);
  check(st.MPI_SOURCE == prev, "MPI_Iprobe source");
  MPI_Message msg;
  MPI_Mprobe(prev, 43, MPI_COMM_WORLD, &msg, &st);
  MPI_Mrecv(&got, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
  check(got == prev, "MPI_Mrecv data");
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  free(out);
  free(in);
}

static void allreduce_check(size_t count, int salt) {
  double* a = malloc(count * sizeof(double));
  for (size_t i = 0; i < count; ++i) a[i] = (double)(rank + 1) * (double)((i + (size_t)salt) % 1000);
  MPI_Allreduce(MPI_IN_PLACE, a, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double ranks = (double)size * (size + 1) / 2;
  for (size_t i = 0; i < count; ++i) check(a[i] == ranks * (double)((i + (size_t)salt) % 1000), "allreduce sum");
  free(a);
}

static void collectives(void) {
  phase = "collectives";
  MPI_Barrier(MPI_COMM_WORLD);
  int root_value = rank == 0 ? 4242 : 0;
  MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  check(root_value == 4242, "bcast");
  allreduce_check(1, 0);
  allreduce_check(1000, 1);
  allreduce_check(1 << 20, 2);
  int* all = malloc(sizeof(int) * (size_t)size);
  MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < size; ++i) check(all[i] == i, "allgather");
  int* out = malloc(sizeof(int) * (size_t)size);
  for (int i = 0; i < size; ++i) out[i] = rank * 100 + i;
  MPI_Alltoall(out, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < size; ++i) check(all[i] == i * 100 + rank, "alltoall");
  long sum = 0, mine = rank + 1;
  MPI_Reduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, size - 1, MPI_COMM_WORLD);
  if (rank == size - 1) check(sum == (long)size * (size + 1) / 2, "reduce");
  free(all);
  free(out);
}

/* Every rank exposes a window; rank r puts into, gets from and accumulates into rank r+1's. */
static void one_sided(void) {
  phase = "one-sided";
  const size_t n = 1 << 20;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  unsigned char* window = malloc(n);
  unsigned char* mine = malloc(n);
  unsigned char* got = malloc(n);
  fill(window, n, rank, rank, 40);
  MPI_Win win;
  MPI_Win_create(window, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_fence(0, win);
  MPI_Get(got, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
  MPI_Win_fence(0, win);
  check(same(got, n, next, next, 40), "MPI_Get of a whole window");
  fill(mine, n, rank, next, 41);
  MPI_Put(mine, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
  MPI_Win_fence(0, win);
  check(same(window, n, prev, rank, 41), "MPI_Put of a whole window");
  int* counts = (int*)window;
  counts[0] = 0;
  MPI_Win_fence(0, win);
  const int one = rank + 1;
  for (int r = 0; r < size; ++r) MPI_Accumulate(&one, 1, MPI_INT, r, 0, 1, MPI_INT, MPI_SUM, win);
  MPI_Win_fence(0, win);
  check(counts[0] == size * (size + 1) / 2, "MPI_Accumulate from every rank");
  MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
  MPI_Put(mine, 4096, MPI_BYTE, next, 4096, 4096, MPI_BYTE, win);
  MPI_Win_flush(next, win);
  MPI_Get(got, 4096, MPI_BYTE, next, 4096, 4096, MPI_BYTE, win);
  MPI_Win_unlock(next, win);
  check(memcmp(got, mine, 4096) == 0, "Put, flush, Get under MPI_Win_lock");
  MPI_Win_free(&win);
  free(window);
  free(mine);
  free(got);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(on_mpi_error, &handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
  if (argc == 3 && strcmp(argv[1], "loop") == 0) {
    const int n = atoi(argv[2]);
    for (int i = 0; i < n; ++i) {
      allreduce_check(1 << 17, i);
      if (rank == 0 && (i + 1) % 50 == 0) printf("mpi_suite: %d all-reduces\n", i + 1), fflush(stdout);
    }
  } else {
    point_to_point();
    tags_and_wildcards();
    probes();
    collectives();
    one_sided();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_suite: %d ranks: all checks passed\n", size);
  MPI_Finalize();
  return 0;
}
