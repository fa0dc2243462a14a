/* The operand repack of the kernel plan (docs/plan.md, "GEMM tile primitives"): copies
 * each of `batch` matrices src (rows × cols, rows ld_src apart) to dst with rows ld_dst
 * apart, transposed when G_TRANSPOSE (dst is then cols × rows), zeroing the padding of
 * each dst row (columns from the copied width up to ld_dst), so that a GEMM can read it
 * with aligned rows (TMA, cp.async) or K-major (fp8 wgmma). Elements are moved as raw
 * bits (NKP_RT, G_ES bytes). The destination's rows always start 16-byte aligned (the plan
 * pads them), the source's anywhere.
 * Copy: each thread writes one 16-byte chunk of a destination row a pass (a warp: 512
 * contiguous bytes). In a row's middle it reads the one or two aligned 16-byte chunks of
 * the source that hold those bytes and shifts them into place (funnel shifts by the
 * row's misalignment); the first and last chunks of a row, and the padding, element by
 * element. No shared memory.
 * Transpose: 64 × 64 tiles through shared memory, the source read in 16-byte vectors
 * where its rows allow (G_SVEC), the destination written in 16-byte vectors; with
 * G_PV_ORDER each 32 destination columns take their source rows in fp8 P·V's order, and
 * with G_ONES a row of e4m3 ones follows (fp8 P·V's row sums). */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_ROWS 37
#define NKP_COLS 29
#define NKP_LDS 29
#define NKP_LDD 32
#define NKP_SBS 1073
#define NKP_DBS 1184
#define NKP_BATCH 1
#define NKP_B2 1
#define NKP_SBS2 0
#define NKP_TRANSPOSE 0
#define NKP_PV_ORDER 0
#define NKP_ONES 0
#define NKP_SVEC 0
#define NKP_RT unsigned short
#define NKP_SREF ((const unsigned short *) ((const char *) args.p[0] + 0))
#define NKP_DREF ((unsigned short *) ((char *) args.p[3] + 0))
#endif /* NAPKIN_GENERATED */
#define G_ROWS NKP_L (NKP_ROWS)
#define G_COLS NKP_L (NKP_COLS)
#define G_LDS NKP_L (NKP_LDS)
#define G_LDD NKP_L (NKP_LDD)
#define G_SBS NKP_L (NKP_SBS)
#define G_DBS NKP_L (NKP_DBS)
#define G_BATCH NKP_L (NKP_BATCH)
/* the source's batch over two axes: matrix b at (b / G_B2)·G_SBS + (b % G_B2)·G_SBS2 */
#define G_B2 NKP_L (NKP_B2)
#define G_SBS2 NKP_L (NKP_SBS2)
#define G_SRC_MATRIX(b) ((b) / G_B2 * G_SBS + (b) % G_B2 * G_SBS2)
#define G_TRANSPOSE NKP_TRANSPOSE
/* transpose: each 32 destination columns in fp8 P·V's key order (NAPKIN_PV_KEY) */
#define G_PV_ORDER NKP_PV_ORDER
/* transpose: 8 more destination rows after G_COLS, the first e4m3 ones (0x38), the rest zero */
#define G_ONES NKP_ONES
#if G_PV_ORDER
#define G_SRC_ROW(j) (((j) & ~31) | NAPKIN_PV_KEY ((j) & 31))
#else
#define G_SRC_ROW(j) (j)
#endif
#define G_SVEC NKP_SVEC                        /* transpose: every source row starts 16-byte aligned */
#define G_ES ((int) sizeof (NKP_RT))
#define G_V (16 / G_ES)                      /* elements per 16-byte chunk */
#define G_PAD (G_ES == 1 ? 2 : 1)            /* tile row padding: the transposed reads hit distinct banks */

union NKP_CAT (NKP_NAME, _chunk)
{
  uint4 v;
  NKP_RT  e[G_V];
};

