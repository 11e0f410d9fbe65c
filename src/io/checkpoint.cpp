// spmd::io: parallel HDF5 checkpoints (see include/spmd/io/checkpoint.hpp, docs/checkpointing.md).
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>

#include <zlib.h>

#include "io_internal.hpp"
#include "spmd/io/impl/testing.hpp"
#include "spmd/config.hpp"

namespace spmd::io {

namespace impl {
namespace {

namespace fs = std::filesystem;

// ---- HDF5 plumbing: RAII handles, silenced error stack, checked calls ----------------------------

/// Turns HDF5's automatic error printing off for its lifetime (restores it afterwards).
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The descriptions on HDF5's current error stack, innermost last, joined by "; ".
std::string hdf5_errors() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto& s = *static_cast<std::string*>(data);
        if (e->desc && *e->desc) s += str(s.empty() ? "" : "; ", e->desc);
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out.empty() ? "no HDF5 error detail" : out;
}

/// The context of the calls of one public function on one file, for messages.
struct Where {
  const char* fn;
  std::string path;
  std::string note = {};  // e.g. "written as its temporary '.x.h5.tmp-...'"
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(
        str(fn, ": ", what, " failed for '", path, "'", note.empty() ? "" : " (" + note + ")", ": ", hdf5_errors()));
  }
  herr_t check(herr_t rc, const char* what) const {
    if (rc < 0) fail(what);
    return rc;
  }
};

/// An owned hid_t closed by its close function. The handle of a file opened with MPI-IO, or of
/// a dataset in one, is collective (made with Collective): closing it is a collective call over
/// the file's ranks (HDF5: H5Fclose, H5Dclose), so its destructor never closes it. The code
/// closes such handles on every rank at the same point: close() on the normal path, abandon()
/// after the ranks agreed that one of them failed. One still open at destruction (an exception
/// that left the scope before the ranks agreed) is reported on stderr and left open: closing it
/// here could wait forever for ranks that are elsewhere, and HDF5 closes what is left open at
/// MPI_Finalize.
class Handle {
 public:
  /// The tag of a collective handle, with the rank (for the report).
  struct Collective {
    int rank;
  };
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t), const Where& w, const char* what) : id_(id), close_(close) {
    if (id_ < 0) w.fail(what);
  }
  Handle(hid_t id, herr_t (*close)(hid_t), const Where& w, const char* what, Collective c)
      : id_(id), close_(close), collective_(true), rank_(c.rank), what_(what), path_(w.path) {
    if (id_ < 0) w.fail(what);
  }
  Handle(Handle&& o) noexcept
      : id_(o.id_),
        close_(o.close_),
        collective_(o.collective_),
        rank_(o.rank_),
        what_(o.what_),
        path_(std::move(o.path_)) {
    o.id_ = -1;
  }
  Handle& operator=(Handle&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    std::swap(collective_, o.collective_);
    std::swap(rank_, o.rank_);
    std::swap(what_, o.what_);
    std::swap(path_, o.path_);
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ < 0 || !close_) return;
    if (!collective_) {
      close_(id_);  // errors on the unwinding path are not reportable
      return;
    }
    std::fprintf(stderr,
                 "spmd::io: rank %d leaves the %s of '%s' open after an error it did not agree on with the other "
                 "ranks (closing it is collective over the file's ranks; HDF5 closes it at MPI_Finalize)\n",
                 rank_, what_, path_.c_str());
  }
  /// Close now and report failure (a file's close is where its data is flushed). Collective for
  /// a collective handle.
  void close(const Where& w, const char* what) {
    const hid_t id = id_;
    id_ = -1;
    if (id >= 0) w.check(close_(id), what);
  }
  /// Close after a failure every rank agreed on, ignoring errors (the file is being discarded).
  /// Collective for a collective handle (every rank abandons its handles in the same order).
  void abandon() noexcept {
    const hid_t id = id_;
    id_ = -1;
    if (id >= 0 && close_) close_(id);
  }
  operator hid_t() const { return id_; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
  bool collective_ = false;
  int rank_ = -1;
  const char* what_ = "";
  std::string path_;
};

/// Run the steps of a collective HDF5 sequence so that no rank enters the next collective call
/// (or closes the file) while another has failed: step(f) runs f on every rank whose sequence
/// is still good, then the ranks agree (one MPI_Allreduce) whether all are. `ok` and `msg`
/// stay this rank's own outcome, for Comm::check afterwards. Collective.
class Steps {
 public:
  explicit Steps(const Comm& comm) : comm_(comm) {}
  template <class F>
  bool step(F&& f) {
    if (all_ok_) try {
        f();
      } catch (const std::exception& e) {
        ok = false;
        msg = e.what();
      }
    all_ok_ = comm_.allreduce(ok ? 0 : 1, Op::max) == 0;
    return all_ok_;
  }
  /// Close a collective handle (a dataset, then its file) at the same point on every rank: as a
  /// step while all is well; after an agreed failure abandoned (errors ignored), `also` (the
  /// file's open dataset, if any) first. Collective.
  void close(const Where& w, Handle& h, const char* what, Handle* also = nullptr) {
    if (all_ok_) {
      step([&] { h.close(w, what); });
    } else {
      if (also) also->abandon();
      h.abandon();
    }
  }
  /// Whether every rank's steps so far succeeded (as agreed). Local.
  bool all_ok() const { return all_ok_; }
  bool ok = true;
  std::string msg;

 private:
  const Comm& comm_;
  bool all_ok_ = true;
};

/// The compound {r, i} of two `part` floats: h5py's complex layout.
hid_t make_complex_type(hid_t part, std::size_t part_size) {
  const hid_t t = H5Tcreate(H5T_COMPOUND, 2 * part_size);
  if (t < 0 || H5Tinsert(t, "r", 0, part) < 0 || H5Tinsert(t, "i", part_size, part) < 0) return -1;
  return t;
}
/// The complex64 / complex128 type in memory (native floats) or in the file (little-endian):
/// made once, kept open for the process (HDF5 closes it at exit).
hid_t complex_type(ElementType t, bool file) {
  static const hid_t types[2][2] = {{make_complex_type(H5T_NATIVE_FLOAT, 4), make_complex_type(H5T_NATIVE_DOUBLE, 8)},
                                    {make_complex_type(H5T_IEEE_F32LE, 4), make_complex_type(H5T_IEEE_F64LE, 8)}};
  return types[file ? 1 : 0][t == ElementType::complex128 ? 1 : 0];
}

hid_t mem_type(ElementType t) {
  switch (t) {
    case ElementType::complex64:
    case ElementType::complex128:
      return complex_type(t, false);
    case ElementType::int32:
      return H5T_NATIVE_INT32;
    case ElementType::int64:
      return H5T_NATIVE_INT64;
    case ElementType::uint32:
      return H5T_NATIVE_UINT32;
    case ElementType::uint64:
      return H5T_NATIVE_UINT64;
    case ElementType::float32:
      return H5T_NATIVE_FLOAT;
    case ElementType::float64:
      return H5T_NATIVE_DOUBLE;
  }
  return -1;
}
hid_t file_type(ElementType t) {
  switch (t) {
    case ElementType::complex64:
    case ElementType::complex128:
      return complex_type(t, true);
    case ElementType::int32:
      return H5T_STD_I32LE;
    case ElementType::int64:
      return H5T_STD_I64LE;
    case ElementType::uint32:
      return H5T_STD_U32LE;
    case ElementType::uint64:
      return H5T_STD_U64LE;
    case ElementType::float32:
      return H5T_IEEE_F32LE;
    case ElementType::float64:
      return H5T_IEEE_F64LE;
  }
  return -1;
}
// ---- attributes ------------------------------------------------------------------------------------

