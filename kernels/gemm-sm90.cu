/* The Hopper GEMM of the kernel plan (docs/plan.md, "GEMM tile primitives"), sm_90a:
 * C[b,m,n] = epilogue (Σ_k A[b,m,k]·B[b,k,n]), fp16/bf16 (wgmma k16) or fp8 e4m3/e5m2
 * (k32) in, fp32 accumulate, any M, N, K.
 * Work: batch × ⌈M/BM⌉ × ⌈N/BN⌉ × split tiles over a persistent grid (block b takes
 * tiles b, b + gridDim.x, …), grouped G_GROUP tile rows at a time so that the blocks
 * working together share A and B panels in L2. Each tile streams its slice of K in
 * chunks of one 128-byte swizzle row (64 16-bit or 128 8-bit elements) through a ring of
 * G_STAGES shared-memory stages.
 * Warpgroup 0 produces: one thread issues the TMA copies of each chunk (A K-major: one
 * box KB × BM; A M-major: BM/64 boxes 64 × KB read through wgmma's transpose bit; B
 * likewise, K-major one box KB × BN, N-major BN/64 boxes) and the stage's full mbarrier
 * counts their bytes. Boxes that run past M, N or K arrive zero-filled, so edge tiles
 * need no special case in the main loop. Warpgroups 1 (and 2) consume: each multiplies
 * its BM/G_CWG rows by the whole BN with wgmma straight from shared memory, keeps one
 * group in flight and frees a stage through its empty mbarrier once its wgmmas are done.
 * Ping-pong (G_PP, two consumers): each consumer takes every other tile whole (all BM
 * rows) instead of half of every tile, and each tile's epilogue runs while the other
 * consumer's wgmmas keep the tensor cores busy (docs/plan.md, "Ping-pong"). The ring
 * fills in tile order; a consumer starts a tile's main loop once the other has waited
 * for its last chunk (the `turn` mbarriers), so the parity it waits on in the ring is
 * never a whole lap ahead of the stage's phase.
 * Epilogue (G_EPI): 0 — C through 128-byte swizzled buffers and TMA stores (clipped at
 * the edges), the fused maps of the value alone (a cast, GELU) applied first (G_EPU); 1 — each warp stages its 16 rows 32 fp32 columns at a time in shared
 * memory of its own and writes them back in 16-byte-aligned chunks of 8 elements (one
 * vector store each, whatever the alignment of C's rows), each value passed through the
 * fused maps on the way (their other operands loaded G_RD pieces ahead, as vectors where
 * aligned); 2 — like 1, fp32 partials of this split into [split][batch][M][N], no maps
 * (the split-reduce kernel applies them).
 * Gated pair (G_DUAL, docs/plan.md "Gated GEMM"): a second product G = A·B2 of the same A
 * chunks (B2 by its own tensor map, in the stage after B) into a second accumulator of
 * the same layout; after the main loop each value becomes NAME_join (acc, G) — the gate's
 * maps on G and the join (a SwiGLU's silu (G) · acc) — before the epilogue above. The
 * tile's BN is half what one product would take: both accumulators fit where one did.
 * Clusters (G_CM = 2, docs/plan.md "Clusters"): two blocks one above the other take the
 * same columns of C; each copies half of B's chunk (and B2's), multicast to both, and a
 * consumer frees a stage on both blocks' empty mbarriers. Tiles are walked in pairs.
 * The printer (src/codegen/napkin-print-gemm.c) fills the NKP_ parameters and checks the
 * limits: BM = 64·G_CWG·(1 or 2) (ping-pong: 64 or 128), BN % 8 == 0 (N-major B: % 64), ≤ 128 accumulators per
 * consumer thread, the stages within 227 KB. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_90a: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "tile-store.cuh"
#include "tile-sm90.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME np_e_k0
#define NKP_BM 128
#define NKP_BN 128
#define NKP_CWG 2
#define NKP_PP 0
#define NKP_STAGES 4
#define NKP_KB 64
#define NKP_KSTEP 16
#define NKP_M 256
#define NKP_N 512
#define NKP_K 128
#define NKP_BATCH 1
#define NKP_SPLIT 1
#define NKP_A_KMAJOR 1
#define NKP_B_KMAJOR 1
#define NKP_A_RANK3 0
#define NKP_B_RANK3 0
#define NKP_C_RANK3 0
#define NKP_A_BATCH_ARG
#define NKP_B_BATCH_ARG
#define NKP_EPI 1
#define NKP_EPU 0
#define NKP_DVEC 1
#define NKP_NY 1
#define NKP_LDY 1
#define NKP_NW 4
#define NKP_RD 4
#define NKP_LDC 512
#define NKP_CBS 0
#define NKP_CT napkin_bf16
#define NKP_CREF ((napkin_bf16 *) ((char *) args.p[0] + 196608))
#define NKP_PREF ((float *) 0)
#define NKP_CPARAM
#define NKP_DUAL 0
#define NKP_B2PARAM
#define NKP_CM 1
#endif /* NAPKIN_GENERATED */
#define G_BM NKP_BM
#define G_BN NKP_BN
#define G_CWG NKP_CWG                          /* consumer warpgroups */
#define G_PP NKP_PP                            /* ping-pong: a consumer takes whole tiles */
#define G_STAGES NKP_STAGES
#define G_KB NKP_KB                            /* elements of K per chunk: 128 bytes */
#define G_KSTEP NKP_KSTEP                      /* elements of K per wgmma */
#define G_M NKP_L (NKP_M)
#define G_N NKP_L (NKP_N)
#define G_K NKP_L (NKP_K)
#define G_BATCH NKP_L (NKP_BATCH)
#define G_SPLIT NKP_L (NKP_SPLIT)
#define G_A_KMAJOR NKP_A_KMAJOR
#define G_B_KMAJOR NKP_B_KMAJOR
#define G_A_RANK3 NKP_A_RANK3                  /* the A map has a batch coordinate */
#define G_B_RANK3 NKP_B_RANK3
#define G_C_RANK3 NKP_C_RANK3
#define G_EPI NKP_EPI
#define G_EPU NKP_EPU                          /* TMA store: the maps of the value alone first */
#define G_DVEC NKP_DVEC                        /* every row of the destination starts 16-byte aligned */
#define G_NY NKP_NY                            /* other operands the fused maps read (at least 1) */
#define G_LDY NKP_LDY                          /* … and whether there are any */
#define G_NW NKP_NW                            /* 32-bit words of one chunk of them, as loaded */
#define G_RD NKP_RD                            /* pieces of them in flight */
#define G_DUAL NKP_DUAL                        /* a gated pair: B2 and a second accumulator */
#define G_CM NKP_CM                            /* blocks of a cluster along M sharing B by multicast */
#define G_LDC NKP_L (NKP_LDC)
#define G_CBS NKP_L (NKP_CBS)
#define G_THREADS (128 * (1 + G_CWG))
#define G_WGM (G_PP ? G_BM : G_BM / G_CWG)    /* rows of C per consumer warpgroup */
#define G_ROW0(cw) (G_PP ? 0 : (cw) * G_WGM)   /* its first row in the tile */
#define G_MI (G_WGM / 64)                    /* m64 wgmmas per consumer and k-step */
#define G_A_BYTES (G_BM * 128)
#define G_B_BYTES (G_BN * 128)
#define G_STAGE_BYTES (G_A_BYTES + (1 + G_DUAL) * G_B_BYTES)
#define G_BOX_BYTES (G_KB * 128)             /* an MN-major box: 64 columns × KB rows */
#define G_GROUP 8
#define G_CONSUMER_WARPS (G_PP ? 4 : 4 * G_CWG)   /* warps that consume one stage (in each block) */
#define G_BH (G_BN / G_CM)                   /* rows of B (and B2) each block of a cluster copies */
#define G_TILES_M ((G_M + G_CM * G_BM - 1) / (G_CM * G_BM))   /* rows of clusters */
#define G_TILES_N ((G_N + G_BN - 1) / G_BN)
#define G_TILES (G_TILES_M * G_TILES_N * G_BATCH * G_SPLIT)
#define G_CHUNKS ((G_K + G_KB - 1) / G_KB)
#define G_SPLIT_CHUNKS ((G_CHUNKS + G_SPLIT - 1) / G_SPLIT)
#define G_CBOX ((int) (128 / sizeof (NKP_CT))) /* TMA store: columns per 128-byte row */
#define G_CBUF 8192                          /* one store buffer: 64 rows × 128 bytes */
#define G_SMEM_C (G_STAGES * G_STAGE_BYTES)