extern "C" __global__ void __launch_bounds__ (256)
NKP_NAME (const NapkinArgs args)
{
  const NKP_RT *src = NKP_SREF;
  NKP_RT *dst = NKP_DREF;
#if G_TRANSPOSE
  /* dst[c][r] = src[r][c]: tile (b, c0, r0) covers dst rows c0 … c0 + 63 (< cols) and
   * columns r0 … r0 + 63 (< ld_dst; rows past `rows` read as zeros: the padding) */
  __shared__ NKP_RT tile[64][64 + G_PAD];
  const long tiles_c = (G_COLS + 63) / 64, tiles_r = (G_LDD + 63) / 64;

  for (long t = blockIdx.x; t < G_BATCH * tiles_c * tiles_r; t += gridDim.x)
    {
      const long b = t / (tiles_c * tiles_r), c0 = (t / tiles_r) % tiles_c * 64, r0 = t % tiles_r * 64;
      const NKP_RT *s = src + G_SRC_MATRIX (b);
      NKP_RT *d = dst + b * G_DBS;

      for (int i = threadIdx.x; i < 64 * (64 / G_V); i += 256)
        {
          const int r = i / (64 / G_V), cv = i % (64 / G_V) * G_V;
          const long sr = r0 + r, sc = c0 + cv;
          union NKP_CAT (NKP_NAME, _chunk) x;

          if (G_SVEC && sr < G_ROWS && sc + G_V <= G_COLS)
            x.v = __ldg ((const uint4 *) (s + sr * G_LDS + sc));
          else
#pragma unroll
            for (int k = 0; k < G_V; k++)
              x.e[k] = sr < G_ROWS && sc + k < G_COLS ? s[sr * G_LDS + sc + k] : (NKP_RT) 0;
#pragma unroll
          for (int k = 0; k < G_V; k++)
            tile[r][cv + k] = x.e[k];
        }
      __syncthreads ();
      for (int i = threadIdx.x; i < 64 * (64 / G_V); i += 256)
        {
          const int c = i / (64 / G_V), rv = i % (64 / G_V) * G_V;
          const long dr = c0 + c, dc = r0 + rv;
          union NKP_CAT (NKP_NAME, _chunk) x;

          if (dr >= G_COLS || dc >= G_LDD)
            continue;
#pragma unroll
          for (int k = 0; k < G_V; k++)
            x.e[k] = tile[G_SRC_ROW (rv + k)][c];
          *(uint4 *) (d + dr * G_LDD + dc) = x.v;
        }
#if G_ONES
      /* the last tile row of dst also writes rows G_COLS … G_COLS + 7 of its columns */
      if (c0 + 64 >= G_COLS && threadIdx.x < 8 * (64 / G_V))
        {
          const long dr = G_COLS + threadIdx.x / (64 / G_V), dc = r0 + threadIdx.x % (64 / G_V) * G_V;
          const unsigned w = dr == G_COLS ? 0x38383838u : 0u;

          if (dc < G_LDD)
            *(uint4 *) (d + dr * G_LDD + dc) = make_uint4 (w, w, w, w);
        }
#endif
      __syncthreads ();
    }
#else
  const long per_row = G_LDD / G_V, total = G_BATCH * G_ROWS * per_row;

  for (long t = (long) blockIdx.x * 256 + threadIdx.x; t < total; t += (long) gridDim.x * 256)
    {
      const long row = t / per_row, c0 = t % per_row * G_V;
      const NKP_RT *s = src + G_SRC_MATRIX (row / G_ROWS) + row % G_ROWS * G_LDS;   /* the source row */
      const unsigned long long at = (unsigned long long) (s + c0), lo = at & ~15ull;
      const unsigned sh = (unsigned) (at & 15);
      const unsigned long long end = (unsigned long long) (s + G_COLS);
      union NKP_CAT (NKP_NAME, _chunk) x;

      if (c0 + G_V <= G_COLS && lo >= (unsigned long long) s && lo + (sh ? 32 : 16) <= end)
        {
          /* bytes sh … sh + 15 of two aligned chunks: shift by whole words, then bits */
          const uint4 a = __ldg ((const uint4 *) lo), b = sh ? __ldg ((const uint4 *) lo + 1) : a;
          unsigned w[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
          const unsigned f = (sh & 3) * 8;

          if (sh & 8)
#pragma unroll
            for (int k = 0; k < 6; k++)
              w[k] = w[k + 2];
          if (sh & 4)
#pragma unroll
            for (int k = 0; k < 5; k++)
              w[k] = w[k + 1];
          x.v.x = __funnelshift_r (w[0], w[1], f);
          x.v.y = __funnelshift_r (w[1], w[2], f);
          x.v.z = __funnelshift_r (w[2], w[3], f);
          x.v.w = __funnelshift_r (w[3], w[4], f);
        }
      else
#pragma unroll
        for (int k = 0; k < G_V; k++)
          x.e[k] = c0 + k < G_COLS ? s[c0 + k] : (NKP_RT) 0;
      *(uint4 *) (dst + row / G_ROWS * G_DBS + row % G_ROWS * G_LDD + c0) = x.v;
    }
#endif
}
#undef G_ROWS
#undef G_COLS
#undef G_LDS
#undef G_LDD
#undef G_SBS
#undef G_DBS
#undef G_BATCH
#undef G_B2
#undef G_SBS2
#undef G_SRC_MATRIX
#undef G_TRANSPOSE
#undef G_PV_ORDER
#undef G_ONES
#undef G_SRC_ROW
#undef G_SVEC
#undef G_ES
#undef G_V
#undef G_PAD
