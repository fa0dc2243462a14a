#!/usr/bin/env python3
"""Baselines for bench/gpu/attn-prims/check: each attention problem (a SPEC line of
`attn-prims --list`) run by torch's scaled_dot_product_attention with the cuDNN and the
flash backends (causal through is_causal or the lower-right causal bias, GQA/MQA through
enable_gqa) and, for sliding windows, FlexAttention; fp8 problems are timed in fp16 (the
targets compare fp8 with cuDNN's fp16). Prints one line per problem:
  NAME cudnn_ms flash_ms flex_ms      ("-" where the backend does not run the case)
Median of event-timed repeats after a warm-up, like the harness."""
import sys


def spec_dict(line):
    d = {}
    for w in line.split():
        k, _, v = w.partition('=')
        d[k] = v
    return d


def timed(fn, reps=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main(lines):
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # no torch: no baselines
        for line in lines:
            print('%s - - - (torch: %s)' % (spec_dict(line).get('name', '?'), e))
        return
    try:
        from torch.nn.attention.bias import causal_lower_right
    except Exception:
        causal_lower_right = None
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention)
    except Exception:
        flex = None

    for line in lines:
        s = spec_dict(line)
        name = s.get('name', '?')
        try:
            b, h, nq, nkv, d = (int(s[k]) for k in ('b', 'h', 'nq', 'nkv', 'd'))
            hk = int(s.get('hk', h)) or h
            t = s.get('t', 'fp16')
            dt = torch.bfloat16 if t == 'bf16' else torch.float16
            mask = s.get('mask', 'none')
            off = int(s.get('off', 0))
            left, right = int(s.get('left', -1)), int(s.get('right', 0))
            q = torch.randn(b, h, nq, d, device='cuda', dtype=dt)
            k = torch.randn(b, hk, nkv, d, device='cuda', dtype=dt)
            v = torch.randn(b, hk, nkv, d, device='cuda', dtype=dt)
            if s.get('bshd') == '1':   # the same strides as a [b, s, h, d] tensor
                q = q.transpose(1, 2).contiguous().transpose(1, 2)
                k = k.transpose(1, 2).contiguous().transpose(1, 2)
                v = v.transpose(1, 2).contiguous().transpose(1, 2)
            gqa = hk != h
            kw = {'enable_gqa': True} if gqa else {}
            if mask == 'causal' and (off != 0 or nq != nkv):
                if causal_lower_right is None or off != nkv - nq:
                    raise RuntimeError('no SDPA form of this causal offset')
                kw['attn_mask'] = causal_lower_right(nq, nkv)
            elif mask == 'causal':
                kw['is_causal'] = True
            out = []
            for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
                if mask == 'window':
                    out.append('-')
                    continue
                try:
                    with sdpa_kernel([backend]):
                        ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, **kw))
                    out.append('%.4f' % ms)
                except Exception:
                    out.append('-')
            if flex is not None and mask == 'window':   # compiling costs seconds: windows only
                try:
                    def keep(bi, hi, qi, ki):
                        ok = ki <= qi + off + (right if mask == 'window' else 0)
                        if mask == 'window' and left >= 0:
                            ok = ok & (ki >= qi + off - left)
                        return ok
                    bm = create_block_mask(keep, None, None, nq, nkv, device='cuda')
                    ms = timed(lambda: flex(q, k, v, block_mask=bm, enable_gqa=gqa))
                    out.append('%.4f' % ms)
                except Exception:
                    out.append('-')
            else:
                out.append('-')
            print(name, *out, flush=True)
        except Exception as e:
            print('%s - - - (%s)' % (name, str(e).splitlines()[0][:80] if str(e) else type(e).__name__), flush=True)


if __name__ == '__main__':
    main([l for l in (sys.argv[1:] or sys.stdin.read().splitlines()) if l.strip()])
