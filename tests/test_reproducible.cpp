// spmd::reproducible: sum, dot, vdot, norm2, mean (real and complex) and CG's reproducible mode give
// the bits of the exact result rounded once, at every rank count (ctest runs 1-4), process grid, thread count (ctest
// also runs 1 and 2 ranks with OMP_NUM_THREADS=2 and 3) and work-item form (the GPU's one point
// per item, through testing::knobs().point_items).
//
// The reference is computed here, serially, by a big-integer summation written independently of
// the library's superaccumulator: every value (or exact product, from the 53-bit mantissas in
// 128-bit arithmetic) is added at its bit position into 64-bit limbs with immediate carries, in
// units of 2^-2200, positive and negative terms apart; the difference is rounded to nearest
// (ties to even) by shifting out its low bits. Data: random mantissas times 2^-300..2^300 with
// mixed signs; sets whose exact sum is known by construction (x and -x for every x, plus a small
// remainder) for heavy cancellation; rounding ties; overflow of intermediate sums; infinities
// and NaNs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "spmd_test.hpp"

using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::world;

namespace {

// ---- the independent serial reference -------------------------------------------------------

constexpr int kUnit = 2200;  // the reference's unit is 2^-kUnit
constexpr int kLimbs = 64;   // 4096 bits: up to 2^(4096 - 2200)

struct BigSum {
  std::vector<std::uint64_t> pos = std::vector<std::uint64_t>(kLimbs, 0);
  std::vector<std::uint64_t> neg = std::vector<std::uint64_t>(kLimbs, 0);
  bool nan = false, pinf = false, ninf = false;

