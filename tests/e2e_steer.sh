#!/usr/bin/env bash
# End to end: generate --steer DIR:LATENT:SCALE with an SAE on a tiny trained
# model. A scale of 0 keeps every bit of the run (text, tokens and their
# log-probabilities); a large scale changes the story; Python's
# generate(steer=...) writes what the CLI writes; bad specs are refused
# naming --steer (steer= in Python): not DIR:LATENT:SCALE, a latent past the
# SAE's, a missing folder, an SAE of another model's width, and steer= with
# fwd_hooks; /api/generate steers with the SAE beside its model and refuses
# any other folder; the shipped SAE's latent of boys' names writes them.
# (test_steer holds the steered generator to the hooked forward pass at
# every point of every architecture.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 >slice.txt
"$STORYLM" train slice.txt --vocab vocab.txt --threads 2 --steps 30 --seed 5 --test-stories 20 \
  --out tiny.safetensors 2>train.log >/dev/null || { cat train.log; fail "train"; }
"$STORYLM" sae train slice.txt -m tiny.safetensors --test-stories 20 --threads 2 --tokens 20480 --batch-tokens 1024 \
  --seed 3 --expansion 4 --k 8 --hook hook_hidden -o sae1 2>sae.log >/dev/null || { cat sae.log; fail "sae train"; }

gen=(generate -m tiny.safetensors --seed 7 --tokens 40 --json "Tom")
"$STORYLM" "${gen[@]}" >plain.json 2>/dev/null || fail "generate"
"$STORYLM" "${gen[@]}" --steer sae1:3:0 >zero.json 2>/dev/null || fail "generate --steer sae1:3:0"
same() { # two runs' JSON but their timings
  "$PY" -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for j in (a, b):
    for k in ("seconds", "cpu_seconds", "tokens_per_second"): j.pop(k, None)
sys.exit(a != b)' "$1" "$2"
}
same plain.json zero.json || fail "a steering scale of 0 changed the run"
"$STORYLM" "${gen[@]}" --steer sae1:3:40 --steer sae1:5:-20 >steered.json 2>/dev/null || fail "generate --steer x2"
if same plain.json steered.json; then fail "a scale of 40 changed nothing"; fi

refused() { # args... then the message expected on stderr
  local want="${*: -1}"
  if "$STORYLM" "${gen[@]}" "${@:1:$#-1}" >/dev/null 2>err.txt; then fail "accepted: ${*:1:$#-1}"; fi
  grep -qF -- "$want" err.txt || { cat err.txt; fail "no message '$want'"; }
}
refused --steer sae1:3 "--steer sae1:3: is not DIR:LATENT:SCALE"
refused --steer sae1:x:2 "--steer sae1:x:2: the latent 'x' is not a number"
refused --steer sae1:512:2 "latent 512 is out of range (the SAE has 512)"
refused --steer sae1:3:big "the scale 'big' is not a number"
refused --steer nowhere.sae:3:2 "--steer nowhere.sae:3:2: "
# an SAE of another hook's width: hook_hidden_in is 160 wide on this model
"$STORYLM" sae train slice.txt -m tiny.safetensors --test-stories 20 --threads 2 --tokens 4096 --batch-tokens 1024 \
  --seed 3 --expansion 1 --k 8 --hook hook_hidden_in -o sae_in 2>/dev/null >/dev/null || fail "sae train hook_hidden_in"
"$STORYLM" "${gen[@]}" --steer sae_in:3:5 >in.json 2>/dev/null || fail "steering at hook_hidden_in"
sed -i 's/"hook_hidden_in"/"hook_hidden"/' sae_in/cfg.json # now it says it reads the 128 of hook_hidden
refused --steer sae_in:3:5 "--steer sae_in:3:5: the SAE reads 160 numbers at hook_hidden, the model has 128"

# the shipped SAE's latent 89 (boys' names: it promotes jake, john, jim) writes them at scale 12
M="$STORYLM_SOURCE_DIR/models"
if [[ -d "$M/tinystories.sae" ]]; then
  ship=(generate -m "$M/tinystories.safetensors" --seed 3 --tokens 60 "Once upon a time")
  plain=$("$STORYLM" "${ship[@]}" 2>/dev/null) || fail "generate with the shipped model"
  named=$("$STORYLM" "${ship[@]}" --steer "$M/tinystories.sae:89:12" 2>/dev/null) || fail "--steer the shipped SAE"
  [[ $(grep -oi "john" <<<"$plain" | wc -l) -eq 0 && $(grep -oi "john" <<<"$named" | wc -l) -ge 5 ]] ||
    fail "latent 89 at scale 12 did not write john: $named"
fi

[[ -n "${PY:-}" ]] || exit 0
text=$("$STORYLM" generate -m tiny.safetensors --seed 7 --tokens 40 --steer sae1:3:40 "Tom" 2>/dev/null)
python_preload "$(dirname "$STORYLM")"
"${PRELOAD[@]}" env PYTHONPATH="$STORYLM_SOURCE_DIR/python" STORYLM_LIBRARY="$(dirname "$STORYLM")/libstorylm.so" \
  "$PY" - "$text" <<'PY' ||
import sys
import storylm
m = storylm.load("tiny.safetensors")
got = m.generate("Tom", max_tokens=40, seed=7, steer="sae1:3:40")
assert got == sys.argv[1], (got, sys.argv[1])
try:
    m.generate("Tom", max_tokens=4, seed=7, steer="sae1:x:2")
    raise SystemExit("steer='sae1:x:2' was accepted")
except storylm.KeywordError as e:
    assert "steer='sae1:x:2'" in str(e), str(e)
try:
    m.generate("Tom", max_tokens=4, seed=7, steer="sae1:3:2", fwd_hooks=[("hook_hidden", lambda x, hook: x)])
    raise SystemExit("steer= with fwd_hooks was accepted")
except storylm.StorylmError as e:
    assert "fwd_hooks" in str(e), str(e)
PY
  fail "Python's generate(steer=...)"

# /api/generate: "steer" names the SAE beside the served model, and no other folder
cp sae1 -r tiny.sae
"$PY" - "$STORYLM" "$text" <<'PY' || fail "/api/generate's steer"
import json, sys
sys.path.insert(0, __import__("os").environ["STORYLM_SOURCE_DIR"] + "/tests/serve")
from client import Server
srv = Server(sys.argv[1], "--model", "tiny.safetensors", "--threads", "2")
try:
    def story(**kw):
        status, events = srv.events(dict(prompt="Tom", max_tokens=40, seed=7, **kw))
        assert status == 200, (status, events)
        return [e for e in events if e[0] == "done"][-1][1]["text"]
    assert story(steer=["tiny.sae:3:40"]) == sys.argv[2], (story(steer=["tiny.sae:3:40"]), sys.argv[2])
    assert story(steer="tiny.sae:3:0") == story() != sys.argv[2]
    for spec in ["sae1:3:40", "../tiny.sae:3:40", "/etc:3:1"]:
        status, err = srv.post("/api/generate", {"prompt": "Tom", "steer": [spec]})
        assert status == 400 and '"steer"' in err["error"] and "beside its model" in err["error"], (status, err)
finally:
    srv.stop()
PY
