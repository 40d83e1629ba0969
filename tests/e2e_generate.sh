#!/usr/bin/env bash
# storylm generate as llama.cpp's: the prompt from stdin (- or a pipe), the
# text written through a pipe word by word (one write a word, not one at the
# end), --samples N computed together and each sample what --samples 1 with
# its seed writes, --json parsed with python3 (text, tokens, seed, stop
# reason), the seed always on stderr, the prompt echoed byte for byte
# (accents, spaces, newlines), names capitalised from --stories, and a
# warning naming the characters of a prompt mostly of [UNK]; llama2.c's short
# flags, --temp and the warning of a hot temperature; -f FILE; --stop,
# --repeat-penalty, --min-p and --n-probs the same in a batch as alone.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || { echo "SKIPPED: no shipped model at $M"; exit 77; }
gen() { "$S" generate --model "$M" "$@"; }

# The prompt from stdin: a pipe with no PROMPT, '-' with a file; the final newline dropped.
gen -t 0 -n 25 "Lily found a" > arg.txt 2> /dev/null
echo "Lily found a" | gen -t 0 -n 25 > piped.txt 2> /dev/null || fail "a piped prompt"
cmp -s arg.txt piped.txt || fail "piped prompt: '$(cat piped.txt)' vs '$(cat arg.txt)'"
printf 'Lily found a\n' > prompt.txt
gen -t 0 -n 25 - < prompt.txt > dash.txt 2> /dev/null || fail "generate -"
cmp -s arg.txt dash.txt || fail "'-' prompt: '$(cat dash.txt)' vs '$(cat arg.txt)'"
gen -t 0 -n 5 < /dev/null > nothing.txt 2> /dev/null || fail "no prompt, stdin /dev/null"
[[ -s nothing.txt ]] || fail "no prompt wrote nothing"

# The seed is always said on stderr, given or not.
gen -n 5 --seed 42 "Tom" > /dev/null 2> err.txt
grep -q "seed 42" err.txt || fail "the given seed is not on stderr: $(cat err.txt)"
gen -n 5 "Tom" > /dev/null 2> err.txt
seed=$(sed -n 's/.*seed \([0-9][0-9]*\).*/\1/p' err.txt | head -1)
[[ -n "$seed" ]] || fail "no seed on stderr: $(cat err.txt)"

# Streamed: through a pipe the words come in many writes (flushed as made), and the
# text is the same as to a file.
gen -n 60 --seed 3 "Lily found a" > file.txt 2> /dev/null
if command -v strace > /dev/null && strace -o /dev/null true 2> /dev/null; then
  # LeakSanitizer cannot stop a traced process's threads (a sanitizer build reports false leaks)
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -e trace=write -o writes.txt "$S" generate --model "$M" -n 60 --seed 3 "Lily found a" 2> /dev/null | cat > pipe.txt
  writes=$(grep -c '^write(1,' writes.txt || true)
  (( writes >= 10 )) || fail "through a pipe the story came in $writes writes, not word by word"
  cmp -s file.txt pipe.txt || fail "the piped text differs from the text in a file"
else
  echo "note: no working strace here, the number of writes is not checked"
  gen -n 60 --seed 3 "Lily found a" 2> /dev/null | cat > pipe.txt
  cmp -s file.txt pipe.txt || fail "the piped text differs from the text in a file"
fi

# --json: one sample, the text as printed, tokens with ids and pieces, seed, stop reason.
gen -n 60 --seed 3 --json "Lily found a" > one.json 2> /dev/null || fail "generate --json"
"$PY" - one.json file.txt <<'EOF' || fail "generate --json: $(head -c 300 one.json)"
import json, sys
d = json.load(open(sys.argv[1])); text = open(sys.argv[2]).read()
assert d["command"] == "generate" and d["seed"] == 3 and len(d["samples"]) == 1, d.keys()
s = d["samples"][0]
assert s["text"] + "\n" == text, (s["text"], text)
assert s["seed"] == 3 and s["stop_reason"] in ("end", "max_tokens"), s
assert len(s["tokens"]) == s["new_tokens"] and all(isinstance(t["id"], int) and t["piece"] for t in s["tokens"])
assert s["stop_reason"] == "end" or s["new_tokens"] == 60, s
assert [t["piece"] for t in d["prompt_tokens"]] == ["lily", "found", "a"], d["prompt_tokens"]
EOF
gen -n 3 -t 0 --json "Once upon a time" 2> /dev/null | "$PY" -c '
import json, sys; s = json.load(sys.stdin)["samples"][0]
assert s["stop_reason"] == "max_tokens" and s["new_tokens"] == 3, s' || fail "-n 3 does not stop for max_tokens"

