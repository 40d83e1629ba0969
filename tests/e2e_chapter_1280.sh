#!/usr/bin/env bash
# Every section of the chapter on the page, every model of the picker, at 1280 px
# (tests/browser_chapter.sh, with the numbers against the CLI and Secrets 1-4 on each model).
width=1280
numbers=--numbers
source "$(dirname "$0")/browser_chapter.sh"
