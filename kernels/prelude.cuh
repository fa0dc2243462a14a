/* The helpers every generated source starts with (docs/codegen.md): element types and
 * their loads and stores (PTX cvt, so that NVRTC needs no headers), the fused maps, the
 * fp8 codec, and the macros the kernel templates of this directory build their parameters
 * with. napkin-cuda.c prints it with fp8-codec.h in place of its #include; the guard lets
 * two sources be joined. NapkinArgs's size is NAPKIN_CUDA_MAX_ARGS (napkin-codegen.h). */
#ifndef NAPKIN_PRELUDE
#define NAPKIN_PRELUDE
struct napkin_f16 { unsigned short x; };
struct napkin_bf16 { unsigned short x; };
struct NapkinArgs { void *p[256]; };
#define NAPKIN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NAPKIN_NEG_INF __int_as_float (0xff800000)
__device__ __forceinline__ float napkin_exp_masked (float v, float m)
{ return v == NAPKIN_NEG_INF ? 0.0f : expf (v - m); }
__device__ __forceinline__ float napkin_ld (const float *p) { return *p; }
__device__ __forceinline__ float napkin_ld (const napkin_f16 *p)
{ float f; asm ("cvt.f32.f16 %0, %1;" : "=f" (f) : "h" (p->x)); return f; }
__device__ __forceinline__ float napkin_ld (const napkin_bf16 *p)
{ return __uint_as_float (((unsigned) p->x) << 16); }
__device__ __forceinline__ float napkin_ld (const signed char *p) { return (float) *p; }
__device__ __forceinline__ void napkin_st (float *p, float v) { *p = v; }
__device__ __forceinline__ void napkin_st (napkin_f16 *p, float v)
{ unsigned short h; asm ("cvt.rn.f16.f32 %0, %1;" : "=h" (h) : "f" (v)); p->x = h; }
__device__ __forceinline__ void napkin_st (napkin_bf16 *p, float v)
{ unsigned short h; asm ("cvt.rn.bf16.f32 %0, %1;" : "=h" (h) : "f" (v)); p->x = h; }
__device__ __forceinline__ void napkin_st (signed char *p, float v)
{ *p = (signed char) fmaxf (-128.f, fminf (127.f, rintf (v))); }
__device__ __forceinline__ float napkin_round_f16 (float v) { napkin_f16 h; napkin_st (&h, v); return napkin_ld (&h); }
__device__ __forceinline__ float napkin_round_bf16 (float v) { napkin_bf16 h; napkin_st (&h, v); return napkin_ld (&h); }
__device__ __forceinline__ float napkin_round_tf32 (float v)
{ unsigned u; asm ("cvt.rna.tf32.f32 %0, %1;" : "=r" (u) : "f" (v)); return __uint_as_float (u); }
#define NAPKIN_HD static __host__ __device__ inline
/* fp8 P·V (docs/plan.md, "Attention kernels"): the key that slot s (0…31) of a 32-key
 * k-step holds. Thread c of a quad keeps the scores of keys 2c, 2c + 1, 8 + 2c, 9 + 2c
 * (and 16 more) of the product's accumulator; the e4m3 A operand gives it slots 4c … 4c + 3
 * (and 16 more). Vᵀ is written in this order, so P is packed without moving a byte. */
#define NAPKIN_PV_KEY(s) (((s) & 16) | (((s) >> 1) & 6) | ((s) & 1) | (((s) & 2) << 2))
/* A template parameter NKP_X as a long or float literal, as text inside an asm string,
 * and pasted into a name (docs/codegen.md, "Kernel sources"). */
#define NKP_CAT_(a, b) a##b
#define NKP_CAT(a, b) NKP_CAT_ (a, b)
#define NKP_L(x) NKP_CAT (x, L)
#define NKP_F(x) NKP_CAT (x, f)
#define NKP_STR_(x) #x
#define NKP_STR(x) NKP_STR_ (x)
__device__ __forceinline__ float napkin_gelu (float x) { return 0.5f * x * (1.0f + erff (x * 0.70710678f)); }
/* GELU's tanh approximation, as torch's gelu(approximate='tanh') (docs/file-format.md) */
__device__ __forceinline__ float napkin_gelu_tanh (float x) { return 0.5f * x * (1.0f + tanhf (0.7978845608f * (x + 0.044715f * x * x * x))); }
__device__ __forceinline__ float napkin_silu (float x) { return x / (1.0f + __expf (-x)); }
/* torch's elu with alpha 1 (docs/file-format.md) */
__device__ __forceinline__ float napkin_elu (float x) { return x > 0.0f ? x : expm1f (x); }
__device__ __forceinline__ float napkin_sigmoid (float x) { return 1.0f / (1.0f + __expf (-x)); }
__device__ __forceinline__ float napkin_square (float x) { return x * x; }
__device__ __forceinline__ unsigned napkin_smem_addr (const void *p)
{ unsigned a; asm ("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r" (a) : "l" (p)); return a; }
struct __align__ (64) NapkinTensorMap { unsigned long long opaque[16]; };
#include "fp8-codec.h"
struct napkin_e4m3 { unsigned char x; };
struct napkin_e5m2 { unsigned char x; };
__device__ __forceinline__ float napkin_ld (const napkin_e4m3 *p) { return napkin_fp8_decode (p->x, 3, 7); }
__device__ __forceinline__ float napkin_ld (const napkin_e5m2 *p) { return napkin_fp8_decode (p->x, 2, 15); }
__device__ __forceinline__ void napkin_st (napkin_e4m3 *p, float v) { p->x = napkin_fp8_encode (v, 3, 7, 448.0f); }
__device__ __forceinline__ void napkin_st (napkin_e5m2 *p, float v) { p->x = napkin_fp8_encode (v, 2, 15, 57344.0f); }
#endif
