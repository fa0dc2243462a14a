/* The Ampere GEMM of the kernel plan (docs/plan.md, "GEMM tile primitives"), sm_80 and
 * later: C[b,m,n] = epilogue (Σ_k A[b,m,k]·B[b,k,n]), fp16/bf16 in, fp32 accumulate, any
 * M, N, K. One thread block per BM×BN tile of one batch and one split of K, tiles in
 * grouped order (G_GROUP tile rows at a time) so that a wave shares its A and B panels
 * in L2. K is streamed in chunks of BK through G_STAGES shared-memory buffers filled by
 * cp.async: 16-byte pieces, each told how many of its bytes lie inside the matrix
 * (src-size), the rest zero-filled, so edge tiles need no special case in the main loop.
 * Operands are kept in shared memory as stored (A K-major: BM rows of BK; A M-major: BK
 * rows of BM; B N-major: BK rows of BN; B K-major: BN rows of BK; each row padded by 16
 * bytes against bank conflicts) and ldmatrix (with .trans for M-major A and N-major B)
 * gives mma.sync m16n8k16 its fragments, double-buffered in registers. Warps own WM×WN
 * sub-tiles. The epilogue stores pairs of adjacent columns bounded by M and N, through
 * the fused maps (NKP_CAT (NKP_NAME, _epi)), or (G_EPI 2) fp32 partials of the split.
 * An operand whose rows are only 8 or 4 bytes apart is read in place by pieces of that
 * width (NKP_AVEC, NKP_BVEC: elements a piece; cp.async.ca), which a skinny product over
 * a large operand pays less for than a copy to aligned rows (docs/plan.md, "Reading
 * unaligned operands in place").
 * The printer (src/codegen/napkin-print-gemm.c) fills the NKP_ parameters and checks the
 * limits (rows 16, 8 or 4 bytes apart as the pieces are wide: the plan repacks others).
 * The PTX is in the napkin_mma_* helpers below, which tests/plan/simt-emu.hh replaces to
 * run the kernel on the CPU. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "tile-store.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k2
#define NKP_BM 64
#define NKP_BN 128
#define NKP_BK 32
#define NKP_WM 64
#define NKP_WN 32
#define NKP_STAGES 3
#define NKP_MINBLOCKS 2
#define NKP_M 37
#define NKP_N 53
#define NKP_K 29
#define NKP_BATCH 1
#define NKP_SPLIT 1
#define NKP_A_KMAJOR 1
#define NKP_B_KMAJOR 0
#define NKP_AVEC 8
#define NKP_BVEC 8
#define NKP_LDA 32
#define NKP_LDB 56
#define NKP_ABS 1184
#define NKP_BBS 1624
#define NKP_EPI 1
#define NKP_CVEC 0
#define NKP_LDC 53
#define NKP_CBS 1961
#define NKP_AT napkin_bf16
#define NKP_CT napkin_bf16
#define NKP_AREF ((napkin_bf16 *) args.p[3])
#define NKP_BREF ((napkin_bf16 *) ((char *) args.p[3] + 2560))
#define NKP_CREF ((napkin_bf16 *) args.p[2])
#define NKP_PREF ((float *) 0)
#endif /* NAPKIN_GENERATED */
#ifndef NAPKIN_MMA_PRIMS
#define NAPKIN_MMA_PRIMS
/* BYTES (4, 8 or 16) bytes from global memory to shared memory, asynchronously: `valid`
 * of them read, the rest zero-filled. 16-byte pieces bypass L1 (.cg); narrower ones are
 * cached there (.ca), where the pieces of one 128-byte line meet. */
template <int BYTES>
__device__ __forceinline__ void
napkin_mma_cp (unsigned dst, const void *src, int valid)
{
  if (BYTES == 16)
    asm volatile ("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r" (dst), "l" (src), "r" (valid) : "memory");
  else
    asm volatile ("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                  :: "r" (dst), "l" (src), "n" (BYTES), "r" (valid) : "memory");
}

__device__ __forceinline__ void
napkin_mma_commit (void)
{
  asm volatile ("cp.async.commit_group;");
}

/* Waits until at most N groups of copies are in flight. */
template <int N>
__device__ __forceinline__ void
napkin_mma_wait (void)
{
  asm volatile ("cp.async.wait_group %0;" :: "n" (N));
}

/* ldmatrix .x4 (T: .trans): lane l gives the address of row l % 8 of matrix l / 8. */
template <bool T>
__device__ __forceinline__ void
napkin_mma_ldsm4 (unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3)
{
  if (T)
    asm volatile ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                  : "=r" (r0), "=r" (r1), "=r" (r2), "=r" (r3) : "r" (addr));
  else
    asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                  : "=r" (r0), "=r" (r1), "=r" (r2), "=r" (r3) : "r" (addr));
}

