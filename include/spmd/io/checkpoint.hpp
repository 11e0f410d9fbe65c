#pragma once
/// \file io/checkpoint.hpp
/// spmd::io: crash-safe parallel HDF5 checkpoints that load on any rank count.
///
/// A checkpoint is one HDF5 file. Each saved array is one dataset holding the *global* array in
/// row-major order (halos excluded), written collectively through MPI-IO: every rank writes its
/// owned block as a hyperslab. The file therefore does not depend on the rank count or the process
/// grid, and load() reads it into any distribution of the same shape. Root attributes hold the
/// format version, the library version and the user's attributes (step, time, numbers,
/// strings); each dataset carries its element type, global shape and a CRC-32 checksum of its
/// little-endian row-major bytes (the same number as Python's `zlib.crc32(a.tobytes())`).
///
/// Crash safety: save() writes `.<name>.tmp-<id>` beside the target, closes and fsyncs it, then
/// one rank renames it over the target. A run killed at any point leaves the previous file
/// intact; stale temporaries are never read and are removed by the next save of the same path.
/// Errors are agreed across ranks: every rank throws the same spmd::Error. See
/// docs/checkpointing.md for the format and the guarantees.
///
/// Built only when spmdarray is configured with SPMD_ENABLE_HDF5=ON (SPMD_HAVE_HDF5 == 1).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/gather.hpp"
#include "spmd/io/metadata.hpp"

namespace spmd::io {

/// The ElementType of T (a compile error for other types). Local.
template <class T>
constexpr ElementType element_type() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, double>)
    return ElementType::float64;
  else if constexpr (std::is_same_v<U, float>)
    return ElementType::float32;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4)
    return ElementType::int32;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8)
    return ElementType::int64;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 4)
    return ElementType::uint32;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 8)
    return ElementType::uint64;
  else if constexpr (std::is_same_v<U, Kokkos::complex<float>>)
    return ElementType::complex64;
  else if constexpr (std::is_same_v<U, Kokkos::complex<double>>)
    return ElementType::complex128;
  else
    static_assert(sizeof(U) == 0,
                  "spmd::io: element type must be float, double, a 32/64-bit integer or Kokkos::complex<float/double>");
}

/// Options of io::save.
struct SaveOptions {
  bool xdmf = true;  ///< write the .xmf sidecar for the 2-D and 3-D datasets
};
/// Options of io::load and io::load_into.
struct LoadOptions {
  bool verify_checksum = true;  ///< recompute the checksum of what was read and compare
};

namespace impl {
/// A rank's owned block of one array, in host memory, described without its type: `data` points
/// at element (0, ..., 0) of a row-major storage of extents `storage`, the owned block starts at
/// `offset` in it (the halo widths) and has extents `count`; its global origin is `lo`.
struct HostBlock {
  std::string name;
  ElementType type = ElementType::float64;
  std::size_t elem_size = 0;
  Comm comm;
  std::vector<index_t> shape, lo, count, storage, offset;
  void* data = nullptr;
  std::shared_ptr<void> keep;  // owns a staging copy when the array is not host-accessible
};

template <class T, int N>
HostBlock describe_block(std::string name, const Distribution<N>& dist, const std::array<int, N>& storage,
                         const std::array<int, N>& offset, T* data) {
  HostBlock b{std::move(name), element_type<T>(), sizeof(T), dist.comm(), {}, {}, {}, {}, {}, data, nullptr};
  for (int d = 0; d < N; ++d) {
    b.shape.push_back(dist.extent(d));
    b.lo.push_back(dist.owned().lo[d]);
    b.count.push_back(dist.owned().extent(d));
    b.storage.push_back(storage[d]);
    b.offset.push_back(offset[d]);
  }
  return b;
}

/// The owned block of `a` readable from the host: the array's own storage when it is
/// host-accessible (no copy), else a packed host copy. Local.
template <class T, int N, class M>
HostBlock host_block(std::string name, const Array<T, N, M>& a) {
  if constexpr (spmd::impl::host_accessible<M>()) {
    const auto& v = a.local_with_halo();
    std::array<int, N> storage{};
    for (int d = 0; d < N; ++d) storage[d] = static_cast<int>(v.extent(d));
    HostBlock b = describe_block<T, N>(std::move(name), a.distribution(), storage, a.halo(), v.data());
    b.keep = std::make_shared<typename Array<T, N, M>::view_type>(v);  // the storage outlives the block
    return b;
  } else {
    auto copy = std::make_shared<std::vector<T>>(spmd::impl::owned_to_host(a));
    std::array<int, N> storage{};
    for (int d = 0; d < N; ++d) storage[d] = static_cast<int>(a.owned().extent(d));
    HostBlock b = describe_block<T, N>(std::move(name), a.distribution(), storage, std::array<int, N>{}, copy->data());
    b.keep = copy;
    return b;
  }
}

/// Collective save of the blocks; `run_id` (if not empty) becomes the root attribute spmd_run_id.
void save_blocks(const std::string& path, const std::vector<HostBlock>& blocks, const Attributes& attributes,
                 const SaveOptions& options, const std::string& run_id = {});
void load_block(const std::string& path, const HostBlock& block, const LoadOptions& options);
/// CRC-32 of the block's part of the global row-major byte stream, combined over the ranks.
/// Collective over block.comm.
std::uint32_t checksum_block(const HostBlock& block);
/// How src/io/ reads a Dataset's block (defined there).
struct DatasetAccess;
}  // namespace impl

