// The cases of NumPy's NaN / ddof / signed-zero rules, computed by the library, for
// tests/numpy_edges.py to compare with NumPy itself:
//   numpy_edges_driver OUTFILE
// Rank 0 writes one line per result: `NAME DTYPE OP AXIS DDOF ROWSxCOLS A B RESULT`, where A and
// B are the operands' row-major bits in hex (B `-` for one operand), AXIS `-` for the whole
// array, and RESULT the result's bits in hex (indices and integers in decimal; a whole-array
// argmin / argmax as the flat row-major index). Each 2-D case runs on the automatic process grid
// and on (1, p), so NaNs and ties sit in different ranks' blocks.
#include <spmd.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using spmd::Distribution;
using spmd::Index;
using spmd::index_t;

template <class T>
std::string bits(const std::vector<T>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s << ',';
    if constexpr (std::is_floating_point_v<T>) {
      using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
      U u;
      std::memcpy(&u, &v[i], sizeof u);
      s << std::hex << static_cast<unsigned long long>(u);
    } else {
      s << static_cast<long long>(v[i]);
    }
  }
  return s.str();
}
template <class T>
const char* dtype() {
  return std::is_same_v<T, double> ? "float64" : std::is_same_v<T, float> ? "float32" : "int32";
}

struct Out {
  const spmd::Comm& comm;
  std::ostringstream text;
  template <class T, class R>
  void put(const std::string& name, const char* op, const std::string& axis, index_t ddof, const Index<2>& shape,
           const std::vector<T>& a, std::common_type_t<const std::vector<T>*> b, const std::vector<R>& result) {
    if (comm.rank() != 0) return;
    text << name << ' ' << dtype<T>() << ' ' << op << ' ' << axis << ' ' << ddof << ' ' << shape[0] << 'x' << shape[1]
         << ' ' << bits(a) << ' ' << (b ? bits(*b) : std::string("-")) << ' ' << bits(result) << '\n';
  }
};

template <class T, class A>
spmd::Array<T, 2> load(const Distribution<2>& d, const std::vector<T>& v, const A& comm) {
  spmd::Array<T, 2> a(d, spmd::label("numpy_edges::a"));
  a.fill_with_halo(T(-7));
  spmd::scatter(a, comm.rank() == 0 ? v : std::vector<T>{});
  return a;
}

/// 2-D values with NaNs (T floating): a NaN inside some lines, at their ends, several in one line,
/// an all-NaN line, infinities, ties and signed zeros.
template <class T>
std::vector<T> values(const Index<2>& s) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  std::vector<T> v;
  for (index_t i = 0; i < s[0]; ++i)
    for (index_t j = 0; j < s[1]; ++j) {
      T x = T((i * 3 + j * 7) % 5) - T(2);
      if (x == T(0) && (i + j) % 2) x = T(-0.0);
      if constexpr (std::is_floating_point_v<T>) {
        if ((i * s[1] + j) % 11 == 4 || j == s[1] - 1 || (i == s[0] - 1 && j % 2 == 0)) x = nan;
        if (i == 2 && j == 0) x = inf;
        if (i == 4 && j == 1) x = -inf;
      }
      v.push_back(x);
    }
  return v;
}

template <class T>
void reductions(const spmd::Comm& comm, Out& out) {
  const Index<2> s{9, 6};  // rows 3 | 3 | 3 at 3 ranks, 3 | 2 | 2 | 2 at 4; columns cut on (1, p)
  const auto v = values<T>(s);
  for (const auto& [d, g] : {std::pair{Distribution<2>(comm, s), std::string("auto")},
                             std::pair{Distribution<2>(comm, s, spmd::grid({1, comm.size()})), std::string("cols")}}) {
    const auto a = load<T>(d, v, comm);
    const std::string n = "reduce_" + g;
    for (int ax : {0, 1}) {
      const std::string axs = std::to_string(ax);
      out.put(n, "min", axs, 0, s, v, nullptr, spmd::allgather(spmd::min(a, spmd::axis(ax))));
      out.put(n, "max", axs, 0, s, v, nullptr, spmd::allgather(spmd::max(a, spmd::axis(ax))));
      out.put(n, "argmin", axs, 0, s, v, nullptr, spmd::allgather(spmd::argmin(a, spmd::axis(ax))));
      out.put(n, "argmax", axs, 0, s, v, nullptr, spmd::allgather(spmd::argmax(a, spmd::axis(ax))));
    }
    const auto flat = [&](const Index<2>& k) { return std::vector<index_t>{k[0] * s[1] + k[1]}; };
    out.put(n, "argmin", "-", 0, s, v, nullptr, flat(spmd::argmin(a)));
    out.put(n, "argmax", "-", 0, s, v, nullptr, flat(spmd::argmax(a)));
    out.put(n, "min", "-", 0, s, v, nullptr, std::vector<T>{spmd::min(a)});
    out.put(n, "max", "-", 0, s, v, nullptr, std::vector<T>{spmd::max(a)});
    if constexpr (std::is_floating_point_v<T>) {
      out.put(n, "norm_inf", "-", 0, s, v, nullptr, std::vector<T>{spmd::norm_inf(a)});
      // the same without NaNs in the first rows (a NaN-free line per column of the top block)
      std::vector<T> w(v);
      for (std::size_t t = 0; t < w.size(); ++t)
        if (std::isnan(w[t]) && t % 3 != 0) w[t] = T(t % 4);
      const auto b = load<T>(d, w, comm);
      for (int ax : {0, 1}) {
        const std::string axs = std::to_string(ax);
        out.put(n + "_fewer", "max", axs, 0, s, w, nullptr, spmd::allgather(spmd::max(b, spmd::axis(ax))));
        out.put(n + "_fewer", "argmin", axs, 0, s, w, nullptr, spmd::allgather(spmd::argmin(b, spmd::axis(ax))));
      }
    }
  }
}