  // mag * 2^exp2 (mag < 2^128), with its sign.
  void add_scaled(unsigned __int128 mag, int exp2, bool negative) {
    if (mag == 0) return;
    std::vector<std::uint64_t>& acc = negative ? neg : pos;
    const int shift = exp2 + kUnit;
    ASSERT_GE(shift, 0);
    int limb = shift / 64, bit = shift % 64;
    // mag << bit spans up to three limbs
    const std::uint64_t lo = static_cast<std::uint64_t>(mag), hi = static_cast<std::uint64_t>(mag >> 64);
    std::uint64_t parts[3];
    parts[0] = lo << bit;
    parts[1] = bit ? (hi << bit) | (lo >> (64 - bit)) : hi;
    parts[2] = bit ? hi >> (64 - bit) : 0;
    unsigned __int128 carry = 0;
    for (int j = limb; j < kLimbs; ++j) {
      const int p = j - limb;
      const unsigned __int128 v = static_cast<unsigned __int128>(acc[j]) + (p < 3 ? parts[p] : 0) + carry;
      acc[j] = static_cast<std::uint64_t>(v);
      carry = v >> 64;
      if (p >= 2 && carry == 0) break;
    }
  }
  static void decompose(double x, std::uint64_t& mant, int& exp2) {
    int e = 0;
    const double f = std::frexp(std::fabs(x), &e);  // |x| = f 2^e, f in [0.5, 1)
    mant = static_cast<std::uint64_t>(std::ldexp(f, 53));
    exp2 = e - 53;
  }
  void add(double x) {
    if (std::isnan(x)) {
      nan = true;
      return;
    }
    if (std::isinf(x)) {
      (x > 0 ? pinf : ninf) = true;
      return;
    }
    if (x == 0) return;
    std::uint64_t m;
    int e;
    decompose(x, m, e);
    add_scaled(m, e, x < 0);
  }
  void add_product(double a, double b) {
    const double p = a * b;
    if (!std::isfinite(p)) {  // as documented: a NaN or overflowing product adds its value
      add(p);
      return;
    }
    if (a == 0 || b == 0) return;
    std::uint64_t ma, mb;
    int ea, eb;
    decompose(a, ma, ea);
    decompose(b, mb, eb);
    add_scaled(static_cast<unsigned __int128>(ma) * mb, ea + eb, (a < 0) != (b < 0));
  }
  // The exact sum rounded to nearest, ties to even.
  double round() const {
    if (nan || (pinf && ninf)) return std::numeric_limits<double>::quiet_NaN();
    if (pinf) return std::numeric_limits<double>::infinity();
    if (ninf) return -std::numeric_limits<double>::infinity();
    bool negative = false;
    std::vector<std::uint64_t> a = pos, b = neg;
    for (int j = kLimbs - 1; j >= 0; --j)
      if (a[j] != b[j]) {
        negative = a[j] < b[j];
        break;
      }
    if (negative) std::swap(a, b);
    std::vector<std::uint64_t> d(kLimbs);  // a - b >= 0
    std::uint64_t borrow = 0;
    for (int j = 0; j < kLimbs; ++j) {
      const unsigned __int128 sub = static_cast<unsigned __int128>(b[j]) + borrow;
      d[j] = a[j] - static_cast<std::uint64_t>(sub);
      borrow = static_cast<unsigned __int128>(a[j]) < sub ? 1 : 0;
    }
    int top = kLimbs - 1;
    while (top >= 0 && d[top] == 0) --top;
    if (top < 0) return 0.0;
    const int len = top * 64 + (64 - __builtin_clzll(d[top]));  // bit length
    auto bit = [&](int pos) -> int { return pos < 0 ? 0 : static_cast<int>((d[pos / 64] >> (pos % 64)) & 1u); };
    // Keep 53 significant bits, none below 2^-1074.
    const int shift = std::max(len - 53, kUnit - 1074);
    if (shift <= 0) {
      double v = 0;
      for (int pos = len - 1; pos >= 0; --pos) v = 2 * v + bit(pos);
      v = std::ldexp(v, -kUnit);
      return negative ? -v : v;
    }
    std::uint64_t q = 0;
    for (int pos = len - 1; pos >= shift; --pos) q = (q << 1) | static_cast<std::uint64_t>(bit(pos));
    const int half = bit(shift - 1);
    bool rest = false;
    for (int pos = shift - 2; pos >= 0 && !rest; --pos) rest = bit(pos) != 0;
    if (half && (rest || (q & 1u))) ++q;
    const double v = std::ldexp(static_cast<double>(q), shift - kUnit);
    return negative ? -v : v;
  }
};

double ref_sum(const std::vector<double>& x) {
  BigSum s;
  for (double v : x) s.add(v);
  return s.round();
}
double ref_dot(const std::vector<double>& x, const std::vector<double>& y) {
  BigSum s;
  for (std::size_t i = 0; i < x.size(); ++i) s.add_product(x[i], y[i]);
  return s.round();
}

std::uint64_t bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
// Bit identity, with NaN as any NaN (the library returns a quiet NaN of its own).
::testing::AssertionResult same_bits(double got, double want) {
  if ((std::isnan(got) && std::isnan(want)) || bits(got) == bits(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hexfloat << "got " << got << ", want " << want;
}

// Random mantissas times 2^lo..2^hi, mixed signs; the same on every rank (one seed).
std::vector<double> wide(std::size_t n, unsigned seed, int lo = -300, int hi = 300) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::uniform_int_distribution<int> e(lo, hi);
  std::vector<double> x(n);
  for (auto& v : x) v = std::ldexp(m(g), e(g)) * (g() & 1 ? -1.0 : 1.0);
  return x;
}

template <int N>
spmd::Array<double, N> from_host(const spmd::Comm& comm, const Index<N>& shape, const std::vector<double>& v,
                                 std::initializer_list<int> grid = {}) {
  std::vector<int> g(grid);
  int h = 1;  // a halo of garbage where every block can have one
  for (int k = 0; k < N; ++k)
    if (shape[k] < comm.size()) h = 0;
  auto d = g.empty() ? Distribution<N>(comm, shape, spmd::halo(h))
                     : Distribution<N>(comm, shape, spmd::halo(h), spmd::grid(grid));
  auto a = spmd::zeros<double>(d, spmd::label("spmd::test::reproducible"));
  a.fill_with_halo(1e300);  // halo garbage must never reach a reduction
  spmd::scatter(a, comm.rank() == 0 ? v : std::vector<double>{});
  return a;
}

// Every reproducible reduction of 1-D data against the reference, bit for bit.
void check_1d(const std::vector<double>& x, const std::vector<double>& y, const char* what) {
  const Index<1> shape{static_cast<index_t>(x.size())};
  auto a = from_host<1>(world(), shape, x);
  auto b = from_host<1>(world(), shape, y);
  const double s = spmd::sum(spmd::reproducible, a);
  const double d = spmd::dot(spmd::reproducible, a, b);
  const double n2 = spmd::norm2(spmd::reproducible, Kokkos::DefaultExecutionSpace(), b);
  const double mu = spmd::mean(spmd::reproducible, a);
  EXPECT_TRUE(same_bits(s, ref_sum(x))) << what << ": sum";
  EXPECT_TRUE(same_bits(d, ref_dot(x, y))) << what << ": dot";
  EXPECT_TRUE(same_bits(n2, std::sqrt(ref_dot(y, y)))) << what << ": norm2";
  EXPECT_TRUE(same_bits(mu, ref_sum(x) / static_cast<double>(x.size()))) << what << ": mean";
  // every rank has the same bits
  const std::uint64_t mine = bits(s) ^ (bits(d) * 3) ^ (bits(n2) * 5);
  EXPECT_EQ(world().allreduce(mine, spmd::Op::min), world().allreduce(mine, spmd::Op::max)) << what;
}

}  // namespace

TEST(Reproducible, WideExponentsMatchTheExactSum) {
  check_1d(wide(10007, 1), wide(10007, 2), "wide 10007");
  // every term apart is not representable in the result: sums of values 2^-300..2^300
  check_1d(wide(4099, 3, -1000, 1000), wide(4099, 4, -20, 20), "wider");
}

TEST(Reproducible, HeavyCancellationGivesTheKnownSum) {
  // x_i and -x_i for 3000 random x_i (2^-300..2^300), shuffled, plus 3 * 2^-1000 and 1:
  // the exact sum is 1 + 3 * 2^-1000, which rounds to 1; without the 1 it is 3 * 2^-1000.
  auto half = wide(3000, 5);
  std::vector<double> x = half;
  for (double v : half) x.push_back(-v);
  x.push_back(3 * std::ldexp(1.0, -1000));
  std::shuffle(x.begin(), x.end(), std::mt19937_64(6));
  const Index<1> shape{static_cast<index_t>(x.size())};
  auto a = from_host<1>(world(), shape, x);
  EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, a), 3 * std::ldexp(1.0, -1000)));
  x.push_back(1.0);
  auto b = from_host<1>(world(), Index<1>{shape[0] + 1}, x);
  EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, b), 1.0));
  // dot: products with a vector of ones and of twos
  std::vector<double> two(x.size(), 2.0);
  auto t = from_host<1>(world(), Index<1>{shape[0] + 1}, two);
  EXPECT_TRUE(same_bits(spmd::dot(spmd::reproducible, b, t), 2.0));
}

