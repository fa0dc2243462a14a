/* The operand repack of the kernel plan (docs/plan.md, "GEMM tile primitives"): copies
 * each of `batch` matrices src (rows × cols, rows ld_src apart) to dst with rows ld_dst
 * apart, transposed when G_TRANSPOSE (dst is then cols × rows), zeroing the padding of
 * each dst row (columns from the copied width up to ld_dst), so that a GEMM can read it
 * with aligned rows (TMA, cp.async) or K-major (fp8 wgmma). Elements are moved as raw
 * bits (@RT@, the element's size). A transpose goes through 32 × 32 shared-memory tiles
 * (one padding column: no bank conflicts), read and written along rows. */
#define G_ROWS @ROWS@L
#define G_COLS @COLS@L
#define G_LDS @LDS@L
#define G_LDD @LDD@L
#define G_SBS @SBS@L
#define G_DBS @DBS@L
#define G_BATCH @BATCH@L
#define G_TRANSPOSE @TRANSPOSE@

extern "C" __global__ void __launch_bounds__ (256)
@NAME@ (const NapkinArgs args)
{
  const @RT@ *src = @SREF@;
  @RT@ *dst = @DREF@;
#if G_TRANSPOSE
  /* dst[c][r] = src[r][c]: block (b, r tile, c tile) over r < ld_dst (the padding), c < cols */
  __shared__ @RT@ tile[32][33];
  const long tiles_r = (G_LDD + 31) / 32, tiles_c = (G_COLS + 31) / 32;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;

  for (long t = blockIdx.x; t < G_BATCH * tiles_r * tiles_c; t += gridDim.x)
    {
      const long b = t / (tiles_r * tiles_c), r0 = (t / tiles_c) % tiles_r * 32, c0 = t % tiles_c * 32;

      for (int y = ty; y < 32; y += 8)
        {
          const long r = r0 + y, c = c0 + tx;

          tile[y][tx] = r < G_ROWS && c < G_COLS ? src[b * G_SBS + r * G_LDS + c] : (@RT@) 0;
        }
      __syncthreads ();
      for (int y = ty; y < 32; y += 8)
        {
          const long c = c0 + y, r = r0 + tx;

          if (c < G_COLS && r < G_LDD)
            dst[b * G_DBS + c * G_LDD + r] = tile[tx][y];
        }
      __syncthreads ();
    }
#else
  const long total = G_BATCH * G_ROWS * G_LDD;

  for (long t = (long) blockIdx.x * 256 + threadIdx.x; t < total; t += (long) gridDim.x * 256)
    {
      const long c = t % G_LDD, r = (t / G_LDD) % G_ROWS, b = t / (G_LDD * G_ROWS);

      dst[b * G_DBS + r * G_LDD + c] = c < G_COLS ? src[b * G_SBS + r * G_LDS + c] : (@RT@) 0;
    }
#endif
}
#undef G_ROWS
#undef G_COLS
#undef G_LDS
#undef G_LDD
#undef G_SBS
#undef G_DBS
#undef G_BATCH
#undef G_TRANSPOSE
