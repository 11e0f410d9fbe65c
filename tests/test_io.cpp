// spmd::io: checkpoints round-trip at any rank count and process grid, carry attributes and a
// checksum equal to a serial zlib crc32, and every invalid file is refused on every rank alike.
//
// Files go under ./io-test/np<ranks>/ (the ctest working directory). The CrossRank tests run only
// when SPMD_IO_CROSS_DIR is set: ctest writes there at 4 ranks and reads at 1, 2 and 3.
#include <hdf5.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/checkpoint_metadata_input.hpp"
#include "spmd/io/impl/testing.hpp"
#include "spmd/io/integrity.hpp"
#include "spmd_test.hpp"

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::expect_all;
using spmd::testing::world;
namespace io = spmd::io;
namespace fs = std::filesystem;

namespace {

/// A fresh directory shared by the ranks of this job. Collective.
std::string test_dir(const std::string& name) {
  const std::string dir = "io-test/np" + std::to_string(world().size()) + "/" + name;
  if (world().rank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  world().barrier();
  return dir;
}

/// Element value at global index g (distinct, exact in every tested type).
template <class T, int N>
T value_at(const Index<N>& g, int salt) {
  double v = salt;
  for (int d = 0; d < N; ++d) v = v * 37.0 + static_cast<double>(g[d]);
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v * 0.5 - 3.0);
  return static_cast<T>(v) - static_cast<T>(7);
}

template <class T, int N>
std::vector<T> reference(const Index<N>& shape, int salt) {
  return spmd::testing::host_array<N, T>(shape, [&](const Index<N>& g) { return value_at<T, N>(g, salt); });
}

template <class T, int N>
Array<T, N> filled(const Distribution<N>& d, int salt) {
  Array<T, N> a(d, spmd::label("test_io::a"));
  a.fill_with_halo(T(-99));  // halos keep this
  spmd::scatter(a, world().rank() == 0 ? reference<T, N>(d.shape(), salt) : std::vector<T>{});
  return a;
}

template <class T>
std::uint32_t serial_crc(const std::vector<T>& v) {
  return static_cast<std::uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(v.data()), v.size() * sizeof(T)));
}

/// Expect that `a` holds reference<T>(shape, salt) (checked on rank 0, agreed).
template <class T, int N>
void expect_values(const Array<T, N>& a, int salt, const char* what) {
  const std::vector<T> got = spmd::gather(a);
  bool ok = true;
  if (world().rank() == 0) {
    ok = got == reference<T, N>(a.shape(), salt);
    EXPECT_TRUE(ok) << what << ": loaded values differ from the reference";
  }
  expect_all(world().bcast(ok ? 1 : 0, 0) == 1, what);
}

/// Save on distribution `w` (halo 1), load on `r`; values, checksum and halo untouched.
template <class T, int N>
void round_trip(const Index<N>& shape, const std::vector<int>& write_grid, const std::vector<int>& read_grid,
                const std::string& dir) {
  spmd::DistributionOptions wo, ro;
  wo.dims = write_grid;
  wo.halo = {1};
  ro.dims = read_grid;
  ro.halo = {N > 1 ? 1 : 0};
  Distribution<N> wd(world(), shape, wo), rd(world(), shape, ro);
  const int salt = N * 10 + static_cast<int>(sizeof(T));
  auto a = filled<T, N>(wd, salt);
  const std::string path =
      dir + "/rt_" + std::to_string(N) + "d_" + io::element_type_name(io::element_type<T>()) + ".h5";
  io::save(path, {{"a", a}}, {{"step", std::int64_t(N)}});
  auto b = io::load<T>(path, "a", rd);
  expect_values(b, salt, path.c_str());
  const std::uint32_t ref_crc = world().rank() == 0 ? serial_crc(reference<T, N>(shape, salt)) : 0;
  EXPECT_EQ(io::checksum(b), world().bcast(ref_crc, 0)) << "parallel checksum vs serial zlib crc32";
  EXPECT_EQ(io::inspect(path, world()).find("a")->checksum, world().bcast(ref_crc, 0));
}

}  // namespace

TEST(Io, RoundTrip1Dto4DAllTypes) {
  const std::string dir = test_dir("roundtrip");
  const int p = world().size();
  round_trip<double, 1>({37}, {0}, {0}, dir);
  round_trip<std::int32_t, 1>({5}, {0}, {0}, dir);
  round_trip<float, 2>({13, 9}, {0, 0}, {1, p}, dir);
  round_trip<std::int64_t, 2>({7, 11}, {p, 1}, {1, p}, dir);
  round_trip<double, 3>({5, 6, 7}, {1, 1, p}, {p, 1, 1}, dir);
  round_trip<std::int32_t, 3>({4, 3, 5}, {0, 0, 0}, {1, 1, p}, dir);
  round_trip<float, 4>({3, 4, 2, 5}, {1, p, 1, 1}, {0, 0, 0, 0}, dir);
  round_trip<std::int64_t, 4>({2, 3, 4, 3}, {0, 0, 0, 0}, {1, 1, p, 1}, dir);
}

TEST(Io, EmptyBlocksAndEmptyArrays) {
  const std::string dir = test_dir("empty");
  // 2 elements on up to 4 ranks: some ranks own nothing; and a 0 x 3 array.
  Distribution<1> d(world(), {2});
  auto a = filled<double, 1>(d, 3);
  Distribution<2> z(world(), {0, 3});
  Array<std::int32_t, 2> e(z);
  io::save(dir + "/e.h5", {{"a", a}, {"zero", e}});
  auto b = io::load<double>(dir + "/e.h5", "a", Distribution<1>(world(), {2}));
  expect_values(b, 3, "two elements");
  auto f = io::load<std::int32_t>(dir + "/e.h5", "zero", z);
  EXPECT_EQ(f.size(), 0);
  EXPECT_EQ(io::inspect(dir + "/e.h5", world()).find("zero")->checksum, 0u);  // crc32 of nothing
}

