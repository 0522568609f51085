"""repro's Python client: record tensors from PyTorch or NumPy into a repro trace.

A ctypes binding over librepro.so -- no compiled extension, no dependency
beyond the standard library (NumPy and PyTorch are used when present). The
digests are computed by the same C code that repro's own workload and C
programs use, so a trace written here compares bit for bit with any other.

    import repro
    env = repro.RunEnv.read(default_seed=1234)   # REPRO_SEED, REPRO_THREADS, ...
    repro.seed_everything(env.seed)
    with repro.Recorder("mlp", env.seed, config={"lr": 0.1}) as rec:
        for step in range(1, steps + 1):
            loss = train_step()
            repro.record_model(rec, model, loss)   # params, grads, loss
            rec.step(step, float(loss))

The library is found through $REPRO_LIB, then next to this package
(../../build/librepro.so in a source tree; ../../../librepro.so where
`make install` put both, PREFIX/lib/python3.X/dist-packages/repro/ and
PREFIX/lib/), then by its soname librepro.so.0 through the loader's cache
(which `make install` refreshes for /usr and /usr/local) and
LD_LIBRARY_PATH, then /usr/local/lib/librepro.so.0 (the default prefix, for
a client that pip installed in a virtualenv), then ctypes.util.find_library.
repro.LIBRARY says which.

__version__ is repro's version; PROTOCOL is the client protocol: what this
client records and how (names, order, the hooks of repro.torch, the seeding
of seed_everything). Every trace it writes says both in its header
("client"), and `repro verify` re-runs a program only with a client of the
same protocol.
"""

import ctypes
import ctypes.util
import json
import operator
import os
import random
import sys

from repro import pools as _pools

__version__ = "0.1.0"  # repro's (harness/util/version.h; a test holds them equal)
PROTOCOL = 1           # the client protocol (REPRO_CLIENT_PROTOCOL in version.h)

__all__ = ["Recorder", "RunEnv", "ReproError", "tensor_digest", "record_model", "loader_kwargs",
           "seed_everything", "worker_init_fn", "data_generator", "record_forward",
           "load_checkpoint", "LEVEL_STEP", "LEVEL_TENSOR", "LEVEL_OP"]

LEVEL_STEP, LEVEL_TENSOR, LEVEL_OP = 0, 1, 2
_DTYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3, "i32": 4, "i64": 5, "u8": 6, "u32": 7}


