#pragma once
// Exact summation of doubles: fixed-point superaccumulators (after R. M. Neal, "Fast exact
// summation using small and large superaccumulators", arXiv:1505.05571, 2015; written anew here),
// the reduction rules that fold them on the kernel layer, one exact MPI combine, and one correctly
// rounded conversion to double. spmd::reproducible (reproducible.hpp) is built on it.
//
// Small accumulator (ExactSum; every space, the only one on devices). A finite double is
// m * 2^(e - 1075) with an integer mantissa m < 2^53 and a biased exponent e in 1..2046
// (subnormals: e = 1 without the hidden bit). The accumulator holds the sum as
// sum_j c[j] * 2^(32 j - 1075), j = 0..66, in int64 chunks ("digits" of 32 bits with 31 bits of
// headroom each for deferred carries). A value enters as two integers: its mantissa shifted by
// e mod 32 is split into its low 32 bits (added to chunk e / 32) and the rest (at most 53 bits,
// added to chunk e / 32 + 1), with the value's sign. Every addition is exact integer arithmetic,
// so the result does not depend on the order of the additions: not on the number of ranks,
// threads or work items, nor on the device. After at most `exact_budget` deposits a carry
// propagation brings chunks 0..65 back into [0, 2^32) (chunk 66 keeps the sign); two
// accumulators are joined chunk by chunk with the same bound. 67 chunks cover 2^-1075 .. 2^1100:
// every double and the sum of up to 2^76 doubles of the largest magnitude.
//
// Large accumulator (ExactHostSum; host execution spaces). Neal's large superaccumulator in
// front of a small one: 4096 uint64 chunks, one per sign and biased exponent (the top 12 bits of
// a double), so a value is one unsigned addition of its 53-bit mantissa (hidden bit included) to
// the chunk its top bits name: no shift, no sign handling, no budget. A chunk that wraps past
// 2^64 (at the earliest after 2^11 additions) moves that carry, 2^64 at the chunk's weight, into
// the small accumulator (one addition); when the kernel is done every chunk is added to the small
// accumulator. The exponent-0x7ff chunks (infinities, NaNs) only collect a marker: a row that
// touched them is scanned again and its infinities and NaNs counted as the small accumulator
// counts them. The same exact integers as the small accumulator alone, so the same result, at
// about one addition and a few bit operations per value instead of two shifted additions.
//
// Infinities and NaNs are counted apart (the chunks hold only finite values): the rounded result
// is NaN when a NaN was added or both infinities were, else the infinity that was added, else the
// correctly rounded (round to nearest, ties to even) finite sum, which may overflow to an
// infinity. An exact zero sum is +0.
//
// Products. exact_add_product adds a * b exactly as p + e with p = fl(a * b) and e = fma(a, b, -p)
// (TwoProduct: exact unless the product underflows, |a b| < 2^-969, where e may lose low bits;
// the result is then still reproducible, p and e being computed the same way everywhere). A
// product that overflows adds its infinity. On x86-64 hosts compiled without FMA (the portable
// default: no -mfma), std::fma is a library call; the host product loop has a clone compiled for
// FMA, chosen at run time when the CPU has it (SPMD_IMPL_EXACT_FMA_CLONE): the same single
// rounding (the instruction glibc's fma itself uses on such CPUs).
//
// Everything but the final rounding, the MPI combine and the large accumulator's row loops
// compiles for devices (no heap, no host-only calls in KOKKOS_INLINE_FUNCTIONs).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "spmd/comm.hpp"

