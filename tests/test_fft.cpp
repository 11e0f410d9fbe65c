// spmd::fft against a serial reference computed here: the DFT written out as its sum, one axis at
// a time, on the gathered array (independent of FFTW / cuFFT), with NumPy's s (crop / zero-pad),
// axes and norm rules. Odd and even lengths, so that 3 ranks get uneven blocks and the real
// transforms meet both Nyquist cases; 1-D (the transform on rank 0), 2-D and 3-D; the stage
// planner; round trips, Parseval, plans with the transposed output; errors agreed on every rank.
// (tests/fft_numpy.py checks the same transforms against numpy.fft itself.)
#include "spmd_test.hpp"

#include <spmd/fft.hpp>

#include <cmath>
#include <complex>
#include <vector>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::world;
namespace fft = spmd::fft;

namespace {

using Z = Kokkos::complex<double>;
using ZF = Kokkos::complex<float>;
using Ref = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

/// A value in [-1, 1) from an index (a hash: no structure an FFT bug could hide in).
KOKKOS_INLINE_FUNCTION double hashv(index_t i, index_t salt) {
  std::uint64_t x =
      static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(salt) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) / 4503599627370496.0 - 1.0;
}
template <class T>
struct Val {
  index_t n1 = 1, n2 = 1;
  KOKKOS_INLINE_FUNCTION T at(index_t flat) const {
    if constexpr (spmd::impl::is_complex_v<T>) {
      using R = typename T::value_type;
      return T(static_cast<R>(hashv(flat, 1)), static_cast<R>(hashv(flat, 2)));
    } else {
      return static_cast<T>(hashv(flat, 1));
    }
  }
  KOKKOS_INLINE_FUNCTION T operator()(index_t i) const { return at(i); }
  KOKKOS_INLINE_FUNCTION T operator()(index_t i, index_t j) const { return at(i * n1 + j); }
  KOKKOS_INLINE_FUNCTION T operator()(index_t i, index_t j, index_t k) const { return at((i * n1 + j) * n2 + k); }
};
template <class T, int N>
Array<T, N> make(const Index<N>& shape, int halo = 0) {
  Val<T> v;
  if (N >= 2) v.n1 = shape[1];
  if (N == 3) v.n2 = shape[2];
  return spmd::fromfunction<T>(world(), shape, v, spmd::halo(halo));
}

template <class T>
Ref to_ref(const T& z) {
  if constexpr (spmd::impl::is_complex_v<T>)
    return Ref(static_cast<double>(z.real()), static_cast<double>(z.imag()));
  else
    return Ref(static_cast<double>(z), 0.0);
}

/// A row-major host array of Ref.
struct Host {
  std::vector<index_t> shape;
  std::vector<Ref> v;
  index_t size() const {
    index_t s = 1;
    for (auto e : shape) s *= e;
    return s;
  }
};
template <class T, int N>
Host host(const Array<T, N>& a) {
  Host h;
  h.shape.assign(a.shape().begin(), a.shape().end());
  for (const auto& x : spmd::allgather(a)) h.v.push_back(to_ref(x));
  return h;
}