/// One named array to save: `{"u", u}`. Holds the array's owned block (host arrays by reference,
/// device arrays as a host copy taken here). Local.
class Dataset {
 public:
  /// Array `a` saved as dataset `name`. Local.
  template <class T, int N, class M>
  Dataset(std::string name, const Array<T, N, M>& a) : block_(impl::host_block(std::move(name), a)) {}

 private:
  friend struct impl::DatasetAccess;
  impl::HostBlock block_;  // the owned block on the host, with its name and place in the global array
};

/// Write `datasets` (arrays on one communicator; any element types and ranks) and `attributes`
/// to the HDF5 file `path`, replacing it atomically; also `<stem>.xmf` for ParaView/VisIt when
/// any dataset is 2-D or 3-D. Attributes must be the same on every rank. Collective over the
/// arrays' communicator; every rank throws the same spmd::Error on failure. Everything that can
/// fail (the writes, the flushes, the sidecar's text) happens before `path` is replaced, so a
/// failure leaves `path` as it was before the call; only a failed rename of the sidecar, or a
/// failed fsync of the directory, comes after it, and then the message says the checkpoint
/// itself was written (or names the directory).
void save(const std::string& path, const std::vector<Dataset>& datasets, const Attributes& attributes = {},
          const SaveOptions& options = {});

/// Why save(path) would refuse `path` before writing anything, or "" when it would not: `path`
/// (or, with `sidecar`, its `<stem>.xmf`) exists and is not a regular file (a FIFO, a device, a
/// directory, a symbolic link: outputs never replace them), or its directory is missing or not
/// writable. The same text on every rank (rank 0 looks). For programs that check their outputs
/// before any work (the apps' --save). Collective over comm.
std::string output_problem(const std::string& path, const Comm& comm, bool sidecar = true);

/// Read the metadata of a checkpoint: datasets (name, type, shape, checksum), format and library
/// versions, user attributes. Throws the same spmd::Error on every rank for a missing file, a
/// file that is not HDF5 (or truncated), or one this library did not write. Collective over comm.
FileInfo inspect(const std::string& path, const Comm& comm);

/// The user attributes of a checkpoint (see inspect). Collective over comm.
Attributes read_attributes(const std::string& path, const Comm& comm);

/// Read dataset `name` of `path` into the owned block of `a` (any distribution of the dataset's
/// shape; halos are left as they are). Validates the file, the dataset's element type and shape
/// and (by default) its checksum; on failure every rank throws the same spmd::Error naming the
/// file, the dataset and the shapes. Collective over a's communicator.
template <class T, int N, class M>
void load_into(const std::string& path, const std::string& name, const Array<T, N, M>& a,
               const LoadOptions& options = {}) {
  if constexpr (spmd::impl::host_accessible<M>()) {
    impl::load_block(path, impl::host_block(name, a), options);
  } else {
    std::vector<T> host(static_cast<std::size_t>(a.owned().size()));
    std::array<int, N> storage{};
    for (int d = 0; d < N; ++d) storage[d] = static_cast<int>(a.owned().extent(d));
    impl::load_block(
        path, impl::describe_block<T, N>(name, a.distribution(), storage, std::array<int, N>{}, host.data()), options);
    spmd::impl::host_to_owned(a, host);
  }
}

/// A new array on `dist` (halo zero) holding dataset `name` of `path`: `io::load<double>(path,
/// "u", dist)`. Validation as load_into. Collective over dist's communicator.
template <class T, class M = DefaultMemorySpace, int N>
Array<T, N, M> load(const std::string& path, const std::string& name, const Distribution<N>& dist,
                    const LoadOptions& options = {}) {
  Array<T, N, M> a(dist, Label{"spmd::io::load::" + name});
  load_into(path, name, a, options);
  return a;
}