TEST(Reproducible, RoundingTiesOverflowAndSpecialValues) {
  const double tiny = std::numeric_limits<double>::denorm_min(), big = std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::vector<double> x;
    double want;
  };
  const std::vector<Case> cases = {
      {{1.0, std::ldexp(1.0, -53)}, 1.0},                                                // a tie: to even
      {{1.0, std::ldexp(1.0, -53), tiny}, std::nextafter(1.0, 2.0)},                     // just above the tie
      {{1.0 + std::ldexp(1.0, -52), std::ldexp(1.0, -53)}, 1.0 + std::ldexp(1.0, -51)},  // tie to even, up
      {{big, big, -big}, big},                                                           // intermediate overflow
      {{big, big}, inf},                                                                 // the sum overflows
      {{-big, -big}, -inf},
      {{tiny, tiny, tiny}, 3 * tiny},  // subnormals
      {{1.0, -1.0}, 0.0},
      {{1.0, inf}, inf},
      {{-inf, 1.0}, -inf},
      {{inf, -inf}, nan},
      {{nan, 1.0}, nan},
      {{}, 0.0},
  };
  int k = 0;
  for (const auto& c : cases) {
    EXPECT_TRUE(same_bits(ref_sum(c.x), c.want)) << "reference, case " << k;  // the reference itself
    auto a = from_host<1>(world(), Index<1>{static_cast<index_t>(c.x.size())}, c.x);
    EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, a), c.want)) << "case " << k;
    ++k;
  }
  // dot: exact products (a * b rounds, a * b - fl(a * b) is added too); an overflowing product is inf
  const double a1 = 1.0 + std::ldexp(1.0, -30), b1 = 1.0 - std::ldexp(1.0, -30);  // a1 b1 = 1 - 2^-60
  auto a = from_host<1>(world(), Index<1>{2}, {a1, -1.0});
  auto b = from_host<1>(world(), Index<1>{2}, {b1, 1.0});
  EXPECT_TRUE(same_bits(spmd::dot(spmd::reproducible, a, b), -std::ldexp(1.0, -60)));
  auto c = from_host<1>(world(), Index<1>{2}, {big, 1.0});
  EXPECT_TRUE(same_bits(spmd::dot(spmd::reproducible, c, c), inf));
  // mean of nothing is an error on every rank
  auto e = from_host<1>(world(), Index<1>{0}, {});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::mean(spmd::reproducible, e), "zero-size");
}

