"""Data-parallel gradients that do not depend on the world size.

PyTorch's DistributedDataParallel averages per-rank gradients: every rank
takes the mean loss over its own block of the global batch, and an
all-reduce (Gloo's or NCCL's ring) adds the blocks' gradients and divides by
the world size. The sum is cut into as many pieces as there are ranks and
added in an order the ring chooses, so 1, 2 and 4 ranks round differently:
`repro check --ranks 1,2 -- python3 ddp.py` fails at step 1 on a gradient.

InvariantGradients cuts the global batch into fixed shards of `shard_size`
samples whatever the world size, computes each shard's gradient on its own
(a backward pass per shard), gathers every shard's gradient on every rank
(all_gather) and adds them in one fixed tree over the shard index, then
divides by the shard count. Every rank and every world size performs the
same additions on the same bits, so world sizes 1, 2, 4 -- and a single
process without torch.distributed -- give the same gradient, bit for bit:

    import repro.ddp
    grads = repro.ddp.InvariantGradients(model, shard_size=16)
    for x, y in global_batches:                # the same global batch on every rank
        opt.zero_grad()
        loss = grads.backward(lambda m, xs, ys: F.cross_entropy(m(xs), ys), x, y)
        opt.step()                             # p.grad: the invariant mean gradient

Its price (docs/python.md, `make bench`): one backward pass per shard instead
of one per rank, and an all-gather of every shard's gradient (shards x
parameters numbers to every rank) in place of an all-reduce of one.
"""

__all__ = ["InvariantGradients", "world", "tree_sum"]


def world(group=None):
    """(rank, world size) of torch.distributed's group when one is formed,
    else (0, 1): a single process."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(group), dist.get_world_size(group)
    return 0, 1


def tree_sum(rows):
    """The sum of a list of equally shaped tensors in one fixed tree over
    their index: neighbours added pairwise, ((r0 + r1) + (r2 + r3)) + r4,
    level by level. The tree depends only on len(rows)."""
    if not rows:
        raise ValueError("tree_sum: no rows")
    while len(rows) > 1:
        paired = [rows[i] + rows[i + 1] for i in range(0, len(rows) - 1, 2)]
        if len(rows) % 2:
            paired.append(rows[-1])
        rows = paired
    return rows[0]


class InvariantGradients:
    """World-size-invariant gradients of the mean loss over a global batch.

    model: the module (a DistributedDataParallel wrapper is accepted: its
    own module is used, so DDP's all-reduce never runs). shard_size: the
    samples of one shard, the same on every world size; the global batch
    must be a multiple of shard_size, and its shard count a multiple of the
    world size. group: torch.distributed's process group (default: the
    world), or none formed: a single process. The replicas start equal:
    rank 0's parameters are broadcast here, as DDP does."""

    def __init__(self, model, shard_size, group=None):
        import torch
        if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
            raise ValueError("shard_size must be a positive integer, not %r" % (shard_size,))
        inner = getattr(model, "module", None)
        ddp = getattr(torch.nn.parallel, "DistributedDataParallel", None)
        self.model = inner if ddp is not None and isinstance(model, ddp) else model
        self.shard_size = shard_size
        self.group = group
        self.rank, self.world_size = world(group)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        if self.world_size > 1:
            import torch.distributed as dist
            with torch.no_grad():
                for p in self.model.parameters():
                    dist.broadcast(p.data, 0, group=group)

    def shards(self, batch_size):
        """The shard indices this rank computes for a global batch of
        batch_size samples: one contiguous block (rank r of W holds shards
        r*k .. r*k+k-1, k = shards / W). ValueError when the batch does not
        divide into shards, or the shards among the ranks."""
        if batch_size % self.shard_size:
            raise ValueError("a global batch of %d samples does not divide into shards of %d "
                             "(shard_size)" % (batch_size, self.shard_size))
        nshards = batch_size // self.shard_size
        if nshards % self.world_size:
            raise ValueError("%d shards of %d samples (a global batch of %d) do not divide "
                             "among %d ranks: choose a world size that divides %d" % (
                                 nshards, self.shard_size, batch_size, self.world_size,
                                 nshards))
        k = nshards // self.world_size
        return range(self.rank * k, self.rank * k + k)

    def _shard_row(self, loss_fn, batch, s):
        """Shard s's gradient and loss as one flat row (parameters in
        model.parameters() order, then the loss)."""
        import torch
        lo, hi = s * self.shard_size, (s + 1) * self.shard_size
        for p in self.params:
            p.grad = None
        loss = loss_fn(self.model, *[t[lo:hi] for t in batch])
        loss.backward()
        parts = [p.grad.reshape(-1) if p.grad is not None else torch.zeros_like(p).reshape(-1)
                 for p in self.params]
        parts.append(loss.detach().reshape(1).to(parts[0].dtype if parts else loss.dtype))
        return torch.cat(parts)

    def backward(self, loss_fn, *batch):
        """Sets every parameter's .grad to the mean over the global batch's
        shards of each shard's gradient, and returns the mean of the shard
        losses (a 0-d tensor): the same bits on every rank and every world
        size. loss_fn(model, *shard) returns the mean loss of one shard's
        samples; batch is the global batch (the same tensors on every rank;
        each rank reads only its own shards' rows)."""
        import torch
        if not batch:
            raise TypeError("backward: no batch tensors given")
        n = batch[0].shape[0]
        mine = [self._shard_row(loss_fn, batch, s) for s in self.shards(n)]
        local = torch.stack(mine)
        if self.world_size > 1:
            import torch.distributed as dist
            gathered = [torch.empty_like(local) for _ in range(self.world_size)]
            dist.all_gather(gathered, local, group=self.group)
            local = torch.cat(gathered)
        nshards = local.shape[0]
        mean = tree_sum([local[i] for i in range(nshards)]) / nshards
        offset = 0
        with torch.no_grad():
            for p in self.params:
                size = p.numel()
                p.grad = mean[offset:offset + size].view_as(p).clone()
                offset += size
        return mean[offset].clone()


