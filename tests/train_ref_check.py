"""train_ref.py --self-check: checks the reference against things it does not share code with.

(a) autograd gradients of the module against central finite differences (float64);
(b) the module's logits and loss against a per-position loop written like llama2.c's run.c
    (KV cache, RoPE pair by pair, one head at a time);
(c) clipping and AdamW over two steps against the update written out in numpy (the formula
    docs/TRAINING.md gives the C trainer), and the last step's loss and gradients against a
    fresh model at the final parameters;
(d) the file path: a case written, run through main(), read back; bad case files refused with
    exit 2 and the field named.
"""

import contextlib
import io
import math
import os
import sys
import tempfile

import numpy as np
import torch

import train_case
import train_ref

CONFIGS = [  # D, H, L, NH, NKV, V, T, shared, rope_theta
    (16, 40, 2, 4, 2, 37, 7, True, 10000.0),
    (16, 40, 2, 4, 2, 37, 7, False, 10000.0),
    (16, 40, 2, 4, 4, 37, 7, True, 500.0),  # no grouping: the path the benchmark takes
]
BATCH = 3


class Checker:
    def __init__(self):
        self.failures = 0

    def report(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures += 1


def make_case(conf, seed, steps=1, **hyper):
    D, H, L, NH, NKV, V, T, shared, theta = conf
    # float32 values throughout, so that the case read back from a file is this very case.
    cfg = train_ref.Config(D, H, L, NH, NKV, V, T, shared, float(np.float32(theta)),
                           float(np.float32(1e-5)))
    return train_case.random_case(cfg, BATCH, steps, train_case.default_hyper(**hyper), seed)


def model_of(case):
    m = train_ref.Llama(case["cfg"], torch.float64)
    train_ref.load_params(m, case["params"])
    return m


def io_of(case):
    t = torch.from_numpy(case["tokens"])
    return t[:, :-1], t[:, 1:]


def describe(conf):
    D, H, L, NH, NKV, V, T, shared, theta = conf
    return (f"D={D} H={H} L={L} NH={NH} NKV={NKV} V={V} T={T} B={BATCH} "
            f"shared={int(shared)} theta={theta:g}")


# ---- (b) run.c, one position at a time ----

def runc_rmsnorm(x, weight, eps):
    ss = np.dot(x, x) / x.size + eps
    return weight * (x / math.sqrt(ss))


def runc_forward(cfg, p, tokens):
    """Logits [T, V] for one sequence, as run.c's forward() computes them position by position."""
    D, hs, NH, NKV, KVD = cfg.dim, cfg.head_size, cfg.n_heads, cfg.n_kv_heads, cfg.kv_dim
    L, T = cfg.n_layers, len(tokens)
    kv_mul = NH // NKV
    wcls = p["tok_emb"] if cfg.shared_classifier else p["wcls"]
    key_cache = np.zeros((L, T, KVD))
    value_cache = np.zeros((L, T, KVD))
    out = np.zeros((T, cfg.vocab_size))
    for pos, token in enumerate(tokens):
        x = p["tok_emb"][token].copy()
        for l in range(L):
            xb = runc_rmsnorm(x, p["rms_att"][l], cfg.norm_eps)
            q = p["wq"][l] @ xb
            k = p["wk"][l] @ xb
            v = p["wv"][l] @ xb
            for i in range(0, D, 2):
                head_dim = i % hs
                freq = 1.0 / cfg.rope_theta ** (head_dim / hs)
                val = pos * freq
                fcr, fci = math.cos(val), math.sin(val)
                for vec in ((q, k) if i < KVD else (q,)):
                    v0, v1 = vec[i], vec[i + 1]
                    vec[i] = v0 * fcr - v1 * fci
                    vec[i + 1] = v0 * fci + v1 * fcr
            key_cache[l, pos] = k
            value_cache[l, pos] = v
            xb = np.zeros(D)
            for h in range(NH):
                qh = q[h * hs:(h + 1) * hs]
                kvo = (h // kv_mul) * hs
                att = np.array([np.dot(qh, key_cache[l, t, kvo:kvo + hs]) / math.sqrt(hs)
                                for t in range(pos + 1)])
                att = np.exp(att - att.max())
                att /= att.sum()
                for t in range(pos + 1):
                    xb[h * hs:(h + 1) * hs] += att[t] * value_cache[l, t, kvo:kvo + hs]
            x = x + p["wo"][l] @ xb
            xb = runc_rmsnorm(x, p["rms_ffn"][l], cfg.norm_eps)
            hb = p["w1"][l] @ xb
            hb2 = p["w3"][l] @ xb
            hb = hb * (1.0 / (1.0 + np.exp(-hb))) * hb2
            x = x + p["w2"][l] @ hb
        x = runc_rmsnorm(x, p["rms_final"], cfg.norm_eps)
        out[pos] = wcls @ x
    return out


def check_runc(chk, conf, seed):
    case = make_case(conf, seed)
    inputs, targets = io_of(case)
    with torch.no_grad():
        logits = model_of(case)(inputs)
        loss = train_ref.loss_fn(logits, targets).item()
    logits = logits.numpy()
    ref = np.stack([runc_forward(case["cfg"], case["params"], row)
                    for row in case["tokens"][:, :-1]])
    err = np.abs(logits - ref).max() / max(1.0, np.abs(ref).max())
    chk.report(err <= 1e-10, f"(b) logits vs run.c loop, {describe(conf)}: max rel err {err:.2e} "
               f"(|logits| up to {np.abs(ref).max():.2f})")
    flat = ref.reshape(-1, ref.shape[-1])
    m = flat.max(axis=1)
    lse = m + np.log(np.exp(flat - m[:, None]).sum(axis=1))
    picked = flat[np.arange(flat.shape[0]), case["tokens"][:, 1:].reshape(-1)]
    ref_loss = float(np.mean(lse - picked))
    chk.report(abs(loss - ref_loss) <= 1e-12 * max(1.0, abs(ref_loss)),
               f"(b) loss vs run.c loop: {loss:.15f} vs {ref_loss:.15f}")
    # bench/train_torch.py --jit 1 times the scripted module: it must be the same model.
    with torch.no_grad():
        scripted = torch.jit.script(model_of(case))(inputs).numpy()
    err = np.abs(scripted - ref).max() / max(1.0, np.abs(ref).max())
    chk.report(err <= 1e-10, f"(b) torch.jit.script'ed module vs run.c loop: max rel err {err:.2e}")


# ---- (a) finite differences ----

def check_fd(chk, conf, seed, per_tensor=3, h=1e-5):
    case = make_case(conf, seed)
    inputs, targets = io_of(case)
    model = model_of(case)
    loss = train_ref.loss_fn(model(inputs), targets)
    loss.backward()
    rng = np.random.RandomState(seed + 100)
    used_rows = sorted(set(case["tokens"][:, :-1].reshape(-1).tolist()))
    worst, n, gmax = 0.0, 0, 0.0
    for name, tensors in train_ref.case_params(model):
        for layer, t in enumerate(tensors):
            for _ in range(per_tensor):
                if name == "tok_emb" and not case["cfg"].shared_classifier:
                    # Rows of tokens never read have no gradient: sample rows that matter.
                    idx = (int(rng.choice(used_rows)), int(rng.randint(t.shape[1])))
                else:
                    idx = tuple(int(rng.randint(s)) for s in t.shape)
                ad = t.grad[idx].item()
                with torch.no_grad():
                    x0 = t[idx].item()
                    t[idx] = x0 + h
                    lp = train_ref.loss_fn(model(inputs), targets).item()
                    t[idx] = x0 - h
                    lm = train_ref.loss_fn(model(inputs), targets).item()
                    t[idx] = x0
                fd = (lp - lm) / (2 * h)
                err = abs(fd - ad) / max(abs(ad), 1e-3)
                n += 1
                gmax = max(gmax, abs(ad))
                if err > worst:
                    worst, where = err, f"{name}[{layer}]{list(idx)}: autograd {ad:.6e} fd {fd:.6e}"
    chk.report(worst <= 1e-6, f"(a) autograd vs central differences (h={h:g}), {n} entries over "
               f"every tensor, {describe(conf)}: worst rel err {worst:.2e} at {where}; "
               f"largest |grad| sampled {gmax:.3e}")


# ---- (c) clipping and AdamW ----

def numpy_adamw(case, grads, steps):
    """The update torch 1.13's clip_grad_norm_ + AdamW make, written out."""
    h = case["hyper"]
    names = case["cfg"].param_shapes()
    p = np.concatenate([case["params"][name].reshape(-1) for name, _ in names])
    # Matrices decay; norm weights (one dimension per layer) do not.
    per_layer = [len(s) - (name in train_ref.LAYER_KINDS) for name, s in names]
    wd = np.concatenate([np.full(math.prod(s), h["weight_decay"] if dims == 2 else 0.0)
                         for (name, s), dims in zip(names, per_layer)])
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    clipped = []
    for s in range(1, steps + 1):
        g = grads[s - 1]
        if h["grad_clip"] > 0:
            norm = math.sqrt(float(np.dot(g, g)))
            coef = min(1.0, h["grad_clip"] / (norm + train_ref.CLIP_EPS))
            clipped.append(coef < 1.0)
            g = g * coef
        p = p * (1.0 - h["lr"] * wd)
        m = h["beta1"] * m + (1 - h["beta1"]) * g
        v = h["beta2"] * v + (1 - h["beta2"]) * g * g
        bc1 = 1 - h["beta1"] ** s
        bc2 = 1 - h["beta2"] ** s
        p = p - (h["lr"] / bc1) * m / (np.sqrt(v) / math.sqrt(bc2) + h["adam_eps"])
    return p, clipped


def check_adamw(chk, conf, seed):
    probe = make_case(conf, seed, steps=0)
    _, g0, _ = train_ref.run_case(probe)
    norm0 = float(np.linalg.norm(g0[0]))
    for clip in (0.0, 0.3 * norm0, 10.0 * norm0):
        case = make_case(conf, seed, steps=2, grad_clip=clip)
        losses, grads, final = train_ref.run_case(case)
        ref, clipped = numpy_adamw(case, grads, 2)
        err = np.abs(final - ref).max()
        moved = np.abs(final - np.concatenate([case["params"][n].reshape(-1)
                                               for n, _ in case["cfg"].param_shapes()])).max()
        chk.report(err <= 1e-12 and moved > 1e-3,
                   f"(c) 2 AdamW steps vs numpy, grad_clip={case['hyper']['grad_clip']:.4g} "
                   f"(clipped at steps: {clipped}), {describe(conf)}: max err {err:.2e}, "
                   f"largest move {moved:.3e}; losses {[round(x, 6) for x in losses]}")
    # The last (loss, grads) pair is that of the final parameters.
    fresh = dict(case, params={}, steps=0)
    off = 0
    for name, shape in case["cfg"].param_shapes():
        n = math.prod(shape)
        fresh["params"][name] = final[off:off + n].reshape(shape)
        off += n
    l2, g2, _ = train_ref.run_case(fresh)
    err = np.abs(g2[0] - grads[-1]).max()
    chk.report(abs(l2[0] - losses[-1]) <= 1e-13 and err <= 1e-13,
               f"(c) loss and grads after the last step equal a fresh model's at the final "
               f"parameters (loss diff {abs(l2[0] - losses[-1]):.1e}, grad diff {err:.1e})")


# ---- (d) files ----

def run_main(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = train_ref.main(argv)
    return rc, err.getvalue().strip()


def check_files(chk, conf, seed):
    case = make_case(conf, seed, steps=2)
    cfg = case["cfg"]
    with tempfile.TemporaryDirectory() as d:
        path, out = os.path.join(d, "case.bin"), os.path.join(d, "out.bin")
        train_ref.write_case(path, cfg, BATCH, 2, case["hyper"], case["params"], case["tokens"])
        rc, msg = run_main([path, out])
        data = np.fromfile(out, dtype="<f8") if rc == 0 else np.zeros(0)
        losses, grads, final = train_ref.run_case(case)
        want = np.concatenate([np.concatenate([[l], g]) for l, g in zip(losses, grads)] + [final])
        chk.report(rc == 0 and data.shape == want.shape and np.array_equal(data, want),
                   f"(d) case file -> main() -> OUT.bin: rc {rc} {msg}, {data.size} float64 = "
                   f"3 x (1 + {grads[0].size}) + {final.size}, equal to the in-memory run")

        good = open(path, "rb").read()
        n_params = grads[0].size
        tok_off = train_ref.HEADER_BYTES + 4 * n_params

        def put(off, fmt, value):
            b = bytearray(good)
            b[off:off + 4] = np.array([value], dtype=fmt).tobytes()
            return bytes(b)

        field_off = {f: 8 + 4 * i for i, f in enumerate(train_ref.INT_FIELDS)}
        field_off.update({f: 8 + 4 * (len(train_ref.INT_FIELDS) + i)
                          for i, f in enumerate(train_ref.FLOAT_FIELDS)})
        bad_files = [
            ("bad magic", put(0, "<i4", 0x12345678), "magic = 0x12345678"),
            ("version 2", put(4, "<i4", 2), "version = 2"),
            ("truncated", good[:-1], f"{len(good) - 1} bytes"),
            ("one byte too many", good + b"\0", f"{len(good) + 1} bytes"),
            ("header cut", good[:20], "shorter than"),
            ("n_heads 3", put(field_off["n_heads"], "<i4", 3), "n_heads = 3"),
            ("n_kv_heads 3", put(field_off["n_kv_heads"], "<i4", 3), "n_kv_heads = 3"),
            ("shared 2", put(field_off["shared_classifier"], "<i4", 2), "shared_classifier = 2"),
            ("steps -1", put(field_off["steps"], "<i4", -1), "steps = -1"),
            ("beta2 1", put(field_off["beta2"], "<f4", 1.0), "beta2 = 1.0"),
            ("lr NaN", put(field_off["lr"], "<f4", np.nan), "lr = nan"),
            ("NaN weight", put(train_ref.HEADER_BYTES + 4 * (cfg.vocab_size * cfg.dim + 1), "<f4",
                               np.nan), "rms_att[0, 1] = nan"),
            ("token = V", put(tok_off + 4 * (cfg.seq_len + 1 + 2), "<i4", cfg.vocab_size),
             f"tokens[1][2] = {cfg.vocab_size}"),
            ("token -1", put(tok_off, "<i4", -1), "tokens[0][0] = -1"),
        ]
        for what, blob, expect in bad_files:
            with open(path, "wb") as f:
                f.write(blob)
            if os.path.exists(out):
                os.remove(out)
            rc, msg = run_main([path, out])
            ok = rc == 2 and expect in msg and path in msg and not os.path.exists(out)
            chk.report(ok, f"(d) {what}: rc {rc}, \"{msg}\"")
        rc, msg = run_main([os.path.join(d, "missing.bin"), out])
        chk.report(rc == 2 and "missing.bin" in msg, f"(d) missing file: rc {rc}, \"{msg}\"")


def self_check():
    torch.set_num_threads(1)
    chk = Checker()
    for i, conf in enumerate(CONFIGS):
        check_runc(chk, conf, seed=10 + i)
        check_fd(chk, conf, seed=20 + i)
        check_adamw(chk, conf, seed=30 + i)
    check_files(chk, CONFIGS[0], seed=40)
    if chk.failures:
        print(f"self-check: {chk.failures} check(s) FAILED")
        return 1
    print("self-check: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(self_check())