void write_attr(hid_t loc, const std::string& name, hid_t ftype, hid_t mtype, const void* buf, const Where& w,
                const std::vector<hsize_t>& dims = {}) {
  Handle space(
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose, w, "H5Screate (attribute)");
  Handle attr(H5Acreate2(loc, name.c_str(), ftype, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, w,
              "H5Acreate2 (attribute)");
  w.check(H5Awrite(attr, mtype, buf), "H5Awrite (attribute)");
}
void write_attr_value(hid_t loc, const std::string& name, const AttributeValue& v, const Where& w) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) {
    write_attr(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, i, w);
  } else if (const auto* d = std::get_if<double>(&v)) {
    write_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, d, w);
  } else {
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose, w, "H5Tcopy (string)");
    w.check(H5Tset_size(t, H5T_VARIABLE), "H5Tset_size");
    w.check(H5Tset_cset(t, H5T_CSET_UTF8), "H5Tset_cset");
    const char* p = std::get<std::string>(v).c_str();
    write_attr(loc, name, t, t, &p, w);
  }
}

/// Reads the attribute `name` of `loc` as HDF5 reports it (RawValue): its class, its number of
/// elements and, for integers and reals of at most 64 elements and scalar strings, its values.
RawValue read_raw_value(hid_t loc, const char* name, const Where& w) {
  constexpr hssize_t max_points = 64;
  RawValue out;
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose, w, "H5Aopen");
  Handle space(H5Aget_space(attr), H5Sclose, w, "H5Aget_space");
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points < 0) w.fail("H5Sget_simple_extent_npoints");
  out.points = static_cast<std::uint64_t>(points);
  Handle type(H5Aget_type(attr), H5Tclose, w, "H5Aget_type");
  const H5T_class_t cls = H5Tget_class(type);
  if (cls == H5T_INTEGER) {
    out.kind = RawValue::Kind::integer;
    if (points > 0 && points <= max_points) {
      out.ints.resize(static_cast<std::size_t>(points));
      w.check(H5Aread(attr, H5T_NATIVE_INT64, out.ints.data()), "H5Aread");
    }
  } else if (cls == H5T_FLOAT) {
    out.kind = RawValue::Kind::real;
    if (points > 0 && points <= max_points) {
      out.reals.resize(static_cast<std::size_t>(points));
      w.check(H5Aread(attr, H5T_NATIVE_DOUBLE, out.reals.data()), "H5Aread");
    }
  } else if (cls == H5T_STRING) {
    out.kind = RawValue::Kind::string;
    if (points != 1) return out;
    const htri_t vl = H5Tis_variable_str(type);
    w.check(vl, "H5Tis_variable_str");
    if (vl > 0) {
      char* p = nullptr;
      w.check(H5Aread(attr, type, &p), "H5Aread");
      out.text = p ? p : "";
      w.check(H5Dvlen_reclaim(type, space, H5P_DEFAULT, &p), "H5Dvlen_reclaim");
    } else {
      std::string s(H5Tget_size(type), '\0');
      w.check(H5Aread(attr, type, s.data()), "H5Aread");
      s.resize(std::strlen(s.c_str()));
      out.text = s;
    }
  }
  return out;
}

/// Every attribute of `loc`, as HDF5 reports it.
RawAttributes read_raw_attrs(hid_t loc, const Where& w) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  w.check(H5Aiterate2(
              loc, H5_INDEX_NAME, H5_ITER_INC, &idx,
              [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
                static_cast<std::vector<std::string>*>(data)->push_back(name);
                return 0;
              },
              &names),
          "H5Aiterate2");
  RawAttributes out;
  for (const auto& n : names) out[n] = read_raw_value(loc, n.c_str(), w);
  return out;
}

// ---- serialisation of attributes (to compare them across ranks) ----------------------------------

std::string serialize(const Attributes& a) {
  std::ostringstream os;
  os.precision(17);
  for (const auto& [k, v] : a) {
    os << k.size() << ':' << k << '=' << v.index() << ':';
    if (const auto* i = std::get_if<std::int64_t>(&v))
      os << *i;
    else if (const auto* d = std::get_if<double>(&v))
      os << std::hexfloat << *d << std::defaultfloat;
    else
      os << std::get<std::string>(v).size() << ':' << std::get<std::string>(v);
    os << ';';
  }
  return os.str();
}

/// rank 0's string on every rank. Collective.
std::string bcast_string(const Comm& comm, std::string s) {
  int n = comm.bcast(static_cast<int>(s.size()), 0);
  s.resize(static_cast<std::size_t>(n));
  comm.bcast(s.data(), n, 0);
  return s;
}

// ---- fault injection -------------------------------------------------------------------------------

/// The fault spmd::testing::io_fault armed (phase empty: none). Process-wide, set only by tests.
struct Fault {
  std::string phase;
  int rank = -1;
  bool error = false;  // throw an spmd::Error on that rank (else SIGKILL)
};
Fault& armed_fault() {
  static Fault f;
  return f;
}

/// Where spmd::testing::io_fault may kill a rank: the armed rank raises SIGKILL at the armed phase.
void fault_point(const Comm& comm, const char* phase) {
  const Fault& f = armed_fault();
  if (f.phase.empty() || f.phase != phase || f.rank != comm.rank()) return;
  if (f.error) throw Error(str("spmd::io::save: test fault: rank ", comm.rank(), " fails at ", phase));
  std::fprintf(stderr, "spmd::io: test fault: rank %d kills itself at %s\n", comm.rank(), phase);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

// ---- files -----------------------------------------------------------------------------------------

std::string temp_prefix(const std::string& path) {
  const fs::path p(path);
  return "." + p.filename().string() + ".tmp-";
}

/// Remove stale temporaries of `path` left by killed saves. Local (rank 0).
void remove_stale_temps(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string pre = temp_prefix(path);
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, pre.size(), pre) == 0) fs::remove(it->path(), ec);
  }
}

void fsync_path(const std::string& path, bool directory, const char* fn) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) throw Error(str(fn, ": cannot open '", path, "' to fsync it: ", std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0 && !(directory && (e == EINVAL || e == EROFS)))
    throw Error(str(fn, ": fsync of '", path, "' failed: ", std::strerror(e)));
}

/// Datasets of this many bytes or more start on multiples of it in the file (file-system blocks,
/// stripes); a file holding one has a user block of this size (HDF5 wants the user block to be
/// a multiple of the alignment), others the smallest that holds the integrity record.
constexpr hsize_t large_dataset = hsize_t(1) << 20;

Handle mpio_fapl(const Comm& comm, const Where& w, bool align = false) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, w, "H5Pcreate (file access)");
  w.check(H5Pset_fapl_mpio(fapl, comm.raw(), MPI_INFO_NULL), "H5Pset_fapl_mpio");
  w.check(H5Pset_all_coll_metadata_ops(fapl, true), "H5Pset_all_coll_metadata_ops");
  w.check(H5Pset_coll_metadata_write(fapl, true), "H5Pset_coll_metadata_write");
  if (align) w.check(H5Pset_alignment(fapl, large_dataset, large_dataset), "H5Pset_alignment");
  return fapl;
}

/// File and memory selections of a rank's owned block.
struct Selections {
  Handle file, mem;
};
Selections select_block(hid_t dset, const HostBlock& b, const Where& w) {
  Selections s;
  s.file = Handle(H5Dget_space(dset), H5Sclose, w, "H5Dget_space");
  bool empty = false;
  for (index_t c : b.count) empty = empty || c == 0;
  if (empty) {
    w.check(H5Sselect_none(s.file), "H5Sselect_none");
    s.mem = Handle(H5Screate(H5S_SCALAR), H5Sclose, w, "H5Screate");
    w.check(H5Sselect_none(s.mem), "H5Sselect_none");
    return s;
  }
  const int n = static_cast<int>(b.shape.size());
  std::vector<hsize_t> lo(b.lo.begin(), b.lo.end()), count(b.count.begin(), b.count.end()),
      storage(b.storage.begin(), b.storage.end()), offset(b.offset.begin(), b.offset.end());
  w.check(H5Sselect_hyperslab(s.file, H5S_SELECT_SET, lo.data(), nullptr, count.data(), nullptr),
          "H5Sselect_hyperslab (file)");
  s.mem = Handle(H5Screate_simple(n, storage.data(), nullptr), H5Sclose, w, "H5Screate_simple (memory)");
  w.check(H5Sselect_hyperslab(s.mem, H5S_SELECT_SET, offset.data(), nullptr, count.data(), nullptr),
          "H5Sselect_hyperslab (memory)");
  return s;
}

Handle collective_dxpl(const Where& w) {
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, w, "H5Pcreate (transfer)");
  w.check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  return dxpl;
}