/// Crop or zero-pad along `axis` to m, then the DFT of length m with exponent sign `sign`.
Host dft_axis(const Host& x, int axis, index_t m, int sign) {
  Host y;
  y.shape = x.shape;
  y.shape[axis] = m;
  y.v.assign(static_cast<std::size_t>(y.size()), Ref(0));
  const index_t n = x.shape[axis];
  index_t inner = 1, outer = 1;
  for (int d = axis + 1; d < static_cast<int>(x.shape.size()); ++d) inner *= x.shape[d];
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (index_t o = 0; o < outer; ++o)
    for (index_t in = 0; in < inner; ++in)
      for (index_t k = 0; k < m; ++k) {
        Ref s(0);
        for (index_t j = 0; j < std::min(n, m); ++j)
          s += x.v[static_cast<std::size_t>((o * n + j) * inner + in)] *
               std::polar(1.0, sign * 2 * kPi * static_cast<double>(j * k % m) / static_cast<double>(m));
        y.v[static_cast<std::size_t>((o * m + k) * inner + in)] = s;
      }
  return y;
}
/// Keep the first m entries along axis (rfft's half spectrum).
Host crop(const Host& x, int axis, index_t m) {
  Host y;
  y.shape = x.shape;
  y.shape[axis] = m;
  index_t inner = 1, outer = 1;
  for (int d = axis + 1; d < static_cast<int>(x.shape.size()); ++d) inner *= x.shape[d];
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (index_t o = 0; o < outer; ++o)
    for (index_t k = 0; k < m; ++k)
      for (index_t in = 0; in < inner; ++in)
        y.v.push_back(k < x.shape[axis] ? x.v[static_cast<std::size_t>((o * x.shape[axis] + k) * inner + in)] : Ref(0));
  return y;
}
/// numpy.fft.irfft along axis to n real points: the half spectrum (cropped / padded to n/2+1)
/// extended by Hermitian symmetry, the inverse sum, the real part (unscaled).
Host irdft_axis(const Host& x, int axis, index_t n) {
  const Host h = crop(x, axis, n / 2 + 1);
  Host full;
  full.shape = h.shape;
  full.shape[axis] = n;
  index_t inner = 1, outer = 1;
  for (int d = axis + 1; d < static_cast<int>(h.shape.size()); ++d) inner *= h.shape[d];
  for (int d = 0; d < axis; ++d) outer *= h.shape[d];
  const index_t m = n / 2 + 1;
  full.v.assign(static_cast<std::size_t>(full.size()), Ref(0));
  for (index_t o = 0; o < outer; ++o)
    for (index_t k = 0; k < n; ++k)
      for (index_t in = 0; in < inner; ++in) {
        const Ref v = k < m ? h.v[static_cast<std::size_t>((o * m + k) * inner + in)]
                            : std::conj(h.v[static_cast<std::size_t>((o * m + (n - k)) * inner + in)]);
        full.v[static_cast<std::size_t>((o * n + k) * inner + in)] = v;
      }
  Host y = dft_axis(full, axis, n, +1);
  for (auto& v : y.v) v = Ref(v.real(), 0);
  return y;
}
void scale(Host& h, double f) {
  for (auto& v : h.v) v *= f;
}
double norm_factor(fft::Norm norm, bool forward, double n) {
  if (norm == fft::Norm::ortho) return 1 / std::sqrt(n);
  if (norm == fft::Norm::backward) return forward ? 1.0 : 1 / n;
  return forward ? 1 / n : 1.0;
}

/// Every point of got within tol * max|want|; the first few misses reported.
void expect_close(const Host& got, const Host& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  double mx = 0;
  for (const auto& w : want.v) mx = std::max(mx, std::abs(w));
  // every reference here is nonzero: a zero one means the input never reached the test
  spmd::testing::expect_all(mx > 0, (what + ": the reference is all zero").c_str());
  int bad = 0;
  for (std::size_t k = 0; k < want.v.size() && bad < 4; ++k)
    if (std::abs(got.v[k] - want.v[k]) > tol * (mx + 1)) {
      ADD_FAILURE() << what << " at flat index " << k << ": got " << got.v[k] << ", want " << want.v[k];
      ++bad;
    }
  spmd::testing::expect_all(bad == 0, what.c_str());
}

const fft::Norm kNorms[] = {fft::Norm::backward, fft::Norm::ortho, fft::Norm::forward};
const char* norm_name(fft::Norm n) {
  return n == fft::Norm::backward ? "backward" : n == fft::Norm::ortho ? "ortho" : "forward";
}

// ---- the stage planner ------------------------------------------------------------------------