template <class T>
void variances(const spmd::Comm& comm, Out& out) {
  const Index<2> s{5, 4};
  std::vector<T> v;
  for (index_t i = 0; i < s[0]; ++i)
    for (index_t j = 0; j < s[1]; ++j) v.push_back(i == 1 ? T(0.75) : T(std::cos(0.5 + i + 0.7 * j)));
  for (const auto& [d, g] : {std::pair{Distribution<2>(comm, s), std::string("auto")},
                             std::pair{Distribution<2>(comm, s, spmd::grid({1, comm.size()})), std::string("cols")}}) {
    const auto a = load<T>(d, v, comm);
    const std::string n = "var_" + g;
    for (const index_t ddof : {0, 1, 3, 4, 5, 9, 20, 21, 30}) {
      for (int ax : {0, 1}) {
        const std::string axs = std::to_string(ax);
        out.put(n, "var", axs, ddof, s, v, nullptr, spmd::allgather(spmd::var(a, spmd::axis(ax), ddof)));
        out.put(n, "std", axs, ddof, s, v, nullptr, spmd::allgather(spmd::std(a, spmd::axis(ax), ddof)));
      }
      out.put(n, "var", "-", ddof, s, v, nullptr, std::vector<T>{spmd::var(a, spmd::axes(0, 1), ddof)});
    }
  }
}

template <class T>
void elementwise(const spmd::Comm& comm, Out& out) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const std::vector<T> a = {T(-0.0), T(0.0), T(-0.0), T(0.0), nan, T(1), nan,     -nan, nan,
                            T(0.0),  T(1),   T(2),    -inf,   inf, T(3), T(-0.0), -nan, T(5)};
  const std::vector<T> b = {T(0.0), T(-0.0), T(-0.0), T(0.0), T(1), nan,  -nan,  nan,  T(-0.0),
                            -nan,   T(2),    T(1),    inf,    nan,  T(3), T(-1), T(4), -nan};
  const Index<2> s{1, index_t(a.size())};
  const Distribution<2> d(comm, s, spmd::grid({1, comm.size()}));
  const auto x = load<T>(d, a, comm), y = load<T>(d, b, comm);
  spmd::Array<T, 2> r(d);
  r = spmd::minimum(x, y);
  out.put("elementwise", "minimum", "-", 0, s, a, &b, spmd::allgather(r));
  r = spmd::maximum(x, y);
  out.put("elementwise", "maximum", "-", 0, s, a, &b, spmd::allgather(r));
  r = spmd::minimum(y, x);
  out.put("elementwise", "minimum", "-", 0, s, b, &a, spmd::allgather(r));
  r = spmd::maximum(y, x);
  out.put("elementwise", "maximum", "-", 0, s, b, &a, spmd::allgather(r));
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  const spmd::Comm comm = rt.world();
  comm.check(argc == 2, "usage: numpy_edges_driver OUTFILE");
  Out out{comm, {}};
  reductions<double>(comm, out);
  reductions<float>(comm, out);
  reductions<int>(comm, out);
  variances<double>(comm, out);
  variances<float>(comm, out);
  elementwise<double>(comm, out);
  elementwise<float>(comm, out);
  bool ok = true;
  if (comm.rank() == 0) {
    std::ofstream f(argv[1]);
    f << out.text.str();
    f.close();
    ok = bool(f);
  }
  comm.check(ok, std::string("numpy_edges_driver: could not write ") + argv[1]);
  return 0;
}
