// spmdarray._core: the compiled half of the Python package (python/spmdarray/ is the other). It
// holds the runtime (MPI through mpi4py or the library, then Kokkos), communicators, the
// type-erased array (Holder) and the entry points the pure-Python layer calls: creation, data
// in and out, conversions, halo exchange, fused programs (assignment and reductions), and the
// sparse matrices and CG of spmdarray.sparse / spmdarray.linalg (sparse.cpp).
// spmd::Error becomes spmdarray.Error (a RuntimeError) with the library's message.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <spmd/runtime.hpp>

#include <memory>
#include <optional>

#include "axis.hpp"
#include "create.hpp"
#include "gen.hpp"
#include "shape.hpp"
#include "program.hpp"
#include "sparse.hpp"

namespace nb = nanobind;
using namespace spmd;
using namespace spmd::py;

namespace {

/// A communicator as Python sees it. Every one is registered, so that the duplicates are freed
/// before MPI ends (interpreter exit), whoever still holds them.
struct CommBox {
  std::optional<Comm> c;
};
struct PyComm {
  std::shared_ptr<CommBox> box;
};
Registry<CommBox>& comms() {
  static Registry<CommBox> r;
  return r;
}
PyComm wrap(Comm c) {
  PyComm p{std::make_shared<CommBox>()};
  p.box->c.emplace(std::move(c));
  comms().add(p.box);
  return p;
}
const Comm& comm_of(const PyComm& p) {
  if (!p.box || !p.box->c) throw Error::replicated("spmdarray: the communicator was released (spmdarray finalized)");
  return *p.box->c;
}

std::unique_ptr<Runtime>& runtime() {
  static std::unique_ptr<Runtime> r;
  return r;
}
int fake_argc = 1;
char fake_name[] = "spmdarray";
char* fake_args[] = {fake_name, nullptr};
char** fake_argv = fake_args;

void init() {
  if (!runtime()) runtime() = std::make_unique<Runtime>(fake_argc, fake_argv);
}
void finalize() {
  release_matrices();
  release_parents();
  comms().release_all([](CommBox& b) { b.c.reset(); });  // frees the duplicate now, whoever holds the Python object
  runtime().reset();
}

DistributionOptions options(const std::vector<int>& halo, const std::vector<bool>& periodic,
                            const std::vector<int>& grid, const std::string& label) {
  DistributionOptions o;
  o.halo = halo;
  o.periodic = periodic;
  o.dims = grid;
  o.label = label;
  return o;
}

ProgramIn program_in(const std::vector<int>& code, const std::vector<double>& kf, const std::vector<std::int64_t>& ki,
                     int result, const std::vector<Holder>& operands, const std::vector<index_t>& shape) {
  ProgramIn p;
  if (code.size() % 5 != 0)
    throw Error::replicated("spmdarray: internal error: a program's code is 5 numbers an instruction");
  for (std::size_t i = 0; i < code.size(); i += 5) {
    Ins in;
    in.op = static_cast<std::uint8_t>(code[i]);
    in.d = static_cast<std::uint8_t>(code[i + 1]);
    in.a = static_cast<std::uint8_t>(code[i + 2]);
    in.b = static_cast<std::uint8_t>(code[i + 3]);
    in.c = static_cast<std::uint8_t>(code[i + 4]);
    p.ins.push_back(in);
  }
  if (!valid_program(p.ins.data(), p.ins.size(), operands.size(), kf.size() + ki.size(), result))
    throw Error::replicated(
        "spmdarray: internal error: a program instruction is out of range or reads a register not yet written");
  p.kf = kf;
  p.ki = ki;
  p.result = result;
  p.operands = operands;
  p.shape = shape;
  return p;
}

template <class F>
decltype(auto) by_program_type(DType c, F&& f) {
  switch (c) {
    case DType::f64:
      return f(double{});
    case DType::f32:
      return f(float{});
    case DType::i64:
      return f(std::int64_t{});
    case DType::i32:
      return f(std::int32_t{});
    default:
      throw Error::replicated("spmdarray: internal error: bool is no program type");
  }
}

using HostArray = nb::ndarray<nb::c_contig, nb::device::cpu>;

std::size_t item_size(DType d) {
  constexpr std::size_t s[] = {8, 4, 8, 4, sizeof(bool)};
  return s[static_cast<int>(d)];
}
std::size_t elements(const Holder& h) {
  std::size_t n = 1;
  for (int d = 0; d < h.ndim; ++d) n *= static_cast<std::size_t>(h.shape[d]);
  return n;
}
void check_buffer(const char* fn, const Holder& h, const HostArray& a) {
  if (a.nbytes() != elements(h) * item_size(h.dtype()))
    throw Error::replicated(impl::str(fn, ": the host buffer has ", a.nbytes(), " bytes, the array needs ",
                                      elements(h) * item_size(h.dtype())));
}

}  // namespace

