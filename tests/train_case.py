#!/usr/bin/python3
"""Writes a random trainer case file (the format tests/train_ref.py reads; docs/TRAINING.md).

    /usr/bin/python3 tests/train_case.py --out case.bin --dim 16 --hidden 40 --layers 2 \
        --heads 4 --kv-heads 2 --vocab 37 --seq 7 --batch 3 --shared 1 --steps 1 --seed 1

Parameters are drawn so that activations stay of order one (matrices N(0, 1/fan_in), norm
weights 1 + N(0, 0.2^2), embeddings N(0, 1)) and rounded to float32, so the case read back
from the file is exactly the case drawn.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_ref  # noqa: E402


def default_hyper(**over):
    h = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "adam_eps": 1e-8, "weight_decay": 0.1,
         "grad_clip": 1.0}
    h.update(over)
    return {k: float(np.float32(v)) for k, v in h.items()}


def random_case(cfg, batch, steps, hyper, seed):
    """A case dict as train_ref.read_case returns it, every value float32-representable."""
    rng = np.random.RandomState(seed)
    params = {}
    for name, shape in cfg.param_shapes():
        if name.startswith("rms"):
            a = 1.0 + 0.2 * rng.standard_normal(shape)
        elif name == "tok_emb":
            a = rng.standard_normal(shape)
        else:
            a = rng.standard_normal(shape) / np.sqrt(shape[-1])
        params[name] = a.astype(np.float32).astype(np.float64)
    tokens = rng.randint(0, cfg.vocab_size, size=(batch, cfg.seq_len + 1)).astype(np.int64)
    return {"cfg": cfg, "batch": batch, "steps": steps, "hyper": hyper, "params": params,
            "tokens": tokens}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=40)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=37)
    ap.add_argument("--seq", type=int, default=7)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--shared", type=int, choices=(0, 1), default=1)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--norm-eps", type=float, default=1e-5)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--adam-eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.heads <= 0 or a.kv_heads <= 0 or a.dim % a.heads or a.heads % a.kv_heads \
            or (a.dim // a.heads) % 2:
        ap.error("need heads dividing dim into an even head size, kv-heads dividing heads")
    cfg = train_ref.Config(a.dim, a.hidden, a.layers, a.heads, a.kv_heads, a.vocab, a.seq,
                           a.shared == 1, float(np.float32(a.rope_theta)),
                           float(np.float32(a.norm_eps)))
    hyper = default_hyper(lr=a.lr, beta1=a.beta1, beta2=a.beta2, adam_eps=a.adam_eps,
                          weight_decay=a.weight_decay, grad_clip=a.grad_clip)
    case = random_case(cfg, a.batch, a.steps, hyper, a.seed)
    train_ref.write_case(a.out, cfg, a.batch, a.steps, hyper, case["params"], case["tokens"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