bool valid_name(const std::string& n) {
  return !n.empty() && n.find('/') == std::string::npos && n != "." && n.compare(0, 5, "spmd_") != 0;
}

// ---- inspect ---------------------------------------------------------------------------------------

// ---- the integrity record, checked before HDF5 opens a file (spmd/io/integrity.hpp) ---------------

/// A file descriptor closed at scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Read exactly n bytes at offset; false on a short read or an error (errno set).
bool pread_all(int fd, std::uint64_t offset, std::size_t n, char* out) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    out += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

/// CRC-32 of the bytes [offset, offset + n) of fd (read in pieces of 1 MiB); throws on a read error.
std::uint32_t crc_of_bytes(int fd, std::uint64_t offset, std::uint64_t n, std::uint32_t crc, std::vector<char>& buf,
                           const std::string& what) {
  buf.resize(std::size_t(1) << 20);
  uLong c = crc;
  while (n > 0) {
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, buf.size()));
    if (!pread_all(fd, offset, k, buf.data())) throw Error(str(what, ": ", std::strerror(errno)));
    c = crc32_z(c, reinterpret_cast<const Bytef*>(buf.data()), k);
    offset += k;
    n -= k;
  }
  return static_cast<std::uint32_t>(c);
}

/// What a reader checked of a file before HDF5 opened it.
struct CheckedFile {
  IntegrityRecord record;
  struct stat st {};
};

/// Check the file `path` against its integrity record before HDF5 parses any of it: a regular
/// file (opened without blocking, so a FIFO cannot hang the reader), an intact record, the
/// recorded size, and the recorded checksum of every byte outside the datasets' raw data (the
/// HDF5 metadata, the attributes included). Throws spmd::Error (local) naming the file and what
/// is wrong, in one line. Local.
CheckedFile check_integrity(const std::string& path, const std::string& shown, const char* fn) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f.fd < 0) throw Error(str(fn, ": cannot open checkpoint '", shown, "': ", std::strerror(errno)));
  CheckedFile out;
  if (::fstat(f.fd, &out.st) != 0) throw Error(str(fn, ": cannot stat '", shown, "': ", std::strerror(errno)));
  if (!S_ISREG(out.st.st_mode))
    throw Error(str(fn, ": checkpoint '", shown, "' is ", file_kind(out.st.st_mode), ", not a regular file"));
  const auto size = static_cast<std::uint64_t>(out.st.st_size);
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 512)), '\0');
  const std::string reading = str(fn, ": reading '", shown, "' failed");
  std::size_t need = 0;
  for (int pass = 0;; ++pass) {
    if (!pread_all(f.fd, 0, head.size(), head.data())) throw Error(str(reading, ": ", std::strerror(errno)));
    const std::string why = decode_integrity_record(head, size, out.record, need);
    if (why.empty()) break;
    if (need == 0 || pass > 0 || need <= head.size()) throw Error(str(fn, ": '", shown, "' ", why));
    head.resize(need);
  }
  std::uint32_t crc = static_cast<std::uint32_t>(crc32(0L, Z_NULL, 0));
  std::uint64_t bytes = 0;
  std::vector<char> buf;
  for (const auto& [at, n] : metadata_spans(out.record)) {
    crc = crc_of_bytes(f.fd, at, n, crc, buf, reading);
    bytes += n;
  }
  if (crc != out.record.metadata_crc) {
    char text[128];
    std::snprintf(text, sizeof text, "has the checksum 0x%08x, not the 0x%08x its integrity record says",
                  static_cast<unsigned>(crc), static_cast<unsigned>(out.record.metadata_crc));
    throw Error(str(fn, ": '", shown, "' is damaged: its HDF5 metadata (the ", bytes,
                    " bytes outside the datasets' data) ", text, "; it is not read"));
  }
  return out;
}

/// Reads the file's metadata on this rank alone (serial driver), as HDF5 reports it, after
/// check_integrity() accepted it (`checked`). Throws spmd::Error (local) when the file cannot be
/// opened or read, or changed while it was read.
/// Marks `d` complex when the compound `type` is h5py's complex layout: exactly two members
/// named r and i, floats of one size and byte order, at offsets 0 and half the size (anything
/// else stays Class::other, which no element type accepts). Local; no HDF5 error escapes.
void complex_layout(hid_t type, RawDataset& d) {
  if (H5Tget_nmembers(type) != 2) return;
  const std::size_t half = d.type_size / 2;
  bool ok = d.type_size == 2 * half;
  bool little = true;
  const char* names[2] = {"r", "i"};
  for (unsigned k = 0; k < 2 && ok; ++k) {
    char* name = H5Tget_member_name(type, k);
    ok = name != nullptr && std::string(name) == names[k];
    if (name) H5free_memory(name);
    ok = ok && H5Tget_member_class(type, k) == H5T_FLOAT && H5Tget_member_offset(type, k) == k * half;
    if (!ok) break;
    const hid_t part = H5Tget_member_type(type, k);
    ok = part >= 0 && H5Tget_size(part) == half;
    little = little && part >= 0 && H5Tget_order(part) == H5T_ORDER_LE;
    if (part >= 0) H5Tclose(part);
  }
  H5Eclear2(H5E_DEFAULT);
  if (!ok) return;
  d.type_class = RawDataset::Class::complex;
  d.little_endian = little;
}

RawMetadata read_raw_local(const std::string& path, const char* fn, CheckedFile& checked) {
  QuietHdf5 quiet;
  const std::string shown = printable(path, 200);
  const Where w{fn, shown};
  checked = check_integrity(path, shown, fn);
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, w, "H5Fopen");
  Handle root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, w, "H5Gopen2");
  RawMetadata raw;
  raw.path = path;
  raw.attributes = read_raw_attrs(root, w);

  std::vector<std::string> names;
  hsize_t idx = 0;
  w.check(H5Literate(
              root, H5_INDEX_NAME, H5_ITER_INC, &idx,
              [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
                static_cast<std::vector<std::string>*>(data)->push_back(name);
                return 0;
              },
              &names),
          "H5Literate");
  for (const auto& name : names) {
    H5O_info_t oi;
    w.check(H5Oget_info_by_name(root, name.c_str(), &oi, H5P_DEFAULT), "H5Oget_info_by_name");
    if (oi.type != H5O_TYPE_DATASET) continue;
    Handle dset(H5Dopen2(root, name.c_str(), H5P_DEFAULT), H5Dclose, w, "H5Dopen2");
    Handle space(H5Dget_space(dset), H5Sclose, w, "H5Dget_space");
    const int n = H5Sget_simple_extent_ndims(space);
    if (n < 0) w.fail("H5Sget_simple_extent_ndims");
    std::vector<hsize_t> dims(static_cast<std::size_t>(n));
    if (n > 0) w.check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "H5Sget_simple_extent_dims");
    RawDataset d;
    d.name = name;
    d.dims.assign(dims.begin(), dims.end());
    Handle type(H5Dget_type(dset), H5Tclose, w, "H5Dget_type");
    const H5T_class_t cls = H5Tget_class(type);
    d.type_class = cls == H5T_INTEGER ? RawDataset::Class::integer
                   : cls == H5T_FLOAT ? RawDataset::Class::real
                                      : RawDataset::Class::other;
    d.type_size = H5Tget_size(type);
    if (cls == H5T_INTEGER) d.type_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (cls == H5T_INTEGER || cls == H5T_FLOAT) d.little_endian = H5Tget_order(type) == H5T_ORDER_LE;
    if (cls == H5T_COMPOUND) complex_layout(type, d);
    const haddr_t offset = H5Dget_offset(dset);  // HADDR_UNDEF without storage (no error then)
    H5Eclear2(H5E_DEFAULT);
    if (offset != HADDR_UNDEF) {
      d.data_offset = static_cast<std::uint64_t>(offset);
      d.data_bytes = static_cast<std::uint64_t>(H5Dget_storage_size(dset));
    }
    d.attributes = read_raw_attrs(dset, w);
    raw.datasets.push_back(std::move(d));
  }
  file.close(w, "H5Fclose");
  // The file HDF5 read must be the one checked: same inode, size and modification time.
  struct stat now {};
  if (::stat(path.c_str(), &now) != 0 || now.st_ino != checked.st.st_ino || now.st_dev != checked.st.st_dev ||
      now.st_size != checked.st.st_size || now.st_mtim.tv_sec != checked.st.st_mtim.tv_sec ||
      now.st_mtim.tv_nsec != checked.st.st_mtim.tv_nsec)
    throw Error(str(fn, ": '", shown, "' changed while it was read (another process writes it?)"));
  return raw;
}

