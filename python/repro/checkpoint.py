"""Reading a repro checkpoint (`repro run --checkpoint-every N`) into NumPy:
the parameters a PyTorch model needs to compute what repro's model computes.

The format is harness/core/checkpoint.h's, version 1: "REPROCKP", u32
version, sections (u32 tag, u64 length, payload) and a SHA-256 of every
byte before it. Each PARM section is str name | u32 ndim | u32 shape[ndim]
| f32 data | f32 state1 | (f32 state2, AdamW); str is u32 length + bytes.
Only what a forward pass needs is returned; the file is checked whole
(magic, version, digest, section bounds) and any flaw is a ValueError
naming the file.
"""

import hashlib
import struct

__all__ = ["load_checkpoint"]


class _Reader:
    def __init__(self, path, data, pos, end):
        self.path, self.data, self.pos, self.end = path, data, pos, end

    def take(self, n):
        if n < 0 or self.pos + n > self.end:
            raise ValueError("%s: a section ends early (corrupted checkpoint)" % self.path)
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def i64(self):
        return struct.unpack("<q", self.take(8))[0]

    def str(self):
        return self.take(self.u32()).decode("utf-8")


def _param(path, r, np):
    name = r.str()
    ndim = r.u32()
    shape = tuple(r.u32() for _ in range(ndim))
    numel = 1
    for d in shape:
        numel *= d
    arr = np.frombuffer(r.take(4 * numel), dtype="<f4").reshape(shape).copy()
    return name, arr


def load_checkpoint(path):
    """{"experiment": str, "step": int, "params": {name: float32 array}}, the
    parameters in model order under repro's names ("fc1.weight")."""
    import numpy as np
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 + 32 or data[:8] != b"REPROCKP":
        raise ValueError("%s: not a repro checkpoint" % path)
    if hashlib.sha256(data[:-32]).digest() != data[-32:]:
        raise ValueError("%s: corrupted checkpoint (its SHA-256 does not match)" % path)
    version = struct.unpack("<I", data[8:12])[0]
    if version != 1:
        raise ValueError("%s: checkpoint version %d (this client reads 1)" % (path, version))
    out = {"experiment": None, "step": None, "params": {}}
    pos, end = 12, len(data) - 32
    while pos < end:
        if pos + 12 > end:
            raise ValueError("%s: truncated section header" % path)
        tag = data[pos:pos + 4]
        length = struct.unpack("<Q", data[pos + 4:pos + 12])[0]
        r = _Reader(path, data, pos + 12, pos + 12 + length)
        if r.end > end:
            raise ValueError("%s: section %r runs past the end" % (path, tag))
        if tag == b"META":
            out["experiment"] = r.str()
            r.take(32)   # numerics digest
            r.str()      # config
            out["step"] = r.i64()
        elif tag == b"PARM":
            name, arr = _param(path, r, np)
            out["params"][name] = arr
        elif tag == b"END_":
            break
        pos = r.end
    if out["step"] is None or not out["params"]:
        raise ValueError("%s: no META or PARM section" % path)
    return out
