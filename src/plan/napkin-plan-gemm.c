/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <string.h>

#include "napkin-plan-private.h"

/* Contractions on tensor cores (docs/plan.md, "GEMM"): a kernel holding one contraction
 * and a chain of element-wise maps after it becomes C[b,m,n] = epilogue (A·B) on wgmma
 * (Hopper) or mma.sync (Ampere and later), whatever its sizes; the relabeling's tiles
 * are kept where the instructions allow and adjusted (and said so) where not. */

#define SMEM_LIMIT(p) ((gint64) (p)->arch->smem_max_per_block)

typedef struct
{
  guint  axes[NAPKIN_MAX_RANK];
  guint  n;
} AxisList;

/* A group of axes the product flattens into one (its batch, rows, columns or contracted
 * axes), in the order of the value that fixes it. */
static int
position (const AxisList *group,
          guint           axis)
{
  return _napkin_plan_axes_position (group->axes, group->n, axis);
}

/* Where `axis` stands in a value's layout, or −1. */
static int
at (const NapkinPlanLayout *l,
    guint                   axis)
{
  return _napkin_plan_axes_position (l->axes, l->n, axis);
}

/* The axes of `group` lie in `layout` as one contiguous run in the same order; its
 * first position (or −1 when they do not). An empty group lies anywhere (returns −2). */
static int
run_of (const NapkinPlanLayout *layout,
        const AxisList         *group)
{
  return _napkin_plan_layout_run (layout, group->axes, group->n);
}

static gint64
product (NapkinPlanner  *p,
         const AxisList *group)
{
  gint64 v = 1;

  for (guint i = 0; i < group->n; i++)
    v *= napkin_diagram_axis_size (p->d, group->axes[i]);
  return v;
}

static gboolean
tensor_core_type (NapkinDtype t)
{
  return t == NAPKIN_DTYPE_FP16 || t == NAPKIN_DTYPE_BF16 || t == NAPKIN_DTYPE_FP8_E4M3 || t == NAPKIN_DTYPE_FP8_E5M2;
}

/* The region of the kernel that cuts its thread blocks: its shared-memory region (the
 * top-level one, or the one inside an L2 panel), else the top-level region; −1 for a
 * kernel of one operation. */
static int
block_region (NapkinPlanner          *p,
              const NapkinPlanKernel *k)
{
  if (k->region < 0 || napkin_diagram_region (p->d, k->region)->level >= NAPKIN_LEVEL_SMEM)
    return k->region;
  for (guint r = 0; r < napkin_diagram_n_regions (p->d); r++)
    {
      int top = r;

      while (p->parent[top] >= 0)
        top = p->parent[top];
      if (top == k->region && napkin_diagram_region (p->d, r)->level == NAPKIN_LEVEL_SMEM)
        return r;
    }
  return k->region;
}

/* Where the kernel's block region cuts an axis: its tile, or 0 when whole or unmarked. */
static gint64
region_tile (NapkinPlanner    *p,
             const NapkinPlanKernel *k,
             guint             axis,
             NapkinMarkKind   *kind)
{
  gint64 tile = 0;
  NapkinMarkKind mk;
  int r = block_region (p, k);

  if (r < 0)
    {
      *kind = NAPKIN_MARK_WHOLE;
      return 0;
    }
  mk = napkin_region_mark (napkin_diagram_region (p->d, r), napkin_diagram_axis (p->d, axis)->name, &tile);
  *kind = mk;
  return mk == NAPKIN_MARK_WHOLE ? 0 : tile;
}

/* The name of a group's innermost axis: the one a region's marks name for the group. */
static const char *
inner_axis_name (NapkinPlanner  *p,
                 const AxisList *group)
{
  return napkin_diagram_axis (p->d, group->axes[group->n - 1])->name;
}

/* The block tile of a group of axes that the product flattens into one (M = h·d):
 * the tile as a whole, not its last axis alone. From the innermost axis out, an axis the
 * region covers (whole, or a tile at least its size) multiplies the tile by its size and
 * passes on to the next; the first axis it cuts ends the run with its tile (the axes
 * outside it then take groups of 1, so the block's elements stay consecutive). A per-head
 * tile of a projection, h = 1 × d whole (128), is a 128-wide block. 0 with WHOLE when
 * the region covers every axis of the group. */
static gint64
group_tile (NapkinPlanner          *p,
            const NapkinPlanKernel *k,
            const AxisList         *group,
            NapkinMarkKind         *kind)
{
  gint64 tile = 1;

  *kind = NAPKIN_MARK_WHOLE;
  for (int i = (int) group->n - 1; i >= 0; i--)
    {
      NapkinMarkKind mk;
      gint64 t = region_tile (p, k, group->axes[i], &mk);
      gint64 size = napkin_diagram_axis_size (p->d, group->axes[i]);

      if (mk != NAPKIN_MARK_WHOLE && t < size)
        {
          *kind = mk;
          return tile * t;
        }
      if (mk != NAPKIN_MARK_WHOLE && *kind == NAPKIN_MARK_WHOLE)
        *kind = mk;
      tile *= size;
    }
  return *kind == NAPKIN_MARK_WHOLE ? 0 : tile;
}

static void
adjust (NapkinPlanKernel *k,
        const char       *format,
        ...) G_GNUC_PRINTF (2, 3);

static void
adjust (NapkinPlanKernel *k,
        const char       *format,
        ...)
{
  va_list args;

  va_start (args, format);
  g_ptr_array_add (k->adjustments, g_strdup_vprintf (format, args));
  va_end (args);
}

/* ---- tiles ---------------------------------------------------------------------------------- */

gint64
napkin_plan_gemm_smem (NapkinPath            path,
                       const NapkinPlanGemm *g)
{
  g_return_val_if_fail (g != NULL, 0);

  if (path == NAPKIN_PATH_WGMMA)
    {
      /* chunks of one 128-byte swizzle row in flight, two 8 KB buffers of C per consumer
       * warpgroup, 1 KB to align them, a pair of mbarriers per chunk (ping-pong: and
       * one a consumer) */
      gint64 row = 128 / MAX (1u, napkin_dtype_bytes (g->ab_dtype));
      gint64 chunks = (gint64) MAX (g->stages, 1u) * MAX (1, g->BK / row);
      gint64 consumers = g->consumers > 0 ? g->consumers : 2;

      return chunks * (g->BM + (g->dual ? 2 : 1) * g->BN) * 128 + 2 * consumers * 8192 + 1024 + 16 * chunks
             + (g->pingpong ? 8 * consumers : 0);
    }
  /* mma.sync: A and B as stored, rows padded by 8 halves against bank conflicts */
  return (gint64) MAX (g->stages, 2u)
         * ((g->a_kmajor ? g->BM * (g->BK + 8) : g->BK * (g->BM + 8))
            + (g->b_kmajor ? g->BN * (g->BK + 8) : g->BK * (g->BN + 8))) * 2;
}

/* The shared memory of tiles `t` for the GEMM `g` (its layouts and types). */
static gint64
tiles_smem (const NapkinPlanGemm *g,
            gint64                BM,
            gint64                BN,
            gint64                BK,
            guint                 stages,
            gboolean              wgmma)
{
  NapkinPlanGemm t = *g;

  t.BM = BM;
  t.BN = BN;
  t.BK = BK;
  t.stages = stages;
  t.consumers = BM == 64 ? 1 : 2;
  return napkin_plan_gemm_smem (wgmma ? NAPKIN_PATH_WGMMA : NAPKIN_PATH_MMA, &t);
}

typedef struct
{
  gint64 BM, BN, split;
  double cost;            /* choose_tile's estimate of it */
} Tile;

/* How a GEMM's operands reach shared memory, for the estimates: TMA and wgmma, or
 * cp.async and mma.sync with copies of a_piece and b_piece bytes (0: 16). */
typedef struct
{
  gboolean mma;
  guint    a_piece, b_piece;
} GemmLoads;

/* Whether the loads read an operand in place by copies narrower than 16 bytes. */
static gboolean
gemm_loads_narrow (const GemmLoads *loads)
{
  return loads != NULL && loads->mma && (loads->a_piece % 16 != 0 || loads->b_piece % 16 != 0);
}

/* Which operands the GEMM reads in place by narrow copies ("A", "B", "A and B"; NULL:
 * none), and the narrowest copy's bytes, for its notes. */
static const char *
gemm_in_place_operands (const NapkinPlanGemm *g,
                        guint                *bytes)
{
  const gboolean a = g->a_piece % 16 != 0, b = g->b_piece % 16 != 0;

  *bytes = a && b ? MIN (g->a_piece, g->b_piece) : a ? g->a_piece : g->b_piece;
  return a && b ? "A and B" : a ? "A" : b ? "B" : NULL;
}

/* Tiles under 64 rows of a product that reads an operand in place (mma.sync, a skinny
 * product: a few tokens against a weight) are bound by their operand's stream, not their
 * products: GEMM_SKINNY_BLOCKS of them share an SM at once, so that its copies in flight
 * cover device memory's latency. An assumption, not yet measured (docs/plan.md, "Reading
 * unaligned operands in place"). */
#define GEMM_SKINNY_BLOCKS 4

/* K may be cut in `split` slices: the tiles alone leave SMs idle (at most half of them
 * busy… as before, a split never makes more blocks than SMs, or than skinny tiles'
 * GEMM_SKINNY_BLOCKS an SM) and every slice keeps at least 4 chunks. */
static gboolean
split_ok (NapkinPlanner *p,
          gboolean       skinny,
          gint64         batch,
          gint64         M,
          gint64         N,
          gint64         K,
          gint64         BM,
          gint64         BN,
          gint64         BK,
          gint64         split)
{
  const gint64 sms = MAX (1, (gint64) p->arch->sms);
  const gint64 tiles = batch * ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const gint64 chunks = (K + BK - 1) / BK;

  return split <= 16 && tiles * split <= sms * (skinny && BM < 64 ? GEMM_SKINNY_BLOCKS : 1) && chunks / split >= 4;
}

/* Rough relative cost of a tile shape on one SM for the heuristic choice below: larger
 * tiles reuse each loaded byte more (arithmetic intensity ∝ BM·BN/(BM+BN)). */
static double
tile_efficiency (gint64 BM,
                 gint64 BN)
{
  double intensity = (double) BM * BN / (BM + BN);

  return MIN (1.0, intensity / 85.3);   /* 128×256 reaches the peak */
}

/* A rough time of a GEMM run as tiles BM × BN with K cut in `split` slices of whole
 * chunks of BK, for choosing among shapes (docs/plan.md, "Tiles"): waves of blocks, each
 * block the longer of its products (at the tile's efficiency) and its loads (its A and
 * B panels through L2, the SMs sharing L2's bandwidth); never less than reading the
 * operands once from device memory; a split adds its partials' round trip through L2
 * and the reduction's launch. */
static double
gemm_estimate (NapkinPlanner *p,
               gint64         batch,
               gint64         M,
               gint64         N,
               gint64         K,
               gint64         BM,
               gint64         BN,
               gint64         BK,
               gint64         split,
               guint          bytes,
               const GemmLoads *loads)
{
  const NapkinArch *a = p->arch;
  const double sms = MAX (1u, a->sms);
  const gint64 chunks = (K + BK - 1) / BK, slice = (chunks + split - 1) / split * BK;
  const gint64 blocks = batch * ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * split;
  /* skinny tiles of a product read in place run several blocks an SM at once, sharing it */
  const gboolean skinny = BM < 64 && gemm_loads_narrow (loads);
  const double resident = skinny ? GEMM_SKINNY_BLOCKS : 1;
  const double waves = ceil (blocks / (sms * resident));
  NapkinTensorClass klass;
  double peak = 0.0, l2, hbm, compute, load, t;

  if (napkin_tensor_class_for_dtype (bytes == 1 ? NAPKIN_DTYPE_FP8_E4M3 : NAPKIN_DTYPE_BF16, &klass))
    peak = a->tensor_per_sm_clock[klass] * (a->tensor_clock_hz > 0 ? a->tensor_clock_hz : a->clock_hz);
  /* set against wgmma's estimates, mma.sync's own rate (on Ampere the same) at the share
   * the plan's mma.sync kernel sustains where wgmma exists */
  if (loads != NULL && loads->mma && peak > 0)
    {
      NapkinPlanGemm g = { 0 };

      peak = napkin_arch_mma_sync_rate (a, klass) / sms * napkin_plan_gemm_tensor_share (a, NAPKIN_PATH_MMA, &g);
    }
  if (peak <= 0)
    peak = 1e12;
  /* TMA moves panels faster than the thread loads L2's figure was measured with */
  l2 = MAX (1e9, a->levels[NAPKIN_LEVEL_L2].bandwidth) * 1.5;
  hbm = MAX (1e9, a->levels[NAPKIN_LEVEL_HBM].bandwidth);
  /* n64 wgmmas (and a single warpgroup's) keep the tensor cores busy only part of the
   * time: 64-column tiles measured at about 0.6 of what their intensity predicts on the
   * H100 (round-1 runs, docs/plan.md) */
  /* (the skinny tiles' time is their loads': no such measure of their products) */
  compute = 2.0 * BM * BN * slice / (peak * (skinny ? 1.0 : tile_efficiency (BM, BN) * (BN < 128 ? 0.6 : 1.0)));
  load = (double) (BM + BN) * slice * bytes / (l2 / MIN (sms, ceil (blocks / resident)));
  t = waves * resident * MAX (compute, load);
  if (gemm_loads_narrow (loads))
    {
      NapkinPlanGemm g = { .ab_dtype = bytes == 1 ? NAPKIN_DTYPE_FP8_E4M3 : NAPKIN_DTYPE_BF16,
                           .a_piece = loads->a_piece, .b_piece = loads->b_piece };

      t += waves * resident * (double) (slice / BK) * napkin_plan_gemm_narrow_chunk_s (a, &g, BM, BN, BK);
    }
  if (skinny && a->levels[NAPKIN_LEVEL_HBM].latency_s > 0)
    {
      /* a skinny tile's stream waits on device memory's latency: each SM keeps its
       * blocks' next two chunks (of mma.sync's three stages) in flight, no more */
      const double per_sm = ceil (blocks / sms), at_once = MIN (resident, per_sm);
      const double in_flight = at_once * 2.0 * (BM + BN) * BK * bytes;

      t = MAX (t, per_sm * (BM + BN) * slice * bytes * a->levels[NAPKIN_LEVEL_HBM].latency_s / in_flight);
    }
  t = MAX (t, (double) batch * (M * K + K * N) * bytes / hbm);
  if (split > 1)
    t += 2.0 * split * batch * M * N * 4 / l2 + 0.5 * a->launch_overhead_s;   /* launched behind the GEMM */
  return t;
}

static gboolean maps_read_or_transcend (const GArray *maps);

/* Picks the block tile and split of K for a GEMM the user did not tile (or tiled
 * illegally): the candidate shape and split with the least estimated time. */
