// libspmd_test_yield: LD_PRELOADed into the MPI tests by ctest (SPMD_TEST_YIELD, on by default;
// docs/getting-started.md, "Test environment"). It makes a rank that waits give its core away.
//
// Why: MPICH (and UCX under it) waits by polling. With more ranks than free cores (3 and 4 ranks on
// a 2-core machine, or 2 ranks beside a compile) a rank that waits for a message spins through its
// whole time slice while the rank that would send it is not running, so every message costs a
// scheduler slice: test_solvers at 3 ranks took 76-84 s, 0.5-12 s with this library (the same
// checks, the same results).
//
// How: through the MPI profiling interface, each blocking call the library, the tests and HDF5
// make becomes its nonblocking form and a loop of MPI_Test... and sched_yield(). The semantics are
// MPI's own (a blocking collective and its nonblocking form have the same result; every rank runs
// the same binary, so the ranks' calls still match one another). Only the waiting changes; no
// check of any test is weakened. Not for production: a dedicated core polls faster than it yields.
#include <mpi.h>
#include <sched.h>

namespace {
int wait_yielding(MPI_Request* r, MPI_Status* s) {
  int done = 0;
  int rc = MPI_SUCCESS;
  while ((rc = PMPI_Test(r, &done, s)) == MPI_SUCCESS && !done) sched_yield();
  return rc;
}
int started(int rc, MPI_Request* r) {
  return rc != MPI_SUCCESS ? rc : wait_yielding(r, MPI_STATUS_IGNORE);
}
}  // namespace

extern "C" {
int MPI_Wait(MPI_Request* r, MPI_Status* s) {
  return wait_yielding(r, s);
}

int MPI_Waitall(int n, MPI_Request r[], MPI_Status s[]) {
  int done = 0;
  int rc = MPI_SUCCESS;
  while ((rc = PMPI_Testall(n, r, &done, s)) == MPI_SUCCESS && !done) sched_yield();
  return rc;
}

int MPI_Waitany(int n, MPI_Request r[], int* index, MPI_Status* s) {
  int done = 0;
  int rc = MPI_SUCCESS;
  while ((rc = PMPI_Testany(n, r, index, &done, s)) == MPI_SUCCESS && !done) sched_yield();
  return rc;
}

int MPI_Barrier(MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Ibarrier(c, &r), &r);
}

int MPI_Bcast(void* buf, int n, MPI_Datatype t, int root, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Ibcast(buf, n, t, root, c, &r), &r);
}

int MPI_Allreduce(const void* in, void* out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Iallreduce(in, out, n, t, op, c, &r), &r);
}

int MPI_Reduce(const void* in, void* out, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Ireduce(in, out, n, t, op, root, c, &r), &r);
}

int MPI_Exscan(const void* in, void* out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Iexscan(in, out, n, t, op, c, &r), &r);
}

int MPI_Scan(const void* in, void* out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Iscan(in, out, n, t, op, c, &r), &r);
}

int MPI_Gather(const void* in, int n, MPI_Datatype t, void* out, int m, MPI_Datatype u, int root, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Igather(in, n, t, out, m, u, root, c, &r), &r);
}

int MPI_Gatherv(const void* in, int n, MPI_Datatype t, void* out, const int counts[], const int displs[],
                MPI_Datatype u, int root, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Igatherv(in, n, t, out, counts, displs, u, root, c, &r), &r);
}

int MPI_Scatter(const void* in, int n, MPI_Datatype t, void* out, int m, MPI_Datatype u, int root, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Iscatter(in, n, t, out, m, u, root, c, &r), &r);
}

int MPI_Allgather(const void* in, int n, MPI_Datatype t, void* out, int m, MPI_Datatype u, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Iallgather(in, n, t, out, m, u, c, &r), &r);
}

int MPI_Allgatherv(const void* in, int n, MPI_Datatype t, void* out, const int counts[], const int displs[],
                   MPI_Datatype u, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Iallgatherv(in, n, t, out, counts, displs, u, c, &r), &r);
}

int MPI_Alltoall(const void* in, int n, MPI_Datatype t, void* out, int m, MPI_Datatype u, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Ialltoall(in, n, t, out, m, u, c, &r), &r);
}

int MPI_Alltoallv(const void* in, const int ncounts[], const int ndispls[], MPI_Datatype t, void* out,
                  const int mcounts[], const int mdispls[], MPI_Datatype u, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Ialltoallv(in, ncounts, ndispls, t, out, mcounts, mdispls, u, c, &r), &r);
}

int MPI_Send(const void* buf, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  MPI_Request r;
  return started(PMPI_Isend(buf, n, t, dest, tag, c, &r), &r);
}

int MPI_Recv(void* buf, int n, MPI_Datatype t, int source, int tag, MPI_Comm c, MPI_Status* s) {
  MPI_Request r;
  const int rc = PMPI_Irecv(buf, n, t, source, tag, c, &r);
  return rc != MPI_SUCCESS ? rc : wait_yielding(&r, s);
}

int MPI_Sendrecv(const void* out, int n, MPI_Datatype t, int dest, int sendtag, void* in, int m, MPI_Datatype u,
                 int source, int recvtag, MPI_Comm c, MPI_Status* s) {
  MPI_Request r[2];
  int rc = PMPI_Irecv(in, m, u, source, recvtag, c, &r[1]);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Isend(out, n, t, dest, sendtag, c, &r[0]);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st[2];
  rc = MPI_Waitall(2, r, st);
  if (s != MPI_STATUS_IGNORE) *s = st[1];
  return rc;
}
}