class ReproError(RuntimeError):
    """A librepro call failed: .code is the negative REPRO_E* code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _find_library():
    cands = []
    if os.environ.get("REPRO_LIB"):
        cands.append(os.environ["REPRO_LIB"])
    here = os.path.dirname(os.path.abspath(__file__))
    cands.append(os.path.join(here, "..", "..", "build", "librepro.so"))
    cands.append(os.path.join(here, "..", "..", "..", "librepro.so"))  # installed
    cands.append("librepro.so.0")                  # the loader's cache, LD_LIBRARY_PATH
    cands.append("/usr/local/lib/librepro.so.0")   # the default prefix, not yet in the cache
    found = ctypes.util.find_library("repro")
    if found:
        cands.append(found)
    errors = []
    for c in cands:
        if os.path.exists(c) or os.path.sep not in c:
            try:
                return ctypes.CDLL(c), os.path.abspath(c) if os.path.sep in c else c
            except OSError as e:
                errors.append(str(e))
    raise ReproError(-6, "librepro.so not found or not loadable (%s): install repro (make "
                     "install; as root, it runs ldconfig), or set REPRO_LIB to its librepro.so"
                     % "; ".join(errors or ["no candidate"]))


_lib, LIBRARY = _find_library()  # LIBRARY: the path of the librepro.so loaded
_i64p = ctypes.POINTER(ctypes.c_int64)


class _RunInfo(ctypes.Structure):
    _fields_ = [("experiment", ctypes.c_char_p), ("seed", ctypes.c_uint64),
                ("config_json", ctypes.c_char_p)]


class _Options(ctypes.Structure):
    _fields_ = [("level", ctypes.c_int), ("every", ctypes.c_int), ("total_steps", ctypes.c_int64),
                ("threads", ctypes.c_int), ("workers", ctypes.c_int),
                ("experiment_path", ctypes.c_char_p), ("header_json", ctypes.c_char_p),
                ("start_step", ctypes.c_int64), ("start_chain", ctypes.c_void_p),
                ("backend", ctypes.c_char_p), ("digest", ctypes.c_int)]


class _RunEnv(ctypes.Structure):
    _fields_ = [("under_repro", ctypes.c_int), ("trace_path", ctypes.c_char_p),
                ("seed", ctypes.c_uint64), ("threads", ctypes.c_int), ("workers", ctypes.c_int),
                ("deterministic", ctypes.c_int), ("benchmark", ctypes.c_int),
                ("level", ctypes.c_int), ("run_index", ctypes.c_int), ("batch_size", ctypes.c_int)]


class _Digest(ctypes.Structure):
    _fields_ = [("b", ctypes.c_uint8 * 32)]


def _sig(name, res, *args):
    f = getattr(_lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_err_last = _sig("repro_error_last", ctypes.c_char_p)
_api_version = _sig("repro_api_version", ctypes.c_int)
_opts_init = _sig("repro_recorder_options_init", None, ctypes.POINTER(_Options))
_open_ex = _sig("repro_recorder_open_ex", ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_char_p, ctypes.POINTER(_RunInfo), ctypes.POINTER(_Options))
_tensor = _sig("repro_recorder_tensor", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
               ctypes.c_int, ctypes.c_int, _i64p, ctypes.c_void_p)
_op = _sig("repro_recorder_op", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
           ctypes.c_int, _i64p, ctypes.c_void_p)
_step = _sig("repro_recorder_step", ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
             ctypes.c_double)
_close_ex = _sig("repro_recorder_close_ex", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                 ctypes.c_char_p)
_abort = _sig("repro_recorder_abort", None, ctypes.c_void_p)
_values = _sig("repro_recorder_values", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_set_threads = _sig("repro_recorder_set_threads", ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                    ctypes.c_int)
_header_set = _sig("repro_recorder_header_set", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                   ctypes.c_char_p)
_env_read = _sig("repro_run_env_read", ctypes.c_int, ctypes.POINTER(_RunEnv), ctypes.c_uint64)
_opts_from_env = _sig("repro_recorder_options_from_env", None, ctypes.POINTER(_Options),
                      ctypes.POINTER(_RunEnv))
_digest_bytes = _sig("repro_tensor_digest_bytes", ctypes.c_int, ctypes.POINTER(_Digest),
                     ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, _i64p, ctypes.c_void_p,
                     ctypes.c_uint64)
_digest_hex = _sig("repro_digest_hex", None, ctypes.POINTER(_Digest), ctypes.c_char_p)
_worker_seed = _sig("repro_worker_seed", ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int)

if _api_version() != 1:
    raise ReproError(-6, "librepro API version %d; this client speaks 1" % _api_version())


def _check(rc):
    if rc != 0:
        raise ReproError(rc, (_err_last() or b"").decode("utf-8", "replace"))


# What crosses into C is checked here, never converted: ctypes would wrap an
# out-of-range integer (step 2**64 + 1 becomes 1, seed -1 becomes 2**64 - 1)
# and C would stop a string at its first NUL ("a\x00b" recorded as "a").

_I32 = (0, 2**31 - 1)
_I64 = (0, 2**63 - 1)
_U64 = (0, 2**64 - 1)


def _int(value, what, bounds):
    """value as an int within bounds (inclusive), else TypeError/ValueError
    naming `what`. Integers only (NumPy's too); not bool, not float."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, not bool" % what)
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s" % (what, type(value).__name__)) from None
    lo, hi = bounds
    if not lo <= v <= hi:
        raise ValueError("%s is %d, outside %d..%d" % (what, v, lo, hi))
    return v


def _cstr(value, what):
    """value as UTF-8 for C: a str without NUL bytes, else TypeError/ValueError
    naming `what`."""
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (what, type(value).__name__))
    if "\x00" in value:
        raise ValueError("%s %r contains a NUL byte (C would cut it there)" % (what, value))
    return value.encode()