# --samples 4 (on 2 threads): sample i is what --samples 1 --seed SEED+i-1 writes; headers in the text output.
gen -n 40 --seed 10 --samples 4 --threads 2 --json "Tom went" > four.json 2> four.err || fail "--samples 4 --threads 2 --json"
grep -q "seed 10 + i - 1" four.err || fail "--samples does not say the seeds: $(cat four.err)"
for i in 1 2 3 4; do
  gen -n 40 --seed $((10 + i - 1)) --json "Tom went" 2> /dev/null > alone$i.json
done
"$PY" - four.json alone1.json alone2.json alone3.json alone4.json <<'EOF' || fail "--samples 4 differs from the samples one by one"
import json, sys
four = json.load(open(sys.argv[1]))["samples"]
assert len(four) == 4
for i, path in enumerate(sys.argv[2:]):
    alone = json.load(open(path))["samples"][0]
    assert four[i]["seed"] == 10 + i, four[i]["seed"]
    for key in ("text", "tokens", "stop_reason", "new_tokens"):
        assert four[i][key] == alone[key], (i, key, four[i][key], alone[key])
assert len({s["text"] for s in four}) > 1, "four samples, one story"
EOF
gen -n 40 --seed 10 --samples 4 "Tom went" > four.txt 2> /dev/null
(( $(grep -c '^--- sample [1-4] of 4 (seed 1[0-3]) ---$' four.txt) == 4 )) || fail "--samples 4 text: $(cat four.txt)"
"$PY" - four.json four.txt <<'EOF' || fail "the text of --samples 4 is not the JSON's texts"
import json, sys
four = json.load(open(sys.argv[1]))["samples"]
want = "\n".join("--- sample %d of 4 (seed %d) ---\n%s\n" % (i + 1, s["seed"], s["text"]) for i, s in enumerate(four))
assert open(sys.argv[2]).read() == want
EOF

# The prompt comes back as typed: case, double spaces, accents, newlines, a curly quote.
prompt=$(printf 'Zo\xc3\xab  and TOM went to the caf\xc3\xa9.\nThen \xe2\x80\x9cLily')
gen -n 20 --seed 5 --json "$prompt" > echo.json 2> /dev/null || fail "generate with accents and newlines"
printf '%s' "$prompt" > typed.txt
"$PY" - echo.json typed.txt <<'EOF' || fail "the prompt is not echoed as typed: $(head -c 300 echo.json)"
import json, sys
d = json.load(open(sys.argv[1])); typed = open(sys.argv[2], encoding="utf-8").read()
assert d["prompt"] == typed
for s in d["samples"]:
    assert s["text"].startswith(typed) and len(s["text"]) > len(typed), (s["text"], typed)
EOF
printf '%s\n' "$prompt" | gen -n 20 --seed 5 > echo_stdin.txt 2> /dev/null
head -c "$(wc -c < typed.txt)" echo_stdin.txt | cmp -s - typed.txt || fail "a piped prompt is not echoed as typed"