static Tile
choose_tile (NapkinPlanner *p,
             gint64         batch,
             gint64         M,
             gint64         N,
             gint64         K,
             gint64         BK,
             guint          bytes,
             gboolean       wgmma,
             gboolean       long_epilogue,
             const GemmLoads *loads)
{
  /* 192 columns last (the choice below keeps an earlier shape within 3 %), unsplit, over
   * at least 8 chunks of K, only where they make no fewer blocks than the shape chosen
   * before them, and not where a long epilogue (`long_epilogue`: maps that read an
   * operand or compute a transcendental) would take ping-pong 64 × 256 tiles, which 192
   * columns cannot. Measured on an H200 (docs/perf-notes.md, session 24): N = 352 in
   * 2 × 192 (384 computed) rather than 2 × 256 (512) ran 1.43× faster, N = 768 in 4 × 192
   * rather than 3 × 256 1.19× (more SMs busy); short K (2 chunks or fewer), where the
   * epilogue is the tile's time, ran 7 % slower; taken wherever this estimate preferred
   * them they also replaced 128 × 128 (90 blocks) by 128 × 192 (60, or split) and ran
   * 1.2× slower. */
  static const Tile wgmma_tiles[] = { { 128, 256 }, { 256, 128 }, { 128, 128 }, { 128, 64 }, { 64, 256 },
                                      { 64, 128 }, { 64, 64 }, { 128, 192 }, { 64, 192 } };
  /* 16 and 32 rows last, for the skinny products (a few tokens against a weight) that
   * read a large operand in place: the tiles above would compute 64 rows for 2 */
  static const Tile mma_tiles[] = { { 128, 256 }, { 256, 128 }, { 128, 128 }, { 128, 64 }, { 64, 128 },
                                    { 64, 64 }, { 32, 128 }, { 32, 256 }, { 32, 64 }, { 16, 128 }, { 16, 256 },
                                    { 16, 64 } };
  const Tile *tiles = wgmma ? wgmma_tiles : mma_tiles;
  guint n_tiles = wgmma ? G_N_ELEMENTS (wgmma_tiles) : G_N_ELEMENTS (mma_tiles);
  Tile best = tiles[0];
  double best_cost = G_MAXDOUBLE, best_work = 0;
  gint64 best_busy = 0, best_blocks = 0;
  const gint64 sms = MAX (1, (gint64) p->arch->sms);

  best.split = 1;
  for (guint i = 0; i < n_tiles; i++)
    for (gint64 split = 1; split <= 16; split++)
      {
        const gint64 BM = tiles[i].BM, BN = tiles[i].BN;
        const gint64 blocks = batch * ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * split;
        const gint64 busy = MIN (blocks, sms);
        const double work = (double) blocks * BM * BN * (((K + BK - 1) / BK + split - 1) / split);
        double cost;

        /* a tile twice its axis (rounded to 64) or more computes only padding in its
         * other half: 256×128 blocks over N = 64 ran 1.14× slower than 128×64 on an
         * H200 (docs/perf-notes.md, "Session 13") */
        if (BM >= 2 * ((M + 63) / 64 * 64) || BN >= 2 * ((N + 63) / 64 * 64))
          continue;
        if (BN == 192 && (split > 1 || blocks < best_blocks || (K + BK - 1) / BK < 8
                          || (long_epilogue && batch * ((M + 63) / 64) * ((N + 255) / 256) >= 2 * sms)))
          continue;
        if (split > 1 && !split_ok (p, gemm_loads_narrow (loads), batch, M, N, K, BM, BN, BK, split))
          continue;
        /* a tile under 64 rows only for a product read in place, where it covers M in
         * fewer blocks of rows */
        if (BM < 64 && (!gemm_loads_narrow (loads) || M > 2 * BM))
          continue;
        cost = gemm_estimate (p, batch, M, N, K, BM, BN, BK, split, bytes, loads);
        /* clearly faster; or, while the GPU is not full, as fast (memory-bound shapes)
         * with more SMs busy, or as many with less padding computed; or a skinny tile
         * as fast computing less padding (2 rows in 16, not 64: mma.sync's products
         * are not free) */
        if (cost < best_cost * 0.97
            || (cost <= best_cost * 1.03 && best_busy < sms
                && (busy > best_busy || (busy == best_busy && work < best_work)))
            || (cost <= best_cost * 1.03 && BM < 64 && busy >= best_busy && work < best_work))
          {
            best_cost = MIN (cost, best_cost);
            best = tiles[i];
            best.split = split;
            best.cost = cost;
            best_busy = busy;
            best_work = work;
            best_blocks = blocks;
          }
      }
  return best;
}

/* wgmma's tile rules as the Hopper printer checks them: BN any multiple of 8 when B is
 * K-major (one TMA box of BN rows), of 64 when N-major (boxes of 64 columns). */
static gboolean
wgmma_tile_ok (gint64   BM,
               gint64   BN,
               gboolean b_kmajor)
{
  if (BM != 64 && BM != 128 && BM != 256)
    return FALSE;
  if (BN % (b_kmajor ? 8 : 64) != 0 || BN < (b_kmajor ? 8 : 64) || BN > 256)
    return FALSE;
  return BM / (BM == 64 ? 1 : 2) * BN / 128 <= 128;   /* accumulators per consumer thread */
}

static gboolean
mma_tile_ok (gint64 BM,
             gint64 BN,
             gint64 WM,
             gint64 WN)
{
  return BM % 16 == 0 && BN % 16 == 0 && BM >= 16 && BN >= 16 && WM % 16 == 0 && WN % 16 == 0 && WM > 0 && WN > 0
         && BM % WM == 0 && BN % WN == 0 && (BM / WM) * (BN / WN) <= 16 && WM * WN / 32 <= 128;
}

/* ---- helper kernels ------------------------------------------------------------------------- */

void
napkin_plan_helper_launch (NapkinPlanKernel *k)
{
  g_return_if_fail (k != NULL);

  k->threads = 256;
  k->smem_bytes = 0;
  if (k->kind == NAPKIN_PLAN_REPACK)
    {
      const NapkinPlanRepack *r = &k->u.repack;
      const gint64 es = napkin_dtype_bytes (r->dtype), v = 16 / MAX (es, 1);
      gint64 blocks;

      if (r->transpose)
        {
          /* 64 × 64 tiles of dst (cols × ld_dst); a row of the tile padded against bank
           * conflicts (kernels/repack.cu, G_PAD) */
          blocks = r->batch * ((r->cols + 63) / 64) * ((r->ld_dst + 63) / 64);
          k->smem_bytes = 64 * (64 + (es == 1 ? 2 : 1)) * es;
        }
      else
        blocks = (r->batch * r->rows * (r->ld_dst / v) + 255) / 256;   /* a 16-byte chunk a thread */
      k->grid = MAX (1, MIN (blocks, NAPKIN_PLAN_MAX_GRID));
    }
  else if (k->kind == NAPKIN_PLAN_SPLIT_REDUCE)
    {
      const NapkinPlanGemm *g = &k->u.gemm;

      /* 4 columns a thread */
      k->grid = MAX (1, MIN ((g->batch * g->M * ((g->N + 3) / 4) + 255) / 256, NAPKIN_PLAN_MAX_GRID));
    }
  else
    g_return_if_reached ();
}

/* ---- the recogniser ------------------------------------------------------------------------- */

/* `cols` elements of `bytes` each, padded to a multiple of `align_bytes`: the leading
 * dimension of a copy whose rows lie that far apart. */
static gint64
padded_ld (gint64 cols,
           guint  bytes,
           guint  align_bytes)
{
  const gint64 align = MAX (1u, align_bytes / MAX (1u, bytes));

  return (cols + align - 1) / align * align;
}

/* The scratch copy an earlier kernel of the plan already makes of the same operand in
 * the same form (two products reading one X: the SwiGLU's up and gate projections), or
 * NULL. Values and scratch buffers are written once, so the copy is still good. */
static const NapkinPlanRepack *
same_repack (NapkinPlanner          *p,
             const NapkinPlanRepack *want)
{
  GPtrArray *lists[] = { p->plan->kernels, p->before };

  for (guint l = 0; l < G_N_ELEMENTS (lists); l++)
    for (guint i = 0; i < lists[l]->len; i++)
      {
        const NapkinPlanKernel *k = g_ptr_array_index (lists[l], i);
        const NapkinPlanRepack *r = &k->u.repack;

        if (k->kind == NAPKIN_PLAN_REPACK && r->src.node == want->src.node && r->src.scratch == want->src.scratch
            && r->src.dtype == want->src.dtype && r->dtype == want->dtype && r->batch == want->batch
            && r->rows == want->rows && r->cols == want->cols && r->ld_src == want->ld_src
            && r->ld_dst == want->ld_dst && r->src_bstride == want->src_bstride
            && MAX (r->batch_inner, 1) == MAX (want->batch_inner, 1) && r->src_bstride_inner == want->src_bstride_inner
            && r->transpose == want->transpose && !r->pv_key_order && !r->ones_row)
          return r;
      }
  return NULL;
}

/* A repack of operand `src` (rows × cols stored with `ld`) into a new scratch buffer
 * with rows `align_bytes` apart (16 or 128), transposed when asked: the operand the GEMM
 * then reads — or the copy an earlier kernel already makes of it (same_repack). */
static NapkinPlanBuffer
queue_repack (NapkinPlanner          *p,
              const NapkinPlanKernel *k,
              NapkinPlanBuffer        src,
              NapkinDtype             dtype,
              gint64                  batch,
              gint64                  rows,
              gint64                  cols,
              gint64                  ld,
              gint64                  bstride,
              gint64                  batch_inner,
              gint64                  bstride_inner,
              gboolean                transpose,
              guint                   align_bytes,
              gint64                 *new_ld)
{
  guint bytes = napkin_dtype_bytes (dtype);
  gint64 out_rows = transpose ? cols : rows, out_cols = transpose ? rows : cols;
  gint64 out_ld = padded_ld (out_cols, bytes, align_bytes);
  gint64 count = bstride == 0 ? 1 : batch;
  NapkinPlanRepack want = { .src = src, .dtype = dtype, .batch = count, .rows = rows, .cols = cols, .ld_src = ld,
                            .ld_dst = out_ld, .src_bstride = bstride, .batch_inner = batch_inner,
                            .src_bstride_inner = bstride_inner, .transpose = transpose };
  const NapkinPlanRepack *done = same_repack (p, &want);
  NapkinPlanKernel *r;
  NapkinPlanRepack *rp;

  if (done != NULL)
    {
      *new_ld = out_ld;
      return done->dst;
    }
  r = _napkin_plan_kernel_new (k, NAPKIN_PLAN_REPACK, NAPKIN_PATH_SIMT);
  rp = &r->u.repack;
  rp->src = src;
  rp->dst = (NapkinPlanBuffer) { -1, _napkin_plan_add_scratch (p->plan, count * out_rows * out_ld * bytes), dtype };
  rp->dtype = dtype;
  rp->batch = count;
  rp->rows = rows;
  rp->cols = cols;
  rp->ld_src = ld;
  rp->ld_dst = out_ld;
  rp->src_bstride = bstride;
  rp->batch_inner = batch_inner;
  rp->src_bstride_inner = bstride_inner;
  rp->dst_bstride = out_rows * out_ld;
  rp->transpose = transpose;
  napkin_plan_helper_launch (r);
  r->note = g_strdup_printf (_("%s%s a %lld×%lld operand into a scratch copy with "
                             "%u-byte rows (%lld elements)"), transpose ? "transposes" : "copies",
                             count > 1 ? " each of the batch's" : "", (long long) rows, (long long) cols, align_bytes,
                             (long long) out_ld);
  g_ptr_array_add (p->before, r);
  *new_ld = out_ld;
  return rp->dst;
}

/* The product's operands, result and axis groups as the kernel's nodes lay them out. */
typedef struct
{
  int                     contract, last, xs, ys;
  const NapkinTensorType *xt, *yt, *ot;
  NapkinPlanLayout        x_l, y_l, c_l;   /* how X, Y and C lie in device memory */
  AxisList                batch, m, n, kk;
  const AxisList         *mg, *ng;       /* C's rows and columns as computed (swapped or not) */
  gboolean                swapped;
  /* an operand whose batch axes do not lead it, copied first into a scratch buffer with
   * them leading (gemm_permute_operand): x_l or y_l is then the copy's layout, and these
   * describe the copy from the value as it lies */
  gboolean                x_copied, y_copied;
  NapkinPlanRepack        x_copy, y_copy;
} GemmShape;

/* The kernel's one contraction, or -1 where its nodes are not one product and maps. */
static int
gemm_find_contract (NapkinPlanner    *p,
                    NapkinPlanKernel *k)
{
  int contract = -1;

  for (guint i = 0; i < k->nodes->len; i++)
    {
      guint id = g_array_index (k->nodes, guint, i);
      const NapkinNode *node = napkin_diagram_node (p->d, id);

      if (node->kind == NAPKIN_OP_CONTRACT)
        {
          if (contract >= 0)
            return -1;   /* two products: attention's, or not one GEMM */
          contract = id;
        }
      else if (node->kind != NAPKIN_OP_MAP)
        return -1;
    }
  return contract;
}

/* The map of the chain that takes `last` at `next`, its other operand (if any) from
 * device memory; FALSE where that operand is made inside the kernel. */
static gboolean
gemm_chain_map (NapkinPlanner    *p,
                NapkinPlanKernel *k,
                int               last,
                int               next,
                NapkinPlanMap    *map,
                char            **why)
{
  const NapkinNode *mn = napkin_diagram_node (p->d, next);

  *map = (NapkinPlanMap) { 0 };
  map->node = next;
  map->fn = mn->fn;
  map->alpha = mn->alpha;
  map->dtype = mn->has_dtype ? mn->dtype : NAPKIN_DTYPE_FP32;
  for (guint q = 0; q < napkin_op_n_inputs (mn); q++)
    {
      int src = napkin_diagram_input_source (p->d, next, q);

      if (src == last)
        continue;
      if (_napkin_plan_member (p, k, src))
        {
          *why = g_strdup_printf (_("map “%s” combines two values made inside the kernel"), mn->id);
          return FALSE;
        }
      map->has_other = TRUE;
      map->other_first = q == 0;
      map->other = (NapkinPlanBuffer) { src, -1, _napkin_plan_value_dtype (p, src) };
      map->stride[0] = src;   /* the operand's node, until the axes are known */
    }
  return TRUE;
}

/* The chain after the product: each map takes the previous value, its other operand
 * (if any) from device memory; nothing in between is used outside the kernel. The
 * epilogue's maps, *last the chain's last node; NULL where the kernel is no such chain. */
static GArray *
gemm_epilogue_chain (NapkinPlanner    *p,
                     NapkinPlanKernel *k,
                     int               contract,
                     int              *last,
                     char            **why)
{
  g_autoptr(GArray) epilogue = g_array_new (FALSE, TRUE, sizeof (NapkinPlanMap));

  *last = contract;
  for (guint step = 1; step < k->nodes->len; step++)
    {
      int next = -1;
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (p->d, *last, &n_consumers);
      NapkinPlanMap map;

      for (guint c = 0; c < n_consumers; c++)
        {
          if (!_napkin_plan_member (p, k, consumers[c]))
            {
              *why = g_strdup_printf (_("the value of “%s” is used both inside the kernel and after it; a fused "
                                      "epilogue keeps only the chain's last value"), napkin_diagram_node (p->d, *last)->id);
              return NULL;
            }
          if (next >= 0 && next != (int) consumers[c])
            {
              *why = g_strdup_printf (_("“%s” feeds two operations of the kernel; only a chain of maps after the "
                                      "product is fused"), napkin_diagram_node (p->d, *last)->id);
              return NULL;
            }
          next = consumers[c];
        }
      if (next < 0)
        {
          *why = g_strdup (_("a map of the kernel is not on the chain after the product (maps before a product are "
                           "not fused yet: put them in their own region)"));
          return NULL;
        }
      if (!gemm_chain_map (p, k, *last, next, &map, why))
        return NULL;
      g_array_append_val (epilogue, map);
      *last = next;
    }
  if (*last == contract && k->nodes->len != 1)
    return NULL;
  return g_steal_pointer (&epilogue);
}

/* Sorts the result's axes into batch, row (m), column (n) and contracted (k) groups;
 * FALSE with *why where an operand sums an axis alone or a group is missing. */
static gboolean
gemm_axis_roles (NapkinPlanner *p,
                 GemmShape     *s,
                 char         **why)
{
  /* batch in the result's type order; m, n in C's; k in X's */
  for (guint i = 0; i < s->ot->n_axes; i++)
    if (_napkin_plan_product_role (s->xt, s->yt, s->ot, s->ot->axes[i]) == NAPKIN_PLAN_ROLE_BATCH)
      s->batch.axes[s->batch.n++] = s->ot->axes[i];
  for (guint i = 0; i < s->c_l.n; i++)
    {
      guint a = s->c_l.axes[i];
      NapkinPlanRole role = _napkin_plan_product_role (s->xt, s->yt, s->ot, a);

      if (role == NAPKIN_PLAN_ROLE_ROW)
        s->m.axes[s->m.n++] = a;
      else if (role == NAPKIN_PLAN_ROLE_COLUMN)
        s->n.axes[s->n.n++] = a;
    }
  for (guint i = 0; i < s->x_l.n; i++)
    {
      guint a = s->x_l.axes[i];
      NapkinPlanRole role = _napkin_plan_product_role (s->xt, s->yt, s->ot, a);

      if (role == NAPKIN_PLAN_ROLE_CONTRACTED)
        s->kk.axes[s->kk.n++] = a;
      else if (role == NAPKIN_PLAN_ROLE_SUMMED_ALONE)
        {
          *why = g_strdup_printf (_("contraction “%s” sums axis %s of its first operand alone"),
                                  napkin_diagram_node (p->d, s->contract)->id, napkin_diagram_axis (p->d, a)->name);
          return FALSE;
        }
    }
  for (guint i = 0; i < s->y_l.n; i++)
    if (_napkin_plan_product_role (s->xt, s->yt, s->ot, s->y_l.axes[i]) == NAPKIN_PLAN_ROLE_SUMMED_ALONE)
      {
        *why = g_strdup_printf (_("contraction “%s” sums axis %s of its second operand alone"),
                                napkin_diagram_node (p->d, s->contract)->id,
                                napkin_diagram_axis (p->d, s->y_l.axes[i])->name);
        return FALSE;
      }
  /* a matrix-vector product lacks the rows or the columns: one of size 1 (the vector is
   * A, M = 1: gemm_axis_runs) */
  if (s->m.n == 0 && s->n.n == 0 && s->kk.n > 0)
    {
      *why = g_strdup_printf (_("contraction “%s” is a dot product a batch element (no row and no column axis): "
                              "the GEMM needs one of them"), napkin_diagram_node (p->d, s->contract)->id);
      return FALSE;
    }
  if (s->kk.n == 0)
    {
      *why = g_strdup_printf (_("contraction “%s” is not a matrix product (it needs a row, a column and a "
                              "contracted axis)"), napkin_diagram_node (p->d, s->contract)->id);
      return FALSE;
    }
  return TRUE;
}

