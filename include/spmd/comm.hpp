#pragma once
/// \file comm.hpp
/// spmd::Comm: the library's own communicator.
///
/// A Comm owns a duplicate of the communicator it was made from (MPI_Comm_dup), so messages the
/// library sends can never match the user's. Copies share that duplicate; the last copy frees it
/// (unless MPI is already finalized). The duplicate uses MPI_ERRORS_RETURN, and every MPI call
/// made through Comm is checked: a failure becomes spmd::Error.

#include <Kokkos_Complex.hpp>
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/error.hpp"
#include "spmd/impl/profiling.hpp"
#include "spmd/types.hpp"

namespace spmd {

/// The MPI datatype of an arithmetic type T (and std::complex or Kokkos::complex of float or
/// double: one layout, {real, imag}). Local.
template <class T>
MPI_Datatype mpi_type() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>)
    return MPI_CXX_BOOL;
  else if constexpr (std::is_same_v<U, char>)
    return MPI_CHAR;
  else if constexpr (std::is_same_v<U, signed char>)
    return MPI_SIGNED_CHAR;
  else if constexpr (std::is_same_v<U, unsigned char>)
    return MPI_UNSIGNED_CHAR;
  else if constexpr (std::is_same_v<U, short>)
    return MPI_SHORT;
  else if constexpr (std::is_same_v<U, unsigned short>)
    return MPI_UNSIGNED_SHORT;
  else if constexpr (std::is_same_v<U, int>)
    return MPI_INT;
  else if constexpr (std::is_same_v<U, unsigned>)
    return MPI_UNSIGNED;
  else if constexpr (std::is_same_v<U, long>)
    return MPI_LONG;
  else if constexpr (std::is_same_v<U, unsigned long>)
    return MPI_UNSIGNED_LONG;
  else if constexpr (std::is_same_v<U, long long>)
    return MPI_LONG_LONG;
  else if constexpr (std::is_same_v<U, unsigned long long>)
    return MPI_UNSIGNED_LONG_LONG;
  else if constexpr (std::is_same_v<U, float>)
    return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>)
    return MPI_DOUBLE;
  else if constexpr (std::is_same_v<U, long double>)
    return MPI_LONG_DOUBLE;
  else if constexpr (std::is_same_v<U, std::complex<float>> || std::is_same_v<U, Kokkos::complex<float>>)
    return MPI_CXX_FLOAT_COMPLEX;
  else if constexpr (std::is_same_v<U, std::complex<double>> || std::is_same_v<U, Kokkos::complex<double>>)
    return MPI_CXX_DOUBLE_COMPLEX;
  else
    static_assert(sizeof(U) == 0, "spmd::mpi_type: T has no MPI datatype");
}

/// The MPI_Op of an spmd::Op. Local.
MPI_Op mpi_op(Op op);

namespace impl {
/// Keep `keep` (the buffers of operations still in flight) alive without communicating until
/// every request of `requests` is complete; with `until_exit` (work queued on a GPU stream that
/// cannot be tested: NCCL, ipc) until the process ends. Complete entries are released (tested
/// with MPI_Testall, which never waits) whenever something is parked and at reap_parked(); what
/// is still in flight at the end is never released, since MPI or a peer may still write into it.
/// For destructors that meet an exchange left open. Local.
void park(std::vector<MPI_Request> requests, std::shared_ptr<void> keep, bool until_exit = false) noexcept;
/// Release the parked entries whose requests are complete (no waiting). Local.
void reap_parked() noexcept;
}  // namespace impl

