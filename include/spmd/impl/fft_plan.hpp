#pragma once
// spmd::impl::FftPlan: the distributed transform behind spmd::fft (fft.hpp).
//
// A transform over a set of axes is a sequence of STAGES. In each stage a contiguous group of
// up to three of the axes is whole on every rank (its process-grid extent is 1), and one local
// batched FFT (impl/fft_local.hpp: FFTW3 or cuFFT) transforms the group on every rank's block.
// Between stages a TRANSPOSE (an impl::RegionPlan: one message per pair of ranks) moves the data
// to the next stage's process grid, in which the grid extent of the next group's axis has been
// moved onto an axis that is done (or not transformed), the one with the most indices per rank:
//
//   3-D fftn on a 2 x 2 x 1 grid (pencils):  axis 2 on 2 x 2 x 1, axes 1 on 2 x 1 x 2,
//                                            axis 0 on 1 x 2 x 2, then back to 2 x 2 x 1
//   3-D fftn on 4 x 1 x 1 (slabs):           axes 1, 2 on 4 x 1 x 1, axis 0 on 1 x 4 x 1, back
//   one rank:                                 axes 0, 1, 2 in one local transform
//
// Real transforms: rfftn's real-to-complex stage comes first (its group ends with the last
// transformed axis, which becomes n/2 + 1 long); irfftn's complex-to-real stage comes last.
// NumPy's `s` crops or zero-pads the input when it is first copied into the stage layout.
// The result is left in the last stage's layout (Output::transposed) or moved back to the
// input's process grid (Output::restored), and scaled once by the `norm` factor.
//
// A 1-D array on several ranks cannot be made whole by moving grid extents: its transform runs
// on rank 0 of the communicator (gathered there and scattered back by the same transposes).
//
// Everything is planned at construction (collective: the distributions, the RegionPlans, the
// local plans and the stage buffers); execute() allocates nothing and calls the communication
// engine once per transpose.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/complex.hpp"
#include "spmd/impl/fft_local.hpp"
#include "spmd/impl/profiling.hpp"
#include "spmd/impl/region_plan.hpp"

namespace spmd::fft {
/// NumPy's `norm`: which direction is scaled, by 1/n (backward scales the inverse, forward the
/// forward transform, ortho both by 1/sqrt(n)); n is the product of the transformed lengths.
enum class Norm { backward, ortho, forward };
/// Where the result lives: on the input's process grid (restored), or on the last transpose's
/// grid (transposed: one transpose fewer; feed it to the inverse transform as it is).
enum class Output { restored, transposed };
/// The sign of the exponent: forward (-1, numpy.fft.fft) or backward (+1, numpy.fft.ifft).
enum class Direction { forward, backward };
/// How hard FFTW plans the local transforms (cuFFT chooses by itself): estimate (instantly, by
/// heuristics) or measure (FFTW_MEASURE: times candidates on scratch blocks once, about 10-20
/// transforms' time; then up to 9x faster on large 3-D blocks, measured at 256^3).
enum class Effort { estimate, measure };
}  // namespace spmd::fft