TEST(Io, SeveralArraysAttributesAndXdmf) {
  const std::string dir = test_dir("multi");
  Distribution<2> d2(world(), {12, 10}, spmd::halo(1));
  Distribution<3> d3(world(), {4, 5, 6});
  Distribution<1> d1(world(), {9});
  auto u = filled<double, 2>(d2, 1);
  auto w = filled<float, 3>(d3, 2);
  auto k = filled<std::int64_t, 1>(d1, 3);
  const io::Attributes attrs{
      {"step", std::int64_t(42)}, {"time", 0.125}, {"name", std::string("heat run")}, {"empty", std::string()}};
  const std::string path = dir + "/state.h5";
  io::save(path, {{"u", u}, {"w", w}, {"k", k}}, attrs);
  EXPECT_EQ(io::read_attributes(path, world()), attrs);
  const io::FileInfo info = io::inspect(path, world());
  EXPECT_EQ(info.format_version, io::format_version);
  EXPECT_EQ(info.library_version, SPMD_VERSION_STRING);
  ASSERT_EQ(info.datasets.size(), 3u);
  EXPECT_EQ(info.find("w")->type, io::ElementType::float32);
  EXPECT_EQ(info.find("w")->shape, (std::vector<index_t>{4, 5, 6}));
  expect_values(io::load<double>(path, "u", Distribution<2>(world(), {12, 10})), 1, "u");
  expect_values(io::load<float>(path, "w", d3), 2, "w");
  expect_values(io::load<std::int64_t>(path, "k", d1), 3, "k");
  // load_into leaves the halo as it was.
  auto v = spmd::full<double>(d2, -5.0);
  io::load_into(path, "u", v);
  expect_values(v, 1, "load_into");
  const auto local = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v.local_with_halo());
  bool halo_ok = true;
  if (v.owned().size() > 0) halo_ok = local(0, 0) == -5.0;
  expect_all(halo_ok, "halo untouched by load_into");

  bool xmf_ok = true;
  if (world().rank() == 0) {
    std::ifstream in(dir + "/state.xmf");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string x = ss.str();
    xmf_ok = x.find("2DCoRectMesh\" Dimensions=\"12 10\"") != std::string::npos &&
             x.find("3DCoRectMesh\" Dimensions=\"4 5 6\"") != std::string::npos &&
             x.find("state.h5:/u") != std::string::npos && x.find("state.h5:/w") != std::string::npos &&
             x.find("state.h5:/k") == std::string::npos && x.find("<Time Value=\"0.125\"") != std::string::npos;
    EXPECT_TRUE(xmf_ok) << x;
  }
  expect_all(world().bcast(xmf_ok ? 1 : 0, 0) == 1, "xdmf sidecar");
  // Overwriting replaces the file (atomically) and leaves no temporary behind.
  auto u2 = filled<double, 2>(d2, 9);
  io::save(path, {{"u", u2}});
  expect_values(io::load<double>(path, "u", d2), 9, "overwritten");
  bool clean = true;
  if (world().rank() == 0)
    for (const auto& e : fs::directory_iterator(dir)) clean = clean && e.path().filename().string()[0] != '.';
  expect_all(world().bcast(clean ? 1 : 0, 0) == 1, "no temporaries left");
}

TEST(Io, OneRankFailingMidSaveFailsEverywhereWithoutHanging) {
  // A failure on one rank alone inside the collective HDF5 sequence (as a failed HDF5 call on
  // that rank would give) must reach every rank as the same error without a hang (the ctest
  // timeout is the hang detector: a rank closing the MPI-IO file while the others are in the
  // next collective call waits forever), leave the previous checkpoint and no temporary, and
  // leave no file open in HDF5 on any rank (the next save works).
  const std::string dir = test_dir("one_rank_fails");
  const Distribution<2> d2(world(), {12, 10});
  const Distribution<1> d1(world(), {9});
  const std::string path = dir + "/state.h5";
  io::save(path, {{"u", filled<double, 2>(d2, 1)}, {"k", filled<std::int64_t, 1>(d1, 2)}});
  const int last = world().size() - 1;
  const std::string needle = "test fault: rank " + std::to_string(last) + " fails at ";
  for (const char* phase : {"before_write", "before_dataset_write", "mid_dataset"}) {
    SCOPED_TRACE(phase);
    spmd::testing::io_fault_error(phase, last);
    auto u = filled<double, 2>(d2, 5);
    auto k = filled<std::int64_t, 1>(d1, 6);
    SPMD_EXPECT_COLLECTIVE_ERROR(io::save(path, {{"u", u}, {"k", k}}), needle + phase);
    spmd::testing::io_fault_error("", -1);
    expect_all(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE) == 0, "no HDF5 file left open after the failed save");
    expect_values(io::load<double>(path, "u", d2), 1, "the previous checkpoint");
    expect_values(io::load<std::int64_t>(path, "k", d1), 2, "the previous checkpoint");
    bool clean = true;
    if (world().rank() == 0)
      for (const auto& e : fs::directory_iterator(dir)) clean = clean && e.path().filename().string()[0] != '.';
    expect_all(world().bcast(clean ? 1 : 0, 0) == 1, "no temporaries left");
  }
  io::save(path, {{"u", filled<double, 2>(d2, 7)}});
  expect_values(io::load<double>(path, "u", d2), 7, "a save after the failures");
  expect_all(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE) == 0, "no HDF5 file left open");
}