/// A started nonblocking collective (from Comm::iallreduce). Move-only. wait() completes it and
/// checks MPI's return code. The collective runs on the request's own copy of the data, which
/// wait() (or test() when it returns true) copies to the caller's buffer. A request destroyed
/// (or assigned over) while active does not communicate: it reports that on stderr and parks its
/// copy until MPI completes the collective (impl::park); the caller's buffer is never written.
class Request {
 public:
  Request() = default;
  /// Adopts `request`, which works on memory the caller keeps valid until it completes (a
  /// request abandoned while active is parked without it); `where` names the library function
  /// that started it (for errors and reports). Local.
  Request(MPI_Request request, const char* where) : request_(request), where_(where) {}
  /// Takes over `o`'s request (o becomes empty). Local.
  Request(Request&& o) noexcept;
  /// Abandons the request this one held, if still active (see the class comment), then takes
  /// over `o`'s. Local.
  Request& operator=(Request&& o) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();
  /// Block until the collective is complete (no-op when none is active). Local.
  void wait();
  /// True when the collective is complete (then the request is no longer active). Local.
  bool test();
  /// True between the start of the collective and its completion. Local.
  bool active() const { return request_ != MPI_REQUEST_NULL; }

 private:
  friend class Comm;
  Request(MPI_Request request, const char* where, std::shared_ptr<void> data, std::size_t bytes, void* out, int rank)
      : request_(request), where_(where), data_(std::move(data)), bytes_(bytes), out_(out), rank_(rank) {}
  void abandon() noexcept;
  void deliver() noexcept;
  MPI_Request request_ = MPI_REQUEST_NULL;
  const char* where_ = "spmd::Request";
  std::shared_ptr<void> data_;  // the collective's own copy of the data (iallreduce)
  std::size_t bytes_ = 0;
  void* out_ = nullptr;  // where deliver() copies the result
  int rank_ = -1;
};

class Comm;
namespace impl {
/// State of a communication backend (the NCCL communicator) that lives and dies with a Comm;
/// released before the MPI communicator is freed. For src/backend.cpp. Local.
std::shared_ptr<void>& backend_state(const Comm& comm);
}  // namespace impl

/// The library's communicator: an owned duplicate (see the file comment). Copies share it.
class Comm {
 public:
  /// Duplicates `comm` (Collective over `comm`). The duplicate is freed with the last copy.
  explicit Comm(MPI_Comm comm);

  /// The owned communicator, for calls the library does not wrap. Local.
  MPI_Comm raw() const { return state_->comm; }
  /// Local.
  int rank() const { return state_->rank; }
  /// Local.
  int size() const { return state_->size; }
  /// True when both share one duplicate (copies of one Comm). Local.
  bool operator==(const Comm& o) const { return state_ == o.state_; }
  /// Not the same duplicate. Local.
  bool operator!=(const Comm& o) const { return !(*this == o); }

  /// Collective.
  void barrier() const;

