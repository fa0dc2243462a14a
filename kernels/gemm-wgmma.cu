/* Skeleton: Hopper (sm_90a) GEMM, C[M,N] = A[M,K]·B[K,N], row-major, fp16/bf16 in, fp32
 * accumulate, on wgmma with tensor-memory-accelerator (TMA) loads. One thread block per
 * BM×BN tile of C (the region's parallel groups); K streamed in chunks of 64 through
 * STAGES shared-memory buffers. The block is warp-specialised: warpgroup 0 is the
 * producer (one thread issues the bulk tensor copies, 128-byte swizzled, each stage
 * completing on its "full" mbarrier with an expected byte count; its registers are
 * given back with setmaxnreg), warpgroups 1 and 2 (1 alone when BM = 64) are consumers,
 * each multiplying its BM/2 rows by the whole BN with wgmma.mma_async m64nBNk16 straight from shared memory
 * (A K-major, B N-major through the transpose bit), keeping one group of wgmmas in
 * flight and releasing a stage through its "empty" mbarrier once the wgmmas that read
 * it are done. The grid is persistent (at most one block per SM, each taking every
 * gridDim.x-th tile), tiles walked in groups of G_GROUP tile rows so that the blocks
 * working at one time share their A and B panels through L2.
 * The two tensor maps (A: box 64×BM, B: box 64×64, both 128-byte swizzle) are built on
 * the host by the runner (cuTensorMapEncodeTiled) from the kernel's tensor-map list and
 * passed by value after the NapkinArgs.
 * Napkin fills the @PARAMETERS@; the rest is fixed.
 * Requires M % BM == N % BN == K % 64 == 0, BM ∈ {64, 128, 256}, BN ∈ {64, 128, 192, 256},
 * at most 128 accumulators per thread (checked by the code generator, which streams a
 * region's chunk of K larger than 64 as several chunks of 64). */
#define G_BM @BM@
#define G_BN @BN@
#define G_BK 64
#define G_STAGES @STAGES@
#define G_CWG (G_BM == 64 ? 1 : 2)          /* consumer warpgroups */
#define G_THREADS (128 * (1 + G_CWG))
#define G_WGM (G_BM / G_CWG)                /* rows of C per consumer warpgroup */
#define G_MI (G_WGM / 64)                   /* m64 wgmmas per consumer and k-step */
#define G_A_BYTES (G_BM * G_BK * 2)
#define G_B_BYTES (G_BK * G_BN * 2)
#define G_STAGE_BYTES (G_A_BYTES + G_B_BYTES)
#define G_GROUP 8                           /* tile rows per rasterisation group */
#define G_CONSUMER_WARPS (4 * G_CWG)
/* Epilogue: each consumer warpgroup stores 64-row × G_CBOX-column pieces of C through two
 * swizzled shared-memory buffers and TMA stores (one 128-byte row per tile row). */
#define G_CBOX ((int) (128 / sizeof (@CT@)))
#define G_CBUF 8192                         /* 64 rows × 128 bytes */
#define G_SMEM_C (G_STAGES * G_STAGE_BYTES)  /* the consumers' store buffers: 2 each */
/* B, N-major with 128-byte swizzle: 64 columns × 8 k-rows per 1024-byte atom; the next
 * 64 columns 64 k-rows (8 KB) further on, the next 8 k-rows 1024 bytes on. */
#ifndef G_B_LBO
#define G_B_LBO (G_BK * 128)
#define G_B_SBO 1024
#endif