// 2-D: every process grid, halo, views and point items give the reference bits.
TEST(Reproducible, EveryProcessGridAndWorkItemForm) {
  const Index<2> shape{37, 41};
  const auto x = wide(37 * 41, 7), y = wide(37 * 41, 8);
  const int p = world().size();
  const double s = ref_sum(x), d = ref_dot(x, y);
  // the strided view x[1:-1:2, ::3] and its reference
  std::vector<double> xv, yv;
  for (int i = 1; i < 36; i += 2)
    for (int j = 0; j < 41; j += 3) {
      xv.push_back(x[static_cast<std::size_t>(i * 41 + j)]);
      yv.push_back(y[static_cast<std::size_t>(i * 41 + j)]);
    }
  for (int form = 0; form < 3; ++form) {  // rows; points; columns (the GPU's forms)
    spmd::testing::KnobsGuard guard;
    spmd::testing::knobs().point_items = form >= 1;
    spmd::testing::knobs().multi_points = form == 2 ? 1 : 0;
    spmd::testing::knobs().column_min = form == 2 ? 1 : 0;
    for (int g = 0; g < 3; ++g) {
      auto a = g == 0   ? from_host<2>(world(), shape, x, {p, 1})
               : g == 1 ? from_host<2>(world(), shape, x, {1, p})
                        : from_host<2>(world(), shape, x);
      auto b = from_host<2>(world(), shape, y, {p, 1});  // another distribution: moved for dot
      EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, a), s)) << "grid " << g << " form " << form;
      EXPECT_TRUE(same_bits(spmd::dot(spmd::reproducible, a, b), d)) << "grid " << g << " form " << form;
      EXPECT_TRUE(same_bits(spmd::norm2(spmd::reproducible, a), std::sqrt(ref_dot(x, x))));
      using spmd::slice;
      auto va = a(slice(1, -1, 2), slice(0, 41, 3));
      auto vb = b(slice(1, -1, 2), slice(0, 41, 3));
      EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, va), ref_sum(xv))) << "view, grid " << g;
      EXPECT_TRUE(same_bits(spmd::dot(spmd::reproducible, va, vb), ref_dot(xv, yv))) << "view, grid " << g;
      // an expression: its elements are computed per element (here exactly: a - a = 0, 2 a)
      EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, 2.0 * a + (a - a)), 2 * s));
    }
  }
}