/// Reads, validates and checks the file's metadata on this rank alone: the integrity record
/// (before HDF5 opens the file), the metadata (validate_metadata), and that the record's data
/// ranges are the datasets' (offset, bytes, checksum). Throws spmd::Error (local).
FileInfo inspect_local(const std::string& path, const char* fn) {
  CheckedFile checked;
  const RawMetadata raw = read_raw_local(path, fn, checked);
  FileInfo info = validate_metadata(raw, fn);
  std::vector<DataRange> have;
  for (std::size_t k = 0; k < raw.datasets.size(); ++k) {
    const RawDataset& d = raw.datasets[k];
    std::uint64_t bytes = element_size(info.datasets[k].type);
    for (index_t e : info.datasets[k].shape) bytes *= static_cast<std::uint64_t>(e);
    if (bytes == 0) continue;
    if (d.data_bytes != bytes)
      throw Error(str(fn, ": dataset '", printable(d.name), "' of '", printable(path, 200), "' stores ", d.data_bytes,
                      " bytes of data, not the ", bytes, " of its shape (the file is corrupt)"));
    have.push_back(DataRange{d.data_offset, bytes, info.datasets[k].checksum});
  }
  std::sort(have.begin(), have.end(), [](const DataRange& a, const DataRange& b) { return a.offset < b.offset; });
  const auto& want = checked.record.ranges;
  bool same = have.size() == want.size();
  for (std::size_t k = 0; same && k < have.size(); ++k)
    same = have[k].offset == want[k].offset && have[k].length == want[k].length && have[k].crc == want[k].crc;
  if (!same)
    throw Error(str(fn, ": '", printable(path, 200), "' is damaged: its integrity record lists ", want.size(),
                    " data ranges that are not its ", have.size(), " datasets' data (offsets, sizes, checksums)"));
  return info;
}

