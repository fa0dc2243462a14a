/* Skeleton: one row operation — softmax, layernorm, rmsnorm, or a sum / max / mean —
 * over an axis of X that is not its last: the strided form of the rows kernel
 * (docs/plan.md, "Rows over any axis"). X[o, j, c] lies at o·LDX + j·INNER + c: the
 * axes after the reduced one flatten into the column c (contiguous), those before it
 * into o. A block owns W = TC·VEC columns of one o: TC threads across them (a warp reads
 * consecutive columns of a row: coalesced), TR threads down the axis, each walking every
 * TR-th j with VEC statistics (one per column), which the block then combines (shuffles
 * within a warp, one pair per column and warp in shared memory). MODE 0 keeps a thread's
 * NR rows in registers, 1 in shared memory, 2 reads them twice (online statistics, then
 * the output; the re-read is their last use), 3 reduces the axis to one value per column.
 * Maps fused before (prologue) and after (epilogue) read their operands at (o, c, j).
 * A long axis over few columns is split into SPLIT chunks of CHUNK rows, each its own
 * block, in two launches of this skeleton (MODE 2 or 3): PHASE 1 writes each chunk's
 * statistics (one fp32 pair a column) to the partials at PREF; PHASE 2 combines a
 * column's SPLIT pairs, then writes its chunk's output (MODE 3: the result, one block a
 * strip), its chunks in the reverse order, so that the first ones read what the last
 * blocks of PHASE 1 left in L2. PHASE 0: one launch over the whole axis.
 * For sm_80 and later. Napkin fills the NKP_ parameters and the maps. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "simt-helpers.h"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_THREADS 512
#define NKP_MINBLOCKS 2
#define NKP_T napkin_f16
#define NKP_OT napkin_f16
#define NKP_CT napkin_f16
#define NKP_TC 2
#define NKP_TR 256
#define NKP_VEC 8
#define NKP_NR 0
#define NKP_MODE 2
#define NKP_OP 0
#define NKP_OUTER 1
#define NKP_LEN 4096
#define NKP_INNER 8192
#define NKP_LDX 33554432
#define NKP_LDY 33554432
#define NKP_YS 8192
#define NKP_Y_VEC true
#define NKP_EPS 0.000000000e+00
#define NKP_SPLIT 1
#define NKP_PHASE 0
#define NKP_CHUNK 4096
#define NKP_PREF ((float *) nullptr)
#define NKP_XREF ((napkin_f16 *) args.p[0])
#define NKP_YREF ((napkin_f16 *) args.p[1])
#endif /* NAPKIN_GENERATED */
/* Every row j of the thread's columns once, UNROLL vector loads in flight: FV (j, t)
 * after the prologue. (A macro, not a generic lambda: NVRTC compiles no templated
 * lambda in device code.) */
#define NKS_SWEEP(CS, FV)                                                                       \
  do {                                                                                          \
    if (live)                                                                                   \
      for (long j0 = jb_ + tr; j0 < je_; j0 += (long) UNROLL * TR)                              \
        {                                                                                       \
          nk_vec<VEC, XT> r_[UNROLL];                                                           \
          _Pragma ("unroll")                                                                    \
          for (int u = 0; u < UNROLL; u++)                                                      \
            if (j0 + (long) u * TR < je_)                                                       \
              r_[u].load (x + (j0 + (long) u * TR) * INNER, CS);                                \
          _Pragma ("unroll")                                                                    \
          for (int u = 0; u < UNROLL; u++)                                                      \
            if (j0 + (long) u * TR < je_)                                                       \
              {                                                                                 \
                float t_[VEC];                                                                  \
                                                                                                \
                r_[u].get (t_);                                                                 \
                pro_v (t_, c, j0 + (long) u * TR);                                              \
                FV (j0 + (long) u * TR, t_);                                                    \
              }                                                                                 \
        }                                                                                       \
  } while (0)

/* BODY on every value t (column k) a thread keeps in registers (MODE 0). */
#define NKS_EACH(...)                                                                           \
  do {                                                                                          \
    _Pragma ("unroll")                                                                          \
    for (int i = 0; i < NR; i++)                                                                \
      if (live && tr + (long) i * TR < LEN)                                                     \
        {                                                                                       \
          _Pragma ("unroll")                                                                    \
          for (int k = 0; k < VEC; k++)                                                         \
            {                                                                                   \
              float &t = v[i][k];                                                               \
                                                                                                \
              __VA_ARGS__;                                                                      \
            }                                                                                   \
        }                                                                                       \
  } while (0)

