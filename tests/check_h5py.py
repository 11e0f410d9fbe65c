#!/usr/bin/env python3
"""Read a checkpoint written by `io_fault write DIR STEP` with h5py (no spmdarray code) and check
the values, dtypes, shapes, attributes, the per-dataset checksums, the integrity record (with zlib
alone: apps/common/checkpoint_record.py) and the XDMF sidecar.

The checksum of a dataset is zlib.crc32 of its row-major little-endian bytes
(docs/checkpointing.md), stored as the dataset attribute spmd_checksum_crc32.

usage: check_h5py.py CHECKPOINT STEP
"""
import os
import sys
import xml.etree.ElementTree as ET
import zlib

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps", "common"))
import checkpoint_record  # noqa: E402

path, step = sys.argv[1], int(sys.argv[2])
problem = checkpoint_record.check(path)
assert problem == "", f"the integrity record does not describe the file: {problem}"
print("integrity record: the whole file's, the metadata's and every data range's CRC-32 match")
with h5py.File(path, "r") as f:
    assert f.attrs["spmd_format_version"] == 2, dict(f.attrs)
    assert f.attrs["step"] == step and f.attrs["time"] == step * 0.5, dict(f.attrs)
    i, j = np.meshgrid(np.arange(40), np.arange(30), indexing="ij")
    a, b, c = np.meshgrid(np.arange(6), np.arange(5), np.arange(4), indexing="ij")
    zi, zj = np.meshgrid(np.arange(9), np.arange(7), indexing="ij")
    expected = {
        "u": (step * 1000.0 + i * 0.5 + j * 0.25).astype("<f8"),
        "w": (step + 100 * a + 10 * b + c).astype("<f4"),
        "k": (step * 100000 + 3 * np.arange(50)).astype("<i8"),
        # complex128, stored as the compound {r, i} that h5py reads as complex
        "z": ((step + zi * 0.5) + 1j * (zj - step * 0.25)).astype("<c16"),
    }
    for name, ref in expected.items():
        ds = f[name]
        data = ds[...]
        assert data.dtype == ref.dtype, (name, data.dtype, ref.dtype)
        assert data.shape == ref.shape, (name, data.shape)
        assert np.array_equal(data, ref), f"{name}: values differ"
        assert ds.attrs["spmd_element_type"] in (data.dtype.name, data.dtype.name.encode())
        assert list(ds.attrs["spmd_shape"]) == list(ref.shape)
        crc = zlib.crc32(np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).tobytes())
        assert crc == int(ds.attrs["spmd_checksum_crc32"]), (name, crc, ds.attrs["spmd_checksum_crc32"])
        print(f"{name}: {data.dtype} {data.shape} values ok, crc32 {crc:#010x} matches")
# The XDMF sidecar parses as XML; each grid's topology matches the datasets it points at.
xmf = os.path.splitext(path)[0] + ".xmf"
base = os.path.basename(path)
seen = set()
with h5py.File(path, "r") as f:
    for grid in ET.parse(xmf).getroot().iter("Grid"):
        topo = grid.find("Topology")
        dims = tuple(int(x) for x in topo.get("Dimensions").split())
        assert topo.get("TopologyType") == f"{len(dims)}DCoRectMesh", topo.attrib
        for attr in grid.findall("Attribute"):
            item = attr.find("DataItem")
            file, name = item.text.strip().split(":/")
            assert file == base and f[name].shape == dims, (item.text, dims)
            assert tuple(int(x) for x in item.get("Dimensions").split()) == dims
            seen.add(name)
# the 2-D and 3-D real datasets (the 1-D k is not a grid; XDMF has no complex numbers: no z)
assert seen == {"u", "w"}, seen
print("check_h5py: ok")
