#pragma once
/// \file io/output_path.hpp
/// Whether a path may be an output that the library (io::save, CheckpointSeries) or an app
/// (--json) creates or replaces: outputs create new files or replace regular files, never a FIFO,
/// a device, a directory, a socket or a symbolic link (replacing one would destroy it, or block
/// on it). Header-only and free of HDF5, so that builds without HDF5 use it too.

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace spmd::io {

/// "a FIFO", "a directory", ...: what the file of mode `m` is, for a message. Local.
inline const char* file_kind(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/// Why `path` cannot be an output, or "" when it can: it is empty; it exists and is not a
/// regular file (a symbolic link is not followed: it is refused too); its directory does not
/// exist, is not a directory, or cannot be written. The reason names `path` (quoted as
/// given; `shown` replaces it in the text when not empty) and is one line. Local.
inline std::string output_path_problem(const std::string& path, const std::string& shown = {}) {
  const std::string name = "'" + (shown.empty() ? path : shown) + "'";
  if (path.empty()) return "the output path is empty";
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return name + " is " + file_kind(st.st_mode) + ", not a regular file: an output only creates a file or " +
             "replaces a regular one";
  } else if (errno != ENOENT) {
    return "cannot look at " + name + ": " + std::strerror(errno);
  }
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0)
    return "cannot write " + name + ": its directory '" + dir + "' " +
           (errno == ENOENT ? std::string("does not exist") : std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return "cannot write " + name + ": '" + dir + "' is " + file_kind(st.st_mode);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "cannot write " + name + ": its directory '" + dir + "' is not writable: " + std::strerror(errno);
  return {};
}

}  // namespace spmd::io