extern "C" __global__ void __launch_bounds__ (NKP_THREADS, NKP_MINBLOCKS)
NKP_NAME (const NapkinArgs args)
{
  typedef NKP_T XT;
  typedef NKP_OT YT;
  typedef NKP_CT CT;                     /* the cache of MODE 1 */
  constexpr int TC = NKP_TC, TR = NKP_TR, VEC = NKP_VEC, NR = NKP_NR, MODE = NKP_MODE, OP = NKP_OP;
  constexpr int SPLIT = NKP_SPLIT, PHASE = NKP_PHASE;
  constexpr int W = TC * VEC, THREADS = TC * TR;
  constexpr long LEN = NKP_L (NKP_LEN), INNER = NKP_L (NKP_INNER), LDX = NKP_L (NKP_LDX), LDY = NKP_L (NKP_LDY);
  constexpr long YS = NKP_L (NKP_YS), STRIPS = (INNER + W - 1) / W, OUTER = NKP_L (NKP_OUTER);
  constexpr long CHUNK = NKP_L (NKP_CHUNK);
  constexpr bool Y_VEC = NKP_Y_VEC;
  constexpr float EPS = NKP_F (NKP_EPS), INV_LEN = 1.0f / (float) LEN;
  constexpr int PROWS = TC >= 32 ? TR : THREADS / 32;   /* partial rows of the block's reduction */
  constexpr int UNROLL = 4;                             /* loads in flight per thread in a sweep */
  static_assert (THREADS == NKP_THREADS && THREADS % 32 == 0, "whole warps");
  static_assert (PHASE == 0 || ((MODE == 2 || MODE == 3) && SPLIT > 1 && CHUNK * SPLIT >= LEN),
                 "split: two passes or a reduction, its chunks covering the axis");
  const XT *__restrict__ X = NKP_XREF;
  YT *__restrict__ Y = NKP_YREF;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/OPERANDS"
#else
#endif /* napkin-fragment/OPERANDS */
  __shared__ float red_[PROWS][W][2];
  __shared__ float st_[W][2];
  const int tc = threadIdx.x % TC, tr = threadIdx.x / TC;
  /* the chunk of the axis (split), then o and the strip of columns */
  const bool chunked = PHASE == 1 || (PHASE == 2 && MODE == 2);
  const long sp = !chunked ? 0 : PHASE == 1 ? (long) blockIdx.x / (OUTER * STRIPS)
                  : SPLIT - 1 - (long) blockIdx.x / (OUTER * STRIPS);
  const long bo = chunked ? (long) blockIdx.x % (OUTER * STRIPS) : (long) blockIdx.x;
  const long oo = bo / STRIPS;
  const long c0 = (bo % STRIPS) * W;
  const long jb_ = chunked ? sp * CHUNK : 0;
  const long je_ = chunked ? (jb_ + CHUNK < LEN ? jb_ + CHUNK : LEN) : LEN;
  float *const part = NKP_PREF;          /* [SPLIT][OUTER][INNER] pairs */
  const long c = c0 + (long) tc * VEC;
  const bool live = c < INNER;
  const XT *__restrict__ x = X + oo * LDX + (live ? c : 0);
  YT *__restrict__ y = Y + oo * LDY + (live ? c : 0);
  (void) oo;
  (void) y;
  (void) part;

  auto pro_v = [&] (float *v, long c, long j) { (void) v; (void) c; (void) j;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/PRO_V"
#else
#endif /* napkin-fragment/PRO_V */
    };
  auto epi_v = [&] (float *v, long c, long j) { (void) v; (void) c; (void) j;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPI_V"
#else
#endif /* napkin-fragment/EPI_V */
    };
  auto epi_s = [&] (float &v, long c, long j) { (void) v; (void) c; (void) j;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPI_S"
#else
#endif /* napkin-fragment/EPI_S */
    };
  auto store_v = [&] (long j, float *t, bool cs)
    {
      epi_v (t, c, j);
      if constexpr (Y_VEC)
        nk_stv<VEC> (y + j * YS, t, cs);
      else
        for (int k = 0; k < VEC; k++)
          napkin_st (y + j * YS + k, t[k]);
    };

  float a[VEC], b[VEC], K[VEC];
  const float a0 = OP == 0 || OP == 4 ? NAPKIN_NEG_INF : 0.0f;

#pragma unroll
  for (int k = 0; k < VEC; k++)
    {
      a[k] = a0;
      b[k] = 0.0f;
      K[k] = 0.0f;
    }
  /* The partials of the block's TR threads of each column, combined: shuffles within a
   * warp (the lanes of one column), then one pair per warp in shared memory; every
   * thread leaves with its columns' totals (the store of MODE 3: their results). */
  auto col_reduce = [&] (int kind, bool store)
    {
      if constexpr (TC < 32)
        {
#pragma unroll
          for (int s = 16; s >= TC; s >>= 1)
#pragma unroll
            for (int k = 0; k < VEC; k++)
              {
                const float a2 = __shfl_xor_sync (0xffffffffu, a[k], s);
                const float b2 = kind >= 2 ? __shfl_xor_sync (0xffffffffu, b[k], s) : 0.0f;

                nk_combine (a[k], b[k], a2, b2, kind);
              }
        }
      __syncthreads ();                  /* red_ and st_ may still be read from the last one */
      if (TC >= 32 || (threadIdx.x & 31) < TC)
        {
          const int prow = TC >= 32 ? tr : (int) (threadIdx.x / 32);

#pragma unroll
          for (int k = 0; k < VEC; k++)
            {
              red_[prow][tc * VEC + k][0] = a[k];
              red_[prow][tc * VEC + k][1] = b[k];
            }
        }
      __syncthreads ();
      for (int t = threadIdx.x; t < W; t += THREADS)
        {
          float ra = red_[0][t][0], rb = red_[0][t][1];

          for (int q = 1; q < PROWS; q++)
            nk_combine (ra, rb, red_[q][t][0], red_[q][t][1], kind);
          st_[t][0] = ra;
          st_[t][1] = rb;
          if (store && c0 + t < INNER)
            {
              float r = OP == 5 ? ra * INV_LEN : ra;

              epi_s (r, c0 + t, 0);
              napkin_st (Y + oo * LDY + c0 + t, r);
            }
        }
      __syncthreads ();
#pragma unroll
      for (int k = 0; k < VEC; k++)
        {
          a[k] = st_[tc * VEC + k][0];
          b[k] = st_[tc * VEC + k][1];
        }
    };
  /* the statistics of one value t of column k in a sweep (MODE 1, 2, 3); K shifts
   * layernorm's sums in MODE 2 */
  auto stat = [&] (int k, float t)
    {
      if constexpr (OP == 1 && MODE == 2)
        {
          a[k] += t - K[k];
          b[k] += (t - K[k]) * (t - K[k]);
        }
      else if constexpr (OP == 1 || OP == 3 || OP == 5)
        a[k] += t;
      else if constexpr (OP == 2)
        a[k] += t * t;
      else if constexpr (OP == 4)
        a[k] = fmaxf (a[k], t);
      else
        {
          if (t > a[k])
            {
              b[k] = a[k] == NAPKIN_NEG_INF ? 0.0f : b[k] * __expf (a[k] - t);
              a[k] = t;
            }
          b[k] += nk_exp_masked (t, a[k]);
        }
    };
  auto stat_v = [&] (long j, const float *t)
    {
      (void) j;
#pragma unroll
      for (int k = 0; k < VEC; k++)
        stat (k, t[k]);
    };
  constexpr int KIND = OP == 0 ? 2 : OP == 4 ? 1 : OP == 1 && MODE == 2 ? 3 : 0;
  float st0[VEC], st1[VEC];              /* each column's statistics: max or mean, 1/Σ or 1/σ */
  /* the sweep's statistics → st0, st1 (softmax from the online pair, rmsnorm, and
   * layernorm's shifted sums) */
  auto finish = [&] ()
    {
#pragma unroll
      for (int k = 0; k < VEC; k++)
        {
          if constexpr (OP == 0)
            {
              st0[k] = a[k];
              st1[k] = nk_inv_sum (b[k]);
            }
          else if constexpr (OP == 1)
            {
              const float mean = a[k] * INV_LEN;

              st0[k] = K[k] + mean;
              st1[k] = rsqrtf (fmaxf (b[k] * INV_LEN - mean * mean, 0.0f) + EPS);
            }
          else
            {
              st0[k] = 0.0f;
              st1[k] = rsqrtf (a[k] * INV_LEN + EPS);
            }
        }
    };
  auto fin = [&] (int k, float t) -> float
    {
      if constexpr (OP == 0)
        return nk_exp_masked (t, st0[k]) * st1[k];
      else if constexpr (OP == 1)
        return (t - st0[k]) * st1[k];
      else
        return t * st1[k];
    };
  auto out_v = [&] (long j, float *t)
    {
#pragma unroll
      for (int k = 0; k < VEC; k++)
        t[k] = fin (k, t[k]);
      store_v (j, t, MODE == 2);
    };

  if constexpr (MODE == 0)
    {
      float v[NR > 0 ? NR : 1][VEC];

#pragma unroll
      for (int i = 0; i < NR; i++)
        if (live && tr + (long) i * TR < LEN)
          {
            nk_ldv<VEC> (x + (tr + (long) i * TR) * INNER, v[i], false);
            pro_v (v[i], c, tr + (long) i * TR);
          }
      /* two steps on the kept values: max (mean), then the exponentials' sum (the
       * squared deviations) */
      NKS_EACH (a[k] = OP == 0 ? fmaxf (a[k], t) : OP == 1 ? a[k] + t : a[k] + t * t);
      col_reduce (OP == 0 ? 1 : 0, false);
#pragma unroll
      for (int k = 0; k < VEC; k++)
        {
          st0[k] = OP == 0 ? a[k] : OP == 1 ? a[k] * INV_LEN : 0.0f;
          st1[k] = OP == 2 ? rsqrtf (a[k] * INV_LEN + EPS) : 1.0f;
          a[k] = 0.0f;
        }
      if constexpr (OP != 2)
        {
          if constexpr (OP == 0)
            NKS_EACH (t = nk_exp_masked (t, st0[k]); a[k] += t);
          else
            NKS_EACH (a[k] += (t - st0[k]) * (t - st0[k]));
          col_reduce (0, false);
#pragma unroll
          for (int k = 0; k < VEC; k++)
            st1[k] = OP == 0 ? nk_inv_sum (a[k]) : rsqrtf (a[k] * INV_LEN + EPS);
        }
      NKS_EACH (t = OP == 1 ? (t - st0[k]) * st1[k] : t * st1[k]);
#pragma unroll
      for (int i = 0; i < NR; i++)
        if (live && tr + (long) i * TR < LEN)
          store_v (tr + (long) i * TR, v[i], false);
    }
  else if constexpr (MODE == 1)
    {
      /* the block's rows in shared memory, row j's W columns at j·W: each thread reads
       * back only what it wrote */
      extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
      CT *const cache = (CT *) smem_raw_u8_ + tc * VEC;
      /* softmax: the max alone in the sweep (the online pair branches and rescales per
       * value, and its warps diverge), then Σ exp from shared memory */
      auto keep_v = [&] (long j, float *t)
        {
          nk_stv<VEC> (cache + j * W, t, false);
          if constexpr (OP == 0)
            {
#pragma unroll
              for (int k = 0; k < VEC; k++)
                a[k] = fmaxf (a[k], t[k]);
            }
          else
            stat_v (j, t);
        };

      NKS_SWEEP (false, keep_v);
      col_reduce (OP == 0 ? 1 : 0, false);
      if constexpr (OP == 0 || OP == 1)
        {
          /* the second statistic from the kept columns: Σ exp (t − max) for a softmax,
           * Σ (t − mean)² for a layernorm (MODE 0's two steps, from shared memory) */
#pragma unroll
          for (int k = 0; k < VEC; k++)
            {
              st0[k] = OP == 0 ? a[k] : a[k] * INV_LEN;
              a[k] = 0.0f;
            }
          if (live)
            for (long j = tr; j < LEN; j += TR)
              {
                float t[VEC];

                nk_ldv<VEC> (cache + j * W, t, false);
#pragma unroll
                for (int k = 0; k < VEC; k++)
                  a[k] += OP == 0 ? nk_exp_masked (t[k], st0[k]) : (t[k] - st0[k]) * (t[k] - st0[k]);
              }
          col_reduce (0, false);
#pragma unroll
          for (int k = 0; k < VEC; k++)
            st1[k] = OP == 0 ? nk_inv_sum (a[k]) : rsqrtf (a[k] * INV_LEN + EPS);
        }
      else
        finish ();
      if (live)
        {
#pragma unroll 4
          for (long j = tr; j < LEN; j += TR)
            {
              float t[VEC];

              nk_ldv<VEC> (cache + j * W, t, false);
              out_v (j, t);
            }
        }
    }
  else
    {
      if constexpr (OP == 1 && MODE == 2)
        {
          if (live)
            {
              /* the shift: each column's first value (every chunk's the same) */
              nk_ldv<VEC> (x, K, false);
              pro_v (K, c, 0);
            }
        }
      if constexpr (PHASE == 2)
        {
          /* the chunks' statistics of the block's columns: the threads down the axis take
           * every TR-th chunk, then combine as after a sweep (MODE 3: and store) */
          if (live)
            for (long s = tr; s < SPLIT; s += TR)
              {
                const float *pp = part + ((s * OUTER + oo) * INNER + c) * 2;

#pragma unroll
                for (int k = 0; k < VEC; k++)
                  nk_combine (a[k], b[k], pp[2 * k], pp[2 * k + 1], KIND);
              }
          col_reduce (KIND, MODE == 3);
        }
      else
        {
          NKS_SWEEP (false, stat_v);
          col_reduce (KIND, MODE == 3 && PHASE == 0);
        }
      if constexpr (PHASE == 1)
        {
          if (live && tr == 0)
            {
              float *pp = part + ((sp * OUTER + oo) * INNER + c) * 2;

#pragma unroll
              for (int k = 0; k < VEC; k++)
                {
                  pp[2 * k] = a[k];
                  pp[2 * k + 1] = b[k];
                }
            }
        }
      else if constexpr (MODE == 2)
        {
          finish ();
          NKS_SWEEP (true, out_v);
        }
    }
}
#undef NKS_SWEEP
#undef NKS_EACH
