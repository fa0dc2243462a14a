/* Standalone check and timing of the gemm-wgmma skeleton (kernels/gemm-wgmma.cu) against
 * an fp32 reference and cuBLAS in the same process. Built by bench/gpu/wgmma-gemm-test,
 * which instantiates the template once per (tile, size) into wgmma-inst-*.cu and the
 * table wgmma-inst.h. Prints one line per instance: time, TFLOP/s, cuBLAS, ratio, error. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <vector>
#include <algorithm>
#include "wgmma-prelude.h"

typedef cudaError_t (*Launch) (NapkinArgs, const NapkinTensorMap *, const NapkinTensorMap *, const NapkinTensorMap *,
                                int, int);
struct Inst { const char *name; int bm, bn, stages, persistent; long m, n, k; Launch launch; };
#include "wgmma-inst.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf (stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString (e_)); exit (1); } } while (0)
#define CB(x) do { cublasStatus_t e_ = (x); if (e_ != CUBLAS_STATUS_SUCCESS) { fprintf (stderr, "%s:%d %s: cublas %d\n", __FILE__, __LINE__, #x, (int) e_); exit (1); } } while (0)

__global__ void fill (unsigned short *p, long n, unsigned seed)
{
  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      unsigned h = (unsigned) i * 2654435761u ^ seed;
      h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
      float f = ((h & 0xffff) / 65536.0f) * 2.0f - 1.0f;
      p[i] = (unsigned short) (__float_as_uint (f) >> 16);
    }
}

/* fp32 reference, 16×16 shared-memory tiles. */
__global__ void ref_gemm (const unsigned short *A, const unsigned short *B, float *C, int M, int N, int K)
{
  __shared__ float as[16][17], bs[16][17];
  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  float s = 0;
  for (int k0 = 0; k0 < K; k0 += 16)
    {
      as[threadIdx.y][threadIdx.x] = __uint_as_float ((unsigned) A[(long) r * K + k0 + threadIdx.x] << 16);
      bs[threadIdx.y][threadIdx.x] = __uint_as_float ((unsigned) B[(long) (k0 + threadIdx.y) * N + c] << 16);
      __syncthreads ();
      for (int k = 0; k < 16; k++)
        s += as[threadIdx.y][k] * bs[k][threadIdx.x];
      __syncthreads ();
    }
  C[(long) r * N + c] = s;
}

/* max |got − ref| / max |ref| (the runner's measure); NaN or unwritten → huge. */
__global__ void compare (const unsigned short *got, const float *ref, long n, unsigned *maxdiff, unsigned *maxref)
{
  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      float g = __uint_as_float ((unsigned) got[i] << 16), d = fabsf (g - ref[i]);
      if (isnan (g))
        d = 1e30f;
      atomicMax (maxdiff, __float_as_uint (d));
      atomicMax (maxref, __float_as_uint (fabsf (ref[i])));
    }
}

static double rel_error (const unsigned short *C, const float *R, long n)
{
  unsigned *d;
  unsigned h[2];
  CK (cudaMalloc (&d, 8));
  CK (cudaMemset (d, 0, 8));
  compare<<<1024, 256>>> (C, R, n, d, d + 1);
  CK (cudaGetLastError ());
  CK (cudaMemcpy (h, d, 8, cudaMemcpyDeviceToHost));
  CK (cudaFree (d));
  float a, b;
  memcpy (&a, &h[0], 4);
  memcpy (&b, &h[1], 4);
  return a / b;
}


static void make_map (NapkinTensorMap *map, const void *p, long inner, long outer, int box_inner, int box_outer)
{
  cuuint64_t dims[2] = { (cuuint64_t) inner, (cuuint64_t) outer };
  cuuint64_t strides[1] = { (cuuint64_t) inner * 2 };
  cuuint32_t box[2] = { (cuuint32_t) box_inner, (cuuint32_t) box_outer };
  cuuint32_t estr[2] = { 1, 1 };
  CUresult r = cuTensorMapEncodeTiled ((CUtensorMap *) map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *) p, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    {
      fprintf (stderr, "cuTensorMapEncodeTiled: %d\n", (int) r);
      exit (1);
    }
}

template <class F> static double median_ms (F f, int reps)
{
  cudaEvent_t a, b;
  std::vector<float> t;
  CK (cudaEventCreate (&a));
  CK (cudaEventCreate (&b));
  for (int i = 0; i < 3; i++)
    f ();
  CK (cudaDeviceSynchronize ());
  for (int i = 0; i < reps; i++)
    {
      float ms;
      CK (cudaEventRecord (a));
      f ();
      CK (cudaEventRecord (b));
      CK (cudaEventSynchronize (b));
      CK (cudaEventElapsedTime (&ms, a, b));
      t.push_back (ms);
    }
  std::sort (t.begin (), t.end ());
  return t[t.size () / 2];
}

