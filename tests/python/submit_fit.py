"""A small PyTorch submission (tests/check_pysubmit.c commits it in a
repository of its own, submits it with `python3 fit.py` and verifies it):
a linear model fitted to a noisy line for a few steps through the Python
client, its predictions written to preds.txt.

It trains on data drawn from the seed, so its trace is the same whatever
it predicts. Without REPRO_DATA it predicts inputs drawn from the seed too;
with REPRO_DATA (`repro submit|verify --data DIR`) it predicts DIR/test.txt
("x" per line): a host's hidden test inputs give predictions the submitter
never saw, from the same trained model.
"""
import os

import torch

import repro
import repro.torch

seed = repro.torch.seed(7)
model = torch.nn.Linear(1, 1)
x = torch.rand(32, 1)
y = 3 * x + 0.5 + 0.01 * torch.randn(32, 1)
test = torch.rand(8, 1)
data = os.environ.get("REPRO_DATA")
if data:
    with open(os.path.join(data, "test.txt")) as f:
        test = torch.tensor([[float(line)] for line in f if line.strip()])
opt = torch.optim.SGD(model.parameters(), lr=0.5)
steps = int(repro.RunEnv.setting("steps", 6))
repro.torch.start("pyfit", model, total_steps=steps)
for _ in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    repro.torch.record_step(model, loss, x, y)
with torch.no_grad(), open("preds.txt", "w") as out:
    for p in model(test).flatten().tolist():
        out.write("%.6f\n" % p)
