/* Skeleton: row-wise softmax or normalisation, Y[r,:] = f(X[r,:]) over whole rows of
 * C elements, optionally followed by ·γ[c] and +β[c]. One thread block per group of
 * R rows (the region's parallel groups), one row at a time; each thread keeps its
 * C / THREADS elements in registers (16-byte loads and stores), so every element is
 * read once and written once. Reductions: warp shuffles, then one value per warp in
 * shared memory. Napkin fills the @PARAMETERS@. Requires C % (THREADS·8) == 0. */
#define R_C @C@
#define R_ROWS @R@
#define R_THREADS @THREADS@
#define R_CHUNKS (R_C / (R_THREADS * 8))
#define R_OP @OP@           /* 0 softmax, 1 layernorm, 2 rmsnorm */
#define R_HAS_GAMMA @HAS_GAMMA@
#define R_HAS_BETA @HAS_BETA@

struct @NAME@_v8 { unsigned w[4]; };

static __device__ __forceinline__ void
@NAME@_unpack (const @NAME@_v8 &u, float *f)
{
  for (int i = 0; i < 4; i++)
    {
      @T@ lo = { (unsigned short) (u.w[i] & 0xffffu) }, hi = { (unsigned short) (u.w[i] >> 16) };
      f[2 * i] = napkin_ld (&lo);
      f[2 * i + 1] = napkin_ld (&hi);
    }
}

static __device__ __forceinline__ float
@NAME@_reduce (float v, bool is_max, float *red)
{
  for (int w = 16; w > 0; w >>= 1)
    {
      const float o = __shfl_xor_sync (0xffffffffu, v, w);
      v = is_max ? fmaxf (v, o) : v + o;
    }
  __syncthreads ();                  /* red may still be read from the last reduction */
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = v;
  __syncthreads ();
  v = red[0];
  for (int i = 1; i < R_THREADS / 32; i++)
    v = is_max ? fmaxf (v, red[i]) : v + red[i];
  return v;
}

extern "C" __global__ void __launch_bounds__ (R_THREADS)
@NAME@ (const NapkinArgs args)
{
  const @T@ *__restrict__ X = (const @T@ *) args.p[@XS@];
  @OT@ *__restrict__ Y = (@OT@ *) args.p[@YS@];
#if R_HAS_GAMMA
  const @T@ *__restrict__ G = (const @T@ *) args.p[@GS@];
#endif
#if R_HAS_BETA
  const @T@ *__restrict__ Bt = (const @T@ *) args.p[@BS@];
#endif
  __shared__ float red[32];
  const int tid = threadIdx.x;

  for (int rr = 0; rr < R_ROWS; rr++)
    {
      const long row = (long) blockIdx.x * R_ROWS + rr;
      const @T@ *x = X + row * R_C;
      float v[R_CHUNKS * 8];

#pragma unroll
      for (int e = 0; e < R_CHUNKS; e++)
        {
          const @NAME@_v8 u = *(const @NAME@_v8 *) (x + (e * R_THREADS + tid) * 8);
          @NAME@_unpack (u, v + e * 8);
        }

#if R_OP == 0
      float m = -3.0e38f;
#pragma unroll
      for (int i = 0; i < R_CHUNKS * 8; i++)
        m = fmaxf (m, v[i]);
      m = @NAME@_reduce (m, true, red);
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < R_CHUNKS * 8; i++)
        s += (v[i] = expf (v[i] - m));
      const float inv = 1.0f / @NAME@_reduce (s, false, red);
#pragma unroll
      for (int i = 0; i < R_CHUNKS * 8; i++)
        v[i] *= inv;
#else
      float mean = 0.0f;
#if R_OP == 1
#pragma unroll
      for (int i = 0; i < R_CHUNKS * 8; i++)
        mean += v[i];
      mean = @NAME@_reduce (mean, false, red) / R_C;
#endif
      float var = 0.0f;
#pragma unroll
      for (int i = 0; i < R_CHUNKS * 8; i++)
        var += (v[i] - mean) * (v[i] - mean);
      const float rstd = rsqrtf (@NAME@_reduce (var, false, red) / R_C + @EPS@f);
#pragma unroll
      for (int i = 0; i < R_CHUNKS * 8; i++)
        v[i] = (v[i] - mean) * rstd;
#endif

#pragma unroll
      for (int e = 0; e < R_CHUNKS; e++)
        {
          const long c0 = (long) (e * R_THREADS + tid) * 8;
#if R_HAS_GAMMA || R_HAS_BETA
          float p[8];
#endif
#if R_HAS_GAMMA
          @NAME@_unpack (*(const @NAME@_v8 *) (G + c0), p);
          for (int i = 0; i < 8; i++)
            v[e * 8 + i] *= p[i];
#endif
#if R_HAS_BETA
          @NAME@_unpack (*(const @NAME@_v8 *) (Bt + c0), p);
          for (int i = 0; i < 8; i++)
            v[e * 8 + i] += p[i];
#endif
          @OT@ *y = Y + row * R_C + c0;
#if @OUT16@
          @NAME@_v8 u;
          for (int i = 0; i < 4; i++)
            {
              @OT@ lo, hi;

              napkin_st (&lo, v[e * 8 + 2 * i]);
              napkin_st (&hi, v[e * 8 + 2 * i + 1]);
              u.w[i] = (unsigned) lo.x | ((unsigned) hi.x << 16);
            }
          *(@NAME@_v8 *) y = u;   /* one 16-byte store */
#else
#pragma unroll
          for (int i = 0; i < 8; i++)
            napkin_st (&y[i], v[e * 8 + i]);
#endif
        }
    }
}
#undef R_C
#undef R_ROWS
#undef R_THREADS
#undef R_CHUNKS
#undef R_OP
#undef R_HAS_GAMMA
#undef R_HAS_BETA
