/* Attention on Hopper (sm_90a), the kernel plan's general attention kernel (docs/plan.md,
 * "Attention kernels"): O = softmax (α·Q·Kᵀ, masked)·V over the keys, fp32 accumulation.
 * One block computes ROWS query rows — GT heads of a group × BQ queries, packed — against
 * the key chunks its mask and split leave, with CONSUMERS + 1 warpgroups:
 *  - warpgroup 0, the producer (few registers), copies Q once with cp.async (any layout:
 *    the row addresses are computed, rows past NQ or the group are zero) into the 128-byte
 *    swizzle that wgmma reads, then one thread streams the chunks of K and V with TMA
 *    (rank 2 or 3 views: rows past NKV zero or masked) into a ring of STAGES buffers, each
 *    completing on the stage's "full" mbarrier (K and V apart);
 *  - warpgroups 1.., the consumers, each own 64 rows: S = Q·Kᵀ with wgmma m64nBKV (both
 *    operands K-major from shared memory; fp8: e4m3, k32), the scores of keys the mask
 *    hides (or past NKV) set to −∞ on the chunks that need it, the online softmax on the
 *    fp32 accumulators, P converted in registers to V's type and used as wgmma's A operand
 *    for O += P·V (16-bit V N-major through the transpose bit; fp8: Vᵀ K-major, its keys
 *    in the order each thread's scores already have as e4m3 A slots, NAPKIN_PV_KEY).
 * fp8 V: with VT_IN the producer's TMA brings V's chunk as stored ([keys][d], 128-byte
 * slices of d) and warps 1-3 of the producer transpose it in shared memory into the Vᵀ
 * slices P·V reads (8 × 8 byte blocks, conflict-free both ways), announcing each on its
 * own mbarrier; without it Vᵀ is made before, by the plan's repack (kernels/repack.cu).
 * With OVERLAP the next chunk's Q·Kᵀ is issued before this chunk's P·V (and the consumers
 * take turns issuing, PINGPONG). A split block writes its
 * normalised partial output and log-sum-exp to scratch for the combine kernel. A row of Q
 * or K is D_S 128-byte slices (D padded with zeros); wgmma reads only D columns.
 * Score operands (SCORES: biases added, keep flags; docs/plan.md, "Score operands"): each
 * consumer warp copies its rows of the next chunk's operands into its own staging area
 * with cp.async while it computes this one, and applies them to the scores before the
 * mask and the softmax; with SC_SCAN the block first reads a padding mask's row and
 * computes only the chunks between the first and the last key it keeps. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_90a: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "attn-prims.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_ROWS 128
#define NKP_BQ 32
#define NKP_CONSUMERS 2
#define NKP_BKV 128
#define NKP_D 128
#define NKP_DV 128
#define NKP_STAGES 2
#define NKP_NQ 4096
#define NKP_NKV 4096
#define NKP_GROUP 4
#define NKP_GROUP_TILE 4
#define NKP_KV_BATCH 8
#define NKP_QK_BYTES 2
#define NKP_FP8_V 0
#define NKP_OVERLAP 1
#define NKP_EXP_FMA 0.000000000e+00
#define NKP_KV_RANK3 1
#define NKP_VT_RANK3 1
#define NKP_SPLIT 1
#define NKP_CPS 32
#define NKP_MASK_LO 0
#define NKP_MASK_HI 1
#define NKP_LEFT 0
#define NKP_RIGHT 0
#define NKP_OFFSET 0
#define NKP_REVERSE 1
#define NKP_BAND 0
#define NKP_Q_GROUP 524288
#define NKP_Q_ROW 128
#define NKP_O_GROUP 524288
#define NKP_O_ROW 128
#define NKP_ALPHA 8.838834765e-02
#define NKP_V_SCALE 1.000000000e+00
#define NKP_QT napkin_f16
#define NKP_VT napkin_f16
#define NKP_OT napkin_f16
#define NKP_QREF ((napkin_f16 *) args.p[0])
#define NKP_OREF ((napkin_f16 *) args.p[3])
#define NKP_PREF 0
#define NKP_PRODUCER_REGS 56
#define NKP_CONSUMER_REGS 224
#define NKP_VT_SLICE 128
#define NKP_VT_IN 0
#define NKP_N_SC 1
#define NKP_SC_WARP 4352
#define NKP_SC_SCAN 0
#define NKP_PERSIST 0
#define NKP_SEEN_LO 0
#define NKP_STATS 1
#define NKP_SLSEREF ((float *) args.p[5])
#define NKP_SO32REF ((float *) args.p[5] + 262144L)
#define NKP_SEEN_HI 32
#define NKP_Q_BUFFERS 1
#endif /* NAPKIN_GENERATED */
/* the score operands, one X (…) each (NKP_SCORES below): the printer's list */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/SCORES"
#else
#define NKP_SCORES(X) X (sc0_base, 0, napkin_f16, 2, 16, 16, 272, 0, 0L, 4096L, 1.0f, ((const napkin_f16 *) args.p[5]), 0, 0xfc00u)
#endif /* napkin-fragment/SCORES */
#define A_ROWS NKP_ROWS
#define A_BQ NKP_L (NKP_BQ)
#define A_NWG NKP_CONSUMERS
#define A_THREADS ((A_NWG + 1) * 128)
#define A_BKV NKP_BKV
#define A_D NKP_D
/* O's accumulator columns: V's D, or fp8 Vᵀ's D + 8 rows whose first is ones (A_ONES):
 * P·V's column D is then each row's sum of P, and the softmax adds nothing up */
#define A_DV NKP_DV
#define A_ONES (A_DV > A_D)
#define A_ST NKP_STAGES
#define A_NQ NKP_L (NKP_NQ)
#define A_NKV NKP_L (NKP_NKV)
#define A_G NKP_L (NKP_GROUP)
#define A_GT NKP_L (NKP_GROUP_TILE)
#define A_QE NKP_QK_BYTES
#define A_FP8_QK (A_QE == 1)
#define A_FP8_V NKP_FP8_V
#define A_DS ((A_D * A_QE + 127) / 128)
#define A_VDS ((A_D * 2 + 127) / 128)
#define A_QROWS (A_NWG * 64)
#define A_Q_BYTES (A_QROWS * A_DS * 128)
/* Persistent (PERSIST: the tiles of all blocks, > 0): each block walks a contiguous range
 * of the tiles, one key chunk each (all the keys: NKV ≤ BKV, no mask, no split, no score
 * operands; a mask hides keys of the chunk, or all of a tile's: then its rows are zeros), Q
 * through Q_BUFFERS buffers that the producer fills ahead of the consumers;
 * K and V are loaded again only where the range reaches the next K/V matrix. The walk
 * takes the tiles whose queries see a key (query tiles SEEN_LO … SEEN_HI − 1 of each
 * matrix) before the wholly masked ones, and each block an equal share of both: a window
 * over a short key axis leaves most tiles empty, all at one end of each matrix's queries,
 * and ranges of the tiles in order gave a few blocks all the work (docs/plan.md,
 * "Attention kernels"). */
#define A_PERSIST NKP_L (NKP_PERSIST)
#define A_SEEN_LO NKP_L (NKP_SEEN_LO)
#define A_NSEEN (NKP_L (NKP_SEEN_HI) - A_SEEN_LO)
#if A_PERSIST
#if NKP_SPLIT > 1 || NKP_N_SC > 0 || NKP_VT_IN || NKP_NKV > NKP_BKV
#error "persistent attention: one chunk of all the keys, no split or score operands"
#endif
#define A_QB NKP_Q_BUFFERS
#define A_QBARS (2 * A_QB)
#else
#define A_QB 1
#define A_QBARS 1
#endif
#define A_K_BYTES (A_BKV * A_DS * 128)
/* fp8 Vᵀ: slices of A_VS keys (128, 64 or 32: the widest dividing BKV), each D rows of
 * A_VS bytes in the A_VS-byte swizzle, so that chunks of 192 or 224 keys fit too */