// A FileInfo as bytes, to broadcast what rank 0 read.
class Packer {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes.append(p, sizeof(T));
  }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    bytes += s;
  }
  std::string bytes;
};
class Unpacker {
 public:
  explicit Unpacker(const std::string& b) : bytes_(b) {}
  template <class T>
  T get() {
    T v{};
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto n = static_cast<std::size_t>(get<std::uint64_t>());
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

std::string pack(const FileInfo& info) {
  Packer p;
  p.put(info.path);
  p.put(info.format_version);
  p.put(info.library_version);
  p.put(info.run_id);
  p.put(static_cast<std::uint64_t>(info.datasets.size()));
  for (const auto& d : info.datasets) {
    p.put(d.name);
    p.put(static_cast<int>(d.type));
    p.put(d.checksum);
    p.put(static_cast<std::uint64_t>(d.shape.size()));
    for (index_t e : d.shape) p.put(e);
  }
  p.put(static_cast<std::uint64_t>(info.attributes.size()));
  for (const auto& [k, v] : info.attributes) {
    p.put(k);
    p.put(static_cast<int>(v.index()));
    if (const auto* i = std::get_if<std::int64_t>(&v))
      p.put(*i);
    else if (const auto* x = std::get_if<double>(&v))
      p.put(*x);
    else
      p.put(std::get<std::string>(v));
  }
  return p.bytes;
}

FileInfo unpack(const std::string& bytes) {
  Unpacker u(bytes);
  FileInfo info;
  info.path = u.get_string();
  info.format_version = u.get<std::int64_t>();
  info.library_version = u.get_string();
  info.run_id = u.get_string();
  const auto nd = u.get<std::uint64_t>();
  for (std::uint64_t k = 0; k < nd; ++k) {
    DatasetInfo d;
    d.name = u.get_string();
    d.type = static_cast<ElementType>(u.get<int>());
    d.checksum = u.get<std::uint32_t>();
    const auto r = u.get<std::uint64_t>();
    for (std::uint64_t a = 0; a < r; ++a) d.shape.push_back(u.get<index_t>());
    info.datasets.push_back(std::move(d));
  }
  const auto na = u.get<std::uint64_t>();
  for (std::uint64_t k = 0; k < na; ++k) {
    std::string key = u.get_string();
    const int which = u.get<int>();
    if (which == 0)
      info.attributes[key] = u.get<std::int64_t>();
    else if (which == 1)
      info.attributes[key] = u.get<double>();
    else
      info.attributes[key] = u.get_string();
  }
  return info;
}

/// Agree that every rank passes rank 0's `value` (a path, a dataset name: only rank 0 may read
/// with it, so a rank that passes another would otherwise be ignored, or wait in a collective
/// the others never enter): the same spmd::Error on every rank otherwise. Collective.
void agree_text(const Comm& comm, const char* fn, const char* what, const std::string& value) {
  const std::string root = bcast_string(comm, value);
  comm.check(root == value, str(fn, ": the ranks pass different ", what, "s: rank ", comm.rank(), " passes '",
                                printable(value, 200), "', rank 0 '", printable(root, 200), "'"));
}

/// Rank 0's packed metadata of `path` ("" elsewhere); a failure there sets ok = false and msg.
/// Local (only rank 0 reads).
std::string read_on_root(const std::string& path, const Comm& comm, const char* fn, bool& ok, std::string& msg) {
  ok = true;
  if (comm.rank() != 0) return {};
  try {
    return pack(inspect_local(path, fn));
  } catch (const std::exception& e) {
    ok = false;
    msg = e.what();
    return {};
  }
}

/// Rank 0's verdict `problem` ("" when all is well) on every rank: the same spmd::Error, with the
/// same text at every rank count, when it is not empty (for checks only rank 0 makes). Collective.
void root_check(const Comm& comm, const std::string& problem) {
  if (comm.bcast(problem.empty() ? 1 : 0, 0) == 0) throw Error::replicated(bcast_string(comm, problem));
}

/// Rank 0 reads the metadata (one reader, however many ranks) and broadcasts it, or its error:
/// a failure becomes the same spmd::Error on every rank, with the same text at every rank count
/// (only rank 0 reads, so there is no rank to name). Collective.
FileInfo inspect_agreed(const std::string& path, const Comm& comm, const char* fn) {
  agree_text(comm, fn, "path", path);
  bool ok = true;
  std::string msg;
  const std::string blob = read_on_root(path, comm, fn, ok, msg);
  root_check(comm, ok ? std::string() : msg);
  return unpack(bcast_string(comm, blob));
}

/// The message of the lowest rank whose `ok` is false, on every rank ("" when all passed);
/// Comm::check without the throw. Collective.
std::string agreed_reason(const Comm& comm, bool ok, const std::string& message) {
  const int first_bad = comm.allreduce(ok ? comm.size() : comm.rank(), Op::min);
  if (first_bad == comm.size()) return {};
  std::string text = comm.rank() == first_bad ? message : std::string();
  int len = comm.bcast(static_cast<int>(text.size()), first_bad);
  text.resize(static_cast<std::size_t>(len));
  comm.bcast(text.data(), len, first_bad);
  return text.empty() ? std::string("unknown error") : text;
}

/// inspect_agreed that reports a bad file as a reason ("" when the metadata is valid) instead of
/// throwing. Collective.
std::string inspect_or_reason(const std::string& path, const Comm& comm, const char* fn, FileInfo& out) {
  bool ok = true;
  std::string msg;
  const std::string blob = read_on_root(path, comm, fn, ok, msg);
  std::string reason = agreed_reason(comm, ok, msg);
  if (reason.empty()) out = unpack(bcast_string(comm, blob));
  return reason;
}

}  // namespace

// ---- save ------------------------------------------------------------------------------------------

std::string save_path_problem(const std::string& path, bool sidecar) {
  std::string problem = output_path_problem(path, printable(path, 200));
  if (problem.empty() && sidecar) problem = output_path_problem(xdmf_path(path), printable(xdmf_path(path), 200));
  return problem;
}

namespace {
/// Write the integrity record into the user block of the complete file `tmp` whose datasets'
/// raw data are `ranges` (their CRCs the datasets' checksums): the CRC of the bytes outside them
/// is read from the file (the HDF5 metadata: kilobytes, and the alignment gaps before large
/// datasets), the whole file's CRC combined from both without reading the data again. Throws
/// spmd::Error (local, rank 0).
void write_integrity_record(const std::string& tmp, std::vector<DataRange> ranges, std::uint32_t block,
                            const char* fn) {
  Fd f;
  f.fd = ::open(tmp.c_str(), O_RDWR | O_CLOEXEC);
  if (f.fd < 0)
    throw Error(str(fn, ": cannot reopen '", tmp, "' to write its integrity record: ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw Error(str(fn, ": cannot stat '", tmp, "': ", std::strerror(errno)));
  std::sort(ranges.begin(), ranges.end(), [](const DataRange& a, const DataRange& b) { return a.offset < b.offset; });
  IntegrityRecord r;
  r.block = block;
  r.file_size = static_cast<std::uint64_t>(st.st_size);
  r.ranges = std::move(ranges);
  std::uint64_t at = r.block;
  for (const DataRange& d : r.ranges) {
    if (d.offset < at || d.offset + d.length > r.file_size)
      throw Error(str(fn, ": '", tmp, "': HDF5 placed a dataset's data at [", d.offset, ", +", d.length,
                      "), outside the file's ", r.file_size, " bytes after the user block (internal error)"));
    at = d.offset + d.length;
  }
  const std::string what = str(fn, ": reading back '", tmp, "' failed");
  std::vector<char> buf;
  uLong meta = crc32(0L, Z_NULL, 0), whole = crc32(0L, Z_NULL, 0);
  std::size_t next = 0;  // the data range after the current span
  at = r.block;
  for (const auto& [begin, n] : metadata_spans(r)) {
    for (; next < r.ranges.size() && r.ranges[next].offset < begin; ++next)
      whole = crc32_combine64(whole, r.ranges[next].crc, static_cast<z_off64_t>(r.ranges[next].length));
    const std::uint32_t c = crc_of_bytes(f.fd, begin, n, 0, buf, what);
    meta = crc32_combine64(meta, c, static_cast<z_off64_t>(n));
    whole = crc32_combine64(whole, c, static_cast<z_off64_t>(n));
  }
  for (; next < r.ranges.size(); ++next)
    whole = crc32_combine64(whole, r.ranges[next].crc, static_cast<z_off64_t>(r.ranges[next].length));
  r.metadata_crc = static_cast<std::uint32_t>(meta);
  r.file_crc = static_cast<std::uint32_t>(whole);
  // Only the record itself: the rest of the user block is zero already (HDF5 never writes there),
  // and stays a hole in the file where the file system has them.
  const std::string record = encode_integrity_record(r).substr(0, integrity_record_bytes(r.ranges.size()));
  std::size_t done = 0;
  while (done < record.size()) {
    const ssize_t w = ::pwrite(f.fd, record.data() + done, record.size() - done, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(str(fn, ": writing the integrity record of '", tmp, "' failed: ", std::strerror(errno)));
    done += static_cast<std::size_t>(w);
  }
}
}  // namespace

void save_blocks(const std::string& path, const std::vector<HostBlock>& blocks, const Attributes& attributes,
                 const SaveOptions& options, const std::string& run_id) {
  const char* fn = "spmd::io::save";
  const spmd::impl::Region region("spmd::io::save");
  if (blocks.empty()) throw Error::replicated(str(fn, ": no arrays to save to '", path, "'"));
  const Comm& comm = blocks.front().comm;
  {
    std::string bad;
    std::set<std::string> seen;
    for (const auto& b : blocks) {
      if (b.comm != comm && bad.empty())
        bad = str("array '", b.name, "' lives on another communicator than '", blocks.front().name,
                  "' (save arrays of one communicator together)");
      if (!valid_name(b.name) && bad.empty())
        bad = str("dataset name '", b.name, "' is empty, contains '/' or starts with the reserved 'spmd_'");
      if (!seen.insert(b.name).second && bad.empty()) bad = str("dataset name '", b.name, "' is given twice");
    }
    if (integrity_record_bytes(blocks.size()) > integrity_max_block && bad.empty())
      bad = str(blocks.size(), " arrays are more than the integrity record of one file can list (",
                (integrity_max_block - integrity_record_bytes(0)) / 24, ")");
    for (const auto& [k, v] : attributes)
      if (!valid_name(k) && bad.empty())
        bad = str("attribute name '", k, "' is empty, contains '/' or starts with the reserved 'spmd_'");
    const std::string mine = serialize(attributes);
    if (bad.empty() && bcast_string(comm, mine) != mine)
      bad = str("the attributes differ between ranks (rank ", comm.rank(), " differs from rank 0)");
    const std::string root_path = bcast_string(comm, path);
    if (bad.empty() && root_path != path)
      bad = str("the paths differ between ranks (rank ", comm.rank(), " passes '", printable(path, 200), "', rank 0 '",
                printable(root_path, 200), "')");
    comm.check(bad.empty(), str(fn, ": ", bad, " (file '", path, "')"));
  }
  {  // Outputs replace only regular files, in a directory that exists (rank 0 looks; agreed).
    bool sidecar = false;
    for (const auto& b : blocks) sidecar = sidecar || b.shape.size() == 2 || b.shape.size() == 3;
    const std::string problem = comm.rank() == 0 ? save_path_problem(path, options.xdmf && sidecar) : "";
    root_check(comm, problem.empty() ? problem : str(fn, ": ", problem));
  }

  std::vector<DatasetInfo> infos;
  for (const auto& b : blocks) infos.push_back(DatasetInfo{b.name, b.type, b.shape, checksum_block(b)});

  // The temporary's name, chosen by rank 0; stale temporaries of earlier killed saves go first.
  std::string tmp;
  if (comm.rank() == 0) {
    remove_stale_temps(path);
    remove_stale_temps(xdmf_path(path));
    std::random_device rd;
    char id[32];
    std::snprintf(id, sizeof id, "%x-%08x", static_cast<unsigned>(getpid()), static_cast<unsigned>(rd()));
    const fs::path p(path);
    tmp = (p.parent_path() / (temp_prefix(path) + id)).string();
  }
  tmp = bcast_string(comm, tmp);
  std::string xmf_tmp;  // the sidecar's temporary (rank 0), once written
  auto agree = [&](bool ok, const std::string& msg) {
    try {
      comm.check(ok, msg);
    } catch (...) {
      if (comm.rank() == 0) {
        ::unlink(tmp.c_str());
        if (!xmf_tmp.empty()) ::unlink(xmf_tmp.c_str());
      }
      throw;
    }
  };

  std::vector<DataRange> ranges;  // the datasets' raw data in the file
  hsize_t block = 0;              // the user block's size
  // Every collective HDF5 call (the file's create and close, a dataset's create, write and
  // close) is entered by all ranks or by none: the ranks agree after each step (Steps), and after
  // a failure anywhere every rank abandons its open dataset and the file in the same order.
  Steps steps(comm);
  {
    QuietHdf5 quiet;
    const Where w{fn, printable(path, 200), str("written as its temporary '", fs::path(tmp).filename().string(), "'")};
    const Handle::Collective coll{comm.rank()};
    Handle fapl, fcpl, file, dxpl, dcpl, dset;
    // Each step starts with its collective call (if any), so that a local failure is agreed on
    // before any rank enters the next one.
    steps.step([&] {  // the property lists (H5Pset_fapl_mpio duplicates the communicator: collective)
      bool large = false;
      for (const auto& b : blocks) {
        double bytes = static_cast<double>(b.elem_size);
        for (index_t e : b.shape) bytes *= static_cast<double>(e);
        large = large || bytes >= static_cast<double>(large_dataset);
      }
      fapl = mpio_fapl(comm, w, large);
      fault_point(comm, "before_write");
      // The user block holds the integrity record, written once the file is complete.
      fcpl = Handle(H5Pcreate(H5P_FILE_CREATE), H5Pclose, w, "H5Pcreate (file create)");
      block = large ? large_dataset : integrity_block_size(blocks.size());
      w.check(H5Pset_userblock(fcpl, block), "H5Pset_userblock");
      dxpl = collective_dxpl(w);
      dcpl = Handle(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, w, "H5Pcreate (dataset create)");
      w.check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");  // every element is written
    });
    steps.step([&] {  // the file and its attributes
      file = Handle(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl), H5Fclose, w, "H5Fcreate", coll);
      const std::int64_t fmt = format_version;
      write_attr(file, "spmd_format_version", H5T_STD_I64LE, H5T_NATIVE_INT64, &fmt, w);
      write_attr_value(file, "spmd_library_version", std::string(SPMD_VERSION_STRING), w);
      write_attr_value(file, "spmd_checksum", std::string("crc32 of the little-endian row-major bytes (zlib)"), w);
      if (!run_id.empty()) write_attr_value(file, "spmd_run_id", run_id, w);
      for (const auto& [k, v] : attributes) write_attr_value(file, k, v, w);
    });
    for (std::size_t k = 0; k < blocks.size() && steps.all_ok(); ++k) {
      const HostBlock& b = blocks[k];
      const bool stored = !std::count(b.shape.begin(), b.shape.end(), index_t(0));  // an empty one has no storage
      Selections sel;
      steps.step([&] {
        std::vector<hsize_t> dims(b.shape.begin(), b.shape.end());
        Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose, w,
                     "H5Screate_simple (dataset)");
        dset = Handle(H5Dcreate2(file, b.name.c_str(), file_type(b.type), space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                      H5Dclose, w, "H5Dcreate2", coll);
        write_attr_value(dset, "spmd_element_type", std::string(element_type_name(b.type)), w);
        const std::int64_t crc = infos[k].checksum;
        write_attr(dset, "spmd_checksum_crc32", H5T_STD_I64LE, H5T_NATIVE_INT64, &crc, w);
        std::vector<std::int64_t> shape(b.shape.begin(), b.shape.end());
        write_attr(dset, "spmd_shape", H5T_STD_I64LE, H5T_NATIVE_INT64, shape.data(), w, {dims.size()});
        if (stored) sel = select_block(dset, b, w);
        if (k == 0) fault_point(comm, "before_dataset_write");
      });
      steps.step([&] {
        if (stored) {
          char dummy = 0;
          w.check(H5Dwrite(dset, mem_type(b.type), sel.mem, sel.file, dxpl, b.data ? b.data : &dummy), "H5Dwrite");
        }
        if (k == 0) fault_point(comm, "mid_dataset");
        if (stored) {  // where the data went, for the record
          std::uint64_t bytes = b.elem_size;
          for (index_t e : b.shape) bytes *= static_cast<std::uint64_t>(e);
          const haddr_t at = H5Dget_offset(dset);
          const hsize_t size = H5Dget_storage_size(dset);
          if (at == HADDR_UNDEF || size != bytes)
            w.fail(str("H5Dget_offset (dataset '", b.name, "': ", size, " bytes stored of ", bytes, ")").c_str());
          ranges.push_back(DataRange{static_cast<std::uint64_t>(at), bytes, infos[k].checksum});
        }
      });
      steps.close(w, dset, "H5Dclose");
    }
    steps.close(w, file, "H5Fclose", &dset);
  }
  const bool ok0 = steps.ok;
  std::string msg = steps.msg;
  bool ok = ok0;
  agree(ok, msg);

  // Durable, then visible: fsync the temporary (and write the sidecar's, fsynced), rename it
  // over the target, fsync the directory, rename the sidecar. Everything that can fail but the
  // renames happens before the target changes.
  ok = true;
  try {
    if (comm.rank() == 0) {
      write_integrity_record(tmp, std::move(ranges), static_cast<std::uint32_t>(block), fn);
      fsync_path(tmp, false, fn);
      if (options.xdmf) {
        const std::string text = xdmf_text(path, infos, attributes);
        if (!text.empty()) xmf_tmp = write_temporary(xdmf_path(path), text, fn);
      }
    }
  } catch (const std::exception& e) {
    ok = false;
    msg = e.what();
  }
  fault_point(comm, "before_rename");
  agree(ok, msg);  // the barrier: every rank is alive and done before the file becomes visible
  ok = true;
  try {
    if (comm.rank() == 0) {
      try {
        commit_temporary(tmp, path, fn);
      } catch (...) {
        if (!xmf_tmp.empty()) ::unlink(xmf_tmp.c_str());
        throw;
      }
      const fs::path dir = fs::path(path).parent_path();
      std::string sidecar_error;
      if (!xmf_tmp.empty()) try {
          commit_temporary(xmf_tmp, xdmf_path(path), fn);
        } catch (const std::exception& e) {
          sidecar_error = str(e.what(), " (the checkpoint '", path, "' itself was written)");
        }
      fsync_path(dir.empty() ? "." : dir.string(), true, fn);  // the checkpoint's rename, durable
      if (!sidecar_error.empty()) throw Error(sidecar_error);
    }
  } catch (const std::exception& e) {
    ok = false;
    msg = e.what();
  }
  agree(ok, msg);
}

// ---- load ------------------------------------------------------------------------------------------

void load_block(const std::string& path, const HostBlock& b, const LoadOptions& options) {
  const char* fn = "spmd::io::load";
  const spmd::impl::Region region("spmd::io::load");
  const Comm& comm = b.comm;
  const FileInfo info = inspect_agreed(path, comm, fn);
  agree_text(comm, fn, "dataset name", b.name);
  const DatasetInfo* d = info.find(b.name);
  if (!d) {
    std::vector<std::string> names;
    for (const auto& x : info.datasets) names.push_back(x.name);
    throw Error::replicated(str(fn, ": '", path, "' has no dataset '", b.name, "' (it has ", shape_str(names), ")"));
  }
  if (d->type != b.type)
    throw Error::replicated(str(fn, ": dataset '", b.name, "' of '", path, "' holds ", element_type_name(d->type),
                                " elements; the array to load into holds ", element_type_name(b.type)));
  if (d->shape != b.shape)
    throw Error::replicated(str(fn, ": dataset '", b.name, "' of '", path, "' has shape ", shape_str(d->shape),
                                "; the requested distribution has shape ", shape_str(b.shape)));

  // As in save_blocks: the collective calls (open, read, close) are entered by all ranks or none.
  Steps steps(comm);
  {
    QuietHdf5 quiet;
    const Where w{fn, path};
    const Handle::Collective coll{comm.rank()};
    const bool stored = !std::count(b.shape.begin(), b.shape.end(), index_t(0));
    Handle fapl, dxpl, file, dset;
    Selections sel;
    steps.step([&] {
      fapl = mpio_fapl(comm, w);
      dxpl = collective_dxpl(w);
    });
    steps.step([&] {
      file = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose, w, "H5Fopen", coll);
      dset = Handle(H5Dopen2(file, b.name.c_str(), H5P_DEFAULT), H5Dclose, w, "H5Dopen2", coll);
      if (stored) sel = select_block(dset, b, w);
    });
    steps.step([&] {
      char dummy = 0;
      if (stored)
        w.check(H5Dread(dset, mem_type(b.type), sel.mem, sel.file, dxpl, b.data ? b.data : &dummy), "H5Dread");
    });
    steps.close(w, dset, "H5Dclose");
    steps.close(w, file, "H5Fclose", &dset);
  }
  comm.check(steps.ok, steps.msg);
  if (options.verify_checksum) {
    const std::uint32_t crc = checksum_block(b);
    if (crc != d->checksum)
      throw Error::replicated(str(fn, ": checksum mismatch in dataset '", b.name, "' of '", path, "': stored crc32 ",
                                  d->checksum, ", data read has ", crc, " (the file is corrupt)"));
  }
}

/// A Dataset's owned block (Dataset keeps it private: it is an impl type).
struct DatasetAccess {
  static const HostBlock& block(const Dataset& d) { return d.block_; }
};

}  // namespace impl

// ---- public functions ------------------------------------------------------------------------------

void save(const std::string& path, const std::vector<Dataset>& datasets, const Attributes& attributes,
          const SaveOptions& options) {
  std::vector<impl::HostBlock> blocks;
  blocks.reserve(datasets.size());
  for (const auto& d : datasets) blocks.push_back(impl::DatasetAccess::block(d));
  impl::save_blocks(path, blocks, attributes, options);
}

std::string output_problem(const std::string& path, const Comm& comm, bool sidecar) {
  impl::agree_text(comm, "spmd::io::output_problem", "path", path);
  const std::string problem = comm.rank() == 0 ? impl::save_path_problem(path, sidecar) : std::string();
  return impl::agreed_reason(comm, problem.empty(), problem);
}

FileInfo inspect(const std::string& path, const Comm& comm) {
  return impl::inspect_agreed(path, comm, "spmd::io::inspect");
}

Attributes read_attributes(const std::string& path, const Comm& comm) {
  return impl::inspect_agreed(path, comm, "spmd::io::read_attributes").attributes;
}

// ---- verify ----------------------------------------------------------------------------------------

std::string verify(const std::string& path, const Comm& comm) {
  const spmd::impl::Region region("spmd::io::verify");
  const char* fn = "spmd::io::verify";
  FileInfo info;
  if (std::string reason = impl::inspect_or_reason(path, comm, fn, info); !reason.empty()) return reason;
  // Each rank reads a balanced range of rows (first axis) of each dataset, in pieces of at most
  // 64 MiB (or one row), and runs crc32 over it; the ranks' CRCs are combined in rank order.
  constexpr std::uint64_t piece_bytes = std::uint64_t(64) << 20;
  const std::size_t nd = info.datasets.size();
  std::vector<std::uint32_t> crc(nd, 0);
  std::vector<std::uint64_t> len(nd, 0);
  // As in save_blocks: the collective calls (open, close) are entered by all ranks or none.
  impl::Steps steps(comm);
  {
    impl::QuietHdf5 quiet;
    const impl::Where w{fn, impl::printable(path, 200)};
    const impl::Handle::Collective coll{comm.rank()};
    impl::Handle fapl, file, dset;
    steps.step([&] { fapl = impl::mpio_fapl(comm, w); });
    steps.step([&] { file = impl::Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose, w, "H5Fopen", coll); });
    std::vector<unsigned char> buf;
    for (std::size_t k = 0; k < nd && steps.all_ok(); ++k) {
      const DatasetInfo& d = info.datasets[k];
      steps.step([&] {  // open, then the independent reads of this rank's rows
        dset = impl::Handle(H5Dopen2(file, d.name.c_str(), H5P_DEFAULT), H5Dclose, w, "H5Dopen2", coll);
        if (std::count(d.shape.begin(), d.shape.end(), index_t(0))) return;  // no storage, checksum of nothing
        const std::uint64_t es = element_size(d.type);
        std::uint64_t row_elems = 1;
        for (std::size_t a = 1; a < d.shape.size(); ++a) row_elems *= static_cast<std::uint64_t>(d.shape[a]);
        const auto rows = static_cast<std::uint64_t>(d.shape[0]);
        const auto p = static_cast<std::uint64_t>(comm.size()), r = static_cast<std::uint64_t>(comm.rank());
        const std::uint64_t r0 = rows / p * r + std::min(r, rows % p), r1 = r0 + rows / p + (r < rows % p ? 1 : 0);
        const std::uint64_t step = std::max<std::uint64_t>(1, piece_bytes / (row_elems * es));
        uLong c = crc32(0L, Z_NULL, 0);
        for (std::uint64_t a = r0; a < r1; a += step) {
          const std::uint64_t n = std::min(step, r1 - a);
          std::vector<hsize_t> lo(d.shape.size(), 0), count(d.shape.begin(), d.shape.end());
          lo[0] = a;
          count[0] = n;
          impl::Handle fspace(H5Dget_space(dset), H5Sclose, w, "H5Dget_space");
          w.check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, lo.data(), nullptr, count.data(), nullptr),
                  "H5Sselect_hyperslab");
          const hsize_t elems = n * row_elems;
          impl::Handle mspace(H5Screate_simple(1, &elems, nullptr), H5Sclose, w, "H5Screate_simple");
          buf.resize(static_cast<std::size_t>(elems * es));
          w.check(H5Dread(dset, impl::mem_type(d.type), mspace, fspace, H5P_DEFAULT, buf.data()), "H5Dread");
          c = crc32_z(c, buf.data(), buf.size());
          len[k] += buf.size();
        }
        crc[k] = static_cast<std::uint32_t>(c);
      });
      steps.close(w, dset, "H5Dclose");
    }
    steps.close(w, file, "H5Fclose", &dset);
  }
  const bool ok = steps.ok;
  const std::string msg = steps.msg;
  if (std::string reason = impl::agreed_reason(comm, ok, msg); !reason.empty()) return reason;
  for (std::size_t k = 0; k < nd; ++k) {
    const std::vector<std::uint32_t> crcs = comm.allgather(crc[k]);
    const std::vector<std::uint64_t> lens = comm.allgather(len[k]);
    uLong c = crc32(0L, Z_NULL, 0);
    for (std::size_t q = 0; q < crcs.size(); ++q) c = crc32_combine64(c, crcs[q], static_cast<z_off64_t>(lens[q]));
    if (static_cast<std::uint32_t>(c) != info.datasets[k].checksum)
      return impl::str(fn, ": checksum mismatch in dataset '", impl::printable(info.datasets[k].name), "' of '",
                       impl::printable(path, 200), "': stored crc32 ", info.datasets[k].checksum, ", data read has ",
                       static_cast<std::uint32_t>(c), " (the file is corrupt)");
  }
  return {};
}

