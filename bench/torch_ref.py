#!/usr/bin/env python3
"""PyTorch reference for `make bench`: trains the architectures of
experiments/mlp.ini and experiments/cnn.ini in stock PyTorch, same batch
size and optimizer, and reports steps/s, so that repro's figures have a
yardstick measured on the same machine in the same run.

  MLP  784-256-128-10, ReLU, dropout 0.1 after each hidden ReLU,
       SGD lr 0.05 momentum 0.9, batch 64
  CNN  conv 1->8 3x3 (no padding), ReLU, maxpool 2, conv 8->16 3x3, ReLU,
       maxpool 2, fc 400->10, AdamW lr 0.003 weight decay 0.01, batch 64

Both train on in-memory synthetic batches (no data loader, no hashing),
cross-entropy loss, zero_grad / backward / step per step, as a PyTorch
user writes it.

The thread count is fixed per process, before torch is imported
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS), and
torch.set_num_threads: pass --threads N.

Settings (--settings, printed in the banner):
  best     (the default) PyTorch at its best here: the thread counts above
           plus OMP_WAIT_POLICY=PASSIVE. PyTorch's OpenMP threads otherwise
           spin-wait between parallel regions and fight OpenBLAS's own
           threads for the cores: measured on this 2-core machine, the
           2-thread MLP went from ~30-300 steps/s (spinning, depending on
           the load) to ~220-450, the 2-thread CNN from ~25-50 to ~75-170;
           1 thread is unchanged within noise. Also tried, no better than
           PASSIVE: GOMP_SPINCOUNT=0 alone, and OpenBLAS/MKL held to 1 thread
           under torch's 2 (better for the MLP in one run, worse for the CNN).
  default  the thread counts only, OpenMP's default wait policy: the
           column make bench showed before, kept as a reference line.

Modes:
  --info            print the build (torch.__config__.show()) and the BLAS
  --arch A --steps N [--runs R]
                    R timed runs of N steps (after a warm-up), steps/s each
  --serve           read "ARCH STEPS" lines on stdin, answer one steps/s
                    line each: bench/train.c drives it, interleaving its
                    runs with repro's so machine noise hits both alike.
"""
import argparse
import os
import sys
import time


def set_threads_env(n, settings):
    """Fixes the environment the OpenMP and BLAS runtimes read when torch
    loads them; returns it as "VAR=value ..." for the banner."""
    env = {var: str(n) for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                   "MKL_NUM_THREADS")}
    if settings == "best":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    else:
        os.environ.pop("OMP_WAIT_POLICY", None)
    os.environ.update(env)
    return " ".join("%s=%s" % kv for kv in sorted(env.items()))


def blas_name():
    """The BLAS library this process has mapped (libblas via alternatives
    is OpenBLAS on Debian's python3-torch)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                if any(k in base for k in ("blas", "mkl", "lapack")):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return ", ".join(sorted(libs)) or "none mapped"


def build(arch, torch, nn):
    if arch == "mlp":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(128, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    elif arch == "cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(400, 10))
        opt = torch.optim.AdamW(model.parameters(), lr=0.003, weight_decay=0.01)
    else:
        raise SystemExit("torch_ref: unknown arch %r (mlp, cnn)" % arch)
    return model, opt


class Trainer:
    def __init__(self, arch, torch, nn):
        torch.manual_seed(1234)
        self.torch = torch
        self.model, self.opt = build(arch, torch, nn)
        self.model.train()
        self.loss_fn = nn.CrossEntropyLoss()
        g = torch.Generator().manual_seed(1)
        self.xs = [torch.rand(64, 1, 28, 28, generator=g) for _ in range(16)]
        self.ys = [torch.randint(0, 10, (64,), generator=g) for _ in range(16)]
        self.i = 0
        self.steps(3)  # warm-up: first touch, allocator, kernel selection

    def steps(self, n):
        for _ in range(n):
            x, y = self.xs[self.i % 16], self.ys[self.i % 16]
            self.i += 1
            self.opt.zero_grad()
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            self.opt.step()

    def rate(self, n):
        t0 = time.perf_counter()
        self.steps(n)
        return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--arch", default="mlp")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--info", action="store_true")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--settings", choices=("best", "default"), default="best")
    a = ap.parse_args()
    env = set_threads_env(a.threads, a.settings)
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:
        print("torch_ref: PyTorch not found (%s)" % e, file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    if a.info:
        print("torch %s, %d thread(s), BLAS: %s, %s settings: %s" % (
            torch.__version__, torch.get_num_threads(), blas_name(), a.settings, env))
        print(torch.__config__.show().rstrip())
        return 0
    trainers = {}
    if a.serve:
        print("ready torch %s, %d thread(s), BLAS: %s, %s settings: %s" % (
            torch.__version__, torch.get_num_threads(), blas_name(), a.settings, env),
              flush=True)
        for line in sys.stdin:
            parts = line.split()
            if len(parts) != 2:
                print("error: want ARCH STEPS", flush=True)
                continue
            arch, n = parts[0], int(parts[1])
            if arch not in trainers:
                trainers[arch] = Trainer(arch, torch, nn)
            print("%.3f" % trainers[arch].rate(n), flush=True)
        return 0
    t = Trainer(a.arch, torch, nn)
    for _ in range(a.runs):
        print("%.3f" % t.rate(a.steps), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
