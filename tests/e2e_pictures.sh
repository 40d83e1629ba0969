#!/usr/bin/env bash
# Every picture storylm draws, looked at as a screenshot (issue 14, "Pictures"):
# each verb with --svg draws on the shipped models and the project's stories
# (what they show is not checked here, only how: the probes' numbers have their
# own tests), then tests/browser/pictures.mjs opens each SVG in Debian's headless
# Chromium through puppeteer-core and checks, by the browser's own layout, that
#   - nothing is drawn outside the picture,
#   - no two labels overlap (their boxes as drawn, rotated ones too),
#   - no text is smaller than 10 pixels,
#   - a chart of more than one colour has a legend (names, or a colour scale),
# and saves a PNG of each under $STORYLM_TEST_TMP/shots (look at them).
# A long story (256 tokens) checks that an attention map stays readable, one
# head of a short text drawn alone that it gets a picture its size, a table of
# train and test curves that plot gives one model's two curves one colour
# (solid and dashed), and a picture made with every fault that the checks fail.
# Without chromium, node or the npm packages the test says SKIPPED and exits 77.
set -euo pipefail
source "$(dirname "$0")/common.sh"
src="$STORYLM_SOURCE_DIR"
require_chromium

m="$src/models/tinystories.safetensors"
w8="$src/models/tinystories-window8.safetensors"
[[ -f "$m" && -f "$w8" ]] || skip "the shipped models are missing from $src/models"
# heads and detect follow training: an early snapshot beside the end (or the end twice).
snap=$(ls "$src"/models/snapshots/*.safetensors 2> /dev/null | sort -V | head -1)
[[ -n "$snap" ]] || snap="$m"
first_stories 400 > stories.txt
S() { "$STORYLM" "$@" --threads 1 > /dev/null || fail "storylm $*"; }

story='Once upon a time, there was a little girl named Mia. Mia had a red ball. One day, Mia went to the park with her dog, Max. Max ran after the ball and brought it back to Mia. Mia smiled and said, "Good dog, Max!" Then Mia and Max went home. At home, Mia gave'
# A story of 256 tokens with [EOS]: the story told again and again, cut to fit.
long="$story"
while (( $("$STORYLM" tokenize --model "$m" --ids "$long" | wc -w) < 255 )); do long="$long. $story"; done
while (( $("$STORYLM" tokenize --model "$m" --ids "$long" | wc -w) > 255 )); do long="${long% *}"; done

mkdir -p svg shots
S attend "$story" -m "$m" --svg svg/attend.svg
S attend "$long" -m "$m" --head 6 --svg svg/attend-long-head.svg
S attend "Lily found a red ball." -m "$m" --head 3 --svg svg/attend-one-head.svg
S trace "$story" -m "$m" --svg svg/trace.svg
S distances -m "$m" --up-to 15 --svg svg/distances.svg
S heads stories.txt -m "$snap" -m "$m" --svg svg/heads.svg
S swap stories.txt -m "$m" --baseline "$w8" --svg svg/swap.svg
S pieces stories.txt -m "$m" --svg svg/pieces.svg
S ablate stories.txt -m "$m" --svg svg/ablate.svg
S stats stories.txt -m "$m" --svg svg/stats.svg
S detect stories.txt -m "$snap" -m "$m" --random 10 --svg svg/detect.svg
S detect stories.txt -m "$m" --random 10 --svg svg/detect-one.svg
S circuits -m "$m" --stories stories.txt --top 4 --token-list lily,tom,max --svg svg/circuits.svg
S icl stories.txt -m "$m" -m "$w8" --svg svg/icl.svg
S patch "$story" "${story//Max/Tom}" -m "$m" --answer max --wrong tom --svg svg/patch.svg
S attribute "$story" -m "$m" --token max --stories stories.txt --svg svg/attribute.svg
S sae features "$src/models/tinystories.sae" stories.txt -m "$m" --latents 3 --svg svg/sae-features.svg
printf 'step\tattention train\tattention test\twindow8 train\twindow8 test\n' > curves.tsv
printf '%s\t%s\t%s\t%s\t%s\n' 0 5.5 5.6 5.4 5.5  100 4.1 4.3 4.2 4.4  200 3.6 3.9 3.8 4.0  300 3.2 3.7 3.5 3.8 >> curves.tsv
"$STORYLM" plot curves.tsv -o svg/plot.svg --title "Train and test loss" --y-label loss > /dev/null || fail "storylm plot"

# Every verb that takes --svg is drawn above (a new one must join this list).
verbs=$("$STORYLM" --help 2>&1 | awk '/^  [a-z]+ / {print $1}')
[[ "$verbs" == *attend* ]] || fail "storylm --help lists no verbs: $("$STORYLM" --help 2>&1 | head -5)"
for verb in $verbs; do
  help=$("$STORYLM" "$verb" --help 2>&1 || true)
  [[ "$help" == *--svg* ]] || continue
  ls svg/"$verb"*.svg > /dev/null 2>&1 || fail "storylm $verb draws --svg but this test does not look at its picture"
done

# plot: one model's train and test curves share a colour, the test one dashed.
"$PY" - svg/plot.svg <<'EOF' || fail "plot's curves"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
lines = [e for e in ET.parse(sys.argv[1]).getroot().iter(ns + "polyline")]
assert len(lines) == 4, len(lines)
color = [l.get("stroke") for l in lines]
dash = [l.get("stroke-dasharray") is not None for l in lines]
assert color[0] == color[1] and color[2] == color[3] and color[0] != color[2], color
assert dash == [False, True, False, True], dash
EOF

# The long story's maps keep labels of 10 pixels or more (pictures.mjs checks
# every text), so they are larger than the short story's, not squeezed.
width() { "$PY" -c 'import sys, xml.etree.ElementTree as ET; print(int(float(ET.parse(sys.argv[1]).getroot().get("width"))))' "$1"; }
(( $(width svg/attend-long-head.svg) > 3000 )) || fail "a 256-token map squeezed into $(width svg/attend-long-head.svg) pixels"
(( $(width svg/attend-one-head.svg) < 800 )) || fail "one head of a short text on a picture $(width svg/attend-one-head.svg) pixels wide"

# The checks can fail: a picture with each fault is refused, each one named.
cat > bad.svg <<'EOF'
<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200" viewBox="0 0 300 200" font-family="Helvetica, Arial, sans-serif">
<rect x="0" y="0" width="300" height="200" fill="white"/>
<rect class="frame" x="20" y="20" width="200" height="150" fill="none" stroke="#888"/>
<rect x="40" y="100" width="20" height="70" fill="#1f77b4"/><rect x="80" y="60" width="20" height="110" fill="#ff7f0e"/>
<text x="30" y="40" font-size="12">overlapping label</text><text x="40" y="44" font-size="12">another label</text>
<text x="250" y="120" font-size="12">past the right edge</text>
<text x="30" y="190" font-size="7">tiny</text>
</svg>
EOF
mkdir -p bad-shots
if node "$src/tests/browser/pictures.mjs" "$chromium" bad-shots bad.svg > bad.txt 2>&1; then fail "a faulty picture passed: $(cat bad.txt)"; fi
for fault in 'outside the picture: text "past the right edge"' 'labels overlap: "overlapping label" and "another label"' \
             'text below 10 px: "tiny"' 'a chart of 2 colours and no legend'; do
  grep -qF "$fault" bad.txt || fail "the checker missed: $fault (it says: $(cat bad.txt))"
done

node "$src/tests/browser/pictures.mjs" "$chromium" "$STORYLM_TEST_TMP/shots" svg/*.svg ||
  fail "some pictures are not readable (PNGs in $STORYLM_TEST_TMP/shots)"
echo "e2e_pictures: all checks passed (PNGs in $STORYLM_TEST_TMP/shots)"
