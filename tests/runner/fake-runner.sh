#!/bin/sh
# A test double for napkin-runner: it speaks the runner's protocol (progress lines on
# stderr, one JSON object on stdout) without a GPU. FAKE_MODE picks the behaviour.
case "$FAKE_MODE" in
  ok)
    echo "progress 0.20 Compiling with NVRTC" >&2
    echo "progress 0.70 Checking the result" >&2
    echo "progress 1.00 Done" >&2
    echo "{ \"status\": \"ok\", \"args\": \"$*\", \"time_ms\": { \"median\": 0.5 } }"
    ;;
  recorded)
    # A result recorded from the real runner on an H200 (gpu-check, 2026-11-22).
    echo "progress 1.00 Done" >&2
    cat "$(dirname "$0")/h200-matmul-tiled.json"
    ;;
  hang)
    echo "progress 0.60 Running the kernel" >&2
    exec sleep 600
    ;;
  crash)
    echo "progress 0.60 Running the kernel" >&2
    kill -SEGV $$
    ;;
  garbage)
    echo "not json"
    exit 1
    ;;
esac
