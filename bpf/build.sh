#!/bin/sh
# Rebuilds bpf/proctrace.bpf.o from bpf/proctrace.bpf.c with Debian 12's clang (14) and
# libbpf-dev's headers (apt-get install clang libbpf-dev llvm), stripped of debug info but not
# of BTF (CO-RE needs .BTF and .BTF.ext). Reproducible: no paths or dates end up in the object
# (the CI rebuilds it and compares with the committed one: .ci/run).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/proctrace.bpf.o"}
cd "$here"
clang -target bpf -O2 -g -D__TARGET_ARCH_x86 -fdebug-prefix-map="$here"=. \
	-Wall -Werror -c proctrace.bpf.c -o "$out.tmp"
llvm-strip -g "$out.tmp"
mv "$out.tmp" "$out"
