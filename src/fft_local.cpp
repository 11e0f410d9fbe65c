// The local transforms of spmd::fft: FFTW3 (guru64 interface) on the host, cuFFT
// (cufftMakePlanMany64) on CUDA. See impl/fft_local.hpp.
#include "spmd/impl/fft_local.hpp"

#include <spmd/config.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "spmd/error.hpp"

#if SPMD_HAVE_FFTW
#include <fftw3.h>
#endif
#if SPMD_HAVE_CUFFT
#include <cuda_runtime.h>
#include <cufft.h>
#endif

namespace spmd::impl {

namespace {

index_t product(const std::vector<index_t>& v, int lo, int hi) {
  index_t p = 1;
  for (int d = lo; d < hi; ++d) p *= v[d];
  return p;
}

const char* kind_name(FftKind k) {
  return k == FftKind::c2c ? "c2c" : k == FftKind::r2c ? "r2c" : "c2r";
}

std::string describe(const LocalFftSpec& s) {
  return str(kind_name(s.kind), s.single ? " float" : " double", " block ", shape_str(s.in_ext), " -> ",
             shape_str(s.out_ext), " axes ", s.first, "..", s.last, " lengths ", shape_str(s.n));
}

}  // namespace

#if SPMD_HAVE_FFTW
namespace {
/// Row-major strides of a block (in elements).
std::vector<index_t> strides_of(const std::vector<index_t>& ext) {
  std::vector<index_t> s(ext.size(), 1);
  for (int d = static_cast<int>(ext.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * ext[d + 1];
  return s;
}
/// FFTW's planner is not thread-safe and its threads need one initialisation: both under one lock.
std::mutex& fftw_lock() {
  static std::mutex m;
  return m;
}
void fftw_threads_once(int threads) {
#if SPMD_HAVE_FFTW_THREADS
  static bool done = false;
  if (!done) {
    if (fftw_init_threads() == 0 || fftwf_init_threads() == 0) throw Error("spmd::fft: fftw_init_threads failed");
    done = true;
  }
  fftw_plan_with_nthreads(threads);
  fftwf_plan_with_nthreads(threads);
#else
  (void)threads;
#endif
}

/// fftw_* or fftwf_*, chosen by precision.
template <bool Single>
struct Fftw;
template <>
struct Fftw<false> {
  using plan = fftw_plan;
  using iodim = fftw_iodim64;
  static int alignment_of(void* p) { return fftw_alignment_of(static_cast<double*>(p)); }
  static plan make(const LocalFftSpec& s, int rank, const iodim* dims, int hr, const iodim* hdims, void* in, void* out,
                   unsigned flags) {
    if (s.kind == FftKind::c2c)
      return fftw_plan_guru64_dft(rank, dims, hr, hdims, static_cast<fftw_complex*>(in),
                                  static_cast<fftw_complex*>(out), s.sign, flags);
    if (s.kind == FftKind::r2c)
      return fftw_plan_guru64_dft_r2c(rank, dims, hr, hdims, static_cast<double*>(in), static_cast<fftw_complex*>(out),
                                      flags);
    return fftw_plan_guru64_dft_c2r(rank, dims, hr, hdims, static_cast<fftw_complex*>(in), static_cast<double*>(out),
                                    flags);
  }
  static void run(const LocalFftSpec& s, plan p, void* in, void* out) {
    if (s.kind == FftKind::c2c)
      fftw_execute_dft(p, static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out));
    else if (s.kind == FftKind::r2c)
      fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<fftw_complex*>(out));
    else
      fftw_execute_dft_c2r(p, static_cast<fftw_complex*>(in), static_cast<double*>(out));
  }
  static void destroy(plan p) { fftw_destroy_plan(p); }
};
template <>
struct Fftw<true> {
  using plan = fftwf_plan;
  using iodim = fftwf_iodim64;
  static int alignment_of(void* p) { return fftwf_alignment_of(static_cast<float*>(p)); }
  static plan make(const LocalFftSpec& s, int rank, const iodim* dims, int hr, const iodim* hdims, void* in, void* out,
                   unsigned flags) {
    if (s.kind == FftKind::c2c)
      return fftwf_plan_guru64_dft(rank, dims, hr, hdims, static_cast<fftwf_complex*>(in),
                                   static_cast<fftwf_complex*>(out), s.sign, flags);
    if (s.kind == FftKind::r2c)
      return fftwf_plan_guru64_dft_r2c(rank, dims, hr, hdims, static_cast<float*>(in), static_cast<fftwf_complex*>(out),
                                       flags);
    return fftwf_plan_guru64_dft_c2r(rank, dims, hr, hdims, static_cast<fftwf_complex*>(in), static_cast<float*>(out),
                                     flags);
  }
  static void run(const LocalFftSpec& s, plan p, void* in, void* out) {
    if (s.kind == FftKind::c2c)
      fftwf_execute_dft(p, static_cast<fftwf_complex*>(in), static_cast<fftwf_complex*>(out));
    else if (s.kind == FftKind::r2c)
      fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<fftwf_complex*>(out));
    else
      fftwf_execute_dft_c2r(p, static_cast<fftwf_complex*>(in), static_cast<float*>(out));
  }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
};

/// One FFTW plan per pair of alignments met (FFTW's new-array execute needs the planned
/// alignment), made with FFTW_ESTIMATE: planning never touches the arrays, so the first
/// execute plans on the caller's own pointers.
template <bool Single>
struct FftwPlans {
  using F = Fftw<Single>;
  std::map<std::pair<int, int>, typename F::plan> plans;
  ~FftwPlans() {
    std::lock_guard<std::mutex> lock(fftw_lock());
    for (auto& kv : plans) F::destroy(kv.second);
  }
  typename F::plan make(const LocalFftSpec& s, void* in, void* out, unsigned flags) const {
    const auto is = strides_of(s.in_ext), os = strides_of(s.out_ext);
    std::vector<typename F::iodim> dims, hdims;
    for (int a = s.first; a <= s.last; ++a)
      dims.push_back({static_cast<std::ptrdiff_t>(s.n[a - s.first]), static_cast<std::ptrdiff_t>(is[a]),
                      static_cast<std::ptrdiff_t>(os[a])});
    for (int a = 0; a < static_cast<int>(s.in_ext.size()); ++a)
      if ((a < s.first || a > s.last) && s.in_ext[a] != 1)
        hdims.push_back({static_cast<std::ptrdiff_t>(s.in_ext[a]), static_cast<std::ptrdiff_t>(is[a]),
                         static_cast<std::ptrdiff_t>(os[a])});
    typename F::plan p = nullptr;
    {
      std::lock_guard<std::mutex> lock(fftw_lock());
      fftw_threads_once(s.threads);
      p = F::make(s, static_cast<int>(dims.size()), dims.data(), static_cast<int>(hdims.size()), hdims.data(), in, out,
                  flags | (s.kind == FftKind::c2r ? FFTW_DESTROY_INPUT : 0u));
    }
    if (!p) throw Error(str("spmd::fft: FFTW could not plan the local transform (", describe(s), ")"));
    return p;
  }
  /// FFTW_MEASURE: times candidate algorithms on scratch blocks (it overwrites what it plans on,
  /// so never the caller's arrays), for the alignment FFTW's own allocations have; executes on
  /// other alignments plan with FFTW_ESTIMATE as they come.
  void measure(const LocalFftSpec& s) {
    const std::size_t real = Single ? sizeof(float) : sizeof(double);
    std::size_t in_bytes = real * (s.kind == FftKind::r2c ? 1 : 2), out_bytes = real * (s.kind == FftKind::c2r ? 1 : 2);
    for (auto e : s.in_ext) in_bytes *= static_cast<std::size_t>(e);
    for (auto e : s.out_ext) out_bytes *= static_cast<std::size_t>(e);
    void* in = fftw_malloc(s.in_place ? std::max(in_bytes, out_bytes) : in_bytes);
    void* out = s.in_place ? in : fftw_malloc(out_bytes);
    if (!in || !out) {
      fftw_free(in);
      if (out != in) fftw_free(out);
      throw Error(str("spmd::fft: no memory for FFTW_MEASURE's scratch blocks (", describe(s), ")"));
    }
    try {
      const auto key = std::make_pair(F::alignment_of(in), F::alignment_of(out));
      auto p = make(s, in, out, FFTW_MEASURE);
      auto it = plans.find(key);
      if (it != plans.end()) {
        std::lock_guard<std::mutex> lock(fftw_lock());
        F::destroy(it->second);
        it->second = p;
      } else {
        plans.emplace(key, p);
      }
    } catch (...) {
      fftw_free(in);
      if (out != in) fftw_free(out);
      throw;
    }
    fftw_free(in);
    if (out != in) fftw_free(out);
  }
  void execute(const LocalFftSpec& s, void* in, void* out) {
    const auto key = std::make_pair(F::alignment_of(in), F::alignment_of(out));
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, make(s, in, out, FFTW_ESTIMATE)).first;
    F::run(s, it->second, in, out);
  }
};
}  // namespace
#endif

