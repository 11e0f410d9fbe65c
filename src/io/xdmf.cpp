// XDMF sidecar of a checkpoint: lets ParaView and VisIt open the 2-D and 3-D datasets as uniform
// grids (2DCoRectMesh / 3DCoRectMesh, origin 0, spacing 1, node-centred), one grid per distinct
// shape, each dataset an HDF DataItem pointing into the checkpoint.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "io_internal.hpp"

namespace spmd::io::impl {

std::string xdmf_path(const std::string& h5_path) {
  const std::string ext = ".h5";
  if (h5_path.size() > ext.size() && h5_path.compare(h5_path.size() - ext.size(), ext.size(), ext) == 0)
    return h5_path.substr(0, h5_path.size() - ext.size()) + ".xmf";
  return h5_path + ".xmf";
}

std::string write_temporary(const std::string& path, const std::string& contents, const char* fn) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(str(fn, ": cannot create '", tmp.string(), "': ", std::strerror(errno)));
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(str(fn, ": writing '", tmp.string(), "' failed: ", std::strerror(e)));
    }
    done += static_cast<std::size_t>(w);
  }
  // Close even when fsync fails (the descriptor must not leak), and report the first failure.
  const int synced = ::fsync(fd);
  const int sync_errno = errno;
  const int closed = ::close(fd);
  if (synced != 0 || closed != 0) {
    const int e = synced != 0 ? sync_errno : errno;
    ::unlink(tmp.c_str());
    throw Error(str(fn, ": flushing '", tmp.string(), "' failed: ", std::strerror(e)));
  }
  return tmp.string();
}

void commit_temporary(const std::string& tmp, const std::string& path, const char* fn) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw Error(str(fn, ": renaming '", tmp, "' to '", path, "' failed: ", std::strerror(e)));
  }
}

namespace {
void number_type(ElementType t, std::ostream& os) {
  switch (t) {
    case ElementType::float64:
      os << R"(NumberType="Float" Precision="8")";
      break;
    case ElementType::float32:
      os << R"(NumberType="Float" Precision="4")";
      break;
    case ElementType::int32:
      os << R"(NumberType="Int" Precision="4")";
      break;
    case ElementType::int64:
      os << R"(NumberType="Int" Precision="8")";
      break;
    case ElementType::uint32:
      os << R"(NumberType="UInt" Precision="4")";
      break;
    case ElementType::uint64:
      os << R"(NumberType="UInt" Precision="8")";
      break;
    case ElementType::complex64:  // not listed (XDMF has no complex numbers)
    case ElementType::complex128:
      break;
  }
}
std::string dims_str(const std::vector<index_t>& shape) {
  std::ostringstream os;
  for (std::size_t d = 0; d < shape.size(); ++d) os << (d ? " " : "") << shape[d];
  return os.str();
}
std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}
}  // namespace

std::string xdmf_text(const std::string& h5_path, const std::vector<DatasetInfo>& datasets,
                      const Attributes& attributes) {
  std::map<std::vector<index_t>, std::vector<const DatasetInfo*>> by_shape;
  for (const auto& d : datasets)  // (XDMF has no complex numbers: complex datasets are not listed)
    if ((d.shape.size() == 2 || d.shape.size() == 3) && d.type != ElementType::complex64 &&
        d.type != ElementType::complex128)
      by_shape[d.shape].push_back(&d);
  if (by_shape.empty()) return {};
  const std::string file = xml_escape(std::filesystem::path(h5_path).filename().string());
  std::ostringstream os;
  os << "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n <Domain>\n";
  const auto time = attributes.find("time");
  for (const auto& [shape, list] : by_shape) {
    const int n = static_cast<int>(shape.size());
    const std::string dims = dims_str(shape);
    os << "  <Grid Name=\"grid_" << (n == 2 ? "2d_" : "3d_");
    for (std::size_t d = 0; d < shape.size(); ++d) os << (d ? "x" : "") << shape[d];
    os << "\" GridType=\"Uniform\">\n";
    if (time != attributes.end() && std::holds_alternative<double>(time->second))
      os << "   <Time Value=\"" << std::get<double>(time->second) << "\"/>\n";
    os << "   <Topology TopologyType=\"" << n << "DCoRectMesh\" Dimensions=\"" << dims << "\"/>\n";
    os << "   <Geometry GeometryType=\"" << (n == 2 ? "ORIGIN_DXDY" : "ORIGIN_DXDYDZ") << "\">\n";
    os << "    <DataItem Dimensions=\"" << n << R"(" NumberType="Float" Precision="8" Format="XML">)"
       << (n == 2 ? "0 0" : "0 0 0") << "</DataItem>\n";
    os << "    <DataItem Dimensions=\"" << n << R"(" NumberType="Float" Precision="8" Format="XML">)"
       << (n == 2 ? "1 1" : "1 1 1") << "</DataItem>\n";
    os << "   </Geometry>\n";
    for (const DatasetInfo* d : list) {
      os << "   <Attribute Name=\"" << xml_escape(d->name) << R"(" AttributeType="Scalar" Center="Node">)"
         << "\n";
      os << "    <DataItem Dimensions=\"" << dims << "\" ";
      number_type(d->type, os);
      os << " Format=\"HDF\">" << file << ":/" << xml_escape(d->name) << "</DataItem>\n";
      os << "   </Attribute>\n";
    }
    os << "  </Grid>\n";
  }
  os << " </Domain>\n</Xdmf>\n";
  return os.str();
}

}  // namespace spmd::io::impl