void Stages() {
  using spmd::impl::fft_stages;
  using spmd::impl::FftKind;
  // one rank: all three axes in one local transform
  auto s = fft_stages<3>(FftKind::c2c, {1, 1, 1}, {8, 8, 8}, {8, 8, 8}, {0, 1, 2});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].first, 0);
  EXPECT_EQ(s[0].last, 2);
  // slabs: axes 1..2, then axis 0 with the grid moved to axis 1
  s = fft_stages<3>(FftKind::c2c, {4, 1, 1}, {8, 8, 8}, {8, 8, 8}, {0, 1, 2});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].first, 1);
  EXPECT_EQ(s[1].first, 0);
  EXPECT_EQ(s[1].dims, (std::array<int, 3>{1, 4, 1}));
  // pencils: axis 2, axis 1 (grid to axis 2), axis 0 (grid to axis 1)
  s = fft_stages<3>(FftKind::c2c, {2, 2, 1}, {8, 8, 8}, {8, 8, 8}, {0, 1, 2});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].dims, (std::array<int, 3>{2, 1, 2}));
  EXPECT_EQ(s[2].dims, (std::array<int, 3>{1, 2, 2}));
  // rfftn: the real-to-complex stage first, its last axis halved
  auto s2 = fft_stages<2>(FftKind::r2c, {2, 1}, {6, 10}, {6, 10}, {0, 1});
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].kind, FftKind::r2c);
  EXPECT_EQ(s2[0].out_shape, (Index<2>{6, 6}));
  EXPECT_EQ(s2[0].n, (std::vector<index_t>{10}));
  // irfftn: the complex-to-real stage last, after the others; on one rank in one transform
  s2 = fft_stages<2>(FftKind::c2r, {2, 1}, {6, 6}, {6, 10}, {0, 1});
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].kind, FftKind::c2c);
  EXPECT_EQ(s2[1].kind, FftKind::c2r);
  EXPECT_EQ(s2[1].out_shape, (Index<2>{6, 10}));
  s2 = fft_stages<2>(FftKind::c2r, {1, 1}, {6, 6}, {6, 10}, {0, 1});
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_EQ(s2[0].first, 0);
}

// ---- complex transforms ------------------------------------------------------------------------

void ComplexTwoD() {
  for (const Index<2> shape : {Index<2>{12, 9}, Index<2>{7, 10}}) {
    const auto a = make<Z, 2>(shape, 1);  // a halo: the first stage copies in
    const Host ha = host(a);
    for (const auto norm : kNorms) {
      const double n = static_cast<double>(shape[0] * shape[1]);
      Host want = dft_axis(dft_axis(ha, 1, shape[1], -1), 0, shape[0], -1);
      scale(want, norm_factor(norm, true, n));
      const auto f = fft::fftn(a, {}, {}, norm);
      EXPECT_EQ(f.distribution().dims(), a.distribution().dims());
      expect_close(host(f), want, 1e-12, std::string("fftn 2-D ") + norm_name(norm));
      Host inv = dft_axis(dft_axis(host(f), 1, shape[1], +1), 0, shape[0], +1);
      scale(inv, norm_factor(norm, false, n));
      expect_close(host(fft::ifftn(f, {}, {}, norm)), inv, 1e-12, std::string("ifftn 2-D ") + norm_name(norm));
      expect_close(host(fft::ifftn(f, {}, {}, norm)), ha, 1e-12, "ifftn(fftn(a)) == a");
    }
    // one axis, each
    for (int axis : {0, 1, -1}) {
      const int ax = axis < 0 ? axis + 2 : axis;
      expect_close(host(fft::fft(a, -1, axis)), dft_axis(ha, ax, shape[ax], -1), 1e-12, "fft along one axis");
    }
    // Parseval: sum |a|^2 = sum |A|^2 / n
    const auto f = fft::fftn(a);
    double ea = 0, ef = 0;
    for (const auto& v : ha.v) ea += std::norm(v);
    for (const auto& v : host(f).v) ef += std::norm(v);
    EXPECT_NEAR(ea, ef / static_cast<double>(shape[0] * shape[1]), 1e-10 * ea);
  }
}

