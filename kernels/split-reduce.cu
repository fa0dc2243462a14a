/* The split-K reduction of the kernel plan (docs/plan.md, "GEMM tile primitives"):
 * C[b,m,n] = epilogue (Σ_s P[s][b][m][n]) over the fp32 partials a split GEMM wrote,
 * then converted to C's type. Each thread takes 4 adjacent columns of one row (16-byte
 * loads of the partials when N % 4 == 0, 4-element vector stores of C where its rows
 * allow), a grid-stride loop over batch × M × ⌈N/4⌉. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "tile-store.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k1
#define NKP_M 1
#define NKP_N 4096
#define NKP_BATCH 1
#define NKP_SPLIT 8
#define NKP_CVEC 1
#define NKP_LDC 4096
#define NKP_CBS 4096
#define NKP_CT napkin_bf16
#define NKP_CREF ((napkin_bf16 *) args.p[2])
#define NKP_PREF ((float *) args.p[3])
#endif /* NAPKIN_GENERATED */
#define G_M NKP_L (NKP_M)
#define G_N NKP_L (NKP_N)
#define G_BATCH NKP_L (NKP_BATCH)
#define G_SPLIT NKP_SPLIT
#define G_CVEC NKP_CVEC
#define G_LDC NKP_L (NKP_LDC)
#define G_CBS NKP_L (NKP_CBS)
#define G_NV ((G_N + 3) / 4)

/* The fused maps, applied to each fp32 result x at (b, m, n). */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPIFN"
#else
__device__ __forceinline__ float
napkin_k1_epi (const NapkinArgs &args, int b, long m, long n, float x)
{
  (void) args; (void) b; (void) m; (void) n;
  return x;
}
#endif /* napkin-fragment/EPIFN */

extern "C" __global__ void __launch_bounds__ (256)
NKP_NAME (const NapkinArgs args)
{
  const float *P = NKP_PREF;
  const long total = G_BATCH * G_M * G_NV;

  for (long t = (long) blockIdx.x * 256 + threadIdx.x; t < total; t += (long) gridDim.x * 256)
    {
      const long n = (t % G_NV) * 4, r = t / G_NV, m = r % G_M, b = r / G_M;
      NKP_CT *c = NKP_CREF + b * G_CBS + m * G_LDC + n;
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
        x[e] = n + e < G_N ? NKP_CAT (NKP_NAME, _epi) (args, (int) b, m, n + e, x[e]) : 0.0f;
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
