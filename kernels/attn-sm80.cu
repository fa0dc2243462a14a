/* Attention on mma.sync (sm_80 and later), the kernel plan's general attention kernel for
 * GPUs without wgmma (docs/plan.md, "Attention kernels"): O = softmax (α·Q·Kᵀ, masked)·V,
 * fp16/bf16 in, fp32 accumulate. One block computes ROWS query rows (GT heads of a group ×
 * BQ queries), one warp per 16 rows; keys and values stream in chunks of BKV through two
 * shared-memory buffers filled by cp.async (one where two do not fit: STAGES 1, each
 * chunk loaded once the last is consumed), rows past NKV or the head dimension zero
 * filled (cp.async with a zero source size), any layout with d contiguous. The scores of
 * keys the mask hides or past NKV are −∞ before the online softmax; P stays in registers
 * as the second product's A fragments. Q's fragments stay in registers where the plan
 * finds room, else are read from shared memory each chunk. Blocks of few rows (decoding) keep 4 warps for
 * the copies; only the first WARPS compute. A split block writes its normalised partial
 * output and log-sum-exp for the combine kernel. Score operands (SCORES: biases added,
 * keep flags; docs/plan.md, "Score operands"): each computing warp copies its rows of the
 * next chunk's operands into its own staging area with cp.async while it computes this
 * one, and applies them to the scores before the mask and the softmax; with SC_SCAN the
 * block first reads a padding mask's row and computes only the chunks between the first
 * and the last key it keeps. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "attn-prims.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_ROWS 4
#define NKP_BQ 1
#define NKP_WARPS 1
#define NKP_THREADS 128
#define NKP_Q_REGS 1
#define NKP_BKV 128
#define NKP_D 128
#define NKP_DP 128
#define NKP_NQ 1
#define NKP_NKV 32768
#define NKP_GROUP 4
#define NKP_GROUP_TILE 4
#define NKP_KV_BATCH 8
#define NKP_SPLIT 13
#define NKP_CPS 20
#define NKP_MASK_LO 0
#define NKP_MASK_HI 1
#define NKP_LEFT 0
#define NKP_RIGHT 0
#define NKP_OFFSET 32767
#define NKP_REVERSE 1
#define NKP_Q_GROUP 128
#define NKP_Q_ROW 128
#define NKP_K_ROW 128
#define NKP_O_GROUP 128
#define NKP_O_ROW 128
#define NKP_ALPHA 8.838834765e-02
#define NKP_T napkin_f16
#define NKP_OT napkin_f16
#define NKP_MMA f16
#define NKP_QREF ((napkin_f16 *) args.p[0])
#define NKP_KREF ((napkin_f16 *) args.p[1])
#define NKP_VREF ((napkin_f16 *) args.p[2])
#define NKP_OREF ((napkin_f16 *) args.p[3])
#define NKP_PREF ((float *) args.p[4])
#define NKP_STAGES 2
#define NKP_N_SC 1
#define NKP_SC_WARP 144
#define NKP_SC_SCAN 1
#endif /* NAPKIN_GENERATED */
/* the score operands, one X (…) each (NKP_SCORES below): the printer's list */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/SCORES"
#else
#define NKP_SCORES(X) X (sc0_base, 1, signed char, 1, 16, 1, 144, 0, 0L, 0L, 0.0f, ((const signed char *) args.p[5]), 1, 0u)
#endif /* napkin-fragment/SCORES */
#define F_ROWS NKP_ROWS
#define F_BQ NKP_L (NKP_BQ)
#define F_WARPS NKP_WARPS          /* warps that compute: 16 rows each */
#define F_THREADS NKP_THREADS      /* at least 4 warps copy (decoding: a block of few rows) */
#define F_BKV NKP_BKV
#define F_ST NKP_STAGES            /* K/V buffers: 2, or 1 */
#define F_D NKP_D
#define F_DP NKP_DP                 /* D rounded up to 16 */
#define F_S (F_DP + 8)            /* padded row stride (halfs) */
#define F_NQ NKP_L (NKP_NQ)
#define F_NKV NKP_L (NKP_NKV)
#define F_G NKP_L (NKP_GROUP)
#define F_GT NKP_L (NKP_GROUP_TILE)
#define F_QREG NKP_Q_REGS           /* Q's fragments kept in registers */
#define F_SPLIT NKP_SPLIT
#define F_CPS NKP_L (NKP_CPS)
#define F_MASK_LO NKP_MASK_LO
#define F_MASK_HI NKP_MASK_HI
#define F_LEFT NKP_L (NKP_LEFT)
#define F_RIGHT NKP_L (NKP_RIGHT)
#define F_OFFSET NKP_L (NKP_OFFSET)
#define F_REVERSE NKP_REVERSE
#define F_QTILES ((F_NQ + F_BQ - 1) / F_BQ)
#define F_GTILES ((F_G + F_GT - 1) / F_GT)
#define F_QGS NKP_L (NKP_Q_GROUP)
#define F_QRS NKP_L (NKP_Q_ROW)
#define F_KRS NKP_L (NKP_K_ROW)
#define F_OGS NKP_L (NKP_O_GROUP)
#define F_ORS NKP_L (NKP_O_ROW)
#define F_ROWS_ALL (F_NQ * F_G * NKP_L (NKP_KV_BATCH))
/* a hidden score: −∞ once scaled (α > 0 in any real attention) */
#define F_HIDDEN (NKP_F (NKP_ALPHA) > 0.0f ? NAPKIN_NEG_INF : -NAPKIN_NEG_INF)
/* score operands, as in attn-sm90.cu: how many, a computing warp's staging bytes, the scan */
#define F_NSC NKP_N_SC
#define F_SC_WARP NKP_SC_WARP
#define F_SCAN NKP_SC_SCAN

