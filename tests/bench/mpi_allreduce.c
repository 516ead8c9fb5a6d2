/* mpi_allreduce.c — Open MPI's MPI_Allreduce timed the same way as kylix_allreduce.c, for
   the comparison in the README.  ./compare_mpi.sh builds and runs both. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long n = argc > 1 ? atol(argv[1]) : 16L << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 5;
  float *buf = malloc(n * sizeof(float));
  for (long i = 0; i < n; i++) buf[i] = (float)(i % 7);
  MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++)
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double dt = (MPI_Wtime() - t0) / iters;
  if (rank == 0) printf("mpi   ranks=%d count=%ld: %.1f ms per allreduce\n", size, n, dt * 1e3);
  free(buf);
  MPI_Finalize();
  return 0;
}