/* The fused maps, applied to each fp32 result x at (b, m, n). */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPIFN"
#else
__device__ __forceinline__ float
np_e_k0_epi (const NapkinArgs &args, int b, long m, long n, float x)
{
  (void) args; (void) b; (void) m; (void) n;
  { const float y = napkin_ld (&((napkin_bf16 *) ((char *) args.p[0] + 458752))[n * 1L]); x = (x + y); }
  x = napkin_gelu (x);
  return x;
}

__device__ __forceinline__ void
np_e_k0_ldr (const NapkinArgs &args, int b, long m, long n, unsigned (&r)[4])
{
  (void) args; (void) b; (void) m; (void) n; (void) r;
  napkin_ldbits16 (&((napkin_bf16 *) ((char *) args.p[0] + 458752))[n * 1L], r + 0);
}

__device__ __forceinline__ void
np_e_k0_cvt (const unsigned (&r)[4], float (&y)[1][8])
{
  (void) r; (void) y;
#pragma unroll
  for (int h = 0; h < 4; h++)
    napkin_unpack2 ((const napkin_bf16 *) 0, r[0 + h], &y[0][2 * h]);
}

__device__ __forceinline__ float
np_e_k0_ap (float x, const float (&y)[1][8], int e)
{
  (void) y; (void) e;
  x = (x + y[0][e]);
  x = napkin_gelu (x);
  return x;
}
#endif /* napkin-fragment/EPIFN */