// Complex operands: each part of sum / mean is the exact sum of the elements' parts rounded
// once; dot's real part the exact sum of the exact products re(a) re(b) and -im(a) im(b), its
// imaginary part of re(a) im(b) and im(a) re(b) (vdot with a conjugated; a real operand with a
// complex one); norm2 sqrt of the exact sum of re^2 + im^2; on a 2-D array of either process
// grid (halo garbage set), a strided view, the GPU's work-item form, the same bits on every rank.
TEST(Reproducible, ComplexPartsAreExactSums) {
  using Z = Kokkos::complex<double>;
  using spmd::slice;
  const Index<2> shape{23, 17};
  const std::size_t n = 23 * 17;
  const auto ar = wide(n, 21), ai = wide(n, 22), br = wide(n, 23, -40, 40), bi = wide(n, 24, -40, 40);
  const auto exact = [](std::initializer_list<std::pair<std::vector<double>, std::vector<double>>> terms) {
    BigSum s;
    for (const auto& [x, y] : terms)
      for (std::size_t i = 0; i < x.size(); ++i) s.add_product(x[i], y[i]);
    return s.round();
  };
  const auto neg = [](std::vector<double> v) {
    for (auto& x : v) x = -x;
    return v;
  };
  const std::vector<double> one(n, 1.0);
  const int p = world().size();
  for (int form = 0; form < 2; ++form) {  // rows; one point per work item (the GPU's form)
    spmd::testing::KnobsGuard guard;
    spmd::testing::knobs().point_items = form == 1;
    for (int g = 0; g < 2; ++g) {
      const auto on_grid = [&](const std::vector<double>& v) {
        return g == 0 ? from_host<2>(world(), shape, v, {p, 1}) : from_host<2>(world(), shape, v, {1, p});
      };
      const auto re_a = on_grid(ar), im_a = on_grid(ai);
      const auto re_b = from_host<2>(world(), shape, br), im_b = from_host<2>(world(), shape, bi);
      auto a = spmd::zeros<Z>(re_a.distribution()), b = spmd::zeros<Z>(re_b.distribution());
      a.fill_with_halo(Z(1e300, -1e300));  // halo garbage must never reach a reduction
      a = re_a + im_a * Z(0, 1);           // exact: (0 + 1i) * x is (0, x)
      b = re_b + im_b * Z(0, 1);
      const std::string what = "grid " + std::to_string(g) + " form " + std::to_string(form);
      const Z s = spmd::sum(spmd::reproducible, a);
      EXPECT_TRUE(same_bits(s.real(), exact({{ar, one}}))) << what << ": sum, real part";
      EXPECT_TRUE(same_bits(s.imag(), exact({{ai, one}}))) << what << ": sum, imaginary part";
      const Z d = spmd::dot(spmd::reproducible, a, b);
      EXPECT_TRUE(same_bits(d.real(), exact({{ar, br}, {neg(ai), bi}}))) << what << ": dot, real part";
      EXPECT_TRUE(same_bits(d.imag(), exact({{ar, bi}, {ai, br}}))) << what << ": dot, imaginary part";
      const Z v = spmd::vdot(spmd::reproducible, a, b);
      EXPECT_TRUE(same_bits(v.real(), exact({{ar, br}, {ai, bi}}))) << what << ": vdot, real part";
      EXPECT_TRUE(same_bits(v.imag(), exact({{ar, bi}, {neg(ai), br}}))) << what << ": vdot, imaginary part";
      const Z m = spmd::dot(spmd::reproducible, re_a, b);  // real with complex
      EXPECT_TRUE(same_bits(m.real(), exact({{ar, br}}))) << what << ": dot(real, complex)";
      EXPECT_TRUE(same_bits(m.imag(), exact({{ar, bi}}))) << what << ": dot(real, complex)";
      const double n2 = spmd::norm2(spmd::reproducible, a);
      EXPECT_TRUE(same_bits(n2, std::sqrt(exact({{ar, ar}, {ai, ai}})))) << what << ": norm2";
      const Z mu = spmd::mean(spmd::reproducible, a);
      EXPECT_TRUE(same_bits(mu.real(), exact({{ar, one}}) / static_cast<double>(n))) << what << ": mean";
      EXPECT_TRUE(same_bits(mu.imag(), exact({{ai, one}}) / static_cast<double>(n))) << what << ": mean";
      // a strided view: a[1::2, ::3]
      std::vector<double> vr, vi;
      for (int i = 1; i < 23; i += 2)
        for (int j = 0; j < 17; j += 3) {
          vr.push_back(ar[static_cast<std::size_t>(i * 17 + j)]);
          vi.push_back(ai[static_cast<std::size_t>(i * 17 + j)]);
        }
      const Z sv = spmd::sum(spmd::reproducible, a(slice(1, 23, 2), slice(0, 17, 3)));
      EXPECT_TRUE(same_bits(sv.real(), ref_sum(vr))) << what << ": sum of a view";
      EXPECT_TRUE(same_bits(sv.imag(), ref_sum(vi))) << what << ": sum of a view";
      const std::uint64_t mine = bits(s.real()) ^ (bits(d.imag()) * 3) ^ (bits(v.real()) * 5) ^ (bits(n2) * 7);
      EXPECT_EQ(world().allreduce(mine, spmd::Op::min), world().allreduce(mine, spmd::Op::max)) << what;
    }
  }
  // complex<float>: the parts widened to double exactly, summed exactly
  std::vector<double> fr = wide(101, 25, -100, 100), fi(101);
  for (std::size_t i = 0; i < fr.size(); ++i) {
    fr[i] = static_cast<double>(static_cast<float>(fr[i]));
    fi[i] = static_cast<double>(static_cast<float>(std::ldexp(1.0 + static_cast<double>(i), -20)));
  }
  const auto rf = from_host<1>(world(), Index<1>{101}, fr), imf = from_host<1>(world(), Index<1>{101}, fi);
  auto af = spmd::zeros<Kokkos::complex<float>>(rf.distribution());
  af = rf + imf * Kokkos::complex<float>(0, 1);
  const Z sf = spmd::sum(spmd::reproducible, af);
  EXPECT_TRUE(same_bits(sf.real(), ref_sum(fr)));
  EXPECT_TRUE(same_bits(sf.imag(), ref_sum(fi)));
}

