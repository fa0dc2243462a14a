/* Tile primitives of the attention kernels (docs/plan.md, "Attention kernels"): mbarriers,
 * TMA copies of rank 2 and 3 into 128-byte-swizzled shared memory, cp.async with zero
 * fill, wgmma shared-memory descriptors, the fast exponential, conversions of score pairs
 * to the operand types, paired stores. Printed before every attention kernel; the guard
 * keeps one copy per module. */
#ifndef NAPKIN_ATTN_PRIMS
#define NAPKIN_ATTN_PRIMS

/* Hopper's (sm_90a) part: descriptors, mbarriers, TMA */
#if !defined (__CUDA_ARCH__) || __CUDA_ARCH__ >= 900

/* wgmma shared-memory matrix descriptor, 128-byte swizzle: start address, leading and
 * stride byte offsets (K-major: sbo between 8-row groups; MN-major: lbo between
 * 64-element column blocks, sbo between 8-row groups along K). */
__device__ __forceinline__ unsigned long long
napkin_attn_desc (unsigned addr, unsigned lbo, unsigned sbo)
{
  return (unsigned long long) ((addr & 0x3ffff) >> 4) | ((unsigned long long) ((lbo & 0x3ffff) >> 4) << 16)
         | ((unsigned long long) ((sbo & 0x3ffff) >> 4) << 32) | (1ull << 62);
}

/* The same, K-major, in the SW-byte swizzle (128, 64 or 32; layout 1, 2 or 3 in bits
 * 62-63): sbo = 8 rows of SW bytes. */
__device__ __forceinline__ unsigned long long
napkin_attn_desc_sw (unsigned addr, unsigned sbo, unsigned sw)
{
  return (unsigned long long) ((addr & 0x3ffff) >> 4) | (1ull << 16)
         | ((unsigned long long) ((sbo & 0x3ffff) >> 4) << 32)
         | ((unsigned long long) (sw == 128 ? 1 : sw == 64 ? 2 : 3) << 62);
}

__device__ __forceinline__ void
napkin_attn_bar_init (unsigned bar, unsigned count)
{
  asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (bar), "r" (count) : "memory");
}

__device__ __forceinline__ void
napkin_attn_wait (unsigned bar, unsigned parity)
{
  unsigned done;

  do
    asm volatile ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                  : "=r" (done) : "r" (bar), "r" (parity) : "memory");
  while (!done);
}

__device__ __forceinline__ void
napkin_attn_arrive (unsigned bar)
{
  asm volatile ("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r" (bar) : "memory");
}

/* Arrives and announces the bytes the copies will bring: a box that runs past the
 * tensor's edge still delivers all its bytes (the outside as zeros). */
__device__ __forceinline__ void
napkin_attn_expect (unsigned bar, unsigned bytes)
{
  asm volatile ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r" (bar), "r" (bytes) : "memory");
}

__device__ __forceinline__ void
napkin_attn_tma (unsigned dst, const NapkinTensorMap *map, int c0, int c1, unsigned bar)
{
  asm volatile ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (bar) : "memory");
}

