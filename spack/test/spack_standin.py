"""A small stand-in of Spack's package API, enough to load spack/.../spmdarray/package.py without
Spack and check what it declares and what cmake_args() returns for a spec.

Spack cannot be installed on the project's machines, so this models only what the recipe uses:
  - the directives (version, variant, depends_on, conflicts, license, maintainers, run_after),
    recorded per class and inherited from the base classes as Spack's DirectiveMeta does;
  - CMakePackage.define / define_from_variant with Spack's formatting (-DNAME:BOOL=ON,
    -DNAME:STRING=value; a variant that does not exist for the spec gives "");
  - CudaPackage's `cuda` and `cuda_arch` variants (cuda_arch only when +cuda, default none);
  - a tiny spec language: name, @versions (x.y matches x.y.*; a,b is a list; a:b a range),
    +v, ~v, v=value, ^dependency;
  - "concretization" of the root only: variant defaults, conflicts, and the merged constraints
    of every dependency whose `when` holds (nothing is solved for the dependencies);
  - the helpers the stand-alone tests call (which, join_path, cache_extra_test_sources), with
    `which` recording the commands instead of running them.
What it does not model (versions of dependencies, providers, compilers) the tests do not check.
"""

import importlib.util
import os
import re
import sys
import types

# ---------------------------------------------------------------------------------------------
# Versions
# ---------------------------------------------------------------------------------------------


def _vtuple(v):
    return tuple(int(c) if c.isdigit() else c for c in re.split(r"[.-]", v))


def version_satisfies(version, constraint):
    """Spack's meaning for a concrete version against "a,b:c,d:": x.y matches x.y and x.y.*."""
    v = _vtuple(version)
    for part in constraint.split(","):
        if ":" in part:
            lo, hi = part.split(":", 1)
            if lo and v < _vtuple(lo):
                continue
            if hi and v[: len(_vtuple(hi))] > _vtuple(hi):
                continue
            return True
        if v[: len(_vtuple(part))] == _vtuple(part):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Abstract specs (constraints)
# ---------------------------------------------------------------------------------------------


class Constraint:
    def __init__(self, name=None):
        self.name = name
        self.versions = []  # constraint strings, all must hold
        self.variants = {}  # name -> True/False/str
        self.deps = {}  # name -> Constraint

    def merge(self, other):
        """Add other's constraints; a contradiction (+v and ~v, a=1 and a=2) raises."""
        self.versions += [v for v in other.versions if v not in self.versions]
        for k, val in other.variants.items():
            if k in self.variants and self.variants[k] != val:
                raise ValueError(f"{self.name}: {k}={self.variants[k]} and {k}={val} together")
            self.variants[k] = val
        for n, d in other.deps.items():
            self.deps.setdefault(n, Constraint(n)).merge(d)

    def __str__(self):
        s = self.name or ""
        s += "".join("@" + v for v in self.versions)
        for k, v in sorted(self.variants.items()):
            if v is True:
                s += "+" + k
            elif v is False:
                s += "~" + k
            else:
                s += f" {k}={v}"
        for d in self.deps.values():
            s += f" ^{d}"
        return s


_TOKEN = re.compile(
    r"\s*(?:(?P<dep>\^)|(?P<ver>@[^\s+~^]+)|(?P<on>\+\w+)|(?P<off>~\w+)"
    r"|(?P<kv>\w+=[\w.,-]+)|(?P<name>[A-Za-z_][\w-]*))"
)


def parse(text):
    root = Constraint()
    cur = root
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse spec {text!r} at {text[pos:]!r}")
        pos = m.end()
        if m.group("dep"):
            cur = Constraint()
            root.deps[id(cur)] = cur  # renamed when its name arrives
        elif m.group("ver"):
            cur.versions.append(m.group("ver")[1:])
        elif m.group("on"):
            cur.variants[m.group("on")[1:]] = True
        elif m.group("off"):
            cur.variants[m.group("off")[1:]] = False
        elif m.group("kv"):
            k, v = m.group("kv").split("=", 1)
            cur.variants[k] = v
        else:
            if cur.name is not None:
                raise ValueError(f"two names in {text!r}")
            cur.name = m.group("name")
    root.deps = {d.name: d for d in root.deps.values()}
    return root


# ---------------------------------------------------------------------------------------------
# Concrete specs
# ---------------------------------------------------------------------------------------------


