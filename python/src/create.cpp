// Parent-level operations of the binding: creation, conversion between element types, NumPy data
// in and out, halo exchange. Each is instantiated for the 15 parent types here.

#include "create.hpp"

#include <spmd/gather.hpp>
#include <spmd/halo.hpp>

#include <spmd/impl/ndrange.hpp>

#include <algorithm>

namespace spmd::py {

ParentBase::~ParentBase() = default;

const char* dtype_name(DType d) {
  constexpr const char* names[] = {"float64", "float32", "int64", "int32", "bool"};
  return names[static_cast<int>(d)];
}

namespace {
Registry<ParentBase>& parents() {
  static Registry<ParentBase> r;
  return r;
}
}  // namespace

void register_parent(const std::shared_ptr<ParentBase>& p) {
  parents().add(p);
}

void release_parents() {
  parents().release_all([](ParentBase& p) { p.release(); });
}

bool Holder::whole() const {
  if (ndim != prank()) return false;
  return dispatch_parent(dtype(), prank(), [&](auto t, auto pc) {
    constexpr int P = decltype(pc)::value;
    const auto& a = array<decltype(t), P>();
    for (int d = 0; d < P; ++d)
      if (start[d] != 0 || step[d] != 1 || map[d] != d || shape[d] != a.shape()[d]) return false;
    return true;
  });
}

Holder whole_holder(std::shared_ptr<ParentBase> p, const std::vector<index_t>& shape) {
  Holder h;
  h.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < h.ndim; ++d) {
    h.start[d] = 0;
    h.step[d] = 1;
    h.map[d] = d;
    h.shape[d] = shape[static_cast<std::size_t>(d)];
  }
  h.parent = std::move(p);
  return h;
}

template <int P>
Distribution<P> make_distribution(const Comm& comm, const std::vector<index_t>& shape, const DistributionOptions& o) {
  Index<P> s;
  for (int d = 0; d < P; ++d) s[d] = shape[static_cast<std::size_t>(d)];
  return Distribution<P>(comm, s, o);
}

Holder create(DType dtype, const Comm& comm, const std::vector<index_t>& shape, const DistributionOptions& opts,
              Fill fill, double value) {
  const int P = static_cast<int>(shape.size());
  if (P < 1 || P > 3) throw Error::replicated(impl::str("spmdarray: arrays have 1 to 3 axes (shape of ", P, " given)"));
  auto p = dispatch_parent(dtype, P, [&](auto t, auto pc) {
    using T = decltype(t);
    constexpr int N = decltype(pc)::value;
    const std::string label = opts.label.empty() ? std::string("spmdarray") : opts.label;
    Array<T, N> a(make_distribution<N>(comm, shape, opts), Label{label}, fill == Fill::none ? Init::none : Init::zero);
    if (fill == Fill::value && value != 0) a.fill_with_halo(static_cast<T>(value));
    auto parent = make_parent(std::move(a));
    parent->halo_stale = fill == Fill::none;
    return parent;
  });
  return whole_holder(std::move(p), shape);
}

// (kernels in named templates: nvcc rejects an extended lambda inside a generic lambda)
template <class T>
void arange_kernel(const Array<T, 1>& a, double start, double step) {
  auto acc = a.accessor();
  const index_t lo = a.owned().lo[0];
  const bool integral = std::is_integral_v<T>;
  const auto is = static_cast<index_t>(start), id = static_cast<index_t>(step);
  const typename Array<T, 1>::execution_space exec;
  Kokkos::parallel_for(
      "spmd::py::arange", Kokkos::RangePolicy<typename Array<T, 1>::execution_space>(exec, 0, a.owned().extent(0)),
      KOKKOS_LAMBDA(const index_t i) {
        const index_t g = lo + i;
        // NumPy: start + i * step, exactly in integers
        acc(g) = integral ? static_cast<T>(is + g * id) : static_cast<T>(start + static_cast<double>(g) * step);
      });
  impl::fence(exec, "spmd::py::arange");
}

Holder arange(DType dtype, const Comm& comm, index_t n, double start, double step, const DistributionOptions& opts) {
  Holder h = create(dtype, comm, {n}, opts, Fill::none, 0);
  dispatch_parent(dtype, 1, [&](auto t, auto) {
    arange_kernel(h.array<decltype(t), 1>(), start, step);
    return 0;
  });
  h.parent->halo_stale = true;
  return h;
}

/// to's storage (owned block and halo) = from's, converted element by element (same
/// distribution). Local.
template <class D, class S, int P>
void copy_storage(const char* label, const Array<S, P>& from, Array<D, P>& to) {
  const S* f = from.local_with_halo().data();
  D* d = to.local_with_halo().data();
  const auto n = static_cast<index_t>(from.local_with_halo().span());
  const typename Array<D, P>::execution_space exec;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<typename Array<D, P>::execution_space>(exec, 0, n),
      KOKKOS_LAMBDA(const index_t i) { d[i] = static_cast<D>(f[i]); });
  impl::fence(exec, label);
}