// The CPU's large accumulator (one chunk per sign and exponent) wraps a chunk past 2^64 after
// at least 2^11 values of one sign and exponent, and marks NaNs and infinities: many values of
// few exponents, near the largest mantissa, subnormals, and 4096 infinities (whose chunk wraps
// to exactly zero), against the reference (and the GPU's item form, which has no large chunks).
TEST(Reproducible, ManyValuesOfOneExponentCarry) {
  const double top = 2.0 - std::ldexp(1.0, -52);  // the largest mantissa
  std::vector<double> x, y;
  for (int k = 0; k < 12000; ++k) {
    x.push_back(k % 3 == 0 ? -top * std::ldexp(1.0, 700) : top);
    y.push_back(k % 2 == 0 ? 3 * std::ldexp(1.0, -400) : -top * 0.75);
  }
  x.push_back(std::ldexp(1.0, -1074));
  const double tiny = std::numeric_limits<double>::min() * (1 - std::ldexp(1.0, -40));  // subnormal
  for (int k = 0; k < 5000; ++k) x.push_back(tiny);
  y.resize(x.size(), std::ldexp(1.0, 500));  // products of the subnormals stay normal
  for (int form = 0; form < 2; ++form) {
    spmd::testing::KnobsGuard guard;
    spmd::testing::knobs().point_items = form == 1;
    check_1d(x, y, form == 0 ? "one exponent" : "one exponent, point items");
  }
  // products of one exponent: p and e each land in one chunk per sign
  const std::vector<double> a(9000, 1.0 + std::ldexp(1.0, -30)), b(9000, -(1.0 - std::ldexp(1.0, -29)));
  check_1d(a, b, "one product");
  // 4096 infinities in one row: their marker chunk wraps to exactly 2^64
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> infs(4096, inf);
  auto i1 = from_host<1>(world(), Index<1>{4096}, infs);
  EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, i1), inf));
  infs.push_back(-inf);
  auto i2 = from_host<1>(world(), Index<1>{4097}, infs);
  EXPECT_TRUE(std::isnan(spmd::sum(spmd::reproducible, i2)));
}

