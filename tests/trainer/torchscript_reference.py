#!/usr/bin/python3
"""The Python side of tests/trainer/torchscript_test.cc: a user's model scripted with PyTorch, and PyTorch's own
training loop on it, to compare ladder-train --model torchscript:FILE against.

  torchscript_reference.py script OUTDIR FEATURES CLASSES
      writes OUTDIR/plain.pt (forward only) and OUTDIR/own_loss.pt (the same network and initial weights, with a
      loss(x, y) method): Linear (no bias), BatchNorm1d, a 2-D parameter named shift_bias, ReLU, Linear; and
      OUTDIR/volume.pt, a Conv3d-BatchNorm3d network for 1-channel volumes.
  torchscript_reference.py train MODEL TRAIN_CSV ORDER_CSV sgd|adamw LR WEIGHT_DECAY OUT
      loads MODEL, takes the rows of TRAIN_CSV (features..., label) in the order ORDER_CSV gives (one step a line:
      the row indices of its batch), one optimizer step per line with torch.optim's SGD (momentum 0.9) or AdamW,
      weight decay on every parameter but biases and norm parameters (at most 1-D, or named *bias), and writes
      the parameters to OUT as raw float32 in named_parameters() order (ladder-train --save-params).
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self, features: int, classes: int, hidden: int = 16):
        super().__init__()
        # No bias before the BatchNorm: its gradient would be rounding noise, which Adam scales up to whole steps.
        self.fc1 = nn.Linear(features, hidden, bias=False)
        self.norm = nn.BatchNorm1d(hidden)
        self.shift_bias = nn.Parameter(0.1 * torch.randn(1, hidden))  # 2-D, a bias by its name: no weight decay
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x)) + self.shift_bias))


class NetWithLoss(Net):
    @torch.jit.export
    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y, label_smoothing=0.1)


class Volume(nn.Module):
    """Conv3d, BatchNorm3d, global pooling, a linear head: for samples shaped as volumes (--input-shape C,D,H,W)."""

    def __init__(self, classes: int):
        super().__init__()
        self.conv = nn.Conv3d(1, 4, 3, padding=1, bias=False)
        self.norm = nn.BatchNorm3d(4)
        self.head = nn.Linear(4, classes)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool3d(torch.relu(self.norm(self.conv(x))), 1), 1))


def script(outdir, features, classes):
    for cls, name in ((Net, "plain.pt"), (NetWithLoss, "own_loss.pt")):
        torch.manual_seed(0)
        torch.jit.script(cls(features, classes)).save(f"{outdir}/{name}")
    torch.jit.script(Volume(classes)).save(f"{outdir}/volume.pt")


def train(model_path, train_csv, order_csv, optimizer, lr, weight_decay, out):
    torch.set_num_threads(1)
    model = torch.jit.load(model_path)
    model.train()
    rows = [line.split(",") for line in open(train_csv).read().split()]
    x = torch.tensor([[float(v) for v in r[:-1]] for r in rows], dtype=torch.float32)
    y = torch.tensor([int(r[-1]) for r in rows], dtype=torch.int64)
    order = [[int(i) for i in line.split(",")] for line in open(order_csv).read().split()]
    named = list(model.named_parameters())
    no_decay = [p for n, p in named if p.dim() <= 1 or n.split(".")[-1].lower().endswith("bias")]
    decay = [p for n, p in named if not (p.dim() <= 1 or n.split(".")[-1].lower().endswith("bias"))]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.SGD(groups, lr=lr, momentum=0.9) if optimizer == "sgd" else torch.optim.AdamW(groups, lr=lr)
    own_loss = hasattr(model, "loss")
    for idx in order:
        xb, yb = x[idx], y[idx]
        opt.zero_grad()
        loss = model.loss(xb, yb) if own_loss else F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    with open(out, "wb") as f:
        for _, p in named:
            f.write(p.detach().to(torch.float32).contiguous().numpy().tobytes())


if __name__ == "__main__":
    if sys.argv[1] == "script":
        script(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        train(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6]), float(sys.argv[7]), sys.argv[8])
