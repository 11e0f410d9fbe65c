// A fuzzer of whole checkpoint files (issue 25; docs/reliability.md#damaged-checkpoint-files): the
// library's own read paths -- io::inspect, io::verify, io::load_into and CheckpointSeries::
// find_latest / claim -- on every rank of the job, on files written by io::save and then damaged.
//
// Each iteration rank 0 takes a seed file (written here at start-up: several element types and
// ranks, attributes, an empty dataset, many datasets, one dataset of more than 1 MiB, a series of
// an app-like record) and damages a copy: random bit flips, a run of bytes set or flipped (among
// them the 16 bytes near 1.2 KiB), a truncation, bytes appended, a block copied from
// elsewhere in the file or from another seed. Every rank then calls the read functions on it.
// The properties:
//   - each call returns, or throws an spmd::Error marked collective with the same message on every
//     rank (compared by hash): never a signal, never a hang (a watchdog alarm per iteration);
//   - a file that differs from its seed is never accepted: verify() names what is wrong,
//     inspect()/load_into() throw, find_latest() skips it for the older valid file of its series,
//     and a new series' claim() refuses the prefix;
//   - an undamaged file is accepted and loads its seed's values.
// Before the read functions run, rank 0 writes the damaged file to ARTIFACTS/current-input.h5, so
// that a crash or a hang leaves it there (scripts/fuzz_mpi.sh files copies it into
// tests/fuzz/checkpoint_file_regressions/, which --replay runs in ctest).
//
//   mpiexec -n P checkpoint_file_fuzz [--seconds S] [--seed N] [--work DIR] [--artifacts DIR]
//                                     [--resign] [--replay FILE|DIR ...]
//
// --resign writes a new integrity record after the damage (as someone who edits files on purpose
// would): then HDF5 itself parses damaged metadata, which the record is there to prevent. It is an
// experiment, not a property of the library (docs/reliability.md says what it found).
#include <spmd.hpp>
#include <spmd/io/integrity.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace io = spmd::io;
using spmd::index_t;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) {
    std::fprintf(stderr, "checkpoint_file_fuzz: cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

// ---- the watchdog: an iteration that takes longer than this is a hang ----------------------------------
const char* g_hang_note = "checkpoint_file_fuzz: HANG: an iteration took more than its time limit\n";
void on_alarm(int) {
  const ssize_t r = ::write(2, g_hang_note, std::strlen(g_hang_note));
  (void)r;
  std::_Exit(3);
}

// ---- seeds ---------------------------------------------------------------------------------------------
struct Seed {
  std::string path, bytes;
  std::vector<std::string> names;  // datasets to load
};

/// An array of `shape` whose element k (row-major) is a value of k and `salt`. Collective.
template <class T, int N>
spmd::Array<T, N> pattern(const spmd::Comm& comm, const spmd::Index<N>& shape, int salt) {
  spmd::Array<T, N> a(spmd::Distribution<N>(comm, shape, spmd::halo(1)), spmd::label("fuzz::pattern"));
  std::vector<T> host;
  if (comm.rank() == 0) {
    index_t n = 1;
    for (int d = 0; d < N; ++d) n *= shape[d];
    for (index_t k = 0; k < n; ++k) host.push_back(static_cast<T>((k * 31 + salt) % 1000) / static_cast<T>(4));
  }
  spmd::scatter(a, host);
  return a;
}

/// The seed files, written collectively into `dir`. Collective.
std::vector<Seed> make_seeds(const spmd::Comm& comm, const std::string& dir) {
  std::vector<Seed> seeds;
  const auto add = [&](const std::string& name, std::vector<std::string> names) {
    seeds.push_back(Seed{dir + "/" + name, {}, std::move(names)});
  };
  {
    auto u = pattern<double, 2>(comm, {27, 27}, 1);
    io::save(dir + "/stencil-like.h5", {{"grid", u}},
             {{"app", std::string("stencil")},
              {"problem.n", std::int64_t(25)},
              {"run.steps", std::int64_t(40)},
              {"step", std::int64_t(40)}});
    add("stencil-like.h5", {"grid"});
  }
  {
    auto a = pattern<std::int32_t, 1>(comm, {17}, 2);
    auto b = pattern<float, 3>(comm, {3, 4, 5}, 3);
    auto c = pattern<std::uint64_t, 2>(comm, {0, 4}, 4);  // empty: no storage
    io::save(dir + "/mixed.h5", {{"a", a}, {"b", b}, {"c", c}},
             {{"time", 0.125}, {"text", std::string(300, 'x')}, {"problem.tol", 1e-12}});
    add("mixed.h5", {"a", "b"});
  }
  {
    std::vector<spmd::Array<double, 1>> arrays;
    std::vector<io::Dataset> many;
    for (int k = 0; k < 24; ++k) arrays.push_back(pattern<double, 1>(comm, {5 + k}, k));
    for (int k = 0; k < 24; ++k) many.emplace_back("v" + std::to_string(k), arrays[k]);
    io::save(dir + "/many.h5", many, {{"solver", std::string("pipelined_cg")}});  // a 1 KiB user block
    add("many.h5", {"v0", "v23"});
  }
  {
    auto big = pattern<double, 2>(comm, {400, 400}, 5);  // 1.2 MiB: aligned, a 1 MiB user block
    io::save(dir + "/large.h5", {{"u", big}}, {{"step", std::int64_t(3)}});
    add("large.h5", {"u"});
  }
  for (auto& s : seeds) s.bytes = comm.rank() == 0 ? read_bytes(s.path) : std::string();
  return seeds;
}

// ---- damage ----------------------------------------------------------------------------------------------
std::string damage(std::mt19937_64& rng, const std::string& seed, const std::vector<Seed>& seeds, std::string& how) {
  std::string b = seed;
  const auto pick = [&](std::size_t n) { return n == 0 ? std::size_t(0) : static_cast<std::size_t>(rng() % n); };
  const std::size_t n = b.size();
  switch (rng() % 9) {
    case 0: {  // a few random bit flips
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) b[pick(n)] ^= static_cast<char>(1u << (rng() % 8));
      how = "bit flips";
      break;
    }
    case 1: {  // the example: 16 bytes flipped near 1.2 KiB (its offset jittered)
      const std::size_t at = std::min(n - 16, std::size_t(1100 + pick(300)));
      for (std::size_t k = at; k < at + 16; ++k) b[k] = static_cast<char>(~b[k]);
      how = "16 bytes flipped near 1.2 KiB";
      break;
    }
    case 2: {  // a run of bytes set to one value
      const std::size_t at = pick(n), len = std::min(n - at, std::size_t(1 + pick(64)));
      const char v = static_cast<char>(rng() % 3 == 0 ? 0 : rng() % 3 == 1 ? 0xff : rng());
      for (std::size_t k = at; k < at + len; ++k) b[k] = v;
      how = "a run of bytes set";
      break;
    }
    case 3: {  // random bytes in the first 4 KiB (the record, the superblock, the root group)
      const std::size_t at = pick(std::min<std::size_t>(n, 4096)), len = std::min(n - at, std::size_t(1 + pick(32)));
      for (std::size_t k = at; k < at + len; ++k) b[k] = static_cast<char>(rng());
      how = "random bytes near the start";
      break;
    }
    case 4:  // cut short
      b.resize(pick(n));
      how = "truncated";
      break;
    case 5:  // bytes appended
      b += std::string(1 + pick(4096), static_cast<char>(rng() % 2 ? 0 : rng()));
      how = "bytes appended";
      break;
    case 6: {  // a block copied from elsewhere in the file
      const std::size_t from = pick(n), to = pick(n);
      const std::size_t len = std::min({n - from, n - to, std::size_t(1 + pick(512))});
      b.replace(to, len, seed.substr(from, len));
      how = "a block copied within the file";
      break;
    }
    case 7: {  // a block of another seed
      const std::string& other = seeds[pick(seeds.size())].bytes;
      const std::size_t from = pick(other.size()), to = pick(n);
      const std::size_t len = std::min({other.size() - from, n - to, std::size_t(1 + pick(1024))});
      b.replace(to, len, other.substr(from, len));
      how = "a block of another seed";
      break;
    }
    default: {  // one bit anywhere
      b[pick(n)] ^= static_cast<char>(1u << (rng() % 8));
      how = "one bit flipped";
      break;
    }
  }
  return b;
}

// ---- one file through every read path -----------------------------------------------------------------
struct Outcome {
  bool accepted = false;  // inspect and verify accepted it
  std::string verdict;    // the first refusal, or "accepted"
};

std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// Every rank got the same `text`: else the property fails (exit 4). Collective.
void expect_same(const spmd::Comm& comm, const std::string& what, const std::string& text) {
  const auto h = static_cast<std::int64_t>(fnv(text) >> 2);
  if (comm.allreduce(h, spmd::Op::min) != comm.allreduce(h, spmd::Op::max)) {
    std::fprintf(stderr, "checkpoint_file_fuzz: PROPERTY: %s differs between ranks; rank %d: %s\n", what.c_str(),
                 comm.rank(), text.c_str());
    std::_Exit(4);
  }
}

[[noreturn]] void property(const std::string& what) {
  std::fprintf(stderr, "checkpoint_file_fuzz: PROPERTY: %s\n", what.c_str());
  std::_Exit(4);
}

/// A call that must return or throw a collective spmd::Error: its message ("" when it returned).
std::string call(const spmd::Comm& comm, const std::string& what, const std::function<void()>& f) {
  std::string msg;
  try {
    f();
  } catch (const spmd::Error& e) {
    if (!e.collective()) property(what + " threw an error on some ranks only: " + e.what());
    msg = e.what();
    if (msg.empty()) msg = "(empty message)";
  } catch (const std::exception& e) {
    property(what + " threw something else than spmd::Error: " + e.what());
  }
  if (msg.find('\n') != std::string::npos) property(what + ": a message of several lines: " + msg);
  expect_same(comm, what, msg);
  return msg;
}

Outcome read_everything(const spmd::Comm& comm, const std::string& path, const std::vector<std::string>& names) {
  Outcome o;
  io::FileInfo info;
  const std::string inspected = call(comm, "inspect", [&] { info = io::inspect(path, comm); });
  std::string verified;
  call(comm, "verify", [&] { verified = io::verify(path, comm); });
  expect_same(comm, "verify's verdict", verified);
  if (!inspected.empty() && verified.empty()) property("verify accepted a file inspect refused: " + inspected);
  o.accepted = inspected.empty() && verified.empty();
  o.verdict = !inspected.empty() ? inspected : !verified.empty() ? verified : "accepted";
  for (const std::string& name : names) {  // load what the seed holds, on a grid of this job
    const io::DatasetInfo* d = o.accepted ? info.find(name) : nullptr;
    std::string loaded;
    if (d && d->type == io::ElementType::float64 && d->shape.size() == 2 && d->shape[0] * d->shape[1] <= (1 << 20)) {
      spmd::Array<double, 2> a(spmd::Distribution<2>(comm, {d->shape[0], d->shape[1]}));
      loaded = call(comm, "load_into", [&] { io::load_into(path, name, a); });
    } else if (d && d->type == io::ElementType::float64 && d->shape.size() == 1 && d->shape[0] <= (1 << 20)) {
      spmd::Array<double, 1> a(spmd::Distribution<1>(comm, {d->shape[0]}));
      loaded = call(comm, "load_into", [&] { io::load_into(path, name, a); });
    } else if (!o.accepted) {  // a refused file must not load either
      spmd::Array<double, 1> a(spmd::Distribution<1>(comm, {17}));
      loaded = call(comm, "load_into", [&] { io::load_into(path, name, a); });
      if (loaded.empty()) property("load_into read dataset '" + name + "' of a refused file (" + o.verdict + ")");
    }
    if (o.accepted && !loaded.empty()) property("an accepted file did not load: " + loaded);
  }
  return o;
}

struct Stats {
  long runs = 0, accepted = 0;
  std::map<std::string, long> by_reason;
};

std::string reason_class(const std::string& v) {
  for (const char* k : {"its HDF5 metadata", "is truncated", "is damaged: it has", "is damaged: its integrity record",
                        "not an HDF5 file", "HDF5 file without an integrity record", "checksum mismatch", "failed for"})
    if (v.find(k) != std::string::npos) return k;
  // Another message: what follows the file's quoted path (the path is the same in every message).
  const std::size_t open = v.find('\''), close = open == std::string::npos ? open : v.find("' ", open + 1);
  return v.substr(close == std::string::npos ? 0 : close + 2, 60);
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  const spmd::Comm comm = rt.world();
  double seconds = 30;
  std::uint64_t seed = 0;
  std::string work = "checkpoint-file-fuzz", artifacts;
  bool resign_mode = false;
  std::vector<std::string> replay;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "checkpoint_file_fuzz: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (a == "--seconds")
      seconds = std::atof(value().c_str());
    else if (a == "--seed")
      seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--work")
      work = value();
    else if (a == "--artifacts")
      artifacts = value();
    else if (a == "--resign")
      resign_mode = true;
    else if (a == "--replay") {
      for (++i; i < argc; ++i) replay.push_back(argv[i]);
    } else {
      std::fprintf(stderr, "checkpoint_file_fuzz: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (artifacts.empty()) artifacts = work + "/artifacts";
  if (comm.rank() == 0) {
    fs::remove_all(work + "/seeds");
    fs::remove_all(work + "/series");
    fs::create_directories(work + "/seeds");
    fs::create_directories(work + "/series");
    fs::create_directories(artifacts);
  }
  comm.barrier();
  std::signal(SIGALRM, on_alarm);
  const std::string target = work + "/damaged.h5";
  const std::string current = artifacts + "/current-input.h5";

  // ---- replay: every file given (or every file of a folder given) must be refused or accepted cleanly
  if (!replay.empty()) {
    std::vector<std::string> files;
    for (const auto& r : replay) {
      if (fs::is_directory(r)) {
        for (const auto& e : fs::directory_iterator(r))
          if (e.is_regular_file()) files.push_back(e.path().string());
      } else {
        files.push_back(r);
      }
    }
    std::sort(files.begin(), files.end());
    int refused = 0;
    for (const auto& f : files) {
      if (comm.rank() == 0) fs::copy_file(f, target, fs::copy_options::overwrite_existing);
      comm.barrier();
      alarm(60);
      const Outcome o = read_everything(comm, target, {"grid", "u", "a"});
      alarm(0);
      refused += o.accepted ? 0 : 1;
      if (comm.rank() == 0) std::printf("replay: %s: %s\n", f.c_str(), o.verdict.c_str());
    }
    if (comm.rank() == 0) std::printf("replay: %zu files, %d refused, no crash, no hang\n", files.size(), refused);
    return 0;
  }

  alarm(300);  // writing the seeds
  const std::vector<Seed> seeds = make_seeds(comm, work + "/seeds");
  alarm(0);
  // Each seed as it is: accepted, and its datasets load.
  for (const auto& s : seeds) {
    const Outcome o = read_everything(comm, s.path, s.names);
    if (!o.accepted) property("the undamaged seed " + s.path + " was refused: " + o.verdict);
  }
  // A series whose older file is valid: find_latest must skip every damaged newest file for it.
  const std::string series_prefix = work + "/series/ck";
  io::CheckpointSeries series(comm, series_prefix, 10);
  {
    spmd::Array<double, 1> v = pattern<double, 1>(comm, {9}, 7);
    series.save(1, {{"v", v}});
  }

  if (seed == 0) seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  seed = comm.bcast(seed, 0);
  std::mt19937_64 rng(seed);
  if (comm.rank() == 0)
    std::printf("checkpoint_file_fuzz: %d ranks, %zu seeds, seed %llu, %.0f s%s\n", comm.size(), seeds.size(),
                static_cast<unsigned long long>(seed), seconds, resign_mode ? ", --resign" : "");
  Stats stats;
  const auto start = std::chrono::steady_clock::now();
  const double per_iteration_limit = 60;
  for (;;) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    elapsed = comm.bcast(elapsed, 0);
    if (elapsed >= seconds) break;
    const Seed& s = seeds[rng() % seeds.size()];  // the same draw on every rank (one seed)
    std::string how, bytes;
    bool changed = true;
    if (comm.rank() == 0) {
      bytes = damage(rng, s.bytes, seeds, how);
      if (resign_mode) bytes = io::reseal_integrity_record(bytes);
      changed = bytes != s.bytes;
      write_bytes(current, bytes);  // left behind if this iteration crashes or hangs
      write_bytes(target, bytes);
      write_bytes(series.path(2), bytes);
    }
    // Rank 0 alone drew from rng in damage(): every rank continues from rank 0's next number.
    const std::uint64_t next = comm.bcast(static_cast<std::uint64_t>(rng()), 0);
    rng.seed(next);
    changed = comm.bcast(changed ? 1 : 0, 0) != 0;
    alarm(static_cast<unsigned>(per_iteration_limit));
    const Outcome o = read_everything(comm, target, s.names);
    if (!resign_mode && changed && o.accepted) property("a damaged file (" + how + ") was accepted");
    if (!changed && !o.accepted) property("an undamaged file was refused: " + o.verdict);
    // The series: the damaged newest file is skipped for the valid older one, and a new run
    // refuses the prefix.
    io::CheckpointSeries::Latest latest;
    call(comm, "find_latest", [&] { latest = series.find_latest(); });
    const std::string want = o.accepted ? series.path(2) : series.path(1);
    if (!latest.path || *latest.path != want)
      property("find_latest returned " + (latest.path ? *latest.path : std::string("nothing")) + ", not " + want);
    io::CheckpointSeries fresh(comm, series_prefix, 10);
    if (call(comm, "claim", [&] { fresh.claim(false); }).empty())
      property("a new series claimed a prefix that holds files");
    alarm(0);
    ++stats.runs;
    stats.accepted += o.accepted ? 1 : 0;
    ++stats.by_reason[o.accepted ? std::string("accepted") : reason_class(o.verdict)];
    if (comm.rank() == 0) fs::remove(current);
  }
  if (comm.rank() == 0) {
    std::printf(
        "checkpoint_file_fuzz: %ld damaged files in %.0f s at %d ranks, %ld accepted (undamaged), no crash, "
        "no hang, every refusal the same on every rank\n",
        stats.runs, seconds, comm.size(), stats.accepted);
    for (const auto& [k, v] : stats.by_reason) std::printf("  %6ld  %s\n", v, k.c_str());
  }
  return 0;
}
