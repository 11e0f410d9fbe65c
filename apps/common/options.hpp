#pragma once
/// \file apps/common/options.hpp
/// The apps' validators: one per kind of option value (docs/apps.md#option-values), shared by
/// every app, by the checkpoint record (a value read from a checkpoint passes the same check as
/// the command line: checkpoint_options.hpp) and by options added later.
///
///   kind        validator                     refuses
///   count       in_range(lo, hi) (integers)   non-numbers, NaN, inf, 1e400, out of range
///   real        finite(), at_least(lo),       non-numbers, NaN, inf, 1e400, out of range
///               positive(), in_range(lo, hi)
///   tolerance   fraction()                    as real, and values outside [0, 1)
///   name        one_of({...})                 any other string (the names are listed)
///   text        non_empty()                   the empty string
///   list        add_list(...)                 another number of values than the option takes,
///                                             a bad value (each is a count)
///
/// Every number must be finite: `inf`, `-inf` and values beyond a double (`1e400`, which
/// strtod turns into infinity) are refused wherever NaN is. Messages print numbers readably
/// (%.6g, or as integers), never DBL_MAX's 309 digits.
///
/// Also here: screen_kokkos_arguments(), which checks the values of the options Kokkos parses
/// (--kokkos-num-threads=N, ...) before Kokkos sees them: Kokkos 3.4 answers a malformed one
/// with an uncaught std::invalid_argument ("stoi") and Kokkos 4.6 with abort().
#include <CLI/CLI.hpp>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace spmd::apps {

