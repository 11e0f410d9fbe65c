#pragma once
// The local transforms under spmd::fft (fft.hpp): one batched FFT over a contiguous group of
// axes of one rank's block, by FFTW3 on the host or cuFFT on CUDA (src/fft_local.cpp, so that
// neither library's header reaches a user's translation unit). The distributed plan
// (impl/fft_plan.hpp) moves the data so that the axes of each group are whole on every rank.

#include <memory>
#include <vector>

#include "spmd/types.hpp"

namespace spmd::impl {

/// Complex to complex, real to complex (the last axis of the group halved), complex to real.
enum class FftKind { c2c, r2c, c2r };
/// Where the block lives: host memory (FFTW) or CUDA device memory (cuFFT).
enum class FftDevice { host, cuda };

/// One local transform: a row-major block of extents in_ext (the input) and out_ext (the output;
/// they differ only along the last transformed axis of r2c and c2r), transformed along axes
/// [first, last] with logical lengths n (the real lengths for r2c / c2r), batched over the other
/// axes. Unscaled (the plan scales once at the end).
struct LocalFftSpec {
  FftKind kind = FftKind::c2c;
  bool single = false;  ///< float (Kokkos::complex<float>) rather than double
  int sign = -1;        ///< -1 forward, +1 backward (c2c); r2c is forward, c2r backward
  FftDevice device = FftDevice::host;
  std::vector<index_t> in_ext, out_ext;
  int first = 0, last = 0;
  std::vector<index_t> n;
  bool in_place = false;
  int threads = 1;  ///< FFTW threads (host, built with FFTW's OpenMP library)
};

/// True when this build has the local FFT library of `d` (FFTW3 for the host, cuFFT for CUDA). Local.
bool fft_available(FftDevice d);
/// "FFTW 3.3.10" / "cuFFT 11.x": the library behind `d`, for logs and errors. Local.
const char* fft_library(FftDevice d);

/// A planned local transform. Made on every rank (an empty block makes an empty plan). Throws a
/// local spmd::Error when the library refuses the plan (the distributed plan agrees on it).
class LocalFft {
 public:
  explicit LocalFft(const LocalFftSpec& spec);
  ~LocalFft();
  LocalFft(const LocalFft&) = delete;
  LocalFft& operator=(const LocalFft&) = delete;
  /// Plan again with FFTW_MEASURE (host; on scratch blocks, seconds for large blocks: FFTW
  /// times its candidate algorithms); a no-op on CUDA. Local.
  void measure();
  /// Transform in into out (in == out when planned in place); `stream` is the cudaStream_t of
  /// the execution space instance on CUDA, ignored on the host. Asynchronous on CUDA. Local.
  void execute(void* in, void* out, void* stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace spmd::impl
