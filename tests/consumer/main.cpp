// Uses the installed spmdarray: a halo exchange and a reduction, checked against closed forms.
#include <spmd.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm comm = rt.world();
  const spmd::index_t n = 100;
  auto a = spmd::arange<double>(comm, n, spmd::halo(1), spmd::periodic());
  spmd::exchange_halo(a);
  // b(i) = a(i-1) + a(i+1) with periodic wrap: sum(b) = 2 sum(a) = n (n - 1).
  auto b = spmd::zeros<double>(a.distribution());
  auto x = a.accessor();
  auto y = b.accessor();
  spmd::for_each(
      b, KOKKOS_LAMBDA(spmd::index_t i) { y(i) = x(i - 1) + x(i + 1); });
  const double s = spmd::sum(b);
  const bool ok = s == static_cast<double>(n * (n - 1)) && b.get(0) == static_cast<double>(n - 1 + 1);
  if (comm.rank() == 0)
    std::printf("consumer: sum %.1f (expected %.1f): %s\n", s, double(n * (n - 1)), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
