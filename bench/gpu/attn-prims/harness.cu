/* The GPU side of bench/gpu/attn-prims/check: one attention problem as printed by the
 * generator (attn-prims SPEC > NAME.cuh, included as NP_PROBLEM) — seeded Q, K, V in the
 * diagram's layout, O poisoned, the plan's kernels launched with their tensor maps, the
 * output compared with an fp32 attention computed on the GPU for a sample of query rows
 * (max |O − ref| / max |ref|, and every element of O must be finite), then timed with
 * events (median of the repeats). Score operands (a bias B, keep flags M: docs/plan.md,
 * "Score operands") are filled as attn-prims' spec says and enter the reference as the
 * diagram has them (α·Q·Kᵀ + B, or α·(Q·Kᵀ + B); −∞ where a flag is 0). One line:
 *   NAME ok|FAIL rel_err ms TFLOP/s pred_ms kernels
 * where TFLOP/s counts 4·d flops for every (query, key) pair the causal or window mask
 * leaves (score operands hide none in the count) and pred_ms is the model's time ("-"
 * where the spec's mask is set on the plan, outside the diagram the model prices). */
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define NP_CHECK(call)                                                                                   \
  do                                                                                                     \
    {                                                                                                    \
      cudaError_t e_ = (call);                                                                           \
      if (e_ != cudaSuccess)                                                                             \
        {                                                                                                \
          fprintf (stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString (e_));       \
          exit (1);                                                                                      \
        }                                                                                                \
    }                                                                                                    \
  while (0)

struct NpMap
{
  int slot, dtype;
  unsigned long long inner, outer;
  unsigned box_inner, box_outer, swizzle;
  unsigned long long ld, batch, batch_stride, offset;
};

#include NP_PROBLEM

/* element types as the generator writes them: 0 fp32, 1 fp16, 2 bf16, 3 e4m3, 5 int8 */
static size_t
np_esize (int t)
{
  return t == 0 ? 4 : t == 3 || t == 5 ? 1 : 2;
}

static __device__ float
np_load (const void *p, long i, int t)
{
  switch (t)
    {
    case 1: return __half2float (((const __half *) p)[i]);
    case 2: return __bfloat162float (((const __nv_bfloat16 *) p)[i]);
    case 3:
      {
        __nv_fp8_e4m3 v;
        v.__x = ((const unsigned char *) p)[i];
        return (float) v;
      }
    case 5: return (float) ((const signed char *) p)[i];
    default: return ((const float *) p)[i];
    }
}

static __device__ void
np_store (void *p, long i, int t, float v)
{
  switch (t)
    {
    case 1: ((__half *) p)[i] = __float2half (v); break;
    case 2: ((__nv_bfloat16 *) p)[i] = __float2bfloat16 (v); break;
    case 3: ((unsigned char *) p)[i] = __nv_fp8_e4m3 (v).__x; break;
    case 5: ((signed char *) p)[i] = (signed char) v; break;
    default: ((float *) p)[i] = v; break;
    }
}

/* uniform in [-amp, amp), from a hash of (seed, i) */
__global__ void
np_fill (void *p, long n, int t, unsigned seed, float amp)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      unsigned x = (unsigned) i * 2654435761u ^ seed * 40503u ^ (unsigned) (i >> 32) * 97u;

      x ^= x >> 15;
      x *= 2246822519u;
      x ^= x >> 13;
      x *= 3266489917u;
      x ^= x >> 16;
      np_store (p, i, t, amp * ((float) (x & 0xffffff) / 8388608.0f - 1.0f));
    }
}

/* The keys sequence b keeps under a padding fill: a length per sequence, none for the
 * second of three or more (a row the kernel must give zeros, not NaN). */
static __host__ __device__ long
np_len (long b)
{
  return b == 1 && NP_B > 2 ? 0 : NP_NKV - (b * 977) % (NP_NKV / 2 + 1);
}

/* A score operand's element i: its coordinates along the score axes (b, h, g, q, k) from
 * its dimensions, then a bias uniform in [−2, 2) (−∞ past the length under padding) or a
 * flag (1 in 8 hidden at random, the padding's length, or the lower triangle). */
