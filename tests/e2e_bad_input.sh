#!/usr/bin/env bash
# Hostile input through the real binary (issue 7's table): missing files,
# folders, named pipes, empty and NUL-filled and invalid UTF-8 stories, a 50 MB line, bad
# vocabularies, model files truncated at every 1/16 of their length or with
# damaged headers, a window8 model where heads are needed, flags out of range,
# outputs nobody can write. Every case must exit 1 (a bad file) or 2 (a bad
# flag) with exactly one error line, which names the file (or the flag) and
# the problem: no crash, no core dump, no hang, no sanitizer report. All
# hostile files are made here, in the scratch folder.
set -euo pipefail
: "${STORYLM:?} ${STORYLM_SOURCE_DIR:?} ${STORYLM_TEST_TMP:?}"
rm -rf "$STORYLM_TEST_TMP" && mkdir -p "$STORYLM_TEST_TMP" && cd "$STORYLM_TEST_TMP"
PY=/usr/bin/python3
fail() { echo "FAILED: $*" >&2; exit 1; }
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
declare -A problem=([missing.txt]="No such file" [folder]="is a directory" [pipe]="not a regular file" [empty.txt]="empty"
  [nul.txt]="NUL" [invalid.txt]="UTF-8" [long.txt]="longer than")
for f in missing.txt folder pipe empty.txt nul.txt invalid.txt long.txt; do
  p=${problem[$f]}
  refuse 1 "$f" "$p" -- train "$f" "${common[@]}" --steps 2 --out never.safetensors
  refuse 1 "$f" "$p" -- train "$f" --vocab learnt.txt --steps 2 --out never.safetensors
  refuse 1 "$f" "$p" -- vocab "$f" -o learnt.txt
  refuse 1 "$f" "$p" -- eval "$f" --model model.safetensors
done
[[ ! -e never.safetensors && ! -e learnt.txt ]] || fail "a refused run left a model or vocabulary behind"
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
refuse 1 short_vocab.txt 1999 -- train stories.txt --vocab short_vocab.txt --steps 2 --out never.safetensors
refuse 1 long_vocab.txt 2001 -- train stories.txt --vocab long_vocab.txt --steps 2 --out never.safetensors
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
refuse_model len63.safetensors "header length 9223372036854775808"
refuse_model lenmax.safetensors "header length 18446744073709551615"
refuse_model vocab70000.safetensors "vocab_size '70000'"
for key in step batch warmup lr seed; do
  refuse 1 "resume_$key.safetensors" "$key" -- train stories.txt "${common[@]}" --steps 4 --resume --out "resume_$key.safetensors"
done
# A well-formed file of NaN weights loads (info shows it), but cannot write text or train.
"$STORYLM" info --model nan.safetensors | grep -q "NaN or infinite" || fail "info does not point out NaN weights"
refuse 1 nan.safetensors "NaN" -- generate --model nan.safetensors -n 5 --seed 1 "Lily found a"

# ---- a window8 model given where heads are needed ----
refuse 1 w8.safetensors window8 -- generate --model w8.safetensors --ablate 3 "Lily found a"
refuse 1 w8.safetensors window8 -- eval stories.txt --model w8.safetensors --ablate 3

# ---- flags out of range, for every verb that takes them ----
verbs=$("$STORYLM" --help | awk '/^verbs:/ {on = 1; next} on && NF {print $1}')
[[ -n $verbs ]] || fail "storylm --help lists no verbs"
declare -A tried=()
for verb in $verbs; do
  help=$("$STORYLM" "$verb" --help)
  for bad in "--batch 0" "--temperature -1" "--head 8" "--threads 0" "-n -5" "--top-p 2" \
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
[[ -n ${tried[--head]:-} ]] || echo "note: no verb takes --head yet; it will be tried once one does"

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
