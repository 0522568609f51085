#!/usr/bin/python3
"""The built-in MLP's architecture (784-256-128-10, ReLU, dropout 0.1, SGD
lr 0.05 momentum 0.9, batch 64) trained in stock PyTorch, recording every
step through repro's Python client -- so `repro check -- python3 THIS`
certifies it like repro's own experiments.

Settings come from the runner protocol (REPRO_SEED, REPRO_THREADS,
REPRO_WORKERS, REPRO_BATCH_SIZE; --set steps=N, --set recommended=0|1):
  REPRO_BATCH_SIZE=N (`--set batch_size=N`, or `repro check --batch-invariance
  --batch-sizes 1,64 -- python3 THIS`): after training, the model in eval
  mode evaluates a fixed held-out set (rows=R samples, default 256) in
  batches of N and records each sample's logits as the tensor row.<index>
  in the last step, for repro to compare sample by sample across batch
  sizes (docs/PROTOCOL.md); training is unchanged by it (its batch is
  train_batch=B, default 64). Unset: no held-out rows, the run is exactly
  what it was before;
  recommended=1 (default) follows PyTorch's reproducibility notes: seed
  everything, deterministic algorithms, a seeded DataLoader generator and
  worker_init_fn;
  torch.set_num_threads(REPRO_THREADS) always, so `--threads 1,2` asks
  whether the thread count changes the bits;
  clip=C clips the gradient norm to C (torch.nn.utils.clip_grad_norm_);
  l1=L adds L * sum |w| over all parameters to the loss (one big reduction).

The data are synthetic (10 class prototypes plus noise, from the seed), so
nothing is downloaded.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import torch  # noqa: E402
import repro  # noqa: E402

env = repro.RunEnv.read(default_seed=1234)
steps = int(repro.RunEnv.setting("steps", "100"))
recommended = repro.RunEnv.setting("recommended", "1") == "1"
clip = float(repro.RunEnv.setting("clip", "0"))  # gradient-norm clipping (0: off)
l1 = float(repro.RunEnv.setting("l1", "0"))      # L1 penalty on all parameters (0: off)
batch = int(repro.RunEnv.setting("train_batch", "64"))  # training batch, whatever REPRO_BATCH_SIZE
eval_batch = env.batch_size  # 0 (unset): no held-out rows
eval_rows = int(repro.RunEnv.setting("rows", "256"))
torch.set_num_threads(env.threads)
if recommended:
    repro.seed_everything(env.seed)
else:
    torch.manual_seed(env.seed)


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    protos = torch.rand(10, 784, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    x = protos[y] + 0.5 * torch.randn(n, 784, generator=g)
    return torch.utils.data.TensorDataset(x, y)


def heldout(n, seed):
    """n samples of the same classes (the prototypes of `seed`) from their own
    stream: the same set in every run, whatever the batch size."""
    protos = torch.rand(10, 784, generator=torch.Generator().manual_seed(seed))
    g = torch.Generator().manual_seed(seed + 1)
    y = torch.randint(0, 10, (n,), generator=g)
    return protos[y] + 0.5 * torch.randn(n, 784, generator=g)


def record_rows(rec, model, x, eval_batch):
    """Eval mode (no dropout), batches of eval_batch: each sample's logits
    recorded as its own row, named by its index in the held-out set."""
    model.eval()
    with torch.no_grad():
        for start in range(0, x.shape[0], eval_batch):
            logits = model(x[start:start + eval_batch])
            for i in range(logits.shape[0]):
                rec.tensor("row.%d" % (start + i), logits[i])
    model.train()


data = synthetic(8192, env.seed)
loader = torch.utils.data.DataLoader(
    data, batch_size=batch, shuffle=True, num_workers=env.workers, drop_last=True,
    generator=repro.data_generator(env.seed) if recommended else None,
    worker_init_fn=repro.worker_init_fn if recommended else None)
model = torch.nn.Sequential(
    torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Dropout(0.1),
    torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Dropout(0.1),
    torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
config = {"model": "mlp 784-256-128-10", "dropout": 0.1, "lr": 0.05, "momentum": 0.9,
          "batch": batch, "recommended": recommended, "clip": clip, "l1": l1, "torch": torch.__version__}

step = 0
with repro.Recorder("torch-mlp", env.seed, config=config, total_steps=steps) as rec:
    while step < steps:
        for x, y in loader:
            step += 1
            opt.zero_grad(set_to_none=True)
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            if l1 > 0:
                # One sum over all 235,146 parameters: PyTorch's CPU sum splits
                # it across threads, so its last bits depend on the thread count.
                loss = loss + l1 * torch.cat([p.flatten() for p in model.parameters()]).abs().sum()
            loss.backward()
            if clip > 0:
                # The total norm is a parallel reduction over every gradient
                # element: its last bits may depend on the thread count.
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            rec.tensor("batch.x", x)
            rec.tensor("batch.y", y)
            rec.tensor("logits", logits)
            opt.step()
            repro.record_model(rec, model, loss)
            if eval_batch and step == steps:
                record_rows(rec, model, heldout(eval_rows, env.seed), eval_batch)
            rec.step(step, float(loss))
            if step == steps:
                break
    chain = rec.close()
print("torch-mlp: %d steps, loss %.4f, threads %d, chain %s" % (steps, float(loss), env.threads,
                                                               chain))
