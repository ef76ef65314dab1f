/* bench/mpi_allreduce.c: MPI_Allreduce timing for bench/allreduce_compare.sh.
 *
 *   mpicc -O2 -o mpi_allreduce bench/mpi_allreduce.c
 *   mpirun ... mpi_allreduce sweep MINBYTES MAXBYTES FACTOR            # nccl-tests-like sweep
 *   mpirun ... mpi_allreduce timeline BYTES SECONDS                     # iterations until SECONDS
 *
 * float32 sum, out of place. Inputs: rank r holds r+1 in every element (plus the iteration
 * number in the timeline), so every result is exact and is checked element by element.
 * sweep: per size, WARMUP untimed then ITERS timed iterations (20/3 up to 1 MiB, 8/1 at 4 MiB,
 * 3/1 from 16 MiB: the same schedule as the mrc and Gloo runs), time = the slowest rank's
 * average, then one checked iteration on fresh inputs. One JSON line per size on rank 0's stdout.
 * timeline: iterations of BYTES until SECONDS have passed (decided by rank 0 and agreed through a
 * 1-element all-reduce after each iteration), each checked; one JSON line per iteration with its
 * wall-clock start and end (CLOCK_REALTIME, ns: comparable with the testbed's fault times).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void fill(float* x, size_t n, float v) {
  for (size_t i = 0; i < n; i++) x[i] = v;
}

static long long count_wrong(const float* x, size_t n, float want) {
  long long w = 0;
  for (size_t i = 0; i < n; i++) w += (x[i] != want);
  return w;
}

static int iters_for(size_t bytes, int* warmup) {
  if (bytes <= (1u << 20)) { *warmup = 3; return 20; }
  if (bytes <= (4u << 20)) { *warmup = 1; return 8; }
  *warmup = 1;
  return 3;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce sweep MIN MAX FACTOR | timeline BYTES SECONDS\n");
    MPI_Finalize();
    return 2;
  }
  const float want_base = (float)n * (n + 1) / 2;  /* sum of r+1 */
  long long total_wrong = 0;
  if (strcmp(argv[1], "sweep") == 0 && argc == 5) {
    size_t lo = strtoull(argv[2], 0, 10), hi = strtoull(argv[3], 0, 10), f = strtoull(argv[4], 0, 10);
    float* in = malloc(hi);
    float* out = malloc(hi);
    for (size_t bytes = lo; bytes <= hi; bytes *= (f < 2 ? 2 : f)) {
      size_t cnt = bytes / sizeof(float);
      int warmup, iters = iters_for(bytes, &warmup);
      fill(in, cnt, (float)(rank + 1));
      for (int i = 0; i < warmup; i++) MPI_Allreduce(in, out, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < iters; i++) MPI_Allreduce(in, out, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double avg = (MPI_Wtime() - t0) / iters, slowest;
      MPI_Allreduce(&avg, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      fill(in, cnt, (float)(rank + 1));
      fill(out, cnt, -1.0f);
      MPI_Allreduce(in, out, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      long long wrong = count_wrong(out, cnt, want_base), wrong_all;
      MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      total_wrong += wrong_all;
      if (rank == 0) {
        double algbw = bytes / slowest / 1e9;
        printf("{\"size\": %zu, \"count\": %zu, \"iters\": %d, \"warmup\": %d, \"time_us\": %.3f, "
               "\"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %lld}\n",
               bytes, cnt, iters, warmup, slowest * 1e6, algbw, algbw * 2.0 * (n - 1) / n, wrong_all);
        fflush(stdout);
      }
    }
    free(in);
    free(out);
  } else if (strcmp(argv[1], "timeline") == 0 && argc == 4) {
    size_t bytes = strtoull(argv[2], 0, 10), cnt = bytes / sizeof(float);
    double seconds = atof(argv[3]);
    float* in = malloc(bytes);
    float* out = malloc(bytes);
    int64_t start = now_ns();
    for (int it = 0;; it++) {
      float v = (float)(rank + 1 + (it % 64));
      fill(in, cnt, v);
      int64_t t0 = now_ns();
      MPI_Allreduce(in, out, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      int64_t t1 = now_ns();
      long long wrong = count_wrong(out, cnt, want_base + (float)n * (it % 64)), wrong_all;
      MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      total_wrong += wrong_all;
      int go = rank == 0 ? (now_ns() - start) < (int64_t)(seconds * 1e9) : 0, go_all;
      MPI_Allreduce(&go, &go_all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0) {
        printf("{\"iter\": %d, \"size\": %zu, \"start_ns\": %lld, \"end_ns\": %lld, \"wrong\": %lld}\n", it, bytes,
               (long long)t0, (long long)t1, wrong_all);
        fflush(stdout);
      }
      if (!go_all) break;
    }
    free(in);
    free(out);
  } else {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce sweep MIN MAX FACTOR | timeline BYTES SECONDS\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