TEST(Io, SaveArgumentErrors) {
  const std::string dir = test_dir("args");
  Distribution<1> d(world(), {8});
  auto a = filled<double, 1>(d, 1);
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/x.h5", {{"a", a}, {"a", a}}), "given twice");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/x.h5", {{"a/b", a}}), "dataset name 'a/b'");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/x.h5", {{"a", a}}, {{"spmd_x", std::int64_t(1)}}), "reserved");
  if (world().size() > 1) {
    const io::Attributes mine{{"rank", std::int64_t(world().rank())}};
    SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/x.h5", {{"a", a}}, mine), "attributes differ between ranks");
  }
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/no/such/dir/x.h5", {{"a", a}}), "spmd::io::save");
  expect_all(!fs::exists(dir + "/x.h5"), "nothing written by failed saves");
}

namespace {
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
/// Rank 0 writes the file's integrity record again for what it holds now (a file changed on
/// purpose), then all ranks go on. Collective.
void reseal(const std::string& path) {
  if (world().rank() == 0) write_file(path, io::reseal_integrity_record(read_file(path)));
  world().barrier();
}
/// Rank 0 changes the file with serial HDF5 (to make invalid files), then all ranks go on.
template <class F>
void edit_file(const std::string& path, F&& f) {
  if (world().rank() == 0) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    f(file);
    ASSERT_GE(H5Fclose(file), 0);
  }
  world().barrier();
}
}  // namespace

TEST(Io, InvalidFilesGiveTheSameErrorEverywhere) {
  const std::string dir = test_dir("invalid");
  Distribution<2> d(world(), {10, 6});
  auto a = filled<double, 2>(d, 4);
  const std::string good = dir + "/good.h5";
  io::save(good, {{"a", a}});

  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(dir + "/missing.h5", "a", d), "No such file");
  if (world().rank() == 0) std::ofstream(dir + "/text.h5") << "this is not HDF5\n";
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(dir + "/text.h5", "a", d), "is not an HDF5 file");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(good, "b", d), "has no dataset 'b' (it has {a})");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<float>(good, "a", Distribution<2>(world(), {10, 6})),
                               "holds float64 elements; the array to load into holds float32");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(good, "a", Distribution<2>(world(), {6, 10})),
                               "has shape {10, 6}; the requested distribution has shape {6, 10}");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(good, "a", Distribution<3>(world(), {10, 6, 1})), "has shape {10, 6}");

  // Checksum: change one element behind the library's back.
  const std::string corrupt = dir + "/corrupt.h5";
  io::save(corrupt, {{"a", a}});
  edit_file(corrupt, [](hid_t file) {
    const hid_t dset = H5Dopen2(file, "a", H5P_DEFAULT);
    const hid_t space = H5Dget_space(dset);
    const hsize_t start[2] = {3, 2}, count[2] = {1, 1};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
    const hid_t mem = H5Screate_simple(1, count, nullptr);
    const double v = 1e300;
    EXPECT_GE(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, &v), 0);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
  });
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(corrupt, "a", d), "checksum mismatch in dataset 'a'");
  // ... which the caller may skip.
  io::LoadOptions skip;
  skip.verify_checksum = false;
  EXPECT_NO_THROW(io::load<double>(corrupt, "a", d, skip));

  // A newer format version (the file edited on purpose: its integrity record written again).
  const std::string newer = dir + "/newer.h5";
  io::save(newer, {{"a", a}});
  edit_file(newer, [](hid_t file) {
    const hid_t attr = H5Aopen(file, "spmd_format_version", H5P_DEFAULT);
    const std::int64_t v = io::format_version + 1;
    EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &v), 0);
    H5Aclose(attr);
  });
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(newer, "a", d), "is damaged: its HDF5 metadata");
  reseal(newer);
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(newer, "a", d), "newer than the version 2");

  // An HDF5 file that spmdarray did not write, and one written as spmdarray did before format 2
  // (no integrity record): neither is opened by HDF5.
  const std::string foreign = dir + "/foreign.h5";
  if (world().rank() == 0) H5Fclose(H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::inspect(foreign, world()), "is an HDF5 file without an integrity record");
  const std::string old_format = dir + "/format1.h5";
  if (world().rank() == 0) {
    const std::string bytes = read_file(good);
    io::IntegrityRecord r;
    std::size_t need = 0;
    ASSERT_EQ(io::decode_integrity_record(bytes, bytes.size(), r, need), "");
    write_file(old_format, bytes.substr(r.block));  // HDF5 finds its superblock at 0 now
  }
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(old_format, "a", d), "without an integrity record");

  // Truncated: the last part of the file (the data) is cut off.
  const std::string cut = dir + "/truncated.h5";
  io::save(cut, {{"a", a}});
  if (world().rank() == 0) fs::resize_file(cut, fs::file_size(cut) - 200);
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(cut, "a", d), "truncated");

  // The good file still loads after all that.
  expect_values(io::load<double>(good, "a", d), 4, "good file");
}