#define A_VS NKP_VT_SLICE
#define A_VT_IN (A_FP8_V && NKP_VT_IN)
/* fp8 V as stored (VT_IN): slices of 128 d-bytes × BKV keys, 128-byte swizzle */
#define A_VRS ((A_D + 127) / 128)
#if A_VT_IN
#define A_VR_BYTES (A_BKV * A_VRS * 128)
#else
#define A_VR_BYTES 0
#endif
#if A_FP8_V
#define A_V_BYTES (A_DV * A_BKV)
#else
#define A_V_BYTES (A_BKV * A_VDS * 128)
#endif
/* k-steps of Q·Kᵀ (16 or 32 elements: 32 bytes) and of P·V */
#define A_QK_STEPS ((A_D * A_QE + 31) / 32)
#define A_PV_STEPS (A_FP8_V ? A_BKV / 32 : A_BKV / 16)
#define A_OVERLAP NKP_OVERLAP
#define A_PINGPONG (A_OVERLAP && A_NWG > 1)
#define A_KV_RANK3 NKP_KV_RANK3
#define A_SPLIT NKP_SPLIT
#define A_CPS NKP_L (NKP_CPS)
#define A_MASK_LO NKP_MASK_LO
#define A_MASK_HI NKP_MASK_HI
#define A_LEFT NKP_L (NKP_LEFT)
#define A_RIGHT NKP_L (NKP_RIGHT)
#define A_OFFSET NKP_L (NKP_OFFSET)
#define A_REVERSE NKP_REVERSE
/* > 1: blocks in bands of A_BAND (batch, head) units, the band's heaviest query tiles
 * first (docs/plan.md, "Causal order"; napkin_plan_attention_band_tile) */
#define A_BAND NKP_BAND
#define A_QTILES ((A_NQ + A_BQ - 1) / A_BQ)
#define A_GTILES ((A_G + A_GT - 1) / A_GT)
#define A_CHUNKS ((A_NKV + A_BKV - 1) / A_BKV)
#define A_QGS NKP_L (NKP_Q_GROUP)
#define A_QRS NKP_L (NKP_Q_ROW)
#define A_OGS NKP_L (NKP_O_GROUP)
#define A_ORS NKP_L (NKP_O_ROW)
#define A_ROWS_ALL (A_NQ * A_G * NKP_L (NKP_KV_BATCH))
/* a hidden score: −∞ once scaled (α > 0 in any real attention) */
#define A_HIDDEN (NKP_F (NKP_ALPHA) > 0.0f ? NAPKIN_NEG_INF : -NAPKIN_NEG_INF)
/* score operands: how many, the bytes a consumer warp stages them in, the padding scan;
 * NKP_SCORES (X) lists them as X (base, kind (0 bias, 1 keep), type, element bytes, piece
 * bytes, rows, row pitch, offset in the warp's area, group stride, query stride, factor,
 * pointer, scan, the bits of a hidden element) */
#define A_NSC NKP_N_SC
#define A_SC_WARP NKP_SC_WARP
#define A_SCAN NKP_SC_SCAN

#ifdef NAPKIN_GENERATED
#include "napkin-fragment/WGMMA"
#else
__device__ __forceinline__ void
napkin_k0_qk (float (&d)[64], unsigned long long da, unsigned long long db, int acc)
{
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %66, 0; "
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0; }"
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63])
                : "l" (da), "l" (db), "r" (acc) : "memory");
}

__device__ __forceinline__ void
napkin_k0_pv (float (&d)[64], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long db)
{
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %69, 0; "
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1; }"
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63])
                : "r" (a0), "r" (a1), "r" (a2), "r" (a3), "l" (db), "r" (1) : "memory");
}

__device__ __forceinline__ void
napkin_k0_fence_s (float (&d)[64])
{
  asm volatile ("" : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63]) :: "memory");
}

__device__ __forceinline__ void
napkin_k0_fence_o (float (&d)[64])
{
  asm volatile ("" : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63]) :: "memory");
}
#endif /* napkin-fragment/WGMMA */