class Prefix(str):
    """Spack's Prefix: prefix.bin.mpiexec -> '<prefix>/bin/mpiexec'."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))


class Spec:
    """The root spec after the stand-in's concretization, or one dependency (its merged
    constraints, a made-up prefix)."""

    def __init__(self, name, version=None, variants=None, deps=None, types=()):
        self.name = name
        self.version = version
        self.variants = dict(variants or {})
        self.deps = dict(deps or {})
        self.types = set(types)
        self.constraint_versions = []
        self.prefix = Prefix(f"/opt/spack/{name}")
        if name == "mpi":
            self.prefix = Prefix("/opt/spack/mpich")
            self.mpicxx = "/opt/spack/mpich/bin/mpicxx"

    def __getitem__(self, name):
        if name == self.name:
            return self
        if name not in self.deps:
            raise KeyError(f"{self.name} has no dependency {name}")
        return self.deps[name]

    def __contains__(self, name):
        return name in self.deps

    def satisfies(self, text):
        return self._satisfies(text if isinstance(text, Constraint) else parse(text))

    def _satisfies(self, c):
        if c.name and c.name != self.name:
            return False
        if self.version is not None:
            if not all(version_satisfies(self.version, v) for v in c.versions):
                return False
        for k, want in c.variants.items():
            have = self.variants.get(k)
            if isinstance(want, bool):
                if (have is True) != want:
                    return False
            elif isinstance(have, tuple):
                if not set(want.split(",")) <= set(have):
                    return False
            elif have != want:
                return False
        for n, d in c.deps.items():
            if n not in self.deps or not self.deps[n]._satisfies(d):
                return False
        return True

    def __str__(self):
        s = f"{self.name}@{self.version}" if self.version else self.name
        for k, v in sorted(self.variants.items()):
            if v is True:
                s += "+" + k
            elif v is False:
                s += "~" + k
            else:
                s += f" {k}={','.join(v) if isinstance(v, tuple) else v}"
        return s


class ConflictError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Directives
# ---------------------------------------------------------------------------------------------

_pending = []


def _directive(kind):
    def record(*args, **kwargs):
        _pending.append((kind, args, kwargs))

    return record


version = _directive("version")
variant = _directive("variant")
depends_on = _directive("depends_on")
conflicts = _directive("conflicts")
requires = _directive("requires")
license = _directive("license")
maintainers = _directive("maintainers")
patch = _directive("patch")


def run_after(*phases, when=None):
    def deco(f):
        f._run_after = phases
        return f

    return deco


class DirectiveMeta(type):
    def __new__(mcs, name, bases, ns):
        cls = super().__new__(mcs, name, bases, ns)
        own = list(_pending)
        _pending.clear()
        inherited = []
        for b in bases:
            for d in getattr(b, "_directives", []):
                if d not in inherited:
                    inherited.append(d)
        cls._directives = inherited + own
        return cls


class PackageBase(metaclass=DirectiveMeta):
    def __init__(self, spec):
        self.spec = spec
        self.prefix = spec.prefix
        self.test_suite = None

    # the class' declarations, in Spack's shape
    @classmethod
    def directives(cls, kind):
        return [(a, k) for (t, a, k) in cls._directives if t == kind]

    @classmethod
    def versions(cls):
        return {a[0]: k for a, k in cls.directives("version")}

    @classmethod
    def variants(cls):
        out = {}
        for a, k in cls.directives("variant"):
            out[a[0]] = k
        return out

    @classmethod
    def url_for_version(cls, v):
        """Spack's default: the version in `url` replaced by v."""
        default = re.search(r"\d+\.\d+\.\d+", cls.url).group(0)
        return cls.url.replace(default, v)

    def __getitem__(self, name):
        dep = self.spec[name]
        pkg = types.SimpleNamespace(spec=dep, prefix=dep.prefix)
        if name == "kokkos":
            pkg.kokkos_cxx = str(dep.prefix.bin.nvcc_wrapper) if dep.satisfies("+cuda") else "/usr/bin/c++"
        return pkg

    # ---- stand-in concretization of the root ------------------------------------------------
    @classmethod
    def concretize(cls, text):
        """Variants from defaults and text, conflicts checked, dependencies' constraints merged."""
        req = parse(text)
        name = re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()
        if req.name not in (None, name):
            raise ValueError(f"spec {text!r} is not for {name}")
        version = req.versions[0] if req.versions else next(iter(cls.versions()))
        decl = cls.variants()
        for k in req.variants:
            if k not in decl:
                raise ValueError(f"{name} has no variant {k!r}")
        spec = Spec(name, version)
        # unconditional variants first, then those whose `when` now holds (cuda_arch, ...)
        pending = dict(decl)
        changed = True
        while changed:
            changed = False
            for k, kw in list(pending.items()):
                w = kw.get("when")
                if w is None or spec.satisfies(w):
                    val = req.variants.get(k, kw.get("default"))
                    if kw.get("multi") and isinstance(val, str):
                        val = tuple(val.split(","))
                    spec.variants[k] = val
                    del pending[k]
                    changed = True
        for k in pending:
            if k in req.variants:
                raise ValueError(f"variant {k!r} does not apply to {text!r}")
        for a, kw in cls.directives("conflicts"):
            w = kw.get("when")
            if spec.satisfies(a[0]) and (w is None or spec.satisfies(w)):
                raise ConflictError(kw.get("msg") or f"{a[0]} conflicts with {w}")
        merged, dtypes = {}, {}
        for a, kw in cls.directives("depends_on"):
            w = kw.get("when")
            if w is not None and not spec.satisfies(w):
                continue
            c = parse(a[0])
            merged.setdefault(c.name, Constraint(c.name)).merge(c)
            t = kw.get("type", ("build", "link"))
            dtypes.setdefault(c.name, set()).update((t,) if isinstance(t, str) else t)
        for n, c in merged.items():
            d = Spec(n, None, c.variants, types=dtypes[n])
            d.constraint_versions = c.versions
            spec.deps[n] = d
        return spec