void ComplexThreeD() {
  const Index<3> shape{6, 5, 8};
  const auto a = make<Z, 3>(shape);
  const Host ha = host(a);
  Host want = dft_axis(dft_axis(dft_axis(ha, 2, 8, -1), 1, 5, -1), 0, 6, -1);
  expect_close(host(fft::fftn(a)), want, 1e-12, "fftn 3-D");
  // axes subsets, in NumPy's order (the result does not depend on it)
  expect_close(host(fft::fftn(a, {}, {2, 0})), dft_axis(dft_axis(ha, 2, 8, -1), 0, 6, -1), 1e-12, "fftn axes {2, 0}");
  expect_close(host(fft::fftn(a, {}, {1})), dft_axis(ha, 1, 5, -1), 1e-12, "fftn axes {1}");
  // s: pad axis 0 to 9, crop axis 2 to 4
  expect_close(host(fft::fftn(a, {9, 4}, {0, 2})), dft_axis(dft_axis(ha, 2, 4, -1), 0, 9, -1), 1e-12,
               "fftn s {9, 4} axes {0, 2}");
  // s without axes: the last len(s) axes
  expect_close(
      host(fft::ifftn(a, {3, 11})),
      [&] {
        Host w = dft_axis(dft_axis(ha, 2, 11, +1), 1, 3, +1);
        scale(w, 1.0 / 33);
        return w;
      }(),
      1e-12, "ifftn s {3, 11}");
  // a real input is made complex
  const auto r = make<double, 3>(shape);
  expect_close(host(fft::fftn(r)), dft_axis(dft_axis(dft_axis(host(r), 2, 8, -1), 1, 5, -1), 0, 6, -1), 1e-12,
               "fftn of a real array");
  // the plan cache: the same call again gives the same answer
  expect_close(host(fft::fftn(a)), want, 1e-12, "fftn 3-D, cached plan");
}

void OneD() {
  // a 1-D array on several ranks: the transform runs on rank 0
  for (index_t n : {13, 16}) {
    const auto a = make<Z, 1>({n});
    const Host ha = host(a);
    expect_close(host(fft::fft(a)), dft_axis(ha, 0, n, -1), 1e-12, "fft 1-D");
    expect_close(host(fft::fft(a, n + 3)), dft_axis(ha, 0, n + 3, -1), 1e-12, "fft 1-D, n padded");
    expect_close(host(fft::ifft(fft::fft(a))), ha, 1e-12, "ifft(fft(a)) 1-D");
    const auto r = make<double, 1>({n});
    const Host hr = host(r);
    const auto k = fft::rfft(r);
    expect_close(host(k), crop(dft_axis(hr, 0, n, -1), 0, n / 2 + 1), 1e-12, "rfft 1-D");
    Host back = irdft_axis(host(k), 0, n);
    scale(back, 1.0 / static_cast<double>(n));
    expect_close(host(fft::irfft(k, n)), back, 1e-12, "irfft 1-D");
    expect_close(host(fft::irfft(k, n)), hr, 1e-12, "irfft(rfft(r), n) == r");
    // irfft of an arbitrary (not Hermitian) half spectrum, as NumPy defines it
    const auto c = make<Z, 1>({n / 2 + 1});
    Host want = irdft_axis(host(c), 0, n);
    scale(want, 1.0 / static_cast<double>(n));
    expect_close(host(fft::irfft(c, n)), want, 1e-12, "irfft of any half spectrum");
  }
}

// ---- real transforms --------------------------------------------------------------------------

