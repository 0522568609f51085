"""A plain PyTorch MLP whose products OpenBLAS splits across its threads,
so its bits at 1 and at 2 BLAS threads differ. Which products OpenBLAS
splits along their sums depends on the CPU's kernels (Debian's PyTorch
1.13 on libopenblas0-pthread 0.3.21): a 512-to-10 nn.Linear over a batch
of 256 differs on AMD Zen 3 and not on an Intel Xeon with AVX-512; a
3000-to-500 one on a single sample (a matrix-vector product) differs on
that Xeon. The model has both, so the test holds on either. The script
sets no thread count of its own: the BLAS pool is what the environment
makes it, which is what `repro check --threads` varies and what the
trace header records ("thread_pools"). --set steps=N (default 3)."""
import torch
import repro
import repro.torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(32, 512), torch.nn.Tanh(), torch.nn.Linear(512, 10))
        self.wide = torch.nn.Linear(3000, 500)

    def forward(self, x, probe):
        return self.mlp(x), self.wide(probe)


seed = repro.torch.seed(7)
steps = int(repro.RunEnv.setting("steps", "3"))
x, y = torch.randn(256, 32), torch.randint(0, 10, (256,))
probe = torch.randn(3000)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
repro.torch.start("blas_threads", model)
for step in range(steps):
    opt.zero_grad()
    logits, wide = model(x, probe)
    loss = torch.nn.functional.cross_entropy(logits, y) + 1e-3 * wide.square().mean()
    loss.backward()
    opt.step()
    repro.torch.record_step(model, loss, x, y)
