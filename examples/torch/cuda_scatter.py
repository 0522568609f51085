#!/usr/bin/python3
"""PyTorch on the GPU under `repro check`: a small classifier whose loss has
a per-class feature-sum term computed with index_add_ over many repeated
indices (a scatter-add: 4096 samples into 10 class rows), recorded every
step through repro's Python client (CUDA tensors are copied to the host for
hashing).

    repro check -- python3 examples/torch/cuda_scatter.py --device cuda
        torch.use_deterministic_algorithms(True): PyTorch documents that
        index_add_ on a CUDA tensor then takes a deterministic path, so the
        runs agree bit for bit (exit 0);
    ... --device cuda --nondeterministic
        deterministic algorithms off: index_add_ on CUDA adds with atomics
        in whatever order the threads arrive (PyTorch's reproducibility
        notes list it as nondeterministic), so the runs differ, and repro
        names step 1 and the tensor class_sums (recorded first in the step)
        as where they diverge (exit 1).

tests/gpu/run.sh runs both. On the CPU (--device cpu) both variants are
deterministic. Settings: --set steps=N (REPRO_SET_STEPS, default 20).
Everything is synthetic and seeded; nothing is downloaded.
"""
import argparse
import os
import sys

# cuBLAS's deterministic mode needs a fixed workspace (PyTorch raises an
# error under use_deterministic_algorithms(True) without it); set before
# CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import torch  # noqa: E402  (before repro: its libstdc++ is loaded first)
import repro  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
ap.add_argument("--nondeterministic", action="store_true",
                help="leave PyTorch's nondeterministic CUDA kernels (index_add_'s atomics) on")
args = ap.parse_args()
if args.device == "cuda" and not torch.cuda.is_available():
    sys.exit("cuda_scatter: no CUDA device visible to PyTorch")

env = repro.RunEnv.read(default_seed=1234)
steps = int(repro.RunEnv.setting("steps", "20"))
repro.seed_everything(env.seed, deterministic=not args.nondeterministic)
if args.nondeterministic:
    torch.use_deterministic_algorithms(False)
dev = torch.device(args.device)

CLASSES, FEATURES, SAMPLES, BATCH = 10, 256, 4096, 256
g = torch.Generator().manual_seed(env.seed)
protos = torch.rand(CLASSES, 784, generator=g)
labels = torch.randint(0, CLASSES, (SAMPLES,), generator=g)
inputs = protos[labels] + 0.5 * torch.randn(SAMPLES, 784, generator=g)
inputs, labels = inputs.to(dev), labels.to(dev)

model = torch.nn.Sequential(torch.nn.Linear(784, FEATURES), torch.nn.ReLU(),
                            torch.nn.Linear(FEATURES, CLASSES)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
config = {"model": "784-256-10 + class-sum term", "device": args.device,
          "nondeterministic": args.nondeterministic, "torch": torch.__version__}

with repro.Recorder("torch-cuda-scatter", env.seed, config=config, total_steps=steps) as rec:
    for step in range(1, steps + 1):
        opt.zero_grad(set_to_none=True)
        feats = model[1](model[0](inputs))  # every sample's features
        # per-class sums of the features: 4096 rows added into 10, the
        # repeated indices that make CUDA's atomic index_add_ order-dependent
        class_sums = torch.zeros(CLASSES, FEATURES, device=dev).index_add_(0, labels, feats)
        start = (step - 1) * BATCH % SAMPLES
        logits = model[2](feats[start:start + BATCH])
        # cross-entropy through a one-hot mask: elementwise ops and plain
        # reductions only, so index_add_ is the one scatter in the step
        onehot = torch.nn.functional.one_hot(labels[start:start + BATCH], CLASSES).to(logits.dtype)
        xent = -(torch.log_softmax(logits, dim=1) * onehot).sum(dim=1).mean()
        loss = xent + 1e-6 * class_sums.pow(2).mean()
        loss.backward()
        rec.tensor("class_sums", class_sums.detach())
        rec.tensor("logits", logits.detach())
        opt.step()
        repro.record_model(rec, model, loss)
        rec.step(step, float(loss))
    chain = rec.close()
print("torch-cuda-scatter: %d steps on %s, loss %.4f, chain %s" % (steps, args.device,
                                                                 float(loss), chain))
