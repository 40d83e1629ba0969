# No file ever destroyed: every file a verb writes is checked against the
# files it reads (by any name) and against what is already there, before any
# work. A trained model is never replaced without --resume or --force; cache,
# vocab and train's side outputs never overwrite an input; temporary files and
# the token cache never write through a planted link; a lock is taken by the
# file, not the name, and a stale one never blocks; a model's "data" key is
# never opened as a path; typed text must be UTF-8 in every verb; numbers never
# wrap; plot always ends; long work prints progress.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"

first_stories 60 >s.txt
cp "$STORYLM_SOURCE_DIR/models/vocab.txt" vocab.txt
T=(--steps 2 --test-stories 5 --threads 1 --eval-every 0)

# refuses PATTERN ARGS...: storylm ARGS exits non-zero, its message saying PATTERN
refuses() {
  local want="$1"; shift
  if "$S" "$@" >out.txt 2>err.txt; then fail "storylm $* succeeded"; fi
  grep -q -- "$want" err.txt || { cat err.txt; fail "storylm $*: no '$want' in the message"; }
}
sum() { md5sum "$1" | cut -d' ' -f1; }
# kept FILE SUM: FILE still holds the bytes it had
kept() { [ "$(sum "$1")" = "$2" ] || fail "$1 was changed"; }

# ---- a trained model is never lost ----
"$S" train s.txt "${T[@]}" -o m.safetensors >/dev/null 2>&1
m=$(sum m.safetensors)
refuses "already holds a model" train s.txt "${T[@]}" -o m.safetensors
grep -q -- "--resume to continue it, --out NEW for another model, or --force to replace it" err.txt || fail "train's hint"
kept m.safetensors "$m"
"$S" train --help >help.txt
grep -q -- "--force" help.txt || fail "train --help says nothing of --force"
cp m.safetensors m0.safetensors
"$S" train s.txt --steps 3 --test-stories 5 --threads 1 --resume -o m.safetensors >/dev/null 2>&1 || fail "--resume"
"$S" train s.txt "${T[@]}" -o m0.safetensors --force >/dev/null 2>&1 || fail "--force"

# ---- cache and vocab never write over what they read ----
cp m0.safetensors c.safetensors
c=$(sum c.safetensors)
refuses "same file as the input" cache "Lily sat." -m c.safetensors -o c.safetensors
kept c.safetensors "$c"
cp c.safetensors model.safetensors # the default model, read without -m
refuses "same file as the input" cache "Lily sat." -o model.safetensors
kept model.safetensors "$c"
ln -s c.safetensors alias.safetensors
refuses "same file as the input" cache "Lily sat." -m c.safetensors -o alias.safetensors
s=$(sum s.txt)
refuses "same file as the input" cache --stories s.txt -m c.safetensors --test-stories 2 -o s.txt
kept s.txt "$s"
refuses "same file as the input" vocab -m c.safetensors -o c.safetensors
refuses "same file as the input" vocab -m c.safetensors -o alias.safetensors
refuses "same file as the input" vocab s.txt -o s.txt --force
kept c.safetensors "$c"
kept s.txt "$s"
# a model or stories that are no input are kept too, unless --force
cp s.txt other.txt
o=$(sum other.txt)
refuses "already holds text" cache "Lily sat." -m c.safetensors -o other.txt
refuses "already holds a model" vocab -m c.safetensors -o m0.safetensors
refuses "already holds text" attend "Lily sat." -m c.safetensors --svg other.txt
kept other.txt "$o"
"$S" cache "Lily sat." -m c.safetensors -o acts.safetensors >/dev/null
"$S" cache "Lily sat." -m c.safetensors -o acts.safetensors >/dev/null || fail "cache over its own output"
"$S" vocab -m c.safetensors -o other.txt --force 2>/dev/null || fail "vocab --force"
for verb in cache vocab plot attend; do
  "$S" $verb --help >help.txt
  grep -q -- "--force" help.txt || fail "$verb --help says nothing of --force"
