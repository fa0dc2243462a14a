/* The GPU side of bench/gpu/attn-bwd-alone.sh: kernels/attn-bwd-sm80.cu instantiated
 * alone for one case (the C_* macros the script passes), its three kernels run in order
 * (pre, main, dq) on seeded Q, K, V, dO and an O computed by an fp32 forward (random past
 * the checked heads), dQ, dK, dV and the scratch poisoned first; dQ, dK, dV compared with
 * an fp32 reference on the GPU (naive: a block per 8 query rows for P, O, dS and dQ, a
 * block per 8 keys for dK and dV) over the first C_NREF K/V heads (every element, each
 * must be finite), then timed with events (median of 20 after a warm-up). One line:
 *   NAME  dQ ERR dK ERR dV ERR  ok|FAIL|-  MS ms  MAIN main  TFLOP/s  regs PRE/MAIN/DQ  spill BYTES
 * ERR = max |out − ref| / max |ref| (tolerance 1e-2 for fp16, 3e-2 for bf16); TFLOP/s
 * counts 2.5 × the forward's 4·B·H·NQ·NKV·D, halved for a causal square; MS is the three
 * kernels, MAIN the main kernel alone.
 *
 * Case macros: C_NAME (a string), C_B, C_HK, C_G (batches, K/V heads, query heads a K/V
 * head), C_NQ, C_NKV, C_D, C_LO, C_HI, C_LEFT, C_RIGHT, C_OFF (the mask), C_ALPHA (a
 * literal), C_BF16, C_BSHD (layout [B][N][H][D], else [B][H][N][D]), C_WARPS, C_BQ, C_PW
 * (the kernel's tiles), C_SM90 (optional, 1: pre and main on wgmma, sm_90a: WARPS, PW unused, BQ 64),
 * C_NREF (K/V heads checked; 0: timing only), C_VBIAS (optional, 1: K
 * = 3 + U(±0.5), V = 3 + U(±0.3) instead of U(±2), U(±1)), C_GSHD (optional: dQ, dK, dV's
 * layout, as C_BSHD; default Q's, K's, V's). The script writes the
 * napkin-fragment/LEAD the kernel includes; its strides are LD_* below. */
#define NAPKIN_GENERATED 1
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "prelude.cuh"
#include "attn-prims.cuh"

