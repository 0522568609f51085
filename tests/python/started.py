"""repro.torch.seed / repro.loader_kwargs / repro.torch.start as a script
uses them (examples/torch/mnist.py): argv[1] is "ok" (ends normally),
"raise" (an uncaught exception after one step) or "noloader" (no
DataLoader built through the client). Prints what the test checks."""
import sys

import torch
import repro
import repro.torch

mode = sys.argv[1]
seed = repro.torch.seed(7)
print("seed", seed)
if mode != "noloader":
    kw = repro.loader_kwargs()
    print("loader", kw["num_workers"], type(kw["generator"]).__name__)
model = torch.nn.Linear(3, 2)
repro.torch.start("started", model)
x = torch.ones(4, 3)
loss = model(x).sum()
loss.backward()
repro.torch.record_step(model, loss, x)
try:
    repro.torch.start("again")
except ValueError as e:
    print("second start:", e)
# The client hashes a contiguous CPU tensor where it lies (no copy), and
# copies only what is not contiguous.
w = model.weight
print("in place", repro._as_buffer(w)[3] == w.data_ptr(),
      repro._as_buffer(w.t())[3] != w.data_ptr())
if mode == "raise":
    raise RuntimeError("planted failure after step 1")