namespace spmd::impl {

/// Seconds spent by one rank in the local transforms (and the scaling) and in the data
/// movements (copy in, transposes, restore) of timed executes.
struct FftTimes {
  double local = 0, moves = 0;
};

/// One stage's shape and grid: a local transform of kind `kind` over axes [first, last].
template <int N>
struct FftStageSpec {
  FftKind kind = FftKind::c2c;
  int first = 0, last = 0;
  std::array<int, N> dims{};
  Index<N> in_shape{}, out_shape{};
  std::vector<index_t> n;  // logical lengths over [first, last]
};

/// The stages of a transform (see the file comment). `dims` is the starting grid, `shape` the
/// input shape after `s` (real for r2c), `real` the real shape (r2c: the input, c2r: the
/// output), `c` the last transformed axis. Deterministic: every rank computes the same. Local.
template <int N>
std::vector<FftStageSpec<N>> fft_stages(FftKind kind, std::array<int, N> dims, Index<N> shape, const Index<N>& real,
                                        const std::vector<int>& axes) {
  std::vector<int> pend = axes;
  const int c = axes.back();
  auto pending = [&](int a) { return std::find(pend.begin(), pend.end(), a) != pend.end(); };
  auto whole = [&](int a) { return dims[a] == 1; };
  // Move the grid extent of axis k onto another axis: one that is not pending, else a pending
  // one other than `avoid`, else `avoid`; among those, the one with the most indices per rank.
  auto move_factor = [&](int k, int avoid) {
    int best = -1;
    double bestv = -1;
    for (int pass = 0; pass < 3 && best < 0; ++pass)
      for (int j = 0; j < N; ++j) {
        if (j == k) continue;
        const bool ok = pass == 0 ? !pending(j) : pass == 1 ? (pending(j) && j != avoid) : j == avoid;
        if (!ok) continue;
        const double v = static_cast<double>(shape[j]) / dims[j];
        if (v > bestv) best = j, bestv = v;
      }
    dims[best] *= dims[k];
    dims[k] = 1;
  };
  std::vector<FftStageSpec<N>> out;
  while (!pend.empty()) {
    FftStageSpec<N> st;
    int b = -1, first = -1;
    if (kind == FftKind::r2c && out.empty()) {
      st.kind = FftKind::r2c;
      b = c;
    } else if (kind == FftKind::c2r) {
      // the complex-to-real stage takes every pending axis once they form a run ending at c (at
      // most 3) that can be made whole (an axis outside the run takes the grid extents); until
      // then the others are transformed complex to complex
      int lo = c;
      while (lo - 1 >= 0 && pending(lo - 1) && c - lo + 1 < 3) --lo;
      bool run = static_cast<int>(pend.size()) == c - lo + 1;
      bool outside = false;
      for (int j = 0; j < N; ++j) outside = outside || !pending(j);
      for (int a = lo; a <= c && run; ++a) run = whole(a) || outside;
      if (run || pend.size() == 1) {
        st.kind = FftKind::c2r;
        b = c;
        if (run) {
          for (int a = lo; a <= c; ++a)
            if (!whole(a)) move_factor(a, c);
          first = lo;
        }
      }
    }
    if (b < 0) {
      for (int a : pend)
        if (!(kind == FftKind::c2r && a == c) && whole(a)) b = std::max(b, a);
      if (b < 0)
        for (int a : pend)
          if (!(kind == FftKind::c2r && a == c)) b = std::max(b, a);
    }
    if (!whole(b)) move_factor(b, kind == FftKind::c2r ? c : -1);
    if (first < 0) {
      first = b;
      while (first - 1 >= 0 && pending(first - 1) && whole(first - 1) && b - first + 1 < 3 &&
             !(kind == FftKind::c2r && first - 1 == c && st.kind != FftKind::c2r))
        --first;
    }
    st.first = first;
    st.last = b;
    st.dims = dims;
    st.in_shape = shape;
    st.out_shape = shape;
    if (st.kind == FftKind::r2c) st.out_shape[c] = real[c] / 2 + 1;
    if (st.kind == FftKind::c2r) st.out_shape[c] = real[c];
    for (int a = first; a <= b; ++a) st.n.push_back(st.kind != FftKind::c2c && a == c ? real[c] : shape[a]);
    for (int a = first; a <= b; ++a) pend.erase(std::find(pend.begin(), pend.end(), a));
    shape = st.out_shape;
    out.push_back(st);
  }
  return out;
}

/// a *= f over the whole (zero-halo, contiguous) storage of a, on exec; nothing when f == 1. Local.
template <class T, int N, class Mem>
void fft_scale(const typename Mem::execution_space& exec, const Array<T, N, Mem>& a, double f) {
  if (f == 1.0 || a.is_null()) return;
  using E = typename Mem::execution_space;
  auto v = a.local_with_halo();
  T* p = v.data();
  const real_part_t<T> g = static_cast<real_part_t<T>>(f);
  Kokkos::parallel_for(
      "spmd::fft::scale", Kokkos::RangePolicy<E>(exec, 0, static_cast<index_t>(v.span())),
      KOKKOS_LAMBDA(const index_t i) { p[i] *= g; });
}

/// The distributed transform In -> Out (complex or real element types of one precision) over
/// arrays of distribution `in`. See the file comment.
template <class In, class Out, int N, class Mem>
class FftPlan {
  static_assert(is_complex_v<In> || is_complex_v<Out>, "spmd::fft: the input or the output must be complex");
  using C = std::conditional_t<is_complex_v<In>, In, Out>;
  using R = real_part_t<C>;
  static_assert(std::is_same_v<R, double> || std::is_same_v<R, float>,
                "spmd::fft: element types are Kokkos::complex<double / float> and double / float");
  static_assert(std::is_same_v<In, C> || std::is_same_v<In, R>, "spmd::fft: input and output precisions differ");
  static_assert(std::is_same_v<Out, C> || std::is_same_v<Out, R>, "spmd::fft: input and output precisions differ");
  static constexpr FftKind kind_ = !is_complex_v<In> ? FftKind::r2c : !is_complex_v<Out> ? FftKind::c2r : FftKind::c2c;

