#!/usr/bin/env bash
# End to end, the chapter's tools and secrets as commands, on a tiny model
# trained here on a slice of data/stories.txt (and a window8 baseline):
# attend's weights sum to 1 and match the arithmetic done from the model file
# by hand; every probe's --json parses and has its documented fields; every
# --svg is well-formed XML; ablate agrees with eval --ablate; mean ablation
# works in generate and eval; bad arguments exit non-zero with a message.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"

first_stories 400 > slice.txt
common=(--vocab vocab.txt --threads 2 --test-stories 40 --seed 3)
"$S" train slice.txt "${common[@]}" --steps 150 --eval-every 75 --snapshot-every 75 --out att.safetensors 2> train.log ||
  { cat train.log; fail "train"; }
"$S" train slice.txt "${common[@]}" --steps 60 --arch window8 --out w8.safetensors 2> w8.log || { cat w8.log; fail "train window8"; }
[[ -f att.step75.safetensors ]] || fail "no snapshot att.step75.safetensors"
P=(--model att.safetensors --test-stories 20 --threads 2) # fewer stories than training held out: quicker
TEXT="Once upon a time, there was a girl named Mia. Mia saw a big dog. The dog ran to Mia and"

# Tool 1: weights add up to 1 per head and equal softmax(q.k/sqrt(8) + distance) computed from the file.
"$S" attend "$TEXT" --model att.safetensors --json --svg attend.svg > attend.json
"$S" attend "$TEXT" --model att.safetensors --pos 9 --head 3 --json > attend9.json
python3 - att.safetensors attend.json attend9.json <<'EOF' || fail "attend's numbers"
import json, math, struct, sys
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__": continue
        b, e = t["data_offsets"]
        out[name] = (t["shape"], struct.unpack("<%df" % ((e - b) // 4), data[b:e]))
    return out
T = tensors(sys.argv[1])
(V, D), E = T["embedding"]
(H, _, K), Q = T["query"]
_, Kw = T["key"]
(_, W), Dist = T["distance"]
row = lambda t: E[t * D:(t + 1) * D]
def proj(table, h, t, k):
    r = row(t)
    return [sum(r[i] * table[(h * D + i) * k + j] for i in range(D)) for j in range(k)]
for path in sys.argv[2:]:
    j = json.load(open(path))
    for key in ("command", "model", "ablation", "tokens", "position", "token", "keys"):
        assert key in j, "attend --json lacks " + key
    ids = [t["id"] for t in j["tokens"]]
    p = j["position"]
    heads = sorted({k["head"] for k in j["keys"]})
    assert heads == ([3] if "9" in path else list(range(H))), heads
    for h in heads:
        keys = [k for k in j["keys"] if k["head"] == h]
        assert len(keys) == p + 1, (len(keys), p)
        total = sum(k["weight"] for k in keys)
        assert abs(total - 1) < 1e-4, ("weights add up to", total)
        q = proj(Q, h, ids[p], K)
        scores = {}
        for k in keys:
            u = k["position"]
            dot = sum(a * b for a, b in zip(q, proj(Kw, h, ids[u], K))) / math.sqrt(K)
            assert abs(dot - k["dot"]) < 1e-3 * max(1, abs(dot)), ("dot", dot, k)
            assert abs(Dist[h * W + p - u] - k["distance_score"]) < 1e-6
            scores[u] = dot + Dist[h * W + p - u]
        m = max(scores.values())
        z = sum(math.exp(s - m) for s in scores.values())
        for k in keys:
            want = math.exp(scores[k["position"]] - m) / z
            assert abs(want - k["weight"]) < 1e-4, ("weight", want, k)
print("attend: weights add up to 1 and match the direct computation")
EOF

# Every probe: JSON with its documented fields, and well-formed SVG.
"$S" distances --model att.safetensors --json --svg distances.svg > distances.json
"$S" trace "$TEXT" --model att.safetensors --json --svg trace.svg > trace.json
"$S" heads slice.txt --model att.step75.safetensors --model att.safetensors --test-stories 40 --json --svg heads.svg > heads.json
"$S" swap slice.txt "${P[@]}" --baseline w8.safetensors --json --svg swap.svg > swap.json
"$S" ablate slice.txt "${P[@]}" --json --svg ablate.svg > ablate.json
"$S" ablate slice.txt "${P[@]}" --heads 3,5 --json > ablate35.json
"$S" pieces slice.txt "${P[@]}" --json --svg pieces.svg > pieces.json
"$S" stats slice.txt "${P[@]}" --json --svg stats.svg > stats.json
python3 - <<'EOF' || fail "JSON fields"
import json
def load(name, fields):
    j = json.load(open(name + ".json"))
    for f in fields:
        assert f in j, "%s --json lacks %s" % (name, f)
    return j
d = load("distances", ["scores"])
assert len(d["scores"]) == 256 and all("head_%d" % h in d["scores"][0] for h in range(8))
t = load("trace", ["inputs", "hidden", "guesses", "token", "position"])
assert len(t["inputs"]) == 9 and len(t["inputs"][0]["numbers"]) == 32 and len(t["inputs"][1]["numbers"]) == 16
assert len(t["guesses"]) == 10 and 0 < sum(g["probability"] for g in t["guesses"]) <= 1.0001
h = load("heads", ["heads", "top_tokens"])
assert len(h["heads"]) == 16, len(h["heads"])
for r in h["heads"]:
    assert abs(sum(r[k] for k in ("d0", "d1", "d2", "d3_7", "d8_31", "d32_255")) - 1) < 1e-3, r
s = load("swap", ["names", "far", "baseline"])
assert s["names"][0]["kind"] == "original" and s["names"][0]["mentions"] > 0, s["names"][0]
kinds = {r["kind"] for r in s["names"]}
assert {"common", "rare", "invented"} <= kinds, kinds
for r in s["names"]:
    for k in ("name", "pieces", "stories", "mentions", "model_probability", "model_top1", "baseline_probability", "baseline_top1"):
        assert k in r, k
a = load("ablate", ["ablations", "positions", "name_positions"])
assert len(a["ablations"]) == 9 and a["ablations"][0]["heads"] == "none" and a["ablations"][0]["d_loss"] == 0
assert a["name_positions"] > 0 and a["ablations"][4]["heads"] == "3"
a35 = load("ablate35", ["ablations"])
assert [r["heads"] for r in a35["ablations"]] == ["none", "3,5"]
p = load("pieces", ["names"])
assert p["names"][0]["pieces"].count(" ") == 0 and all(r["pieces"].count(" ") >= 2 for r in p["names"][1:])
for r in p["names"]:
    for k in ("first_probability", "next_probability", "next_top1", "next_median_rank", "mentions"):
        assert k in r, k
st = load("stats", ["heads", "pairs", "positions", "far_repeat_share", "tokens"])
assert len(st["heads"]) == 8 and all(-1 <= r["correlation"] <= 1 and 0 <= r["closest_not_largest"] <= 1 for r in st["heads"])
print("every probe's JSON has its fields")
EOF
python3 -c '
import sys, xml.etree.ElementTree as ET
for f in sys.argv[1:]:
    root = ET.parse(f).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", (f, root.tag)
    assert len(list(root.iter())) > 20, f
print("SVG files are well-formed XML")' attend.svg distances.svg trace.svg heads.svg swap.svg ablate.svg pieces.svg stats.svg ||
  fail "SVG not well-formed"

# ablate --heads agrees with eval --ablate; mean ablation changes the numbers; text tables print.
l1=$(python3 -c 'import json; print(json.load(open("ablate35.json"))["ablations"][1]["loss"])')
l2=$("$S" eval slice.txt --model att.safetensors --test-stories 20 --ablate 3,5 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
python3 -c "import sys; sys.exit(0 if abs($l1 - $l2) < 1e-4 else 1)" || fail "ablate --heads 3,5 loss $l1 != eval --ablate 3,5 loss $l2"
lm=$("$S" eval slice.txt --model att.safetensors --test-stories 40 --ablate 0,1,2,3,4,5,6,7 --ablate-mode mean --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
lz=$("$S" eval slice.txt --model att.safetensors --test-stories 40 --ablate 0,1,2,3,4,5,6,7 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
python3 -c "import sys; sys.exit(0 if abs($lm - $lz) > 1e-4 else 1)" || fail "mean ablation gives the zero ablation's loss"
"$S" generate --model att.safetensors -t 0 -n 10 --ablate 3 --ablate-mode mean --stories slice.txt "Mia saw" > gen.txt || fail "generate --ablate-mode mean"
[[ -s gen.txt ]] || fail "generate --ablate-mode mean wrote nothing"
"$S" ablate slice.txt "${P[@]}" --ablate-mode mean > ablate_mean.txt || fail "ablate --ablate-mode mean"
grep -q "heads off" ablate_mean.txt || fail "ablate prints no table"

# Bad arguments: a clear message and a non-zero exit (2 for usage, 1 for what the model refuses).
expect() { # CODE WORDS... -- ARGS
  local code=$1 words=$2; shift 2
  set +e; "$S" "$@" > bad.out 2> bad.err; local rc=$?; set -e
  [[ $rc -eq $code ]] || { cat bad.err; fail "'$*' exited $rc, not $code"; }
  grep -qi -- "$words" bad.err || { cat bad.err; fail "'$*' did not say '$words'"; }
}
expect 1 "head 8 is out of range" eval slice.txt --model att.safetensors --ablate 8
expect 1 "head 9 is out of range" ablate slice.txt --model att.safetensors --heads 9
expect 1 "--head 8 is out of range: this model has heads 0 to 7" attend "Mia" --model att.safetensors --head 8 # the model refuses it
expect 2 "--head 8x names no head" attend "Mia" --model att.safetensors --head 8x # no head at all
expect 1 "out of range" generate --model att.safetensors --ablate 3,12 "Mia"
expect 1 "needs the attention network" heads slice.txt --model w8.safetensors
expect 1 "needs the attention network" stats slice.txt --model w8.safetensors
expect 1 "needs the attention network" attend "Mia" --model w8.safetensors
expect 1 "no heads to switch off" swap slice.txt --model w8.safetensors --ablate 1
expect 1 "outside the text" attend "Mia saw" --model att.safetensors --pos 40
expect 2 "--ablate-mode half is not zero or mean" swap slice.txt --model att.safetensors --ablate-mode half
# verbs whose numbers no switched-off head changes refuse --ablate rather than ignore it
expect 2 "--ablate changes nothing stats shows" stats slice.txt --model att.safetensors --ablate 1
expect 2 "--ablate-mode changes nothing heads shows" heads slice.txt --model att.safetensors --ablate-mode mean
expect 2 "--ablate changes nothing distances shows" distances --model att.safetensors --ablate=2
# nor a mode without heads to switch off
expect 2 "--ablate-mode changes nothing without --ablate" attend "Mia saw" --model att.safetensors --ablate-mode mean
expect 2 "unknown option" trace "Mia" --model att.safetensors --bogus
expect 2 "missing argument" swap --model att.safetensors
expect 1 "no model file" distances --model missing.safetensors
expect 1 "missing.txt" ablate missing.txt --model att.safetensors
expect 1 "not one word" swap slice.txt --model att.safetensors --names "two words"
echo "e2e_probes: all passed"
