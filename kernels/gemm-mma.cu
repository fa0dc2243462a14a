/* Skeleton: tiled tensor-core GEMM, C[M,N] = A[M,K]·B[K,N], row-major, fp16/bf16 in,
 * fp32 accumulate. One thread block per BM×BN tile of C (the region's parallel
 * groups), K streamed in chunks of BK through STAGES shared-memory buffers filled by
 * cp.async, warps on WM×WN sub-tiles (the nested register region), mma.sync m16n8k16
 * on fragments loaded with ldmatrix, double-buffered in registers (the next k-step's
 * fragments load while this one's products issue). Blocks walk the tiles of C in
 * groups of G_GROUP tile rows so that a wave shares its A and B panels through L2.
 * Napkin fills the @PARAMETERS@; the rest is fixed.
 * Requires M % BM == N % BN == K % BK == 0 (checked by the code generator). */
#define G_BM @BM@
#define G_BN @BN@
#define G_BK @BK@
#define G_WM @WM@
#define G_WN @WN@
#define G_STAGES @STAGES@
#define G_THREADS ((G_BM / G_WM) * (G_BN / G_WN) * 32)
#define G_AS (G_BK + 8)   /* padded row strides (halfs): ldmatrix rows hit distinct banks */
#define G_BS (G_BN + 8)
#define G_GROUP 8         /* tile rows per rasterisation group */

extern "C" __global__ void __launch_bounds__ (G_THREADS, @MINBLOCKS@)
@NAME@ (const NapkinArgs args)
{
  const @AT@ *__restrict__ A = (const @AT@ *) args.p[@A@];
  const @AT@ *__restrict__ B = (const @AT@ *) args.p[@B@];
  @CT@ *__restrict__ C = (@CT@ *) args.p[@C@];
  /* one declaration for every kernel of a module: extern shared arrays must agree */
  extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];
  unsigned short *const smem_ = (unsigned short *) smem_raw_u8_;
  unsigned short *As = smem_;                                   /* [STAGES][BM][AS] */
  unsigned short *Bs = smem_ + G_STAGES * G_BM * G_AS;          /* [STAGES][BK][BS] */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / (G_BN / G_WN)) * G_WM, wn = (warp % (G_BN / G_WN)) * G_WN;
  const long tiles_n = @N@L / G_BN, tiles_m = @M@L / G_BM;
  /* grouped order: G_GROUP tile rows × every tile column, column-major inside a group */
  const long group = blockIdx.x / (G_GROUP * tiles_n), first_m = group * G_GROUP;
  const long rows_in = tiles_m - first_m < G_GROUP ? tiles_m - first_m : G_GROUP;
  const long in_group = blockIdx.x % (G_GROUP * tiles_n);
  const long m0 = (first_m + in_group % rows_in) * G_BM, n0 = (in_group / rows_in) * G_BN;
  float acc[G_WM / 16][G_WN / 8][4];

  for (int i = 0; i < G_WM / 16; i++)
    for (int j = 0; j < G_WN / 8; j++)
      for (int c = 0; c < 4; c++)
        acc[i][j][c] = 0.0f;

  /* One chunk of K into stage s: 16-byte asynchronous copies, all threads. */
#define G_LOAD(s, kc)                                                                          \
  do {                                                                                         \
    const long k0_ = (long) (kc) * G_BK;                                                       \
    for (int c = tid; c < G_BM * G_BK / 8; c += G_THREADS)                                     \
      {                                                                                        \
        const int r = c / (G_BK / 8), q = (c % (G_BK / 8)) * 8;                                \
        asm volatile ("cp.async.cg.shared.global [%0], [%1], 16;" ::                           \
                      "r" (napkin_smem_addr (As + ((s) * G_BM + r) * G_AS + q)),                   \
                      "l" (A + (m0 + r) * @K@L + k0_ + q));                                    \
      }                                                                                        \
    for (int c = tid; c < G_BK * G_BN / 8; c += G_THREADS)                                     \
      {                                                                                        \
        const int r = c / (G_BN / 8), q = (c % (G_BN / 8)) * 8;                                \
        asm volatile ("cp.async.cg.shared.global [%0], [%1], 16;" ::                           \
                      "r" (napkin_smem_addr (Bs + ((s) * G_BK + r) * G_BS + q)),                   \
                      "l" (B + (k0_ + r) * @N@L + n0 + q));                                    \
      }                                                                                        \
  } while (0)

  const int chunks = @K@ / G_BK;

  /* Fragments of k-step kk of the current stage into register buffer f (ldmatrix.x4;
   * B row-major, so transposed on load). */
