"""A small model with one layer made nondeterministic on purpose:
features.2 sums groups of features with index_add_ in an order drawn from
os.urandom (--set shuffle=0 draws it from the seed: the negative control).
--set init=unseeded initializes the model from os.urandom instead of the
seed (and shuffle=0 then leaves that as the only difference)."""
import os
import torch
import repro
import repro.torch


class ShuffledGroupSum(torch.nn.Module):
    """Sums each group of `size` consecutive features with index_add_, the
    additions in a shuffled order: float addition is not associative."""

    def __init__(self, features, size, seeded):
        super().__init__()
        self.register_buffer("group", torch.arange(features) // size)
        self.groups, self.seeded = features // size, seeded

    def forward(self, x):
        g = torch.Generator()
        g.manual_seed(0 if self.seeded else int.from_bytes(os.urandom(8), "little") >> 1)
        order = torch.randperm(x.shape[1], generator=g)
        out = torch.zeros(x.shape[0], self.groups, dtype=x.dtype)
        return out.index_add(1, self.group[order], x[:, order])


env = repro.RunEnv.read(default_seed=7)
repro.seed_everything(env.seed)
seeded = repro.RunEnv.setting("shuffle", "1") == "0"
x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
if repro.RunEnv.setting("init", "seeded") == "unseeded":
    torch.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
model = torch.nn.Sequential()
model.add_module("features", torch.nn.Sequential(
    torch.nn.Linear(16, 256), torch.nn.Tanh(), ShuffledGroupSum(256, 32, seeded)))
model.add_module("classifier", torch.nn.Sequential(
    torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with repro.Recorder("planted", env.seed) as rec:
    repro.torch.record_modules(model, rec)
    for step in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        repro.torch.record_step(rec, model, loss, x, y)
