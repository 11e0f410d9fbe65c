#include "spmd/comm.hpp"

#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace spmd {

MPI_Op mpi_op(Op op) {
  switch (op) {
    case Op::sum:
      return MPI_SUM;
    case Op::prod:
      return MPI_PROD;
    case Op::min:
      return MPI_MIN;
    case Op::max:
      return MPI_MAX;
    case Op::land:
      return MPI_LAND;
    case Op::lor:
      return MPI_LOR;
  }
  throw Error("spmd::mpi_op: unknown spmd::Op");
}

Request::Request(Request&& o) noexcept
    : request_(o.request_),
      where_(o.where_),
      data_(std::move(o.data_)),
      bytes_(o.bytes_),
      out_(o.out_),
      rank_(o.rank_) {
  o.request_ = MPI_REQUEST_NULL;
}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    abandon();
    request_ = o.request_;
    where_ = o.where_;
    data_ = std::move(o.data_);
    bytes_ = o.bytes_;
    out_ = o.out_;
    rank_ = o.rank_;
    o.request_ = MPI_REQUEST_NULL;
  }
  return *this;
}

Request::~Request() {
  abandon();
}

// No MPI_Wait here: a rank that never started the collective (it threw before) would leave this
// one waiting. MPI forbids MPI_Request_free and MPI_Cancel on a nonblocking collective, so the
// request stays active, parked with the copy of the data it works on.
void Request::abandon() noexcept {
  if (request_ == MPI_REQUEST_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    impl::report(rank_, impl::str(where_,
                                  ": request destroyed before completion: the collective is abandoned, not waited for "
                                  "(call wait() first); its result is discarded"));
    impl::park({request_}, std::move(data_));
  }
  request_ = MPI_REQUEST_NULL;
  data_.reset();
}

void Request::deliver() noexcept {
  if (out_ && data_ && bytes_ > 0) std::memcpy(out_, data_.get(), bytes_);
  data_.reset();
  out_ = nullptr;
}

void Request::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  const impl::Region region("spmd::comm::wait");
  SPMD_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE), where_);
  deliver();
}

bool Request::test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  SPMD_MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), where_);
  if (done) deliver();
  return done != 0;
}

namespace impl {
namespace {
struct Parked {
  std::vector<MPI_Request> requests;
  std::shared_ptr<void> keep;
  bool until_exit;
};
// Never destroyed: entries still in flight at exit must not be released (and Kokkos buffers must
// not be freed after Kokkos::finalize).
std::vector<Parked>& parked() {
  static auto* list = new std::vector<Parked>();
  return *list;
}
}  // namespace

void reap_parked() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  auto& list = parked();
  for (std::size_t k = 0; k < list.size();) {
    Parked& p = list[k];
    int done = 0;
    if (!p.until_exit &&
        MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &done, MPI_STATUSES_IGNORE) ==
            MPI_SUCCESS &&
        done) {
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      ++k;
    }
  }
}

void park(std::vector<MPI_Request> requests, std::shared_ptr<void> keep, bool until_exit) noexcept {
  try {
    parked().push_back(Parked{std::move(requests), std::move(keep), until_exit});
  } catch (...) {  // out of memory: leak the buffers rather than free them under MPI
    auto* leaked = new (std::nothrow) std::shared_ptr<void>(std::move(keep));
    static_cast<void>(leaked);
  }
  reap_parked();
}
}  // namespace impl

Comm::State::~State() {
  backend.reset();
  if (comm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm);  // a destructor cannot throw; nothing to report to
}

Comm::Comm(MPI_Comm comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw Error("spmd::Comm: MPI is not initialized (create a spmd::Runtime first)");
  MPI_Comm dup = MPI_COMM_NULL;
  SPMD_MPI_CHECK(MPI_Comm_dup(comm, &dup), "spmd::Comm::Comm");
  *this = Comm(dup, Adopt{});
}

Comm::Comm(MPI_Comm owned, Adopt) : state_(std::make_shared<State>()) {
  state_->comm = owned;
  SPMD_MPI_CHECK(MPI_Comm_set_errhandler(owned, MPI_ERRORS_RETURN), "spmd::Comm::Comm");
  SPMD_MPI_CHECK(MPI_Comm_rank(owned, &state_->rank), "spmd::Comm::Comm");
  SPMD_MPI_CHECK(MPI_Comm_size(owned, &state_->size), "spmd::Comm::Comm");
  int* ub = nullptr;
  int flag = 0;
  SPMD_MPI_CHECK(MPI_Comm_get_attr(owned, MPI_TAG_UB, &ub, &flag), "spmd::Comm::Comm");
  if (flag && ub) state_->tag_ub = *ub;
}

void Comm::barrier() const {
  const impl::Region region("spmd::comm::barrier");
  impl::profiling::count_collective(0);
  SPMD_MPI_CHECK(MPI_Barrier(raw()), "spmd::Comm::barrier");
}

void Comm::check(bool ok, const std::string& message) const {
  const impl::Region region("spmd::comm::check");
  const int first_bad = allreduce(ok ? size() : rank(), Op::min);
  if (first_bad == size()) return;
  std::string text = rank() == first_bad ? message : std::string();
  int len = bcast(static_cast<int>(text.size()), first_bad);
  text.resize(static_cast<std::size_t>(len));
  bcast(text.data(), len, first_bad);
  if (size() > 1) text += impl::str(" [detected on rank ", first_bad, " of ", size(), "]");
  throw Error(text, Error::Collective{});
}

Comm Comm::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  SPMD_MPI_CHECK(MPI_Comm_split(raw(), color, key, &out), "spmd::Comm::split");
  if (out == MPI_COMM_NULL)
    throw Error("spmd::Comm::split: this rank passed MPI_UNDEFINED; every rank must get a communicator");
  return Comm(out, Adopt{});
}

Comm Comm::node_local() const {
  MPI_Comm out = MPI_COMM_NULL;
  SPMD_MPI_CHECK(MPI_Comm_split_type(raw(), MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &out),
                 "spmd::Comm::node_local");
  return Comm(out, Adopt{});
}

int Comm::reserve_tags(int count) const {
  if (count <= 0 || count > state_->tag_ub)
    throw Error(
        impl::str("spmd::Comm::reserve_tags: cannot reserve ", count, " tags (MPI_TAG_UB is ", state_->tag_ub, ")"));
  if (state_->next_tag > state_->tag_ub - count) state_->next_tag = 0;  // wrap: old plans are long done
  const int base = state_->next_tag;
  state_->next_tag += count;
  return base;
}

namespace impl {
std::shared_ptr<void>& backend_state(const Comm& comm) {
  return comm.state_->backend;
}
}  // namespace impl

}  // namespace spmd
