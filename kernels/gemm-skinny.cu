/* The skinny GEMM of the kernel plan on CUDA cores (docs/plan.md, "Skinny products on
 * CUDA cores"): P[s][b][m][n] = Σ_{k in slice s} A[b,m,k]·B[b,k,n] for a product with
 * few rows (M ≤ 16), fp16/bf16 in, fp32 partials out; the split-K reduction
 * (kernels/split-reduce.cu) sums the slices and runs the epilogue. Such a product's time
 * is B's stream: B is read once, where it lies, whatever its rows' alignment (no copy to
 * aligned rows, which a tensor-core path needs and which costs B's bytes twice more).
 * The block's slice of A (KS values of each of the M rows, in fp32) sits in shared
 * memory, read as broadcasts. Each thread's loads of B for the next step are issued
 * before the current step's products (two sets of registers), and the first before A
 * is loaded: a block's time is its stream, not a chain of round trips.
 * B N-major (B[k][n], n contiguous; G_B_KMAJOR 0): each thread owns VEC adjacent columns
 * (one VEC-element load a row of B, as wide as the rows' alignment allows) and all M
 * rows' sums over a quarter of the block's slice of K; a block owns 64·VEC columns,
 * its four quarters summed in shared memory.
 * B K-major (B[n][k], k contiguous: a Linear's weight): a warp owns 4 columns, its
 * lanes stride along k with VEC-element loads, and the sums are reduced across lanes.
 * Blocks: column blocks × batch × split, the column block fastest. 256 threads.
 * The printer (src/codegen/napkin-print-gemm.c) fills the NKP_ parameters and checks
 * M ≤ 16, the vector width against the rows' alignment and the shared memory. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME napkin_k0
#define NKP_M 8
#define NKP_N 13206
#define NKP_K 4594
#define NKP_BATCH 1
#define NKP_SPLIT 20
#define NKP_KS 232
#define NKP_A_KMAJOR 1
#define NKP_B_KMAJOR 0
#define NKP_VEC 2
#define NKP_LDA 4594
#define NKP_LDB 13206
#define NKP_ABS 0
#define NKP_BBS 0
#define NKP_AT napkin_bf16
#define NKP_AREF ((const napkin_bf16 *) args.p[0])
#define NKP_BREF ((const napkin_bf16 *) args.p[1])
#define NKP_PREF ((float *) args.p[3])
#endif /* NAPKIN_GENERATED */
#define G_M NKP_M
#define G_N NKP_L (NKP_N)
#define G_K NKP_L (NKP_K)
#define G_BATCH NKP_L (NKP_BATCH)
#define G_SPLIT NKP_L (NKP_SPLIT)
#define G_KS NKP_KS
#define G_MP ((G_M + 3) / 4 * 4)
#define G_VEC NKP_VEC
#define G_LDA NKP_L (NKP_LDA)
#define G_LDB NKP_L (NKP_LDB)
#define G_ABS NKP_L (NKP_ABS)
#define G_BBS NKP_L (NKP_BBS)
/* rows of B in flight a thread (N-major); K-major: columns a warp owns (each value of
 * A read from shared memory serves them all) and vector loads of each in flight a lane */
#define G_UNROLL 8
#define G_KG 4
#define G_NW 4
#define G_UNROLL_K 2

#ifndef NAPKIN_SKINNY_PRIMS
#define NAPKIN_SKINNY_PRIMS
/* N elements of T as loaded: one load of N·sizeof (T) bytes where the whole vector lies
 * inside the row (the caller checked its alignment), else element by element, those
 * at or past `left` zero. Converted to floats only where used, so that the registers a
 * load in flight holds are its bytes. */
template <int N, typename T>
struct napkin_skinny_raw
{
  static constexpr int B = N * (int) sizeof (T);
  static_assert (B == 2 || B == 4 || B == 8 || B == 16, "a load of B is 2, 4, 8 or 16 bytes");
  union { uint4 q; uint2 d; unsigned w; T t[N]; } u;

  __device__ __forceinline__ void
  load (const T *p, bool whole, long left)
  {
    if (whole)
      {
        if constexpr (B == 16)
          u.q = __ldg ((const uint4 *) p);
        else if constexpr (B == 8)
          u.d = __ldg ((const uint2 *) p);
        else if constexpr (B == 4)
          u.w = __ldg ((const unsigned *) p);
        else
          u.t[0] = p[0];
      }
    else
      {
        u.q = make_uint4 (0u, 0u, 0u, 0u);
#pragma unroll
        for (int i = 0; i < N; i++)
          if (i < left)
            u.t[i] = p[i];
      }
  }