def _as_buffer(x):
    """(dtype name, shape tuple, contiguous bytes owner, address) of a NumPy
    array (or scalar) or a torch tensor. A tensor on another device (CUDA) is
    copied to the host as it is, bit for bit (the copy waits for the kernels
    that write it). Anything else is refused (TypeError): the digest is of
    exact bytes, so nothing is converted behind the caller's back -- a list
    would become float64 or int64 by NumPy's choice."""
    mod = type(x).__module__
    if not (mod.startswith("torch") or mod.startswith("numpy")):
        raise TypeError("x must be a NumPy array or a torch tensor, not %s (convert it "
                        "yourself, choosing the dtype)" % type(x).__name__)
    if mod.startswith("torch"):
        import torch
        t = x.detach()
        if t.device.type != "cpu":
            t = t.to("cpu")
        names = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
                 torch.bfloat16: "bf16", torch.int32: "i32", torch.int64: "i64",
                 torch.uint8: "u8"}
        if t.dtype not in names:
            raise ReproError(-2, "dtype %s has no trace dtype" % t.dtype)
        t = t.contiguous()
        return names[t.dtype], tuple(t.shape), t, t.data_ptr()
    import numpy as np
    a = np.ascontiguousarray(x)
    names = {"float32": "f32", "float64": "f64", "float16": "f16", "int32": "i32",
             "int64": "i64", "uint8": "u8", "uint32": "u32"}
    if str(a.dtype) not in names:
        raise ReproError(-2, "dtype %s has no trace dtype" % a.dtype)
    if not a.dtype.isnative:
        raise ReproError(-2, "non-native byte order")
    return names[str(a.dtype)], tuple(a.shape), a, a.ctypes.data


def _shape(shape):
    arr = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    return arr


def tensor_digest(name, x):
    """The tensor digest (hex) of x's bytes under `name`: the same as the C
    library's repro_tensor_digest_bytes."""
    cname = _cstr(name, "name")
    dtype, shape, owner, addr = _as_buffer(x)
    nbytes = owner.numel() * owner.element_size() if hasattr(owner, "numel") else owner.nbytes
    d = _Digest()
    _check(_digest_bytes(ctypes.byref(d), cname, dtype.encode(), len(shape),
                         _shape(shape), ctypes.c_void_p(addr), nbytes))
    out = ctypes.create_string_buffer(65)
    _digest_hex(ctypes.byref(d), out)
    return out.value.decode()


class RunEnv:
    """The runner protocol's settings (REPRO_SEED, REPRO_THREADS, ...):
    defaults outside repro; a malformed value raises ReproError."""

    @staticmethod
    def read(default_seed=0):
        e = _RunEnv()
        _check(_env_read(ctypes.byref(e), _int(default_seed, "default_seed", _U64)))
        r = RunEnv()
        r.under_repro = bool(e.under_repro)
        r.trace_path = e.trace_path.decode() if e.trace_path else None
        r.seed, r.threads, r.workers = e.seed, e.threads, e.workers
        r.deterministic = {0: "off", 1: "on", 2: "warn"}[e.deterministic]
        r.benchmark = bool(e.benchmark)
        r.level, r.run_index, r.batch_size = e.level, e.run_index, e.batch_size
        r._raw = e  # for the recorder options the C library derives from it
        return r

    @staticmethod
    def setting(key, default=None):
        """The value of `repro ... --set KEY=VALUE` (REPRO_SET_<KEY>)."""
        var = "REPRO_SET_" + key.upper().replace(".", "_").replace("-", "_")
        return os.environ.get(var, default)


# What the program set up through the client before its recorder opened:
# the seed seed_everything was given, and the worker count of every
# DataLoader built with loader_kwargs().
_in_effect = {"seed": None, "workers": []}


# Who wrote the trace: its header's "client" (the C library's trace.h).
CLIENT = {"name": "repro-python", "version": __version__, "protocol": PROTOCOL}


def _threads_used():
    """What the run really uses, as far as the client can tell: PyTorch's
    intra-op thread count when the program imported torch (it follows
    OMP_NUM_THREADS, which repro sets, not REPRO_THREADS), the loader
    workers of the DataLoaders built with loader_kwargs() (the most of them,
    when they differ), and the thread pools the process has (repro.pools:
    torch's intra-op and inter-op, OpenBLAS's, MKL's, OpenMP's).
    Recorder.set_threads says it for anything else."""
    used = {}
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_num_threads"):
        used["threads_used"] = int(torch.get_num_threads())
    if _in_effect["workers"]:
        used["workers_used"] = max(_in_effect["workers"])
    pools = _pools.thread_pools()
    if pools:
        used["thread_pools"] = pools
    return used


