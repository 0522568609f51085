"""Recording a model's eval forward for given probe inputs, with the values,
so that another implementation of the same model (a C port, an inference
engine) can be compared with it under a tolerance:

    repro.record_forward(model, x, "torch/trace.jsonl", step=21)
    # repro diff c/trace.jsonl torch/trace.jsonl --tolerance ulp:64 --map names.map

Writes one step: the probes as `infer.input` and the model's outputs as
`infer.output` (`.0`, `.1`, ... for a list of probe batches), each with
its values in dump/step-NNNNNN/ beside the trace (docs/tolerance.md).
"""

__all__ = ["record_forward"]


def _names(prefix, n):
    return [prefix] if n == 1 else ["%s.%d" % (prefix, i) for i in range(n)]


def record_forward(model, probes, trace_path, experiment="forward", step=1, seed=0,
                   input_name="infer.input", output_name="infer.output", values=True):
    """Runs model.eval() under torch.no_grad() on each probe batch (a tensor,
    or a list of them) and records inputs and outputs as step `step` of a
    new trace at trace_path (a trace of that one step: it lines up with a
    trace resumed at step - 1). Returns the final chain digest (hex). The
    model's training mode is restored afterwards."""
    import torch
    from repro import LEVEL_TENSOR, Recorder
    batches = list(probes) if isinstance(probes, (list, tuple)) else [probes]
    if not batches:
        raise ValueError("record_forward: no probe batch")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            outputs = [model(x) for x in batches]
    finally:
        model.train(was_training)
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError("record_forward: step must be an int >= 1, not %r" % (step,))
    rec = Recorder(experiment, seed, trace_path=trace_path, level=LEVEL_TENSOR, every=1,
                   total_steps=step, start_step=step - 1, values=values)
    try:
        for name, x in zip(_names(input_name, len(batches)), batches):
            rec.tensor(name, x)
        for name, y in zip(_names(output_name, len(outputs)), outputs):
            rec.tensor(name, y)
        rec.step(step, 0.0)
    except BaseException:
        rec.abort()
        raise
    return rec.close()
