// Reproducible random numbers (random.hpp): Philox4x32-10's published known-answer vectors (on
// the host and in a kernel), bit-identical arrays on every rank count, process grid and halo
// against a serial reference computed here from Random123 directly, the transforms against
// the math library, lazy draws inside expressions and reductions, slices, moments with bounds
// from the distributions' variances, and bad arguments as collective errors.
//
//   the 2-D arrays are 37 x 23: at 3 ranks the rows are cut 13 | 12 | 12, at 4 ranks the
//   automatic grid is 2 x 2 (19 | 18 rows, 12 | 11 columns); each array is also drawn on the
//   grids (p, 1) and (1, p) and with halos, and must be the same bits every time.
#include "spmd_test.hpp"

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <spmd/random.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::random::Generator;
using spmd::testing::expect_all;
using spmd::testing::world;

namespace {

/// Philox4x32-10 words of counter i of (seed, stream), from Random123 directly (the layout the
/// documentation promises: counter (i lo, i hi, stream lo, stream hi), key (seed lo, seed hi)).
std::array<std::uint32_t, 4> words(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  philox4x32_ctr_t c = {{std::uint32_t(i), std::uint32_t(i >> 32), std::uint32_t(stream), std::uint32_t(stream >> 32)}};
  philox4x32_key_t k = {{std::uint32_t(seed), std::uint32_t(seed >> 32)}};
  const auto r = philox4x32_R(10, c, k);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}
std::uint64_t bits64(std::uint32_t lo, std::uint32_t hi) {
  return (std::uint64_t(hi) << 32) | lo;
}
/// The documented uniform transform: low + (high - low) * (top 53 bits * 2^-53), one fma.
double ref_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t i, double low, double high) {
  const auto w = words(seed, stream, i);
  return std::fma(high - low, std::ldexp(double(bits64(w[0], w[1]) >> 11), -53), low);
}
/// Box-Muller with the math library's log and cos (the library evaluates its own polynomials:
/// equal to a few ulp, not bitwise).
double ref_normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const auto w = words(seed, stream, i);
  const double u1 = std::ldexp(double((bits64(w[0], w[1]) >> 11) + 1), -53);
  const double u2 = std::ldexp(double(bits64(w[2], w[3]) >> 11), -53);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}
std::int64_t ref_integer(std::uint64_t seed, std::uint64_t stream, std::uint64_t i, std::int64_t low,
                         std::int64_t high) {
  const auto w = words(seed, stream, i);
  return low + std::int64_t(bits64(w[0], w[1]) % std::uint64_t(high - low));
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

/// The distributions every array is drawn on: automatic grid, (p, 1), (1, p), and with halos.
std::vector<Distribution<2>> distributions(const Index<2>& shape) {
  const int p = world().size();
  return {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({p, 1})),
          Distribution<2>(world(), shape, spmd::grid({1, p}), spmd::halo(2)),
          Distribution<2>(world(), shape, spmd::halo(1), spmd::periodic({true, false}))};
}

}  // namespace