TEST(Io, CheckpointSeriesKeepsTheNewest) {
  const std::string dir = test_dir("series");
  Distribution<2> d(world(), {6, 5});
  io::CheckpointSeries series(world(), dir + "/run", 2);
  EXPECT_FALSE(series.latest().has_value());
  for (int step = 10; step <= 40; step += 10) {
    auto a = filled<double, 2>(d, step);
    series.save(step, {{"u", a}}, {{"time", step * 0.5}});
  }
  EXPECT_EQ(series.steps(), (std::vector<std::int64_t>{30, 40}));
  ASSERT_TRUE(series.latest().has_value());
  EXPECT_EQ(*series.latest(), dir + "/run.0000000040.h5");
  const auto attrs = io::read_attributes(*series.latest(), world());
  EXPECT_EQ(std::get<std::int64_t>(attrs.at("step")), 40);
  EXPECT_EQ(std::get<double>(attrs.at("time")), 20.0);
  expect_values(io::load<double>(*series.latest(), "u", d), 40, "latest");
  // A newest file that is not a valid checkpoint is passed over; stale temporaries are ignored by
  // latest() and removed by the next save. The garbage file is not this run's (it has no run id),
  // so the next save leaves it alone and prunes only its own oldest file (30).
  if (world().rank() == 0) {
    std::ofstream(dir + "/run.0000000050.h5") << "garbage";
    std::ofstream(dir + "/.run.0000000060.h5.tmp-dead-beef") << "half a file";
  }
  world().barrier();
  EXPECT_EQ(*series.latest(), dir + "/run.0000000040.h5");
  auto a = filled<double, 2>(d, 70);
  series.save(70, {{"u", a}});
  EXPECT_EQ(series.steps(), (std::vector<std::int64_t>{40, 50, 70}));
  expect_all(!fs::exists(dir + "/.run.0000000060.h5.tmp-dead-beef"), "stale temporary removed");
}

namespace {
/// Rank 0 overwrites `n` bytes at `offset` of the data of dataset `name` (its checksum then
/// fails while the metadata stays valid), or cuts the file to `keep` bytes.
void corrupt_data(const std::string& path, const std::string& name) {
  if (world().rank() == 0) {
    haddr_t offset = HADDR_UNDEF;
    {
      const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      const hid_t dset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
      offset = H5Dget_offset(dset);
      H5Dclose(dset);
      H5Fclose(file);
    }
    ASSERT_NE(offset, HADDR_UNDEF);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset) + 8);
    f.write("\x7f\x7f\x7f\x7f", 4);
  }
  world().barrier();
}
}  // namespace

TEST(Io, SeriesOfOneRunNeverTouchesAnotherRunsFiles) {
  const std::string dir = test_dir("runs");
  Distribution<2> d(world(), {5, 4});
  const std::string prefix = dir + "/ck";
  // Run A: a new run claims the empty prefix, saves 1, 2, 3 and keeps its newest 2.
  io::CheckpointSeries a(world(), prefix, 2);
  a.claim(false);
  ASSERT_TRUE(spmd::io::impl::valid_run_id(a.run_id()));
  const auto h = static_cast<unsigned long long>(std::hash<std::string>{}(a.run_id()));
  EXPECT_EQ(world().allreduce(h, spmd::Op::min), world().allreduce(h, spmd::Op::max)) << "one run id on every rank";
  for (int step = 1; step <= 3; ++step) a.save(step, {{"u", filled<double, 2>(d, step)}});
  EXPECT_EQ(a.steps(), (std::vector<std::int64_t>{2, 3}));
  for (const auto& f : a.files()) {
    EXPECT_EQ(f.run_id, a.run_id()) << f.path;
    EXPECT_EQ(f.problem, "") << f.path;
  }
  EXPECT_EQ(io::inspect(a.path(3), world()).run_id, a.run_id());

  // Run B, new, pointed at the same prefix: refused on every rank, A's files untouched.
  const auto before = fs::last_write_time(a.path(3));
  io::CheckpointSeries b(world(), prefix, 1);
  SPMD_EXPECT_COLLECTIVE_ERROR(b.claim(false), "already holds 2 checkpoint file(s)");
  SPMD_EXPECT_COLLECTIVE_ERROR(b.claim(true), "of another run");
  // Even without claim(), B never replaces A's file of a step and never prunes A's files.
  SPMD_EXPECT_COLLECTIVE_ERROR(b.save(3, {{"u", filled<double, 2>(d, 9)}}), "not of this run");
  b.save(4, {{"u", filled<double, 2>(d, 4)}});
  b.save(5, {{"u", filled<double, 2>(d, 5)}});
  EXPECT_EQ(b.steps(), (std::vector<std::int64_t>{2, 3, 5}));  // B kept 1 of its own (4 went)
  expect_all(fs::last_write_time(a.path(3)) == before, "run A's newest file unchanged");
  expect_values(io::load<double>(a.path(3), "u", d), 3, "run A's file");

  // Run A continued (a restart takes A's run id): its claim accepts A's files and refuses B's.
  io::CheckpointSeries a2(world(), prefix, 2, a.run_id());
  SPMD_EXPECT_COLLECTIVE_ERROR(a2.claim(true), "run " + b.run_id());
  if (world().rank() == 0) fs::remove(b.path(5));
  world().barrier();
  EXPECT_NO_THROW(a2.claim(true));
  SPMD_EXPECT_COLLECTIVE_ERROR(a2.claim(false), "a new run never writes over them");
  // An unreadable file in the series is left alone by a continued run (and never pruned).
  if (world().rank() == 0) std::ofstream(a2.path(7)) << "not a checkpoint";
  world().barrier();
  EXPECT_NO_THROW(a2.claim(true));
  a2.save(4, {{"u", filled<double, 2>(d, 4)}});
  a2.save(6, {{"u", filled<double, 2>(d, 6)}});
  EXPECT_EQ(a2.steps(), (std::vector<std::int64_t>{4, 6, 7}));
  // ... except at a step this run saves: the unreadable file is replaced.
  a2.save(7, {{"u", filled<double, 2>(d, 7)}});
  expect_values(io::load<double>(a2.path(7), "u", d), 7, "replaced unreadable file");
  // Malformed run ids are refused.
  EXPECT_THROW(io::CheckpointSeries(world(), prefix, 2, "not-a-run-id"), spmd::Error);
}

