#!/usr/bin/python3
"""The classic PyTorch MNIST example's structure (a Net of two convolutions,
dropout and two linear layers; Adadelta; StepLR; DataLoaders with workers),
written for repro's examples. Nothing is downloaded: the digits are
synthetic (a fixed stroke pattern per class plus per-sample noise, generated
from the sample's index), and the sets are small so that a run takes
seconds. docs/programs.md shows the lines added to make it a repro program
and the verdicts they get.
"""
import argparse
import os
# OpenBLAS's sgemm gives other bits at another thread count (torch 1.13:
# grad.conv1.weight differs between 1 and 2 threads); keep BLAS on one
# thread so that --threads varies only PyTorch's own intra-op threads.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
import repro.torch


class SyntheticDigits(torch.utils.data.Dataset):
    """n 28x28 grey images of 10 classes, normalized like MNIST: the class's
    pattern (random dots, the same for every set) plus noise drawn from
    (seed, index), so sample i is the same in every worker and every run."""

    def __init__(self, n, seed):
        self.patterns = (torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
                         > 0.8).float()
        self.labels = torch.randint(0, 10, (n,), generator=torch.Generator().manual_seed(seed))
        self.seed = seed

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 100003 + i)
        y = int(self.labels[i])
        x = (self.patterns[y] + 0.3 * torch.randn(1, 28, 28, generator=g)).clamp(0, 1)
        return (x - 0.1307) / 0.3081, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        repro.torch.record_step(model, loss, data, target)
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{}]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset), loss.item()))


def test(model, test_loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(dim=1) == target).sum().item()
    n = len(test_loader.dataset)
    print("Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)".format(
        test_loss / n, correct, n, 100.0 * correct / n))


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST example (synthetic digits)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=5)
    parser.add_argument("--train-size", type=int, default=640)
    parser.add_argument("--test-size", type=int, default=200)
    args = parser.parse_args()
    repro.torch.seed(args.seed)

    loader_kwargs = {"shuffle": True, **repro.loader_kwargs()}
    train_loader = torch.utils.data.DataLoader(
        SyntheticDigits(args.train_size, seed=1), batch_size=args.batch_size, **loader_kwargs)
    test_loader = torch.utils.data.DataLoader(
        SyntheticDigits(args.test_size, seed=2), batch_size=args.test_batch_size)

    model = Net()
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    repro.torch.start("mnist", model, config=vars(args))
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        test(model, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
