// SPDX-License-Identifier: GPL-3.0-or-later
// Microbenchmarks for the figures of data/archs/*.json that datasheets do not give
// (docs/model.md §1): L2 and device-memory read bandwidth, shared-memory bandwidth
// per SM per clock, and exp (special-function) results per SM per clock.
// Build: nvcc -O3 -arch=sm_90 -o perf-bench-gpu bench/perf-bench-gpu.cu
// Prints one JSON object. Median of 20 timed runs after a warm-up.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf (stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString (e)); exit (1); } } while (0)

__global__ void
read_kernel (const float4 *__restrict__ buf, size_t n, int passes, float *out)
{
  float4 acc = make_float4 (0, 0, 0, 0);
  size_t stride = (size_t) gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++)
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
      {
        float4 v = __ldcg (&buf[i]);   // cache in L2 only, not L1
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
      }
  if (acc.x + acc.y + acc.z + acc.w == 1234.5f)
    out[0] = acc.x;
}

// Four independent 16-byte loads in flight per thread per iteration.
__global__ void
read4_kernel (const float4 *__restrict__ buf, size_t n, int passes, float *out)
{
  float4 acc[4] = {};
  size_t stride = (size_t) gridDim.x * blockDim.x;
  size_t quarter = n / 4;   // four quarters of the buffer, one load from each
  for (int p = 0; p < passes; p++)
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < quarter; i += stride)
      {
        float4 v[4];
        for (int k = 0; k < 4; k++)
          v[k] = __ldcg (&buf[i + k * quarter]);
        for (int k = 0; k < 4; k++)
          {
            acc[k].x += v[k].x; acc[k].y += v[k].y; acc[k].z += v[k].z; acc[k].w += v[k].w;
          }
      }
  float s = 0;
  for (int k = 0; k < 4; k++)
    s += acc[k].x + acc[k].y + acc[k].z + acc[k].w;
  if (s == 1234.5f)
    out[0] = s;
}

__global__ void
smem_kernel (int iters, float *out)
{
  extern __shared__ float4 tile[];   // 32 KiB
  const int n = 32 * 1024 / 16;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    tile[i] = make_float4 (i, i + 1, i + 2, i + 3);
  __syncthreads ();
  float4 acc = make_float4 (0, 0, 0, 0);
  int idx = threadIdx.x;
  for (int it = 0; it < iters; it++)
    {
      float4 v = tile[idx];   // 128-bit, conflict-free: consecutive lanes, consecutive 16 B
      acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
      idx = (idx + blockDim.x) & (n - 1);
    }
  if (acc.x + acc.y + acc.z + acc.w == 1234.5f)
    out[0] = acc.x;
}

__global__ void
exp_kernel (int iters, float *out)
{
  // eight independent chains per thread so the SFU, not latency, limits
  float x[8];
  for (int k = 0; k < 8; k++)
    x[k] = 1e-3f * (threadIdx.x + k);
  for (int it = 0; it < iters; it++)
    for (int k = 0; k < 8; k++)
      {
        float y;
        asm volatile ("ex2.approx.ftz.f32 %0, %1;" : "=f" (y) : "f" (x[k]));
        x[k] = y * -1e-3f;
      }
  float s = 0;
  for (int k = 0; k < 8; k++)
    s += x[k];
  if (s == 1234.5f)
    out[0] = s;
}

template <typename F>
static float
median_ms (F launch)
{
  cudaEvent_t a, b;
  std::vector<float> t;
  CHECK (cudaEventCreate (&a));
  CHECK (cudaEventCreate (&b));
  launch ();
  CHECK (cudaDeviceSynchronize ());
  for (int i = 0; i < 20; i++)
    {
      float ms;
      CHECK (cudaEventRecord (a));
      launch ();
      CHECK (cudaEventRecord (b));
      CHECK (cudaEventSynchronize (b));
      CHECK (cudaEventElapsedTime (&ms, a, b));
      t.push_back (ms);
    }
  std::sort (t.begin (), t.end ());
  return t[t.size () / 2];
}

