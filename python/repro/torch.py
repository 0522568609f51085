"""PyTorch module hooks: each module's output and input gradient as op outputs.

    import repro, repro.torch
    with repro.Recorder("mnist", env.seed) as rec:
        hooks = repro.torch.record_modules(model, rec)   # at REPRO_TRACE_LEVEL=op
        ... train: forward, backward, rec.step(...) ...

At trace level `op` (what `repro bisect` asks for) every submodule's forward
output is recorded as the op `fwd.<module path>` ("fwd.features.0") when the
module returns, and the gradient with respect to its input as
`bwd.<module path>.dx` when autograd has computed it -- in execution order,
the way repro's own kernels name their ops. `repro bisect -- python3 train.py`
then names the first module whose output differs between two runs, and
whether everything before it (its inputs) was identical. At any other level
no hook is registered: training runs at full speed and records nothing more.

Names are unique within a step, as the comparison matches ops by name: a
module called twice in a step (a shared activation, an evaluation pass)
records its second output as `fwd.<path>#2`. A name longer than the trace's
63 bytes keeps its phase and its end (`fwd.~...layer4.1.conv2`). Tensors of a
dtype a trace cannot hold (bool, complex) are skipped, never converted.
"""

import atexit
import contextlib
import sys

import repro

__all__ = ["record_modules", "record_step", "ModuleHooks", "seed", "start"]

_NAME_MAX = 63  # bytes, the trace's limit (repro_recorder_op)


def _trace_dtypes():
    import torch
    return (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
            torch.int64, torch.uint8)


def _tensors(value):
    """The tensors in a module's output, with the suffix each is named by:
    a tensor (""), or a tuple/list/dict of them (".0", ".1", ".key")."""
    import torch
    if isinstance(value, torch.Tensor):
        return [("", value)]
    if isinstance(value, (tuple, list)):
        return [("." + str(i), v) for i, v in enumerate(value) if isinstance(v, torch.Tensor)]
    if isinstance(value, dict):
        return [("." + str(k), v) for k, v in value.items() if isinstance(v, torch.Tensor)]
    return []


def _fit(name):
    """name within the trace's 63 bytes: the phase kept, then the name's end."""
    raw = name.encode()
    if len(raw) <= _NAME_MAX:
        return name
    phase = name.split(".", 1)[0] + ".~"
    keep = raw[len(raw) - (_NAME_MAX - len(phase)):].decode("utf-8", "ignore")
    return phase + keep


class _Inert:
    """What a hook becomes in a pickled model: nothing to record."""

    def __call__(self, *args):
        return None


