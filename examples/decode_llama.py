"""A tensor-parallel decode step of a Llama-shaped decoder through collc.torch, one CUDA graph per
step, checked against a TP=1 run of the same weights.

    COLLC_SHARE_GPU=1 torchrun --nproc_per_node=2 examples/decode_llama.py     # one GPU
    torchrun --nproc_per_node=2 examples/decode_llama.py                        # a GPU per rank
    torchrun --nproc_per_node=2 examples/decode_llama.py --backend nccl         # torch's NCCL

Llama-3-8B's layer shapes (hidden 4096, 32 query and 8 key/value heads of 128, MLP 14336, RoPE
theta 500000, RMSNorm eps 1e-6), random weights (the same on every rank: one seed), fewer layers
(--layers, default 2), batch 1 to 32 (--batches). Each rank holds its shard: the embedding and
the LM head by vocabulary, attention by heads, the MLP by its inner dimension. Per step:

    h = all_reduce(embedding shard lookup)                       vocabulary-parallel embedding
    per layer: x, h = fused_add_rms_norm(attention(x) @ Wo_shard, h, post-attention norm)
               x, h = fused_add_rms_norm(mlp(x) @ Wdown_shard, h, next norm)
    logits = all_gather(x @ Wlm_shard)

The whole step (with the KV cache write at the step's position) is captured once per batch size
and replayed for every token. Every step's logits are compared with the same weights run
unsharded (TP=1, no communication, float32 norms) within bf16's tolerance, on every rank.
With --backend nccl the same program uses torch.distributed (NCCL: every rank needs its own GPU)
and the norms in torch. The time per token is that of the graph's replay; where ranks share a GPU
(COLLC_SHARE_GPU=1, correctness only) it means nothing and is not printed as a time.
"""

import argparse
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, MLP, THETA, EPS = 4096, 32, 8, 128, 14336, 500000.0, 1e-6


def rms_norm(x, weight):
    """RMSNorm in float32, rounded to x's type: the TP=1 reference and the NCCL backend's."""
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + EPS)
    return (y * weight.float()).to(x.dtype)


class Weights:
    """Random weights of the whole model, made alike on every rank from one seed, scaled so that
    activations stay of order one."""

    def __init__(self, layers, vocab, seed=0):
        g = torch.Generator(device="cuda").manual_seed(seed)

        def w(rows, cols):
            return (torch.randn(rows, cols, device="cuda", generator=g) /
                    math.sqrt(cols)).to(torch.bfloat16)

        def norm():
            return (1 + 0.1 * torch.randn(HIDDEN, device="cuda", generator=g)).to(torch.bfloat16)

        self.embedding = w(vocab, HIDDEN) * math.sqrt(HIDDEN)
        self.layers = []
        for _ in range(layers):
            self.layers.append(dict(
                input_norm=norm(), wq=w(HEADS * HEAD_DIM, HIDDEN), wk=w(KV_HEADS * HEAD_DIM, HIDDEN),
                wv=w(KV_HEADS * HEAD_DIM, HIDDEN), wo=w(HIDDEN, HEADS * HEAD_DIM),
                post_norm=norm(), gate=w(MLP, HIDDEN), up=w(MLP, HIDDEN), down=w(HIDDEN, MLP)))
        self.final_norm = norm()
        self.lm_head = w(vocab, HIDDEN)

    def shard(self, rank, nranks):
        """This rank's part: rows or columns, as tensor parallelism splits each matrix."""
        def rows(t):
            n = t.shape[0] // nranks
            return t[rank * n:(rank + 1) * n].contiguous()

        def cols(t):
            n = t.shape[1] // nranks
            return t[:, rank * n:(rank + 1) * n].contiguous()

        part = Weights.__new__(Weights)
        part.embedding, part.lm_head, part.final_norm = rows(self.embedding), rows(self.lm_head), \
            self.final_norm
        part.layers = [dict(input_norm=l["input_norm"], wq=rows(l["wq"]), wk=rows(l["wk"]),
                            wv=rows(l["wv"]), wo=cols(l["wo"]), post_norm=l["post_norm"],
                            gate=rows(l["gate"]), up=rows(l["up"]), down=cols(l["down"]))
                       for l in self.layers]
        return part


