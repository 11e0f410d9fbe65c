// The spmdarray side of tests/krylov_scipy.py: solve the linear systems a case file lists with
// spmd::solvers::gmres / fgmres / bicgstab and write what SciPy's side is compared with.
//
//   mpiexec -n P krylov_driver CASES OUT.json
//
// CASES has one case per line, fields separated by spaces:
//   name method precond restart rtol atol max_iters matrix.mtx rhs.txt
// method: gmres, fgmres or bicgstab; precond: none or jacobi; the matrix in Matrix Market form
// (spmd::sparse::read_matrix_market), the right side one number per line. x starts at 0. OUT is a
// JSON list, one object per case: name, iterations, reason, converged, residual (the solver's),
// true_residual (||b - A x||), detail, x (gathered on rank 0, 17 significant digits).
#include <spmd.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sv = spmd::solvers;

namespace {

std::vector<double> read_numbers(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("krylov_driver: cannot open " + path);
  std::vector<double> v;
  double d;
  while (in >> d) v.push_back(d);
  return v;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  const spmd::Comm comm = rt.world();
  if (argc != 3) {
    if (comm.rank() == 0) std::fprintf(stderr, "usage: krylov_driver CASES OUT.json\n");
    return 2;
  }
  std::ifstream cases(argv[1]);
  std::ostringstream out;
  out << "[\n";
  std::string line;
  bool first = true;
  while (std::getline(cases, line)) {
    if (line.empty()) continue;
    std::istringstream f(line);
    std::string name, method, precond, mtx, rhs;
    sv::SolverOptions o;
    f >> name >> method >> precond >> o.restart >> o.rtol >> o.atol >> o.max_iters >> mtx >> rhs;
    o.precond = precond == "jacobi" ? sv::Precond::jacobi : sv::Precond::none;
    const auto A = spmd::sparse::read_matrix_market<double>(comm, mtx);
    auto b = A.make_vector("b"), x = A.make_vector("x");
    spmd::scatter(b, comm.rank() == 0 ? read_numbers(rhs) : std::vector<double>());
    const sv::SolveResult res = method == "gmres"    ? sv::gmres(A, b, x, o)
                                : method == "fgmres" ? sv::fgmres(A, b, x, o)
                                                     : sv::bicgstab(A, b, x, o);
    const std::vector<double> hx = spmd::gather(x);
    if (comm.rank() == 0) {
      char buf[64];
      out << (first ? "" : ",\n") << "{\"name\": " << json_string(name) << ", \"iterations\": " << res.iterations
          << ", \"reason\": " << json_string(sv::to_string(res.reason))
          << ", \"converged\": " << (res.converged ? "true" : "false");
      std::snprintf(buf, sizeof buf, "%.17g", res.residual);
      out << ", \"residual\": " << buf;
      std::snprintf(buf, sizeof buf, "%.17g", res.true_residual);
      out << ", \"true_residual\": " << buf << ", \"detail\": " << json_string(res.detail) << ", \"x\": [";
      for (std::size_t k = 0; k < hx.size(); ++k) {
        std::snprintf(buf, sizeof buf, "%.17g", hx[k]);
        out << (k ? ", " : "") << (std::isfinite(hx[k]) ? buf : "null");
      }
      out << "]}";
      first = false;
    }
  }
  out << "\n]\n";
  if (comm.rank() == 0) {
    std::ofstream o(argv[2]);
    o << out.str();
    if (!o) {
      std::fprintf(stderr, "krylov_driver: cannot write %s\n", argv[2]);
      return 1;
    }
  }
  return 0;
}
