#!/usr/bin/python3
"""The PyTorch peer of scripts/bench: storylm's network (SPEC section 4) written
the way a careful PyTorch user would write it, to time training and
generation against storylm on the same machine in the same run.

    build/storylm stories STORIES --vocab V --ids --split train > ids.txt
    /usr/bin/python3 scripts/torch_peer.py train ids.txt [--steps 20]
    /usr/bin/python3 scripts/torch_peer.py generate MODEL.safetensors [--tokens 256]
    /usr/bin/python3 scripts/torch_peer.py serve ids.txt MODEL.safetensors   # scripts/bench drives this
    /usr/bin/python3 scripts/torch_peer.py loss MODEL.safetensors ids.txt     # the same network? (tests)

Training: each step takes the next 8 stories of ids.txt (one story a line,
[EOS] first and last), pads them to the longest (one (8, T) batch, no Python
loop over positions), runs the whole network batched (one einsum for every
head's queries, keys and values; causal mask plus distance scores as one
(H, T, T) bias; softmax; F.linear; fused F.cross_entropy ignoring the padding)
and takes a torch.optim.Adam step (lr 3e-3). Threads: PyTorch's default
(torch.get_num_threads()), unless --threads.

Generation: [EOS] and a short prompt, then 256 new tokens one at a time with
the keys and values of earlier tokens cached (the last 256), sampled as
`storylm generate` does by default (temperature 0.8, top-p 0.95), no grad,
one thread (as storylm's generation).

loss: the mean loss (nats per predicted token) of MODEL on the stories of
ids.txt through the batched training forward, to compare with `storylm eval`
on the same stories: the peer is the same network.

serve: reads commands on stdin, one a line, and answers each with one JSON
line: `train N` (N steps: predicted tokens, seconds), `generate N` (N new
tokens: tokens, seconds, CPU seconds), `generate N B` (B stories of N new tokens
each, batched: every step one pass for all B, sampled over the batch),
`train_tf N` (N steps of storylm's default transformer, TfNet, on the same
batches), `rss`
(peak resident memory, KB), `quit`. The model
and batches are set up before the first command, so only the work is timed.
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_safetensors import load  # noqa: E402

V, D, H, KD, VD, W, HID = 2000, 32, 8, 8, 16, 256, 128
EOS = 1
BATCH = 8
PROMPT = [EOS, 5, 6, 7, 8]  # [EOS] and four tokens: overwritten by ids of a real prompt when a vocab is known


class Net(torch.nn.Module):
    """The chapter's network; parameters named and shaped as in the model file."""

    def __init__(self, seed=1):
        super().__init__()
        g = torch.Generator().manual_seed(seed)

        def uniform(*shape, bound):
            return torch.nn.Parameter((torch.rand(*shape, generator=g) * 2 - 1) * bound)

        self.embedding = torch.nn.Parameter(torch.randn(V, D, generator=g))
        self.query = uniform(H, D, KD, bound=1 / math.sqrt(D))
        self.key = uniform(H, D, KD, bound=1 / math.sqrt(D))
        self.value = uniform(H, D, VD, bound=1 / math.sqrt(D))
        self.distance = torch.nn.Parameter(torch.zeros(H, W))
        self.hidden = torch.nn.Linear(D + H * VD, HID)
        self.output = torch.nn.Linear(HID, V)
        self.bias_index = {}  # T -> (distance index (T, T), mask (T, T) of 0 / -inf)

    def load(self, path):
        tensors, _ = load(path)
        with torch.no_grad():
            for name, p in self.named_parameters():
                p.copy_(torch.from_numpy(tensors[name].copy()))

    def score_bias(self, T):
        """(H, T, T): distance score of key u for query t, -inf where u is not in t's window."""
        if T not in self.bias_index:
            back = torch.arange(T).view(T, 1) - torch.arange(T).view(1, T)
            visible = (back >= 0) & (back < W)
            mask = torch.zeros(T, T).masked_fill(~visible, float("-inf"))
            self.bias_index[T] = (back.clamp(0, W - 1), mask)
        index, mask = self.bias_index[T]
        return self.distance[:, index] + mask

    def forward(self, x):
        """x (B, T) ids -> logits (B, T, V)."""
        B, T = x.shape
        rows = F.embedding(x, self.embedding)  # (B, T, D)
        w = torch.cat([self.query * (1 / math.sqrt(KD)), self.key, self.value], dim=2)  # (H, D, 32), q pre-scaled
        qkv = (rows @ w.permute(1, 0, 2).reshape(D, -1)).view(B, T, H, -1).transpose(1, 2)  # (B, H, T, 32)
        q, k, v = qkv.split([KD, KD, VD], dim=-1)
        scores = q @ k.transpose(-1, -2) + self.score_bias(T)  # (B, H, T, T)
        out = torch.softmax(scores, dim=-1) @ v  # (B, H, T, VD)
        z = torch.cat([rows, out.transpose(1, 2).reshape(B, T, H * VD)], dim=-1)  # (B, T, 160)
        return self.output(torch.tanh(self.hidden(z)))