/* Batch axes lead every operand in one order; the row, column and contracted groups
 * are contiguous runs. C[…, n, m] is computed as Cᵀ = Bᵀ·Aᵀ (s->swapped). */
/* Where the rows (or columns) are not one run because the outer of them lead their
 * operand and the result apart from the rest (A[b, k, m]·W[n, k] → C[b, m, n]: b leads A
 * and C, and A holds m after k), those lead as batch axes of an operand the other shares
 * (batch stride 0: docs/plan.md, "GEMM"). Only where there is no batch group yet. */
static void
gemm_promote_batch (GemmShape              *s,
                    AxisList               *group,
                    const NapkinPlanLayout *operand)
{
  if (s->batch.n > 0 || (run_of (operand, group) >= 0 && run_of (&s->c_l, group) >= 0))
    return;
  while (group->n > 1 && at (operand, group->axes[0]) == (int) s->batch.n
         && at (&s->c_l, group->axes[0]) == (int) s->batch.n
         && (run_of (operand, group) < 0 || run_of (&s->c_l, group) < 0))
    {
      s->batch.axes[s->batch.n++] = group->axes[0];
      memmove (group->axes, group->axes + 1, sizeof (guint) * --group->n);
    }
}

/* Where an operand holds every batch axis but not leading it in C's batch order (Q
 * stored [b, s, h, d] for a product batched over b and h), and its own two groups each
 * lie as one run with the inner one innermost: the copy (a repack with the source's batch
 * over one or two strides, docs/plan.md "GEMM") that lays it out [batch…, outer group,
 * inner group], and *l becomes that layout. FALSE where such an operand cannot be
 * copied so; TRUE (and nothing changed) where the operand needs no copy. */
static gboolean
gemm_permute_operand (NapkinPlanner    *p,
                      GemmShape        *s,
                      NapkinPlanLayout *l,
                      NapkinPlanRepack *copy,
                      gboolean         *copied)
{
  const AxisList *own = l == &s->x_l ? &s->m : &s->n;
  const AxisList *outer, *inner;
  gint64 sizes[NAPKIN_MAX_RANK] = { 0 }, strides[NAPKIN_MAX_RANK] = { 0 };
  guint dims = 0, n = 0;
  gboolean leads = TRUE;
  NapkinPlanLayout moved = *l;

  if (s->batch.n == 0)
    return TRUE;
  for (guint i = 0; i < s->batch.n; i++)
    {
      if (at (l, s->batch.axes[i]) < 0)
        return TRUE;     /* shared by the batch, or lacking some: the check below says */
      leads &= at (l, s->batch.axes[i]) == (int) i;
    }
  if (leads || (own->n > 0 && run_of (l, own) < 0) || run_of (l, &s->kk) < 0)
    return TRUE;
  /* a matrix-vector product's vector has no rows: its contracted axes alone, one row of
   * them where they are innermost, else a column (a batch axis inside them: [b, s, h]) */
  if (own->n == 0)
    outer = at (l, s->kk.axes[s->kk.n - 1]) == (int) l->n - 1 ? own : &s->kk;
  else
    outer = run_of (l, own) < run_of (l, &s->kk) ? own : &s->kk;
  inner = outer == own ? &s->kk : own;
  if (inner->n > 0 && at (l, inner->axes[inner->n - 1]) != (int) l->n - 1)
    return TRUE;
  /* the batch axes in C's order, neighbours in the source merged */
  for (guint i = 0; i < s->batch.n; i++)
    {
      gint64 size = napkin_diagram_axis (p->d, s->batch.axes[i])->size;
      gint64 stride = _napkin_plan_layout_stride (p->d, l, s->batch.axes[i]);

      if (dims > 0 && strides[dims - 1] == size * stride)
        {
          sizes[dims - 1] *= size;
          strides[dims - 1] = stride;
        }
      else
        {
          sizes[dims] = size;
          strides[dims++] = stride;
        }
    }
  if (dims > 2)
    return FALSE;
  *copy = (NapkinPlanRepack) { 0 };
  copy->dtype = l->dtype;
  copy->batch = product (p, &s->batch);
  copy->src_bstride = strides[0];
  copy->batch_inner = dims == 2 ? sizes[1] : 1;
  copy->src_bstride_inner = dims == 2 ? strides[1] : 0;
  copy->rows = product (p, outer);
  copy->cols = product (p, inner);
  copy->ld_src = outer->n == 0 ? copy->cols : _napkin_plan_layout_stride (p->d, l, outer->axes[outer->n - 1]);
  for (guint i = 0; i < s->batch.n; i++)
    moved.axes[n++] = s->batch.axes[i];
  for (guint i = 0; i < outer->n; i++)
    moved.axes[n++] = outer->axes[i];
  for (guint i = 0; i < inner->n; i++)
    moved.axes[n++] = inner->axes[i];
  if (n != l->n)
    return FALSE;    /* an axis in none of the groups */
  moved.tensor = NULL;
  *l = moved;
  *copied = TRUE;
  return TRUE;
}

static gboolean
gemm_axis_runs (NapkinPlanner *p,
                GemmShape     *s,
                char         **why)
{
  int cm, cn;

  gemm_promote_batch (s, &s->m, &s->x_l);
  gemm_promote_batch (s, &s->n, &s->y_l);
  /* a matrix-vector product's missing group lies anywhere */
  cm = s->m.n == 0 ? 0 : run_of (&s->c_l, &s->m);
  cn = s->n.n == 0 ? 0 : run_of (&s->c_l, &s->n);

  if (cm < 0 || cn < 0 || (s->m.n > 0 && run_of (&s->x_l, &s->m) < 0) || run_of (&s->x_l, &s->kk) < 0
      || (s->n.n > 0 && run_of (&s->y_l, &s->n) < 0) || run_of (&s->y_l, &s->kk) < 0)
    {
      /* name the value and the group it splits: storing that value in another axis
       * order (the producer's `out`) makes the product a plain GEMM */
      gboolean xm = s->m.n > 0 && run_of (&s->x_l, &s->m) < 0, yn = s->n.n > 0 && run_of (&s->y_l, &s->n) < 0;
      const char *where = cm < 0 || cn < 0 ? N_("its result")
                          : xm || run_of (&s->x_l, &s->kk) < 0 ? N_("its first operand")
                          : N_("its second operand");
      const AxisList *split = cm < 0 ? &s->m : cn < 0 ? &s->n : xm ? &s->m
                              : run_of (&s->x_l, &s->kk) < 0 ? &s->kk : yn ? &s->n : &s->kk;
      g_autoptr(GString) names = g_string_new (NULL);

      for (guint i = 0; i < split->n; i++)
        g_string_append_printf (names, "%s%s", i ? "·" : "", napkin_diagram_axis (p->d, split->axes[i])->name);
      /* the retry copies an operand that splits them, and a result that does: the
       * product then stores its own order and a copy puts the value in the drawn one */
      if (p->split_operands != NULL)
        {
          gboolean x_split = xm || run_of (&s->x_l, &s->kk) < 0;
          gboolean y_split = yn || run_of (&s->y_l, &s->kk) < 0;

          if (x_split)
            g_hash_table_add (p->split_operands, NAPKIN_PLAN_COPY_KEY (s->contract, NAPKIN_PLAN_COPY_X));
          if (y_split)
            g_hash_table_add (p->split_operands, NAPKIN_PLAN_COPY_KEY (s->contract, NAPKIN_PLAN_COPY_Y));
          if (cm < 0 || cn < 0)
            g_hash_table_add (p->split_operands, NAPKIN_PLAN_COPY_KEY (s->contract, NAPKIN_PLAN_COPY_RESULT));
        }
      *why = g_strdup_printf (_("the row, column and contracted axes of “%s” must each be one contiguous run in "
                                "its operands and result: %s splits %s"), napkin_diagram_node (p->d, s->contract)->id,
                              _(where), names->str);
      return FALSE;
    }
  /* an operand whose batch axes lie elsewhere is copied with them leading */
  {
    NapkinPlanLayout x_l = s->x_l, y_l = s->y_l;

    if (!gemm_permute_operand (p, s, &s->x_l, &s->x_copy, &s->x_copied)
        || !gemm_permute_operand (p, s, &s->y_l, &s->y_copy, &s->y_copied))
      {
        s->x_l = x_l;
        s->y_l = y_l;
        s->x_copied = s->y_copied = FALSE;
      }
  }
  /* an operand may lack the batch axes (shared by the batch), not some of them */
  for (guint i = 0; i < s->batch.n; i++)
    if ((at (&s->x_l, s->batch.axes[i]) != (int) i
         && !(at (&s->x_l, s->batch.axes[i]) < 0 && at (&s->x_l, s->batch.axes[0]) < 0))
        || (at (&s->y_l, s->batch.axes[i]) != (int) i
            && !(at (&s->y_l, s->batch.axes[i]) < 0 && at (&s->y_l, s->batch.axes[0]) < 0))
        || at (&s->c_l, s->batch.axes[i]) != (int) i)
      {
        /* a result whose batch axes do not lead (a gradient stored [b, k, h, d] as its
         * input was): the retry stores the product [b, h, k, d] and copies it after */
        if (at (&s->c_l, s->batch.axes[i]) != (int) i && p->split_operands != NULL)
          g_hash_table_add (p->split_operands, NAPKIN_PLAN_COPY_KEY (s->contract, NAPKIN_PLAN_COPY_RESULT));
        *why = g_strdup_printf (_("batch axis %s of “%s” must lead every operand, in the same order"),
                                napkin_diagram_axis (p->d, s->batch.axes[i])->name,
                                napkin_diagram_node (p->d, s->contract)->id);
        return FALSE;
      }
  /* the vector (the operand without rows or columns) is A, one row: C = v·B, or Cᵀ */
  s->swapped = s->n.n == 0 ? TRUE : s->m.n == 0 ? FALSE : cn < cm;
  return TRUE;
}

/* The GEMM's sizes, operands and leading dimensions from the shape: A holds C's rows
 * (the first of C's two groups), B its columns. */
static void
gemm_fill (NapkinPlanner  *p,
           NapkinPlanGemm *g,
           GemmShape      *s,
           GArray         *epilogue)
{
  const NapkinPlanLayout *a_l, *b_l;

  if (!s->swapped)
    {
      a_l = &s->x_l, b_l = &s->y_l, s->mg = &s->m, s->ng = &s->n;
      g->a = (NapkinPlanBuffer) { s->xs, -1, _napkin_plan_value_dtype (p, s->xs) };
      g->b = (NapkinPlanBuffer) { s->ys, -1, _napkin_plan_value_dtype (p, s->ys) };
    }
  else
    {
      a_l = &s->y_l, b_l = &s->x_l, s->mg = &s->n, s->ng = &s->m;
      g->a = (NapkinPlanBuffer) { s->ys, -1, _napkin_plan_value_dtype (p, s->ys) };
      g->b = (NapkinPlanBuffer) { s->xs, -1, _napkin_plan_value_dtype (p, s->xs) };
    }
  g->node = s->contract;
  g->swapped = s->swapped;
  g->c = (NapkinPlanBuffer) { s->last, -1, _napkin_plan_value_dtype (p, s->last) };
  g->ab_dtype = g->a.dtype;
  g->c_dtype = g->c.dtype;
  g->batch = product (p, &s->batch);
  g->M = product (p, s->mg);
  g->N = product (p, s->ng);
  g->K = product (p, &s->kk);
  g->a_kmajor = s->mg->n == 0 || run_of (a_l, &s->kk) > run_of (a_l, s->mg);
  g->b_kmajor = run_of (b_l, &s->kk) > run_of (b_l, s->ng);
  g->lda = g->a_kmajor ? g->K : g->M;
  g->ldb = g->b_kmajor ? g->K : g->N;
  g->ldc = g->N;
  g->a_bstride = g->M * g->K;
  g->b_bstride = g->K * g->N;
  g->c_bstride = g->M * g->N;
  g->epilogue = epilogue;
  g->partials = -1;
  g->split_k = 1;
}

/* The epilogue's other operands: strides per (batch, row, column) of C. */
static gboolean
gemm_epilogue_strides (NapkinPlanner   *p,
                       NapkinPlanGemm  *g,
                       const GemmShape *s,
                       char           **why)
{
  const AxisList *mg = s->mg, *ng = s->ng;

  for (guint i = 0; i < g->epilogue->len; i++)
    {
      NapkinPlanMap *map = &g_array_index (g->epilogue, NapkinPlanMap, i);
      NapkinPlanLayout o_l;
      gint64 sb = 0, sm = 0, sn = 0, row_div = 1;
      gboolean has_batch = FALSE, lacks_batch = FALSE;
      guint held_m = 0, held_n = 0, prefix_m = 0;

      if (!map->has_other)
        continue;
      if (!_napkin_plan_value_layout (p, map->other.node, &o_l))
        {
          *why = g_strdup_printf (_("the other operand of “%s” has no known layout"), napkin_diagram_node (p->d, map->node)->id);
          return FALSE;
        }
      for (guint j = 0; j < o_l.n; j++)
        {
          guint a = o_l.axes[j];

          if (position (&s->batch, a) >= 0)
            has_batch = TRUE;
          else if (position (mg, a) >= 0)
            held_m++;
          else if (position (ng, a) >= 0)
            held_n++;
          else
            {
              *why = g_strdup_printf (_("“%s” broadcasts an operand with axis %s, which the product's result lacks"),
                                      napkin_diagram_node (p->d, map->node)->id, napkin_diagram_axis (p->d, a)->name);
              return FALSE;
            }
        }
      while (prefix_m < mg->n && at (&o_l, mg->axes[prefix_m]) >= 0)
        prefix_m++;
      /* a group of several axes is read as one index: the operand holds it whole and
       * contiguous, or none of it; or, for the rows, its outer part only (a modulation
       * [b, e] of rows (b, s): read at row m / s) */
      if (held_m > 0 && (held_m != prefix_m || _napkin_plan_layout_run (&o_l, mg->axes, prefix_m) < 0))
        {
          *why = g_strdup_printf (_("the other operand of “%s” must hold the result's merged row axes together, "
                                  "or the outer ones of them"), napkin_diagram_node (p->d, map->node)->id);
          return FALSE;
        }
      if (held_n > 0 && (held_n != ng->n || run_of (&o_l, ng) < 0))
        {
          *why = g_strdup_printf (_("the other operand of “%s” must hold the result's merged column axes together"),
                                  napkin_diagram_node (p->d, map->node)->id);
          return FALSE;
        }
      if (held_m > 0)
        sm = _napkin_plan_layout_stride (p->d, &o_l, mg->axes[held_m - 1]);
      for (guint j = held_m; held_m > 0 && j < mg->n; j++)
        row_div *= napkin_diagram_axis (p->d, mg->axes[j])->size;
      if (held_n > 0)
        sn = _napkin_plan_layout_stride (p->d, &o_l, ng->axes[ng->n - 1]);
      for (guint j = 0; j < s->batch.n; j++)
        lacks_batch |= at (&o_l, s->batch.axes[j]) != (int) j;
      if (has_batch && lacks_batch)
        {
          *why = g_strdup_printf (_("the other operand of “%s” must carry every batch axis, leading, or none"),
                                  napkin_diagram_node (p->d, map->node)->id);
          return FALSE;
        }
      if (has_batch)
        sb = _napkin_plan_layout_stride (p->d, &o_l, o_l.axes[s->batch.n - 1]);
      /* (mg and ng are already the computed product's rows and columns) */
      map->stride[0] = sb;
      map->stride[1] = sm;
      map->stride[2] = sn;
      map->row_div = row_div;
    }
  return TRUE;
}

/* What the tensor-core kernels take: one fp16, bf16 or fp8 operand type, blocks at
 * shared memory, 32-bit tile coordinates, fp8 only on wgmma. */
