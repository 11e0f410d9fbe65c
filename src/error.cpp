#include <mpi.h>

#include "spmd/error.hpp"

#include <cstdio>

namespace spmd::impl {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return str("MPI error code ", code);
  return std::string(text, static_cast<std::size_t>(len));
}

void report(int rank, const std::string& what) noexcept {
  if (rank >= 0)
    std::fprintf(stderr, "spmd: rank %d: %s\n", rank, what.c_str());
  else  // a rank not known where the report is made
    std::fprintf(stderr, "spmd: %s\n", what.c_str());
  std::fflush(stderr);
}

void check_mpi(int code, const char* call, const char* where) {
  if (code == MPI_SUCCESS) return;
  throw Error(str(where, ": ", call, " failed: ", mpi_error_string(code)));
}

}  // namespace spmd::impl
