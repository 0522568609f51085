#!/usr/bin/python3
"""Data-parallel training (torch.distributed, Gloo, CPU) whose bits do not
depend on the world size -- and, with --plain, the same model trained with
DistributedDataParallel, whose bits do.

    repro check --ranks 1,2,4 -- python3 examples/torch_ddp.py           # exit 0
    repro check --ranks 1,2 -- python3 examples/torch_ddp.py --plain     # exit 1, world size

repro starts it with the torch.distributed environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; docs/PROTOCOL.md), one process per rank under
`--ranks N`. Every rank builds the same global batch of --batch samples
(synthetic, from the seed) each step:

  default: repro.ddp.InvariantGradients cuts it into shards of
    --shard-size samples, each rank computes its shards' gradients one by
    one, and every rank adds all the shards' gradients in one fixed tree
    (docs/python.md, "Data parallel");
  --plain: rank r takes the r-th contiguous block of the batch, and DDP
    averages the blocks' gradients with its all-reduce;
  --no-group: one process, no torch.distributed at all (the helper at world
    size 1): the same bits as the default at any world size.

Rank 0 records (gradients, parameters, the global loss); the other ranks'
parameters are checked against rank 0's after every step by the client.
Settings: --steps N (or repro's --steps), --batch B (default 256),
--shard-size S (default 16), --lr.
"""
import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import repro  # noqa: E402
import repro.ddp  # noqa: E402
import repro.torch  # noqa: E402


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plain", action="store_true", help="DistributedDataParallel as it is")
    ap.add_argument("--no-group", action="store_true", help="one process, no process group")
    ap.add_argument("--steps", type=int, default=int(repro.RunEnv.setting("steps", "5")))
    ap.add_argument("--batch", type=int, default=256, help="the global batch")
    ap.add_argument("--shard-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.1)
    return ap.parse_args()


def model_for(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))


def global_batch(seed, step, n):
    """The step's global batch, the same on every rank: 8 class prototypes
    plus noise."""
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(8, 32, generator=g)
    g.manual_seed(seed * 1000003 + step)
    y = torch.randint(0, 8, (n,), generator=g)
    return protos[y] + 0.7 * torch.randn(n, 32, generator=g), y


def loss_of(model, x, y):
    return F.cross_entropy(model(x), y)


def main():
    args = parse()
    seed = repro.torch.seed(1234)
    torch.set_num_threads(repro.RunEnv.read().threads)
    if not args.no_group:
        # The group from the environment repro sets; a rank that never joins
        # is not waited for half an hour.
        import datetime
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = repro.ddp.world()
    if args.batch % world:
        sys.exit("torch_ddp.py: a global batch of %d samples does not divide among %d ranks: "
                 "choose --ranks that divide %d (or --batch)" % (args.batch, world, args.batch))
    model = model_for(seed)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    if args.plain:
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        block = args.batch // world
    else:
        try:
            grads = repro.ddp.InvariantGradients(model, args.shard_size)
            grads.shards(args.batch)
        except ValueError as e:
            sys.exit("torch_ddp.py: %s" % e)
    config = {"batch": args.batch, "shard_size": args.shard_size, "lr": args.lr}
    with repro.Recorder("torch_ddp", seed, config=config, total_steps=args.steps) as rec:
        for step in range(1, args.steps + 1):
            x, y = global_batch(seed, step, args.batch)
            opt.zero_grad()
            if args.plain:
                mine = slice(rank * block, (rank + 1) * block)
                loss = loss_of(ddp, x[mine], y[mine])
                loss.backward()  # DDP: the all-reduce of the blocks' gradients, / world
                loss = loss.detach()
                if world > 1:  # the mean of the blocks' losses, for the record
                    dist.all_reduce(loss)
                    loss /= world
            else:
                loss = grads.backward(loss_of, x, y)
            opt.step()
            repro.record_model(rec, model, loss)
            rec.step(step, float(loss))
    if not args.no_group:
        # Tear DDP's reducer down while every rank is still here: left to
        # the end of main(), its Gloo group was released after rank 0 had
        # exited, and a rank could spin there (1 run in 6 hung on 2 cores).
        dist.barrier()
        if args.plain:
            del ddp
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
