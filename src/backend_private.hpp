#pragma once
// Library-private parts of the communication backends (src/backend.cpp), for src/ only: not
// installed, never included by a public header.

#include "spmd/comm.hpp"

namespace spmd::impl {

/// Creates comm's NCCL communicator when NCCL can run on it, and connects each rank to its ring
/// neighbours (rank +- 1) with a one-byte exchange each way: NCCL connects a pair at its first
/// send (0.6 s on two H200s), so spmd::Runtime does it for the world before the program runs.
/// Nothing without NCCL, at one rank, or when two ranks share a GPU. Collective.
void nccl_connect_ring(const Comm& comm);

}  // namespace spmd::impl