#define C_H (C_HK * C_G)
#if C_BF16
#define NKB_T napkin_bf16
#define NKB_OT napkin_bf16
#define NKB_MMA bf16
#else
#define NKB_T napkin_f16
#define NKB_OT napkin_f16
#define NKB_MMA f16
#endif
#define NKB_NAME_PRE bwd_pre
#define NKB_NAME_MAIN bwd_main
#define NKB_NAME_DQ bwd_dq
#define NKB_D C_D
#define NKB_DP ((C_D + 15) / 16 * 16)
#define NKB_NQ C_NQ
#define NKB_NKV C_NKV
#define NKB_GROUP C_G
#define NKB_KV_BATCH (C_B * C_HK)
#define NKB_MASK_LO C_LO
#define NKB_MASK_HI C_HI
#define NKB_LEFT C_LEFT
#define NKB_RIGHT C_RIGHT
#define NKB_OFFSET C_OFF
#define NKB_Q_ROW (C_BSHD ? (long) C_H * C_D : (long) C_D)
#define NKB_Q_GROUP (C_BSHD ? (long) C_D : (long) C_NQ * C_D)
#define NKB_O_ROW NKB_Q_ROW
#define NKB_O_GROUP NKB_Q_GROUP
#define NKB_K_ROW (C_BSHD ? (long) C_HK * C_D : (long) C_D)
#ifndef C_GSHD
#define C_GSHD C_BSHD
#endif
#define NKB_DQ_ROW (C_GSHD ? (long) C_H * C_D : (long) C_D)
#define NKB_DQ_GROUP (C_GSHD ? (long) C_D : (long) C_NQ * C_D)
#define NKB_DK_ROW (C_GSHD ? (long) C_HK * C_D : (long) C_D)
#define NKB_DV_ROW NKB_DK_ROW
#define NKB_ALPHA C_ALPHA
#define NKB_DALPHA C_ALPHA
#define NKB_QREF ((const NKB_T *) args.p[0])
#define NKB_KREF ((const NKB_T *) args.p[1])
#define NKB_VREF ((const NKB_T *) args.p[2])
#define NKB_OREF ((const NKB_T *) args.p[3])
#define NKB_DOREF ((const NKB_T *) args.p[4])
#define NKB_DQREF ((NKB_OT *) args.p[5])
#define NKB_DKREF ((NKB_OT *) args.p[6])
#define NKB_DVREF ((NKB_OT *) args.p[7])
#define NKB_LSEREF ((float *) args.p[8])
#define NKB_DROWREF ((float *) args.p[9])
#define NKB_DQAREF ((float *) args.p[10])
#ifndef C_GS
#define C_GS 1
#endif
#define NKB_GSPLIT C_GS
#define NKB_DKAREF ((float *) args.p[11])
#define NKB_DVAREF ((float *) args.p[12])
#define NKB_WARPS C_WARPS
#define NKB_BQ C_BQ
#define NKB_PRE_WARPS C_PW
#ifndef C_SM90
#define C_SM90 0
#endif
#define NKB_MAIN_SM90 C_SM90
/* the LEAD fragment's strides: blk = b·HK + hk, K/V head first */
#define LD_HK ((long) C_HK)
#define LD_QH (C_BSHD ? (long) C_G * C_D : (long) C_G * C_NQ * C_D)
#define LD_QB ((long) C_H * C_NQ * C_D)
#define LD_KH (C_BSHD ? (long) C_D : (long) C_NKV * C_D)
#define LD_KB ((long) C_HK * C_NKV * C_D)
#define LD_DQH (C_GSHD ? (long) C_G * C_D : (long) C_G * C_NQ * C_D)
#define LD_DKH (C_GSHD ? (long) C_D : (long) C_NKV * C_D)
#include "attn-bwd-sm80.cu"

#define CK(call)                                                                                         \
  do                                                                                                     \
    {                                                                                                    \
      cudaError_t e_ = (call);                                                                           \
      if (e_ != cudaSuccess)                                                                             \
        {                                                                                                \
          fprintf (stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString (e_));       \
          printf ("%-26s error: %s\n", C_NAME, cudaGetErrorString (e_));                                 \
          exit (1);                                                                                      \
        }                                                                                                \
    }                                                                                                    \
  while (0)

#ifndef C_VBIAS
#define C_VBIAS 0
#endif

typedef NKB_T T;
#define DP NKB_DP
#define RB 8   /* reference: query rows a block */

/* Element offsets of a row in the case's layout, written out apart from the kernel's
 * strides (a layout the strides get wrong fails the check). */
static __host__ __device__ long
off_q_as (int bshd, long b, long hk, long g, long i)
{
  const long h = hk * C_G + g;

  return bshd ? ((b * C_NQ + i) * C_H + h) * C_D : ((b * C_H + h) * C_NQ + i) * C_D;
}

static __host__ __device__ long
off_k_as (int bshd, long b, long hk, long j)
{
  return bshd ? ((b * C_NKV + j) * C_HK + hk) * C_D : ((b * C_HK + hk) * C_NKV + j) * C_D;
}

static __host__ __device__ long
off_q (long b, long hk, long g, long i)
{
  return off_q_as (C_BSHD, b, hk, g, i);
}

static __host__ __device__ long
off_k (long b, long hk, long j)
{
  return off_k_as (C_BSHD, b, hk, j);
}

static __host__ __device__ bool
vis (long i, long j)
{
  return (!C_LO || j >= i + C_OFF - C_LEFT) && (!C_HI || j <= i + C_OFF + C_RIGHT);
}

/* uniform in [-amp, amp), from a hash of (seed, i) */
__global__ void
fill (T *p, long n, unsigned seed, float amp, float bias = 0.0f)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      unsigned x = (unsigned) i * 2654435761u ^ seed * 40503u ^ (unsigned) (i >> 32) * 97u;

      x ^= x >> 15;
      x *= 2246822519u;
      x ^= x >> 13;
      x *= 3266489917u;
      x ^= x >> 16;
      napkin_st (&p[i], bias + amp * ((float) (x & 0xffffff) / 8388608.0f - 1.0f));
    }
}