class _Hook:
    """A hook that pickles as _Inert: `torch.save(model)` pickles the
    module with its hooks, and a closure (or the recorder behind it)
    cannot be pickled, so a script that saves its model failed at level
    op. The saved model records nothing when loaded."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)

    def __reduce__(self):
        return (_Inert, ())


class ModuleHooks:
    """The hooks record_modules registered: .remove() takes them off (also
    on leaving a `with` block); `with hooks.paused():` records nothing for a
    while (an evaluation pass that should not count)."""

    def __init__(self, recorder, no_grad=False):
        self._rec = recorder
        self._no_grad = no_grad  # also record passes under torch.no_grad()
        self._handles = []
        self._step = None   # the recorder's last ended step when _seen was filled
        self._seen = {}     # name -> times recorded in the current step
        self._paused = 0
        self.modules = []   # the module paths hooked, in registration order

    def _unique(self, name):
        step = getattr(self._rec, "last_step", None)
        if step != self._step:
            self._step, self._seen = step, {}
        n = self._seen.get(name, 0) + 1
        self._seen[name] = n
        return _fit(name if n == 1 else "%s#%d" % (name, n))

    def _record(self, base, tensors):
        if self._paused:
            return
        for suffix, t in tensors:
            if t.dtype not in _trace_dtypes():
                continue  # a dtype the trace cannot hold: skipped, not converted
            self._rec.op(self._unique(base + suffix), t)

    def _forward(self, path):
        def hook(module, inputs, output):
            import torch
            # (backward runs with grad mode off too: only forward asks)
            if self._no_grad or torch.is_grad_enabled():
                self._record("fwd." + path, _tensors(output))
        return hook

    def _backward(self, path):
        def hook(module, grad_input, grad_output):
            named = [(".dx" if i == 0 else ".dx%d" % i, g)
                     for i, g in enumerate(grad_input) if g is not None]
            self._record("bwd." + path, named)
        return hook

    def add(self, path, module):
        self._handles.append(module.register_forward_hook(_Hook(self._forward(path))))
        self._handles.append(module.register_full_backward_hook(_Hook(self._backward(path))))
        self.modules.append(path)

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    @contextlib.contextmanager
    def paused(self):
        self._paused += 1
        try:
            yield self
        finally:
            self._paused -= 1

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.remove()
        return False


def _record_state(model, recorder):
    """The model's parameters and buffers, as they are now, as tensors of
    the current step (input.state.<name>; bisect reads input* as inputs)."""
    for name, t in model.state_dict().items():
        if t.dtype in _trace_dtypes():
            recorder.tensor(_fit("input.state." + name), t)


def record_modules(model, recorder, names=None, no_grad=False):
    """Registers forward and full-backward hooks on every submodule of
    `model` (the model itself excluded), or on the modules whose paths are
    in `names` (a KeyError names one that does not exist). Returns the
    ModuleHooks. Hooks are registered only when the recorder is at trace
    level op (repro bisect's level): at any other level nothing is recorded
    and nothing slows training down. Passes under torch.no_grad() (an
    evaluation between steps) are not recorded unless no_grad=True.

    At every level, the model's state when this is called (its parameters
    and buffers, state_dict order) is recorded once, as the tensors
    input.state.<name> of the coming step: the first op that computes on
    an unseeded initialization is then reported as having different inputs
    ("already differs at step 1"), not as a nondeterministic module.

    A module that modifies its input in place (ReLU(inplace=True)) cannot
    carry a full backward hook (PyTorch refuses it during backward): pass
    `names` without it, or use the out-of-place form."""
    hooks = ModuleHooks(recorder, no_grad)
    modules = dict(model.named_modules())
    if names is not None:
        missing = [n for n in names if n not in modules]
        if missing:
            raise KeyError("no submodule named %s (the model has: %s)" % (
                ", ".join(missing), ", ".join(n for n in modules if n) or "none"))
        wanted = [(n, modules[n]) for n in names]
    else:
        wanted = [(n, m) for n, m in modules.items() if n]
    _record_state(model, recorder)
    if getattr(recorder, "level", repro.LEVEL_OP) != repro.LEVEL_OP:
        return hooks
    for path, module in wanted:
        hooks.add(path, module)
    _name_modules(recorder, wanted)
    return hooks


def _name_modules(recorder, wanted):
    """Each hooked module's class in the trace header ("modules": {path:
    class}), so that a report can say "fwd.0 (Linear)". Informational: a
    recorder past its first step, or one named already (a second
    record_modules), keeps what it has (the C library would refuse it and
    fail the recorder)."""
    if (not hasattr(recorder, "header_set") or getattr(recorder, "last_step", 0) != 0 or
            getattr(recorder, "_modules_named", False)):
        return
    recorder.header_set("modules", {p: type(m).__name__ for p, m in wanted})
    recorder._modules_named = True


def record_step(*args):
    """record_step([recorder,] model, loss, *batch) ends one training step
    in one line: the batch tensors given (batch.0, batch.1, ...: what bisect
    checks to say a module's inputs were identical), then the model's
    gradients, parameters and loss (repro.record_model), then the step,
    numbered one past the last. Without a recorder: the one start() opened."""
    if args and isinstance(args[0], repro.Recorder):
        recorder, args = args[0], args[1:]
    elif _started["recorder"] is not None:
        recorder = _started["recorder"]
    else:
        raise ValueError("record_step: no recorder given, and repro.torch.start() opened none")
    if len(args) < 2:
        raise TypeError("record_step: expected ([recorder,] model, loss, *batch)")
    model, loss, batch = args[0], args[1], args[2:]
    for i, t in enumerate(batch):
        recorder.tensor("batch.%d" % i, t)
    repro.record_model(recorder, model, loss)
    recorder.step(recorder.last_step + 1, float(loss))


def seed(default_seed=0, deterministic=True):
    """The run's seed -- repro's (--seed, REPRO_SEED) when repro runs the
    program, else default_seed -- with Python, NumPy and torch seeded from
    it and deterministic algorithms on (repro.seed_everything). Returns it:
    use it in place of torch.manual_seed(args.seed)."""
    run_seed = repro.RunEnv.read(default_seed).seed
    repro.seed_everything(run_seed, deterministic)
    return run_seed


# The recorder start() opened: record_step's default, finished at exit.
_started = {"recorder": None, "failed": False}


def _note_failure(hook):
    def excepthook(kind, value, tb):
        _started["failed"] = True
        hook(kind, value, tb)
    return excepthook


def _finish():
    """At interpreter exit: the trailer when the program ended normally; an
    unfinished trace (no trailer, which every reader reports as a run that
    did not finish) when an uncaught exception ended it."""
    rec, _started["recorder"] = _started["recorder"], None
    if rec is None:
        return
    if _started["failed"]:
        rec.abort()
    else:
        rec.close()


def start(experiment, model=None, config=None, **recorder_kwargs):
    """Opens the run's trace in one line, after the model is built: a
    repro.Recorder for `experiment` with the seed given to seed() (or
    seed_everything), module hooks on `model` (record_modules), and the
    recorder made record_step's default. The trace is closed when the
    program exits: with its trailer when it ends normally (sys.exit(0)
    included), unfinished when an uncaught exception ends it. Returns the
    recorder (close it yourself to end the trace earlier)."""
    if _started["recorder"] is not None:
        raise ValueError("repro.torch.start: a recorder is already open (one per program)")
    run_seed = repro._in_effect["seed"]
    if run_seed is None:
        run_seed = repro.RunEnv.read().seed
    rec = repro.Recorder(experiment, run_seed, config=config, **recorder_kwargs)
    if model is not None:
        record_modules(model, rec)
    _started["recorder"] = rec
    if not getattr(start, "_registered", False):
        sys.excepthook = _note_failure(sys.excepthook)
        atexit.register(_finish)
        start._registered = True
    return rec