static gboolean
gemm_supported (NapkinPlanner    *p,
                NapkinPlanKernel *k,
                gboolean          wgmma,
                char            **why)
{
  NapkinPlanGemm *g = &k->u.gemm;
  NapkinDtype ab = g->ab_dtype;

  if (!tensor_core_type (ab) || g->b.dtype != ab)
    {
      *why = g_strdup_printf (_("contraction “%s” multiplies %s by %s: the tensor-core kernels take two fp16, bf16 or "
                              "fp8 operands of one type"), napkin_diagram_node (p->d, g->node)->id,
                              napkin_dtype_to_string (g->a.dtype), napkin_dtype_to_string (g->b.dtype));
      return FALSE;
    }
  if (k->region >= 0 && napkin_diagram_region (p->d, block_region (p, k))->level != NAPKIN_LEVEL_SMEM)
    {
      *why = g_strdup_printf (_("region “%s” is at %s: a tensor-core kernel's blocks are relabeled at shared memory"),
                              napkin_diagram_region (p->d, block_region (p, k))->name,
                              napkin_level_to_string (napkin_diagram_region (p->d, block_region (p, k))->level));
      return FALSE;
    }
  if (g->M >= G_MAXINT32 || g->N >= G_MAXINT32 || g->K >= G_MAXINT32 || g->batch >= G_MAXINT32)
    {
      *why = g_strdup (_("the product's sizes must stay below 2³¹ (tile coordinates are 32-bit)"));
      return FALSE;
    }
  if (napkin_dtype_bytes (ab) == 1 && !wgmma)
    {
      *why = g_strdup_printf (_("%s has no fp8 tensor-core path that Napkin generates (Hopper's wgmma has one)"),
                              p->arch->id);
      return FALSE;
    }
  if (!napkin_plan_gemm_c_storable (g->c_dtype))
    {
      *why = g_strdup_printf (_("contraction “%s” stores its result as %s: the GEMM kernels store fp32, fp16 or bf16 "
                                "(a cast to bf16 after the product, as torch._scaled_mm's out_dtype, runs on them)"),
                              napkin_diagram_node (p->d, g->node)->id, napkin_dtype_to_string (g->c_dtype));
      return FALSE;
    }
  return TRUE;
}

gboolean
napkin_plan_gemm_c_storable (NapkinDtype dtype)
{
  return dtype == NAPKIN_DTYPE_FP32 || dtype == NAPKIN_DTYPE_FP16 || dtype == NAPKIN_DTYPE_BF16;
}

/* TMA copies of rows whose pitch is not a multiple of 128 bytes (one swizzle row): each
 * row of a box starts inside a 32-byte sector and the copies arrive at about this many
 * bytes an SM a clock, where aligned ones keep up with the products. Measured on an
 * H200 (docs/perf-notes.md, "GEMM rows not 128 bytes apart"): 6000×7000×5000 and
 * 6144×7168×5000 took 1.69× and 1.58× the time of the same products at K 5120, with
 * 128×256 and 128×128 tiles alike at 41.6–42.2 GB/s of operands an SM (1.98 GHz). */
#define GEMM_UNALIGNED_BYTES_PER_CLOCK 21.0

static gboolean
pitch_aligned (gint64 ld,
               guint  bytes)
{
  return (ld * bytes) % 128 == 0;
}

double
napkin_plan_gemm_unaligned_chunk_s (const NapkinArch     *arch,
                                    const NapkinPlanGemm *g,
                                    gint64                BM,
                                    gint64                BN)
{
  guint ab = napkin_dtype_bytes (g->ab_dtype);
  double BK = ab == 1 ? 128 : 64, unaligned = 0, aligned = 0, l2, compute, rate;
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;

  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  if (pitch_aligned (g->lda, ab))
    aligned += BM * BK * ab;
  else
    unaligned += BM * BK * ab;
  if (pitch_aligned (g->ldb, ab))
    aligned += BN * BK * ab;
  else
    unaligned += BN * BK * ab;
  if (unaligned == 0 || arch->sms == 0 || arch->clock_hz <= 0)
    return 0;
  napkin_tensor_class_for_dtype (g->ab_dtype, &klass);
  rate = napkin_arch_tensor_rate (arch, klass) / arch->sms;
  l2 = MAX (1e9, arch->levels[NAPKIN_LEVEL_L2].bandwidth) / arch->sms;
  compute = rate > 0 ? 2.0 * BM * BN * BK / rate : 0;
  return MAX (0.0, unaligned / (GEMM_UNALIGNED_BYTES_PER_CLOCK * arch->clock_hz) + aligned / l2
                   - MAX (compute, (unaligned + aligned) / l2));
}

/* cp.async copies narrower than 16 bytes an SM completes a clock, measured on an H200
 * (session 27, nine skinny products read in place with 4-byte pieces: 0.5–1.1, median
 * 0.85; docs/model.md §14, "Operands read in place"). At 4 bytes that is 3.4 bytes a
 * clock, a quarter of an SM's share of device memory: reading in place loses to copying
 * the operand to aligned rows (three times its bytes at full bandwidth) on every product
 * measured, so the plan keeps the copy even where the switch allows the narrow reads. */
#define GEMM_NARROW_PIECES_PER_CLOCK 0.85

double
napkin_plan_gemm_narrow_chunk_s (const NapkinArch     *arch,
                                 const NapkinPlanGemm *g,
                                 gint64                BM,
                                 gint64                BN,
                                 gint64                BK)
{
  guint ab = napkin_dtype_bytes (g->ab_dtype);
  guint ap = g->a_piece > 0 ? g->a_piece : 16, bp = g->b_piece > 0 ? g->b_piece : 16;
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;
  double pieces, rate, l2, busy;

  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  if ((ap >= 16 && bp >= 16) || arch->sms == 0 || arch->clock_hz <= 0)
    return 0;
  pieces = (double) BM * BK * ab / ap + (double) BN * BK * ab / bp;
  napkin_tensor_class_for_dtype (g->ab_dtype, &klass);
  rate = napkin_arch_mma_sync_rate (arch, klass) / arch->sms;
  l2 = MAX (1e9, arch->levels[NAPKIN_LEVEL_L2].bandwidth) / arch->sms;
  busy = MAX (rate > 0 ? 2.0 * BM * BN * BK / rate : 0, (double) (BM + BN) * BK * ab / l2);
  return MAX (0.0, pieces / (GEMM_NARROW_PIECES_PER_CLOCK * arch->clock_hz) - busy);
}

/* The staged epilogue (fused maps, or C's rows not 16-byte aligned: no TMA store) runs
 * in the consumer warps before their next tile: each warp stages its rows through shared
 * memory a piece at a time, loads the maps' operands, applies them and stores, and none
 * of it overlaps the next tile's products as the TMA store does (ping-pong consumers
 * hide part of it: NAPKIN_PLAN_PINGPONG_EXPOSED). Per element of the
 * tile, on its SM: GEMM_STAGED_CLOCKS (least squares on the fit half of the H200 runs of
 * 2026-11-29, docs/perf-notes.md "Model refit on recorded runs"), and for each gelu,
 * silu, tanh, sigmoid, exp or erf map GEMM_TRANSCENDENTAL_CLOCKS staged or
 * GEMM_REGISTER_TRANSCENDENTAL_CLOCKS in registers before the TMA store. Those two were
 * fitted where the epilogue is the kernel's time (K 128–256, H200, session 22): bias +
 * GELU staged over 14944 × 2048 × 256 ran 82.9 µs (0.32), SiLU in registers over
 * 8192 × 16384 × 128 in 64 × 256 ping-pong tiles 385.6 µs (0.62, of which the other
 * consumer hides up to its main loop); the earlier 0.08 came from products whose long
 * main loop hid the epilogue, and priced these at a third of their time. Cooperative
 * 128 × 256 tiles pay 0.2 in registers: the Llama gate's SiLU at K 4096 ran 19 % over
 * the down projection of the same FLOPs (session 13), the MLP example's GELU 8192 ×
 * 16384 × 4096 3.00 ms in all (session 16); priced at 0.62 its plan took ping-pong
 * tiles and ran 3.17. */
#define GEMM_STAGED_CLOCKS                   0.22
#define GEMM_TRANSCENDENTAL_CLOCKS           0.32
#define GEMM_REGISTER_TRANSCENDENTAL_CLOCKS(g) ((g)->pingpong ? 0.62 : 0.2)
/* Rows of C not 16 bytes apart: each row's first and last chunk of a tile go out column
 * by column and a row's chunks start where its skew puts them; an operand of the maps
 * whose rows are not 16 bytes apart is read element by element. Per element, measured
 * on an H200 against the same products with aligned rows (docs/perf-notes.md, session
 * 11): a residual over 2671×12014 and bias + GELU over 1024×14276 0.47 and 0.41
 * clocks more; the SwiGLU gate over 6556×9179, C and the gate unaligned, 0.72. */
#define GEMM_UNALIGNED_C_CLOCKS       0.45
#define GEMM_UNALIGNED_OPERAND_CLOCKS 0.3
/* C not 16 bytes apart and nothing to load (no maps, or maps of the value alone): the
 * staged pieces go out as vectors at each row's skew, no operand waits on the way, but
 * each row's first chunk and the extra pass's last go out column by column. Each
 * consumer warpgroup writes its own rows (ping-pong: the whole tile), so a tile costs its
 * rows a consumer × (ROW + BN × PLAIN) clocks: short-K products with C unaligned (K 32–256,
 * five tilings each of four shapes, H200, docs/perf-notes.md "Session 29") ran 128 × 256
 * fastest in every shape, 64 × 256 (one consumer) and 128 × 128 slowest, 1.3–1.5× the
 * old flat 0.3 clocks an element; least squares on log time: 0.2 and 80, every tiling
 * within 1.19×. */
#define GEMM_UNALIGNED_PLAIN_CLOCKS     0.2
#define GEMM_UNALIGNED_PLAIN_ROW_CLOCKS 80.0

/* The maps GEMM_TRANSCENDENTAL_CLOCKS prices: libdevice's polynomials and a division. */
static gboolean
fn_transcendental (NapkinMapFn fn)
{
  switch (fn)
    {
    case NAPKIN_FN_GELU: case NAPKIN_FN_GELU_TANH: case NAPKIN_FN_SILU: case NAPKIN_FN_SIGMOID:
    case NAPKIN_FN_TANH: case NAPKIN_FN_EXP: case NAPKIN_FN_ERF: case NAPKIN_FN_LOG: case NAPKIN_FN_ELU:
    case NAPKIN_FN_RECIPROCAL:
      return TRUE;
    default:
      return FALSE;
    }
}

gboolean
napkin_plan_gemm_maps_unary (const NapkinPlanGemm *g)
{
  g_return_val_if_fail (g != NULL, FALSE);
  /* NAPKIN_GEMM_STAGED_MAPS=1: every fused map through the staged epilogue (A/B runs) */
  if (g->epilogue != NULL && g->epilogue->len > 0 && _napkin_plan_env_flag ("NAPKIN_GEMM_STAGED_MAPS"))
    return FALSE;

  for (guint i = 0; g->epilogue != NULL && i < g->epilogue->len; i++)
    if (g_array_index (g->epilogue, NapkinPlanMap, i).has_other)
      return FALSE;
  return TRUE;
}

const char *
napkin_plan_gemm_cluster_refusal (const NapkinPlanGemm *g,
                                  guint                 cluster_m)
{
  g_return_val_if_fail (g != NULL, NULL);
  if (cluster_m <= 1)
    return NULL;
  if (cluster_m != 2)
    return _("clusters take 2 blocks along M");
  if (g->BM <= 0 || g->BN <= 0)
    return _("no tiles");
  if (g->b_kmajor ? g->BN % (8 * cluster_m) != 0 : g->BN % (64 * cluster_m) != 0)
    return g->b_kmajor ? _("B's rows of a tile do not split into shares of a multiple of 8")
                       : _("B's columns of a tile do not split into boxes of 64 for each block");
  if ((g->M + g->BM - 1) / g->BM < cluster_m)
    return _("fewer rows of tiles than blocks in a cluster");
  return NULL;
}

guint
napkin_plan_gemm_cluster (const NapkinPlanGemm *g)
{
  g_return_val_if_fail (g != NULL, 1);
  return MAX (1u, g->cluster_m);
}

gint64
napkin_plan_gemm_blocks (const NapkinPlanGemm *g)
{
  const gint64 cm = napkin_plan_gemm_cluster (g);

  g_return_val_if_fail (g != NULL && g->BM > 0 && g->BN > 0, 0);
  return cm * ((g->M + cm * g->BM - 1) / (cm * g->BM)) * ((g->N + g->BN - 1) / g->BN) * MAX (1, g->batch)
         * MAX (1u, g->split_k);
}

/* A tile's store leaves through shared memory at about GEMM_EPILOGUE_BYTES_PER_CLOCK an
 * SM (fitted on the H100 sweep of 2026-11-25, docs/perf-notes.md, from the short-K
 * products such as 16384×16384×1024, whose time is mostly epilogues). */
#define GEMM_EPILOGUE_BYTES_PER_CLOCK 24.0
/* What a wgmma tile pays whatever its size: the chain of wgmmas on one accumulator filled
 * and drained, the full/empty barriers, the epilogue's two warpgroup barriers and the TMA
 * store's issue, none of which a tile of one chunk hides. Fitted on the H200 (session
 * 22, docs/perf-notes.md): P·V of attention to one key as a GEMM, 14611 × 128 × 1 per
 * head, 29248 tiles of 64 × 64 on 132 SMs, ran 0.147 ms where the rest of the model
 * gave 0.054 (1300 clocks a tile against 450). Ping-pong consumers overlap it by half. */
#define GEMM_TILE_CLOCKS              860.0

double
napkin_plan_gemm_tile_store_s (const NapkinArch     *arch,
                               const NapkinPlanGemm *g,
                               guint                 bytes)
{
  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  if (arch->clock_hz <= 0)
    return 0;
  return (double) g->BM * g->BN * bytes / (GEMM_EPILOGUE_BYTES_PER_CLOCK * arch->clock_hz);
}

double
napkin_plan_gemm_tile_s (const NapkinArch     *arch,
                         NapkinPath            path,
                         const NapkinPlanGemm *g)
{
  double epilogue;

  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  if (arch->clock_hz <= 0)
    return 0;
  epilogue = napkin_plan_gemm_tile_store_s (arch, g, g->split_k > 1 ? 4 : napkin_dtype_bytes (g->c_dtype))
             + napkin_plan_gemm_staged_epilogue_s (arch, g);
  if (g->pingpong)
    epilogue -= napkin_plan_gemm_pingpong_hidden_s (arch, g, epilogue);
  if (path == NAPKIN_PATH_WGMMA)
    epilogue += GEMM_TILE_CLOCKS * (g->pingpong ? 0.5 : 1.0) / arch->clock_hz;
  return epilogue;
}

static double staged_epilogue_s (const NapkinArch *arch, const NapkinPlanGemm *g, gboolean aligned, double per_element,
                                 double rows);

double
napkin_plan_gemm_staged_epilogue_s (const NapkinArch     *arch,
                                    const NapkinPlanGemm *g)
{
  gboolean aligned = (g->ldc * napkin_dtype_bytes (g->c_dtype)) % 16 == 0;
  double per_element = GEMM_STAGED_CLOCKS, rows = 0, gate = 0;

  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  if (g->split_k > 1 || arch->clock_hz <= 0)
    return 0;
  /* a gated pair's gate maps and join, in registers before either store */
  for (guint i = 0; g->dual && g->gate != NULL && i < g->gate->len; i++)
    if (fn_transcendental (g_array_index (g->gate, NapkinPlanMap, i).fn))
      gate += GEMM_REGISTER_TRANSCENDENTAL_CLOCKS (g);
  return gate * g->BM * g->BN / arch->clock_hz + staged_epilogue_s (arch, g, aligned, per_element, rows);
}

static double
staged_epilogue_s (const NapkinArch     *arch,
                   const NapkinPlanGemm *g,
                   gboolean              aligned,
                   double                per_element,
                   double                rows)
{
  if (aligned && napkin_plan_gemm_maps_unary (g))
    {
      /* maps of the value alone run in the consumer's registers before the TMA store:
       * only their arithmetic is not hidden */
      per_element = 0;
      for (guint i = 0; g->epilogue != NULL && i < g->epilogue->len; i++)
        if (fn_transcendental (g_array_index (g->epilogue, NapkinPlanMap, i).fn))
          per_element += GEMM_REGISTER_TRANSCENDENTAL_CLOCKS (g);
      return (double) g->BM * g->BN * per_element / arch->clock_hz;
    }
  if (!aligned && napkin_plan_gemm_maps_unary (g))
    {
      /* a consumer's rows one after another, each its columns and its edge chunks; one
       * edge chunk a row where the row is one chunk (the maps' arithmetic below) */
      const guint writers = g->pingpong ? 1 : MAX (1u, g->consumers);

      rows = (double) g->BM / writers
             * (GEMM_UNALIGNED_PLAIN_ROW_CLOCKS * (g->N > 8 ? 1.0 : 0.5) + g->BN * GEMM_UNALIGNED_PLAIN_CLOCKS);
      per_element = 0;
    }
  else if (!aligned)
    per_element += GEMM_UNALIGNED_C_CLOCKS;
  for (guint i = 0; g->epilogue != NULL && i < g->epilogue->len; i++)
    {
      const NapkinPlanMap *map = &g_array_index (g->epilogue, NapkinPlanMap, i);
      const guint ob = napkin_dtype_bytes (map->other.dtype);

      if (fn_transcendental (map->fn))
        per_element += GEMM_TRANSCENDENTAL_CLOCKS;
      /* the printer's vector rule (napkin-print-gemm.c), less the buffer's offset */
      if (map->has_other && map->stride[2] != 0
          && !(aligned && map->stride[2] == 1 && (ob == 2 || ob == 4) && (map->stride[1] * ob) % 16 == 0))
        per_element += GEMM_UNALIGNED_OPERAND_CLOCKS;
    }
  return ((double) g->BM * g->BN * per_element + rows) / arch->clock_hz;
}