int
main (void)
{
  cudaDeviceProp prop;
  int clock_khz = 0;
  float *out;
  CHECK (cudaGetDeviceProperties (&prop, 0));
  CHECK (cudaDeviceGetAttribute (&clock_khz, cudaDevAttrClockRate, 0));
  CHECK (cudaMalloc (&out, 4));
  int sms = prop.multiProcessorCount;

  // L2: 16 MiB (a third of the H100's L2), read 50 times
  size_t l2_bytes = 16u << 20, hbm_bytes = (size_t) 4 << 30;
  float4 *buf;
  CHECK (cudaMalloc (&buf, hbm_bytes));
  CHECK (cudaMemset (buf, 0, hbm_bytes));
  int passes = 50;
  float l2_ms = median_ms ([&] { read_kernel<<<sms * 8, 512>>> (buf, l2_bytes / 16, passes, out); });
  float hbm_ms = median_ms ([&] { read_kernel<<<sms * 8, 512>>> (buf, hbm_bytes / 16, 1, out); });
  // the best of a few shapes and working-set sizes, since L2 bandwidth needs many loads in flight
  double l2_best = (double) l2_bytes * passes / (l2_ms * 1e-3);
  for (size_t ws : { (size_t) 8 << 20, (size_t) 16 << 20, (size_t) 24 << 20 })
    for (int blocks : { sms * 4, sms * 8, sms * 16 })
      {
        float ms = median_ms ([&] { read4_kernel<<<blocks, 512>>> (buf, ws / 16, passes, out); });
        double bw = (double) ws * passes / (ms * 1e-3);
        fprintf (stderr, "l2 ws=%zu MiB blocks=%d: %.3g B/s\n", ws >> 20, blocks, bw);
        if (bw > l2_best)
          l2_best = bw;
      }

  int iters = 1 << 16;
  CHECK (cudaFuncSetAttribute (smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 32 * 1024));
  float smem_ms = median_ms ([&] { smem_kernel<<<sms * 4, 512, 32 * 1024>>> (iters, out); });
  double smem_bytes = (double) sms * 4 * 512 * iters * 16;

  int exp_iters = 1 << 14;
  float exp_ms = median_ms ([&] { exp_kernel<<<sms * 4, 512>>> (exp_iters, out); });
  double exps = (double) sms * 4 * 512 * exp_iters * 8;
  CHECK (cudaGetLastError ());

  double clock_hz = clock_khz * 1e3;
  printf ("{\"device\": \"%s\", \"sms\": %d, \"clock_mhz_attr\": %.0f, \"l2_bytes\": %d,\n", prop.name, sms,
          clock_hz / 1e6, prop.l2CacheSize);
  printf (" \"l2_read_bytes_per_s\": %.4g, \"hbm_read_bytes_per_s\": %.4g,\n",
          (double) l2_bytes * passes / (l2_ms * 1e-3), (double) hbm_bytes / (hbm_ms * 1e-3));
  printf (" \"smem_bytes_per_s\": %.4g, \"smem_bytes_per_sm_per_clock\": %.1f,\n", smem_bytes / (smem_ms * 1e-3),
          smem_bytes / (smem_ms * 1e-3) / sms / clock_hz);
  printf (" \"exp_per_s\": %.4g, \"exp_per_sm_per_clock\": %.2f,\n", exps / (exp_ms * 1e-3),
          exps / (exp_ms * 1e-3) / sms / clock_hz);
  printf (" \"l2_read_bytes_per_clock\": %.0f, \"l2_best_read_bytes_per_s\": %.4g, \"l2_best_bytes_per_clock\": %.0f}\n",
          (double) l2_bytes * passes / (l2_ms * 1e-3) / clock_hz, l2_best, l2_best / clock_hz);
  return 0;
}