template <class D, class S, int P>
std::shared_ptr<ParentBase> convert_kernel(const Array<S, P>& src, bool stale) {
  Array<D, P> out(src.distribution(), Label{src.label()}, Init::none);
  copy_storage("spmd::py::astype", src, out);
  auto p = make_parent(std::move(out));
  p->halo_stale = stale;
  return p;
}

std::shared_ptr<ParentBase> convert_parent(const ParentBase& like, DType dtype) {
  return dispatch_parent(like.dtype, like.rank, [&](auto s, auto pc) {
    using S = decltype(s);
    constexpr int P = decltype(pc)::value;
    const auto& src = static_cast<const Parent<S, P>&>(like).a;
    return dispatch_parent(dtype, 1, [&](auto d, auto) { return convert_kernel<decltype(d)>(src, like.halo_stale); });
  });
}

bool copy_parent_into(const ParentBase& src, const std::shared_ptr<ParentBase>& dst, const long dst_holders) {
  if (!dst || dst.use_count() != dst_holders || dst->dtype != src.dtype || dst->rank != src.rank) return false;
  return dispatch_parent(src.dtype, src.rank, [&](auto t, auto pc) {
    using T = decltype(t);
    constexpr int P = decltype(pc)::value;
    const auto& from = static_cast<const Parent<T, P>&>(src).a;
    auto& to = static_cast<Parent<T, P>&>(*dst).a;
    if (from.distribution() != to.distribution()) return false;  // (a released parent has none)
    copy_storage("spmd::py::snapshot", from, to);
    dst->halo_stale = src.halo_stale;
    return true;
  });
}

void exchange_parent_halo(ParentBase& p) {
  dispatch_parent(p.dtype, p.rank, [&](auto t, auto pc) {
    spmd::exchange_halo(static_cast<Parent<decltype(t), decltype(pc)::value>&>(p).a);
    return 0;
  });
  p.halo_stale = false;
}

void gather_whole(const Holder& h, void* out) {
  dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, bool>) {
      throw Error::replicated("spmdarray: internal error: gather a bool array as int32");
    } else {
      const std::vector<T> v = spmd::allgather(h.array<T, decltype(pc)::value>());
      std::copy(v.begin(), v.end(), static_cast<T*>(out));
    }
    return 0;
  });
}

void set_owned_from(const Holder& h, const void* global) {
  dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) {
    using T = decltype(t);
    constexpr int P = decltype(pc)::value;
    const auto& a = h.array<T, P>();
    const T* g = static_cast<const T*>(global);
    auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), a.local_with_halo());
    const Box<P> box = a.owned();
    index_t gs[3] = {1, 1, 1};  // row-major strides of the global shape
    for (int d = P - 2; d >= 0; --d) gs[d] = gs[d + 1] * a.shape()[d + 1];
    index_t ext[3] = {1, 1, 1}, lo[3] = {0, 0, 0};
    int hl[3] = {0, 0, 0};
    for (int d = 0; d < P; ++d) {
      ext[d] = box.extent(d);
      lo[d] = box.lo[d];
      hl[d] = a.halo()[d];
    }
    Kokkos::deep_copy(host, a.local_with_halo());  // keep the halo's values
    for (index_t i = 0; i < ext[0]; ++i)
      for (index_t j = 0; j < ext[1]; ++j)
        for (index_t k = 0; k < ext[2]; ++k) {
          const index_t at = (lo[0] + i) * gs[0] + (P > 1 ? (lo[1] + j) * gs[1] : 0) + (P > 2 ? (lo[2] + k) : 0);
          if constexpr (P == 1)
            host(i + hl[0]) = g[at];
          else if constexpr (P == 2)
            host(i + hl[0], j + hl[1]) = g[at];
          else
            host(i + hl[0], j + hl[1], k + hl[2]) = g[at];
        }
    Kokkos::deep_copy(a.local_with_halo(), host);
    return 0;
  });
  h.parent->halo_stale = true;
}

ParentInfo parent_info(const ParentBase& p) {
  return dispatch_parent(p.dtype, p.rank, [&](auto t, auto pc) {
    constexpr int P = decltype(pc)::value;
    const auto& a = static_cast<const Parent<decltype(t), P>&>(p).a;
    ParentInfo i;
    for (int d = 0; d < P; ++d) {
      i.shape.push_back(a.shape()[d]);
      i.halo.push_back(a.halo()[d]);
      i.periodic.push_back(a.distribution().periodic()[d]);
      i.grid.push_back(a.distribution().dims()[d]);
      i.owned_lo.push_back(a.owned().lo[d]);
      i.owned_hi.push_back(a.owned().hi[d]);
    }
    i.label = a.label();
    i.comm = a.comm();
    return i;
  });
}

}  // namespace spmd::py
