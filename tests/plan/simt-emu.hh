/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Runs the printed CUDA-core kernels (kernels/rows-sm80.cu, rows-strided-sm80.cu) on the
 * CPU, for tests/plan/test-rows-emulate.c: a g++ (C++17) stand-in for the part of CUDA
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
