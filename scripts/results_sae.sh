# scripts/results' section on the shipped SAEs' latents (sourced by it): what
# their latents are, read by hand from the `storylm sae features` lists the
# section names; the text is kept here so that regenerating the page keeps it.
sae_section() {
  cat >> "$OUT" <<'TEXT'
## What the shipped SAEs' latents are

The shipped SAEs ([models/README.md](../models/README.md)) read with
`storylm sae features models/tinystories.sae ../shared/data/tinystories-train.txt --latents 60`
(and the same for `models/tinystories-transformer.sae` with `-m
models/tinystories-transformer.safetensors --latents 30`); each latent's strongest contexts
on the held-out stories (the firing token in brackets) and the tokens its direction
promotes. What they are, read from those lists:

- **A boys' names latent** (the default model's 89, 1 token in 20): it fires at the end of
  sentences of a story about a boy (`it was so adorable [!] jake wanted`) and promotes
  `jake`, `john`, `jim`, suppressing `sue`, `mia`, `butterfly`. Steering with it turns the
  story's girl into a boy: `storylm generate --seed 3 -n 60 "Once upon a time"` writes
  "a little girl named Lily. She liked to play outside..."; with `--steer
  models/tinystories.sae:89:6`, "a little boy named Timmy. Timmy had a family and he loved to
  play..."; at scale 12 the story is "john john john ..." (`tests/e2e_steer.sh` keeps it).
- **A sea latent** (163): it fires on "the" before "big wave" and "dolphin" and promotes
  `fish`, `swam`, `crab`, `shark`, `swim` while suppressing the girls' names; at `--steer
  models/tinystories.sae:163:4` Lily "lived in a small fish" and asks "her mom fish" for help.
- **Story openings** (1005): the `once` right after the story's start, promoting `upon`.
- **Pronouns by the hero's sex**: 1959 fires on the full stop in a girl's story and promotes
  `she`, `herself`, `her`; 317 the same for `himself`, `his`, `he`.
- **One story's hero**: 346 fires in the story of a duck called Ducky and promotes `ducky`
  and `duck`; 1804 in Sara's story, promoting `sara` and `sister`: `hook_hidden` holds who the
  story is about.
- **The playground** (1874): "the swings and [the] slide", promoting `swing`, `slide`, `bench`.

The transformer's `blocks.1.hook_mlp_out` is more about the grammar of the next word:
112 fires on a name as it is introduced (`two friends, jack and [jill]`, `a little girl named
[mia]`), 231 on the name's first word of the next sentence (`a little boy named tim . [tim]
had`), 214 and 107 on the `a` of "there was a" and "jack was a" before a description, 543 on
the `!` after a greeting in speech (`hello, tim [!]`), and 563 on the comma after a form of
address (`sweetie [,] " grandma`).

TEXT
}
