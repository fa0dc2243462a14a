/* Skeleton: fused attention for Hopper (sm_90a), O = softmax(α·Q·Kᵀ)·V over the key axis,
 * fp16/bf16 in, fp32 accumulate. One thread block per group of BQ queries of one
 * (batch, head) — the region's parallel groups — with BQ/64 + 1 warpgroups:
 *  - warpgroup 0, the producer (few registers, setmaxnreg.dec), copies Q once and then
 *    each chunk of BKV keys of K and V (the stream mark) into a ring of STAGES
 *    shared-memory buffers laid out in the 128-byte swizzle that wgmma reads, each
 *    completing on the stage's "full" mbarrier (K and V separately, so Q·Kᵀ starts before
 *    V is in). With TMA, one thread issues bulk tensor copies (tensor maps passed after
 *    the NapkinArgs: Q, K, V as [rows, D] with boxes of 64 columns, 128-byte swizzle) that
 *    complete the barrier by byte count; without, the 128 threads copy 16 bytes each with
 *    cp.async and, once a copy has landed, fence it into the async proxy and arrive;
 *  - warpgroups 1.., the consumers (setmaxnreg.inc), each own 64 query rows: S = Q·Kᵀ with
 *    wgmma m64nBKVk16 (Q and K from shared memory, both K-major), the online softmax on
 *    the fp32 accumulators (a row's values are spread over the 4 threads of a quad), P
 *    converted to 16 bits in registers and used as wgmma's register A operand for
 *    O += P·V (V from shared memory, N-major: the transpose bit); each consumer arrives
 *    on the stage's "empty" mbarrier when its products have read it.
 * With OVERLAP, the next chunk's Q·Kᵀ is issued before this chunk's P·V, and the softmax
 * exponentials of the next chunk run while P·V is in flight (FlashAttention-3's
 * intra-warpgroup pipelining); with PINGPONG the consumer warpgroups also take turns to
 * issue their products (named barriers), so that one's softmax overlaps another's wgmmas
 * (its inter-warpgroup "ping-pong" schedule).
 * Napkin fills the parameters written between at-signs; WGMMA is the two wgmma wrappers and
 * the accumulator fences for these sizes (one asm operand per accumulator register).
 * Requires BQ % 64 == 0, BKV % 16 == 0, BKV <= 256, D ∈ {64, 128}, NQ % BQ == NKV % BKV == 0. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_90a: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_BQ 128
#define NKP_BKV 64
#define NKP_D 128
#define NKP_STAGES 2
#define NKP_OVERLAP 0
#define NKP_TMA 1
#define NKP_PINGPONG 1
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
#define NKP_PRODUCER_REGS 56
#define NKP_CONSUMER_REGS 224
#endif /* NAPKIN_GENERATED */
#define W_BQ NKP_BQ
#define W_BKV NKP_BKV
#define W_D NKP_D
#define W_ST NKP_STAGES
#define W_NWG (W_BQ / 64)
#define W_THREADS ((W_NWG + 1) * 128)
#define W_OVERLAP NKP_OVERLAP
#define W_TMA NKP_TMA
/* With OVERLAP and several consumers: the consumers take turns issuing their products
 * (named barriers 1…NWG), so one's softmax runs while another's wgmmas do. */
#define W_PINGPONG (NKP_PINGPONG && W_OVERLAP && W_NWG > 1)
/* Bytes of one 64-column slice of a tile of R rows, and of whole tiles. */
#define W_Q_BYTES (W_BQ * W_D * 2)
#define W_KV_BYTES (W_BKV * W_D * 2)

static __device__ __forceinline__ unsigned
NKP_CAT (NKP_NAME, _pack) (float lo, float hi)
{
  unsigned r;
  asm ("cvt.rn." NKP_STR (NKP_MMA) "x2.f32 %0, %1, %2;" : "=r" (r) : "f" (hi), "f" (lo));
  return r;
}

