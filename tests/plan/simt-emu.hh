/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Runs the printed CUDA-core kernels (kernels/rows-sm80.cu, rows-strided-sm80.cu) and the
 * attention backward's Hopper launches (kernels/attn-bwd-sm80.cu, NKB_MAIN_SM90: wgmma and
 * cp.async, emulated at the end of this file) on the CPU, for tests/plan/test-rows-emulate.c: a g++ (C++17) stand-in for the part of CUDA
 * they use. Each CUDA thread of a block is a fiber (ucontext); __syncthreads and the warp
 * shuffles are barriers the scheduler waits out, shared memory is a function's static
 * storage (blocks run one after another). It checks what a GPU would fault on or leave
 * undefined: a vector access not aligned to its width, a device-memory access outside
 * its buffer (buffers and the dynamic shared memory lie in one arena with gaps between
 * them), a barrier that not every thread of the block (or warp) reaches.
 * Included before the module's source: its prelude and helpers are skipped by their
 * guards and replaced by the definitions below. */
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

#define NAPKIN_PRELUDE
#define NAPKIN_SIMT_HELPERS
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) alignas (n)

struct napkin_f16 { unsigned short x; };
struct napkin_bf16 { unsigned short x; };
struct NapkinArgs { void *p[64]; };
#define NAPKIN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NAPKIN_NEG_INF (-INFINITY)
#define NKP_CAT_(a, b) a##b
#define NKP_CAT(a, b) NKP_CAT_ (a, b)
#define NKP_L(x) NKP_CAT (x, L)
#define NKP_F(x) NKP_CAT (x, f)
#define NKP_STR_(x) #x
#define NKP_STR(x) NKP_STR_ (x)

[[noreturn]] static void
nk_emu_fail (const char *what, const void *p)
{
  fprintf (stderr, "EMU-ERROR %s (%p)\n", what, p);
  fflush (stderr);
  _Exit (3);
}

/* ---- the device-memory arena ---------------------------------------------------------- */

struct NkEmuBuffer { const char *begin, *end; };
static char *nk_emu_arena, *nk_emu_arena_end, *nk_emu_arena_top;
static std::vector<NkEmuBuffer> nk_emu_buffers;

static void *
nk_emu_alloc (size_t bytes)
{
  const size_t gap = 1 << 16;

  if (nk_emu_arena == nullptr)
    {
      const size_t size = (size_t) 1 << 36;

      nk_emu_arena = (char *) mmap (nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                                    -1, 0);
      if (nk_emu_arena == MAP_FAILED)
        nk_emu_fail ("mmap", nullptr);
      nk_emu_arena_end = nk_emu_arena + size;
      nk_emu_arena_top = nk_emu_arena + gap;
    }
  char *p = nk_emu_arena_top;
  nk_emu_arena_top += (bytes + gap + 255) / 256 * 256;
  nk_emu_buffers.push_back ({ p, p + bytes });
  return p;
}

/* An access of `bytes` at p: inside one buffer when it is in the arena at all (stack
 * and static memory are not checked). */
static inline void
nk_emu_check (const void *p, size_t bytes)
{
  const char *c = (const char *) p;

  if (c < nk_emu_arena || c >= nk_emu_arena_end)
    return;
  for (const NkEmuBuffer &b : nk_emu_buffers)
    if (c >= b.begin && c + bytes <= b.end)
      return;
  nk_emu_fail ("access outside every buffer", p);
}

/* ---- element types --------------------------------------------------------------------- */

static inline float
nk_emu_bits_float (unsigned u)
{
  float f;

  memcpy (&f, &u, 4);
  return f;
}

static inline unsigned
nk_emu_float_bits (float f)
{
  unsigned u;

  memcpy (&u, &f, 4);
  return u;
}

#define __int_as_float(i) nk_emu_bits_float ((unsigned) (i))
#define __uint_as_float(u) nk_emu_bits_float (u)
#define __float_as_uint(f) nk_emu_float_bits (f)
#define __expf expf
static inline float rsqrtf (float x) { return 1.0f / sqrtf (x); }

