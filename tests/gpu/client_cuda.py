"""The Python client takes CUDA tensors (tests/gpu/selftest.sh runs this
without a GPU and without PyTorch): a stand-in `torch` module whose tensors
say they live on "cuda" checks that the client copies such a tensor to the
host (.to("cpu"), once per record) and hashes exactly its bytes, giving the
digest of the same bytes recorded from the host; and that the copy is not
made for a host tensor. Run with PYTHONPATH=python and REPRO_LIB set.
Prints "ok" and exits 0, or raises."""
import ctypes
import sys
import types

torch = types.ModuleType("torch")
torch.float32, torch.float64, torch.float16, torch.bfloat16 = "f32", "f64", "f16", "bf16"
torch.int32, torch.int64, torch.uint8 = "i32", "i64", "u8"
sys.modules["torch"] = torch


class Device:
    def __init__(self, kind):
        self.type = kind


class Tensor:
    """float32 values in a ctypes buffer, on a named device."""
    copies = 0

    def __init__(self, values, device):
        self.buf = (ctypes.c_float * len(values))(*values)
        self.device = Device(device)
        self.dtype = torch.float32
        self.shape = (len(values),)

    def detach(self):
        return self

    def to(self, where):
        assert where == "cpu", where
        Tensor.copies += 1
        return Tensor(list(self.buf), "cpu")

    def contiguous(self):
        return self

    def data_ptr(self):
        if self.device.type != "cpu":
            raise AssertionError("the client read a device pointer as host memory")
        return ctypes.addressof(self.buf)

    def numel(self):
        return len(self.buf)

    def element_size(self):
        return 4


Tensor.__module__ = "torch"

import repro  # noqa: E402

values = [0.5 * i - 3.0 for i in range(3000)] + [float("nan"), -0.0]
on_host = repro.tensor_digest("x", Tensor(values, "cpu"))
assert Tensor.copies == 0, "a host tensor was copied"
on_device = repro.tensor_digest("x", Tensor(values, "cuda"))
assert Tensor.copies == 1, "the CUDA tensor was not copied to the host once (%d)" % Tensor.copies
assert on_device == on_host, (on_device, on_host)
other = repro.tensor_digest("x", Tensor(values[:-1] + [0.0], "cuda"))
assert other != on_host, "a different tensor gave the same digest"
print("ok")