TEST(Io, LatestSkipsEveryInvalidFileAndSaysWhy) {
  const std::string dir = test_dir("latest");
  Distribution<2> d(world(), {9, 7});
  io::CheckpointSeries series(world(), dir + "/ck", 5);
  for (int step = 1; step <= 5; ++step)
    series.save(step, {{"u", filled<double, 2>(d, step)}, {"w", filled<std::int32_t, 2>(d, step + 1)}});
  for (int step = 1; step <= 5; ++step) EXPECT_EQ(io::verify(series.path(step), world()), "") << step;
  // 5: the data of its second dataset no longer has its checksum (valid metadata);
  // 4: truncated; 3: not HDF5 at all. 2 is the newest valid one.
  corrupt_data(series.path(5), "w");
  if (world().rank() == 0) {
    fs::resize_file(series.path(4), fs::file_size(series.path(4)) / 2);
    std::ofstream(series.path(3), std::ios::trunc) << "garbage";
  }
  world().barrier();
  const auto latest = series.find_latest();
  ASSERT_TRUE(latest.path.has_value());
  EXPECT_EQ(*latest.path, series.path(2));
  ASSERT_EQ(latest.skipped.size(), 3u);
  EXPECT_EQ(latest.skipped[0].first, series.path(5));
  EXPECT_NE(latest.skipped[0].second.find("checksum mismatch in dataset 'w'"), std::string::npos)
      << latest.skipped[0].second;
  EXPECT_EQ(latest.skipped[1].first, series.path(4));
  EXPECT_NE(latest.skipped[1].second.find("truncated"), std::string::npos) << latest.skipped[1].second;
  EXPECT_EQ(latest.skipped[2].first, series.path(3));
  EXPECT_NE(latest.skipped[2].second.find("not an HDF5 file"), std::string::npos) << latest.skipped[2].second;
  EXPECT_EQ(series.latest(), series.path(2));
  // The same verdicts from verify() itself, on every rank alike.
  const std::string why = io::verify(series.path(5), world());
  EXPECT_EQ(world().bcast(static_cast<int>(why.size()), 0), static_cast<int>(why.size()));
  EXPECT_NE(why.find("stored crc32"), std::string::npos);
  expect_values(io::load<double>(*latest.path, "u", d), 2, "newest valid checkpoint");
}

// ---- damaged files: refused before HDF5 reads them (the integrity record) -------------------------------

namespace {
/// A hash of `text`, the same on every rank or the test fails. Collective.
void expect_same_everywhere(const std::string& text, const std::string& what) {
  const auto h = static_cast<std::int64_t>(std::hash<std::string>{}(text) >> 2);
  expect_all(world().allreduce(h, spmd::Op::min) == world().allreduce(h, spmd::Op::max), (what + ": " + text).c_str());
}
}  // namespace

