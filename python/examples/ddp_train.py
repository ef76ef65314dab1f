#!/usr/bin/python3
"""DistributedDataParallel training over the torch.distributed backend "mrc".

A small CNN learns to classify 8x8 "digits" (ten noisy stroke templates, generated from a seed:
no download) on 2-4 processes. Every step prints the loss (mean over ranks), the step time and
the bytes this rank sent on each plane during the step.

    python/examples/ddp_train.py --ranks 2                      # 4 loopback planes, no root
    python/examples/ddp_train.py --ranks 2 --compare-gloo       # same run on Gloo, losses checked
    python/examples/ddp_train.py --ranks 4 --cut-plane 2 --cut-at 20 --cut-steps 15
    python/examples/ddp_train.py --ranks 2 --compare-gloo --cut-plane 1   # both at once
    python/examples/ddp_train.py --testbed --cut-plane 2        # root: scripts/testbed.sh hosts

--compare-gloo trains a second, identical copy of the model through a Gloo group in the same
processes on the same batches and checks after every step that both losses agree to
floating-point tolerance. --cut-plane takes one plane of every rank down at --cut-at and back up
--cut-steps later (Context::set_plane_up; with --testbed the plane's links really go down, with
scripts/testbed.sh fail/repair); training must go on with no error and no lost step, and the
plane must carry nothing while it is down. Exit status 0 when every check passed, 1 otherwise.

Needs PYTHONPATH to hold mrc_torch (build/<preset>/python) and Debian's /usr/bin/python3 with
torch. Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR/PORT set) each process runs one rank.
"""

import argparse
import copy
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import mrc_torch

REPO = Path(__file__).resolve().parents[2]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2, help="local processes to start (default 2)")
    p.add_argument("--steps", type=int, default=60, help="training steps (default 60)")
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step (default 32)")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                   help="parameters and data (float64 keeps >2-rank comparisons with Gloo "
                        "within tolerance for much longer runs)")
    p.add_argument("--backend", choices=["mrc", "gloo"], default="mrc")
    p.add_argument("--compare-gloo", action="store_true",
                   help="also train an identical model over Gloo and check the losses match")
    p.add_argument("--rtol", type=float, default=1e-4,
                   help="relative loss tolerance for --compare-gloo (default 1e-4)")
    p.add_argument("--cut-plane", type=int, default=None, help="plane to take down mid-training")
    p.add_argument("--cut-at", type=int, default=None, help="step the plane goes down (default: a third in)")
    p.add_argument("--cut-steps", type=int, default=None, help="steps it stays down (default: a third)")
    p.add_argument("--init-method", default=None,
                   help="rendezvous URL (default: a file store in a temporary directory)")
    p.add_argument("--testbed", action="store_true",
                   help="run rank i in namespace <prefix>-h<i> of scripts/testbed.sh (root; 2 hosts)")
    p.add_argument("--testbed-prefix", default="mrctb", help="the testbed's --prefix (default mrctb)")
    p.add_argument("--json", default=None, help="write rank 0's per-step record here")
    p.add_argument("--quiet", action="store_true", help="only the summary")
    args = p.parse_args(argv)
    if args.cut_plane is not None:
        args.cut_at = args.steps // 3 if args.cut_at is None else args.cut_at
        args.cut_steps = args.steps // 3 if args.cut_steps is None else args.cut_steps
    if args.backend == "gloo" and (args.compare_gloo or args.cut_plane is not None):
        p.error("--compare-gloo and --cut-plane need --backend mrc")
    if args.testbed and args.cut_plane == 0:
        p.error("--testbed: plane 0 carries the TCP store and Gloo; cut another plane")
    return args


# ---- data and model ------------------------------------------------------------------------

def digits_dataset(samples, seed):
    """Ten 8x8 stroke templates plus noise, shifted by up to one pixel: (images, labels)."""
    g = torch.Generator().manual_seed(seed)
    templates = (torch.rand(10, 8, 8, generator=g) > 0.6).float()
    labels = torch.randint(0, 10, (samples,), generator=g)
    images = templates[labels] + 0.35 * torch.randn(samples, 8, 8, generator=g)
    shifts = torch.randint(-1, 2, (samples, 2), generator=g)
    for i in range(samples):
        images[i] = torch.roll(images[i], shifts=(int(shifts[i, 0]), int(shifts[i, 1])), dims=(0, 1))
    return images.unsqueeze(1), labels


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 32 x 4 x 4
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 64 x 2 x 2
        nn.Flatten(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


class Trainer:
    """One DDP replica of the model over one process group, with its own optimizer."""

    def __init__(self, model, group, lr):
        self.ddp = DDP(model, process_group=group)
        self.optimizer = torch.optim.SGD(self.ddp.parameters(), lr=lr, momentum=0.9)
        self.loss_fn = nn.CrossEntropyLoss()

    def step(self, images, labels):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.ddp(images), labels)
        loss.backward()  # DDP all-reduces the gradients here
        self.optimizer.step()
        return loss.detach()