__device__ __forceinline__ void
napkin_attn_tma (unsigned dst, const NapkinTensorMap *map, int c0, int c1, int c2, unsigned bar)
{
  asm volatile ("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (c2), "r" (bar) : "memory");
}


/* An 8 × 8 block of bytes in shared memory, transposed (fp8 V to Vᵀ inside the attention
 * kernel: docs/plan.md, "Attention kernels"): src_row (r) and dst_row (j) give the byte
 * addresses of row r of the source and row j of the destination (8-byte aligned, the
 * swizzles inside the callers' lambdas). Four 4 × 4 byte transposes, 8 permutes each. */
__device__ __forceinline__ void
napkin_attn_t4 (unsigned a, unsigned b, unsigned c, unsigned d, unsigned (&o)[4])
{
  const unsigned x0 = __byte_perm (a, b, 0x5140), x1 = __byte_perm (a, b, 0x7362);
  const unsigned y0 = __byte_perm (c, d, 0x5140), y1 = __byte_perm (c, d, 0x7362);

  o[0] = __byte_perm (x0, y0, 0x5410);
  o[1] = __byte_perm (x0, y0, 0x7632);
  o[2] = __byte_perm (x1, y1, 0x5410);
  o[3] = __byte_perm (x1, y1, 0x7632);
}

template <typename Src, typename Dst>
__device__ __forceinline__ void
napkin_attn_t8x8 (Src src_row, Dst dst_row)
{
  unsigned lo[8], hi[8], t[4][4];

#pragma unroll
  for (int r = 0; r < 8; r++)
    asm volatile ("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r" (lo[r]), "=r" (hi[r]) : "r" (src_row (r)) : "memory");
  /* t[0]: d 0-3 of keys 0-3, t[1]: d 0-3 of keys 4-7, t[2], t[3]: d 4-7 */
  napkin_attn_t4 (lo[0], lo[1], lo[2], lo[3], t[0]);
  napkin_attn_t4 (lo[4], lo[5], lo[6], lo[7], t[1]);
  napkin_attn_t4 (hi[0], hi[1], hi[2], hi[3], t[2]);
  napkin_attn_t4 (hi[4], hi[5], hi[6], hi[7], t[3]);
#pragma unroll
  for (int j = 0; j < 8; j++)
    asm volatile ("st.shared.v2.u32 [%0], {%1, %2};"
                  :: "r" (dst_row (j)), "r" (t[j < 4 ? 0 : 2][j % 4]), "r" (t[j < 4 ? 1 : 3][j % 4]) : "memory");
}
#endif

/* 16 bytes from global to shared memory, of which the first `bytes` are read and the
 * rest are zero (bytes 0: a zero chunk; src must still be a valid address). */
__device__ __forceinline__ void
napkin_attn_cp16 (unsigned dst, const void *src, unsigned bytes)
{
  asm volatile ("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r" (dst), "l" (src), "r" (bytes) : "memory");
}

/* 2^x on the special-function unit alone (results below 2^-126 flush to zero, which a
 * softmax term that small is anyway; exp2f adds a range fix-up for denormals). */
__device__ __forceinline__ float
napkin_attn_exp2 (float x)
{
  float y;
  asm ("ex2.approx.ftz.f32 %0, %1;" : "=f" (y) : "f" (x));
  return y;
}

/* 2^x on the FMA units (FlashAttention-4's relabeling of part of the exponentials off
 * the SFU; docs/model.md, "exp on FMA"). Cody–Waite range reduction with no conversion
 * instruction (F2I/I2F would run at the SFU's quarter rate): adding 1.5·2^23 + 127
 * rounds x to the nearest integer j and leaves j + 127 in the low mantissa bits;
 * f = x − j in [−½, ½]; 2^f by a degree-3 polynomial fitted for least relative error on
 * [−½, ½] (at most 7.5e-5 in fp32, below half an fp16 ulp, 4.9e-4, and a bf16 one);
 * those bits shifted into the exponent field are 2^j exactly, and 0 for x ≤ −127 (the
 * clamp), as ex2.approx.ftz flushes below 2^−126: no compare and select. x ≤ 127.
 * 9 instructions: FMNMX, 3 FADD, 3 FFMA, SHF, FMUL — all off the SFU, and every one an
 * issue slot of the warp's scheduler (docs/model.md §7f). */
__device__ __forceinline__ float
napkin_exp2_poly (float x)
{
  const float magic = 12583039.0f;   /* 1.5 · 2^23 + 127 */
  float xc = fmaxf (x, -127.0f);
  float t = xc + magic;
  float f = xc - (t - magic);
  float p = fmaf (fmaf (fmaf (0.055170957f, f, 0.24261114f), f, 0.693261087f), f, 0.999928057f);

  return p * __int_as_float (__float_as_int (t) << 23);
}

/* Two fp32 values as one 32-bit register of two 16-bit values, lo in the low half. */
__device__ __forceinline__ unsigned
napkin_attn_pack (float lo, float hi, const napkin_f16 *)
{
  unsigned r;
  asm ("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r" (r) : "f" (hi), "f" (lo));
  return r;
}

__device__ __forceinline__ unsigned
napkin_attn_pack (float lo, float hi, const napkin_bf16 *)
{
  unsigned r;
  asm ("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r" (r) : "f" (hi), "f" (lo));
  return r;
}

#if !defined (__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
/* Four fp32 values as e4m3 bytes, a in the lowest. */
__device__ __forceinline__ unsigned
napkin_attn_e4m3x4 (float a, float b, float c, float d)
{
  unsigned short lo, hi;
  asm ("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h" (lo) : "f" (b), "f" (a));
  asm ("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h" (hi) : "f" (d), "f" (c));
  return (unsigned) lo | ((unsigned) hi << 16);
}
#endif

/* ---- score operands (docs/plan.md, "Score operands") -------------------------------------
 * A bias added to the scores or keep flags that hide some, read from device memory per
 * (row, key). Each consumer warp stages its own rows of a key chunk in shared memory (no
 * other warp reads them: a __syncwarp orders the copy and the reads), then every thread
 * takes the values its accumulators hold. */

/* Copies a warp's NR rows (16, or 1 that every row reads) of CB bytes — the chunk's keys —
 * from `src` to `dst`, rows PITCH bytes apart, in VEC-byte pieces: cp.async (zero fill)
 * from 4 bytes, plain loads below. row (i) is the byte offset of row i in src, or −1 for
 * a row the block does not compute; key0 is the chunk's byte offset in a row and `end`
 * the row's length in bytes: pieces past it read as zeros (the keys past NKV, masked
 * anyway). */
template <int NR, int CB, int VEC, int PITCH, typename Row>
__device__ __forceinline__ void
napkin_attn_sc_copy (unsigned dst, const unsigned char *src, Row row, long key0, long end, int lane)
{
  constexpr int U = CB / VEC;

  /* not unrolled: the unrolled copies' addresses, computed up front, spilled beside the
   * scores, P and O (ptxas, sm_90a) */
#pragma unroll 1
  for (int k = 0; k < (NR * U + 31) / 32; k++)
    {
      const int u = lane + 32 * k, i = u / U, b = (u % U) * VEC;

      if (u < NR * U)
        {
          const long off = row (i), left = end - key0 - b;
          const int n = off < 0 || left <= 0 ? 0 : left >= VEC ? VEC : (int) left;
          const unsigned char *p = n > 0 ? src + off + key0 + b : src;
          const unsigned d = dst + i * PITCH + b;

          if (VEC == 16)
            asm volatile ("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r" (d), "l" (p), "r" (n) : "memory");
          else if (VEC >= 4)
            asm volatile ("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r" (d), "l" (p), "n" (VEC), "r" (n)
                          : "memory");
          else if (VEC == 2)
            {
              const unsigned short v = n == 2 ? *(const unsigned short *) p : n == 1 ? *p : 0;

              asm volatile ("st.shared.u16 [%0], %1;" :: "r" (d), "h" (v) : "memory");
            }
          else
            {
              const unsigned short v = n ? *p : 0;

              asm volatile ("st.shared.u8 [%0], %1;" :: "r" (d), "h" (v) : "memory");
            }
        }
    }
}

/* Two adjacent staged elements at shared address `addr` as floats (keep flags: 1 where
 * kept, nonzero, and 0 where hidden); `es`: an element's bytes. */
__device__ __forceinline__ void
napkin_attn_sc_pair (unsigned addr, float &a, float &b, const napkin_f16 *)
{
  unsigned x;

  asm volatile ("ld.shared.b32 %0, [%1];" : "=r" (x) : "r" (addr));
  asm ("cvt.f32.f16 %0, %1;" : "=f" (a) : "h" ((unsigned short) (x & 0xffff)));
  asm ("cvt.f32.f16 %0, %1;" : "=f" (b) : "h" ((unsigned short) (x >> 16)));
}

__device__ __forceinline__ void
napkin_attn_sc_pair (unsigned addr, float &a, float &b, const napkin_bf16 *)
{
  unsigned x;

  asm volatile ("ld.shared.b32 %0, [%1];" : "=r" (x) : "r" (addr));
  a = __uint_as_float (x << 16);
  b = __uint_as_float (x & 0xffff0000u);
}

__device__ __forceinline__ void
napkin_attn_sc_pair (unsigned addr, float &a, float &b, const float *)
{
  asm volatile ("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f" (a), "=f" (b) : "r" (addr));
}

__device__ __forceinline__ void
napkin_attn_sc_pair (unsigned addr, float &a, float &b, const signed char *)
{
  unsigned short x;

  asm volatile ("ld.shared.u16 %0, [%1];" : "=h" (x) : "r" (addr));
  a = (x & 0xff) ? 1.0f : 0.0f;
  b = (x >> 8) ? 1.0f : 0.0f;
}

/* The staged values of key block j a thread's accumulators hold: keys 8j + 2c and
 * 8j + 2c + 1 (c = lane % 4) of its rows lane/4 (v[0], v[1]) and lane/4 + 8 (v[2], v[3])
 * of the warp's NR rows (one row: the same values for both). */
template <int NR, int PITCH, typename T>
__device__ __forceinline__ void
napkin_attn_sc_get (unsigned buf, int j, int lane, float (&v)[4], const T *t)
{
#pragma unroll
  for (int h = 0; h < (NR == 1 ? 1 : 2); h++)
    napkin_attn_sc_pair (buf + (NR == 1 ? 0 : ((lane >> 2) + 8 * h) * PITCH) + (8 * j + 2 * (lane & 3)) * (int) sizeof (T),
                         v[2 * h], v[2 * h + 1], t);
  if (NR == 1)
    v[2] = v[0], v[3] = v[1];
}

/* The byte offset in its operand of row r of a block (group g0 + r / BQ, query
 * q0 + r % BQ), or −1 for a row the block does not compute; with NR 1 (no query stride,
 * no group stride or one group a block) every row's: the block's group's. */
template <int NR, int ES>
__device__ __forceinline__ long
napkin_attn_sc_row (long base, long gs, long rs, long g0, long q0, int r, long bq, long rows, long ng, long nq)
{
  const long g = g0 + r / bq, q = q0 + r % bq;

  if (NR == 1)
    return (base + g0 * gs) * ES;
  return r < rows && g < ng && q < nq ? (base + g * gs + q * rs) * ES : -1L;
}

/* The key range [lo, hi) a block computes narrowed to the keys its padding row keeps:
 * scan (first, last) folds the row's first and last kept key into the shared *first,
 * *last (napkin_attn_sc_scan); none kept leaves an empty range. Every thread calls it. */
template <typename Scan>
__device__ __forceinline__ void
napkin_attn_sc_range (int *kr, long *lo, long *hi, int tid, Scan scan)
{
  if (tid == 0)
    {
      kr[0] = 0x7fffffff;
      kr[1] = -1;
    }
  __syncthreads ();
  scan (&kr[0], &kr[1]);
  __syncthreads ();
  *lo = *lo > kr[0] ? *lo : kr[0];
  *hi = NAPKIN_MIN (*hi, (long) kr[1] + 1);
}

/* The first and the last key of [0, nkv) that the row `src` keeps — flags that are not
 * zero, a bias that is not −∞ (HIDDEN: the element's bits that hide it) — folded into
 * *first and *last in shared memory by atomics; `threads` threads share the row, each
 * reading VEC-byte pieces (elements one by one in the last, partial, piece). */
template <int ES, int VEC, unsigned HIDDEN>
__device__ __forceinline__ void
napkin_attn_sc_scan (const unsigned char *src, long nkv, int *first, int *last, int tid, int threads)
{
  int lo = 0x7fffffff, hi = -1;
  const long pieces = (nkv * ES + VEC - 1) / VEC;

  for (long u = tid; u < pieces; u += threads)
    {
      unsigned w[VEC >= 4 ? VEC / 4 : 1];
      const long k0 = u * (VEC / ES);

      if ((u + 1) * VEC <= nkv * ES && VEC >= 4)
        {
#pragma unroll
          for (int i = 0; i < (VEC >= 4 ? VEC / 4 : 1); i++)
            w[i] = ((const unsigned *) (src + u * VEC))[i];
#pragma unroll
          for (int e = 0; e < VEC / ES; e++)
            {
              const unsigned x = ES == 4 ? w[e] : ES == 2 ? (w[e / 2] >> (16 * (e % 2))) & 0xffff
                                                          : (w[e / 4] >> (8 * (e % 4))) & 0xff;

              if (x != HIDDEN)
                {
                  lo = lo < k0 + e ? lo : (int) (k0 + e);
                  hi = (int) (k0 + e);
                }
            }
        }
      else
        for (int e = 0; e < VEC / ES && k0 + e < nkv; e++)
          {
            const unsigned char *q = src + (k0 + e) * ES;
            const unsigned x = ES == 4 ? *(const unsigned *) q : ES == 2 ? *(const unsigned short *) q : *q;

            if (x != HIDDEN)
              {
                lo = lo < k0 + e ? lo : (int) (k0 + e);
                hi = (int) (k0 + e);
              }
          }
    }
  if (hi >= 0)
    {
      atomicMin (first, lo);
      atomicMax (last, hi);
    }
}

/* Two adjacent output values (an even column: 8-byte or 4-byte aligned). */
__device__ __forceinline__ void
napkin_attn_st2 (float *p, float a, float b)
{
  *(float2 *) p = make_float2 (a, b);
}

__device__ __forceinline__ void
napkin_attn_st2 (napkin_f16 *p, float a, float b)
{
  *(unsigned *) p = napkin_attn_pack (a, b, p);
}

__device__ __forceinline__ void
napkin_attn_st2 (napkin_bf16 *p, float a, float b)
{
  *(unsigned *) p = napkin_attn_pack (a, b, p);
}

/* an fp8 O (the diagram's own type for it, a cast to a wider one usually after): both
 * values rounded as the interpreter rounds them (kernels/fp8-codec.h) */
__device__ __forceinline__ void
napkin_attn_st2 (napkin_e4m3 *p, float a, float b)
{
  *(unsigned short *) p = (unsigned short) (napkin_fp8_encode (a, 3, 7, 448.0f)
                                            | (napkin_fp8_encode (b, 3, 7, 448.0f) << 8));
}

#endif