extern "C" __global__ void __launch_bounds__ (F_THREADS)
NKP_NAME (const NapkinArgs args)
{
  const NKP_T *__restrict__ Qg = NKP_QREF;
  const NKP_T *__restrict__ Kg = NKP_KREF;
  const NKP_T *__restrict__ Vg = NKP_VREF;
#if F_SPLIT > 1
  float *__restrict__ part = NKP_PREF;
#else
  NKP_OT *__restrict__ Og = NKP_OREF;
#endif
  extern __shared__ __align__ (16) unsigned short smem_[];
  unsigned short *Qs = smem_;                       /* [WARPS·16][S] */
  unsigned short *Ks = Qs + F_WARPS * 16 * F_S;     /* [ST][BKV][S] */
  unsigned short *Vs = Ks + F_ST * F_BKV * F_S;     /* [ST][BKV][S] */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  long blk = blockIdx.x;
  const long qt_ = blk % F_QTILES;
  const long qt = F_REVERSE ? F_QTILES - 1 - qt_ : qt_;
  blk /= F_QTILES;
  const long g0 = (blk % F_GTILES) * F_GT;
  blk /= F_GTILES;
  const long split = blk % F_SPLIT;
  blk /= F_SPLIT;
  long q_base = 0, o_base = 0, k_base = 0, kv_flat = 0;
  /* the score operands' offsets (those the printer lists) */
#if NKP_N_SC > 0
  long sc0_base = 0;
#endif
#if NKP_N_SC > 1
  long sc1_base = 0;
#endif
#if NKP_N_SC > 2
  long sc2_base = 0;
#endif
#if NKP_N_SC > 3
  long sc3_base = 0;
#endif
  /* [WARPS][SC_WARP] score operands, then the scan's first and last key */
  const unsigned sc_s = napkin_smem_addr (Vs + F_ST * F_BKV * F_S);
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
  {
    const long i_ = blk % 8L;

    blk /= 8L;
    q_base += i_ * 512L;
    o_base += i_ * 512L;
    k_base += i_ * 4194304L;
    kv_flat += i_ * 1L;
  }
  {
    const long i_ = blk % 1L;

    blk /= 1L;
    q_base += i_ * 4096L;
    o_base += i_ * 4096L;
    k_base += i_ * 33554432L;
    kv_flat += i_ * 8L;
  }
#endif /* napkin-fragment/LEAD */
  (void) o_base;
  (void) kv_flat;
  (void) split;
  (void) sc_s;
  const long q0 = qt * F_BQ, q1 = NAPKIN_MIN (q0 + F_BQ, F_NQ);
  (void) q1;
  long lo = 0, hi = F_NKV, full_lo = 0, full_hi = F_NKV;

#if F_MASK_LO
  lo = q0 + F_OFFSET - F_LEFT;
  lo = lo > 0 ? lo : 0;
  full_lo = q1 - 1 + F_OFFSET - F_LEFT;
#endif
#if F_MASK_HI
  hi = NAPKIN_MIN (hi, q1 + F_OFFSET + F_RIGHT);
  full_hi = NAPKIN_MIN (full_hi, q0 + F_OFFSET + F_RIGHT + 1);
#endif
#if F_SCAN
  /* a padding mask shared by the block's rows: only the keys from its first kept one to
   * its last (none: no chunk, rows of zeros) */
  {
    int *kr_ = (int *) ((unsigned char *) smem_ + (sc_s + F_WARPS * F_SC_WARP - napkin_smem_addr (smem_)));

#define F_SC_SCAN_ONE(base, KIND, T, ES, VEC, NR, PITCH, OFF, GS, RS, COEF, REF, SCAN, HID)             \
    if (SCAN)                                                                                          \
      napkin_attn_sc_scan<ES, VEC, HID> ((const unsigned char *) (REF) + ((base) + g0 * (GS)) * (ES), F_NKV, \
                                         first, last, tid, F_THREADS);
    napkin_attn_sc_range (kr_, &lo, &hi, tid, [&] (int *first, int *last) { NKP_SCORES (F_SC_SCAN_ONE) });
#undef F_SC_SCAN_ONE
  }
#endif
  long c_first = lo / F_BKV, c_end = hi > lo ? (hi + F_BKV - 1) / F_BKV : c_first;
#if F_SPLIT > 1
  /* split s computes chunks s·CPS … of those the queries see (a window at the end of a
   * long cache: all the splits share its chunks) */
  {
    const long seen_ = c_first;

    c_first = seen_ + split * F_CPS;
    c_end = NAPKIN_MIN (c_end, seen_ + (split + 1) * F_CPS);
  }
#endif
  const int n_chunks = c_end > c_first ? (int) (c_end - c_first) : 0;
  const long fv_lo = full_lo > 0 ? (full_lo + F_BKV - 1) / F_BKV : 0;
  const long fv_hi = full_hi > 0 ? full_hi / F_BKV : 0;
  /* α·log2(e): exponentials as exp2 */
  const float scale = NKP_F (NKP_ALPHA) * 1.4426950408889634f;

  /* Rows of 8-element (16-byte) pieces; pieces past D, and rows for which `ok` fails,
   * are zero. */
#define F_COPY(dst, rows, ok, src_row)                                                            \
  for (int c_ = tid; c_ < (rows) * (F_DP / 8); c_ += F_THREADS)                                   \
    {                                                                                             \
      const int r = c_ / (F_DP / 8), e_ = (c_ % (F_DP / 8)) * 8;                                  \
      const bool v_ = (ok) && e_ < F_D;                                                           \
      const NKP_T *p_ = v_ ? (src_row) + e_ : Qg;                                                   \
      asm volatile ("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::                            \
                    "r" (napkin_smem_addr ((dst) + r * F_S + e_)), "l" (p_), "r" (v_ ? 16 : 0));  \
    }
#define F_Q_ROW(r) (Qg + q_base + (g0 + (r) / F_BQ) * F_QGS + (q0 + (r) % F_BQ) * F_QRS)
#define F_Q_OK(r) ((r) < F_ROWS && g0 + (r) / F_BQ < F_G && q0 + (r) % F_BQ < F_NQ)
#define F_KV_OK(kc, r) ((kc) * F_BKV + (r) < F_NKV)
#define F_KV_ROW(base, kc, r) ((base) + k_base + ((kc) * F_BKV + (r)) * F_KRS)

#if F_NSC > 0
  /* Score operands: a computing warp's rows of chunk kc into its staging area (cp.async,
   * committed with the next group), and their values applied to the scores once they are
   * in: a bias times its factor (in units of the raw score) added, hidden keys to −∞. */
  const unsigned sc_w = sc_s + warp * F_SC_WARP;
#define F_SC_COPY_ONE(base, KIND, T, ES, VEC, NR, PITCH, OFF, GS, RS, COEF, REF, SCAN, HID)             \
  napkin_attn_sc_copy<NR, F_BKV * (ES), VEC, PITCH> (                                                  \
    sc_w + (OFF), (const unsigned char *) (REF),                                                       \
    [&] (int i_) -> long {                                                                             \
      return napkin_attn_sc_row<NR, ES> (base, GS, RS, g0, q0, warp * 16 + i_, F_BQ, F_ROWS, F_G, F_NQ);      \
    },                                                                                                 \
    sc_kc_ * F_BKV * (ES), F_NKV * (ES), lane);
#define F_SC_COPY(kc_)                                                                                   \
  do                                                                                                     \
    if (warp < F_WARPS)                                                                                  \
      {                                                                                                  \
        const long sc_kc_ = (kc_);                                                                       \
        NKP_SCORES (F_SC_COPY_ONE)                                                                       \
      }                                                                                                  \
  while (0)
#define F_SC_APPLY_ONE(base, KIND, T, ES, VEC, NR, PITCH, OFF, GS, RS, COEF, REF, SCAN, HID)            \
  _Pragma ("unroll")                                                                                     \
  for (int j = 0; j < F_BKV / 8; j++)                                                                    \
    {                                                                                                    \
      float v_[4];                                                                                       \
      napkin_attn_sc_get<NR, PITCH> (sc_w + (OFF), j, lane, v_, (const T *) 0);                          \
      _Pragma ("unroll")                                                                                 \
      for (int e = 0; e < 4; e++)                                                                        \
        s[j][e] = (KIND) == 0 ? fmaf (v_[e], COEF, s[j][e]) : v_[e] != 0.0f ? s[j][e] : F_HIDDEN;        \
    }
#else
#define F_SC_COPY(kc_) do { } while (0)
#endif

  if (n_chunks > 0)
    {
      F_COPY (Qs, F_WARPS * 16, F_Q_OK (r), F_Q_ROW (r));
      F_COPY (Ks, F_BKV, F_KV_OK (c_first, r), F_KV_ROW (Kg, c_first, r));
      F_COPY (Vs, F_BKV, F_KV_OK (c_first, r), F_KV_ROW (Vg, c_first, r));
      F_SC_COPY (c_first);
    }
  asm volatile ("cp.async.commit_group;");

#if F_QREG
  unsigned qf[F_DP / 16][4];
#endif
  float o[F_DP / 8][4];
  float m_row[2] = { -1e30f, -1e30f }, l_row[2] = { 0.0f, 0.0f };
  const int r0 = warp * 16 + (lane >> 2), r1 = r0 + 8;
  const long qi0 = q0 + r0 % F_BQ, qi1 = q0 + r1 % F_BQ;
  int kmin0 = 0, kmin1 = 0, kmax0 = (int) F_NKV, kmax1 = (int) F_NKV;

#if F_MASK_LO
  kmin0 = (int) (qi0 + F_OFFSET - F_LEFT);
  kmin1 = (int) (qi1 + F_OFFSET - F_LEFT);
#endif
#if F_MASK_HI
  kmax0 = (int) NAPKIN_MIN (F_NKV, qi0 + F_OFFSET + F_RIGHT + 1);
  kmax1 = (int) NAPKIN_MIN (F_NKV, qi1 + F_OFFSET + F_RIGHT + 1);
#endif
  (void) qi0;
  (void) qi1;
#pragma unroll
  for (int j = 0; j < F_DP / 8; j++)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

  for (int it = 0; it < n_chunks; it++)
    {
      const long kc = c_first + it;
#if F_ST == 2
      const int buf = it & 1;

      /* Prefetch the next chunk into the other buffer. */
      if (it + 1 < n_chunks)
        {
          F_COPY (Ks + (buf ^ 1) * F_BKV * F_S, F_BKV, F_KV_OK (kc + 1, r), F_KV_ROW (Kg, kc + 1, r));
          F_COPY (Vs + (buf ^ 1) * F_BKV * F_S, F_BKV, F_KV_OK (kc + 1, r), F_KV_ROW (Vg, kc + 1, r));
        }
      asm volatile ("cp.async.commit_group;");
      asm volatile ("cp.async.wait_group 1;");
#else
      const int buf = 0;

      /* One buffer: the last chunk is consumed (the barrier ending the last step). */
      if (it > 0)
        {
          F_COPY (Ks, F_BKV, F_KV_OK (kc, r), F_KV_ROW (Kg, kc, r));
          F_COPY (Vs, F_BKV, F_KV_OK (kc, r), F_KV_ROW (Vg, kc, r));
        }
      asm volatile ("cp.async.commit_group;");
      asm volatile ("cp.async.wait_group 0;");
#endif
      __syncthreads ();
      if (warp >= F_WARPS)
        {
          __syncthreads ();
          continue;
        }

#if F_QREG
      if (it == 0)
        for (int kk = 0; kk < F_DP / 16; kk++)
          {
            const unsigned short *p = Qs + (warp * 16 + (lane & 15)) * F_S + kk * 16 + (lane >> 4) * 8;

            asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                          : "=r" (qf[kk][0]), "=r" (qf[kk][1]), "=r" (qf[kk][2]), "=r" (qf[kk][3])
                          : "r" (napkin_smem_addr (p)));
          }
#endif

      const unsigned short *ks = Ks + buf * F_BKV * F_S;
      const unsigned short *vs = Vs + buf * F_BKV * F_S;
      float s[F_BKV / 8][4];

      /* S = Q·Kᵀ: K rows are the B operand's columns, so no transpose. */
#pragma unroll
      for (int j = 0; j < F_BKV / 8; j++)
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < F_DP / 16; kk++)
        {
#if F_QREG
          const unsigned a0 = qf[kk][0], a1 = qf[kk][1], a2 = qf[kk][2], a3 = qf[kk][3];
#else
          unsigned a0, a1, a2, a3;
          {
            const unsigned short *p = Qs + (warp * 16 + (lane & 15)) * F_S + kk * 16 + (lane >> 4) * 8;

            asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                          : "=r" (a0), "=r" (a1), "=r" (a2), "=r" (a3) : "r" (napkin_smem_addr (p)));
          }
#endif
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
                            : "r" (a0), "r" (a1), "r" (a2), "r" (a3), "r" (b[0]), "r" (b[1]));
              asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32." NKP_STR (NKP_MMA) "." NKP_STR (NKP_MMA) ".f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f" (s[j + 1][0]), "+f" (s[j + 1][1]), "+f" (s[j + 1][2]), "+f" (s[j + 1][3])
                            : "r" (a0), "r" (a1), "r" (a2), "r" (a3), "r" (b[2]), "r" (b[3]));
            }
        }

