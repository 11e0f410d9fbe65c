#pragma once
// Sorting, implementation: a parallel sample sort of (key, global index) pairs, on host memory.
//
//   1. each rank copies its block to the host, pairs every key with its global index and sorts
//      the pairs (std::sort; the index breaks ties, so the order is total and the sort stable);
//   2. every rank draws p regularly spaced samples of its sorted pairs; the samples are gathered
//      on every rank (one MPI_Allgather of p^2 pairs) and sorted; every (m/p)-th is a splitter
//      (regular sampling, PSRS: no bucket exceeds about 2n/p pairs when every block has at least
//      p of them);
//   3. each rank cuts its sorted pairs at the splitters (binary search), the counts go all to all
//      (MPI_Alltoall), and the pairs move in one exchange on the communication engine
//      (impl::MessagePlan: one message per pair of ranks that have something for each other);
//   4. each rank merges the p sorted runs it received (std::inplace_merge, pairwise): rank r now
//      holds a contiguous piece of the globally sorted sequence;
//   5. the pieces are moved onto balanced blocks (the input's block sizes) in a second exchange
//      on the engine (messages from the pieces' offsets, known from one MPI_Allgather of the
//      counts), carrying only what the caller keeps: the keys (sort, unique) or the indices
//      (argsort).
//
// Host memory on every build: Kokkos 3.4 has no comparison sort (Kokkos::sort is a bin sort,
// not stable, without a comparator; Kokkos 4.x's sort with a comparator is not in 3.4), so on a
// GPU the keys are copied to a host mirror and sorted there, and the result is copied back. NaNs
// go last, as in NumPy (they compare greater than every number, equal to each other); complex
// keys sort as NumPy sorts them (real part, then imaginary part; see key_order).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/messages.hpp"

