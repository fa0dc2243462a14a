#!/usr/bin/env python3
"""Exports the probe modules through tests/import/zoo/regenerate.py (session 27)."""
import importlib.util
import os
import sys
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
NAMES = ["meta_llama_attention", "gptj_attention", "linear_attention", "lora_linear",
         "neox_parallel_block", "se_block", "deepseek_mla_attention", "moe_router"]


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    os.chdir(ROOT)
    path = os.path.join(ROOT, "tests", "import", "zoo", "regenerate.py")
    spec = importlib.util.spec_from_file_location("regenerate", path)
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    import torch
    print("torch", torch.__version__, flush=True)
    for name in NAMES:
        try:
            regenerate.regenerate(name, out)
            print("OK", name, flush=True)
        except Exception as e:
            tb = traceback.format_exc().strip().splitlines()
            print("FAIL %s: %s: %s" % (name, type(e).__name__, str(e)[:2000]), flush=True)
            print("    " + "\n    ".join(tb[-12:]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
