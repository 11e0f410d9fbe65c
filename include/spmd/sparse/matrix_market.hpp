#pragma once
/// \file sparse/matrix_market.hpp
/// Reading a CsrMatrix from a Matrix Market file (https://math.nist.gov/MatrixMarket/formats.html).
///
/// Supported subset: `%%MatrixMarket matrix coordinate <field> <symmetry>` with field real
/// (also spelled double), integer or pattern (every entry 1), and symmetry general or symmetric.
/// Indices are 1-based in the file. Comment lines (starting with %) may precede the size line
/// `rows cols entries`; blank lines are skipped everywhere. A symmetric file holds one triangle:
/// every off-diagonal entry (i, j) also gives (j, i) (whichever triangle it is in; a symmetric
/// matrix must be square). Repeated (row, column) entries are summed, as the Matrix Market
/// convention and PETSc's ADD_VALUES do; explicit zeros are kept.
///
/// Reading strategy: a parallel read. Rank 0 alone reads the banner, comments and size line
/// (a few lines) and broadcasts them with the byte offset where the entries start. The entry
/// section is then cut into p byte ranges of equal length; each rank reads its own range (plus
/// the rest of the line that crosses its end), parses the lines that start in it, numbers them
/// from an exclusive prefix count of the lines of the ranks before it, and routes each entry
/// (and its mirror) to the rank owning its row with one MPI_Alltoall of counts and one
/// MPI_Alltoallv. So no rank holds more than its share of the file's bytes plus its share of
/// the entries (and a rank 0 bottleneck or O(nnz) buffer never appears, unlike a read-on-root
/// scheme). The file must be readable by every rank (a shared file system), which is where
/// Matrix Market inputs of interesting size live anyway.
///
/// Errors (one spmd::Error, the same on every rank, naming the file and a line number):
/// a missing or unreadable file; a bad banner; an unsupported object, format (array), field
/// (complex) or symmetry (skew-symmetric, hermitian); a missing or malformed size line;
/// a non-square symmetric matrix; a size line with more rows than the ranks can hold (more than
/// INT_MAX per rank, or row pointers beyond the node's memory: the message says how many bytes
/// per rank they would need, and nothing is allocated first); an entry line with the wrong number
/// of fields, a non-numeric index or value, a value that is not finite (nan, inf, or too large
/// for a double; one too small reads as the nearest subnormal or zero), or an index outside
/// 1..rows / 1..cols; more entries than the size line declares (at the first extra line), or
/// fewer (a truncated file). Text from the file appears in a message only as a short excerpt
/// with non-printable bytes escaped (`\xNN`). The text is parsed by src/sparse/matrix_market_parse.hpp
/// (pure functions, fuzzed by tests/fuzz/fuzz_matrix_market.cpp).

#include <new>
#include <string>
#include <utility>
#include <vector>

#include "spmd/sparse/csr_matrix.hpp"

namespace spmd::sparse {

/// What the banner and the size line of a Matrix Market file declare.
struct MatrixMarketSize {
  index_t rows = 0;        ///< the matrix's rows
  index_t cols = 0;        ///< and columns
  index_t entries = 0;     ///< entry lines in the file
  bool symmetric = false;  ///< one triangle stored (each off-diagonal entry stands for two)
};

/// The banner and size line of `path` alone (rank 0 reads a few lines): for a program that
/// checks a file's declared size against its memory before reading it. Collective; throws the
/// same spmd::Error on every rank as read_matrix_market for a missing file, a bad banner or size
/// line.
MatrixMarketSize read_matrix_market_size(const Comm& comm, const std::string& path);

namespace impl {
/// This rank's rows (of the balanced block distribution of the file's row count) of a Matrix
/// Market file: CSR with global columns, sorted within rows, duplicates summed. Collective
/// (src/sparse/matrix_market.cpp).
struct MarketRows {
  index_t rows = 0, cols = 0;
  std::vector<index_t> row_ptr, col;
  std::vector<double> val;
};
MarketRows read_market_rows(const Comm& comm, const std::string& path);
}  // namespace impl

/// The matrix stored in Matrix Market file `path` (see the file comment), rows balanced-block
/// distributed over `comm`. Collective; throws the same spmd::Error on every rank for a
/// malformed or unsupported file, naming the file and the line.
template <class T = double, class M = DefaultMemorySpace>
CsrMatrix<T, M> read_matrix_market(const Comm& comm, const std::string& path) {
  impl::MarketRows r = impl::read_market_rows(comm, path);
  const Distribution<1> rows(comm, Index<1>{r.rows});
  std::vector<T> val;
  bool ok = true;
  try {  // an allocation that fails on some ranks only is agreed on, as in the reader
    val.assign(r.val.begin(), r.val.end());
  } catch (const std::bad_alloc&) {
    ok = false;
  }
  comm.check(ok, "spmd::sparse::read_matrix_market: '" + path + "': rank " + std::to_string(comm.rank()) +
                     " could not allocate " + std::to_string(r.val.size() * sizeof(T)) + " bytes for its " +
                     std::to_string(r.val.size()) + " values (use more ranks)");
  r.val = std::vector<double>();
  return CsrMatrix<T, M>(rows, r.cols, std::move(r.row_ptr), std::move(r.col), std::move(val), path);
}

}  // namespace spmd::sparse