#define G_FRAGS(f, kk)                                                                         \
  do {                                                                                         \
    _Pragma ("unroll") for (int i = 0; i < G_WM / 16; i++)                                    \
      {                                                                                        \
        const unsigned short *p = as + (wm + i * 16 + (lane & 15)) * G_AS + (kk) + (lane >> 4) * 8; \
        asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"            \
                      : "=r" (a[f][i][0]), "=r" (a[f][i][1]), "=r" (a[f][i][2]), "=r" (a[f][i][3]) \
                      : "r" (napkin_smem_addr (p)));                                                \
      }                                                                                        \
    _Pragma ("unroll") for (int j = 0; j < G_WN / 8; j += 2)                                  \
      {                                                                                        \
        const unsigned short *p = bs + ((kk) + (lane & 7) + ((lane >> 3) & 1) * 8) * G_BS    \
                                  + wn + j * 8 + (lane >> 4) * 8;                              \
        asm volatile ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"      \
                      : "=r" (b[f][j][0]), "=r" (b[f][j][1]), "=r" (b[f][j + 1][0]), "=r" (b[f][j + 1][1]) \
                      : "r" (napkin_smem_addr (p)));                                                \
      }                                                                                        \
  } while (0)

  for (int s = 0; s < G_STAGES - 1; s++)
    {
      if (s < chunks)
        G_LOAD (s, s);
      asm volatile ("cp.async.commit_group;");
    }

  for (int kc = 0; kc < chunks; kc++)
    {
      const int stage = kc % G_STAGES;

      asm volatile ("cp.async.wait_group %0;" :: "n" (G_STAGES - 2));
      __syncthreads ();
      /* Refill the stage that was consumed one iteration ago. */
      if (kc + G_STAGES - 1 < chunks)
        G_LOAD ((kc + G_STAGES - 1) % G_STAGES, kc + G_STAGES - 1);
      asm volatile ("cp.async.commit_group;");

      const unsigned short *as = As + stage * G_BM * G_AS;
      const unsigned short *bs = Bs + stage * G_BK * G_BS;

      unsigned a[2][G_WM / 16][4], b[2][G_WN / 8][2];

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
              asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32.@MMA@.@MMA@.f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f" (acc[i][j][0]), "+f" (acc[i][j][1]), "+f" (acc[i][j][2]), "+f" (acc[i][j][3])
                            : "r" (a[f][i][0]), "r" (a[f][i][1]), "r" (a[f][i][2]), "r" (a[f][i][3]),
                              "r" (b[f][j][0]), "r" (b[f][j][1]));
        }
    }
  asm volatile ("cp.async.wait_group 0;");

  /* Epilogue: each thread holds rows lane/4 and lane/4 + 8 of every 16×8 tile. */
#pragma unroll
  for (int i = 0; i < G_WM / 16; i++)
#pragma unroll
    for (int j = 0; j < G_WN / 8; j++)
      {
        const long r = m0 + wm + i * 16 + (lane >> 2);
        const long c = n0 + wn + j * 8 + (lane & 3) * 2;

        napkin_st (&C[r * @N@L + c], acc[i][j][0]);
        napkin_st (&C[r * @N@L + c + 1], acc[i][j][1]);
        napkin_st (&C[(r + 8) * @N@L + c], acc[i][j][2]);
        napkin_st (&C[(r + 8) * @N@L + c + 1], acc[i][j][3]);
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
#undef G_THREADS
#undef G_AS
#undef G_BS
#undef G_GROUP
