#pragma once
/// \file fft.hpp
/// Distributed FFTs, as numpy.fft: fftn / ifftn / rfftn / irfftn, fft / ifft / rfft / irfft along
/// one axis, fft2 and friends, with NumPy's `s`, `axes` and `norm`; and spmd::fft::Plan for
/// repeated transforms. Local transforms by FFTW3 (host memory) or cuFFT (CUDA memory); between
/// them, transposes on the communication engine (impl/fft_plan.hpp: pencils or slabs, chosen by
/// the process grid). docs/api/fft.md.
///
///   auto k = spmd::fft::rfftn(u);              // real 3-D field -> half spectrum
///   auto u2 = spmd::fft::irfftn(k, {n, n, n});  // and back (s gives the real lengths)
///
/// The one-shot functions keep their plan with the input array's storage (like its halo plans),
/// so repeating a transform on the same array plans once; they return a new array on the input's
/// process grid (Output::restored). A Plan also offers Output::transposed (one transpose fewer)
/// and writes into arrays you keep. Element types: Kokkos::complex of double or float, and
/// double / float.

#include <Kokkos_Core.hpp>

#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/impl/fft_plan.hpp"
#include "spmd/shape.hpp"

namespace spmd::fft {

/// A planned distributed transform from arrays of `In` on one distribution to arrays of `Out`:
/// complex to complex (either Direction), real to complex (forward, as rfftn), or complex to
/// real (backward, as irfftn). Planning allocates the stage buffers and builds every transpose.
template <class In, class Out, int N, class Mem = DefaultMemorySpace>
class Plan {
 public:
  /// The execution space of the transforms.
  using execution_space = typename Mem::execution_space;
  /// Plan transforms of arrays on `in` along `axes` (default: the last len(s) axes, or all),
  /// with NumPy's `s` (lengths: the input is cropped or zero-padded to them; for a complex-to-
  /// real plan, the real output lengths, the last defaulting to 2 * (m - 1)) and `norm`.
  /// Collective over in.comm(); throws the same spmd::Error on every rank for a bad argument.
  /// `effort`: FFTW's planning (Effort::measure times candidate algorithms once, on scratch
  /// blocks: about 2 s for a 256^3 block, then 9x faster than Effort::estimate there).
  Plan(const Distribution<N>& in, Direction dir, std::vector<index_t> s = {}, std::vector<int> axes = {},
       Norm norm = Norm::backward, Output output = Output::restored, Effort effort = Effort::measure)
      : p_(std::make_shared<impl::FftPlan<In, Out, N, Mem>>(in, dir, std::move(s), std::move(axes), norm, output,
                                                            "spmd::fft::Plan", effort)) {}
  /// Re-plan the local transforms with FFTW_MEASURE now (once; a no-op on CUDA). Collective.
  void measure() { p_->measure(); }
  /// The distribution inputs must have. Local.
  const Distribution<N>& input_distribution() const { return p_->input_distribution(); }
  /// The distribution of the output. Local.
  const Distribution<N>& output_distribution() const { return p_->output_distribution(); }
  /// A new (uninitialised) output array. Local.
  Array<Out, N, Mem> make_output(const Label& l = Label{"spmd::fft::out"}) const {
    return Array<Out, N, Mem>(output_distribution(), l, Init::none);
  }
  /// out = the transform of in, on `exec` (asynchronous there, except for the messages of the
  /// transposes). `in` is left unchanged. Collective.
  void execute(const execution_space& exec, const Array<Out, N, Mem>& out, const Array<In, N, Mem>& in) const {
    p_->execute(exec, out, in);
  }
  /// execute() on a default instance. Collective.
  void execute(const Array<Out, N, Mem>& out, const Array<In, N, Mem>& in) const {
    execute(execution_space(), out, in);
  }
  /// Where an execute's time goes (seconds, the slowest rank's): the local transforms (with the
  /// scaling) and the data movements between distributions.
  struct Times {
    double local = 0;      ///< local FFTs (FFTW / cuFFT) and the norm's scaling
    double transpose = 0;  ///< copy in, transposes and restore (the communication engine)
  };
  /// execute() with every phase fenced and timed (slower: for analysis, as bench_fft's split).
  /// Collective.
  Times execute_timed(const Array<Out, N, Mem>& out, const Array<In, N, Mem>& in) const {
    impl::FftTimes t;
    p_->execute(execution_space(), out, in, &t);
    const auto& comm = input_distribution().comm();
    return Times{comm.allreduce(t.local, Op::max), comm.allreduce(t.moves, Op::max)};
  }
  /// A new array holding the transform of in. Collective.
  Array<Out, N, Mem> operator()(const Array<In, N, Mem>& in) const {
    auto out = make_output();
    execute(out, in);
    return out;
  }
  /// Local transforms (one per stage). Local.
  int num_stages() const { return p_->num_stages(); }
  /// Data movements between distributions per execute (copy in, transposes, restore). Local.
  int num_transposes() const { return p_->num_transposes(); }
  /// The stages, e.g. "c2c axes 1..2 on grid {2, 1, 1} | transpose | c2c axes 0..0 on grid
  /// {1, 2, 1} | restore". Local.
  std::string describe() const { return p_->describe(); }

