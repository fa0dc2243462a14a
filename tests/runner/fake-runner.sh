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
  block)
    # The shape of a multi-kernel result: each module kernel timed alone and labelled
    # with the model kernel it belongs to (numbers invented).
    echo "progress 1.00 Done" >&2
    cat "$(dirname "$0")/fake-block.json"
    ;;
  gpus)
    # The shape of napkin-runner --gpus 2's result (docs/multi-gpu.md), numbers invented.
    echo "progress 1.00 Done" >&2
    cat "$(dirname "$0")/fake-gpus.json"
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
  orphan)
    # Leaves a process behind that holds both pipes, and exits with a result.
    sleep 600 &
    echo $! > "$FAKE_PIDFILE"
    echo "{ \"status\": \"ok\" }"
    ;;
  hang-with-child)
    # Hangs, and so does a process it started, holding both pipes.
    sleep 600 &
    echo $! > "$FAKE_PIDFILE"
    echo "progress 0.60 Running the kernel" >&2
    exec sleep 600
    ;;
  flood-stdout)
    # 96 MiB where a few kilobytes of JSON belong.
    head -c 100663296 /dev/zero
    ;;
  long-stderr-line)
    # 32 MiB on the error stream with no newline, then a result.
    head -c 33554432 /dev/zero | tr '\000' x >&2
    echo "{ \"status\": \"ok\" }"
    ;;
esac