double
napkin_plan_gemm_tensor_share (const NapkinArch     *arch,
                               NapkinPath            path,
                               const NapkinPlanGemm *g)
{
  g_return_val_if_fail (arch != NULL && g != NULL, 1);
  if (path == NAPKIN_PATH_MMA)
    return napkin_arch_has_wgmma (arch) ? NAPKIN_PLAN_MMA_ON_WGMMA_GPU_EFFICIENCY : 1.0;
  return (path == NAPKIN_PATH_WGMMA ? NAPKIN_PLAN_GEMM_TENSOR_EFFICIENCY : 1.0)
         * (g->pingpong ? NAPKIN_PLAN_PINGPONG_TENSOR : 1.0);
}

/* The part of one tile's epilogue (`epilogue_s`: its stores and staged maps) that the
 * other consumer's main loop hides under ping-pong: at most 1 − NAPKIN_PLAN_PINGPONG_EXPOSED
 * of it, and no more than that main loop lasts. A product with K of 128 has two chunks
 * to hide it under: a SwiGLU gate of 8192 × 16384 × 128 ran 0.51 ms on an H200, priced
 * 0.25 with half its epilogue hidden (docs/perf-notes.md, "Session 16"). */
double
napkin_plan_gemm_pingpong_hidden_s (const NapkinArch     *arch,
                                    const NapkinPlanGemm *g,
                                    double                epilogue_s)
{
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;
  double rate, main_loop;
  gint64 chunks;

  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  napkin_tensor_class_for_dtype (g->ab_dtype, &klass);
  rate = napkin_arch_tensor_rate (arch, klass) / MAX (1u, arch->sms);
  if (rate <= 0 || g->BK <= 0)
    return 0;
  chunks = (g->K + g->BK - 1) / g->BK;
  main_loop = chunks * 2.0 * g->BM * g->BN * g->BK * (g->dual ? 2 : 1)
              / (rate * NAPKIN_PLAN_GEMM_TENSOR_EFFICIENCY * NAPKIN_PLAN_PINGPONG_TENSOR);
  return MIN ((1.0 - NAPKIN_PLAN_PINGPONG_EXPOSED) * epilogue_s, main_loop);
}

/* Whether copying this operand to rows 128 bytes apart costs less than what its
 * unaligned rows cost the GEMM (napkin_plan_gemm_unaligned_chunk_s), priced at the
 * large products' 128 × 256 tiles: the copy reads and writes the operand once. */
static gboolean
gemm_realign_pays (NapkinPlanner    *p,
                   NapkinPlanKernel *k,
                   gint64           *ld,
                   gint64            rows,
                   gint64            cols,
                   gint64            count)
{
  NapkinPlanGemm *g = &k->u.gemm;
  guint bytes = napkin_dtype_bytes (g->ab_dtype);
  gint64 kept = *ld, BK = bytes == 1 ? 128 : 64;
  gint64 tiles = g->batch * ((g->M + 127) / 128) * ((g->N + 255) / 256);
  double before, after, gain, copy;

  before = napkin_plan_gemm_unaligned_chunk_s (p->arch, g, 128, 256);
  *ld = padded_ld (kept, bytes, 128);
  after = napkin_plan_gemm_unaligned_chunk_s (p->arch, g, 128, 256);
  *ld = kept;
  gain = (before - after) * ((tiles + p->arch->sms - 1) / MAX (1u, p->arch->sms)) * ((g->K + BK - 1) / BK);
  copy = 2.0 * count * rows * cols * bytes / MAX (1e9, p->arch->levels[NAPKIN_LEVEL_HBM].bandwidth)
         + p->arch->launch_overhead_s;
  return gain > copy;
}

/* Whether the tensor-core path copies the operand (rows_of its rows or columns, `ld`
 * apart) before reading it: rows not 16 bytes apart, fp8 stored M- or N-major, or on
 * wgmma rows not 128 bytes apart where the realigned copy pays. */
static gboolean
gemm_operand_copied (NapkinPlanner    *p,
                     NapkinPlanKernel *k,
                     gint64            rows_of,
                     gint64           *ld,
                     gboolean          kmajor,
                     gint64            bstride,
                     gboolean          wgmma)
{
  NapkinPlanGemm *g = &k->u.gemm;
  guint bytes = napkin_dtype_bytes (g->ab_dtype);
  gint64 rows = kmajor ? rows_of : g->K, cols = kmajor ? g->K : rows_of;

  /* `ld` is the kernel's own lda or ldb: gemm_realign_pays prices it padded, then puts it back */
  return (*ld * bytes) % 16 != 0 || (bytes == 1 && !kmajor)
         || (wgmma && !pitch_aligned (*ld, bytes)
             && gemm_realign_pays (p, k, ld, rows, cols, bstride == 0 ? 1 : g->batch));
}

/* One operand (rows × K or K × rows) copied into a scratch layout the tensor copies
 * can read where its rows are not 16 bytes apart or, for fp8, it is not K-major; on
 * wgmma also where its rows are not 128 bytes apart and the copy pays for itself. */
static void
gemm_fix_operand (NapkinPlanner    *p,
                  NapkinPlanKernel *k,
                  NapkinPlanBuffer *buf,
                  gint64            rows_of,
                  gint64           *ld,
                  gboolean         *kmajor,
                  gint64           *bstride,
                  gboolean          wgmma)
{
  NapkinPlanGemm *g = &k->u.gemm;
  guint bytes = napkin_dtype_bytes (g->ab_dtype);
  gboolean t = bytes == 1 && !*kmajor;
  gint64 rows = *kmajor ? rows_of : g->K, cols = *kmajor ? g->K : rows_of;
  /* a copy made anyway gets the rows wgmma's copies read best */
  guint align = wgmma ? 128 : 16;

  if (!gemm_operand_copied (p, k, rows_of, ld, *kmajor, *bstride, wgmma))
    return;
  *buf = queue_repack (p, k, *buf, g->ab_dtype, g->batch, rows, cols, *ld, *bstride, 1, 0, t, align, ld);
  if (t)
    *kmajor = TRUE;
  if (*bstride != 0)
    *bstride = (*kmajor ? rows_of : g->K) * *ld;
}

/* The copy gemm_permute_operand described for X (or Y), queued before the product: the
 * GEMM then reads the scratch copy, batch leading, rows 128 bytes apart on wgmma. */
static void
gemm_queue_permute (NapkinPlanner    *p,
                    NapkinPlanKernel *k,
                    const GemmShape  *s,
                    gboolean          x,
                    gboolean          wgmma)
{
  NapkinPlanGemm *g = &k->u.gemm;
  const NapkinPlanRepack *c = x ? &s->x_copy : &s->y_copy;
  gboolean is_a = x != s->swapped;
  NapkinPlanBuffer *buf = is_a ? &g->a : &g->b;
  gint64 *ld = is_a ? &g->lda : &g->ldb, *bstride = is_a ? &g->a_bstride : &g->b_bstride;
  guint queued = p->before->len;

  *buf = queue_repack (p, k, *buf, g->ab_dtype, c->batch, c->rows, c->cols, c->ld_src, c->src_bstride,
                       c->batch_inner, c->src_bstride_inner, FALSE, wgmma ? 128 : 16, ld);
  /* a new copy (not one an earlier kernel already makes) says what it does */
  if (p->before->len > queued)
    {
      NapkinPlanKernel *r = g_ptr_array_index (p->before, p->before->len - 1);

      g_free (r->note);
      r->note = g_strdup_printf (_("copies %lld %lld×%lld matrices of an operand into a scratch copy with its "
                                 "batch axes leading and %u-byte rows (%lld elements)"), (long long) c->batch,
                                 (long long) c->rows, (long long) c->cols, wgmma ? 128u : 16u, (long long) *ld);
    }
  *bstride = c->rows * *ld;
}

/* The tiles a kernel ends with, whether it runs on wgmma, and whether it reads an
 * operand in place with narrow copies (mma.sync). */
typedef struct
{
  gint64   BM, BN, BK, split;
  guint    stages;
  gboolean wgmma, in_place, skinny;
} GemmTiles;

/* The widest copy (16, 8 or 4 bytes) that rows `ld` apart, matrices `bstride` apart,
 * allow; 0 where rows are only 2 bytes apart (no cp.async takes 2 bytes). */
static guint
gemm_piece_bytes (gint64 ld,
                  gint64 bstride,
                  guint  bytes)
{
  for (guint w = 16; w >= 4; w /= 2)
    if ((ld * bytes) % w == 0 && (bstride * bytes) % w == 0)
      return w;
  return 0;
}

/* The bytes of A (`a`) or B a product reads once: a shared operand (batch stride 0) once. */
static double
operand_bytes (const NapkinPlanGemm *g,
               gboolean              a)
{
  const gint64 bstride = a ? g->a_bstride : g->b_bstride;

  return (double) (bstride == 0 ? 1 : g->batch) * (a ? g->M : g->N) * g->K * napkin_dtype_bytes (g->ab_dtype);
}

double
napkin_plan_gemm_skinny_hbm_share (const NapkinPlanGemm *g)
{
  g_return_val_if_fail (g != NULL, 1);
  return g->b_piece > 0 && g->b_piece < 4 ? NAPKIN_PLAN_GEMM_SKINNY_HBM_SHARE_2B : NAPKIN_PLAN_GEMM_SKINNY_HBM_SHARE;
}

gint64
napkin_plan_gemm_skinny_vec (gint64 offset,
                             gint64 ld,
                             gint64 bstride,
                             guint  bytes,
                             gint64 max)
{
  gint64 v = 8;

  /* a power of two at most `max`: a load is 2, 4, 8 or 16 bytes */
  while (v > 1 && (v > max || offset % (v * bytes) || (ld * bytes) % (v * bytes) || (bstride * bytes) % (v * bytes)))
    v /= 2;
  return v;
}

gint64
napkin_plan_gemm_skinny_column_blocks (const NapkinPlanGemm *g,
                                       gint64                vec)
{
  g_return_val_if_fail (g != NULL && vec > 0, 1);
  /* K-major: 8 warps of 4 columns; N-major: 64 threads of `vec` columns */
  return g->b_kmajor ? (g->N + 31) / 32 : (g->N + 64 * vec - 1) / (64 * vec);
}

double
napkin_plan_gemm_skinny_fill (const NapkinArch     *arch,
                              const NapkinPlanGemm *g)
{
  const gint64 vec = MAX (1, g->b_piece / MAX (1u, napkin_dtype_bytes (g->ab_dtype)));
  const double blocks = (double) napkin_plan_gemm_skinny_column_blocks (g, vec) * g->batch * MAX (1u, g->split_k);

  g_return_val_if_fail (arch != NULL, 1);
  return MIN (1.0, blocks / MAX (1u, arch->sms));
}

double
napkin_plan_gemm_skinny_bytes (const NapkinPlanGemm *g)
{
  g_return_val_if_fail (g != NULL, 0);
  return operand_bytes (g, TRUE) + operand_bytes (g, FALSE) + (double) MAX (1u, g->split_k) * g->batch * g->M * g->N * 4;
}

double
napkin_plan_gemm_skinny_s (const NapkinArch     *arch,
                           const NapkinPlanGemm *g)
{
  double stream, fma;

  g_return_val_if_fail (arch != NULL && g != NULL, 0);
  stream = napkin_plan_gemm_skinny_bytes (g)
           / (MAX (1e9, arch->levels[NAPKIN_LEVEL_HBM].bandwidth) * napkin_plan_gemm_skinny_hbm_share (g));
  fma = 2.0 * g->batch * g->M * g->N * g->K
        / MAX (1e9, napkin_arch_cuda_rate (arch, NAPKIN_DTYPE_FP32) * NAPKIN_PLAN_GEMM_SKINNY_FMA_SHARE);
  return (stream + fma) / napkin_plan_gemm_skinny_fill (arch, g) + 2 * arch->levels[NAPKIN_LEVEL_HBM].latency_s;
}

/* The rows of A's slice in shared memory: N-major, padded to 4 for float4 reads. */
static gint64
skinny_a_rows (const NapkinPlanGemm *g)
{
  return g->b_kmajor ? g->M : (g->M + 3) / 4 * 4;
}

gint64
napkin_plan_gemm_skinny_a_bytes (const NapkinPlanGemm *g)
{
  g_return_val_if_fail (g != NULL, 0);
  return skinny_a_rows (g) * g->BK * 4;
}

gint64
napkin_plan_gemm_skinny_smem (const NapkinPlanGemm *g)
{
  const gint64 vec = MAX (1, g->b_piece / MAX (1u, napkin_dtype_bytes (g->ab_dtype)));

  g_return_val_if_fail (g != NULL, 0);
  /* A's slice, and N-major the sums of three groups of 64 threads (G_KG − 1) */
  return napkin_plan_gemm_skinny_a_bytes (g) + (g->b_kmajor ? 0 : 3 * g->M * 64 * vec * 4);
}

/* At most this many slices of K: the reduction's threads each add every slice of
 * their columns (a 4 × 64 product over 13265 split 208 ways spent 24 µs there). */
#define GEMM_SKINNY_MAX_SPLIT 32
/* A's slice in fp32 at most (the kernel's static shared memory: 48 KiB in all) */
#define GEMM_SKINNY_A_BYTES (24 * 1024)

/* The skinny kernel's slices of K: enough blocks for every SM to hold 4 (columns ×
 * batch × slices), each slice a multiple of 64 and its rows of A within 24 KiB in
 * fp32, at least 2 (the reduction after it runs the epilogue). */
static void
gemm_skinny_split (const NapkinArch *arch,
                   NapkinPlanGemm   *g,
                   gint64            vec)
{
  const gint64 cols = napkin_plan_gemm_skinny_column_blocks (g, vec);
  const gint64 want = 4 * MAX (1u, arch->sms);
  const gint64 max_split = GEMM_SKINNY_MAX_SPLIT;
  /* A's rows in fp32 within 24 KiB (N-major: the four groups' sums take the rest) */
  const gint64 max_ks = MAX (64, GEMM_SKINNY_A_BYTES / (4 * skinny_a_rows (g)) / 64 * 64);
  gint64 split = CLAMP ((want + cols * g->batch - 1) / (cols * g->batch), 2, max_split);
  gint64 ks = ((g->K + split - 1) / split + 63) / 64 * 64;

  ks = CLAMP (ks, 64, max_ks);
  split = (g->K + ks - 1) / ks;
  if (split < 2)
    {
      ks = MAX (8, ((g->K + 1) / 2 + 7) / 8 * 8);
      split = (g->K + ks - 1) / ks;
    }
  g->BK = ks;
  g->split_k = (guint) split;
  g->BM = g->M;
  g->BN = g->b_kmajor ? 32 : 64 * vec;
}

/* A product with few rows (M ≤ 16) whose time is B's stream runs on CUDA cores, reading
 * A and B where they lie whatever their rows' alignment (kernels/gemm-skinny.cu;
 * docs/plan.md, "Skinny products on CUDA cores"), where that is estimated below the
 * tensor-core path with the copies it needs: a decode step's product against a weight
 * whose rows are not 16 bytes apart reads the weight once instead of three times.
 * Outside regions (a drawn region keeps its tiles). NAPKIN_GEMM_SKINNY=0: never,
 * =force: wherever the shape allows (A/B runs). */
