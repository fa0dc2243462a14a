/* Split-KV combine (docs/plan.md, "Attention kernels"): a split attention wrote, for each
 * query row and each of SPLIT key ranges, its normalised partial output O_s (fp32) and its
 * log-sum-exp L_s (base 2; −∞ for a range the row saw nothing of). The row's output is
 * Σ_s 2^(L_s − M) O_s / Σ_s 2^(L_s − M), M = max_s L_s (zero when every L_s is −∞).
 * One warp a row, lanes along d; the row index is (kv_flat·G + g)·NQ + q and O is stored
 * through its strides. */
#define C_SPLIT @SPLIT@
#define C_D @D@
#define C_NQ @NQ@L
#define C_G @GROUP@L
#define C_ROWS (C_NQ * C_G * @KV_BATCH@L)

extern "C" __global__ void __launch_bounds__ (128)
@NAME@ (const NapkinArgs args)
{
  const float *__restrict__ part = @PREF@;
  const float *__restrict__ lse = part + (long) C_SPLIT * C_ROWS * C_D;
  @OT@ *__restrict__ Og = @OREF@;
  const long row = (long) blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  if (row >= C_ROWS)
    return;
  {
    const long q = row % C_NQ, g = (row / C_NQ) % C_G;
    long blk = row / (C_NQ * C_G), o_base = 0, kv_flat = 0;
    float mx = NAPKIN_NEG_INF, total = 0.0f;

@LEAD@
    (void) kv_flat;
    for (int s = lane; s < C_SPLIT; s += 32)
      mx = fmaxf (mx, lse[(long) s * C_ROWS + row]);
#pragma unroll
    for (int w = 16; w > 0; w >>= 1)
      mx = fmaxf (mx, __shfl_xor_sync (0xffffffffu, mx, w));
    for (int s = 0; s < C_SPLIT; s++)
      {
        const float l = lse[(long) s * C_ROWS + row];

        total += l == NAPKIN_NEG_INF ? 0.0f : exp2f (l - mx);
      }
    {
      @OT@ *ob = Og + o_base + g * @O_GROUP@L + q * @O_ROW@L;
      const float inv = total > 0.0f ? 1.0f / total : 0.0f;

      for (int d = 2 * lane; d < C_D; d += 64)
        {
          float a = 0.0f, b = 0.0f;

          for (int s = 0; s < C_SPLIT; s++)
            {
              const float l = lse[(long) s * C_ROWS + row];
              const float w = l == NAPKIN_NEG_INF ? 0.0f : exp2f (l - mx);
              const float2 v = *(const float2 *) &part[((long) s * C_ROWS + row) * C_D + d];

              a += w * v.x;
              b += w * v.y;
            }
          napkin_attn_st2 (&ob[d], a * inv, b * inv);
        }
    }
  }
}
#undef C_SPLIT
#undef C_D
#undef C_NQ
#undef C_G
#undef C_ROWS