/* 2^x on the special-function unit alone: results below 2^-126 flush to zero, which a
 * softmax term that small is anyway. exp2f compiles to the non-flushing ex2.approx.f32,
 * which ptxas wraps in a range fix-up for denormal results: the H100 measured 7-8 % more
 * for the whole kernel with this one. */
static __device__ __forceinline__ float
NKP_CAT (NKP_NAME, _exp2) (float x)
{
  float y;
  asm ("ex2.approx.ftz.f32 %0, %1;" : "=f" (y) : "f" (x));
  return y;
}

/* wgmma shared-memory descriptor, 128-byte swizzle: start, leading and stride byte offsets. */
static __device__ __forceinline__ unsigned long long
NKP_CAT (NKP_NAME, _desc) (unsigned addr, unsigned lbo, unsigned sbo)
{
  return (unsigned long long) ((addr & 0x3ffff) >> 4) | ((unsigned long long) (lbo >> 4) << 16)
         | ((unsigned long long) (sbo >> 4) << 32) | (1ull << 62);
}

static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _wait) (unsigned bar, unsigned parity)
{
  unsigned done;

  do
    asm volatile ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                  : "=r" (done) : "r" (bar), "r" (parity) : "memory");
  while (!done);
}

static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _arrive) (unsigned bar)
{
  asm volatile ("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r" (bar) : "memory");
}

/* Copies ROWS rows of D values from global (row stride D) into the swizzled layout: the
 * 64-column slices one after the other, each [ROWS][128 bytes] with the 16-byte chunk c of
 * row r at chunk c ^ (r % 8). */
template <int ROWS>
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _copy) (unsigned dst, const NKP_T *src, int tid)
{
#pragma unroll 2
  for (int i = tid; i < ROWS * (W_D / 8); i += 128)
    {
      const int r = i / (W_D / 8), c = i % (W_D / 8);
      const unsigned off = (c >> 3) * (ROWS * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);

      asm volatile ("cp.async.cg.shared.global [%0], [%1], 16;" :: "r" (dst + off), "l" (src + (long) r * W_D + c * 8)
                    : "memory");
    }
  asm volatile ("cp.async.commit_group;" ::: "memory");
}

/* A tile of ROWS rows from row `row` of a tensor map: D/64 boxes of 64 columns. */
template <int ROWS>
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _tma) (unsigned dst, const NapkinTensorMap *map, int row, unsigned bar)
{
  asm volatile ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r" (bar), "r" (ROWS * W_D * 2) : "memory");
#pragma unroll
  for (int kb = 0; kb < W_D / 64; kb++)
    asm volatile ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                  :: "r" (dst + kb * ROWS * 128), "l" (map), "r" (kb * 64), "r" (row), "r" (bar) : "memory");
}

/* The copies this thread issued before the last N groups have landed: make them visible
 * to the tensor cores (async proxy), then arrive. */
#define W_LANDED(n, bar)                                                  \
  do                                                                      \
    {                                                                     \
      asm volatile ("cp.async.wait_group " #n ";" ::: "memory");          \
      asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");       \
      NKP_CAT (NKP_NAME, _arrive) (bar);                                                \
    }                                                                     \
  while (0)

#ifdef NAPKIN_GENERATED
#include "napkin-fragment/WGMMA"
#else
__device__ __forceinline__ void
napkin_k0_qk (float (&d)[32], unsigned long long da, unsigned long long db, int acc)
{
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %34, 0; "
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0; }"
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31])
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
napkin_k0_fence_s (float (&d)[32])
{
  asm volatile ("" : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]) :: "memory");
}

__device__ __forceinline__ void
napkin_k0_fence_o (float (&d)[64])
{
  asm volatile ("" : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63]) :: "memory");
}
#endif /* napkin-fragment/WGMMA */

extern "C" __global__ void __launch_bounds__ (W_THREADS, 1)
#if W_TMA
NKP_NAME (const NapkinArgs args, const __grid_constant__ NapkinTensorMap tma_q,
        const __grid_constant__ NapkinTensorMap tma_k, const __grid_constant__ NapkinTensorMap tma_v)