/* wgmma shared-memory matrix descriptor, 128-byte swizzle. */
static __device__ __forceinline__ unsigned long long
@NAME@_desc (unsigned addr, unsigned lbo, unsigned sbo)
{
  return (unsigned long long) ((addr & 0x3FFFF) >> 4) | ((unsigned long long) ((lbo & 0x3FFFF) >> 4) << 16)
         | ((unsigned long long) ((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

static __device__ __forceinline__ void
@NAME@_wait (unsigned bar, unsigned parity)
{
  unsigned done = 0;

  while (!done)
    asm volatile ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                  : "=r" (done) : "r" (bar), "r" (parity) : "memory");
}

static __device__ __forceinline__ void
@NAME@_tma (unsigned dst, const NapkinTensorMap *map, int c0, int c1, unsigned bar)
{
  asm volatile ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (bar) : "memory");
}

/* Two adjacent values of C into shared memory at `addr`, converted to C's type. */
static __device__ __forceinline__ void
@NAME@_sts2 (unsigned addr, float a, float b, const float *)
{
  asm volatile ("st.shared.v2.f32 [%0], {%1, %2};" :: "r" (addr), "f" (a), "f" (b) : "memory");
}

static __device__ __forceinline__ void
@NAME@_sts2 (unsigned addr, float a, float b, const napkin_bf16 *)
{
  unsigned v;
  asm ("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r" (v) : "f" (a), "f" (b));
  asm volatile ("st.shared.b32 [%0], %1;" :: "r" (addr), "r" (v) : "memory");
}

static __device__ __forceinline__ void
@NAME@_sts2 (unsigned addr, float a, float b, const napkin_f16 *)
{
  unsigned v;
  asm ("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r" (v) : "f" (a), "f" (b));
  asm volatile ("st.shared.b32 [%0], %1;" :: "r" (addr), "r" (v) : "memory");
}

/* Keeps the compiler from moving accumulator registers across a wgmma in flight. */
#define G_FENCE_ACC()                                                                          \
  do {                                                                                         \
    _Pragma ("unroll") for (int i_ = 0; i_ < G_MI; i_++)                                      \
      _Pragma ("unroll") for (int r_ = 0; r_ < G_BN / 2; r_++)                                \
        asm volatile ("" : "+f" (acc[i_][r_]) :: "memory");                                    \
  } while (0)

/* wgmma m64nBNk16, fp32 accumulators, A K-major, B N-major (transposed): @NAME@_wgmma,
 * printed by codegen for BN (one asm operand per accumulator register). */
@WGMMA@

/* Tile t's corner: grouped order, G_GROUP tile rows × every tile column, column-major
 * inside a group, so that the blocks working at one time share A and B panels in L2. */
static __device__ __forceinline__ void
@NAME@_tile (long t, int *m0, int *n0)
{
  const long tiles_n = @N@L / G_BN, tiles_m = @M@L / G_BM;
  const long group = t / (G_GROUP * tiles_n), first_m = group * G_GROUP;
  const long rows_in = tiles_m - first_m < G_GROUP ? tiles_m - first_m : G_GROUP;
  const long in_group = t % (G_GROUP * tiles_n);

  *m0 = (int) ((first_m + in_group % rows_in) * G_BM);
  *n0 = (int) ((in_group / rows_in) * G_BN);
}

/* Persistent: block b takes tiles b, b + gridDim.x, …; the ring of stages runs on across
 * tiles, so the producer loads the next tile while the consumers store this one. */
extern "C" __global__ void __launch_bounds__ (G_THREADS, 1)
@NAME@ (const NapkinArgs args,
        const __grid_constant__ NapkinTensorMap tma_a,
        const __grid_constant__ NapkinTensorMap tma_b,
        const __grid_constant__ NapkinTensorMap tma_c)
{
  extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
  unsigned char *const smem_ = smem_raw_u8_;
  const unsigned base = (napkin_smem_addr (smem_) + 1023) & ~1023u;
  const unsigned full = base + G_SMEM_C + 2 * G_CWG * G_CBUF;   /* G_STAGES mbarriers, then the empty ones */
  const unsigned empty = full + G_STAGES * 8;
  const int tid = threadIdx.x, wg = tid / 128;
  const long tiles = (@M@L / G_BM) * (@N@L / G_BN);
  const int chunks = @K@ / G_BK;

  (void) args;   /* A, B and C go through their tensor maps */
  if (tid == 0)
    {
      for (int s = 0; s < G_STAGES; s++)
        {
          asm volatile ("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r" (full + 8 * s));
          asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (empty + 8 * s), "n" (G_CONSUMER_WARPS));
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
          for (long t = blockIdx.x; t < tiles; t += gridDim.x)
            {
              int m0, n0;

              @NAME@_tile (t, &m0, &n0);
              for (int kc = 0; kc < chunks; kc++, it++)
                {
                  const unsigned s = it % G_STAGES;
                  const unsigned dst = base + s * G_STAGE_BYTES;

                  @NAME@_wait (empty + 8 * s, ((it / G_STAGES) & 1) ^ 1);
                  asm volatile ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                                :: "r" (full + 8 * s), "n" (G_STAGE_BYTES) : "memory");
                  @NAME@_tma (dst, &tma_a, kc * G_BK, m0, full + 8 * s);
#pragma unroll
                  for (int j = 0; j < G_BN / 64; j++)
                    @NAME@_tma (dst + G_A_BYTES + j * (G_BK * 128), &tma_b, n0 + j * 64, kc * G_BK, full + 8 * s);
                }
            }
        }
    }
  else
    {
      /* Consumers: warpgroup cw takes rows cw·BM/2 … of each tile. */
      const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32;
      const bool leader = tid % 128 == 0;   /* issues the warpgroup's TMA stores */
      const unsigned cbuf = base + G_SMEM_C + cw * 2 * G_CBUF;
      unsigned it = 0;   /* chunks consumed so far, over all tiles */
      unsigned piece = 0;   /* C pieces stored so far: which of the two buffers */
      float acc[G_MI][G_BN / 2];

#if G_CWG == 2
      asm volatile ("setmaxnreg.inc.sync.aligned.u32 232;");   /* 128 × 40 + 256 × 232 ≤ 64 K */
#endif
      for (long t = blockIdx.x; t < tiles; t += gridDim.x)
        {
          int m0, n0;

          @NAME@_tile (t, &m0, &n0);
#pragma unroll
          for (int i = 0; i < G_MI; i++)
#pragma unroll
            for (int r = 0; r < G_BN / 2; r++)
              acc[i][r] = 0.0f;

          for (int kc = 0; kc < chunks; kc++, it++)
            {
              const unsigned s = it % G_STAGES;
              const unsigned a_base = base + s * G_STAGE_BYTES + cw * G_WGM * 128;
              const unsigned b_base = base + s * G_STAGE_BYTES + G_A_BYTES;

              @NAME@_wait (full + 8 * s, (it / G_STAGES) & 1);
              G_FENCE_ACC ();
              asm volatile ("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
              for (int kk = 0; kk < G_BK / 16; kk++)
#pragma unroll
                for (int i = 0; i < G_MI; i++)
                  @NAME@_wgmma (acc[i], @NAME@_desc (a_base + i * 64 * 128 + kk * 32, 16, 1024),
                                @NAME@_desc (b_base + kk * 16 * 128, G_B_LBO, G_B_SBO), 1);
              asm volatile ("wgmma.commit_group.sync.aligned;" ::: "memory");
              /* The previous chunk's wgmmas are done once at most this one is pending. */
              asm volatile ("wgmma.wait_group.sync.aligned 1;" ::: "memory");
              G_FENCE_ACC ();
              if (kc > 0 && lane == 0)
                asm volatile ("mbarrier.arrive.shared::cta.b64 _, [%0];"
                              :: "r" (empty + 8 * ((it - 1) % G_STAGES)) : "memory");
            }
          asm volatile ("wgmma.wait_group.sync.aligned 0;" ::: "memory");
          G_FENCE_ACC ();
          /* The tile's last chunk is free too: the producer may refill it now. */
          if (lane == 0)
            asm volatile ("mbarrier.arrive.shared::cta.b64 _, [%0];"
                          :: "r" (empty + 8 * ((it - 1) % G_STAGES)) : "memory");

          /* Epilogue: the accumulators hold mma.sync's m16n8 layout repeated over N (rows
           * lane/4 and lane/4 + 8 of the warp's 16, two adjacent columns per 8). Each
           * 64 × G_CBOX piece goes to a free buffer, 128-byte swizzled as the tensor map
           * reads it (16-byte chunk q of row r at q ^ (r % 8): no bank conflicts), then out
           * by one TMA store while the warpgroup moves on. */
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
                asm volatile ("bar.sync %0, 128;" :: "r" (1 + cw) : "memory");
#pragma unroll
                for (int jj = 0; jj < G_CBOX / 8; jj++)
                  {
                    const int n8 = j * (G_CBOX / 8) + jj;
                    const unsigned byte = (jj * 8 + (lane % 4) * 2) * (unsigned) sizeof (@CT@);
                    const unsigned lo = buf + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
                    const unsigned hi = buf + (r + 8) * 128 + (((byte / 16) ^ ((r + 8) % 8)) * 16) + byte % 16;

                    @NAME@_sts2 (lo, acc[i][n8 * 4 + 0], acc[i][n8 * 4 + 1], (const @CT@ *) 0);
                    @NAME@_sts2 (hi, acc[i][n8 * 4 + 2], acc[i][n8 * 4 + 3], (const @CT@ *) 0);
                  }
                /* ordinary stores read next by the copy engine */
                asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
                asm volatile ("bar.sync %0, 128;" :: "r" (1 + cw) : "memory");
                if (leader)
                  {
                    asm volatile ("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                                  :: "l" (&tma_c), "r" (n0 + j * G_CBOX), "r" (m0 + cw * G_WGM + i * 64), "r" (buf)
                                  : "memory");
                    asm volatile ("cp.async.bulk.commit_group;" ::: "memory");
                  }
              }
        }
      /* The last stores must have finished before the block's shared memory goes. */
      if (leader)
        asm volatile ("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
#undef G_BM
#undef G_BN
#undef G_BK
#undef G_STAGES
#undef G_CWG
#undef G_THREADS
#undef G_WGM
#undef G_MI
#undef G_A_BYTES
#undef G_B_BYTES
#undef G_STAGE_BYTES
#undef G_GROUP
#undef G_CONSUMER_WARPS
#undef G_B_LBO
#undef G_B_SBO
#undef G_FENCE_ACC
#undef G_CBOX
#undef G_CBUF
#undef G_SMEM_C
