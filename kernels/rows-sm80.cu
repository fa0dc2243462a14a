/* Skeleton: one row operation — softmax, layernorm, rmsnorm, or a sum / max / mean —
 * along the contiguous last axis of X, with element-wise maps fused before it (the
 * prologue) and after it (the epilogue), each map's second operand read from device
 * memory (docs/plan.md, "Rows and element-wise kernels"). A team of TPR threads works
 * on one row; a block holds TEAMS teams and walks RPB consecutive rows. MODE 0 keeps
 * the row in registers (NV vectors and NS scalars per thread), 1 in shared memory, 2
 * reads it twice (online statistics, then the output; the re-read is the row's last
 * use), 3 reduces it to one value. Loads and stores are 16 bytes wide; a row that does
 * not start on 16 bytes has a scalar head and tail. For sm_80 and later. Napkin fills
 * the NKP_ parameters and the maps. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "simt-helpers.h"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_THREADS 256
#define NKP_MINBLOCKS 4
#define NKP_T napkin_f16
#define NKP_OT napkin_f16
#define NKP_CT napkin_f16
#define NKP_TPR 128
#define NKP_TEAMS 2
#define NKP_VEC 8
#define NKP_NV 4
#define NKP_NS 0
#define NKP_MODE 0
#define NKP_OP 1
#define NKP_COLS 4096
#define NKP_ROWS 65536
#define NKP_LDX 4096
#define NKP_LDY 4096
#define NKP_RPB 4
#define NKP_X_ALIGNED true
#define NKP_EPS 1.000000000e-05
#define NKP_XREF ((napkin_f16 *) args.p[0])
#define NKP_YREF ((napkin_f16 *) args.p[3])
#endif /* NAPKIN_GENERATED */
/* Every element of the row once, UNROLL vector loads in flight per thread: FV (j, t) for
 * vector j, FS (e, t) for scalar e, both after the prologue. (Macros, not generic
 * lambdas: NVRTC compiles no templated lambda in device code.) */
#define NK_SWEEP(CS, FV, FS)                                                                    \
  do {                                                                                          \
    for (long j0 = lane; j0 < nb; j0 += (long) UNROLL * TPR)                                    \
      {                                                                                         \
        nk_vec<VEC, XT> r_[UNROLL];                                                             \
        _Pragma ("unroll")                                                                      \
        for (int u = 0; u < UNROLL; u++)                                                        \
          if (j0 + (long) u * TPR < nb)                                                         \
            r_[u].load (x + h + (j0 + (long) u * TPR) * VEC, CS);                               \
        _Pragma ("unroll")                                                                      \
        for (int u = 0; u < UNROLL; u++)                                                        \
          if (j0 + (long) u * TPR < nb)                                                         \
            {                                                                                   \
              float t_[VEC];                                                                    \
                                                                                                \
              r_[u].get (t_);                                                                   \
              pro_v (t_, h + (j0 + (long) u * TPR) * VEC);                                      \
              FV (j0 + (long) u * TPR, t_);                                                     \
            }                                                                                   \
      }                                                                                         \
    for (int e_ = lane; e_ < ns; e_ += TPR)                                                     \
      {                                                                                         \
        float t1_ = napkin_ld (x + col_of (e_));                                                \
                                                                                                \
        pro_s (t1_, col_of (e_));                                                               \
        FS (e_, t1_);                                                                           \
      }                                                                                         \
  } while (0)
/* FN (t) on every value a thread keeps in registers (MODE 0). */
#define NK_EACH(FN)                                                                             \
  do {                                                                                          \
    _Pragma ("unroll")                                                                          \
    for (int i = 0; i < NV; i++)                                                                \
      if (lane + (long) i * TPR < nb)                                                           \
        {                                                                                       \
          _Pragma ("unroll")                                                                    \
          for (int k = 0; k < VEC; k++)                                                         \
            FN (v[i][k]);                                                                       \
        }                                                                                       \
    _Pragma ("unroll")                                                                          \
    for (int i = 0; i < NS; i++)                                                                \
      if (lane + i * TPR < ns)                                                                  \
        FN (s[i]);                                                                              \
  } while (0)

