/* Times MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter_block the way torch_domino.bench
 * times torch.distributed: nccl-tests conventions, float32 SUM, min and median over repeats of
 * back-to-back iterations. Prints CSV rows on rank 0:
 *   backend,op,world,bytes,iters,time_us_min,time_us_median
 * Usage: mpirun -np W collectives_bench MIN_BYTES MAX_BYTES SECONDS_PER_SIZE REPEATS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void run(int op, const char* name, size_t bytes, int world, int rank, double budget,
                int repeats, float* in, float* out) {
  const int count = (int)(bytes / sizeof(float));
  const int per_rank = count / world > 0 ? count / world : 1;
  for (int warm = 0; warm < 3; ++warm) {
    if (op == 0) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (op == 1) MPI_Allgather(in, per_rank, MPI_FLOAT, out, per_rank, MPI_FLOAT, MPI_COMM_WORLD);
    if (op == 2) MPI_Reduce_scatter_block(in, out, per_rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  /* How many iterations fit the budget: every rank takes the slowest rank's estimate. */
  double t0 = MPI_Wtime();
  if (op == 0) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (op == 1) MPI_Allgather(in, per_rank, MPI_FLOAT, out, per_rank, MPI_FLOAT, MPI_COMM_WORLD);
  if (op == 2) MPI_Reduce_scatter_block(in, out, per_rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double one = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&one, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int iters = (int)(budget / repeats / (slowest > 1e-7 ? slowest : 1e-7));
  if (iters < 1) iters = 1;
  if (iters > 20000) iters = 20000;
  double* samples = malloc(sizeof(double) * (size_t)repeats);
  for (int r = 0; r < repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (op == 0) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (op == 1) MPI_Allgather(in, per_rank, MPI_FLOAT, out, per_rank, MPI_FLOAT, MPI_COMM_WORLD);
      if (op == 2) MPI_Reduce_scatter_block(in, out, per_rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double mine = (MPI_Wtime() - start) / iters, worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    samples[r] = worst;
  }
  qsort(samples, (size_t)repeats, sizeof(double), compare);
  if (rank == 0) {
    printf("mpi,%s,%d,%zu,%d,%.3f,%.3f\n", name, world, bytes, iters, samples[0] * 1e6,
           samples[repeats / 2] * 1e6);
    fflush(stdout);
  }
  free(samples);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const size_t min_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
  const size_t max_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (64u << 20);
  const double budget = argc > 3 ? atof(argv[3]) : 0.2;
  const int repeats = argc > 4 ? atoi(argv[4]) : 5;
  const char* ops = argc > 5 ? argv[5] : "all_reduce,all_gather_into_tensor,reduce_scatter_tensor";
  float* in = malloc(max_bytes * (size_t)world + 64);
  float* out = malloc(max_bytes * (size_t)world + 64);
  memset(in, 0, max_bytes * (size_t)world);
  memset(out, 0, max_bytes * (size_t)world);
  const char* names[3] = {"all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"};
  for (int op = 0; op < 3; ++op) {
    if (!strstr(ops, names[op])) continue;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      /* Same message-size convention as the Python harness: all_gather moves `bytes` in total. */
      if (op != 0 && bytes / sizeof(float) < (size_t)world) continue;
      run(op, names[op], bytes, world, rank, budget, repeats, in, out);
    }
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
