/* Included at the end of a .cu that napkin-rows-gen prints: fills the inputs with
 * seeded random values, runs the kernel once, checks it against an fp64 reference
 * computed on the GPU (‖y − ref‖∞ / ‖ref‖∞ per row, the largest), then times it with
 * events (3 warm-up launches, the median of REPS). Prints one RESULT line with the
 * model's prediction. Row i of the problem is (o, ci) = (i / H_INNER, i % H_INNER):
 * X and Y [o, c, ci] (H_INNER 1: the contiguous rows [i, c]; else the strided form,
 * the op over c), R [o, ci, c], G and B [c].
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I bench/gpu/rows-prims gen.cu */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef H_INNER
#define H_INNER 1L
#endif
#ifndef H_PREDICTED_MS
#define H_PREDICTED_MS 0.0
#endif

static __device__ double
h_ld (const void *p, int dt, long i)
{
  if (dt == 1)
    return napkin_ld ((const napkin_f16 *) p + i);
  if (dt == 2)
    return napkin_ld ((const napkin_bf16 *) p + i);
  return ((const float *) p)[i];
}

static __device__ void
h_st (void *p, int dt, long i, float v)
{
  if (dt == 1)
    napkin_st ((napkin_f16 *) p + i, v);
  else if (dt == 2)
    napkin_st ((napkin_bf16 *) p + i, v);
  else
    ((float *) p)[i] = v;
}

__global__ void
h_fill (void *p, int dt, long n, unsigned seed, float lo, float hi)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      unsigned long long z = (unsigned long long) i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;

      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      h_st (p, dt, i, lo + (hi - lo) * (float) ((z >> 40) * (1.0 / 16777216.0)));
    }
}

__device__ double
h_block (double v, bool is_max)
{
  __shared__ double s[256];

  __syncthreads ();
  s[threadIdx.x] = v;
  __syncthreads ();
  for (int o = 128; o > 0; o >>= 1)
    {
      if (threadIdx.x < o)
        s[threadIdx.x] = is_max ? fmax (s[threadIdx.x], s[threadIdx.x + o]) : s[threadIdx.x] + s[threadIdx.x + o];
      __syncthreads ();
    }
  return s[0];
}

/* One block of 256 threads per row. */
__global__ void
h_check (const void *X, int xdt, const void *R, int rdt, const void *G, int gdt, const void *B, int bdt,
         const void *Y, int ydt, double *err, double *mag)
{
  const long row = blockIdx.x;
  const long C = H_COLS, o = row / H_INNER, ci = row % H_INNER;
  auto at = [&] (long c) -> long { return (o * C + c) * H_INNER + ci; };
  auto xv = [&] (long c) -> double
    {
      double v = h_ld (X, xdt, at (c));

      if (R != nullptr)
        v += h_ld (R, rdt, at (c));
      return v * H_SCALE;
    };
  double e = 0, m = 0, a = 0, b = 0;

  if (H_OP >= 3)
    {
      for (long c = threadIdx.x; c < C; c += 256)
        a = H_OP == 4 ? (c == threadIdx.x ? xv (c) : fmax (a, xv (c))) : a + xv (c);
      a = h_block (threadIdx.x < C ? a : (H_OP == 4 ? -INFINITY : 0.0), H_OP == 4);
      if (H_OP == 5)
        a /= C;
      if (threadIdx.x == 0)
        {
          double y = h_ld (Y, ydt, row);

          err[row] = std::isnan (y) ? INFINITY : fabs (y - a);
          mag[row] = fabs (a);
        }
      return;
    }
  if (H_OP == 0)
    {
      a = -INFINITY;
      for (long c = threadIdx.x; c < C; c += 256)
        a = fmax (a, xv (c));
      a = h_block (a, true);
      for (long c = threadIdx.x; c < C; c += 256)
        b += exp (xv (c) - a);
      b = h_block (b, false);
    }
  else
    {
      for (long c = threadIdx.x; c < C; c += 256)
        a += H_OP == 1 ? xv (c) : xv (c) * xv (c);
      a = h_block (a, false) / C;
      if (H_OP == 1)
        {
          for (long c = threadIdx.x; c < C; c += 256)
            b += (xv (c) - a) * (xv (c) - a);
          b = 1.0 / sqrt (h_block (b, false) / C + H_EPS);
        }
      else
        b = 1.0 / sqrt (a + H_EPS);
    }
  for (long c = threadIdx.x; c < C; c += 256)
    {
      double r = H_OP == 0 ? exp (xv (c) - a) / b : H_OP == 1 ? (xv (c) - a) * b : xv (c) * b;
      double y = h_ld (Y, ydt, at (c));

      if (G != nullptr)
        r *= h_ld (G, gdt, c);
      if (B != nullptr)
        r += h_ld (B, bdt, c);
      e = std::isnan (y) ? INFINITY : fmax (e, fabs (y - r));
      m = fmax (m, fabs (r));
    }
  e = h_block (e, true);
  m = h_block (m, true);
  if (threadIdx.x == 0)
    {
      err[row] = e;
      mag[row] = m;
    }
}