 private:
  std::shared_ptr<impl::FftPlan<In, Out, N, Mem>> p_;
};

namespace detail {
/// The plan cache kept with an input array's storage (impl::Slot::fft): a few plans by key.
struct FftCache {
  struct Entry {
    std::string key;
    std::shared_ptr<void> plan;
  };
  std::vector<Entry> entries;  // most recent last; at most 8
};

template <class In, class Out, int N, class Mem>
std::shared_ptr<impl::FftPlan<In, Out, N, Mem>> cached_plan(const Array<In, N, Mem>& a, Direction dir,
                                                            const std::vector<index_t>& s, const std::vector<int>& axes,
                                                            Norm norm, const char* fn) {
  using P = impl::FftPlan<In, Out, N, Mem>;
  auto& slot = impl::slot(a, impl::Slot::fft);
  if (!slot) slot = std::make_shared<FftCache>();
  auto& cache = *static_cast<FftCache*>(slot.get());
  const std::string key = impl::str(typeid(P).name(), '|', static_cast<int>(dir), '|', impl::shape_str(s), '|',
                                    impl::shape_str(axes), '|', static_cast<int>(norm));
  for (std::size_t i = 0; i < cache.entries.size(); ++i)
    if (cache.entries[i].key == key) {
      auto e = cache.entries[i];
      cache.entries.erase(cache.entries.begin() + static_cast<std::ptrdiff_t>(i));
      cache.entries.push_back(e);
      auto p = std::static_pointer_cast<P>(e.plan);
      p->measure();  // a repeated transform: worth FFTW_MEASURE (once)
      return p;
    }
  auto p = std::make_shared<P>(a.distribution(), dir, s, axes, norm, Output::restored, fn);
  if (cache.entries.size() >= 8) cache.entries.erase(cache.entries.begin());
  cache.entries.push_back({key, p});
  return p;
}

template <class In, class Out, int N, class Mem>
Array<Out, N, Mem> run(const Array<In, N, Mem>& a, Direction dir, const std::vector<index_t>& s,
                       const std::vector<int>& axes, Norm norm, const char* fn) {
  auto p = cached_plan<In, Out>(a, dir, s, axes, norm, fn);
  Array<Out, N, Mem> out(p->output_distribution(), Label{fn}, Init::none);
  p->execute(typename Mem::execution_space(), out, a);
  return out;
}

/// A complex copy of a real array (numpy.fft.fftn accepts real input).
template <class T, int N, class Mem>
Array<Kokkos::complex<T>, N, Mem> complex_copy(const Array<T, N, Mem>& a) {
  Array<Kokkos::complex<T>, N, Mem> z(a.distribution(), Label{"spmd::fft::complex_input"}, Init::none);
  const T* s = a.local_with_halo().data();
  Kokkos::complex<T>* d = z.local_with_halo().data();
  using E = typename Mem::execution_space;
  Kokkos::parallel_for(
      "spmd::fft::complex_copy", Kokkos::RangePolicy<E>(0, static_cast<index_t>(a.local_with_halo().span())),
      KOKKOS_LAMBDA(const index_t i) { d[i] = Kokkos::complex<T>(s[i], T(0)); });
  return z;
}
/// The array itself when complex (a shallow handle), else a complex copy.
template <class T, int N, class Mem>
auto as_complex(const Array<T, N, Mem>& a) {
  if constexpr (impl::is_complex_v<T>)
    return impl::share(a);
  else
    return complex_copy(a);
}
/// {-2, -1}: the axes of fft2 and friends.
inline std::vector<int> last_two() {
  return {-2, -1};
}
/// One axis as fft() takes it (n < 0: the axis' own length).
inline std::vector<index_t> one_n(index_t n) {
  return n < 0 ? std::vector<index_t>{} : std::vector<index_t>{n};
}
}  // namespace detail

/// numpy.fft.fftn: the N-d discrete Fourier transform of a (real input is made complex) along
/// `axes` (default: the last len(s), or all), input cropped / zero-padded to `s`. Collective.
template <class T, int N, class Mem>
auto fftn(const Array<T, N, Mem>& a, const std::vector<index_t>& s = {}, const std::vector<int>& axes = {},
          Norm norm = Norm::backward) {
  auto z = detail::as_complex(a);
  using Z = typename decltype(z)::value_type;
  return detail::run<Z, Z>(z, Direction::forward, s, axes, norm, "spmd::fft::fftn");
}
/// numpy.fft.ifftn: the inverse of fftn. Collective.
template <class T, int N, class Mem>
auto ifftn(const Array<T, N, Mem>& a, const std::vector<index_t>& s = {}, const std::vector<int>& axes = {},
           Norm norm = Norm::backward) {
  auto z = detail::as_complex(a);
  using Z = typename decltype(z)::value_type;
  return detail::run<Z, Z>(z, Direction::backward, s, axes, norm, "spmd::fft::ifftn");
}
/// numpy.fft.rfftn: the transform of a real array; the last transformed axis becomes
/// s[-1] / 2 + 1 long (the non-negative frequencies). Collective.
template <class T, int N, class Mem>
Array<Kokkos::complex<T>, N, Mem> rfftn(const Array<T, N, Mem>& a, const std::vector<index_t>& s = {},
                                        const std::vector<int>& axes = {}, Norm norm = Norm::backward) {
  static_assert(std::is_floating_point_v<T>, "spmd::fft::rfftn: the input must be real (double or float)");
  return detail::run<T, Kokkos::complex<T>>(a, Direction::forward, s, axes, norm, "spmd::fft::rfftn");
}
/// numpy.fft.irfftn: the inverse of rfftn; `s` gives the real output lengths (the last
/// defaults to 2 * (m - 1), so pass it for odd lengths). Collective.
template <class R, int N, class Mem>
Array<R, N, Mem> irfftn(const Array<Kokkos::complex<R>, N, Mem>& a, const std::vector<index_t>& s = {},
                        const std::vector<int>& axes = {}, Norm norm = Norm::backward) {
  return detail::run<Kokkos::complex<R>, R>(a, Direction::backward, s, axes, norm, "spmd::fft::irfftn");
}
/// numpy.fft.fft: one axis (default the last), length n (default the axis' own). Collective.
template <class T, int N, class Mem>
auto fft(const Array<T, N, Mem>& a, index_t n = -1, int axis = -1, Norm norm = Norm::backward) {
  return fftn(a, detail::one_n(n), {axis}, norm);
}
/// numpy.fft.ifft. Collective.
template <class T, int N, class Mem>
auto ifft(const Array<T, N, Mem>& a, index_t n = -1, int axis = -1, Norm norm = Norm::backward) {
  return ifftn(a, detail::one_n(n), {axis}, norm);
}
/// numpy.fft.rfft. Collective.
template <class T, int N, class Mem>
auto rfft(const Array<T, N, Mem>& a, index_t n = -1, int axis = -1, Norm norm = Norm::backward) {
  return rfftn(a, detail::one_n(n), {axis}, norm);
}
/// numpy.fft.irfft (n: the real output length, default 2 * (m - 1)). Collective.
template <class R, int N, class Mem>
auto irfft(const Array<Kokkos::complex<R>, N, Mem>& a, index_t n = -1, int axis = -1, Norm norm = Norm::backward) {
  return irfftn(a, detail::one_n(n), {axis}, norm);
}
/// numpy.fft.fft2 (the last two axes by default). Collective.
template <class T, int N, class Mem>
auto fft2(const Array<T, N, Mem>& a, const std::vector<index_t>& s = {},
          const std::vector<int>& axes = detail::last_two(), Norm norm = Norm::backward) {
  return fftn(a, s, axes, norm);
}
/// numpy.fft.ifft2. Collective.
template <class T, int N, class Mem>
auto ifft2(const Array<T, N, Mem>& a, const std::vector<index_t>& s = {},
           const std::vector<int>& axes = detail::last_two(), Norm norm = Norm::backward) {
  return ifftn(a, s, axes, norm);
}
/// numpy.fft.rfft2. Collective.
template <class T, int N, class Mem>
auto rfft2(const Array<T, N, Mem>& a, const std::vector<index_t>& s = {},
           const std::vector<int>& axes = detail::last_two(), Norm norm = Norm::backward) {
  return rfftn(a, s, axes, norm);
}
/// numpy.fft.irfft2. Collective.
template <class R, int N, class Mem>
auto irfft2(const Array<Kokkos::complex<R>, N, Mem>& a, const std::vector<index_t>& s = {},
            const std::vector<int>& axes = detail::last_two(), Norm norm = Norm::backward) {
  return irfftn(a, s, axes, norm);
}

namespace detail {
/// Each of `axes` (default all) rolled by shift(n) (a new array). Collective.
template <class T, int N, class Mem, class Shift>
Array<T, N, Mem> roll_axes(const Array<T, N, Mem>& a, std::vector<int> axes, const Shift& shift, const char* fn) {
  if (axes.empty())
    for (int d = 0; d < N; ++d) axes.push_back(d);
  Array<T, N, Mem> r = spmd::copy(a);
  for (int ax : axes) {
    if (ax < -N || ax >= N)
      throw Error::replicated(impl::str(fn, ": axis ", ax, " is out of bounds for an array of ", N, " axes (shape ",
                                        impl::shape_str(a.shape()), ")"));
    const int d = ax < 0 ? ax + N : ax;
    r = spmd::roll(r, shift(a.shape()[d]), spmd::axis(d));
  }
  return r;
}
}  // namespace detail

/// numpy.fft.fftshift: the zero frequency moved to the centre (each of `axes`, default all,
/// rolled by n / 2). A new array on the input's distribution (no halo). Collective.
template <class T, int N, class Mem>
Array<T, N, Mem> fftshift(const Array<T, N, Mem>& a, const std::vector<int>& axes = {}) {
  return detail::roll_axes(
      a, axes, [](index_t n) { return n / 2; }, "spmd::fft::fftshift");
}
/// numpy.fft.ifftshift: the inverse of fftshift (rolled by -(n / 2)). Collective.
template <class T, int N, class Mem>
Array<T, N, Mem> ifftshift(const Array<T, N, Mem>& a, const std::vector<int>& axes = {}) {
  return detail::roll_axes(
      a, axes, [](index_t n) { return -(n / 2); }, "spmd::fft::ifftshift");
}

/// numpy.fft.fftfreq(n, d): the sample frequencies [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1]
/// / (d n), as a host vector (every rank gets all n; index it with the global index). Local.
inline std::vector<double> fftfreq(index_t n, double d = 1.0) {
  std::vector<double> f(static_cast<std::size_t>(n < 0 ? 0 : n));
  for (index_t i = 0; i < n; ++i)
    f[static_cast<std::size_t>(i)] = static_cast<double>(i < (n + 1) / 2 ? i : i - n) / (d * n);
  return f;
}
/// numpy.fft.rfftfreq(n, d): [0, 1, ..., n/2] / (d n). Local.
inline std::vector<double> rfftfreq(index_t n, double d = 1.0) {
  std::vector<double> f(static_cast<std::size_t>(n < 0 ? 0 : n / 2 + 1));
  for (index_t i = 0; i <= n / 2 && n > 0; ++i) f[static_cast<std::size_t>(i)] = static_cast<double>(i) / (d * n);
  return f;
}

}  // namespace spmd::fft
