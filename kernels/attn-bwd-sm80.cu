/* Attention backward on mma.sync (sm_80 and later; docs/plan.md, "Attention kernels"): the
 * gradients dQ, dK, dV of O = softmax (α·Q·Kᵀ, masked)·V from Q, K, V, the forward's O and
 * dO, fp16/bf16 in, fp32 accumulate, any layout with the head dimension contiguous, GQA
 * (GROUP query heads share a K/V head: dK and dV sum over them). FlashAttention-2's
 * backward in three kernels, launched in this order on one stream:
 *   pre   a block of 16·PRE_WARPS query rows of one query head: per row the base-2
 *         log-sum-exp lse2 = log2 Σ exp2 (c·S) over the keys it sees (c = α·log2 e; +∞ for a
 *         row that sees none) and Drow = Σ P⊙dP over the same keys (P = exp2 (c·S − lse2),
 *         dP = dO·Vᵀ, both in fp32 from mma.sync as main computes them; 0 for a row that
 *         sees none) — one online-softmax pass, keys in chunks of 64 (K and V) through two
 *         cp.async buffers, Σ exp2 (c·S − m)·dP rescaled with the running sum as the
 *         running max m grows — and the row's dQ accumulator set to zero, so no memset is
 *         needed before main. Drow so computed makes Σ_j dS_ij vanish to fp32 rounding; Σ
 *         dO⊙O from the 16-bit O would not (its rounding, times K's mean, drifts dQ), so O
 *         is read by no kernel (OREF is accepted, unused);
 *   main  a block of BKV = 16·WARPS keys of one K/V head, K and V loaded once, a warp 16
 *         keys: over each query head of the group and each tile of BQ queries that sees a key
 *         of the block (Q, dO, lse2, Drow double-buffered by cp.async), every product with the
 *         keys as rows: Sᵀ = K·Qᵀ, Pᵀ = exp2 (c·Sᵀ − lse2), dPᵀ = V·dOᵀ, dV += Pᵀ·dO,
 *         dSᵀ = Pᵀ⊙(dPᵀ − Drow), dK += dSᵀ·Q (Pᵀ and dSᵀ re-packed in registers as the A
 *         fragments, as the forward does P); dSᵀ then goes through shared memory for the
 *         tile's dQ += dS·K over the block's keys, split over the warps and added to the fp32
 *         accumulator with red.global.add; at the end dK·DALPHA and dV in OT;
 *   dq    dQ = DALPHA·accumulator, in type OT.
 * dQ, dK and dV have their own strides (DQ_GROUP, DQ_ROW, DK_ROW, DV_ROW and the LEAD
 * fragment's dq_base, dk_base, dv_base): a gradient may order its axes apart from its
 * primal's (an imported block's lies as the projection that reads it), the head last.
 * For the code generator (S = DP + 8; shared memory in bytes, dynamic; above 48 KiB —
 * main's always, pre's from DP 64 at 4 warps — the launch raises
 * cudaFuncAttributeMaxDynamicSharedMemorySize):
 *   pre   grid KV_BATCH·GROUP·⌈NQ / (16·PRE_WARPS)⌉, 32·PRE_WARPS threads,
 *         shared 4·(16·PRE_WARPS + 128)·S  (Q and dO rows, two buffers of K and V chunks)
 *   main  grid KV_BATCH·⌈NKV / (16·WARPS)⌉, 32·WARPS threads,
 *         shared 2·(32·WARPS·S + 4·BQ·S + 16·WARPS·(BQ + 8)) + 16·BQ
 *   dq    grid KV_BATCH·GROUP·⌈NQ / 64⌉, 256 threads, no shared memory
 * Block indices: pre and dq (blk·GROUP + g)·TILES + tile, main blk·KEY_BLOCKS + key block,
 * blk the LEAD fragment's (the K/V head). Scratch, fp32, rows (kv_flat·GROUP + g)·NQ + i:
 * LSE and DROW one value a row, DQA D values a row (16-byte aligned). Q, K, V, dO rows are
 * copied in 16-byte pieces (16-byte aligned), the outputs written in pairs.
 * WARPS is 4 or 8 and BQ 16, 32 or 64, WARPS a multiple of BQ/16. dK and dV hold
 * 2·(DP/8)·4 registers a thread; ptxas (sm_80, sm_90) fits every such tile in 255 without
 * spilling at D 64, 80, 96 and 128, and BQ 16 or 32 at any D up to 128 (BQ 64 spills a few
 * bytes at D 112, and at D 32 with 4 warps). */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "attn-prims.cuh"
/* default parameters: an instantiation the code generator prints (4 × 16 heads, causal,
 * 4096 queries and keys, d 128; Q, K, V, O, dO, dQ, dK, dV, then one fp32 scratch with LSE,
 * DROW and DQA one after the other) */
#define NKB_NAME_PRE napkin_k0_pre
#define NKB_NAME_MAIN napkin_k0_main
#define NKB_NAME_DQ napkin_k0_dq
#define NKB_D 128
#define NKB_DP 128
#define NKB_NQ 4096
#define NKB_NKV 4096
#define NKB_GROUP 1
#define NKB_KV_BATCH 64
#define NKB_MASK_LO 0
#define NKB_MASK_HI 1
#define NKB_LEFT 0
#define NKB_RIGHT 0
#define NKB_OFFSET 0
#define NKB_Q_GROUP 524288
#define NKB_Q_ROW 128
#define NKB_O_GROUP 524288
#define NKB_O_ROW 128
#define NKB_K_ROW 128
#define NKB_DQ_GROUP 524288
#define NKB_DQ_ROW 128
#define NKB_DK_ROW 128
#define NKB_DV_ROW 128
#define NKB_ALPHA 8.838834765e-02
#define NKB_DALPHA 8.838834765e-02
#define NKB_T napkin_f16
#define NKB_OT napkin_f16
#define NKB_MMA f16
#define NKB_QREF ((const napkin_f16 *) args.p[0])
#define NKB_KREF ((const napkin_f16 *) args.p[1])
#define NKB_VREF ((const napkin_f16 *) args.p[2])
#define NKB_OREF ((const napkin_f16 *) args.p[3])
#define NKB_DOREF ((const napkin_f16 *) args.p[4])
#define NKB_DQREF ((napkin_f16 *) args.p[5])
#define NKB_DKREF ((napkin_f16 *) args.p[6])
#define NKB_DVREF ((napkin_f16 *) args.p[7])
#define NKB_LSEREF ((float *) args.p[8])
#define NKB_DROWREF ((float *) args.p[8] + 262144L)
#define NKB_DQAREF ((float *) args.p[8] + 524288L)
#define NKB_GSPLIT 1
#define NKB_DKAREF ((float *) args.p[8] + 34078720L)
#define NKB_DVAREF ((float *) args.p[8] + 67633152L)
#define NKB_WARPS 8
/* -DNKB_MAIN_SM90=1 (for sm_90a): main on wgmma, its tiles */
#if NKB_MAIN_SM90
#define NKB_BQ 64
#else
#define NKB_BQ 32
#endif
#define NKB_PRE_WARPS 4
/* the LEAD fragment the printer writes: heads, then batches */
#define NKB_LEAD_ALONE                                                                            \
  {                                                                                               \
    const long i_ = blk % 16L;                                                                    \
                                                                                                  \
    blk /= 16L;                                                                                   \
    q_base += i_ * 524288L;                                                                       \
    o_base += i_ * 524288L;                                                                       \
    k_base += i_ * 524288L;                                                                       \
    kv_flat += i_ * 1L;                                                                           \
    dq_base += i_ * 524288L;                                                                      \
    dk_base += i_ * 524288L;                                                                      \
    dv_base += i_ * 524288L;                                                                      \
  }                                                                                               \
  {                                                                                               \
    const long i_ = blk % 4L;                                                                     \
                                                                                                  \
    blk /= 4L;                                                                                    \
    q_base += i_ * 8388608L;                                                                      \
    o_base += i_ * 8388608L;                                                                      \
    k_base += i_ * 8388608L;                                                                      \
    kv_flat += i_ * 16L;                                                                          \
    dq_base += i_ * 8388608L;                                                                     \
    dk_base += i_ * 8388608L;                                                                     \
    dv_base += i_ * 8388608L;                                                                     \
  }
#endif /* NAPKIN_GENERATED */
/* The printer (src/codegen/napkin-skeleton.c) defines each parameter KEY as NKP_KEY: the
 * NKB_ names stand for those here, and are undefined again at the end. */
#if defined (NKP_D) && !defined (NKB_D)
#define NKB_FROM_NKP
#define NKB_D NKP_D
#define NKB_DP NKP_DP
#define NKB_NQ NKP_NQ
#define NKB_NKV NKP_NKV
#define NKB_GROUP NKP_GROUP
#define NKB_KV_BATCH NKP_KV_BATCH
#define NKB_MASK_LO NKP_MASK_LO
#define NKB_MASK_HI NKP_MASK_HI
#define NKB_LEFT NKP_LEFT
#define NKB_RIGHT NKP_RIGHT
#define NKB_OFFSET NKP_OFFSET
#define NKB_Q_GROUP NKP_Q_GROUP
#define NKB_Q_ROW NKP_Q_ROW
#define NKB_O_GROUP NKP_O_GROUP
#define NKB_O_ROW NKP_O_ROW
#define NKB_K_ROW NKP_K_ROW
#define NKB_DQ_GROUP NKP_DQ_GROUP
#define NKB_DQ_ROW NKP_DQ_ROW
#define NKB_DK_ROW NKP_DK_ROW
#define NKB_DV_ROW NKP_DV_ROW
#define NKB_ALPHA NKP_ALPHA
#define NKB_DALPHA NKP_DALPHA
#define NKB_T NKP_T
#define NKB_OT NKP_OT
#define NKB_MMA NKP_MMA
#define NKB_QREF NKP_QREF
#define NKB_KREF NKP_KREF
#define NKB_VREF NKP_VREF
#define NKB_OREF NKP_OREF
#define NKB_DOREF NKP_DOREF
#define NKB_DQREF NKP_DQREF
#define NKB_DKREF NKP_DKREF
#define NKB_DVREF NKP_DVREF
#define NKB_LSEREF NKP_LSEREF
#define NKB_DROWREF NKP_DROWREF
#define NKB_DQAREF NKP_DQAREF
#ifdef NKP_STATS_GIVEN
#define NKB_STATS_GIVEN NKP_STATS_GIVEN
#define NKB_O32REF NKP_O32REF
#endif
#ifdef NKP_GSPLIT
#define NKB_GSPLIT NKP_GSPLIT
#define NKB_DKAREF NKP_DKAREF
#define NKB_DVAREF NKP_DVAREF
#endif
#define NKB_WARPS NKP_WARPS
#define NKB_BQ NKP_BQ
#define NKB_PRE_WARPS NKP_PRE_WARPS
#ifdef NKP_MAIN_SM90
#define NKB_MAIN_SM90 NKP_MAIN_SM90
#endif
#ifdef NKP_NAME_PRE
#define NKB_NAME_PRE NKP_NAME_PRE
#define NKB_NAME_MAIN NKP_NAME_MAIN
#define NKB_NAME_DQ NKP_NAME_DQ
#else
#define NKB_NAME NKP_NAME
#endif
#endif
/* Score operands (biases added to the raw scores, int8 keep flags), read from device memory
 * where pre and main make each score, the query row and key checked first:
 *   NKB_SC_ANY            1 where there is one
 *   NKB_SC_DECL           the declarations of their offsets scI_base (the LEAD fragment adds
 *                         the K/V head's)
 *   NKB_SC_BIAS(g, q, k)  Σ coef·x of the biases at query head g of the group, row q, key k
 *   NKB_SC_KEEP(g, q, k)  whether every mask keeps that score
 * and a bias's gradient (NKB_SC_GRAD 1): its fp32 sums NKB_DB_ACC (NKB_DB_ELEMS floats,
 * zeroed by pre), NKB_DB_ADD(g, q, k, dS) adding its weight times dS where main makes dS
 * (red.global.add), NKB_DB_OUT the gradient dq writes them to, as laid out */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/BWSCORES"
#else
#define NKB_SC_GRAD 0
#define NKB_SC_ANY 0
#define NKB_SC_DECL
#define NKB_SC_BIAS(g_, q_, k_) 0.0f
#define NKB_SC_KEEP(g_, q_, k_) true
#endif /* napkin-fragment/BWSCORES */
/* three names from one (NKB_NAME): NAME_pre, NAME_main, NAME_dq */
#ifndef NKB_NAME_PRE
#define NKB_NAMES_FROM_ONE
#define NKB_NAME_PRE NKP_CAT (NKB_NAME, _pre)
#define NKB_NAME_MAIN NKP_CAT (NKB_NAME, _main)
#define NKB_NAME_DQ NKP_CAT (NKB_NAME, _dq)
#endif

/* Helpers that do not depend on the parameters: once per module. */
#ifndef NAPKIN_ATTN_BWD
#define NAPKIN_ATTN_BWD
/* ldmatrix .x4: lanes 8i … 8i + 7 give the row addresses of 8 × 8 matrix i (16 bytes a row);
 * register i of lane l then holds matrix i's row l/4, columns 2·(l%4) and 2·(l%4) + 1 — or,
 * with .trans, rows 2·(l%4) and 2·(l%4) + 1 of column l/4. */
__device__ __forceinline__ void
napkin_bwd_ldsm (unsigned (&r)[4], const unsigned short *p)
{
  asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                : "=r" (r[0]), "=r" (r[1]), "=r" (r[2]), "=r" (r[3]) : "r" (napkin_smem_addr (p)));
}

__device__ __forceinline__ void
napkin_bwd_ldsm_t (unsigned (&r)[4], const unsigned short *p)
{
  asm volatile ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                : "=r" (r[0]), "=r" (r[1]), "=r" (r[2]), "=r" (r[3]) : "r" (napkin_smem_addr (p)));
}

/* The same from a shared-memory byte address. */
__device__ __forceinline__ void
napkin_bwd_ldsm (unsigned (&r)[4], unsigned a)
{
  asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                : "=r" (r[0]), "=r" (r[1]), "=r" (r[2]), "=r" (r[3]) : "r" (a));
}

