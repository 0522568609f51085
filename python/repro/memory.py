"""A PyTorch run's memory over steps, in the layout of repro's memory timeline.

    import repro.memory
    with repro.memory.Timeline(model, opt, title="mlp") as tl:   # $REPRO_MEMORY_TIMELINE
        for step in range(1, steps + 1):
            with tl.forward():                  # counts what autograd saves for backward
                loss = loss_fn(model(x), y)
            loss.backward()
            tl.peak()                           # after the backward: the step's peak
            opt.step()
            opt.zero_grad(set_to_none=True)
            tl.step(step)                       # between steps

`repro run --memory-timeline FILE -- python3 train.py` sets
$REPRO_MEMORY_TIMELINE and draws the file this writes (FILE.svg, or the
same JSON); without it (and no path given) every call does nothing.

What is recorded, per step, at its peak and between steps:
  parameters, gradients, optimizer state: the bytes of those tensors;
  activations: the bytes autograd saved for backward in the step's largest
    forward (torch.autograd.graph.saved_tensors_hooks; one storage counted
    once, the parameters' own storages not: they are parameters);
  working copies: of those, the bf16/fp16 tensors of a parameter's shape
    (autocast's casts of the weights);
  allocated, reserved: torch.cuda.memory_allocated / memory_reserved on
    CUDA; on the CPU, allocated is the sum of the tensors above and
    reserved the process's resident set (what the process holds from the
    system); on CUDA also the device's used bytes (torch.cuda.mem_get_info).
Marks: zero_grad = none when every gradient is None between steps, else
zero; accumulation boundaries (tl.step(..., accumulation=True)); working
copies under autocast (tl.forward(autocast=True)); checkpoints
(tl.mark("checkpoint")); tl.release() empties the CUDA cache (a mark on the
CPU, where nothing is cached).
"""

import atexit
import contextlib
import json
import os
import sys

__all__ = ["Timeline", "ENV"]

ENV = "REPRO_MEMORY_TIMELINE"
CATEGORIES = ["params", "grads", "optimizer", "activations", "working_copies"]
MARKS = ["zero_grad_none", "zero_grad_zero", "accumulation_boundary", "working_copies",
         "checkpoint", "release"]


def _rss():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return -1


def _storage(t):
    return (t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage")
            else t.storage().data_ptr())


def _bytes(t):
    return t.numel() * t.element_size() if t is not None else 0