extern "C" __global__ void __launch_bounds__ (A_THREADS, 1)
NKP_NAME (const NapkinArgs args, const __grid_constant__ NapkinTensorMap tma_k,
        const __grid_constant__ NapkinTensorMap tma_v)
{
  const NKP_QT *__restrict__ Qg = NKP_QREF;
#if A_SPLIT > 1
  float *__restrict__ part = NKP_PREF;
#else
  NKP_OT *__restrict__ Og = NKP_OREF;
#endif
#if NKP_STATS
  /* for the fused backward after this kernel: its log-sum-exps and fp32 O (A_STATS_ROW) */
  float *__restrict__ stat_lse = NKP_SLSEREF;
  float *__restrict__ stat_o32 = NKP_SO32REF;
#endif
  extern __shared__ __align__ (16) unsigned char smem_raw_[];
  /* The swizzle repeats every 1024 bytes: align the tiles to it. */
  const unsigned base = (napkin_smem_addr (smem_raw_) + 1023) & ~1023u;
  const unsigned q_s = base;                             /* [QB] tiles */
  const unsigned k_s = q_s + A_QB * A_Q_BYTES;           /* [ST] tiles */
  const unsigned vr_s = k_s + A_ST * A_K_BYTES;          /* [ST] V as stored (VT_IN), or none */
  const unsigned v_s = vr_s + A_ST * A_VR_BYTES;         /* [ST] tiles (fp8: Vᵀ) */
  /* q_full[QB], q_empty[QB] (persistent), full_k[ST], full_v[ST], empty[ST], vt_full[ST] */
  const unsigned bars = v_s + A_ST * A_V_BYTES;
  /* [NWG · 4 warps][SC_WARP] score operands, then the scan's first and last key */
  const unsigned sc_s = (bars + 8 * (A_QBARS + (A_VT_IN ? 4 : 3) * A_ST) + 15) & ~15u;
  (void) vr_s;
  (void) sc_s;
#define A_Q_FULL(b) (bars + 8 * (b))
#define A_Q_EMPTY(b) (bars + 8 * (A_QB + (b)))
#define A_FULL_K(s) (bars + 8 * (A_QBARS + (s)))
#define A_FULL_V(s) (bars + 8 * (A_QBARS + A_ST + (s)))
#define A_EMPTY(s) (bars + 8 * (A_QBARS + 2 * A_ST + (s)))
#define A_VT_FULL(s) (bars + 8 * (A_QBARS + 3 * A_ST + (s)))
/* what P·V waits for: Vᵀ transposed by the producer (VT_IN), else V's (or Vᵀ's) copy */
#if A_VT_IN
#define A_PV_READY(s) A_VT_FULL (s)
#else
#define A_PV_READY(s) A_FULL_V (s)
#endif
  const int tid = threadIdx.x, wg = tid / 128, t = tid % 128;

  /* The tile's query tile, heads and key range: tile `blk` of the grid's (the block's own,
   * or, persistent, each of its range in turn). */
  long qt = 0, g0 = 0, split = 0;
  /* the leading axes (K's, innermost first): offsets of Q and O, the K/V view's row and
   * plane, and the flat K/V index */
  long q_base = 0, o_base = 0, kv_row0 = 0, kv_plane = 0, kv_flat = 0;
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
  auto a_tile = [&] (long blk) {
    const long qt_ = blk % A_QTILES;

    qt = A_REVERSE ? A_QTILES - 1 - qt_ : qt_;
    blk /= A_QTILES;
    g0 = (blk % A_GTILES) * A_GT;
    blk /= A_GTILES;
    split = blk % A_SPLIT;
    blk /= A_SPLIT;
    q_base = o_base = kv_row0 = kv_plane = kv_flat = 0;
#if NKP_N_SC > 0
    sc0_base = 0;
#endif
#if NKP_N_SC > 1
    sc1_base = 0;
#endif
#if NKP_N_SC > 2
    sc2_base = 0;
#endif
#if NKP_N_SC > 3
    sc3_base = 0;
#endif
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
    {
      const long i_ = blk % 8L;

      blk /= 8L;
      q_base += i_ * 2097152L;
      o_base += i_ * 2097152L;
      kv_row0 += i_ * 0L;
      kv_plane += i_ * 1L;
      kv_flat += i_ * 1L;
    }
    {
      const long i_ = blk % 1L;

      blk /= 1L;
      q_base += i_ * 16777216L;
      o_base += i_ * 16777216L;
      kv_row0 += i_ * 0L;
      kv_plane += i_ * 8L;
      kv_flat += i_ * 8L;
    }
#endif /* napkin-fragment/LEAD */
  };
#if A_PERSIST
  /* whether the tile's queries see any key (its one chunk computed) */
  auto a_sees = [&] (long q0_) -> bool {
    long lo_ = 0, hi_ = A_NKV;

    (void) q0_;
#if A_MASK_LO
    lo_ = q0_ + A_OFFSET - A_LEFT > 0 ? q0_ + A_OFFSET - A_LEFT : 0;
#endif
#if A_MASK_HI
    hi_ = NAPKIN_MIN (hi_, NAPKIN_MIN (q0_ + A_BQ, A_NQ) + A_OFFSET + A_RIGHT);
#endif
    return hi_ > lo_;
  };
  /* the block's shares: of the tiles that see a key, [seen_lo, seen_hi) in the walk's
   * order, then of the others (the walk's indices from A_SEEN_ALL on) */
  constexpr long A_SEEN_ALL = A_PERSIST / A_QTILES * A_NSEEN;
  const long seen_lo = (long) blockIdx.x * A_SEEN_ALL / gridDim.x;
  const long seen_hi = ((long) blockIdx.x + 1) * A_SEEN_ALL / gridDim.x;
  const long empty_lo = (long) blockIdx.x * (A_PERSIST - A_SEEN_ALL) / gridDim.x;
  const long empty_hi = ((long) blockIdx.x + 1) * (A_PERSIST - A_SEEN_ALL) / gridDim.x;
  const int n_walk = (int) (seen_hi - seen_lo + empty_hi - empty_lo);
  /* the block's w-th tile, as a_tile numbers them */
  auto a_walk = [&] (int w) -> long {
    const long i = w < seen_hi - seen_lo ? seen_lo + w : A_SEEN_ALL + empty_lo + (w - (seen_hi - seen_lo));
    long grp, qtr;

    if (i < A_SEEN_ALL)
      {
        constexpr long ns = A_NSEEN > 0 ? A_NSEEN : 1;

        grp = i / ns;
        qtr = A_SEEN_LO + i % ns;
      }
    else
      {
        constexpr long ne = A_QTILES - A_NSEEN > 0 ? A_QTILES - A_NSEEN : 1;
        const long e = i - A_SEEN_ALL, j = e % ne;

        grp = e / ne;
        qtr = j < A_SEEN_LO ? j : j + A_NSEEN;
      }
    return grp * A_QTILES + (A_REVERSE ? A_QTILES - 1 - qtr : qtr);
  };
  a_tile (n_walk > 0 ? a_walk (0) : 0);
#elif A_BAND > 1
  {
    const long units = (long) gridDim.x / A_QTILES, first = (long) blockIdx.x / (A_BAND * A_QTILES) * A_BAND;
    const long n = NAPKIN_MIN ((long) A_BAND, units - first), within = (long) blockIdx.x - first * A_QTILES;

    a_tile ((first + within % n) * A_QTILES + within / n);
  }
#else
  a_tile (blockIdx.x);
#endif
  (void) o_base;
  (void) kv_flat;
  (void) split;
  const long q0 = qt * A_BQ, q1 = NAPKIN_MIN (q0 + A_BQ, A_NQ);
  (void) q1;
  long lo = 0, hi = A_NKV, full_lo = 0, full_hi = A_NKV;

#if A_MASK_LO
  lo = q0 + A_OFFSET - A_LEFT;
  lo = lo > 0 ? lo : 0;
  full_lo = q1 - 1 + A_OFFSET - A_LEFT;
#endif
#if A_MASK_HI
  hi = NAPKIN_MIN (hi, q1 + A_OFFSET + A_RIGHT);
  full_hi = NAPKIN_MIN (full_hi, q0 + A_OFFSET + A_RIGHT + 1);
#endif
#if A_SCAN
  /* a padding mask shared by the block's rows: only the keys from its first kept one to
   * its last (none: no chunk, rows of zeros) */
  {
    int *kr_ = (int *) (smem_raw_ + (sc_s + 4 * A_NWG * A_SC_WARP - napkin_smem_addr (smem_raw_)));

#define A_SC_SCAN_ONE(base, KIND, T, ES, VEC, NR, PITCH, OFF, GS, RS, COEF, REF, SCAN, HID)             \
    if (SCAN)                                                                                          \
      napkin_attn_sc_scan<ES, VEC, HID> ((const unsigned char *) (REF) + ((base) + g0 * (GS)) * (ES), A_NKV, \
                                         first, last, tid, A_THREADS);
    napkin_attn_sc_range (kr_, &lo, &hi, tid, [&] (int *first, int *last) { NKP_SCORES (A_SC_SCAN_ONE) });
#undef A_SC_SCAN_ONE
  }
#endif
  long c_first = lo / A_BKV, c_end = hi > lo ? (hi + A_BKV - 1) / A_BKV : c_first;
#if A_SPLIT > 1
  /* split s computes chunks s·CPS … of those the queries see (a window at the end of a
   * long cache: all the splits share its chunks) */
  {
    const long seen_ = c_first;

    c_first = seen_ + split * A_CPS;
    c_end = NAPKIN_MIN (c_end, seen_ + (split + 1) * A_CPS);
  }
#endif
  const int n_chunks = c_end > c_first ? (int) (c_end - c_first) : 0;
  /* chunks every row sees whole: no masking in registers */
  const long fv_lo = full_lo > 0 ? (full_lo + A_BKV - 1) / A_BKV : 0;
  const long fv_hi = full_hi > 0 ? full_hi / A_BKV : 0;

  (void) fv_lo;
  (void) fv_hi;
  (void) n_chunks;

  if (tid == 0)
    {
      for (int b = 0; b < A_QB; b++)
        {
          napkin_attn_bar_init (A_Q_FULL (b), 128);
#if A_PERSIST
          napkin_attn_bar_init (A_Q_EMPTY (b), A_NWG * 128);
#endif
        }
      for (int s = 0; s < A_ST; s++)
        {
          napkin_attn_bar_init (A_FULL_K (s), 1);
          napkin_attn_bar_init (A_FULL_V (s), 1);
          napkin_attn_bar_init (A_EMPTY (s), A_NWG * 128);
#if A_VT_IN
          napkin_attn_bar_init (A_VT_FULL (s), 96);
#endif
        }
    }
  __syncthreads ();

  if (wg == 0)
    {
      /* Producer. */
      asm volatile ("setmaxnreg.dec.sync.aligned.u32 " NKP_STR (NKP_PRODUCER_REGS) ";");
#if !A_PERSIST
      /* (persistent: the first tile's keys say nothing of the others') */
      if (n_chunks == 0)
        return;
#endif
#define A_ISSUE(it) A_ISSUE_AT ((it) % A_ST, c_first + (it))
      /* chunk kc_ of the keys into stage st_ */
#define A_ISSUE_AT(st, kc)                                                                               \
      do                                                                                                 \
        {                                                                                                \
          const int st_ = (st);                                                                          \
          const long kc_ = (kc);                                                                         \
          const int row_ = (int) (kv_row0 + kc_ * A_BKV);                                                \
          napkin_attn_expect (A_FULL_K (st_), A_K_BYTES);                                                \
          _Pragma ("unroll")                                                                             \
          for (int sl = 0; sl < A_DS; sl++)                                                              \
            A_TMA (k_s + st_ * A_K_BYTES + sl * (A_BKV * 128), &tma_k, sl * (128 / A_QE), row_,          \
                   (int) kv_plane, A_FULL_K (st_));                                                      \
          napkin_attn_expect (A_FULL_V (st_), A_VT_IN ? A_VR_BYTES : A_V_BYTES);                         \
          A_ISSUE_V (st_, kc_);                                                                          \
        }                                                                                                \
      while (0)
#if A_KV_RANK3
#define A_TMA(dst, map, c0, c1, c2, bar) napkin_attn_tma (dst, map, c0, c1, c2, bar)
#else
#define A_TMA(dst, map, c0, c1, c2, bar) napkin_attn_tma (dst, map, c0, c1, bar)
#endif
#if A_VT_IN
      /* V as stored (K's view): slices of 128 d-bytes × BKV keys */
#define A_ISSUE_V(st_, kc)                                                                               \
      _Pragma ("unroll")                                                                                 \
      for (int sl = 0; sl < A_VRS; sl++)                                                                 \
        A_TMA (vr_s + st_ * A_VR_BYTES + sl * (A_BKV * 128), &tma_v, sl * 128,                           \
               (int) (kv_row0 + (kc) * A_BKV), (int) kv_plane, A_FULL_V (st_))
#elif A_FP8_V
      /* Vᵀ [kv_flat][D][keys]: boxes of A_VS keys × D rows */
#define A_ISSUE_V(st_, kc)                                                                               \
      _Pragma ("unroll")                                                                                 \
      for (int sl = 0; sl < A_BKV / A_VS; sl++)                                                          \
        A_TMA_VT (v_s + st_ * A_V_BYTES + sl * (A_DV * A_VS), &tma_v,                                     \
                  (int) ((kc) * A_BKV + sl * A_VS), 0, (int) kv_flat, A_FULL_V (st_))
#if NKP_VT_RANK3
#define A_TMA_VT(dst, map, c0, c1, c2, bar) napkin_attn_tma (dst, map, c0, c1, c2, bar)
#else
#define A_TMA_VT(dst, map, c0, c1, c2, bar) napkin_attn_tma (dst, map, c0, c1, bar)
#endif
#else
#define A_ISSUE_V(st_, kc)                                                                               \
      _Pragma ("unroll")                                                                                 \
      for (int sl = 0; sl < A_VDS; sl++)                                                                 \
        A_TMA (v_s + st_ * A_V_BYTES + sl * (A_BKV * 128), &tma_v, sl * 64,                              \
               (int) (kv_row0 + (kc) * A_BKV), (int) kv_plane, A_FULL_V (st_))
#endif
      /* Q: 16-byte chunks c of row r into slice c/8, chunk (c%8) ^ (r%8) of the row (the
       * buffer at qb, the tile at g0, q0_), one commit group */
#define A_COPY_Q(qb, q0_)                                                                                \
      do                                                                                                 \
        {                                                                                                \
          for (int i = t; i < A_QROWS * A_DS * 8; i += 128)                                              \
            {                                                                                            \
              const int r = i / (A_DS * 8), c = i % (A_DS * 8);                                          \
              const unsigned off = (c >> 3) * (A_QROWS * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);    \
              const long g = g0 + r / A_BQ, q = (q0_) + r % A_BQ;                                        \
              const bool ok = r < A_ROWS && g < A_G && q < A_NQ && c * 16 < A_D * A_QE;                  \
              const char *src = (const char *) Qg;                                                       \
                                                                                                         \
              if (ok)                                                                                    \
                src = (const char *) (Qg + q_base + g * A_QGS + q * A_QRS) + c * 16;                     \
              napkin_attn_cp16 ((qb) + off, src, ok ? 16 : 0);                                           \
            }                                                                                            \
          asm volatile ("cp.async.commit_group;" ::: "memory");                                         \
        }                                                                                                \
      while (0)
#if A_PERSIST
      {
        /* Each tile: its K/V where the range reaches the next matrix (into the next stage,
         * once the consumers are done with the one before it), its Q into buffer i % QB
         * once the consumers have read the tile QB before from it. Up to QB − 1 tiles' Q
         * copies stay in flight; each is announced (q_full) when it lands. */
        /* (32-bit: the TMA's coordinates are; the tiles fewer than 2³¹) */
        int kv_row_prev = -1, kv_plane_prev = -1, issued = 0, announced = 0, kv_n = -1;

#define A_ANNOUNCE(left)                                                                                 \
        do                                                                                               \
          {                                                                                              \
            asm volatile ("cp.async.wait_group %0;" :: "n" (left) : "memory");                          \
            asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");                               \
            napkin_attn_arrive (A_Q_FULL (announced % A_QB));                                            \
            announced++;                                                                                 \
          }                                                                                              \
        while (0)
        for (int w = 0; w < n_walk; w++)
          {
            a_tile (a_walk (w));
            if (!a_sees (qt * A_BQ))
              continue;
            if ((int) kv_row0 != kv_row_prev || (int) kv_plane != kv_plane_prev)
              {
                kv_row_prev = (int) kv_row0;
                kv_plane_prev = (int) kv_plane;
                kv_n++;
                /* the consumers release a stage after their last tile on it: the tiles
                 * before are announced first, so that they can get there */
                while (announced < issued)
                  A_ANNOUNCE (0);
                if (t == 0)
                  {
                    if (kv_n >= A_ST)
                      napkin_attn_wait (A_EMPTY (kv_n % A_ST), (kv_n / A_ST - 1) & 1);
                    A_ISSUE_AT (kv_n % A_ST, 0);
                  }
              }
            if (issued >= A_QB)
              napkin_attn_wait (A_Q_EMPTY (issued % A_QB), (issued / A_QB - 1) & 1);
            A_COPY_Q (q_s + (unsigned) (issued % A_QB) * A_Q_BYTES, qt * A_BQ);
            issued++;
            if (issued - announced >= A_QB)
              A_ANNOUNCE (A_QB - 1);
          }
        while (announced < issued)
          A_ANNOUNCE (0);
#undef A_ANNOUNCE
      }
#else
      if (t == 0)
        for (int it = 0; it < A_ST && it < n_chunks; it++)
          A_ISSUE (it);
      A_COPY_Q (q_s, q0);
      asm volatile ("cp.async.wait_group 0;" ::: "memory");
      asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
      napkin_attn_arrive (A_Q_FULL (0));
      if (t == 0)
        for (int it = A_ST; it < n_chunks; it++)
          {
            napkin_attn_wait (A_EMPTY (it % A_ST), (it / A_ST - 1) & 1);
            A_ISSUE (it);
          }
#endif
#if A_VT_IN
      /* Warps 1-3: each chunk's V, once in, to Vᵀ. Stage st's Vᵀ is free: its chunk's
       * copy was issued after the consumers released the chunk before (EMPTY). Block b
       * of 8 keys × 8 d: a half-warp takes 16 key blocks and 16 d blocks, one each, so
       * that neither the reads (banks by d in the source's swizzle) nor the writes
       * (banks by key) collide. */
      if (t >= 32)
        for (int it = 0; it < n_chunks; it++)
          {
            const int st_ = it % A_ST;
            const unsigned src = vr_s + st_ * A_VR_BYTES, dst = v_s + st_ * A_V_BYTES;

            napkin_attn_wait (A_FULL_V (st_), (it / A_ST) & 1);
            for (int b = t - 32; b < (A_BKV / 8) * (A_D / 8); b += 96)
              {
                const int kb = b % (A_BKV / 8), db = (b / (A_BKV / 8) + kb) % (A_D / 8);
                const int d0 = db * 8, k0 = kb * 8;

                napkin_attn_t8x8 (
                  [&] (int r) {
                    const unsigned o = (unsigned) ((k0 + r) * 128 + (d0 % 128));

                    return src + (d0 / 128) * (A_BKV * 128) + (o ^ (((o >> 7) & 7) << 4));
                  },
                  [&] (int j) {
                    const unsigned o = (unsigned) ((d0 + j) * A_VS + (k0 % A_VS));

                    return dst + (k0 / A_VS) * (A_D * A_VS) + (o ^ (((o >> 7) & (A_VS / 16 - 1)) << 4));
                  });
              }
            asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
            napkin_attn_arrive (A_VT_FULL (st_));
          }
#endif
#undef A_ISSUE
#undef A_ISSUE_AT
#undef A_COPY_Q
#undef A_ISSUE_V
#undef A_TMA
#undef A_TMA_VT
    }
  else
    {
      /* Consumer warpgroup c = wg − 1: rows c·64 … c·64 + 63 of the block. */
      const int c = wg - 1, warp = t / 32, lane = t % 32;
      /* α·(dequantisation)·log2(e): exponentials as exp2 */
      const float scale = NKP_F (NKP_ALPHA) * 1.4426950408889634f;
      float s[A_BKV / 2], o[A_DV / 2];
#if A_FP8_V
      unsigned p[A_BKV / 8];
#else
      unsigned p[A_BKV / 4];
#endif
      float m_row[2] = { -1e30f, -1e30f }, l_row[2] = { 0.0f, 0.0f };
      /* this thread's two rows, their queries and the keys they see [kmin, kmax) */
      const int r0 = c * 64 + warp * 16 + (lane >> 2), r1 = r0 + 8;
      const long qi0 = q0 + r0 % A_BQ, qi1 = q0 + r1 % A_BQ;
      int kmin0 = 0, kmin1 = 0, kmax0 = (int) A_NKV, kmax1 = (int) A_NKV;

      (void) qi0;
      (void) qi1;

#if A_MASK_LO
      kmin0 = (int) (qi0 + A_OFFSET - A_LEFT);
      kmin1 = (int) (qi1 + A_OFFSET - A_LEFT);
#endif
#if A_MASK_HI
      kmax0 = (int) NAPKIN_MIN (A_NKV, qi0 + A_OFFSET + A_RIGHT + 1);
      kmax1 = (int) NAPKIN_MIN (A_NKV, qi1 + A_OFFSET + A_RIGHT + 1);
#endif
      asm volatile ("setmaxnreg.inc.sync.aligned.u32 " NKP_STR (NKP_CONSUMER_REGS) ";");
#pragma unroll
      for (int i = 0; i < A_DV / 2; i++)
        o[i] = 0.0f;

#if A_NSC > 0
      /* Score operands: this warp's rows of chunk it into its staging area (cp.async, one
       * commit group), and their values applied to the scores once they are in: a bias
       * times its factor (in units of the raw score) added, hidden keys to −∞. */
      const unsigned sc_w = sc_s + (c * 4 + warp) * A_SC_WARP;
      const int sc_r0 = c * 64 + warp * 16;
#define A_SC_COPY_ONE(base, KIND, T, ES, VEC, NR, PITCH, OFF, GS, RS, COEF, REF, SCAN, HID)             \
      napkin_attn_sc_copy<NR, A_BKV * (ES), VEC, PITCH> (                                              \
        sc_w + (OFF), (const unsigned char *) (REF),                                                   \
        [&] (int i_) -> long {                                                                         \
          return napkin_attn_sc_row<NR, ES> (base, GS, RS, g0, q0, sc_r0 + i_, A_BQ, A_ROWS, A_G, A_NQ);    \
        },                                                                                             \
        kc_ * A_BKV * (ES), A_NKV * (ES), lane);
#define A_SC_COPY(it)                                                                                    \
      do                                                                                                 \
        if ((it) < n_chunks)                                                                             \
          {                                                                                              \
            const long kc_ = c_first + (it);                                                             \
            NKP_SCORES (A_SC_COPY_ONE)                                                                   \
            asm volatile ("cp.async.commit_group;" ::: "memory");                                       \
          }                                                                                              \
      while (0)
#define A_SC_APPLY_ONE(base, KIND, T, ES, VEC, NR, PITCH, OFF, GS, RS, COEF, REF, SCAN, HID)            \
      _Pragma ("unroll")                                                                                 \
      for (int j = 0; j < A_BKV / 8; j++)                                                                \
        {                                                                                                \
          float v_[4];                                                                                   \
          napkin_attn_sc_get<NR, PITCH> (sc_w + (OFF), j, lane, v_, (const T *) 0);                      \
          _Pragma ("unroll")                                                                             \
          for (int e = 0; e < 4; e++)                                                                    \
            s[4 * j + e] = (KIND) == 0 ? fmaf (v_[e], COEF, s[4 * j + e])                                \
                                       : v_[e] != 0.0f ? s[4 * j + e] : A_HIDDEN;                        \
        }
#define A_SC_APPLY()                                                                                     \
      do                                                                                                 \
        {                                                                                                \
          asm volatile ("cp.async.wait_group 0;" ::: "memory");                                         \
          __syncwarp ();                                                                                 \
          NKP_SCORES (A_SC_APPLY_ONE)                                                                    \
          __syncwarp ();                                                                                 \
        }                                                                                                \
      while (0)
#else
#define A_SC_COPY(it) do { } while (0)
#define A_SC_APPLY() do { } while (0)
#endif
      A_SC_COPY (0);

      /* S = Q·Kᵀ of chunk it (Q in the buffer at qb), issued and committed (not waited for). */
#define A_ISSUE_QK(it) A_ISSUE_QK_Q (it, q_s)
#define A_ISSUE_QK_Q(it, qb)                                                                             \
      do                                                                                                 \
        {                                                                                                \
          const int st_ = (it) % A_ST;                                                                   \
          napkin_attn_wait (A_FULL_K (st_), ((it) / A_ST) & 1);                                          \
          asm volatile ("wgmma.fence.sync.aligned;" ::: "memory");                                      \
          _Pragma ("unroll")                                                                             \
          for (int kk = 0; kk < A_QK_STEPS; kk++)                                                        \
            NKP_CAT (NKP_NAME, _qk) (s, napkin_attn_desc ((qb) + (kk / 4) * (A_QROWS * 128) + c * 8192 + (kk % 4) * 32, 16, 1024), \
                       napkin_attn_desc (k_s + st_ * A_K_BYTES + (kk / 4) * (A_BKV * 128) + (kk % 4) * 32, 16, 1024), \
                       kk > 0);                                                                          \
          asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");                               \
        }                                                                                                \
      while (0)

      /* O += P·V of chunk it, issued and committed. */
#if A_FP8_V
#define A_PV_DESC(st_, kt)                                                                               \
      napkin_attn_desc_sw (v_s + (st_) * A_V_BYTES + ((kt) / (A_VS / 32)) * (A_DV * A_VS) + ((kt) % (A_VS / 32)) * 32, \
                           8 * A_VS, A_VS)
#else
#define A_PV_DESC(st_, kt) napkin_attn_desc (v_s + (st_) * A_V_BYTES + (kt) * 2048, A_BKV * 128, 1024)
#endif
#define A_ISSUE_PV(it)                                                                                   \
      do                                                                                                 \
        {                                                                                                \
          const int st_ = (it) % A_ST;                                                                   \
          napkin_attn_wait (A_PV_READY (st_), ((it) / A_ST) & 1);                                        \
          asm volatile ("wgmma.fence.sync.aligned;" ::: "memory");                                      \
          _Pragma ("unroll")                                                                             \
          for (int kt = 0; kt < A_PV_STEPS; kt++)                                                        \
            NKP_CAT (NKP_NAME, _pv) (o, p[4 * kt], p[4 * kt + 1], p[4 * kt + 2], p[4 * kt + 3], A_PV_DESC (st_, kt));  \
          asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");                               \
        }                                                                                                \
      while (0)

      /* Keys the rows do not see (or past NKV) to −∞, on chunks not every row sees whole. */
#define A_MASK(it)                                                                                       \
      do                                                                                                 \
        {                                                                                                \
          const long kc_ = c_first + (it);                                                               \
          if (kc_ < fv_lo || kc_ >= fv_hi)                                                               \
            A_MASK_KEYS (kc_);                                                                           \
        }                                                                                                \
      while (0)
#define A_MASK_KEYS(kc)                                                                                  \
      do                                                                                                 \
        {                                                                                                \
          const int j0_ = (int) ((kc) * A_BKV) + 2 * (lane & 3);                                         \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < A_BKV / 8; j++)                                                            \
            {                                                                                            \
              const int ja = j0_ + 8 * j, jb = ja + 1;                                                   \
              s[4 * j] = ja >= kmin0 && ja < kmax0 ? s[4 * j] : A_HIDDEN;                                \
              s[4 * j + 1] = jb >= kmin0 && jb < kmax0 ? s[4 * j + 1] : A_HIDDEN;                        \
              s[4 * j + 2] = ja >= kmin1 && ja < kmax1 ? s[4 * j + 2] : A_HIDDEN;                        \
              s[4 * j + 3] = jb >= kmin1 && jb < kmax1 ? s[4 * j + 3] : A_HIDDEN;                        \
            }                                                                                            \
        }                                                                                                \
      while (0)

      /* Exponentials of score block j: the polynomial on the FMA units for a fraction
       * A_EXP_FMA of the blocks, spread evenly (the node's "exp": "fma"), else the SFU.
       * j is a compile-time constant in the unrolled loops, so the choice costs nothing. */
#define A_EXP_FMA NKP_EXP_FMA
#define A_EXP2(x, j) ((int) (((j) + 1) * A_EXP_FMA) > (int) ((j) * A_EXP_FMA) ? napkin_exp2_poly (x) \
                                                                            : napkin_attn_exp2 (x))

      /* Online softmax of s (rows lane/4 and lane/4 + 8 of this warp's 16): new running
       * max, s ← exp2(s·scale − m), running sum; c0, c1: the corrections of O. A row that
       * has seen only hidden keys keeps m = −1e30 and sums zeros. The running max moves
       * only when the chunk's rises above it by more than A_MAX_SLACK (log2 units): below
       * that the old one serves (P ≤ 2⁸, within e4m3 and 16 bits; O and the sum carry the
       * same offset, which the division removes), so most chunks skip O's rescale. Where
       * it pays: fp8 P·V, and O at least twice the scores (d 256 by 80 keys: 5 % faster on
       * an H100); with 16-bit V and fewer multiplies the branch cost more than it saved
       * (d 192 by 112 keys 6 % slower; docs/perf-notes.md), and there the max moves
       * whenever it rises. */
#if A_FP8_V || A_D >= 2 * A_BKV
#define A_MAX_SLACK 8.0f
#define A_LAZY_RESCALE 1
#else
#define A_MAX_SLACK 0.0f
#define A_LAZY_RESCALE 0
#endif
#define A_SOFTMAX(c0, c1)                                                                                \
      do                                                                                                 \
        {                                                                                                \
          float mx0 = -1e30f, mx1 = -1e30f;                                                              \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < A_BKV / 8; j++)                                                            \
            if (scale > 0.0f)                                                                            \
              {                                                                                          \
                mx0 = fmaxf (mx0, fmaxf (s[4 * j], s[4 * j + 1]));                                       \
                mx1 = fmaxf (mx1, fmaxf (s[4 * j + 2], s[4 * j + 3]));                                   \
              }                                                                                          \
            else                                                                                         \
              {                                                                                          \
                mx0 = fmaxf (mx0, fmaxf (s[4 * j] * scale, s[4 * j + 1] * scale));                      \
                mx1 = fmaxf (mx1, fmaxf (s[4 * j + 2] * scale, s[4 * j + 3] * scale));                   \
              }                                                                                          \
          if (scale > 0.0f)                                                                              \
            {                                                                                            \
              mx0 *= scale;                                                                              \
              mx1 *= scale;                                                                              \
            }                                                                                            \
          mx0 = fmaxf (mx0, m_row[0]);                                                                   \
          mx1 = fmaxf (mx1, m_row[1]);                                                                   \
          mx0 = fmaxf (mx0, __shfl_xor_sync (0xffffffffu, mx0, 1));                                      \
          mx0 = fmaxf (mx0, __shfl_xor_sync (0xffffffffu, mx0, 2));                                      \
          mx1 = fmaxf (mx1, __shfl_xor_sync (0xffffffffu, mx1, 1));                                      \
          mx1 = fmaxf (mx1, __shfl_xor_sync (0xffffffffu, mx1, 2));                                      \
          {                                                                                              \
            const bool up0 = mx0 > m_row[0] + A_MAX_SLACK, up1 = mx1 > m_row[1] + A_MAX_SLACK;            \
            c0 = up0 ? napkin_attn_exp2 (m_row[0] - mx0) : 1.0f;                                         \
            c1 = up1 ? napkin_attn_exp2 (m_row[1] - mx1) : 1.0f;                                         \
            mx0 = up0 ? mx0 : m_row[0];                                                                  \
            mx1 = up1 ? mx1 : m_row[1];                                                                  \
          }                                                                                              \
          m_row[0] = mx0;                                                                                \
          m_row[1] = mx1;                                                                                \
          float sum0 = 0.0f, sum1 = 0.0f;                                                                \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < A_BKV / 8; j++)                                                            \
            {                                                                                            \
              s[4 * j] = A_EXP2 (s[4 * j] * scale - mx0, j);                                             \
              s[4 * j + 1] = A_EXP2 (s[4 * j + 1] * scale - mx0, j);                                     \
              s[4 * j + 2] = A_EXP2 (s[4 * j + 2] * scale - mx1, j);                                     \
              s[4 * j + 3] = A_EXP2 (s[4 * j + 3] * scale - mx1, j);                                     \
              if (!A_ONES)                                                                               \
                {                                                                                        \
                  sum0 += s[4 * j] + s[4 * j + 1];                                                       \
                  sum1 += s[4 * j + 2] + s[4 * j + 3];                                                   \
                }                                                                                        \
            }                                                                                            \
          if (!A_ONES)                                                                                   \
            {                                                                                            \
              l_row[0] = l_row[0] * c0 + sum0;                                                           \
              l_row[1] = l_row[1] * c1 + sum1;                                                           \
            }                                                                                            \
        }                                                                                                \
      while (0)

#if A_FP8_V && !A_VT_IN
      /* P in e4m3, Vᵀ's keys in P·V's order (NAPKIN_PV_KEY, made by the transpose before):
       * the thread's own scores of blocks b0 = 2h and b1 = 2h + 1 of a 32-key step (keys 2c,
       * 2c + 1, 8 + 2c, 9 + 2c of each 16) are its A slots 4c … 4c + 3 of that half, row r0
       * into p[i], r1 into p[i + 1]. */
#define A_PACK_PAIR(i, b0, b1)                                                                           \
      do                                                                                                 \
        {                                                                                                \
          p[i] = napkin_attn_e4m3x4 (s[4 * (b0)], s[4 * (b0) + 1], s[4 * (b1)], s[4 * (b1) + 1]);       \
          p[(i) + 1] = napkin_attn_e4m3x4 (s[4 * (b0) + 2], s[4 * (b0) + 3], s[4 * (b1) + 2], s[4 * (b1) + 3]); \
        }                                                                                                \
      while (0)
#elif A_FP8_V
      /* P in e4m3, Vᵀ's keys in order (transposed in the kernel). The scores of a 32-key
       * step sit, per thread c of a quad, at keys 8b + 2c + {0, 1} of blocks b = 0…3 (rows
       * r0 and r1); the A operand wants keys 4c…4c+3 (and 16 + 4c…) in one register. Each
       * block's four values become one word (r0 pair, r1 pair); two shuffles per pair of
       * blocks bring each thread the two words it needs (the sources pick by their own
       * parity), and a byte permute assembles a0/a1 (blocks 0, 1) and a2/a3 (blocks 2, 3). */
      const int quad = lane & ~3, cq = lane & 3;
      const int src1 = quad + (((cq & 1) << 1) | (cq >> 1)), src2 = src1 ^ 1;
      const unsigned sel_lo = cq < 2 ? 0x5410u : 0x1054u, sel_hi = cq < 2 ? 0x7632u : 0x3276u;
#define A_PACK_PAIR(i, b0, b1)                                                                           \
      do                                                                                                 \
        {                                                                                                \
          const unsigned w0 = napkin_attn_e4m3x4 (s[4 * (b0)], s[4 * (b0) + 1], s[4 * (b0) + 2], s[4 * (b0) + 3]); \
          const unsigned w1 = napkin_attn_e4m3x4 (s[4 * (b1)], s[4 * (b1) + 1], s[4 * (b1) + 2], s[4 * (b1) + 3]); \
          const unsigned x1 = __shfl_sync (0xffffffffu, (cq & 1) ? w1 : w0, src1);                       \
          const unsigned x2 = __shfl_sync (0xffffffffu, (cq & 1) ? w0 : w1, src2);                       \
          p[i] = __byte_perm (x1, x2, sel_lo);                                                           \
          p[(i) + 1] = __byte_perm (x1, x2, sel_hi);                                                     \
        }                                                                                                \
      while (0)
#endif
#if A_FP8_V
#define A_PACK_P()                                                                                       \
      _Pragma ("unroll")                                                                                 \
      for (int kt = 0; kt < A_BKV / 32; kt++)                                                            \
        _Pragma ("unroll")                                                                               \
        for (int h = 0; h < 2; h++)                                                                      \
          A_PACK_PAIR (4 * kt + 2 * h, 4 * kt + 2 * h, 4 * kt + 2 * h + 1);
#else
      /* P: the accumulator layout of 16 keys is the A-register layout of one k16 step. */
#define A_PACK_P()                                                                                       \
      _Pragma ("unroll")                                                                                 \
      for (int kt = 0; kt < A_BKV / 16; kt++)                                                            \
        {                                                                                                \
          p[4 * kt] = napkin_attn_pack (s[8 * kt], s[8 * kt + 1], (const NKP_VT *) 0);                     \
          p[4 * kt + 1] = napkin_attn_pack (s[8 * kt + 2], s[8 * kt + 3], (const NKP_VT *) 0);             \
          p[4 * kt + 2] = napkin_attn_pack (s[8 * kt + 4], s[8 * kt + 5], (const NKP_VT *) 0);             \
          p[4 * kt + 3] = napkin_attn_pack (s[8 * kt + 6], s[8 * kt + 7], (const NKP_VT *) 0);             \
        }
#endif

      /* A_ONES: P·V's column D (held by the quad's first thread; the others' columns past D
       * are zeros) is the sum of the P it multiplied since it was last zeroed: taken into the
       * running sums and zeroed every chunk, since wgmma's fp8 accumulation keeps fewer bits
       * than fp32 and a long sum of positive terms would drift (docs/plan.md). Then the sums
       * take the correction c of O. */
#if A_ONES
#define A_TAKE_SUMS(c0, c1)                                                                              \
      do                                                                                                 \
        {                                                                                                \
          l_row[0] = (l_row[0] + o[4 * (A_D / 8)]) * (c0);                                               \
          l_row[1] = (l_row[1] + o[4 * (A_D / 8) + 2]) * (c1);                                           \
          o[4 * (A_D / 8)] = 0.0f;                                                                       \
          o[4 * (A_D / 8) + 2] = 0.0f;                                                                   \
        }                                                                                                \
      while (0)
#else
#define A_TAKE_SUMS(c0, c1) do { } while (0)
#endif

      /* O's rows by their corrections, where some row of the warp has one */
#define A_RESCALE_O(c0, c1)                                                                              \
      if (!A_LAZY_RESCALE || __any_sync (0xffffffffu, c0 != 1.0f || c1 != 1.0f))                         \
        _Pragma ("unroll")                                                                               \
        for (int j = 0; j < A_DV / 8; j++)                                                               \
          {                                                                                              \
            o[4 * j] *= c0;                                                                              \
            o[4 * j + 1] *= c0;                                                                          \
            o[4 * j + 2] *= c1;                                                                          \
            o[4 * j + 3] *= c1;                                                                          \
          }

#if !A_PERSIST
      if (n_chunks > 0)
        {
          napkin_attn_wait (A_Q_FULL (0), 0);
#if A_OVERLAP
#if A_PINGPONG
          /* Consumer c issues after c − 1 (cyclically) and hands over when its wgmmas are issued. */
#define A_TURN_BEGIN() asm volatile ("bar.sync %0, 256;" :: "r" (1 + c) : "memory")
#define A_TURN_END() asm volatile ("bar.arrive %0, 256;" :: "r" (1 + (c + 1) % A_NWG) : "memory")
          if (c == A_NWG - 1)
            A_TURN_END ();   /* the first turn is consumer 0's */
#else
#define A_TURN_BEGIN() do { } while (0)
#define A_TURN_END() do { } while (0)
#endif
          {
            float c0, c1;

            A_TURN_BEGIN ();
            A_ISSUE_QK (0);
            A_TURN_END ();
            asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            NKP_CAT (NKP_NAME, _fence_s) (s);
            A_SC_APPLY ();
            A_MASK (0);
            A_SOFTMAX (c0, c1);
            A_PACK_P ();
            A_SC_COPY (1);
          }
          for (int it = 0; it + 1 < n_chunks; it++)
            {
              float c0, c1;

              A_TURN_BEGIN ();
              A_ISSUE_QK (it + 1);
              A_ISSUE_PV (it);
              A_TURN_END ();
              /* Groups complete in order: the newest (P·V) may still run. */
              asm volatile ("wgmma.wait_group.sync.aligned 1;" ::: "memory");
              NKP_CAT (NKP_NAME, _fence_s) (s);
              A_SC_APPLY ();
              A_MASK (it + 1);
              A_SOFTMAX (c0, c1);
              asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
              NKP_CAT (NKP_NAME, _fence_o) (o);
              napkin_attn_arrive (A_EMPTY (it % A_ST));
              A_TAKE_SUMS (c0, c1);
              A_RESCALE_O (c0, c1);
              A_PACK_P ();
              A_SC_COPY (it + 2);
            }
          A_TURN_BEGIN ();
          A_ISSUE_PV (n_chunks - 1);
          /* Every turn handed over is taken: the last consumer keeps its last one. */
          if (c != A_NWG - 1)
            A_TURN_END ();
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          NKP_CAT (NKP_NAME, _fence_o) (o);
          napkin_attn_arrive (A_EMPTY ((n_chunks - 1) % A_ST));
          A_TAKE_SUMS (1.0f, 1.0f);
#undef A_TURN_BEGIN
#undef A_TURN_END
#else
          for (int it = 0; it < n_chunks; it++)
            {
              float c0, c1;

              A_ISSUE_QK (it);
              asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
              NKP_CAT (NKP_NAME, _fence_s) (s);
              A_SC_APPLY ();
              A_MASK (it);
              A_SOFTMAX (c0, c1);
              A_TAKE_SUMS (c0, c1);
              A_RESCALE_O (c0, c1);
              A_PACK_P ();
              A_SC_COPY (it + 1);
              A_ISSUE_PV (it);
              asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
              NKP_CAT (NKP_NAME, _fence_o) (o);
              napkin_attn_arrive (A_EMPTY (it % A_ST));
            }
          A_TAKE_SUMS (1.0f, 1.0f);
#endif
        }

#endif /* !A_PERSIST */

      /* Row h of the thread (query q of head g): the normalised output (split: the partial
       * output and its log-sum-exp). */
#if A_SPLIT > 1
#define A_STORE_ROW(h, g, q, inv)                                                                        \
      do                                                                                                 \
        {                                                                                                \
          const long prow = (kv_flat * A_G + (g)) * A_NQ + (q);                                          \
          float *ob = part + (split * A_ROWS_ALL + prow) * A_D;                                          \
                                                                                                         \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < A_D / 8; j++)                                                              \
            napkin_attn_st2 (&ob[j * 8 + (lane & 3) * 2], o[4 * j + 2 * (h)] * (inv), o[4 * j + 2 * (h) + 1] * (inv)); \
          if ((lane & 3) == 0)                                                                           \
            part[(long) A_SPLIT * A_ROWS_ALL * A_D + split * A_ROWS_ALL + prow]                          \
              = l_row[h] > 0.0f ? m_row[h] + __log2f (l_row[h]) : NAPKIN_NEG_INF;                        \
        }                                                                                                \
      while (0)