static void
gemm_skinny (NapkinPlanner    *p,
             NapkinPlanKernel *k,
             GemmTiles        *t)
{
  NapkinPlanGemm *g = &k->u.gemm, s;
  const guint bytes = napkin_dtype_bytes (g->ab_dtype);
  const double hbm = MAX (1e9, p->arch->levels[NAPKIN_LEVEL_HBM].bandwidth);
  GemmLoads aligned = { !t->wgmma, 0, 0 };
  Tile tensor;
  double copy = 0, skinny;
  gint64 vec;
  const char *mode = g_getenv ("NAPKIN_GEMM_SKINNY");

  if (k->region >= 0 || bytes != 2 || g->M > NAPKIN_PLAN_GEMM_SKINNY_MAX_M || g->K < 128 || g->N < 64
      || g_strcmp0 (mode, "0") == 0)
    return;
  /* the widest load of B its rows allow, a thread's sums and loads within about 80
   * registers */
  vec = napkin_plan_gemm_skinny_vec (0, g->ldb, g->batch > 1 ? g->b_bstride : 0, bytes, 32 / g->M);
  s = *g;
  s.b_piece = (guint) (vec * bytes);
  gemm_skinny_split (p->arch, &s, vec);
  /* a K too long for A's slices in shared memory; too few blocks to fill the SMs (a
   * 4 × 64 × 13265 product ran 2× slower than on tensor cores, which split K further) */
  if (s.split_k > GEMM_SKINNY_MAX_SPLIT
      || (napkin_plan_gemm_skinny_fill (p->arch, &s) < 1.0 && g_strcmp0 (mode, "force") != 0))
    return;
  /* with its reduction (the GEMM's own launch is counted on neither side) */
  skinny = napkin_plan_gemm_skinny_s (p->arch, &s)
           + 2.0 * s.split_k * s.batch * s.M * s.N * 4 / hbm + p->arch->launch_overhead_s;
  /* what the tensor-core path costs: its copies of operands whose rows it cannot read */
  if (gemm_operand_copied (p, k, g->M, &g->lda, g->a_kmajor, g->a_bstride, t->wgmma))
    copy += 2.0 * operand_bytes (g, TRUE) / hbm + p->arch->launch_overhead_s;
  if (gemm_operand_copied (p, k, g->N, &g->ldb, g->b_kmajor, g->b_bstride, t->wgmma))
    copy += 2.0 * operand_bytes (g, FALSE) / hbm + p->arch->launch_overhead_s;
  tensor = choose_tile (p, g->batch, g->M, g->N, g->K, t->wgmma ? 64 : 32, bytes, t->wgmma,
                        maps_read_or_transcend (g->epilogue), &aligned);
  /* a product this skinny streams its operands on tensor cores no faster than on CUDA
   * cores (H200: wgmma 0.52–0.62 of device memory on five aligned decode products,
   * docs/perf-notes.md, session 27), which choose_tile's estimate does not see */
  tensor.cost = MAX (tensor.cost, (operand_bytes (g, TRUE) + operand_bytes (g, FALSE))
                                  / (hbm * NAPKIN_PLAN_GEMM_SKINNY_HBM_SHARE));
  /* nor each wave's fixed costs, which the model prices: its first round trip to device
   * memory and its tiles' (napkin_plan_gemm_tile_s; C's rows not 16 bytes apart make
   * that the staged store's). 57 × 4 × 1803 × 128 (H200, docs/perf-notes.md, session
   * 35): the copy and wgmma ran 0.039 ms, estimated 0.024 without them, where the
   * skinny kernel ran 0.0336 */
  {
    const gint64 sms = MAX (1, (gint64) p->arch->sms);
    NapkinPlanGemm tt = *g;

    tt.BM = tensor.BM;
    tt.BN = tensor.BN;
    tt.BK = t->wgmma ? 64 : 32;
    tt.split_k = (guint) MAX (1, tensor.split);
    tt.pingpong = FALSE;
    tensor.cost += (napkin_plan_gemm_blocks (&tt) + sms - 1) / sms
                   * (p->arch->levels[NAPKIN_LEVEL_HBM].latency_s
                      + napkin_plan_gemm_tile_s (p->arch, t->wgmma ? NAPKIN_PATH_WGMMA : NAPKIN_PATH_MMA, &tt));
  }
  /* "force": wherever the shape allows, whatever the estimates (A/B runs) */
  if (skinny >= tensor.cost + copy && g_strcmp0 (mode, "force") != 0)
    return;
  g->BM = s.BM;
  g->BN = s.BN;
  g->BK = s.BK;
  g->split_k = s.split_k;
  g->b_piece = (guint) (vec * bytes);
  g->a_piece = 0;
  t->skinny = TRUE;
  t->wgmma = FALSE;
  adjust (k, _("%lld rows of C: a skinny product on CUDA cores, A and B read where they lie (%.1f µs against "
               "%.1f µs on tensor cores with their copies)"), (long long) g->M, skinny * 1e6, (tensor.cost + copy) * 1e6);
}

#define GEMM_IN_PLACE_MARGIN 1.25

/* An operand whose rows are 8 or 4 bytes apart is read in place by copies that wide
 * on mma.sync, where that costs less than copying it to aligned rows and running the
 * path the plan would run on them (docs/plan.md, "Reading unaligned operands in
 * place"): a skinny product over a large weight reads it once instead of three times.
 * The estimates are choose_tile's, from the shape alone, so a region written from this
 * plan plans the same. Only with NAPKIN_GEMM_IN_PLACE=1: measured on an H200 with 16- and
 * 32-row tiles, 4 blocks an SM and split K it ran 1.1–1.6× slower than the copy on eight
 * of nine products (docs/perf-notes.md, session 27), and with the narrow copies' rate
 * measured the estimate no longer takes it there. */
static void
gemm_in_place (NapkinPlanner    *p,
               NapkinPlanKernel *k,
               GemmTiles        *t)
{
  NapkinPlanGemm *g = &k->u.gemm;
  const guint bytes = napkin_dtype_bytes (g->ab_dtype);
  guint ap, bp;
  gboolean long_epi;
  double copy = 0;
  GemmLoads narrow, aligned = { !t->wgmma, 0, 0 };
  Tile in_place, repacked;
  const char *what;
  guint width;
  const char *mode = g_getenv ("NAPKIN_GEMM_IN_PLACE");
  /* "force": wherever the rows allow it, whatever the estimates (tests, A/B runs) */
  const gboolean force = g_strcmp0 (mode, "force") == 0;

  if (bytes != 2 || !(force || g_strcmp0 (mode, "1") == 0))
    return;
  ap = gemm_piece_bytes (g->lda, g->batch > 1 ? g->a_bstride : 0, bytes);
  bp = gemm_piece_bytes (g->ldb, g->batch > 1 ? g->b_bstride : 0, bytes);
  /* an operand with 16-byte rows needs no copy on mma.sync; 2-byte rows are copied anyway */
  if (!((ap == 8 || ap == 4) || (bp == 8 || bp == 4)))
    return;
  if (ap == 8 || ap == 4)
    copy += 2.0 * operand_bytes (g, TRUE);
  if (bp == 8 || bp == 4)
    copy += 2.0 * operand_bytes (g, FALSE);
  copy = copy / MAX (1e9, p->arch->levels[NAPKIN_LEVEL_HBM].bandwidth) + p->arch->launch_overhead_s;
  long_epi = maps_read_or_transcend (g->epilogue);
  narrow = (GemmLoads) { TRUE, ap == 8 || ap == 4 ? ap : 0, bp == 8 || bp == 4 ? bp : 0 };
  in_place = choose_tile (p, g->batch, g->M, g->N, g->K, 32, bytes, FALSE, long_epi, &narrow);
  repacked = choose_tile (p, g->batch, g->M, g->N, g->K, t->wgmma ? 64 : 32, bytes, t->wgmma, long_epi, &aligned);
  /* clearly cheaper only: the estimates leave out the epilogue, which the wgmma
   * kernel overlaps better (ping-pong) */
  if (!force && in_place.cost * GEMM_IN_PLACE_MARGIN >= repacked.cost + copy)
    return;
  g->a_piece = narrow.a_piece;
  g->b_piece = narrow.b_piece;
  t->wgmma = FALSE;
  t->in_place = TRUE;
  what = gemm_in_place_operands (g, &width);
  adjust (k, _("%s read in place by %u-byte copies on mma.sync (estimated %.1f µs) rather than copied to "
               "aligned rows first (%.1f µs)"), what, width, in_place.cost * 1e6, (repacked.cost + copy) * 1e6);
}

/* An operand without the batch axes is shared by the whole batch (one copy, batch
 * stride 0), before and after any repack; then both operands are fixed up. */
static void
gemm_operand_layouts (NapkinPlanner    *p,
                      NapkinPlanKernel *k,
                      const GemmShape  *s,
                      GemmTiles        *t)
{
  NapkinPlanGemm *g = &k->u.gemm;
  const gboolean wgmma = t->wgmma;

  if (g->batch > 1)
    {
      gboolean a_has_batch = TRUE, b_has_batch = TRUE;

      for (guint i = 0; i < s->batch.n; i++)
        {
          a_has_batch &= napkin_tensor_type_has_axis (s->swapped ? s->yt : s->xt, s->batch.axes[i]);
          b_has_batch &= napkin_tensor_type_has_axis (s->swapped ? s->xt : s->yt, s->batch.axes[i]);
        }
      if (!a_has_batch)
        g->a_bstride = 0;
      if (!b_has_batch)
        g->b_bstride = 0;
    }
  if (s->x_copied)
    gemm_queue_permute (p, k, s, TRUE, wgmma);
  if (s->y_copied)
    gemm_queue_permute (p, k, s, FALSE, wgmma);
  gemm_skinny (p, k, t);
  if (t->skinny)
    return;
  gemm_in_place (p, k, t);
  if (g->a_piece == 0)
    gemm_fix_operand (p, k, &g->a, g->M, &g->lda, &g->a_kmajor, &g->a_bstride, t->wgmma);
  if (g->b_piece == 0)
    gemm_fix_operand (p, k, &g->b, g->N, &g->ldb, &g->b_kmajor, &g->b_bstride, t->wgmma);
  g->c_tma = napkin_plan_gemm_maps_unary (g) && (g->ldc * napkin_dtype_bytes (g->c_dtype)) % 16 == 0;
}

/* A region's blocks on wgmma: FALSE (with *no_wgmma) where its tiles are none of
 * wgmma's; a streamed chunk is cut into wgmma's chunks with as many more stages. */
static gboolean
gemm_region_wgmma (NapkinPlanner    *p,
                   NapkinPlanKernel *k,
                   const GemmShape  *s,
                   GemmTiles        *t,
                   char            **no_wgmma)
{
  NapkinPlanGemm *g = &k->u.gemm;
  gint64 wbk = napkin_dtype_bytes (g->ab_dtype) == 1 ? 128 : 64;

  if (!wgmma_tile_ok (t->BM, t->BN, g->b_kmajor))
    *no_wgmma = g_strdup_printf (_("a %lld×%lld block is not a wgmma tile "
                                 "(64, 128 or 256 rows; up to 256 columns in steps of %d; at most 128 "
                                 "accumulators a thread)"), (long long) t->BM, (long long) t->BN, g->b_kmajor ? 8 : 64);
  else if (t->BK % wbk != 0 && t->BK < g->K)
    *no_wgmma = g_strdup_printf (_("chunks of %lld along %s: wgmma takes multiples of %lld"), (long long) t->BK,
                                 inner_axis_name (p, &s->kk), (long long) wbk);
  else
    {
      /* a chunk of BK streamed as BK/64 chunks: the same shared memory */
      t->stages = t->stages * (guint) MAX (1, (t->BK < g->K ? t->BK : wbk) / wbk);
      t->BK = wbk;
      return TRUE;
    }
  return FALSE;
}

/* A region's blocks on mma.sync: warp tiles from a parallel region inside the block
 * region (else 64×32), chunks of 16 to 64. */
static gboolean
gemm_region_mma (NapkinPlanner    *p,
                 NapkinPlanKernel *k,
                 const GemmShape  *s,
                 GemmTiles        *t,
                 char            **why)
{
  NapkinPlanGemm *g = &k->u.gemm;
  gint64 WM = MIN (t->BM, 64), WN = MIN (t->BN, 32);

  for (guint r = 0; r < napkin_diagram_n_regions (p->d); r++)
    if (p->parent[r] == block_region (p, k))
      {
        const NapkinRegion *inner = napkin_diagram_region (p->d, r);
        gint64 w = 0;

        if (napkin_region_mark (inner, inner_axis_name (p, s->mg), &w) == NAPKIN_MARK_PARALLEL)
          WM = MIN (w, t->BM);
        if (napkin_region_mark (inner, inner_axis_name (p, s->ng), &w) == NAPKIN_MARK_PARALLEL)
          WN = MIN (w, t->BN);
      }
  if (t->BK >= g->K)
    t->BK = MIN (32, (g->K + 15) / 16 * 16);
  if (!mma_tile_ok (t->BM, t->BN, WM, WN) || t->BK % 16 != 0 || t->BK > 64)
    {
      *why = g_strdup_printf (_("blocks of %lld×%lld with %lld×%lld warp tiles and chunks of %lld fit neither wgmma "
                              "nor mma.sync (multiples of 16, at most 16 warps and 128 accumulators a thread, "
                              "chunks of 16 to 64)"), (long long) t->BM, (long long) t->BN, (long long) WM,
                              (long long) WN, (long long) t->BK);
      return FALSE;
    }
  g->WM = WM;
  g->WN = WN;
  return TRUE;
}

/* A region's tiles are the user's: the plan picks the path that runs them (wgmma
 * where its tile rules hold, else mma.sync) and never changes them; where neither
 * can, the kernel is generic and says why. */
static gboolean
gemm_region_tiles (NapkinPlanner    *p,
                   NapkinPlanKernel *k,
                   const GemmShape  *s,
                   GemmTiles        *t,
                   char            **why)
{
  NapkinPlanGemm *g = &k->u.gemm;
  const NapkinRegion *br = napkin_diagram_region (p->d, block_region (p, k));
  NapkinMarkKind km, kn, kk_kind;
  gint64 tm = group_tile (p, k, s->mg, &km), tn = group_tile (p, k, s->ng, &kn), tk = group_tile (p, k, &s->kk, &kk_kind);
  g_autofree char *no_wgmma = NULL;

  if (km != NAPKIN_MARK_PARALLEL || kn != NAPKIN_MARK_PARALLEL)
    {
      *why = g_strdup_printf (_("region “%s” must cut %s and %s into parallel groups (the blocks of the product)"),
                              br->name, inner_axis_name (p, s->mg), inner_axis_name (p, s->ng));
      return FALSE;
    }
  if (kk_kind == NAPKIN_MARK_PARALLEL)
    {
      *why = g_strdup_printf (_("region “%s” cuts the contracted axis %s into parallel groups: stream it"),
                              br->name, inner_axis_name (p, &s->kk));
      return FALSE;
    }
  /* a tile that covers its whole axis (a small M, N or K: 93 rows) is the kernel's tile
   * rounded up to 64 (fp8 K 128), the edge masked as any edge tile, not a size no
   * tensor-core tile takes */
  /* (16 rows for a skinny product read in place on mma.sync, as choose_tile takes) */
  t->BM = tm >= g->M ? (t->in_place && g->M <= 32 ? (g->M + 15) / 16 * 16 : (g->M + 63) / 64 * 64) : tm;
  t->BN = tn >= g->N ? (g->N + 63) / 64 * 64 : tn;
  t->stages = MAX (2u, br->stages);
  {
    const gint64 kg = napkin_dtype_bytes (g->ab_dtype) == 1 ? 128 : 64;

    t->BK = kk_kind == NAPKIN_MARK_STREAM && tk < g->K ? tk : (g->K + kg - 1) / kg * kg;
  }
  if (t->wgmma && !gemm_region_wgmma (p, k, s, t, &no_wgmma))
    {
      if (napkin_dtype_bytes (g->ab_dtype) == 1)
        {
          *why = g_strdup_printf (_("fp8 products run only on wgmma: %s"), no_wgmma);
          return FALSE;
        }
      t->wgmma = FALSE;
      adjust (k, _("wgmma not used: %s; mma.sync instead"), no_wgmma);
    }
  if (!t->wgmma)
    return gemm_region_mma (p, k, s, t, why);
  g->WM = 0;
  g->WN = 0;
  return TRUE;
}

/* An operation outside regions gets the tiles the plan finds best. */
static void
gemm_chosen_tiles (NapkinPlanner    *p,
                   NapkinPlanKernel *k,
                   GemmTiles        *t)
{
  NapkinPlanGemm *g = &k->u.gemm;
  guint bytes = napkin_dtype_bytes (g->ab_dtype);
  Tile c;

  GemmLoads loads = { !t->wgmma, g->a_piece, g->b_piece };

  t->BK = t->wgmma ? (bytes == 1 ? 128 : 64) : 32;
  c = choose_tile (p, g->batch, g->M, g->N, g->K, t->BK, bytes, t->wgmma, maps_read_or_transcend (g->epilogue),
                   &loads);
  t->BM = c.BM;
  t->BN = c.BN;
  t->split = c.split;
  t->stages = t->wgmma ? 4 : 3;
  /* NAPKIN_GEMM_STAGES=N: the wgmma GEMMs outside regions at N stages (A/B runs) */
  if (t->wgmma && g_getenv ("NAPKIN_GEMM_STAGES") != NULL)
    t->stages = (guint) CLAMP (g_ascii_strtoll (g_getenv ("NAPKIN_GEMM_STAGES"), NULL, 10), 2, 8);
  while (t->stages > 2
         && tiles_smem (g, t->BM, t->BN, t->BK, t->stages, t->wgmma) > SMEM_LIMIT (p))
    t->stages--;
  g->WM = MIN (t->BM, 64);
  g->WN = MIN (t->BN, 32);
  if (!t->wgmma && !mma_tile_ok (t->BM, t->BN, g->WM, g->WN))
    {
      t->BN = MIN (t->BN, 128);
      g->WN = MIN (t->BN, 32);
    }
}