#if SPMD_HAVE_CUFFT
namespace {
void check_cufft(cufftResult r, const char* call, const LocalFftSpec& s) {
  if (r != CUFFT_SUCCESS)
    throw Error(str("spmd::fft: ", call, " failed with cufftResult ", static_cast<int>(r), " (", describe(s), ")"));
}
/// One cuFFT plan: a batch over one axis (the axes after the group when there are any, else the
/// axes before it), repeated over the axes before the group in the first case.
struct CufftPlan {
  cufftHandle h = 0;
  bool made = false;
  index_t loops = 1, in_step = 0, out_step = 0;  // repetitions and their offsets (elements)
  std::size_t in_bytes = 0, out_bytes = 0;       // element sizes
  explicit CufftPlan(const LocalFftSpec& s) {
    const int N = static_cast<int>(s.in_ext.size());
    const index_t inner = product(s.in_ext, s.last + 1, N), outer = product(s.in_ext, 0, s.first);
    std::vector<long long> n, inembed, onembed;
    for (int a = s.first; a <= s.last; ++a) {
      n.push_back(s.n[a - s.first]);
      inembed.push_back(s.in_ext[a]);
      onembed.push_back(s.out_ext[a]);
    }
    long long istride, idist, ostride, odist, batch;
    if (inner == 1) {
      istride = ostride = 1;
      idist = product(s.in_ext, s.first, s.last + 1);
      odist = product(s.out_ext, s.first, s.last + 1);
      batch = outer;
    } else if (outer == 1 || outer <= inner) {
      // batch over the axes after the group, repeated over those before it
      istride = ostride = inner;
      idist = odist = 1;
      batch = inner;
      loops = outer;
      in_step = product(s.in_ext, s.first, N);
      out_step = product(s.out_ext, s.first, N);
    } else {
      // batch over the axes before the group, repeated over those after it
      istride = ostride = inner;
      idist = product(s.in_ext, s.first, N);
      odist = product(s.out_ext, s.first, N);
      batch = outer;
      loops = inner;
      in_step = out_step = 1;
    }
    const std::size_t real = s.single ? sizeof(float) : sizeof(double);
    in_bytes = (s.kind == FftKind::r2c ? 1 : 2) * real;
    out_bytes = (s.kind == FftKind::c2r ? 1 : 2) * real;
    const cufftType type = s.kind == FftKind::c2c   ? (s.single ? CUFFT_C2C : CUFFT_Z2Z)
                           : s.kind == FftKind::r2c ? (s.single ? CUFFT_R2C : CUFFT_D2Z)
                                                    : (s.single ? CUFFT_C2R : CUFFT_Z2D);
    check_cufft(cufftCreate(&h), "cufftCreate", s);
    made = true;
    std::size_t work = 0;
    check_cufft(cufftMakePlanMany64(h, static_cast<int>(n.size()), n.data(), inembed.data(), istride, idist,
                                    onembed.data(), ostride, odist, type, batch, &work),
                "cufftMakePlanMany64", s);
  }
  ~CufftPlan() {
    if (made) cufftDestroy(h);
  }
  void execute(const LocalFftSpec& s, void* in, void* out, void* stream) const {
    check_cufft(cufftSetStream(h, static_cast<cudaStream_t>(stream)), "cufftSetStream", s);
    for (index_t l = 0; l < loops; ++l) {
      char* i = static_cast<char*>(in) + l * in_step * static_cast<index_t>(in_bytes);
      char* o = static_cast<char*>(out) + l * out_step * static_cast<index_t>(out_bytes);
      cufftResult r;
      const int dir = s.sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE;
      if (s.single) {
        if (s.kind == FftKind::c2c)
          r = cufftExecC2C(h, reinterpret_cast<cufftComplex*>(i), reinterpret_cast<cufftComplex*>(o), dir);
        else if (s.kind == FftKind::r2c)
          r = cufftExecR2C(h, reinterpret_cast<cufftReal*>(i), reinterpret_cast<cufftComplex*>(o));
        else
          r = cufftExecC2R(h, reinterpret_cast<cufftComplex*>(i), reinterpret_cast<cufftReal*>(o));
      } else {
        if (s.kind == FftKind::c2c)
          r = cufftExecZ2Z(h, reinterpret_cast<cufftDoubleComplex*>(i), reinterpret_cast<cufftDoubleComplex*>(o), dir);
        else if (s.kind == FftKind::r2c)
          r = cufftExecD2Z(h, reinterpret_cast<cufftDoubleReal*>(i), reinterpret_cast<cufftDoubleComplex*>(o));
        else
          r = cufftExecZ2D(h, reinterpret_cast<cufftDoubleComplex*>(i), reinterpret_cast<cufftDoubleReal*>(o));
      }
      check_cufft(r, "cufftExec", s);
    }
  }
};
}  // namespace
#endif

