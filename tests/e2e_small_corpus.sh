#!/usr/bin/env bash
# A writer's small corpus, end to end, from an empty folder with the plain
# command: `storylm train FILE` on 50 and on 200 stories of the test's own
# (made up below, not TinyStories) learns as many vocabulary pieces as the
# words give and says so; the model then generates, evaluates and is served.
# 10 stories are refused with what to do. --vocab-size N is recorded in the
# model and every verb works with it.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"

# make_stories N SEED: N short stories from a few templates, '<|endoftext|>'-separated.
make_stories() {
  "$PY" - "$1" "$2" <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
names = ["Pip", "Nora", "Otto", "Wren", "Bo", "Kai", "Lumi", "Tess", "Rafe", "Juno", "Milo", "Ada"]
pets = ["cat", "dog", "frog", "duck", "goat", "owl", "fox", "hen"]
things = ["kite", "drum", "boat", "hat", "box", "cup", "shell", "bell", "lamp", "sock"]
places = ["park", "barn", "lake", "hill", "shop", "garden", "beach", "woods"]
colours = ["red", "blue", "green", "yellow", "small", "big", "old", "shiny"]
feel = ["happy", "sad", "sleepy", "brave", "glad", "cross"]
out = []
for _ in range(n):
    a, b = r.sample(names, 2)
    pet, thing, place, colour = r.choice(pets), r.choice(things), r.choice(places), r.choice(colours)
    s = [f"{a} had a {colour} {thing}.", f"One day {a} went to the {place} with a {pet}."]
    s.append(r.choice([f"The {pet} ran after the {thing}.", f"{b} came to play with {a}.",
                       f"It began to rain at the {place}."]))
    s.append(r.choice([f"{a} felt {r.choice(feel)}.", f"{b} said, \"Can I hold the {thing}?\"",
                       f"The {pet} was {r.choice(feel)} too."]))
    s.append(r.choice([f"{a} gave the {thing} to {b}.", f"They sat by the {place} and sang.",
                       f"{a} and {b} went home for tea."]))
    s.append(f"That night {a} hugged the {pet} and slept.")
    out.append(" ".join(s))
print("\n<|endoftext|>\n".join(out))
PY
}

# A fresh empty folder, as a new user's (the scratch folder holds the test's own files).
fresh() { local d; d=$(mktemp -d "$STORYLM_TEST_TMP/empty.XXXX"); echo "$d"; }

# 200 stories, the plain command (a few steps, one thread, to stay quick).
d200=$(fresh)
cd "$d200"
make_stories 200 1 > mine.txt
"$S" train mine.txt --steps 30 --threads 1 > train.out 2> train.err || { cat train.err; fail "train on 200 stories"; }
grep -q "give only [0-9]* pieces" train.err || { cat train.err; fail "train did not say the vocabulary is smaller"; }
grep -q -- "--vocab .*models/vocab.txt" train.err || { cat train.err; fail "train did not name the shipped vocabulary"; }
size=$("$S" info 2> /dev/null | awk '/^vocabulary/ {gsub(",", "", $2); print $2}')
[[ $size -gt 50 && $size -lt 2000 && $size -eq $(wc -l < vocab.txt) ]] || fail "the model's vocabulary has $size pieces, vocab.txt $(wc -l < vocab.txt)"
"$S" generate "Pip had a" -n 8 -s 1 > gen.txt 2> /dev/null || fail "generate with the 200-story model"
[[ -s gen.txt ]] || fail "generate wrote nothing"
"$S" eval mine.txt --json > eval.json 2> /dev/null || fail "eval of the 200-story model"
"$PY" -c 'import json,sys; j=json.load(open("eval.json")); assert 0 < j["loss"] < 20, j' || fail "eval: $(cat eval.json)"
"$S" tokenize "Pip had a red kite." > tok.txt 2> tok.err || fail "tokenize beside the model"
grep -q "using model.safetensors" tok.err || fail "tokenize did not use ./model.safetensors: $(cat tok.err)"
"$S" stories mine.txt --ids --split test > ids.txt 2> ids.err || fail "stories --ids beside the model"
grep -q "using model.safetensors" ids.err || fail "stories --ids did not say it used ./model.safetensors: $(cat ids.err)"
"$PY" -c 'import sys; n = int(sys.argv[1]); assert all(0 <= int(i) < n for l in open("ids.txt") for i in l.split())' "$size" ||
  fail "stories --ids gave ids outside the model's $size"