/* Threads, shared memory and registers of the path, and the tiles into the GEMM. */
static void
gemm_resources (NapkinPlanKernel *k,
                const GemmTiles  *t)
{
  NapkinPlanGemm *g = &k->u.gemm;

  if (t->wgmma)
    {
      g->consumers = t->BM == 64 ? 1 : 2;
      k->threads = 128 * (1 + g->consumers);
      k->smem_bytes = tiles_smem (g, t->BM, t->BN, t->BK, t->stages, TRUE);
      k->registers = g->consumers == 2 ? 232 : 168;
      g->persistent = TRUE;
      k->path = NAPKIN_PATH_WGMMA;
    }
  else
    {
      k->threads = (guint) ((t->BM / g->WM) * (t->BN / g->WN) * 32);
      k->smem_bytes = tiles_smem (g, t->BM, t->BN, t->BK, t->stages, FALSE);
      k->registers = (guint) MIN (255, g->WM * g->WN / 32 + 64);
      k->path = NAPKIN_PATH_MMA;
    }
  g->BM = t->BM;
  g->BN = t->BN;
  g->BK = t->BK;
  g->stages = t->stages;
}

/* Too few tiles to fill the GPU and a long K: split K, sum the slices after. An
 * operation outside regions has its split from choose_tile; a region's tiles get the
 * split the same estimate prefers for them. Sets the grid. */
static void
gemm_split_k (NapkinPlanner    *p,
              NapkinPlanKernel *k,
              gint64            split)
{
  NapkinPlanGemm *g = &k->u.gemm;
  gint64 BM = g->BM, BN = g->BN, BK = g->BK, tiles;
  GemmLoads loads = { k->path == NAPKIN_PATH_MMA, g->a_piece, g->b_piece };
  const gboolean narrow = gemm_loads_narrow (&loads);

  /* NAPKIN_GEMM_SPLIT=S: a region's K in S slices where legal (A/B runs) */
  if (k->region >= 0 && g_getenv ("NAPKIN_GEMM_SPLIT") != NULL)
    {
      gint64 s = g_ascii_strtoll (g_getenv ("NAPKIN_GEMM_SPLIT"), NULL, 10);

      split = s > 1 && split_ok (p, narrow, g->batch, g->M, g->N, g->K, BM, BN, BK, s) ? s : 1;
    }
  else if (k->region >= 0)
    {
      double best = G_MAXDOUBLE;

      for (gint64 s = 1; s <= 16; s++)
        if (s == 1 || split_ok (p, narrow, g->batch, g->M, g->N, g->K, BM, BN, BK, s))
          {
            double t = gemm_estimate (p, g->batch, g->M, g->N, g->K, BM, BN, BK, s, napkin_dtype_bytes (g->ab_dtype),
                                      &loads);

            if (t < best * 0.97)
              {
                best = t;
                split = s;
              }
          }
    }
  else if (split > 1 && k->path != NAPKIN_PATH_SIMT
           && !split_ok (p, narrow, g->batch, g->M, g->N, g->K, BM, BN, BK, split))
    split = 1;
  tiles = g->batch * ((g->M + BM - 1) / BM) * ((g->N + BN - 1) / BN);
  if (split >= 2)
    {
      NapkinPlanKernel *r = _napkin_plan_kernel_new (k, NAPKIN_PLAN_SPLIT_REDUCE, NAPKIN_PATH_SIMT);
      gint64 partial_bytes = split * g->batch * g->M * g->N * 4;

      g->split_k = (guint) split;
      g->partials = _napkin_plan_add_scratch (p->plan, partial_bytes);
      r->u.gemm = *g;
      r->u.gemm.epilogue = g_array_ref (g->epilogue);
      napkin_plan_helper_launch (r);
      r->note = g_strdup_printf (_("sums %u slices of K in fp32%s and stores %s"), g->split_k,
                                 g->epilogue->len ? ", runs the epilogue" : "",
                                 napkin_dtype_to_string (g->c_dtype));
      g_ptr_array_add (p->after, r);
      tiles *= split;
    }
  k->grid = tiles;
}

/* An epilogue operand whose rows are not 16 bytes apart, made by an earlier GEMM of the
 * plan for this map alone (a SwiGLU's gate at N = 9179): that GEMM writes it into a
 * scratch buffer with 128-byte rows instead, so it stores whole vectors and this
 * epilogue reads them (docs/plan.md, "Repacks"). Nothing else reads the value: it is
 * no output, and this map is its one use. */
static void
gemm_realign_epilogue_operands (NapkinPlanner    *p,
                                NapkinPlanKernel *k)
{
  NapkinPlanGemm *g = &k->u.gemm;

  for (guint i = 0; g->epilogue != NULL && i < g->epilogue->len; i++)
    {
      NapkinPlanMap *map = &g_array_index (g->epilogue, NapkinPlanMap, i);
      const guint ob = napkin_dtype_bytes (map->other.dtype);
      guint n_consumers;

      if (!map->has_other || map->other.node < 0 || map->stride[2] != 1 || (map->stride[1] * ob) % 16 == 0
          || _napkin_plan_stored_tensor (p->d, map->other.node) != NULL)
        continue;
      napkin_diagram_consumers (p->d, (guint) map->other.node, &n_consumers);
      if (n_consumers != 1)
        continue;
      for (guint j = 0; j < p->plan->kernels->len; j++)
        {
          NapkinPlanKernel *pk = g_ptr_array_index (p->plan->kernels, j);
          NapkinPlanGemm *pg = &pk->u.gemm;
          gint64 pitch;

          if (pk->kind != NAPKIN_PLAN_GEMM || pk->path != NAPKIN_PATH_WGMMA || pg->c.node != map->other.node
              || pg->split_k > 1 || pg->swapped || pg->c_dtype != map->other.dtype || pg->ldc != map->stride[1]
              || (map->stride[0] != 0 && map->stride[0] != pg->c_bstride))
            continue;
          pitch = padded_ld (pg->N, ob, 128);
          pg->c = (NapkinPlanBuffer) { -1, _napkin_plan_add_scratch (p->plan, pg->batch * pg->M * pitch * ob), pg->c_dtype };
          pg->ldc = pitch;
          pg->c_bstride = pg->M * pitch;
          map->other = pg->c;
          map->stride[1] = pitch;
          if (map->stride[0] != 0)
            map->stride[0] = pg->c_bstride;
          break;
        }
    }
}

/* Whether a GEMM's fused maps read another operand or compute a transcendental (what
 * makes the staged epilogue long; a cast or a scale costs next to nothing). */
static gboolean
maps_read_or_transcend (const GArray *maps)
{
  for (guint i = 0; maps != NULL && i < maps->len; i++)
    {
      const NapkinPlanMap *map = &g_array_index (maps, NapkinPlanMap, i);

      if (map->has_other || fn_transcendental (map->fn))
        return TRUE;
    }
  return FALSE;
}

/* Ping-pong consumers (docs/plan.md, "Ping-pong") for a product whose fused maps read
 * another operand or compute a transcendental, where
 * the part of the staged epilogue they hide costs more than the tensor cores lose to one
 * warpgroup issuing at a time (NAPKIN_PLAN_PINGPONG_*), and every SM has a tile for each
 * consumer. A plain product whose rows of C are not aligned, or one whose maps only cast,
 * keeps the cooperative kernel: in the GEMM sweep of 40 shapes, 24 such took ping-pong
 * for no gain (median 1.00 of the cooperative time, against 0.97 for the others: the
 * call's drift). Outside regions
 * the plan's tile gives up half its rows for it (128 × 256 → 64 × 256, 256 × 128 →
 * 128 × 128: one warpgroup holds a whole tile's accumulators); a region's tile takes it
 * where its shape allows, so that a region written from this plan plans the same. */
static void
gemm_pingpong (NapkinPlanner    *p,
               NapkinPlanKernel *k)
{
  NapkinPlanGemm *g = &k->u.gemm, t;
  const gint64 sms = MAX (1, (gint64) p->arch->sms);
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;
  gint64 tiles, smem;
  double rate, tensor, hidden;
  /* NAPKIN_NO_PINGPONG=1: the cooperative kernel everywhere; NAPKIN_PINGPONG=1:
   * ping-pong wherever the tile allows it; both for A/B runs (docs/plan.md) */
  const gboolean forced = _napkin_plan_env_flag ("NAPKIN_PINGPONG");

  if (k->path != NAPKIN_PATH_WGMMA || g->split_k > 1 || (!forced && !maps_read_or_transcend (g->epilogue))
      || g_strcmp0 (g_getenv ("NAPKIN_NO_PINGPONG"), "1") == 0)
    return;
  t = *g;
  if (k->region < 0 && t.BM == 128 && t.BN == 256)
    t.BM = 64;
  else if (k->region < 0 && t.BM == 256 && t.BN == 128)
    t.BM = 128;
  if ((t.BM != 64 && t.BM != 128) || t.BM / 64 * t.BN / 2 > 128)
    return;
  tiles = t.batch * ((t.M + t.BM - 1) / t.BM) * ((t.N + t.BN - 1) / t.BN);
  napkin_tensor_class_for_dtype (t.ab_dtype, &klass);
  rate = napkin_arch_tensor_rate (p->arch, klass);
  if (tiles < 2 * sms || rate <= 0)
    return;
  tensor = 2.0 * t.batch * t.M * t.N * t.K / (rate * napkin_plan_gemm_tensor_share (p->arch, k->path, &t));   /* cooperative */
  hidden = (double) ((tiles + sms - 1) / sms)
           * napkin_plan_gemm_pingpong_hidden_s (p->arch, &t, napkin_plan_gemm_staged_epilogue_s (p->arch, &t));
  if (!forced && hidden <= (1.0 / NAPKIN_PLAN_PINGPONG_TENSOR - 1.0) * tensor)
    return;
  t.pingpong = TRUE;
  t.consumers = 2;
  /* the stages the tile had (outside regions 4, gemm_chosen_tiles): 6 stages ran 5–13 %
   * slower than 4 on an H200 and 3 stages 20 % slower (session 31, docs/perf-notes.md) */
  while (t.stages > 2 && napkin_plan_gemm_smem (NAPKIN_PATH_WGMMA, &t) > SMEM_LIMIT (p))
    t.stages--;
  smem = napkin_plan_gemm_smem (NAPKIN_PATH_WGMMA, &t);
  if (smem > SMEM_LIMIT (p))
    return;
  *g = t;
  k->threads = 128 * 3;
  k->registers = 232;
  k->smem_bytes = smem;
  k->grid = tiles;
}

/* Clusters of two blocks along M sharing B's chunks (docs/plan.md, "Clusters"): only
 * where NAPKIN_GEMM_CLUSTER=2 asks, until the form has been measured on a GPU. */
static void
gemm_cluster (NapkinPlanner    *p,
              NapkinPlanKernel *k)
{
  NapkinPlanGemm *g = &k->u.gemm;
  const char *want = g_getenv ("NAPKIN_GEMM_CLUSTER");

  (void) p;
  g->cluster_m = 1;
  if (k->path != NAPKIN_PATH_WGMMA || g_strcmp0 (want, "2") != 0
      || napkin_plan_gemm_cluster_refusal (g, 2) != NULL)
    return;
  g->cluster_m = 2;
  k->grid = napkin_plan_gemm_blocks (g);
}

/* The plan's line for the kernel: sizes, layouts, tiles, path, split and epilogue. */
static char *
gemm_note (NapkinPlanKernel *k)
{
  const NapkinPlanGemm *g = &k->u.gemm;
  GString *note = g_string_new (NULL);

  if (g->batch > 1)
    g_string_append_printf (note, "%" G_GINT64_FORMAT "× ", g->batch);
  if (k->path == NAPKIN_PATH_SIMT)
    {
      g_string_append_printf (note, _("%lld×%lld×%lld %s GEMM (%s·%s) on CUDA cores: every row's sums in each "
                                      "thread, A and B read where they lie (B in %u-byte loads), K in %u slices "
                                      "of %lld, summed after"),
                              (long long) g->M, (long long) g->N, (long long) g->K,
                              napkin_dtype_to_string (g->ab_dtype), g->a_kmajor ? "A" : "Aᵀ", g->b_kmajor ? "Bᵀ" : "B",
                              g->b_piece, g->split_k, (long long) g->BK);
      return g_string_free (note, FALSE);
    }
  g_string_append_printf (note, _("%lld×%lld×%lld %s GEMM (%s·%s), "
                          "blocks %lld×%lld, K in chunks of %lld, "
                          "%u stages, %s"), (long long) g->M, (long long) g->N, (long long) g->K,
                          napkin_dtype_to_string (g->ab_dtype), g->a_kmajor ? "A" : "Aᵀ",
                          g->b_kmajor ? "Bᵀ" : "B", (long long) g->BM, (long long) g->BN, (long long) g->BK, g->stages,
                          k->path == NAPKIN_PATH_WGMMA ? "TMA loads, wgmma" : "cp.async loads, mma.sync");
  {
    guint width;
    const char *what = gemm_in_place_operands (g, &width);

    if (what != NULL)
      g_string_append_printf (note, _(", %s read in place (%u-byte copies)"), what, width);
  }
  if (g->split_k > 1)
    g_string_append_printf (note, _(", K split in %u"), g->split_k);
  if (g->pingpong)
    g_string_append (note, _(", ping-pong consumers"));
  if (napkin_plan_gemm_cluster (g) > 1)
    g_string_append_printf (note, _(", clusters of %u along M sharing B by multicast"), napkin_plan_gemm_cluster (g));
  if (g->dual)
    {
      /* the gate's product beside this one, and how the two join */
      g_string_append (note, _(", gated: a second product of A in the same tiles,"));
      for (guint i = 0; g->gate != NULL && i < g->gate->len; i++)
        g_string_append_printf (note, " %s", napkin_fn_info (g_array_index (g->gate, NapkinPlanMap, i).fn)->name);
      g_string_append_printf (note, _(" then %s"), napkin_fn_info (g->join.fn)->name);
    }
  if (g->epilogue->len > 0)
    {
      g_string_append (note, ", fused:");
      for (guint i = 0; i < g->epilogue->len; i++)
        g_string_append_printf (note, " %s", napkin_fn_info (g_array_index (g->epilogue, NapkinPlanMap, i).fn)->name);
    }
  if (g->M % g->BM || g->N % g->BN || g->K % g->BK)
    g_string_append (note, _(", edge tiles bounded"));
  return g_string_free (note, FALSE);
}

/* The product's shape from the kernel's nodes: operands, layouts, axis roles and
 * runs; *epilogue the maps after it. FALSE (maybe with *why) where it is no GEMM. */
static gboolean
gemm_shape (NapkinPlanner    *p,
            NapkinPlanKernel *k,
            GemmShape        *s,
            GArray          **epilogue,
            char            **why)
{
  *s = (GemmShape) { 0 };
  s->contract = gemm_find_contract (p, k);
  if (s->contract < 0)
    return FALSE;
  *epilogue = gemm_epilogue_chain (p, k, s->contract, &s->last, why);
  if (*epilogue == NULL)
    return FALSE;
  s->xs = napkin_diagram_input_source (p->d, s->contract, 0);
  s->ys = napkin_diagram_input_source (p->d, s->contract, 1);
  s->xt = napkin_diagram_node_type (p->d, s->xs);
  s->yt = napkin_diagram_node_type (p->d, s->ys);
  s->ot = napkin_diagram_node_type (p->d, s->contract);
  if (!_napkin_plan_value_layout (p, s->xs, &s->x_l) || !_napkin_plan_value_layout (p, s->ys, &s->y_l)
      || !_napkin_plan_value_layout (p, s->last, &s->c_l)
      || s->ot == NULL || !gemm_axis_roles (p, s, why) || !gemm_axis_runs (p, s, why))
    {
      g_clear_pointer (epilogue, g_array_unref);
      return FALSE;
    }
  return TRUE;
}