  /// Combine `value` over all ranks; the result on every rank. Collective.
  template <class T>
  T allreduce(T value, Op op) const {
    const impl::Region region("spmd::comm::allreduce");
    impl::profiling::count_collective(sizeof(T));
    T out{};
    SPMD_MPI_CHECK(MPI_Allreduce(&value, &out, 1, mpi_type<T>(), mpi_op(op), raw()), "spmd::Comm::allreduce");
    return out;
  }
  /// Element-wise combine of data[0..n) over all ranks, in place. Collective.
  template <class T>
  void allreduce(T* data, int n, Op op) const {
    allreduce(data, n, mpi_op(op));
  }
  /// The same with an MPI operation of the caller's (a user-defined one: MPI_Op_create). Collective.
  template <class T>
  void allreduce(T* data, int n, MPI_Op op) const {
    const impl::Region region("spmd::comm::allreduce");
    impl::profiling::count_collective(sizeof(T) * static_cast<std::size_t>(n));
    SPMD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, n, mpi_type<T>(), op, raw()), "spmd::Comm::allreduce");
  }
  /// Start an element-wise combine of data[0..n) over all ranks, in place (MPI_Iallreduce). The
  /// result is in data once the returned request completes; data must stay valid and untouched
  /// until then. Collective: every rank starts it, in the same order relative to the
  /// communicator's other collectives.
  template <class T>
  Request iallreduce(T* data, int n, Op op) const {
    const impl::Region region("spmd::comm::iallreduce");
    const std::size_t bytes = sizeof(T) * static_cast<std::size_t>(n);
    impl::profiling::count_collective(bytes);
    std::shared_ptr<T[]> copy(new T[static_cast<std::size_t>(n)]);
    std::copy(data, data + n, copy.get());
    MPI_Request r = MPI_REQUEST_NULL;
    SPMD_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, copy.get(), n, mpi_type<T>(), mpi_op(op), raw(), &r),
                   "spmd::Comm::iallreduce");
    return Request(r, "spmd::Comm::iallreduce", std::move(copy), bytes, data, rank());
  }
  /// `value` from `root` on every rank. Collective.
  template <class T>
  T bcast(T value, int root) const {
    const impl::Region region("spmd::comm::bcast");
    impl::profiling::count_collective(rank() == root ? sizeof(T) : 0);
    SPMD_MPI_CHECK(MPI_Bcast(&value, 1, mpi_type<T>(), root, raw()), "spmd::Comm::bcast");
    return value;
  }
  /// data[0..n) from `root` on every rank, in place. Collective.
  template <class T>
  void bcast(T* data, int n, int root) const {
    const impl::Region region("spmd::comm::bcast");
    impl::profiling::count_collective(rank() == root ? sizeof(T) * static_cast<std::size_t>(n) : 0);
    SPMD_MPI_CHECK(MPI_Bcast(data, n, mpi_type<T>(), root, raw()), "spmd::Comm::bcast");
  }
  /// Every rank's `value`, in rank order, on every rank. Collective.
  template <class T>
  std::vector<T> allgather(T value) const {
    const impl::Region region("spmd::comm::allgather");
    impl::profiling::count_collective(sizeof(T));
    std::vector<T> out(static_cast<std::size_t>(size()));
    SPMD_MPI_CHECK(MPI_Allgather(&value, 1, mpi_type<T>(), out.data(), 1, mpi_type<T>(), raw()),
                   "spmd::Comm::allgather");
    return out;
  }
  /// Every rank's data[0..n) (n equal on all ranks), rank after rank. Collective.
  template <class T>
  std::vector<T> allgather(const T* data, int n) const {
    const impl::Region region("spmd::comm::allgather");
    impl::profiling::count_collective(sizeof(T) * static_cast<std::size_t>(n));
    std::vector<T> out(static_cast<std::size_t>(size()) * static_cast<std::size_t>(n));
    SPMD_MPI_CHECK(MPI_Allgather(data, n, mpi_type<T>(), out.data(), n, mpi_type<T>(), raw()), "spmd::Comm::allgather");
    return out;
  }

  /// Agree on an error: every rank passes whether its own check passed. When any rank failed,
  /// every rank throws one spmd::Error carrying the message of the lowest failing rank (and that
  /// rank's number). Costs one MPI_Allreduce when all passed. Collective.
  void check(bool ok, const std::string& message) const;

  /// Sub-communicator of the ranks with the same colour (>= 0), ordered by key (MPI_Comm_split).
  /// Collective.
  Comm split(int color, int key) const;
  /// The ranks that share this rank's node (MPI_Comm_split_type, shared memory). Collective.
  Comm node_local() const;

  /// Reserve `count` message tags for a communication plan. Plans must be created in the same
  /// order on every rank (they are built collectively), so the tags agree. Local.
  int reserve_tags(int count) const;

 private:
  friend std::shared_ptr<void>& impl::backend_state(const Comm& comm);
  struct State {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    int tag_ub = 32767;
    mutable int next_tag = 0;
    mutable std::shared_ptr<void> backend;
    ~State();
  };
  struct Adopt {};
  Comm(MPI_Comm owned, Adopt);
  std::shared_ptr<State> state_;
};

namespace impl {
/// Runs f(), local checks that throw spmd::Error, and agrees on the outcome with Comm::check:
/// when f threw on any rank, every rank throws one spmd::Error with the lowest failing rank's
/// message. For arguments that only some ranks may see as wrong (one allreduce). Collective.
template <class F>
void agree(const Comm& comm, const F& f) {
  std::string err;
  try {
    f();
  } catch (const Error& e) {
    err = e.what();
    if (err.empty()) err = "spmd: error";
  }
  comm.check(err.empty(), err);
}
}  // namespace impl

}  // namespace spmd