__global__ void
to_f32 (const NKB_OT *p, long n, float *out)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    out[i] = napkin_ld (&p[i]);
}

__device__ float
warp_sum (float v)
{
  for (int x = 16; x > 0; x >>= 1)
    v += __shfl_xor_sync (0xffffffffu, v, x);
  return v;
}

/* fp32 reference of RB query rows of one head (kvf < NREF, g): the softmax row P (of α·S
 * over the visible keys), O = P·V (written rounded to T when gen_o; no kernel reads it),
 * dP = dO·Vᵀ, Drow = Σ P·dP (not Σ dO·O with the rounded O: that leaves Σ_j dS_ij ≠ 0,
 * times K's mean in dQ), dS = P·(dP − Drow), dQ = DALPHA·dS·K. P and dS rows in device
 * memory (row (kvf·G + g)·NQ + i), read back by ref_keys. 256 threads, a warp a key in the
 * dot products, threads along D (two halves of the keys) in the sums over keys. */
__global__ void __launch_bounds__ (256)
ref_rows (const T *Q, const T *K, const T *V, T *O, const T *dO, int gen_o, float *P, float *DS, float *dQr)
{
  __shared__ float q[RB][C_D], d[RB][C_D], part[RB][C_D], drow[RB], dsum[8][RB];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long nib = (C_NQ + RB - 1) / RB;
  const long i0 = (blockIdx.x % nib) * RB, g = (blockIdx.x / nib) % C_G, kvf = blockIdx.x / nib / C_G;
  const long b = kvf / C_HK, hk = kvf % C_HK, row0 = (kvf * C_G + g) * C_NQ + i0;
  const float alpha = (float) C_ALPHA, dalpha = (float) C_ALPHA;
  constexpr int EL = (C_D + 31) / 32;

  for (int x = tid; x < RB * C_D; x += 256)
    {
      const int r = x / C_D, e = x % C_D;
      const bool ok = i0 + r < C_NQ;

      q[r][e] = ok ? napkin_ld (&Q[off_q (b, hk, g, i0 + r) + e]) : 0.0f;
      d[r][e] = ok ? napkin_ld (&dO[off_q (b, hk, g, i0 + r) + e]) : 0.0f;
    }
  __syncthreads ();
  /* scores */
  for (long j = warp; j < C_NKV; j += 8)
    {
      float kr[EL];

      for (int c = 0; c < EL; c++)
        kr[c] = lane + 32 * c < C_D ? napkin_ld (&K[off_k (b, hk, j) + lane + 32 * c]) : 0.0f;
      for (int r = 0; r < RB; r++)
        {
          float s = 0.0f;

          for (int c = 0; c < EL; c++)
            if (lane + 32 * c < C_D)
              s += q[r][lane + 32 * c] * kr[c];
          s = warp_sum (s);
          if (lane == 0 && i0 + r < C_NQ)
            P[(row0 + r) * C_NKV + j] = vis (i0 + r, j) ? alpha * s : -INFINITY;
        }
    }
  __syncthreads ();
  /* softmax: warp r the row r */
  if (i0 + warp < C_NQ)
    {
      float *p = P + (row0 + warp) * C_NKV, mx = -INFINITY, sum = 0.0f;

      for (long j = lane; j < C_NKV; j += 32)
        mx = fmaxf (mx, p[j]);
      for (int x = 16; x > 0; x >>= 1)
        mx = fmaxf (mx, __shfl_xor_sync (0xffffffffu, mx, x));
      for (long j = lane; j < C_NKV; j += 32)
        sum += p[j] == -INFINITY ? 0.0f : expf (p[j] - mx);
      sum = warp_sum (sum);
      for (long j = lane; j < C_NKV; j += 32)
        p[j] = p[j] == -INFINITY ? 0.0f : expf (p[j] - mx) / sum;
    }
  __syncthreads ();
  /* O = P·V */
  {
    const int e = tid % 128, half = tid / 128;
    float acc[RB] = { 0 };

    if (e < C_D)
      for (long j = half; j < C_NKV; j += 2)
        {
          const float v = napkin_ld (&V[off_k (b, hk, j) + e]);

          for (int r = 0; r < RB; r++)
            if (i0 + r < C_NQ)
              acc[r] += P[(row0 + r) * C_NKV + j] * v;
        }
    if (half == 1 && e < C_D)
      for (int r = 0; r < RB; r++)
        part[r][e] = acc[r];
    __syncthreads ();
    if (half == 0 && e < C_D)
      for (int r = 0; r < RB; r++)
        if (i0 + r < C_NQ && gen_o)
          napkin_st (&O[off_q (b, hk, g, i0 + r) + e], acc[r] + part[r][e]);
    __syncthreads ();
  }
  /* dP (into DS), Drow = Σ P·dP: warp w's keys, then a sum over the warps */
  float psum[RB] = { 0 };

  for (long j = warp; j < C_NKV; j += 8)
    {
      float vr[EL];

      for (int c = 0; c < EL; c++)
        vr[c] = lane + 32 * c < C_D ? napkin_ld (&V[off_k (b, hk, j) + lane + 32 * c]) : 0.0f;
      for (int r = 0; r < RB; r++)
        {
          float s = 0.0f;

          for (int c = 0; c < EL; c++)
            if (lane + 32 * c < C_D)
              s += d[r][lane + 32 * c] * vr[c];
          s = warp_sum (s);
          if (i0 + r < C_NQ)
            {
              const long x = (row0 + r) * C_NKV + j;

              psum[r] += P[x] * s;
              if (lane == 0)
                DS[x] = s;
            }
        }
    }
  if (lane == 0)
    for (int r = 0; r < RB; r++)
      dsum[warp][r] = psum[r];
  __syncthreads ();
  if (tid < RB)
    {
      float s = 0.0f;

      for (int w = 0; w < 8; w++)
        s += dsum[w][tid];
      drow[tid] = s;
    }
  __syncthreads ();
  /* dS = P·(dP − Drow) */
  for (long j = warp; j < C_NKV; j += 8)
    if (lane == 0)
      for (int r = 0; r < RB; r++)
        if (i0 + r < C_NQ)
          {
            const long x = (row0 + r) * C_NKV + j;

            DS[x] = P[x] * (DS[x] - drow[r]);
          }
  __syncthreads ();
  /* dQ = DALPHA·dS·K */
  {
    const int e = tid % 128, half = tid / 128;
    float acc[RB] = { 0 };

    if (e < C_D)
      for (long j = half; j < C_NKV; j += 2)
        {
          const float k = napkin_ld (&K[off_k (b, hk, j) + e]);

          for (int r = 0; r < RB; r++)
            if (i0 + r < C_NQ)
              acc[r] += DS[(row0 + r) * C_NKV + j] * k;
        }
    if (half == 1 && e < C_D)
      for (int r = 0; r < RB; r++)
        part[r][e] = acc[r];
    __syncthreads ();
    if (half == 0 && e < C_D)
      for (int r = 0; r < RB; r++)
        if (i0 + r < C_NQ)
          dQr[(row0 + r) * C_D + e] = dalpha * (acc[r] + part[r][e]);
  }
}