/* One wgmma of the operand types for BN (one asm operand per accumulator register). */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/WGMMA"
#else
__device__ __forceinline__ void
np_e_k0_wgmma (float (&d)[64], unsigned long long da, unsigned long long db, int acc)
{
  asm volatile ("{ .reg .pred p; setp.ne.b32 p, %66, 0; "
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0; }"
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3]), "+f" (d[4]), "+f" (d[5]), "+f" (d[6]), "+f" (d[7]), "+f" (d[8]), "+f" (d[9]), "+f" (d[10]), "+f" (d[11]), "+f" (d[12]), "+f" (d[13]), "+f" (d[14]), "+f" (d[15]), "+f" (d[16]), "+f" (d[17]), "+f" (d[18]), "+f" (d[19]), "+f" (d[20]), "+f" (d[21]), "+f" (d[22]), "+f" (d[23]), "+f" (d[24]), "+f" (d[25]), "+f" (d[26]), "+f" (d[27]), "+f" (d[28]), "+f" (d[29]), "+f" (d[30]), "+f" (d[31]), "+f" (d[32]), "+f" (d[33]), "+f" (d[34]), "+f" (d[35]), "+f" (d[36]), "+f" (d[37]), "+f" (d[38]), "+f" (d[39]), "+f" (d[40]), "+f" (d[41]), "+f" (d[42]), "+f" (d[43]), "+f" (d[44]), "+f" (d[45]), "+f" (d[46]), "+f" (d[47]), "+f" (d[48]), "+f" (d[49]), "+f" (d[50]), "+f" (d[51]), "+f" (d[52]), "+f" (d[53]), "+f" (d[54]), "+f" (d[55]), "+f" (d[56]), "+f" (d[57]), "+f" (d[58]), "+f" (d[59]), "+f" (d[60]), "+f" (d[61]), "+f" (d[62]), "+f" (d[63])
                : "l" (da), "l" (db), "r" (acc));
}
#endif /* napkin-fragment/WGMMA */

#define G_FENCE_ONE(a)                                                                         \
  do {                                                                                         \
    _Pragma ("unroll") for (int i_ = 0; i_ < G_MI; i_++)                                      \
      _Pragma ("unroll") for (int r_ = 0; r_ < G_BN / 2; r_++)                                \
        asm volatile ("" : "+f" (a[i_][r_]) :: "memory");                                      \
  } while (0)
#if G_DUAL
#define G_FENCE_ACC() do { G_FENCE_ONE (acc); G_FENCE_ONE (acc2); } while (0)
#else
#define G_FENCE_ACC() G_FENCE_ONE (acc)
#endif

/* Tile t: split, batch, then the corner of C in grouped order (G_GROUP tile rows ×
 * every tile column, column-major inside a group). With clusters along M, t counts the
 * clusters' tiles (G_CM tiles one above the other, sharing B's columns) and the block
 * takes the one of its rank in the cluster. */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _tile) (long t, int *split, int *b, int *m0, int *n0)
{
  const long per = G_TILES_M * G_TILES_N, r = t % per, sb = t / per;
  const long group = r / (G_GROUP * G_TILES_N), first_m = group * G_GROUP;
  const long rows_in = G_TILES_M - first_m < G_GROUP ? G_TILES_M - first_m : G_GROUP;
  const long in_group = r % (G_GROUP * G_TILES_N);

  *b = (int) (sb % G_BATCH);
  *split = (int) (sb / G_BATCH);
  *m0 = (int) (((first_m + in_group % rows_in) * G_CM + (G_CM > 1 ? blockIdx.x % G_CM : 0)) * G_BM);
  *n0 = (int) ((in_group / rows_in) * G_BN);
}

#if G_EPI != 0
#if G_EPI == 1
#define G_DT NKP_CT                            /* the destination's element type */
#else
#define G_DT float
#endif

/* Row m of the destination (C, or this split's fp32 partials). */
static __device__ __forceinline__ G_DT *
NKP_CAT (NKP_NAME, _row) (const NapkinArgs &args, int split, int b, long m)
{
  (void) args; (void) split;
#if G_EPI == 1
  return NKP_CREF + b * G_CBS + m * G_LDC;
#else
  return NKP_PREF + ((split * G_BATCH + b) * G_M + m) * G_N;
#endif
}

/* Columns of row m from the 16-byte boundary at or before column n0 to n0 (0 … 7). */
static __device__ __forceinline__ int
NKP_CAT (NKP_NAME, _skew) (const NapkinArgs &args, int split, int b, long m, int n0)
{
#if G_DVEC
  (void) args; (void) split; (void) b; (void) m; (void) n0;
  return 0;
#else
  return (int) (((unsigned long long) (NKP_CAT (NKP_NAME, _row) (args, split, b, m) + n0) % 16) / sizeof (G_DT));
#endif
}

