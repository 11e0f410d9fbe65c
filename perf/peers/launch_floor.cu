// The floor under issue 23's latency targets: what one GPU operation that the host waits for costs
// on this machine with nothing between the program and the CUDA runtime (no Kokkos, no
// spmdarray), so that spmdarray's and CuPy's host-timed latencies can be read against it.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 perf/peers/launch_floor.cu -o launch_floor && ./launch_floor [reps]
//
// (scripts/gpu/compute.sh's `profiles` step compiles it on the lent machine, whose image has nvcc.)
// Each line is the median over reps of a host-timed loop body (std::chrono::steady_clock around
// the operation and the wait), after warm-up:
//   empty+stream_sync   an empty kernel, cudaStreamSynchronize            (the least a fenced launch costs)
//   empty+device_sync   the same with cudaDeviceSynchronize               (what a global fence costs)
//   triad1000+sync      a[i] = b[i] + s c[i] over 1000 doubles, stream sync (BM_assign_expr's statement)
//   sum1000_to_host     one block sums 1000 doubles into device memory, cudaMemcpyAsync of the 8 bytes
//                       to pinned host memory, stream sync               (a dot or sum returned to the host)
//   graph_triad+sync    the triad captured in a CUDA graph, cudaGraphLaunch + stream sync
//   2_kernels+sync      two dependent kernels then one sync (a statement that launches twice)
//   empty_launch_only   the launch call alone (no wait): the host's share of the cost
// With --spin the device is first set to cudaDeviceScheduleSpin (a waiting host thread polls
// rather than yields), which is what the lowest latencies need.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__global__ void empty_kernel() {}

__global__ void triad(double* a, const double* b, const double* c, double s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}

__global__ void block_sum(const double* x, int n, double* out) {
  __shared__ double part[256];
  double v = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

template <class F>
double median_us(int reps, F&& f) {
  for (int i = 0; i < 50; ++i) f();
  std::vector<double> t(reps);
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t[r] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

int main(int argc, char** argv) {
  int reps = 2000;
  bool spin = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--spin"))
      spin = true;
    else
      reps = std::max(11, std::atoi(argv[i]));
  }
  if (spin) CHECK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int n = 1000;
  double *a, *b, *c, *d, *h;
  CHECK(cudaMalloc(&a, n * sizeof(double)));
  CHECK(cudaMalloc(&b, n * sizeof(double)));
  CHECK(cudaMalloc(&c, n * sizeof(double)));
  CHECK(cudaMalloc(&d, sizeof(double)));
  CHECK(cudaMallocHost(&h, sizeof(double)));
  CHECK(cudaMemset(b, 0, n * sizeof(double)));
  CHECK(cudaMemset(c, 0, n * sizeof(double)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int blocks = (n + 255) / 256;

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  triad<<<blocks, 256, 0, s>>>(a, b, c, 3.0, n);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  struct Row {
    const char* name;
    double us;
  };
  std::vector<Row> rows;
  rows.push_back({"empty+stream_sync", median_us(reps, [&] {
                    empty_kernel<<<1, 32, 0, s>>>();
                    CHECK(cudaStreamSynchronize(s));
                  })});
  rows.push_back({"empty+device_sync", median_us(reps, [&] {
                    empty_kernel<<<1, 32, 0, s>>>();
                    CHECK(cudaDeviceSynchronize());
                  })});
  rows.push_back({"triad1000+sync", median_us(reps, [&] {
                    triad<<<blocks, 256, 0, s>>>(a, b, c, 3.0, n);
                    CHECK(cudaStreamSynchronize(s));
                  })});
  rows.push_back({"sum1000_to_host", median_us(reps, [&] {
                    block_sum<<<1, 256, 0, s>>>(b, n, d);
                    CHECK(cudaMemcpyAsync(h, d, sizeof(double), cudaMemcpyDeviceToHost, s));
                    CHECK(cudaStreamSynchronize(s));
                  })});
  rows.push_back({"graph_triad+sync", median_us(reps, [&] {
                    CHECK(cudaGraphLaunch(exec, s));
                    CHECK(cudaStreamSynchronize(s));
                  })});
  rows.push_back({"2_kernels+sync", median_us(reps, [&] {
                    triad<<<blocks, 256, 0, s>>>(a, b, c, 3.0, n);
                    triad<<<blocks, 256, 0, s>>>(b, a, c, 3.0, n);
                    CHECK(cudaStreamSynchronize(s));
                  })});
  rows.push_back({"empty_launch_only", median_us(reps, [&] { empty_kernel<<<1, 32, 0, s>>>(); })});
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGetLastError());

  std::printf("{\"device\": \"%s\", \"schedule\": \"%s\", \"reps\": %d", prop.name, spin ? "spin" : "auto", reps);
  for (const auto& r : rows) std::printf(", \"%s_us\": %.2f", r.name, r.us);
  std::printf("}\n");
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(h));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaFree(d));
  return 0;
}