# ---- the recorder's side: which rank writes, and the replicas' check --------

def _env_rank():
    """The rank the launcher gave this process (REPRO_RANK, else RANK, as
    torchrun sets it), and the world size (REPRO_WORLD_SIZE, WORLD_SIZE)."""
    import os
    rank = os.environ.get("REPRO_RANK", os.environ.get("RANK", "0"))
    size = os.environ.get("REPRO_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1"))
    try:
        return int(rank), int(size)
    except ValueError:
        return 0, 1


def _group_world():
    """(rank, world size) of torch.distributed's default group when the
    program formed one, else None. torch is not imported for it."""
    import sys
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist.get_rank(), dist.get_world_size()


class Replicas:
    """What a Recorder knows of the data-parallel job it runs in: this
    process's rank (only rank 0 writes the trace), the world size it used
    ("world_size_used" in the header: the group the program formed, else 1,
    a single process), and, when the group has more than one rank, the
    check after every step that every rank's parameters (the param.*
    tensors recorded) have rank 0's bits."""

    def __init__(self):
        group = _group_world()
        self.grouped = group is not None
        self.rank, self.world_size = group if group else (_env_rank()[0], 1)
        self._params = []  # (name, digest) of this step's param.* tensors

    def header(self):
        return {"world_size_used": self.world_size}

    def note(self, name, x):
        if self.world_size > 1 and name.startswith("param."):
            import repro
            self._params.append((name, repro.tensor_digest(name, x)))

    def check(self, step):
        """After step `step`: every rank's parameter digests against rank
        0's. A replica that left rank 0's is named (ReproError, on every
        rank)."""
        group = _group_world()
        if not self.grouped and group is not None and group[1] > 1:
            import repro
            raise repro.ReproError(-2, "the process group (world size %d) was formed after the "
                                   "Recorder opened: open it after init_process_group, so that "
                                   "only rank 0 writes the trace" % group[1])
        params, self._params = self._params, []
        if self.world_size <= 1:
            return
        import hashlib
        import torch
        import torch.distributed as dist
        mine = hashlib.sha256("".join(d for _, d in params).encode()).digest()
        local = torch.tensor(list(mine), dtype=torch.uint8)
        every = [torch.empty_like(local) for _ in range(self.world_size)]
        dist.all_gather(every, local)
        if all(torch.equal(every[0], e) for e in every[1:]):
            return
        lists = [None] * self.world_size
        dist.all_gather_object(lists, params)
        raise _drift(step, lists)


def _drift(step, lists):
    """The ReproError naming the first rank whose parameters left rank 0's."""
    import repro
    base = dict(lists[0])
    for rank in range(1, len(lists)):
        if lists[rank] == lists[0]:
            continue
        names = [n for n, d in lists[rank] if base.get(n) != d] or ["its parameter list"]
        return repro.ReproError(-1, "replica drift: after step %d's update, rank %d's %s left "
                                "rank 0's (%d of %d parameter tensors differ)" % (
                                    step, rank, names[0], len(names), len(lists[0])))
    return repro.ReproError(-1, "replica drift after step %d" % step)
