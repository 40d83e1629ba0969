#!/usr/bin/env bash
# Hostile input through the real binary (issue 7's table): missing files,
# folders, named pipes, empty and NUL-filled and invalid UTF-8 stories, a 50 MB line, bad
# vocabularies, model files truncated at every 1/16 of their length or with
# damaged headers, a window8 model where heads are needed, flags out of range,
# outputs nobody can write; and issue 15's: non-finite and overflowing weights,
# outputs that are inputs, devices, folders or links, locks, stale
# temporaries, write errors on stdout. Every case must exit 1 (a bad file) or 2 (a bad
# flag) with exactly one error line, which names the file (or the flag) and
# the problem: no crash, no core dump, no hang, no sanitizer report. All
# hostile files are made here, in the scratch folder.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cases=0

# refuse CODE NEEDLE... -- ARGS...: `storylm ARGS` must exit CODE with one
# "error:" line on stderr holding every NEEDLE, within two minutes.
refuse() {
  local code=$1 needles=() rc=0
  shift
  while [[ $1 != -- ]]; do needles+=("$1"); shift; done
  shift
  timeout 120 "$STORYLM" "$@" >out.txt 2>err.txt </dev/null || rc=$?
  local what="storylm $*"
  what=${what:0:160}
  ((rc != 124)) || fail "$what: hung (killed after 120 s)"
  ((rc < 128)) || fail "$what: killed by signal $((rc - 128)) (crash)"
  if grep -qE 'Sanitizer|runtime error:|SUMMARY:' err.txt; then
    head -20 err.txt >&2
    fail "$what: sanitizer report"
  fi
  ((rc == code)) || fail "$what: exit code $rc, want $code; stderr: $(head -c 600 err.txt)"
  local n
  n=$(grep -c 'error:' err.txt || true)
  ((n == 1)) || fail "$what: $n error lines, want 1: $(head -c 600 err.txt)"
  local line
  line=$(grep 'error:' err.txt)
  for needle in "${needles[@]}"; do
    [[ $line == *"$needle"* ]] || fail "$what: the error line lacks '$needle': $line"
  done
  cases=$((cases + 1))
}

# ---- material: a vocabulary and two small models made by storylm itself ----
awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n<|endoftext|>\n' 'NR <= 400' "$STORYLM_SOURCE_DIR/data/stories.txt" >stories.txt
"$STORYLM" vocab stories.txt -o vocab.txt 2>/dev/null || fail "storylm vocab on good stories"
common=(--vocab vocab.txt --threads 2 --test-stories 20 --eval-every 0)
"$STORYLM" train stories.txt "${common[@]}" --steps 2 --out model.safetensors 2>train.log >/dev/null ||
  { cat train.log; fail "train a small model"; }
"$STORYLM" train stories.txt "${common[@]}" --steps 1 --arch window8 --out w8.safetensors 2>train.log >/dev/null ||
  { cat train.log; fail "train a small window8 model"; }
"$STORYLM" info --model model.safetensors >/dev/null || fail "the small model does not load"

# ---- stories files: missing, a folder, a named pipe, empty, NUL bytes, invalid UTF-8, a 50 MB line ----
mkdir folder
mkfifo pipe
: >empty.txt
head -c 4096 /dev/zero >nul.txt
printf 'Lily found a red \xff\xfe ball.\nShe was happy.\n' >invalid.txt
$PY -c 'import sys; sys.stdout.write("la " * (50 * 1024 * 1024 // 3))' >long.txt
# a writer's stories saved as Windows Notepad's "Unicode", or as a Word document
$PY -c 'open("utf16.txt", "w", encoding="utf-16").write("Lily found a ball.\n\nTom ran home.\n" * 50)'
printf 'PK\003\004\024\000\006\000word/document.xml\n\nLily found a ball.\n' >stories.docx
declare -A problem=([missing.txt]="No such file" [folder]="is a directory" [pipe]="not a regular file" [empty.txt]="empty"
  [nul.txt]="NUL" [invalid.txt]="UTF-8" [long.txt]="longer than" [utf16.txt]="is UTF-16 text"
  [stories.docx]="is a zip file")
