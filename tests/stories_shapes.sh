# Files of odd shapes for the stories reader's tests (sourced by
# tests/e2e_stories_stream.sh and by scripts/stories_reference): each is made
# from the project's corpus, deterministically, into the current folder.
# make_shapes CORPUS: writes crlf.txt, blank.txt, odd.txt.
make_shapes() {
  local corpus="$1"
  # the first 300 stories, CRLF line ends
  awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n<|endoftext|>\n' 'NR <= 300' "$corpus" | sed 's/$/\r/' > crlf.txt
  # the same stories with no separator lines: split at blank lines instead
  awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n\n\n' 'NR <= 300' "$corpus" > blank.txt
  # a byte-order mark, separators with spaces around, stories too long (one a
  # single line of 1 MiB), white space only, invalid UTF-8, a NUL byte
  {
    printf '\xEF\xBB\xBF'
    awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n  <|endoftext|> \t\n' 'NR > 300 && NR <= 420' "$corpus"
    head -c 70000 /dev/zero | tr '\0' 'a' | fold -w 60; printf '\n<|endoftext|>\n'
    head -c 1048576 /dev/zero | tr '\0' 'b'; printf '\n<|endoftext|>\n'
    printf '   \t \n\n<|endoftext|>\n<|endoftext|>\n'
    printf 'Bad \xC3\x28 bytes.\n<|endoftext|>\nA NUL \x00 here.\n<|endoftext|>\n'
    awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n<|endoftext|>\n' 'NR > 420 && NR <= 480' "$corpus"
    printf 'The last story ends without a separator.'
  } > odd.txt
}

# shape_digest FILE MODEL: a digest of everything the reader makes of FILE:
# the summary (counts, skips, the held-out indices) and every story's ids.
shape_digest() {
  { "$STORYLM" stories "$1" --model "$2" --test-stories 17 | grep -v '^file'
    "$STORYLM" stories "$1" --model "$2" --ids --split all
    "$STORYLM" stories "$1" --model "$2" --ids --split test; } | sha256sum | cut -c1-64
}
