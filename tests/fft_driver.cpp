// Runs the spmd::fft transforms that tests/fft_numpy.py lists and writes each gathered result
// for NumPy to check.
//
//   fft_driver CASES OUTDIR
//
// CASES: one case per line, `op dtype shape axes s norm` (shape "6x5x8", axes "0,2" or "-",
// s "9,4" or "-", norm backward / ortho / forward; op fftn ifftn rfftn irfftn fft ifft rfft
// irfft; dtype complex128 / complex64 for complex inputs, float64 / float32 for real ones).
// Input element at flat row-major index f: real sin(0.37 f) + 0.25 cos(1.3 f), imaginary
// 0.5 cos(0.11 f) - 0.125 sin(2.1 f) (fft_numpy.py makes the same). Rank 0 writes OUTDIR/K.bin
// (the result as float64 pairs, or float64 for real results) and OUTDIR/K.shape.
#include <spmd.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using spmd::index_t;

template <class T>
struct Input {
  index_t n1 = 1, n2 = 1;  // the extents of axes 1 and 2 (plain members: device code)
  KOKKOS_INLINE_FUNCTION T at(index_t f) const {
    const double x = static_cast<double>(f);
    const double re = spmd::math::sin(0.37 * x) + 0.25 * spmd::math::cos(1.3 * x);
    const double im = 0.5 * spmd::math::cos(0.11 * x) - 0.125 * spmd::math::sin(2.1 * x);
    if constexpr (spmd::impl::is_complex_v<T>) {
      using R = typename T::value_type;
      return T(static_cast<R>(re), static_cast<R>(im));
    } else {
      return static_cast<T>(re);
    }
  }
  KOKKOS_INLINE_FUNCTION T operator()(index_t i) const { return at(i); }
  KOKKOS_INLINE_FUNCTION T operator()(index_t i, index_t j) const { return at(i * n1 + j); }
  KOKKOS_INLINE_FUNCTION T operator()(index_t i, index_t j, index_t k) const { return at((i * n1 + j) * n2 + k); }
};

std::vector<long long> parse_list(const std::string& s) {
  std::vector<long long> v;
  if (s == "-") return v;
  std::stringstream ss(s);
  std::string t;
  const char sep = s.find('x') != std::string::npos ? 'x' : ',';
  while (std::getline(ss, t, sep)) v.push_back(std::stoll(t));
  return v;
}

spmd::fft::Norm parse_norm(const std::string& s) {
  if (s == "ortho") return spmd::fft::Norm::ortho;
  if (s == "forward") return spmd::fft::Norm::forward;
  if (s == "backward") return spmd::fft::Norm::backward;
  throw spmd::Error("fft_driver: unknown norm " + s);
}

template <class T, int N>
void write(const spmd::Array<T, N>& a, const std::string& base) {
  const auto v = spmd::allgather(a);
  if (a.comm().rank() != 0) return;
  std::ofstream out(base + ".bin", std::ios::binary);
  for (const auto& x : v) {
    if constexpr (spmd::impl::is_complex_v<T>) {
      const double p[2] = {static_cast<double>(x.real()), static_cast<double>(x.imag())};
      out.write(reinterpret_cast<const char*>(p), sizeof p);
    } else {
      const double p = static_cast<double>(x);
      out.write(reinterpret_cast<const char*>(&p), sizeof p);
    }
  }
  std::ofstream sh(base + ".shape");
  for (int d = 0; d < N; ++d) sh << (d ? "x" : "") << a.shape()[d];
  sh << "\n";
}

template <class T, int N>
spmd::Array<T, N> input(const spmd::Comm& comm, const std::vector<long long>& shape) {
  spmd::Index<N> s{};
  Input<T> f;
  for (int d = 0; d < N; ++d) s[d] = shape[d];
  if (N >= 2) f.n1 = s[1];
  if (N >= 3) f.n2 = s[2];
  return spmd::fromfunction<T>(comm, s, f, spmd::halo(1));
}

template <class C, int N>
void run(const spmd::Comm& comm, const std::string& op, const std::vector<long long>& shape,
         const std::vector<int>& axes, const std::vector<index_t>& s, spmd::fft::Norm norm, const std::string& base) {
  using R = typename C::value_type;
  namespace f = spmd::fft;
  const index_t n = s.empty() ? -1 : s[0];
  const int axis = axes.empty() ? -1 : axes[0];
  if (op == "fftn") return write(f::fftn(input<C, N>(comm, shape), s, axes, norm), base);
  if (op == "ifftn") return write(f::ifftn(input<C, N>(comm, shape), s, axes, norm), base);
  if (op == "irfftn") return write(f::irfftn(input<C, N>(comm, shape), s, axes, norm), base);
  if (op == "rfftn") return write(f::rfftn(input<R, N>(comm, shape), s, axes, norm), base);
  if (op == "fft") return write(f::fft(input<C, N>(comm, shape), n, axis, norm), base);
  if (op == "ifft") return write(f::ifft(input<C, N>(comm, shape), n, axis, norm), base);
  if (op == "rfft") return write(f::rfft(input<R, N>(comm, shape), n, axis, norm), base);
  if (op == "irfft") return write(f::irfft(input<C, N>(comm, shape), n, axis, norm), base);
  throw spmd::Error("fft_driver: unknown op " + op);
}

template <class C>
void dispatch(const spmd::Comm& comm, const std::string& op, const std::vector<long long>& shape,
              const std::vector<int>& axes, const std::vector<index_t>& s, spmd::fft::Norm norm,
              const std::string& base) {
  if (shape.size() == 1) return run<C, 1>(comm, op, shape, axes, s, norm, base);
  if (shape.size() == 2) return run<C, 2>(comm, op, shape, axes, s, norm, base);
  if (shape.size() == 3) return run<C, 3>(comm, op, shape, axes, s, norm, base);
  throw spmd::Error("fft_driver: 1-3 axes");
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  const spmd::Comm comm = rt.world();
  comm.check(argc == 3, "usage: fft_driver CASES OUTDIR");
  std::ifstream in(argv[1]);
  std::string line;
  int k = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    std::string op, dtype, shape, axes, s, norm;
    ss >> op >> dtype >> shape >> axes >> s >> norm;
    std::vector<int> ax;
    for (auto a : parse_list(axes)) ax.push_back(static_cast<int>(a));
    std::vector<index_t> sv;
    for (auto v : parse_list(s)) sv.push_back(v);
    const std::string base = std::string(argv[2]) + "/" + std::to_string(k++);
    const bool single = dtype == "complex64" || dtype == "float32";
    if (single)
      dispatch<Kokkos::complex<float>>(comm, op, parse_list(shape), ax, sv, parse_norm(norm), base);
    else
      dispatch<Kokkos::complex<double>>(comm, op, parse_list(shape), ax, sv, parse_norm(norm), base);
  }
  return 0;
}
