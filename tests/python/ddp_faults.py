#!/usr/bin/python3
"""A tiny data-parallel program (Gloo, CPU, 3 steps) with one planted fault,
for tests/check_ddp.c. argv[1] is the fault:

  none     a correct run (repro.ddp.InvariantGradients)
  kill     rank 1 kills itself with SIGKILL in step 2
  early    rank 1 exits 0 before joining the process group: rank 0 is left
           waiting in init_process_group
  drift    rank 1 nudges a weight after step 2's update: its replica leaves
           rank 0's, which the client's replica check must name
  nogroup  never forms a process group (a script that ignores WORLD_SIZE)
  batch=N  a global batch of N samples (shards of 4; N=12 does not divide
           among 2 or 4 ranks)
"""
import os
import signal
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import repro  # noqa: E402
import repro.ddp  # noqa: E402

fault = sys.argv[1] if len(sys.argv) > 1 else "none"
batch = int(fault.split("=")[1]) if fault.startswith("batch=") else 16
rank = int(os.environ.get("RANK", "0"))
if fault == "early" and rank == 1:
    sys.exit(0)
if fault != "nogroup":
    dist.init_process_group("gloo")
torch.manual_seed(7)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
grads = repro.ddp.InvariantGradients(model, shard_size=4)
g = torch.Generator().manual_seed(3)
with repro.Recorder("ddp_faults", repro.RunEnv.read(5).seed) as rec:
    for step in range(1, 4):
        x = torch.randn(batch, 4, generator=g)
        y = torch.randn(batch, 2, generator=g)
        if fault == "kill" and step == 2 and rank == 1:
            print("rank 1 kills itself in step 2", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        opt.zero_grad()
        loss = grads.backward(lambda m, xs, ys: ((m(xs) - ys) ** 2).mean(), x, y)
        opt.step()
        if fault == "drift" and step == 2 and rank == 1:
            with torch.no_grad():
                model.weight[0, 0] += 1e-3
        repro.record_model(rec, model, loss)
        rec.step(step, float(loss))