# serve that model: one real request to the API.
"$S" serve --port 0 --threads 1 --stories mine.txt > serve.out 2> serve.err &
pid=$!
trap 'kill $pid 2> /dev/null || true' EXIT
port=""
for _ in $(seq 100); do
  port=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' serve.out serve.err 2> /dev/null | head -1 | sed 's/.*://') || true
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { cat serve.out serve.err; fail "serve printed no port"; }
"$PY" - "$port" <<'PY' || fail "serve: /api/loss with the 200-story model"
import json, sys, urllib.request
def post(path, body):
    req = urllib.request.Request("http://127.0.0.1:%s%s" % (sys.argv[1], path), data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))
j = post("/api/loss", {"text": "Pip had a red kite. One day Pip went to the park."})
assert j["command"] == "eval" and j["model"]["file"].endswith("model.safetensors"), j
PY
kill $pid
wait $pid 2> /dev/null || true
trap - EXIT

# 50 stories, the same plain command, from another empty folder.
d50=$(fresh)
cd "$d50"
make_stories 50 2 > mine.txt
"$S" train mine.txt --steps 20 --threads 1 > train.out 2> train.err || { cat train.err; fail "train on 50 stories"; }
"$S" generate "Nora went to the" -n 5 -s 1 > /dev/null 2>&1 || fail "generate with the 50-story model"
"$S" eval mine.txt > /dev/null 2>&1 || fail "eval of the 50-story model"

# 10 stories: a clear error, what to do, and nothing written.
d10=$(fresh)
cd "$d10"
make_stories 10 3 > mine.txt
if "$S" train mine.txt --steps 5 2> err.txt; then fail "train on 10 stories succeeded"; fi
grep -q "holds 10 stories; training needs at least 20" err.txt || { cat err.txt; fail "10 stories: unclear message"; }
grep -q "HINT: give at least 20 stories" err.txt || { cat err.txt; fail "10 stories: no hint"; }
[[ ! -e model.safetensors && ! -e vocab.txt ]] || fail "a refused train left files: $(ls)"

# One story a line (no blank lines): read as one story, the error says how to
# separate them, and the command it gives works.
d1=$(fresh)
cd "$d1"
make_stories 60 5 | grep -v '^<|endoftext|>$' > lines.txt
[[ $(wc -l < lines.txt) -eq 60 ]] || fail "lines.txt has $(wc -l < lines.txt) lines, not 60"
if "$S" train lines.txt --steps 2 --threads 1 2> err.txt; then fail "train on one story a line succeeded"; fi
grep -q "holds 1 story; training needs at least 20" err.txt && grep -q "sed G 'lines.txt' > stories.txt" err.txt ||
  { cat err.txt; fail "one story a line: no hint to separate them"; }
for _ in $(seq 6); do cat lines.txt; done > long_lines.txt # 360 lines, past a story's 65536 bytes
if "$S" stories long_lines.txt 2> err.txt; then fail "stories of one story a line, past 64 KB, succeeded"; fi
grep -q "its 360 lines are one story" err.txt && grep -q "sed G 'long_lines.txt' > stories.txt" err.txt ||
  { cat err.txt; fail "one story a line past 64 KB: no hint to separate them"; }
sed G lines.txt > stories.txt
"$S" train stories.txt --steps 2 --threads 1 > /dev/null 2> err.txt || { cat err.txt; fail "train after sed G"; }

# Stories saved as Windows-1252 (curly quotes from a word processor): the
# stories left out are counted, a warning names the likely cause and the
# iconv command, which gives every story back; with too few left, train says so.
dw=$(fresh)
cd "$dw"
make_stories 60 6 | "$PY" -c 'import sys; sys.stdout.buffer.write(sys.stdin.read().replace("\"", "\u201c", 20).encode("cp1252"))' > word.txt
"$S" stories word.txt > table.txt 2> err.txt || { cat err.txt; fail "stories of a Windows-1252 file"; }
grep -q "warning: [0-9]* of 60 stories are not UTF-8" err.txt && grep -q "iconv -f WINDOWS-1252 -t UTF-8 'word.txt' > stories-utf8.txt" err.txt ||
  { cat err.txt; fail "Windows-1252 stories: no warning naming iconv"; }
