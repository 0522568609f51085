#!/usr/bin/python3
"""A small PyTorch MLP training loop recording its memory timeline through
python/repro/memory.py, for tests/check_memtl.c. Settings as key=value
arguments: zero=none|zero (zero_grad set_to_none or not), k=K (micro-batches
per update), batch=B (samples per micro-batch), precision=fp32|bf16 (CPU
autocast), steps=N, release=S (empty_cache after step S), fail=S (raise in
step S: the timeline must come out cut), close=exit (never close it: the
client writes it at exit), path=FILE (else
$REPRO_MEMORY_TIMELINE), record=1 (also a repro trace, for `repro run --`)."""
import contextlib
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import torch  # noqa: E402
import repro.memory  # noqa: E402

args = dict(a.split("=", 1) for a in sys.argv[1:])
zero_none = args.get("zero", "none") == "none"
k = int(args.get("k", "1"))
batch = int(args.get("batch", "64"))
bf16 = args.get("precision", "fp32") == "bf16"
steps = int(args.get("steps", "4"))
release = int(args.get("release", "0"))
fail = int(args.get("fail", "0"))
torch.manual_seed(1)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
rec = None
if args.get("record") == "1":
    import repro
    rec = repro.Recorder("memtl-run", 1, total_steps=steps)

timeline = repro.memory.Timeline(model, opt, path=args.get("path"), title="memtl_run.py",
                                 planned_steps=steps)
if args.get("close") == "exit":  # as a program that never closes it does
    timeline = contextlib.nullcontext(timeline)
with timeline as tl:
    for step in range(1, steps + 1):
        if step == fail:
            raise RuntimeError("planted failure in step %d" % step)
        for j in range(k):
            x = torch.randn(batch, 784)
            y = torch.randint(0, 10, (batch,))
            with tl.forward(autocast=bf16):
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits.float(), y) / k
            loss.backward()
        tl.peak()
        opt.step()
        opt.zero_grad(set_to_none=zero_none)
        if step == release:
            tl.release()
        tl.step(step, accumulation=k > 1)
        if rec:
            rec.tensor("loss", loss.detach().reshape(()))
            rec.step(step, float(loss))
if rec:
    rec.close()
print("memtl_run.py: %d steps" % steps)
