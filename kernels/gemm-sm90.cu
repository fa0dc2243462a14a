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
 * Epilogue (G_EPI): 0 — C through 128-byte swizzled buffers and TMA stores (clipped at
 * the edges); 1 — fp32 pieces of 64 × 32 through shared memory, then coalesced global
 * stores bounded by M and N (4-element vectors where C's rows allow), each value passed
 * through the fused maps (@NAME@_epi) on the way; 2 — like 1, fp32 partials of this
 * split into [split][batch][M][N], no maps (the split-reduce kernel applies them).
 * The printer (src/codegen/napkin-print-gemm.c) fills the @PARAMETERS@ and checks the
 * limits: BM = 64·G_CWG·(1 or 2), BN % 8 == 0 (N-major B: % 64), ≤ 128 accumulators per
 * consumer thread, the stages within 227 KB. */
#define G_BM @BM@
#define G_BN @BN@
#define G_CWG @CWG@                          /* consumer warpgroups */
#define G_STAGES @STAGES@
#define G_KB @KB@                            /* elements of K per chunk: 128 bytes */
#define G_KSTEP @KSTEP@                      /* elements of K per wgmma */
#define G_M @M@L
#define G_N @N@L
#define G_K @K@L
#define G_BATCH @BATCH@L
#define G_SPLIT @SPLIT@L
#define G_A_KMAJOR @A_KMAJOR@
#define G_B_KMAJOR @B_KMAJOR@
#define G_A_RANK3 @A_RANK3@                  /* the A map has a batch coordinate */
#define G_B_RANK3 @B_RANK3@
#define G_C_RANK3 @C_RANK3@
#define G_EPI @EPI@
#define G_CVEC @CVEC@                        /* rows of C allow 4-element vector stores */
#define G_LDC @LDC@L
#define G_CBS @CBS@L
#define G_THREADS (128 * (1 + G_CWG))
#define G_WGM (G_BM / G_CWG)                 /* rows of C per consumer warpgroup */
#define G_MI (G_WGM / 64)                    /* m64 wgmmas per consumer and k-step */
#define G_A_BYTES (G_BM * 128)
#define G_B_BYTES (G_BN * 128)
#define G_STAGE_BYTES (G_A_BYTES + G_B_BYTES)
#define G_BOX_BYTES (G_KB * 128)             /* an MN-major box: 64 columns × KB rows */
#define G_GROUP 8
#define G_CONSUMER_WARPS (4 * G_CWG)
#define G_TILES_M ((G_M + G_BM - 1) / G_BM)
#define G_TILES_N ((G_N + G_BN - 1) / G_BN)
#define G_TILES (G_TILES_M * G_TILES_N * G_BATCH * G_SPLIT)
#define G_CHUNKS ((G_K + G_KB - 1) / G_KB)
#define G_SPLIT_CHUNKS ((G_CHUNKS + G_SPLIT - 1) / G_SPLIT)
#define G_CBOX ((int) (128 / sizeof (@CT@))) /* TMA store: columns per 128-byte row */
#define G_CBUF 8192                          /* one store buffer: 64 rows × 128 bytes */
#define G_SMEM_C (G_STAGES * G_STAGE_BYTES)

/* The fused maps, applied to each fp32 result x at (b, m, n). */
@EPIFN@

/* One wgmma of the operand types for BN (one asm operand per accumulator register). */
@WGMMA@

#define G_FENCE_ACC()                                                                          \
  do {                                                                                         \
    _Pragma ("unroll") for (int i_ = 0; i_ < G_MI; i_++)                                      \
      _Pragma ("unroll") for (int r_ = 0; r_ < G_BN / 2; r_++)                                \
        asm volatile ("" : "+f" (acc[i_][r_]) :: "memory");                                    \
  } while (0)

/* Tile t: split, batch, then the corner of C in grouped order (G_GROUP tile rows ×
 * every tile column, column-major inside a group). */
static __device__ __forceinline__ void
@NAME@_tile (long t, int *split, int *b, int *m0, int *n0)
{
  const long per = G_TILES_M * G_TILES_N, r = t % per, sb = t / per;
  const long group = r / (G_GROUP * G_TILES_N), first_m = group * G_GROUP;
  const long rows_in = G_TILES_M - first_m < G_GROUP ? G_TILES_M - first_m : G_GROUP;
  const long in_group = r % (G_GROUP * G_TILES_N);

  *b = (int) (sb % G_BATCH);
  *split = (int) (sb / G_BATCH);
  *m0 = (int) ((first_m + in_group % rows_in) * G_BM);
  *n0 = (int) ((in_group / rows_in) * G_BN);
}

#if G_EPI != 0
/* Four fp32 values of row m, columns n … n + 3 of the tile's output (only those < N). */
static __device__ __forceinline__ void
@NAME@_put4 (const NapkinArgs &args, int split, int b, long m, long n, const float *v)
{
#if G_EPI == 1
  @CT@ *c = @CREF@ + b * G_CBS + m * G_LDC + n;
  float x[4];

#pragma unroll
  for (int e = 0; e < 4; e++)
    x[e] = n + e < G_N ? @NAME@_epi (args, b, m, n + e, v[e]) : 0.0f;
  if (G_CVEC && n + 3 < G_N)
    napkin_st4 (c, x[0], x[1], x[2], x[3]);
  else
    for (int e = 0; e < 4 && n + e < G_N; e++)
      napkin_st (c + e, x[e]);
#else
  float *p = @PREF@ + ((split * G_BATCH + b) * G_M + m) * G_N + n;

  if (G_N % 4 == 0)
    napkin_st4 (p, v[0], v[1], v[2], v[3]);
  else
    for (int e = 0; e < 4 && n + e < G_N; e++)
      p[e] = v[e];
#endif
}
#endif

extern "C" __global__ void __launch_bounds__ (G_THREADS, 1)
@NAME@ (const NapkinArgs args,
        const __grid_constant__ NapkinTensorMap tma_a,
        const __grid_constant__ NapkinTensorMap tma_b@CPARAM@)
{
  extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
  unsigned char *const smem_ = smem_raw_u8_;
  const unsigned base = (napkin_smem_addr (smem_) + 1023) & ~1023u;
  const unsigned full = base + G_SMEM_C + 2 * G_CWG * G_CBUF;   /* G_STAGES mbarriers, then the empty ones */
  const unsigned empty = full + G_STAGES * 8;
  const int tid = threadIdx.x, wg = tid / 128;

  (void) args;
  if (tid == 0)
    {
      for (int s = 0; s < G_STAGES; s++)
        {
          napkin_sm90_bar_init (full + 8 * s, 1);
          napkin_sm90_bar_init (empty + 8 * s, G_CONSUMER_WARPS);
        }
      asm volatile ("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
  __syncthreads ();

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
          for (long t = blockIdx.x; t < G_TILES; t += gridDim.x)
            {
              int split, b, m0, n0;

              @NAME@_tile (t, &split, &b, &m0, &n0);
              const int kc1 = (int) (G_CHUNKS < (split + 1) * G_SPLIT_CHUNKS ? G_CHUNKS : (split + 1) * G_SPLIT_CHUNKS);

              for (int kc = split * (int) G_SPLIT_CHUNKS; kc < kc1; kc++, it++)
                {
                  const unsigned s = it % G_STAGES, bar = full + 8 * s;
                  const unsigned dst = base + s * G_STAGE_BYTES;
                  const int k0 = kc * G_KB;

                  napkin_sm90_bar_wait (empty + 8 * s, ((it / G_STAGES) & 1) ^ 1);
                  napkin_sm90_bar_expect (bar, G_STAGE_BYTES);
#if G_A_KMAJOR
                  napkin_sm90_tma_load (dst, &tma_a, k0, m0, @A_BATCH_ARG@bar);
#else
#pragma unroll
                  for (int j = 0; j < G_BM / 64; j++)
                    napkin_sm90_tma_load (dst + j * G_BOX_BYTES, &tma_a, m0 + j * 64, k0, @A_BATCH_ARG@bar);
#endif
#if G_B_KMAJOR
                  napkin_sm90_tma_load (dst + G_A_BYTES, &tma_b, k0, n0, @B_BATCH_ARG@bar);
#else
#pragma unroll
                  for (int j = 0; j < G_BN / 64; j++)
                    napkin_sm90_tma_load (dst + G_A_BYTES + j * G_BOX_BYTES, &tma_b, n0 + j * 64, k0, @B_BATCH_ARG@bar);
#endif
                }
            }
        }
    }
  else
    {
      /* Consumers: warpgroup cw takes rows cw·BM/G_CWG … of each tile. */
      const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32;
      const unsigned cbuf = base + G_SMEM_C + cw * 2 * G_CBUF;
      unsigned it = 0;      /* chunks consumed so far, over all tiles */
      unsigned piece = 0;   /* output pieces staged so far: which of the two buffers */
      float acc[G_MI][G_BN / 2];

#if G_CWG == 2
      asm volatile ("setmaxnreg.inc.sync.aligned.u32 232;");   /* 128 × 40 + 256 × 232 ≤ 64 K */
#endif
      for (long t = blockIdx.x; t < G_TILES; t += gridDim.x)
        {
          int split, b, m0, n0;

          @NAME@_tile (t, &split, &b, &m0, &n0);
          const int kc0 = split * (int) G_SPLIT_CHUNKS;
          const int kc1 = (int) (G_CHUNKS < (split + 1) * G_SPLIT_CHUNKS ? G_CHUNKS : (split + 1) * G_SPLIT_CHUNKS);

#pragma unroll
          for (int i = 0; i < G_MI; i++)
#pragma unroll
            for (int r = 0; r < G_BN / 2; r++)
              acc[i][r] = 0.0f;

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
                    const int row = cw * G_WGM + i * 64;   /* of the tile: a multiple of 64 */
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
                    @NAME@_wgmma (acc[i], da, db, 1);
                  }
              asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");
              /* The previous chunk's wgmmas are done once at most this one is pending. */
              asm volatile ("wgmma.wait_group.sync.aligned 1;" ::: "memory");
              G_FENCE_ACC ();
              if (kc > kc0 && lane == 0)
                napkin_sm90_bar_arrive (empty + 8 * ((it - 1) % G_STAGES));
            }
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          G_FENCE_ACC ();
          /* The tile's last chunk is free too (a split with no chunks consumed none). */
          if (kc1 > kc0 && lane == 0)
            napkin_sm90_bar_arrive (empty + 8 * ((it - 1) % G_STAGES));

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
                      const unsigned byte = (jj * 8 + (lane % 4) * 2) * (unsigned) sizeof (@CT@);

                      napkin_sm90_sts2 (napkin_sm90_swz (buf, r, byte), acc[i][n8 * 4 + 0], acc[i][n8 * 4 + 1],
                                        (const @CT@ *) 0);
                      napkin_sm90_sts2 (napkin_sm90_swz (buf, r + 8, byte), acc[i][n8 * 4 + 2], acc[i][n8 * 4 + 3],
                                        (const @CT@ *) 0);
                    }
                  /* ordinary stores read next by the copy engine */
                  asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
                  napkin_sm90_wg_sync (1 + cw);
                  if (leader)
                    {
#if G_C_RANK3
                      napkin_sm90_tma_store (&tma_c, n0 + j * G_CBOX, m0 + cw * G_WGM + i * 64, b, buf);
#else
                      napkin_sm90_tma_store (&tma_c, n0 + j * G_CBOX, m0 + cw * G_WGM + i * 64, buf);
#endif
                      asm volatile ("cp.async.bulk.commit_group;" ::: "memory");
                    }
                }
          }
