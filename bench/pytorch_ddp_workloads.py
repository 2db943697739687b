#!/usr/bin/python3
"""ladder-train's built-in networks rebuilt in Python, and their training in PyTorch's own DDP.

bench/trainer_vs_pytorch and bench/gpu start it. The classes below build exactly the architectures of
trainer/models.cc and trainer/resnet3d.cc (the same layers, shapes, biases and norms: the benchmark compares
both sides' parameter counts and fails when they differ); weight initialization does not matter here.

usage: pytorch_ddp_workloads.py describe W.json... [--script W.json FILE] [--peak cpu|cuda]
           per workload (W the file's name), one JSON line: its parameters and forward FLOPs per sample; then
           the GEMM peak of one thread; --script: torch.jit.script W's network into FILE first
       pytorch_ddp_workloads.py gemm [--peak cpu|cuda]   the GEMM peak, one JSON line (cuda: bf16 on the GPU)
       pytorch_ddp_workloads.py train W.json   train W (one process per rank, torchrun-style environment)

A workload is a JSON object: model (mlp | cnn | unet | transformer), width, depth, heads, shape (one sample's,
as ladder's data says), outputs (classes, regression targets or vocabulary), task (classify | segment | lm |
regress), rows (training rows) and val_rows, batch (per rank), epochs, lr, momentum, seed, threads,
bucket_cap_mb, and optionally device (cpu | cuda), precision (fp32 | bf16), compile (true: torch.compile).
The data are random tensors of the workload's shapes (inputs N(0,1), uniform labels or N(0,1) targets), made
with a fixed seed: a step's cost does not depend on the values, so the same shapes are the same work as
ladder's generated data.

FLOPs are counted by rule, not measured: 2 per multiply-add of every Linear, convolution and transposed
convolution (forward hooks on the modules), plus the transformer's attention products (2 per multiply-add of
QK^T and AV: 4·T²·d per sample and block) and its tied output head (2·T·d·vocab). Norms, activations, pooling,
softmax and the loss are not counted. A training step counts 3x the forward FLOPs (backward ~ 2x forward).

Training is timed as ladder-train times it: an epoch's global samples / its wall time (the shuffle included,
evaluation excluded); rank 0 prints one JSON line per epoch in ladder-train's format (samples_per_s, ...).
"""
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def norm(channels):
    """GroupNorm over `channels` with up to 8 groups (models.cc Norm)."""
    g = min(8, channels)
    while channels % g:
        g -= 1
    return nn.GroupNorm(g, channels)