def mean_over_ranks(value, group, world):
    t = value.clone().reshape(1)
    dist.all_reduce(t, group=group)
    return float(t[0]) / world


# ---- planes --------------------------------------------------------------------------------

def sent_per_plane():
    return [s["bytes_sent"] for s in mrc_torch.plane_stats()]


def set_plane(args, rank, up):
    """Takes the cut plane down or up: this rank's context, or (testbed) the real links."""
    if args.testbed:
        if rank == 0:
            verb = "repair" if up else "fail"
            subprocess.run(testbed_command(args, verb, str(args.cut_plane)), check=True,
                           stdout=subprocess.DEVNULL)
    else:
        mrc_torch.set_plane_up(args.cut_plane, up)


def cut_state(args, step):
    """'down' at the step the plane goes down, 'up' when it comes back, else None."""
    if args.cut_plane is None:
        return None
    if step == args.cut_at:
        return "down"
    if step == args.cut_at + args.cut_steps:
        return "up"
    return None


def is_down(args, step):
    return args.cut_plane is not None and args.cut_at <= step < args.cut_at + args.cut_steps


# ---- one rank ------------------------------------------------------------------------------

def format_step(r, args):
    text = f"step {r['step']:4d}  loss {r['loss']:.6f}"
    if "gloo_loss" in r:
        text += f"  gloo {r['gloo_loss']:.6f}"
    text += f"  time {r['time_ms']:7.2f} ms"
    if r.get("plane_bytes") is not None:
        cells = []
        for p, b in enumerate(r["plane_bytes"]):
            down = p == args.cut_plane and r["plane_down"]
            cells.append(f"p{p} {b / 1e3:5.1f}" + (" DOWN" if down else ""))
        text += "  sent kB: " + "  ".join(cells)
    return text


def train_steps(rank, world, args, trainer, gloo):
    images, labels = digits_dataset(4096, args.seed)
    images = images.to(getattr(torch, args.dtype))
    mine = torch.arange(rank, len(labels), world)  # this rank's shard
    mrc = args.backend == "mrc"
    sent = sent_per_plane() if mrc else None
    records = []
    for step in range(args.steps):
        state = cut_state(args, step)
        if state is not None:
            set_plane(args, rank, up=state == "up")
            # Count from here: the last step's acknowledgements may still have left on the plane.
            sent = sent_per_plane()
        batch = mine[(step * args.batch + torch.arange(args.batch)) % len(mine)]
        x, y = images[batch], labels[batch]
        start = time.perf_counter()
        loss = trainer.step(x, y)
        elapsed = time.perf_counter() - start
        r = {"step": step, "time_ms": elapsed * 1e3, "local_loss": float(loss),
             "plane_down": is_down(args, step)}
        if gloo is not None:
            gloo_trainer, gloo_group = gloo
            start = time.perf_counter()
            gloo_loss = gloo_trainer.step(x, y)
            r["gloo_time_ms"] = (time.perf_counter() - start) * 1e3
            r["local_gloo_loss"] = float(gloo_loss)
            r["gloo_loss"] = mean_over_ranks(gloo_loss, gloo_group, world)
        r["loss"] = mean_over_ranks(loss, None, world)
        if mrc:
            now = sent_per_plane()
            r["plane_bytes"] = [a - b for a, b in zip(now, sent)]
            sent = now
        records.append(r)
        if rank == 0 and not args.quiet:
            print(format_step(r, args), flush=True)
    return records


def check_records(records, args):
    """What went wrong on this rank: losses that differ from Gloo's, traffic on a cut plane."""
    problems = []
    if args.compare_gloo:
        for r in records:
            a, b = r["local_loss"], r["local_gloo_loss"]
            if abs(a - b) > args.rtol * abs(b) + 1e-7:
                problems.append(f"step {r['step']}: loss {a!r} over mrc, {b!r} over gloo")
    if args.cut_plane is not None and not args.testbed:
        for r in records:
            if r["plane_down"] and r["plane_bytes"][args.cut_plane] != 0:
                problems.append(f"step {r['step']}: plane {args.cut_plane} is down but sent "
                                f"{r['plane_bytes'][args.cut_plane]} bytes")
    if len(records) != args.steps:
        problems.append(f"{len(records)} of {args.steps} steps ran")
    return problems