namespace spmd::py {
std::vector<double> bench_cpp_fused5(const std::vector<Holder>& h, int reps);
std::vector<double> bench_cpp_dot(const Holder& x, const Holder& y, int reps);
nb::object local_block(const Holder& h);  // local.cpp
bool any_rank(const Holder& h, bool flag);
}  // namespace spmd::py

NB_MODULE(_core, m) {
  nb::exception<spmd::Error>(m, "Error", PyExc_RuntimeError);

  nb::enum_<DType>(m, "DType")
      .value("float64", DType::f64)
      .value("float32", DType::f32)
      .value("int64", DType::i64)
      .value("int32", DType::i32)
      .value("bool", DType::b);
  nb::enum_<Reduction>(m, "Reduction")
      .value("sum", Reduction::sum)
      .value("prod", Reduction::prod)
      .value("min", Reduction::min)
      .value("max", Reduction::max)
      .value("count_nonzero", Reduction::count_nonzero);

  m.def("init", &init, "MPI (unless already initialised, e.g. by mpi4py), then Kokkos. Collective.");
  m.def("finalize", &finalize,
        "Release every array and communicator, then finalize Kokkos (and MPI if it started it).");
  m.def("mpi_library_version", [] {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    return std::string(v, static_cast<std::size_t>(n));
  });
  m.def("execution_space", [] { return std::string(Kokkos::DefaultExecutionSpace::name()); });
  m.def("fence", [] { Kokkos::fence(); });  // every execution space instance (the engine may use several)
  m.def("op_codes", [] {
    return std::vector<int>{op_load, op_const,   op_neg,     op_abs, op_sqrt,  op_exp, op_log,
                            op_sin,  op_cos,     op_lnot,    op_add, op_sub,   op_mul, op_div,
                            op_pow,  op_minimum, op_maximum, op_lt,  op_le,    op_gt,  op_ge,
                            op_eq,   op_ne,      op_land,    op_lor, op_where, op_lin, op_term};
  });
  // whether arrays live in memory the host can read (a.local is a NumPy array; else DLPack)
  m.attr("HOST_MEMORY") = nb::bool_(Kokkos::SpaceAccessibility<Kokkos::HostSpace, DefaultMemorySpace>::accessible);
  m.attr("MAX_INSTRUCTIONS") = kMaxIns;
  m.attr("MAX_REGISTERS") = kMaxRegs;
  m.attr("MAX_OPERANDS") = kMaxOperands;
  m.attr("MAX_CONSTANTS") = kMaxConsts;
  m.attr("MAX_TERMS") = kMaxTerms;

  nb::class_<PyComm>(m, "Comm")
      .def_prop_ro("rank", [](const PyComm& c) { return comm_of(c).rank(); })
      .def_prop_ro("size", [](const PyComm& c) { return comm_of(c).size(); })
      .def("barrier", [](const PyComm& c) { comm_of(c).barrier(); })
      .def("same", [](const PyComm& a, const PyComm& b) { return comm_of(a) == comm_of(b); })
      .def("fortran_handle", [](const PyComm& c) { return static_cast<long>(MPI_Comm_c2f(comm_of(c).raw())); });
  m.def("world", [] {
    init();
    return wrap(runtime()->world());
  });
  m.def("comm_from_fortran", [](long f) {
    init();
    return wrap(Comm(MPI_Comm_f2c(static_cast<MPI_Fint>(f))));
  });

  nb::class_<Holder>(m, "Array")
      .def_prop_ro("dtype", &Holder::dtype)
      .def_prop_ro("ndim", [](const Holder& h) { return h.ndim; })
      .def_prop_ro("parent_ndim", [](const Holder& h) { return h.prank(); })
      .def_prop_ro("shape",
                   [](const Holder& h) { return std::vector<index_t>(h.shape.begin(), h.shape.begin() + h.ndim); })
      .def_prop_ro("start",
                   [](const Holder& h) { return std::vector<index_t>(h.start.begin(), h.start.begin() + h.prank()); })
      .def_prop_ro("step",
                   [](const Holder& h) { return std::vector<index_t>(h.step.begin(), h.step.begin() + h.prank()); })
      .def_prop_ro("map", [](const Holder& h) { return std::vector<int>(h.map.begin(), h.map.begin() + h.prank()); })
      .def_prop_ro("parent_id", [](const Holder& h) { return reinterpret_cast<std::uintptr_t>(h.parent.get()); })
      .def_prop_rw(
          "halo_stale", [](const Holder& h) { return h.parent->halo_stale; },
          [](Holder& h, bool s) { h.parent->halo_stale = s; })
      .def_prop_ro("has_halo", [](const Holder& h) { return h.parent->has_halo(); })
      .def("whole", &Holder::whole)
      .def("parent",
           [](const Holder& h) {
             std::vector<index_t> shape;
             const ParentInfo i = parent_info(*h.parent);
             return whole_holder(h.parent, i.shape);
           })
      .def("info",
           [](const Holder& h) {
             const ParentInfo i = parent_info(*h.parent);
             nb::dict d;
             d["shape"] = i.shape;
             d["halo"] = i.halo;
             d["periodic"] = i.periodic;
             d["grid"] = i.grid;
             d["owned_lo"] = i.owned_lo;
             d["owned_hi"] = i.owned_hi;
             d["label"] = i.label;
             d["comm"] = wrap(*i.comm);
             return d;
           })
      .def("select", [](const Holder& h, const std::vector<index_t>& start, const std::vector<index_t>& step,
                        const std::vector<int>& map, const std::vector<index_t>& shape) {
        Holder v = h;
        v.ndim = static_cast<int>(shape.size());
        for (int a = 0; a < h.prank(); ++a) {
          v.start[a] = start[static_cast<std::size_t>(a)];
          v.step[a] = step[static_cast<std::size_t>(a)];
          v.map[a] = map[static_cast<std::size_t>(a)];
        }
        for (int j = 0; j < v.ndim; ++j) v.shape[j] = shape[static_cast<std::size_t>(j)];
        return v;
      });

  m.def("create", [](DType dtype, const PyComm& comm, const std::vector<index_t>& shape, const std::vector<int>& halo,
                     const std::vector<bool>& periodic, const std::vector<int>& grid, const std::string& label,
                     int fill, double value) {
    return create(dtype, comm_of(comm), shape, options(halo, periodic, grid, label), static_cast<Fill>(fill), value);
  });
  m.def("arange",
        [](DType dtype, const PyComm& comm, index_t n, double start, double step, const std::vector<int>& halo,
           const std::vector<bool>& periodic, const std::vector<int>& grid, const std::string& label) {
          return arange(dtype, comm_of(comm), n, start, step, options(halo, periodic, grid, label));
        });
  m.def("convert", [](const Holder& h, DType dtype) {
    Holder v = h;
    v.parent = convert_parent(*h.parent, dtype);
    return v;
  });
  // a snapshot of src's parent into dst's (see copy_parent_into): dst's parent must be held by
  // dst's holder alone
  m.def("copy_parent",
        [](const Holder& src, const Holder& dst) { return copy_parent_into(*src.parent, dst.parent, 1); });
  // dst[...] = src for two whole arrays of one type and distribution: a copy of the rank's storage,
  // halo and halo flag included (its halo then holds what a fresh exchange would, or is stale as
  // src's is; outside the global domain nothing reads it). False, nothing done, otherwise
  m.def("copy_whole", [](const Holder& src, const Holder& dst) {
    if (!src.whole() || !dst.whole()) return false;
    return copy_parent_into(*src.parent, dst.parent, dst.parent.use_count());
  });
  m.def("exchange_halo", [](const Holder& h) { exchange_parent_halo(*h.parent); });
  m.def("gather_whole", [](const Holder& h, HostArray out) {
    if (!h.whole()) throw Error::replicated("spmdarray: internal error: gather_whole of a view");
    check_buffer("spmdarray.gather", h, out);
    gather_whole(h, out.data());
  });
  m.def("set_owned_from", [](const Holder& h, HostArray in) {
    if (!h.whole()) throw Error::replicated("spmdarray: internal error: set_owned_from of a view");
    check_buffer("spmdarray.array", h, in);
    set_owned_from(h, in.data());
  });
  m.def("assign", [](const Holder& dst, DType c, const std::vector<int>& code, const std::vector<double>& kf,
                     const std::vector<std::int64_t>& ki, int result, const std::vector<Holder>& operands) {
    const std::vector<index_t> shape(dst.shape.begin(), dst.shape.begin() + dst.ndim);
    const ProgramIn p = program_in(code, kf, ki, result, operands, shape);
    by_program_type(c, [&](auto t) {
      assign_program<decltype(t)>(dst, p);
      return 0;
    });
    dst.parent->halo_stale = true;
  });
  m.def("bench_cpp_fused5", &bench_cpp_fused5,
        "perf/bench_python.py: the C++ fused kernel out = 0.2 * (a + b + c + d + e), reps times; seconds each.");
  m.def("bench_cpp_dot", &bench_cpp_dot,
        "perf/bench_python.py: spmd::dot(x, y) to the host, reps times; seconds each.");
  m.def("reduce",
        [](Reduction r, DType c, const std::vector<int>& code, const std::vector<double>& kf,
           const std::vector<std::int64_t>& ki, int result, const std::vector<Holder>& operands,
           const std::vector<index_t>& shape) -> nb::object {
          const ProgramIn p = program_in(code, kf, ki, result, operands, shape);
          const Scalar s = by_program_type(c, [&](auto t) { return reduce_program<decltype(t)>(r, p); });
          if (s.is_int) return nb::int_(s.i);
          return nb::float_(s.f);
        });

  // ---- per-axis reductions, generated arrays, shape functions, scans, sorting (issue 28) ----
  m.def("axis_reduce", [](int op, const Holder& h, const std::vector<int>& axes, index_t ddof) {
    return spmd::py::axis_reduce(static_cast<AxisOp>(op), h, axes, ddof);
  });
  m.def("linspace", [](DType dtype, const PyComm& comm, double start, double stop, index_t num, bool endpoint,
                       const std::vector<int>& halo, const std::vector<bool>& periodic, const std::vector<int>& grid,
                       const std::string& label) {
    return spmd::py::linspace(dtype, comm_of(comm), start, stop, num, endpoint, options(halo, periodic, grid, label));
  });
  m.def("eye", [](DType dtype, const PyComm& comm, index_t n, index_t mm, index_t k, const std::vector<int>& halo,
                  const std::vector<bool>& periodic, const std::vector<int>& grid, const std::string& label) {
    return spmd::py::eye(dtype, comm_of(comm), n, mm, k, options(halo, periodic, grid, label));
  });
  m.def("random_fill",
        [](const Holder& h, int kind, std::uint64_t seed, std::uint64_t stream, double a, double b, std::int64_t lo,
           std::int64_t hi) { spmd::py::random_fill(h, static_cast<RandomKind>(kind), seed, stream, a, b, lo, hi); });
  m.def("reshape", &spmd::py::reshape);
  m.def("transpose", &spmd::py::transpose);
  m.def("scan", [](int op, const Holder& h, int axis) { return spmd::py::scan(static_cast<ScanOp>(op), h, axis); });
  m.def("local_block", &spmd::py::local_block);
  m.def("any_rank", &spmd::py::any_rank);
  m.def("sort", [](int op, const Holder& h) { return spmd::py::sort(static_cast<SortOp>(op), h); });

  // ---- sparse matrices and CG (spmdarray.sparse, spmdarray.linalg; sparse.cpp) ----
  using I64Vec = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
  using F64Vec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
  nb::class_<Csr>(m, "CsrMatrix")
      .def("info",
           [](const Csr& a) {
             const CsrInfo i = csr_info(a);
             nb::dict d;
             d["rows"] = i.rows;
             d["cols"] = i.cols;
             d["nnz"] = i.nnz;
             d["local_nnz"] = i.local_nnz;
             d["row_lo"] = i.row_lo;
             d["row_hi"] = i.row_hi;
             d["col_lo"] = i.col_lo;
             d["col_hi"] = i.col_hi;
             d["label"] = i.label;
             return d;
           })
      .def("comm", [](const Csr& a) { return wrap(csr_comm(a)); })
      .def("fits_columns", &csr_fits_columns)
      .def("fits_rows", &csr_fits_rows)
      .def("matvec", &csr_matvec)
      .def("diagonal", &csr_diagonal);
  m.def("owned_rows", [](const PyComm& comm, index_t n) { return owned_rows(comm_of(comm), n); });
  m.def("csr_from_local", [](const PyComm& comm, index_t nrows, index_t ncols, index_t block_cols, I64Vec indptr,
                             I64Vec indices, F64Vec data, const std::string& label) {
    if (indices.shape(0) != data.shape(0))
      throw Error::replicated("spmdarray.sparse.csr_matrix: internal error: indices and data differ in length");
    return csr_from_local(comm_of(comm), nrows, ncols, block_cols, indptr.data(), indptr.shape(0), indices.data(),
                          data.data(), data.shape(0), label);
  });
  m.def("csr_poisson",
        [](const PyComm& comm, const std::vector<index_t>& shape) { return csr_poisson(comm_of(comm), shape); });
  m.def("csr_convection_diffusion2d", [](const PyComm& comm, index_t nx, index_t ny, double peclet) {
    return csr_convection_diffusion2d(comm_of(comm), nx, ny, peclet);
  });
  m.def("csr_cg", [](const Csr& a, const Holder& b, const Holder& x, double rtol, double atol, int max_iters,
                     bool jacobi, bool reproducible, bool history) {
    const CgOutcome r = csr_cg(a, b, x, rtol, atol, max_iters, jacobi, reproducible, history);
    nb::dict d;
    d["converged"] = r.converged;
    d["reason"] = r.reason;
    d["detail"] = r.detail;
    d["iterations"] = r.iterations;
    d["residual"] = r.residual;
    d["true_residual"] = r.true_residual;
    d["history"] = r.history;
    return d;
  });
}