#if F_NSC > 0
      /* this chunk's operands (in since the wait above), then the next chunk's copy into
       * the same area once every lane has read it */
      NKP_SCORES (F_SC_APPLY_ONE)
      __syncwarp ();
      if (it + 1 < n_chunks)
        {
          F_SC_COPY (kc + 1);
          asm volatile ("cp.async.commit_group;");
        }
#endif

      /* Keys the rows do not see (or past NKV) to −∞, on chunks not every row sees whole. */
      if (kc < fv_lo || kc >= fv_hi)
        {
          const int j0 = (int) (kc * F_BKV) + 2 * (lane & 3);

#pragma unroll
          for (int j = 0; j < F_BKV / 8; j++)
            {
              const int ja = j0 + 8 * j, jb = ja + 1;

              s[j][0] = ja >= kmin0 && ja < kmax0 ? s[j][0] : F_HIDDEN;
              s[j][1] = jb >= kmin0 && jb < kmax0 ? s[j][1] : F_HIDDEN;
              s[j][2] = ja >= kmin1 && ja < kmax1 ? s[j][2] : F_HIDDEN;
              s[j][3] = jb >= kmin1 && jb < kmax1 ? s[j][3] : F_HIDDEN;
            }
        }

      /* Online softmax: rows lane/4 (values 0, 1) and lane/4 + 8 (values 2, 3). */
      float mx[2] = { m_row[0], m_row[1] };

