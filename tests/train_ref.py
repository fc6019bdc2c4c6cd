#!/usr/bin/python3
"""PyTorch reference for Synor Compute's trainer (issue 13): a Llama-architecture model,
its loss, gradients and AdamW steps, computed in float64 from a case file.

    /usr/bin/python3 tests/train_ref.py CASE.bin OUT.bin
    /usr/bin/python3 tests/train_ref.py --self-check

The formats and the exact semantics are documented in docs/TRAINING.md ("Reference:
PyTorch"). PyTorch is a test-time reference only: nothing in the library or CLI imports it.
The module (Llama) is also what bench/train_torch.py times, in float32.
"""

import math
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MAGIC = 0x52545953  # the bytes "SYTR" read as a little-endian int32
VERSION = 1
INT_FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
              "seq_len", "batch", "shared_classifier", "steps")
FLOAT_FIELDS = ("rope_theta", "norm_eps", "lr", "beta1", "beta2", "adam_eps",
                "weight_decay", "grad_clip")
HEADER_BYTES = 4 * (2 + len(INT_FIELDS) + len(FLOAT_FIELDS))
LAYER_KINDS = ("rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3")
# torch.nn.utils.clip_grad_norm_ divides by (norm + 1e-6); the C side must do the same.
CLIP_EPS = 1e-6


class CaseError(Exception):
    """A case file that cannot be used; the message names the file, field and value."""


class Config:
    def __init__(self, dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len,
                 shared_classifier=True, rope_theta=10000.0, norm_eps=1e-5):
        self.dim = dim
        self.hidden_dim = hidden_dim
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.vocab_size = vocab_size
        self.seq_len = seq_len
        self.shared_classifier = bool(shared_classifier)
        self.rope_theta = rope_theta
        self.norm_eps = norm_eps

    @property
    def head_size(self):
        return self.dim // self.n_heads

    @property
    def kv_dim(self):
        return self.dim // self.n_heads * self.n_kv_heads

    def param_shapes(self):
        """(name, shape) of every stored parameter, in the case file's order."""
        D, H, L, V, KVD = self.dim, self.hidden_dim, self.n_layers, self.vocab_size, self.kv_dim
        per_layer = {"rms_att": (D,), "wq": (D, D), "wk": (KVD, D), "wv": (KVD, D),
                     "wo": (D, D), "rms_ffn": (D,), "w1": (H, D), "w2": (D, H), "w3": (H, D)}
        out = [("tok_emb", (V, D))]
        for kind in LAYER_KINDS:
            out.append((kind, (L,) + per_layer[kind]))
        out.append(("rms_final", (D,)))
        if not self.shared_classifier:
            out.append(("wcls", (V, D)))
        return out


