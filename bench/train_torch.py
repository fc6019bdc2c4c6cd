#!/usr/bin/python3
"""PyTorch's CPU training throughput for the trainer's model (the peer of issue 13's bar).

    /usr/bin/python3 bench/train_torch.py --dim 288 --hidden 768 --layers 6 --heads 6 \
        --kv-heads 6 --vocab 512 --seq 256 --batch 8 --threads 2 --steps 20 --warmup 3

The model is tests/train_ref.py's Llama module in float32. Each timed step is a whole
training iteration: zero_grad, forward, loss, backward, clip_grad_norm_(1.0), AdamW step.
Prints one JSON line; tokens_per_s is batch * seq / the median step time. --threads sets
PyTorch's and OpenBLAS's threads; --omp-wait passive (the default) keeps idle OpenMP threads
from spinning against OpenBLAS's on a machine with few cores (docs/TRAINING.md).
"""

import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
torch = train_ref = None  # imported by main(), once OpenMP's wait policy is set


def set_blas_threads(n):
    """Debian's PyTorch does its matrix products in OpenBLAS (pthreads build), whose thread
    count torch.set_num_threads leaves alone: it would run one thread per core. Returns the
    count OpenBLAS reports afterwards, or None where no OpenBLAS is loaded."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None
    lib.openblas_set_num_threads(n)
    return lib.openblas_get_num_threads()


def init_weights(model, n_layers, gen):
    """nanoGPT's initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2 L)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.split(".")[-1].startswith("rms"):
                p.fill_(1.0)
            elif name.endswith("wo") or name.endswith("w2"):
                p.normal_(0.0, 0.02 / math.sqrt(2 * n_layers), generator=gen)
            else:
                p.normal_(0.0, 0.02, generator=gen)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=288)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=6)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--shared", type=int, choices=(0, 1), default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jit", type=int, choices=(0, 1), default=0,
                    help="1: torch.jit.script the module (measured no faster here; see docs)")
    ap.add_argument("--omp-wait", choices=("passive", "active", "default"), default="passive",
                    help="OpenMP's OMP_WAIT_POLICY for PyTorch's threads (see docs)")
    a = ap.parse_args(argv)
    if a.heads <= 0 or a.kv_heads <= 0 or a.dim % a.heads or a.heads % a.kv_heads \
            or (a.dim // a.heads) % 2:
        ap.error("need heads dividing dim into an even head size, kv-heads dividing heads")
    if a.steps < 1 or a.warmup < 0 or a.threads < 1:
        ap.error("need --steps >= 1, --warmup >= 0, --threads >= 1")
    # libgomp reads its wait policy once, when torch loads it.
    if a.omp_wait != "default":
        os.environ["OMP_WAIT_POLICY"] = a.omp_wait.upper()
    global torch, train_ref
    import torch
    import train_ref

    torch.set_num_threads(a.threads)
    blas_threads = set_blas_threads(a.threads)
    gen = torch.Generator().manual_seed(a.seed)
    cfg = train_ref.Config(a.dim, a.hidden, a.layers, a.heads, a.kv_heads, a.vocab, a.seq,
                           a.shared == 1)
    model = train_ref.Llama(cfg, torch.float32)
    init_weights(model, a.layers, gen)
    params = train_ref.flat_params(model)
    n_params = sum(p.numel() for p in params)
    fwd = torch.jit.script(model) if a.jit else model
    opt = train_ref.make_optimizer(model, a.lr, (0.9, 0.95), 1e-8, a.weight_decay)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    times, losses = [], []
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = train_ref.loss_fn(fwd(inputs), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        t1 = time.perf_counter()
        losses.append(loss.item())
        if step >= a.warmup:
            times.append(t1 - t0)
    med = statistics.median(times)
    print(json.dumps({
        "peer": "pytorch", "version": torch.__version__, "mode": "jit" if a.jit else "eager",
        "omp_wait": a.omp_wait,
        "threads": a.threads, "blas_threads": blas_threads, "dim": a.dim, "hidden": a.hidden,
        "layers": a.layers, "heads": a.heads, "kv_heads": a.kv_heads, "vocab": a.vocab,
        "seq": a.seq, "batch": a.batch, "shared": a.shared, "tokens_per_step": a.batch * a.seq,
        "steps": a.steps, "step_s_median": round(med, 6), "step_s_min": round(min(times), 6),
        "tokens_per_s": round(a.batch * a.seq / med, 1), "params": n_params,
        "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
