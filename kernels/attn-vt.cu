/* Vᵀ for fp8 P·V (docs/plan.md, "Attention kernels"): each of BATCH matrices V [NKV][D]
 * (e4m3 bytes, rows D apart, matrices SBS apart) to Vᵀ [D][LD] (keys NKV… LD zero), so
 * that wgmma reads V K-major. The plan asks for this copy as a repack kernel; the
 * attention printer prints this one only where no repack printer took it. Tiles of
 * 32 × 32 bytes through shared memory (one padding column: no bank conflicts). */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_90a: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0_vt
#define NKP_NKV 4096
#define NKP_D 128
#define NKP_LD 4096
#define NKP_SBS 524288
#define NKP_BATCH 64
#define NKP_SREF ((const unsigned char *) ((const char *) args.p[2] + 0))
#define NKP_DREF ((unsigned char *) ((char *) args.p[4] + 0))
#endif /* NAPKIN_GENERATED */
#define T_NKV NKP_L (NKP_NKV)
#define T_D NKP_L (NKP_D)
#define T_LD NKP_L (NKP_LD)
#define T_SBS NKP_L (NKP_SBS)
#define T_BATCH NKP_L (NKP_BATCH)

extern "C" __global__ void __launch_bounds__ (256)
NKP_NAME (const NapkinArgs args)
{
  const unsigned char *src = NKP_SREF;
  unsigned char *dst = NKP_DREF;
  __shared__ unsigned char tile[32][33];
  const long tiles_k = (T_LD + 31) / 32, tiles_d = (T_D + 31) / 32;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;

  for (long t = blockIdx.x; t < T_BATCH * tiles_k * tiles_d; t += gridDim.x)
    {
      const long b = t / (tiles_k * tiles_d), k0 = (t / tiles_d) % tiles_k * 32, d0 = t % tiles_d * 32;

      for (int y = ty; y < 32; y += 8)
        {
          const long k = k0 + y, d = d0 + tx;

          tile[y][tx] = k < T_NKV && d < T_D ? src[b * T_SBS + k * T_D + d] : (unsigned char) 0;
        }
      __syncthreads ();
      for (int y = ty; y < 32; y += 8)
        {
          const long d = d0 + y, k = k0 + tx;

          if (d < T_D && k < T_LD)
            dst[b * T_D * T_LD + d * T_LD + k] = tile[tx][y];
        }
      __syncthreads ();
    }
}
#undef T_NKV
#undef T_D
#undef T_LD
#undef T_SBS
#undef T_BATCH