/// A number for a message: %.6g ("1.79769e+308", never 309 digits). Local.
inline std::string readable(double v) {
  char buf[32];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);  // integers as such: 2147483647
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// `s` quoted for a message: at most 64 characters, control and non-ASCII bytes as \xNN. Local.
inline std::string quote_value(const std::string& s) {
  std::string out = "'";
  std::size_t k = 0;
  for (; k < s.size() && k < 64; ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (k < s.size()) out += "...";
  return out + "'";
}

/// Parse `s` as a finite number (the whole string, as strtod reads it). Returns "" and sets `v`,
/// else why not ("'inf' is not a finite number"). Local.
inline std::string parse_finite(const std::string& s, double& v) {
  if (s.empty()) return "the value is empty, not a number";
  const char* p = s.c_str();
  char* end = nullptr;
  errno = 0;
  v = std::strtod(p, &end);
  if (end == p || *end != '\0' || std::isspace(static_cast<unsigned char>(s[0])))
    return quote_value(s) + " is not a number";
  if (std::isnan(v)) return quote_value(s) + " is not a number (NaN)";
  if (std::isinf(v)) return quote_value(s) + " is not a finite number";
  return {};
}

/// A CLI11 validator from `check(value) -> "" or why not`, shown in --help as `desc`. Local.
template <class F>
CLI::Validator validator(F check, std::string desc, std::string name) {
  return CLI::Validator([check](std::string& s) -> std::string { return check(s); }, std::move(desc), std::move(name));
}

/// A finite number in [lo, hi]: counts (ints) and bounded reals. Local.
inline CLI::Validator in_range(double lo, double hi) {
  return validator(
      [lo, hi](const std::string& s) -> std::string {
        double v = 0;
        if (std::string why = parse_finite(s, v); !why.empty()) return why;
        if (v < lo || v > hi) return "value " + s + " is outside [" + readable(lo) + ", " + readable(hi) + "]";
        return {};
      },
      "in [" + readable(lo) + ", " + readable(hi) + "]", "RANGE");
}
/// A finite number >= lo. Local.
inline CLI::Validator at_least(double lo) {
  return validator(
      [lo](const std::string& s) -> std::string {
        double v = 0;
        if (std::string why = parse_finite(s, v); !why.empty()) return why;
        if (v < lo) return "value " + s + " is below " + readable(lo);
        return {};
      },
      ">= " + readable(lo), "AT_LEAST");
}
/// A finite number > 0. Local.
inline CLI::Validator positive() {
  return validator(
      [](const std::string& s) -> std::string {
        double v = 0;
        if (std::string why = parse_finite(s, v); !why.empty()) return why;
        if (!(v > 0)) return "value " + s + " is not positive";
        return {};
      },
      "> 0", "POSITIVE");
}
/// Any finite number (negative ones included). Local.
inline CLI::Validator finite() {
  return validator(
      [](const std::string& s) -> std::string {
        double v = 0;
        return parse_finite(s, v);
      },
      "finite", "FINITE");
}
/// A relative tolerance: a finite number in [0, 1) (a tolerance of 1 or more is met by x = 0,
/// so a solver would report convergence without solving anything). Local.
inline CLI::Validator fraction() {
  return validator(
      [](const std::string& s) -> std::string {
        double v = 0;
        if (std::string why = parse_finite(s, v); !why.empty()) return why;
        if (!(v >= 0 && v < 1))
          return "value " + s + " is outside [0, 1) (a relative tolerance of 1 or more is met by x = 0)";
        return {};
      },
      "in [0, 1)", "FRACTION");
}
/// One of `names` (the message lists them). Local.
inline CLI::Validator one_of(std::vector<std::string> names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return validator(
      [names, list](const std::string& s) -> std::string {
        for (const auto& n : names)
          if (s == n) return {};
        return quote_value(s) + " is not one of " + list;
      },
      "one of " + list, "ONE_OF");
}
/// A non-empty string (a path, a prefix). Local.
inline CLI::Validator non_empty() {
  return validator([](const std::string& s) -> std::string { return s.empty() ? "the value is empty" : ""; },
                   "not empty", "NON_EMPTY");
}

/// An option taking exactly `names.size()` comma-separated whole numbers, each checked by
/// `each` (e.g. --grid PY,PX): "1,1,7" and "4" are refused naming the option and the count.
/// `out` is set after parsing (left as it is when the option is not given). Local.
inline CLI::Option* add_list(CLI::App& cli, const std::string& flag, std::vector<int>& out,
                             const std::vector<std::string>& names, const std::string& help, CLI::Validator each) {
  std::string form;
  for (const auto& n : names) form += (form.empty() ? "" : ",") + n;
  const std::size_t count = names.size();
  const auto split = [](const std::string& s) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    for (;;) {
      const std::size_t comma = s.find(',', at);
      parts.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) return parts;
      at = comma + 1;
    }
  };
  CLI::Option* o = cli.add_option_function<std::string>(
      flag,
      [&out, split](const std::string& s) {
        out.clear();
        for (const auto& p : split(s)) out.push_back(static_cast<int>(std::strtol(p.c_str(), nullptr, 10)));
      },
      help + " (" + form + ")");
  o->check(validator(
      [count, form, split, each](const std::string& s) -> std::string {
        const std::vector<std::string> parts = split(s);
        if (parts.size() != count)
          return quote_value(s) + " has " + std::to_string(parts.size()) + (parts.size() == 1 ? " value" : " values") +
                 "; it takes " + std::to_string(count) + " (" + form + ")";
        for (std::string p : parts) {
          if (p.empty() || p.find_first_not_of("+-0123456789") != std::string::npos)
            return quote_value(s) + ": " + quote_value(p) + " is not a whole number";
          if (std::string why = each(p); !why.empty()) return quote_value(s) + ": " + why;
        }
        return {};
      },
      form, "LIST"));
  o->type_name("INT,INT");
  return o;
}