#else
          /* Pieces of 64 rows × 32 fp32 columns: written swizzled (no bank conflicts),
           * read back as one 16-byte chunk per thread, 8 threads per row, so that each
           * warp stores 4 rows of 32 contiguous elements. Two buffers: a piece's
           * writes wait only for the barrier that ended the reads of two pieces ago. */
#pragma unroll
          for (int i = 0; i < G_MI; i++)
#pragma unroll
            for (int j = 0; j < (G_BN + 31) / 32; j++, piece++)
              {
                const unsigned buf = cbuf + (piece % 2) * G_CBUF;
                const int r = warp * 16 + lane / 4, lt = tid % 128, q = lt % 8;

#pragma unroll
                for (int jj = 0; jj < 4; jj++)
                  {
                    const int n8 = j * 4 + jj;
                    const unsigned byte = jj * 32 + (lane % 4) * 8;

                    if (n8 < G_BN / 8)
                      {
                        napkin_sm90_sts2 (napkin_sm90_swz (buf, r, byte), acc[i][n8 * 4 + 0], acc[i][n8 * 4 + 1],
                                          (const float *) 0);
                        napkin_sm90_sts2 (napkin_sm90_swz (buf, r + 8, byte), acc[i][n8 * 4 + 2], acc[i][n8 * 4 + 3],
                                          (const float *) 0);
                      }
                  }
                napkin_sm90_wg_sync (1 + cw);
                if (j * 32 + q * 4 < G_BN)
                  {
                    const long n = n0 + j * 32 + q * 4;

#pragma unroll 1
                    for (int p = 0; p < 4; p++)
                      {
                        const int row = p * 16 + lt / 8;
                        const long m = m0 + cw * G_WGM + i * 64 + row;
                        float v[4];

                        if (m >= G_M || n >= G_N)
                          continue;
                        napkin_sm90_lds4 (napkin_sm90_swz (buf, row, q * 16), v);
                        @NAME@_put4 (args, split, b, m, n, v);
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
}
#undef G_BM
#undef G_BN
#undef G_CWG
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
#undef G_CVEC
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
