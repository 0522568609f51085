#!/usr/bin/python3
"""The built-in MLP's forward in stock PyTorch, with the weights of a repro
checkpoint: the "original" side of a port-vs-original comparison
(docs/tolerance.md).

    python3 examples/torch/mlp_forward.py CKPT PROBES.npy TRACE [--step N]

loads CKPT's fc1, fc2, ... (repro's names and [out, in] layout are
PyTorch's Linear), builds Linear-ReLU-...-Linear (eval: no dropout), runs
it on PROBES.npy (float32 [batch, 784], e.g. a `repro run --dump` batch.x)
and records step N (default: the checkpoint's step + 1, the step whose
forward used those weights) with repro.record_forward: `infer.input` and
`infer.output`, with values beside TRACE. PyTorch runs one thread.
"""
import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import repro  # noqa: E402


class MLP(torch.nn.Module):
    """fc1 ... fcK with ReLU between them, as repro's `type = mlp`."""

    def __init__(self, params):
        super().__init__()
        self.names = []
        k = 1
        while "fc%d.weight" % k in params:
            w = params["fc%d.weight" % k]
            layer = torch.nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                layer.weight.copy_(torch.from_numpy(w))
                layer.bias.copy_(torch.from_numpy(params["fc%d.bias" % k]))
            setattr(self, "fc%d" % k, layer)
            self.names.append("fc%d" % k)
            k += 1
        if not self.names:
            raise ValueError("the checkpoint has no fc1.weight: not an MLP")

    def forward(self, x):
        x = x.reshape(x.shape[0], -1)
        for i, name in enumerate(self.names):
            x = getattr(self, name)(x)
            if i + 1 < len(self.names):
                x = torch.relu(x)
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("probes")
    ap.add_argument("trace")
    ap.add_argument("--step", type=int, default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ck = repro.load_checkpoint(a.checkpoint)
    model = MLP(ck["params"])
    x = torch.from_numpy(np.load(a.probes).astype(np.float32, copy=False))
    step = a.step if a.step is not None else ck["step"] + 1
    chain = repro.record_forward(model, x, a.trace, experiment="mlp-torch-forward", step=step)
    print("recorded step %d of %s: chain %s" % (step, a.trace, chain))


if __name__ == "__main__":
    main()