namespace spmd::impl {

/// Chunks of the accumulator (see the file comment).
constexpr int exact_chunks = 67;
/// Deposits that may be made between two carry propagations: each adds less than 2^53 in
/// magnitude to a chunk that starts below 2^32, so 1023 of them stay below 2^63.
constexpr int exact_budget = 1023;

/// The accumulator: an aggregate of fixed size (device-friendly; a Kokkos reduction value).
struct ExactSum {
  std::int64_t c[exact_chunks];
  std::int64_t nan;     // NaNs added
  std::int64_t pinf;    // +inf added
  std::int64_t ninf;    // -inf added
  std::int64_t budget;  // deposits left before a carry propagation is due
};

/// The bits of a double (device and host). Local.
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t exact_bits(const double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
/// a * b + c with one rounding (device and host). Local.
KOKKOS_FORCEINLINE_FUNCTION double exact_fma(const double a, const double b, const double c) {
#if defined(__CUDA_ARCH__)
  return ::fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// The empty sum. Local.
template <class S>
KOKKOS_INLINE_FUNCTION void exact_init(S& s) {
  for (int j = 0; j < exact_chunks; ++j) s.c[j] = 0;
  s.nan = 0;
  s.pinf = 0;
  s.ninf = 0;
  s.budget = exact_budget;
}

/// Carry propagation: chunks 0..65 into [0, 2^32), the carries moved up (exact; the value is
/// unchanged). Local.
template <class S>
KOKKOS_INLINE_FUNCTION void exact_normalise(S& s) {
  std::int64_t carry = 0;
  for (int j = 0; j < exact_chunks - 1; ++j) {
    const std::int64_t v = s.c[j] + carry;
    carry = v >> 32;  // arithmetic shift: floor(v / 2^32)
    s.c[j] = v - carry * (std::int64_t(1) << 32);
  }
  s.c[exact_chunks - 1] += carry;
  s.budget = exact_budget;
}

/// s += x, exactly, without counting the deposit against the budget: the caller guarantees a
/// carry propagation before more than exact_budget deposits accumulate (exact_reserve). Local.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void exact_deposit(S& s, const double x) {
  const std::uint64_t u = exact_bits(x);
  const int e = static_cast<int>((u >> 52) & 0x7ff);
  std::uint64_t m = u & ((std::uint64_t(1) << 52) - 1);
  if (e == 0x7ff) {  // infinity or NaN
    if (m != 0)
      s.nan += 1;
    else if (u >> 63)
      s.ninf += 1;
    else
      s.pinf += 1;
    return;
  }
  int ee = e;
  if (e != 0)
    m |= std::uint64_t(1) << 52;
  else
    ee = 1;  // subnormal (or zero): no hidden bit, the exponent of the smallest normal
  const int low = ee & 31;
  const int j = ee >> 5;  // 0..63
  const std::int64_t lo = static_cast<std::int64_t>((m << low) & 0xffffffffu);
  const std::int64_t hi = static_cast<std::int64_t>(m >> (32 - low));
  const std::int64_t neg = -static_cast<std::int64_t>(u >> 63);  // 0 or -1
  s.c[j] += (lo ^ neg) - neg;                                    // +lo or -lo, branch-free
  s.c[j + 1] += (hi ^ neg) - neg;
}

/// Make room for `n` <= exact_budget unchecked deposits (exact_deposit): a carry propagation
/// first when the budget left is smaller. Local.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void exact_reserve(S& s, const int n) {
  if (s.budget < n) exact_normalise(s);
  s.budget -= n;
}

/// s += x, exactly. Local.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void exact_add(S& s, const double x) {
  exact_reserve(s, 1);
  exact_deposit(s, x);
}

// x86-64 hosts under GCC without -mfma (the portable default): the large accumulator's product
// loop is also compiled for CPUs with AVX2 and FMA (a clone with target("avx2,fma"), chosen once
// at run time), where std::fma is the inline instruction instead of a library call and the
// block loops vectorise 4 wide. Contraction stays off in
// the clone (fp-contract=off), so an operand expression's elements are computed as in the rest
// of the build. (Not under nvcc or clang: there the plain loop, with the library call, serves.)
#if !defined(__CUDACC__) && !defined(__clang__) && defined(__GNUC__) && defined(__x86_64__) && !defined(__FMA__)
#define SPMD_IMPL_EXACT_FMA_CLONE 1
#define SPMD_IMPL_EXACT_FMA_TARGET __attribute__((target("avx2,fma"), optimize("fp-contract=off")))
#endif