/* Columns cp … cp + 7 of row r of a staged piece (32 fp32 columns, 128-byte rows,
 * swizzled 16-byte chunks); cp is −7 … 24, the columns before 0 are the previous
 * piece's 25 … 31. Aligned rows read two chunks; others three, shifted into place. */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _lds8) (unsigned buf, unsigned prev, int r, int cp, float (&v)[8])
{
#if G_DVEC
  (void) prev;
  napkin_sm90_lds4 (napkin_sm90_swz (buf, r, cp * 4), v);
  napkin_sm90_lds4 (napkin_sm90_swz (buf, r, cp * 4 + 16), v + 4);
#else
  const int k0 = (cp + 8) / 4 - 2, s = cp - 4 * k0;   /* first chunk (−2 … 6), shift (0 … 3) */
  float w[12];

#pragma unroll
  for (int q = 0; q < 3; q++)
    {
      const int k = k0 + q;

      napkin_sm90_lds4 (k < 0 ? napkin_sm90_swz (prev, r, (k + 8) * 16) : napkin_sm90_swz (buf, r, k * 16), w + 4 * q);
    }
  if (s & 2)
#pragma unroll
    for (int e = 0; e < 10; e++)
      w[e] = w[e + 2];
  if (s & 1)
#pragma unroll
    for (int e = 0; e < 9; e++)
      w[e] = w[e + 1];
#pragma unroll
  for (int e = 0; e < 8; e++)
    v[e] = w[e];
#endif
}

/* The maps' other operands of piece j (columns 32j … of the tile) for the two rows a
 * lane writes (mw + lane/4 and + 8), as loaded: their full chunks only (edges load as
 * they go). Nothing waits for them until NKP_CAT (NKP_NAME, _cvt_piece). */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _ld_piece) (const NapkinArgs &args, int b, long mw, int n0, int j, int skew0, int skew1,
                 unsigned (&r)[2][G_NW])
{
  (void) args; (void) b; (void) mw; (void) n0; (void) j; (void) skew0; (void) skew1; (void) r;
#if G_EPI == 1 && G_LDY
  const int lane = threadIdx.x % 32;

#pragma unroll
  for (int it = 0; it < 2; it++)
    {
      const long m = mw + lane / 4 + 8 * it;
      const int c = 32 * j + 8 * (lane % 4) - (it ? skew1 : skew0);

      if (m < G_M && c >= 0 && c + 8 <= G_BN && n0 + c + 8 <= G_N)
        NKP_CAT (NKP_NAME, _ldr) (args, b, m, n0 + c, r[it]);
    }
#endif
}

/* A piece's operands as fp32 (waiting for their loads). */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _cvt_piece) (const unsigned (&r)[2][G_NW], float (&y)[2][G_NY][8])
{
  (void) r; (void) y;
#if G_EPI == 1 && G_LDY
  NKP_CAT (NKP_NAME, _cvt) (r[0], y[0]);
  NKP_CAT (NKP_NAME, _cvt) (r[1], y[1]);
#endif
}

/* Chunk of 8 columns n … n + 7 (all inside the tile, N and M) of row m: the fused maps
 * with their operands y (NKP_CAT (NKP_NAME, _cvt_piece)), one vector store. */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _put8) (const NapkinArgs &args, int split, int b, long m, long n, float (&v)[8], const float (&y)[G_NY][8])
{
  (void) y;
#if G_EPI == 1
#pragma unroll
  for (int e = 0; e < 8; e++)
    v[e] = NKP_CAT (NKP_NAME, _ap) (v[e], y, e);
#endif
  napkin_st8 (NKP_CAT (NKP_NAME, _row) (args, split, b, m) + n, v);
}

/* The columns of a chunk that lie inside [lo, hi), one by one (tile and matrix edges). */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _put_edge) (const NapkinArgs &args, int split, int b, long m, long n, long lo, long hi, float (&v)[8])
{
  G_DT *row = NKP_CAT (NKP_NAME, _row) (args, split, b, m);

  /* one column a pass, the values moving down v (no indexing by a variable: registers) */
#pragma unroll 1
  for (int e = 0; e < 8; e++)
    {
      if (n + e >= lo && n + e < hi)
#if G_EPI == 1
        napkin_st (row + n + e, NKP_CAT (NKP_NAME, _epi) (args, b, m, n + e, v[0]));
#else
        row[n + e] = v[0];
#endif
#pragma unroll
      for (int q = 0; q < 7; q++)
        v[q] = v[q + 1];
    }
}
#endif

/* B's chunk (or B2's) into the stage at dst: K-major one box BH × KB, N-major BH/64 boxes
 * 64 × KB. With clusters along M each block copies its share, rank·BH…, multicast to both
 * blocks (the box the tensor map describes is that share). */
