#pragma once
/// \file error.hpp
/// spmd::Error and the checks that raise it.
///
/// Every error the library raises is an spmd::Error whose message starts with the qualified name
/// of the function that raised it. An error is *local* (`collective() == false`: this rank alone
/// may throw it) unless it is made one of two ways, both of which set `collective() == true` (every
/// rank of the communicator throws the same text, and Runtime's terminate handler prints it once
/// instead of once per rank):
///  - agreed: Comm::check and impl::agree communicate (one allreduce) and throw on every rank;
///  - replicated: Error::replicated(what), for a condition computed only from data every rank
///    holds alike (global shapes, Distribution metadata, arguments every rank passes alike, the
///    result of a collective), so every rank reaches the same verdict without communicating.
/// `Error(what)` is always local: a one-rank condition (local sizes or data, a file, an
/// allocation, an MPI/CUDA/HDF5 return code) can never claim agreement by accident.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace spmd {

/// The one exception type of the library. Local.
class Error : public std::runtime_error {
 public:
  /// A local error with message `what`: raised on this rank, whatever the others do. Local.
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  /// An error every rank raises alike because its condition is computed only from replicated
  /// data (see the file comment); the caller vouches for that. Never for a condition on this
  /// rank's block, a file, an allocation or a return code: agree on those (Comm::check,
  /// impl::agree). Local (no communication).
  static Error replicated(const std::string& what) { return Error(what, Collective{}); }
  /// True when every rank of the communicator involved throws this same error.
  bool collective() const noexcept { return collective_; }

 private:
  friend class Comm;  // Comm::check throws the agreed error
  struct Collective {};
  Error(const std::string& what, Collective) : std::runtime_error(what), collective_(true) {}
  bool collective_ = false;
};

namespace impl {

/// Concatenate anything streamable into a string (used to build error messages). Local.
template <class... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

/// A byte count for people: "512 B", "1.50 KiB", "3.20 GiB". Local.
inline std::string bytes_str(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(u == 0 ? 0 : 2);
  os << bytes << ' ' << units[u];
  return os.str();
}

/// One diagnostic line on stderr, "spmd: rank <rank>: <what>" ("spmd: <what>" for rank < 0), for what the library finds
/// but cannot throw (a destructor that meets work left undone). Never communicates. Local.
void report(int rank, const std::string& what) noexcept;

/// Text of an MPI error code. Local.
std::string mpi_error_string(int code);

/// Throw spmd::Error("<where>: <call> failed: <MPI's text>") when code != MPI_SUCCESS. Local.
void check_mpi(int code, const char* call, const char* where);

/// Prints a container with begin()/end() as {a, b, c}.
template <class C>
std::string shape_str(const C& c) {
  std::ostringstream os;
  os << '{';
  bool first = true;
  for (const auto& v : c) {
    if (!first) os << ", ";
    os << v;
    first = false;
  }
  os << '}';
  return os.str();
}

}  // namespace impl
}  // namespace spmd

/// Check an MPI call's return code; `where` names the calling library function.
#define SPMD_MPI_CHECK(call, where) ::spmd::impl::check_mpi((call), #call, (where))
