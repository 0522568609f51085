"""A plain PyTorch MLP whose output layer OpenBLAS splits across its
threads: a 512-to-10 nn.Linear over a batch of 256 gives other bits at 1
and at 2 BLAS threads (measured with Debian's PyTorch 1.13 and
libopenblas0-pthread; a 512x512 layer at the same batch does not). The
script sets no thread count of its own: the BLAS pool is what the
environment makes it, which is what `repro check --threads` varies and
what the trace header records ("thread_pools"). --set steps=N (default 3)."""
import torch
import repro
import repro.torch

seed = repro.torch.seed(7)
steps = int(repro.RunEnv.setting("steps", "3"))
x, y = torch.randn(256, 32), torch.randint(0, 10, (256,))
model = torch.nn.Sequential(torch.nn.Linear(32, 512), torch.nn.Tanh(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
repro.torch.start("blas_threads", model)
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    repro.torch.record_step(model, loss, x, y)