/* d += a·b, m16n8k16, fp32 accumulators; the element type by the tag's. */
__device__ __forceinline__ void
napkin_mma_16816 (float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, const napkin_f16 *)
{
  asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};"
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3])
                : "r" (a[0]), "r" (a[1]), "r" (a[2]), "r" (a[3]), "r" (b0), "r" (b1));
}

__device__ __forceinline__ void
napkin_mma_16816 (float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, const napkin_bf16 *)
{
  asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};"
                : "+f" (d[0]), "+f" (d[1]), "+f" (d[2]), "+f" (d[3])
                : "r" (a[0]), "r" (a[1]), "r" (a[2]), "r" (a[3]), "r" (b0), "r" (b1));
}
#endif /* NAPKIN_MMA_PRIMS */
#define G_BM NKP_BM
#define G_BN NKP_BN
#define G_BK NKP_BK
#define G_WM NKP_WM
#define G_WN NKP_WN
#define G_STAGES NKP_STAGES
#define G_M NKP_L (NKP_M)
#define G_N NKP_L (NKP_N)
#define G_K NKP_L (NKP_K)
#define G_BATCH NKP_L (NKP_BATCH)
#define G_SPLIT NKP_L (NKP_SPLIT)
#define G_A_KMAJOR NKP_A_KMAJOR
#define G_B_KMAJOR NKP_B_KMAJOR
#define G_AVEC NKP_AVEC                        /* elements a copy of A (of B) reads */
#define G_BVEC NKP_BVEC
#define G_LDA NKP_L (NKP_LDA)
#define G_LDB NKP_L (NKP_LDB)
#define G_ABS NKP_L (NKP_ABS)
#define G_BBS NKP_L (NKP_BBS)
#define G_EPI NKP_EPI
#define G_CVEC NKP_CVEC                        /* rows of C allow 2-element vector stores */
#define G_LDC NKP_L (NKP_LDC)
#define G_CBS NKP_L (NKP_CBS)
#define G_THREADS ((G_BM / G_WM) * (G_BN / G_WN) * 32)
#define G_AROWS (G_A_KMAJOR ? G_BM : G_BK)   /* A in shared memory: rows × (cols + 8) */
#define G_ACOLS (G_A_KMAJOR ? G_BK : G_BM)
#define G_BROWS (G_B_KMAJOR ? G_BN : G_BK)
#define G_BCOLS (G_B_KMAJOR ? G_BK : G_BN)
#define G_AS (G_ACOLS + 8)
#define G_BS (G_BCOLS + 8)
#define G_GROUP 8
#define G_TILES_M ((G_M + G_BM - 1) / G_BM)
#define G_TILES_N ((G_N + G_BN - 1) / G_BN)
#define G_CHUNKS ((G_K + G_BK - 1) / G_BK)
#define G_SPLIT_CHUNKS ((G_CHUNKS + G_SPLIT - 1) / G_SPLIT)

/* The fused maps, applied to each fp32 result x at (b, m, n). */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/EPIFN"
#else
__device__ __forceinline__ float
napkin_k2_epi (const NapkinArgs &args, int b, long m, long n, float x)
{
  (void) args; (void) b; (void) m; (void) n;
  return x;
}
#endif /* napkin-fragment/EPIFN */

/* Two fp32 values of row m, columns n and n + 1 (only those < N). */
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _put2) (const NapkinArgs &args, int split, int b, long m, long n, float v0, float v1)
{
  if (m >= G_M || n >= G_N)
    return;
#if G_EPI == 1
  NKP_CT *c = NKP_CREF + b * G_CBS + m * G_LDC + n;
  const float x0 = NKP_CAT (NKP_NAME, _epi) (args, b, m, n, v0);

  if (n + 1 < G_N)
    {
      const float x1 = NKP_CAT (NKP_NAME, _epi) (args, b, m, n + 1, v1);

      if (G_CVEC)
        napkin_st2 (c, x0, x1);
      else
        {
          napkin_st (c, x0);
          napkin_st (c + 1, x1);
        }
    }
  else
    napkin_st (c, x0);
#else
  float *p = NKP_PREF + ((split * G_BATCH + b) * G_M + m) * G_N + n;

  p[0] = v0;
  if (n + 1 < G_N)
    p[1] = v1;
#endif
}

/* A piece of VEC elements of a row into shared memory: `valid` of them are inside the
 * matrix, the rest are zero-filled (src-size; 0 reads nothing). */