/// CRC-32 (zlib polynomial) of the array's global row-major little-endian bytes, halos
/// excluded: the checksum save() stores. Independent of the distribution. Collective.
template <class T, int N, class M>
std::uint32_t checksum(const Array<T, N, M>& a) {
  return impl::checksum_block(impl::host_block("", a));
}

/// Check that the file `path` is a complete checkpoint: its metadata is valid (as inspect()) and
/// every dataset's data has its stored checksum (each rank reads a slab of each dataset, in
/// pieces of at most 64 MiB). Returns "" when it is, else why not (the same text on every
/// rank). Never throws for a bad file. Collective over comm.
std::string verify(const std::string& path, const Comm& comm);

/// A new run id: 32 random hexadecimal digits drawn by rank 0, the same on every rank.
/// Collective over comm.
std::string new_run_id(const Comm& comm);

/// A series of checkpoints `PREFIX.STEP.h5` (STEP: 10 digits) of one run, of which the newest `keep`
/// are kept.
///
///   io::CheckpointSeries series(comm, "out/heat", 2);
///   series.claim(false);            // a new run: refuses a prefix that already holds files
///   if (step % 100 == 0) series.save(step, {{"u", u}}, {{"time", t}});
///   auto last = series.latest();   // newest complete checkpoint, if any
///
/// Every file of the series records the series' run id (root attribute spmd_run_id, FileInfo::
/// run_id). A series never deletes or replaces a file of another run: save() prunes only files of
/// its own run id, and refuses to replace a file of another run. A run that continues another
/// (a restart) takes that run's id (set_run_id) so that its files form one series with it.
class CheckpointSeries {
 public:
  /// A series of run `run_id` ("": a new id is drawn at the first claim() or save()). Local (no
  /// file is touched).
  CheckpointSeries(Comm comm, std::string prefix, int keep = 2, std::string run_id = {});
  /// The file of `step`. Local.
  std::string path(std::int64_t step) const;
  /// save() to path(step) with the attribute "step" and the run id added, then delete the files of
  /// this run beyond the newest `keep` and stale temporaries of the series. Throws the same
  /// spmd::Error on every rank, before writing, when path(step) exists and is a checkpoint of
  /// another run (or has no run id). Collective.
  void save(std::int64_t step, const std::vector<Dataset>& datasets, Attributes attributes = {},
            const SaveOptions& options = {}) const;
  /// Steps of the series' files present now, ascending. Collective.
  std::vector<std::int64_t> steps() const;

  /// One file of the prefix as claim() and find_latest() see it.
  struct File {
    std::int64_t step = 0;  ///< the step in the file's name
    std::string path;       ///< the file
    std::string run_id;     ///< "" when the file has none or cannot be read
    std::string problem;    ///< "" when the metadata is valid, else why not
  };
  /// Every file `PREFIX.DIGITS.h5` of the series present now with its run id, ascending by step. Rank 0
  /// reads the metadata (not the data). Collective.
  std::vector<File> files() const;

  /// Make sure this series can write into its prefix without mixing runs, before the first
  /// step: a new run (`continuing` false) refuses a prefix that holds any file of the series; a
  /// continued run refuses files of another run id (files whose metadata cannot be read are
  /// left alone: they are never pruned, and one at a step this run saves is replaced). Draws the
  /// run id if the series has none. Throws the same spmd::Error on every rank naming the files
  /// and their run ids. Collective.
  void claim(bool continuing);

  /// The result of find_latest(): the newest valid file (if any) and the newer ones skipped, with
  /// the reason each was skipped (newest first).
  struct Latest {
    std::optional<std::string> path;                           ///< the newest valid file, if any
    std::vector<std::pair<std::string, std::string>> skipped;  ///< newer files and why each was skipped
  };
  /// The newest checkpoint of the series that verify() accepts (valid metadata, every checksum
  /// right), and the invalid newer ones it skipped. Collective.
  Latest find_latest() const;
  /// find_latest().path. Collective.
  std::optional<std::string> latest() const;

  /// The prefix of the series' file names. Local.
  const std::string& prefix() const { return prefix_; }
  /// How many of the newest files are kept. Local.
  int keep() const { return keep_; }
  /// The run id of the series ("" until claim(), save() or set_run_id() gives it one). Local.
  const std::string& run_id() const { return *run_id_; }
  /// Continue run `id` (a run id read from one of its checkpoints). Throws spmd::Error for a
  /// malformed id. Local.
  void set_run_id(const std::string& id);

 private:
  void ensure_run_id() const;
  Comm comm_;
  std::string prefix_;
  int keep_;
  std::shared_ptr<std::string> run_id_;  // shared by copies; drawn lazily
};

}  // namespace spmd::io