__device__ __forceinline__ void
napkin_bwd_ldsm_t (unsigned (&r)[4], unsigned a)
{
  asm volatile ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                : "=r" (r[0]), "=r" (r[1]), "=r" (r[2]), "=r" (r[3]) : "r" (a));
}

/* x, opaque to the compiler: addresses derived from it inside a loop stay there, each a
 * base register plus a constant that ptxas folds into the instruction (hoisted out of the
 * loop, every one held a register). */
__device__ __forceinline__ unsigned
napkin_bwd_opaque (unsigned x)
{
  unsigned r;

  asm volatile ("mov.b32 %0, %1;" : "=r" (r) : "r" (x));
  return r;
}

/* ROWS rows of D elements from src (rows `stride` elements apart) to dst (rows S halfs
 * apart) in 16-byte pieces by cp.async: rows from `valid` on and pieces past D are zero
 * (read from `safe`, a valid address). */
template <int ROWS, int THREADS, int D, int DP, int S, typename T>
__device__ __forceinline__ void
napkin_bwd_rows (unsigned short *dst, const T *src, long stride, long valid, const T *safe, int tid)
{
  constexpr int N = ROWS * (DP / 8);

#pragma unroll
  for (int k = 0; k < (N + THREADS - 1) / THREADS; k++)
    {
      const int c = tid + k * THREADS, r = c / (DP / 8), e = (c % (DP / 8)) * 8;
      const bool ok = r < valid && e < D;

      if (N % THREADS == 0 || c < N)
        napkin_attn_cp16 (napkin_smem_addr (dst + r * S + e), ok ? src + r * stride + e : safe, ok ? 16 : 0);
    }
}

/* One fp32 value by cp.async, zero where !ok (src is then only a valid address). */
__device__ __forceinline__ void
napkin_bwd_cp4 (unsigned dst, const float *src, bool ok)
{
  asm volatile ("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r" (dst), "l" (src), "r" (ok ? 4 : 0) : "memory");
}

/* Two fp32 values added to dst[0], dst[1] in device memory (8-byte aligned): one
 * vector reduction on sm_90 (PTX 8.1, CUDA 12.1), two before. */
__device__ __forceinline__ void
napkin_bwd_red2 (float *dst, float a, float b)
{
#if defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 \
    && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 1))
  asm volatile ("red.global.add.v2.f32 [%0], {%1, %2};" :: "l" (dst), "f" (a), "f" (b) : "memory");
#else
  asm volatile ("red.global.add.f32 [%0], %1;" :: "l" (dst), "f" (a) : "memory");
  asm volatile ("red.global.add.f32 [%0], %1;" :: "l" (dst + 1), "f" (b) : "memory");
#endif
}
#endif /* NAPKIN_ATTN_BWD */

/* The wgmma products of the Hopper main (sm_90a): m64n64k16 with both operands in shared
 * memory (_ss: K-major; _ss_t: both transposed) and m64nDk16 with A in registers and B
 * transposed (_rs), fp32 accumulators, each for f16 and bf16 (the tag's type); _fence
 * makes registers an async product writes or reads live up to where it is called (after
 * the wait that completes it). */
#if NKB_MAIN_SM90 && !defined (NAPKIN_ATTN_BWD90) && (!defined (__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)
#define NAPKIN_ATTN_BWD90
/* One set of products for a 16-bit type T, TY its PTX name (f16, bf16). */
#define NAPKIN_BWD9_PRODUCTS(T, TY) \
__device__ __forceinline__ void \
napkin_bwd9_ss (float (&d)[32], unsigned long long da, unsigned long long db, int acc, const T *) \
{ \
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %34, 0; " \
                "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0; }" \
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]) \
                : "l" (da), "l" (db), "r" (acc) : "memory"); \
} \
__device__ __forceinline__ void \
napkin_bwd9_ss_t (float (&d)[32], unsigned long long da, unsigned long long db, int acc, const T *) \
{ \
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %34, 0; " \
                "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 1, 1; }" \
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]) \
                : "l" (da), "l" (db), "r" (acc) : "memory"); \
} \
__device__ __forceinline__ void \
napkin_bwd9_rs (float (&d)[32], const unsigned (&a)[4], unsigned long long db, const T *) \
{ \
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %37, 0; " \
                "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1; }" \
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]) \
                : "r" (a[0]), "r" (a[1]), "r" (a[2]), "r" (a[3]), "l" (db), "r" (1) : "memory"); \
} \
__device__ __forceinline__ void \
napkin_bwd9_rs (float (&d)[64], const unsigned (&a)[4], unsigned long long db, const T *) \
{ \
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %69, 0; " \
                "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1; }" \
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63]) \
                : "r" (a[0]), "r" (a[1]), "r" (a[2]), "r" (a[3]), "l" (db), "r" (1) : "memory"); \
}
NAPKIN_BWD9_PRODUCTS (napkin_f16, "f16")
NAPKIN_BWD9_PRODUCTS (napkin_bf16, "bf16")
#undef NAPKIN_BWD9_PRODUCTS

__device__ __forceinline__ void
napkin_bwd9_fence (float (&d)[32])
{
  asm volatile ("" : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]) :: "memory");
}

__device__ __forceinline__ void
napkin_bwd9_fence (float (&d)[64])
{
  asm volatile ("" : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63]) :: "memory");
}



/* The async copies' and products' waits and fences, the shared-memory accesses: named, so
 * that the CPU emulation (tests/plan/simt-emu.hh) can stand in for them. */