template <int VEC>
static __device__ __forceinline__ void
NKP_CAT (NKP_NAME, _cp) (const unsigned short *dst, const NKP_AT *src, long valid)
{
  const int bytes = valid <= 0 ? 0 : valid >= VEC ? 2 * VEC : (int) valid * 2;

  napkin_mma_cp<2 * VEC> (napkin_smem_addr (dst), src, bytes);
}

extern "C" __global__ void __launch_bounds__ (G_THREADS, NKP_MINBLOCKS)
NKP_NAME (const NapkinArgs args)
{
  const NKP_AT *__restrict__ A = NKP_AREF;
  const NKP_AT *__restrict__ B = NKP_BREF;
  /* one declaration for every kernel of a module: extern shared arrays must agree */
  extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
  unsigned short *const smem_ = (unsigned short *) smem_raw_u8_;
  unsigned short *As = smem_;                                   /* [STAGES][AROWS][AS] */
  unsigned short *Bs = smem_ + G_STAGES * G_AROWS * G_AS;       /* [STAGES][BROWS][BS] */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / (G_BN / G_WN)) * G_WM, wn = (warp % (G_BN / G_WN)) * G_WN;
  /* blockIdx.x: split, batch, then the tile of C in grouped order */
  const long per = G_TILES_M * G_TILES_N, t = blockIdx.x % per, sb = blockIdx.x / per;
  const int b = (int) (sb % G_BATCH), split = (int) (sb / G_BATCH);
  const long group = t / (G_GROUP * G_TILES_N), first_m = group * G_GROUP;
  const long rows_in = G_TILES_M - first_m < G_GROUP ? G_TILES_M - first_m : G_GROUP;
  const long in_group = t % (G_GROUP * G_TILES_N);
  const long m0 = (first_m + in_group % rows_in) * G_BM, n0 = (in_group / rows_in) * G_BN;
  const int kc0 = split * (int) G_SPLIT_CHUNKS;
  const int kc1 = (int) (G_CHUNKS < (split + 1) * G_SPLIT_CHUNKS ? G_CHUNKS : (split + 1) * G_SPLIT_CHUNKS);
  const int chunks = kc1 > kc0 ? kc1 - kc0 : 0;
  float acc[G_WM / 16][G_WN / 8][4];

  A += b * G_ABS;
  B += b * G_BBS;
  for (int i = 0; i < G_WM / 16; i++)
    for (int j = 0; j < G_WN / 8; j++)
      for (int c = 0; c < 4; c++)
        acc[i][j][c] = 0.0f;

  /* Chunk kc into stage s: every thread copies pieces of G_AVEC (G_BVEC) elements; a row
   * outside the matrix or a piece past its last column reads nothing (clamped to the
   * matrix's start). */
#define G_LOAD(s, kc)                                                                          \
  do {                                                                                         \
    /* evaluated before the loops: the arguments may name the caller's `c` */                 \
    const long k0_ = (long) (kc) * G_BK;                                                       \
    const int s_ = (s);                                                                        \
    for (int c_ = tid; c_ < G_AROWS * G_ACOLS / G_AVEC; c_ += G_THREADS)                       \
      {                                                                                        \
        const int r = c_ / (G_ACOLS / G_AVEC), q = (c_ % (G_ACOLS / G_AVEC)) * G_AVEC;         \
        const long row = G_A_KMAJOR ? m0 + r : k0_ + r, col = G_A_KMAJOR ? k0_ + q : m0 + q;   \
        const long valid = row < (G_A_KMAJOR ? G_M : G_K) ? (G_A_KMAJOR ? G_K : G_M) - col : 0; \
        NKP_CAT (NKP_NAME, _cp)<G_AVEC> (As + (s_ * G_AROWS + r) * G_AS + q, valid > 0 ? A + row * G_LDA + col : A, valid); \
      }                                                                                        \
    for (int c_ = tid; c_ < G_BROWS * G_BCOLS / G_BVEC; c_ += G_THREADS)                       \
      {                                                                                        \
        const int r = c_ / (G_BCOLS / G_BVEC), q = (c_ % (G_BCOLS / G_BVEC)) * G_BVEC;         \
        const long row = G_B_KMAJOR ? n0 + r : k0_ + r, col = G_B_KMAJOR ? k0_ + q : n0 + q;   \
        const long valid = row < (G_B_KMAJOR ? G_N : G_K) ? (G_B_KMAJOR ? G_K : G_N) - col : 0; \
        NKP_CAT (NKP_NAME, _cp)<G_BVEC> (Bs + (s_ * G_BROWS + r) * G_BS + q, valid > 0 ? B + row * G_LDB + col : B, valid); \
      }                                                                                        \
  } while (0)

  /* Fragments of k-step kk of the current stage into register buffer f: ldmatrix.x4,
   * transposed where the operand is stored MN-major. Lane l addresses row l % 8 of
   * matrix l / 8. */