std::string new_run_id(const Comm& comm) {
  std::string id;
  if (comm.rank() == 0) {
    std::random_device rd;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", static_cast<unsigned>(rd()), static_cast<unsigned>(rd()),
                  static_cast<unsigned>(rd()), static_cast<unsigned>(rd()));
    id = buf;
  }
  return impl::bcast_string(comm, id);
}

// ---- CheckpointSeries ------------------------------------------------------------------------------

CheckpointSeries::CheckpointSeries(Comm comm, std::string prefix, int keep, std::string run_id)
    : comm_(std::move(comm)),
      prefix_(std::move(prefix)),
      keep_(keep),
      run_id_(std::make_shared<std::string>(std::move(run_id))) {
  if (prefix_.empty()) throw Error("spmd::io::CheckpointSeries: the prefix is empty");
  if (keep_ < 1) throw Error(impl::str("spmd::io::CheckpointSeries: keep must be at least 1, not ", keep_));
  if (!run_id_->empty()) set_run_id(*run_id_);
}

void CheckpointSeries::set_run_id(const std::string& id) {
  if (!impl::valid_run_id(id))
    throw Error(impl::str("spmd::io::CheckpointSeries: '", impl::printable(id),
                          "' is not a run id (32 lower-case hexadecimal digits)"));
  *run_id_ = id;
}

