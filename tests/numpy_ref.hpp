#pragma once
// A serial reference of NumPy's slicing semantics for the slice and expression tests, written
// independently of the library: a slice becomes the explicit list of indices Python's
// range(*slice(start, stop, step).indices(n)) enumerates (CPython's PySlice_AdjustIndices rules),
// a view is one index list per kept axis (or a fixed index per dropped axis) of a row-major host
// array, and a view of a view looks its indices up in the outer lists.
#include <spmd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

namespace ref {

using idx = std::int64_t;

/// Python's slice: None is std::nullopt.
struct Sl {
  std::optional<idx> start, stop;
  idx step = 1;
};

/// The indices range(*Sl.indices(n)) visits, following CPython's PySlice_Unpack /
/// PySlice_AdjustIndices.
inline std::vector<idx> indices(const Sl& s, idx n) {
  if (s.step == 0) throw std::invalid_argument("slice step cannot be zero");
  // PySlice_AdjustIndices for one end; None is the far end in the step's direction
  auto adjust = [&](const std::optional<idx>& v, idx none_value) {
    if (!v) return none_value;
    idx x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = s.step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = s.step < 0 ? n - 1 : n;
    }
    return x;
  };
  const idx start = adjust(s.start, s.step < 0 ? n - 1 : 0);
  const idx stop = adjust(s.stop, s.step < 0 ? -1 : n);
  std::vector<idx> out;
  if (s.step > 0)
    for (idx i = start; i < stop; i += s.step) out.push_back(i);
  else
    for (idx i = start; i > stop; i += s.step) out.push_back(i);
  return out;
}

/// One argument of a subscript: an integer, a slice, or ':' (a full slice).
struct Arg {
  enum Kind { integer, slice } kind;
  idx i = 0;
  Sl s{};
  static Arg at(idx i) { return Arg{integer, i, {}}; }
  static Arg sl(std::optional<idx> a, std::optional<idx> b, idx step = 1) { return Arg{slice, 0, Sl{a, b, step}}; }
  static Arg all() { return Arg{slice, 0, Sl{}}; }
};

/// A row-major host array and views of it (index lists per parent axis).
struct Array {
  std::vector<idx> shape;
  std::vector<double> v;
  explicit Array(std::vector<idx> s) : shape(std::move(s)), v(static_cast<std::size_t>(count()), 0.0) {}
  idx count() const {
    idx c = 1;
    for (idx e : shape) c *= e;
    return c;
  }
  double& at(const std::vector<idx>& i) {
    idx off = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (i[d] < 0 || i[d] >= shape[d]) throw std::out_of_range("ref::Array::at");
      off = off * shape[d] + i[d];
    }
    return v[static_cast<std::size_t>(off)];
  }
};

struct View {
  Array* parent;
  // per parent axis: the parent indices along it; `kept` tells whether it is a view axis
  std::vector<std::vector<idx>> lists;
  std::vector<bool> kept;

  static View whole(Array& a) {
    View w{&a, {}, {}};
    for (idx e : a.shape) {
      std::vector<idx> l;
      for (idx i = 0; i < e; ++i) l.push_back(i);
      w.lists.push_back(l);
      w.kept.push_back(true);
    }
    return w;
  }
  std::vector<idx> shape() const {
    std::vector<idx> s;
    for (std::size_t a = 0; a < lists.size(); ++a)
      if (kept[a]) s.push_back(static_cast<idx>(lists[a].size()));
    return s;
  }
  idx count() const {
    idx c = 1;
    for (idx e : shape()) c *= e;
    return c;
  }
  /// NumPy's view[args...]: throws std::out_of_range for a bad integer index.
  View operator()(const std::vector<Arg>& args) const {
    View out{parent, lists, kept};
    std::size_t k = 0;  // argument for the next kept axis
    for (std::size_t a = 0; a < lists.size(); ++a) {
      if (!kept[a]) continue;
      const Arg arg = k < args.size() ? args[k] : Arg::all();
      ++k;
      const idx n = static_cast<idx>(lists[a].size());
      if (arg.kind == Arg::integer) {
        const idx i = arg.i < 0 ? arg.i + n : arg.i;
        if (i < 0 || i >= n) throw std::out_of_range("index out of range");
        out.lists[a] = {lists[a][static_cast<std::size_t>(i)]};
        out.kept[a] = false;
      } else {
        std::vector<idx> l;
        for (idx i : indices(arg.s, n)) l.push_back(lists[a][static_cast<std::size_t>(i)]);
        out.lists[a] = l;
      }
    }
    return out;
  }
  /// Calls f(parent index, view position) for every element in row-major view order.
  void for_each(const std::function<void(const std::vector<idx>&, idx)>& f) const {
    const std::size_t n = lists.size();
    for (const auto& l : lists)
      if (l.empty()) return;
    std::vector<std::size_t> pos(n, 0);
    idx p = 0;
    while (true) {
      std::vector<idx> i(n);
      for (std::size_t a = 0; a < n; ++a) i[a] = lists[a][pos[a]];
      f(i, p++);
      int a = static_cast<int>(n) - 1;
      for (; a >= 0; --a) {
        if (++pos[static_cast<std::size_t>(a)] < lists[static_cast<std::size_t>(a)].size()) break;
        pos[static_cast<std::size_t>(a)] = 0;
      }
      if (a < 0) return;
    }
  }
  std::vector<double> get() const {
    std::vector<double> out;
    for_each([&](const std::vector<idx>& i, idx) { out.push_back(parent->at(i)); });
    return out;
  }
  /// view[...] = values (as if through a temporary: values are read first).
  void set(const std::vector<double>& values) const {
    for_each([&](const std::vector<idx>& i, idx p) { parent->at(i) = values[static_cast<std::size_t>(p)]; });
  }
};

/// Element-wise f over equal-length vectors.
inline std::vector<double> map(const std::vector<double>& a, const std::function<double(double)>& f) {
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f(a[i]);
  return out;
}
inline std::vector<double> zip(const std::vector<double>& a, const std::vector<double>& b,
                               const std::function<double(double, double)>& f) {
  if (a.size() != b.size()) throw std::invalid_argument("ref::zip: lengths differ");
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f(a[i], b[i]);
  return out;
}

}  // namespace ref