for f in missing.txt folder pipe empty.txt nul.txt invalid.txt long.txt utf16.txt stories.docx; do
  p=${problem[$f]}
  refuse 1 "$f" "$p" -- train "$f" "${common[@]}" --steps 2 --out never.safetensors
  refuse 1 "$f" "$p" -- train "$f" --vocab learnt.txt --steps 2 --out never.safetensors
  refuse 1 "$f" "$p" -- vocab "$f" -o learnt.txt
  refuse 1 "$f" "$p" -- eval "$f" --model model.safetensors
done
[[ ! -e never.safetensors && ! -e learnt.txt ]] || fail "a refused run left a model or vocabulary behind"
# A stories file whose name is not UTF-8 (Latin-1's e-acute) trains and saves: the model
# records the name as UTF-8, the stray byte as \xe9 (it failed at the first save).
cp stories.txt $'st\xe9ries.txt'
"$STORYLM" train $'st\xe9ries.txt' "${common[@]}" --steps 2 --out latin1.safetensors >/dev/null 2>train.log ||
  { cat train.log; fail "train on a stories file whose name is not UTF-8"; }
"$STORYLM" info --model latin1.safetensors | grep -qF 'st\xe9ries.txt' ||
  fail "the model does not record the name not UTF-8 as st\\xe9ries.txt"
cases=$((cases + 1))
# Hints that fit the file: a gzip file is decompressed, lines ended by CR alone made LF, stories
# holding NUL bytes are no text; none is told to convert from Windows-1252 nor to run sed G.
$PY - <<'EOF'
import gzip
text = open("stories.txt", "rb").read()
open("stories.txt.gz", "wb").write(gzip.compress(text))
open("cr.txt", "wb").write(text[:20000].replace(b"\n", b"\r"))
open("nulmix.txt", "wb").write(text.replace(b".", b".\0"))
EOF
declare -A fits=([stories.txt.gz]="zcat 'stories.txt.gz' > stories.txt" [cr.txt]="tr '\r' '\n' < 'cr.txt'"
  [nulmix.txt]="hold NUL bytes")
for f in stories.txt.gz cr.txt nulmix.txt; do
  for args in "train $f --vocab vocab.txt --steps 2 --out never.safetensors" "vocab $f -o learnt.txt"; do
    rc=0
    # shellcheck disable=SC2086 # $args is a verb and its arguments
    "$STORYLM" $args >/dev/null 2>err.txt || rc=$?
    ((rc == 1)) && grep '^---> HINT:' err.txt | grep -qF -- "${fits[$f]}" && ! grep -qE 'WINDOWS-1252|sed G' err.txt ||
      fail "storylm $args: exit $rc, the hint is not '${fits[$f]}': $(head -c 600 err.txt)"
    cases=$((cases + 1))
  done
done
for f in missing.txt folder pipe nul.txt invalid.txt; do
  refuse 1 "$f" "${problem[$f]}" -- tokenize --vocab vocab.txt --lines "$f"
done
refuse 1 pipe "not a regular file" -- tokenize --vocab pipe "the end"
refuse 1 pipe "not a regular file" -- train stories.txt --vocab pipe --steps 2 --out never.safetensors
# A story of 780 KB among good ones is skipped with a count, not read into
# gigabytes of activations (a pass holds all of a story's positions).
{ cat stories.txt; $PY -c 'import sys; sys.stdout.write("the dog ran. " * 60000)'; } >one_huge_story.txt
timeout 120 "$STORYLM" train one_huge_story.txt "${common[@]}" --steps 1 --out huge.safetensors 2>huge.log >/dev/null ||
  { cat huge.log; fail "a 780 KB story among good ones stopped training"; }
grep -q "1 too long" huge.log || fail "the 780 KB story was not skipped with a count: $(cat huge.log)"