#if G_CM > 1
#define G_COPY_B(d, map, c0, c1, bar)                                                           \
  napkin_sm90_tma_load_mc (d, map, c0, c1, NKP_B_BATCH_ARG bar, (unsigned short) ((1u << G_CM) - 1))
#else
#define G_COPY_B(d, map, c0, c1, bar) napkin_sm90_tma_load (d, map, c0, c1, NKP_B_BATCH_ARG bar)
#endif
#if G_B_KMAJOR
#define G_LOAD_B(d, map, n0, k0, bar)                                                           \
  do {                                                                                              \
    const int r_ = G_CM > 1 ? (int) (blockIdx.x % G_CM) : 0;                                       \
    G_COPY_B ((d) + r_ * G_BH * 128, map, k0, (n0) + r_ * G_BH, bar);                           \
  } while (0)
#else
#define G_LOAD_B(d, map, n0, k0, bar)                                                           \
  do {                                                                                              \
    const int r_ = G_CM > 1 ? (int) (blockIdx.x % G_CM) : 0;                                       \
    _Pragma ("unroll") for (int j_ = r_ * (G_BH / 64); j_ < (r_ + 1) * (G_BH / 64); j_++)          \
      G_COPY_B ((d) + j_ * G_BOX_BYTES, map, (n0) + j_ * 64, k0, bar);                          \
  } while (0)
#endif
/* A consumer warp is done with a stage: every block of the cluster may refill it. */
#if G_CM > 1
#define G_RELEASE(bar)                                                                              \
  do {                                                                                              \
    napkin_sm90_bar_arrive (bar);                                                                   \
    _Pragma ("unroll") for (unsigned r_ = 1; r_ < G_CM; r_++)                                      \
      napkin_sm90_bar_arrive_cluster (bar, (blockIdx.x + r_) % G_CM);                               \
  } while (0)
#else
#define G_RELEASE(bar) napkin_sm90_bar_arrive (bar)
#endif