class TfNet(torch.nn.Module):
    """storylm's default transformer (--arch transformer: 2 pre-LN blocks, d_model 64, 8 heads of 8, d_mlp
    256, GELU, absolute positions, n_ctx 256) in TransformerLens's conventions and names, batched as
    HookedTransformer runs it: einsums for q, k, v and the output, a causal mask (each position reads its
    latest n_ctx tokens, the last W_pos row for every later position, as storylm does), F.layer_norm,
    F.gelu. Timed only, so its weights are random."""

    L, DM, NH, DH, DMLP = 2, 64, 8, 8, 256

    def __init__(self, seed=1):
        super().__init__()
        g = torch.Generator().manual_seed(seed)

        def param(*shape, std=0.02):
            return torch.nn.Parameter(torch.randn(*shape, generator=g) * std)

        DM, NH, DH, DMLP = self.DM, self.NH, self.DH, self.DMLP
        self.W_E, self.W_pos = param(V, DM), param(W, DM)
        self.blocks = torch.nn.ModuleList()
        for _ in range(self.L):
            b = torch.nn.Module()
            b.ln1_w, b.ln1_b, b.ln2_w, b.ln2_b = (torch.nn.Parameter(torch.full((DM,), float(i % 2 == 0)))
                                                  for i in range(4))
            b.W_Q, b.W_K, b.W_V = param(NH, DM, DH), param(NH, DM, DH), param(NH, DM, DH)
            b.b_Q, b.b_K, b.b_V = param(NH, DH), param(NH, DH), param(NH, DH)
            b.W_O, b.b_O = param(NH, DH, DM), param(DM)
            b.W_in, b.b_in, b.W_out, b.b_out = param(DM, DMLP), param(DMLP), param(DMLP, DM), param(DM)
            self.blocks.append(b)
        self.ln_w, self.ln_b = torch.nn.Parameter(torch.ones(DM)), torch.nn.Parameter(torch.zeros(DM))
        self.W_U, self.b_U = param(DM, V), param(V)
        self.masks = {}

    def mask(self, T):
        if T not in self.masks:
            back = torch.arange(T).view(T, 1) - torch.arange(T).view(1, T)
            self.masks[T] = torch.zeros(T, T).masked_fill(~((back >= 0) & (back < W)), float("-inf"))
        return self.masks[T]

    def forward(self, x):
        """x (B, T) ids -> logits (B, T, V)."""
        B, T = x.shape
        resid = self.W_E[x] + self.W_pos[torch.arange(T).clamp(max=W - 1)]
        for b in self.blocks:
            h = F.layer_norm(resid, (self.DM,), b.ln1_w, b.ln1_b, 1e-5)
            q = torch.einsum("btm,hmd->bhtd", h, b.W_Q) + b.b_Q[:, None]
            k = torch.einsum("btm,hmd->bhtd", h, b.W_K) + b.b_K[:, None]
            v = torch.einsum("btm,hmd->bhtd", h, b.W_V) + b.b_V[:, None]
            pattern = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.DH) + self.mask(T), dim=-1)
            resid = resid + torch.einsum("bhtd,hdm->btm", pattern @ v, b.W_O) + b.b_O
            h = F.layer_norm(resid, (self.DM,), b.ln2_w, b.ln2_b, 1e-5)
            resid = resid + F.gelu(h @ b.W_in + b.b_in) @ b.W_out + b.b_out
        return F.layer_norm(resid, (self.DM,), self.ln_w, self.ln_b, 1e-5) @ self.W_U + self.b_U


def read_stories(path):
    with open(path) as f:
        return [[int(t) for t in line.split()] for line in f if len(line.split()) >= 2]


def make_batch(stories):
    """Stories -> x (B, T) padded with 0, targets (B, T) with -100 where nothing is predicted."""
    T = max(len(s) for s in stories)
    x = torch.zeros(len(stories), T, dtype=torch.long)
    y = torch.full((len(stories), T), -100, dtype=torch.long)
    for i, s in enumerate(stories):
        x[i, :len(s)] = torch.tensor(s)
        y[i, :len(s) - 1] = torch.tensor(s[1:])
    return x, y, sum(len(s) - 1 for s in stories)