# ---- vocabularies: duplicates, an empty line, 1,999 and 2,001 entries ----
awk 'NR == 3 {piece = $0} NR == 10 {$0 = piece} 1' vocab.txt >dup_vocab.txt # line 10 repeats line 3
sed '10s/.*//' vocab.txt >gap_vocab.txt
head -n 1999 vocab.txt >short_vocab.txt
{ cat vocab.txt; echo 'zzzextra'; } >long_vocab.txt
{ head -n 5 vocab.txt; printf 'a\0b\n'; tail -n +7 vocab.txt; } >nul_vocab.txt
{ head -n 5 vocab.txt; printf 'a\xffb\n'; tail -n +7 vocab.txt; } >utf8_vocab.txt
refuse 1 dup_vocab.txt duplicate -- train stories.txt --vocab dup_vocab.txt --steps 2 --out never.safetensors
refuse 1 gap_vocab.txt empty -- train stories.txt --vocab gap_vocab.txt --steps 2 --out never.safetensors
# a vocabulary of any size trains a model of that size; --vocab-size N asks for exactly N
refuse 1 short_vocab.txt 1999 "expected 2000" -- train stories.txt --vocab short_vocab.txt --vocab-size 2000 --steps 2 --out never.safetensors
refuse 1 long_vocab.txt 2001 "expected 2000" -- train stories.txt --vocab long_vocab.txt --vocab-size 2000 --steps 2 --out never.safetensors
refuse 1 nul_vocab.txt NUL -- train stories.txt --vocab nul_vocab.txt --steps 2 --out never.safetensors
refuse 1 utf8_vocab.txt UTF-8 -- train stories.txt --vocab utf8_vocab.txt --steps 2 --out never.safetensors
refuse 1 dup_vocab.txt duplicate -- tokenize --vocab dup_vocab.txt "the end"
refuse 1 gap_vocab.txt empty -- tokenize --vocab gap_vocab.txt "the end"
[[ ! -e never.safetensors ]] || fail "a refused vocabulary gave a model"

# Every command that reads a model refuses a bad one the same way.
refuse_model() {
  local file=$1
  shift
  refuse 1 "$file" "$@" -- info --model "$file"
  refuse 1 "$file" "$@" -- generate --model "$file" -n 5 --seed 1 "Lily found a"
  refuse 1 "$file" "$@" -- eval stories.txt --model "$file"
  refuse 1 "$file" "$@" -- train stories.txt "${common[@]}" --steps 4 --resume --out "$file"
}

# ---- model files: missing, a folder, empty, NUL bytes, truncated at every 1/16 ----
refuse 1 missing.safetensors "no model file" -- info --model missing.safetensors
refuse 1 missing.safetensors "no model file" -- generate --model missing.safetensors "Lily found a"
refuse 1 missing.safetensors "no model file" -- eval stories.txt --model missing.safetensors
refuse 1 missing.safetensors "No such file" -- train stories.txt "${common[@]}" --steps 4 --resume --out missing.safetensors
mkdir folder.safetensors
refuse_model folder.safetensors "directory"
mkfifo pipe.safetensors
refuse_model pipe.safetensors "not a regular file"
head -c 100000 /dev/zero >nul.safetensors
refuse_model nul.safetensors "header length is 0"
size=$(stat -c %s model.safetensors)
for k in $(seq 0 15); do
  head -c $((size * k / 16)) model.safetensors >"cut$k.safetensors"
  refuse_model "cut$k.safetensors" "" # the problem differs with the cut; the file must be named
done

# ---- damaged headers: invalid JSON, overlapping offsets, offsets past the end,
# shapes or sizes not the architecture's, a header length of 2^63, NaN weights,
# training keys a resume cannot follow ----
$PY - model.safetensors <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]

def save(name, h, d=data, text=None):
    t = (text if text is not None else json.dumps(h, separators=(",", ":"))).encode()
    t += b" " * ((8 - (8 + len(t)) % 8) % 8)
    open(name, "wb").write(struct.pack("<Q", len(t)) + t + d)

def edited(change):
    h = json.loads(json.dumps(header))
    change(h)
    return h