def summarize(records, problems, world, args):
    times = [r["time_ms"] for r in records]
    print(f"# {len(records)} steps on {world} ranks over {args.backend}: loss "
          f"{records[0]['loss']:.4f} -> {records[-1]['loss']:.4f}, step time mean "
          f"{sum(times) / len(times):.2f} ms, max {max(times):.2f} ms")
    if records[0].get("plane_bytes") is not None:
        total = [sum(r["plane_bytes"][p] for r in records) for p in range(len(records[0]["plane_bytes"]))]
        print("# rank 0 sent per plane: " + "  ".join(f"p{p} {b / 1e6:.2f} MB" for p, b in enumerate(total)))
    if args.compare_gloo:
        gloo_times = [r["gloo_time_ms"] for r in records]
        print(f"# the same steps over gloo: step time mean {sum(gloo_times) / len(gloo_times):.2f} ms, "
              f"max {max(gloo_times):.2f} ms")
        worst = max(abs(r["local_loss"] - r["local_gloo_loss"]) for r in records)
        print(f"# gloo comparison: largest loss difference {worst:.3g} over {len(records)} steps "
              f"(rtol {args.rtol:g}): {'MATCH' if not any('gloo' in p for p in problems) else 'DIFFER'}")
    if args.cut_plane is not None:
        down = [r for r in records if r["plane_down"]]
        cut = sum(r["plane_bytes"][args.cut_plane] for r in down)
        others = sum(sum(r["plane_bytes"]) for r in down) - cut
        print(f"# plane {args.cut_plane} down for steps {args.cut_at}-{args.cut_at + args.cut_steps - 1}: "
              f"it sent {cut} B meanwhile, the other planes {others / 1e6:.2f} MB; "
              f"{len(records)} of {args.steps} steps completed")
    for p in problems:
        print(f"# PROBLEM (rank 0): {p}")
    if any("gloo" in p for p in problems) and world > 2 and args.dtype == "float32":
        print("# (with more than 2 ranks Gloo adds the gradients in another order; training "
              "amplifies those float32 rounding differences over long runs: --dtype float64 "
              "tells rounding from a wrong result)")
    print("# OK" if not problems else "# FAILED", flush=True)


def run_rank(rank, world, args, init_method):
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    dist.init_process_group(args.backend, init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    model = make_model().to(getattr(torch, args.dtype))
    trainer = Trainer(copy.deepcopy(model), None, args.lr)
    gloo = None
    if args.compare_gloo:
        group = dist.new_group(backend="gloo")
        gloo = (Trainer(copy.deepcopy(model), group, args.lr), group)
    if rank == 0 and not args.quiet:
        planes = ",".join(s["address"] for s in mrc_torch.plane_stats()) if args.backend == "mrc" else "-"
        print(f"# DDP on {world} ranks over {args.backend} (planes {planes}), {args.steps} steps of "
              f"{args.batch} samples per rank, {sum(p.numel() for p in model.parameters())} parameters",
              flush=True)
    records = train_steps(rank, world, args, trainer, gloo)
    problems = check_records(records, args)
    failed = torch.tensor([1.0 if problems else 0.0])
    dist.all_reduce(failed)  # every rank learns whether any rank failed
    if rank == 0:
        summarize(records, problems, world, args)
        if args.json:
            Path(args.json).write_text(json.dumps({"world": world, "records": records,
                                                   "problems": problems, "ranks_failed": float(failed)}))
    dist.destroy_process_group()
    return 1 if failed.item() > 0 else 0


def spawned_rank(rank, world, args, init_method):
    sys.exit(run_rank(rank, world, args, init_method))


# ---- launching -----------------------------------------------------------------------------

def testbed_command(args, *words):
    return [str(REPO / "scripts/testbed.sh"), "--prefix", args.testbed_prefix, *words]


def launch_testbed(args):
    """Rank i in namespace <prefix>-h<i> with that host's plane addresses (root, testbed up)."""
    procs = []
    for rank in range(args.ranks):
        planes = subprocess.run(testbed_command(args, "addrs", str(rank)), check=True,
                                capture_output=True, text=True).stdout.strip()
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks), MASTER_ADDR="198.18.0.1",
                   MASTER_PORT=os.environ.get("MASTER_PORT", "29531"), MRC_PLANES=planes,
                   GLOO_SOCKET_IFNAME=f"h{rank}p0")
        procs.append(subprocess.Popen(["ip", "netns", "exec", f"{args.testbed_prefix}-h{rank}", sys.executable,
                                       __file__] + sys.argv[1:], env=env))
    return max(p.wait() for p in procs)


def main():
    args = parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun, or launched below
        return run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, "env://")
    if args.testbed:
        return launch_testbed(args)
    with tempfile.TemporaryDirectory(prefix="mrc-ddp-") as tmp:
        init_method = args.init_method or f"file://{tmp}/store"
        try:
            mp.spawn(spawned_rank, args=(args.ranks, args, init_method), nprocs=args.ranks)
        except mp.ProcessExitedException as e:
            print(f"# a rank failed: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