void CheckpointSeries::ensure_run_id() const {
  if (run_id_->empty()) *run_id_ = new_run_id(comm_);
}

std::string CheckpointSeries::path(std::int64_t step) const {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%010lld", static_cast<long long>(step));
  return prefix_ + "." + digits + ".h5";
}

namespace {
/// Steps of the files "<prefix>.<digits>.h5" present now. Local.
std::vector<std::int64_t> list_steps(const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path p(prefix);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string() + ".";
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= base.size() + 3 || name.compare(0, base.size(), base) != 0) continue;
    if (name.compare(name.size() - 3, 3, ".h5") != 0) continue;
    const std::string mid = name.substr(base.size(), name.size() - base.size() - 3);
    if (mid.empty() || mid.size() > 18 ||
        !std::all_of(mid.begin(), mid.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    steps.push_back(std::stoll(mid));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

namespace impl {
/// The first file of the series `prefix` ("<prefix>.<digits>.h5" or ".xmf") that exists and is not
/// a regular file, described for a message ("" when there is none). Local.
std::string series_special_file(const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path p(prefix);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string() + ".";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, base.size(), base) != 0) continue;
    const std::string rest = name.substr(base.size());
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789") != dot) continue;
    const std::string ext = rest.substr(dot);
    if (ext != ".h5" && ext != ".xmf") continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return str("'", printable(it->path().string(), 200), "' (a name of the series '", printable(prefix, 200),
                 "') is ", file_kind(st.st_mode), ", not a regular file: a series never replaces it; move it away");
  }
  return {};
}
}  // namespace impl

