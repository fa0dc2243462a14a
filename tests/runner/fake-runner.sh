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