TEST(Io, DamagedFilesAreRefusedBeforeHdf5ReadsThem) {
  const std::string dir = test_dir("damaged");
  Distribution<2> d(world(), {30, 21}, spmd::halo(1));
  auto a = filled<double, 2>(d, 8);
  auto b = filled<std::int32_t, 2>(d, 9);
  const std::string good = dir + "/good.h5", bad = dir + "/bad.h5";
  io::save(good, {{"a", a}, {"b", b}}, {{"tol", 1e-12}, {"name", std::string("cg")}, {"step", std::int64_t(7)}});
  EXPECT_EQ(io::verify(good, world()), "");
  const std::string bytes = world().rank() == 0 ? read_file(good) : std::string();
  const auto size = static_cast<std::size_t>(world().bcast(static_cast<std::int64_t>(bytes.size()), 0));
  // One bit flipped at offsets all over the file (the record, its zero tail, the HDF5 metadata
  // with the attributes, the data), and the 16 bytes near 1.2 KiB: every one refused.
  std::vector<std::size_t> offsets;
  // (Every fourth at 3 and 4 ranks, where collectives are slow on a 2-core machine: the verdicts
  // do not depend on the rank count, their agreement is what those runs add.)
  const std::size_t every = world().size() > 2 ? 4 : 1;
  for (std::size_t k = 0; k < 72; k += every) offsets.push_back(k);                          // the record
  for (std::size_t k = 0; k < 64; k += every) offsets.push_back(72 + k * (size - 73) / 63);  // everywhere
  io::IntegrityRecord record;
  std::size_t need = 0;
  if (world().rank() == 0) {
    EXPECT_EQ(io::decode_integrity_record(bytes, bytes.size(), record, need), "");
  }
  for (std::size_t off : offsets) {
    bool in_data = false;
    if (world().rank() == 0) {
      std::string copy = bytes;
      copy[off] ^= 0x10;
      write_file(bad, copy);
      for (const auto& r : record.ranges) in_data = in_data || (off >= r.offset && off < r.offset + r.length);
    }
    in_data = world().bcast(in_data ? 1 : 0, 0) == 1;
    const std::string why = io::verify(bad, world());
    EXPECT_NE(why, "") << "a flipped bit at byte " << off << " of " << size << " was not seen";
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    expect_same_everywhere(why, "verify's verdict");
    if (in_data) {  // the data: inspect reads no data; verify and load compare it with its checksum
      EXPECT_NE(why.find("checksum mismatch in dataset"), std::string::npos) << why;
    } else {  // anything else: refused before HDF5 opens the file
      SPMD_EXPECT_COLLECTIVE_ERROR(io::inspect(bad, world()), "spmd::io::inspect: ");
    }
  }
  if (world().rank() == 0) {
    std::string copy = bytes;
    for (std::size_t k = 1200; k < 1216; ++k) copy[k] = static_cast<char>(~copy[k]);
    write_file(bad, copy);
  }
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::inspect(bad, world()), "is damaged: its HDF5 metadata");
  // Cut short anywhere, bytes appended, emptied.
  for (std::size_t keep : {std::size_t(0), std::size_t(7), std::size_t(100), std::size_t(511), size / 2, size - 1}) {
    if (world().rank() == 0) write_file(bad, bytes.substr(0, keep));
    world().barrier();
    EXPECT_NE(io::verify(bad, world()), "") << "cut to " << keep << " bytes";
  }
  if (world().rank() == 0) write_file(bad, bytes + std::string(10, '\0'));
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::inspect(bad, world()), "is damaged: it has " + std::to_string(size + 10) + " bytes");
  // A failing HDF5 call is contained: the superblock's signature broken and the record written
  // again (as a tool that edits files on purpose would), so that the bytes reach HDF5, whose open
  // fails: one error in one line, the same on every rank, naming the call and the file.
  if (world().rank() == 0) {
    std::string copy = bytes;
    copy[record.block + 1] ^= 0x7f;  // the 'H' of "\x89HDF", just after the user block
    write_file(bad, io::reseal_integrity_record(copy));
  }
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::inspect(bad, world()), "spmd::io::inspect: H5Fopen failed for '" + bad + "'");
  {
    const std::string why = io::verify(bad, world());
    EXPECT_NE(why.find("H5Fopen failed for '" + bad + "'"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    expect_same_everywhere(why, "verify's verdict on a file HDF5 cannot open");
  }
  // A damaged file never becomes a loaded array; the good one loads.
  SPMD_EXPECT_COLLECTIVE_ERROR(io::load<double>(bad, "a", d), "spmd::io::load");
  expect_values(io::load<double>(good, "a", d), 8, "the undamaged file");
}

TEST(Io, OutputsReplaceOnlyRegularFiles) {
  const std::string dir = test_dir("outputs");
  Distribution<2> d(world(), {6, 5});
  auto a = filled<double, 2>(d, 3);
  if (world().rank() == 0) {
    ASSERT_EQ(::mkfifo((dir + "/fifo.h5").c_str(), 0644), 0);
    fs::create_directories(dir + "/dir.h5");
    fs::create_symlink(dir + "/target.h5", dir + "/link.h5");
    ASSERT_EQ(::mkfifo((dir + "/side.xmf").c_str(), 0644), 0);
  }
  world().barrier();
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/fifo.h5", {{"a", a}}),
                               "spmd::io::save: '" + dir + "/fifo.h5' is a FIFO, not a regular file");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/dir.h5", {{"a", a}}), "is a directory, not a regular file");
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/link.h5", {{"a", a}}), "is a symbolic link, not a regular file");
  // The sidecar's path counts too (for 2-D and 3-D datasets), unless no sidecar is written.
  SPMD_EXPECT_COLLECTIVE_ERROR(io::save(dir + "/side.h5", {{"a", a}}), "side.xmf' is a FIFO");
  io::SaveOptions no_xdmf;
  no_xdmf.xdmf = false;
  io::save(dir + "/side.h5", {{"a", a}}, {}, no_xdmf);
  expect_values(io::load<double>(dir + "/side.h5", "a", d), 3, "saved beside a FIFO sidecar path");
  // A missing directory: the user's path and what is wrong, in one line (no temporary, no HDF5).
  try {
    io::save(dir + "/no/such/x.h5", {{"a", a}});
    ADD_FAILURE() << "saved into a missing directory";
  } catch (const spmd::Error& e) {
    EXPECT_EQ(std::string(e.what()), "spmd::io::save: cannot write '" + dir + "/no/such/x.h5': its directory '" + dir +
                                         "/no/such' does not exist");
  }
  EXPECT_EQ(io::output_problem(dir + "/new.h5", world()), "");
  EXPECT_NE(io::output_problem(dir + "/fifo.h5", world()).find("is a FIFO"), std::string::npos);
  // Nothing replaced.
  if (world().rank() == 0) {
    EXPECT_TRUE(fs::is_fifo(dir + "/fifo.h5"));
    EXPECT_TRUE(fs::is_directory(dir + "/dir.h5"));
    EXPECT_TRUE(fs::is_symlink(dir + "/link.h5"));
    EXPECT_FALSE(fs::exists(dir + "/target.h5"));
  }
  // A series: a FIFO among its names stops claim() (before any step) and is skipped, never opened
  // for reading (no hang), by find_latest(); a prefix in a missing directory is refused by claim().
  io::CheckpointSeries series(world(), dir + "/ck", 5);
  series.save(1, {{"u", a}});
  if (world().rank() == 0) {
    ASSERT_EQ(::mkfifo(series.path(2).c_str(), 0644), 0);
  }
  world().barrier();
  const auto latest = series.find_latest();
  ASSERT_TRUE(latest.path.has_value());
  EXPECT_EQ(*latest.path, series.path(1));
  ASSERT_EQ(latest.skipped.size(), 1u);
  EXPECT_NE(latest.skipped[0].second.find("is a FIFO, not a regular file"), std::string::npos)
      << latest.skipped[0].second;
  SPMD_EXPECT_COLLECTIVE_ERROR(series.claim(true), "ck.0000000002.h5' (a name of the series '");
  io::CheckpointSeries nowhere(world(), dir + "/missing/ck", 2);
  SPMD_EXPECT_COLLECTIVE_ERROR(nowhere.claim(false),
                               "the checkpoint prefix '" + dir + "/missing/ck' cannot be written: its directory");
}