int main (int argc, char **argv)
{
  int reps = argc > 1 ? atoi (argv[1]) : 20;
  cublasHandle_t h;
  CB (cublasCreate (&h));
  printf ("%-22s %-16s %9s %9s %9s %9s %7s %10s\n", "size", "kernel", "ms", "TFLOP/s", "cublasms", "cuTFLOP/s", "ratio", "rel_err");
  long cur_m = 0, cur_n = 0, cur_k = 0;
  unsigned short *A = 0, *B = 0, *C = 0, *Cb = 0;
  float *R = 0;
  double cub_ms = 0, cub_err = 0;
  for (size_t i = 0; i < sizeof insts / sizeof insts[0]; i++)
    {
      const Inst &in = insts[i];
      long M = in.m, N = in.n, K = in.k;
      double flops = 2.0 * M * N * K;
      char size[64];
      snprintf (size, sizeof size, "%ldx%ldx%ld", M, N, K);
      if (M != cur_m || N != cur_n || K != cur_k)
        {
          if (A)
            {
              cudaFree (A); cudaFree (B); cudaFree (C); cudaFree (Cb); cudaFree (R);
            }
          CK (cudaMalloc (&A, M * K * 2));
          CK (cudaMalloc (&B, K * N * 2));
          CK (cudaMalloc (&C, M * N * 2));
          CK (cudaMalloc (&Cb, M * N * 2));
          CK (cudaMalloc (&R, M * N * 4));
          fill<<<1024, 256>>> (A, M * K, 17 + (unsigned) i);
          fill<<<1024, 256>>> (B, K * N, 91 + (unsigned) i);
          ref_gemm<<<dim3 (N / 16, M / 16), dim3 (16, 16)>>> (A, B, R, (int) M, (int) N, (int) K);
          CK (cudaGetLastError ());
          CK (cudaDeviceSynchronize ());
          cur_m = M; cur_n = N; cur_k = K;
          /* cuBLAS, row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ */
          float one = 1, zero = 0;
          auto cub = [&] () {
            CB (cublasGemmEx (h, CUBLAS_OP_N, CUBLAS_OP_N, (int) N, (int) M, (int) K, &one, B, CUDA_R_16BF, (int) N, A,
                              CUDA_R_16BF, (int) K, &zero, Cb, CUDA_R_16BF, (int) N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
          };
          CK (cudaMemset (Cb, 0xff, M * N * 2));
          cub ();
          CK (cudaDeviceSynchronize ());
          cub_err = rel_error (Cb, R, M * N);
          cub_ms = median_ms (cub, reps);
          printf ("%-22s %-16s %9.3f %9.1f %9.3f %9.1f %7.3f %10.2e\n", size, "cublas", cub_ms, flops / cub_ms / 1e9,
                  cub_ms, flops / cub_ms / 1e9, 1.0, cub_err);
          fflush (stdout);
        }
      NapkinTensorMap ta, tb, tc;
      make_map (&ta, A, K, M, 64, in.bm);
      make_map (&tb, B, N, K, 64, 64);
      make_map (&tc, C, N, M, 64, 64);   /* bf16 C: 64-column × 64-row pieces */
      NapkinArgs args;
      memset (&args, 0, sizeof args);
      args.p[0] = A; args.p[1] = B; args.p[2] = C;
      int grid = (int) ((M / in.bm) * (N / in.bn)), sms = 0;
      CK (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, 0));
      if (in.persistent && grid > sms)
        grid = sms;   /* one block per SM, each looping over tiles */
      int smem = in.stages * (in.bm * 64 + 64 * in.bn) * 2 + 1024 + 2 * 8 * in.stages
                 + (in.persistent ? 2 * (in.bm == 64 ? 1 : 2) * 8192 : 0);   /* C store buffers */
      CK (cudaMemset (C, 0xff, M * N * 2));
      CK (in.launch (args, &ta, &tb, &tc, grid, smem));
      CK (cudaGetLastError ());
      cudaError_t e = cudaDeviceSynchronize ();
      if (e != cudaSuccess)
        {
          printf ("%-22s %-16s FAULT %s\n", size, in.name, cudaGetErrorString (e));
          return 1;
        }
      double err = rel_error (C, R, M * N);
      double ms = median_ms ([&] () { in.launch (args, &ta, &tb, &tc, grid, smem); }, reps);
      CK (cudaGetLastError ());
      printf ("%-22s %-16s %9.3f %9.1f %9.3f %9.1f %7.3f %10.2e%s\n", size, in.name, ms, flops / ms / 1e9, cub_ms,
              flops / cub_ms / 1e9, cub_ms / ms, err, err < 1e-2 ? "" : "  WRONG");
      fflush (stdout);
    }
  return 0;
}