/* dV = Σ_g Σ_i P·dO, dK = DALPHA·Σ_g Σ_i dS·Q for 8 keys of head kvf: threads along D. */
__global__ void __launch_bounds__ (128)
ref_keys (const T *Q, const T *dO, const float *P, const float *DS, float *dKr, float *dVr)
{
  const long njb = (C_NKV + 7) / 8;
  const long j0 = (blockIdx.x % njb) * 8, kvf = blockIdx.x / njb, b = kvf / C_HK, hk = kvf % C_HK;
  const int e = threadIdx.x;
  float dv[8] = { 0 }, dk[8] = { 0 };

  if (e >= C_D)
    return;
  for (long g = 0; g < C_G; g++)
    for (long i = 0; i < C_NQ; i++)
      {
        const long row = (kvf * C_G + g) * C_NQ + i;
        const float dov = napkin_ld (&dO[off_q (b, hk, g, i) + e]), qv = napkin_ld (&Q[off_q (b, hk, g, i) + e]);

        for (int jj = 0; jj < 8; jj++)
          if (j0 + jj < C_NKV)
            {
              dv[jj] += P[row * C_NKV + j0 + jj] * dov;
              dk[jj] += DS[row * C_NKV + j0 + jj] * qv;
            }
      }
  for (int jj = 0; jj < 8; jj++)
    if (j0 + jj < C_NKV)
      {
        dVr[(kvf * C_NKV + j0 + jj) * C_D + e] = dv[jj];
        dKr[(kvf * C_NKV + j0 + jj) * C_D + e] = (float) C_ALPHA * dk[jj];
      }
}

