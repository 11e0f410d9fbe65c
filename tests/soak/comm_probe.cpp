// tests/soak/comm_probe.cpp: a shared library for the soak tests (apps/common/soak.py), loaded with
// LD_PRELOAD, that counts the live MPI communicators of a process through the MPI profiling
// interface: every call that makes a communicator (dup, split, create, topologies,
// intercommunicators) adds one, MPI_Comm_free and MPI_Comm_disconnect take one away. The apps read
// the count through spmd_probe_live_comms(), which they look up with dlsym (apps/common/report.hpp,
// --resources); nothing in spmdarray links this library.
//
// It sees the calls made through the MPI symbols by the process (spmdarray, HDF5, the apps), not the
// communicators MPICH makes inside itself (ROMIO's, which it frees itself).
#include <mpi.h>

#include <atomic>

namespace {
std::atomic<long> live{0};
int made(int rc, const MPI_Comm* c) {
  if (rc == MPI_SUCCESS && c && *c != MPI_COMM_NULL) ++live;
  return rc;
}
}  // namespace

extern "C" {

long spmd_probe_live_comms() {
  return live.load();
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return made(PMPI_Comm_dup(comm, newcomm), newcomm);
}
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  return made(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  return made(PMPI_Comm_idup(comm, newcomm, request), newcomm);
}
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return made(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  return made(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return made(PMPI_Comm_create(comm, group, newcomm), newcomm);
}
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  return made(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}
int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm* out) {
  return made(PMPI_Cart_create(comm, ndims, dims, periods, reorder, out), out);
}
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* out) {
  return made(PMPI_Cart_sub(comm, remain_dims, out), out);
}
int MPI_Graph_create(MPI_Comm comm, int nnodes, const int indx[], const int edges[], int reorder, MPI_Comm* out) {
  return made(PMPI_Graph_create(comm, nnodes, indx, edges, reorder, out), out);
}
int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[], const int destinations[],
                          const int weights[], MPI_Info info, int reorder, MPI_Comm* out) {
  return made(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder, out), out);
}
int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[], const int sourceweights[],
                                   int outdegree, const int destinations[], const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm* out) {
  return made(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
                                              destweights, info, reorder, out),
              out);
}
int MPI_Intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer, int remote_leader, int tag, MPI_Comm* out) {
  return made(PMPI_Intercomm_create(local, local_leader, peer, remote_leader, tag, out), out);
}
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* out) {
  return made(PMPI_Intercomm_merge(intercomm, high, out), out);
}
int MPI_Comm_free(MPI_Comm* comm) {
  const int rc = PMPI_Comm_free(comm);
  if (rc == MPI_SUCCESS) --live;
  return rc;
}
int MPI_Comm_disconnect(MPI_Comm* comm) {
  const int rc = PMPI_Comm_disconnect(comm);
  if (rc == MPI_SUCCESS) --live;
  return rc;
}

}  // extern "C"