void RealTransforms() {
  for (const Index<3> shape : {Index<3>{6, 5, 8}, Index<3>{5, 4, 7}}) {
    const auto r = make<double, 3>(shape, 1);
    const Host hr = host(r);
    for (const auto norm : kNorms) {
      const double n = static_cast<double>(shape[0] * shape[1] * shape[2]);
      Host want = crop(dft_axis(dft_axis(dft_axis(hr, 2, shape[2], -1), 1, shape[1], -1), 0, shape[0], -1), 2,
                       shape[2] / 2 + 1);
      scale(want, norm_factor(norm, true, n));
      const auto k = fft::rfftn(r, {}, {}, norm);
      expect_close(host(k), want, 1e-12, std::string("rfftn 3-D ") + norm_name(norm));
      // irfftn: the inverse over axes 0, 1, then the Hermitian inverse along 2 (s for odd lengths)
      Host back = irdft_axis(dft_axis(dft_axis(host(k), 1, shape[1], +1), 0, shape[0], +1), 2, shape[2]);
      scale(back, norm_factor(norm, false, n));
      const auto u = fft::irfftn(k, {shape[0], shape[1], shape[2]}, {}, norm);
      expect_close(host(u), back, 1e-12, std::string("irfftn 3-D ") + norm_name(norm));
      expect_close(host(u), hr, 1e-12, "irfftn(rfftn(r)) == r");
    }
    // rfftn over axes {0, 1} of a 3-D array: the last of axes (1) is halved
    expect_close(host(fft::rfftn(r, {}, {0, 1})),
                 crop(dft_axis(dft_axis(hr, 1, shape[1], -1), 0, shape[0], -1), 1, shape[1] / 2 + 1), 1e-12,
                 "rfftn axes {0, 1}");
  }
  // 2-D rfft2 / irfft2 with s: pad the real input
  const auto r = make<double, 2>({7, 9});
  const auto k = fft::rfft2(r, {8, 10});
  const Host want = crop(dft_axis(dft_axis(host(r), 1, 10, -1), 0, 8, -1), 1, 6);
  expect_close(host(k), want, 1e-12, "rfft2 s {8, 10}");
  const auto u = fft::irfft2(k, {8, 10});
  EXPECT_EQ(u.shape(), (Index<2>{8, 10}));
  Host hu = host(u), pad;
  pad.shape = {8, 10};
  const Host hr = host(r);
  for (index_t i = 0; i < 8; ++i)
    for (index_t j = 0; j < 10; ++j)
      pad.v.push_back(i < 7 && j < 9 ? hr.v[static_cast<std::size_t>(i * 9 + j)] : Ref(0));
  expect_close(hu, pad, 1e-12, "irfft2(rfft2(r, s), s) == the padded r");
}

void SinglePrecision() {
  const auto a = make<ZF, 2>({10, 6});
  const Host ha = host(a);
  expect_close(host(fft::fftn(a)), dft_axis(dft_axis(ha, 1, 6, -1), 0, 10, -1), 2e-6, "fftn complex<float>");
  const auto r = make<float, 2>({10, 6});
  const auto k = fft::rfftn(r);
  static_assert(std::is_same_v<typename decltype(k)::value_type, ZF>);
  expect_close(host(fft::irfftn(k, {10, 6})), host(r), 2e-6, "irfftn(rfftn) float");
}

// ---- plans ------------------------------------------------------------------------------------

void Plans() {
  const Index<3> shape{9, 6, 4};
  const auto a = make<Z, 3>(shape);
  const Host ha = host(a);
  const Host want = dft_axis(dft_axis(dft_axis(ha, 2, 4, -1), 1, 6, -1), 0, 9, -1);
  fft::Plan<Z, Z, 3> restored(a.distribution(), fft::Direction::forward);
  fft::Plan<Z, Z, 3> transposed(a.distribution(), fft::Direction::forward, {}, {}, fft::Norm::backward,
                                fft::Output::transposed);
  EXPECT_LE(transposed.num_transposes(), restored.num_transposes());
  // 3-D on P <= 6 ranks: slabs (axes 1, 2, then axis 0), whatever the input grid
  EXPECT_EQ(restored.num_stages(), world().size() == 1 ? 1 : 2) << restored.describe();
  fft::Plan<Z, double, 3> c2r_slab(restored.output_distribution(), fft::Direction::backward, {9, 6, 6});
  EXPECT_EQ(c2r_slab.num_stages(), world().size() == 1 ? 1 : 2) << c2r_slab.describe();
  EXPECT_EQ(restored.output_distribution().dims(), a.distribution().dims());
  auto f = restored.make_output();
  restored.execute(f, a);
  restored.execute(f, a);  // repeated: the same result
  expect_close(host(f), want, 1e-12, "Plan restored");
  const auto t = transposed(a);
  expect_close(host(t), want, 1e-12, "Plan transposed (gathered in global order)");
  // the inverse planned on the transposed layout, back to the input's grid
  fft::Plan<Z, Z, 3> inverse(t.distribution(), fft::Direction::backward);
  Array<Z, 3> back(a.distribution());
  spmd::redistribute(back, inverse(t));
  expect_close(host(back), ha, 1e-12, "inverse of the transposed output");
  EXPECT_FALSE(restored.describe().empty());
  // real plans
  const auto r = make<double, 3>(shape);
  fft::Plan<double, Z, 3> r2c(r.distribution(), fft::Direction::forward);
  fft::Plan<Z, double, 3> c2r(r2c.output_distribution(), fft::Direction::backward, {9, 6, 4});
  expect_close(host(c2r(r2c(r))), host(r), 1e-12, "c2r(r2c(r)) plans");
  // the wrong arrays are refused alike on every rank
  SPMD_EXPECT_COLLECTIVE_ERROR(restored.execute(f, make<Z, 3>({9, 6, 5})), "the plan was made for");
}