struct LocalFft::Impl {
  LocalFftSpec spec;
  bool empty = false;
#if SPMD_HAVE_FFTW
  std::unique_ptr<FftwPlans<false>> fftw_d;
  std::unique_ptr<FftwPlans<true>> fftw_f;
#endif
#if SPMD_HAVE_CUFFT
  std::unique_ptr<CufftPlan> cufft;
#endif
};

LocalFft::LocalFft(const LocalFftSpec& spec) : p_(std::make_unique<Impl>()) {
  p_->spec = spec;
  const int N = static_cast<int>(spec.in_ext.size());
  if (static_cast<int>(spec.out_ext.size()) != N || spec.first < 0 || spec.last < spec.first || spec.last >= N ||
      static_cast<int>(spec.n.size()) != spec.last - spec.first + 1)
    throw Error(str("spmd::impl::LocalFft: inconsistent spec (", describe(spec), ")"));
  p_->empty = product(spec.in_ext, 0, N) == 0 || product(spec.out_ext, 0, N) == 0;
  if (!fft_available(spec.device))
    throw Error(str(
        "spmd::fft: this build has no ", spec.device == FftDevice::host ? "FFTW3" : "cuFFT", " for arrays in ",
        spec.device == FftDevice::host ? "host" : "CUDA device", " memory (configure with ",
        spec.device == FftDevice::host ? "SPMD_ENABLE_FFTW=ON and FFTW3 installed" : "Kokkos built with CUDA", ")"));
  if (p_->empty) return;
  if (spec.device == FftDevice::host) {
#if SPMD_HAVE_FFTW
    if (spec.single)
      p_->fftw_f = std::make_unique<FftwPlans<true>>();
    else
      p_->fftw_d = std::make_unique<FftwPlans<false>>();
#endif
  } else {
#if SPMD_HAVE_CUFFT
    p_->cufft = std::make_unique<CufftPlan>(spec);
#endif
  }
}

