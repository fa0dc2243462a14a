/* Tile primitives shared by the GEMM printers (docs/plan.md, "GEMM tile primitives"):
 * fp32 values converted to the stored type and written as one vector of 2 or 4
 * elements. The caller checks bounds and alignment (the printer decides at print time
 * whether a row of C allows vectors at all). Printed before every kernel that uses
 * them; the guard keeps one copy per module. */
#ifndef NAPKIN_TILE_STORE
#define NAPKIN_TILE_STORE

__device__ __forceinline__ unsigned
napkin_pack2 (const napkin_bf16 *, float a, float b)
{
  unsigned v;

  asm ("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r" (v) : "f" (a), "f" (b));
  return v;
}

__device__ __forceinline__ unsigned
napkin_pack2 (const napkin_f16 *, float a, float b)
{
  unsigned v;

  asm ("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r" (v) : "f" (a), "f" (b));
  return v;
}

__device__ __forceinline__ void
napkin_st4 (float *p, float a, float b, float c, float d)
{
  asm volatile ("st.global.v4.f32 [%0], {%1, %2, %3, %4};" :: "l" (p), "f" (a), "f" (b), "f" (c), "f" (d) : "memory");
}

template <typename T>
__device__ __forceinline__ void
napkin_st4 (T *p, float a, float b, float c, float d)
{
  asm volatile ("st.global.v2.b32 [%0], {%1, %2};"
                :: "l" (p), "r" (napkin_pack2 (p, a, b)), "r" (napkin_pack2 (p, c, d)) : "memory");
}

__device__ __forceinline__ void
napkin_st2 (float *p, float a, float b)
{
  asm volatile ("st.global.v2.f32 [%0], {%1, %2};" :: "l" (p), "f" (a), "f" (b) : "memory");
}

template <typename T>
__device__ __forceinline__ void
napkin_st2 (T *p, float a, float b)
{
  asm volatile ("st.global.b32 [%0], %1;" :: "l" (p), "r" (napkin_pack2 (p, a, b)) : "memory");
}

/* Eight fp32 values stored as one 16-byte vector (16-bit types) or two (fp32); p is
 * 16-byte aligned. */
__device__ __forceinline__ void
napkin_st8 (float *p, const float (&v)[8])
{
  napkin_st4 (p, v[0], v[1], v[2], v[3]);
  napkin_st4 (p + 4, v[4], v[5], v[6], v[7]);
}

template <typename T>
__device__ __forceinline__ void
napkin_st8 (T *p, const float (&v)[8])
{
  asm volatile ("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
                :: "l" (p), "r" (napkin_pack2 (p, v[0], v[1])), "r" (napkin_pack2 (p, v[2], v[3])),
                   "r" (napkin_pack2 (p, v[4], v[5])), "r" (napkin_pack2 (p, v[6], v[7])) : "memory");
}

/* Loads that nothing waits for until their bits are converted (napkin_bits_f,
 * napkin_unpack2): the staged epilogue keeps several pieces of its operands in flight
 * this way. One element (zero-extended), or 16 bytes (aligned). */
template <typename T>
__device__ __forceinline__ void
napkin_ldbits1 (const T *p, unsigned *r)
{
  if (sizeof (T) == 4)
    asm volatile ("ld.global.b32 %0, [%1];" : "=r" (r[0]) : "l" (p));
  else if (sizeof (T) == 2)
    asm volatile ("ld.global.u16 %0, [%1];" : "=r" (r[0]) : "l" (p));
  else
    asm volatile ("ld.global.u8 %0, [%1];" : "=r" (r[0]) : "l" (p));
}

template <typename T>
__device__ __forceinline__ void
napkin_ldbits16 (const T *p, unsigned *r)
{
  asm volatile ("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
                : "=r" (r[0]), "=r" (r[1]), "=r" (r[2]), "=r" (r[3]) : "l" (p));
}

__device__ __forceinline__ float
napkin_bits_f (const float *, unsigned u)
{
  return __uint_as_float (u);
}

__device__ __forceinline__ float
napkin_bits_f (const signed char *, unsigned u)
{
  return (float) (signed char) u;
}

/* the 16- and 8-bit float types: one field x */
template <typename T>
__device__ __forceinline__ float
napkin_bits_f (const T *, unsigned u)
{
  T v;

  v.x = (decltype (v.x)) u;
  return napkin_ld (&v);
}

/* Eight values from global memory (16-byte aligned) as fp32. */
__device__ __forceinline__ void
napkin_ld8 (const float *p, float (&v)[8])
{
  const float4 a = *(const float4 *) p, b = *(const float4 *) (p + 4);

  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

__device__ __forceinline__ void
napkin_unpack2 (const napkin_bf16 *, unsigned u, float *v)
{
  v[0] = __uint_as_float (u << 16);
  v[1] = __uint_as_float (u & 0xffff0000u);
}

__device__ __forceinline__ void
napkin_unpack2 (const napkin_f16 *, unsigned u, float *v)
{
  asm ("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %2; cvt.f32.f16 %0, lo; cvt.f32.f16 %1, hi; }"
       : "=f" (v[0]), "=f" (v[1]) : "r" (u));
}

template <typename T>
__device__ __forceinline__ void
napkin_ld8 (const T *p, float (&v)[8])
{
  const uint4 u = *(const uint4 *) p;

  napkin_unpack2 (p, u.x, v);
  napkin_unpack2 (p, u.y, v + 2);
  napkin_unpack2 (p, u.z, v + 4);
  napkin_unpack2 (p, u.w, v + 6);
}

/* Four fp32 values from global memory (16-byte aligned). */
__device__ __forceinline__ void
napkin_ld4 (const float *p, float *v)
{
  asm volatile ("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                : "=f" (v[0]), "=f" (v[1]), "=f" (v[2]), "=f" (v[3]) : "l" (p));
}

#endif
