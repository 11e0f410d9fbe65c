// libFuzzer harness of the checkpoint metadata validator (spmd::io::validate_metadata,
// src/io/metadata.cpp): each input describes what inspect() reads from a file
// (checkpoint_metadata_input.hpp); the validator must accept it with a FileInfo whose invariants
// hold, or refuse it with an spmd::Error whose message is printable and bounded. Nothing else:
// no other exception, no crash, no undefined behaviour (built with ASan + UBSan).
//
// Built and run by tests/fuzz/run_checkpoint_metadata_fuzz.sh (clang-14, libFuzzer); crashes it
// finds go to checkpoint_metadata_regressions/, replayed by test_io (IoMetadata.FuzzCorpusAndRegressions).
#include <cstddef>
#include <cstdint>

#include "checkpoint_metadata_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spmd_fuzz::check_validation(spmd_fuzz::decode(data, size));
  return 0;
}