def rmsnorm(x, w, eps: float):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, cos, sin):
    """x [B, T, heads, hs]; rotates the pairs (2i, 2i+1) of each head by cos/sin [T, hs/2]."""
    B, T, nh, hs = x.shape
    xr = x.reshape(B, T, nh, hs // 2, 2)
    a = xr[..., 0]
    b = xr[..., 1]
    c = cos[:T].view(1, T, 1, hs // 2)
    s = sin[:T].view(1, T, 1, hs // 2)
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).reshape(B, T, nh, hs)


class Block(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        D, H, KVD = cfg.dim, cfg.hidden_dim, cfg.kv_dim
        self.n_heads = cfg.n_heads
        self.n_kv_heads = cfg.n_kv_heads
        self.head_size = cfg.head_size
        self.norm_eps = float(cfg.norm_eps)
        self.scale = 1.0 / math.sqrt(cfg.head_size)
        self.rms_att = nn.Parameter(torch.ones(D, dtype=dtype))
        self.wq = nn.Parameter(torch.zeros(D, D, dtype=dtype))
        self.wk = nn.Parameter(torch.zeros(KVD, D, dtype=dtype))
        self.wv = nn.Parameter(torch.zeros(KVD, D, dtype=dtype))
        self.wo = nn.Parameter(torch.zeros(D, D, dtype=dtype))
        self.rms_ffn = nn.Parameter(torch.ones(D, dtype=dtype))
        self.w1 = nn.Parameter(torch.zeros(H, D, dtype=dtype))
        self.w2 = nn.Parameter(torch.zeros(D, H, dtype=dtype))
        self.w3 = nn.Parameter(torch.zeros(H, D, dtype=dtype))

    def forward(self, x, cos, sin, mask):
        B, T, D = x.shape
        nh, nkv, hs = self.n_heads, self.n_kv_heads, self.head_size
        h = rmsnorm(x, self.rms_att, self.norm_eps)
        # The 1/sqrt(hs) scale goes on q (B*T*D products) rather than on the scores (B*NH*T*T).
        q = rope(F.linear(h, self.wq).view(B, T, nh, hs), cos, sin).transpose(1, 2) * self.scale
        k = rope(F.linear(h, self.wk).view(B, T, nkv, hs), cos, sin).transpose(1, 2)
        v = F.linear(h, self.wv).view(B, T, nkv, hs).transpose(1, 2)
        if nkv != nh:
            # Query head j reads kv head j / (nh / nkv): each kv head repeated in place.
            k = k.repeat_interleave(nh // nkv, dim=1)
            v = v.repeat_interleave(nh // nkv, dim=1)
        att = torch.matmul(q, k.transpose(-2, -1)) + mask[:T, :T]
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, D)
        x = x + F.linear(y, self.wo)
        h = rmsnorm(x, self.rms_ffn, self.norm_eps)
        return x + F.linear(F.silu(F.linear(h, self.w1)) * F.linear(h, self.w3), self.w2)


class Llama(nn.Module):
    """llama2.c's model over all positions at once. forward(tokens [B, T]) -> logits [B, T, V]."""

    def __init__(self, cfg, dtype=torch.float32):
        super().__init__()
        D, V, T, hs = cfg.dim, cfg.vocab_size, cfg.seq_len, cfg.head_size
        self.norm_eps = float(cfg.norm_eps)
        self.shared = cfg.shared_classifier
        self.tok_emb = nn.Parameter(torch.zeros(V, D, dtype=dtype))
        self.layers = nn.ModuleList([Block(cfg, dtype) for _ in range(cfg.n_layers)])
        self.rms_final = nn.Parameter(torch.ones(D, dtype=dtype))
        if self.shared:
            self.register_parameter("wcls", None)
        else:
            self.wcls = nn.Parameter(torch.zeros(V, D, dtype=dtype))
        # Angles in float64 whatever the module's dtype, then rounded once.
        i = torch.arange(hs // 2, dtype=torch.float64)
        freq = float(cfg.rope_theta) ** (-2.0 * i / hs)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]
        self.register_buffer("cos", torch.cos(ang).to(dtype))
        self.register_buffer("sin", torch.sin(ang).to(dtype))
        mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
        self.register_buffer("mask", mask.to(dtype))

    def forward(self, tokens):
        x = F.embedding(tokens, self.tok_emb)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        x = rmsnorm(x, self.rms_final, self.norm_eps)
        wcls = self.wcls
        if wcls is None:
            return F.linear(x, self.tok_emb)
        return F.linear(x, wcls)


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def case_params(model):
    """(name, tensors) in the case file's order; per-layer kinds list one tensor per layer."""
    out = [("tok_emb", [model.tok_emb])]
    for kind in LAYER_KINDS:
        out.append((kind, [getattr(b, kind) for b in model.layers]))
    out.append(("rms_final", [model.rms_final]))
    if model.wcls is not None:
        out.append(("wcls", [model.wcls]))
    return out


def flat_params(model):
    return [t for _, ts in case_params(model) for t in ts]


def load_params(model, arrays):
    """arrays: name -> numpy array shaped as Config.param_shapes() says."""
    with torch.no_grad():
        for name, tensors in case_params(model):
            a = arrays[name]
            parts = a if name in LAYER_KINDS else [a]
            for t, part in zip(tensors, parts):
                t.copy_(torch.from_numpy(np.ascontiguousarray(part)))


def flatten(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors]).to(torch.float64).numpy()


def make_optimizer(model, lr, betas, eps, weight_decay, foreach=None):
    """AdamW with nanoGPT's groups: weight decay on the matrices, none on the norm weights."""
    params = flat_params(model)
    decay = [p for p in params if p.dim() == 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, foreach=foreach)


# ---- case files ----

def read_case(path):
    """Parses and checks a case file; raises CaseError naming the file, field and value."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CaseError(f"{path}: cannot read: {e.strerror}")
    if len(data) < HEADER_BYTES:
        raise CaseError(f"{path}: {len(data)} bytes, shorter than the {HEADER_BYTES}-byte header")
    magic, version = struct.unpack_from("<ii", data, 0)
    if magic != MAGIC:
        raise CaseError(f"{path}: field magic = 0x{magic & 0xffffffff:08x}: "
                        f"expected 0x{MAGIC:08x} (\"SYTR\")")
    if version != VERSION:
        raise CaseError(f"{path}: field version = {version}: only version {VERSION} is known")
    ints = dict(zip(INT_FIELDS, struct.unpack_from("<" + "i" * len(INT_FIELDS), data, 8)))
    floats = dict(zip(FLOAT_FIELDS, struct.unpack_from("<" + "f" * len(FLOAT_FIELDS), data,
                                                       8 + 4 * len(INT_FIELDS))))

    def bad(field, value, why):
        raise CaseError(f"{path}: field {field} = {value}: {why}")

    for field in INT_FIELDS:
        lo = 0 if field in ("shared_classifier", "steps") else 1
        if ints[field] < lo:
            bad(field, ints[field], f"must be >= {lo}")
    if ints["shared_classifier"] > 1:
        bad("shared_classifier", ints["shared_classifier"], "must be 0 or 1")
    if ints["dim"] % ints["n_heads"]:
        bad("n_heads", ints["n_heads"], f"must divide dim ({ints['dim']})")
    if (ints["dim"] // ints["n_heads"]) % 2:
        bad("n_heads", ints["n_heads"],
            f"head size dim/n_heads = {ints['dim'] // ints['n_heads']} must be even (RoPE pairs)")
    if ints["n_heads"] % ints["n_kv_heads"]:
        bad("n_kv_heads", ints["n_kv_heads"], f"must divide n_heads ({ints['n_heads']})")
    for field in FLOAT_FIELDS:
        if not math.isfinite(floats[field]):
            bad(field, floats[field], "must be finite")
    if floats["rope_theta"] <= 0:
        bad("rope_theta", floats["rope_theta"], "must be > 0")
    for field in ("norm_eps", "lr", "adam_eps", "weight_decay", "grad_clip"):
        if floats[field] < 0:
            bad(field, floats[field], "must be >= 0")
    for field in ("beta1", "beta2"):
        if not 0.0 <= floats[field] < 1.0:
            bad(field, floats[field], "must be in [0, 1)")

    cfg = Config(ints["dim"], ints["hidden_dim"], ints["n_layers"], ints["n_heads"],
                 ints["n_kv_heads"], ints["vocab_size"], ints["seq_len"],
                 ints["shared_classifier"] == 1, floats["rope_theta"], floats["norm_eps"])
    shapes = cfg.param_shapes()
    n_params = sum(math.prod(s) for _, s in shapes)
    B, T = ints["batch"], ints["seq_len"]
    expected = HEADER_BYTES + 4 * n_params + 4 * B * (T + 1)
    if len(data) != expected:
        raise CaseError(f"{path}: {len(data)} bytes; the header's sizes need {expected} "
                        f"({n_params} parameters, tokens [{B}][{T + 1}])")
    arrays = {}
    off = HEADER_BYTES
    for name, shape in shapes:
        n = math.prod(shape)
        a = np.frombuffer(data, dtype="<f4", count=n, offset=off).astype(np.float64).reshape(shape)
        bad_at = np.flatnonzero(~np.isfinite(a))
        if bad_at.size:
            idx = np.unravel_index(bad_at[0], shape)
            raise CaseError(f"{path}: field {name}{list(map(int, idx))} = {a[idx]}: must be finite")
        arrays[name] = a
        off += 4 * n
    tokens = np.frombuffer(data, dtype="<i4", count=B * (T + 1), offset=off).astype(np.int64)
    tokens = tokens.reshape(B, T + 1)
    bad_at = np.flatnonzero((tokens < 0) | (tokens >= cfg.vocab_size))
    if bad_at.size:
        b, t = np.unravel_index(bad_at[0], tokens.shape)
        raise CaseError(f"{path}: field tokens[{b}][{t}] = {tokens[b, t]}: "
                        f"must be in [0, {cfg.vocab_size})")
    hyper = {k: v for k, v in floats.items() if k not in ("rope_theta", "norm_eps")}
    return {"cfg": cfg, "batch": B, "steps": ints["steps"], "hyper": hyper,
            "params": arrays, "tokens": tokens}


def write_case(path, cfg, batch, steps, hyper, params, tokens):
    """The inverse of read_case (used by tests/train_case.py and the self-check)."""
    ints = {"dim": cfg.dim, "hidden_dim": cfg.hidden_dim, "n_layers": cfg.n_layers,
            "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads, "vocab_size": cfg.vocab_size,
            "seq_len": cfg.seq_len, "batch": batch,
            "shared_classifier": int(cfg.shared_classifier), "steps": steps}
    floats = dict(hyper, rope_theta=cfg.rope_theta, norm_eps=cfg.norm_eps)
    with open(path, "wb") as f:
        f.write(struct.pack("<ii", MAGIC, VERSION))
        f.write(struct.pack("<" + "i" * len(INT_FIELDS), *(ints[k] for k in INT_FIELDS)))
        f.write(struct.pack("<" + "f" * len(FLOAT_FIELDS), *(floats[k] for k in FLOAT_FIELDS)))
        for name, shape in cfg.param_shapes():
            a = np.asarray(params[name], dtype="<f4")
            assert a.shape == shape, (name, a.shape, shape)
            f.write(a.tobytes())
        t = np.asarray(tokens, dtype="<i4")
        assert t.shape == (batch, cfg.seq_len + 1)
        f.write(t.tobytes())


def run_case(case):
    """K steps on the case's batch. Returns (losses [K+1], grads [K+1] flat float64 arrays taken
    before clipping, final parameters flat)."""
    cfg, h = case["cfg"], case["hyper"]
    model = Llama(cfg, torch.float64)
    load_params(model, case["params"])
    tokens = torch.from_numpy(case["tokens"])
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    opt = make_optimizer(model, h["lr"], (h["beta1"], h["beta2"]), h["adam_eps"],
                         h["weight_decay"])
    params = flat_params(model)
    losses, grads = [], []
    for k in range(case["steps"] + 1):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        losses.append(loss.item())
        grads.append(flatten([p.grad for p in params]))
        if k == case["steps"]:
            break
        if h["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params, h["grad_clip"])
        opt.step()
    return losses, grads, flatten(params)


def write_out(path, losses, grads, final):
    with open(path, "wb") as f:
        for loss, g in zip(losses, grads):
            f.write(np.array([loss], dtype="<f8").tobytes())
            f.write(g.astype("<f8").tobytes())
        f.write(final.astype("<f8").tobytes())


def main(argv):
    if argv == ["--self-check"]:
        import train_ref_check
        return train_ref_check.self_check()
    if len(argv) != 2 or argv[0].startswith("-"):
        print("usage: train_ref.py CASE.bin OUT.bin | --self-check", file=sys.stderr)
        return 2
    try:
        case = read_case(argv[0])
    except CaseError as e:
        print(f"train_ref.py: {e}", file=sys.stderr)
        return 2
    # Cases are small; one thread keeps the reference from crowding a parallel ctest run.
    torch.set_num_threads(1)
    losses, grads, final = run_case(case)
    try:
        write_out(argv[1], losses, grads, final)
    except OSError as e:
        print(f"train_ref.py: {argv[1]}: cannot write: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
