/* The split-K reduction of the kernel plan (docs/plan.md, "GEMM tile primitives"):
 * C[b,m,n] = epilogue (Σ_s P[s][b][m][n]) over the fp32 partials a split GEMM wrote,
 * then converted to C's type. Each thread takes 4 adjacent columns of one row (16-byte
 * loads of the partials when N % 4 == 0, 4-element vector stores of C where its rows
 * allow), a grid-stride loop over batch × M × ⌈N/4⌉. */
#define G_M @M@L
#define G_N @N@L
#define G_BATCH @BATCH@L
#define G_SPLIT @SPLIT@
#define G_CVEC @CVEC@
#define G_LDC @LDC@L
#define G_CBS @CBS@L
#define G_NV ((G_N + 3) / 4)

/* The fused maps, applied to each fp32 result x at (b, m, n). */
@EPIFN@

extern "C" __global__ void __launch_bounds__ (256)
@NAME@ (const NapkinArgs args)
{
  const float *P = @PREF@;
  const long total = G_BATCH * G_M * G_NV;

  for (long t = (long) blockIdx.x * 256 + threadIdx.x; t < total; t += (long) gridDim.x * 256)
    {
      const long n = (t % G_NV) * 4, r = t / G_NV, m = r % G_M, b = r / G_M;
      @CT@ *c = @CREF@ + b * G_CBS + m * G_LDC + n;
      float x[4] = { 0.0f, 0.0f, 0.0f, 0.0f };

#pragma unroll 4
      for (int s = 0; s < G_SPLIT; s++)
        {
          const float *p = P + ((s * G_BATCH + b) * G_M + m) * G_N + n;

          if (G_N % 4 == 0)
            {
              float v[4];

              napkin_ld4 (p, v);
              for (int e = 0; e < 4; e++)
                x[e] += v[e];
            }
          else
            for (int e = 0; e < 4; e++)
              if (n + e < G_N)
                x[e] += p[e];
        }
      for (int e = 0; e < 4; e++)
        x[e] = n + e < G_N ? @NAME@_epi (args, (int) b, m, n + e, x[e]) : 0.0f;
      if (G_CVEC && n + 3 < G_N)
        napkin_st4 (c, x[0], x[1], x[2], x[3]);
      else
        for (int e = 0; e < 4 && n + e < G_N; e++)
          napkin_st (c + e, x[e]);
    }
}
#undef G_M
#undef G_N
#undef G_BATCH
#undef G_SPLIT
#undef G_CVEC
#undef G_LDC
#undef G_CBS
#undef G_NV