#define G_FRAGS(f, kk)                                                                         \
  do {                                                                                         \
    _Pragma ("unroll") for (int i = 0; i < G_WM / 16; i++)                                    \
      {                                                                                        \
        const unsigned short *p = G_A_KMAJOR                                                   \
          ? as + (wm + i * 16 + (lane & 15)) * G_AS + (kk) + (lane >> 4) * 8                   \
          : as + ((kk) + (lane & 7) + (lane >> 4) * 8) * G_AS + wm + i * 16 + ((lane >> 3) & 1) * 8; \
        napkin_mma_ldsm4<!G_A_KMAJOR> (napkin_smem_addr (p), a[f][i][0], a[f][i][1], a[f][i][2], a[f][i][3]); \
      }                                                                                        \
    _Pragma ("unroll") for (int j = 0; j < G_WN / 8; j += 2)                                  \
      {                                                                                        \
        const unsigned short *p = G_B_KMAJOR                                                   \
          ? bs + (wn + j * 8 + (lane & 7) + (lane >> 4) * 8) * G_BS + (kk) + ((lane >> 3) & 1) * 8 \
          : bs + ((kk) + (lane & 7) + ((lane >> 3) & 1) * 8) * G_BS + wn + j * 8 + (lane >> 4) * 8; \
        napkin_mma_ldsm4<!G_B_KMAJOR> (napkin_smem_addr (p), b_[f][j][0], b_[f][j][1], b_[f][j + 1][0], \
                                       b_[f][j + 1][1]);                                       \
      }                                                                                        \
  } while (0)

  for (int s = 0; s < G_STAGES - 1; s++)
    {
      if (s < chunks)
        G_LOAD (s, kc0 + s);
      napkin_mma_commit ();
    }

  for (int c = 0; c < chunks; c++)
    {
      const int stage = c % G_STAGES;

      napkin_mma_wait<G_STAGES - 2> ();
      __syncthreads ();
      /* Refill the stage that was consumed one iteration ago. */
      if (c + G_STAGES - 1 < chunks)
        G_LOAD ((c + G_STAGES - 1) % G_STAGES, kc0 + c + G_STAGES - 1);
      napkin_mma_commit ();

      const unsigned short *as = As + stage * G_AROWS * G_AS;
      const unsigned short *bs = Bs + stage * G_BROWS * G_BS;

      unsigned a[2][G_WM / 16][4], b_[2][G_WN / 8][2];

      G_FRAGS (0, 0);
#pragma unroll
      for (int kk = 0; kk < G_BK; kk += 16)
        {
          const int f = (kk / 16) & 1;

          if (kk + 16 < G_BK)
            G_FRAGS (f ^ 1, kk + 16);
#pragma unroll
          for (int i = 0; i < G_WM / 16; i++)
#pragma unroll
            for (int j = 0; j < G_WN / 8; j++)
              napkin_mma_16816 (acc[i][j], a[f][i], b_[f][j][0], b_[f][j][1], (const NKP_AT *) 0);
        }
    }
  napkin_mma_wait<0> ();

  /* Epilogue: each thread holds rows lane/4 and lane/4 + 8 of every 16×8 tile, two
   * adjacent columns in each. */
#pragma unroll
  for (int i = 0; i < G_WM / 16; i++)
#pragma unroll
    for (int j = 0; j < G_WN / 8; j++)
      {
        const long r = m0 + wm + i * 16 + (lane >> 2);
        const long c = n0 + wn + j * 8 + (lane & 3) * 2;

        NKP_CAT (NKP_NAME, _put2) (args, split, b, r, c, acc[i][j][0], acc[i][j][1]);
        NKP_CAT (NKP_NAME, _put2) (args, split, b, r + 8, c, acc[i][j][2], acc[i][j][3]);
      }
#undef G_LOAD
#undef G_FRAGS
}
#undef G_BM
#undef G_BN
#undef G_BK
#undef G_WM
#undef G_WN
#undef G_STAGES
#undef G_M
#undef G_N
#undef G_K
#undef G_BATCH
#undef G_SPLIT
#undef G_A_KMAJOR
#undef G_B_KMAJOR
#undef G_AVEC
#undef G_BVEC
#undef G_LDA
#undef G_LDB
#undef G_ABS
#undef G_BBS
#undef G_EPI
#undef G_CVEC
#undef G_LDC
#undef G_CBS
#undef G_THREADS
#undef G_AROWS
#undef G_ACOLS
#undef G_BROWS
#undef G_BCOLS
#undef G_AS
#undef G_BS
#undef G_GROUP
#undef G_TILES_M
#undef G_TILES_N
#undef G_CHUNKS
#undef G_SPLIT_CHUNKS
