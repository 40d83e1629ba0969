#!/usr/bin/env bash
# Every section of the chapter on the page, every model of the picker, at 400 px
# (tests/browser_chapter.sh).
width=400

source "$(dirname "$0")/browser_chapter.sh"
