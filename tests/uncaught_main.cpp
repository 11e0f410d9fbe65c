// An exception escaping main(): the job must print one message and exit non-zero, not hang.
//   uncaught_main collective  -> every rank throws the same agreed spmd::Error
//   uncaught_main one-rank    -> only the last rank throws; the others wait in a barrier
#include <spmd.hpp>

#include <cstring>
#include <stdexcept>

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm comm = rt.world();
  const bool collective = argc > 1 && std::strcmp(argv[1], "collective") == 0;
  if (collective) {
    comm.check(comm.rank() != 0, "spmd::test: agreed failure");  // every rank throws this
  } else {
    if (comm.rank() == comm.size() - 1) throw std::runtime_error("spmd::test: lonely failure");
    comm.barrier();  // would hang forever without MPI_Abort
  }
  return 0;
}