namespace spmd::impl {

/// A key and its global index in the input.
template <class T>
struct SortItem {
  T key;
  index_t index;
};

/// True for a NaN key (never for integers; a complex key with a NaN part). Local.
template <class T>
bool nan_key(const T v) {
  if constexpr (is_complex_v<T>)
    return std::isnan(v.real()) || std::isnan(v.imag());
  else if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

/// -1, 0 or 1 as a comes before, with or after b in NumPy's order of keys: numbers by value,
/// NaNs last and equal to each other; complex keys by real part, then imaginary part, and those
/// with NaN parts last in NumPy's classes R + Rj, R + nanj, nan + Rj, nan + nanj (in each class
/// by the parts that are numbers). Local.
template <class T>
int key_order(const T a, const T b) {
  const auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if constexpr (is_complex_v<T>) {
    const auto cls = [](const T v) { return (std::isnan(v.real()) ? 2 : 0) + (std::isnan(v.imag()) ? 1 : 0); };
    const int ca = cls(a), cb = cls(b);
    if (ca != cb) return ca < cb ? -1 : 1;
    const int re = ca & 2 ? 0 : cmp(a.real(), b.real());
    return re != 0 || ca & 1 ? re : cmp(a.imag(), b.imag());
  } else {
    const bool an = nan_key(a), bn = nan_key(b);
    if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
    return cmp(a, b);
  }
}

/// NumPy's order of keys (key_order), then the global index: a strict total order of the pairs,
/// so any sort of pairs by it is a stable sort of the keys.
template <class T>
struct SortLess {
  bool operator()(const SortItem<T>& a, const SortItem<T>& b) const {
    const int c = key_order(a.key, b.key);
    return c != 0 ? c < 0 : a.index < b.index;
  }
};

/// The same key for unique: equal, or both NaN (np.unique's equal_nan=True; for complex keys
/// every key with a NaN part is one, as NumPy has it). Local.
template <class T>
bool same_key(const T a, const T b) {
  return a == b || (nan_key(a) && nan_key(b));
}

/// This rank's piece of the globally sorted sequence after step 4 (contiguous, in rank order).
template <class T>
struct SortedPiece {
  std::vector<SortItem<T>> items;
};

/// Merge the sorted runs of `v` that start at `starts` (ascending, the last one v.size()) into
/// one sorted run, pairwise (log2(runs) passes). Local.
template <class T>
void merge_runs(std::vector<SortItem<T>>& v, std::vector<std::size_t> starts) {
  const SortLess<T> less;
  while (starts.size() > 2) {
    std::vector<std::size_t> next;
    std::size_t r = 0;
    for (; r + 2 < starts.size(); r += 2) {
      std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(starts[r]),
                         v.begin() + static_cast<std::ptrdiff_t>(starts[r + 1]),
                         v.begin() + static_cast<std::ptrdiff_t>(starts[r + 2]), less);
      next.push_back(starts[r]);
    }
    for (; r < starts.size(); ++r) next.push_back(starts[r]);  // an odd run left, and the end
    starts.swap(next);
  }
}

/// The host execution space of the exchanges (their buffers are host memory).
using SortHostExec = Kokkos::DefaultHostExecutionSpace;

/// Steps 1-4 (see the file comment) for the block of `x`, on `exec`. Collective over x's
/// communicator; an error on some rank (out of host memory) is agreed and thrown on every rank.
template <class Exec, class T, class Mem>
SortedPiece<T> sample_sort(const Exec& exec, const char* fn, const Array<T, 1, Mem>& x) {
  using Item = SortItem<T>;
  const Comm& comm = x.comm();
  const int p = comm.size();
  const index_t lo = x.owned().lo[0];
  const index_t c = x.owned().size();
  SortedPiece<T> piece;
  std::vector<Item>& mine = piece.items;
  // 1. local sort (host)
  agree(comm, [&] {
    try {
      mine.resize(static_cast<std::size_t>(c));
      Kokkos::View<T*, Kokkos::HostSpace> keys(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sort::host_keys"),
                                               static_cast<std::size_t>(c));
      if (c > 0) {
        const Kokkos::View<const T*, Mem, Kokkos::MemoryUnmanaged> block(x.local_with_halo().data() + x.halo()[0],
                                                                         static_cast<std::size_t>(c));
        Kokkos::deep_copy(exec, keys, block);
        fence(exec, "spmd::sort: keys on the host");
      }
      for (index_t i = 0; i < c; ++i) mine[static_cast<std::size_t>(i)] = Item{keys(i), lo + i};
      std::sort(mine.begin(), mine.end(), SortLess<T>{});
    } catch (const std::bad_alloc&) {
      throw Error(str(fn, ": out of host memory for ", c, " keys on rank ", comm.rank()));
    }
  });
  if (p == 1) return piece;

  // 2. splitters from a regular sample: p pairs per rank that has any
  struct Sample {
    Item item;
    index_t valid;
  };
  std::vector<Sample> samples(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const index_t at = c * i / p;
    samples[static_cast<std::size_t>(i)] = c > 0 ? Sample{mine[static_cast<std::size_t>(at)], 1} : Sample{Item{}, 0};
  }
  std::vector<Sample> all(static_cast<std::size_t>(p) * static_cast<std::size_t>(p));
  const int bytes = static_cast<int>(sizeof(Sample)) * p;
  fence(exec, "spmd::sort before MPI_Allgather");
  SPMD_MPI_CHECK(MPI_Allgather(samples.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, comm.raw()), fn);
  std::vector<Item> pool;
  for (const auto& s : all)
    if (s.valid) pool.push_back(s.item);
  std::sort(pool.begin(), pool.end(), SortLess<T>{});
  const std::size_t m = pool.size();

  // 3. buckets: bucket b holds the pairs e with splitter[b-1] <= e < splitter[b]
  std::vector<index_t> send_count(static_cast<std::size_t>(p), 0), recv_count(static_cast<std::size_t>(p), 0);
  std::vector<index_t> bound(static_cast<std::size_t>(p) + 1, 0);
  bound[static_cast<std::size_t>(p)] = c;
  for (int b = 1; b < p; ++b) {
    if (m == 0) break;  // nothing anywhere
    const Item& split = pool[m * static_cast<std::size_t>(b) / static_cast<std::size_t>(p)];
    bound[static_cast<std::size_t>(b)] =
        std::lower_bound(mine.begin(), mine.end(), split, SortLess<T>{}) - mine.begin();
  }
  if (m == 0)
    for (int b = 1; b < p; ++b) bound[static_cast<std::size_t>(b)] = 0;
  for (int b = 0; b < p; ++b)
    send_count[static_cast<std::size_t>(b)] =
        bound[static_cast<std::size_t>(b) + 1] - bound[static_cast<std::size_t>(b)];
  SPMD_MPI_CHECK(
      MPI_Alltoall(send_count.data(), 1, mpi_type<index_t>(), recv_count.data(), 1, mpi_type<index_t>(), comm.raw()),
      fn);
  std::vector<Message> sends, recvs;
  std::vector<std::size_t> starts;
  index_t recv_total = 0;
  for (int r = 0; r < p; ++r) {
    const auto s = static_cast<std::size_t>(r);
    if (send_count[s] > 0) sends.push_back(Message{r, bound[s], send_count[s]});
    if (recv_count[s] > 0) {
      recvs.push_back(Message{r, recv_total, recv_count[s]});
      starts.push_back(static_cast<std::size_t>(recv_total));
    }
    recv_total += recv_count[s];
  }
  starts.push_back(static_cast<std::size_t>(recv_total));
  MessagePlan<Item, Kokkos::HostSpace> plan(comm, std::move(sends), c, std::move(recvs), recv_total, Backend::mpi, fn,
                                            "spmd::sort::buckets");
  if (c > 0)
    std::memcpy(static_cast<void*>(plan.send_buffer()), mine.data(), sizeof(Item) * static_cast<std::size_t>(c));
  const SortHostExec host;
  plan.start(host);
  plan.wait_receives(host);
  plan.wait_sends();
  // 4. merge the received runs
  agree(comm, [&] {
    try {
      std::vector<Item>().swap(mine);
      mine.resize(static_cast<std::size_t>(recv_total));
      if (recv_total > 0)
        std::memcpy(static_cast<void*>(mine.data()), plan.recv_buffer(),
                    sizeof(Item) * static_cast<std::size_t>(recv_total));
      merge_runs(mine, starts);
    } catch (const std::bad_alloc&) {
      throw Error(str(fn, ": out of host memory for ", recv_total, " keys on rank ", comm.rank()));
    }
  });
  return piece;
}

/// Step 5: the ranks' pieces `data` (count elements here; in rank order they form one sequence)
/// moved onto balanced blocks of the whole sequence, returned as a new 1-D array of `comm`
/// (labelled `label`, in Mem) on `exec`. Collective.
template <class U, class Mem, class Exec>
Array<U, 1, Mem> balance_pieces(const Exec& exec, const char* fn, const char* label, const Comm& comm, const U* data,
                                index_t count) {
  const int p = comm.size();
  const std::vector<index_t> counts = comm.allgather(count);
  std::vector<index_t> off(static_cast<std::size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r)
    off[static_cast<std::size_t>(r) + 1] = off[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)];
  const index_t total = off[static_cast<std::size_t>(p)];
  Array<U, 1, Mem> out(Distribution<1>(comm, Index<1>{total}), Label{label}, Init::none);
  const index_t mylo = out.owned().lo[0], myn = out.owned().size();
  const index_t first = off[static_cast<std::size_t>(comm.rank())];
  std::vector<Message> sends, recvs;
  for (int r = 0; r < p; ++r) {
    const index_t blo = block_start(total, p, r), bhi = blo + block_extent(total, p, r);
    const index_t s0 = std::max(first, blo), s1 = std::min(first + count, bhi);
    if (s1 > s0) sends.push_back(Message{r, s0 - first, s1 - s0});
    const index_t r0 = std::max(off[static_cast<std::size_t>(r)], mylo);
    const index_t r1 = std::min(off[static_cast<std::size_t>(r) + 1], mylo + myn);
    if (r1 > r0) recvs.push_back(Message{r, r0 - mylo, r1 - r0});
  }
  MessagePlan<U, Kokkos::HostSpace> plan(comm, std::move(sends), count, std::move(recvs), myn, Backend::mpi, fn,
                                         "spmd::sort::balance");
  if (count > 0) std::memcpy(static_cast<void*>(plan.send_buffer()), data, sizeof(U) * static_cast<std::size_t>(count));
  const SortHostExec host;
  plan.start(host);
  plan.wait_receives(host);
  plan.wait_sends();
  if (myn > 0) {
    const Kokkos::View<U*, Mem, Kokkos::MemoryUnmanaged> dst(out.local_with_halo().data(),
                                                             static_cast<std::size_t>(myn));
    Kokkos::deep_copy(exec, dst, plan.recv_view());
    fence(exec, "spmd::sort: host buffers released");  // the plan (and its buffer) dies on return
  }
  return out;
}

