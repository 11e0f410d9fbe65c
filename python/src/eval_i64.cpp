// Fused expressions of type std::int64_t (see eval_impl.hpp).
#include "eval_impl.hpp"

namespace spmd::py {
SPMD_PY_INSTANTIATE_PROGRAM(std::int64_t)
}  // namespace spmd::py
