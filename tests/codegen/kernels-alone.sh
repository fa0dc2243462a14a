#!/bin/sh
# Each kernel template of kernels/ is valid CUDA on its own (docs/codegen.md, "Kernel
# sources"): no @KEY@ text placeholder is left, every .cu has its stand-alone block, and
# nvcc compiles each one alone (-c) for the arch that block names. Without nvcc (CI has
# no CUDA) the compiles are skipped with a message; the text checks still run.
# Usage: kernels-alone.sh NVCC|"" KERNELS_DIR   (TAP output)
nvcc=$1
dir=$2
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT

files=$(ls "$dir"/*.cu "$dir"/*.cuh "$dir"/*.h)
cus=$(ls "$dir"/*.cu)
# variants a template also takes alone: FILE:MACRO:ARCH (the backward's main on wgmma)
variants="attn-bwd-sm80.cu:NKB_MAIN_SM90:sm_90a"
n=0
for f in $files $cus $variants; do n=$((n + 1)); done
echo "1..$n"
i=0
for f in $files; do
  i=$((i + 1))
  name=${f##*/}
  # placeholders outside comments: @KEY@ anywhere but in a /* … */ or // line
  left=$(sed -e 's|/\*.*\*/||g' -e 's|//.*||' "$f" | grep -nE '@[A-Z0-9_]+@' | head -3)
  case $name in
    *.cu) alone=$(grep -c '^#ifndef NAPKIN_GENERATED   /\* compiled alone for sm_' "$f") ;;
    *) alone=1 ;;
  esac
  if [ -n "$left" ]; then
    echo "not ok $i - $name has text placeholders: $left"
  elif [ "$alone" != 1 ]; then
    echo "not ok $i - $name: no (or more than one) stand-alone block '#ifndef NAPKIN_GENERATED   /* compiled alone for sm_…'"
  else
    echo "ok $i - $name: no text placeholders"
  fi
done

if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  for f in $cus; do
    i=$((i + 1))
    echo "ok $i - ${f##*/} compiles alone # SKIP nvcc not found (-Dcuda-path or PATH)"
  done
  for v in $variants; do
    i=$((i + 1))
    echo "ok $i - ${v%%:*} with ${v#*:} compiles alone # SKIP nvcc not found (-Dcuda-path or PATH)"
  done
  exit 0
fi
for f in $cus; do
  i=$((i + 1))
  name=${f##*/}
  arch=$(sed -n 's|^#ifndef NAPKIN_GENERATED   /\* compiled alone for \(sm_[0-9a-z]*\):.*|\1|p' "$f" | head -1)
  num=${arch#sm_}
  if [ -z "$arch" ]; then
    echo "not ok $i - $name: no arch in its stand-alone block"
    continue
  fi
  if "$nvcc" -c "-gencode=arch=compute_$num,code=$arch" -o "$out/$name.o" "$f" > "$out/log" 2>&1; then
    echo "ok $i - $name compiles alone for $arch"
  else
    echo "not ok $i - $name does not compile alone for $arch:"
    sed 's/^/# /' "$out/log" | head -40
  fi
done
for v in $variants; do
  i=$((i + 1))
  name=${v%%:*}
  rest=${v#*:}
  macro=${rest%%:*}
  arch=${rest#*:}
  num=${arch#sm_}
  if "$nvcc" -c "-gencode=arch=compute_$num,code=$arch" "-D$macro=1" -o "$out/$name.v.o" "$dir/$name" > "$out/log" 2>&1; then
    echo "ok $i - $name with $macro=1 compiles alone for $arch"
  else
    echo "not ok $i - $name with $macro=1 does not compile alone for $arch:"
    sed 's/^/# /' "$out/log" | head -40
  fi
done