class Recorder:
    """One trace. trace_path None: $REPRO_TRACE (nothing written if unset)."""

    def __init__(self, experiment, seed, config=None, trace_path=None, level=None, every=None,
                 total_steps=0, threads=None, workers=None, values=False, start_step=0):
        """values: also write each tensor of a detail step as
        dump/step-NNNNNN/NAME.npy beside the trace (True), or under the
        directory given (a str), for `repro diff --tolerance`. start_step:
        the step before the first this recorder ends (the first is
        start_step + 1), to line up with a trace that starts there."""
        self._r = ctypes.c_void_p()
        seed = _int(seed, "seed", _U64)
        exp = _cstr(experiment, "experiment")
        path = _cstr(trace_path, "trace_path") if trace_path is not None else None
        # Data parallel (repro/ddp.py): only rank 0 writes the trace; the
        # others check their replicas against it after every step.
        from repro import ddp as _ddp
        self._replicas = _ddp.Replicas()
        follower = path is None and self._replicas.rank > 0
        if follower:
            path = b""  # the recorder's "no trace file"
        env = RunEnv.read(seed)
        o = _Options()
        _opts_init(ctypes.byref(o))
        # The protocol's settings, as the C library reads them: with `repro
        # ... --set trace.every=K` or `trace.digest=sha256`, those.
        _opts_from_env(ctypes.byref(o), ctypes.byref(env._raw))
        o.level = _int(env.level if level is None else level, "level", _I32)
        self.level = o.level  # repro.torch hooks modules only at LEVEL_OP
        self.last_step = 0    # the last step ended (op names are unique per step)
        if every is not None:  # else 10, or what --set trace.every gave
            o.every = _int(every, "every", _I32)
        o.total_steps = _int(total_steps, "total_steps", _I64)
        o.start_step = _int(start_step, "start_step", _I64)
        o.threads = _int(env.threads if threads is None else threads, "threads", _I32)
        o.workers = _int(env.workers if workers is None else workers, "workers", _I32)
        cfg = json.dumps(config, sort_keys=True).encode() if config is not None else None
        used = _threads_used()
        used["client"] = CLIENT
        used.update(self._replicas.header())  # world_size_used
        hdr = json.dumps(used).encode()
        o.header_json = hdr
        self._info = _RunInfo(exp, seed, cfg)
        _check(_open_ex(ctypes.byref(self._r), path, ctypes.byref(self._info), ctypes.byref(o)))
        if values and not follower:  # a rank without a trace has nothing beside it
            vdir = None if values is True else _cstr(values, "values")
            rc = _values(self._r, vdir)
            if rc:
                self.abort()
                _check(rc)

    def set_threads(self, threads=-1, workers=-1):
        """Says the thread and loader-worker counts the run really uses
        (trace header "threads_used", "workers_used"; -1 leaves one unsaid),
        before the first step. The recorder fills threads from PyTorch by
        itself when torch is imported."""
        _check(_set_threads(self._r, _int(threads, "threads", _I32),
                            _int(workers, "workers", _I32)))

    def header_set(self, key, value):
        """Adds an informational key to the trace header (value: anything
        json.dumps takes), before the first step ends; a key the header
        already has is refused (ReproError)."""
        _check(_header_set(self._r, _cstr(key, "key"),
                           json.dumps(value, sort_keys=True).encode()))

    def tensor(self, name, x):
        cname = _cstr(name, "name")
        dtype, shape, owner, addr = _as_buffer(x)
        _check(_tensor(self._r, cname, _DTYPES[dtype], len(shape), _shape(shape),
                       ctypes.c_void_p(addr)))
        self._replicas.note(name, owner)  # param.* digests, for the replica check
        del owner  # kept alive through the call above

    def op(self, name, x):
        cname = _cstr(name, "name")
        dtype, shape, owner, addr = _as_buffer(x)
        _check(_op(self._r, cname, _DTYPES[dtype], len(shape), _shape(shape),
                   ctypes.c_void_p(addr)))
        del owner

    def step(self, step, loss=0.0):
        step = _int(step, "step", _I64)
        _check(_step(self._r, step, float(loss)))
        self.last_step = step
        self._replicas.check(step)  # every rank's parameters against rank 0's

    def close(self, trailer=None):
        """Writes the trailer; returns the final chain digest (hex)."""
        if not self._r:
            return None
        out = ctypes.create_string_buffer(65)
        extra = json.dumps(trailer).encode() if trailer is not None else None
        r, self._r = self._r, ctypes.c_void_p()
        _check(_close_ex(r, out, extra))
        return out.value.decode()

    def abort(self):
        if self._r:
            _abort(self._r)
            self._r = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()  # the trace stays a visibly incomplete prefix
        return False