/// The keys (Keys) or the global indices of a sorted piece, in order. Local.
template <bool Keys, class T>
auto piece_values(const SortedPiece<T>& piece) {
  using U = std::conditional_t<Keys, T, index_t>;
  std::vector<U> v(piece.items.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (Keys)
      v[i] = piece.items[i].key;
    else
      v[i] = piece.items[i].index;
  }
  return v;
}

/// The sorted keys (Keys) or the argsort indices of x, as a new 1-D array of x's length on x's
/// communicator (balanced blocks: the input's), on `exec`. Collective.
template <bool Keys, class Exec, class T, class Mem>
auto sort_array(const Exec& exec, const char* fn, const char* label, const Array<T, 1, Mem>& x) {
  static_assert(
      (std::is_arithmetic_v<T> || is_complex_v<T>)&&!std::is_same_v<T, bool>,
      "spmd::sort / spmd::argsort: keys must be of an arithmetic or complex type other than bool (astype<int> "
      "first)");
  static_assert(Kokkos::SpaceAccessibility<Exec, Mem>::accessible,
                "spmd::sort: the execution space instance must be able to access the array");
  if (x.is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
  const Region region(label);
  const SortedPiece<T> piece = sample_sort(exec, fn, x);
  const auto v = piece_values<Keys>(piece);
  using U = typename decltype(v)::value_type;
  return balance_pieces<U, Mem>(exec, fn, label, x.comm(), v.data(), static_cast<index_t>(v.size()));
}

/// The sorted unique keys of x (NaNs collapse into one), as a new 1-D array on an automatic
/// distribution of their count over x's communicator, on `exec`. Collective.
template <class Exec, class T, class Mem>
Array<T, 1, Mem> unique_array(const Exec& exec, const char* fn, const Array<T, 1, Mem>& x) {
  static_assert((std::is_arithmetic_v<T> || is_complex_v<T>)&&!std::is_same_v<T, bool>,
                "spmd::unique: keys must be of an arithmetic or complex type other than bool (astype<int> first)");
  if (x.is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
  const Region region("spmd::sort::unique");
  const Comm& comm = x.comm();
  const SortedPiece<T> piece = sample_sort(exec, fn, x);
  std::vector<T> u;
  for (const auto& it : piece.items)
    if (u.empty() || !same_key(u.back(), it.key)) u.push_back(it.key);
  // The first key here repeats the last key of the nearest rank before with any.
  const int has = piece.items.empty() ? 0 : 1;
  const T last = has ? piece.items.back().key : T();
  const std::vector<int> hass = comm.allgather(has);
  const std::vector<T> lasts = comm.allgather(last);
  std::size_t skip = 0;
  for (int r = comm.rank() - 1; r >= 0 && !u.empty(); --r) {
    if (!hass[static_cast<std::size_t>(r)]) continue;
    if (same_key(lasts[static_cast<std::size_t>(r)], u.front())) skip = 1;
    break;
  }
  return balance_pieces<T, Mem>(exec, fn, "spmd::unique", comm, u.data() + skip, static_cast<index_t>(u.size() - skip));
}

}  // namespace spmd::impl