TEST(IoIntegrity, RecordEncodesDecodesAndNamesWhatIsWrong) {
  io::IntegrityRecord r;
  r.block = 512;
  r.file_size = 5000;
  r.file_crc = 0x12345678;
  r.metadata_crc = 0x9abcdef0;
  r.ranges = {{600, 800, 1}, {2048, 1000, 2}};
  const std::string block = io::encode_integrity_record(r);
  ASSERT_EQ(block.size(), 512u);
  EXPECT_EQ(block.substr(0, 8), std::string(io::integrity_magic(), 8));
  io::IntegrityRecord back;
  std::size_t need = 0;
  EXPECT_EQ(io::decode_integrity_record(block, 5000, back, need), "");
  EXPECT_EQ(back.file_crc, r.file_crc);
  EXPECT_EQ(back.metadata_crc, r.metadata_crc);
  ASSERT_EQ(back.ranges.size(), 2u);
  EXPECT_EQ(back.ranges[1].offset, 2048u);
  EXPECT_EQ(back.ranges[1].crc, 2u);
  const auto spans = io::metadata_spans(back);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0], (std::pair<std::uint64_t, std::uint64_t>{512, 88}));
  EXPECT_EQ(spans[1], (std::pair<std::uint64_t, std::uint64_t>{1400, 648}));
  EXPECT_EQ(spans[2], (std::pair<std::uint64_t, std::uint64_t>{3048, 1952}));
  const auto why = [&](const std::string& b, std::uint64_t size) {
    io::IntegrityRecord x;
    std::size_t n = 0;
    return io::decode_integrity_record(b, size, x, n);
  };
  const auto has = [](const std::string& msg, const std::string& needle) {
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  };
  has(why(block, 4000), "is truncated: it has 4000 bytes; its integrity record says 5000");
  has(why(block, 6000), "is damaged: it has 6000 bytes");
  std::string flipped = block;
  flipped[17] ^= 1;
  has(why(flipped, 5000), "is damaged: its integrity record has the checksum");
  flipped = block;
  flipped[300] = 1;
  has(why(flipped, 5000), "is not zero after the integrity record");
  io::IntegrityRecord overlap = r;
  overlap.ranges[1].offset = 1000;
  has(why(io::encode_integrity_record(overlap), 5000), "not in order inside the file");
  io::IntegrityRecord odd = r;
  odd.block = 768;
  has(why(io::encode_integrity_record(odd), 5000), "user block of 768 bytes");
  has(why("\x89HDF\r\n\x1a\n" + std::string(600, '\0'), 608), "is an HDF5 file without an integrity record");
  has(why("hello", 5), "is not an HDF5 file");
  has(why(block.substr(0, 30), 30), "is truncated: 30 bytes");
  // A record too large for the first 512 bytes asks for the whole user block.
  io::IntegrityRecord many = r;
  many.ranges.clear();
  for (std::uint64_t k = 0; k < 30; ++k) many.ranges.push_back({4096 + 100 * k, 50, 0});
  many.block = io::integrity_block_size(30);
  many.file_size = 8192;
  EXPECT_EQ(many.block, 1024u);
  const std::string big = io::encode_integrity_record(many);
  EXPECT_NE(io::decode_integrity_record(big.substr(0, 512), 8192, back, need), "");
  EXPECT_EQ(need, 1024u);
  EXPECT_EQ(io::decode_integrity_record(big, 8192, back, need), "");
  // A file changed on purpose and sealed again passes; a record that is not intact is not resealed.
  std::string file = block + std::string(5000 - 512, 'x');
  const std::string sealed = io::reseal_integrity_record(file);
  EXPECT_EQ(why(sealed.substr(0, 512), 5000), "");
  file[3] ^= 1;
  EXPECT_EQ(io::reseal_integrity_record(file), file);
}

// ---- the metadata validator (pure; fuzzed by tests/fuzz/checkpoint_metadata_fuzz.cpp) ---------------

namespace {
io::RawValue raw_int(std::vector<std::int64_t> v) {
  io::RawValue r;
  r.kind = io::RawValue::Kind::integer;
  r.points = v.size();
  r.ints = std::move(v);
  return r;
}
io::RawValue raw_str(std::string s) {
  io::RawValue r;
  r.kind = io::RawValue::Kind::string;
  r.points = 1;
  r.text = std::move(s);
  return r;
}
/// The metadata of a valid file with one 3 x 4 float64 dataset.
io::RawMetadata valid_raw() {
  io::RawMetadata m;
  m.path = "x.h5";
  m.attributes["spmd_format_version"] = raw_int({1});
  m.attributes["spmd_library_version"] = raw_str("0.1.0");
  m.attributes["spmd_run_id"] = raw_str("0123456789abcdef0123456789abcdef");
  m.attributes["step"] = raw_int({20});
  io::RawDataset d;
  d.name = "u";
  d.dims = {3, 4};
  d.type_class = io::RawDataset::Class::real;
  d.type_size = 8;
  d.attributes["spmd_element_type"] = raw_str("float64");
  d.attributes["spmd_shape"] = raw_int({3, 4});
  d.attributes["spmd_checksum_crc32"] = raw_int({4294967295});
  m.datasets.push_back(d);
  return m;
}
template <class F>
std::string refusal(F&& change) {
  io::RawMetadata m = valid_raw();
  change(m);
  try {
    io::validate_metadata(m, "test");
  } catch (const spmd::Error& e) {
    return e.what();
  }
  return "(accepted)";
}
}  // namespace