#else
NKP_NAME (const NapkinArgs args)
#endif
{
#if !W_TMA
  const NKP_T *__restrict__ Qg = (const NKP_T *) args.p[NKP_QS];
  const NKP_T *__restrict__ Kg = (const NKP_T *) args.p[NKP_KS];
  const NKP_T *__restrict__ Vg = (const NKP_T *) args.p[NKP_VS];
#endif
  NKP_OT *__restrict__ Og = (NKP_OT *) args.p[NKP_OS];
  extern __shared__ __align__ (16) unsigned char smem_raw_[];
  /* The swizzle repeats every 1024 bytes: align the tiles to it. */
  const unsigned base = (napkin_smem_addr (smem_raw_) + 1023) & ~1023u;
  const unsigned q_s = base;
  const unsigned k_s = q_s + W_Q_BYTES;                  /* [ST] tiles */
  const unsigned v_s = k_s + W_ST * W_KV_BYTES;          /* [ST] tiles */
  const unsigned bars = v_s + W_ST * W_KV_BYTES;         /* q_full, full_k[ST], full_v[ST], empty[ST] */
  const unsigned q_full = bars;
#define W_FULL_K(s) (bars + 8 * (1 + (s)))
#define W_FULL_V(s) (bars + 8 * (1 + W_ST + (s)))
#define W_EMPTY(s) (bars + 8 * (1 + 2 * W_ST + (s)))
  const int tid = threadIdx.x, wg = tid / 128, t = tid % 128;
  const long q_tiles = NKP_L (NKP_NQ) / W_BQ;
  const long bh = blockIdx.x / q_tiles, q0 = (blockIdx.x % q_tiles) * W_BQ;
  const int chunks = NKP_NKV / W_BKV;

  /* Arrivals that fill a stage: the issuing thread (TMA) or every producer thread. */
  const unsigned fillers = W_TMA ? 1 : 128;

  if (tid == 0)
    {
      asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (q_full), "r" (fillers) : "memory");
      for (int s = 0; s < W_ST; s++)
        {
          asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (W_FULL_K (s)), "r" (fillers) : "memory");
          asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (W_FULL_V (s)), "r" (fillers) : "memory");
          asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (W_EMPTY (s)), "r" (W_NWG * 128) : "memory");
        }
    }
  __syncthreads ();

  if (wg == 0)
    {
      /* Producer. */
      asm volatile ("setmaxnreg.dec.sync.aligned.u32 " NKP_STR (NKP_PRODUCER_REGS) ";");
#if W_TMA
      if (t == 0)
        {
          NKP_CAT (NKP_NAME, _tma)<W_BQ> (q_s, &tma_q, (int) (bh * NKP_L (NKP_NQ) + q0), q_full);
          for (int kc = 0; kc < chunks; kc++)
            {
              const int s = kc % W_ST;
              const int row = (int) (bh * NKP_L (NKP_NKV) + (long) kc * W_BKV);

              if (kc >= W_ST)
                NKP_CAT (NKP_NAME, _wait) (W_EMPTY (s), (kc / W_ST - 1) & 1);
              NKP_CAT (NKP_NAME, _tma)<W_BKV> (k_s + s * W_KV_BYTES, &tma_k, row, W_FULL_K (s));
              NKP_CAT (NKP_NAME, _tma)<W_BKV> (v_s + s * W_KV_BYTES, &tma_v, row, W_FULL_V (s));
            }
        }
#else
      const NKP_T *Kb = Kg + bh * NKP_L (NKP_NKV) * W_D;
      const NKP_T *Vb = Vg + bh * NKP_L (NKP_NKV) * W_D;

      NKP_CAT (NKP_NAME, _copy)<W_BQ> (q_s, Qg + (bh * NKP_L (NKP_NQ) + q0) * W_D, t);
      for (int kc = 0; kc < chunks; kc++)
        {
          const int s = kc % W_ST;

          if (kc >= W_ST)
            NKP_CAT (NKP_NAME, _wait) (W_EMPTY (s), (kc / W_ST - 1) & 1);
          NKP_CAT (NKP_NAME, _copy)<W_BKV> (k_s + s * W_KV_BYTES, Kb + (long) kc * W_BKV * W_D, t);
          NKP_CAT (NKP_NAME, _copy)<W_BKV> (v_s + s * W_KV_BYTES, Vb + (long) kc * W_BKV * W_D, t);
          /* Outstanding: …, V(kc-1), K(kc), V(kc). Signal all but V(kc). */
          if (kc == 0)
            {
              asm volatile ("cp.async.wait_group 2;" ::: "memory");
              asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
              NKP_CAT (NKP_NAME, _arrive) (q_full);
            }
          W_LANDED (1, W_FULL_K (s));
          if (kc > 0)
            NKP_CAT (NKP_NAME, _arrive) (W_FULL_V ((kc - 1) % W_ST));
        }
      W_LANDED (0, W_FULL_V ((chunks - 1) % W_ST));
#endif
    }
  else
    {
      /* Consumer warpgroup c = wg - 1: query rows c·64 … c·64 + 63 of the block. */
      const int c = wg - 1, warp = t / 32, lane = t % 32;
      /* α·log2(e): exponentials as exp2. */
      const float scale = NKP_F (NKP_ALPHA) * 1.4426950408889634f;
      float s[W_BKV / 2], o[W_D / 2];
      unsigned p[W_BKV / 4];
      float m_row[2] = { -1e30f, -1e30f }, l_row[2] = { 0.0f, 0.0f };

      asm volatile ("setmaxnreg.inc.sync.aligned.u32 " NKP_STR (NKP_CONSUMER_REGS) ";");
#pragma unroll
      for (int i = 0; i < W_D / 2; i++)
        o[i] = 0.0f;

      /* S = Q·Kᵀ of chunk kc, issued and committed (not waited for). */
#define W_ISSUE_QK(kc)                                                                                   \
      do                                                                                                 \
        {                                                                                                \
          const int st_ = (kc) % W_ST;                                                                   \
          NKP_CAT (NKP_NAME, _wait) (W_FULL_K (st_), ((kc) / W_ST) & 1);                                               \
          asm volatile ("wgmma.fence.sync.aligned;" ::: "memory");                                      \
          _Pragma ("unroll")                                                                             \
          for (int kk = 0; kk < W_D / 16; kk++)                                                          \
            NKP_CAT (NKP_NAME, _qk) (s, NKP_CAT (NKP_NAME, _desc) (q_s + (kk / 4) * (W_BQ * 128) + c * 8192 + (kk % 4) * 32, 16, 1024), \
                       NKP_CAT (NKP_NAME, _desc) (k_s + st_ * W_KV_BYTES + (kk / 4) * (W_BKV * 128) + (kk % 4) * 32, 16, 1024), \
                       kk > 0);                                                                          \
          asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");                               \
        }                                                                                                \
      while (0)

      /* O += P·V of chunk kc, issued and committed. */
#define W_ISSUE_PV(kc)                                                                                   \
      do                                                                                                 \
        {                                                                                                \
          const int st_ = (kc) % W_ST;                                                                   \
          NKP_CAT (NKP_NAME, _wait) (W_FULL_V (st_), ((kc) / W_ST) & 1);                                               \
          asm volatile ("wgmma.fence.sync.aligned;" ::: "memory");                                      \
          _Pragma ("unroll")                                                                             \
          for (int kt = 0; kt < W_BKV / 16; kt++)                                                        \
            NKP_CAT (NKP_NAME, _pv) (o, p[4 * kt], p[4 * kt + 1], p[4 * kt + 2], p[4 * kt + 3],                        \
                       NKP_CAT (NKP_NAME, _desc) (v_s + st_ * W_KV_BYTES + kt * 2048, W_BKV * 128, 1024));            \
          asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");                               \
        }                                                                                                \
      while (0)

      /* Online softmax of s (rows lane/4 and lane/4 + 8 of this warp's 16): new running
       * max, s ← exp2(s·scale − m), running sum; returns the corrections of O. */
#define W_SOFTMAX(c0, c1)                                                                                \
      do                                                                                                 \
        {                                                                                                \
          float mx0 = -1e30f, mx1 = -1e30f;                                                              \
          /* The max of the raw scores, scaled once (α > 0: a compile-time branch). */                   \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < W_BKV / 8; j++)                                                            \
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
          c0 = NKP_CAT (NKP_NAME, _exp2) (m_row[0] - mx0);                                                             \
          c1 = NKP_CAT (NKP_NAME, _exp2) (m_row[1] - mx1);                                                             \
          m_row[0] = mx0;                                                                                \
          m_row[1] = mx1;                                                                                \
          float sum0 = 0.0f, sum1 = 0.0f;                                                                \
          _Pragma ("unroll")                                                                             \
          for (int j = 0; j < W_BKV / 8; j++)                                                            \
            {                                                                                            \
              s[4 * j] = NKP_CAT (NKP_NAME, _exp2) (s[4 * j] * scale - mx0);                                           \
              s[4 * j + 1] = NKP_CAT (NKP_NAME, _exp2) (s[4 * j + 1] * scale - mx0);                                   \
              s[4 * j + 2] = NKP_CAT (NKP_NAME, _exp2) (s[4 * j + 2] * scale - mx1);                                   \
              s[4 * j + 3] = NKP_CAT (NKP_NAME, _exp2) (s[4 * j + 3] * scale - mx1);                                   \
              sum0 += s[4 * j] + s[4 * j + 1];                                                           \
              sum1 += s[4 * j + 2] + s[4 * j + 3];                                                       \
            }                                                                                            \
          l_row[0] = l_row[0] * c0 + sum0;                                                               \
          l_row[1] = l_row[1] * c1 + sum1;                                                               \
        }                                                                                                \
      while (0)

      /* P: the accumulator layout of 16 keys is the A-register layout of one k16 step. */
#define W_PACK_P()                                                                                       \
      _Pragma ("unroll")                                                                                 \
      for (int kt = 0; kt < W_BKV / 16; kt++)                                                            \
        {                                                                                                \
          p[4 * kt] = NKP_CAT (NKP_NAME, _pack) (s[8 * kt], s[8 * kt + 1]);                                            \
          p[4 * kt + 1] = NKP_CAT (NKP_NAME, _pack) (s[8 * kt + 2], s[8 * kt + 3]);                                    \
          p[4 * kt + 2] = NKP_CAT (NKP_NAME, _pack) (s[8 * kt + 4], s[8 * kt + 5]);                                    \
          p[4 * kt + 3] = NKP_CAT (NKP_NAME, _pack) (s[8 * kt + 6], s[8 * kt + 7]);                                    \
        }

#define W_RESCALE_O(c0, c1)                                                                              \
      _Pragma ("unroll")                                                                                 \
      for (int j = 0; j < W_D / 8; j++)                                                                  \
        {                                                                                                \
          o[4 * j] *= c0;                                                                                \
          o[4 * j + 1] *= c0;                                                                            \
          o[4 * j + 2] *= c1;                                                                            \
          o[4 * j + 3] *= c1;                                                                            \
        }

      NKP_CAT (NKP_NAME, _wait) (q_full, 0);
#if W_OVERLAP
#if W_PINGPONG
      /* Consumer c issues after c − 1 (cyclically) and hands over when its wgmmas are issued. */
#define W_TURN_BEGIN() asm volatile ("bar.sync %0, 256;" :: "r" (1 + c) : "memory")
#define W_TURN_END() asm volatile ("bar.arrive %0, 256;" :: "r" (1 + (c + 1) % W_NWG) : "memory")
      if (c == W_NWG - 1)
        W_TURN_END ();   /* the first turn is consumer 0's */
#else
#define W_TURN_BEGIN() do { } while (0)
#define W_TURN_END() do { } while (0)
#endif
      {
        float c0, c1;

        W_TURN_BEGIN ();
        W_ISSUE_QK (0);
        W_TURN_END ();
        asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        NKP_CAT (NKP_NAME, _fence_s) (s);
        W_SOFTMAX (c0, c1);
        W_PACK_P ();
      }
      for (int kc = 0; kc + 1 < chunks; kc++)
        {
          float c0, c1;

          W_TURN_BEGIN ();
          W_ISSUE_QK (kc + 1);
          W_ISSUE_PV (kc);
          W_TURN_END ();
          /* Groups complete in order: the newest (P·V) may still run. */
          asm volatile ("wgmma.wait_group.sync.aligned 1;" ::: "memory");
          NKP_CAT (NKP_NAME, _fence_s) (s);
          W_SOFTMAX (c0, c1);
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          NKP_CAT (NKP_NAME, _fence_o) (o);
          NKP_CAT (NKP_NAME, _arrive) (W_EMPTY (kc % W_ST));
          W_RESCALE_O (c0, c1);
          W_PACK_P ();
        }
      W_TURN_BEGIN ();
      W_ISSUE_PV (chunks - 1);
      /* Every turn handed over is taken: the last consumer keeps its last one. */
      if (c != W_NWG - 1)
        W_TURN_END ();
      asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      NKP_CAT (NKP_NAME, _fence_o) (o);
      NKP_CAT (NKP_NAME, _arrive) (W_EMPTY ((chunks - 1) % W_ST));
#undef W_TURN_BEGIN
#undef W_TURN_END
#else
      for (int kc = 0; kc < chunks; kc++)
        {
          float c0, c1;

          W_ISSUE_QK (kc);
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          NKP_CAT (NKP_NAME, _fence_s) (s);
          W_SOFTMAX (c0, c1);
          W_RESCALE_O (c0, c1);
          W_PACK_P ();
          W_ISSUE_PV (kc);
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          NKP_CAT (NKP_NAME, _fence_o) (o);
          NKP_CAT (NKP_NAME, _arrive) (W_EMPTY (kc % W_ST));
        }
#endif

      /* The running sums were kept per thread: add the quad's, then divide. */
#pragma unroll
      for (int r = 0; r < 2; r++)
        {
          l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 1);
          l_row[r] += __shfl_xor_sync (0xffffffffu, l_row[r], 2);
        }
      {
        const long row = q0 + c * 64 + warp * 16 + (lane >> 2);
        NKP_OT *ob = Og + (bh * NKP_L (NKP_NQ) + row) * W_D;
        const float i0 = 1.0f / l_row[0], i1 = 1.0f / l_row[1];

#pragma unroll
        for (int j = 0; j < W_D / 8; j++)
          {
            const int col = j * 8 + (lane & 3) * 2;

            napkin_st (&ob[col], o[4 * j] * i0);
            napkin_st (&ob[col + 1], o[4 * j + 1] * i0);
            napkin_st (&ob[8 * W_D + col], o[4 * j + 2] * i1);
            napkin_st (&ob[8 * W_D + col + 1], o[4 * j + 3] * i1);
          }
      }
#undef W_ISSUE_QK
#undef W_ISSUE_PV
#undef W_SOFTMAX
#undef W_PACK_P
#undef W_RESCALE_O
    }
#undef W_FULL_K
#undef W_FULL_V
#undef W_EMPTY
}
#undef W_LANDED
#undef W_BQ
#undef W_BKV
#undef W_D
#undef W_ST
#undef W_NWG
#undef W_THREADS
#undef W_OVERLAP
#undef W_TMA
#undef W_PINGPONG
#undef W_Q_BYTES
#undef W_KV_BYTES