#else
#define A_STORE_ROW(h, g, q, inv)                                                                        \
      do                                                                                                 \
        {                                                                                                \
          NKP_OT *ob = Og + o_base + (g) * A_OGS + (q) * A_ORS;                                          \
                                                                                                         \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < A_D / 8; j++)                                                              \
            napkin_attn_st2 (&ob[j * 8 + (lane & 3) * 2], o[4 * j + 2 * (h)] * (inv), o[4 * j + 2 * (h) + 1] * (inv)); \
        }                                                                                                \
      while (0)
#endif
#if NKP_STATS
      /* Row h's base-2 log-sum-exp (as the split's) and its fp32 O before rounding (D floats a
       * row): the fused backward's first launch then makes no product, only Σ dO⊙O from it
       * (docs/plan.md, "The backward on wgmma"); a row that saw no key: +∞ and zeros, as that
       * launch writes them itself. */
#define A_STATS_ROW(h, g, q, inv)                                                                        \
      do                                                                                                 \
        {                                                                                                \
          const long srow = (kv_flat * A_G + (g)) * A_NQ + (q);                                          \
          float *o32 = stat_o32 + srow * A_D + (lane & 3) * 2;                                           \
                                                                                                         \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < A_D / 8; j++)                                                              \
            *(float2 *) (o32 + j * 8) = make_float2 (o[4 * j + 2 * (h)] * (inv), o[4 * j + 2 * (h) + 1] * (inv)); \
          if ((lane & 3) == 0)                                                                           \
            stat_lse[srow] = l_row[h] > 0.0f ? m_row[h] + __log2f (l_row[h]) : -NAPKIN_NEG_INF;           \
        }                                                                                                \
      while (0)