gboolean
_napkin_plan_try_gemm (NapkinPlanner    *p,
                       NapkinPlanKernel *k,
                       char            **why)
{
  NapkinPlanGemm *g = &k->u.gemm;
  GemmShape s;
  GemmTiles t = { 0, 0, 0, 1, 0, FALSE, FALSE };
  GArray *epilogue;

  /* a product over axes of size 1 is element-wise, a region's tiles or not: no K to
   * stream, and a chunk of 64 would be 63/64 padding */
  for (guint i = 0; i < k->nodes->len; i++)
    if (_napkin_plan_unit_product (p->d, g_array_index (k->nodes, guint, i)))
      {
        *why = g_strdup_printf (_("contraction “%s” sums only over axes of size 1: an element-wise product"),
                                napkin_diagram_node (p->d, g_array_index (k->nodes, guint, i))->id);
        return FALSE;
      }
  if (!gemm_shape (p, k, &s, &epilogue, why))
    return FALSE;
  gemm_fill (p, g, &s, epilogue);
  t.wgmma = p->sm >= 90 && p->sm < 100 && (p->options == NULL || !p->options->no_wgmma);
  if (!gemm_epilogue_strides (p, g, &s, why) || !gemm_supported (p, k, t.wgmma, why))
    goto refuse;
  gemm_operand_layouts (p, k, &s, &t);
  if (t.skinny)
    {
      /* the tiles gemm_skinny chose: all of M, a block's columns, a slice of K */
      k->path = NAPKIN_PATH_SIMT;
      k->threads = 256;
      k->smem_bytes = napkin_plan_gemm_skinny_smem (g);
      k->registers = 64;
      g->stages = 1;
      gemm_split_k (p, k, g->split_k);
    }
  else
    {
      if (k->region >= 0)
        {
          if (!gemm_region_tiles (p, k, &s, &t, why))
            goto refuse;
        }
      else
        gemm_chosen_tiles (p, k, &t);
      gemm_resources (k, &t);
      gemm_split_k (p, k, t.split);
    }
  gemm_realign_epilogue_operands (p, k);
  gemm_pingpong (p, k);
  gemm_cluster (p, k);

  k->kind = NAPKIN_PLAN_GEMM;
  k->blocks_per_sm = 1;
  if (k->path == NAPKIN_PATH_MMA && g->BM < 64 && (g->a_piece % 16 != 0 || g->b_piece % 16 != 0))
    {
      /* as many skinny blocks as share an SM (GEMM_SKINNY_BLOCKS), as its threads,
       * registers and shared memory allow */
      const NapkinArch *a = p->arch;
      gint64 b = GEMM_SKINNY_BLOCKS;

      b = MIN (b, a->max_threads_per_sm / MAX (1u, k->threads));
      b = MIN (b, a->registers_per_sm / MAX (1u, k->threads * k->registers));
      b = MIN (b, (gint64) (a->levels[NAPKIN_LEVEL_SMEM].capacity_bytes
                            / MAX (1.0, k->smem_bytes + a->smem_reserved_per_block)));
      if (a->max_blocks_per_sm > 0)
        b = MIN (b, a->max_blocks_per_sm);
      k->blocks_per_sm = (guint) MAX (1, b);
    }
  k->feasible = k->smem_bytes <= SMEM_LIMIT (p);
  if (!k->feasible)
    k->infeasible = g_strdup_printf (_("%lld bytes of shared memory per block; %s allows %.0f"),
                                     (long long) k->smem_bytes, p->arch->id, p->arch->smem_max_per_block);
  k->note = gemm_note (k);
  return TRUE;

refuse:
  g_ptr_array_set_size (k->adjustments, 0);
  g_clear_pointer (&g->epilogue, g_array_unref);
  memset (&k->u, 0, sizeof k->u);
  return FALSE;
}

/* ---- gated pairs (docs/plan.md, "Gated GEMM") ------------------------------------------- */

/* From the join's input on `port` back to a product through maps of the value alone,
 * each outside regions and read only by the next: the product (maps[] the maps after it,
 * in order), or −1. */
static int
gated_side (NapkinPlanner *p,
            guint          join,
            guint          port,
            guint         *maps,
            guint         *n_maps)
{
  const NapkinTensorType *jt = napkin_diagram_node_type (p->d, join);
  guint chain[NAPKIN_PLAN_GATED_MAPS], n = 0;
  int at = napkin_diagram_input_source (p->d, join, port);

  for (;;)
    {
      const NapkinNode *node;
      guint n_consumers;

      if (at < 0 || p->top[at] >= 0)
        return -1;
      node = napkin_diagram_node (p->d, at);
      napkin_diagram_consumers (p->d, at, &n_consumers);
      if (n_consumers != 1 || !_napkin_plan_same_axes (napkin_diagram_node_type (p->d, at), jt))
        return -1;
      if (node->kind == NAPKIN_OP_CONTRACT)
        break;
      if (node->kind != NAPKIN_OP_MAP || napkin_op_n_inputs (node) != 1 || n == NAPKIN_PLAN_GATED_MAPS)
        return -1;
      chain[n++] = (guint) at;
      at = napkin_diagram_input_source (p->d, at, 0);
    }
  for (guint i = 0; i < n; i++)
    maps[i] = chain[n - 1 - i];
  *n_maps = n;
  return at;
}

gboolean
_napkin_plan_gated_match (NapkinPlanner   *p,
                          guint            join,
                          NapkinPlanGated *r)
{
  const NapkinNode *node = napkin_diagram_node (p->d, join);
  guint maps[2][NAPKIN_PLAN_GATED_MAPS], n_maps[2];
  int c[2], up, gate, shared = -1, other[2] = { -1, -1 };
  const NapkinTensorType *t[2];

  if (node->kind != NAPKIN_OP_MAP || node->fn != NAPKIN_FN_MUL || napkin_op_n_inputs (node) != 2 || p->top[join] >= 0)
    return FALSE;
  for (guint q = 0; q < 2; q++)
    if ((c[q] = gated_side (p, join, q, maps[q], &n_maps[q])) < 0)
      return FALSE;
  if (c[0] == c[1])
    return FALSE;
  /* the side with no maps is the product the epilogue finishes; the other the gate */
  up = n_maps[1] == 0 ? 1 : n_maps[0] == 0 ? 0 : -1;
  if (up < 0)
    return FALSE;
  gate = 1 - up;
  t[0] = napkin_diagram_node_type (p->d, c[0]);
  t[1] = napkin_diagram_node_type (p->d, c[1]);
  if (t[0] == NULL || t[1] == NULL || t[0]->dtype != t[1]->dtype
      || _napkin_plan_unit_product (p->d, c[0]) || _napkin_plan_unit_product (p->d, c[1]))
    return FALSE;
  /* one operand shared (the activations), the other each product's own (the weights),
   * over the same axes */
  for (guint a = 0; a < 2; a++)
    for (guint b = 0; b < 2; b++)
      if (napkin_diagram_input_source (p->d, c[gate], a) == napkin_diagram_input_source (p->d, c[up], b))
        {
          if (shared >= 0)
            return FALSE;
          shared = napkin_diagram_input_source (p->d, c[gate], a);
          other[0] = napkin_diagram_input_source (p->d, c[gate], 1 - a);
          other[1] = napkin_diagram_input_source (p->d, c[up], 1 - b);
        }
  if (shared < 0 || other[0] < 0 || other[1] < 0 || other[0] == other[1]
      || !_napkin_plan_same_axes (napkin_diagram_node_type (p->d, other[0]),
                                  napkin_diagram_node_type (p->d, other[1])))
    return FALSE;
  r->join = join;
  r->up = (guint) c[up];
  r->gate = (guint) c[gate];
  r->n_maps = n_maps[gate];
  memcpy (r->maps, maps[gate], n_maps[gate] * sizeof (guint));
  return TRUE;
}

GHashTable *
_napkin_plan_gated_table (NapkinPlanner *p)
{
  GHashTable *table = g_hash_table_new (g_direct_hash, g_direct_equal);

  /* NAPKIN_NO_GATED=1: every pair apart, for A/B runs (docs/plan.md, "Gated GEMM") */
  if ((p->options != NULL && p->options->generic_only) || _napkin_plan_env_flag ("NAPKIN_NO_GATED"))
    return table;
  for (guint n = 0; n < p->n_nodes; n++)
    {
      NapkinPlanGated r;
      guint members[NAPKIN_PLAN_GATED_MAPS + 3], m = 0;
      gboolean free_ = TRUE;

      if (!_napkin_plan_gated_match (p, n, &r))
        continue;
      members[m++] = r.gate;
      members[m++] = r.up;
      members[m++] = r.join;
      for (guint i = 0; i < r.n_maps; i++)
        members[m++] = r.maps[i];
      for (guint i = 0; i < m; i++)
        free_ &= !g_hash_table_contains (table, GUINT_TO_POINTER (members[i] + 1))
                 && (p->rotary == NULL || !g_hash_table_contains (p->rotary, GUINT_TO_POINTER (members[i] + 1)));
      if (!free_)
        continue;
      for (guint i = 0; i < m; i++)
        g_hash_table_insert (table, GUINT_TO_POINTER (members[i] + 1), GUINT_TO_POINTER (n + 1));
    }
  return table;
}

/* One product of the pair planned alone as a GEMM outside regions (`nodes`): FALSE where
 * it takes no wgmma tiles of one slice of K with nothing queued beside it. */
static NapkinPlanKernel *
gated_trial (NapkinPlanner          *p,
             const NapkinPlanKernel *like,
             const guint            *nodes,
             guint                   n,
             char                  **why)
{
  NapkinPlanKernel *t = _napkin_plan_kernel_new (like, NAPKIN_PLAN_GENERIC, NAPKIN_PATH_GENERIC);
  char *reason = NULL;
  gboolean ok;

  g_array_append_vals (t->nodes, nodes, n);
  p->member_of = NULL;
  ok = _napkin_plan_try_gemm (p, t, &reason);
  ok = ok && t->path == NAPKIN_PATH_WGMMA && t->u.gemm.split_k <= 1 && !t->u.gemm.swapped
       && p->before->len == 0 && p->after->len == 0;
  g_ptr_array_set_size (p->before, 0);
  g_ptr_array_set_size (p->after, 0);
  p->member_of = NULL;
  if (!ok)
    {
      if (*why == NULL)
        *why = reason != NULL ? reason
                              : g_strdup_printf (_("“%s” alone takes no wgmma tiles of one slice of K"),
                                                 napkin_diagram_node (p->d, nodes[0])->id);
      else
        g_free (reason);
      _napkin_plan_kernel_free (t);
      return NULL;
    }
  g_free (reason);
  return t;
}

gboolean
_napkin_plan_try_gated_gemm (NapkinPlanner         *p,
                             NapkinPlanKernel      *k,
                             const NapkinPlanGated *pair,
                             char                 **why)
{
  const NapkinPlanGated r = *pair;
  g_autoptr(GArray) gate_nodes = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GArray) up_nodes = g_array_new (FALSE, FALSE, sizeof (guint));
  guint scratch = p->plan->scratch->len, at = 0;
  gint64 scratch_bytes = p->plan->scratch_bytes;
  NapkinPlanKernel *gk = NULL, *uk = NULL;
  NapkinPlanGemm *g, *gg, *ug;
  gint64 MI, BN;

  if (k->region >= 0 || k->node != (int) r.join)
    return FALSE;
  if (p->sm < 90 || p->sm >= 100 || (p->options != NULL && p->options->no_wgmma))
    {
      *why = g_strdup (_("a gated pair runs as one GEMM on wgmma only (Hopper)"));
      return FALSE;
    }
  g_array_append_val (gate_nodes, r.gate);
  g_array_append_vals (gate_nodes, r.maps, r.n_maps);
  g_array_append_val (up_nodes, r.up);
  while (at < k->nodes->len && g_array_index (k->nodes, guint, at) != r.join)
    at++;
  g_array_append_vals (up_nodes, &g_array_index (k->nodes, guint, at), k->nodes->len - at);
  gk = gated_trial (p, k, (guint *) gate_nodes->data, gate_nodes->len, why);
  uk = gk != NULL ? gated_trial (p, k, (guint *) up_nodes->data, up_nodes->len, why) : NULL;
  if (gk == NULL || uk == NULL)
    goto refuse;
  gg = &gk->u.gemm;
  ug = &uk->u.gemm;
  /* the join: the up product's first map, its other operand the gate's last value */
  if (ug->epilogue == NULL || ug->epilogue->len == 0
      || g_array_index (ug->epilogue, NapkinPlanMap, 0).node != (int) r.join
      || !napkin_plan_gemm_maps_unary (gg) || gg->M != ug->M || gg->N != ug->N || gg->K != ug->K
      || gg->batch != ug->batch || gg->ab_dtype != ug->ab_dtype || gg->a.node != ug->a.node || gg->a.scratch >= 0
      || ug->a.scratch >= 0 || gg->b.scratch >= 0 || ug->b.scratch >= 0 || gg->lda != ug->lda
      || gg->a_kmajor != ug->a_kmajor || gg->a_bstride != ug->a_bstride || gg->b_kmajor != ug->b_kmajor)
    {
      *why = g_strdup_printf (_("the products “%s” and “%s” do not read their shared operand alike: planned apart"),
                              napkin_diagram_node (p->d, r.gate)->id, napkin_diagram_node (p->d, r.up)->id);
      goto refuse;
    }
  /* weights stored [k, n] (N-major B) take the pair apart: that form ran correctly on an
   * H200 but no faster than two GEMMs (0.98–1.05×, docs/perf-notes.md "Session 32");
   * NAPKIN_GATED_N_MAJOR=1 plans it as one GEMM */
  if (!ug->b_kmajor && !_napkin_plan_env_flag ("NAPKIN_GATED_N_MAJOR"))
    {
      *why = g_strdup (_("a gated pair with its weights stored [k, n] is planned apart (as one GEMM it measured no "
                         "faster)"));
      goto refuse;
    }

  /* the up product's kernel, with the gate's product beside it in the same tiles: the
   * tile's columns halve so that both accumulators fit where one did */
  k->kind = NAPKIN_PLAN_GEMM;
  k->path = NAPKIN_PATH_WGMMA;
  k->u.gemm = *ug;
  ug->epilogue = NULL;
  g = &k->u.gemm;
  g->dual = TRUE;
  g->node2 = (int) r.gate;
  g->b2 = gg->b;
  g->ldb2 = gg->ldb;
  g->b2_bstride = gg->b_bstride;
  g->gate = g_steal_pointer (&gg->epilogue);
  g->join = g_array_index (g->epilogue, NapkinPlanMap, 0);
  g->join.other = (NapkinPlanBuffer) { -1, -1, NAPKIN_DTYPE_FP32 };
  memset (g->join.stride, 0, sizeof g->join.stride);
  g_array_remove_index (g->epilogue, 0);
  /* the join reads nothing from memory: C by TMA where its rows allow, as for any GEMM
   * whose maps take the value alone */
  g->c_tma = napkin_plan_gemm_maps_unary (g) && (g->ldc * napkin_dtype_bytes (g->c_dtype)) % 16 == 0;
  MI = g->pingpong ? g->BM / 64 : g->BM / MAX (1u, g->consumers) / 64;
  BN = MIN (g->BN / 2, 128 / MAX (1, MI));
  BN -= BN % (g->b_kmajor ? 8 : 64);
  if (BN < (g->b_kmajor ? 8 : 64))
    {
      *why = g_strdup_printf (_("%lld×%lld tiles leave no room for a second accumulator"), (long long) g->BM,
                              (long long) g->BN);
      g_clear_pointer (&g->epilogue, g_array_unref);
      g_clear_pointer (&g->gate, g_array_unref);
      memset (&k->u, 0, sizeof k->u);
      goto refuse_kernel;
    }
  g->BN = BN;
  while (g->stages > 2 && napkin_plan_gemm_smem (NAPKIN_PATH_WGMMA, g) > SMEM_LIMIT (p))
    g->stages--;
  k->threads = uk->threads;
  k->registers = uk->registers;
  k->blocks_per_sm = 1;
  k->smem_bytes = napkin_plan_gemm_smem (NAPKIN_PATH_WGMMA, g);
  /* the up product's clusters, where the halved tile still splits */
  if (napkin_plan_gemm_cluster_refusal (g, g->cluster_m) != NULL)
    g->cluster_m = 1;
  k->grid = napkin_plan_gemm_blocks (g);
  k->feasible = k->smem_bytes <= SMEM_LIMIT (p);
  if (!k->feasible)
    k->infeasible = g_strdup_printf (_("%lld bytes of shared memory per block; %s allows %.0f"),
                                     (long long) k->smem_bytes, p->arch->id, p->arch->smem_max_per_block);
  g_free (k->note);
  k->note = gemm_note (k);
  _napkin_plan_kernel_free (gk);
  _napkin_plan_kernel_free (uk);
  return TRUE;

refuse_kernel:
  k->kind = NAPKIN_PLAN_GENERIC;
  k->path = NAPKIN_PATH_GENERIC;
refuse:
  if (gk != NULL)
    _napkin_plan_kernel_free (gk);
  if (uk != NULL)
    _napkin_plan_kernel_free (uk);
  /* nothing a trial added to the plan's scratch stays */
  g_array_set_size (p->plan->scratch, scratch);
  g_array_set_size (p->plan->scratch_offset, scratch);
  p->plan->scratch_bytes = scratch_bytes;
  return FALSE;
}
