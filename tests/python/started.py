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
if mode == "raise":
    raise RuntimeError("planted failure after step 1")
