"""spmdarray.random: reproducible random arrays with NumPy's Generator names, over the library's
counter-based generator (spmd::random, Philox4x32-10).

    rng = spmdarray.random.default_rng(42)
    u = rng.random((1000, 1000))                # uniform in [0, 1)
    z = rng.standard_normal(10**6, dtype=np.float32)
    k = rng.integers(0, 6, size=100)            # int64 in {0, ..., 5}

The element at row-major index i of a draw is a pure function of (seed, stream, i): the arrays are
the same, bit for bit, at any number of ranks, on any process grid or halo, on CPUs and GPUs. They
are **not** NumPy's numbers (another generator and other transforms). Each call of a Generator
draws from the next stream of its seed (0, 1, 2, ...), so successive calls give independent arrays
and a program that makes the same calls gets the same arrays. Every call is collective (it creates
an array); the Generator's state (the next stream) advances alike on every rank.
"""

import numbers
import operator

import numpy as np

from . import _core, _expr, empty

__all__ = ["Generator", "default_rng"]

_KIND = {"uniform": 0, "normal": 1, "integers": 2}


def _size(fn, size):
    if size is None:
        raise NotImplementedError(f"spmdarray.random.Generator.{fn}: size=None (a single number); pass a shape")
    return size


class Generator:
    """NumPy's Generator names over spmd::random::Generator{seed, stream}; see the module comment."""

    def __init__(self, seed, stream=0):
        seed = operator.index(seed)
        if not 0 <= seed < 2**64:
            raise ValueError("Seed must be between 0 and 2**64 - 1")
        self._seed = seed
        self._stream = operator.index(stream)

    def __repr__(self):
        return f"spmdarray.random.Generator(seed={self._seed}, stream={self._stream})"

    def _fill(self, fn, kind, size, dtype, a=0.0, b=0.0, lo=0, hi=0, **dist):
        out = empty(_size(fn, size), dtype, **dist)
        stream, self._stream = self._stream, self._stream + 1
        _core.random_fill(out._h, _KIND[kind], self._seed, stream % 2**64, float(a), float(b), int(lo), int(hi))
        return out

    def random(self, size=None, dtype=np.float64, out=None, **dist):
        """Uniform in [0, 1) (float64 or float32). Collective."""
        return self.uniform(0.0, 1.0, size, dtype=dtype, out=out, **dist)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64, out=None, **dist):
        """Uniform in [low, high) (scalars). Collective. (dtype is spmdarray's: NumPy's uniform is
        float64 only.)"""
        d = _float("uniform", dtype, out)
        if np.ndim(low) or np.ndim(high):
            raise NotImplementedError("spmdarray.random.Generator.uniform: array low / high")
        if not np.isfinite(high - low):
            raise OverflowError("high - low range exceeds valid bounds")
        return self._fill("uniform", "uniform", size, d, low, high, **dist)

    def standard_normal(self, size=None, dtype=np.float64, out=None, **dist):
        """Normal, mean 0, standard deviation 1. Collective."""
        return self.normal(0.0, 1.0, size, dtype=dtype, out=out, **dist)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=np.float64, out=None, **dist):
        """Normal with mean loc and standard deviation scale (scalars, scale >= 0). Collective."""
        d = _float("normal", dtype, out)
        if np.ndim(loc) or np.ndim(scale):
            raise NotImplementedError("spmdarray.random.Generator.normal: array loc / scale")
        if scale < 0:
            raise ValueError("scale < 0")
        return self._fill("normal", "normal", size, d, loc, scale, **dist)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False, **dist):
        """Integers in [low, high) ([low, high] with endpoint; [0, low) without high), int64 or
        int32. Collective."""
        d = np.dtype(dtype)
        if d not in (np.dtype(np.int64), np.dtype(np.int32)):
            raise NotImplementedError(f"spmdarray.random.Generator.integers: dtype {d} (int64 and int32 are bound)")
        if high is None:
            low, high = 0, low
        if np.ndim(low) or np.ndim(high):
            raise NotImplementedError("spmdarray.random.Generator.integers: array low / high")
        low, high = operator.index(low), operator.index(high)
        if endpoint:
            high += 1
        info = np.iinfo(d)
        if low < info.min:
            raise ValueError("low is out of bounds for " + str(d))
        if high - 1 > info.max:
            raise ValueError("high is out of bounds for " + str(d))
        if low >= high:
            raise ValueError("low > high" if endpoint else "low >= high")
        if high > info.max:  # [low, 2^63): the library's T(high) would wrap
            raise NotImplementedError(f"spmdarray.random.Generator.integers: high = {high} (at most {info.max})")
        return self._fill("integers", "integers", size, d, lo=low, hi=high, **dist)

    def stream(self, s):
        """A Generator of the same seed starting at stream s. Local."""
        return Generator(self._seed, s)


def _float(fn, dtype, out):
    if out is not None:
        raise NotImplementedError(f"spmdarray.random.Generator.{fn}: out= is not bound")
    d = np.dtype(dtype)
    if d.kind != "f" or d not in _expr.DTYPES:
        raise NotImplementedError(f"spmdarray.random.Generator.{fn}: dtype {d} (float64 and float32 are bound)")
    return d


def default_rng(seed=None):
    """A Generator of `seed` (a non-negative integer, the same on every rank; or a Generator,
    returned as is). seed=None (fresh entropy) is not bound: it would differ between ranks."""
    if isinstance(seed, Generator):
        return seed
    if seed is None:
        raise NotImplementedError("spmdarray.random.default_rng(None): pass a seed (the same on every rank); "
                                  "entropy from the OS would differ between ranks")
    if not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError("SeedSequence expects int or sequence of ints for entropy not " + type(seed).__name__)
    return Generator(seed)