text = json.dumps(header, separators=(",", ":"))
save("json_cut.safetensors", None, text=text[: len(text) // 2])
save("json_comma.safetensors", None, text=text[:-1] + ",}")
def overlap(h):
    h["key"]["data_offsets"] = [h["query"]["data_offsets"][0] + 4, h["query"]["data_offsets"][1] + 4]
save("overlap.safetensors", edited(overlap))
def past_end(h):
    b, e = h["output.bias"]["data_offsets"]
    h["output.bias"]["data_offsets"] = [b + 64, e + 64]
save("past_end.safetensors", edited(past_end))
def transposed(h):
    h["hidden.weight"]["shape"] = list(reversed(h["hidden.weight"]["shape"]))
save("shape.safetensors", edited(transposed))
def heads(h):
    h["__metadata__"]["n_heads"] = "4"
save("heads.safetensors", edited(heads))
def arch(h):
    h["__metadata__"]["arch"] = "window8"
save("arch.safetensors", edited(arch))
def dtype(h):
    h["distance"]["dtype"] = "I32"
save("dtype.safetensors", edited(dtype))
# a string cut at a NUL: json writes it as \u0000; "attention" would load and the rest be lost
save("arch_nul.safetensors", edited(lambda h: h["__metadata__"].update({"arch": "attention\0 and more"})))
open("len63.safetensors", "wb").write(struct.pack("<Q", 1 << 63) + raw[8:])
open("lenmax.safetensors", "wb").write(b"\xff" * 8 + raw[8:])
b, e = header["output.bias"]["data_offsets"]
nan = bytearray(data)
nan[b:e] = struct.pack("<f", float("nan")) * ((e - b) // 4)
save("nan.safetensors", header, bytes(nan))

# A file of a few MB claiming 70,000 tokens (tiny other sizes): its logits alone
# would take gigabytes.
V = 70000
sizes = dict(vocab_size=V, row_dim=1, n_heads=1, key_dim=1, value_dim=1, window=1, hidden_dim=1, context=8)
meta = {"format": "storylm", "format_version": "1", "arch": "attention", **{k: str(v) for k, v in sizes.items()},
        "vocab": "[UNK]\n[EOS]\n" + "".join(f"w{i}\n" for i in range(2, V))}
shapes = [("embedding", [V, 1]), ("query", [1, 1, 1]), ("key", [1, 1, 1]), ("value", [1, 1, 1]),
          ("distance", [1, 1]), ("hidden.weight", [1, 2]), ("hidden.bias", [1]), ("output.weight", [V, 1]),
          ("output.bias", [V])]
h, pos = {"__metadata__": meta}, 0
for name, shape in shapes:
    count = 1
    for d in shape:
        count *= d
    h[name] = {"dtype": "F32", "shape": shape, "data_offsets": [pos, pos + 4 * count]}
    pos += 4 * count
save("vocab70000.safetensors", h, bytes(pos))

# Pairs for --resume whose training keys are damaged (the optimizer state agrees on the step).
araw = open("model.adam.safetensors", "rb").read()
an = struct.unpack("<Q", araw[:8])[0]
adam = json.loads(araw[8:8 + an])
for key, value in [("step", "4294967295"), ("batch", "0"), ("warmup", "1e300"), ("lr", "nan"), ("seed", "-5")]:
    save(f"resume_{key}.safetensors", edited(lambda h: h["__metadata__"].update({key: value})))
    a = json.loads(json.dumps(adam))
    if key == "step":
        a["__metadata__"]["step"] = value
    save(f"resume_{key}.adam.safetensors", a, araw[8 + an:])
EOF
refuse_model json_cut.safetensors "not valid JSON"
refuse_model json_comma.safetensors "not valid JSON"
refuse_model overlap.safetensors "overlap"
refuse_model past_end.safetensors "past the end"
refuse_model shape.safetensors "hidden.weight" "shape"
refuse_model heads.safetensors "shape"
refuse_model arch.safetensors "unexpected tensor"
refuse_model dtype.safetensors "distance" "dtype"
refuse_model arch_nul.safetensors "NUL character"
tf="$STORYLM_SOURCE_DIR/models/tinystories-transformer.safetensors" # "act_fn": "gelu\u0000..." loaded as gelu
if [[ -f $tf ]]; then
  $PY - "$tf" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
h["__metadata__"]["act_fn"] = "gelu\0 relu"
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * ((8 - (8 + len(t)) % 8) % 8)
open("act_nul.safetensors", "wb").write(struct.pack("<Q", len(t)) + t + raw[8 + n:])
EOF
  refuse 1 act_nul.safetensors "NUL character" -- info --model act_nul.safetensors
fi
refuse_model len63.safetensors "header length 9223372036854775808"
refuse_model lenmax.safetensors "header length 18446744073709551615"
refuse_model vocab70000.safetensors "vocab_size '70000'"
for key in step batch warmup lr seed; do
  refuse 1 "resume_$key.safetensors" "$key" -- train stories.txt "${common[@]}" --steps 4 --resume --out "resume_$key.safetensors"
done

# ---- a window8 model given where heads are needed ----
refuse 1 w8.safetensors window8 -- generate --model w8.safetensors --ablate 3 "Lily found a"
refuse 1 w8.safetensors window8 -- eval stories.txt --model w8.safetensors --ablate 3

# ---- a head the model lacks is the model's refusal, with its range; a value naming no head a usage error ----
refuse 1 "--head 8 is out of range: this model has heads 0 to 7" -- lookup "Lily ran" --model model.safetensors --head 8
refuse 1 "--head 2:3 is out of range" "heads 0 to 7" -- lookup "Lily ran" --model model.safetensors --head 2:3
refuse 2 "--head" "names no head" -- lookup "Lily ran" --model model.safetensors --head 3x

# ---- counts above the vocabulary: --n-probs 20 (and trace's --top-k 64) on a model
# of 3 tokens give its 3 tokens, each once, never a slot the sampler did not fill ----
"$STORYLM" train stories.txt --vocab-size 3 --vocab vocab3.txt --threads 2 --test-stories 20 --eval-every 0 --steps 2 \
  --out three.safetensors 2>train.log >/dev/null || { cat train.log; fail "train a model of 3 tokens"; }
for seed in 1 2 3 4 5 6; do
  rc=0
  "$STORYLM" generate --model three.safetensors --json --n-probs 20 -n 20 --seed $seed "a" >three.json 2>err.txt || rc=$?
  ((rc == 0)) && ! grep -qE 'Sanitizer|runtime error:' err.txt ||
    fail "generate --n-probs 20 on a model of 3 tokens (seed $seed): exit $rc, $(head -c 600 err.txt)"
  $PY -c 'import json, sys
j = json.load(open(sys.argv[1]))
tokens = [t for s in j["samples"] for t in s["tokens"]]
assert j["n_probs"] == 3 and tokens and all(sorted(a["id"] for a in t["top_logprobs"]) == [0, 1, 2] for t in tokens), j' \
    three.json || fail "generate --n-probs 20 on a model of 3 tokens: not its 3 tokens each time"
  cases=$((cases + 1))
done
"$STORYLM" trace "a . ." --model three.safetensors --top-k 64 --json >three.json 2>err.txt ||
  fail "trace --top-k 64 on a model of 3 tokens: $(head -c 600 err.txt)"
$PY -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["guesses"]) == 3' three.json ||
  fail "trace --top-k 64 on a model of 3 tokens: not its 3 tokens"

# ---- an empty prompt file or empty stdin starts a story from nothing (no read of a NULL buffer) ----
for how in "-f empty.txt" "-" "-f /dev/null"; do
  rc=0
  # shellcheck disable=SC2086 # $how is a flag and its value
  "$STORYLM" generate --model model.safetensors -n 5 --seed 1 $how <empty.txt >out.txt 2>err.txt || rc=$?
  ((rc == 0)) && [[ -s out.txt ]] && ! grep -qE 'Sanitizer|runtime error:' err.txt ||
    fail "generate $how with an empty prompt: exit $rc, $(head -c 600 err.txt)"
  cases=$((cases + 1))
done

# ---- flags out of range, for every verb that takes them ----
verbs=$("$STORYLM" --help | awk '/^verbs:/ {on = 1; next} on && NF {print $1}')
[[ -n $verbs ]] || fail "storylm --help lists no verbs"
declare -A tried=()
for verb in $verbs; do
  help=$("$STORYLM" "$verb" --help)
  for bad in "--batch 0" "--temperature -1" "--threads 0" "-n -5" "--top-p 2" \
    "--steps 0" "--lr 0" "--lr nan" "--top-k -1" "--max-positions 0" "--test-stories -1" "--size 1"; do
    flag=${bad% *}
    if [[ $flag == -n ]]; then pattern='-n, '; else pattern="$flag "; fi
    [[ $help == *"$pattern"* ]] || continue
    # shellcheck disable=SC2086 # $bad is a flag and its value
    needle=${flag#-}
    [[ $flag != -n ]] || needle=--tokens # the message gives the long name
    refuse 2 "$needle" -- "$verb" $bad
    tried[$flag]=1
  done
done
for flag in --batch --temperature --threads -n --top-p; do
  [[ -n ${tried[$flag]:-} ]] || fail "no verb takes $flag: the flag table in this test is stale"
done

# ---- issue 15: wrong results delivered as right ----
# Values, not header: NaN or infinite weights are refused at load by every verb,
# naming the tensor; a vocabulary in the metadata is checked at load too.
$PY - model.safetensors <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]

def save(name, h, d=data):
    t = json.dumps(h, separators=(",", ":")).encode()
    t += b" " * ((8 - (8 + len(t)) % 8) % 8)
    open(name, "wb").write(struct.pack("<Q", len(t)) + t + d)

def filled(d, tensor, value):
    b, e = header[tensor]["data_offsets"]
    d = bytearray(d)
    d[b:e] = struct.pack("<f", value) * ((e - b) // 4)
    return bytes(d)

def with_vocab(change):
    h = json.loads(json.dumps(header))
    lines = h["__metadata__"]["vocab"].split("\n")
    change(lines)
    h["__metadata__"]["vocab"] = "\n".join(lines)
    return h

save("inf.safetensors", header, filled(data, "embedding", float("-inf")))
save("huge.safetensors", header, filled(data, "output.weight", 3e38))  # logits overflow
save("flat.safetensors", header, filled(filled(data, "output.weight", 0.0), "output.bias", 3e38))
save("vocab_dup.safetensors", with_vocab(lambda l: l.__setitem__(9, l[2])))
save("vocab_empty.safetensors", with_vocab(lambda l: l.__setitem__(9, "")))
save("vocab_nounk.safetensors", with_vocab(lambda l: l.__setitem__(l.index("[UNK]"), "unkk")))
h = json.loads(json.dumps(header))
h["__metadata__"].update({f"k{i:06d}": "v" for i in range(80000)})
save("keys80000.safetensors", h)
h = json.loads(json.dumps(header))
h["__metadata__"].update({f"k{i}": "" for i in range(1100000)})
save("keys1m.safetensors", h)  # 13 MB of header: refused from a count before parsing
EOF
refuse_model nan.safetensors "output.bias" "NaN"
refuse_model inf.safetensors "embedding" "infinity"
refuse_model vocab_dup.safetensors "duplicate piece"
refuse_model vocab_empty.safetensors "line 10 is empty"
refuse_model vocab_nounk.safetensors "[UNK]"
refuse 1 huge.safetensors "overflows at position" -- eval stories.txt --model huge.safetensors --json
[[ ! -s out.txt ]] || fail "eval of overflowing logits printed a result: $(cat out.txt)"
refuse 1 "overflows at position" -- ablate stories.txt --model huge.safetensors --json
"$STORYLM" eval stories.txt --model flat.safetensors --json >flat.json 2>/dev/null || fail "eval of flat logits"
$PY -c 'import json, math, sys; r = json.load(open(sys.argv[1])); assert abs(r["loss"] - math.log(2000)) < 1e-3 and r["accuracy"] < 0.5, r' flat.json ||
  fail "biases of 3e38: eval does not give log(2000) and a low accuracy: $(cat flat.json)"
"$STORYLM" eval --text "Lily found a red ball." --model flat.safetensors --json >flat.json 2>/dev/null || fail "eval --text of flat logits"
$PY -c 'import json, math, sys; r = json.load(open(sys.argv[1]))
assert abs(r["loss"] - math.log(2000)) < 1e-3 and r["accuracy"] == 0, r
assert all(abs(t["probability"] - 1 / 2000) < 1e-6 and abs(t["loss"] - math.log(2000)) < 1e-3 for t in r["tokens"]), r' flat.json ||
  fail "biases of 3e38: eval --text does not give eval's log(2000) and accuracy: $(head -c 600 flat.json)"
start=$(date +%s%N)
timeout 20 "$STORYLM" info --model keys80000.safetensors >/dev/null || fail "80,000 metadata keys do not load"
ms=$((($(date +%s%N) - start) / 1000000))
echo "info of 80,000 metadata keys: $ms ms"
((ms < 5000)) || fail "80,000 metadata keys took $ms ms (quadratic?)"
refuse 1 keys1m.safetensors "over the limit" -- info --model keys1m.safetensors

# A temperature so low that 1/T overflows is greedy, never [UNK] from NaN.
greedy=$("$STORYLM" generate --model model.safetensors -t 0 -n 12 "Lily found a" 2>/dev/null)
for t in 1e-38 1e-45 1e-5; do
  got=$("$STORYLM" generate --model model.safetensors -t $t -n 12 --seed 3 "Lily found a" 2>/dev/null) || fail "-t $t failed"
  [[ $got == "$greedy" ]] || fail "-t $t is not greedy: '$got' vs '$greedy'"
done

# Write errors on standard output: exit 1 with a message, for every verb that prints.
for cmd in "tokenize --vocab vocab.txt Lily" "generate --model model.safetensors -n 5 --seed 1 Lily" \
  "info --model model.safetensors" "eval stories.txt --model model.safetensors --json" \
  "stories stories.txt --vocab vocab.txt --ids" "version" "distances --model model.safetensors"; do
  rc=0
  # shellcheck disable=SC2086 # $cmd is a verb and its arguments
  "$STORYLM" $cmd >/dev/full 2>err.txt || rc=$?
  ((rc == 1)) && grep -q "cannot write the output" err.txt || fail "storylm $cmd >/dev/full: exit $rc, $(cat err.txt)"
  cases=$((cases + 1))
done

# ---- issue 15: files destroyed ----
cp stories.txt keep.txt && cp vocab.txt keep_vocab.txt && cp model.safetensors keep.safetensors
printf 'x\ty\n1\t2\n2\t3\n' >table.tsv && cp table.tsv keep.tsv
ln -sf stories.txt stories_link.txt
refuse 1 "same file as the input" -- train stories.txt "${common[@]}" --steps 2 --out stories.txt
refuse 1 "same file as the input" -- train stories.txt "${common[@]}" --steps 2 --out stories_link.txt
refuse 1 "same file as the input" -- train stories.txt "${common[@]}" --steps 2 --out vocab.txt
refuse 1 "model and as the vocabulary" -- train stories.txt --vocab fresh.txt --steps 2 --out fresh.txt
refuse 1 "same file as the input" -- vocab stories.txt -o stories.txt
refuse 1 "same file as the input" -- vocab stories.txt -o stories_link.txt
refuse 1 "same file as the input" -- plot table.tsv -o table.tsv
refuse 1 "same file as the input" -- distances --model model.safetensors --svg model.safetensors
refuse 1 "same file as the input" -- heads stories.txt --model model.safetensors --svg stories.txt
cmp -s stories.txt keep.txt && cmp -s vocab.txt keep_vocab.txt && cmp -s model.safetensors keep.safetensors &&
  cmp -s table.tsv keep.tsv || fail "an input was changed by a refused run"
[[ -L stories_link.txt && ! -e fresh.txt ]] || fail "a link was replaced, or a refused run wrote its vocabulary"
# Outputs that are not regular files: a device, a pipe, a folder (before the first step), a link to nothing.
refuse 1 "/dev/null" "not a regular file" -- train stories.txt "${common[@]}" --steps 2 --out /dev/null
refuse 1 "pipe" "not a regular file" -- vocab stories.txt -o pipe
refuse 1 "/dev/null" "not a regular file" -- plot table.tsv -o /dev/null
[[ -c /dev/null ]] || fail "/dev/null is no longer a device"
mkdir -p outdir
start=$(date +%s)
refuse 1 "outdir" "directory" -- train stories.txt "${common[@]}" --steps 100000 --out outdir
(($(date +%s) - start < 60)) || fail "--out naming a folder was found only after training"
ln -sf nowhere/at/all dangling.safetensors
refuse 1 "dangling.safetensors" "link to nothing" -- train stories.txt "${common[@]}" --steps 2 --out dangling.safetensors
# A link to a regular file is written through: the target gets the output, the link stays a link.
mkdir -p linked && ln -sf linked/target.svg pic.svg && : >linked/target.svg
"$STORYLM" distances --model model.safetensors --svg pic.svg >/dev/null 2>&1 || fail "--svg through a link"
[[ -L pic.svg ]] && grep -q "<svg" linked/target.svg || fail "--svg replaced the link instead of writing its target"
# A kill -9 in a save leaves NAME.tmp.PID: removed by the next save once PID is gone.
sleep 0 & dead=$!
wait $dead
: >"m2.safetensors.tmp.$dead"
: >"m2.safetensors.tmp.$$" # a live process's: left alone
"$STORYLM" train stories.txt "${common[@]}" --steps 1 --out m2.safetensors >/dev/null 2>&1 || fail "train beside stale temporaries"
[[ ! -e "m2.safetensors.tmp.$dead" && -e "m2.safetensors.tmp.$$" ]] || fail "the stale temporary was not removed, or a live one was"
rm -f "m2.safetensors.tmp.$$"
# Two runs on one output: a lock beside it refuses the second; a dead process's lock does not.
sleep 60 & live=$!
echo "$live" >m3.safetensors.lock
refuse 1 "m3.safetensors" "another process" "PID $live" -- train stories.txt "${common[@]}" --steps 1 --out m3.safetensors
kill "$live" && wait "$live" 2>/dev/null || true
echo "$dead" >m3.safetensors.lock
"$STORYLM" train stories.txt "${common[@]}" --steps 1 --out m3.safetensors >/dev/null 2>&1 || fail "a stale lock refused the run"
[[ ! -e m3.safetensors.lock ]] || fail "the lock outlived its run"

# ---- issue 15: --resume with flags that contradict the run ----
"$STORYLM" train stories.txt "${common[@]}" --steps 2 --out r.safetensors >/dev/null 2>&1 || fail "train r"
refuse 1 "--lr 0.5" "lr 0.003" -- train stories.txt "${common[@]}" --steps 4 --resume --lr 0.5 --out r.safetensors
refuse 1 "--batch 3" -- train stories.txt "${common[@]}" --steps 4 --resume --batch 3 --out r.safetensors
refuse 1 "--seed 9" -- train stories.txt "${common[@]}" --steps 4 --resume --seed 9 --out r.safetensors
refuse 1 "--arch window8" -- train stories.txt "${common[@]}" --steps 4 --resume --arch window8 --out r.safetensors
"$STORYLM" train stories.txt "${common[@]}" --steps 4 --resume --batch 8 --out r.safetensors >/dev/null 2>&1 ||
  fail "--resume with the run's own --batch 8 was refused"

# ---- issue 15: smaller ones ----
"$STORYLM" train stories.txt "${common[@]}" --test-stories 0 --steps 1 --out t0.safetensors 2>t0.log >/dev/null ||
  fail "--test-stories 0"
grep -q "no test stories" t0.log && ! grep -qi "nan" t0.log || fail "--test-stories 0 printed: $(cat t0.log)"
printf 'step\tloss\n1\t1e308\n2\t-1e308\n3\t2\n4\t1\n5\tinf\n' >huge.tsv
"$STORYLM" plot huge.tsv -o huge.svg 2>plot.err || fail "plot of huge values"
! grep -qi "nan" huge.svg && grep -q "left out" plot.err || fail "plot of 1e308 wrote nan or said nothing"

# ---- outputs nobody can write: a folder that does not exist, a read-only one ----
mkdir readonly && chmod 555 readonly
ro=readonly
if (: >readonly/probe) 2>/dev/null; then # root writes anywhere; sysfs refuses even root
  rm -f readonly/probe
  ro=/sys
fi
for dir in no_such_folder "$ro"; do
  refuse 1 "$dir/m.safetensors" -- train stories.txt "${common[@]}" --steps 3000 --out "$dir/m.safetensors"
  refuse 1 "$dir/v.txt" -- train stories.txt --vocab "$dir/v.txt" --steps 3000 --out never.safetensors
  refuse 1 "$dir/v.txt" -- vocab stories.txt -o "$dir/v.txt"
done
chmod 755 readonly
[[ ! -e never.safetensors ]] || fail "a refused output path still gave a model"
[[ -z $(find . -name '*.tmp.*') ]] || fail "temporary files left behind: $(find . -name '*.tmp.*')"

echo "e2e_bad_input: all $cases cases refused cleanly"
