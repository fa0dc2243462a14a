/* Tile primitives shared by the GEMM printers (docs/plan.md, "GEMM tile primitives"):
 * fp32 values converted to the stored type and written as one vector of 2 or 4
 * elements. The caller checks bounds and alignment (the printer decides at print time
 * whether a row of C allows vectors at all). Printed before every kernel that uses
 * them; the guard keeps one copy per module. */
#ifndef NAPKIN_TILE_STORE
#define NAPKIN_TILE_STORE

static __device__ __forceinline__ unsigned
napkin_pack2 (const napkin_bf16 *, float a, float b)
{
  unsigned v;

  asm ("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r" (v) : "f" (a), "f" (b));
  return v;
}

static __device__ __forceinline__ unsigned
napkin_pack2 (const napkin_f16 *, float a, float b)
{
  unsigned v;

  asm ("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r" (v) : "f" (a), "f" (b));
  return v;
}

static __device__ __forceinline__ void
napkin_st4 (float *p, float a, float b, float c, float d)
{
  asm volatile ("st.global.v4.f32 [%0], {%1, %2, %3, %4};" :: "l" (p), "f" (a), "f" (b), "f" (c), "f" (d) : "memory");
}

template <typename T>
static __device__ __forceinline__ void
napkin_st4 (T *p, float a, float b, float c, float d)
{
  asm volatile ("st.global.v2.b32 [%0], {%1, %2};"
                :: "l" (p), "r" (napkin_pack2 (p, a, b)), "r" (napkin_pack2 (p, c, d)) : "memory");
}

static __device__ __forceinline__ void
napkin_st2 (float *p, float a, float b)
{
  asm volatile ("st.global.v2.f32 [%0], {%1, %2};" :: "l" (p), "f" (a), "f" (b) : "memory");
}

template <typename T>
static __device__ __forceinline__ void
napkin_st2 (T *p, float a, float b)
{
  asm volatile ("st.global.b32 [%0], %1;" :: "l" (p), "r" (napkin_pack2 (p, a, b)) : "memory");
}

/* Four fp32 values from global memory (16-byte aligned). */
static __device__ __forceinline__ void
napkin_ld4 (const float *p, float *v)
{
  asm volatile ("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                : "=f" (v[0]), "=f" (v[1]), "=f" (v[2]), "=f" (v[3]) : "l" (p));
}

#endif