static inline float
nk_emu_half_to_float (unsigned short h)
{
  unsigned s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float v;

  if (e == 0)
    v = ldexpf ((float) m, -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = ldexpf ((float) (m | 1024), (int) e - 25);
  return s ? -v : v;
}

static inline unsigned short
nk_emu_float_to_half (float f)
{
  unsigned short s = std::signbit (f) ? 0x8000 : 0;
  float a = fabsf (f);
  int e;

  if (std::isnan (f))
    return 0x7e00;
  if (a == 0.0f)   /* (frexpf gives 0's exponent as 0: the binade below made it 0.5) */
    return s;
  if (a >= 65520.0f)
    return s | 0x7c00;
  frexpf (a, &e);                        /* a in [2^(e-1), 2^e) */
  int q = e - 11 < -24 ? -24 : e - 11;   /* the spacing of a's binade (subnormals: 2^-24) */
  float r = nearbyintf (ldexpf (a, -q)); /* round to nearest even */
  unsigned m = (unsigned) r;

  if (q == -24 && m < 1024)
    return s | (unsigned short) m;
  if (m >= 2048)
    {
      m >>= 1;
      q++;
    }
  if (q + 25 >= 31)
    return s | 0x7c00;
  return s | (unsigned short) ((unsigned) (q + 25) << 10 | (m & 1023));
}

static inline float napkin_ld (const float *p) { nk_emu_check (p, 4); return *p; }
static inline float napkin_ld (const napkin_f16 *p) { nk_emu_check (p, 2); return nk_emu_half_to_float (p->x); }
static inline float napkin_ld (const napkin_bf16 *p)
{
  nk_emu_check (p, 2);
  return nk_emu_bits_float ((unsigned) p->x << 16);
}
static inline float napkin_ld (const signed char *p) { nk_emu_check (p, 1); return (float) *p; }
static inline void napkin_st (float *p, float v) { nk_emu_check (p, 4); *p = v; }
static inline void
napkin_st (signed char *p, float v)
{
  nk_emu_check (p, 1);
  *p = (signed char) std::fmax (-128.f, std::fmin (127.f, std::rint (v)));
}
static inline void napkin_st (napkin_f16 *p, float v) { nk_emu_check (p, 2); p->x = nk_emu_float_to_half (v); }
static inline void
napkin_st (napkin_bf16 *p, float v)
{
  unsigned u = nk_emu_float_bits (v);

  nk_emu_check (p, 2);
  if (std::isnan (v))
    p->x = 0x7fc0;
  else
    p->x = (unsigned short) ((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static inline float napkin_round_f16 (float v) { napkin_f16 h; napkin_st (&h, v); return napkin_ld (&h); }
static inline float napkin_round_bf16 (float v) { napkin_bf16 h; napkin_st (&h, v); return napkin_ld (&h); }
static inline float napkin_gelu (float x) { return 0.5f * x * (1.0f + erff (x * 0.70710678f)); }
static inline float napkin_silu (float x) { return x / (1.0f + expf (-x)); }
static inline float napkin_sigmoid (float x) { return 1.0f / (1.0f + expf (-x)); }
static inline float napkin_square (float x) { return x * x; }

/* ---- the vector helpers of kernels/simt-helpers.h ------------------------------------- */

template <int N, typename T>
struct nk_vec
{
  T t[N];

  void
  load (const T *p, bool cs)
  {
    constexpr size_t A = N * sizeof (T) < 16 ? N * sizeof (T) : 16;

    (void) cs;
    if (((uintptr_t) p) % A != 0)
      nk_emu_fail ("a vector load not aligned to its width", p);
    nk_emu_check (p, N * sizeof (T));
    memcpy (t, p, sizeof t);
  }

  void
  get (float *v) const
  {
    for (int i = 0; i < N; i++)
      v[i] = napkin_ld (&t[i]);
  }
};

template <int N, typename T>
static inline void
nk_ldv (const T *p, float *v, bool cs)
{
  nk_vec<N, T> r;

  r.load (p, cs);
  r.get (v);
}

/* the aligned 16-byte vectors that cover N elements at p, shifted; element by element
 * where the second would run past `end` (the same reads as the kernel's) */
template <int N, typename T>
static inline void
nk_ldv_any (const T *p, const T *end, float *v)
{
  constexpr size_t B = N * sizeof (T);

  if constexpr ((B == 16 || B == 32) && (sizeof (T) == 2 || sizeof (T) == 4))
    {
      const uintptr_t a = (uintptr_t) p;
      const unsigned char *q = (const unsigned char *) (a & ~(uintptr_t) 15);
      const unsigned sh = (unsigned) (a & 15);

      if (sh == 0 || (const char *) (q + B + 16) <= (const char *) end)
        {
          unsigned char bytes[B + 16];
          T t[N];

          nk_emu_check (q, B);
          memcpy (bytes, q, B);
          if (sh != 0)
            {
              nk_emu_check (q + B, 16);
              memcpy (bytes + B, q + B, 16);
            }
          memcpy (t, bytes + sh, sizeof t);
          for (int i = 0; i < N; i++)
            v[i] = napkin_ld (&t[i]);
          return;
        }
    }
  for (int i = 0; i < N; i++)
    v[i] = napkin_ld (p + i);
}

template <int N, typename T>
static inline void
nk_stv (T *p, const float *v, bool cs)
{
  constexpr size_t A = N * sizeof (T) < 16 ? N * sizeof (T) : 16;

  (void) cs;
  if (((uintptr_t) p) % A != 0)
    nk_emu_fail ("a vector store not aligned to its width", p);
  for (int i = 0; i < N; i++)
    napkin_st (p + i, v[i]);
}

/* ---- threads, blocks, barriers --------------------------------------------------------- */

struct NkEmuDim { unsigned x, y, z; };
struct NkEmuThread
{
  ucontext_t ctx;
  NkEmuDim   tid;
  bool       done, waiting;
};

static NkEmuThread *nk_emu_cur;
static ucontext_t nk_emu_sched;
static NkEmuDim nk_emu_block, nk_emu_bdim, nk_emu_gdim;
static unsigned long nk_emu_progress;
static unsigned nk_emu_bar_count, nk_emu_bar_gen;
static std::vector<unsigned> nk_emu_warp_count, nk_emu_warp_gen;
static std::vector<float> nk_emu_slots;

#define threadIdx (nk_emu_cur->tid)
#define blockIdx nk_emu_block
#define blockDim nk_emu_bdim
#define gridDim nk_emu_gdim

static void
nk_emu_yield (void)
{
  NkEmuThread *me = nk_emu_cur;

  swapcontext (&me->ctx, &nk_emu_sched);
  nk_emu_cur = me;
}

/* `count` threads meet here: the last one opens the barrier. */
static void
nk_emu_barrier (unsigned *arrived, unsigned *gen, unsigned count)
{
  const unsigned g = *gen;

  if (++*arrived == count)
    {
      *arrived = 0;
      ++*gen;
      nk_emu_progress++;
      return;
    }
  nk_emu_cur->waiting = true;
  while (*gen == g)
    nk_emu_yield ();
  nk_emu_cur->waiting = false;
}

static void
__syncthreads (void)
{
  nk_emu_barrier (&nk_emu_bar_count, &nk_emu_bar_gen, nk_emu_bdim.x);
}

static float
__shfl_xor_sync (unsigned mask, float v, int lane_mask)
{
  const unsigned t = nk_emu_cur->tid.x, w = t / 32, lane = t % 32;
  float r;

  if (mask != 0xffffffffu)
    nk_emu_fail ("a shuffle of part of a warp", nullptr);
  nk_emu_slots[t] = v;
  nk_emu_barrier (&nk_emu_warp_count[w], &nk_emu_warp_gen[w], 32);
  r = nk_emu_slots[w * 32 + (lane ^ (unsigned) lane_mask)];
  nk_emu_barrier (&nk_emu_warp_count[w], &nk_emu_warp_gen[w], 32);
  return r;
}

typedef void (*NkEmuKernel) (const NapkinArgs);
static NkEmuKernel nk_emu_kernel;
static const NapkinArgs *nk_emu_args;

static void
nk_emu_entry (void)
{
  nk_emu_kernel (*nk_emu_args);
  nk_emu_cur->done = true;
  nk_emu_progress++;
  swapcontext (&nk_emu_cur->ctx, &nk_emu_sched);
}

static unsigned char *nk_emu_dyn_smem;
static size_t nk_emu_dyn_bytes;

/* Runs `kernel` over `grid` blocks of `threads` threads, one block after another; its
 * dynamic shared memory is `dyn` bytes of the arena. */
static void
nk_emu_launch (NkEmuKernel kernel, long grid, unsigned threads, size_t dyn, const NapkinArgs &args)
{
  const size_t stack = 1 << 17;
  std::vector<NkEmuThread> th (threads);
  std::vector<char> stacks (stack * threads);

  if (threads % 32 != 0 || threads > 1024)
    nk_emu_fail ("a block of partial warps or more than 1024 threads", nullptr);
  nk_emu_dyn_smem = (unsigned char *) nk_emu_alloc (dyn > 0 ? dyn : 1);
  nk_emu_dyn_bytes = dyn;
  nk_emu_kernel = kernel;
  nk_emu_args = &args;
  nk_emu_bdim = { threads, 1, 1 };
  nk_emu_gdim = { (unsigned) grid, 1, 1 };
  nk_emu_warp_count.assign (threads / 32, 0);
  nk_emu_warp_gen.assign (threads / 32, 0);
  nk_emu_slots.assign (threads, 0.0f);
  for (long b = 0; b < grid; b++)
    {
      unsigned left = threads;

      nk_emu_block = { (unsigned) b, 0, 0 };
      nk_emu_bar_count = 0;
      for (unsigned t = 0; t < threads; t++)
        {
          th[t].tid = { t, 0, 0 };
          th[t].done = th[t].waiting = false;
          getcontext (&th[t].ctx);
          th[t].ctx.uc_stack.ss_sp = &stacks[stack * t];
          th[t].ctx.uc_stack.ss_size = stack;
          th[t].ctx.uc_link = nullptr;
          makecontext (&th[t].ctx, nk_emu_entry, 0);
        }
      while (left > 0)
        {
          const unsigned long before = nk_emu_progress;
          bool all_waiting = true;

          left = 0;
          for (unsigned t = 0; t < threads; t++)
            if (!th[t].done)
              {
                nk_emu_cur = &th[t];
                swapcontext (&nk_emu_sched, &th[t].ctx);
                if (!th[t].done)
                  {
                    left++;
                    all_waiting &= th[t].waiting;
                  }
              }
          if (left > 0 && all_waiting && nk_emu_progress == before)
            nk_emu_fail ("a barrier that not every thread of the block (or warp) reaches", nullptr);
        }
    }
}

/* ---- Hopper's warpgroup products and the async copies (kernels/attn-bwd-sm80.cu's
 * NKB_MAIN_SM90 launches) ------------------------------------------------------------------
 * Shared-memory addresses are offsets into the block's dynamic shared memory (1024-byte
 * aligned, as a GPU's window is). cp.async copies at once (the kernels wait before they
 * read); a wgmma computes at issue from the operands its descriptors name — the 128-byte
 * swizzle's XOR of address bits 4–6 with bits 7–9, K-major rows 128 bytes apart in groups
 * of 8 `sbo` apart, MN-major columns of 64 elements `lbo` apart and groups of 8 along K
 * `sbo` apart — into each thread's accumulator fragment (thread t of the warpgroup: rows
 * 16·(t/32) + (t%32)/4 and + 8, columns 8j + 2·(t%4) and + 1); a register A operand is
 * gathered from the threads that hold it (the mma.sync m16n8k16 A layout of each warp's
 * 16 rows). What a GPU would fault on is checked: a shared-memory access past the block's
 * bytes or misaligned, a descriptor without the 128-byte swizzle, a device-memory access
 * outside its buffer. */
#define NAPKIN_ATTN_PRIMS
#define NAPKIN_ATTN_BWD
#define NAPKIN_ATTN_BWD90

struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
static inline float4 make_float4 (float x, float y, float z, float w) { return { x, y, z, w }; }
struct uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4 (unsigned x, unsigned y, unsigned z, unsigned w) { return { x, y, z, w }; }

struct uint2 { unsigned x, y; };

/* a read-only load of 16, 8 or 4 bytes: aligned, inside its buffer */
template <typename W>
static inline W
nk_emu_ldg (const W *p)
{
  if ((uintptr_t) p % sizeof (W) != 0)
    nk_emu_fail ("a vector load not aligned to its width", p);
  nk_emu_check (p, sizeof (W));
  return *p;
}
static inline uint4 __ldg (const uint4 *p) { return nk_emu_ldg (p); }
static inline uint2 __ldg (const uint2 *p) { return nk_emu_ldg (p); }
static inline unsigned __ldg (const unsigned *p) { return nk_emu_ldg (p); }

/* the low 32 bits of hi:lo shifted right by shift % 32 */
static inline unsigned
__funnelshift_r (unsigned lo, unsigned hi, unsigned shift)
{
  const unsigned long long v = (unsigned long long) hi << 32 | lo;

  return (unsigned) (v >> (shift & 31));
}
#define __log2f log2f

static inline unsigned char *
nk_emu_smem (unsigned addr, size_t bytes, size_t align)
{
  if ((size_t) addr + bytes > nk_emu_dyn_bytes)
    nk_emu_fail ("a shared-memory access past the block's dynamic shared memory", (void *) (uintptr_t) addr);
  if (addr % align != 0)
    nk_emu_fail ("a shared-memory access not aligned to its width", (void *) (uintptr_t) addr);
  return nk_emu_dyn_smem + addr;
}

static inline unsigned
napkin_smem_addr (const void *p)
{
  return (unsigned) ((const unsigned char *) p - nk_emu_dyn_smem);
}

static inline void
napkin_attn_cp16 (unsigned dst, const void *src, unsigned bytes)
{
  unsigned char *d = nk_emu_smem (dst, 16, 16);

  if (bytes > 0)
    {
      nk_emu_check (src, bytes);
      memcpy (d, src, bytes);
    }
  memset (d + bytes, 0, 16 - bytes);
}

static inline void
napkin_bwd_cp4 (unsigned dst, const float *src, bool ok)
{
  float v = 0.0f;

  if (ok)
    v = napkin_ld (src);
  memcpy (nk_emu_smem (dst, 4, 4), &v, 4);
}

/* two fp32 reductions (red.global.add.v2): dst 8-byte aligned */
static inline void
napkin_bwd_red2 (float *dst, float a, float b)
{
  if ((uintptr_t) dst % 8 != 0)
    nk_emu_fail ("a vector reduction not 8-byte aligned", dst);
  napkin_st (dst, napkin_ld (dst) + a);
  napkin_st (dst + 1, napkin_ld (dst + 1) + b);
}

static inline void napkin_bwd9_cp_commit (void) {}
static inline void napkin_bwd9_cp_wait (void) {}
static inline void napkin_bwd9_proxy_fence (void) {}
static inline void napkin_bwd9_wg_fence (void) {}
static inline void napkin_bwd9_wg_commit (void) {}
template <int N> static inline void napkin_bwd9_wg_wait (void) {}
template <int N> static inline void napkin_bwd9_fence (float (&)[N]) {}

static inline void
napkin_bwd9_lds2 (unsigned addr, float (&v)[2])
{
  memcpy (v, nk_emu_smem (addr, 8, 8), 8);
}

static inline void
napkin_bwd9_sts (unsigned addr, unsigned v)
{
  memcpy (nk_emu_smem (addr, 4, 4), &v, 4);
}

static inline float
napkin_attn_exp2 (float x)
{
  return exp2f (x);
}

static inline unsigned
napkin_attn_pack (float lo, float hi, const napkin_f16 *)
{
  return (unsigned) nk_emu_float_to_half (lo) | (unsigned) nk_emu_float_to_half (hi) << 16;
}

static inline unsigned
napkin_attn_pack (float lo, float hi, const napkin_bf16 *)
{
  napkin_bf16 a, b;

  napkin_st (&a, lo);
  napkin_st (&b, hi);
  return (unsigned) a.x | (unsigned) b.x << 16;
}

static inline void napkin_attn_st2 (float *p, float a, float b) { napkin_st (p, a); napkin_st (p + 1, b); }
static inline void napkin_attn_st2 (napkin_f16 *p, float a, float b) { napkin_st (p, a); napkin_st (p + 1, b); }
static inline void napkin_attn_st2 (napkin_bf16 *p, float a, float b) { napkin_st (p, a); napkin_st (p + 1, b); }

static inline unsigned long long
napkin_attn_desc (unsigned addr, unsigned lbo, unsigned sbo)
{
  return (unsigned long long) ((addr & 0x3ffff) >> 4) | ((unsigned long long) ((lbo & 0x3ffff) >> 4) << 16)
         | ((unsigned long long) ((sbo & 0x3ffff) >> 4) << 32) | (1ull << 62);
}

/* The byte address of element (mn, k) of a 16-bit operand, K-major or MN-major. */
static inline unsigned
nk_emu_operand (unsigned long long desc, int mn, int k, bool mn_major)
{
  const unsigned start = (unsigned) (desc & 0x3fff) << 4, lbo = (unsigned) ((desc >> 16) & 0x3fff) << 4;
  const unsigned sbo = (unsigned) ((desc >> 32) & 0x3fff) << 4;
  unsigned a;

  if ((desc >> 62) != 1)
    nk_emu_fail ("a wgmma descriptor without the 128-byte swizzle", nullptr);
  if (mn_major)
    a = start + (unsigned) (mn / 64) * lbo + (unsigned) (k / 8) * sbo + (unsigned) (k % 8) * 128 + (unsigned) (mn % 64) * 2;
  else
    a = start + (unsigned) (mn / 8) * sbo + (unsigned) (mn % 8) * 128 + (unsigned) k * 2;
  return a ^ (((a >> 7) & 7) << 4);
}

static inline float
nk_emu_h16 (unsigned short h, const napkin_f16 *)
{
  return nk_emu_half_to_float (h);
}

static inline float
nk_emu_h16 (unsigned short h, const napkin_bf16 *)
{
  return nk_emu_bits_float ((unsigned) h << 16);
}

template <typename T>
static inline float
nk_emu_smem16 (unsigned addr, const T *tag)
{
  unsigned short h;

  memcpy (&h, nk_emu_smem (addr, 2, 2), 2);
  return nk_emu_h16 (h, tag);
}

static std::vector<unsigned> nk_emu_wg_count, nk_emu_wg_gen;
static std::vector<unsigned> nk_emu_a_slots;

static inline void
nk_emu_wg_barrier (void)
{
  const unsigned w = nk_emu_cur->tid.x / 128;

  if (nk_emu_wg_count.size () <= w)
    {
      nk_emu_wg_count.resize (w + 1, 0);
      nk_emu_wg_gen.resize (w + 1, 0);
    }
  nk_emu_barrier (&nk_emu_wg_count[w], &nk_emu_wg_gen[w], 128);
}

/* d (64 × N, this thread's fragment) = or += A (64 × 16) · B (16 × N) */
template <int NR, typename T, typename GetA>
static inline void
nk_emu_wgmma (float (&d)[NR], GetA get_a, unsigned long long db, bool b_mn_major, int acc, const T *tag)
{
  const unsigned t = nk_emu_cur->tid.x % 128, w = t / 32, lane = t % 32;

  for (int i = 0; i < NR; i++)
    {
      const int row = (int) (16 * w + lane / 4 + 8 * ((i % 4) / 2)), col = 8 * (i / 4) + (int) (2 * (lane % 4)) + i % 2;
      float s = 0.0f;

      for (int k = 0; k < 16; k++)
        s += get_a (row, k) * nk_emu_smem16 (nk_emu_operand (db, col, k, b_mn_major), tag);
      d[i] = acc ? d[i] + s : s;
    }
}

template <int NR, typename T>
static inline void
nk_emu_wgmma_ss (float (&d)[NR], unsigned long long da, unsigned long long db, int acc, bool ta, bool tb, const T *tag)
{
  nk_emu_wg_barrier ();
  nk_emu_wgmma (d, [&] (int m, int k) { return nk_emu_smem16 (nk_emu_operand (da, m, k, ta), tag); }, db, tb, acc, tag);
  nk_emu_wg_barrier ();
}

template <typename T>
static inline void napkin_bwd9_ss (float (&d)[32], unsigned long long da, unsigned long long db, int acc, const T *tag)
{
  nk_emu_wgmma_ss (d, da, db, acc, false, false, tag);
}

template <typename T>
static inline void napkin_bwd9_ss_t (float (&d)[32], unsigned long long da, unsigned long long db, int acc, const T *tag)
{
  nk_emu_wgmma_ss (d, da, db, acc, true, true, tag);
}

/* A from the registers of the warpgroup's threads: row r's k = 2c, 2c + 1 (and 8 + …) are
 * thread 32·(r/16) + 4·(r%8) + c's register (r%16 ≥ 8) + 2·(k ≥ 8) */
template <int NR, typename T>
static inline void
napkin_bwd9_rs (float (&d)[NR], const unsigned (&a)[4], unsigned long long db, const T *tag)
{
  const unsigned t = nk_emu_cur->tid.x, base = t / 128 * 128;

  if (nk_emu_a_slots.size () < nk_emu_bdim.x * 4)
    nk_emu_a_slots.resize (nk_emu_bdim.x * 4);
  for (int i = 0; i < 4; i++)
    nk_emu_a_slots[t * 4 + i] = a[i];
  nk_emu_wg_barrier ();
  nk_emu_wgmma (d,
                [&] (int m, int k) {
                  const unsigned owner = base + 32 * (unsigned) (m / 16) + 4 * (unsigned) (m % 8) + (unsigned) (k % 8) / 2;
                  const unsigned reg = nk_emu_a_slots[owner * 4 + (m % 16 >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)];

                  return nk_emu_h16 ((unsigned short) (k % 2 ? reg >> 16 : reg & 0xffff), tag);
                },
                db, true, 1, tag);
  nk_emu_wg_barrier ();
}

/* one block runs at a time: an atomic add is an add */
static inline float
atomicAdd (float *p, float v)
{
  const float old = napkin_ld (p);

  napkin_st (p, old + v);
  return old;
}

static inline void
napkin_bwd9_sts2 (unsigned addr, float a, float b)
{
  float v[2] = { a, b };

  memcpy (nk_emu_smem (addr, 8, 8), v, 8);
}

static inline void napkin_bwd9_wg_sync (int) { nk_emu_wg_barrier (); }

/* the copy engine's reduction, at once (the kernels wait before they reuse the source) */
static inline void
napkin_bwd9_bulk_add (float *dst, unsigned src, unsigned bytes)
{
  const unsigned char *from = nk_emu_smem (src, bytes, 16);

  if (bytes % 16 != 0 || (uintptr_t) dst % 16 != 0)
    nk_emu_fail ("a bulk reduction not in 16-byte pieces", dst);
  for (unsigned i = 0; i < bytes / 4; i++)
    {
      float v;

      memcpy (&v, from + 4 * i, 4);
      napkin_st (dst + i, napkin_ld (dst + i) + v);
    }
}

static inline void napkin_bwd9_bulk_commit (void) {}
static inline void napkin_bwd9_bulk_wait_read1 (void) {}
static inline void napkin_bwd9_bulk_wait (void) {}


/* ---- Ampere's warp products (kernels/gemm-sm80.cu's napkin_mma_* helpers) -----------------
 * cp.async copies at once (the kernel waits before it reads) and checks that a piece's
 * source and destination are aligned to its width; ldmatrix and mma.sync gather what
 * the 32 lanes of the warp hold (each lane's address, or its fragment registers), meet,
 * and give each lane its part: ldmatrix lane l row l/4, elements 2(l%4) and + 1 of each
 * 8×8 matrix (.trans: of the transposed matrix); mma.sync m16n8k16 A rows l/4 and + 8,
 * columns 2(l%4), + 1, + 8, + 9; B columns l/4, rows 2(l%4), + 1, + 8, + 9; D rows l/4
 * and + 8, columns 2(l%4) and + 1 (the PTX manual's fragment layouts). */
#define NAPKIN_MMA_PRIMS

static std::vector<unsigned> nk_emu_mma_slots;

/* Puts `n` words of this lane into the warp's slots and waits for the whole warp: the
 * slots of lane j are then at the returned pointer + 8 j. */
static inline const unsigned *
nk_emu_warp_gather (const unsigned *v, int n)
{
  const unsigned t = nk_emu_cur->tid.x, w = t / 32;

  if (nk_emu_mma_slots.size () < 8 * nk_emu_bdim.x)
    nk_emu_mma_slots.resize (8 * nk_emu_bdim.x);
  for (int i = 0; i < n; i++)
    nk_emu_mma_slots[8 * t + i] = v[i];
  nk_emu_barrier (&nk_emu_warp_count[w], &nk_emu_warp_gen[w], 32);
  return &nk_emu_mma_slots[8 * 32 * w];
}

/* ...and waits again before the slots are reused */
static inline void
nk_emu_warp_release (void)
{
  const unsigned w = nk_emu_cur->tid.x / 32;

  nk_emu_barrier (&nk_emu_warp_count[w], &nk_emu_warp_gen[w], 32);
}

template <int BYTES>
static inline void
napkin_mma_cp (unsigned dst, const void *src, int valid)
{
  unsigned char *d = nk_emu_smem (dst, BYTES, BYTES);

  if (valid < 0 || valid > BYTES)
    nk_emu_fail ("a cp.async src-size outside 0…its width", src);
  if (valid > 0)
    {
      if ((uintptr_t) src % BYTES != 0)
        nk_emu_fail ("a cp.async source not aligned to its width", src);
      nk_emu_check (src, (size_t) valid);
      memcpy (d, src, (size_t) valid);
    }
  memset (d + valid, 0, (size_t) (BYTES - valid));
}

static inline void napkin_mma_commit (void) {}
template <int N> static inline void napkin_mma_wait (void) {}

static inline unsigned short
nk_emu_smem_u16 (unsigned addr)
{
  unsigned short h;

  memcpy (&h, nk_emu_smem (addr, 2, 2), 2);
  return h;
}

template <bool T>
static inline void
napkin_mma_ldsm4 (unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3)
{
  const unsigned lane = nk_emu_cur->tid.x % 32, g = lane / 4, c = lane % 4;
  const unsigned *rows = nk_emu_warp_gather (&addr, 1);
  unsigned r[4];

  for (int j = 0; j < 4; j++)
    {
      const unsigned *m = rows + 8 * 8 * j;   /* the row addresses of matrix j: lanes 8j … 8j + 7 */

      for (int i = 0; i < 8; i++)
        nk_emu_smem (m[8 * i], 16, 16);   /* each row 16 bytes, 16-byte aligned */
      if (T)
        r[j] = nk_emu_smem_u16 (m[8 * (2 * c)] + 2 * g) | (unsigned) nk_emu_smem_u16 (m[8 * (2 * c + 1)] + 2 * g) << 16;
      else
        r[j] = nk_emu_smem_u16 (m[8 * g] + 4 * c) | (unsigned) nk_emu_smem_u16 (m[8 * g] + 4 * c + 2) << 16;
    }
  nk_emu_warp_release ();
  r0 = r[0];
  r1 = r[1];
  r2 = r[2];
  r3 = r[3];
}

template <typename T>
static inline void
napkin_mma_16816 (float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, const T *tag)
{
  const unsigned lane = nk_emu_cur->tid.x % 32, g = lane / 4, c = lane % 4;
  const unsigned mine[6] = { a[0], a[1], a[2], a[3], b0, b1 };
  const unsigned *all = nk_emu_warp_gather (mine, 6);
  /* element k of A's row r, of B's column n: the lane, register and half that hold it */
  auto A = [&] (unsigned r, unsigned k) {
    const unsigned w = all[8 * ((r % 8) * 4 + (k % 8) / 2) + (r >= 8) + 2 * (k >= 8)];
    return nk_emu_h16 ((unsigned short) (k % 2 ? w >> 16 : w & 0xffff), tag);
  };
  auto B = [&] (unsigned k, unsigned n) {
    const unsigned w = all[8 * (n * 4 + (k % 8) / 2) + 4 + (k >= 8)];
    return nk_emu_h16 ((unsigned short) (k % 2 ? w >> 16 : w & 0xffff), tag);
  };
  float out[4];

  for (int i = 0; i < 4; i++)
    {
      const unsigned r = g + 8 * (i / 2), n = 2 * c + i % 2;
      float s = d[i];

      for (unsigned k = 0; k < 16; k++)
        s += A (r, k) * B (k, n);
      out[i] = s;
    }
  nk_emu_warp_release ();
  for (int i = 0; i < 4; i++)
    d[i] = out[i];
}

/* ---- kernels/tile-store.cuh: vectors of C and of the epilogue's operands ------------------
 * Each access checked for its vector's alignment and its buffer's bounds, the elements
 * converted one by one. */
#define NAPKIN_TILE_STORE

template <typename T>
static inline void
nk_emu_aligned (const T *p, size_t bytes)
{
  if ((uintptr_t) p % bytes != 0)
    nk_emu_fail ("a vector access not aligned to its width", p);
  nk_emu_check (p, bytes);
}

template <typename T>
static inline unsigned
napkin_pack2 (const T *, float a, float b)
{
  T lo, hi;

  napkin_st (&lo, a);
  napkin_st (&hi, b);
  return (unsigned) lo.x | (unsigned) hi.x << 16;
}

template <typename T>
static inline void
napkin_st2 (T *p, float a, float b)
{
  nk_emu_aligned (p, 2 * sizeof (T));
  napkin_st (p, a);
  napkin_st (p + 1, b);
}

template <typename T>
static inline void
napkin_st4 (T *p, float a, float b, float c, float d)
{
  nk_emu_aligned (p, 4 * sizeof (T) < 16 ? 4 * sizeof (T) : 16);
  napkin_st (p, a);
  napkin_st (p + 1, b);
  napkin_st (p + 2, c);
  napkin_st (p + 3, d);
}

template <typename T>
static inline void
napkin_st8 (T *p, const float (&v)[8])
{
  nk_emu_aligned (p, 16);
  for (int i = 0; i < 8; i++)
    napkin_st (p + i, v[i]);
}

template <typename T>
static inline void
napkin_ldbits1 (const T *p, unsigned *r)
{
  r[0] = 0;
  nk_emu_check (p, sizeof (T));
  memcpy (r, p, sizeof (T));
}

template <typename T>
static inline void
napkin_ldbits16 (const T *p, unsigned *r)
{
  nk_emu_aligned (p, 16);
  memcpy (r, p, 16);
}

static inline float napkin_bits_f (const float *, unsigned u) { return nk_emu_bits_float (u); }
static inline float napkin_bits_f (const signed char *, unsigned u) { return (float) (signed char) u; }

template <typename T>
static inline float
napkin_bits_f (const T *, unsigned u)
{
  T v;

  v.x = (decltype (v.x)) u;
  return napkin_ld (&v);
}

template <typename T>
static inline void
napkin_unpack2 (const T *p, unsigned u, float *v)
{
  v[0] = napkin_bits_f (p, u & 0xffff);
  v[1] = napkin_bits_f (p, u >> 16);
}

template <typename T>
static inline void
napkin_ld8 (const T *p, float (&v)[8])
{
  nk_emu_aligned (p, 16);
  for (int i = 0; i < 8; i++)
    v[i] = napkin_ld (p + i);
}

static inline void
napkin_ld4 (const float *p, float *v)
{
  nk_emu_aligned (p, 16);
  for (int i = 0; i < 4; i++)
    v[i] = napkin_ld (p + i);
}