class Collectives:
    """What the decoder asks of its communication: one implementation per backend."""

    def __init__(self, backend, nranks, comm=None):
        self.backend, self.nranks, self.comm = backend, nranks, comm

    def all_reduce(self, x):
        if self.backend == "none":
            return x
        if self.backend == "collc":
            return self.comm.all_reduce(x)
        x = x.clone()
        dist.all_reduce(x)
        return x

    def add_norm(self, partial, residual, weight):
        """(rmsnorm(allreduce(partial) + residual) * weight, allreduce(partial) + residual)."""
        if self.backend == "collc":
            return self.comm.fused_add_rms_norm(partial, residual, weight)
        residual = self.all_reduce(partial) + residual
        return rms_norm(residual, weight), residual

    def all_gather(self, x):
        if self.backend == "none":
            return x
        if self.backend == "collc":
            return self.comm.all_gather(x)
        out = x.new_empty((self.nranks * x.numel(),))
        dist.all_gather_into_tensor(out, x)
        return out


class Decoder:
    """One decode step for `batch` sequences at a position held in a tensor (so one graph serves
    every step), with a KV cache of `context` positions."""

    def __init__(self, weights, collectives, rank, nranks, batch, context):
        self.w, self.c, self.rank, self.nranks = weights, collectives, rank, nranks
        self.heads, self.kv_heads = HEADS // nranks, KV_HEADS // nranks
        self.vocab_part = weights.embedding.shape[0]
        shape = (batch, self.kv_heads, context, HEAD_DIM)
        self.caches = [(torch.zeros(shape, device="cuda", dtype=torch.bfloat16),
                        torch.zeros(shape, device="cuda", dtype=torch.bfloat16))
                       for _ in weights.layers]
        self.context = context
        self.inv_freq = 1.0 / THETA ** (torch.arange(0, HEAD_DIM, 2, device="cuda").float() /
                                        HEAD_DIM)

    def rope(self, x, position):
        angle = position.float() * self.inv_freq
        cos, sin = angle.cos(), angle.sin()
        x1, x2 = x.float().chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)

    def attention(self, x, layer, cache, position):
        batch = x.shape[0]
        q = F.linear(x, layer["wq"]).view(batch, self.heads, HEAD_DIM)
        k = F.linear(x, layer["wk"]).view(batch, self.kv_heads, HEAD_DIM)
        v = F.linear(x, layer["wv"]).view(batch, self.kv_heads, HEAD_DIM)
        q, k = self.rope(q, position), self.rope(k, position)
        cache_k, cache_v = cache
        cache_k.index_copy_(2, position, k.unsqueeze(2))
        cache_v.index_copy_(2, position, v.unsqueeze(2))
        group = self.heads // self.kv_heads
        keys = cache_k.repeat_interleave(group, dim=1)        # batch, heads, context, dim
        values = cache_v.repeat_interleave(group, dim=1)
        scores = torch.einsum("bhd,bhtd->bht", q.float(), keys.float()) / math.sqrt(HEAD_DIM)
        visible = torch.arange(self.context, device="cuda") <= position
        scores = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        out = torch.einsum("bht,bhtd->bhd", scores, values.float()).to(torch.bfloat16)
        return F.linear(out.reshape(batch, self.heads * HEAD_DIM), layer["wo"])

    def step(self, tokens, position):
        local = tokens - self.rank * self.vocab_part
        mine = (local >= 0) & (local < self.vocab_part)
        looked_up = self.w.embedding[local.clamp(0, self.vocab_part - 1)]
        h = self.c.all_reduce(looked_up * mine.unsqueeze(1).to(looked_up.dtype))
        x = rms_norm(h, self.w.layers[0]["input_norm"])
        for i, (layer, cache) in enumerate(zip(self.w.layers, self.caches)):
            x, h = self.c.add_norm(self.attention(x, layer, cache, position), h,
                                   layer["post_norm"])
            mlp = F.linear(F.silu(F.linear(x, layer["gate"])) * F.linear(x, layer["up"]),
                           layer["down"])
            following = (self.w.layers[i + 1]["input_norm"] if i + 1 < len(self.w.layers)
                         else self.w.final_norm)
            x, h = self.c.add_norm(mlp, h, following)
        logits = F.linear(x, self.w.lm_head)  # batch, vocab / nranks
        gathered = self.c.all_gather(logits.reshape(-1))
        return gathered.view(self.nranks, x.shape[0], -1).permute(1, 0, 2).reshape(x.shape[0], -1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("collc", "nccl"), default="collc")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=128256, help="Llama 3's 128256 by default")
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--steps", type=int, default=8, help="tokens decoded per batch size")
    parser.add_argument("--timed-replays", type=int, default=50)
    args = parser.parse_args()

    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    share = os.environ.get("COLLC_SHARE_GPU") == "1"
    if args.backend == "nccl" and share:
        sys.exit("--backend nccl needs a GPU per rank (NCCL refuses two ranks on one GPU)")
    device = local % torch.cuda.device_count() if share else local
    torch.cuda.set_device(device)
    dist.init_process_group("nccl" if args.backend == "nccl" or not share else "gloo")
    if HEADS % nranks or KV_HEADS % nranks or MLP % nranks or args.vocab % nranks:
        sys.exit(f"{nranks} ranks do not divide the heads, the MLP or the vocabulary")

    full = Weights(args.layers, args.vocab)
    part = full.shard(rank, nranks)
    comm = None
    if args.backend == "collc":
        import collc.torch as ct
        largest = max(int(b) for b in args.batches.split(","))
        # The largest call: the gathered logits' shard, or a batch of hidden states (bf16).
        max_bytes = 2 * largest * max(HIDDEN, args.vocab // nranks)
        comm = ct.Communicator(None, max_bytes=max_bytes, heap_bytes=1 << 30, share_gpu=share)
    collectives = Collectives(args.backend, nranks, comm)
    reference_collectives = Collectives("none", 1)
    pick = torch.Generator(device="cuda").manual_seed(1)
    worst, worst_mean, checked, failed = 0.0, 0.0, 0, False
    say = (lambda text: print(f"[rank {rank}] {text}", flush=True))
    for batch in (int(b) for b in args.batches.split(",")):
        context = args.steps + 2
        decoder = Decoder(part, collectives, rank, nranks, batch, context)
        reference = Decoder(full, reference_collectives, 0, 1, batch, context)
        tokens = torch.zeros(batch, dtype=torch.long, device="cuda")
        position = torch.zeros(1, dtype=torch.long, device="cuda")
        sequence = torch.randint(0, args.vocab, (args.steps + 1, batch), device="cuda",
                                 generator=pick)
        # Position 0 eagerly (it makes collc's kernels ready), then capture the step.
        tokens.copy_(sequence[0])
        decoder.step(tokens, position)
        reference.step(tokens, position)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = decoder.step(tokens, position)
        for t in range(1, args.steps + 1):
            tokens.copy_(sequence[t])
            position.fill_(t)
            graph.replay()
            want = reference.step(tokens, position).float()
            got = logits.float()
            diff = (got - want).abs()
            # bf16 through a few layers, the partial sums rounded and added in another order:
            # each logit within a few of its bf16 steps, and on average far closer. A collective
            # that drops or repeats a rank's part moves the logits by about their own size.
            tolerance = 0.1 + 0.05 * want.abs()
            mean = diff.mean().item()
            checked += 1
            worst = max(worst, diff.max().item())
            worst_mean = max(worst_mean, mean)
            if (diff > tolerance).any() or mean > 0.02 or not torch.isfinite(got).all():
                failed = True
                say(f"batch {batch} step {t}: logits differ from TP=1 by up to "
                    f"{diff.max().item():.4f}, {mean:.4f} on average (|logits| up to "
                    f"{want.abs().max().item():.2f})")
        agree = (logits.argmax(-1) == want.argmax(-1)).float().mean().item()
        timing = ""
        if not share and args.timed_replays:
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(args.timed_replays):
                graph.replay()
            torch.cuda.synchronize()
            timing = f", {(time.perf_counter() - start) / args.timed_replays * 1e3:.3f} ms per token"
        say(f"batch {batch}: {args.steps} steps checked, greedy tokens agree {agree:.0%}{timing}")
        del graph
    if comm is not None:
        comm.synchronize()
        comm.close()
    verdict = "FAIL" if failed else "PASS"
    say(f"{verdict} decode: {checked} steps of {args.layers} Llama-3-8B layers at TP={nranks} "
        f"({args.backend}{', ranks sharing a GPU' if share else ''}) match TP=1 within bf16 "
        f"tolerance (largest difference {worst:.4f}, largest mean difference {worst_mean:.4f})")
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
