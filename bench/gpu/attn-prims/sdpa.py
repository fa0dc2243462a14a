#!/usr/bin/env python3
"""Baselines for bench/gpu/attn-prims/check: each attention problem (a SPEC line of
`attn-prims --list` or `--list-scores`) run by torch's scaled_dot_product_attention with
the cuDNN, flash and memory-efficient backends (causal through is_causal or the lower-right
causal bias, GQA/MQA through enable_gqa) and FlexAttention for sliding windows and score
operands; fp8 problems are timed in fp16 (the targets compare fp8 with cuDNN's fp16).
Score operands (docs/plan.md, "Score operands"): a bias becomes SDPA's float attn_mask
(times α when the diagram adds it before the scale) and FlexAttention's score_mod; keep
flags SDPA's boolean attn_mask and FlexAttention's mask_mod (a block mask); both together
one float attn_mask (the bias, −∞ where hidden). Prints one line per problem:
  NAME cudnn_ms flash_ms flex_ms eff_ms      ("-" where the backend does not run the case)
Median of event-timed repeats after a warm-up, like the harness."""
import math
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


def operand(torch, s, what, b, h, hk, nq, nkv, dt):
    """The score operand `what` (bias or keep) of the spec as a tensor broadcasting to
    [b, h, nq, nkv] (torch's head h·g: the diagram's K/V head and group), filled as the
    harness fills it: a bias uniform in [-2, 2) (−∞ past each sequence's length with
    bfill=pad), flags 1 in 8 hidden at random, as padding or as a lower triangle."""
    axes = s.get(what)
    if not axes:
        return None
    axes = axes.split(',')
    g = h // hk
    gqa = 1 < hk < h or (hk == 1 and h > 1)
    shape = [b if 'b' in axes else 1, (hk if gqa else h) if 'h' in axes else 1, g if 'g' in axes else 1,
             nq if 'q' in axes else 1, nkv if 'k' in axes else 1]
    fill = s.get('bfill' if what == 'bias' else 'kfill', 'rand')
    ib = torch.arange(shape[0], device='cuda').view(-1, 1, 1, 1, 1)
    iq = torch.arange(shape[3], device='cuda').view(1, 1, 1, -1, 1)
    ik = torch.arange(shape[4], device='cuda').view(1, 1, 1, 1, -1)
    length = torch.where((ib == 1) & (b > 2), torch.zeros_like(ib), nkv - (ib * 977) % (nkv // 2 + 1))
    if what == 'keep':
        if fill == 'pad':
            x = (ik < length).expand(shape)
        elif fill == 'tril':
            x = (ik <= iq + nkv - nq).expand(shape)
        else:
            x = torch.randint(0, 8, shape, device='cuda') != 0
    else:
        x = torch.rand(shape, device='cuda') * 4 - 2
        if fill == 'pad':
            x = torch.where(ik >= length, torch.full_like(x, -math.inf), x)
        x = x.to(dt)
    if gqa and shape[1] * shape[2] > 1:   # torch's heads: K/V head × group
        x = x.expand(shape[0], hk, g, shape[3], shape[4]).reshape(shape[0], h, shape[3], shape[4])
    else:
        x = x.reshape(shape[0], shape[1] * shape[2], shape[3], shape[4])
    return x


def flex_scored(torch, flex, create_block_mask, q, k, v, bias, keep, alpha, gqa, timed):
    """FlexAttention with the score operands: the bias read in score_mod, the keep flags
    as a mask_mod's block mask (blocks it hides wholly skipped)."""
    try:
        b, h, nq, nkv = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
        kw = {'scale': alpha, 'enable_gqa': gqa}
        if bias is not None:
            b4 = bias.expand(b, h, nq, nkv)
            kw['score_mod'] = lambda score, bi, hi, qi, ki: score + b4[bi, hi, qi, ki].float()
        if keep is not None:
            k4 = keep.expand(b, h, nq, nkv)
            kw['block_mask'] = create_block_mask(lambda bi, hi, qi, ki: k4[bi, hi, qi, ki],
                                                 b if keep.shape[0] > 1 else None,
                                                 h if keep.shape[1] > 1 else None, nq, nkv, device='cuda')
        return '%.4f' % timed(lambda: flex(q, k, v, **kw))
    except Exception as e:
        print('flex: %s' % e, file=sys.stderr)
        return '-'


def main(lines):
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # no torch: no baselines
        for line in lines:
            print('%s - - - - (torch: %s)' % (spec_dict(line).get('name', '?'), e))
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
            alpha = float(s['alpha']) if 'alpha' in s else 1 / math.sqrt(d)
            bias = operand(torch, s, 'bias', b, h, hk, nq, nkv, dt)
            keep = operand(torch, s, 'keep', b, h, hk, nq, nkv, dt)
            if bias is not None and s.get('first') == '1':
                bias = bias * alpha   # α·(Q·Kᵀ + B): SDPA adds the mask after its scale
            scored = bias is not None or keep is not None
            if scored:
                kw['scale'] = alpha
                if bias is not None and keep is not None:
                    kw['attn_mask'] = bias.masked_fill(~keep, -math.inf)
                else:
                    kw['attn_mask'] = bias if bias is not None else keep
            if mask == 'causal' and (off != 0 or nq != nkv):
                if causal_lower_right is None or off != nkv - nq:
                    raise RuntimeError('no SDPA form of this causal offset')
                kw['attn_mask'] = causal_lower_right(nq, nkv)
            elif mask == 'causal':
                kw['is_causal'] = True
            def sdpa(backend):
                if mask == 'window':
                    return '-'
                try:
                    with sdpa_kernel([backend]):
                        ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, **kw))
                    return '%.4f' % ms
                except Exception:
                    return '-'
            out = [sdpa(SDPBackend.CUDNN_ATTENTION), sdpa(SDPBackend.FLASH_ATTENTION)]
            if flex is not None and scored:
                out.append(flex_scored(torch, flex, create_block_mask, q, k, v, bias, keep, alpha, gqa, timed))
            elif flex is not None and mask == 'window':   # compiling costs seconds: windows only
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
            out.append(sdpa(SDPBackend.EFFICIENT_ATTENTION))
            print(name, *out, flush=True)
        except Exception as e:
            print('%s - - - - (%s)' % (name, str(e).splitlines()[0][:80] if str(e) else type(e).__name__), flush=True)


if __name__ == '__main__':
    main([l for l in (sys.argv[1:] or sys.stdin.read().splitlines()) if l.strip()])