#define H_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) {                                   \
  printf ("RESULT status=cuda-error what=\"%s: %s\"\n", #call, cudaGetErrorString (e_)); return 1; } } while (0)

int
main (int argc, char **argv)
{
  const int reps = argc > 1 ? atoi (argv[1]) : 30;
  void *ptr[H_NSLOTS] = { nullptr };
  const void *x = nullptr, *r = nullptr, *g = nullptr, *bb = nullptr, *y = nullptr;
  int xdt = 0, rdt = 0, gdt = 0, bdt = 0, ydt = 0;
  NapkinArgs args = {};
  double bytes = 0;

  for (int s = 0; s < H_NSLOTS; s++)
    {
      const HSlot &sl = h_slots[s];
      const size_t size = (size_t) sl.n * (sl.dtype ? 2 : 4);

      H_CHECK (cudaMalloc (&ptr[s], size));
      args.p[s] = ptr[s];
      bytes += size;
      switch (sl.role)
        {
        case 'X': h_fill<<<1024, 256>>> (ptr[s], sl.dtype, sl.n, 1, H_OP == 1 ? -3.0f : -4.0f, H_OP == 1 ? 5.0f : 4.0f);
          x = ptr[s]; xdt = sl.dtype; break;
        case 'R': h_fill<<<1024, 256>>> (ptr[s], sl.dtype, sl.n, 2, -1.0f, 1.0f); r = ptr[s]; rdt = sl.dtype; break;
        case 'G': h_fill<<<1024, 256>>> (ptr[s], sl.dtype, sl.n, 3, 0.5f, 1.5f); g = ptr[s]; gdt = sl.dtype; break;
        case 'B': h_fill<<<1024, 256>>> (ptr[s], sl.dtype, sl.n, 4, -0.5f, 0.5f); bb = ptr[s]; bdt = sl.dtype; break;
        case 'Y': H_CHECK (cudaMemset (ptr[s], 0xff, size)); y = ptr[s]; ydt = sl.dtype; break;
        default: H_CHECK (cudaMemset (ptr[s], 0, size)); break;
        }
    }
  if (H_DYN_SMEM > 48 * 1024)
    H_CHECK (cudaFuncSetAttribute (H_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) H_DYN_SMEM));
  H_KERNEL<<<H_GRID, H_THREADS, H_DYN_SMEM>>> (args);
  H_CHECK (cudaGetLastError ());
  H_CHECK (cudaDeviceSynchronize ());

  double *err, *mag;
  H_CHECK (cudaMalloc (&err, sizeof (double) * H_ROWS));
  H_CHECK (cudaMalloc (&mag, sizeof (double) * H_ROWS));
  h_check<<<H_ROWS, 256>>> (x, xdt, r, rdt, g, gdt, bb, bdt, y, ydt, err, mag);
  H_CHECK (cudaDeviceSynchronize ());
  std::vector<double> he (H_ROWS), hm (H_ROWS);
  H_CHECK (cudaMemcpy (he.data (), err, sizeof (double) * H_ROWS, cudaMemcpyDeviceToHost));
  H_CHECK (cudaMemcpy (hm.data (), mag, sizeof (double) * H_ROWS, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (long i = 0; i < H_ROWS; i++)
    {
      const double rel = hm[i] > 0 ? he[i] / hm[i] : he[i];

      worst = std::isnan (rel) || rel > worst ? (std::isnan (rel) ? INFINITY : rel) : worst;
    }

  cudaEvent_t t0, t1;
  std::vector<float> ms;
  H_CHECK (cudaEventCreate (&t0));
  H_CHECK (cudaEventCreate (&t1));
  for (int i = 0; i < 3; i++)
    H_KERNEL<<<H_GRID, H_THREADS, H_DYN_SMEM>>> (args);
  for (int i = 0; i < reps; i++)
    {
      float t;

      cudaEventRecord (t0);
      H_KERNEL<<<H_GRID, H_THREADS, H_DYN_SMEM>>> (args);
      cudaEventRecord (t1);
      H_CHECK (cudaEventSynchronize (t1));
      cudaEventElapsedTime (&t, t0, t1);
      ms.push_back (t);
    }
  std::sort (ms.begin (), ms.end ());
  const double med = ms[ms.size () / 2];
  printf ("RESULT status=ok ms=%.5f gbps=%.1f err=%.3e grid=%d threads=%d smem=%ld predicted=%.5f\n", med,
          bytes / med / 1e6, worst, (int) H_GRID, (int) H_THREADS, (long) H_DYN_SMEM, (double) H_PREDICTED_MS);
  return 0;
}