def record_model(rec, model, loss=None, grads=True):
    """Records a torch module's parameters (param.<name>), then their
    gradients (grad.<name>; a None gradient is skipped, as PyTorch leaves
    unused parameters), then the loss, in named_parameters() order."""
    named = list(model.named_parameters())
    if grads:
        for name, p in named:
            if p.grad is not None:
                rec.tensor("grad." + name, p.grad)
    for name, p in named:
        rec.tensor("param." + name, p)
    if loss is not None:
        rec.tensor("loss", loss.detach().reshape(()) if hasattr(loss, "detach") else loss)


def seed_everything(seed, deterministic=True):
    """Seeds Python, NumPy and torch (CPU and every CUDA device) from one
    seed, and asks torch for deterministic algorithms, as PyTorch's
    reproducibility notes recommend, and for results that do not depend on
    the thread count (oneDNN off: its convolution backward does). PYTHONHASHSEED must be set before the
    interpreter starts (repro sets it for programs it runs)."""
    seed = _int(seed, "seed", _U64)
    _in_effect["seed"] = seed
    random.seed(seed)
    try:
        import numpy as np
        np.random.seed(seed % 2**32)
    except ImportError:
        pass
    try:
        import torch
        torch.manual_seed(seed)
        if deterministic:
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True
            # oneDNN's CPU convolution backward splits its weight-gradient
            # reduction by the intra-op thread count (torch 1.13 on an
            # AVX-512 Xeon: grad.conv1.weight differs at 1 and 2 threads);
            # PyTorch's own convolution sums in one order at any count.
            torch.backends.mkldnn.enabled = False
    except ImportError:
        pass


def worker_init_fn(worker_id):
    """DataLoader worker_init_fn: seeds NumPy and random in each worker from
    torch.initial_seed() (= base_seed + worker_id), which the DataLoader
    does not do for them."""
    import torch
    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    try:
        import numpy as np
        np.random.seed(seed)
    except ImportError:
        pass


def data_generator(seed):
    """A torch.Generator for the DataLoader's shuffle, seeded from `seed`."""
    import torch
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def loader_kwargs(seed=None):
    """Keyword arguments for a torch DataLoader that loads the same batches
    in every run: num_workers as repro gives it (--workers, REPRO_WORKERS),
    the shuffle's generator seeded from `seed` (default: the seed given to
    seed_everything, else the run's), and worker_init_fn. The worker count
    is remembered: a Recorder opened afterwards writes it to the trace as
    "workers_used", so `repro check --workers` can tell the scope was
    exercised.

        loader = DataLoader(data, batch_size=64, shuffle=True, **repro.loader_kwargs())
    """
    env = RunEnv.read()
    if seed is None:
        seed = _in_effect["seed"] if _in_effect["seed"] is not None else env.seed
    seed = _int(seed, "seed", _U64)
    _in_effect["workers"].append(env.workers)
    return {"num_workers": env.workers, "generator": data_generator(seed),
            "worker_init_fn": worker_init_fn}


def worker_seed(base_seed, worker_id):
    """base_seed + worker_id (mod 2^64): the C library's repro_worker_seed."""
    return _worker_seed(_int(base_seed, "base_seed", _U64), _int(worker_id, "worker_id", _I32))


# After everything they use is defined (they import from this module).
from repro.forward import record_forward  # noqa: E402
from repro.checkpoint import load_checkpoint  # noqa: E402