#pragma unroll
      for (int j = 0; j < F_BKV / 8; j++)
        {
          mx[0] = fmaxf (mx[0], fmaxf (s[j][0] * scale, s[j][1] * scale));
          mx[1] = fmaxf (mx[1], fmaxf (s[j][2] * scale, s[j][3] * scale));
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
      for (int j = 0; j < F_DP / 8; j++)
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
          const unsigned a0 = napkin_attn_pack (s[2 * t][0], s[2 * t][1], (const NKP_T *) 0);
          const unsigned a1 = napkin_attn_pack (s[2 * t][2], s[2 * t][3], (const NKP_T *) 0);
          const unsigned a2 = napkin_attn_pack (s[2 * t + 1][0], s[2 * t + 1][1], (const NKP_T *) 0);
          const unsigned a3 = napkin_attn_pack (s[2 * t + 1][2], s[2 * t + 1][3], (const NKP_T *) 0);

#pragma unroll
          for (int j = 0; j < F_DP / 8; j += 2)
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
#pragma unroll
  for (int h = 0; h < 2; h++)
    {
      const int r = h ? r1 : r0;
      const long g = g0 + r / F_BQ, q = q0 + r % F_BQ;
      /* a row that saw no key (wholly masked) is zero */
      const float inv = l_row[h] > 0.0f ? 1.0f / l_row[h] : 0.0f;

      if (r >= F_ROWS || g >= F_G || q >= F_NQ)
        continue;
#if F_SPLIT > 1
      {
        const long prow = (kv_flat * F_G + g) * F_NQ + q;
        float *ob = part + (split * F_ROWS_ALL + prow) * F_D;

#pragma unroll
        for (int j = 0; j < F_DP / 8; j++)
          if (j * 8 < F_D)
            napkin_attn_st2 (&ob[j * 8 + (lane & 3) * 2], o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
        if ((lane & 3) == 0)
          part[(long) F_SPLIT * F_ROWS_ALL * F_D + split * F_ROWS_ALL + prow]
            = l_row[h] > 0.0f ? m_row[h] + __log2f (l_row[h]) : NAPKIN_NEG_INF;
      }
#else
      {
        NKP_OT *ob = Og + o_base + g * F_OGS + q * F_ORS;

#pragma unroll
        for (int j = 0; j < F_DP / 8; j++)
          if (j * 8 < F_D)
            napkin_attn_st2 (&ob[j * 8 + (lane & 3) * 2], o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
      }
#endif
    }
#undef F_SC_COPY_ONE
#undef F_SC_COPY
#undef F_SC_APPLY_ONE
#undef F_COPY
#undef F_Q_ROW
#undef F_Q_OK
#undef F_KV_OK
#undef F_KV_ROW
}
#undef F_ROWS
#undef F_BQ
#undef F_WARPS
#undef F_THREADS
#undef F_BKV
#undef F_ST
#undef F_D
#undef F_DP
#undef F_S
#undef F_NQ
#undef F_NKV
#undef F_G
#undef F_GT
#undef F_QREG
#undef F_SPLIT
#undef F_CPS
#undef F_MASK_LO
#undef F_MASK_HI
#undef F_LEFT
#undef F_RIGHT
#undef F_OFFSET
#undef F_REVERSE
#undef F_QTILES
#undef F_GTILES
#undef F_QGS
#undef F_QRS
#undef F_KRS
#undef F_OGS
#undef F_ORS
#undef F_ROWS_ALL
#undef F_HIDDEN
#undef F_NSC
#undef F_SC_WARP
#undef F_SCAN
#undef NKP_SCORES