#else
#define A_STATS_ROW(h, g, q, inv) do { } while (0)
#endif
      /* The running sums were kept per thread: add the quad's, then divide; the rows of
       * the tile at g0, q0_ stored. */
#define A_STORE_O(q0_)                                                                                   \
      do                                                                                                 \
        {                                                                                                \
          _Pragma ("unroll")                                                                             \
          for (int r = 0; r < 2; r++)                                                                    \
            {                                                                                            \
              l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 1);                                    \
              l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 2);                                    \
            }                                                                                            \
          _Pragma ("unroll")                                                                             \
          for (int h = 0; h < 2; h++)                                                                    \
            {                                                                                            \
              const int r = h ? r1 : r0;                                                                 \
              const long g = g0 + r / A_BQ, q = (q0_) + r % A_BQ;                                        \
              /* a row that saw no key (wholly masked) is zero */                                        \
              const float inv = l_row[h] > 0.0f ? NKP_F (NKP_V_SCALE) / l_row[h] : 0.0f;                 \
                                                                                                         \
              if (r < A_ROWS && g < A_G && q < A_NQ)                                                     \
                {                                                                                        \
                  A_STORE_ROW (h, g, q, inv);                                                            \
                  A_STATS_ROW (h, g, q, inv);                                                            \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
      while (0)
#if !A_PERSIST
      A_STORE_O (q0);
#else
      {
        /* Each tile of the range: one chunk of all the keys, from the K/V stage of the
         * matrix it reads (a new one: the last released), Q from buffer i % QB (released
         * once Q·Kᵀ has read it), O stored before the next tile. */
        int kv_row_prev = -1, kv_plane_prev = -1, done = 0, kv_n = -1;

        for (int w = 0; w < n_walk; w++)
          {
            a_tile (a_walk (w));
            _Pragma ("unroll")
            for (int j = 0; j < A_DV / 2; j++)
              o[j] = 0.0f;
            m_row[0] = m_row[1] = -1e30f;
            l_row[0] = l_row[1] = 0.0f;
            if (a_sees (qt * A_BQ))
              {
                const int qb = done % A_QB;
                float c0, c1;

                if ((int) kv_row0 != kv_row_prev || (int) kv_plane != kv_plane_prev)
                  {
                    kv_row_prev = (int) kv_row0;
                    kv_plane_prev = (int) kv_plane;
                    if (kv_n >= 0)
                      napkin_attn_arrive (A_EMPTY (kv_n % A_ST));
                    kv_n++;
                  }
#if A_MASK_LO
                kmin0 = (int) (qt * A_BQ + r0 % A_BQ + A_OFFSET - A_LEFT);
                kmin1 = (int) (qt * A_BQ + r1 % A_BQ + A_OFFSET - A_LEFT);
#endif
#if A_MASK_HI
                kmax0 = (int) NAPKIN_MIN (A_NKV, qt * A_BQ + r0 % A_BQ + A_OFFSET + A_RIGHT + 1);
                kmax1 = (int) NAPKIN_MIN (A_NKV, qt * A_BQ + r1 % A_BQ + A_OFFSET + A_RIGHT + 1);
#endif
                napkin_attn_wait (A_Q_FULL (qb), (done / A_QB) & 1);
                A_ISSUE_QK_Q (kv_n, q_s + (unsigned) qb * A_Q_BYTES);
                asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                NKP_CAT (NKP_NAME, _fence_s) (s);
                napkin_attn_arrive (A_Q_EMPTY (qb));
                done++;
                A_MASK_KEYS (0);
                A_SOFTMAX (c0, c1);
                (void) c0;
                (void) c1;
                A_PACK_P ();
                A_ISSUE_PV (kv_n);
                asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                NKP_CAT (NKP_NAME, _fence_o) (o);
                A_TAKE_SUMS (1.0f, 1.0f);
              }
            A_STORE_O (qt * A_BQ);
          }
      }
#endif
#undef A_STORE_ROW
#undef A_STATS_ROW
#undef A_STORE_O
#undef A_SC_COPY_ONE
#undef A_SC_COPY
#undef A_ISSUE_QK_Q
#undef A_SC_APPLY_ONE
#undef A_SC_APPLY
#undef A_ISSUE_QK
#undef A_ISSUE_PV
#undef A_PV_DESC
#undef A_MASK
#undef A_MASK_KEYS
#undef A_SOFTMAX
#undef A_PACK_P
#undef A_PACK_PAIR
#undef A_RESCALE_O
#undef A_TAKE_SUMS
#undef A_MAX_SLACK
#undef A_LAZY_RESCALE
    }
#undef A_Q_FULL
#undef A_Q_EMPTY
#undef A_FULL_K
#undef A_FULL_V
#undef A_EMPTY
#undef A_VT_FULL
#undef A_PV_READY
}
#undef A_ROWS
#undef A_VS
#undef A_VT_IN
#undef A_VRS
#undef A_VR_BYTES
#undef A_BQ
#undef A_NWG
#undef A_THREADS
#undef A_BKV
#undef A_D
#undef A_DV
#undef A_ONES
#undef A_ST
#undef A_NQ
#undef A_NKV
#undef A_G
#undef A_GT
#undef A_QE
#undef A_FP8_QK
#undef A_FP8_V
#undef A_DS
#undef A_VDS
#undef A_QROWS
#undef A_Q_BYTES
#undef A_K_BYTES
#undef A_V_BYTES
#undef A_QK_STEPS
#undef A_PV_STEPS
#undef A_OVERLAP
#undef A_PINGPONG
#undef A_KV_RANK3
#undef A_SPLIT
#undef A_CPS
#undef A_MASK_LO
#undef A_MASK_HI
#undef A_LEFT
#undef A_RIGHT
#undef A_OFFSET
#undef A_REVERSE
#undef A_BAND
#undef A_QTILES
#undef A_GTILES
#undef A_CHUNKS
#undef A_QGS
#undef A_QRS
#undef A_OGS
#undef A_ORS
#undef A_ROWS_ALL
#undef A_HIDDEN
#undef A_NSC
#undef A_SC_WARP
#undef A_SCAN
#undef A_PERSIST
#undef A_SEEN_LO
#undef A_NSEEN
#undef A_QB
#undef A_QBARS
#undef NKP_SCORES
