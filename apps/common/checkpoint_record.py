"""The integrity record of an spmdarray checkpoint (docs/checkpointing.md#the-integrity-record,
include/spmd/io/integrity.hpp), written here from its description alone, without the library: to
check a file, and to sign one that a test edited with h5py on purpose (so that the library's
range checks, not its checksum, are what refuses the edited value).

  check(path)  -> "" when the record is intact and describes the file, else why not
  sign(path)   -> rewrite the record for the file as it is now (offsets and sizes of the datasets'
                  raw data from h5py, every CRC from the bytes)
"""
import struct
import zlib

MAGIC = b"\x89SPMDCK\n"
VERSION = 1
HEAD = struct.Struct("<8sIIQIIII")  # magic, version, block, size, file crc, metadata crc, n, zero
RANGE = struct.Struct("<QQII")      # offset, length, crc, zero


def _spans(block, size, ranges):
    at, out = block, []
    for off, length, _ in ranges:
        if off > at:
            out.append((at, off - at))
        at = off + length
    if size > at:
        out.append((at, size - at))
    return out


def read(path):
    """(block, size, file_crc, metadata_crc, [(offset, length, crc)]) as recorded; raises ValueError."""
    with open(path, "rb") as f:
        head = f.read(HEAD.size)
        if len(head) < HEAD.size or head[:8] != MAGIC:
            raise ValueError("no integrity record")
        magic, version, block, size, fcrc, mcrc, n, zero = HEAD.unpack(head)
        if version != VERSION or n > (block - 44) // 24:
            raise ValueError(f"record version {version}, {n} ranges in {block} bytes")
        f.seek(0)
        rec = f.read(44 + 24 * n)
    body = 40 + 24 * n
    if zlib.crc32(rec[:body]) != struct.unpack("<I", rec[body:body + 4])[0]:
        raise ValueError("the record's own checksum fails")
    ranges = [RANGE.unpack(rec[40 + 24 * k:64 + 24 * k])[:3] for k in range(n)]
    return block, size, fcrc, mcrc, ranges


def check(path):
    """"" when the file has an intact integrity record that describes it (size, every CRC)."""
    try:
        block, size, fcrc, mcrc, ranges = read(path)
    except ValueError as e:
        return str(e)
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != size:
        return f"{len(data)} bytes, the record says {size}"
    if any(data[44 + 24 * len(ranges):block]):
        return "the user block is not zero after the record"
    if zlib.crc32(data[block:]) != fcrc:
        return "the whole file's CRC differs"
    if zlib.crc32(b"".join(data[a:a + n] for a, n in _spans(block, size, ranges))) != mcrc:
        return "the metadata's CRC differs"
    for off, length, crc in ranges:
        if zlib.crc32(data[off:off + length]) != crc:
            return f"the data at {off} has another CRC"
    return ""


def sign(path):
    """Write a new record for the file as it is (a file edited with h5py on purpose)."""
    import h5py  # only the tests that edit files need it

    with h5py.File(path, "r") as h:
        block = h.userblock_size
        ranges = []
        for name in h:
            d = h[name]
            off = d.id.get_offset()
            if off is not None and d.id.get_storage_size() > 0:
                ranges.append([off, d.id.get_storage_size()])
    ranges.sort()
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        size = len(data)
        ranges = [(off, n, zlib.crc32(data[off:off + n])) for off, n in ranges]
        meta = zlib.crc32(b"".join(bytes(data[a:a + n]) for a, n in _spans(block, size, ranges)))
        rec = HEAD.pack(MAGIC, VERSION, block, size, zlib.crc32(bytes(data[block:])), meta, len(ranges), 0)
        rec += b"".join(RANGE.pack(off, n, crc, 0) for off, n, crc in ranges)
        rec += struct.pack("<I", zlib.crc32(rec))
        f.seek(0)
        f.write(rec + bytes(block - len(rec)))
