/* What the generated module's prelude gives a skeleton (src/codegen/napkin-cuda.c). */
#pragma once
struct napkin_f16 { unsigned short x; };
struct napkin_bf16 { unsigned short x; };
struct NapkinArgs { void *p[64]; };
static __device__ __forceinline__ unsigned napkin_smem_addr (const void *p)
{ unsigned a; asm ("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r" (a) : "l" (p)); return a; }
struct __align__ (64) NapkinTensorMap { unsigned long long opaque[16]; };
