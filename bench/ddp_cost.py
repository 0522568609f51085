#!/usr/bin/python3
"""The price of world-size-invariant gradients (`make bench`): ms per step
of examples/torch_ddp.py's model (32-64-8, a global batch of 256, Gloo on
the CPU) with plain DistributedDataParallel and with
repro.ddp.InvariantGradients (shards of 16), at world sizes 1, 2 and 4.

Each world size is a set of fresh processes started here (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, as repro starts a program's ranks); rank 0 times
STEPS steps after WARMUP. On a machine with fewer cores than ranks the
ranks share them, so compare the two columns of one row, not the rows.
"""
import os
import socket
import subprocess
import sys
import time

STEPS, WARMUP, BATCH, SHARD = 30, 3, 256, 16
here = os.path.dirname(os.path.abspath(__file__))


def rank_main(mode):
    sys.path.insert(0, os.path.join(here, "..", "python"))
    sys.path.insert(0, os.path.join(here, "..", "examples"))
    import torch
    import torch.distributed as dist
    import torch_ddp as ex  # the example's model, batch and loss
    import repro.ddp
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = ex.model_for(1234)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if mode == "plain":
        net, block = torch.nn.parallel.DistributedDataParallel(model), BATCH // world
    else:
        grads = repro.ddp.InvariantGradients(model, SHARD)
    batches = [ex.global_batch(1234, s, BATCH) for s in range(1, STEPS + WARMUP + 1)]
    for i, (x, y) in enumerate(batches):
        if i == WARMUP:
            dist.barrier()
            t0 = time.perf_counter()
        opt.zero_grad()
        if mode == "plain":
            mine = slice(rank * block, (rank + 1) * block)
            ex.loss_of(net, x[mine], y[mine]).backward()
        else:
            grads.backward(ex.loss_of, x, y)
        opt.step()
    dist.barrier()
    if rank == 0:
        print("%.3f" % (1000 * (time.perf_counter() - t0) / STEPS))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def ms_per_step(mode, world):
    env = dict(os.environ, WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", mode],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              stdout=subprocess.PIPE, universal_newlines=True)
             for r in range(world)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("%s at world size %d failed" % (mode, world))
    return float(outs[0].strip())


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("ddp cost: skipped (no torch for %s)" % sys.executable)
        return
    print("data parallel, ms per step (examples/torch_ddp.py's model, global batch %d, Gloo, "
          "CPU, 1 thread a rank, shards of %d, %d steps):" % (BATCH, SHARD, STEPS))
    print("%-10s %10s %10s %7s" % ("world size", "plain DDP", "repro.ddp", "cost"))
    for world in (1, 2, 4):
        plain = ms_per_step("plain", world)
        inv = ms_per_step("invariant", world)
        print("%-10d %10.2f %10.2f %6.1fx" % (world, plain, inv, inv / plain))
    print("repro.ddp pays one backward pass per shard (%d per step, split among the ranks) and "
          "an all-gather of every shard's gradient in place of DDP's all-reduce" % (BATCH // SHARD))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2])
    else:
        main()