__device__ __forceinline__ void napkin_bwd9_cp_commit (void) { asm volatile ("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void napkin_bwd9_cp_wait (void) { asm volatile ("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void
napkin_bwd9_proxy_fence (void)
{
  asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void napkin_bwd9_wg_fence (void) { asm volatile ("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void
napkin_bwd9_wg_commit (void)
{
  asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void
napkin_bwd9_wg_wait (void)
{
  asm volatile ("wgmma.wait_group.sync.aligned %0;" :: "n" (N) : "memory");
}
__device__ __forceinline__ void
napkin_bwd9_lds2 (unsigned addr, float (&v)[2])
{
  asm volatile ("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f" (v[0]), "=f" (v[1]) : "r" (addr));
}
__device__ __forceinline__ void
napkin_bwd9_sts (unsigned addr, unsigned v)
{
  asm volatile ("st.shared.b32 [%0], %1;" :: "r" (addr), "r" (v) : "memory");
}
__device__ __forceinline__ void
napkin_bwd9_sts2 (unsigned addr, float a, float b)
{
  asm volatile ("st.shared.v2.f32 [%0], {%1, %2};" :: "r" (addr), "f" (a), "f" (b) : "memory");
}
/* a named barrier over warpgroup c's 128 threads (ids 1, 2: 0 is __syncthreads') */
__device__ __forceinline__ void
napkin_bwd9_wg_sync (int c)
{
  /* constant ids: a register id makes ptxas reserve all 16 barriers */
  if (c == 0)
    asm volatile ("bar.sync 1, 128;" ::: "memory");
  else
    asm volatile ("bar.sync 2, 128;" ::: "memory");
}
/* bytes (a multiple of 16) of fp32 in shared memory added to device memory by the copy
 * engine; the group committed, waited for until read or until done */
__device__ __forceinline__ void
napkin_bwd9_bulk_add (float *dst, unsigned src, unsigned bytes)
{
  asm volatile ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
                :: "l" (dst), "r" (src), "r" (bytes) : "memory");
}
__device__ __forceinline__ void napkin_bwd9_bulk_commit (void) { asm volatile ("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void
napkin_bwd9_bulk_wait_read1 (void)
{
  asm volatile ("cp.async.bulk.wait_group.read 1;" ::: "memory");
}
__device__ __forceinline__ void napkin_bwd9_bulk_wait (void) { asm volatile ("cp.async.bulk.wait_group 0;" ::: "memory"); }
#endif /* NAPKIN_ATTN_BWD90 */

#define BW_D NKB_D
#define BW_DP NKB_DP                      /* D rounded up to 16 */
#define BW_S (BW_DP + 8)                  /* padded row stride (halfs): ldmatrix rows 16 bytes apart mod 128 */
#define BW_NQ ((long) (NKB_NQ))
#define BW_NKV ((long) (NKB_NKV))
#define BW_G ((long) (NKB_GROUP))
#define BW_MASK_LO (NKB_MASK_LO)
#define BW_MASK_HI (NKB_MASK_HI)
#define BW_LEFT ((long) (NKB_LEFT))
#define BW_RIGHT ((long) (NKB_RIGHT))
#define BW_OFF ((long) (NKB_OFFSET))
#define BW_QGS ((long) (NKB_Q_GROUP))
#define BW_QRS ((long) (NKB_Q_ROW))
#define BW_OGS ((long) (NKB_O_GROUP))
#define BW_ORS ((long) (NKB_O_ROW))
#define BW_KRS ((long) (NKB_K_ROW))
#define BW_DQGS ((long) (NKB_DQ_GROUP))
#define BW_DQRS ((long) (NKB_DQ_ROW))
#define BW_DKRS ((long) (NKB_DK_ROW))
#define BW_DVRS ((long) (NKB_DV_ROW))
#define BW_WARPS (NKB_WARPS)
#define BW_THREADS (32 * BW_WARPS)
#define BW_BKV (16 * BW_WARPS)            /* main: keys a block */
#define BW_BQ (NKB_BQ)                    /* main: queries a tile */
#define BW_TS (BW_BQ + 8)                 /* dSᵀ row stride (halfs) */
#define BW_KBLK ((BW_NKV + BW_BKV - 1) / BW_BKV)
#define BW_PW (NKB_PRE_WARPS)
#define BW_PTHREADS (32 * BW_PW)
#define BW_PROWS (16 * BW_PW)             /* pre: query rows a block */
#define BW_PBKV 64                        /* pre: keys a chunk */
#define BW_PQT ((BW_NQ + BW_PROWS - 1) / BW_PROWS)
#define BW_DQT ((BW_NQ + 63) / 64)
/* With the wgmma main, the fp32 dQ accumulator lies in tiles: a head's ⌈NQ/64⌉ tiles of 64
 * query rows (rows past NQ padding), each D/64 chunks of 64 rows × 64 columns, 16 KiB
 * that one bulk reduction adds; inside a chunk row r's column pair p at pair
 * p ^ 4·(r % 4) (the staging's stores free of bank conflicts). BW9_DQ_TILE: the float
 * offset of head row h's tile t. */
#define BW9_DQ_TILE(h, t) (((long) (h) * BW_DQT + (t)) * (64 * BW_D))
#define BW9_DQ_PAIR(r, p) ((p) ^ (((r) & 3) << 2))
/* The wgmma main's group split (NKB_GSPLIT, 1 where the K/V heads' key blocks fill the
 * SMs): each key block's GROUP query heads over GSPLIT blocks of GROUP/GSPLIT heads; dK and
 * dV are then added up in fp32 (NKB_DKAREF, NKB_DVAREF: K/V head, key, D floats a row,
 * zeroed by pre) and rounded by dq. */
#ifndef NKB_GSPLIT
#define NKB_GSPLIT 1
#endif
#ifndef NKB_STATS_GIVEN
#define NKB_STATS_GIVEN 0
#endif
#ifndef NKB_O32REF
#define NKB_O32REF ((const float *) 0)
#endif
#define BW9_GS ((long) (NKB_GSPLIT))
#define BW9_GH (BW_G / BW9_GS)
/* α·log2(e): the exponentials as exp2 */
#define BW_SCALE ((float) (NKB_ALPHA) * 1.4426950408889634f)
#define BW_DALPHA ((float) (NKB_DALPHA))
#define BW_INF __int_as_float (0x7f800000)
/* query q sees key k */
#define BW_VIS(q, k)                                                                              \
  ((k) < BW_NKV && (q) < BW_NQ && (!BW_MASK_LO || (k) >= (q) + BW_OFF - BW_LEFT)                  \
   && (!BW_MASK_HI || (k) <= (q) + BW_OFF + BW_RIGHT))
#define BW_MMA(c, a, b0, b1)                                                                      \
  asm ("mma.sync.aligned.m16n8k16.row.col.f32." NKP_STR (NKB_MMA) "." NKP_STR (NKB_MMA) ".f32 "    \
       "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                                     \
       : "+f" ((c)[0]), "+f" ((c)[1]), "+f" ((c)[2]), "+f" ((c)[3])                                \
       : "r" ((a)[0]), "r" ((a)[1]), "r" ((a)[2]), "r" ((a)[3]), "r" (b0), "r" (b1))

#if NKB_MAIN_SM90
/* ---- pre on Hopper (sm_90a): lse2, Drow, the dQ accumulator zeroed, on wgmma -------------- *
 * As pre below, a block of 128 query rows of one query head (two warpgroups of 64 rows),
 * 256 threads: Q and dO copied once, K and V in chunks of 64 keys through two cp.async
 * buffers (the 128-byte swizzle wgmma reads), S = Q·Kᵀ and dP = dO·Vᵀ by wgmma m64n64
 * (both operands K-major from shared memory), then the same online pass over the
 * accumulators. Launch: KV_BATCH·GROUP·⌈NQ / 128⌉ blocks of 256 threads, shared memory
 * 1024 + 2·128·D·2 + 4·64·D·2 bytes. */
#define BW9_PROWS 128
#define BW9_PQT ((BW_NQ + BW9_PROWS - 1) / BW9_PROWS)
#define BW9_PQ_BYTES (BW9_PROWS * BW_D * 2)      /* Q or dO: D/64 slices of 128 rows × 128 bytes */
#define BW9_PK_BYTES (BW_PBKV * BW_D * 2)        /* a chunk of K or V: D/64 slices of 64 rows */
extern "C" __global__ void __launch_bounds__ (256, 1)
NKB_NAME_PRE (const NapkinArgs args)
{
  const NKB_T *__restrict__ Qg = NKB_QREF;
  const NKB_T *__restrict__ Kg = NKB_KREF;
  const NKB_T *__restrict__ Vg = NKB_VREF;
  const NKB_T *__restrict__ dOg = NKB_DOREF;
  float *__restrict__ lse = NKB_LSEREF;
  float *__restrict__ drow = NKB_DROWREF;
  float *__restrict__ dqa = NKB_DQAREF;
  extern __shared__ __align__ (16) unsigned char smem9p_[];
  const unsigned base = (napkin_smem_addr (smem9p_) + 1023) & ~1023u;
  const unsigned q_s = base, do_s = q_s + BW9_PQ_BYTES;
  const unsigned k_s = do_s + BW9_PQ_BYTES;        /* [2] */
  const unsigned v_s = k_s + 2 * BW9_PK_BYTES;     /* [2] */
  const int tid = threadIdx.x, c = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;

  long blk = blockIdx.x;
  const long qt = blk % BW9_PQT;
  blk /= BW9_PQT;
  const long g = blk % BW_G;
  blk /= BW_G;
  long q_base = 0, o_base = 0, k_base = 0, kv_flat = 0, dq_base = 0, dk_base = 0, dv_base = 0;
  NKB_SC_DECL
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
  NKB_LEAD_ALONE
#endif /* napkin-fragment/LEAD */
  (void) dq_base;
  (void) dk_base;
  (void) dv_base;
  const long q0 = qt * BW9_PROWS, q1 = NAPKIN_MIN (q0 + BW9_PROWS, BW_NQ);
  const long row0 = (kv_flat * BW_G + g) * BW_NQ;
  long lo = 0, hi = BW_NKV, full_lo = 0, full_hi = BW_NKV;

  /* the keys some row sees, [lo, hi), and those every row sees, [full_lo, full_hi) */
  if (BW_MASK_LO)
    {
      lo = q0 + BW_OFF - BW_LEFT;
      lo = lo > 0 ? lo : 0;
      full_lo = q1 - 1 + BW_OFF - BW_LEFT;
    }
  if (BW_MASK_HI)
    {
      hi = NAPKIN_MIN (hi, q1 + BW_OFF + BW_RIGHT);
      full_hi = NAPKIN_MIN (full_hi, q0 + BW_OFF + BW_RIGHT + 1);
    }
  const long c_first = lo / BW_PBKV, c_end = hi > lo ? (hi + BW_PBKV - 1) / BW_PBKV : c_first;
  const int n_chunks = (int) (c_end - c_first);
  const long fv_lo = full_lo > 0 ? (full_lo + BW_PBKV - 1) / BW_PBKV : 0;
  const long fv_hi = full_hi > 0 ? full_hi / BW_PBKV : 0;
  const float scale = BW_SCALE;

  /* The block's tiles of the dQ accumulator to zero (its 64-row tiles, BW9_DQ_TILE,
   * padding rows and all), and the sums the main launch adds to */
  {
    float4 *z = (float4 *) (dqa + BW9_DQ_TILE (kv_flat * BW_G + g, q0 / 64));

    for (long i = tid; i < (q1 - q0 + 63) / 64 * (64 * BW_D / 4); i += 256)
      z[i] = make_float4 (0.0f, 0.0f, 0.0f, 0.0f);
  }
#if NKB_SC_GRAD
  for (long i = (long) blockIdx.x * 256 + tid; i < NKB_DB_ELEMS; i += (long) gridDim.x * 256)
    NKB_DB_ACC[i] = 0.0f;
#endif
  if (BW9_GS > 1)
    {
      float4 *zk = (float4 *) NKB_DKAREF, *zv = (float4 *) NKB_DVAREF;

      for (long i = (long) blockIdx.x * 256 + tid; i < NKB_KV_BATCH * BW_NKV * BW_D / 4; i += (long) gridDim.x * 256)
        zk[i] = zv[i] = make_float4 (0.0f, 0.0f, 0.0f, 0.0f);
    }
  /* NKB_STATS_GIVEN: the forward kernel before wrote the log-sum-exps and its fp32 O
   * (NKB_O32REF, D floats a row): the row terms are Σ dO⊙O over each row, a warp a row
   * (8 rows at once, two columns a lane in steps of 64), and nothing else to do */
  if (NKB_STATS_GIVEN)
    {
      const float *o32 = NKB_O32REF;

      for (int r = tid / 32; r < q1 - q0; r += 8)
        {
          const NKB_T *dor = dOg + o_base + g * BW_OGS + (q0 + r) * BW_ORS;
          const float *orow = o32 + (row0 + q0 + r) * BW_D;
          float acc = 0.0f;

          for (int e = 2 * lane; e < BW_D; e += 64)
            acc += napkin_ld (dor + e) * orow[e] + napkin_ld (dor + e + 1) * orow[e + 1];
#pragma unroll
          for (int w = 16; w > 0; w >>= 1)
            acc += __shfl_xor_sync (0xffffffffu, acc, w);
          if (lane == 0)
            drow[row0 + q0 + r] = acc;
        }
      return;
    }

  /* Row r's 16-byte chunk ch sits in slice ch/8 (slices `rows`·128 bytes apart) at chunk
   * (ch%8) ^ (r%8): Q and dO now (rows past NQ zero), each K/V chunk into its buffer. */
  for (int i = tid; i < BW9_PROWS * (BW_D / 8); i += 256)
    {
      const int r = i / (BW_D / 8), ch = i % (BW_D / 8);
      const unsigned off = (ch >> 3) * (BW9_PROWS * 128) + r * 128 + (((ch & 7) ^ (r & 7)) << 4);
      const bool ok = q0 + r < BW_NQ;

      napkin_attn_cp16 (q_s + off, ok ? Qg + q_base + g * BW_QGS + (q0 + r) * BW_QRS + ch * 8 : Qg, ok ? 16 : 0);
      napkin_attn_cp16 (do_s + off, ok ? dOg + o_base + g * BW_OGS + (q0 + r) * BW_ORS + ch * 8 : dOg, ok ? 16 : 0);
    }
#define BW9_CHUNK_COPY(kc_, b_)                                                                    \
  for (int i = tid; i < BW_PBKV * (BW_D / 8); i += 256)                                            \
    {                                                                                              \
      const int r = i / (BW_D / 8), ch = i % (BW_D / 8);                                           \
      const unsigned off = (b_) * BW9_PK_BYTES + (ch >> 3) * (BW_PBKV * 128) + r * 128             \
                           + (((ch & 7) ^ (r & 7)) << 4);                                          \
      const long key = (kc_) * BW_PBKV + r;                                                        \
      const bool ok = key < BW_NKV;                                                                \
      const long at = k_base + key * BW_KRS + ch * 8;                                              \
                                                                                                   \
      napkin_attn_cp16 (k_s + off, ok ? Kg + at : Kg, ok ? 16 : 0);                                \
      napkin_attn_cp16 (v_s + off, ok ? Vg + at : Vg, ok ? 16 : 0);                                \
    }
  if (n_chunks > 0)
    BW9_CHUNK_COPY (c_first, 0);
  napkin_bwd9_cp_commit ();

  float m_row[2] = { -1e30f, -1e30f }, l_row[2] = { 0.0f, 0.0f }, a_row[2] = { 0.0f, 0.0f };
  const int r0 = c * 64 + warp * 16 + (lane >> 2), r1 = r0 + 8;
  const long qi0 = q0 + r0, qi1 = q0 + r1;
  long kmin0 = 0, kmin1 = 0, kmax0 = BW_NKV, kmax1 = BW_NKV;

  if (BW_MASK_LO)
    {
      kmin0 = qi0 + BW_OFF - BW_LEFT;
      kmin1 = qi1 + BW_OFF - BW_LEFT;
    }
  if (BW_MASK_HI)
    {
      kmax0 = NAPKIN_MIN (BW_NKV, qi0 + BW_OFF + BW_RIGHT + 1);
      kmax1 = NAPKIN_MIN (BW_NKV, qi1 + BW_OFF + BW_RIGHT + 1);
    }

  for (int it = 0; it < n_chunks; it++)
    {
      const long kc = c_first + it;
      const int buf = it & 1;
      float s[32], dp[32];

      /* this chunk in (made visible to wgmma), the other buffer free (the last step's
       * barrier): the next chunk into it */
      napkin_bwd9_cp_wait ();
      napkin_bwd9_proxy_fence ();
      __syncthreads ();
      if (it + 1 < n_chunks)
        BW9_CHUNK_COPY (kc + 1, buf ^ 1);
      napkin_bwd9_cp_commit ();

      /* S = Q_c·Kᵀ, dP = dO_c·Vᵀ: A the warpgroup's 64 rows, B the chunk's keys, K-major */
      napkin_bwd9_wg_fence ();
#pragma unroll
      for (int kk = 0; kk < BW_D / 16; kk++)
        napkin_bwd9_ss (s, napkin_attn_desc (q_s + (kk / 4) * (BW9_PROWS * 128) + c * 8192 + (kk % 4) * 32, 16, 1024),
                        napkin_attn_desc (k_s + buf * BW9_PK_BYTES + (kk / 4) * (BW_PBKV * 128) + (kk % 4) * 32, 16,
                                          1024),
                        kk > 0, (const NKB_T *) 0);
#pragma unroll
      for (int kk = 0; kk < BW_D / 16; kk++)
        napkin_bwd9_ss (dp, napkin_attn_desc (do_s + (kk / 4) * (BW9_PROWS * 128) + c * 8192 + (kk % 4) * 32, 16, 1024),
                        napkin_attn_desc (v_s + buf * BW9_PK_BYTES + (kk / 4) * (BW_PBKV * 128) + (kk % 4) * 32, 16,
                                          1024),
                        kk > 0, (const NKB_T *) 0);
      napkin_bwd9_wg_commit ();
      napkin_bwd9_wg_wait<0> ();
      napkin_bwd9_fence (s);
      napkin_bwd9_fence (dp);

      /* c·S; keys a row does not see (or past NKV) to −∞ where some row does not see all.
       * s[4j + e]: rows r0 (e 0, 1) and r1 (2, 3), keys 8j + 2·(lane%4) (0, 2) and + 1 */
      const bool part = kc < fv_lo || kc >= fv_hi;
      const long j0 = kc * BW_PBKV + 2 * (lane & 3);

#pragma unroll
      for (int j = 0; j < 8; j++)
        {
          const long ja = j0 + 8 * j, jb = ja + 1;

#if NKB_SC_ANY
#pragma unroll
          for (int e = 0; e < 4; e++)
            {
              const long q = e < 2 ? qi0 : qi1, k = e & 1 ? jb : ja;

              if (q < BW_NQ && k < BW_NKV)
                s[4 * j + e] = NKB_SC_KEEP (g, q, k) ? s[4 * j + e] + NKB_SC_BIAS (g, q, k) : NAPKIN_NEG_INF;
            }
#endif
#pragma unroll
          for (int e = 0; e < 4; e++)
            s[4 * j + e] *= scale;
          if (part)
            {
              s[4 * j] = ja >= kmin0 && ja < kmax0 ? s[4 * j] : NAPKIN_NEG_INF;
              s[4 * j + 1] = jb >= kmin0 && jb < kmax0 ? s[4 * j + 1] : NAPKIN_NEG_INF;
              s[4 * j + 2] = ja >= kmin1 && ja < kmax1 ? s[4 * j + 2] : NAPKIN_NEG_INF;
              s[4 * j + 3] = jb >= kmin1 && jb < kmax1 ? s[4 * j + 3] : NAPKIN_NEG_INF;
            }
        }

      /* online max, sum and Σ exp2 (c·S − m)·dP (both rescaled as m grows) */
      float mx[2] = { m_row[0], m_row[1] };

#pragma unroll
      for (int j = 0; j < 8; j++)
        {
          mx[0] = fmaxf (mx[0], fmaxf (s[4 * j], s[4 * j + 1]));
          mx[1] = fmaxf (mx[1], fmaxf (s[4 * j + 2], s[4 * j + 3]));
        }
#pragma unroll
      for (int r = 0; r < 2; r++)
        {
          mx[r] = fmaxf (mx[r], __shfl_xor_sync (0xffffffffu, mx[r], 1));
          mx[r] = fmaxf (mx[r], __shfl_xor_sync (0xffffffffu, mx[r], 2));
        }
#pragma unroll
      for (int r = 0; r < 2; r++)
        {
          const float f = napkin_attn_exp2 (m_row[r] - mx[r]);

          l_row[r] *= f;
          a_row[r] *= f;
          m_row[r] = mx[r];
        }
#pragma unroll
      for (int j = 0; j < 8; j++)
        {
#pragma unroll
          for (int e = 0; e < 4; e++)
            s[4 * j + e] = napkin_attn_exp2 (s[4 * j + e] - mx[e >> 1]);
          l_row[0] += s[4 * j] + s[4 * j + 1];
          l_row[1] += s[4 * j + 2] + s[4 * j + 3];
          a_row[0] += s[4 * j] * dp[4 * j] + s[4 * j + 1] * dp[4 * j + 1];
          a_row[1] += s[4 * j + 2] * dp[4 * j + 2] + s[4 * j + 3] * dp[4 * j + 3];
        }
    }
  napkin_bwd9_cp_wait ();

#pragma unroll
  for (int r = 0; r < 2; r++)
    {
      l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 1);
      l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 2);
      a_row[r] += __shfl_xor_sync (0xffffffffu, a_row[r], 1);
      a_row[r] += __shfl_xor_sync (0xffffffffu, a_row[r], 2);
    }
#pragma unroll
  for (int h = 0; h < 2; h++)
    {
      const long q = h ? qi1 : qi0;

      if ((lane & 3) == 0 && q < BW_NQ)
        {
          lse[row0 + q] = l_row[h] > 0.0f ? m_row[h] + __log2f (l_row[h]) : BW_INF;
          drow[row0 + q] = l_row[h] > 0.0f ? a_row[h] / l_row[h] : 0.0f;
        }
    }
#undef BW9_CHUNK_COPY
}
#undef BW9_PROWS
#undef BW9_PQT
#undef BW9_PQ_BYTES
#undef BW9_PK_BYTES
#else
/* ---- pre: lse2, Drow, the dQ accumulator zeroed ---------------------------------------- */
extern "C" __global__ void __launch_bounds__ (BW_PTHREADS)
NKB_NAME_PRE (const NapkinArgs args)
{
  const NKB_T *__restrict__ Qg = NKB_QREF;
  const NKB_T *__restrict__ Kg = NKB_KREF;
  const NKB_T *__restrict__ Vg = NKB_VREF;
  const NKB_T *__restrict__ dOg = NKB_DOREF;
  float *__restrict__ lse = NKB_LSEREF;
  float *__restrict__ drow = NKB_DROWREF;
  float *__restrict__ dqa = NKB_DQAREF;
  extern __shared__ __align__ (16) unsigned short smem_[];
  unsigned short *Qs = smem_;                          /* [PROWS][S] */
  unsigned short *dOs = Qs + BW_PROWS * BW_S;          /* [PROWS][S] */
  unsigned short *Ks = dOs + BW_PROWS * BW_S;          /* [2][PBKV][S] */
  unsigned short *Vs = Ks + 2 * BW_PBKV * BW_S;        /* [2][PBKV][S] */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  long blk = blockIdx.x;
  const long qt = blk % BW_PQT;
  blk /= BW_PQT;
  const long g = blk % BW_G;
  blk /= BW_G;
  long q_base = 0, o_base = 0, k_base = 0, kv_flat = 0, dq_base = 0, dk_base = 0, dv_base = 0;
  NKB_SC_DECL
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
  NKB_LEAD_ALONE
#endif /* napkin-fragment/LEAD */
  (void) dq_base;
  (void) dk_base;
  (void) dv_base;
  const long q0 = qt * BW_PROWS, q1 = NAPKIN_MIN (q0 + BW_PROWS, BW_NQ);
  const long row0 = (kv_flat * BW_G + g) * BW_NQ;      /* (kv, g)'s first row in the scratch */
  long lo = 0, hi = BW_NKV, full_lo = 0, full_hi = BW_NKV;

  /* the keys some row sees, [lo, hi), and those every row sees, [full_lo, full_hi) */
  if (BW_MASK_LO)
    {
      lo = q0 + BW_OFF - BW_LEFT;
      lo = lo > 0 ? lo : 0;
      full_lo = q1 - 1 + BW_OFF - BW_LEFT;
    }
  if (BW_MASK_HI)
    {
      hi = NAPKIN_MIN (hi, q1 + BW_OFF + BW_RIGHT);
      full_hi = NAPKIN_MIN (full_hi, q0 + BW_OFF + BW_RIGHT + 1);
    }
  const long c_first = lo / BW_PBKV, c_end = hi > lo ? (hi + BW_PBKV - 1) / BW_PBKV : c_first;
  const int n_chunks = (int) (c_end - c_first);
  const long fv_lo = full_lo > 0 ? (full_lo + BW_PBKV - 1) / BW_PBKV : 0;
  const long fv_hi = full_hi > 0 ? full_hi / BW_PBKV : 0;
  const float scale = BW_SCALE;

  napkin_bwd_rows<BW_PROWS, BW_PTHREADS, BW_D, BW_DP, BW_S> (Qs, Qg + q_base + g * BW_QGS + q0 * BW_QRS, BW_QRS,
                                                              q1 - q0, Qg, tid);
  napkin_bwd_rows<BW_PROWS, BW_PTHREADS, BW_D, BW_DP, BW_S> (dOs, dOg + o_base + g * BW_OGS + q0 * BW_ORS, BW_ORS,
                                                              q1 - q0, dOg, tid);
  if (n_chunks > 0)
    {
      napkin_bwd_rows<BW_PBKV, BW_PTHREADS, BW_D, BW_DP, BW_S> (Ks, Kg + k_base + c_first * BW_PBKV * BW_KRS, BW_KRS,
                                                                 BW_NKV - c_first * BW_PBKV, Kg, tid);
      napkin_bwd_rows<BW_PBKV, BW_PTHREADS, BW_D, BW_DP, BW_S> (Vs, Vg + k_base + c_first * BW_PBKV * BW_KRS, BW_KRS,
                                                                 BW_NKV - c_first * BW_PBKV, Vg, tid);
    }
  asm volatile ("cp.async.commit_group;");

  /* While the copies fly: the block's rows of the dQ accumulator to zero. */
  {
    float4 *z = (float4 *) (dqa + (row0 + q0) * BW_D);

    for (long c = tid; c < (q1 - q0) * (BW_D / 4); c += BW_PTHREADS)
      z[c] = make_float4 (0.0f, 0.0f, 0.0f, 0.0f);
  }
#if NKB_SC_GRAD
  for (long i = (long) blockIdx.x * BW_PTHREADS + tid; i < NKB_DB_ELEMS; i += (long) gridDim.x * BW_PTHREADS)
    NKB_DB_ACC[i] = 0.0f;
#endif

  unsigned qf[BW_DP / 16][4], df[BW_DP / 16][4];
  float m_row[2] = { -1e30f, -1e30f }, l_row[2] = { 0.0f, 0.0f }, a_row[2] = { 0.0f, 0.0f };
  const int r0 = warp * 16 + (lane >> 2), r1 = r0 + 8;
  const long qi0 = q0 + r0, qi1 = q0 + r1;
  long kmin0 = 0, kmin1 = 0, kmax0 = BW_NKV, kmax1 = BW_NKV;

  if (BW_MASK_LO)
    {
      kmin0 = qi0 + BW_OFF - BW_LEFT;
      kmin1 = qi1 + BW_OFF - BW_LEFT;
    }
  if (BW_MASK_HI)
    {
      kmax0 = NAPKIN_MIN (BW_NKV, qi0 + BW_OFF + BW_RIGHT + 1);
      kmax1 = NAPKIN_MIN (BW_NKV, qi1 + BW_OFF + BW_RIGHT + 1);
    }

  for (int it = 0; it < n_chunks; it++)
    {
      const long kc = c_first + it;
      const int buf = it & 1;

      /* the next chunk into the other buffer (free since the barrier ending the last step) */
      if (it + 1 < n_chunks)
        {
          napkin_bwd_rows<BW_PBKV, BW_PTHREADS, BW_D, BW_DP, BW_S> (Ks + (buf ^ 1) * BW_PBKV * BW_S,
                                                                     Kg + k_base + (kc + 1) * BW_PBKV * BW_KRS, BW_KRS,
                                                                     BW_NKV - (kc + 1) * BW_PBKV, Kg, tid);
          napkin_bwd_rows<BW_PBKV, BW_PTHREADS, BW_D, BW_DP, BW_S> (Vs + (buf ^ 1) * BW_PBKV * BW_S,
                                                                     Vg + k_base + (kc + 1) * BW_PBKV * BW_KRS, BW_KRS,
                                                                     BW_NKV - (kc + 1) * BW_PBKV, Vg, tid);
        }
      asm volatile ("cp.async.commit_group;");
      asm volatile ("cp.async.wait_group 1;");
      __syncthreads ();

      /* Q's A fragments: rows warp·16 + l%16, columns 16·kk + 8·(l/16) — matrices 0-3 are
       * (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15),
       * i.e. a0 … a3 of m16n8k16; dO's the same */
      if (it == 0)
        {
#pragma unroll
          for (int kk = 0; kk < BW_DP / 16; kk++)
            {
              napkin_bwd_ldsm (qf[kk], Qs + (warp * 16 + (lane & 15)) * BW_S + kk * 16 + (lane >> 4) * 8);
              napkin_bwd_ldsm (df[kk], dOs + (warp * 16 + (lane & 15)) * BW_S + kk * 16 + (lane >> 4) * 8);
            }
        }

      const unsigned short *ks = Ks + buf * BW_PBKV * BW_S, *vs = Vs + buf * BW_PBKV * BW_S;
      float s[BW_PBKV / 8][4];

      /* S = Q·Kᵀ: B[k][n] = K[key n][k], K's rows as stored (no transpose): matrices 0-3 are
       * keys 8j … 8j + 7 at k 0-7 and 8-15 (b0, b1 of block j), then keys 8j + 8 … (block j + 1) */
#pragma unroll
      for (int j = 0; j < BW_PBKV / 8; j++)
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < BW_DP / 16; kk++)
#pragma unroll
        for (int j = 0; j < BW_PBKV / 8; j += 2)
          {
            unsigned b[4];

            napkin_bwd_ldsm (b, ks + (j * 8 + (lane & 7) + (lane >> 4) * 8) * BW_S + kk * 16 + ((lane >> 3) & 1) * 8);
            BW_MMA (s[j], qf[kk], b[0], b[1]);
            BW_MMA (s[j + 1], qf[kk], b[2], b[3]);
          }

      /* c·S; keys a row does not see (or past NKV) to −∞ where some row does not see all.
       * s[j]: rows lane/4 (0, 1) and lane/4 + 8 (2, 3), keys 8j + 2·(lane%4) (0, 2) and + 1 */
      const bool part = kc < fv_lo || kc >= fv_hi;
      const long j0 = kc * BW_PBKV + 2 * (lane & 3);

#pragma unroll
      for (int j = 0; j < BW_PBKV / 8; j++)
        {
          const long ja = j0 + 8 * j, jb = ja + 1;

#if NKB_SC_ANY
#pragma unroll
          for (int e = 0; e < 4; e++)
            {
              const long q = e < 2 ? qi0 : qi1, k = e & 1 ? jb : ja;

              if (q < BW_NQ && k < BW_NKV)
                s[j][e] = NKB_SC_KEEP (g, q, k) ? s[j][e] + NKB_SC_BIAS (g, q, k) : NAPKIN_NEG_INF;
            }
#endif
          s[j][0] *= scale;
          s[j][1] *= scale;
          s[j][2] *= scale;
          s[j][3] *= scale;
          if (part)
            {
              s[j][0] = ja >= kmin0 && ja < kmax0 ? s[j][0] : NAPKIN_NEG_INF;
              s[j][1] = jb >= kmin0 && jb < kmax0 ? s[j][1] : NAPKIN_NEG_INF;
              s[j][2] = ja >= kmin1 && ja < kmax1 ? s[j][2] : NAPKIN_NEG_INF;
              s[j][3] = jb >= kmin1 && jb < kmax1 ? s[j][3] : NAPKIN_NEG_INF;
            }
        }

      /* online max, sum and Σ exp2 (c·S − m)·dP (both rescaled as m grows) */
      float mx[2] = { m_row[0], m_row[1] };

#pragma unroll
      for (int j = 0; j < BW_PBKV / 8; j++)
        {
          mx[0] = fmaxf (mx[0], fmaxf (s[j][0], s[j][1]));
          mx[1] = fmaxf (mx[1], fmaxf (s[j][2], s[j][3]));
        }
#pragma unroll
      for (int r = 0; r < 2; r++)
        {
          mx[r] = fmaxf (mx[r], __shfl_xor_sync (0xffffffffu, mx[r], 1));
          mx[r] = fmaxf (mx[r], __shfl_xor_sync (0xffffffffu, mx[r], 2));
        }
#pragma unroll
      for (int r = 0; r < 2; r++)
        {
          const float f = napkin_attn_exp2 (m_row[r] - mx[r]);

          l_row[r] *= f;
          a_row[r] *= f;
          m_row[r] = mx[r];
        }
#pragma unroll
      for (int j = 0; j < BW_PBKV / 8; j++)
        {
          s[j][0] = napkin_attn_exp2 (s[j][0] - mx[0]);
          s[j][1] = napkin_attn_exp2 (s[j][1] - mx[0]);
          s[j][2] = napkin_attn_exp2 (s[j][2] - mx[1]);
          s[j][3] = napkin_attn_exp2 (s[j][3] - mx[1]);
          l_row[0] += s[j][0] + s[j][1];
          l_row[1] += s[j][2] + s[j][3];
        }

      /* dP = dO·Vᵀ, V's rows as K's, two blocks of 8 keys at a time (their accumulators
       * only), each folded into the running Σ at once */
#pragma unroll
      for (int j = 0; j < BW_PBKV / 8; j += 2)
        {
          float d0[4] = { 0.0f, 0.0f, 0.0f, 0.0f }, d1[4] = { 0.0f, 0.0f, 0.0f, 0.0f };

#pragma unroll
          for (int kk = 0; kk < BW_DP / 16; kk++)
            {
              unsigned b[4];

              napkin_bwd_ldsm (b, vs + (j * 8 + (lane & 7) + (lane >> 4) * 8) * BW_S + kk * 16 + ((lane >> 3) & 1) * 8);
              BW_MMA (d0, df[kk], b[0], b[1]);
              BW_MMA (d1, df[kk], b[2], b[3]);
            }
          a_row[0] += s[j][0] * d0[0] + s[j][1] * d0[1] + s[j + 1][0] * d1[0] + s[j + 1][1] * d1[1];
          a_row[1] += s[j][2] * d0[2] + s[j][3] * d0[3] + s[j + 1][2] * d1[2] + s[j + 1][3] * d1[3];
        }
      __syncthreads ();   /* this buffer is refilled next step */
    }
  asm volatile ("cp.async.wait_group 0;");

#pragma unroll
  for (int r = 0; r < 2; r++)
    {
      l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 1);
      l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 2);
      a_row[r] += __shfl_xor_sync (0xffffffffu, a_row[r], 1);
      a_row[r] += __shfl_xor_sync (0xffffffffu, a_row[r], 2);
    }
#pragma unroll
  for (int h = 0; h < 2; h++)
    {
      const long q = h ? qi1 : qi0;

      if ((lane & 3) == 0 && q < BW_NQ)
        {
          lse[row0 + q] = l_row[h] > 0.0f ? m_row[h] + __log2f (l_row[h]) : BW_INF;
          drow[row0 + q] = l_row[h] > 0.0f ? a_row[h] / l_row[h] : 0.0f;
        }
    }
}
#endif /* NKB_MAIN_SM90 */

#if NKB_MAIN_SM90
/* ---- main on Hopper (sm_90a): wgmma, FlashAttention-3's products ----------------------------- *
 * A block of 128 keys of one K/V head, two warpgroups of 64 keys each. K and V are copied
 * once, each query tile's Q, dO (64 rows), lse2 and Drow into one of two stages while the
 * tile before is computed (cp.async by all threads, into the 128-byte swizzle wgmma
 * reads; a barrier a tile). For every tile, warpgroup c computes with its keys as the
 * products' rows Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (wgmma m64n64, both operands K-major from
 * shared memory), Pᵀ and dSᵀ in registers, dV += Pᵀ·dO and dK += dSᵀ·Q with Pᵀ, dSᵀ as the
 * register A operand (the accumulator's layout is the A operand's) and dO, Q read N-major
 * through the transpose bit; dSᵀ goes to shared memory (a 128-byte row a key), and
 * dQ = dS·K is a wgmma with both operands transposed — at D 128 warpgroup c takes D's
 * columns 64c … 64c + 63 over all 128 keys, at D 64 every column over its own keys — its
 * fp32 result staged in shared memory and added to the accumulator by bulk reductions. The pre and dq launches are
 * the ones above; score operands and a bias's gradient as main's below. D 64 or 128, BQ 64. Launch: KV_BATCH·⌈NKV / 128⌉ blocks of 256 threads,
 * shared memory 1024 + 2·128·D·2 + 4·64·D·2 + 128·128 + 4·64·4 + 4·64·64·4 bytes. No warp is set
 * apart to copy: a producer warpgroup with the few registers setmaxnreg leaves it could
 * not hold its addresses (ptxas spilled), and the consumers need all 255. */
#define BW9_BKV 128
#define BW9_BQ 64
#define BW9_K_BYTES (BW9_BKV * BW_D * 2)            /* K or V: D/64 slices of 128 rows × 128 bytes */
#define BW9_Q_BYTES (BW9_BQ * BW_D * 2)             /* a stage's Q or dO: D/64 slices of 64 rows */
#define BW9_DS_BYTES (BW9_BKV * 128)                /* dSᵀ: a 128-byte row (64 queries) a key */
#define BW9_KBLK ((BW_NKV + BW9_BKV - 1) / BW9_BKV)
/* NKB_ABL (bench/gpu/attn-bwd-alone.sh only; the results then wrong): parts left out to
 * place the time — 1 dQ's reduction, 2 dQ's product, 4 the exponentials, 8 the copies of
 * tiles after the first, 16 the barrier before dQ's product, 32 the bulk reduction's
 * issue (its staging kept), 64 the wait for the staging buffer's reads */
#ifndef NKB_ABL
#define NKB_ABL 0
#endif
static_assert (BW_D == 64 || BW_D == 128, "the wgmma backward takes D 64 or 128");
static_assert (BW_BQ == 64, "the wgmma backward takes query tiles of 64");

extern "C" __global__ void __launch_bounds__ (256, 1)
NKB_NAME_MAIN (const NapkinArgs args)
{
  const NKB_T *__restrict__ Qg = NKB_QREF;
  const NKB_T *__restrict__ Kg = NKB_KREF;
  const NKB_T *__restrict__ Vg = NKB_VREF;
  const NKB_T *__restrict__ dOg = NKB_DOREF;
  NKB_OT *__restrict__ dKg = NKB_DKREF;
  NKB_OT *__restrict__ dVg = NKB_DVREF;
  const float *__restrict__ lse = NKB_LSEREF;
  const float *__restrict__ drow = NKB_DROWREF;
  float *__restrict__ dqa = NKB_DQAREF;
  extern __shared__ __align__ (16) unsigned char smem9_[];
  /* the swizzle repeats every 1024 bytes: the tiles aligned to it */
  const unsigned base = (napkin_smem_addr (smem9_) + 1023) & ~1023u;
  const unsigned k_s = base;
  const unsigned v_s = k_s + BW9_K_BYTES;
  const unsigned q_s = v_s + BW9_K_BYTES;          /* [2] */
  const unsigned do_s = q_s + 2 * BW9_Q_BYTES;     /* [2] */
  const unsigned ds_s = do_s + 2 * BW9_Q_BYTES;
  const unsigned f_s = ds_s + BW9_DS_BYTES;        /* lse2 [2][64], then Drow [2][64] */
  const unsigned dq_s = f_s + 4 * BW9_BQ * 4;      /* [2 stages][2 warpgroups][64 × 64 floats]: dQ's partials */
  const int tid = threadIdx.x;

  /* as main below: the key block the fast index (a head's Q, dO and dQ accumulator in L2),
   * then the group split's part */
  static_assert (NKB_GROUP % NKB_GSPLIT == 0, "GSPLIT divides GROUP");
  long blk = blockIdx.x;
  const long kb_ = blk % (long) BW9_KBLK;
  const long kb = BW_MASK_LO && !BW_MASK_HI ? BW9_KBLK - 1 - kb_ : kb_;
  blk /= (long) BW9_KBLK;
  const long g0 = blk % BW9_GS * BW9_GH;
  blk /= BW9_GS;
  long q_base = 0, o_base = 0, k_base = 0, kv_flat = 0, dq_base = 0, dk_base = 0, dv_base = 0;
  NKB_SC_DECL
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
  NKB_LEAD_ALONE
#endif /* napkin-fragment/LEAD */
  (void) dq_base;
  const long kb0 = kb * BW9_BKV, kb1 = NAPKIN_MIN (kb0 + BW9_BKV, BW_NKV);
  long i_min = 0, i_max = BW_NQ - 1;

  if (BW_MASK_HI)
    i_min = kb0 - BW_OFF - BW_RIGHT > 0 ? kb0 - BW_OFF - BW_RIGHT : 0;
  if (BW_MASK_LO)
    i_max = NAPKIN_MIN (i_max, kb1 - 1 - BW_OFF + BW_LEFT);
  const int qt_lo = (int) (i_min / BW9_BQ), nqt = i_max >= i_min ? (int) (i_max / BW9_BQ) + 1 - qt_lo : 0;
  const int n_tiles = (int) BW9_GH * nqt;

  /* Row r's 16-byte chunk c sits in slice c/8 (slices `slice` bytes apart) at chunk
   * (c%8) ^ (r%8): K and V now, tile 0 into stage 0. */
  for (int i = tid; i < BW9_BKV * (BW_D / 8); i += 256)
    {
      const int r = i / (BW_D / 8), c = i % (BW_D / 8);
      const unsigned off = (c >> 3) * (BW9_BKV * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);
      const bool ok = kb0 + r < BW_NKV;
      const long at = k_base + (kb0 + r) * BW_KRS + c * 8;

      napkin_attn_cp16 (k_s + off, ok ? Kg + at : Kg, ok ? 16 : 0);
      napkin_attn_cp16 (v_s + off, ok ? Vg + at : Vg, ok ? 16 : 0);
    }
#define BW9_TILE_COPY(it_, st_)                                                                    \
  do                                                                                               \
    {                                                                                              \
      const long g_ = g0 + (it_) / nqt, q_ = (long) (qt_lo + (it_) % nqt) * BW9_BQ;                 \
      const long row_ = (kv_flat * BW_G + g_) * BW_NQ + q_;                                        \
      const NKB_T *qsrc_ = Qg + q_base + g_ * BW_QGS + q_ * BW_QRS;                                 \
      const NKB_T *dosrc_ = dOg + o_base + g_ * BW_OGS + q_ * BW_ORS;                               \
                                                                                                   \
      for (int i = tid; i < BW9_BQ * (BW_D / 8); i += 256)                                         \
        {                                                                                          \
          const int r = i / (BW_D / 8), c = i % (BW_D / 8);                                        \
          const unsigned off = (st_) * BW9_Q_BYTES + (c >> 3) * (BW9_BQ * 128) + r * 128           \
                               + (((c & 7) ^ (r & 7)) << 4);                                       \
          const bool ok = q_ + r < BW_NQ;                                                          \
                                                                                                   \
          napkin_attn_cp16 (q_s + off, ok ? qsrc_ + r * BW_QRS + c * 8 : Qg, ok ? 16 : 0);         \
          napkin_attn_cp16 (do_s + off, ok ? dosrc_ + r * BW_ORS + c * 8 : dOg, ok ? 16 : 0);      \
        }                                                                                          \
      if (tid < 2 * BW9_BQ)                                                                        \
        {                                                                                          \
          const int r = tid % BW9_BQ;                                                              \
          const bool ok = q_ + r < BW_NQ;                                                          \
                                                                                                   \
          napkin_bwd_cp4 (f_s + 4 * ((tid < BW9_BQ ? 0 : 2 * BW9_BQ) + (st_) * BW9_BQ + r),         \
                          (tid < BW9_BQ ? lse : drow) + (ok ? row_ + r : 0), ok);                 \
        }                                                                                          \
    }                                                                                              \
  while (0)
  if (n_tiles > 0)
    BW9_TILE_COPY (0, 0);
  napkin_bwd9_cp_commit ();

  /* Warpgroup c: keys kb0 + 64c …; this thread's rows (keys) kw + lane/4 and + 8, its
   * columns 8j + 2·(lane%4) and + 1 of each 8 (queries, or D in dK, dV and dQ). */
  const int c = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const long kw = kb0 + c * 64 + warp * 16;
  const float scale = BW_SCALE;
  float dk[BW_D / 2], dv[BW_D / 2];

#pragma unroll
  for (int i = 0; i < BW_D / 2; i++)
    dk[i] = dv[i] = 0.0f;
  for (int it = 0; it < n_tiles; it++)
    {
      const int st = it & 1;
      /* (in int: NQ, NKV and the scratch's rows below 2³¹) */
      const int g = (int) g0 + it / nqt, qa = (qt_lo + it % nqt) * BW9_BQ, qz = NAPKIN_MIN (qa + BW9_BQ, (int) BW_NQ) - 1;
      const unsigned qst = q_s + st * BW9_Q_BYTES, dost = do_s + st * BW9_Q_BYTES;
      float s[32], dp[32], dq[32];
      unsigned p[16], ds[16];

      /* This tile is in (the generic proxy's copies made visible to wgmma's), and both
       * warpgroups are done with the tile before: its stage and dSᵀ are free. */
      napkin_bwd9_cp_wait ();
      napkin_bwd9_proxy_fence ();
      __syncthreads ();
      if (it + 1 < n_tiles && (!(NKB_ABL & 8) || it == 0))
        BW9_TILE_COPY (it + 1, st ^ 1);
      napkin_bwd9_cp_commit ();

      /* Sᵀ = K_c·Qᵀ and dPᵀ = V_c·dOᵀ: A the warpgroup's 64 rows of K (V), B the tile's Q
       * (dO) rows, both K-major; k-step kk is 32 bytes into slice kk/4 */
      napkin_bwd9_wg_fence ();
#pragma unroll
      for (int kk = 0; kk < BW_D / 16; kk++)
        napkin_bwd9_ss (s, napkin_attn_desc (k_s + (kk / 4) * (BW9_BKV * 128) + c * 8192 + (kk % 4) * 32, 16, 1024),
                        napkin_attn_desc (qst + (kk / 4) * (BW9_BQ * 128) + (kk % 4) * 32, 16, 1024), kk > 0,
                        (const NKB_T *) 0);
      napkin_bwd9_wg_commit ();
#pragma unroll
      for (int kk = 0; kk < BW_D / 16; kk++)
        napkin_bwd9_ss (dp, napkin_attn_desc (v_s + (kk / 4) * (BW9_BKV * 128) + c * 8192 + (kk % 4) * 32, 16, 1024),
                        napkin_attn_desc (dost + (kk / 4) * (BW9_BQ * 128) + (kk % 4) * 32, 16, 1024), kk > 0,
                        (const NKB_T *) 0);
      napkin_bwd9_wg_commit ();
      napkin_bwd9_wg_wait<1> ();
      napkin_bwd9_fence (s);

#if NKB_SC_ANY
      /* the score operands: a bias added to the raw score, a hidden one to −∞ (P 0) */
#pragma unroll
      for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
          {
            const long q = qa + j * 8 + 2 * (lane & 3) + (e & 1), k = kw + (lane >> 2) + 8 * (e >> 1);

            if (q < BW_NQ && k < BW_NKV)
              s[4 * j + e] = NKB_SC_KEEP (g, q, k) ? s[4 * j + e] + NKB_SC_BIAS (g, q, k) : NAPKIN_NEG_INF;
          }
#endif
      /* Pᵀ = exp2 (c·Sᵀ − lse2[query]), 0 where the mask hides the score (or past NQ, NKV) */
      {
        const bool full = kw + 16 <= BW_NKV && qa + BW9_BQ <= BW_NQ
                          && (!BW_MASK_LO || kw >= qz + BW_OFF - BW_LEFT)
                          && (!BW_MASK_HI || kw + 15 <= qa + BW_OFF + BW_RIGHT);

#pragma unroll
        for (int j = 0; j < 8; j++)
          {
            float l2[2];

            napkin_bwd9_lds2 (f_s + 4 * (st * BW9_BQ + j * 8 + 2 * (lane & 3)), l2);
#if NKB_ABL & 4
            s[4 * j] = fmaf (s[4 * j], scale, -l2[0]);
            s[4 * j + 1] = fmaf (s[4 * j + 1], scale, -l2[1]);
            s[4 * j + 2] = fmaf (s[4 * j + 2], scale, -l2[0]);
            s[4 * j + 3] = fmaf (s[4 * j + 3], scale, -l2[1]);
#else
            s[4 * j] = napkin_attn_exp2 (fmaf (s[4 * j], scale, -l2[0]));
            s[4 * j + 1] = napkin_attn_exp2 (fmaf (s[4 * j + 1], scale, -l2[1]));
            s[4 * j + 2] = napkin_attn_exp2 (fmaf (s[4 * j + 2], scale, -l2[0]));
            s[4 * j + 3] = napkin_attn_exp2 (fmaf (s[4 * j + 3], scale, -l2[1]));
#endif
          }
        if (!full)
          {
            /* key k is seen by the queries [k − OFF − RIGHT, k − OFF + LEFT] (an edge the
             * mask lacks: all), below NQ; by none past NKV. In int: NQ, NKV < 2³¹. */
            int lo_q[2], hi_q[2];

#pragma unroll
            for (int h = 0; h < 2; h++)
              {
                const int k = (int) kw + (lane >> 2) + 8 * h;

                lo_q[h] = BW_MASK_HI ? k - (int) BW_OFF - (int) BW_RIGHT : 0;
                hi_q[h] = k >= (int) BW_NKV ? -1 : BW_MASK_LO ? NAPKIN_MIN (k - (int) BW_OFF + (int) BW_LEFT, (int) BW_NQ - 1)
                                                              : (int) BW_NQ - 1;
              }
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
              for (int e = 0; e < 4; e++)
                {
                  const int q = (int) qa + j * 8 + 2 * (lane & 3) + (e & 1);

                  s[4 * j + e] = q >= lo_q[e >> 1] && q <= hi_q[e >> 1] ? s[4 * j + e] : 0.0f;
                }
          }
      }
      napkin_bwd9_wg_wait<0> ();
      napkin_bwd9_fence (dp);

      /* dSᵀ = Pᵀ⊙(dPᵀ − Drow[query]), into dp; then both packed, the accumulator's 16
       * columns of k-step kt the A operand's registers of it (dS first: P's fp32 values
       * and dP's are then never live beside the packed ones) */
#pragma unroll
      for (int j = 0; j < 8; j++)
        {
          float d2[2];

          napkin_bwd9_lds2 (f_s + 4 * ((2 + st) * BW9_BQ + j * 8 + 2 * (lane & 3)), d2);
          dp[4 * j] = s[4 * j] * (dp[4 * j] - d2[0]);
          dp[4 * j + 1] = s[4 * j + 1] * (dp[4 * j + 1] - d2[1]);
          dp[4 * j + 2] = s[4 * j + 2] * (dp[4 * j + 2] - d2[0]);
          dp[4 * j + 3] = s[4 * j + 3] * (dp[4 * j + 3] - d2[1]);
        }
#pragma unroll
      for (int kt = 0; kt < 4; kt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
          {
            ds[4 * kt + i] = napkin_attn_pack (dp[8 * kt + 2 * i], dp[8 * kt + 2 * i + 1], (const NKB_T *) 0);
            p[4 * kt + i] = napkin_attn_pack (s[8 * kt + 2 * i], s[8 * kt + 2 * i + 1], (const NKB_T *) 0);
          }
      /* dV_c += Pᵀ·dO and dK_c += dSᵀ·Q: B = dO (Q) [query][d], N-major, slices 64·128
       * bytes apart */
      napkin_bwd9_wg_fence ();
#pragma unroll
      for (int kt = 0; kt < 4; kt++)
        {
          const unsigned a[4] = { p[4 * kt], p[4 * kt + 1], p[4 * kt + 2], p[4 * kt + 3] };

          napkin_bwd9_rs (dv, a, napkin_attn_desc (dost + kt * 2048, BW9_BQ * 128, 1024), (const NKB_T *) 0);
        }
#pragma unroll
      for (int kt = 0; kt < 4; kt++)
        {
          const unsigned a[4] = { ds[4 * kt], ds[4 * kt + 1], ds[4 * kt + 2], ds[4 * kt + 3] };

          napkin_bwd9_rs (dk, a, napkin_attn_desc (qst + kt * 2048, BW9_BQ * 128, 1024), (const NKB_T *) 0);
        }
      napkin_bwd9_wg_commit ();
#if NKB_SC_GRAD
      /* the bias's gradient: dS at keys lane/4 (0, 1) and + 8 (2, 3), queries 8j + 2·(lane%4)
       * (0, 2) and + 1, summed over what the bias lacks — while dV and dK run, P's fp32
       * values gone (beside them the atomics' addresses spilled at d 128) */
#pragma unroll
      for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
          {
            const long q = qa + j * 8 + 2 * (lane & 3) + (e & 1), k = kw + (lane >> 2) + 8 * (e >> 1);

            if (q < BW_NQ && k < BW_NKV && dp[4 * j + e] != 0.0f)
              NKB_DB_ADD (g, q, k, dp[4 * j + e]);
          }
#endif

      /* dSᵀ to shared memory: key row r, queries 8j + 2·(lane%4), + 1 at chunk j ^ (r%8) —
       * each 8 lanes of a store 8 distinct chunks: no bank conflict */
      {
        const int r0 = c * 64 + warp * 16 + (lane >> 2);

#pragma unroll
        for (int j = 0; j < 8; j++)
          {
            const int h = j & 1, kt = j >> 1;

            napkin_bwd9_sts (ds_s + r0 * 128 + ((j ^ (r0 & 7)) << 4) + (lane & 3) * 4,
                          ds[4 * kt + 2 * h]);
            napkin_bwd9_sts (ds_s + (r0 + 8) * 128 + ((j ^ (r0 & 7)) << 4) + (lane & 3) * 4,
                          ds[4 * kt + 2 * h + 1]);
          }
      }
      /* dV and dK done with Pᵀ and dSᵀ's registers: free for dQ's accumulators; the
       * bulk reductions of the tile before last done reading the stage this tile's dQ
       * goes to (the barrier tells the others) */
      napkin_bwd9_wg_wait<0> ();
      if (tid % 128 == 0 && !(NKB_ABL & 64))
        napkin_bwd9_bulk_wait_read1 ();
      napkin_bwd9_proxy_fence ();
      if (!(NKB_ABL & 16))
        __syncthreads ();

      /* dQ (the tile's 64 queries) = dS·K: A = dSᵀ's rows read transposed (M = queries
       * contiguous), B = K [key][d] read transposed; D 128: columns 64c … over the 128
       * keys, D 64: every column over the warpgroup's 64 keys */
      {
        constexpr int KT0 = BW_D == 128 ? 0 : 4, KTN = BW_D == 128 ? 8 : 4;
        const unsigned kcol = BW_D == 128 ? c * (BW9_BKV * 128) : 0;
        const int kt0 = KT0 * c;

        napkin_bwd9_wg_fence ();
#pragma unroll
        for (int kt = 0; kt < KTN; kt++)
          if (!(NKB_ABL & 2))
          napkin_bwd9_ss_t (dq, napkin_attn_desc (ds_s + (kt0 + kt) * 2048, 8192, 1024),
                            napkin_attn_desc (k_s + kcol + (kt0 + kt) * 2048, BW9_BKV * 128, 1024), kt > 0,
                            (const NKB_T *) 0);
        napkin_bwd9_wg_commit ();
      }
      napkin_bwd9_wg_wait<0> ();
      napkin_bwd9_fence (dq);

#if NKB_ABL & 1
      (void) dqa;
#elif NKB_DQ_ATOMICS
      /* dQ's rows qa + 16·warp + lane/4 (and + 8) into the fp32 accumulator's chunk, 16
       * atomics a thread (the A/B against the bulk reduction below:
       * bench/gpu/attn-bwd-alone.sh's h-ta-* cases) */
      {
        const int r0 = warp * 16 + (lane >> 2);
        float *chunk = dqa + BW9_DQ_TILE (kv_flat * BW_G + g, qa / 64) + (BW_D == 128 ? c * 4096 : 0);

#pragma unroll
        for (int j = 0; j < 8; j++)
          {
            const int pr = BW9_DQ_PAIR (r0, 4 * j + (lane & 3));

            napkin_bwd_red2 (chunk + r0 * 64 + 2 * pr, dq[4 * j], dq[4 * j + 1]);
            napkin_bwd_red2 (chunk + (r0 + 8) * 64 + 2 * pr, dq[4 * j + 2], dq[4 * j + 3]);
          }
      }
#else
      /* dQ's partial into the fp32 accumulator: staged in this tile's stage of dq_s (free:
       * see the barrier above) as the accumulator's chunk lies (BW9_DQ_TILE), then one
       * thread adds the 16 KiB with one bulk reduction (the copy engine's adds in L2: a
       * row of 64 floats an instruction, or 16 atomics a thread, took 1.4–2.4 ms of
       * 3.9 at d 128 on an H200); two stages, so that the next tile computes while these
       * are read. At d 64 each warpgroup adds its keys' share of the whole tile (summing
       * the two in shared memory first, half the bytes, ran no faster). Rows past NQ add
       * zeros to the padding. */
      {
        const unsigned mine = dq_s + (st * 2 + c) * (64 * 64 * 4);
        const int r0 = warp * 16 + (lane >> 2);

#pragma unroll
        for (int j = 0; j < 8; j++)
          {
            const int pr = BW9_DQ_PAIR (r0, 4 * j + (lane & 3));

            napkin_bwd9_sts2 (mine + (r0 * 64 + 2 * pr) * 4, dq[4 * j], dq[4 * j + 1]);
            napkin_bwd9_sts2 (mine + ((r0 + 8) * 64 + 2 * pr) * 4, dq[4 * j + 2], dq[4 * j + 3]);
          }
        napkin_bwd9_proxy_fence ();
        napkin_bwd9_wg_sync (c);
        if (tid % 128 == 0 && !(NKB_ABL & 32))
          {
            napkin_bwd9_bulk_add (dqa + BW9_DQ_TILE (kv_flat * BW_G + g, qa / 64) + (BW_D == 128 ? c * 4096 : 0), mine,
                                  64 * 64 * 4);
            napkin_bwd9_bulk_commit ();
          }
      }
#endif
    }

  /* dK·DALPHA, dV (their products waited for in the last tile): keys kw + lane/4 (0, 1)
   * and + 8 (2, 3), columns 8j + 2·(lane%4), + 1 */
  napkin_bwd9_fence (dk);
  napkin_bwd9_fence (dv);
#pragma unroll
  for (int h = 0; h < 2; h++)
    {
      const long k = kw + (lane >> 2) + 8 * h;

      if (k >= BW_NKV)
        continue;
      if (BW9_GS > 1)
        {
          /* this block's share of the group: added to the fp32 sums dq rounds */
          float *dka = NKB_DKAREF + (kv_flat * BW_NKV + k) * BW_D + 2 * (lane & 3);
          float *dva = NKB_DVAREF + (kv_flat * BW_NKV + k) * BW_D + 2 * (lane & 3);

#pragma unroll
          for (int j = 0; j < BW_D / 8; j++)
            {
              napkin_bwd_red2 (dka + j * 8, dk[4 * j + 2 * h] * BW_DALPHA, dk[4 * j + 2 * h + 1] * BW_DALPHA);
              napkin_bwd_red2 (dva + j * 8, dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1]);
            }
          continue;
        }
      NKB_OT *dkr = dKg + dk_base + k * BW_DKRS + 2 * (lane & 3);
      NKB_OT *dvr = dVg + dv_base + k * BW_DVRS + 2 * (lane & 3);

#pragma unroll
      for (int j = 0; j < BW_D / 8; j++)
        {
          napkin_attn_st2 (dkr + j * 8, dk[4 * j + 2 * h] * BW_DALPHA, dk[4 * j + 2 * h + 1] * BW_DALPHA);
          napkin_attn_st2 (dvr + j * 8, dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1]);
        }
    }
  napkin_bwd9_cp_wait ();
  if (tid % 128 == 0)
    napkin_bwd9_bulk_wait ();
#undef BW9_TILE_COPY
}
#undef BW9_BKV
#undef BW9_BQ
#undef BW9_K_BYTES
#undef BW9_Q_BYTES
#undef BW9_DS_BYTES
#undef BW9_KBLK
#else
/* ---- main: dK, dV of a key block, its share of dQ ------------------------------------------ */
extern "C" __global__ void __launch_bounds__ (BW_THREADS)
NKB_NAME_MAIN (const NapkinArgs args)
{
  const NKB_T *__restrict__ Qg = NKB_QREF;
  const NKB_T *__restrict__ Kg = NKB_KREF;
  const NKB_T *__restrict__ Vg = NKB_VREF;
  const NKB_T *__restrict__ dOg = NKB_DOREF;
  NKB_OT *__restrict__ dKg = NKB_DKREF;
  NKB_OT *__restrict__ dVg = NKB_DVREF;
  const float *__restrict__ lse = NKB_LSEREF;
  const float *__restrict__ drow = NKB_DROWREF;
  float *__restrict__ dqa = NKB_DQAREF;
  extern __shared__ __align__ (16) unsigned short smem_[];
  unsigned short *Ks = smem_;                          /* [BKV][S] */
  unsigned short *Vs = Ks + BW_BKV * BW_S;             /* [BKV][S] */
  unsigned short *Qs = Vs + BW_BKV * BW_S;             /* [2][BQ][S] */
  unsigned short *dOs = Qs + 2 * BW_BQ * BW_S;         /* [2][BQ][S] */
  unsigned short *Ts = dOs + 2 * BW_BQ * BW_S;         /* [BKV][TS]: the tile's dSᵀ */
  float *Ls = (float *) (Ts + BW_BKV * BW_TS);         /* [2][BQ]: lse2 */
  float *Ds = Ls + 2 * BW_BQ;                          /* [2][BQ]: Drow */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g8 = lane >> 2, t4 = lane & 3;             /* an accumulator's row (and + 8), column pair */

  static_assert (BW_WARPS % (BW_BQ / 16) == 0 && BW_BQ % 16 == 0 && BW_BQ <= 64, "WARPS, BQ");
  /* the key block is the fast index: a head's key blocks run side by side, so that the
   * head's Q, dO and fp32 dQ accumulator (2 MiB each at 4096 × 128) stay in L2 while
   * every block reads and adds to them (with the key block slow, a wave spread over every
   * head: the accumulators, 128 MiB at 64 heads, missed L2 and every reduction went to
   * device memory — 1.5 of 3.9 ms on an H200). Under a causal mask a head's key blocks
   * that see the most queries (the first) start first; under a window's lower edge alone
   * the last are the long ones, so the order turns. */
  long blk = blockIdx.x;
  const long kb_ = blk % (long) BW_KBLK;
  const long kb = BW_MASK_LO && !BW_MASK_HI ? BW_KBLK - 1 - kb_ : kb_;
  blk /= (long) BW_KBLK;
  long q_base = 0, o_base = 0, k_base = 0, kv_flat = 0, dq_base = 0, dk_base = 0, dv_base = 0;
  NKB_SC_DECL
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
  NKB_LEAD_ALONE
#endif /* napkin-fragment/LEAD */
  (void) dq_base;
  const long kb0 = kb * BW_BKV, kb1 = NAPKIN_MIN (kb0 + BW_BKV, BW_NKV);
  const long kw = kb0 + warp * 16;                     /* the warp's first key */

  /* The query tiles that see a key of the block: from the first query that sees key kb0
   * (the mask's upper edge: near the diagonal) to the last that sees key kb1 − 1. */
  long i_min = 0, i_max = BW_NQ - 1;

  if (BW_MASK_HI)
    i_min = kb0 - BW_OFF - BW_RIGHT > 0 ? kb0 - BW_OFF - BW_RIGHT : 0;
  if (BW_MASK_LO)
    i_max = NAPKIN_MIN (i_max, kb1 - 1 - BW_OFF + BW_LEFT);
  const long qt_lo = i_min / BW_BQ, nqt = i_max >= i_min ? i_max / BW_BQ + 1 - qt_lo : 0;
  const long n_tiles = BW_G * nqt;

  /* Tile t (head g = t / nqt) into buffer b: Q, dO rows (zero past NQ), lse2 and Drow (zero
   * past NQ: those columns are masked below). */
#define BW_TILE_COPY(t_, b_)                                                                       \
  do                                                                                               \
    {                                                                                              \
      const long g_ = (t_) / nqt, q_ = (qt_lo + (t_) % nqt) * BW_BQ;                                \
      const long row_ = (kv_flat * BW_G + g_) * BW_NQ + q_;                                        \
                                                                                                   \
      napkin_bwd_rows<BW_BQ, BW_THREADS, BW_D, BW_DP, BW_S> (Qs + (b_) * BW_BQ * BW_S,               \
                                                             Qg + q_base + g_ * BW_QGS + q_ * BW_QRS, \
                                                             BW_QRS, BW_NQ - q_, Qg, tid);           \
      napkin_bwd_rows<BW_BQ, BW_THREADS, BW_D, BW_DP, BW_S> (dOs + (b_) * BW_BQ * BW_S,              \
                                                             dOg + o_base + g_ * BW_OGS + q_ * BW_ORS, \
                                                             BW_ORS, BW_NQ - q_, dOg, tid);          \
      for (int c_ = tid; c_ < 2 * BW_BQ; c_ += BW_THREADS)                                         \
        {                                                                                          \
          const int r_ = c_ % BW_BQ;                                                               \
          const bool ok_ = q_ + r_ < BW_NQ;                                                        \
                                                                                                   \
          napkin_bwd_cp4 (napkin_smem_addr ((c_ < BW_BQ ? Ls : Ds) + (b_) * BW_BQ + r_),             \
                          (c_ < BW_BQ ? lse : drow) + (ok_ ? row_ + r_ : 0), ok_);                  \
        }                                                                                          \
    }                                                                                              \
  while (0)
  /* the 16 keys from k_ hidden from every query of [qa, qz] (or past NKV) */
#define BW_EMPTY(k_)                                                                               \
  ((k_) >= BW_NKV || (BW_MASK_HI && (k_) > qz + BW_OFF + BW_RIGHT) || (BW_MASK_LO && (k_) + 15 < qa + BW_OFF - BW_LEFT))

  napkin_bwd_rows<BW_BKV, BW_THREADS, BW_D, BW_DP, BW_S> (Ks, Kg + k_base + kb0 * BW_KRS, BW_KRS, kb1 - kb0, Kg, tid);
  napkin_bwd_rows<BW_BKV, BW_THREADS, BW_D, BW_DP, BW_S> (Vs, Vg + k_base + kb0 * BW_KRS, BW_KRS, kb1 - kb0, Vg, tid);
  if (n_tiles > 0)
    BW_TILE_COPY (0, 0);
  asm volatile ("cp.async.commit_group;");

  float dk[BW_DP / 8][4], dv[BW_DP / 8][4];
  const float scale = BW_SCALE;

#pragma unroll
  for (int j = 0; j < BW_DP / 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++)
      dk[j][e] = dv[j][e] = 0.0f;

  for (long it = 0; it < n_tiles; it++)
    {
      const int buf = (int) (it & 1);
      const long g = it / nqt, qa = (qt_lo + it % nqt) * BW_BQ, qz = NAPKIN_MIN (qa + BW_BQ, BW_NQ) - 1;
      const long row0 = (kv_flat * BW_G + g) * BW_NQ;

      /* This tile is in; every warp is done with the other buffer (its products ended
       * before the last tile's second barrier) and with Ts (the last tile's dQ). */
      asm volatile ("cp.async.wait_group 0;");
      __syncthreads ();
      if (it + 1 < n_tiles)
        BW_TILE_COPY (it + 1, buf ^ 1);
      asm volatile ("cp.async.commit_group;");

      const float *ls = Ls + buf * BW_BQ;
      const float *ds = Ds + buf * BW_BQ;
      /* Byte addresses in shared memory: of the warp's K and V rows (A, rows
       * warp·16 + l%16, columns 8·(l/16)), of this tile's Q and dO rows as B operands without
       * (_n: rows l%8 + 8·(l/16), columns 8·((l/8)%2)) and with transpose (_t: rows
       * l%8 + 8·((l/8)%2), columns 8·(l/16)), and of this thread's dSᵀ pairs in Ts. */
      const unsigned sm = napkin_bwd_opaque (napkin_smem_addr (smem_));
      const unsigned a_k = sm + 2 * ((warp * 16 + (lane & 15)) * BW_S + (lane >> 4) * 8);
      const unsigned a_v = a_k + 2 * BW_BKV * BW_S;
      const unsigned qb = sm + 2 * (2 * BW_BKV * BW_S + buf * BW_BQ * BW_S), dob = qb + 2 * (2 * BW_BQ * BW_S);
      const unsigned o_n = 2 * (((lane & 7) + (lane >> 4) * 8) * BW_S + ((lane >> 3) & 1) * 8);
      const unsigned o_t = 2 * (((lane & 7) + ((lane >> 3) & 1) * 8) * BW_S + (lane >> 4) * 8);
      const unsigned ts = sm + 2 * (2 * BW_BKV * BW_S + 4 * BW_BQ * BW_S);
      const unsigned tw = ts + 2 * ((warp * 16 + g8) * BW_TS + 2 * t4);

      if (BW_EMPTY (kw))
        {
          /* no query of the tile sees the warp's keys: P = dS = 0 */
#pragma unroll
          for (int j = 0; j < BW_BQ / 8; j++)
            {
              asm volatile ("st.shared.b32 [%0], %1;" :: "r" (tw + 2 * j * 8), "r" (0u) : "memory");
              asm volatile ("st.shared.b32 [%0], %1;" :: "r" (tw + 2 * (8 * BW_TS + j * 8)), "r" (0u) : "memory");
            }
        }
      else
        {
          /* every query of the tile sees every key of the warp: no mask */
          const bool full = kw + 16 <= BW_NKV && qa + BW_BQ <= BW_NQ
                            && (!BW_MASK_LO || kw >= qz + BW_OFF - BW_LEFT)
                            && (!BW_MASK_HI || kw + 15 <= qa + BW_OFF + BW_RIGHT);
          float st[BW_BQ / 8][4];

          /* Sᵀ = K_w·Qᵀ (16 keys × BQ queries). A = K_w[key][e] as stored: rows
           * warp·16 + l%16, columns 16·kk + 8·(l/16) give a0 … a3 (matrices: keys 0-7 at
           * e 0-7, keys 8-15 at e 0-7, keys 0-7 at e 8-15, keys 8-15 at e 8-15). B[k = e][n =
           * query] = Q[query][e], Q's rows as stored: lanes 0-7 queries 8j + l%8 at e 16·kk
           * (b0 of block j), 8-15 the same at e + 8 (b1), 16-31 queries 8j + 8 + l%8 (block
           * j + 1). st[j]: keys g8 (0, 1) and g8 + 8 (2, 3), queries 8j + 2·t4 (0, 2) and + 1. */
#pragma unroll
          for (int j = 0; j < BW_BQ / 8; j++)
            st[j][0] = st[j][1] = st[j][2] = st[j][3] = 0.0f;
#pragma unroll
          for (int kk = 0; kk < BW_DP / 16; kk++)
            {
              unsigned a[4];

              napkin_bwd_ldsm (a, a_k + 2 * kk * 16);
#pragma unroll
              for (int j = 0; j < BW_BQ / 8; j += 2)
                {
                  unsigned b[4];

                  napkin_bwd_ldsm (b, qb + o_n + 2 * (j * 8 * BW_S + kk * 16));
                  BW_MMA (st[j], a, b[0], b[1]);
                  BW_MMA (st[j + 1], a, b[2], b[3]);
                }
            }

#if NKB_SC_ANY
          /* the score operands: a bias added to the raw score, a hidden one to −∞ (P 0) */
#pragma unroll
          for (int j = 0; j < BW_BQ / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
              {
                const long q = qa + j * 8 + 2 * t4 + (e & 1), k = kw + g8 + 8 * (e >> 1);

                if (q < BW_NQ && k < BW_NKV)
                  st[j][e] = NKB_SC_KEEP (g, q, k) ? st[j][e] + NKB_SC_BIAS (g, q, k) : NAPKIN_NEG_INF;
              }
#endif
          /* Pᵀ = exp2 (c·Sᵀ − lse2[query]); 0 where hidden (then lse2 may be anything:
           * the select, not a product, drops an overflow) */
#pragma unroll
          for (int j = 0; j < BW_BQ / 8; j++)
            {
              const float2 l2 = *(const float2 *) (ls + j * 8 + 2 * t4);

              st[j][0] = napkin_attn_exp2 (fmaf (st[j][0], scale, -l2.x));
              st[j][1] = napkin_attn_exp2 (fmaf (st[j][1], scale, -l2.y));
              st[j][2] = napkin_attn_exp2 (fmaf (st[j][2], scale, -l2.x));
              st[j][3] = napkin_attn_exp2 (fmaf (st[j][3], scale, -l2.y));
            }
          if (!full)
            {
#pragma unroll
              for (int j = 0; j < BW_BQ / 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                  {
                    const long q = qa + j * 8 + 2 * t4 + (e & 1), k = kw + g8 + 8 * (e >> 1);

                    st[j][e] = BW_VIS (q, k) ? st[j][e] : 0.0f;
                  }
            }

          /* dV_w += Pᵀ·dO (16 keys × DP, k = the tile's queries). A from the accumulators:
           * k-step u covers queries 16u … 16u + 15, so a0 = keys g8 at queries 16u + 2·t4, + 1
           * = st[2u][0, 1], a1 = keys g8 + 8 = st[2u][2, 3], a2, a3 = the same of queries
           * 16u + 8 + … = st[2u + 1]. B[k = query][n = e] = dO[query][e] (rows as stored,
           * so .trans): lanes 0-7 queries 16u + l%8 at e 8j (b0 of block j), 8-15 queries
           * 16u + 8 + l%8 (b1), 16-31 the same at e 8j + 8 (block j + 1). */
#pragma unroll
          for (int u = 0; u < BW_BQ / 16; u++)
            {
              const unsigned a[4] = { napkin_attn_pack (st[2 * u][0], st[2 * u][1], (const NKB_T *) 0),
                                      napkin_attn_pack (st[2 * u][2], st[2 * u][3], (const NKB_T *) 0),
                                      napkin_attn_pack (st[2 * u + 1][0], st[2 * u + 1][1], (const NKB_T *) 0),
                                      napkin_attn_pack (st[2 * u + 1][2], st[2 * u + 1][3], (const NKB_T *) 0) };

#pragma unroll
              for (int j = 0; j < BW_DP / 8; j += 2)
                {
                  unsigned b[4];

                  napkin_bwd_ldsm_t (b, dob + o_t + 2 * (u * 16 * BW_S + j * 8));
                  BW_MMA (dv[j], a, b[0], b[1]);
                  BW_MMA (dv[j + 1], a, b[2], b[3]);
                }
            }

          /* dPᵀ = V_w·dOᵀ (as Sᵀ with V for K and dO for Q), by 32 queries at most, then
           * dSᵀ = Pᵀ⊙(dPᵀ − Drow[query]) of those, packed: pairs of adjacent queries, the
           * layout of both the A fragments below and of Ts's rows. (At BQ 64 all of dPᵀ
           * beside Pᵀ and dK, dV spilled at d 128.) */
          constexpr int QC = BW_BQ < 32 ? BW_BQ : 32;
          unsigned pk[BW_BQ / 8][2];

#pragma unroll
          for (int c = 0; c < BW_BQ / QC; c++)
            {
              float dp[QC / 8][4];

#pragma unroll
              for (int j = 0; j < QC / 8; j++)
                dp[j][0] = dp[j][1] = dp[j][2] = dp[j][3] = 0.0f;
#pragma unroll
              for (int kk = 0; kk < BW_DP / 16; kk++)
                {
                  unsigned a[4];

                  napkin_bwd_ldsm (a, a_v + 2 * kk * 16);
#pragma unroll
                  for (int j = 0; j < QC / 8; j += 2)
                    {
                      unsigned b[4];

                      napkin_bwd_ldsm (b, dob + o_n + 2 * ((c * QC + j * 8) * BW_S + kk * 16));
                      BW_MMA (dp[j], a, b[0], b[1]);
                      BW_MMA (dp[j + 1], a, b[2], b[3]);
                    }
                }
#pragma unroll
              for (int j = 0; j < QC / 8; j++)
                {
                  const int jq = c * QC / 8 + j;
                  const float2 d2 = *(const float2 *) (ds + jq * 8 + 2 * t4);

#if NKB_SC_GRAD
                  /* the bias's gradient: dS at keys g8 (0, 1) and g8 + 8 (2, 3), queries
                   * 2·t4 (0, 2) and + 1, summed over what the bias lacks */
#pragma unroll
                  for (int e = 0; e < 4; e++)
                    {
                      const long q = qa + jq * 8 + 2 * t4 + (e & 1), k = kw + g8 + 8 * (e >> 1);
                      const float v = st[jq][e] * (dp[j][e] - (e & 1 ? d2.y : d2.x));

                      if (q < BW_NQ && k < BW_NKV && v != 0.0f)
                        NKB_DB_ADD (g, q, k, v);
                    }
#endif

                  pk[jq][0] = napkin_attn_pack (st[jq][0] * (dp[j][0] - d2.x), st[jq][1] * (dp[j][1] - d2.y),
                                                (const NKB_T *) 0);
                  pk[jq][1] = napkin_attn_pack (st[jq][2] * (dp[j][2] - d2.x), st[jq][3] * (dp[j][3] - d2.y),
                                                (const NKB_T *) 0);
                }
            }

          /* dK_w += dSᵀ·Q: as dV with dSᵀ for Pᵀ and Q for dO */
#pragma unroll
          for (int u = 0; u < BW_BQ / 16; u++)
            {
              const unsigned a[4] = { pk[2 * u][0], pk[2 * u][1], pk[2 * u + 1][0], pk[2 * u + 1][1] };

#pragma unroll
              for (int j = 0; j < BW_DP / 8; j += 2)
                {
                  unsigned b[4];

                  napkin_bwd_ldsm_t (b, qb + o_t + 2 * (u * 16 * BW_S + j * 8));
                  BW_MMA (dk[j], a, b[0], b[1]);
                  BW_MMA (dk[j + 1], a, b[2], b[3]);
                }
            }

          /* dSᵀ to Ts[key][query]: key warp·16 + g8 (and + 8), queries 8j + 2·t4, + 1 —
           * 32-bit stores, the 8 rows (BQ + 8)·2 bytes apart: 32 distinct banks */
#pragma unroll
          for (int j = 0; j < BW_BQ / 8; j++)
            {
              asm volatile ("st.shared.b32 [%0], %1;" :: "r" (tw + 2 * j * 8), "r" (pk[j][0]) : "memory");
              asm volatile ("st.shared.b32 [%0], %1;" :: "r" (tw + 2 * (8 * BW_TS + j * 8)), "r" (pk[j][1]) : "memory");
            }
        }
      __syncthreads ();

      /* dQ (BQ × DP) += dS·K over the block's keys: warp w the 16 queries mt = w % (BQ/16)
       * and the 16-column blocks of D n = w / (BQ/16) + i·(WARPS / (BQ/16)); key blocks of
       * 16 that no query of the tile sees are zero (skipped). A[m = query][k = key] =
       * Ts[key][query], stored transposed, so .trans: a0 = (queries 0-7, keys 0-7) =
       * Ts rows 0-7 at columns 0-7, a1 = queries 8-15 (Ts columns 8-15), a2 = keys 8-15
       * (Ts rows 8-15), a3 both: lane l gives Ts row 16·kk + l%8 + 8·((l/16)%2), column
       * 16·mt + 8·((l/8)%2). B[k = key][n = e] = K[key][e] as stored (.trans, as dO above:
       * rows 16·kk + l%8 + 8·((l/8)%2), columns 16n + 8·(l/16)). */
      {
        constexpr int MT = BW_BQ / 16, NSTEP = BW_WARPS / MT;
        constexpr int NI = (BW_DP / 16 + NSTEP - 1) / NSTEP, NIB = NI < 2 ? NI : 2;
        const int mt = warp % MT, n0 = warp / MT;
        const long q = qa + mt * 16 + g8;
        float *dq0 = dqa + (row0 + q) * BW_D + 2 * t4;
        const unsigned a_t = ts + 2 * (((lane & 7) + ((lane >> 4) & 1) * 8) * BW_TS + mt * 16 + ((lane >> 3) & 1) * 8);
        const unsigned k_t = sm + o_t + 2 * n0 * 16;

#pragma unroll
        for (int ib = 0; ib < NI; ib += NIB)
          {
            float acc[NIB][2][4];

#pragma unroll
            for (int i = 0; i < NIB; i++)
#pragma unroll
              for (int e = 0; e < 4; e++)
                acc[i][0][e] = acc[i][1][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < BW_WARPS; kk++)
              {
                if (BW_EMPTY (kb0 + kk * 16))
                  continue;
                unsigned a[4];

                napkin_bwd_ldsm_t (a, a_t + 2 * kk * 16 * BW_TS);
#pragma unroll
                for (int i = 0; i < NIB; i++)
                  if (ib + i < NI && n0 + (ib + i) * NSTEP < BW_DP / 16)
                    {
                      unsigned b[4];

                      napkin_bwd_ldsm_t (b, k_t + 2 * (kk * 16 * BW_S + (ib + i) * NSTEP * 16));
                      BW_MMA (acc[i][0], a, b[0], b[1]);
                      BW_MMA (acc[i][1], a, b[2], b[3]);
                    }
              }
            /* acc[i][h]: queries q (0, 1) and q + 8 (2, 3), columns 16n + 8h + 2·t4, + 1 */
#pragma unroll
            for (int i = 0; i < NIB; i++)
              {
                const int n = n0 + (ib + i) * NSTEP;

#pragma unroll
                for (int h = 0; h < 2; h++)
                  if (ib + i < NI && n < BW_DP / 16 && n * 16 + h * 8 < BW_D)
                    {
                      if (q < BW_NQ)
                        napkin_bwd_red2 (dq0 + n * 16 + h * 8, acc[i][h][0], acc[i][h][1]);
                      if (q + 8 < BW_NQ)
                        napkin_bwd_red2 (dq0 + 8 * BW_D + n * 16 + h * 8, acc[i][h][2], acc[i][h][3]);
                    }
              }
          }
      }
    }
  asm volatile ("cp.async.wait_group 0;");

  /* dK·DALPHA, dV: keys kw + g8 (0, 1) and + 8 (2, 3), columns 8j + 2·t4, + 1; keys past
   * NKV and columns past D not stored (a key no query sees: zeros) */
#pragma unroll
  for (int h = 0; h < 2; h++)
    {
      const long k = kw + g8 + 8 * h;

      if (k >= BW_NKV)
        continue;
      NKB_OT *dkr = dKg + dk_base + k * BW_DKRS + 2 * t4;
      NKB_OT *dvr = dVg + dv_base + k * BW_DVRS + 2 * t4;

#pragma unroll
      for (int j = 0; j < BW_DP / 8; j++)
        if (j * 8 < BW_D)
          {
            napkin_attn_st2 (dkr + j * 8, dk[j][2 * h] * BW_DALPHA, dk[j][2 * h + 1] * BW_DALPHA);
            napkin_attn_st2 (dvr + j * 8, dv[j][2 * h], dv[j][2 * h + 1]);
          }
    }
#undef BW_TILE_COPY
#undef BW_EMPTY
}
#endif /* NKB_MAIN_SM90 */

/* ---- dq: the accumulator scaled into dQ ------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__ (256)
NKB_NAME_DQ (const NapkinArgs args)
{
  const float *__restrict__ dqa = NKB_DQAREF;
  NKB_OT *__restrict__ dQg = NKB_DQREF;
  NKB_OT *__restrict__ dKg = NKB_DKREF;
  NKB_OT *__restrict__ dVg = NKB_DVREF;

  long blk = blockIdx.x;
  const long qt = blk % BW_DQT;
  blk /= BW_DQT;
  const long g = blk % BW_G;
  blk /= BW_G;
  long q_base = 0, o_base = 0, k_base = 0, kv_flat = 0, dq_base = 0, dk_base = 0, dv_base = 0;
  NKB_SC_DECL
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LEAD"
#else
  NKB_LEAD_ALONE
#endif /* napkin-fragment/LEAD */
  (void) q_base;
  (void) o_base;
  (void) k_base;
  (void) dk_base;
  (void) dv_base;
  (void) dKg;
  (void) dVg;
  const long q0 = qt * 64;
  NKB_OT *dst = dQg + dq_base + g * BW_DQGS + q0 * BW_DQRS;
#if NKB_MAIN_SM90
  /* the tile's chunks (BW9_DQ_TILE): a float4 is two pairs, adjacent after the swizzle */
  const float *src = dqa + BW9_DQ_TILE (kv_flat * BW_G + g, qt);

  for (int c = threadIdx.x; c < 64 * (BW_D / 4); c += 256)
    {
      const int ch = c / 1024, r = c % 1024 / 16, e = ch * 64 + 2 * BW9_DQ_PAIR (r, c % 16 * 2);
      const float4 v = *(const float4 *) (src + 4 * (long) c);

      if (q0 + r < BW_NQ)
        {
          napkin_attn_st2 (dst + r * BW_DQRS + e, v.x * BW_DALPHA, v.y * BW_DALPHA);
          napkin_attn_st2 (dst + r * BW_DQRS + e + 2, v.z * BW_DALPHA, v.w * BW_DALPHA);
        }
    }
#else
  const float *src = dqa + ((kv_flat * BW_G + g) * BW_NQ + q0) * BW_D;

  for (int c = threadIdx.x; c < 64 * (BW_D / 4); c += 256)
    {
      const int r = c / (BW_D / 4), e = (c % (BW_D / 4)) * 4;

      if (q0 + r < BW_NQ)
        {
          const float4 v = *(const float4 *) (src + (long) r * BW_D + e);

          napkin_attn_st2 (dst + r * BW_DQRS + e, v.x * BW_DALPHA, v.y * BW_DALPHA);
          napkin_attn_st2 (dst + r * BW_DQRS + e + 2, v.z * BW_DALPHA, v.w * BW_DALPHA);
        }
    }
#endif
#if NKB_MAIN_SM90
  if (BW9_GS > 1)
    {
      /* the group split's dK and dV sums, rounded: this K/V head's keys 64·i … (i the
       * block's index among the head's), in steps of the head's blocks */
      const long i0 = g * BW_DQT + qt, step = BW_G * BW_DQT * 64;

      for (long k0 = i0 * 64; k0 < BW_NKV; k0 += step)
        for (int c = threadIdx.x; c < 64 * (BW_D / 2); c += 256)
          {
            const long k = k0 + c / (BW_D / 2);
            const int e = c % (BW_D / 2) * 2;

            if (k < BW_NKV)
              {
                const float2 a = *(const float2 *) (NKB_DKAREF + (kv_flat * BW_NKV + k) * BW_D + e);
                const float2 b = *(const float2 *) (NKB_DVAREF + (kv_flat * BW_NKV + k) * BW_D + e);

                napkin_attn_st2 (dKg + dk_base + k * BW_DKRS + e, a.x, a.y);
                napkin_attn_st2 (dVg + dv_base + k * BW_DVRS + e, b.x, b.y);
              }
          }
    }
#endif
#if NKB_SC_GRAD
  /* the bias's gradient, rounded from its fp32 sums (main has finished adding) */
  for (long i = (long) blockIdx.x * 256 + threadIdx.x; i < NKB_DB_ELEMS; i += (long) gridDim.x * 256)
    napkin_st (&NKB_DB_OUT[i], NKB_DB_ACC[i]);
#endif
}
#undef BW_D
#undef BW_DP
#undef BW_S
#undef BW_NQ
#undef BW_NKV
#undef BW_G
#undef BW_MASK_LO
#undef BW_MASK_HI
#undef BW_LEFT
#undef BW_RIGHT
#undef BW_OFF
#undef BW_QGS
#undef BW_QRS
#undef BW_OGS
#undef BW_ORS
#undef BW_KRS
#undef BW_DQGS
#undef BW_DQRS
#undef BW_DKRS
#undef BW_DVRS
#undef BW_WARPS
#undef BW_THREADS
#undef BW_BKV
#undef BW_BQ
#undef BW_TS
#undef BW_KBLK
#undef BW_PW
#undef BW_PTHREADS
#undef BW_PROWS
#undef BW_PBKV
#undef BW_PQT
#undef BW_DQT
#undef BW_SCALE
#undef BW_DALPHA
#undef BW_INF
#undef BW_VIS
#undef BW_MMA
#undef NKB_SC_GRAD
#undef NKB_DB_ELEMS
#undef NKB_DB_ACC
#undef NKB_DB_OUT
#undef NKB_DB_ADD
#undef NKB_SC_ANY
#undef NKB_SC_DECL
#undef NKB_SC_BIAS
#undef NKB_SC_KEEP
#ifdef NKB_NAMES_FROM_ONE
#undef NKB_NAMES_FROM_ONE
#undef NKB_NAME_PRE
#undef NKB_NAME_MAIN
#undef NKB_NAME_DQ
#endif
#ifdef NKB_FROM_NKP
#undef NKB_FROM_NKP
#undef NKB_D
#undef NKB_DP
#undef NKB_NQ
#undef NKB_NKV
#undef NKB_GROUP
#undef NKB_KV_BATCH
#undef NKB_MASK_LO
#undef NKB_MASK_HI
#undef NKB_LEFT
#undef NKB_RIGHT
#undef NKB_OFFSET
#undef NKB_Q_GROUP
#undef NKB_Q_ROW
#undef NKB_O_GROUP
#undef NKB_O_ROW
#undef NKB_K_ROW
#undef NKB_DQ_GROUP
#undef NKB_DQ_ROW
#undef NKB_DK_ROW
#undef NKB_DV_ROW
#undef NKB_ALPHA
#undef NKB_DALPHA
#undef NKB_T
#undef NKB_OT
#undef NKB_MMA
#undef NKB_QREF
#undef NKB_KREF
#undef NKB_VREF
#undef NKB_OREF
#undef NKB_DOREF
#undef NKB_DQREF
#undef NKB_DKREF
#undef NKB_DVREF
#undef NKB_LSEREF
#undef NKB_DROWREF
#undef NKB_DQAREF
#undef NKB_GSPLIT
#undef NKB_STATS_GIVEN
#undef NKB_O32REF
#undef NKB_DKAREF
#undef NKB_DVAREF
#undef NKB_WARPS
#undef NKB_BQ
#undef NKB_PRE_WARPS
#undef NKB_NAME_PRE
#undef NKB_NAME_MAIN
#undef NKB_NAME_DQ
#undef NKB_NAME
#undef NKB_MAIN_SM90
#endif