done

# ---- train's side outputs and lock are outputs too ----
cp s.txt n.ema.safetensors
refuses "named like\|same file" train n.ema.safetensors "${T[@]}" -o n.safetensors --ema 0.9
cp s.txt n.best.safetensors
refuses "same file" train n.best.safetensors "${T[@]}" -o n.safetensors --keep-best
cp s.txt n.raw.safetensors
refuses "same file" train n.raw.safetensors "${T[@]}" -o n.safetensors --ema 0.9 --ema-save
cp s.txt n.step2.safetensors
refuses "named like a file this command writes" train n.step2.safetensors "${T[@]}" -o n.safetensors --snapshot-every 2
cp vocab.txt n.adam.safetensors
refuses "same file" train s.txt "${T[@]}" -o n.safetensors --vocab n.adam.safetensors
cp s.txt x.safetensors.lock
l=$(sum x.safetensors.lock)
refuses "same file" train x.safetensors.lock "${T[@]}" -o x.safetensors
kept x.safetensors.lock "$l"
[ ! -e n.safetensors ] && [ ! -e x.safetensors ] || fail "a refused run wrote its model"
# a lock file that holds no lock is never removed, even with --force
cp s.txt y.safetensors.lock
refuses "not a lock" train s.txt "${T[@]}" -o y.safetensors --force
kept y.safetensors.lock "$l"

# ---- a stale lock (its process is gone) does not block --resume ----
dead=$(bash -c 'echo $$')
echo "$dead" >m.safetensors.lock
"$S" train s.txt --steps 4 --test-stories 5 --threads 1 --resume -o m.safetensors >/dev/null 2>err.txt ||
  { cat err.txt; fail "a stale lock blocked --resume"; }
[ ! -e m.safetensors.lock ] || fail "the lock was left behind"

# ---- a kill in a run's first save leaves an optimizer state with no model: a new run replaces it ----
cp m.adam.safetensors orphan.adam.safetensors.next
"$S" train s.txt "${T[@]}" -o orphan.safetensors >/dev/null 2>err.txt ||
  { cat err.txt; fail "a state left by a first save that never placed its model blocked a new run"; }
[ -f orphan.safetensors ] && [ ! -e orphan.adam.safetensors.next ] || fail "the new run left the old '.next'"
# beside a model, ".next" may pair with it: without --resume the run is refused, by the model
cp m.adam.safetensors paired.adam.safetensors.next
cp m.safetensors paired.safetensors
refuses "already holds a model" train s.txt "${T[@]}" -o paired.safetensors
cmp -s m.adam.safetensors paired.adam.safetensors.next || fail "a refused run changed '.next'"

# ---- a link to a running run's output finds its lock ----
"$S" train s.txt --steps 100000 --test-stories 5 --threads 1 --eval-every 1 -o run.safetensors >/dev/null 2>&1 &
run=$!
for _ in $(seq 600); do [ -e run.safetensors ] && [ -e run.safetensors.lock ] && break; sleep 0.1; done
ln -s run.safetensors link.safetensors
refuses "being written by another process" train s.txt "${T[@]}" -o link.safetensors --force
kill "$run"
wait "$run" || true

# ---- temporary files never write through a planted link ----
echo "keep me" >victim.txt
v=$(sum victim.txt)
(ln -s victim.txt v.txt.tmp.$BASHPID && exec "$S" vocab -m c.safetensors -o v.txt 2>/dev/null) || fail "vocab beside a planted link"
kept victim.txt "$v"
[ "$(head -1 v.txt)" = "[UNK]" ] || fail "v.txt is not the vocabulary"
# the token cache: $STORYLM_CACHE/KEY.ids.tmp.PID
mkdir -p "$STORYLM_CACHE"
"$S" eval s.txt -m c.safetensors --test-stories 5 >/dev/null 2>&1
key=$(ls "$STORYLM_CACHE" | grep '\.ids$' | head -1)
[ -n "$key" ] || fail "eval left no token cache in $STORYLM_CACHE"
rm "$STORYLM_CACHE/$key"
(ln -s "$PWD/victim.txt" "$STORYLM_CACHE/$key.tmp.$BASHPID" &&
  exec "$S" eval s.txt -m c.safetensors --test-stories 5 >/dev/null 2>&1) || fail "eval beside a planted link"
