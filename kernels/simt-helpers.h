/* Helpers of the CUDA-core skeletons (rows-sm80.cu, rows-strided-sm80.cu, elementwise.cu): N elements of T
 * loaded into (stored from) fp32 registers with 16-byte accesses (8- or 4-byte ones
 * when N·sizeof (T) is smaller); the address is aligned to min (16, N·sizeof (T))
 * bytes. `cs` marks a global access as the last use of its line (evict first), so a
 * row that will be read again stays in L2 (docs/plan.md, "Rows and element-wise
 * kernels"). Printed once per module, after the prelude. */
#ifndef NAPKIN_SIMT_HELPERS
#define NAPKIN_SIMT_HELPERS
template <int B> struct nk_word;
template <> struct nk_word<4> { typedef unsigned type; };
template <> struct nk_word<8> { typedef uint2 type; };

static __device__ __forceinline__ uint4
nk_ld16 (const void *p, bool cs)
{
  uint4 r;

  if (cs)
    asm ("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r" (r.x), "=r" (r.y), "=r" (r.z), "=r" (r.w) : "l" (p));
  else
    r = *(const uint4 *) p;
  return r;
}

static __device__ __forceinline__ void
nk_st16 (void *p, uint4 r, bool cs)
{
  if (cs)
    asm volatile ("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l" (p), "r" (r.x), "r" (r.y), "r" (r.z), "r" (r.w)
                  : "memory");
  else
    *(uint4 *) p = r;
}

/* N elements of T as loaded, before their conversion (a load's registers only). */
template <int N, typename T>
struct nk_vec
{
  static constexpr int B = N * (int) sizeof (T);
  union { uint4 q[B >= 16 ? B / 16 : 1]; typename nk_word<B == 8 ? 8 : 4>::type w; T t[N]; } u;

  __device__ __forceinline__ void
  load (const T *p, bool cs)
  {
    if constexpr (B % 16 == 0)
      {
#pragma unroll
        for (int i = 0; i < B / 16; i++)
          u.q[i] = nk_ld16 ((const uint4 *) p + i, cs);
      }
    else if constexpr (B == 8 || B == 4)
      u.w = *(const typename nk_word<B>::type *) p;
    else
      {
#pragma unroll
        for (int i = 0; i < N; i++)
          u.t[i] = p[i];
      }
  }

  __device__ __forceinline__ void
  get (float *v) const
  {
#pragma unroll
    for (int i = 0; i < N; i++)
      v[i] = napkin_ld (&u.t[i]);
  }
};

template <int N, typename T>
static __device__ __forceinline__ void
nk_ldv (const T *p, float *v, bool cs)
{
  nk_vec<N, T> r;

  r.load (p, cs);
  r.get (v);
}

/* N elements of T from an address aligned only to sizeof (T) (an operand indexed by the
 * columns of a row that does not start on 16 bytes), `end` one past the operand's last
 * element there: where they are 16 bytes of 2- or 4-byte elements, the one or two aligned
 * 16-byte vectors that cover them, loaded whole and shifted in registers — one element at
 * a time, the warp's 32 loads 16 bytes apart touched four lines each and the row kernel
 * ran 2× its price (docs/perf-notes.md, "Session 32"). Element by element where the
 * second vector would run past `end`. */
