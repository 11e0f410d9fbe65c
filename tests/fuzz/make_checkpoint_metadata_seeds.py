#!/usr/bin/env python3
"""Write the seed corpus of the checkpoint metadata fuzzer (checkpoint_metadata_corpus/) in the
binary input format of checkpoint_metadata_input.hpp, from the readable descriptions below. The
valid-* seeds describe files that save() writes (the validator must accept them); the bad-* seeds
files it must refuse (test_io checks both). Run it after changing the seeds or the format:

    python3 tests/fuzz/make_checkpoint_metadata_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def s(text):
    b = text.encode("latin-1") if isinstance(text, str) else text
    return bytes([len(b)]) + b


def value(kind, *vals, points=None):
    k = {"int": 0, "real": 1, "str": 2, "other": 3}[kind]
    n = len(vals) if kind in ("int", "real") else 0
    out = bytes([k, n | (0x80 if points is not None else 0)])
    if points is not None:
        out += struct.pack("<Q", points)
    if kind == "int":
        out += b"".join(struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF) for v in vals)
    elif kind == "real":
        out += b"".join(struct.pack("<d", v) for v in vals)
    elif kind == "str":
        out += s(vals[0])
    return out


def path(p):
    return bytes([0]) + s(p)


def root(name, v):
    return bytes([1]) + s(name) + v


def dims(name, *extents, with_shape=False):
    return bytes([2]) + s(name) + bytes([len(extents) | (0x80 if with_shape else 0)]) + \
        b"".join(struct.pack("<Q", e) for e in extents)


def dtype(name, cls, size, signed=True, big_endian=False):
    return bytes([3]) + s(name) + bytes([{"int": 0, "real": 1, "other": 2}[cls], size,
                                         (1 if signed else 0) | (2 if big_endian else 0)])


def attr(dset, name, v):
    return bytes([4]) + s(dset) + s(name) + v


def dataset(name, shape, etype, crc, with_shape=False):
    """A dataset as save() writes it; with_shape: its spmd_shape from the dims record's flag."""
    cls, size, signed = {"float64": ("real", 8, True), "float32": ("real", 4, True), "int32": ("int", 4, True),
                         "int64": ("int", 8, True), "uint32": ("int", 4, False), "uint64": ("int", 8, False)}[etype]
    shape_attr = b"" if with_shape else attr(name, "spmd_shape", value("int", *shape))
    return (dims(name, *shape, with_shape=with_shape) + dtype(name, cls, size, signed)
            + attr(name, "spmd_element_type", value("str", etype)) + shape_attr
            + attr(name, "spmd_checksum_crc32", value("int", crc)))


HEADER = root("spmd_format_version", value("int", 1)) + root("spmd_library_version", value("str", "0.1.0"))
SEEDS = {
    "valid-heat-2d": path("out/heat.0000000020.h5") + HEADER
    + root("spmd_run_id", value("str", "0123456789abcdef0123456789abcdef")) + root("step", value("int", 20))
    + root("time", value("real", 0.5)) + root("app", value("str", "heat")) + root("problem.n", value("int", 62))
    + dataset("u", (64, 64), "float64", 1038028151, with_shape=True),
    "valid-solver-state": path("ck.0000000100.h5") + HEADER
    + root("spmd_run_id", value("str", "cb3fb95151132b273e45c95c8f8ea9c3")) + root("solver", value("str", "cg"))
    + root("state.rr", value("real", 1.5e-10)) + dataset("p", (1600,), "float64", 4294967295)
    + dataset("r", (1600,), "float64", 0) + dataset("x", (1600,), "float64", 3440982987),
    "valid-every-type": path("types.h5") + HEADER + dataset("a", (3, 4, 2, 5), "float32", 12)
    + dataset("b", (7,), "int32", 13) + dataset("c", (0, 3), "uint64", 0, with_shape=True)
    + dataset("d", (2, 2), "uint32", 14, with_shape=True)
    + dataset("e", (5,), "int64", 15) + root("vector", value("int", 1, 2, 3)) + root("blob", value("other")),
    # Minimal files (one dataset, the extents in the dims record): short inputs, so that the
    # fuzzer's mutations land on the extents and the types often.
    "valid-minimal-1d": root("spmd_format_version", value("int", 1)) + dataset("x", (5,), "float64", 7, True),
    "valid-minimal-zero-extent": root("spmd_format_version", value("int", 1))
    + dataset("z", (0, 3), "int64", 0, True),
    "valid-minimal-3d": root("spmd_format_version", value("int", 1)) + dataset("w", (2, 3, 4), "uint32", 9, True),
    "bad-huge-extents": path("huge.h5") + HEADER + dataset("u", (1 << 62, 4), "float64", 1),
    "bad-extent-above-int64": path("x.h5") + HEADER + dataset("u", (0, 1 << 63), "float64", 0),
    "bad-shape-mismatch": path("x.h5") + HEADER + dataset("u", (3, 4), "float64", 1)
    + attr("u", "spmd_shape", value("int", 4, 3)),
    "bad-crc-range": path("x.h5") + HEADER + dataset("u", (3,), "int32", 1 << 32),
    "bad-type-mismatch": path("x.h5") + HEADER + dataset("u", (3,), "float64", 1) + dtype("u", "real", 8, True, True),
    "bad-version-array": path("x.h5") + root("spmd_format_version", value("int", 1, 2, 3, points=3)),
    "bad-strings": path("\x1b[31mred\x00.h5") + HEADER + root("spmd_run_id", value("str", "\x01\x02not-hex"))
    + dataset("\n\r", (2,), "float64", 1) + attr("\n\r", "spmd_element_type", value("str", "float\xff64")),
}

out = os.path.join(HERE, "checkpoint_metadata_corpus")
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds written to {out}")