class Trainer:
    def __init__(self, stories, net=None):
        self.net = net or Net()
        self.opt = torch.optim.Adam(self.net.parameters(), lr=3e-3)
        self.stories = stories
        self.batches = [make_batch(stories[i:i + BATCH]) for i in range(0, len(stories) - BATCH + 1, BATCH)]
        self.next = 0

    def step(self):
        x, y, n = self.batches[self.next % len(self.batches)]
        self.next += 1
        logits = self.net(x)
        loss = F.cross_entropy(logits.view(-1, V), y.view(-1), ignore_index=-100)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return n, loss.item()

    def run(self, steps):
        t0, cpu0 = time.perf_counter(), time.process_time()
        tokens = sum(self.step()[0] for _ in range(steps))
        self.cpu_seconds = time.process_time() - cpu0  # every thread of the process, OpenBLAS's too
        return tokens, time.perf_counter() - t0


class Generator:
    """Token by token with cached keys and values; sampling as storylm generate's defaults."""

    def __init__(self, net, seed=1):
        self.net = net
        self.w = torch.cat([net.query, net.key, net.value], dim=2).detach().permute(1, 0, 2).reshape(D, -1)
        self.distance_back = net.distance.detach().flip(1)  # (H, W): [:, W-n:] = distances n-1 .. 0
        self.g = torch.Generator().manual_seed(seed)

    def sample(self, logits, temperature=0.8, top_p=0.95):
        probs = torch.softmax(logits / temperature, dim=-1)
        sorted_p, order = probs.sort(descending=True)
        keep = sorted_p.cumsum(0) - sorted_p < top_p  # the smallest set holding top_p
        sorted_p = sorted_p * keep
        return int(order[torch.multinomial(sorted_p, 1, generator=self.g)])

    @torch.no_grad()
    def run(self, prompt, n_new):
        net, total = self.net, len(prompt) + n_new
        keys, values = torch.zeros(H, total, KD), torch.zeros(H, total, VD)
        scale = 1 / math.sqrt(KD)
        hidden_w, hidden_b = net.hidden.weight.detach(), net.hidden.bias.detach()
        out_w, out_b = net.output.weight.detach(), net.output.bias.detach()
        embedding = net.embedding.detach()
        out, token = [], prompt[0]
        t0 = time.perf_counter()
        for t in range(total):
            row = embedding[token]  # (D)
            q, k, v = (row @ self.w).view(H, -1).split([KD, KD, VD], dim=-1)
            keys[:, t], values[:, t] = k, v
            lo = max(0, t - W + 1)
            s = (keys[:, lo:t + 1] @ q.unsqueeze(-1)).squeeze(-1) * scale + self.distance_back[:, W - (t + 1 - lo):]
            o = (torch.softmax(s, dim=-1).unsqueeze(1) @ values[:, lo:t + 1]).view(-1)  # (H*VD)
            logits = F.linear(torch.tanh(F.linear(torch.cat([row, o]), hidden_w, hidden_b)), out_w, out_b)
            if t + 1 < len(prompt):
                token = prompt[t + 1]
            else:
                token = self.sample(logits)
                out.append(token)
        return out[:n_new], time.perf_counter() - t0