iconv -f WINDOWS-1252 -t UTF-8 word.txt > stories-utf8.txt
"$S" stories stories-utf8.txt > table.txt 2> err.txt || { cat err.txt; fail "stories after iconv"; }
grep -q "^stories      60 " table.txt && ! grep -q "warning" err.txt || { cat table.txt err.txt; fail "iconv did not give every story back"; }
# none of them UTF-8 (no stories), and all but 10 (too few to train on)
for keep in 0 10; do
  make_stories 60 6 | "$PY" -c '
import sys
keep, sep = int(sys.argv[1]), "\n<|endoftext|>\n"
s = sys.stdin.read().split(sep)
s = s[:keep] + [x.replace(".", "\u2019.") for x in s[keep:]]
sys.stdout.buffer.write(sep.join(s).encode("cp1252"))' $keep > bad$keep.txt
  if "$S" train bad$keep.txt --steps 2 --threads 1 2> err.txt; then fail "train on $keep UTF-8 stories of 60 succeeded"; fi
  grep -q "iconv -f WINDOWS-1252 -t UTF-8 'bad$keep.txt'" err.txt || { cat err.txt; fail "train on $keep UTF-8 stories of 60: no hint to convert them"; }
done

# --vocab-size N: recorded in the model; every verb works with it.
dv=$(fresh)
cd "$dv"
make_stories 200 4 > mine.txt
if "$S" train mine.txt --vocab-size 5000 --steps 2 2> err.txt; then fail "--vocab-size 5000 on a small corpus succeeded"; fi
grep -q "give only [0-9]* pieces" err.txt && grep -q "HINT: give --vocab-size of at most" err.txt ||
  { cat err.txt; fail "--vocab-size too large: no hint"; }
"$S" train mine.txt --vocab-size 120 --steps 20 --threads 1 --snapshot-every 10 > /dev/null 2> train.err ||
  { cat train.err; fail "train --vocab-size 120"; }
[[ $(wc -l < vocab.txt) -eq 120 ]] || fail "vocab.txt has $(wc -l < vocab.txt) pieces, not 120"
"$S" info | grep "^vocabulary    120 tokens" >/dev/null || fail "info: $("$S" info | grep vocabulary)"
[[ $("$S" info --json 2> /dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["vocab_size"])') == 120 ]] ||
  fail "info --json does not record vocab_size 120"
if "$S" train mine.txt --vocab-size 2000 --steps 2 -o other.safetensors 2> err.txt; then fail "--vocab-size 2000 with a 120-piece vocab.txt"; fi
grep -q "leave out --vocab-size" err.txt || { cat err.txt; fail "--vocab-size against vocab.txt: no hint"; }
TEXT="Pip had a red kite. One day Pip went to the park."
M=(--model model.safetensors --threads 1)
run() { "$S" "$@" > out.txt 2> err.txt || { cat err.txt; fail "with a 120-token vocabulary: storylm $*"; }; }
run generate "Pip had a" -n 10 -s 1 "${M[@]}"
run generate "Pip had a" -n 10 -s 1 -k 120 "${M[@]}"
run eval mine.txt "${M[@]}"
run eval mine.txt --ablate 1,2 "${M[@]}"
run attend "$TEXT" "${M[@]}"
run trace "$TEXT" "${M[@]}"
run attribute "$TEXT" "${M[@]}"
run ablate mine.txt "${M[@]}"
run distances "${M[@]}"
run heads mine.txt "${M[@]}" --model model.step10.safetensors
run stats mine.txt "${M[@]}"
run swap mine.txt "${M[@]}" --names pip,nora
run pieces mine.txt "${M[@]}"
run circuits "${M[@]}" --stories mine.txt --token-list the
run patch "Pip had a red kite." "Pip had a red drum." "${M[@]}"
run detect mine.txt "${M[@]}" --random 2 --length 5
run icl mine.txt "${M[@]}" --early 2 --late 20 --min-stories 1
run cache "$TEXT" -o cache.safetensors "${M[@]}"
"$PY" -c '
import json, struct, sys
h = open("cache.safetensors", "rb"); n = struct.unpack("<Q", h.read(8))[0]; j = json.loads(h.read(n))
assert j["logits"]["shape"][1] == 120, j["logits"]' || fail "cache's logits are not [N, 120]"
run tokenize --model model.safetensors "Pip had a red kite."
run vocab --model model.safetensors -o exported.txt
cmp -s exported.txt vocab.txt || fail "vocab --model wrote another vocabulary than the model's"
run stories mine.txt --model model.safetensors --ids
echo "PASSED: 50 and 200 stories train with the plain command; 10 are refused; --vocab-size 120 works in every verb"
