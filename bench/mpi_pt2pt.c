/* bench/mpi_pt2pt.c: MPI point-to-point latency and bandwidth between ranks 0 and 1, for
 * bench/mpi_fabric_compare.sh (the mrc libfabric provider against Open MPI's TCP BTL).
 *
 *   mpirun -np 2 ... mpi_pt2pt latency BYTES ITERS        # ping-pong: half the round trip, us
 *   mpirun -np 2 ... mpi_pt2pt bandwidth BYTES WINDOW SECONDS
 *                  # rank 0 keeps WINDOW non-blocking sends of BYTES in flight to rank 1 for
 *                  # SECONDS; rank 1 checks the first and last byte of each message; Gbit/s
 *   mpirun -np 2 ... mpi_pt2pt timeline BYTES WINDOW SECONDS
 *                  # as bandwidth, with one JSON line per 100 ms (wall clock, ns, and Gbit/s in it)
 * One JSON line per result on rank 0's stdout. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void latency(int rank, int bytes, int iters) {
  char* buf = calloc((size_t)bytes + 1, 1);
  for (int warm = 1; warm >= 0; --warm) {
    const int n = warm ? iters / 10 + 1 : iters;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) {
      if (rank == 0) {
        MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    const double us = (now_s() - t0) * 1e6 / n / 2;
    if (!warm && rank == 0) printf("{\"test\":\"latency\",\"bytes\":%d,\"iters\":%d,\"us\":%.2f}\n", bytes, n, us);
  }
  free(buf);
}

/* Rank 0 sends until `seconds` pass (it tells rank 1 to stop with a zero-byte message of tag 2). */
static void bandwidth(int rank, int bytes, int window, double seconds, int timeline) {
  unsigned char* buf = malloc((size_t)bytes * (size_t)window);
  MPI_Request* rq = malloc(sizeof(MPI_Request) * (size_t)window);
  long messages = 0, bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_s();
  double mark = t0;
  long mark_messages = 0;
  if (rank == 0) {
    for (int w = 0; w < window; ++w) {
      memset(buf + (size_t)w * bytes, (unsigned char)w, (size_t)bytes);
      MPI_Isend(buf + (size_t)w * bytes, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[w]);
    }
    for (;;) {
      int w;
      MPI_Waitany(window, rq, &w, MPI_STATUS_IGNORE);
      ++messages;
      const double t = now_s();
      if (timeline && t - mark >= 0.1) {
        printf("{\"test\":\"timeline\",\"t_ns\":%.0f,\"gbps\":%.3f}\n", t * 1e9,
               (double)(messages - mark_messages) * bytes * 8 / (t - mark) / 1e9);
        fflush(stdout);
        mark = t;
        mark_messages = messages;
      }
      if (t - t0 >= seconds) break;
      MPI_Isend(buf + (size_t)w * bytes, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[w]);
    }
    MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
    messages += window - 1;
    MPI_Send(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
  } else if (rank == 1) {
    /* The stop message's receive is the last request, so waiting on all of them ends. */
    rq = realloc(rq, sizeof(MPI_Request) * (size_t)(window + 1));
    for (int w = 0; w < window; ++w) MPI_Irecv(buf + (size_t)w * bytes, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[w]);
    MPI_Irecv(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[window]);
    for (;;) {
      int w;
      MPI_Waitany(window + 1, rq, &w, MPI_STATUS_IGNORE);
      if (w == window) break;
      unsigned char* m = buf + (size_t)w * bytes;
      bad += m[0] != m[bytes - 1];
      MPI_Irecv(m, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[w]);
    }
    for (int w = 0; w < window; ++w) MPI_Cancel(&rq[w]);
    MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
  }
  const double seconds_taken = now_s() - t0;
  long all_bad = 0;
  MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("{\"test\":\"bandwidth\",\"bytes\":%d,\"window\":%d,\"seconds\":%.3f,\"messages\":%ld,\"gbps\":%.3f,\"bad\":%ld}\n",
           bytes, window, seconds_taken, messages, (double)messages * bytes * 8 / seconds_taken / 1e9, all_bad);
  free(buf);
  free(rq);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc >= 4 && strcmp(argv[1], "latency") == 0) {
    latency(rank, atoi(argv[2]), atoi(argv[3]));
  } else if (argc >= 5 && (strcmp(argv[1], "bandwidth") == 0 || strcmp(argv[1], "timeline") == 0)) {
    bandwidth(rank, atoi(argv[2]), atoi(argv[3]), atof(argv[4]), strcmp(argv[1], "timeline") == 0);
  } else {
    if (rank == 0) fprintf(stderr, "usage: mpi_pt2pt latency BYTES ITERS | bandwidth|timeline BYTES WINDOW SECONDS\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  return 0;
}