extern "C" __global__ void __launch_bounds__ (G_THREADS, 1)
NKP_NAME (const NapkinArgs args,
        const __grid_constant__ NapkinTensorMap tma_a,
        const __grid_constant__ NapkinTensorMap tma_b NKP_CPARAM NKP_B2PARAM)
{
  extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
  unsigned char *const smem_ = smem_raw_u8_;
  const unsigned base = (napkin_smem_addr (smem_) + 1023) & ~1023u;
  const unsigned full = base + G_SMEM_C + 2 * G_CWG * G_CBUF;   /* G_STAGES mbarriers, then the empty ones */
  const unsigned empty = full + G_STAGES * 8;
  const unsigned turn = empty + G_STAGES * 8;   /* ping-pong: one mbarrier a consumer */
  const int tid = threadIdx.x, wg = tid / 128;

  (void) args;
  if (tid == 0)
    {
      for (int s = 0; s < G_STAGES; s++)
        {
          napkin_sm90_bar_init (full + 8 * s, 1);
          napkin_sm90_bar_init (empty + 8 * s, G_CM * G_CONSUMER_WARPS);   /* every block's consumers */
        }
      if (G_PP)
        for (int c = 0; c < G_CWG; c++)
          napkin_sm90_bar_init (turn + 8 * c, 1);
      asm volatile ("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#if G_CM > 1
  napkin_sm90_cluster_sync ();
#else
  __syncthreads ();
#endif

  if (wg == 0)
    {
      /* Producer: one thread issues every copy. */
#if G_CWG == 2
      asm volatile ("setmaxnreg.dec.sync.aligned.u32 40;");
#endif
      if (tid == 0)
        {
          unsigned it = 0;   /* chunks issued so far, over all tiles: stage and phase */

          asm volatile ("prefetch.tensormap [%0];" :: "l" (&tma_a) : "memory");
          asm volatile ("prefetch.tensormap [%0];" :: "l" (&tma_b) : "memory");
#if G_DUAL
          asm volatile ("prefetch.tensormap [%0];" :: "l" (&tma_b2) : "memory");
#endif
          for (long t = blockIdx.x / G_CM; t < G_TILES; t += gridDim.x / G_CM)
            {
              int split, b, m0, n0;

              NKP_CAT (NKP_NAME, _tile) (t, &split, &b, &m0, &n0);
              const int kc1 = (int) (G_CHUNKS < (split + 1) * G_SPLIT_CHUNKS ? G_CHUNKS : (split + 1) * G_SPLIT_CHUNKS);

              for (int kc = split * (int) G_SPLIT_CHUNKS; kc < kc1; kc++, it++)
                {
                  const unsigned s = it % G_STAGES, bar = full + 8 * s;
                  const unsigned dst = base + s * G_STAGE_BYTES;
                  const int k0 = kc * G_KB;

                  napkin_sm90_bar_wait (empty + 8 * s, ((it / G_STAGES) & 1) ^ 1);
                  napkin_sm90_bar_expect (bar, G_STAGE_BYTES);
#if G_A_KMAJOR
                  napkin_sm90_tma_load (dst, &tma_a, k0, m0, NKP_A_BATCH_ARG bar);
#else
#pragma unroll
                  for (int j = 0; j < G_BM / 64; j++)
                    napkin_sm90_tma_load (dst + j * G_BOX_BYTES, &tma_a, m0 + j * 64, k0, NKP_A_BATCH_ARG bar);
#endif
                  G_LOAD_B (dst + G_A_BYTES, &tma_b, n0, k0, bar);
#if G_DUAL
                  G_LOAD_B (dst + G_A_BYTES + G_B_BYTES, &tma_b2, n0, k0, bar);
#endif
                }
            }
        }
    }
  else
    {
      /* Consumers: warpgroup cw takes rows cw·BM/G_CWG … of each tile (ping-pong: the
       * whole of every G_CWG-th tile, skipping the others' chunks in the ring). */
      const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32;
      const unsigned cbuf = base + G_SMEM_C + cw * 2 * G_CBUF;
      unsigned it = 0;      /* chunks consumed so far, over all tiles */
#if G_EPI == 0
      unsigned piece = 0;   /* output pieces staged so far: which of the two buffers */
#endif
      float acc[G_MI][G_BN / 2];
#if G_DUAL
      float acc2[G_MI][G_BN / 2];   /* the gate's product */
#endif
      unsigned nth = 0;     /* tiles of this block passed so far */

#if G_CWG == 2
      asm volatile ("setmaxnreg.inc.sync.aligned.u32 232;");   /* 128 × 40 + 256 × 232 ≤ 64 K */
#endif
      for (long t = blockIdx.x / G_CM; t < G_TILES; t += gridDim.x / G_CM, nth++)
        {
          int split, b, m0, n0;

          NKP_CAT (NKP_NAME, _tile) (t, &split, &b, &m0, &n0);
          const int kc0 = split * (int) G_SPLIT_CHUNKS;
          const int kc1 = (int) (G_CHUNKS < (split + 1) * G_SPLIT_CHUNKS ? G_CHUNKS : (split + 1) * G_SPLIT_CHUNKS);

          if (G_PP && nth % G_CWG != (unsigned) cw)
            {
              it += kc1 > kc0 ? kc1 - kc0 : 0;   /* the other consumer's tile */
              continue;
            }
          /* ping-pong: the other consumer has waited for its tile's last chunk (arrival
           * nth/2 − 1 + cw on our barrier, counted from 0) */
          if (G_PP && nth > 0)
            napkin_sm90_bar_wait (turn + 8 * cw, ((nth / 2 + cw - 1) & 1));

#pragma unroll
          for (int i = 0; i < G_MI; i++)
#pragma unroll
            for (int r = 0; r < G_BN / 2; r++)
              {
                acc[i][r] = 0.0f;
#if G_DUAL
                acc2[i][r] = 0.0f;
#endif
              }

          for (int kc = kc0; kc < kc1; kc++, it++)
            {
              const unsigned s = it % G_STAGES;
              const unsigned a_base = base + s * G_STAGE_BYTES;
              const unsigned b_base = a_base + G_A_BYTES;

              napkin_sm90_bar_wait (full + 8 * s, (it / G_STAGES) & 1);
              G_FENCE_ACC ();
              asm volatile ("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
              for (int kk = 0; kk < G_KB / G_KSTEP; kk++)
#pragma unroll
                for (int i = 0; i < G_MI; i++)
                  {
                    const int row = G_ROW0 (cw) + i * 64;   /* of the tile: a multiple of 64 */
#if G_A_KMAJOR
                    const unsigned long long da = napkin_sm90_desc (a_base + row * 128 + kk * 32, 16, 1024);
#else
                    const unsigned long long da = napkin_sm90_desc (a_base + (row / 64) * G_BOX_BYTES + kk * G_KSTEP * 128,
                                                                    G_BOX_BYTES, 1024);
#endif
#if G_B_KMAJOR
                    const unsigned long long db = napkin_sm90_desc (b_base + kk * 32, 16, 1024);
#else
                    const unsigned long long db = napkin_sm90_desc (b_base + kk * G_KSTEP * 128, G_BOX_BYTES, 1024);
#endif
                    NKP_CAT (NKP_NAME, _wgmma) (acc[i], da, db, 1);
#if G_DUAL && G_B_KMAJOR
                    NKP_CAT (NKP_NAME, _wgmma) (acc2[i], da, napkin_sm90_desc (b_base + G_B_BYTES + kk * 32, 16, 1024), 1);
#elif G_DUAL
                    NKP_CAT (NKP_NAME, _wgmma) (acc2[i], da,
                                                napkin_sm90_desc (b_base + G_B_BYTES + kk * G_KSTEP * 128, G_BOX_BYTES, 1024),
                                                1);
#endif
                  }
              asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");
              /* The previous chunk's wgmmas are done once at most this one is pending. */
              asm volatile ("wgmma.wait_group.sync.aligned 1;" ::: "memory");
              G_FENCE_ACC ();
              if (kc > kc0 && lane == 0)
                G_RELEASE (empty + 8 * ((it - 1) % G_STAGES));
            }
          /* ping-pong: the other consumer may start its tile */
          if (G_PP && tid % 128 == 0)
            napkin_sm90_bar_arrive (turn + 8 * (1 - cw));
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          G_FENCE_ACC ();
          /* The tile's last chunk is free too (a split with no chunks consumed none). */
          if (kc1 > kc0 && lane == 0)
            G_RELEASE (empty + 8 * ((it - 1) % G_STAGES));
#if G_DUAL
          /* the gate's maps and the join, value by value (the same layout in both) */
#pragma unroll
          for (int i = 0; i < G_MI; i++)
#pragma unroll
            for (int r = 0; r < G_BN / 2; r++)
              acc[i][r] = NKP_CAT (NKP_NAME, _join) (acc[i][r], acc2[i][r]);
#endif

          /* The accumulators hold mma.sync's m16n8 layout repeated over N: rows lane/4
           * and lane/4 + 8 of the warp's 16, two adjacent columns per 8. */
#if G_EPI == 0
          /* Each 64 × G_CBOX piece goes to a free buffer, 128-byte swizzled as the tensor
           * map reads it, then out by one TMA store while the warpgroup moves on. */
          {
            const bool leader = tid % 128 == 0;

#pragma unroll
            for (int i = 0; i < G_MI; i++)
#pragma unroll
              for (int j = 0; j < G_BN / G_CBOX; j++, piece++)
                {
                  const unsigned buf = cbuf + (piece % 2) * G_CBUF;
                  const int r = warp * 16 + lane / 4;

                  /* the store two pieces ago has read this buffer */
                  if (leader)
                    asm volatile ("cp.async.bulk.wait_group.read 1;" ::: "memory");
                  napkin_sm90_wg_sync (1 + cw);
#pragma unroll
                  for (int jj = 0; jj < G_CBOX / 8; jj++)
                    {
                      const int n8 = j * (G_CBOX / 8) + jj;
                      const unsigned byte = (jj * 8 + (lane % 4) * 2) * (unsigned) sizeof (NKP_CT);

#if G_EPU
                      /* maps of the value alone: no coordinates needed */
#pragma unroll
                      for (int e = 0; e < 4; e++)
                        acc[i][n8 * 4 + e] = NKP_CAT (NKP_NAME, _epi) (args, b, 0, 0, acc[i][n8 * 4 + e]);
#endif
                      napkin_sm90_sts2 (napkin_sm90_swz (buf, r, byte), acc[i][n8 * 4 + 0], acc[i][n8 * 4 + 1],
                                        (const NKP_CT *) 0);
                      napkin_sm90_sts2 (napkin_sm90_swz (buf, r + 8, byte), acc[i][n8 * 4 + 2], acc[i][n8 * 4 + 3],
                                        (const NKP_CT *) 0);
                    }
                  /* ordinary stores read next by the copy engine */
                  asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
                  napkin_sm90_wg_sync (1 + cw);
                  if (leader)
                    {
#if G_C_RANK3
                      napkin_sm90_tma_store (&tma_c, n0 + j * G_CBOX, m0 + G_ROW0 (cw) + i * 64, b, buf);
#else
                      napkin_sm90_tma_store (&tma_c, n0 + j * G_CBOX, m0 + G_ROW0 (cw) + i * 64, buf);
#endif
                      asm volatile ("cp.async.bulk.commit_group;" ::: "memory");
                    }
                }
          }
#else
          /* Each warp owns rows warp·16 … + 15 of its warpgroup's 64 (rows lane/4 and
           * lane/4 + 8 of its accumulators). It stages them 32 fp32 columns at a time
           * (a piece) in two 2 KB buffers of its own, rows of 128 bytes with 16-byte
           * chunks swizzled (no bank conflicts either way), and writes each row in
           * chunks of 8 columns that start 16-byte aligned in the destination: 4 lanes a
           * row, two rows a lane. When the destination's rows are not 16-byte aligned a
           * chunk starts up to 7 columns before its piece (those come from the previous
           * piece's buffer) and one more pass writes the last piece's remainder. Chunks
           * past the tile's or the matrix's edge are written column by column. The maps'
           * other operands are loaded G_RD pieces ahead, as bits nothing waits for until
           * their piece is written: a warp keeps that many round trips in flight, where
           * one piece ahead left the epilogue waiting on device memory. */
          {
            const unsigned wbuf = cbuf + warp * 4096;
            const int g = lane % 4;

#pragma unroll
            for (int i = 0; i < G_MI; i++)
              {
                const long mw = m0 + G_ROW0 (cw) + i * 64 + warp * 16;
                const int skew0 = NKP_CAT (NKP_NAME, _skew) (args, split, b, mw + lane / 4, n0);
                const int skew1 = NKP_CAT (NKP_NAME, _skew) (args, split, b, mw + lane / 4 + 8, n0);

                unsigned raw[G_RD][2][G_NW];   /* pieces j … j + G_RD − 1 of the operands, in flight */
                float y[2][G_NY][8];           /* piece j's */

#pragma unroll
                for (int p = 0; p < G_RD; p++)
                  if (p < (G_BN + 31) / 32)
                    NKP_CAT (NKP_NAME, _ld_piece) (args, b, mw, n0, p, skew0, skew1, raw[p]);
#pragma unroll
                for (int j = 0; j <= (G_BN + 31) / 32; j++)
                  {
                    const unsigned buf = wbuf + (j % 2) * 2048, prev = wbuf + ((j + 1) % 2) * 2048;

                    if (j == (G_BN + 31) / 32 && G_DVEC)
                      break;   /* aligned rows: no remainder */
                    /* (the last piece's remainder, rows not aligned, is edges only) */
                    if (j < (G_BN + 31) / 32)
                      {
                        NKP_CAT (NKP_NAME, _cvt_piece) (raw[j % G_RD], y);
                        if (j + G_RD < (G_BN + 31) / 32)
                          NKP_CAT (NKP_NAME, _ld_piece) (args, b, mw, n0, j + G_RD, skew0, skew1, raw[j % G_RD]);
#pragma unroll
                        for (int jj = 0; jj < 4; jj++)
                          {
                            const int n8 = j * 4 + jj;
                            const unsigned byte = jj * 32 + (lane % 4) * 8;

                            if (n8 < G_BN / 8)
                              {
                                napkin_sm90_sts2 (napkin_sm90_swz (buf, lane / 4, byte), acc[i][n8 * 4 + 0],
                                                  acc[i][n8 * 4 + 1], (const float *) 0);
                                napkin_sm90_sts2 (napkin_sm90_swz (buf, lane / 4 + 8, byte), acc[i][n8 * 4 + 2],
                                                  acc[i][n8 * 4 + 3], (const float *) 0);
                              }
                          }
                      }
                    __syncwarp ();
#pragma unroll 1
                    for (int it = 0; it < 2; it++)
                      {
                        const int r = lane / 4 + 8 * it, skew = it ? skew1 : skew0;
                        const long m = mw + r;
                        const int cp = 8 * g - skew, c = 32 * j + cp;   /* the chunk: piece and tile column */

                        if (m < G_M && c < G_BN && n0 + c < G_N)
                          {
                            float v[8];

                            NKP_CAT (NKP_NAME, _lds8) (buf, prev, r, cp, v);
                            if (c >= 0 && c + 8 <= G_BN && n0 + c + 8 <= G_N)
                              NKP_CAT (NKP_NAME, _put8) (args, split, b, m, n0 + c, v, y[0]);
                            else
                              NKP_CAT (NKP_NAME, _put_edge) (args, split, b, m, n0 + c, n0, n0 + G_BN < G_N ? n0 + G_BN : G_N, v);
                          }
                        /* the second row's operands move to where the loop reads them */
#pragma unroll
                        for (int q = 0; q < G_NY; q++)
#pragma unroll
                          for (int e = 0; e < 8; e++)
                            y[0][q][e] = y[1][q][e];
                      }
                    __syncwarp ();
                  }
              }
          }
#endif
        }
#if G_EPI == 0
      /* The last stores must have finished before the block's shared memory goes. */
      if (tid % 128 == 0)
        asm volatile ("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
    }
#if G_CM > 1
  /* the other block may still arrive on this one's empty mbarriers */
  napkin_sm90_cluster_sync ();
#endif
}
#undef G_BM
#undef G_BN
#undef G_CWG
#undef G_PP
#undef G_ROW0
#undef G_STAGES
#undef G_KB
#undef G_KSTEP
#undef G_M
#undef G_N
#undef G_K
#undef G_BATCH
#undef G_SPLIT
#undef G_A_KMAJOR
#undef G_B_KMAJOR
#undef G_A_RANK3
#undef G_B_RANK3
#undef G_C_RANK3
#undef G_EPI
#undef G_EPU
#undef G_DVEC
#undef G_DT
#undef G_NY
#undef G_LDY
#undef G_NW
#undef G_RD
#undef G_LDC
#undef G_CBS
#undef G_THREADS
#undef G_WGM
#undef G_MI
#undef G_A_BYTES
#undef G_B_BYTES
#undef G_STAGE_BYTES
#undef G_BOX_BYTES
#undef G_GROUP
#undef G_CONSUMER_WARPS
#undef G_TILES_M
#undef G_TILES_N
#undef G_TILES
#undef G_CHUNKS
#undef G_SPLIT_CHUNKS
#undef G_CBOX
#undef G_CBUF
#undef G_SMEM_C
#undef G_FENCE_ACC
#undef G_FENCE_ONE
#undef G_DUAL
#undef G_CM
#undef G_BH
#undef G_COPY_B
#undef G_LOAD_B
#undef G_RELEASE