void Shifts() {
  // numpy.fft.fftshift / ifftshift against the rolls written out, odd and even lengths
  const auto a = make<Z, 2>({7, 6}, 1);
  const Host ha = host(a);
  auto rolled = [&](index_t s0, index_t s1) {
    Host r;
    r.shape = ha.shape;
    r.v.assign(ha.v.size(), Ref(0));
    for (index_t i = 0; i < 7; ++i)
      for (index_t j = 0; j < 6; ++j)
        r.v[static_cast<std::size_t>(((i + s0 + 7) % 7) * 6 + (j + s1 + 6) % 6)] =
            ha.v[static_cast<std::size_t>(i * 6 + j)];
    return r;
  };
  expect_close(host(fft::fftshift(a)), rolled(3, 3), 0, "fftshift");
  expect_close(host(fft::ifftshift(a)), rolled(-3, -3), 0, "ifftshift");
  expect_close(host(fft::fftshift(a, {0})), rolled(3, 0), 0, "fftshift axes {0}");
  expect_close(host(fft::ifftshift(fft::fftshift(a))), ha, 0, "ifftshift(fftshift(a)) == a");
  const auto f = fft::fftfreq(7, 0.5);
  EXPECT_EQ(f, (std::vector<double>{0, 1 / 3.5, 2 / 3.5, 3 / 3.5, -3 / 3.5, -2 / 3.5, -1 / 3.5}));
  EXPECT_EQ(fft::rfftfreq(6), (std::vector<double>{0, 1 / 6., 2 / 6., 3 / 6.}));
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::fftshift(a, {2}), "out of bounds");
}

void Errors() {
  const auto a = make<Z, 2>({6, 4});
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::fftn(a, {}, {0, 0}), "is repeated");
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::fftn(a, {}, {2}), "out of bounds");
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::fftn(a, {4, 4}, {0}), "same length");
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::fftn(a, {0}, {1}), "invalid number of data points");
  const auto c = make<Z, 2>({6, 1});
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::irfftn(c), "the default 2 * (m - 1)");
  // a rank that alone passes other axes is caught too
  const int me = world().rank();
  SPMD_EXPECT_COLLECTIVE_ERROR(fft::fftn(a, {}, {me == world().size() - 1 ? 3 : 1}), "out of bounds");
}

}  // namespace

TEST(Fft, Stages) {
  Stages();
}
TEST(Fft, ComplexTwoD) {
  ComplexTwoD();
}
TEST(Fft, ComplexThreeD) {
  ComplexThreeD();
}
TEST(Fft, OneD) {
  OneD();
}
TEST(Fft, RealTransforms) {
  RealTransforms();
}
TEST(Fft, SinglePrecision) {
  SinglePrecision();
}
TEST(Fft, Plans) {
  Plans();
}
TEST(Fft, Shifts) {
  Shifts();
}
TEST(Fft, Errors) {
  Errors();
}