/// Whether the FMA clone may run on this host: an x86-64 CPU with AVX2 and FMA under a compiler
/// not allowed to emit them by default, checked once. Elsewhere false. Local (host).
inline bool exact_host_fma() {
#if defined(SPMD_IMPL_EXACT_FMA_CLONE)
  static const bool has = __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

/// The rounding error of p = fl(a b) (p finite): fma(a, b, -p) = a b - p, exactly when the
/// product does not underflow. Local.
KOKKOS_FORCEINLINE_FUNCTION double exact_product_error(const double a, const double b, const double p) {
  return exact_fma(a, b, -p);
}

/// s += a * b with its budget already reserved for 2 deposits (see exact_add_product). Local.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void exact_deposit_product(S& s, const double a, const double b) {
  const double p = a * b;
  exact_deposit(s, p);
  // p finite: add the product's error too (an infinity or NaN adds itself, once)
  exact_deposit(s, p - p == 0.0 ? exact_product_error(a, b, p) : 0.0);
}

/// s += a * b, exactly (see the file comment). Local.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void exact_add_product(S& s, const double a, const double b) {
  exact_reserve(s, 2);
  exact_deposit_product(s, a, b);
}

/// a += b, exactly; b may be unnormalised. Local.
template <class A, class B>
KOKKOS_INLINE_FUNCTION void exact_join(A& a, const B& b) {
  exact_normalise(a);
  // a's chunks are now below 2^32: adding b's low 32 bits and the carry of b's chunk below
  // (|b.c[j] >> 32| < 2^31) cannot overflow.
  for (int j = 0; j < exact_chunks - 1; ++j) {
    const std::int64_t v = b.c[j];
    a.c[j] += v & 0xffffffff;
    a.c[j + 1] += v >> 32;
  }
  a.c[exact_chunks - 1] += b.c[exact_chunks - 1];
  a.nan += b.nan;
  a.pinf += b.pinf;
  a.ninf += b.ninf;
  exact_normalise(a);
}

/// The kernel layer's reduction rule of K exact sums (impl/kernels.hpp): folded in place (the
/// accumulator is large; a per-item copy would cost more than the item's work on a device).
template <int K>
struct ExactSums {
  ExactSum s[K];
};
template <int K>
struct ExactRule {
  using value_type = ExactSums<K>;
  static constexpr bool fold_in_place = true;
  KOKKOS_INLINE_FUNCTION static void init(value_type& v) {
    for (int k = 0; k < K; ++k) exact_init(v.s[k]);
  }
  template <class A, class B>
  KOKKOS_INLINE_FUNCTION static void join(A& a, const B& b) {
    for (int k = 0; k < K; ++k) exact_join(a.s[k], b.s[k]);
  }
};

// ---- host execution spaces: the large accumulator (see the file comment) ---------------------

/// Chunks of the large accumulator: one per sign and biased exponent.
constexpr int exact_large_chunks = 4096;

/// A host thread's accumulator: Neal's large one in front of a small one (a Kokkos reduction
/// value of host spaces only: 33 KB).
struct ExactHostSum {
  ExactSum small;
  std::uint64_t big[exact_large_chunks];
};

/// The small accumulator's s += sign * v * 2^(e - 1075) for v < 2^64 (e: biased exponent of the
/// chunk, 0 taken as 1), counted as one deposit (each chunk gets less than 2^33). Local.
KOKKOS_INLINE_FUNCTION void exact_deposit_wide(ExactSum& s, const std::uint64_t v, const int chunk) {
  const int e = (chunk & 0x7ff) != 0 ? (chunk & 0x7ff) : 1;
  const int low = e & 31;
  const int j = e >> 5;  // 0..63: j + 2 <= 65
  const auto d0 = static_cast<std::int64_t>((v << low) & 0xffffffffu);
  const auto d1 = static_cast<std::int64_t>((v >> (32 - low)) & 0xffffffffu);
  const auto d2 = static_cast<std::int64_t>(low == 0 ? 0 : v >> (64 - low));
  const std::int64_t neg = -static_cast<std::int64_t>(chunk >> 11);  // 0 or -1
  exact_reserve(s, 1);
  s.c[j] += (d0 ^ neg) - neg;
  s.c[j + 1] += (d1 ^ neg) - neg;
  s.c[j + 2] += (d2 ^ neg) - neg;
}