def conv3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class Mlp(nn.Module):
    def __init__(self, features, outputs, width, depth):
        super().__init__()
        layers, w = [], features
        for _ in range(depth):
            layers += [nn.Linear(w, width), nn.ReLU()]
            w = width
        layers.append(nn.Linear(w, outputs))
        self.seq = nn.Sequential(*layers)

    def forward(self, x):
        return self.seq(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    """conv-norm-relu-conv-norm plus a (projected) shortcut, then relu (models.cc BasicBlock)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.n1, self.c2, self.n2 = conv3(cin, cout, stride), norm(cout), conv3(cout, cout), norm(cout)
        project = stride != 1 or cin != cout
        self.proj = nn.Conv2d(cin, cout, 1, stride=stride, bias=False) if project else nn.Identity()
        self.pn = norm(cout) if project else nn.Identity()

    def forward(self, x):
        h = F.relu(self.n1(self.c1(x)))
        h = self.n2(self.c2(h))
        return F.relu(h + self.pn(self.proj(x)))


class ResNet(nn.Module):
    def __init__(self, channels, outputs, width, depth):
        super().__init__()
        self.stem, self.stem_norm = conv3(channels, width), norm(width)
        blocks, cin = [], width
        for s in range(depth):
            cout = width << s
            blocks += [BasicBlock(cin, cout, 2 if s else 1), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, outputs)

    def forward(self, x):
        h = self.blocks(F.relu(self.stem_norm(self.stem(x))))
        return self.head(h.mean((2, 3)))


def conv333(cin, cout, stride=1):
    return nn.Conv3d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock3d(nn.Module):
    """conv-relu-conv plus a (projected) shortcut, then relu; no norm (resnet3d.cc)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.c2 = conv333(cin, cout, stride), conv333(cout, cout)
        project = stride != 1 or cin != cout
        self.proj = nn.Conv3d(cin, cout, 1, stride=stride, bias=False) if project else nn.Identity()

    def forward(self, x):
        return F.relu(self.c2(F.relu(self.c1(x))) + self.proj(x))


class ResNet3d(nn.Module):
    def __init__(self, channels, outputs, width, depth):
        super().__init__()
        self.stem = conv333(channels, width)
        blocks, cin = [], width
        for s in range(depth):
            cout = width << s
            blocks += [BasicBlock3d(cin, cout, 2 if s else 1), BasicBlock3d(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, outputs)

    def forward(self, x):
        return self.head(self.blocks(F.relu(self.stem(x))).mean((2, 3, 4)))


def conv_stack(cin, cout, n):
    layers = []
    for i in range(n):
        layers += [conv3(cout if i else cin, cout), norm(cout), nn.ReLU()]
    return nn.Sequential(*layers)


class UNet(nn.Module):
    def __init__(self, channels, outputs, width, depth):
        super().__init__()
        w, n = width, max(1, depth)
        self.enc0, self.enc1, self.mid = conv_stack(channels, w, n), conv_stack(w, 2 * w, n), conv_stack(2 * w, 4 * w, n)
        self.up1, self.dec1 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2), conv_stack(4 * w, 2 * w, n)
        self.up0, self.dec0 = nn.ConvTranspose2d(2 * w, w, 2, stride=2), conv_stack(2 * w, w, n)
        self.head = nn.Conv2d(w, outputs, 1)

    def forward(self, x):
        e0 = self.enc0(x)
        e1 = self.enc1(F.max_pool2d(e0, 2))
        m = self.mid(F.max_pool2d(e1, 2))
        d1 = self.dec1(torch.cat([self.up1(m), e1], 1))
        return self.head(self.dec0(torch.cat([self.up0(d1), e0], 1)))


class Block(nn.Module):
    """Pre-norm block with causal multi-head self-attention and a 4x GELU MLP (models.cc Block)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, mask):
        n, t, d = x.shape
        hd = d // self.heads
        qkv = self.qkv(self.ln1(x)).view(n, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = torch.softmax(att.masked_fill(mask, float("-inf")), -1)
        h = x + self.proj(torch.matmul(att, v).transpose(1, 2).reshape(n, t, d))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Transformer(nn.Module):
    def __init__(self, vocab, max_len, width, depth, heads):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(max_len, width) * 0.02)
        nn.init.normal_(self.tok.weight, 0, 0.02)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(depth)])
        self.lnf = nn.LayerNorm(width)

    def forward(self, x):
        ids = x.long()
        t = ids.shape[1]
        h = self.tok(ids) + self.pos[:t]
        mask = torch.ones(t, t, dtype=torch.bool, device=ids.device).triu(1)
        for b in self.blocks:
            h = b(h, mask)
        return torch.matmul(self.lnf(h), self.tok.weight.t())


def build(w):
    shape, out = w["shape"], w["outputs"]
    m = w["model"]
    if m == "mlp":
        return Mlp(math.prod(shape), out, w["width"], w["depth"])
    if m == "cnn":
        return (ResNet3d if len(shape) == 4 else ResNet)(shape[0], out, w["width"], w["depth"])
    if m == "unet":
        return UNet(shape[0], out, w["width"], w["depth"])
    if m == "transformer":
        return Transformer(out, shape[0], w["width"], w["depth"], w["heads"])
    raise SystemExit(f"pytorch_ddp_workloads.py: unknown model {m!r}")


def forward_flops(w, net):
    """Forward FLOPs per sample by the rule in the module docstring."""
    total = [0]

    def hook(mod, inputs, output):
        if isinstance(mod, nn.Linear):
            total[0] += 2 * output.numel() * mod.in_features
        elif isinstance(mod, (nn.Conv2d, nn.Conv3d)):
            total[0] += 2 * output.numel() * (mod.in_channels // mod.groups) * math.prod(mod.kernel_size)
        elif isinstance(mod, nn.ConvTranspose2d):
            total[0] += 2 * inputs[0].numel() * mod.out_channels * math.prod(mod.kernel_size)

    handles = [m.register_forward_hook(hook) for m in net.modules()
               if isinstance(m, (nn.Linear, nn.Conv2d, nn.Conv3d, nn.ConvTranspose2d))]
    x, _ = make_data(w, 1, seed=1)
    with torch.no_grad():
        net.eval()(x)
    for h in handles:
        h.remove()
    if w["model"] == "transformer":
        t, d = w["shape"][0], w["width"]
        total[0] += w["depth"] * 4 * t * t * d + 2 * t * d * w["outputs"]
    return total[0]


def make_data(w, rows, seed):
    g = torch.Generator().manual_seed(seed)
    shape, out, task = w["shape"], w["outputs"], w["task"]
    if task == "lm":
        x = torch.randint(0, out, (rows, *shape), generator=g).float()  # ladder keeps token ids as floats
        y = torch.randint(0, out, (rows, *shape), generator=g)
    else:
        x = torch.randn(rows, *shape, generator=g)
        if task == "classify":
            y = torch.randint(0, out, (rows,), generator=g)
        elif task == "segment":
            y = torch.randint(0, out, (rows, *shape[1:]), generator=g)
        else:
            y = torch.randn(rows, out, generator=g)
    return x, y


def loss_fn(w, out, y, weights):
    out = out.float()
    task = w["task"]
    if task == "classify":
        return F.cross_entropy(out, y)
    if task == "segment":  # Σ w_y·ℓ / pixels, as trainer/task.h
        return F.cross_entropy(out, y, weight=weights, reduction="none").mean()
    if task == "lm":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.mse_loss(out, y)


def gemm_peak(device="cpu", dtype=torch.float32, n=1024, reps=12):
    """FLOP/s of the best of `reps` n×n×n products on one thread (or the device). On the CPU each product is
    timed by the thread's CPU time, so that other processes on a shared machine do not lower the peak."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    clock = time.thread_time if device == "cpu" else time.perf_counter
    best = float("inf")
    for _ in range(reps + 2):
        if device != "cpu":
            torch.cuda.synchronize()
        t0 = clock()
        torch.mm(a, b)
        if device != "cpu":
            torch.cuda.synchronize()
        best = min(best, clock() - t0)
    return 2 * n ** 3 / best


def train(w):
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(w.get("threads", 1))
    dev = torch.device("cpu")
    if w.get("device") == "cuda":
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(dev)
    if world > 1:
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", init_method="env://", rank=rank,
                                world_size=world)
    xtr, ytr = make_data(w, w["rows"], seed=20261122)
    xva, yva = make_data(w, w["val_rows"], seed=20261123)
    xtr, ytr, xva, yva = xtr.to(dev), ytr.to(dev), xva.to(dev), yva.to(dev)
    weights = None
    if w["task"] == "segment":  # --class-weights auto: inverse square root of the class frequency
        freq = torch.bincount(ytr.reshape(-1), minlength=w["outputs"]).double().clamp_min(1) / ytr.numel()
        weights = (1 / freq.sqrt() / (freq / freq.sqrt()).sum()).float().to(dev)
    torch.manual_seed(w.get("seed", 0))
    net = build(w).to(dev)
    model = net
    if world > 1:
        model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=w.get("bucket_cap_mb", 25))
    if w.get("compile"):
        model = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=w["lr"], momentum=w["momentum"])
    bf16 = w.get("precision") == "bf16"
    n, b = w["rows"], w["batch"]
    if rank == 0:
        print(f"pytorch_ddp_workloads.py: {w['model']} {n} train / {w['val_rows']} validation rows, shape "
              f"{w['shape']}; {world} rank(s) over {'DDP' if world > 1 else 'none'}; torch {torch.__version__}, "
              f"{torch.get_num_threads()} thread(s), {dev}", file=sys.stderr)
    step = 0
    for epoch in range(w["epochs"]):
        t0 = time.perf_counter()
        if world > 1:  # DistributedSampler(drop_last=True)'s share, then only full per-rank batches
            gen = torch.Generator().manual_seed(w.get("seed", 0) + epoch)
            per = n // world
            idx_all = torch.randperm(n, generator=gen)[rank:per * world:world]
            steps = per // b
        else:
            idx_all = torch.randperm(n, generator=torch.Generator().manual_seed(epoch))
            steps = math.ceil(n / b)
        idx_all = idx_all.to(dev)
        model.train()
        seen = 0
        for s in range(steps):
            idx = idx_all[s * b:(s + 1) * b]
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                out = model(xtr.index_select(0, idx))
            loss = loss_fn(w, out, ytr.index_select(0, idx), weights)
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
            step += 1
            seen += len(idx) * world
            if not math.isfinite(loss.item()):
                sys.exit(f"pytorch_ddp_workloads.py: training diverged at step {step}")
        if dev.type == "cuda":
            torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        if rank != 0:
            continue
        with torch.no_grad():
            net.eval()
            val_loss = loss_fn(w, net(xva), yva, weights).item()
        print(json.dumps({"step": step, "epoch": epoch + 1, "val_loss": val_loss,
                          "samples_per_s": seen / secs if secs > 0 else 0.0, "ranks": world}), flush=True)
    if world > 1:
        dist.destroy_process_group()


