/* What TMA does with the rows of a C whose rows are not 16 bytes apart (docs/perf-notes.md,
 * "Session 33": the GEMM's staged epilogue writes such a C at about 1 TB/s). A tensor map
 * needs its row stride a multiple of 16 bytes, but a one-dimensional map over all of C
 * needs only its base 16-byte aligned, and a tile's row is contiguous there. Questions
 * this program answers on an sm_90 GPU, before the epilogue is built on it:
 *
 *   correctness (one block, 64 rows of 64 columns at column 67 of rows 1946 wide):
 *     swz    rows staged 128-byte swizzled at r·128 in a 1024-byte aligned buffer (as the
 *            GEMM's TMA-store epilogue stages them), stored by a map with the 128-byte
 *            swizzle, one 64-element box a row: is the XOR taken from the shared address
 *            (right) or from the row within the box (wrong data)?
 *     plain  rows unswizzled at r·128, a map without swizzle
 *     p16    rows unswizzled at r·144 (16-byte aligned, not 128)
 *   rate (44 × 2048 × 1946 fp16, tiles of 128 × 256, the full columns of tiles only):
 *     row1d  every row of a tile by the 1-D map (4 swizzled boxes of 64)
 *     row1d-plain  the same from rows unswizzled at r·128 by a map without swizzle
 *     tile2d the same tiles into a C with rows 1984 wide (16-byte aligned) by a 2-D map,
 *            64 × 64 boxes: what the aligned GEMM's epilogue reaches
 *
 *   nvcc -arch=sm_90a -O2 -o /tmp/tma-row-store bench/gpu/tma-row-store.cu -lcuda
 *   for c in swz plain p16 row1d row1d-plain tile2d; do /tmp/tma-row-store $c; done
 *                                 (one line a case; exit 1 if a check fails) */
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess)                                                                         \
      {                                                                                            \
        printf ("%s: %s\n", #x, cudaGetErrorString (e_));                                          \
        exit (2);                                                                                  \
      }                                                                                            \
  } while (0)

static const int N = 1946, NP = 1984, ROWS = 64, COL0 = 67;

__device__ __forceinline__ unsigned
smem_u32 (const void *p)
{
  return (unsigned) __cvta_generic_to_shared (p);
}

__device__ __forceinline__ void
store_1d (const CUtensorMap *map, long c0, unsigned src)
{
  asm volatile ("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%1}], [%2];"
                :: "l" (map), "r" ((int) c0), "r" (src) : "memory");
}

