/* Skeleton: FlashAttention-style fused attention, O = softmax(α·Q·Kᵀ)·V over the key
 * axis, fp16/bf16 in, fp32 accumulate. One thread block per group of BQ queries of one
 * (batch, head) — the region's parallel groups; keys and values streamed in chunks of
 * BKV (the stream mark) through two shared-memory buffers filled by cp.async; each warp
 * owns 16 query rows, keeps its Q fragments, the scores, the running max and sum and
 * the output accumulator in registers, and rescales with the online softmax (running
 * max m, correction exp(m − m'), running sum l). mma.sync m16n8k16 for both products;
 * the scores become the second product's A fragments without leaving registers.
 * Napkin fills the NKP_ parameters. Requires Q % BQ == KV % BKV == 0 and D ∈ {64, 128}. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_BQ 128
#define NKP_BKV 64
#define NKP_D 128
#define NKP_NQ 4096
#define NKP_NKV 4096
#define NKP_ALPHA 8.838834765e-02
#define NKP_T napkin_f16
#define NKP_OT napkin_f16
#define NKP_MMA f16
#define NKP_QS 0
#define NKP_KS 1
#define NKP_VS 2
#define NKP_OS 3
#endif /* NAPKIN_GENERATED */
#define F_BQ NKP_BQ
#define F_BKV NKP_BKV
#define F_D NKP_D
#define F_THREADS (F_BQ / 16 * 32)
#define F_S (F_D + 8)   /* padded row stride (halfs) */

static __device__ __forceinline__ unsigned
NKP_CAT (NKP_NAME, _pack) (float lo, float hi)
{
  unsigned r;
  asm ("cvt.rn." NKP_STR (NKP_MMA) "x2.f32 %0, %1, %2;" : "=r" (r) : "f" (hi), "f" (lo));
  return r;
}

