/* The GPU check of the GEMM tile primitives (bench/gpu/gemm-prims/check): one problem,
 * printed by gemm-prims into NP_PROBLEM, run on the GPU. Fills the operands with seeded
 * values in [-1, 1), computes an fp32 reference GEMM (and the epilogue) on the GPU from
 * the operands as stored, poisons C, runs the plan's kernels (repacks, GEMM, split-K
 * reduction), compares (max |C − ref| / max |ref|, NaN fails), then times the whole
 * sequence with CUDA events (median of NP_REPS), each kernel of it on its own (events
 * around each launch: a repack's or reduction's bandwidth) and, for 16-bit operands,
 * cuBLAS on the same operands (no epilogue). Prints one line:
 *   NAME ok|FAIL rel_err ms TFLOP/s cublas_ms cublas/napkin kernels  [skeleton ms (TB/s) | …]
 * Build: nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17
 *        -DNP_PROBLEM='"problem.cuh"' harness.cu [-lcublas | -DNP_NO_CUBLAS] */
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#ifndef NP_NO_CUBLAS
#include <cublas_v2.h>
#endif

#define NP_CHECK(x)                                                                            \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess)                                                                     \
      {                                                                                        \
        printf ("%s FAIL cuda: %s at %s:%d\n", np_name (), cudaGetErrorString (e_), __FILE__, __LINE__); \
        exit (1);                                                                              \
      }                                                                                        \
  } while (0)

struct NpMap
{
  int dtype;
  unsigned long long inner, outer;
  unsigned box_inner, box_outer, swizzle;
  unsigned long long ld, batch, batch_stride, offset;
};

static const char *np_name (void);

#include NP_PROBLEM

static const char *np_name (void) { return NP_NAME; }

#ifndef NP_REPS
#define NP_REPS 30
#endif

/* ---- data ----------------------------------------------------------------------------------- */

static __device__ float
np_rand (unsigned long long i, unsigned seed)
{
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;

  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return (float) (x >> 40) / (float) (1ull << 24) * 2.0f - 1.0f;
}

/* rows × cols of each of `count` matrices, ld and bs apart, in [-1, 1) */
template <typename T>
static __global__ void
np_fill (T *p, long count, long rows, long cols, long ld, long bs, unsigned seed)
{
  const long total = count * rows * cols;

  for (long t = (long) blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (long) gridDim.x * blockDim.x)
    {
      const long c = t % cols, r = (t / cols) % rows, b = t / (cols * rows);

      napkin_st (p + b * bs + r * ld + c, np_rand (t, seed));
    }
}

static __device__ float np_a (const np_ab_t *A, long b, long m, long k)
{
  return napkin_ld (A + b * NP_A_BS + (NP_A_KMAJOR ? m * NP_A_LD + k : k * NP_A_LD + m));
}

static __device__ float np_b (const np_ab_t *B, long b, long k, long n)
{
  return napkin_ld (B + (NP_SHARED_B ? 0 : b * NP_B_BS) + (NP_B_KMAJOR ? n * NP_B_LD + k : k * NP_B_LD + n));
}

/* The fused maps of the problem on the fp32 product at (b, m, n). */
static __device__ float
np_epi (const char *ws, long b, long m, long n, float acc)
{
#if NP_EPI == 1
  {
    const float x = acc + napkin_ld ((const np_x_t *) (ws + NP_X_OFF) + n);

    acc = 0.5f * x * (1.0f + erff (x * 0.70710678118f));
  }
#elif NP_EPI == 2
  acc += napkin_ld ((const np_x_t *) (ws + NP_X_OFF) + b * NP_M * NP_N + m * NP_N + n);
#elif NP_EPI == 3
  acc = acc / (1.0f + expf (-acc)) * napkin_ld ((const np_x_t *) (ws + NP_X_OFF) + b * NP_M * NP_N + m * NP_N + n);
#elif NP_EPI == 4
  acc = 0.5f * acc * (1.0f + erff (acc * 0.70710678118f));
#endif
  (void) ws; (void) b; (void) m; (void) n;
  return acc;
}

/* fp32 reference: 64 × 64 outputs per block of 16 × 16 threads, 4 × 4 a thread, K in
 * steps of 16 through shared memory (fast enough that the largest problems check in
 * seconds) */