class BatchGenerator(Generator):
    """B stories at once, every step one batched pass: (B, D) rows, (B, H, T, KD) cached keys, one
    F.linear for the hidden and output layers of all B, softmax, sort and multinomial over the batch."""

    def sample_batch(self, logits, temperature=0.8, top_p=0.95):
        probs = torch.softmax(logits / temperature, dim=-1)
        sorted_p, order = probs.sort(dim=-1, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < top_p
        picked = torch.multinomial(sorted_p * keep, 1, generator=self.g)  # (B, 1)
        return order.gather(1, picked).squeeze(1)

    @torch.no_grad()
    def run_batch(self, prompt, n_new, b):
        net, total = self.net, len(prompt) + n_new
        keys, values = torch.zeros(b, H, total, KD), torch.zeros(b, H, total, VD)
        scale = 1 / math.sqrt(KD)
        hidden_w, hidden_b = net.hidden.weight.detach(), net.hidden.bias.detach()
        out_w, out_b = net.output.weight.detach(), net.output.bias.detach()
        embedding = net.embedding.detach()
        tokens, n_out = torch.full((b,), prompt[0], dtype=torch.long), 0
        t0 = time.perf_counter()
        for t in range(total):
            rows = embedding[tokens]  # (B, D)
            q, k, v = (rows @ self.w).view(b, H, -1).split([KD, KD, VD], dim=-1)
            keys[:, :, t], values[:, :, t] = k, v
            lo = max(0, t - W + 1)
            s = (keys[:, :, lo:t + 1] @ q.unsqueeze(-1)).squeeze(-1) * scale + self.distance_back[:, W - (t + 1 - lo):]
            o = (torch.softmax(s, dim=-1).unsqueeze(2) @ values[:, :, lo:t + 1]).reshape(b, -1)  # (B, H*VD)
            logits = F.linear(torch.tanh(F.linear(torch.cat([rows, o], dim=1), hidden_w, hidden_b)), out_w, out_b)
            if t + 1 < len(prompt):
                tokens = torch.full((b,), prompt[t + 1], dtype=torch.long)
            else:
                tokens = self.sample_batch(logits)
                n_out += b
        return min(n_out, b * n_new), time.perf_counter() - t0  # as run: the last step's draw is not kept


@torch.no_grad()
def mean_loss(net, stories):
    """Mean loss over every predicted position, batches of 8 padded stories."""
    total, count = 0.0, 0
    for i in range(0, len(stories), BATCH):
        x, y, n = make_batch(stories[i:i + BATCH])
        logits = net(x)
        total += F.cross_entropy(logits.view(-1, V), y.view(-1), ignore_index=-100, reduction="sum").item()
        count += n
    return total / count


def openblas_threads():
    """Threads of the OpenBLAS this torch calls (Debian's torch uses the system BLAS), or None."""
    import ctypes
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            return ctypes.CDLL(name).openblas_get_num_threads()
        except (OSError, AttributeError):
            continue
    return None


def peak_rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def serve(args):
    trainer = Trainer(read_stories(args.ids))
    trainer.run(2)  # warm up: allocator, first-call costs
    tf_trainer = None  # the transformer's, made at its first `train_tf`
    gen_net = Net()
    gen_net.load(args.model)
    generator = BatchGenerator(gen_net)
    prompt = [int(t) for t in args.prompt.split()] if args.prompt else PROMPT
    print(json.dumps({"ready": True, "threads": torch.get_num_threads(), "blas_threads": openblas_threads(),
                      "torch": torch.__version__}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "train":
            tokens, seconds = trainer.run(int(cmd[1]))
            reply = {"tokens": tokens, "seconds": seconds, "cpu_seconds": trainer.cpu_seconds}
        elif cmd[0] == "train_tf":  # train_tf N: N steps of the transformer (TfNet)
            if tf_trainer is None:
                tf_trainer = Trainer(trainer.stories, TfNet())
                tf_trainer.run(2)
            tokens, seconds = tf_trainer.run(int(cmd[1]))
            reply = {"tokens": tokens, "seconds": seconds, "cpu_seconds": tf_trainer.cpu_seconds}
        elif cmd[0] == "generate":  # generate N [B]: one story token by token, or B stories batched
            torch.set_num_threads(1)
            cpu0 = time.process_time()
            if len(cmd) > 2:
                n_tokens, seconds = generator.run_batch(prompt, int(cmd[1]), int(cmd[2]))
            else:
                tokens, seconds = generator.run(prompt, int(cmd[1]))
                n_tokens = len(tokens)
            cpu = time.process_time() - cpu0
            torch.set_num_threads(args.threads or default_threads)
            reply = {"tokens": n_tokens, "seconds": seconds, "cpu_seconds": cpu}
        elif cmd[0] == "rss":
            reply = {"peak_rss_kb": peak_rss_kb()}
        else:
            reply = {"error": f"unknown command {cmd[0]}"}
        print(json.dumps(reply), flush=True)


default_threads = torch.get_num_threads()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["train", "generate", "serve", "loss"])
    ap.add_argument("files", nargs="+", help="ids.txt (train), MODEL (generate), ids.txt MODEL (serve), "
                                             "MODEL ids.txt (loss)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=0, help="training threads; 0: PyTorch's default")
    ap.add_argument("--prompt", default="", help="prompt token ids, [EOS] first, e.g. '1 57 200'")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.what == "serve":
        args.ids, args.model = args.files
        return serve(args)
    if args.what == "loss":
        net = Net()
        net.load(args.files[0])
        print(f"{mean_loss(net, read_stories(args.files[1])):.6f}")
        return 0
    if args.what == "train":
        trainer = Trainer(read_stories(args.files[0]))
        trainer.run(2)
        tokens, seconds = trainer.run(args.steps)
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: {tokens / seconds:.0f} tokens/s "
              f"({args.steps} steps, {tokens} tokens, {seconds:.2f} s), loss {trainer.step()[1]:.3f}")
    else:
        torch.set_num_threads(1)
        net = Net()
        net.load(args.files[0])
        prompt = [int(t) for t in args.prompt.split()] if args.prompt else PROMPT
        tokens, seconds = Generator(net).run(prompt, args.tokens)
        print(f"torch {torch.__version__}, 1 thread: {len(tokens) / seconds:.0f} tokens/s ({len(tokens)} tokens)")
        print(" ".join(map(str, tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
