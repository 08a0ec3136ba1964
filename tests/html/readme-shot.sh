#!/bin/sh
# Regenerates docs/html-report.png, the README's picture of the HTML report: the page of the
# recorded failing make (tests/fixtures/builds/make-fails.jsonl), hovering a compile, as headless
# Chromium draws it at 1400×900. Needs what tests/run installs (chromium, node, tests/html's
# node_modules) and a built proctrace:
#   cargo build && tests/html/readme-shot.sh
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./target/debug/proctrace replay tests/fixtures/builds/make-fails.jsonl --tree none -q --html "$tmp/make-fails.html"
node tests/html/check.mjs --screenshot "$tmp/shots" "$tmp/make-fails.html" >/dev/null
cp "$tmp/shots/make-fails-hover.png" docs/html-report.png
echo "docs/html-report.png: $(wc -c < docs/html-report.png) bytes"