  __device__ __forceinline__ float
  get (int i) const
  {
    return napkin_ld (&u.t[i]);
  }
};
#endif /* NAPKIN_SKINNY_PRIMS */

extern "C" __global__ void __launch_bounds__ (256)
NKP_NAME (const NapkinArgs args)
{
  const int tid = threadIdx.x;
#if NKP_B_KMAJOR
  const long nblocks = (G_N + 8 * G_NW - 1) / (8 * G_NW);
#else
  const long nblocks = (G_N + 64 * G_VEC - 1) / (64 * G_VEC);
#endif
  const long nb = blockIdx.x % nblocks, r = blockIdx.x / nblocks;
  const long b = r % G_BATCH, s = r / G_BATCH;
  const long k0 = s * G_KS;
  const int ks = (int) (G_K - k0 < G_KS ? G_K - k0 : G_KS);
  const NKP_AT *A = NKP_AREF + b * G_ABS;
  const NKP_AT *B = NKP_BREF + b * G_BBS;
  float *P = NKP_PREF + (s * G_BATCH + b) * G_M * G_N;

#if NKP_B_KMAJOR
  /* A's slice as sa[m][kk]: the lanes of a warp read neighbouring kk */
  __shared__ float sa[G_M * G_KS];
  const int warp = tid / 32, lane = tid % 32;
  const long n0 = (nb * 8 + warp) * G_NW;
  napkin_skinny_raw<G_VEC, NKP_AT> cur[G_UNROLL_K][G_NW], nxt[G_UNROLL_K][G_NW];
  float acc[G_NW][G_M];
  /* B's loads of one step (G_UNROLL_K vectors of each column a lane), started before
   * they are needed: the first before A is in shared memory, each next one before the
   * current one's products */
  auto issue = [&] (int kk0, napkin_skinny_raw<G_VEC, NKP_AT> (&dst)[G_UNROLL_K][G_NW]) {
#pragma unroll
    for (int u = 0; u < G_UNROLL_K; u++)
#pragma unroll
      for (int c = 0; c < G_NW; c++)
        {
          const int kk = kk0 + u * 32 * G_VEC;

          dst[u][c].load (B + (n0 + c) * G_LDB + k0 + kk, kk + G_VEC <= ks && n0 + c < G_N,
                          kk < ks && n0 + c < G_N ? ks - kk : 0);
        }
  };

  issue (lane * G_VEC, nxt);
  for (int i = tid; i < G_M * G_KS; i += 256)
    {
      const int m = i / G_KS, kk = i % G_KS;

      sa[i] = kk < ks ? napkin_ld (A + (NKP_A_KMAJOR ? m * G_LDA + k0 + kk : (k0 + kk) * G_LDA + m)) : 0.0f;
    }
#pragma unroll
  for (int c = 0; c < G_NW; c++)
#pragma unroll
    for (int m = 0; m < G_M; m++)
      acc[c][m] = 0.0f;
  __syncthreads ();
  for (int kk0 = lane * G_VEC; kk0 < ks; kk0 += 32 * G_VEC * G_UNROLL_K)
    {
#pragma unroll
      for (int u = 0; u < G_UNROLL_K; u++)
#pragma unroll
        for (int c = 0; c < G_NW; c++)
          cur[u][c] = nxt[u][c];
      if (kk0 + 32 * G_VEC * G_UNROLL_K < ks)
        issue (kk0 + 32 * G_VEC * G_UNROLL_K, nxt);
#pragma unroll
      for (int u = 0; u < G_UNROLL_K; u++)
        {
          const int kk = kk0 + u * 32 * G_VEC;

          if (kk < ks)
#pragma unroll
            for (int e = 0; e < G_VEC; e++)
              {
                float v[G_NW];

#pragma unroll
                for (int c = 0; c < G_NW; c++)
                  v[c] = cur[u][c].get (e);
#pragma unroll
                for (int m = 0; m < G_M; m++)
                  {
                    /* sa is zero past the slice: the tail's lanes add nothing */
                    const float a = sa[m * G_KS + kk + e];

#pragma unroll
                    for (int c = 0; c < G_NW; c++)
                      acc[c][m] += a * v[c];
                  }
              }
        }
    }
#pragma unroll
  for (int c = 0; c < G_NW; c++)
#pragma unroll
    for (int m = 0; m < G_M; m++)
#pragma unroll
      for (int o = 16; o > 0; o /= 2)
        acc[c][m] += __shfl_xor_sync (0xffffffffu, acc[c][m], o);
#pragma unroll
  for (int c = 0; c < G_NW; c++)
#pragma unroll
    for (int m = 0; m < G_M; m++)
      if (lane == (c * G_M + m) % 32 && n0 + c < G_N)
        P[m * G_N + n0 + c] = acc[c][m];
#else
  /* A's slice as sa[kk][m], M padded to 4: a step's rows of A are float4 broadcasts */
  __shared__ float4 sa4[G_KS * G_MP / 4];
  float *sa = (float *) sa4;
  /* the groups' sums meet in shared memory; the first group adds and stores them */
  __shared__ float red[(G_KG - 1) * G_M * 64 * G_VEC];
  /* 64 threads across the columns, G_KG groups of them down the slice of K */
  const int c = tid % 64, q = tid / 64;
  const long n = (nb * 64 + c) * G_VEC;
  const long left = G_N - n;
  /* a whole vector: inside N, and B's rows let it be one load (the printer checks that
   * VEC elements divide the row pitch, the batch stride and the offset) */
  const bool whole = left >= G_VEC;
  const int per = (ks + G_KG - 1) / G_KG, kb = q * per, ke = kb + per < ks ? kb + per : ks;
  const NKP_AT *bk = B + k0 * G_LDB + n;
  napkin_skinny_raw<G_VEC, NKP_AT> cur[G_UNROLL], nxt[G_UNROLL];
  float acc[G_M][G_VEC];
  /* B's rows of one step, started before they are needed (see the K-major case) */
  auto issue = [&] (int kk0, napkin_skinny_raw<G_VEC, NKP_AT> (&dst)[G_UNROLL]) {
#pragma unroll
    for (int u = 0; u < G_UNROLL; u++)
      dst[u].load (bk + (long) (kk0 + u) * G_LDB, whole && kk0 + u < ke, left > 0 && kk0 + u < ke ? left : 0);
  };

  issue (kb, nxt);
  for (int i = tid; i < G_KS * G_MP; i += 256)
    {
      const int kk = i / G_MP, m = i % G_MP;

      sa[i] = kk < ks && m < G_M ? napkin_ld (A + (NKP_A_KMAJOR ? m * G_LDA + k0 + kk : (k0 + kk) * G_LDA + m))
                                 : 0.0f;
    }
#pragma unroll
  for (int m = 0; m < G_M; m++)
#pragma unroll
    for (int e = 0; e < G_VEC; e++)
      acc[m][e] = 0.0f;
  __syncthreads ();
  for (int kk0 = kb; kk0 < ke; kk0 += G_UNROLL)
    {
#pragma unroll
      for (int u = 0; u < G_UNROLL; u++)
        cur[u] = nxt[u];
      if (kk0 + G_UNROLL < ke)
        issue (kk0 + G_UNROLL, nxt);
#pragma unroll
      for (int u = 0; u < G_UNROLL; u++)
        if (kk0 + u < ke)
          {
            float v[G_VEC];

#pragma unroll
            for (int e = 0; e < G_VEC; e++)
              v[e] = cur[u].get (e);
#pragma unroll
            for (int m4 = 0; m4 < G_MP; m4 += 4)
              {
                const float4 a = *(const float4 *) &sa[(kk0 + u) * G_MP + m4];
                const float a4[4] = { a.x, a.y, a.z, a.w };

#pragma unroll
                for (int j = 0; j < 4; j++)
                  if (m4 + j < G_M)
#pragma unroll
                    for (int e = 0; e < G_VEC; e++)
                      acc[m4 + j][e] += a4[j] * v[e];
              }
          }
    }
  if (q > 0)
#pragma unroll
    for (int m = 0; m < G_M; m++)
#pragma unroll
      for (int e = 0; e < G_VEC; e++)
        red[((q - 1) * G_M + m) * 64 * G_VEC + e * 64 + c] = acc[m][e];
  __syncthreads ();
  if (q == 0 && left > 0)
#pragma unroll
    for (int m = 0; m < G_M; m++)
#pragma unroll
      for (int e = 0; e < G_VEC; e++)
        {
          float x = acc[m][e];

          for (int g = 0; g < G_KG - 1; g++)
            x += red[(g * G_M + m) * 64 * G_VEC + e * 64 + c];
          if (e < left)
            P[m * G_N + n + e] = x;
        }
#endif
}
#undef G_M
#undef G_N
#undef G_K
#undef G_BATCH
#undef G_SPLIT
#undef G_KS
#undef G_MP
#undef G_VEC
#undef G_LDA
#undef G_LDB
#undef G_ABS
#undef G_BBS
#undef G_UNROLL
#undef G_NW
#undef G_KG
#undef G_UNROLL_K