static __global__ void __launch_bounds__ (256)
np_reference (const np_ab_t *A, const np_ab_t *B, const char *ws, float *ref)
{
  __shared__ __align__ (16) float as[16][64], bs[16][64];   /* [k][m], [k][n] */
  const long b = blockIdx.z, m0 = (long) blockIdx.y * 64, n0 = (long) blockIdx.x * 64;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  float acc[4][4] = { { 0.0f } };

  for (long k0 = 0; k0 < NP_K; k0 += 16)
    {
      for (int e = tid; e < 16 * 64; e += 256)
        {
          const int kk = e / 64, x = e % 64;
          const long k = k0 + kk;

          as[kk][x] = m0 + x < NP_M && k < NP_K ? np_a (A, b, m0 + x, k) : 0.0f;
          bs[kk][x] = n0 + x < NP_N && k < NP_K ? np_b (B, b, k, n0 + x) : 0.0f;
        }
      __syncthreads ();
#pragma unroll
      for (int kk = 0; kk < 16; kk++)
        {
          const float4 a = *(const float4 *) &as[kk][ty * 4], c = *(const float4 *) &bs[kk][tx * 4];
          const float av[4] = { a.x, a.y, a.z, a.w }, bv[4] = { c.x, c.y, c.z, c.w };

#pragma unroll
          for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
              acc[i][j] += av[i] * bv[j];
        }
      __syncthreads ();
    }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      {
        const long m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;

        if (m < NP_M && n < NP_N)
          ref[(b * NP_M + m) * NP_N + n] = np_epi (ws, b, m, n, acc[i][j]);
      }
}

/* max |c − ref| and max |ref| as ordered bits (both ≥ 0); NaN or Inf counted */
static __global__ void
np_compare (const np_c_t *C, const float *ref, unsigned *err, unsigned *mag, unsigned long long *bad)
{
  const long total = NP_BATCH * NP_M * NP_N;

  for (long t = (long) blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (long) gridDim.x * blockDim.x)
    {
      const long n = t % NP_N, m = (t / NP_N) % NP_M, b = t / (NP_N * NP_M);
      const float c = napkin_ld (C + b * NP_C_BS + m * NP_C_LD + n), r = ref[t];

      if (!isfinite (c))
        atomicAdd (bad, 1ull);
      else
        atomicMax (err, __float_as_uint (fabsf (c - r)));
      atomicMax (mag, __float_as_uint (fabsf (r)));
    }
}

/* ---- tensor maps ---------------------------------------------------------------------------- */