__global__ void
np_fill_operand (void *p, long n, int t, int keep, int fill, int rank, const long *dims, const int *which)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    {
      long c[5] = { 0, 0, 0, 0, 0 }, r = i;
      unsigned x = (unsigned) i * 2654435761u ^ (keep ? 911u : 57u);
      float v;

      for (int a = rank - 1; a >= 0; a--)
        {
          c[which[a]] = r % dims[a];
          r /= dims[a];
        }
      x ^= x >> 15;
      x *= 2246822519u;
      x ^= x >> 13;
      if (keep)
        v = fill == 1 ? (c[4] < np_len (c[0])) : fill == 2 ? (c[4] <= c[3] + NP_NKV - NP_NQ) : ((x >> 8) % 8 != 0);
      else
        v = fill == 1 && c[4] >= np_len (c[0]) ? -INFINITY : 2.0f * ((float) (x & 0xffffff) / 8388608.0f - 1.0f);
      np_store (p, i, t, v);
    }
}

/* offsets in the diagram's layouts (tests/common/napkin-test-attention.c) */
static __host__ __device__ long
np_q_off (long b, long h, long q)
{
  return (NP_BSHD ? ((b * NP_NQ + q) * NP_H + h) : ((b * NP_H + h) * NP_NQ + q)) * NP_D;
}

static __host__ __device__ long
np_k_off (long b, long hk, long k)
{
  return (NP_BSHD ? ((b * NP_NKV + k) * NP_HK + hk) : ((b * NP_HK + hk) * NP_NKV + k)) * NP_D;
}

static __host__ __device__ void
np_visible (long q, long *lo, long *hi)
{
  *lo = 0;
  *hi = NP_NKV;
  if (NP_MASK_LO)
    *lo = q + NP_OFFSET - NP_LEFT > 0 ? q + NP_OFFSET - NP_LEFT : 0;
  if (NP_MASK_HI)
    *hi = q + NP_OFFSET + NP_RIGHT + 1 < NP_NKV ? q + NP_OFFSET + NP_RIGHT + 1 : NP_NKV;
}

/* The score of key j for query row (b, h, q): α·Q·Kᵀ with the score operands as the
 * diagram applies them. */
static __device__ float
np_score (float dot, const void *B, const void *M, long b, long h, long q, long j)
{
  const long hk = h / (NP_H / NP_HK), g = h % (NP_H / NP_HK);
  float s;

  if (NP_BIAS)
    {
      const float x = np_load (B, b * NP_BIAS_S0 + hk * NP_BIAS_S1 + g * NP_BIAS_S2 + q * NP_BIAS_S3 + j * NP_BIAS_S4,
                               NP_BIAS_T);

      s = NP_BIAS_FIRST ? (float) NP_ALPHA * (dot + x) : (float) NP_ALPHA * dot + x;
    }
  else
    s = dot * (float) NP_ALPHA;
  if (NP_KEEP && np_load (M, b * NP_KEEP_S0 + hk * NP_KEEP_S1 + g * NP_KEEP_S2 + q * NP_KEEP_S3 + j * NP_KEEP_S4, 5)
                   == 0.0f)
    s = -INFINITY;
  return s;
}

