/* The fp8 codec, in portable C so that every architecture (sm_80 included) and the
 * host share it: OCP E4M3 (mbits 3, bias 7, no infinity, 448 at most) and E5M2
 * (mbits 2, bias 15), round to nearest even, saturating at the largest finite value.
 * Included as C by napkin-runner (NAPKIN_HD = static inline) and embedded in every
 * generated CUDA source (NAPKIN_HD = static __host__ __device__ inline). */
NAPKIN_HD unsigned char
napkin_fp8_encode (float f, int mbits, int bias, float maxv)
{
  unsigned char sign = f < 0.0f || (f == 0.0f && 1.0f / f < 0.0f) ? 0x80 : 0;
  float a = fabsf (f), r;
  int e;

  if (a != a)
    return sign | 0x7f;
  if (a >= maxv)
    a = maxv;
  if (a == 0.0f)
    return sign;
  frexpf (a, &e);
  e -= 1;                                   /* a in [2^e, 2^(e+1)) */
  if (e < 1 - bias)
    e = 1 - bias;                           /* subnormal spacing */
  r = rintf (ldexpf (a, mbits - e));
  if (r >= (float) (2 << mbits))
    {
      r *= 0.5f;
      e += 1;
    }
  if (ldexpf (r, e - mbits) > maxv)
    r -= 1.0f;
  if (r < (float) (1 << mbits))
    return sign | (unsigned char) r;
  return sign | (unsigned char) (((e + bias) << mbits) | ((int) r - (1 << mbits)));
}

NAPKIN_HD float
napkin_fp8_decode (unsigned char b, int mbits, int bias)
{
  int E = (b & 0x7f) >> mbits, M = b & ((1 << mbits) - 1);
  float v;

  if (mbits == 3 && E == 15 && M == 7)
    return nanf ("");
  if (mbits == 2 && E == 31)
    return M ? nanf ("") : ((b & 0x80) ? -1.0f : 1.0f) * ldexpf (1.0f, 200);
  v = E == 0 ? ldexpf ((float) M, 1 - bias - mbits) : ldexpf ((float) (M + (1 << mbits)), E - bias - mbits);
  return (b & 0x80) ? -v : v;
}
