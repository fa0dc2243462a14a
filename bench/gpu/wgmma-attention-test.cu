/* Check and timing of the Hopper attention skeleton (kernels/flash-wgmma.cu) outside
 * Napkin; bench/gpu/wgmma-attention-test.py instantiates the template for several tile
 * configurations into wgmma-attention-kernels.cuh and builds this file with it.
 * Fresh random inputs for every configuration, output poisoned (NaN) before each check,
 * an fp32 reference on the GPU for three of the (batch, head) pairs (every output element
 * is checked to have been written), max |out − ref| / max |ref| like the runner's check,
 * CUDA events around each launch, median of 20 after 3 warm-ups. */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>

/* What Napkin's generated modules define before their kernels (src/codegen/napkin-cuda.c). */
struct napkin_f16 { unsigned short x; };
struct NapkinArgs { void *p[64]; };
static __device__ __forceinline__ void napkin_st (napkin_f16 *p, float v)
{ unsigned short h; asm ("cvt.rn.f16.f32 %0, %1;" : "=h" (h) : "f" (v)); p->x = h; }

struct __align__ (64) NapkinTensorMap { unsigned long long opaque[16]; };
static __device__ __forceinline__ unsigned napkin_smem_addr (const void *p)
{ unsigned a; asm ("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r" (a) : "l" (p)); return a; }

struct Config
{
  const char *name;
  const void *kernel;
  int tma;            /* takes the tensor maps of Q, K and V after the NapkinArgs */
  int d, bq, bkv, threads, smem;
};

#include "wgmma-attention-kernels.cuh"

#define CHECK(x)                                                                          \
  do                                                                                      \
    {                                                                                     \
      cudaError_t e_ = (x);                                                               \
      if (e_ != cudaSuccess)                                                              \
        {                                                                                 \
          fprintf (stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString (e_)); \
          exit (1);                                                                       \
        }                                                                                 \
    }                                                                                     \
  while (0)

/* One block per query row: scores in shared memory, softmax, then P·V, all fp32. */
__global__ void
reference (const __half_raw *q, const __half_raw *k, const __half_raw *v, float *o, int n, int d, float alpha, long bh)
{
  extern __shared__ float sc[];
  __shared__ float red[32];
  const long row = bh * n + blockIdx.x;
  const __half_raw *qr = q + row * d, *kb = k + bh * (long) n * d, *vb = v + bh * (long) n * d;
  float mx = -INFINITY, sum = 0;

  for (int j = threadIdx.x; j < n; j += blockDim.x)
    {
      float acc = 0;
      for (int x = 0; x < d; x++)
        acc += __half2float (__half (qr[x])) * __half2float (__half (kb[(long) j * d + x]));
      sc[j] = acc * alpha;
      mx = fmaxf (mx, sc[j]);
    }
  for (int s = 16; s; s >>= 1)
    mx = fmaxf (mx, __shfl_xor_sync (~0u, mx, s));
  if (threadIdx.x % 32 == 0)
    red[threadIdx.x / 32] = mx;
  __syncthreads ();
  mx = red[0];
  for (int w = 1; w < blockDim.x / 32; w++)
    mx = fmaxf (mx, red[w]);
  __syncthreads ();
  for (int j = threadIdx.x; j < n; j += blockDim.x)
    {
      sc[j] = expf (sc[j] - mx);
      sum += sc[j];
    }
  for (int s = 16; s; s >>= 1)
    sum += __shfl_xor_sync (~0u, sum, s);
  if (threadIdx.x % 32 == 0)
    red[threadIdx.x / 32] = sum;
  __syncthreads ();
  sum = 0;
  for (int w = 0; w < blockDim.x / 32; w++)
    sum += red[w];
  for (int x = threadIdx.x; x < d; x += blockDim.x)
    {
      float acc = 0;
      for (int j = 0; j < n; j++)
        acc += sc[j] * __half2float (__half (vb[(long) j * d + x]));
      o[row * d + x] = acc / sum;
    }
}

__global__ void
fill (__half_raw *p, long n, unsigned seed)
{
  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      unsigned x = (unsigned) i * 2654435761u ^ seed;
      x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
      float f = (x & 0xffffff) / 16777216.0f * 2.0f - 1.0f;   /* uniform in [-1, 1) */
      p[i] = __half_raw (__float2half (f != 0 ? f : 0.5f));
    }
}