template <int N, typename T>
static __device__ __forceinline__ void
nk_ldv_any (const T *p, const T *end, float *v)
{
  /* V aligned vectors' worth (16 or 32 bytes: bf16 γ, or fp32 γ beside bf16 rows) */
  constexpr int B = N * (int) sizeof (T), V = B / 16;

  if constexpr ((B == 16 || B == 32) && (sizeof (T) == 2 || sizeof (T) == 4))
    {
      const unsigned long long a = (unsigned long long) p;
      const uint4 *q = (const uint4 *) (a & ~15ull);
      const unsigned sh = (unsigned) (a & 15);   /* bytes past the boundary */

      if (sh == 0 || (const char *) (q + V + 1) <= (const char *) end)
        {
          const unsigned ws = sh >> 2;           /* whole words */
          unsigned w[4 * (V + 1)], r[4 * V + 1];
          union { unsigned u[4 * V]; T t[N]; } out;

#pragma unroll
          for (int j = 0; j <= V; j++)
            {
              const uint4 x = j < V || sh != 0 ? q[j] : q[0];

              w[4 * j] = x.x;
              w[4 * j + 1] = x.y;
              w[4 * j + 2] = x.z;
              w[4 * j + 3] = x.w;
            }
#pragma unroll
          for (int i = 0; i <= 4 * V; i++)
            {
              unsigned x = w[i];

#pragma unroll
              for (int k = 1; k < 4; k++)
                x = ws == (unsigned) k && i + k < 4 * (V + 1) ? w[i + k] : x;
              r[i] = x;
            }
#pragma unroll
          for (int i = 0; i < 4 * V; i++)
            out.u[i] = sh & 2 ? __funnelshift_r (r[i], r[i + 1], 16) : r[i];
#pragma unroll
          for (int i = 0; i < N; i++)
            v[i] = napkin_ld (&out.t[i]);
          return;
        }
    }
#pragma unroll
  for (int i = 0; i < N; i++)
    v[i] = napkin_ld (p + i);
}

template <int N, typename T>
static __device__ __forceinline__ void
nk_stv (T *p, const float *v, bool cs)
{
  constexpr int B = N * (int) sizeof (T);

  if constexpr (B % 16 == 0)
    {
      union { uint4 q[B / 16]; T t[N]; } u;
#pragma unroll
      for (int i = 0; i < N; i++)
        napkin_st (&u.t[i], v[i]);
#pragma unroll
      for (int i = 0; i < B / 16; i++)
        nk_st16 ((uint4 *) p + i, u.q[i], cs);
    }
  else if constexpr (B == 8 || B == 4)
    {
      union { typename nk_word<B>::type q; T t[N]; } u;
#pragma unroll
      for (int i = 0; i < N; i++)
        napkin_st (&u.t[i], v[i]);
      *(typename nk_word<B>::type *) p = u.q;
    }
  else
    {
#pragma unroll
      for (int i = 0; i < N; i++)
        napkin_st (p + i, v[i]);
    }
}
#endif
#ifndef NAPKIN_SIMT_COMBINE
#define NAPKIN_SIMT_COMBINE
/* exp (t − m) that is 0 for a masked score also where every score of the row is masked
 * (m = −∞, where exp would give NaN), and 1/Σ that is 0 for such a row: a softmax over
 * nothing is zeros, as the reference interpreter and the attention kernels give it */
static __device__ __forceinline__ float
nk_exp_masked (float t, float m)
{
  return t == NAPKIN_NEG_INF ? 0.0f : __expf (t - m);
}

static __device__ __forceinline__ float
nk_inv_sum (float s)
{
  return s > 0.0f ? 1.0f / s : 0.0f;
}

/* Two partial statistics of a row reduction combined into (a, b) — kind 0: Σa; 1: max a;
 * 2: the online softmax pair (a = max, b = Σexp (x − a)); 3: Σa, Σb. Plain C++ (the CPU
 * emulation of tests/plan/simt-emu.hh runs it too). */
static __device__ __forceinline__ void
nk_combine (float &a, float &b, float a2, float b2, int kind)
{
  if (kind == 0)
    a += a2;
  else if (kind == 1)
    a = fmaxf (a, a2);
  else if (kind == 2)
    {
      const float m = fmaxf (a, a2);

      b = (a == NAPKIN_NEG_INF ? 0.0f : b * __expf (a - m)) + (a2 == NAPKIN_NEG_INF ? 0.0f : b2 * __expf (a2 - m));
      a = m;
    }
  else
    {
      a += a2;
      b += b2;
    }
}
#endif
