#!/usr/bin/python3
"""A user's own network for ladder-train: a small 3D CNN, scripted with TorchScript and saved, plus a data set of
small volumes to train it on. Run it with the PyTorch that matches ladder-train's LibTorch (Debian 12:
`apt install python3-torch`, then /usr/bin/python3):

    /usr/bin/python3 examples/torchscript/cnn3d.py          # writes cnn3d-w8.pt, cnn3d-w16.pt, volumes.csv here

The volumes are 1x8x8x8 cubes of noise with one bright blob; the class is the octant the blob sits in, folded
to 4 classes (left/right x front/back). ladder-train reads each CSV row (512 values, then the label) as a volume
with --input-shape 1,8,8,8, and trains the scripted module as --model torchscript:FILE (docs/guide/training.md,
"Your own model: TorchScript"): forward(x) gets [N, 1, 8, 8, 8] and returns [N, 4] logits, what a classification
task expects.
"""
import os
import random

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE, CLASSES = 8, 4


class Cnn3d(nn.Module):
    """conv3d-bn-relu, a strided conv3d-bn-relu, global average pool, linear head. BatchNorm3d's running
    statistics are buffers: ladder-train broadcasts them from rank 0 at the start and checkpoints them."""

    def __init__(self, width: int, classes: int = CLASSES):
        super().__init__()
        self.conv1 = nn.Conv3d(1, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm3d(width)
        self.conv2 = nn.Conv3d(width, 2 * width, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm3d(2 * width)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool3d(x, 1), 1))

    # Optional: a loss of the model's own, which ladder-train then trains and validates on instead of the
    # task's cross entropy (forward still gives the accuracy and the saved predictions).
    @torch.jit.export
    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y, label_smoothing=0.05)


def write_volumes(path, rows, seed=0):
    rng = random.Random(seed)
    with open(path, "w") as out:
        for _ in range(rows):
            d, h, w = (rng.randrange(1, SIZE - 1) for _ in range(3))
            label = (2 if d >= SIZE // 2 else 0) + (1 if w >= SIZE // 2 else 0)
            cube = [rng.gauss(0.0, 0.5) for _ in range(SIZE ** 3)]
            for dd in (-1, 0, 1):
                for hh in (-1, 0, 1):
                    for ww in (-1, 0, 1):
                        cube[((d + dd) * SIZE + h + hh) * SIZE + w + ww] += 2.0
            out.write(",".join(f"{v:.3f}" for v in cube) + f",{label}\n")


if __name__ == "__main__":
    for width in (8, 16):
        torch.manual_seed(width)
        torch.jit.script(Cnn3d(width)).save(os.path.join(HERE, f"cnn3d-w{width}.pt"))
    write_volumes(os.path.join(HERE, "volumes.csv"), rows=1200)
    print(f"wrote cnn3d-w8.pt, cnn3d-w16.pt and volumes.csv in {HERE}")