typedef CUresult (*EncodeFn) (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static void
np_encode (NapkinTensorMap *out, const NpMap *m, char *ws)
{
  static EncodeFn encode;
  const unsigned es = m->dtype == 0 ? 4 : m->dtype <= 2 ? 2 : 1;
  cuuint64_t dims[3] = { m->inner, m->outer, m->batch };
  cuuint64_t strides[2] = { m->ld * es, m->batch_stride * es };
  cuuint32_t box[3] = { m->box_inner, m->box_outer, 1 }, estr[3] = { 1, 1, 1 };
  CUtensorMapDataType t = m->dtype == 0 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : m->dtype == 1 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                          : m->dtype == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  CUresult r;

  if (encode == NULL)
    {
      cudaDriverEntryPointQueryResult q;

#if CUDART_VERSION >= 12050
      NP_CHECK (cudaGetDriverEntryPointByVersion ("cuTensorMapEncodeTiled", (void **) &encode, 12000, cudaEnableDefault, &q));
#else
      NP_CHECK (cudaGetDriverEntryPoint ("cuTensorMapEncodeTiled", (void **) &encode, cudaEnableDefault, &q));
#endif
      if (encode == NULL)
        {
          printf ("%s FAIL the driver lacks cuTensorMapEncodeTiled\n", NP_NAME);
          exit (1);
        }
    }
  r = encode ((CUtensorMap *) out, t, m->batch > 1 ? 3 : 2, ws + m->offset, dims, strides, box, estr,
              CU_TENSOR_MAP_INTERLEAVE_NONE, m->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    {
      printf ("%s FAIL cuTensorMapEncodeTiled: error %d (inner %llu outer %llu box %u×%u ld %llu batch %llu)\n",
              NP_NAME, (int) r, m->inner, m->outer, m->box_inner, m->box_outer, m->ld, m->batch);
      exit (1);
    }
}

static float
np_median (std::vector<float> v)
{
  std::sort (v.begin (), v.end ());
  return v[v.size () / 2];
}

template <typename F>
static float
np_time (F run, cudaStream_t s)
{
  std::vector<float> ts;
  cudaEvent_t a, b;

  NP_CHECK (cudaEventCreate (&a));
  NP_CHECK (cudaEventCreate (&b));
  for (int i = 0; i < 3; i++)
    run ();
  NP_CHECK (cudaStreamSynchronize (s));
  for (int i = 0; i < NP_REPS; i++)
    {
      float ms;

      NP_CHECK (cudaEventRecord (a, s));
      run ();
      NP_CHECK (cudaEventRecord (b, s));
      NP_CHECK (cudaEventSynchronize (b));
      NP_CHECK (cudaEventElapsedTime (&ms, a, b));
      ts.push_back (ms);
    }
  NP_CHECK (cudaGetLastError ());
  return np_median (ts);
}

int
main (void)
{
  const double flops = 2.0 * NP_BATCH * NP_M * NP_N * NP_K;
  const long cells = NP_BATCH * NP_M * NP_N;
  char *ws;
  float *ref;
  unsigned *stats, host[2];
  unsigned long long *bad, nbad;
  NapkinArgs args;
  static NapkinTensorMap maps[NP_N_MAPS + 1];
  cudaStream_t s;
  int sms, dev;
  float ms, cublas_ms = -1.0f, rel;
  const np_c_t *C;

  NP_CHECK (cudaGetDevice (&dev));
  NP_CHECK (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, dev));
  NP_CHECK (cudaStreamCreate (&s));
  NP_CHECK (cudaMalloc (&ws, NP_WS_BYTES));
  NP_CHECK (cudaMemset (ws, 0, NP_WS_BYTES));
  NP_CHECK (cudaMalloc (&ref, cells * sizeof (float)));
  NP_CHECK (cudaMalloc (&stats, 2 * sizeof (unsigned) + sizeof (unsigned long long)));
  bad = (unsigned long long *) (stats + 2);
  memset (&args, 0, sizeof args);
  args.p[0] = ws;

  np_fill<<<4096, 256>>> ((np_ab_t *) (ws + NP_A_OFF), NP_A_BS ? NP_BATCH : 1, NP_A_ROWS, NP_A_COLS, NP_A_LD, NP_A_BS, 1);
  np_fill<<<4096, 256>>> ((np_ab_t *) (ws + NP_B_OFF), NP_B_BS ? NP_BATCH : 1, NP_B_ROWS, NP_B_COLS, NP_B_LD, NP_B_BS, 2);
#ifdef NP_X_OFF
  np_fill<<<4096, 256>>> ((np_x_t *) (ws + NP_X_OFF), NP_X_BS ? NP_BATCH : 1, NP_X_ROWS, NP_X_COLS, NP_X_LD, NP_X_BS, 3);
#endif
  NP_CHECK (cudaGetLastError ());
  np_reference<<<dim3 ((NP_N + 63) / 64, (NP_M + 63) / 64, NP_BATCH), dim3 (16, 16)>>> (
    (const np_ab_t *) (ws + NP_A_OFF), (const np_ab_t *) (ws + NP_B_OFF), ws, ref);
  NP_CHECK (cudaGetLastError ());
  NP_CHECK (cudaDeviceSynchronize ());

  for (int i = 0; i < NP_N_MAPS; i++)
    np_encode (&maps[i], &np_maps[i], ws);
  np_prepare ();

  /* poison C: 0xFF bytes are NaN in fp32, fp16 and bf16 */
  C = (const np_c_t *) (ws + NP_C_OFF);
  NP_CHECK (cudaMemset ((char *) C, 0xFF, NP_BATCH * NP_M * NP_N * sizeof (np_c_t)));
  np_launch (args, maps, sms, s);
  NP_CHECK (cudaGetLastError ());
  NP_CHECK (cudaStreamSynchronize (s));
  NP_CHECK (cudaMemset (stats, 0, 2 * sizeof (unsigned) + sizeof (unsigned long long)));
  np_compare<<<4096, 256>>> (C, ref, stats, stats + 1, bad);
  NP_CHECK (cudaDeviceSynchronize ());
  NP_CHECK (cudaMemcpy (host, stats, sizeof host, cudaMemcpyDeviceToHost));
  NP_CHECK (cudaMemcpy (&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
  {
    float e, mag;

    memcpy (&e, &host[0], 4);
    memcpy (&mag, &host[1], 4);
    rel = nbad ? INFINITY : e / (mag > 0 ? mag : 1.0f);
  }

  ms = np_time ([&] { np_launch (args, maps, sms, s); }, s);

  /* each kernel's own time: events between the launches of the same sequence */
  float kernel_ms[NP_N_KERNELS];
  {
    std::vector<float> per[NP_N_KERNELS];
    cudaEvent_t ev[NP_N_KERNELS + 1];

    for (int k = 0; k <= NP_N_KERNELS; k++)
      NP_CHECK (cudaEventCreate (&ev[k]));
    for (int i = 0; i < NP_REPS; i++)
      {
        NP_CHECK (cudaEventRecord (ev[0], s));
        for (int k = 0; k < NP_N_KERNELS; k++)
          {
            np_launch_one (k, args, maps, sms, s);
            NP_CHECK (cudaEventRecord (ev[k + 1], s));
          }
        NP_CHECK (cudaEventSynchronize (ev[NP_N_KERNELS]));
        for (int k = 0; k < NP_N_KERNELS; k++)
          {
            float t;

            NP_CHECK (cudaEventElapsedTime (&t, ev[k], ev[k + 1]));
            per[k].push_back (t);
          }
      }
    for (int k = 0; k < NP_N_KERNELS; k++)
      kernel_ms[k] = np_median (per[k]);
  }

#if !defined (NP_NO_CUBLAS) && (NP_AB == 1 || NP_AB == 2)
  {
    cublasHandle_t h;
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType ab = NP_AB == 1 ? CUDA_R_16F : CUDA_R_16BF;
    const cudaDataType ct = NP_C == 0 ? CUDA_R_32F : NP_C == 1 ? CUDA_R_16F : CUDA_R_16BF;
    void *C2;

    /* row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ */
    NP_CHECK (cudaMalloc (&C2, cells * sizeof (np_c_t)));
    if (cublasCreate (&h) == CUBLAS_STATUS_SUCCESS)
      {
        cublasSetStream (h, s);
        auto run = [&] {
          cublasGemmStridedBatchedEx (h, NP_B_KMAJOR ? CUBLAS_OP_T : CUBLAS_OP_N, NP_A_KMAJOR ? CUBLAS_OP_N : CUBLAS_OP_T,
                                      NP_N, NP_M, NP_K, &alpha, ws + NP_B_OFF, ab, NP_B_LD, NP_SHARED_B ? 0 : NP_B_BS,
                                      ws + NP_A_OFF, ab, NP_A_LD, NP_A_BS, &beta, C2, ct, NP_N, NP_M * NP_N, NP_BATCH,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        };
        if (cublasGemmStridedBatchedEx (h, NP_B_KMAJOR ? CUBLAS_OP_T : CUBLAS_OP_N, NP_A_KMAJOR ? CUBLAS_OP_N : CUBLAS_OP_T,
                                        NP_N, NP_M, NP_K, &alpha, ws + NP_B_OFF, ab, NP_B_LD, NP_SHARED_B ? 0 : NP_B_BS,
                                        ws + NP_A_OFF, ab, NP_A_LD, NP_A_BS, &beta, C2, ct, NP_N, NP_M * NP_N, NP_BATCH,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS)
          cublas_ms = np_time (run, s);
        cublasDestroy (h);
      }
    cudaFree (C2);
  }
#endif

  {
    const float tol = NP_C == 0 ? 1e-3f : NP_C == 1 ? 4e-3f : 2e-2f;

    printf ("%-22s %-4s %9.2e %10.4f %8.1f %10.4f %6.2f  %s  [", NP_NAME, rel <= tol ? "ok" : "FAIL", rel, ms,
            flops / ms / 1e9, cublas_ms, cublas_ms > 0 ? cublas_ms / ms : 0.0f, np_kernels);
    for (int k = 0; k < NP_N_KERNELS; k++)
      {
        printf ("%s%s %.4f", k ? " | " : "", np_kernel_names[k], kernel_ms[k]);
        if (np_kernel_bytes[k] > 0)
          printf (" (%.2f TB/s)", np_kernel_bytes[k] / kernel_ms[k] / 1e9);
      }
    printf ("]\n");
  }
  return 0;
}