kept victim.txt "$v"

# ---- a model's data key is a name, never a path ----
mkdir -p secret
first_stories 5 | sed 's/Lily/Zorblax/g' >secret/names.txt
"$PY" - "$PWD/secret/names.txt" <<'EOF'
import json, struct, sys
data = open("c.safetensors", "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header["__metadata__"]["data"] = sys.argv[1]
text = json.dumps(header).encode()
open("evil.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
EOF
"$S" generate -m evil.safetensors --json "Lily" -n 5 >gen.json 2>/dev/null || fail "generate with a data path"
! grep -q "secret" gen.json || fail "generate opened the path in the model's data key: $(cat gen.json)"

# ---- typed text must be UTF-8, as tokenize says ----
bad=$(printf 'Lily \xff sat.')
refuses "invalid UTF-8 at byte offset 5" tokenize "$bad"
for args in "trace" "attend" "attribute" "generate -n 3" "eval --text" "cache -o bad.safetensors" "swap s.txt --test-stories 5 --names Tom --text"; do
  refuses "invalid UTF-8 at byte offset 5" $args "$bad" -m c.safetensors
done
refuses "invalid UTF-8 at byte offset" patch "$bad" "Lily sat." -m c.safetensors

# ---- numbers never wrap ----
printf '1 2 4294967297 4\n5 6 7\n' >ids.txt
refuses "outside the vocabulary" bench train ids.txt --steps 1 --threads 1
printf '1 2 3 4\n5 6 7\n' >ids.txt
"$S" bench train ids.txt --steps 1 --threads 1 --batch 64 --first-batch 1000000000 >/dev/null 2>&1 || fail "--first-batch 1000000000"
refuses "out of range" train s.txt --steps 99999999999 -o q.safetensors
refuses "out of range" generate -m c.safetensors -n 4294967297 "Lily"

# ---- plot always ends ----
printf 'x\ty\n1\tnan\n2\tNaN\n' >nan.tsv
printf 'x\ty\n-5\t1\n-1\t2\n' >negative.tsv
printf 'x\ty\n1\tabc\n2\t3\n' >text.tsv
printf '\t\n\t\n\t\n' >tabs.tsv
printf 'x\ty\n1e17\t1\n100000000000000016\t2\n' >close.tsv
for t in nan negative text tabs close; do
  rc=0
  timeout 60 "$S" plot $t.tsv -o $t.svg 2>$t.err || rc=$?
  [ "$rc" != 124 ] || fail "plot $t.tsv did not end"
  [ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "plot $t.tsv exited $rc"
done
grep -q "not numbers" text.err || fail "plot said nothing of the text cell"
[ -s negative.svg ] && [ -s text.svg ] || fail "plot drew nothing"

# ---- long work says it is working ----
"$PY" -c 'import random; r = random.Random(1); print("\n".join(" ".join(str(r.randrange(2, 2000)) for _ in range(800)) for _ in range(2)))' >long.txt
STORYLM_PROGRESS_SECONDS=0.01 "$S" bench train long.txt --steps 1 --batch 2 --threads 1 >/dev/null 2>bench.err
grep -q "step .* under way" bench.err || fail "bench train printed no progress: $(cat bench.err)"
STORYLM_PROGRESS_SECONDS=0.01 "$S" train s.txt --steps 1 --batch 16 --test-stories 5 --threads 1 -o big.safetensors \
  >/dev/null 2>train.err
grep -q "step 1 of 1 under way" train.err || fail "train --batch 16 printed no progress: $(cat train.err)"

echo "ok"