/// Chunk `chunk` of `h` wrapped past 2^64: that carry into the small accumulator (the
/// exponent-0x7ff chunks only keep a marker). Local.
KOKKOS_INLINE_FUNCTION void exact_large_carry(ExactHostSum& h, const int chunk) {
  if ((chunk & 0x7ff) == 0x7ff) {
    h.big[chunk] |= 1;
    return;
  }
  const int e = ((chunk & 0x7ff) != 0 ? (chunk & 0x7ff) : 1) + 64;  // 2^64 at the chunk's weight
  const std::int64_t bit = std::int64_t(1) << (e & 31);
  exact_reserve(h.small, 1);
  h.small.c[e >> 5] += (chunk >> 11) != 0 ? -bit : bit;  // e >> 5 <= 65
}

/// h.big[chunk] += v (v < 2^64), the carry moved on. Local.
KOKKOS_FORCEINLINE_FUNCTION void exact_large_chunk_add(ExactHostSum& h, const int chunk, const std::uint64_t v) {
  const std::uint64_t r = h.big[chunk] + v;
  h.big[chunk] = r;
  if (r < v) exact_large_carry(h, chunk);
}

/// The chunk of x (its sign and biased exponent) and the integer added to it (the mantissa with
/// its hidden bit, which subnormals and zeros lack), without branches. Local.
KOKKOS_FORCEINLINE_FUNCTION void exact_large_split(const double x, std::uint64_t& chunk, std::uint64_t& mant) {
  const std::uint64_t u = exact_bits(x);
  chunk = u >> 52;
  // bit 11 of (exponent + 0x7ff) is set exactly when the exponent is not 0
  const std::uint64_t hidden = ((((u >> 52) & 0x7ff) + 0x7ff) & 0x800) << 41;
  mant = (u & ((std::uint64_t(1) << 52) - 1)) | hidden;
}

/// h += x, exactly; a NaN or infinity only marks its chunk (see exact_large_specials). Local.
KOKKOS_FORCEINLINE_FUNCTION void exact_large_add(ExactHostSum& h, const double x) {
  std::uint64_t chunk, mant;
  exact_large_split(x, chunk, mant);
  exact_large_chunk_add(h, static_cast<int>(chunk), mant);
}

/// Whether a NaN or infinity reached h since the last call; clears the markers. Local.
KOKKOS_FORCEINLINE_FUNCTION bool exact_large_specials(ExactHostSum& h) {
  if ((h.big[0x7ff] | h.big[0xfff]) == 0) return false;
  h.big[0x7ff] = 0;
  h.big[0xfff] = 0;
  return true;
}

/// Counts x in h's small accumulator if it is a NaN or an infinity (as exact_deposit does).
/// Local.
KOKKOS_INLINE_FUNCTION void exact_count_special(ExactSum& s, const double x) {
  const std::uint64_t u = exact_bits(x);
  if (((u >> 52) & 0x7ff) != 0x7ff) return;
  if ((u & ((std::uint64_t(1) << 52) - 1)) != 0)
    s.nan += 1;
  else if (u >> 63)
    s.ninf += 1;
  else
    s.pinf += 1;
}

/// The small accumulator of everything in h (h's chunks added to it). Local.
inline ExactSum exact_large_finish(const ExactHostSum& h) {
  ExactSum s = h.small;
  for (int chunk = 0; chunk < exact_large_chunks; ++chunk)
    if (h.big[chunk] != 0 && (chunk & 0x7ff) != 0x7ff) exact_deposit_wide(s, h.big[chunk], chunk);
  return s;
}

/// The kernel layer's reduction rule of one large accumulator (host spaces), folded in place.
struct ExactHostRule {
  using value_type = ExactHostSum;
  static constexpr bool fold_in_place = true;
  KOKKOS_INLINE_FUNCTION static void init(value_type& v) {
    exact_init(v.small);
    for (int j = 0; j < exact_large_chunks; ++j) v.big[j] = 0;
  }
  // Host threads join one after another: the volatile overload of Kokkos' join needs no volatile
  // accesses here.
  template <class A, class B>
  KOKKOS_INLINE_FUNCTION static void join(A& a_, const B& b_) {
    auto& a = const_cast<value_type&>(a_);
    const auto& b = const_cast<const value_type&>(b_);
    exact_join(a.small, b.small);
    for (int chunk = 0; chunk < exact_large_chunks; ++chunk)
      if (b.big[chunk] != 0) exact_large_chunk_add(a, chunk, b.big[chunk]);
  }
};