 public:
  using execution_space = typename Mem::execution_space;
  using in_array = Array<In, N, Mem>;
  using out_array = Array<Out, N, Mem>;

  /// Collective over in.comm(); throws the same spmd::Error on every rank for a bad argument.
  FftPlan(const Distribution<N>& in, fft::Direction dir, std::vector<index_t> s, std::vector<int> axes, fft::Norm norm,
          fft::Output output, const char* fn, fft::Effort effort = fft::Effort::estimate)
      : fn_(fn), in_dist_(in), comm_(in.comm()) {
    validate(dir, s, axes);
    sign_ = dir == fft::Direction::forward ? -1 : 1;
    // the shapes: src (after s, what the first stage reads), dst (the result), real (the real side)
    const Index<N> ishape = in.shape();
    Index<N> src = ishape;
    for (std::size_t i = 0; i < axes_.size(); ++i) src[axes_[i]] = s_[i];
    const int c = axes_.back();
    Index<N> real = src, dst = src;
    if (kind_ == FftKind::r2c) dst[c] = src[c] / 2 + 1;
    if (kind_ == FftKind::c2r) {
      real[c] = s_.back();
      src[c] = real[c] / 2 + 1;
      dst[c] = real[c];
    }
    padded_ = src != ishape;
    double n = 1;
    for (int a : axes_) n *= static_cast<double>(kind_ == FftKind::c2c ? src[a] : real[a]);
    const bool scale_fwd = norm == fft::Norm::forward, scale_bwd = norm == fft::Norm::backward;
    scale_ = norm == fft::Norm::ortho ? 1.0 / std::sqrt(n) : ((sign_ < 0 ? scale_fwd : scale_bwd) ? 1.0 / n : 1.0);

    // the stages and their distributions (N == 1 on several ranks: rank 0 alone)
    solo_ = N == 1 && comm_.size() > 1;
    std::array<int, N> dims = in.dims();
    if (solo_) {
      solo_comm_ = comm_.split(comm_.rank() == 0 ? 0 : 1, comm_.rank());
      dims[0] = 1;
    }
    // A 3-D transform of all axes on P <= n0, n1 ranks runs on slabs whatever the input grid: the
    // local groups are then the trailing axes 1, 2 and the leading axis 0 (one batched call each;
    // pencils would transform axis 1 alone in the middle of the block). The same transposes.
    if constexpr (N == 3) {
      const int p = comm_.size();
      if (!solo_ && p > 1 && axes_.size() == 3 && p <= src[0] && p <= src[1]) {
        dims = {1, 1, 1};
        dims[kind_ == FftKind::c2r ? 1 : 0] = p;
      }
    }
    specs_ = fft_stages<N>(kind_, dims, src, real, axes_);
    const bool zero_halo = std::all_of(in.halo().begin(), in.halo().end(), [](int h) { return h == 0; });
    direct_in_ = !solo_ && kind_ != FftKind::c2r && !padded_ && zero_halo && specs_[0].dims == in.dims();
    stages_.resize(specs_.size());
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      auto& st = stages_[i];
      const auto& sp = specs_[i];
      st.din = stage_dist(sp.in_shape, sp.dims);
      st.dout = sp.in_shape == sp.out_shape ? st.din : stage_dist(sp.out_shape, sp.dims);
    }
    // the output distribution
    if (output == fft::Output::transposed && !solo_) {
      out_dist_ = stages_.back().dout;
    } else {
      DistributionOptions o;
      for (int d : in.dims()) o.dims.push_back(d);
      if (dst == ishape) {
        for (int h : in.halo()) o.halo.push_back(h);
        for (bool p : in.periodic()) o.periodic.push_back(p);
      }
      out_dist_ = Distribution<N>(comm_, dst, o);
    }
    direct_out_ = !solo_ && out_dist_ == stages_.back().dout;
    device_ = sp_device();
    build(device_);
    if (effort == fft::Effort::measure) measure();
  }