extern "C" __global__ void __launch_bounds__ (NKP_THREADS, NKP_MINBLOCKS)
NKP_NAME (const NapkinArgs args)
{
  typedef NKP_T XT;
  typedef NKP_OT YT;
  typedef NKP_CT CT;                     /* the row cache of MODE 1 */
  constexpr int TPR = NKP_TPR, TEAMS = NKP_TEAMS, VEC = NKP_VEC, NV = NKP_NV, NS = NKP_NS, MODE = NKP_MODE, OP = NKP_OP;
  constexpr long COLS = NKP_L (NKP_COLS), ROWS = NKP_L (NKP_ROWS), LDX = NKP_L (NKP_LDX), LDY = NKP_L (NKP_LDY), RPB = NKP_L (NKP_RPB);
  constexpr bool X_ALIGNED = NKP_X_ALIGNED;
  constexpr float EPS = NKP_F (NKP_EPS), INV_COLS = 1.0f / (float) COLS;
  constexpr int NW = TPR > 32 ? TPR / 32 : 1;
  constexpr int UNROLL = NKP_THREADS > 512 ? 2 : 4;    /* loads in flight per thread in a sweep */
  const XT *__restrict__ X = NKP_XREF;
  YT *__restrict__ Y = NKP_YREF;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/OPERANDS"
#else
  const napkin_f16 *__restrict__ E0 = ((napkin_f16 *) args.p[1]);
  const napkin_f16 *__restrict__ E1 = ((napkin_f16 *) args.p[2]);
#endif /* napkin-fragment/OPERANDS */
  __shared__ float red_[TEAMS][NW][2];
  const int team = threadIdx.x / TPR, lane = threadIdx.x % TPR;
  const long first = (long) blockIdx.x * RPB;
  const long end = first + RPB < ROWS ? first + RPB : ROWS;

  /* over the team: shuffles, then one value per warp in shared memory */
  auto team_reduce = [&] (float &a, float &b, int kind)
    {
#pragma unroll
      for (int o = (TPR < 32 ? TPR : 32) / 2; o > 0; o >>= 1)
        {
          const float a2 = __shfl_xor_sync (0xffffffffu, a, o);
          const float b2 = kind >= 2 ? __shfl_xor_sync (0xffffffffu, b, o) : 0.0f;

          nk_combine (a, b, a2, b2, kind);
        }
      if constexpr (TPR > 32)
        {
          __syncthreads ();              /* red_ may still be read from the last reduction */
          if ((lane & 31) == 0)
            {
              red_[team][lane >> 5][0] = a;
              red_[team][lane >> 5][1] = b;
            }
          __syncthreads ();
          a = red_[team][0][0];
          b = red_[team][0][1];
#pragma unroll
          for (int w = 1; w < NW; w++)
            nk_combine (a, b, red_[team][w][0], red_[team][w][1], kind);
        }
    };

  for (long base = first; base < end; base += TEAMS)
    {
      /* a team past the block's last row works on its first one and stores nothing,
       * so that every thread meets every barrier */
      const long row = base + team;
      const bool live = row < end;
      const long rr = live ? row : first;
      const XT *__restrict__ x = X + rr * LDX;
      YT *__restrict__ y = Y + rr * LDY;
      /* h scalars before the first 16-byte boundary, nb vectors, then the tail from ts */
      const int h = X_ALIGNED ? 0 : (int) NAPKIN_MIN ((long) (((16 - ((unsigned long long) x & 15)) & 15) / sizeof (XT)), COLS);
      const long nb = (COLS - h) / VEC;
      const long ts = h + nb * VEC;
      const int ns = h + (int) (COLS - ts);
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/ROW_FLAGS"
#else
      constexpr bool A_E0 = true;
      constexpr bool A_E1 = true;
      constexpr bool A_Y = true;
#endif /* napkin-fragment/ROW_FLAGS */
      (void) y;
      auto col_of = [&] (int e) -> long { return e < h ? (long) e : ts + (e - h); };
      auto pro_v = [&] (float *v, long c) { (void) v; (void) c;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/PRO_V"
#else
#endif /* napkin-fragment/PRO_V */
        };
      auto pro_s = [&] (float &v, long c) { (void) v; (void) c;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/PRO_S"
#else
#endif /* napkin-fragment/PRO_S */
        };
      auto epi_v = [&] (float *v, long c) { (void) v; (void) c;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPI_V"
#else
        /* mul */
        {
          float o_[VEC];

          if (A_E0)
            nk_ldv<VEC> (E0 + c, o_, false);
          else
            nk_ldv_any<VEC> (E0 + c, E0 + COLS, o_);
          for (int k_ = 0; k_ < VEC; k_++)
            v[k_] = (v[k_] * o_[k_]);
        }
        /* add */
        {
          float o_[VEC];

          if (A_E1)
            nk_ldv<VEC> (E1 + c, o_, false);
          else
            nk_ldv_any<VEC> (E1 + c, E1 + COLS, o_);
          for (int k_ = 0; k_ < VEC; k_++)
            v[k_] = (v[k_] + o_[k_]);
        }
#endif /* napkin-fragment/EPI_V */
        };
      auto epi_s = [&] (float &v, long c) { (void) v; (void) c;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPI_S"
#else
        /* mul */
        v = (v * napkin_ld (E0 + c));
        /* add */
        v = (v + napkin_ld (E1 + c));
#endif /* napkin-fragment/EPI_S */
        };
      auto store_v = [&] (long j, float *v, bool cs)
        {
          const long c = h + j * VEC;

          epi_v (v, c);
          if (A_Y)
            nk_stv<VEC> (y + c, v, cs);
          else
            for (int k = 0; k < VEC; k++)
              napkin_st (y + c + k, v[k]);
        };
      auto store_s = [&] (int e, float v)
        {
          const long c = col_of (e);

          epi_s (v, c);
          napkin_st (y + c, v);
        };
      float a = OP == 0 || OP == 4 ? NAPKIN_NEG_INF : 0.0f, b = 0.0f;
      float st0 = 0.0f, st1 = 1.0f;      /* the row's statistics: max or mean, 1/Σ or 1/σ */
      /* the statistics of one pass over the row (MODE 1, 2, 3); K shifts layernorm's sums */
      float K = 0.0f;
      auto stat = [&] (float t)
        {
          if constexpr (OP == 1 && MODE == 2)
            {
              a += t - K;
              b += (t - K) * (t - K);
            }
          else if constexpr (OP == 1 || OP == 3 || OP == 5)
            a += t;
          else if constexpr (OP == 2)
            a += t * t;
          else if constexpr (OP == 4)
            a = fmaxf (a, t);
          else
            {
              if (t > a)
                {
                  b = a == NAPKIN_NEG_INF ? 0.0f : b * __expf (a - t);
                  a = t;
                }
              b += nk_exp_masked (t, a);
            }
        };
      auto stat_v = [&] (const float *t)
        {
          if constexpr (OP == 0)
            {
              /* one rescale per vector */
              float m = t[0];
#pragma unroll
              for (int k = 1; k < VEC; k++)
                m = fmaxf (m, t[k]);
              if (m > a)
                {
                  b = a == NAPKIN_NEG_INF ? 0.0f : b * __expf (a - m);
                  a = m;
                }
#pragma unroll
              for (int k = 0; k < VEC; k++)
                b += nk_exp_masked (t[k], a);
            }
          else
            {
#pragma unroll
              for (int k = 0; k < VEC; k++)
                stat (t[k]);
            }
        };
      constexpr int KIND = OP == 0 ? 2 : OP == 4 ? 1 : OP == 1 && MODE == 2 ? 3 : 0;
      auto fin = [&] (float t) -> float
        {
          if constexpr (OP == 0)
            return nk_exp_masked (t, st0) * st1;
          else if constexpr (OP == 1)
            return (t - st0) * st1;
          else
            return t * st1;
        };

      if constexpr (MODE == 0)
        {
          float v[NV > 0 ? NV : 1][VEC];
          float s[NS > 0 ? NS : 1];

#pragma unroll
          for (int i = 0; i < NV; i++)
            if (lane + (long) i * TPR < nb)
              {
                nk_ldv<VEC> (x + h + (lane + (long) i * TPR) * VEC, v[i], false);
                pro_v (v[i], h + (lane + (long) i * TPR) * VEC);
              }
#pragma unroll
          for (int i = 0; i < NS; i++)
            if (lane + i * TPR < ns)
              {
                s[i] = napkin_ld (x + col_of (lane + i * TPR));
                pro_s (s[i], col_of (lane + i * TPR));
              }
          if constexpr (OP == 0)
            {
              auto f_max = [&] (float &t) { a = fmaxf (a, t); };
              auto f_exp = [&] (float &t) { t = nk_exp_masked (t, st0); a += t; };
              auto f_scale = [&] (float &t) { t *= st1; };

              NK_EACH (f_max);
              team_reduce (a, b, 1);
              st0 = a;
              a = 0.0f;
              NK_EACH (f_exp);
              team_reduce (a, b, 0);
              st1 = nk_inv_sum (a);
              NK_EACH (f_scale);
            }
          else if constexpr (OP == 1)
            {
              auto f_sum = [&] (float &t) { a += t; };
              auto f_var = [&] (float &t) { a += (t - st0) * (t - st0); };
              auto f_norm = [&] (float &t) { t = (t - st0) * st1; };

              NK_EACH (f_sum);
              team_reduce (a, b, 0);
              st0 = a * INV_COLS;
              a = 0.0f;
              NK_EACH (f_var);
              team_reduce (a, b, 0);
              st1 = rsqrtf (a * INV_COLS + EPS);
              NK_EACH (f_norm);
            }
          else
            {
              auto f_sq = [&] (float &t) { a += t * t; };
              auto f_scale = [&] (float &t) { t *= st1; };

              NK_EACH (f_sq);
              team_reduce (a, b, 0);
              st1 = rsqrtf (a * INV_COLS + EPS);
              NK_EACH (f_scale);
            }
          if (live)
            {
#pragma unroll
              for (int i = 0; i < NV; i++)
                if (lane + (long) i * TPR < nb)
                  store_v (lane + (long) i * TPR, v[i], false);
#pragma unroll
              for (int i = 0; i < NS; i++)
                if (lane + i * TPR < ns)
                  store_s (lane + i * TPR, s[i]);
            }
        }
      else if constexpr (MODE == 1)
        {
          /* the row in shared memory: vector j at j·VEC, the scalars after the vectors */
          extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
          unsigned char *const smem_ = smem_raw_u8_;
          CT *const cache = (CT *) smem_;
          CT *const cache_s = cache + COLS / VEC * VEC;

          auto keep_v = [&] (long j, float *t) { nk_stv<VEC> (cache + j * VEC, t, false); stat_v (t); };
          auto keep_s = [&] (int e, float t) { napkin_st (cache_s + e, t); stat (t); };

          NK_SWEEP (false, keep_v, keep_s);
          team_reduce (a, b, KIND);
          if constexpr (OP == 0)
            {
              st0 = a;
              st1 = nk_inv_sum (b);
            }
          else if constexpr (OP == 1)
            {
              st0 = a * INV_COLS;
              a = 0.0f;
              for (long j = lane; j < nb; j += TPR)
                {
                  float t[VEC];

                  nk_ldv<VEC> (cache + j * VEC, t, false);
#pragma unroll
                  for (int k = 0; k < VEC; k++)
                    a += (t[k] - st0) * (t[k] - st0);
                }
              for (int e = lane; e < ns; e += TPR)
                a += (napkin_ld (cache_s + e) - st0) * (napkin_ld (cache_s + e) - st0);
              team_reduce (a, b, 0);
              st1 = rsqrtf (a * INV_COLS + EPS);
            }
          else
            st1 = rsqrtf (a * INV_COLS + EPS);
          if (live)
            {
#pragma unroll 4
              for (long j = lane; j < nb; j += TPR)
                {
                  float t[VEC];

                  nk_ldv<VEC> (cache + j * VEC, t, false);
#pragma unroll
                  for (int k = 0; k < VEC; k++)
                    t[k] = fin (t[k]);
                  store_v (j, t, false);
                }
              for (int e = lane; e < ns; e += TPR)
                store_s (e, fin (napkin_ld (cache_s + e)));
            }
          __syncthreads ();              /* the next row overwrites the cache */
        }
      else if constexpr (MODE == 2)
        {
          if constexpr (OP == 1)
            {
              K = napkin_ld (x);
              pro_s (K, 0);
            }
          auto stat_jv = [&] (long j, float *t) { (void) j; stat_v (t); };
          auto stat_js = [&] (int e, float t) { (void) e; stat (t); };
          auto out_v = [&] (long j, float *t)
            {
#pragma unroll
              for (int k = 0; k < VEC; k++)
                t[k] = fin (t[k]);
              store_v (j, t, true);
            };
          auto out_s = [&] (int e, float t) { store_s (e, fin (t)); };

          NK_SWEEP (false, stat_jv, stat_js);
          team_reduce (a, b, KIND);
          if constexpr (OP == 0)
            {
              st0 = a;
              st1 = nk_inv_sum (b);
            }
          else if constexpr (OP == 1)
            {
              const float mean = a * INV_COLS;

              st0 = K + mean;
              st1 = rsqrtf (fmaxf (b * INV_COLS - mean * mean, 0.0f) + EPS);
            }
          else
            st1 = rsqrtf (a * INV_COLS + EPS);
          if (live)
            NK_SWEEP (true, out_v, out_s);
        }
      else
        {
          auto stat_jv = [&] (long j, float *t) { (void) j; stat_v (t); };
          auto stat_js = [&] (int e, float t) { (void) e; stat (t); };

          NK_SWEEP (false, stat_jv, stat_js);
          team_reduce (a, b, KIND);
          if (live && lane == 0)
            {
              float r = OP == 5 ? a * INV_COLS : a;

              epi_s (r, 0);
              napkin_st (Y + rr * LDY, r);
            }
        }
    }
}
#undef NK_SWEEP
#undef NK_EACH