# Names: a word the stories of --stories write as a name gets a capital wherever the model
# writes it. The word: the commonest one the model writes here, found from its JSON.
gen -t 0 -n 60 --json "Lily found a" > plain.json 2> /dev/null
word=$("$PY" -c '
import collections, json, sys
toks = [t["piece"] for t in json.load(open("plain.json"))["samples"][0]["tokens"]]
skip = {"i", "mom", "dad", "a", "lily", "found"}
words = [p for p in toks if p.isalpha() and p.isascii() and len(p) >= 3 and p not in skip]
print(collections.Counter(words).most_common(1)[0][0])')
W="${word^}"
printf 'Tom saw %s. Then %s ran to Tom. Tom and %s sat.\n' "$W" "$W" "$W" > names.txt
gen -t 0 -n 60 --json --stories names.txt "Lily found a" > named.json 2> /dev/null || fail "--stories for the names"
"$PY" - named.json "$word" <<'EOF' || fail "'$word' is not capitalised with --stories names.txt"
import json, re, sys
d = json.load(open(sys.argv[1])); word = sys.argv[2]; text = d["samples"][0]["text"]
assert d["names_from"] == "names.txt", d["names_from"]
assert re.search(r"\b%s\b" % word.capitalize(), text), text
assert not re.search(r"\b%s\b" % word, text), text
EOF

# A prompt mostly of [UNK]: a warning naming the characters; a prompt of known words: none.
gen -n 5 --seed 1 $'\xd0\x96\xd0\xb8\xd0\xbb\xd0\xb8 \xd0\xb1\xd1\x8b\xd0\xbb\xd0\xb8' > /dev/null 2> unk.err || fail "an [UNK] prompt failed"
grep -q "warning: 2 of the prompt's 2 tokens are \[UNK\]" unk.err || fail "no [UNK] warning: $(cat unk.err)"
grep -q "'"$'\xd0\x96'"'" unk.err || fail "the warning does not name the characters: $(cat unk.err)"
gen -n 5 --seed 1 "Zo"$'\xc3\xab'" found a ball" > /dev/null 2> known.err
grep -q "UNK" known.err && fail "a warning for a prompt the vocabulary reads: $(cat known.err)"

# llama2.c's short flags and --temp; a temperature above 2 warns, naming --threads.
gen -t 0.7 -p 0.9 -s 4 -n 20 "Tom" > short.txt 2> /dev/null
gen --temp 0.7 --top-p 0.9 --seed 4 --tokens 20 "Tom" > long.txt 2> /dev/null
cmp -s short.txt long.txt || fail "-t -p -s -n differ from --temp --top-p --seed --tokens"
gen -t 4 -n 3 -s 1 "Tom" > /dev/null 2> hot.err
grep -q "warning: temperature 4 .*--threads" hot.err || fail "no warning for -t 4: $(cat hot.err)"
gen -t 2 -n 3 -s 1 "Tom" > /dev/null 2> warm.err
grep -q "warning" warm.err && fail "a warning at -t 2: $(cat warm.err)"

# -f FILE reads the prompt (its final newline dropped), the same as the prompt typed.
printf 'Lily found a\n' > prompt_file.txt
gen -t 0 -n 25 -f prompt_file.txt > from_file.txt 2> /dev/null || fail "generate -f"
cmp -s arg.txt from_file.txt || fail "-f prompt: '$(cat from_file.txt)' vs '$(cat arg.txt)'"
if gen -f no-such-file.txt 2> nofile.err; then fail "-f of a missing file accepted"; fi
grep -q "no-such-file.txt" nofile.err || fail "-f missing file: $(cat nofile.err)"

# --stop, --repeat-penalty, --min-p, --n-probs: --samples 3 gives each sample what it writes alone,
# log-probabilities and alternatives included; the text ends before the stop string.
opts=(--repeat-penalty 1.3 --repeat-last-n 32 --min-p 0.05 --stop " the" --stop "." -n 60)
gen "${opts[@]}" --n-probs 2 --seed 30 --samples 3 --json "Lily found a" > three.json 2> /dev/null || fail "generate with the new options"
for i in 1 2 3; do gen "${opts[@]}" --n-probs 2 --seed $((30 + i - 1)) --json "Lily found a" > alone_opt$i.json 2> /dev/null; done
gen "${opts[@]}" --seed 30 "Lily found a" > opt_text.txt 2> /dev/null
"$PY" - three.json alone_opt1.json alone_opt2.json alone_opt3.json opt_text.txt <<'EOF' || fail "the new options: batch vs alone"
import json, math, sys
d = json.load(open(sys.argv[1])); three = d["samples"]
assert d["repeat_penalty"] == 1.3 and d["min_p"] == 0.05 and d["stop"] == [" the", "."] and d["n_probs"] == 2, d
for i, path in enumerate(sys.argv[2:5]):
    alone = json.load(open(path))["samples"][0]
    assert three[i] == dict(alone, sample=i + 1), (i, three[i], alone)
for s in three:
    written = s["text"][len("Lily found a"):]
    assert " the" not in written and "." not in written, s["text"]
    assert s["stop_reason"] in ("stop", "end", "max_tokens") and (s["stop"] is not None) == (s["stop_reason"] == "stop")
    for t in s["tokens"]:
        assert t["logprob"] <= 0 and len(t["top_logprobs"]) == 2, t
        assert t["top_logprobs"][0]["logprob"] >= t["top_logprobs"][1]["logprob"]
        assert t["logprob"] <= t["top_logprobs"][0]["logprob"]
assert any(s["stop_reason"] == "stop" for s in three), [s["stop_reason"] for s in three]
assert open(sys.argv[5]).read() == three[0]["text"] + "\n"
EOF

# Bad values are refused with a message.
for bad in "--min-p 2" "--repeat-penalty 0" "--n-probs 21 --json" "--n-probs 2" "--repeat-last-n -1"; do
  if gen $bad "Tom" 2> bad.err > /dev/null; then fail "$bad accepted"; fi
  grep -q "error" bad.err || fail "$bad: $(cat bad.err)"
done
if gen --stop "" "Tom" 2> bad.err > /dev/null; then fail "an empty --stop accepted"; fi
if gen --samples 0 "Tom" 2> bad.err; then fail "--samples 0 accepted"; fi
grep -q "samples" bad.err || fail "--samples 0: $(cat bad.err)"
# an attn-only model has no portable generator: asked for one, it says so (not its default kernels' numbers)
if "$STORYLM" generate "Tom" --model "$STORYLM_SOURCE_DIR/models/tinystories-induction-attn-only.safetensors" --kernels portable -n 3 2> bad.err > /dev/null; then
  fail "--kernels portable on an attn-only model accepted"
fi
grep -q "no portable generator" bad.err || fail "attn-only --kernels portable: $(cat bad.err)"
echo "PASSED: stdin, -f, pipe, --samples, --json, sampling options, echo, names and [UNK] warning"
