#pragma once
// The declarations the lower layer needs of the container types: spmd::Array and spmd::ArrayView
// (declared here with their default memory space, defined in array.hpp and slice.hpp), the
// expression marker, and the two ways impl/ reaches into an Array (a second handle on its
// storage, and its opaque per-array slots). impl/ headers include this, never array.hpp or
// slice.hpp: their templates name Array and ArrayView as dependent types, complete where the
// public header that dispatches to them is included.

#include <Kokkos_Core.hpp>

#include <memory>
#include <type_traits>

namespace spmd {

/// The default memory space: that of Kokkos' default execution space (CUDA memory in a CUDA
/// build, host memory in an OpenMP build).
using DefaultMemorySpace = Kokkos::DefaultExecutionSpace::memory_space;

/// Whether a new array's elements are set: `Init::zero` (zeros, halo included) or `Init::none`
/// (left as allocated: spmd::empty).
enum class Init { zero, none };

template <class T, int N, class MemorySpace = DefaultMemorySpace>
class Array;

template <class T, int M, int N, class MemorySpace = DefaultMemorySpace>
class ArrayView;

namespace impl {
/// True for the lazy expressions of expr.hpp and the slices of slice.hpp (types that declare
/// `using spmd_expression = void`).
template <class E, class = void>
struct is_expression : std::false_type {};
template <class E>
struct is_expression<E, std::void_t<typename E::spmd_expression>> : std::true_type {};
template <class E>
inline constexpr bool is_expression_v = is_expression<std::decay_t<E>>::value;

/// A second handle on `a`'s storage (shallow: the library's own bookkeeping, e.g. a solver
/// binding the user's vectors or a slice naming its parent). Local.
template <class T, int N, class M>
Array<T, N, M> share(const Array<T, N, M>& a);

/// The per-array state other modules keep with an array, opaque to Array: made on first use by
/// the module that owns it, shared by the handles impl::share makes, dropped with the storage
/// (a copy starts with none; a move takes them along).
enum class Slot {
  halo_face,  ///< halo.hpp: the array's HaloExchange for Pattern::face
  halo_box,   ///< halo.hpp: the array's HaloExchange for Pattern::box
  expr,       ///< impl/expr_eval.hpp: the expression module's cached plans and temporaries
  fft,        ///< fft.hpp: the one-shot transforms' cached plans (input arrays)
  count
};
/// The slot `s` of `a` (null until its module fills it). Local.
template <class T, int N, class M>
std::shared_ptr<void>& slot(const Array<T, N, M>& a, Slot s);
}  // namespace impl

}  // namespace spmd
