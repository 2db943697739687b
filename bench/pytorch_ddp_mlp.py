#!/usr/bin/python3
"""The ladder-train workload in PyTorch's own Python DDP (bench/trainer_vs_pytorch starts it).

Same work as build/bin/ladder-train: a gzip CSV (features..., integer label last), an 80/20 split with a
fixed seed, features standardized with the training statistics, an MLP (Linear(F,W) ReLU ... Linear(W,K)),
cross-entropy, SGD with momentum, a per-rank batch, a per-epoch shuffled DistributedSampler, and at more
than one rank torch.nn.parallel.DistributedDataParallel over Gloo (env:// rendezvous from RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, as torchrun sets them; start one process per rank). With WORLD_SIZE=1 it trains
without a process group, as ladder-train does with --comm none.

samples_per_s is measured as ladder-train measures it: global samples trained in an epoch / that epoch's
training wall time (the shuffle included, the evaluation excluded). Rank 0 prints one JSON line per epoch on
stdout, in ladder-train's format.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="CSV or CSV.gz, label last")
    p.add_argument("--val-fraction", type=float, default=0.2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    return p.parse_args()


def load_csv(path):
    opener = gzip.open if path.endswith(".gz") else open
    xs, ys = [], []
    with opener(path, "rt") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            fields = [s.strip() for s in line.split(",")]
            try:
                vals = [float(s) for s in fields]
            except ValueError:
                if lineno == 1 and not xs:
                    continue  # header
                raise SystemExit(f"pytorch_ddp_mlp.py: {path}:{lineno}: not numeric")
            xs.append(vals[:-1])
            ys.append(int(vals[-1]))
    return xs, ys


def main():
    a = parse_args()
    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data.distributed import DistributedSampler
    except ImportError as e:
        raise SystemExit(f"pytorch_ddp_mlp.py: {e} (install it: apt-get install python3-torch; "
                         f"run it with /usr/bin/python3)")

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(a.threads)
    if world > 1:
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)

    xs, ys = load_csv(a.data)
    x_all = torch.tensor(xs, dtype=torch.float32)
    y_all = torch.tensor(ys, dtype=torch.int64)
    n_all, features = x_all.shape
    classes = int(y_all.max()) + 1
    # Fixed split (its own seed; the sizes match ladder-train's: round(f * rows) validation rows).
    g = torch.Generator().manual_seed(20261122)
    perm = torch.randperm(n_all, generator=g)
    n_val = min(max(round(a.val_fraction * n_all), 1), n_all - 1)
    xva, yva = x_all[perm[:n_val]].contiguous(), y_all[perm[:n_val]].contiguous()
    xtr, ytr = x_all[perm[n_val:]].contiguous(), y_all[perm[n_val:]].contiguous()
    mean = xtr.double().mean(0)
    std = xtr.double().std(0, unbiased=False)
    keep = std > 1e-12
    scale = torch.where(keep, std, torch.ones_like(std))

    def standardize(x):
        return torch.where(keep, (x.double() - mean) / scale, torch.zeros_like(scale)).float().contiguous()

    xtr, xva = standardize(xtr), standardize(xva)
    n = xtr.shape[0]
    if rank == 0:
        print(f"pytorch_ddp_mlp.py: {a.data}: {n} train / {n_val} validation rows, {features} features, "
              f"{classes} classes; {world} rank(s) over {'gloo (DDP)' if world > 1 else 'none'}; "
              f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)", file=sys.stderr)

    torch.manual_seed(a.seed)
    layers, width = [], features
    for _ in range(a.depth):
        layers += [nn.Linear(width, a.width), nn.ReLU()]
        width = a.width
    layers.append(nn.Linear(width, classes))
    net = nn.Sequential(*layers)
    model = DDP(net, bucket_cap_mb=a.bucket_cap_mb) if world > 1 else net  # DDP broadcasts rank 0's weights
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)

    # ladder-train: at >1 rank every step is a full global batch (the partial one dropped); at 1 rank the
    # last, partial batch is trained too. DistributedSampler(drop_last=True) + dropping the partial per-rank
    # batch gives the same step count at >1 rank.
    sampler = None
    if world > 1:
        sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=a.seed,
                                     drop_last=True)
    step = 0
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        if sampler is not None:
            sampler.set_epoch(epoch)
            idx_all = torch.tensor(list(iter(sampler)), dtype=torch.int64)
            steps = len(idx_all) // a.batch_size
        else:
            gen = torch.Generator().manual_seed(a.seed * 1000003 + epoch)
            idx_all = torch.randperm(n, generator=gen)
            steps = math.ceil(n / a.batch_size)
        model.train()
        seen = 0
        for b in range(steps):
            idx = idx_all[b * a.batch_size:(b + 1) * a.batch_size]
            logits = model(xtr.index_select(0, idx))
            loss = F.cross_entropy(logits, ytr.index_select(0, idx))
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
            step += 1
            seen += len(idx) * world
            lv = loss.item()
            if not math.isfinite(lv):
                print(f"pytorch_ddp_mlp.py: training diverged at step {step}", file=sys.stderr)
                sys.exit(3)
        secs = time.perf_counter() - t0
        if rank != 0:
            continue
        net.eval()
        with torch.no_grad():
            train_loss = F.cross_entropy(net(xtr), ytr).item()
            vl = net(xva)
            val_loss = F.cross_entropy(vl, yva).item()
            acc = (vl.argmax(1) == yva).double().mean().item()
        print(json.dumps({"step": step, "epoch": epoch + 1, "train_loss": train_loss, "val_loss": val_loss,
                          "val_accuracy": acc, "samples_per_s": seen / secs if secs > 0 else 0.0,
                          "ranks": world}), flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