/// The correctly rounded double of an accumulator (round to nearest, ties to even; see the file
/// comment for infinities and NaN). Local (host).
inline double exact_round(ExactSum s) {
  if (s.nan > 0 || (s.pinf > 0 && s.ninf > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (s.pinf > 0) return std::numeric_limits<double>::infinity();
  if (s.ninf > 0) return -std::numeric_limits<double>::infinity();
  exact_normalise(s);
  const bool negative = s.c[exact_chunks - 1] < 0;
  if (negative) {
    for (int j = 0; j < exact_chunks; ++j) s.c[j] = -s.c[j];
    exact_normalise(s);
  }
  // The magnitude as 32-bit digits (the top chunk may exceed 32 bits: split it further).
  constexpr int D = exact_chunks + 2;
  std::uint32_t d[D] = {};
  for (int j = 0; j < exact_chunks - 1; ++j) d[j] = static_cast<std::uint32_t>(s.c[j]);
  const auto top = static_cast<std::uint64_t>(s.c[exact_chunks - 1]);
  d[exact_chunks - 1] = static_cast<std::uint32_t>(top);
  d[exact_chunks] = static_cast<std::uint32_t>(top >> 32);
  int hd = D - 1;
  while (hd >= 0 && d[hd] == 0) --hd;
  if (hd < 0) return 0.0;
  int hb = 31;
  while (!((d[hd] >> hb) & 1u)) --hb;
  const int msb = hd * 32 + hb;  // the leading bit has weight 2^(msb - 1075)
  auto bit = [&](int pos) -> std::uint64_t { return pos < 0 ? 0 : (d[pos / 32] >> (pos % 32)) & 1u; };
  // Keep 53 bits below and at the leading one, but none below 2^-1074 (bit 1): subnormals.
  const int lsb = msb - 52 > 1 ? msb - 52 : 1;
  std::uint64_t mant = 0;
  for (int pos = msb; pos >= lsb; --pos) mant = (mant << 1) | bit(pos);
  const std::uint64_t round = bit(lsb - 1);
  bool sticky = false;
  for (int pos = lsb - 2; pos >= 0 && !sticky; --pos) {
    if (pos % 32 == 31 && d[pos / 32] == 0) {  // skip whole zero digits
      pos -= 31;
      continue;
    }
    sticky = bit(pos) != 0;
  }
  if (round && (sticky || (mant & 1u))) ++mant;                        // may carry into bit 53: ldexp handles it
  const double v = std::ldexp(static_cast<double>(mant), lsb - 1075);  // exact or +-inf
  return negative ? -v : v;
}

/// Combine K accumulators over the ranks of `comm`, exactly: normalised (chunks below 2^32, so
/// an MPI_SUM of int64 over fewer than 2^31 ranks cannot overflow), one MPI_Allreduce, normalised
/// again. Every rank gets the same sums. `error`: the message of an argument error this rank met
/// before (then v is the empty sum), agreed in the same MPI_Allreduce (one more int64 counts
/// the failed ranks) and thrown on every rank by Comm::check. Collective.
template <int K>
void exact_allreduce(const Comm& comm, ExactSums<K>& v, const std::string& error = {}) {
  constexpr int W = exact_chunks + 3;
  std::int64_t buf[K * W + 1];
  buf[K * W] = error.empty() ? 0 : 1;
  for (int k = 0; k < K; ++k) {
    ExactSum& s = v.s[k];
    exact_normalise(s);
    for (int j = 0; j < exact_chunks; ++j) buf[k * W + j] = s.c[j];
    buf[k * W + exact_chunks] = s.nan;
    buf[k * W + exact_chunks + 1] = s.pinf;
    buf[k * W + exact_chunks + 2] = s.ninf;
  }
  if (comm.size() > 1) comm.allreduce(buf, K * W + 1, Op::sum);
  if (buf[K * W] != 0) comm.check(error.empty(), error);
  for (int k = 0; k < K; ++k) {
    ExactSum& s = v.s[k];
    for (int j = 0; j < exact_chunks; ++j) s.c[j] = buf[k * W + j];
    s.nan = buf[k * W + exact_chunks];
    s.pinf = buf[k * W + exact_chunks + 1];
    s.ninf = buf[k * W + exact_chunks + 2];
    exact_normalise(s);
  }
}

}  // namespace spmd::impl