namespace {
/// The run id of the checkpoint `path` ("" when it has none), or a reason why its metadata is
/// invalid in `problem`. Local.
std::string local_run_id(const std::string& path, std::string& problem) {
  try {
    return impl::inspect_local(path, "spmd::io::CheckpointSeries").run_id;
  } catch (const std::exception& e) {
    problem = e.what();
    return {};
  }
}

/// "a.h5 (run 0123abcd...)" for messages.
std::string describe_file(const CheckpointSeries::File& f) {
  return impl::str("'", impl::printable(f.path, 200), "' (",
                   !f.problem.empty() ? "unreadable: " + f.problem
                   : f.run_id.empty() ? std::string("no run id")
                                      : "run " + f.run_id,
                   ")");
}
}  // namespace

std::vector<std::int64_t> CheckpointSeries::steps() const {
  std::vector<std::int64_t> s;
  if (comm_.rank() == 0) s = list_steps(prefix_);
  int n = comm_.bcast(static_cast<int>(s.size()), 0);
  s.resize(static_cast<std::size_t>(n));
  if (n > 0) comm_.bcast(s.data(), n, 0);
  return s;
}

std::vector<CheckpointSeries::File> CheckpointSeries::files() const {
  std::string blob;
  if (comm_.rank() == 0) {
    impl::Packer p;
    const std::vector<std::int64_t> s = list_steps(prefix_);
    p.put(static_cast<std::uint64_t>(s.size()));
    for (std::int64_t step : s) {
      File f;
      f.step = step;
      f.path = path(step);
      f.run_id = local_run_id(f.path, f.problem);
      p.put(f.step);
      p.put(f.path);
      p.put(f.run_id);
      p.put(f.problem);
    }
    blob = p.bytes;
  }
  blob = impl::bcast_string(comm_, blob);
  impl::Unpacker u(blob);
  std::vector<File> out(static_cast<std::size_t>(u.get<std::uint64_t>()));
  for (File& f : out) {
    f.step = u.get<std::int64_t>();
    f.path = u.get_string();
    f.run_id = u.get_string();
    f.problem = u.get_string();
  }
  return out;
}

void CheckpointSeries::claim(bool continuing) {
  {  // The prefix's directory can take the series' files, and nothing in the series' names is
     // anything but a regular file (a FIFO, a device, a directory, a link is never replaced).
    std::string problem;
    if (comm_.rank() == 0) {
      const std::string first = path(0);
      problem = output_path_problem(first, impl::printable(first, 200));
      if (problem.empty())
        problem = impl::series_special_file(prefix_);
      else if (problem.rfind("cannot write", 0) == 0)
        problem = "the checkpoint prefix '" + impl::printable(prefix_, 200) +
                  "' cannot be written: " + problem.substr(problem.find(':') + 2);
    }
    impl::root_check(comm_, problem.empty() ? problem : impl::str("spmd::io::CheckpointSeries: ", problem));
  }
  ensure_run_id();
  std::vector<File> others;
  for (const File& f : files()) {
    const bool ours = f.problem.empty() && f.run_id == *run_id_;
    const bool unknown = !f.problem.empty();
    if (!continuing || (!ours && !unknown)) others.push_back(f);
  }
  if (others.empty()) return;
  std::string list;
  for (std::size_t k = 0; k < others.size() && k < 3; ++k) list += (k ? ", " : "") + describe_file(others[k]);
  if (others.size() > 3) list += impl::str(" and ", others.size() - 3, " more");
  throw Error::replicated(
      impl::str("spmd::io::CheckpointSeries: the prefix '", impl::printable(prefix_, 200), "' already holds ",
                others.size(), " checkpoint file(s)", continuing ? " of another run" : "", ": ", list,
                continuing ? "; this run (" + *run_id_ + ") will not mix its files with them"
                           : "; a new run never writes over them",
                ": choose another prefix, move them away, or continue their run by restarting from one"));
}

void CheckpointSeries::save(std::int64_t step, const std::vector<Dataset>& datasets, Attributes attributes,
                            const SaveOptions& options) const {
  const char* fn = "spmd::io::CheckpointSeries::save";
  const spmd::impl::Region region("spmd::io::checkpoint_save");
  ensure_run_id();
  const std::string target = path(step);
  {  // Never replace a checkpoint of another run (an unreadable file in its place is replaced).
    bool ok = true;
    std::string msg;
    if (comm_.rank() == 0 && std::filesystem::exists(target)) {
      std::string problem;
      const std::string id = local_run_id(target, problem);
      if (problem.empty() && id != *run_id_) {
        ok = false;
        msg = impl::str(fn, ": '", impl::printable(target, 200), "' is a checkpoint of ",
                        id.empty() ? std::string("a run without a run id") : "run " + id, ", not of this run (",
                        *run_id_, "); it is left as it is: choose another prefix");
      }
    }
    comm_.check(ok, msg);
  }
  attributes["step"] = step;
  std::vector<impl::HostBlock> blocks;
  blocks.reserve(datasets.size());
  for (const auto& d : datasets) blocks.push_back(impl::DatasetAccess::block(d));
  impl::save_blocks(target, blocks, attributes, options, *run_id_);
  bool ok = true;
  std::string msg;
  if (comm_.rank() == 0) {
    try {
      std::error_code ec;
      // Stale temporaries of killed saves of any step of the series.
      const std::filesystem::path pre(prefix_);
      const std::string tmp_start = "." + pre.filename().string() + ".";
      const auto dir = pre.parent_path().empty() ? std::filesystem::path(".") : pre.parent_path();
      for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.compare(0, tmp_start.size(), tmp_start) == 0 &&
            (name.find(".h5.tmp-") != std::string::npos || name.find(".xmf.tmp-") != std::string::npos))
          std::filesystem::remove(it->path(), ec);
      }
      ec.clear();
      // The files of this run (by their run id), oldest first; others are never touched.
      std::vector<std::int64_t> ours;
      for (std::int64_t s : list_steps(prefix_)) {
        std::string problem;
        if (local_run_id(path(s), problem) == *run_id_ && problem.empty()) ours.push_back(s);
      }
      for (std::size_t k = 0; k + static_cast<std::size_t>(keep_) < ours.size(); ++k) {
        const std::string old = path(ours[k]);
        std::filesystem::remove(impl::xdmf_path(old), ec);
        if (!std::filesystem::remove(old, ec) && ec)
          throw Error(impl::str(fn, ": cannot remove old checkpoint '", old, "': ", ec.message()));
      }
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  comm_.check(ok, msg);
}

CheckpointSeries::Latest CheckpointSeries::find_latest() const {
  Latest out;
  const std::vector<File> all = files();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::string reason = it->problem.empty() ? verify(it->path, comm_) : it->problem;
    if (reason.empty()) {
      out.path = it->path;
      break;
    }
    out.skipped.emplace_back(it->path, std::move(reason));
  }
  return out;
}

std::optional<std::string> CheckpointSeries::latest() const {
  return find_latest().path;
}

}  // namespace spmd::io

namespace spmd::testing {

void io_fault(const std::string& phase, int rank) {
  static const char* const phases[] = {"before_write", "before_dataset_write", "mid_dataset", "before_rename"};
  if (!phase.empty() && std::find(std::begin(phases), std::end(phases), phase) == std::end(phases))
    throw Error("spmd::testing::io_fault: unknown phase '" + phase +
                "' (before_write, before_dataset_write, mid_dataset, before_rename or empty)");
  io::impl::armed_fault() = io::impl::Fault{phase, rank, false};
}

void io_fault_error(const std::string& phase, int rank) {
  static const char* const phases[] = {"before_write", "before_dataset_write", "mid_dataset"};
  if (!phase.empty() && std::find(std::begin(phases), std::end(phases), phase) == std::end(phases))
    throw Error("spmd::testing::io_fault_error: unknown phase '" + phase +
                "' (before_write, before_dataset_write, mid_dataset or empty)");
  io::impl::armed_fault() = io::impl::Fault{phase, rank, true};
}

}  // namespace spmd::testing