extern "C" __global__ void __launch_bounds__ (F_THREADS)
NKP_NAME (const NapkinArgs args)
{
  const NKP_T *__restrict__ Qg = (const NKP_T *) args.p[NKP_QS];
  const NKP_T *__restrict__ Kg = (const NKP_T *) args.p[NKP_KS];
  const NKP_T *__restrict__ Vg = (const NKP_T *) args.p[NKP_VS];
  NKP_OT *__restrict__ Og = (NKP_OT *) args.p[NKP_OS];
  /* one declaration for every kernel of a module: extern shared arrays must agree */
  extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
  unsigned short *const smem_ = (unsigned short *) smem_raw_u8_;
  unsigned short *Qs = smem_;                       /* [BQ][S] */
  unsigned short *Ks = Qs + F_BQ * F_S;             /* [2][BKV][S] */
  unsigned short *Vs = Ks + 2 * F_BKV * F_S;        /* [2][BKV][S] */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long q_tiles = NKP_L (NKP_NQ) / F_BQ;
  const long bh = blockIdx.x / q_tiles, q0 = (blockIdx.x % q_tiles) * F_BQ;
  const NKP_T *Qb = Qg + (bh * NKP_L (NKP_NQ) + q0) * F_D;
  const NKP_T *Kb = Kg + bh * NKP_L (NKP_NKV) * F_D;
  const NKP_T *Vb = Vg + bh * NKP_L (NKP_NKV) * F_D;
  /* α·log2(e): exponentials as exp2. */
  const float scale = NKP_F (NKP_ALPHA) * 1.4426950408889634f;

#define F_COPY(dst, src, rows)                                                                 \
  for (int c = tid; c < (rows) * F_D / 8; c += F_THREADS)                                      \
    {                                                                                          \
      const int r = c / (F_D / 8), q = (c % (F_D / 8)) * 8;                                    \
      asm volatile ("cp.async.cg.shared.global [%0], [%1], 16;" ::                             \
                    "r" (napkin_smem_addr ((dst) + r * F_S + q)), "l" ((src) + (long) r * F_D + q)); \
    }

  F_COPY (Qs, Qb, F_BQ);
  F_COPY (Ks, Kb, F_BKV);
  F_COPY (Vs, Vb, F_BKV);
  asm volatile ("cp.async.commit_group;");

  unsigned qf[F_D / 16][4];
  float o[F_D / 8][4];
  float m_row[2] = { -1e30f, -1e30f }, l_row[2] = { 0.0f, 0.0f };

  for (int j = 0; j < F_D / 8; j++)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

  const int chunks = NKP_NKV / F_BKV;

  for (int kc = 0; kc < chunks; kc++)
    {
      const int buf = kc & 1;

      /* Prefetch the next chunk into the other buffer. */
      if (kc + 1 < chunks)
        {
          F_COPY (Ks + (buf ^ 1) * F_BKV * F_S, Kb + (long) (kc + 1) * F_BKV * F_D, F_BKV);
          F_COPY (Vs + (buf ^ 1) * F_BKV * F_S, Vb + (long) (kc + 1) * F_BKV * F_D, F_BKV);
        }
      asm volatile ("cp.async.commit_group;");
      asm volatile ("cp.async.wait_group 1;");
      __syncthreads ();

      if (kc == 0)
        for (int kk = 0; kk < F_D / 16; kk++)
          {
            const unsigned short *p = Qs + (warp * 16 + (lane & 15)) * F_S + kk * 16 + (lane >> 4) * 8;

            asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                          : "=r" (qf[kk][0]), "=r" (qf[kk][1]), "=r" (qf[kk][2]), "=r" (qf[kk][3])
                          : "r" (napkin_smem_addr (p)));
          }

      const unsigned short *ks = Ks + buf * F_BKV * F_S;
      const unsigned short *vs = Vs + buf * F_BKV * F_S;
      float s[F_BKV / 8][4];

      /* S = Q·Kᵀ: K rows are the B operand's columns, so no transpose. */
#pragma unroll
      for (int j = 0; j < F_BKV / 8; j++)
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < F_D / 16; kk++)
#pragma unroll
        for (int j = 0; j < F_BKV / 8; j += 2)
          {
            unsigned b[4];
            const unsigned short *p = ks + (j * 8 + (lane & 7) + (lane >> 4) * 8) * F_S + kk * 16 + ((lane >> 3) & 1) * 8;

            asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                          : "=r" (b[0]), "=r" (b[1]), "=r" (b[2]), "=r" (b[3]) : "r" (napkin_smem_addr (p)));
            asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32." NKP_STR (NKP_MMA) "." NKP_STR (NKP_MMA) ".f32 "
                          "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                          : "+f" (s[j][0]), "+f" (s[j][1]), "+f" (s[j][2]), "+f" (s[j][3])
                          : "r" (qf[kk][0]), "r" (qf[kk][1]), "r" (qf[kk][2]), "r" (qf[kk][3]), "r" (b[0]), "r" (b[1]));
            asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32." NKP_STR (NKP_MMA) "." NKP_STR (NKP_MMA) ".f32 "
                          "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                          : "+f" (s[j + 1][0]), "+f" (s[j + 1][1]), "+f" (s[j + 1][2]), "+f" (s[j + 1][3])
                          : "r" (qf[kk][0]), "r" (qf[kk][1]), "r" (qf[kk][2]), "r" (qf[kk][3]), "r" (b[2]), "r" (b[3]));
          }

      /* Online softmax: rows lane/4 (values 0, 1) and lane/4 + 8 (values 2, 3). */
      float mx[2] = { m_row[0], m_row[1] };

#pragma unroll
      for (int j = 0; j < F_BKV / 8; j++)
        {
          mx[0] = fmaxf (mx[0], fmaxf (s[j][0], s[j][1]) * scale);
          mx[1] = fmaxf (mx[1], fmaxf (s[j][2], s[j][3]) * scale);
        }
#pragma unroll
      for (int r = 0; r < 2; r++)
        {
          mx[r] = fmaxf (mx[r], __shfl_xor_sync (0xffffffffu, mx[r], 1));
          mx[r] = fmaxf (mx[r], __shfl_xor_sync (0xffffffffu, mx[r], 2));
        }
      const float c0 = exp2f (m_row[0] - mx[0]), c1 = exp2f (m_row[1] - mx[1]);

      m_row[0] = mx[0];
      m_row[1] = mx[1];
      l_row[0] *= c0;
      l_row[1] *= c1;