/// Check the values of the options Kokkos reads (Kokkos 3.4 and 4.x names) in `args` (argv[1..]):
/// a malformed one is taken out of `args` and described in the result ("" when all are fine), so
/// that Kokkos never sees it. Local.
inline std::string screen_kokkos_arguments(std::vector<char*>& args) {
  enum Kind { integer, devices, text, choice, flag };
  struct Known {
    const char* name;
    Kind kind;
    long lo, hi;
    bool prefix;  // Kokkos 4 matches the name as a prefix (anything after it must be '=' or nothing)
  };
  static const Known known[] = {
      {"--kokkos-num-threads", integer, 1, 4096, true},
      {"--kokkos-threads", integer, 1, 4096, false},
      {"--threads", integer, 1, 4096, false},
      {"--kokkos-numa", integer, 1, 1024, false},
      {"--numa", integer, 1, 1024, false},
      {"--kokkos-device-id", integer, 0, 65535, true},
      {"--kokkos-device", integer, 0, 65535, false},
      {"--device-id", integer, 0, 65535, false},
      {"--device", integer, 0, 65535, false},
      {"--kokkos-num-devices", devices, 0, 65535, false},
      {"--kokkos-ndevices", devices, 0, 65535, false},
      {"--num-devices", devices, 0, 65535, false},
      {"--ndevices", devices, 0, 65535, false},
      {"--kokkos-tools-library", text, 0, 0, true},
      {"--kokkos-tools-libs", text, 0, 0, true},
      {"--kokkos-tools-args", text, 0, 0, true},
      {"--kokkos-map-device-id-by", choice, 0, 0, true},
      {"--kokkos-disable-warnings", flag, 0, 0, true},
      {"--kokkos-print-configuration", flag, 0, 0, true},
      {"--kokkos-tune-internals", flag, 0, 0, true},
      {"--kokkos-tools-help", flag, 0, 0, false},
      {"--kokkos-help", flag, 0, 0, false},
  };
  const auto whole_number = [](const std::string& s, long lo, long hi) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    const long v = std::strtol(s.c_str(), nullptr, 10);
    return v >= lo && v <= hi;
  };
  std::string problems;
  std::vector<char*> kept;
  for (char* a : args) {
    const std::string arg = a;
    const Known* k = nullptr;
    for (const Known& c : known)  // the longest name the argument starts with
      if (arg.compare(0, std::strlen(c.name), c.name) == 0 && (!k || std::strlen(c.name) > std::strlen(k->name)))
        k = &c;
    std::string why;
    if (k) {
      const std::size_t n = std::strlen(k->name);
      const bool bare = arg.size() == n, valued = arg.size() > n && arg[n] == '=';
      const std::string value = valued ? arg.substr(n + 1) : std::string();
      const std::string range = std::to_string(k->lo) + " to " + std::to_string(k->hi);
      if (!bare && !valued) {
        // Kokkos 3.4 leaves a longer name alone; Kokkos 4 aborts on it for its own options.
        if (k->prefix) why = "is not a Kokkos option (did you mean " + std::string(k->name) + "?)";
      } else if (k->kind == integer) {
        if (!valued || !whole_number(value, k->lo, k->hi))
          why = "takes =N, a whole number from " + range + " (" + k->name + "=N)";
      } else if (k->kind == devices) {
        const std::size_t comma = value.find(',');
        if (!valued || !whole_number(value.substr(0, comma), k->lo, k->hi) ||
            (comma != std::string::npos && !whole_number(value.substr(comma + 1), k->lo, k->hi)))
          why = "takes =N or =N,SKIP, whole numbers from " + range;
      } else if (k->kind == text) {
        if (!valued || value.empty()) why = "takes =VALUE, a non-empty string";
      } else if (k->kind == choice) {
        if (!valued || (value != "random" && value != "mpi_rank")) why = "takes =random or =mpi_rank";
      } else if (!bare) {
        why = "takes no value";
      }
    }
    if (why.empty()) {
      kept.push_back(a);
    } else {
      problems += (problems.empty() ? "" : "; ") + quote_value(arg) + " " + why;
    }
  }
  args = std::move(kept);
  return problems.empty() ? problems : "Kokkos option " + problems;
}

/// Take out of `args` the --spmd-* options spmd::Runtime does not know (it would throw from its
/// constructor, before the app can report anything) and describe them ("" when there are none).
/// The names are Runtime's (include/spmd/runtime.hpp). Local.
inline std::string screen_runtime_arguments(std::vector<char*>& args) {
  std::string problems;
  std::vector<char*> kept;
  for (char* a : args) {
    const bool ours = std::strncmp(a, "--spmd-", 7) == 0;
    if (!ours || std::strcmp(a, "--spmd-share-gpus") == 0 || std::strcmp(a, "--spmd-log-view") == 0)
      kept.push_back(a);
    else
      problems += (problems.empty() ? "" : ", ") + quote_value(a);
  }
  args = std::move(kept);
  return problems.empty() ? problems
                          : "unknown option " + problems + " (spmd::Runtime knows --spmd-share-gpus, --spmd-log-view)";
}

}  // namespace spmd::apps
