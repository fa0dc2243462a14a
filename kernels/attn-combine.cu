/* Split-KV combine (docs/plan.md, "Attention kernels"): a split attention wrote, for each
 * query row and each of SPLIT key ranges, its normalised partial output O_s (fp32) and its
 * log-sum-exp L_s (base 2; −∞ for a range the row saw nothing of). The row's output is
 * Σ_s 2^(L_s − M) O_s / Σ_s 2^(L_s − M), M = max_s L_s (zero when every L_s is −∞).
 * One warp a row, lanes along d (four columns each; D is a multiple of 8); the row index is (kv_flat·G + g)·NQ + q and O is stored
 * through its strides. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "attn-prims.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k1
#define NKP_SPLIT 16
#define NKP_D 128
#define NKP_NQ 1
#define NKP_GROUP 4
#define NKP_KV_BATCH 8
#define NKP_O_GROUP 128
#define NKP_O_ROW 128
#define NKP_OT napkin_f16
#define NKP_OREF ((napkin_f16 *) args.p[3])
#define NKP_PREF ((float *) args.p[4])
#endif /* NAPKIN_GENERATED */
#define C_SPLIT NKP_SPLIT
#define C_D NKP_D
#define C_NQ NKP_L (NKP_NQ)
#define C_G NKP_L (NKP_GROUP)
#define C_ROWS (C_NQ * C_G * NKP_L (NKP_KV_BATCH))
#define C_LSE_REGS ((C_SPLIT + 31) / 32)

extern "C" __global__ void __launch_bounds__ (128)
NKP_NAME (const NapkinArgs args)
{
  const float *__restrict__ part = NKP_PREF;
  const float *__restrict__ lse = part + (long) C_SPLIT * C_ROWS * C_D;
  NKP_OT *__restrict__ Og = NKP_OREF;
  const long row = (long) blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  if (row >= C_ROWS)
    return;
  {
    const long q = row % C_NQ, g = (row / C_NQ) % C_G;
    long blk = row / (C_NQ * C_G), o_base = 0, kv_flat = 0;
    float mx = NAPKIN_NEG_INF, total = 0.0f;

#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
    {
      const long i_ = blk % 8L;

      blk /= 8L;
      o_base += i_ * 512L;
      kv_flat += i_ * 1L;
    }
    {
      const long i_ = blk % 1L;

      blk /= 1L;
      o_base += i_ * 4096L;
      kv_flat += i_ * 8L;
    }
#endif /* napkin-fragment/LEAD */
    (void) kv_flat;
    /* The row's log-sum-exps in registers, split s in lane s % 32 (one round trip), and
     * its partial outputs read with every split's load in flight at once, four columns a
     * lane: decoding has few rows, so the kernel is as long as its dependent round trips
     * (docs/model.md §14b). */
    float w[C_LSE_REGS];
#pragma unroll
    for (int i = 0; i < C_LSE_REGS; i++)
      {
        const int s = lane + 32 * i;

        w[i] = s < C_SPLIT ? lse[(long) s * C_ROWS + row] : NAPKIN_NEG_INF;
        mx = fmaxf (mx, w[i]);
      }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      mx = fmaxf (mx, __shfl_xor_sync (0xffffffffu, mx, o));
#pragma unroll
    for (int i = 0; i < C_LSE_REGS; i++)
      {
        w[i] = w[i] == NAPKIN_NEG_INF ? 0.0f : exp2f (w[i] - mx);
        total += w[i];
      }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      total += __shfl_xor_sync (0xffffffffu, total, o);
    {
      NKP_OT *ob = Og + o_base + g * NKP_L (NKP_O_GROUP) + q * NKP_L (NKP_O_ROW);
      const float inv = total > 0.0f ? 1.0f / total : 0.0f;

#pragma unroll
      for (int d0 = 0; d0 < C_D; d0 += 128)
        {
          const int d = d0 + 4 * lane;
          float a[4] = { 0.0f, 0.0f, 0.0f, 0.0f };

#pragma unroll
          for (int s = 0; s < C_SPLIT; s++)
            {
              const float ws = __shfl_sync (0xffffffffu, w[s / 32], s % 32);

              if (d < C_D)
                {
                  const float4 v = *(const float4 *) &part[((long) s * C_ROWS + row) * C_D + d];

                  a[0] += ws * v.x;
                  a[1] += ws * v.y;
                  a[2] += ws * v.z;
                  a[3] += ws * v.w;
                }
            }
          if (d < C_D)
            {
              napkin_attn_st2 (&ob[d], a[0] * inv, a[1] * inv);
              napkin_attn_st2 (&ob[d + 2], a[2] * inv, a[3] * inv);
            }
        }
    }
  }
}
#undef C_SPLIT
#undef C_D
#undef C_NQ
#undef C_G
#undef C_ROWS
#undef C_LSE_REGS