#pragma unroll
      for (int j = 0; j < F_D / 8; j++)
        {
          o[j][0] *= c0;
          o[j][1] *= c0;
          o[j][2] *= c1;
          o[j][3] *= c1;
        }
#pragma unroll
      for (int j = 0; j < F_BKV / 8; j++)
        {
          s[j][0] = exp2f (s[j][0] * scale - mx[0]);
          s[j][1] = exp2f (s[j][1] * scale - mx[0]);
          s[j][2] = exp2f (s[j][2] * scale - mx[1]);
          s[j][3] = exp2f (s[j][3] * scale - mx[1]);
          l_row[0] += s[j][0] + s[j][1];
          l_row[1] += s[j][2] + s[j][3];
        }

      /* O += P·V: P's accumulators are the A fragments; V (rows = keys) needs the transpose. */
#pragma unroll
      for (int t = 0; t < F_BKV / 16; t++)
        {
          const unsigned a0 = NKP_CAT (NKP_NAME, _pack) (s[2 * t][0], s[2 * t][1]);
          const unsigned a1 = NKP_CAT (NKP_NAME, _pack) (s[2 * t][2], s[2 * t][3]);
          const unsigned a2 = NKP_CAT (NKP_NAME, _pack) (s[2 * t + 1][0], s[2 * t + 1][1]);
          const unsigned a3 = NKP_CAT (NKP_NAME, _pack) (s[2 * t + 1][2], s[2 * t + 1][3]);

#pragma unroll
          for (int j = 0; j < F_D / 8; j += 2)
            {
              unsigned b[4];
              const unsigned short *p = vs + (t * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * F_S + j * 8 + (lane >> 4) * 8;

              asm volatile ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                            : "=r" (b[0]), "=r" (b[1]), "=r" (b[2]), "=r" (b[3]) : "r" (napkin_smem_addr (p)));
              asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32." NKP_STR (NKP_MMA) "." NKP_STR (NKP_MMA) ".f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f" (o[j][0]), "+f" (o[j][1]), "+f" (o[j][2]), "+f" (o[j][3])
                            : "r" (a0), "r" (a1), "r" (a2), "r" (a3), "r" (b[0]), "r" (b[1]));
              asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32." NKP_STR (NKP_MMA) "." NKP_STR (NKP_MMA) ".f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f" (o[j + 1][0]), "+f" (o[j + 1][1]), "+f" (o[j + 1][2]), "+f" (o[j + 1][3])
                            : "r" (a0), "r" (a1), "r" (a2), "r" (a3), "r" (b[2]), "r" (b[3]));
            }
        }
      __syncthreads ();   /* this buffer is refilled two chunks from now */
    }
  asm volatile ("cp.async.wait_group 0;");

  /* The running sums were kept per thread: add the quad's, then divide. */
#pragma unroll
  for (int r = 0; r < 2; r++)
    {
      l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 1);
      l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 2);
    }
  {
    const long row = q0 + warp * 16 + (lane >> 2);
    NKP_OT *ob = Og + (bh * NKP_L (NKP_NQ) + row) * F_D;
    const float i0 = 1.0f / l_row[0], i1 = 1.0f / l_row[1];

#pragma unroll
    for (int j = 0; j < F_D / 8; j++)
      {
        const int col = j * 8 + (lane & 3) * 2;

        napkin_st (&ob[col], o[j][0] * i0);
        napkin_st (&ob[col + 1], o[j][1] * i0);
        napkin_st (&ob[8 * F_D + col], o[j][2] * i1);
        napkin_st (&ob[8 * F_D + col + 1], o[j][3] * i1);
      }
  }
#undef F_COPY
}
#undef F_BQ
#undef F_BKV
#undef F_D
#undef F_THREADS
#undef F_S