class CMakePackage(PackageBase):
    run_tests = False

    @staticmethod
    def define(cmake_var, value):
        if isinstance(value, bool):
            kind, value = "BOOL", "ON" if value else "OFF"
        else:
            kind = "STRING"
            if isinstance(value, (list, tuple)):
                value = ";".join(str(v) for v in value)
        return f"-D{cmake_var}:{kind}={value}"

    def define_from_variant(self, cmake_var, variant=None):
        variant = variant or cmake_var.lower()
        if variant not in self.variants():
            raise KeyError(f"{variant} is not a variant of {self.spec.name}")
        if variant not in self.spec.variants:
            return ""
        value = self.spec.variants[variant]
        if isinstance(value, tuple):
            value = list(value)
        return self.define(cmake_var, value)


class CudaPackage(PackageBase):
    cuda_arch_values = ("50", "52", "60", "61", "70", "75", "80", "86", "89", "90", "100", "120")
    variant("cuda", default=False, description="Build with CUDA")
    variant("cuda_arch", default="none", multi=True, when="+cuda", description="CUDA architecture")


# ---- helpers used by the stand-alone tests ----------------------------------------------------


class Recorder:
    """`which(path)`: records each call; `--build` creates the consumer executable; mpiexec
    prints what tests/consumer prints when all is well."""

    calls = []

    def __init__(self, path):
        self.path = str(path)

    def __call__(self, *args, **kwargs):
        Recorder.calls.append([self.path] + [str(a) for a in args])
        if "--build" in args:
            build = args[args.index("--build") + 1]
            os.makedirs(build, exist_ok=True)
            open(os.path.join(build, "consumer"), "w").close()
        if os.path.basename(self.path) == "mpiexec":
            return "consumer: sum 9900.0 (expected 9900.0): ok\n"
        return ""


def which(path, required=False):
    return Recorder(path)


cached_test_sources = []


def cache_extra_test_sources(pkg, srcs):
    cached_test_sources.extend(srcs)


# ---------------------------------------------------------------------------------------------
# Loading a recipe
# ---------------------------------------------------------------------------------------------


def _install_modules():
    mods = {}
    for name in ("spack", "spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"):
        mods[name] = types.ModuleType(name)
    pkg = types.ModuleType("spack.package")
    for n in (
        "version", "variant", "depends_on", "conflicts", "requires", "license", "maintainers",
        "patch", "run_after", "which", "cache_extra_test_sources",
    ):
        setattr(pkg, n, globals()[n])
    pkg.join_path = os.path.join
    pkg.__all__ = [n for n in vars(pkg) if not n.startswith("_")]
    mods["spack.package"] = pkg
    cm = types.ModuleType("spack_repo.builtin.build_systems.cmake")
    cm.CMakePackage = CMakePackage
    cu = types.ModuleType("spack_repo.builtin.build_systems.cuda")
    cu.CudaPackage = CudaPackage
    mods[cm.__name__] = cm
    mods[cu.__name__] = cu
    sys.modules.update(mods)


def load_recipe(path, class_name="Spmdarray"):
    """Import package.py through the stand-in; returns the package class."""
    _install_modules()
    _pending.clear()
    spec = importlib.util.spec_from_file_location(f"standin_recipe_{abs(hash(path))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, class_name)
