#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/TARGET/): small valid
inputs of each kind, so libFuzzer starts deep inside the readers instead of
at their first check. Run from anywhere; the files are committed.

Every text here is made up for the purpose; none comes from a data set."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors(tensors, metadata=None, dtype="F32"):
    """tensors: list of (name, shape, values); little-endian F32 (or dtype's bytes)."""
    header, blobs, pos = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, shape, values in tensors:
        blob = struct.pack("<%df" % len(values), *values) if dtype == "F32" else bytes(values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


SIZES = dict(vocab_size=2, row_dim=2, n_heads=2, key_dim=1, value_dim=1, window=2, hidden_dim=2, context=8)


def table(arch, s):
    """The parameter table of src/model/model_params.c for sizes s."""
    V, D, H, kd, vd, W, Hd, C = (s[k] for k in SIZES)
    t = [("embedding", [V, D])]
    if arch == "attention":
        t += [("query", [H, D, kd]), ("key", [H, D, kd]), ("value", [H, D, vd]), ("distance", [H, W])]
    z = D + H * vd if arch == "attention" else C * D
    t += [("hidden.weight", [Hd, z]), ("hidden.bias", [Hd]), ("output.weight", [V, Hd]), ("output.bias", [V])]
    return t


def numbers(shape, k):
    n = 1
    for d in shape:
        n *= d
    return [((i * 7 + k) % 11 - 5) / 10 for i in range(n)]


def config_meta(fmt, arch, s):
    m = {"format": fmt, "format_version": "1", "arch": arch}
    m.update({k: str(v) for k, v in s.items()})
    return m


def model(arch, s=SIZES):
    meta = config_meta("storylm", arch, s)
    meta.update(vocab="[UNK]\n[EOS]\n", step="3", run_id="00000000000000ab", data="stories.txt")
    return safetensors([(n, sh, numbers(sh, i)) for i, (n, sh) in enumerate(table(arch, s))], meta)


def adam(arch, s=SIZES):
    meta = config_meta("storylm-adam", arch, s)
    meta.update(step="3", rng_state="12345", data_hash="0123456789abcdef", run_id="00000000000000ab")
    tensors = [(p + n, sh, numbers(sh, i)) for p in ("m.", "v.") for i, (n, sh) in enumerate(table(arch, s))]
    return safetensors(tensors, meta)


def main():
    t = "fuzz_safetensors"
    write(t, "tiny_attention.safetensors", model("attention"))
    write(t, "tiny_window8.safetensors", model("window8"))
    write(t, "tiny_attention.adam.safetensors", adam("attention"))
    write(t, "generic.safetensors", safetensors([("a", [2, 2], [1, 2, 3, 4]), ("b", [3], [0.5, -1, 2])],
                                                 {"note": "not a storylm file"}))
    write(t, "f16.safetensors", safetensors([("h", [2, 2], [0, 60, 0, 188, 0, 0, 0, 124])], None, "F16"))
    write(t, "empty.safetensors", struct.pack("<Q", 8) + b"{}      ")

    t = "fuzz_stories"
    write(t, "separated.txt", "Lily found a red ball.\nShe was happy.\n<|endoftext|>\n"
                              "Tom saw a big dog. \"Hello!\" he said.\n<|endoftext|>\n"
                              "The cat sat on the mat.\n<|endoftext|>\n")
    write(t, "blank_lines.txt", "One day a bird sang.\n\nThe sun was warm.\n\n\nThe end.\n")
    write(t, "crlf_bom.txt", "\ufeffA boat went out.\r\n<|endoftext|>\r\nIt came back.\r\n")
    write(t, "bad_bytes.txt", b"Good story.\n<|endoftext|>\nBad \xff\xfe story.\n<|endoftext|>\nNUL \x00 here.\n"
                              b"<|endoftext|>\n   \n<|endoftext|>\nLast one.\n")
    write(t, "unicode.txt", "Zo\u00eb and \u00c5sa saw \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 "
                            "\u4e2d\u6587 caf\u00e9\u0301.\n<|endoftext|>\nIt's 3.5 o'clock\u2026\n")

    t = "fuzz_tokenizer"
    write(t, "plain.txt", b"\x00Lily found a red ball. \"Hello!\" she said. It's 10:30, isn't it?")
    write(t, "capitals.txt", b"\x02the end. i saw (a) dog - a big one; don't go.")
    write(t, "unicode.txt", "\x00\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 \u00df\u00f8 \u4e2d "
                            "\u201cquoted\u201d \u2026 e\u0301\u0302\u0303".encode())
    write(t, "invalid.txt", b"\x00ab\xc3 \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \x80\x80 z\x00y\x7f\x1b[0m")
    vocab = b"[UNK]\n[EOS]\na\nb\n##a\n##b\nab\n.\n"
    write(t, "own_vocab.txt", b"\x01" + struct.pack("<H", len(vocab)) + vocab + b"aab ba. b\xc3\xa1")
    bad = b"[UNK]\r\n[EOS]\r\na\n\na\n"
    write(t, "own_vocab_bad.txt", b"\x01" + struct.pack("<H", len(bad)) + bad + b"a")

    # a request: its first line "METHOD /api/...?query", then the body
    t = "fuzz_request"
    text = "Lily found a red ball. She gave the ball to Tom."
    requests = {
        "generate": ("POST /api/generate", {"prompt": "Lily", "max_tokens": 20, "temperature": 0.8, "top_k": 40,
                                            "top_p": 0.9, "min_p": 0.05, "repeat_penalty": 1.1, "repeat_last_n": 64,
                                            "seed": 3, "stop": [".", "The end"], "n_probs": 2, "precision": "fp32",
                                            "ablate": [1, 3], "ablate_mode": "mean", "model": "m.safetensors"}),
        "generate_typo": ("POST /api/generate", {"prompt": "Lily", "tempreature": 200}),
        "attend": ("POST /api/attend", {"text": text, "pos": -1, "head": 2, "layer": 1, "ablate": "1:3,2:5"}),
        "attend_wide": ("POST /api/attend", {"text": text, "wide": True, "ablate_mode": "zero"}),
        "trace": ("POST /api/trace", {"text": text, "top_k": 5}),
        "loss": ("POST /api/loss", {"text": text, "ablate": [3]}),
        "ablate": ("POST /api/ablate", {"heads": "3,5", "mode": "mean", "stories": "data/stories.txt"}),
        "heads": ("POST /api/heads", {"model": ["a.safetensors", "b.safetensors"], "top": 5}),
        "swap": ("POST /api/swap", {"text": text, "name": "zarko", "baseline": "b.safetensors"}),
        "train": ("POST /api/train", {"stories": "data/stories.txt", "steps": 300, "seed": 1, "eval_every": 25,
                                      "lr": 0.003}),
        "train_lr_0": ("POST /api/train", {"steps": 5, "lr": 0}),
        "tokenize": ("POST /api/tokenize", {"text": text, "model": "m.safetensors"}),
        "stories": ("POST /api/stories", {"model": "m.safetensors"}),
        "batch": ("POST /api/batch", {"requests": [{"url": "/api/attend", "body": {"text": text, "head": 1}},
                                                   {"url": "/api/trace", "body": {"text": text}},
                                                   {"url": "/api/tokenize", "body": {"text": "Lily"}},
                                                   {"url": "/api/loss", "body": {"text": text, "hed": 1}}]}),
    }
    for name, (line, body) in requests.items():
        write(t, name, line + "\n" + json.dumps(body))
    write(t, "distances_get", "GET /api/distances?up_to=16&layer=1&model=m.safetensors\n")
    write(t, "info_get", "GET /api/info?zzz=1\n")
    write(t, "models_get", "GET /api/models\n")
    write(t, "nul", b"POST /api/attend\n{\"text\": \"a\\u0000b\"}")
    write(t, "not_utf8", b"POST /api/attend\n{\"t\xffext\": \"ab\"}")


if __name__ == "__main__":
    main()