  /// Re-plan the local transforms with FFTW_MEASURE (once; a no-op on CUDA). Collective in
  /// effect (every rank measures its own block, errors agreed).
  void measure() {
    if (measured_) return;
    measured_ = true;
    agree(comm_, [&] {
      for (auto& st : stages_)
        if (st.fft) st.fft->measure();
    });
  }
  bool measured() const { return measured_; }

  const Distribution<N>& input_distribution() const { return in_dist_; }
  const Distribution<N>& output_distribution() const { return out_dist_; }
  int num_stages() const { return static_cast<int>(stages_.size()); }
  int num_transposes() const {
    int t = (copy_in_ && !copy_in_local_) ? 1 : 0;
    for (const auto& st : stages_) t += st.transpose ? 1 : 0;
    return t + (restore_ ? 1 : 0);
  }
  /// "axes 1..2 on 2x1x1 | transpose | axis 0 on 1x2x1 | restore": the stages. Local.
  std::string describe() const {
    std::string d;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const auto& sp = specs_[i];
      if (i == 0 && copy_in_) d += padded_ ? "copy in (s) | " : "copy in | ";
      if (stages_[i].transpose) d += "transpose | ";
      d += str(sp.kind == FftKind::c2c   ? "c2c"
               : sp.kind == FftKind::r2c ? "r2c"
                                         : "c2r",
               " axes ", sp.first, "..", sp.last, " on grid ", shape_str(sp.dims), i + 1 < specs_.size() ? " | " : "");
    }
    if (restore_) d += " | restore";
    return d;
  }

  /// out = transform(in) on exec. With `times` (local and data-movement seconds, this rank),
  /// every phase is fenced and timed. Collective.
  void execute(const execution_space& exec, const out_array& out, const in_array& in, FftTimes* times = nullptr) const {
    const Region region("spmd::fft::execute");
    if (in.distribution() != in_dist_)
      throw Error::replicated(str(fn_, ": the input array '", in.label(), "' has distribution (",
                                  in.is_null() ? std::string("null") : in.distribution().describe(),
                                  "); the plan was made for (", in_dist_.describe(), ")"));
    if (out.distribution() != out_dist_)
      throw Error::replicated(str(fn_, ": the output array '", out.label(), "' has distribution (",
                                  out.is_null() ? std::string("null") : out.distribution().describe(),
                                  "); the plan's output is (", out_dist_.describe(),
                                  "): make it with the plan's make_output()"));
    void* stream = stream_of(exec);
    // FFTW runs on the calling thread: the kernels queued on exec (copies, transposes) first
    const auto sync = [&] {
      if (device_ == FftDevice::host) exec.fence();
    };
    // phase(t, f): run f; when timing, fenced and added to t
    Kokkos::Timer timer;
    const auto phase = [&](double FftTimes::*t, const auto& f) {
      if (times) exec.fence(), timer.reset();
      f();
      if (times) exec.fence(), times->*t += timer.seconds();
    };
    const auto local = [&](const std::unique_ptr<LocalFft>& fft, void* i, void* o) {
      if (fft) phase(&FftTimes::local, [&] { sync(), fft->execute(i, o, stream); });
    };
    const Array<C, N, Mem>* cur = nullptr;   // the complex data after the latest stage
    const Array<R, N, Mem>* rres = nullptr;  // the real result (c2r)
    for (std::size_t i = 0; i < stages_.size(); ++i) {
      const Stage& st = stages_[i];
      const bool last = i + 1 == stages_.size();
      if (i == 0) {
        void* src = nullptr;
        if (direct_in_) {
          src = data(in);
        } else {
          if (padded_ && !in_buf_.is_null()) Kokkos::deep_copy(exec, in_buf_.local_with_halo(), In(0));
          phase(&FftTimes::moves, [&] { copy_in_->apply(exec, in_buf_, in); });
          src = data(in_buf_);
        }
        if (st.spec_kind == FftKind::c2r) {
          const Array<R, N, Mem>* dst = (last && direct_out_) ? out_real(out) : &st.rout;
          local(st.fft, src, data(*dst));
          rres = dst;
        } else if (st.in_place) {  // c2c on the copied-in buffer
          local(st.fft, src, src);
          cur = in_complex(in_buf_);
        } else {  // c2c from the user's array, or r2c
          const Array<C, N, Mem>* dst = (last && direct_out_) ? out_complex(out) : &st.cout;
          local(st.fft, src, data(*dst));
          cur = dst;
        }
        continue;
      }
      const Array<C, N, Mem>* input = cur;
      if (st.transpose) {
        const Array<C, N, Mem>* target =
            (last && direct_out_ && st.spec_kind == FftKind::c2c) ? out_complex(out) : &st.cin;
        phase(&FftTimes::moves, [&] { st.transpose->apply(exec, *target, *cur); });
        input = target;
      }
      if (st.spec_kind == FftKind::c2r) {
        const Array<R, N, Mem>* dst = (last && direct_out_) ? out_real(out) : &st.rout;
        local(st.fft, data(*input), data(*dst));
        rres = dst;
      } else {
        local(st.fft, data(*input), data(*input));
        cur = input;
      }
    }
    // scale (once, on the contiguous result), then move it to the output distribution
    if constexpr (is_complex_v<Out>) {
      phase(&FftTimes::local, [&] { fft_scale(exec, *cur, scale_); });
      if (cur != out_complex(out)) phase(&FftTimes::moves, [&] { restore_->apply(exec, out, *cur); });
    } else {
      phase(&FftTimes::local, [&] { fft_scale(exec, *rres, scale_); });
      if (rres != out_real(out)) phase(&FftTimes::moves, [&] { restore_->apply(exec, out, *rres); });
    }
  }

 private:
  struct Stage {
    FftKind spec_kind = FftKind::c2c;
    Distribution<N> din, dout;
    bool in_place = false;
    std::unique_ptr<LocalFft> fft;  // null on ranks outside a solo stage
    std::unique_ptr<RegionPlan<C, N, N, Mem>> transpose;
    Array<C, N, Mem> cin, cout;
    Array<R, N, Mem> rout;
  };

  static constexpr FftDevice sp_device() {
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same_v<Mem, Kokkos::CudaSpace> || std::is_same_v<Mem, Kokkos::CudaUVMSpace>)
      return FftDevice::cuda;