LocalFft::~LocalFft() = default;

void LocalFft::measure() {
  if (p_->empty || p_->spec.device != FftDevice::host) return;  // cuFFT chooses its algorithm itself
#if SPMD_HAVE_FFTW
  if (p_->spec.single)
    p_->fftw_f->measure(p_->spec);
  else
    p_->fftw_d->measure(p_->spec);
#endif
}

void LocalFft::execute(void* in, void* out, void* stream) const {
  if (p_->empty) return;
  const LocalFftSpec& s = p_->spec;
  if (s.device == FftDevice::host) {
#if SPMD_HAVE_FFTW
    (void)stream;
    if (s.single)
      p_->fftw_f->execute(s, in, out);
    else
      p_->fftw_d->execute(s, in, out);
#endif
  } else {
#if SPMD_HAVE_CUFFT
    p_->cufft->execute(s, in, out, stream);
#endif
  }
  (void)in;
  (void)out;
  (void)stream;
}

bool fft_available(FftDevice d) {
  if (d == FftDevice::host) return SPMD_HAVE_FFTW != 0;
  return SPMD_HAVE_CUFFT != 0;
}

const char* fft_library(FftDevice d) {
#if SPMD_HAVE_FFTW
  if (d == FftDevice::host) return fftw_version;
#endif
#if SPMD_HAVE_CUFFT
  if (d == FftDevice::cuda) return "cuFFT";
#endif
  return "none";
}

}  // namespace spmd::impl