TEST(IoMetadata, ValidatorAcceptsWhatSaveWritesAndNamesWhatIsWrong) {
  const io::FileInfo info = io::validate_metadata(valid_raw(), "test");
  EXPECT_EQ(info.run_id, "0123456789abcdef0123456789abcdef");
  ASSERT_EQ(info.datasets.size(), 1u);
  EXPECT_EQ(info.datasets[0].shape, (std::vector<index_t>{3, 4}));
  EXPECT_EQ(info.datasets[0].checksum, 4294967295u);
  EXPECT_EQ(std::get<std::int64_t>(info.attributes.at("step")), 20);
  using M = io::RawMetadata;
  const auto has = [](const std::string& msg, const std::string& needle) {
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  };
  has(refusal([](M& m) { m.attributes.erase("spmd_format_version"); }), "no spmd_format_version");
  has(refusal([](M& m) { m.attributes["spmd_format_version"] = raw_int({0}); }), "valid versions start at 1");
  has(refusal([](M& m) { m.attributes["spmd_format_version"] = raw_str("1"); }), "not an integer");
  has(refusal([](M& m) { m.attributes["spmd_run_id"] = raw_str("xyz\x01"); }), "'xyz\\x01'");
  has(refusal([](M& m) { m.datasets[0].attributes["spmd_element_type"] = raw_str("complex"); }),
      "lacks a valid spmd_element_type");
  has(refusal([](M& m) { m.datasets[0].type_size = 4; }), "stored as 4-byte little-endian floating-point");
  has(refusal([](M& m) { m.datasets[0].little_endian = false; }), "big-endian");
  has(refusal([](M& m) {
        m.datasets[0].attributes["spmd_shape"] = raw_int({4, 3});
      }),
      "spmd_shape {4, 3} differs from the dataspace {3, 4}");
  has(refusal([](M& m) { m.datasets[0].dims = {}; }), "has 0 axes");
  has(refusal([](M& m) {
        m.datasets[0].dims = {std::uint64_t(1) << 62, 4};
        m.datasets[0].attributes["spmd_shape"] = raw_int({std::int64_t(1) << 62, 4});
      }),
      "more than 2^63 bytes");
  has(refusal([](M& m) { m.datasets[0].attributes["spmd_checksum_crc32"] = raw_int({-1}); }), "is not a CRC-32");
  has(refusal([](M& m) { m.datasets[0].attributes.erase("spmd_checksum_crc32"); }), "lacks its spmd_checksum_crc32");
  has(refusal([](M& m) { m.datasets.push_back(m.datasets[0]); }), "given twice");
  // A string from the file is quoted as a printable excerpt, however long and whatever its bytes.
  const std::string msg =
      refusal([](M& m) { m.datasets[0].attributes["spmd_element_type"] = raw_str(std::string(5000, '\n')); });
  EXPECT_LT(msg.size(), 600u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  // Attributes of other kinds or shapes are ignored, not fatal.
  io::RawMetadata m = valid_raw();
  m.attributes["vector"] = raw_int({1, 2, 3});
  EXPECT_EQ(io::validate_metadata(m, "test").attributes.count("vector"), 0u);
}

// ---- cross-rank-count restarts (a ctest fixture: write at 4 ranks, read at 1, 2, 3) ------------------

namespace {
std::string cross_dir() {
  const char* d = std::getenv("SPMD_IO_CROSS_DIR");
  return d ? d : "";
}
}  // namespace

TEST(CrossRank, Write) {
  if (cross_dir().empty()) GTEST_SKIP() << "SPMD_IO_CROSS_DIR not set";
  if (world().rank() == 0) fs::create_directories(cross_dir());
  world().barrier();
  // Written on a 4 x 1 (2-D) and 1 x 2 x 2 (3-D) grid with halos.
  Distribution<2> d2(world(), {23, 17}, spmd::halo(1), spmd::grid({world().size(), 1}));
  Distribution<3> d3(world(), {5, 9, 7}, spmd::halo(1), spmd::grid({1, 0, 0}));
  auto u = filled<double, 2>(d2, 5);
  auto w = filled<std::int32_t, 3>(d3, 6);
  io::save(cross_dir() + "/cross.h5", {{"u", u}, {"w", w}}, {{"ranks", std::int64_t(world().size())}});
}

TEST(CrossRank, Read) {
  if (cross_dir().empty()) GTEST_SKIP() << "SPMD_IO_CROSS_DIR not set";
  const std::string path = cross_dir() + "/cross.h5";
  EXPECT_EQ(std::get<std::int64_t>(io::read_attributes(path, world()).at("ranks")), 4);
  const int p = world().size();
  for (const auto& g : {std::vector<int>{1, p}, std::vector<int>{p, 1}}) {
    spmd::DistributionOptions o;
    o.dims = g;
    o.halo = {2};
    expect_values(io::load<double>(path, "u", Distribution<2>(world(), {23, 17}, o)), 5, "u at another rank count");
  }
  expect_values(io::load<std::int32_t>(path, "w", Distribution<3>(world(), {5, 9, 7}, spmd::grid({0, 0, 1}))), 6,
                "w at another rank count");
}

// The fuzzer's seed corpus and every crashing input it ever found (tests/fuzz/), through the same
// decoding and checks as the harness: valid-* seeds are accepted, bad-* seeds refused with a
// printable message, regressions never crash.
TEST(IoMetadata, FuzzCorpusAndRegressions) {
  int files = 0;
  for (const char* sub : {"checkpoint_metadata_corpus", "checkpoint_metadata_regressions"}) {
    const fs::path dir = fs::path(SPMD_FUZZ_DIR) / sub;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const std::string name = entry.path().filename().string();
      bool accepted = false;
      const std::string bytes = text.str();
      EXPECT_NO_THROW(accepted = spmd_fuzz::check_validation(
                          spmd_fuzz::decode(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())))
          << name;
      if (name.rfind("valid-", 0) == 0) {
        EXPECT_TRUE(accepted) << name;
      } else if (name.rfind("bad-", 0) == 0) {
        EXPECT_FALSE(accepted) << name;
      }
      ++files;
    }
  }
  EXPECT_GE(files, 10) << "the seed corpus is in " << SPMD_FUZZ_DIR;
}