namespace random_tests {

// Kernel bodies live in free functions: CUDA allows no KOKKOS_LAMBDA in gtest's TestBody.
void KnownAnswerVectors() {
  // Random123's kat_vectors, "philox4x32 10" lines: counter (4 words), key (2 words), result.
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[3] = {{{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
                       {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                        {0xffffffff, 0xffffffff},
                        {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
                       {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                        {0xa4093822, 0x299f31d0},
                        {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
  // The generator's words, through the library's layout, on the host and in a kernel.
  Kokkos::View<std::uint32_t* [4]> out("spmd::test::random::kat", 3);
  Kokkos::View<spmd::impl::rng::Key*> keys("spmd::test::random::keys", 3);
  Kokkos::View<std::uint64_t*> ctrs("spmd::test::random::ctrs", 3);
  auto hk = Kokkos::create_mirror_view(keys);
  auto hc = Kokkos::create_mirror_view(ctrs);
  for (int t = 0; t < 3; ++t) {
    const Kat& k = kats[t];
    const Generator g{bits64(k.key[0], k.key[1]), bits64(k.ctr[2], k.ctr[3])};
    hk(t) = g.key();
    hc(t) = bits64(k.ctr[0], k.ctr[1]);
    const auto w = spmd::impl::rng::philox(g.key(), hc(t));
    for (int j = 0; j < 4; ++j) EXPECT_EQ(w.w[j], k.out[j]) << "host, vector " << t << ", word " << j;
  }
  Kokkos::deep_copy(keys, hk);
  Kokkos::deep_copy(ctrs, hc);
  Kokkos::parallel_for(
      "spmd::test::random::kat", Kokkos::RangePolicy<>(0, 3), KOKKOS_LAMBDA(const int t) {
        const auto w = spmd::impl::rng::philox(keys(t), ctrs(t));
        for (int j = 0; j < 4; ++j) out(t, j) = w.w[j];
      });
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(h(t, j), kats[t].out[j]) << "device, vector " << t << ", word " << j;
}

void UniformSameBitsEverywhere() {
  const Index<2> shape{37, 23};
  const Generator g{20261124, 7};
  for (const auto& d : distributions(shape)) {
    auto a = spmd::zeros<double>(d, spmd::label("u"));
    a.fill_with_halo(spmd::testing::sentinel);
    spmd::random::uniform(a, g, -2.0, 3.0);
    const auto got = spmd::allgather(a);
    bool ok = got.size() == std::size_t(37 * 23);
    for (std::size_t i = 0; ok && i < got.size(); ++i) ok = same_bits(got[i], ref_uniform(g.seed, 7, i, -2.0, 3.0));
    // the halo is not written (an assignment writes owned points only)
    const auto& v = a.local_with_halo();
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    const auto own = a.owned(), store = spmd::testing::storage_box(d);
    for (int i = 0; i < int(hv.extent(0)); ++i)
      for (int j = 0; j < int(hv.extent(1)); ++j) {
        const Index<2> gi{store.lo[0] + i, store.lo[1] + j};
        if (!own.contains(gi) && hv(i, j) != spmd::testing::sentinel) ok = false;
      }
    expect_all(ok, ("uniform bits on " + d.describe()).c_str());
  }
}

void NormalAndIntegers() {
  const Index<2> shape{37, 23};
  const Generator g{99, 1};
  for (const auto& d : distributions(shape)) {
    auto a = spmd::empty<double>(d, spmd::label("z"));
    spmd::random::normal(a, g, 1.5, 0.25);
    const auto got = spmd::allgather(a);
    auto b = spmd::empty<std::int64_t>(d, spmd::label("k"));
    spmd::random::integers(b, g.stream(2), std::int64_t(-3), std::int64_t(4));
    const auto gi = spmd::allgather(b);
    bool bits = true, close = true, ints = true;
    for (std::size_t i = 0; i < got.size(); ++i) {
      // bitwise: the library's element function evaluated alone on the host (on a GPU build this
      // is the CPU vs GPU identity); to the math library's Box-Muller within a few ulp
      bits = bits && same_bits(got[i], spmd::random::normal_at(g.key(), index_t(i), 1.5, 0.25));
      close = close && std::abs(got[i] - (1.5 + 0.25 * ref_normal(99, 1, i))) < 1e-14;
      ints = ints && gi[i] == ref_integer(99, 2, i, -3, 4);
    }
    expect_all(got.size() == std::size_t(37 * 23) && bits, ("normal bits on " + d.describe()).c_str());
    expect_all(close, ("normal against libm Box-Muller on " + d.describe()).c_str());
    expect_all(gi.size() == got.size() && ints, ("integers on " + d.describe()).c_str());
  }
  // 3-D and 1-D, float and int32: the row-major index of the whole shape
  auto c = spmd::empty<float>(world(), {5, 4, 7});
  spmd::random::uniform(c, Generator{5});
  auto ic = spmd::empty<int>(world(), {101});
  spmd::random::integers(ic, Generator{5, 3}, 10, 20);
  const auto hc = spmd::allgather(c);
  const auto hi = spmd::allgather(ic);
  bool ok = hc.size() == 140 && hi.size() == 101;
  for (std::size_t i = 0; ok && i < hc.size(); ++i) {
    const auto w = words(5, 0, i);
    ok = hc[i] == std::ldexp(float(w[0] >> 8), -24);
  }
  for (std::size_t i = 0; ok && i < hi.size(); ++i) ok = hi[i] == ref_integer(5, 3, i, 10, 20);
  expect_all(ok, "float uniform and int integers");
}

void LazyInExpressionsAndSlices() {
  const Index<2> shape{37, 23};
  const Generator g{3, 4};
  auto base = spmd::empty<double>(world(), {37, 23}, spmd::halo(1));
  base = 1.0;
  // u = 1 + 0.1 * normal: one fused kernel
  Array<double, 2> u(Distribution<2>(world(), shape, spmd::grid({1, 0})), spmd::label("u"));
  u = base + 0.1 * g.normal(shape);
  const auto hu = spmd::allgather(u);
  bool ok = hu.size() == std::size_t(37 * 23);
  for (std::size_t i = 0; ok && i < hu.size(); ++i) {
    const double want = 1.0 + 0.1 * spmd::random::normal_at(g.key(), index_t(i));
    ok = std::abs(hu[i] - want) <= 4e-16 * std::abs(want);
  }
  expect_all(ok, "u = base + 0.1 * g.normal(shape)");
  // a slice's own indices: rows 1..35, every other column
  auto v = spmd::zeros<double>(world(), {37, 23});
  auto inner = v(spmd::slice(1, -1), spmd::slice(0, 23, 2));
  spmd::random::uniform(inner, g);
  const auto hv = spmd::allgather(v);
  ok = hv.size() == std::size_t(37 * 23);
  for (index_t i = 0; ok && i < 37; ++i)
    for (index_t j = 0; j < 23; ++j) {
      const bool in = i >= 1 && i < 36 && j % 2 == 0;
      const double want = in ? ref_uniform(3, 4, std::uint64_t((i - 1) * 12 + j / 2), 0.0, 1.0) : 0.0;
      ok = ok && same_bits(hv[std::size_t(i * 23 + j)], want);
    }
  expect_all(ok, "uniform into a strided slice");
  // reduced without a temporary: sum(base * uniform) and the mean of integers
  const double s = spmd::sum(base * g.uniform(shape));
  double want = 0;
  for (std::uint64_t i = 0; i < 37 * 23; ++i) want += ref_uniform(3, 4, i, 0.0, 1.0);
  EXPECT_NEAR(s, want, 1e-12 * want);
}

void Moments() {
  // n draws; the sample mean is within 5 standard errors of the mean (sigma / sqrt(n)) and the
  // sample variance within 5 of its own (sqrt((mu4 - sigma^4) / n)): each check fails by chance
  // with probability below 6e-7 for these fixed seeds.
  const index_t n = 1 << 16;
  auto x = spmd::empty<double>(world(), {n});
  const double dn = double(n);
  auto check = [&](const char* what, double mean, double var, double mu4) {
    const double m = spmd::mean(x);
    const double v = spmd::sum((x - m) * (x - m)) / (dn - 1);
    EXPECT_LT(std::abs(m - mean), 5 * std::sqrt(var / dn)) << what << " mean " << m;
    EXPECT_LT(std::abs(v - var), 5 * std::sqrt((mu4 - var * var) / dn)) << what << " variance " << v;
  };
  for (std::uint64_t seed : {1ull, 2ull, 12345ull}) {
    spmd::random::uniform(x, Generator{seed});
    check("uniform [0, 1)", 0.5, 1.0 / 12, 1.0 / 80);
    EXPECT_GE(spmd::min(x), 0.0);
    EXPECT_LT(spmd::max(x), 1.0);
    spmd::random::normal(x, Generator{seed, 1});
    check("normal(0, 1)", 0.0, 1.0, 3.0);
    x = spmd::astype<double>(Generator{seed, 2}.integers(Index<1>{n}, index_t(0), index_t(10)));
    // discrete uniform on 0..k-1, k = 10: variance (k^2 - 1) / 12 = 8.25, fourth central moment
    // (k^2 - 1)(3 k^2 - 7) / 240
    check("integers [0, 10)", 4.5, 8.25, (100.0 - 1) * (3 * 100.0 - 7) / 240);
    EXPECT_EQ(spmd::min(x), 0.0);
    EXPECT_EQ(spmd::max(x), 9.0);
  }
}

void BadArguments() {
  auto k = spmd::zeros<int>(world(), {10});
  auto z = spmd::zeros<double>(world(), {10});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::random::integers(k, Generator{1}, 5, 5), "low < high");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::random::normal(z, Generator{1}, 0.0, -1.0), "stddev must be >= 0");
  Array<double, 1> other(Distribution<1>(world(), {11}));
  SPMD_EXPECT_COLLECTIVE_ERROR(other = Generator{1}.uniform(Index<1>{10}),
                               "could not broadcast the expression of shape (10,) into destination");
  SPMD_EXPECT_COLLECTIVE_ERROR(z = z + Generator{1}.uniform(Index<1>{11}),
                               "operands could not be broadcast together with shapes (10,) (11,)");
}

}  // namespace random_tests

TEST(Random, KnownAnswerVectors) {
  random_tests::KnownAnswerVectors();
}
TEST(Random, UniformSameBitsEverywhere) {
  random_tests::UniformSameBitsEverywhere();
}
TEST(Random, NormalAndIntegers) {
  random_tests::NormalAndIntegers();
}
TEST(Random, LazyInExpressionsAndSlices) {
  random_tests::LazyInExpressionsAndSlices();
}
TEST(Random, Moments) {
  random_tests::Moments();
}
TEST(Random, BadArguments) {
  random_tests::BadArguments();
}
