"""repro.torch.record_modules on a small model, one line per fact for
tests/check_pyclient.c: the op names of step 1 in execution order, what a
level other than op records, the named subset, no_grad passes, an unknown
name, and a name past 63 bytes."""
import json
import os
import tempfile

import torch

import repro
import repro.torch

torch.manual_seed(0)
act = torch.nn.Tanh()  # shared: called twice in a step


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Linear(4, 6), act)
        self.head = torch.nn.Linear(6, 2)
        self.act = act

    def forward(self, x):
        return self.act(self.head(self.features(x)))


def run(model, level, **kw):
    """Two steps (each with an evaluation pass under no_grad); the op names
    and tensor names of each step."""
    path = os.path.join(tempfile.mkdtemp(), "t.jsonl")
    x = torch.randn(3, 4)
    with repro.Recorder("names", 1, trace_path=path, level=level, every=1) as rec:
        with repro.torch.record_modules(model, rec, **kw):
            for _ in range(2):
                loss = model(x).sum()
                loss.backward()
                with torch.no_grad():
                    model(x)
                repro.torch.record_step(rec, model, loss, x)
    steps = [json.loads(line) for line in open(path)][1:-1]
    return ([[o["name"] for o in s.get("ops", [])] for s in steps],
            [[t["name"] for t in s.get("tensors", [])] for s in steps])


ops, tensors = run(Net(), repro.LEVEL_OP)
print("step1 ops:", " ".join(ops[0]))
print("step2 same:", ops[1] == ops[0])
print("step1 tensors:", " ".join(tensors[0]))
print("step2 tensors:", " ".join(tensors[1]))
print("tensor level ops:", run(Net(), repro.LEVEL_TENSOR)[0])
print("names=[head]:", " ".join(run(Net(), repro.LEVEL_OP, names=["head"])[0][0]))
print("no_grad=True:", " ".join(run(Net(), repro.LEVEL_OP, names=["head"], no_grad=True)[0][0]))
try:
    repro.torch.record_modules(Net(), None, names=["head", "nope"])
except KeyError as e:
    print("unknown:", e.args[0], flush=True)
deep = torch.nn.Sequential()  # a parameterless module's path past 63 bytes
deep.add_module("lin", torch.nn.Linear(4, 2))
deep.add_module("a_rather_long_module_name_" * 3 + "end", torch.nn.Tanh())
print("long:", " ".join(run(deep, repro.LEVEL_OP)[0][0]))
# after remove(): no op recorded
m = Net()
path = os.path.join(tempfile.mkdtemp(), "r.jsonl")
with repro.Recorder("names", 1, trace_path=path, level=repro.LEVEL_OP, every=1) as rec:
    repro.torch.record_modules(m, rec).remove()
    repro.torch.record_step(rec, m, m(torch.randn(3, 4)).sum())
print("removed:", [json.loads(line) for line in open(path)][1].get("ops", []))