/* fp32 attention of the sampled rows (b, h, q): one block a row, scores in `s`. */
__global__ void __launch_bounds__ (256)
np_reference (const void *Q, const void *K, const void *V, const void *B, const void *M, const long *rows, float *s,
              float *ref)
{
  __shared__ float q[256], red[256];
  const long r = blockIdx.x, b = rows[3 * r], h = rows[3 * r + 1], qi = rows[3 * r + 2], hk = h / (NP_H / NP_HK);
  float *sr = s + r * NP_NKV;
  const int t = threadIdx.x;
  long lo, hi;
  float mx = -INFINITY, sum = 0.0f;

  np_visible (qi, &lo, &hi);
  for (int d = t; d < NP_D; d += 256)
    q[d] = np_load (Q, np_q_off (b, h, qi) + d, NP_QK);
  __syncthreads ();
  for (long j = t; j < NP_NKV; j += 256)
    {
      float acc = 0.0f;

      if (j >= lo && j < hi)
        {
          for (int d = 0; d < NP_D; d++)
            acc += q[d] * np_load (K, np_k_off (b, hk, j) + d, NP_QK);
          acc = np_score (acc, B, M, b, h, qi, j);
        }
      else
        acc = -INFINITY;
      sr[j] = acc;
      mx = fmaxf (mx, acc);
    }
  red[t] = mx;
  __syncthreads ();
  for (int w = 128; w > 0; w >>= 1)
    {
      if (t < w)
        red[t] = fmaxf (red[t], red[t + w]);
      __syncthreads ();
    }
  mx = red[0];
  __syncthreads ();
  for (long j = t; j < NP_NKV; j += 256)
    {
      float p = sr[j] == -INFINITY ? 0.0f : expf (sr[j] - mx);

      sr[j] = p;
      sum += p;
    }
  red[t] = sum;
  __syncthreads ();
  for (int w = 128; w > 0; w >>= 1)
    {
      if (t < w)
        red[t] += red[t + w];
      __syncthreads ();
    }
  sum = red[0];
  for (int d = t; d < NP_D; d += 256)
    {
      float acc = 0.0f;

      for (long j = lo; j < hi; j++)
        acc += sr[j] * np_load (V, np_k_off (b, hk, j) + d, NP_V);
      ref[r * NP_D + d] = sum > 0.0f ? acc / sum : 0.0f;
    }
}

__global__ void
np_gather (const void *O, const long *rows, long n, float *out)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n * NP_D; i += (long) gridDim.x * blockDim.x)
    {
      const long r = i / NP_D, d = i % NP_D;

      out[i] = np_load (O, np_q_off (rows[3 * r], rows[3 * r + 1], rows[3 * r + 2]) + d, NP_O);
    }
}

