/* Skeleton: a chain of element-wise maps, y = maps (x), over the N elements of y in
 * memory order (docs/plan.md, "Rows and element-wise kernels"). Each thread takes
 * VEC consecutive elements per step of a grid-stride loop; x and every operand are
 * read through their strides over y's (merged) axes: 16-byte loads where an operand
 * runs along y's inner axis, one load per vector where it is constant along it
 * (broadcast), single loads otherwise. A flat axis that VEC does not divide ends in
 * a scalar tail. For sm_80 and later. Napkin fills the NKP_ parameters and the maps. */
#ifndef NAPKIN_GENERATED   /* compiled alone for sm_80: tests/codegen/kernels-alone.sh */
#include "prelude.cuh"
#include "simt-helpers.h"
/* default parameters: an instantiation the code generator prints */
#define NKP_NAME generic_k0
#define NKP_THREADS 256
#define NKP_T napkin_bf16
#define NKP_OT napkin_bf16
#define NKP_VEC 8
#define NKP_N 16777216
#define NKP_XREF ((napkin_bf16 *) args.p[0])
#define NKP_YREF ((napkin_bf16 *) args.p[2])
#endif /* NAPKIN_GENERATED */
extern "C" __global__ void __launch_bounds__ (NKP_THREADS)
NKP_NAME (const NapkinArgs args)
{
  typedef NKP_T XT;
  typedef NKP_OT YT;
  constexpr int VEC = NKP_VEC;
  constexpr long N = NKP_L (NKP_N);
  const XT *__restrict__ X = NKP_XREF;
  YT *__restrict__ Y = NKP_YREF;
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/OPERANDS"
#else
  const napkin_bf16 *__restrict__ O1 = ((napkin_bf16 *) args.p[1]);
#endif /* napkin-fragment/OPERANDS */

  for (long i = (long) blockIdx.x * NKP_THREADS + threadIdx.x; i < N / VEC; i += (long) gridDim.x * NKP_THREADS)
    {
      const long e = i * VEC;
      float v[VEC];
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/INDEX_V"
#else
      long t_ = e;
      const long i0 = t_;
      (void) i0;
#endif /* napkin-fragment/INDEX_V */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LOAD_V"
#else
      nk_ldv<8> (X + e, v, false);
#endif /* napkin-fragment/LOAD_V */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/MAPS_V"
#else
      /* u */
      for (int k_ = 0; k_ < 8; k_++)
        v[k_] = napkin_silu (v[k_]);
      /* v */
      {
      float o_[8];
      nk_ldv<8> (O1 + e, o_, false);
      for (int k_ = 0; k_ < 8; k_++)
        v[k_] = (v[k_] * o_[k_]);
      }
#endif /* napkin-fragment/MAPS_V */
      nk_stv<VEC> (Y + e, v, false);
    }
  if constexpr (N % VEC != 0)
    if (blockIdx.x == 0 && threadIdx.x < N % VEC)
      {
        const long e = N / VEC * VEC + threadIdx.x;
        float v[1];
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/INDEX_S"
#else
      long t_ = e;
      const long i0 = t_;
      (void) i0;
#endif /* napkin-fragment/INDEX_S */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/LOAD_S"
#else
      {
        const float b_ = napkin_ld (X + e);

        for (int k_ = 0; k_ < 1; k_++)
          v[k_] = b_;
      }
#endif /* napkin-fragment/LOAD_S */
#ifdef NAPKIN_GENERATED
#include "napkin-fragment/MAPS_S"
#else
      /* u */
      for (int k_ = 0; k_ < 1; k_++)
        v[k_] = napkin_silu (v[k_]);
      /* v */
      {
      float o_[1];
      {
        const float b_ = napkin_ld (O1 + e);

        for (int k_ = 0; k_ < 1; k_++)
          o_[k_] = b_;
      }
      for (int k_ = 0; k_ < 1; k_++)
        v[k_] = (v[k_] * o_[k_]);
      }
#endif /* napkin-fragment/MAPS_S */
        napkin_st (Y + e, v[0]);
      }
}