#endif
    return FftDevice::host;
  }
  static void* stream_of([[maybe_unused]] const execution_space& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same_v<execution_space, Kokkos::Cuda>) return static_cast<void*>(exec.cuda_stream());
#endif
    return nullptr;
  }
  template <class T>
  static void* data(const Array<T, N, Mem>& a) {
    return a.is_null() ? nullptr : static_cast<void*>(a.local_with_halo().data());
  }
  // the output as the complex or real array it is (the other case never happens at run time)
  static const Array<C, N, Mem>* out_complex(const out_array& out) {
    if constexpr (std::is_same_v<Out, C>) return &out;
    return nullptr;
  }
  static const Array<R, N, Mem>* out_real(const out_array& out) {
    if constexpr (std::is_same_v<Out, R>) return &out;
    return nullptr;
  }
  static const Array<C, N, Mem>* in_complex(const in_array& in) {
    if constexpr (std::is_same_v<In, C>) return &in;
    return nullptr;
  }
  /// A zero-halo distribution of `shape` on grid `dims` (on rank 0 alone for a solo plan: null
  /// on the other ranks).
  Distribution<N> stage_dist(const Index<N>& shape, const std::array<int, N>& dims) const {
    if (solo_)
      return comm_.rank() == 0 ? Distribution<N>(*solo_comm_, shape, DistributionOptions{}) : Distribution<N>();
    DistributionOptions o;
    for (int d : dims) o.dims.push_back(d);
    return Distribution<N>(comm_, shape, o);
  }

  void validate(fft::Direction dir, const std::vector<index_t>& s, const std::vector<int>& axes) {
    const Index<N> shape = in_dist_.shape();
    agree(comm_, [&] {
      if (kind_ == FftKind::r2c && dir != fft::Direction::forward)
        throw Error(str(fn_, ": a real-to-complex transform is a forward one"));
      if (kind_ == FftKind::c2r && dir != fft::Direction::backward)
        throw Error(str(fn_, ": a complex-to-real transform is a backward one"));
      // NumPy: axes default to the last len(s) axes, or all of them
      std::vector<int> ax = axes;
      if (ax.empty()) {
        const int k = s.empty() ? N : static_cast<int>(s.size());
        if (k > N)
          throw Error(
              str(fn_, ": s has ", s.size(), " entries for an array of ", N, " axes (shape ", shape_str(shape), ")"));
        for (int a = N - k; a < N; ++a) ax.push_back(a);
      }
      for (int& a : ax) {
        if (a < -N || a >= N)
          throw Error(
              str(fn_, ": axis ", a, " is out of bounds for an array of ", N, " axes (shape ", shape_str(shape), ")"));
        if (a < 0) a += N;
      }
      for (std::size_t i = 0; i < ax.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (ax[i] == ax[j])
            throw Error(str(fn_, ": axis ", ax[i], " is repeated in axes ", shape_str(ax),
                            " (spmd::fft transforms each axis once)"));
      if (!s.empty() && s.size() != ax.size())
        throw Error(str(fn_, ": s ", shape_str(s), " and axes ", shape_str(ax), " must have the same length"));
      std::vector<index_t> ss = s;
      if (ss.empty()) {
        for (int a : ax) ss.push_back(shape[a]);
        if (kind_ == FftKind::c2r) ss.back() = 2 * (shape[ax.back()] - 1);
      }
      for (std::size_t i = 0; i < ss.size(); ++i)
        if (ss[i] < 1)
          throw Error(str(fn_, ": invalid number of data points (", ss[i], ") along axis ", ax[i], " of shape ",
                          shape_str(shape),
                          kind_ == FftKind::c2r && s.empty() ? " (the default 2 * (m - 1)); pass s" : "; pass s"));
      if (kind_ == FftKind::c2c || kind_ == FftKind::r2c)
        for (int a : ax)
          if (shape[a] < 1 && s.empty())
            throw Error(str(fn_, ": axis ", a, " of shape ", shape_str(shape), " is empty"));
      axes_ = ax;
      s_ = ss;
    });
  }

  void build(FftDevice device) {
    const Selection<N, N> id = Selection<N, N>::identity();
    const Index<N> ishape = in_dist_.shape();
    const auto& s0 = specs_[0];
    // copy in (crop / pad by s, or move to the first stage's grid)
    if (!direct_in_) {
      Index<N> ext;
      for (int d = 0; d < N; ++d) ext[d] = std::min(ishape[d], s0.in_shape[d]);
      if (!stages_[0].din.is_null()) in_buf_ = in_array(stages_[0].din, Label{"spmd::fft::in"});
      copy_in_ = std::make_unique<RegionPlan<In, N, N, Mem>>(comm_, in_dist_, id, stages_[0].din, id, ext,
                                                             Backend::automatic, fn_.c_str());
      copy_in_local_ = !solo_ && stages_[0].din.same_layout(in_dist_);
    }
    for (std::size_t i = 0; i < stages_.size(); ++i) {
      Stage& st = stages_[i];
      const auto& sp = specs_[i];
      st.spec_kind = sp.kind;
      const bool last = i + 1 == stages_.size();
      const bool here = !st.din.is_null();
      if (i == 0) {
        st.in_place = sp.kind == FftKind::c2c && !direct_in_;
        if (here && !st.in_place && sp.kind != FftKind::c2r && !(last && direct_out_))
          st.cout = Array<C, N, Mem>(st.dout, Label{"spmd::fft::stage"});
      } else {
        st.in_place = sp.kind == FftKind::c2c;
        if (!(stages_[i - 1].dout == st.din)) {
          st.transpose = std::make_unique<RegionPlan<C, N, N, Mem>>(comm_, stages_[i - 1].dout, id, st.din,
                                                                    Backend::automatic, fn_.c_str());
          if (here && !(last && direct_out_ && sp.kind == FftKind::c2c))
            st.cin = Array<C, N, Mem>(st.din, Label{"spmd::fft::stage"});
        }
      }
      if (sp.kind == FftKind::c2r && here && !(last && direct_out_))
        st.rout = Array<R, N, Mem>(st.dout, Label{"spmd::fft::stage"});
      agree(comm_, [&] {
        if (!here) return;
        LocalFftSpec ls;
        ls.kind = sp.kind;
        ls.single = std::is_same_v<R, float>;
        ls.sign = sign_;
        ls.device = device;
        const Box<N> bi = st.din.owned(), bo = st.dout.owned();
        for (int d = 0; d < N; ++d) {
          ls.in_ext.push_back(bi.hi[d] - bi.lo[d]);
          ls.out_ext.push_back(bo.hi[d] - bo.lo[d]);
        }
        ls.first = sp.first;
        ls.last = sp.last;
        ls.n = sp.n;
        ls.in_place = st.in_place;
        ls.threads = device == FftDevice::host ? execution_space().concurrency() : 1;
        st.fft = std::make_unique<LocalFft>(ls);
      });
    }
    // the result is in the last stage's output unless it was written to the user's array
    const auto& last = specs_.back();
    const bool final_in_out =
        direct_out_ && (stages_.size() > 1 ? (last.kind != FftKind::c2c || stages_.back().transpose != nullptr)
                                           : (last.kind != FftKind::c2c || !stages_[0].in_place));
    if (!final_in_out)
      restore_ = std::make_unique<RegionPlan<Out, N, N, Mem>>(comm_, stages_.back().dout, id, out_dist_,
                                                              Backend::automatic, fn_.c_str());
  }

  std::string fn_;
  Distribution<N> in_dist_, out_dist_;
  Comm comm_;
  std::optional<Comm> solo_comm_;  // rank 0 alone (a solo plan)
  std::vector<int> axes_;
  std::vector<index_t> s_;
  int sign_ = -1;
  FftDevice device_ = FftDevice::host;
  double scale_ = 1.0;
  bool padded_ = false, solo_ = false, direct_in_ = false, direct_out_ = false;
  bool copy_in_local_ = false;
  bool measured_ = false;
  std::vector<FftStageSpec<N>> specs_;
  std::vector<Stage> stages_;
  in_array in_buf_;
  std::unique_ptr<RegionPlan<In, N, N, Mem>> copy_in_;
  std::unique_ptr<RegionPlan<Out, N, N, Mem>> restore_;  // last stage -> output, when it is not written there
};

}  // namespace spmd::impl
