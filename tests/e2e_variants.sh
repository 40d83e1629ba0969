#!/usr/bin/env bash
# End to end, issue 12's --pos and --score: every variant trains 30 steps on a
# slice of data/stories.txt; info shows the variant and its parameter count;
# greedy generation (the key cache) is deterministic; eval, --ablate and the
# probes run on it, or refuse with a message where they have no meaning
# (distance scores of a rope model); a resume cannot change the variant.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 > slice.txt
common=(--vocab vocab.txt --threads 2 --seed 5 --test-stories 20)
# variant -> parameters (docs/variants.md)
declare -A count=(
  [distance/scaled-dot]=352,848 [none/scaled-dot]=350,800 [absolute/scaled-dot]=358,992
  [sinusoidal/scaled-dot]=350,800 [rope/scaled-dot]=350,800 [alibi/scaled-dot]=350,800 [t5/scaled-dot]=351,056
  [distance/dot]=352,848 [distance/general]=353,360 [distance/additive]=353,936)
for v in distance/scaled-dot none/scaled-dot absolute/scaled-dot sinusoidal/scaled-dot rope/scaled-dot \
         alibi/scaled-dot t5/scaled-dot distance/dot distance/general distance/additive; do
  pos=${v%/*} score=${v#*/} m=$pos-$score.safetensors
  "$STORYLM" train slice.txt "${common[@]}" --steps 30 --position-scheme "$pos" --score "$score" --out "$m" 2> "$m.log" \
    || { cat "$m.log"; fail "train --position-scheme $pos --score $score"; }
  "$STORYLM" info --model "$m" | grep -- "variant       --position-scheme $pos --score $score" >/dev/null || fail "info does not show $v"
  "$STORYLM" info --model "$m" | grep -- "total  *${count[$v]} parameters" >/dev/null || fail "$v does not have ${count[$v]} parameters"
  got=$("$STORYLM" info --model "$m" --json | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["model"]["pos"] + "/" + j["model"]["score"])')
  [[ "$got" == "$v" ]] || fail "info --json says $got, not $v"

  a=$("$STORYLM" generate --model "$m" -t 0 -n 30 "Lily found a")
  b=$("$STORYLM" generate --model "$m" -t 0 -n 30 "Lily found a")
  [[ -n "$a" && "$a" == "$b" ]] || fail "$v: greedy generation is not deterministic"

  loss=$("$STORYLM" eval slice.txt --model "$m" --test-stories 20 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
  ablated=$("$STORYLM" eval slice.txt --model "$m" --test-stories 20 --ablate 0,3 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
  "$PY" -c "import sys; sys.exit(0 if 0 < $loss < 7.5 and 0 < $ablated < 9 else 1)" || fail "$v: test loss $loss (ablated $ablated)"
  echo "$v: test loss after 30 steps $loss, heads 0 and 3 off $ablated"

  "$STORYLM" attend "Lily found a ball. Lily" --model "$m" --pos 5 --head 1 > /dev/null || fail "$v: attend"
  if [[ $v == rope/* || $v == absolute/* || $v == */additive ]]; then # the probes over stories, on a few
    "$STORYLM" heads slice.txt --model "$m" --test-stories 20 > /dev/null || fail "$v: heads"
    "$STORYLM" pieces slice.txt --model "$m" --test-stories 20 > /dev/null || fail "$v: pieces"
    "$STORYLM" swap slice.txt --model "$m" --test-stories 20 > /dev/null || fail "$v: swap"
  fi
  case $pos in
    distance|alibi|t5) "$STORYLM" distances --model "$m" --up-to 3 > /dev/null || fail "$v: distances" ;;
    *) if "$STORYLM" distances --model "$m" 2> refused.txt > /dev/null; then fail "$v: distances did not refuse"; fi
       grep -q "has no meaning for a model with --position-scheme $pos" refused.txt || { cat refused.txt; fail "$v: distances' message"; } ;;
  esac
done

# A resume keeps the variant; asking for another is refused (also with --pos, the old name, warned), and so is
# --position-scheme on window8.
if "$STORYLM" train slice.txt "${common[@]}" --steps 40 --resume --pos alibi --out rope-scaled-dot.safetensors 2> resume.txt; then
  fail "resuming a rope model with --pos alibi was not refused"
fi
grep -q "warning: --pos is now --position-scheme" resume.txt || { cat resume.txt; fail "train --pos gave no warning"; }
grep -q "cannot resume.*--position-scheme rope" resume.txt || { cat resume.txt; fail "resume's message"; }
"$STORYLM" train slice.txt "${common[@]}" --steps 40 --resume --out rope-scaled-dot.safetensors 2> resume.log || { cat resume.log; fail "resume a rope model"; }
"$STORYLM" info --model rope-scaled-dot.safetensors | grep -- "--position-scheme rope" >/dev/null || fail "the resumed model lost its variant"
if "$STORYLM" train slice.txt "${common[@]}" --steps 5 --arch window8 --position-scheme rope --out w8.safetensors 2> w8.txt; then
  fail "--arch window8 --position-scheme rope was not refused"
fi
grep -q "for the attention network" w8.txt || { cat w8.txt; fail "window8's message"; }
echo "every variant trains, generates, evaluates and is probed"
