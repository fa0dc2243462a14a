/* What the generated module's prelude gives a skeleton (src/codegen/napkin-cuda.c). */
#pragma once
struct napkin_f16 { unsigned short x; };
struct napkin_bf16 { unsigned short x; };
struct NapkinArgs { void *p[30]; };
#ifndef NAPKIN_TENSOR_MAP
#define NAPKIN_TENSOR_MAP
struct __align__ (64) NapkinTensorMap { unsigned long long opaque[16]; };
#endif