__device__ __forceinline__ void
store_2d (const CUtensorMap *map, int c0, int c1, unsigned src)
{
  asm volatile ("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                :: "l" (map), "r" (c0), "r" (c1), "r" (src) : "memory");
}

/* element c of row r as the GEMM's epilogue stages it: 16-byte chunk (c/8) ^ (r%8) */
__device__ __forceinline__ int
swz_index (int r, int c)
{
  return r * 64 + ((((c >> 3) ^ (r & 7)) & 7) << 3) + (c & 7);
}

__device__ __forceinline__ __half
value (long r, int c)
{
  return __float2half ((float) ((r * 131 + c * 7) % 1024) - 512.0f);
}

/* mode 0: swizzled rows at r·128; 1: plain rows at r·128; 2: plain rows at r·144 */
/* dynamic shared memory is only 16-byte aligned: the swizzle repeats every 1024 bytes */
__device__ __forceinline__ __half *
aligned_1024 (unsigned char *raw)
{
  return (__half *) (raw + ((1024 - (smem_u32 (raw) & 1023)) & 1023));
}

__global__ void
rows_kernel (const __grid_constant__ CUtensorMap map, int mode)
{
  extern __shared__ __align__ (16) unsigned char smem[];
  __half *s = aligned_1024 (smem);
  const int pitch = mode == 2 ? 72 : 64;   /* halves */

  for (int i = threadIdx.x; i < ROWS * 64; i += blockDim.x)
    {
      const int r = i / 64, c = i % 64;

      s[mode == 0 ? swz_index (r, c) : r * pitch + c] = value (r, c);
    }
  asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads ();
  if (threadIdx.x < 32)
    for (int r = threadIdx.x; r < ROWS; r += 32)
      store_1d (&map, (long) r * N + COL0, smem_u32 (s + r * pitch));
  asm volatile ("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile ("cp.async.bulk.wait_group 0;" ::: "memory");
}

/* The rate: every full tile of 128 × 256, staged once in 64 KB (swizzled pieces of 64 rows
 * × 64 columns, as the epilogue stages them), stored by each block in turn. */
__global__ void
rate_kernel (const __grid_constant__ CUtensorMap map, int two_d, int batch, int m, int tiles_n)
{
  extern __shared__ __align__ (16) unsigned char smem[];
  __half *s = aligned_1024 (smem);
  const int tiles_m = (m + 127) / 128;
  const long tiles = (long) batch * tiles_m * tiles_n;

  for (int i = threadIdx.x; i < 128 * 256; i += blockDim.x)
    {
      const int piece = i / 4096, r = (i % 4096) / 64, c = i % 64;

      s[piece * 4096 + swz_index (r, c)] = __float2half (1.0f);
    }
  asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads ();
  if (threadIdx.x >= 32)
    return;
  for (long t = blockIdx.x; t < tiles; t += gridDim.x)
    {
      const long b = t / ((long) tiles_m * tiles_n), rest = t % ((long) tiles_m * tiles_n);
      const int m0 = (int) (rest / tiles_n) * 128, n0 = (int) (rest % tiles_n) * 256;

      if (two_d)
        {
          if (threadIdx.x < 8)
            {
              const int piece = threadIdx.x;   /* 2 row halves × 4 column pieces */

              store_2d (&map, n0 + (piece % 4) * 64, (int) (b * m) + m0 + (piece / 4) * 64,
                        smem_u32 (s + piece * 4096));
            }
        }
      else
        for (int r = threadIdx.x; r < 128; r += 32)
          if (m0 + r < m)
            for (int j = 0; j < 4; j++)
              store_1d (&map, ((b * m) + m0 + r) * (long) N + n0 + j * 64,
                        smem_u32 (s + ((r / 64) * 4 + j) * 4096 + (r % 64) * 64));
      asm volatile ("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile ("cp.async.bulk.wait_group.read 1;" ::: "memory");
    }
  asm volatile ("cp.async.bulk.wait_group 0;" ::: "memory");
}

static CUtensorMap
map_1d (void *base, unsigned long long elements, unsigned box, CUtensorMapSwizzle swizzle)
{
  CUtensorMap map;
  cuuint64_t dims[1] = { elements }, strides[1] = { 0 };
  cuuint32_t boxes[1] = { box }, estrides[1] = { 1 };
  CUresult r = cuTensorMapEncodeTiled (&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 1, base, dims, strides, boxes, estrides,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    {
      printf ("cuTensorMapEncodeTiled (1-D, box %u, swizzle %d): error %d\n", box, (int) swizzle, (int) r);
      exit (2);
    }
  return map;
}

static int
check_rows (const char *name, int mode)
{
  const size_t n = (size_t) ROWS * N;
  __half *d, *h = (__half *) malloc (n * sizeof (__half));
  int bad = 0;

  CHECK (cudaMalloc (&d, n * sizeof (__half)));
  CHECK (cudaMemset (d, 0xff, n * sizeof (__half)));
  CUtensorMap map = map_1d (d, n, 64, mode == 0 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE);
  CHECK (cudaFuncSetAttribute (rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 16384 + 1024));
  rows_kernel<<<1, 128, 16384 + 1024>>> (map, mode);
  cudaError_t e = cudaDeviceSynchronize ();
  if (e != cudaSuccess)
    {
      printf ("%-6s launch failed: %s\n", name, cudaGetErrorString (e));
      return 1;
    }
  CHECK (cudaMemcpy (h, d, n * sizeof (__half), cudaMemcpyDeviceToHost));
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < N; c++)
      {
        unsigned short got;
        memcpy (&got, &h[(size_t) r * N + c], 2);
        if (c >= COL0 && c < COL0 + 64)
          {
            const float want = (float) ((r * 131 + (c - COL0) * 7) % 1024) - 512.0f;
            bad += __half2float (h[(size_t) r * N + c]) != want;
          }
        else
          bad += got != 0xffff;
      }
  printf ("%-6s %s (%d wrong elements of %zu)\n", name, bad ? "WRONG" : "ok", bad, n);
  CHECK (cudaFree (d));
  free (h);
  return bad != 0;
}

static void
rate (const char *name, int two_d, CUtensorMapSwizzle swizzle_1d)
{
  const int batch = 44, m = 2048, tiles_n = N / 256, ld = two_d ? NP : N;
  const size_t n = (size_t) batch * m * ld;
  __half *d;
  CUtensorMap map;
  int sms;
  cudaEvent_t a, b;
  float ms, best = 1e9f;

  CHECK (cudaMalloc (&d, n * sizeof (__half)));
  if (two_d)
    {
      cuuint64_t dims[2] = { (cuuint64_t) NP, (cuuint64_t) batch * m }, strides[1] = { (cuuint64_t) NP * 2 };
      cuuint32_t boxes[2] = { 64, 64 }, estrides[2] = { 1, 1 };
      if (cuTensorMapEncodeTiled (&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, d, dims, strides, boxes, estrides,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        {
          printf ("%s: cuTensorMapEncodeTiled failed\n", name);
          exit (2);
        }
    }
  else
    map = map_1d (d, n, 64, swizzle_1d);
  CHECK (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK (cudaFuncSetAttribute (rate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536 + 1024));
  CHECK (cudaEventCreate (&a));
  CHECK (cudaEventCreate (&b));
  for (int i = 0; i < 12; i++)
    {
      CHECK (cudaEventRecord (a));
      rate_kernel<<<2 * sms, 128, 65536 + 1024>>> (map, two_d, batch, m, tiles_n);
      CHECK (cudaEventRecord (b));
      CHECK (cudaEventSynchronize (b));
      CHECK (cudaEventElapsedTime (&ms, a, b));
      if (i >= 2 && ms < best)
        best = ms;
    }
  CHECK (cudaGetLastError ());
  const double bytes = (double) batch * m * tiles_n * 256 * 2;
  printf ("%-6s %.4f ms for %.0f MB of full tiles: %.2f TB/s\n", name, best, bytes / 1e6, bytes / best / 1e9);
  CHECK (cudaFree (d));
}

/* one case a process: a TMA fault poisons the context (session 34: "swz" trapped with an
 * illegal instruction, the swizzled one-row boxes from rows only 128-byte aligned) */
int
main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";

  CHECK (cudaFree (0));
  if (!strcmp (c, "swz"))
    return check_rows (c, 0);
  if (!strcmp (c, "plain"))
    return check_rows (c, 1);
  if (!strcmp (c, "p16"))
    return check_rows (c, 2);
  if (!strcmp (c, "row1d"))
    rate (c, 0, CU_TENSOR_MAP_SWIZZLE_128B);
  else if (!strcmp (c, "row1d-plain"))
    rate (c, 0, CU_TENSOR_MAP_SWIZZLE_NONE);
  else if (!strcmp (c, "tile2d"))
    rate (c, 1, CU_TENSOR_MAP_SWIZZLE_NONE);
  else
    {
      printf ("usage: %s swz|plain|p16|row1d|row1d-plain|tile2d\n", argv[0]);
      return 2;
    }
  return 0;
}
