# scripts/results' section on loss per character (sourced by it): every shipped
# model's held-out loss in nats per token and per character, so that models of
# different vocabularies compare (a character: a byte of the stories' UTF-8).
per_char_section() {
  say "## Loss per character: every shipped model" "" \
      "A loss per token depends on the vocabulary: a model whose pieces are longer predicts fewer, harder tokens." \
      "\`eval\` also divides the same total loss by the characters of the held-out text: each test story's UTF-8" \
      "bytes as the file holds them (trimmed of white space at both ends, before the tokenizer lower-cases them)," \
      "plus one for the [EOS] that closes it, which is predicted too. So every model, of any vocabulary, is divided" \
      "by the same 86,008 characters of these 100 stories (\`characters\` in \`eval --json\`)." ""
  local m
  say "| model | nats/token | nats/character | bits/character |" "|---|---|---|---|"
  for m in models/*.safetensors; do
    say "$(json "eval \$TINYSTORIES -m $m --threads 1" \
      "'| $m | %.4f | %.4f | %.4f |' % (j['loss'], j['loss_per_char'], j['bits_per_char'])")"
  done
  say "" "Each row is \`storylm eval \$TINYSTORIES -m MODEL --threads 1 --json\`'s \`loss\`, \`loss_per_char\` and" \
      "\`bits_per_char\`; for example:" ""
  run "eval \$TINYSTORIES -m $NEW --threads 1 | tail -4"
}