// The same on every rank alone (a communicator of one rank each) as on all of them.
TEST(Reproducible, OneRankAndAllRanksAgree) {
  const auto x = wide(5000, 9);
  const spmd::Comm self = world().split(world().rank(), 0);
  auto all = from_host<1>(world(), Index<1>{5000}, x);
  auto one = from_host<1>(self, Index<1>{5000}, x);
  EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, all), spmd::sum(spmd::reproducible, one)));
  EXPECT_TRUE(same_bits(spmd::dot(spmd::reproducible, all, all), spmd::dot(spmd::reproducible, one, one)));
  // ranks owning nothing: 2 elements on up to 4 ranks
  auto two = from_host<1>(world(), Index<1>{2}, {0.1, 0.2});
  EXPECT_TRUE(same_bits(spmd::sum(spmd::reproducible, two), 0.1 + 0.2));
}

// CG with reproducible sums: iteration count, residual and x bitwise equal on all ranks and on
// one rank, for 2-D grids of either orientation, with and without Jacobi; pipelined CG too.
namespace {
struct CgRun {
  int iterations;
  double residual;
  std::vector<double> x;
};
CgRun run_cg(const spmd::Comm& comm, std::initializer_list<int> grid, bool pipelined, spmd::solvers::Precond precond) {
  const Index<2> shape{23, 19};
  std::vector<int> g(grid);
  auto A = g.empty() ? spmd::solvers::Laplacian<double, 2>(comm, shape)
                     : spmd::solvers::Laplacian<double, 2>(comm, shape, spmd::grid(grid));
  auto b = A.make_vector("b"), x = A.make_vector("x");
  spmd::scatter(b, comm.rank() == 0 ? wide(23 * 19, 10, -3, 3) : std::vector<double>{});
  spmd::solvers::SolverOptions o;
  o.reproducible = true;
  o.rtol = 1e-10;
  o.precond = precond;
  o.replace_every = 7;
  const auto r = pipelined ? spmd::solvers::pipelined_cg(A, b, x, o) : spmd::solvers::cg(A, b, x, o);
  EXPECT_TRUE(r.converged) << spmd::solvers::to_string(r.reason);
  return {r.iterations, r.residual, spmd::allgather(x)};
}
}  // namespace

TEST(Reproducible, CgIsBitwiseTheSameAtAnyRankCount) {
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                            Kokkos::DefaultExecutionSpace::memory_space>::accessible) {
    // On a GPU, CG's three exact sums exceed what one Kokkos reduction may keep per block: the
    // solver says so on every rank instead of failing inside Kokkos (impl/krylov.hpp).
    auto A = spmd::solvers::Laplacian<double, 2>(world(), Index<2>{23, 19});
    auto b = A.make_vector("b"), x = A.make_vector("x");
    b = 1.0;
    spmd::solvers::SolverOptions o;
    o.reproducible = true;
    try {
      spmd::solvers::cg(A, b, x, o);
      ADD_FAILURE() << "reproducible CG on a GPU ran: remove this branch and compare bits";
    } catch (const spmd::Error& e) {
      EXPECT_TRUE(e.collective());
      EXPECT_NE(std::string(e.what()).find("reproducible on a GPU is limited to two sums"), std::string::npos)
          << e.what();
    }
    return;
  }
  const spmd::Comm self = world().split(world().rank(), 0);
  const int p = world().size();
  for (bool pipelined : {false, true})
    for (auto pc : {spmd::solvers::Precond::none, spmd::solvers::Precond::jacobi}) {
      const CgRun one = run_cg(self, {}, pipelined, pc);
      for (int g = 0; g < 2; ++g) {
        const CgRun all = g == 0 ? run_cg(world(), {p, 1}, pipelined, pc) : run_cg(world(), {1, p}, pipelined, pc);
        EXPECT_EQ(all.iterations, one.iterations) << "pipelined " << pipelined << " grid " << g;
        EXPECT_TRUE(same_bits(all.residual, one.residual));
        bool same = all.x.size() == one.x.size();
        for (std::size_t i = 0; same && i < all.x.size(); ++i) same = bits(all.x[i]) == bits(one.x[i]);
        EXPECT_TRUE(same) << "x differs, pipelined " << pipelined << " grid " << g;
      }
    }
}
