/* Skeleton: a chain of element-wise maps, y = maps (x), over the N elements of y in
 * memory order (docs/plan.md, "Rows and element-wise kernels"). Each thread takes
 * VEC consecutive elements per step of a grid-stride loop; x and every operand are
 * read through their strides over y's (merged) axes: 16-byte loads where an operand
 * runs along y's inner axis, one load per vector where it is constant along it
 * (broadcast), single loads otherwise. A flat axis that VEC does not divide ends in
 * a scalar tail. For sm_80 and later. Napkin fills the @PARAMETERS@ and the maps. */
extern "C" __global__ void __launch_bounds__ (@THREADS@)
@NAME@ (const NapkinArgs args)
{
  typedef @T@ XT;
  typedef @OT@ YT;
  constexpr int VEC = @VEC@;
  constexpr long N = @N@L;
  const XT *__restrict__ X = @XREF@;
  YT *__restrict__ Y = @YREF@;
@OPERANDS@

  for (long i = (long) blockIdx.x * @THREADS@ + threadIdx.x; i < N / VEC; i += (long) gridDim.x * @THREADS@)
    {
      const long e = i * VEC;
      float v[VEC];
@INDEX@
@LOAD_V@
@MAPS_V@
      nk_stv<VEC> (Y + e, v, false);
    }
  if constexpr (N % VEC != 0)
    if (blockIdx.x == 0 && threadIdx.x < N % VEC)
      {
        const long e = N / VEC * VEC + threadIdx.x;
        float v[1];
@INDEX@
@LOAD_S@
@MAPS_S@
        napkin_st (Y + e, v[0]);
      }
}