static float
median (std::vector<float> v)
{
  std::sort (v.begin (), v.end ());
  return v[v.size () / 2];
}

int
main (void)
{
  const long kvb = (long) C_B * C_HK, nq_el = kvb * C_G * C_NQ * C_D, nk_el = kvb * C_NKV * C_D;
  const long rows = kvb * C_G * C_NQ;
  /* the dQ accumulator's rows: with the wgmma main, each head's in tiles of 64 */
  const long dqa_rows = C_SM90 ? kvb * C_G * ((C_NQ + 63) / 64 * 64) : rows;
  const int S = DP + 8;
#if C_SM90
  /* pre on wgmma: 128 query rows a block, Q and dO, two buffers of K and V chunks */
  const int pre_grid = (int) (kvb * C_G * ((C_NQ + 127) / 128));
  const int pre_threads = 256, pre_smem = 1024 + 2 * 128 * C_D * 2 + 4 * 64 * C_D * 2;
#else
  const int pre_grid = (int) (kvb * C_G * ((C_NQ + 16 * C_PW - 1) / (16 * C_PW)));
  const int pre_threads = 32 * C_PW, pre_smem = 4 * (16 * C_PW + 128) * S;
#endif
#if C_SM90
  /* the wgmma main: blocks of 128 keys, 256 threads; K, V, two stages of Q and dO, dSᵀ,
   * lse2 and Drow, the staged dQ, 1 KiB to align */
  const int main_grid = (int) (kvb * ((C_NKV + 127) / 128) * C_GS);
  const int main_threads = 256;
  const int main_smem = 1024 + 2 * 128 * C_D * 2 + 4 * 64 * C_D * 2 + 128 * 128 + 4 * 64 * 4 + 4 * 64 * 64 * 4;
#else
  const int main_grid = (int) (kvb * ((C_NKV + 16 * C_WARPS - 1) / (16 * C_WARPS)));
  const int main_threads = 32 * C_WARPS;
  const int main_smem = 2 * (32 * C_WARPS * S + 4 * C_BQ * S + 16 * C_WARPS * (C_BQ + 8)) + 16 * C_BQ;
#endif
  const int dq_grid = (int) (kvb * C_G * ((C_NQ + 63) / 64));
  const int nref = C_NREF < kvb ? C_NREF : (int) kvb;
  const double tol = C_BF16 ? 3e-2 : 1e-2;
  void *p[13];
  NapkinArgs args;
  cudaEvent_t e0, e1;
  cudaFuncAttributes fa[3];

  CK (cudaMalloc (&p[0], nq_el * 2));
  CK (cudaMalloc (&p[1], nk_el * 2));
  CK (cudaMalloc (&p[2], nk_el * 2));
  CK (cudaMalloc (&p[3], nq_el * 2));
  CK (cudaMalloc (&p[4], nq_el * 2));
  CK (cudaMalloc (&p[5], nq_el * 2));
  CK (cudaMalloc (&p[6], nk_el * 2));
  CK (cudaMalloc (&p[7], nk_el * 2));
  CK (cudaMalloc (&p[8], rows * 4));
  CK (cudaMalloc (&p[9], rows * 4));
  CK (cudaMalloc (&p[10], dqa_rows * C_D * 4));
  CK (cudaMalloc (&p[11], nk_el * 4));   /* the group split's dK and dV sums */
  CK (cudaMalloc (&p[12], nk_el * 4));
  memset (&args, 0, sizeof args);
  for (int i = 0; i < 13; i++)
    args.p[i] = p[i];
  fill<<<1024, 256>>> ((T *) p[0], nq_el, 1, 2.0f);
  if (C_VBIAS)   /* K and V a large common component and small noise: Σ_j dS_ij ≠ 0 shows in dQ */
    {
      fill<<<1024, 256>>> ((T *) p[1], nk_el, 2, 0.5f, 3.0f);
      fill<<<1024, 256>>> ((T *) p[2], nk_el, 3, 0.3f, 3.0f);
    }
  else
    {
      fill<<<1024, 256>>> ((T *) p[1], nk_el, 2, 2.0f);
      fill<<<1024, 256>>> ((T *) p[2], nk_el, 3, 1.0f);
    }
  fill<<<1024, 256>>> ((T *) p[3], nq_el, 4, 0.3f);   /* O past the checked heads */
  fill<<<1024, 256>>> ((T *) p[4], nq_el, 5, 1.0f);
  CK (cudaGetLastError ());

  /* the reference (also O of the checked heads) */
  float *P = NULL, *DS = NULL, *dQr = NULL, *dKr = NULL, *dVr = NULL;
  const long rrows = (long) nref * C_G * C_NQ;

  if (nref > 0)
    {
      CK (cudaMalloc (&P, rrows * C_NKV * 4));
      CK (cudaMalloc (&DS, rrows * C_NKV * 4));
      CK (cudaMalloc (&dQr, rrows * C_D * 4));
      CK (cudaMalloc (&dKr, (long) nref * C_NKV * C_D * 4));
      CK (cudaMalloc (&dVr, (long) nref * C_NKV * C_D * 4));
      ref_rows<<<(int) (nref * C_G * ((C_NQ + RB - 1) / RB)), 256>>> ((T *) p[0], (T *) p[1], (T *) p[2], (T *) p[3],
                                                                      (T *) p[4], 1, P, DS, dQr);
      CK (cudaGetLastError ());
      ref_keys<<<(int) (nref * ((C_NKV + 7) / 8)), 128>>> ((T *) p[0], (T *) p[4], P, DS, dKr, dVr);
      CK (cudaGetLastError ());
      CK (cudaDeviceSynchronize ());
    }

  CK (cudaFuncSetAttribute (bwd_pre, cudaFuncAttributeMaxDynamicSharedMemorySize, pre_smem));
  CK (cudaFuncSetAttribute (bwd_main, cudaFuncAttributeMaxDynamicSharedMemorySize, main_smem));
  CK (cudaFuncGetAttributes (&fa[0], bwd_pre));
  CK (cudaFuncGetAttributes (&fa[1], bwd_main));
  CK (cudaFuncGetAttributes (&fa[2], bwd_dq));
  auto run = [&] (bool all) {
    if (all)
      bwd_pre<<<pre_grid, pre_threads, pre_smem>>> (args);
    bwd_main<<<main_grid, main_threads, main_smem>>> (args);
    if (all)
      bwd_dq<<<dq_grid, 256>>> (args);
  };

  /* poisoned outputs and scratch (NaN): every element must be written, DQA zeroed by pre */
  CK (cudaMemset (p[5], 0xff, nq_el * 2));
  CK (cudaMemset (p[6], 0xff, nk_el * 2));
  CK (cudaMemset (p[7], 0xff, nk_el * 2));
  CK (cudaMemset (p[8], 0xff, rows * 4));
  CK (cudaMemset (p[9], 0xff, rows * 4));
  CK (cudaMemset (p[10], 0xff, dqa_rows * C_D * 4));
  run (true);
  CK (cudaGetLastError ());
  CK (cudaDeviceSynchronize ());

  double err[3] = { 0, 0, 0 };
  const char *status = "-";

  if (nref > 0)
    {
      float *f;
      std::vector<float> out (std::max (nq_el, nk_el)), ref (std::max (rrows * C_D, (long) nref * C_NKV * C_D));

      CK (cudaMalloc (&f, std::max (nq_el, nk_el) * 4));
      for (int x = 0; x < 3; x++)
        {
          const long n = x == 0 ? nq_el : nk_el;
          double e_max = 0, r_max = 0;
          long bad = 0;

          to_f32<<<1024, 256>>> ((const NKB_OT *) p[5 + x], n, f);
          CK (cudaMemcpy (out.data (), f, n * 4, cudaMemcpyDeviceToHost));
          CK (cudaMemcpy (ref.data (), x == 0 ? dQr : x == 1 ? dKr : dVr,
                          (x == 0 ? rrows * C_D : (long) nref * C_NKV * C_D) * 4, cudaMemcpyDeviceToHost));
          for (long kvf = 0; kvf < nref; kvf++)
            {
              const long b = kvf / C_HK, hk = kvf % C_HK;

              for (long g = 0; g < (x == 0 ? C_G : 1); g++)
                for (long i = 0; i < (x == 0 ? C_NQ : C_NKV); i++)
                  for (long e = 0; e < C_D; e++)
                    {
                      const float o = out[(x == 0 ? off_q_as (C_GSHD, b, hk, g, i) : off_k_as (C_GSHD, b, hk, i)) + e];
                      const float r = ref[((x == 0 ? (kvf * C_G + g) * C_NQ : kvf * C_NKV) + i) * C_D + e];

                      if (!std::isfinite (o))
                        {
                          if (bad++ < 3)
                            fprintf (stderr, "%s: %s non-finite at head %ld g %ld row %ld e %ld\n", C_NAME,
                                     x == 0 ? "dQ" : x == 1 ? "dK" : "dV", kvf, g, i, e);
                          continue;
                        }
                      e_max = std::max (e_max, (double) fabsf (o - r));
                      r_max = std::max (r_max, (double) fabsf (r));
                    }
            }
          err[x] = bad ? INFINITY : r_max > 0 ? e_max / r_max : e_max;
        }
      status = err[0] <= tol && err[1] <= tol && err[2] <= tol ? "ok" : "FAIL";
      CK (cudaFree (f));
    }

  /* timing */
  std::vector<float> t_all, t_main;

  CK (cudaEventCreate (&e0));
  CK (cudaEventCreate (&e1));
  for (int k = 0; k < 3; k++)
    run (true);
  for (int k = 0; k < 20; k++)
    {
      float ms;

      CK (cudaEventRecord (e0));
      run (true);
      CK (cudaEventRecord (e1));
      CK (cudaEventSynchronize (e1));
      CK (cudaEventElapsedTime (&ms, e0, e1));
      t_all.push_back (ms);
    }
  for (int k = 0; k < 20; k++)
    {
      float ms;

      CK (cudaEventRecord (e0));
      run (false);
      CK (cudaEventRecord (e1));
      CK (cudaEventSynchronize (e1));
      CK (cudaEventElapsedTime (&ms, e0, e1));
      t_main.push_back (ms);
    }
  CK (cudaGetLastError ());

  const bool causal_sq = C_HI && !C_LO && C_NQ == C_NKV && C_OFF == 0 && C_RIGHT == 0;
  const double flops = 2.5 * 4.0 * kvb * C_G * (double) C_NQ * C_NKV * C_D * (causal_sq ? 0.5 : 1.0);
  const float ms = median (t_all), ms_main = median (t_main);

  printf ("%-26s dQ %8.2e dK %8.2e dV %8.2e  %-4s %8.3f ms %8.3f main %7.1f TFLOP/s  regs %d/%d/%d spill %d\n", C_NAME,
          err[0], err[1], err[2], status, ms, ms_main, flops / (ms * 1e-3) / 1e12, fa[0].numRegs, fa[1].numRegs,
          fa[2].numRegs, (int) (fa[0].localSizeBytes + fa[1].localSizeBytes + fa[2].localSizeBytes));
  return strcmp (status, "FAIL") == 0;
}