/* Q, K or V as [B·H·N rows, d] with boxes of 64 columns × `rows`, 128-byte swizzle. */
static NapkinTensorMap
tensor_map (void *base, int d, int rows)
{
  static PFN_cuTensorMapEncodeTiled_v12000 encode;
  NapkinTensorMap map;
  const cuuint64_t dims[2] = { (cuuint64_t) d, (cuuint64_t) ATT_B * ATT_H * ATT_N };
  const cuuint64_t strides[1] = { (cuuint64_t) d * 2 };
  const cuuint32_t box[2] = { 64, (cuuint32_t) rows };
  const cuuint32_t elem[2] = { 1, 1 };

  if (encode == NULL)
    {
      cudaDriverEntryPointQueryResult q;
      CHECK (cudaGetDriverEntryPointByVersion ("cuTensorMapEncodeTiled", (void **) &encode, 12000, cudaEnableDefault, &q));
    }
  CUresult r = encode ((CUtensorMap *) &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, elem,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    {
      fprintf (stderr, "cuTensorMapEncodeTiled: error %d\n", (int) r);
      exit (1);
    }
  return map;
}

int
main ()
{
  const long elems = (long) ATT_B * ATT_H * ATT_N * 128;
  __half_raw *q, *k, *v, *o;
  float *ref;
  cudaEvent_t e0, e1;
  int failed = 0;
  const long checked[3] = { 0, ATT_B * ATT_H / 2 + 1, ATT_B * ATT_H - 1 };

  CHECK (cudaMalloc (&q, elems * 2));
  CHECK (cudaMalloc (&k, elems * 2));
  CHECK (cudaMalloc (&v, elems * 2));
  CHECK (cudaMalloc (&o, elems * 2));
  CHECK (cudaMalloc (&ref, elems * 4));
  CHECK (cudaEventCreate (&e0));
  CHECK (cudaEventCreate (&e1));
  CHECK (cudaFuncSetAttribute (reference, cudaFuncAttributeMaxDynamicSharedMemorySize, ATT_N * 4));
  printf ("%-26s %8s %10s %10s %9s\n", "config", "rel_err", "ms", "TFLOP/s", "regs");
  for (unsigned ci = 0; ci < sizeof configs / sizeof configs[0]; ci++)
    {
      const Config &c = configs[ci];
      const long n = (long) ATT_B * ATT_H * ATT_N * c.d;
      const double flops = 4.0 * ATT_B * ATT_H * (double) ATT_N * ATT_N * c.d;
      NapkinArgs args = { { q, k, v, o } };
      NapkinTensorMap tq = tensor_map (q, c.d, c.bq), tk = tensor_map (k, c.d, c.bkv), tv = tensor_map (v, c.d, c.bkv);
      void *params[] = { &args, &tq, &tk, &tv };
      std::vector<__half_raw> got (n);
      std::vector<float> want (n);
      std::vector<float> times;
      cudaFuncAttributes fa;
      double diff = 0, norm = 0;

      fill<<<1024, 256>>> (q, n, 1 + 3 * ci);
      fill<<<1024, 256>>> (k, n, 2 + 3 * ci);
      fill<<<1024, 256>>> (v, n, 3 + 3 * ci);
      CHECK (cudaMemset (o, 0xff, n * 2));   /* NaN */
      CHECK (cudaGetLastError ());
      for (int h = 0; h < 3; h++)
        reference<<<ATT_N, 128, ATT_N * 4>>> (q, k, v, ref, ATT_N, c.d, 1.0f / sqrtf ((float) c.d), checked[h]);
      CHECK (cudaGetLastError ());
      CHECK (cudaFuncSetAttribute (c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem));
      CHECK (cudaFuncGetAttributes (&fa, c.kernel));
      const int grid = ATT_B * ATT_H * (ATT_N / c.bq);
      CHECK (cudaLaunchKernel (c.kernel, grid, c.threads, params, c.smem, 0));
      CHECK (cudaDeviceSynchronize ());
      CHECK (cudaMemcpy (got.data (), o, n * 2, cudaMemcpyDeviceToHost));
      CHECK (cudaMemcpy (want.data (), ref, n * 4, cudaMemcpyDeviceToHost));
      for (long i = 0; i < n; i++)
        {
          const float g = __half2float (__half (got[i]));
          const long bh = i / ((long) ATT_N * c.d);

          if (std::isnan (g))
            {
              diff = INFINITY;
              break;
            }
          if (bh == checked[0] || bh == checked[1] || bh == checked[2])
            {
              diff = std::max (diff, (double) fabsf (g - want[i]));
              norm = std::max (norm, (double) fabsf (want[i]));
            }
        }
      diff /= norm;
      for (int r = 0; r < 23; r++)
        {
          float ms;
          CHECK (cudaEventRecord (e0));
          CHECK (cudaLaunchKernel (c.kernel, grid, c.threads, params, c.smem, 0));
          CHECK (cudaEventRecord (e1));
          CHECK (cudaEventSynchronize (e1));
          CHECK (cudaEventElapsedTime (&ms, e0, e1));
          if (r >= 3)
            times.push_back (ms);
        }
      CHECK (cudaGetLastError ());
      std::sort (times.begin (), times.end ());
      const double med = times[times.size () / 2];
      const bool ok = diff <= 2e-3;
      failed |= !ok;
      printf ("%-26s %8.1e %10.4f %10.1f %9d %s\n", c.name, diff, med, flops / med / 1e9, fa.numRegs, ok ? "ok" : "WRONG");
      fflush (stdout);
    }
  return failed;
}