def main():
    usage = __doc__.split("\n\n")[1]
    if len(sys.argv) < 2 or sys.argv[1] not in ("describe", "gemm", "train"):
        raise SystemExit(usage)
    verb, args = sys.argv[1], sys.argv[2:]
    if verb == "train":
        return train(json.load(open(args[0])))
    torch.set_num_threads(1)
    peak = gemm_peak  # --peak cuda: the bf16 GEMM peak of the GPU (8192^3 products) instead of one CPU thread's fp32
    if "--peak" in args:
        i = args.index("--peak")
        if args[i + 1] == "cuda":
            peak = lambda: gemm_peak("cuda", torch.bfloat16, n=8192, reps=10)  # noqa: E731
        del args[i:i + 2]
    if verb == "gemm":
        print(json.dumps({"gemm_flops_per_s": peak()}))
        return
    if "--script" in args:  # --script WORKLOAD.json FILE
        i = args.index("--script")
        w = json.load(open(args[i + 1]))
        torch.manual_seed(w.get("seed", 0))
        torch.jit.script(build(w)).save(args[i + 2])
        del args[i:i + 3]
    for path in args:
        w = json.load(open(path))
        net = build(w)
        print(json.dumps({"workload": os.path.basename(path).rsplit(".", 1)[0], "model": w["model"],
                          "parameters": sum(p.numel() for p in net.parameters()),
                          "forward_flops": forward_flops(w, net)}))
    print(json.dumps({"gemm_flops_per_s": peak()}))


if __name__ == "__main__":
    main()
