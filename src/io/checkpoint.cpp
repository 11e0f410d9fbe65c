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

#include "io_internal.hpp"
#include "spmd/config.hpp"

namespace spmd::io {

const char* element_type_name(ElementType t) {
  switch (t) {
    case ElementType::int32:
      return "int32";
    case ElementType::int64:
      return "int64";
    case ElementType::uint32:
      return "uint32";
    case ElementType::uint64:
      return "uint64";
    case ElementType::float32:
      return "float32";
    case ElementType::float64:
      return "float64";
  }
  return "?";
}

const DatasetInfo* FileInfo::find(const std::string& name) const {
  for (const auto& d : datasets)
    if (d.name == name) return &d;
  return nullptr;
}

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
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(str(fn, ": ", what, " failed for '", path, "': ", hdf5_errors()));
  }
  herr_t check(herr_t rc, const char* what) const {
    if (rc < 0) fail(what);
    return rc;
  }
};

/// An owned hid_t closed by its close function.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t), const Where& w, const char* what) : id_(id), close_(close) {
    if (id_ < 0) w.fail(what);
  }
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0 && close_) close_(id_);  // errors on the unwinding path are not reportable
  }
  /// Close now and report failure (a file's close is where its data is flushed).
  void close(const Where& w, const char* what) {
    const hid_t id = id_;
    id_ = -1;
    if (id >= 0) w.check(close_(id), what);
  }
  operator hid_t() const { return id_; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

hid_t mem_type(ElementType t) {
  switch (t) {
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
bool parse_element_type(const std::string& s, ElementType& t) {
  for (ElementType c : {ElementType::int32, ElementType::int64, ElementType::uint32, ElementType::uint64,
                        ElementType::float32, ElementType::float64})
    if (s == element_type_name(c)) {
      t = c;
      return true;
    }
  return false;
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

/// Reads the scalar attribute `name` of `loc` as an int64, double or string (other shapes and
/// classes: false).
bool read_attr_value(hid_t loc, const char* name, AttributeValue& out, const Where& w) {
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose, w, "H5Aopen");
  Handle space(H5Aget_space(attr), H5Sclose, w, "H5Aget_space");
  if (H5Sget_simple_extent_npoints(space) != 1) return false;
  Handle type(H5Aget_type(attr), H5Tclose, w, "H5Aget_type");
  const H5T_class_t cls = H5Tget_class(type);
  if (cls == H5T_INTEGER) {
    std::int64_t v = 0;
    w.check(H5Aread(attr, H5T_NATIVE_INT64, &v), "H5Aread");
    out = v;
  } else if (cls == H5T_FLOAT) {
    double v = 0;
    w.check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), "H5Aread");
    out = v;
  } else if (cls == H5T_STRING) {
    const htri_t vl = H5Tis_variable_str(type);
    w.check(vl, "H5Tis_variable_str");
    if (vl > 0) {
      char* p = nullptr;
      w.check(H5Aread(attr, type, &p), "H5Aread");
      out = std::string(p ? p : "");
      w.check(H5Dvlen_reclaim(type, space, H5P_DEFAULT, &p), "H5Dvlen_reclaim");
    } else {
      std::string s(H5Tget_size(type), '\0');
      w.check(H5Aread(attr, type, s.data()), "H5Aread");
      s.resize(std::strlen(s.c_str()));
      out = s;
    }
  } else {
    return false;
  }
  return true;
}

/// Every attribute of `loc` that read_attr_value understands.
Attributes read_all_attrs(hid_t loc, const Where& w) {
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
  Attributes out;
  for (const auto& n : names) {
    AttributeValue v;
    if (read_attr_value(loc, n.c_str(), v, w)) out[n] = v;
  }
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

/// SPMD_IO_FAULT=phase:rank makes that rank SIGKILL itself at that phase of save() (phases:
/// before_write, mid_dataset, before_rename). For the crash-safety tests.
void fault_point(const Comm& comm, const char* phase) {
  const char* env = std::getenv("SPMD_IO_FAULT");
  if (!env) return;
  const std::string spec(env);
  const auto colon = spec.find(':');
  if (colon == std::string::npos || spec.substr(0, colon) != phase) return;
  if (std::atoi(spec.c_str() + colon + 1) != comm.rank()) return;
  std::fprintf(stderr, "spmd::io: SPMD_IO_FAULT=%s: rank %d kills itself at %s\n", env, comm.rank(), phase);
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

Handle mpio_fapl(const Comm& comm, const Where& w) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, w, "H5Pcreate (file access)");
  w.check(H5Pset_fapl_mpio(fapl, comm.raw(), MPI_INFO_NULL), "H5Pset_fapl_mpio");
  w.check(H5Pset_all_coll_metadata_ops(fapl, true), "H5Pset_all_coll_metadata_ops");
  w.check(H5Pset_coll_metadata_write(fapl, true), "H5Pset_coll_metadata_write");
  // Datasets of 1 MiB or more start on 1 MiB boundaries (file-system blocks / stripes).
  w.check(H5Pset_alignment(fapl, 1 << 20, 1 << 20), "H5Pset_alignment");
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

/// Reads the file's metadata on this rank alone (serial driver). Throws spmd::Error (local).
FileInfo inspect_local(const std::string& path, const char* fn) {
  QuietHdf5 quiet;
  const Where w{fn, path};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(str(fn, ": cannot open checkpoint '", path, "': ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw Error(str(fn, ": checkpoint '", path, "' is not a regular file"));
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is == 0) throw Error(str(fn, ": '", path, "' is not an HDF5 file (no HDF5 signature)"));
  if (is < 0) w.fail("H5Fis_hdf5");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, w,
              "H5Fopen (the file may be truncated or corrupt)");
  Handle root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, w, "H5Gopen2");
  Attributes all = read_all_attrs(root, w);
  FileInfo info;
  info.path = path;
  const auto ver = all.find("spmd_format_version");
  if (ver == all.end() || !std::holds_alternative<std::int64_t>(ver->second))
    throw Error(str(fn, ": '", path, "' is an HDF5 file but not an spmdarray checkpoint (no spmd_format_version)"));
  info.format_version = std::get<std::int64_t>(ver->second);
  if (info.format_version > format_version)
    throw Error(str(fn, ": '", path, "' has checkpoint format version ", info.format_version,
                    ", newer than the version ", format_version, " this spmdarray ", SPMD_VERSION_STRING,
                    " reads; use a newer spmdarray"));
  const auto lib = all.find("spmd_library_version");
  if (lib != all.end() && std::holds_alternative<std::string>(lib->second))
    info.library_version = std::get<std::string>(lib->second);
  for (const auto& [k, v] : all)
    if (k.compare(0, 5, "spmd_") != 0) info.attributes[k] = v;

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
    DatasetInfo d;
    d.name = name;
    d.shape.assign(dims.begin(), dims.end());
    Attributes da = read_all_attrs(dset, w);
    const auto et = da.find("spmd_element_type");
    const auto ck = da.find("spmd_checksum_crc32");
    if (et == da.end() || !std::holds_alternative<std::string>(et->second) ||
        !parse_element_type(std::get<std::string>(et->second), d.type))
      throw Error(str(fn, ": dataset '", name, "' of '", path, "' lacks a valid spmd_element_type attribute"));
    if (ck == da.end() || !std::holds_alternative<std::int64_t>(ck->second))
      throw Error(str(fn, ": dataset '", name, "' of '", path, "' lacks its spmd_checksum_crc32 attribute"));
    d.checksum = static_cast<std::uint32_t>(std::get<std::int64_t>(ck->second));
    info.datasets.push_back(std::move(d));
  }
  file.close(w, "H5Fclose");
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

/// Rank 0 reads the metadata (one reader, however many ranks) and broadcasts it; a failure
/// becomes the same spmd::Error on every rank. Collective.
FileInfo inspect_agreed(const std::string& path, const Comm& comm, const char* fn) {
  bool ok = true;
  std::string msg, blob;
  if (comm.rank() == 0) {
    try {
      blob = pack(inspect_local(path, fn));
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  comm.check(ok, msg);
  return unpack(bcast_string(comm, blob));
}

}  // namespace

// ---- save ------------------------------------------------------------------------------------------

void save_blocks(const std::string& path, const std::vector<HostBlock>& blocks, const Attributes& attributes,
                 const SaveOptions& options) {
  const char* fn = "spmd::io::save";
  if (blocks.empty()) throw Error(str(fn, ": no arrays to save to '", path, "'"), true);
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
    for (const auto& [k, v] : attributes)
      if (!valid_name(k) && bad.empty())
        bad = str("attribute name '", k, "' is empty, contains '/' or starts with the reserved 'spmd_'");
    const std::string mine = serialize(attributes);
    if (bad.empty() && bcast_string(comm, mine) != mine)
      bad = str("the attributes differ between ranks (rank ", comm.rank(), " differs from rank 0)");
    comm.check(bad.empty(), str(fn, ": ", bad, " (file '", path, "')"));
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
  auto agree = [&](bool ok, const std::string& msg) {
    try {
      comm.check(ok, msg);
    } catch (...) {
      if (comm.rank() == 0) ::unlink(tmp.c_str());
      throw;
    }
  };

  bool ok = true;
  std::string msg;
  try {
    QuietHdf5 quiet;
    const Where w{fn, tmp};
    fault_point(comm, "before_write");
    Handle fapl = mpio_fapl(comm, w);
    Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose, w, "H5Fcreate");
    const std::int64_t fmt = format_version;
    write_attr(file, "spmd_format_version", H5T_STD_I64LE, H5T_NATIVE_INT64, &fmt, w);
    write_attr_value(file, "spmd_library_version", std::string(SPMD_VERSION_STRING), w);
    write_attr_value(file, "spmd_checksum", std::string("crc32 of the little-endian row-major bytes (zlib)"), w);
    for (const auto& [k, v] : attributes) write_attr_value(file, k, v, w);
    Handle dxpl = collective_dxpl(w);
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, w, "H5Pcreate (dataset create)");
    w.check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");  // every element is written
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const HostBlock& b = blocks[k];
      std::vector<hsize_t> dims(b.shape.begin(), b.shape.end());
      Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose, w,
                   "H5Screate_simple (dataset)");
      Handle dset(H5Dcreate2(file, b.name.c_str(), file_type(b.type), space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose,
                  w, "H5Dcreate2");
      write_attr_value(dset, "spmd_element_type", std::string(element_type_name(b.type)), w);
      const std::int64_t crc = infos[k].checksum;
      write_attr(dset, "spmd_checksum_crc32", H5T_STD_I64LE, H5T_NATIVE_INT64, &crc, w);
      std::vector<std::int64_t> shape(b.shape.begin(), b.shape.end());
      write_attr(dset, "spmd_shape", H5T_STD_I64LE, H5T_NATIVE_INT64, shape.data(), w, {dims.size()});
      if (!std::count(b.shape.begin(), b.shape.end(), index_t(0))) {  // an empty dataset has no storage
        Selections sel = select_block(dset, b, w);
        char dummy = 0;
        w.check(H5Dwrite(dset, mem_type(b.type), sel.mem, sel.file, dxpl, b.data ? b.data : &dummy), "H5Dwrite");
      }
      if (k == 0) fault_point(comm, "mid_dataset");
      dset.close(w, "H5Dclose");
    }
    file.close(w, "H5Fclose");
  } catch (const std::exception& e) {
    ok = false;
    msg = e.what();
  }
  agree(ok, msg);

  // Durable, then visible: fsync the temporary, rename it over the target, fsync the directory.
  ok = true;
  try {
    if (comm.rank() == 0) fsync_path(tmp, false, fn);
  } catch (const std::exception& e) {
    ok = false;
    msg = e.what();
  }
  fault_point(comm, "before_rename");
  agree(ok, msg);  // the barrier: every rank is alive and done before the file becomes visible
  ok = true;
  try {
    if (comm.rank() == 0) {
      if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw Error(str(fn, ": renaming '", tmp, "' to '", path, "' failed: ", std::strerror(errno)));
      const fs::path dir = fs::path(path).parent_path();
      fsync_path(dir.empty() ? "." : dir.string(), true, fn);
      if (options.xdmf) write_xdmf(xdmf_path(path), path, infos, attributes);
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
  const Comm& comm = b.comm;
  const FileInfo info = inspect_agreed(path, comm, fn);
  const DatasetInfo* d = info.find(b.name);
  if (!d) {
    std::vector<std::string> names;
    for (const auto& x : info.datasets) names.push_back(x.name);
    throw Error(str(fn, ": '", path, "' has no dataset '", b.name, "' (it has ", shape_str(names), ")"), true);
  }
  if (d->type != b.type)
    throw Error(str(fn, ": dataset '", b.name, "' of '", path, "' holds ", element_type_name(d->type),
                    " elements; the array to load into holds ", element_type_name(b.type)),
                true);
  if (d->shape != b.shape)
    throw Error(str(fn, ": dataset '", b.name, "' of '", path, "' has shape ", shape_str(d->shape),
                    "; the requested distribution has shape ", shape_str(b.shape)),
                true);

  bool ok = true;
  std::string msg;
  try {
    QuietHdf5 quiet;
    const Where w{fn, path};
    Handle fapl = mpio_fapl(comm, w);
    Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose, w, "H5Fopen");
    Handle dset(H5Dopen2(file, b.name.c_str(), H5P_DEFAULT), H5Dclose, w, "H5Dopen2");
    if (!std::count(b.shape.begin(), b.shape.end(), index_t(0))) {
      Selections sel = select_block(dset, b, w);
      Handle dxpl = collective_dxpl(w);
      char dummy = 0;
      w.check(H5Dread(dset, mem_type(b.type), sel.mem, sel.file, dxpl, b.data ? b.data : &dummy), "H5Dread");
    }
    dset.close(w, "H5Dclose");
    file.close(w, "H5Fclose");
  } catch (const std::exception& e) {
    ok = false;
    msg = e.what();
  }
  comm.check(ok, msg);
  if (options.verify_checksum) {
    const std::uint32_t crc = checksum_block(b);
    if (crc != d->checksum)
      throw Error(str(fn, ": checksum mismatch in dataset '", b.name, "' of '", path, "': stored crc32 ", d->checksum,
                      ", data read has ", crc, " (the file is corrupt)"),
                  true);
  }
}

}  // namespace impl