__global__ void
np_count_bad (const void *O, long n, unsigned long long *bad)
{
  for (long i = (long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x)
    if (!isfinite (np_load (O, i, NP_O)))
      atomicAdd (bad, 1ull);
}

typedef CUresult (*NpEncode) (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static void
np_encode (NapkinTensorMap *out, const NpMap *m, void *const *ptrs)
{
  static NpEncode encode;
  cudaDriverEntryPointQueryResult q;

  if (encode == NULL)
#if CUDART_VERSION >= 12050
    NP_CHECK (cudaGetDriverEntryPointByVersion ("cuTensorMapEncodeTiled", (void **) &encode, 12000, cudaEnableDefault,
                                                &q));
#else
    NP_CHECK (cudaGetDriverEntryPoint ("cuTensorMapEncodeTiled", (void **) &encode, cudaEnableDefault, &q));
#endif
  {
    const size_t es = np_esize (m->dtype);
    cuuint64_t dims[3] = { m->inner, m->outer, m->batch }, strides[2] = { m->ld * es, m->batch_stride * es };
    cuuint32_t box[3] = { m->box_inner, m->box_outer, 1 }, estr[3] = { 1, 1, 1 };
    CUtensorMapDataType t = m->dtype == 1 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                            : m->dtype == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                            : es == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    CUtensorMapSwizzle sw = m->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : m->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                            : m->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUresult r = encode ((CUtensorMap *) out, t, m->batch > 1 ? 3 : 2, (char *) ptrs[m->slot] + m->offset, dims,
                         strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);

    if (r != CUDA_SUCCESS)
      {
        fprintf (stderr, "cuTensorMapEncodeTiled (slot %d, %llu×%llu, box %u×%u): error %d\n", m->slot, m->inner,
                 m->outer, m->box_inner, m->box_outer, (int) r);
        exit (1);
      }
  }
}

int
main (int argc, char **argv)
{
  const int reps = argc > 1 ? atoi (argv[1]) : 20;
  const long nq_el = NP_B * NP_H * NP_NQ * NP_D, nkv_el = NP_B * NP_HK * NP_NKV * NP_D;
  void *ptrs[sizeof (NapkinArgs) / sizeof (void *)] = { 0 };
  NapkinArgs args;
  NapkinTensorMap maps[NP_N_MAPS + 1];
  cudaStream_t stream;
  cudaEvent_t e0, e1;
  std::vector<long> rows;
  long n_rows, *d_rows;
  float *d_s, *d_ref, *d_got;
  unsigned long long *d_bad, bad = 0;
  double err = 0, scale = 0, pairs = 0, tol;
  std::vector<float> ms;

  NP_CHECK (cudaStreamCreate (&stream));
  NP_CHECK (cudaMalloc (&ptrs[NP_SLOT_Q], nq_el * np_esize (NP_QK)));
  NP_CHECK (cudaMalloc (&ptrs[NP_SLOT_K], nkv_el * np_esize (NP_QK)));
  NP_CHECK (cudaMalloc (&ptrs[NP_SLOT_V], nkv_el * np_esize (NP_V)));
  NP_CHECK (cudaMalloc (&ptrs[NP_SLOT_O], nq_el * np_esize (NP_O)));
  if (NP_WS_SLOT >= 0 && NP_WS_BYTES > 0)
    NP_CHECK (cudaMalloc (&ptrs[NP_WS_SLOT], NP_WS_BYTES));
  /* the score operands, and their shapes for the fill */
  {
    long *dims;
    int *which;

    NP_CHECK (cudaMalloc (&dims, 10 * sizeof (long)));
    NP_CHECK (cudaMalloc (&which, 10 * sizeof (int)));
    NP_CHECK (cudaMemcpy (dims, np_bias_dims, 5 * sizeof (long), cudaMemcpyHostToDevice));
    NP_CHECK (cudaMemcpy (dims + 5, np_keep_dims, 5 * sizeof (long), cudaMemcpyHostToDevice));
    NP_CHECK (cudaMemcpy (which, np_bias_which, 5 * sizeof (int), cudaMemcpyHostToDevice));
    NP_CHECK (cudaMemcpy (which + 5, np_keep_which, 5 * sizeof (int), cudaMemcpyHostToDevice));
    if (NP_BIAS)
      {
        NP_CHECK (cudaMalloc (&ptrs[NP_SLOT_BIAS], NP_BIAS_N * np_esize (NP_BIAS_T)));
        np_fill_operand<<<1024, 256>>> (ptrs[NP_SLOT_BIAS], NP_BIAS_N, NP_BIAS_T, 0, NP_BIAS_FILL, NP_BIAS_RANK, dims,
                                        which);
      }
    if (NP_KEEP)
      {
        NP_CHECK (cudaMalloc (&ptrs[NP_SLOT_KEEP], NP_KEEP_N));
        np_fill_operand<<<1024, 256>>> (ptrs[NP_SLOT_KEEP], NP_KEEP_N, 5, 1, NP_KEEP_FILL, NP_KEEP_RANK, dims + 5,
                                        which + 5);
      }
    NP_CHECK (cudaDeviceSynchronize ());
  }
  memset (&args, 0, sizeof args);
  for (size_t i = 0; i < sizeof (NapkinArgs) / sizeof (void *); i++)
    args.p[i] = ptrs[i];
  np_fill<<<1024, 256>>> (ptrs[NP_SLOT_Q], nq_el, NP_QK, 1, 2.0f);
  np_fill<<<1024, 256>>> (ptrs[NP_SLOT_K], nkv_el, NP_QK, 2, 2.0f);
  np_fill<<<1024, 256>>> (ptrs[NP_SLOT_V], nkv_el, NP_V, 3, 1.0f);
  NP_CHECK (cudaMemset (ptrs[NP_SLOT_O], 0xff, nq_el * np_esize (NP_O)));
  for (int i = 0; i < NP_N_MAPS; i++)
    np_encode (&maps[i], &np_maps[i], ptrs);
  np_prepare ();

  /* the check */
  np_launch (args, maps, stream);
  NP_CHECK (cudaStreamSynchronize (stream));
  NP_CHECK (cudaGetLastError ());
  NP_CHECK (cudaMalloc (&d_bad, sizeof bad));
  NP_CHECK (cudaMemset (d_bad, 0, sizeof bad));
  np_count_bad<<<1024, 256>>> (ptrs[NP_SLOT_O], nq_el, d_bad);
  NP_CHECK (cudaMemcpy (&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost));

  /* sampled rows: the edges of every head's query range and of the tiles, and random ones */
  n_rows = std::min (256L, std::max (16L, (32L << 20) / NP_NKV));
  srand (7);
  for (long i = 0; (long) rows.size () < 3 * n_rows; i++)
    {
      long b = rand () % NP_B, h = rand () % NP_H, q;

      switch (i % 4)
        {
        case 0: q = NP_NQ - 1; break;
        case 1: q = std::min (NP_NQ - 1, (long) (rand () % 8) * 64 + (rand () % 2 ? 63 : 0)); break;
        default: q = rand () % NP_NQ; break;
        }
      rows.push_back (b);
      rows.push_back (h);
      rows.push_back (q);
    }
  NP_CHECK (cudaMalloc (&d_rows, rows.size () * sizeof (long)));
  NP_CHECK (cudaMemcpy (d_rows, rows.data (), rows.size () * sizeof (long), cudaMemcpyHostToDevice));
  NP_CHECK (cudaMalloc (&d_s, n_rows * NP_NKV * sizeof (float)));
  NP_CHECK (cudaMalloc (&d_ref, n_rows * NP_D * sizeof (float)));
  NP_CHECK (cudaMalloc (&d_got, n_rows * NP_D * sizeof (float)));
  np_reference<<<n_rows, 256>>> (ptrs[NP_SLOT_Q], ptrs[NP_SLOT_K], ptrs[NP_SLOT_V],
                                 NP_BIAS ? ptrs[NP_SLOT_BIAS] : NULL, NP_KEEP ? ptrs[NP_SLOT_KEEP] : NULL, d_rows, d_s,
                                 d_ref);
  np_gather<<<256, 256>>> (ptrs[NP_SLOT_O], d_rows, n_rows, d_got);
  NP_CHECK (cudaDeviceSynchronize ());
  {
    std::vector<float> ref (n_rows * NP_D), got (n_rows * NP_D);

    NP_CHECK (cudaMemcpy (ref.data (), d_ref, ref.size () * sizeof (float), cudaMemcpyDeviceToHost));
    NP_CHECK (cudaMemcpy (got.data (), d_got, got.size () * sizeof (float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ref.size (); i++)
      {
        scale = std::max (scale, (double) fabsf (ref[i]));
        err = std::max (err, std::isfinite (got[i]) ? (double) fabsf (got[i] - ref[i]) : INFINITY);
      }
    err = scale > 0 ? err / scale : err;
  }

  /* timing: warm-up, then each repeat between two events */
  NP_CHECK (cudaEventCreate (&e0));
  NP_CHECK (cudaEventCreate (&e1));
  for (int i = 0; i < 3; i++)
    np_launch (args, maps, stream);
  for (int i = 0; i < reps; i++)
    {
      float t;

      NP_CHECK (cudaEventRecord (e0, stream));
      np_launch (args, maps, stream);
      NP_CHECK (cudaEventRecord (e1, stream));
      NP_CHECK (cudaEventSynchronize (e1));
      NP_CHECK (cudaEventElapsedTime (&t, e0, e1));
      ms.push_back (t);
    }
  NP_CHECK (cudaGetLastError ());
  std::sort (ms.begin (), ms.end ());
  for (long q = 0; q < NP_NQ; q++)
    {
      long lo, hi;

      np_visible (q, &lo, &hi);
      pairs += std::max (0L, hi - lo);
    }
  /* P is rounded to V's type: fp8 and bf16 keep fewer bits */
  tol = NP_QK == 3 || NP_V == 3 ? 8e-2 : NP_V == 2 || NP_O == 2 ? 2e-2 : 5e-3;
  {
    char pred[32] = "-";

    if (NP_PRED_MS > 0)
      snprintf (pred, sizeof pred, "%.4f", (double) NP_PRED_MS);
    printf ("%-24s %-4s %9.2e %10.4f %8.1f %9s  %s%s\n", NP_NAME, err <= tol && bad == 0 ? "ok" : "FAIL", err,
            ms[ms.size () / 2], 4.0 * NP_B * NP_H * NP_D * pairs / (ms[ms.size () / 2] * 1e-3) / 1e12, pred,
            np_kernels, bad ? " (non-finite outputs)" : "");
  }
  fprintf (stderr, "%s: %s; %llu non-finite of %ld outputs\n", NP_NAME, NP_PLAN, bad, nq_el);
  return 0;
}