class Timeline:
    """Per-step memory of a model and its optimizer (see the module's doc)."""

    def __init__(self, model=None, optimizer=None, path=None, title="", planned_steps=0):
        self.path = path if path is not None else os.environ.get(ENV) or None
        self.model, self.optimizer = model, optimizer
        self.title, self.planned_steps = title, int(planned_steps)
        self.steps = []
        self._peak = None
        self._act = 0       # the largest forward's saved bytes this step
        self._work = 0      # and the working copies among them
        self._marks = set()
        import torch
        self._torch = torch
        self.cuda = bool(model is not None and any(p.is_cuda for p in model.parameters()))
        self.steps.append(self._sample(0, at_peak=None))
        if self.path:  # a timeline nobody closed is still written at exit
            _open_timelines.append(self)
            _watch_exit()

    # -- what is measured --------------------------------------------------
    def _cats(self):
        params = grads = opt = 0
        if self.model is not None:
            for p in self.model.parameters():
                params += _bytes(p)
                grads += _bytes(p.grad)
        if self.optimizer is not None:
            for state in self.optimizer.state.values():
                for v in state.values():
                    if self._torch.is_tensor(v):
                        opt += _bytes(v)
        return {"params": params, "grads": grads, "optimizer": opt}

    def _totals(self, cats):
        if self.cuda:
            c = self._torch.cuda
            return c.memory_allocated(), c.memory_reserved()
        return sum(cats.values()), _rss()

    def _sample(self, step, at_peak):
        cats = self._cats()
        cats["activations"] = cats["working_copies"] = 0  # between steps, the graph is gone
        alloc, reserved = self._totals(cats)
        s = {"step": step, "allocated": alloc, "reserved": reserved, "at_end": cats,
             "measured_allocated": -1, "measured_reserved": -1, "measured_device_used": -1}
        if self.cuda:  # the whole device's view (cudaMemGetInfo), beside the cache's
            free, total = self._torch.cuda.mem_get_info()
            s["measured_device_used"] = total - free
        if at_peak is None:
            at_peak, peak_alloc, peak_res = dict(cats), alloc, reserved
        else:
            at_peak, peak_alloc, peak_res = at_peak
        s.update({"at_peak": at_peak, "peak_allocated": peak_alloc,
                  "peak_reserved": max(peak_res, reserved)})
        return s

    # -- the loop's calls --------------------------------------------------
    @contextlib.contextmanager
    def forward(self, autocast=False):
        """Around a forward pass: counts the bytes autograd saves for its
        backward (each storage once). autocast=True marks working copies."""
        if not self.path:
            yield
            return
        # A parameter autograd keeps (a weight for the input's gradient) is
        # counted as a parameter already.
        # A reduced-precision tensor of a parameter's shape (or its
        # transpose) is autocast's working copy of that parameter.
        params = list(self.model.parameters()) if self.model is not None else []
        seen = {_storage(p) for p in params}
        shapes = {tuple(p.shape) for p in params} | {tuple(p.shape)[::-1] for p in params}
        low = (self._torch.bfloat16, self._torch.float16)
        total = [0, 0]  # activations, working copies

        def pack(t):
            key = _storage(t)
            if key not in seen:
                seen.add(key)
                total[t.dtype in low and tuple(t.shape) in shapes] += _bytes(t)
            return t

        with self._torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            yield
        if total[0] > self._act:
            self._act, self._work = total
        if autocast:
            self._marks.add("working_copies")

    def peak(self):
        """After the backward (gradients and the graph's activations live)."""
        if not self.path:
            return
        cats = self._cats()
        cats["activations"], cats["working_copies"] = self._act, self._work
        alloc, reserved = self._totals(cats)
        if self.cuda:
            alloc = max(alloc, self._torch.cuda.max_memory_allocated())
        elif alloc >= 0:
            alloc = sum(cats.values())
        self._peak = (cats, alloc, reserved)

    def mark(self, what):
        if what not in MARKS:
            raise ValueError("repro.memory: unknown mark %r (one of %s)" % (what, MARKS))
        self._marks.add(what)

    def release(self):
        """Returns cached memory to the system (torch.cuda.empty_cache)."""
        if self.cuda:
            self._torch.cuda.empty_cache()
        self._marks.add("release")

    def step(self, step, accumulation=False):
        """The end of step `step`, between steps."""
        if not self.path:
            return
        s = self._sample(int(step), self._peak)
        marks = set(self._marks)
        if self.model is not None:
            grads = [p.grad for p in self.model.parameters()]
            marks.add("zero_grad_none" if all(g is None for g in grads) else "zero_grad_zero")
        if accumulation:
            marks.add("accumulation_boundary")
        s["marks"] = [m for m in MARKS if m in marks]
        self.steps.append(s)
        self._peak, self._act, self._work, self._marks = None, 0, 0, set()
        if self.cuda:
            self._torch.cuda.reset_peak_memory_stats()

    # -- the file ------------------------------------------------------------
    def close(self, cut=False, reason=""):
        """Writes the timeline (marked cut when the run stopped early)."""
        if not self.path:
            return None
        last = self.steps[-1]["step"]
        cut = bool(cut or (self.planned_steps and last < self.planned_steps))
        own = {"version": 1, "source": "python", "title": self.title,
               "measured": "torch.cuda" if self.cuda else "process resident set (as reserved)",
               "cut": cut, "cut_reason": reason if cut else "",
               "planned_steps": self.planned_steps, "events_dropped": False,
               "categories": CATEGORIES, "marks": MARKS, "steps": self.steps}
        doc = {"segments": [], "device_traces": [[]], "repro_memory_timeline": own}
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.path)
        path, self.path = self.path, None
        if self in _open_timelines:
            _open_timelines.remove(self)
        return path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.close(cut=True, reason="%s: %s" % (exc_type.__name__, exc))
        return False


# Timelines not closed yet: written at interpreter exit, marked cut when an
# uncaught exception ended the program (as repro.torch.start's trace is),
# so a program that fails after training still leaves its picture.
_open_timelines = []
_exit_state = {"watching": False, "failure": ""}


def _watch_exit():
    if _exit_state["watching"]:
        return
    _exit_state["watching"] = True
    hook = sys.excepthook

    def excepthook(kind, value, tb):
        _exit_state["failure"] = "%s: %s" % (kind.__name__, value)
        hook(kind, value, tb)
    sys.excepthook = excepthook
    atexit.register(_close_open_timelines)


def _close_open_timelines():
    why = _exit_state["failure"]
    for tl in list(_open_timelines):
        tl.close(cut=bool(why), reason=why)