// ---- public functions ------------------------------------------------------------------------------

void save(const std::string& path, const std::vector<Dataset>& datasets, const Attributes& attributes,
          const SaveOptions& options) {
  std::vector<impl::HostBlock> blocks;
  blocks.reserve(datasets.size());
  for (const auto& d : datasets) blocks.push_back(d.block());
  impl::save_blocks(path, blocks, attributes, options);
}

FileInfo inspect(const std::string& path, const Comm& comm) {
  return impl::inspect_agreed(path, comm, "spmd::io::inspect");
}

Attributes read_attributes(const std::string& path, const Comm& comm) {
  return impl::inspect_agreed(path, comm, "spmd::io::read_attributes").attributes;
}

// ---- CheckpointSeries ------------------------------------------------------------------------------

CheckpointSeries::CheckpointSeries(Comm comm, std::string prefix, int keep)
    : comm_(std::move(comm)), prefix_(std::move(prefix)), keep_(keep) {
  if (prefix_.empty()) throw Error("spmd::io::CheckpointSeries: the prefix is empty");
  if (keep_ < 1) throw Error(impl::str("spmd::io::CheckpointSeries: keep must be at least 1, not ", keep_));
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

std::vector<std::int64_t> CheckpointSeries::steps() const {
  std::vector<std::int64_t> s;
  if (comm_.rank() == 0) s = list_steps(prefix_);
  int n = comm_.bcast(static_cast<int>(s.size()), 0);
  s.resize(static_cast<std::size_t>(n));
  if (n > 0) comm_.bcast(s.data(), n, 0);
  return s;
}

void CheckpointSeries::save(std::int64_t step, const std::vector<Dataset>& datasets, Attributes attributes,
                            const SaveOptions& options) const {
  attributes["step"] = step;
  io::save(path(step), datasets, attributes, options);
  bool ok = true;
  std::string msg;
  if (comm_.rank() == 0) {
    try {
      std::vector<std::int64_t> s = list_steps(prefix_);
      std::error_code ec;
      // Stale temporaries of killed saves of any step of the series.
      const std::filesystem::path pre(prefix_);
      const std::string tmp_start = "." + pre.filename().string() + ".";
      const auto dir = pre.parent_path().empty() ? std::filesystem::path(".") : pre.parent_path();
      for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.compare(0, tmp_start.size(), tmp_start) == 0 && name.find(".h5.tmp-") != std::string::npos)
          std::filesystem::remove(it->path(), ec);
      }
      ec.clear();
      for (std::size_t k = 0; k + static_cast<std::size_t>(keep_) < s.size(); ++k) {
        const std::string old = path(s[k]);
        std::filesystem::remove(impl::xdmf_path(old), ec);
        if (!std::filesystem::remove(old, ec) && ec)
          throw Error(
              impl::str("spmd::io::CheckpointSeries::save: cannot remove old checkpoint '", old, "': ", ec.message()));
      }
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  comm_.check(ok, msg);
}

std::optional<std::string> CheckpointSeries::latest() const {
  const std::vector<std::int64_t> s = steps();
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    const std::string p = path(*it);
    int ok = 1;
    if (comm_.rank() == 0) {
      try {
        impl::inspect_local(p, "spmd::io::CheckpointSeries::latest");
      } catch (const std::exception&) {
        ok = 0;
      }
    }
    if (comm_.bcast(ok, 0) == 1) return p;
  }
  return std::nullopt;
}

}  // namespace spmd::io
