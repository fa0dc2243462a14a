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

/* The axes of a node's value as it lies in device memory (row-major): an input's
 * tensor, the output tensor it feeds, else its inferred type (as src/lower stores it). */
static gboolean
value_layout (NapkinPlanner *p,
              int            node,
              AxisList      *out)
{
  const NapkinNode *n = napkin_diagram_node (p->d, node);
  const char *tensor = NULL;
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (p->d, node, &n_consumers);

  out->n = 0;
  if (n->kind == NAPKIN_OP_INPUT)
    tensor = n->tensor;
  for (guint c = 0; tensor == NULL && c < n_consumers; c++)
    if (napkin_diagram_node (p->d, consumers[c])->kind == NAPKIN_OP_OUTPUT)
      tensor = napkin_diagram_node (p->d, consumers[c])->tensor;
  if (tensor != NULL)
    {
      const NapkinTensor *t = napkin_diagram_tensor (p->d, napkin_diagram_find_tensor (p->d, tensor));

      for (guint a = 0; t->axes[a] != NULL && out->n < NAPKIN_MAX_RANK; a++)
        out->axes[out->n++] = napkin_diagram_find_axis (p->d, t->axes[a]);
      return TRUE;
    }
  {
    const NapkinTensorType *type = napkin_diagram_node_type (p->d, node);

    if (type == NULL || !type->valid)
      return FALSE;
    memcpy (out->axes, type->axes, sizeof (guint) * type->n_axes);
    out->n = type->n_axes;
  }
  return TRUE;
}

/* The element type a node's value has in device memory. */
static NapkinDtype
value_dtype (NapkinPlanner *p,
             int            node)
{
  const NapkinNode *n = napkin_diagram_node (p->d, node);
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (p->d, node, &n_consumers);

  if (p->options != NULL && p->options->has_dtype)
    return p->options->dtype;
  if (n->kind == NAPKIN_OP_INPUT)
    return napkin_diagram_tensor (p->d, napkin_diagram_find_tensor (p->d, n->tensor))->dtype;
  for (guint c = 0; c < n_consumers; c++)
    if (napkin_diagram_node (p->d, consumers[c])->kind == NAPKIN_OP_OUTPUT)
      return napkin_diagram_tensor (p->d, napkin_diagram_find_tensor (p->d, napkin_diagram_node (p->d, consumers[c])->tensor))->dtype;
  return _napkin_plan_dtype (p, node);
}

static int
position (const AxisList *l,
          guint           axis)
{
  for (guint i = 0; i < l->n; i++)
    if (l->axes[i] == axis)
      return (int) i;
  return -1;
}

static gint64
axis_size (NapkinPlanner *p,
           guint          axis)
{
  return napkin_diagram_axis_size (p->d, axis);
}

/* The axes of `group` lie in `layout` as one contiguous run in the same order; its
 * first position (or −1 when they do not). An empty group lies anywhere (returns −2). */
static int
run_of (const AxisList *layout,
        const AxisList *group)
{
  int first;

  if (group->n == 0)
    return -2;
  first = position (layout, group->axes[0]);
  if (first < 0)
    return -1;
  for (guint i = 1; i < group->n; i++)
    if (position (layout, group->axes[i]) != first + (int) i)
      return -1;
  return first;
}

static gint64
product (NapkinPlanner  *p,
         const AxisList *group)
{
  gint64 v = 1;

  for (guint i = 0; i < group->n; i++)
    v *= axis_size (p, group->axes[i]);
  return v;
}

/* Elements between consecutive values of the innermost axis of `group` is 1 when the
 * group ends the layout; the stride of a group = the product of the sizes after it. */
static gint64
stride_after (NapkinPlanner  *p,
              const AxisList *layout,
              int             last)
{
  gint64 s = 1;

  for (guint i = (guint) last + 1; i < layout->n; i++)
    s *= axis_size (p, layout->axes[i]);
  return s;
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

/* Shared memory of the Hopper GEMM kernel: `stages` A and B chunks, the epilogue's
 * staging of C (two 8 KB buffers per consumer warpgroup, or the whole fp32 tile when the
 * epilogue reads other operands), 1 KB of alignment, the stage barriers. */
static gint64
wgmma_smem (gint64 BM,
            gint64 BN,
            gint64 BK,
            guint  stages,
            guint  bytes)
{
  guint consumers = BM == 64 ? 1 : 2;

  return stages * (BM * BK + BK * BN) * bytes + 2 * consumers * 8192 + 1024 + 16 * stages;
}

static gint64
mma_smem (gint64 BM,
          gint64 BN,
          gint64 BK,
          guint  stages)
{
  return stages * (BM * (BK + 8) + BK * (BN + 8)) * 2;
}

typedef struct
{
  gint64 BM, BN, split;
} Tile;

/* K may be cut in `split` slices: the tiles alone leave SMs idle (at most half of them
 * busy… as before, a split never makes more blocks than SMs) and every slice keeps at
 * least 4 chunks. */
static gboolean
split_ok (NapkinPlanner *p,
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

  return split <= 16 && tiles * split <= sms && chunks / split >= 4;
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
               guint          bytes)
{
  const NapkinArch *a = p->arch;
  const double sms = MAX (1u, a->sms);
  const gint64 chunks = (K + BK - 1) / BK, slice = (chunks + split - 1) / split * BK;
  const gint64 blocks = batch * ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * split;
  const double waves = ceil (blocks / sms);
  NapkinTensorClass klass;
  double peak = 0.0, l2, hbm, compute, load, t;

  if (napkin_tensor_class_for_dtype (bytes == 1 ? NAPKIN_DTYPE_FP8_E4M3 : NAPKIN_DTYPE_BF16, &klass))
    peak = a->tensor_per_sm_clock[klass] * (a->tensor_clock_hz > 0 ? a->tensor_clock_hz : a->clock_hz);
  if (peak <= 0)
    peak = 1e12;
  /* TMA moves panels faster than the thread loads L2's figure was measured with */
  l2 = MAX (1e9, a->levels[NAPKIN_LEVEL_L2].bandwidth) * 1.5;
  hbm = MAX (1e9, a->levels[NAPKIN_LEVEL_HBM].bandwidth);
  /* n64 wgmmas (and a single warpgroup's) keep the tensor cores busy only part of the
   * time: 64-column tiles measured at about 0.6 of what their intensity predicts on the
   * H100 (round-1 runs, docs/plan.md) */
  compute = 2.0 * BM * BN * slice / (peak * tile_efficiency (BM, BN) * (BN < 128 ? 0.6 : 1.0));
  load = (double) (BM + BN) * slice * bytes / (l2 / MIN (sms, (double) blocks));
  t = waves * MAX (compute, load);
  t = MAX (t, (double) batch * (M * K + K * N) * bytes / hbm);
  if (split > 1)
    t += 2.0 * split * batch * M * N * 4 / l2 + 0.5 * a->launch_overhead_s;   /* launched behind the GEMM */
  return t;
}

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
             gboolean       b_kmajor)
{
  static const Tile wgmma_tiles[] = { { 128, 256 }, { 256, 128 }, { 128, 128 }, { 128, 64 }, { 64, 256 },
                                      { 64, 128 }, { 64, 64 } };
  static const Tile mma_tiles[] = { { 128, 256 }, { 256, 128 }, { 128, 128 }, { 128, 64 }, { 64, 128 },
                                    { 64, 64 } };
  const Tile *tiles = wgmma ? wgmma_tiles : mma_tiles;
  guint n_tiles = wgmma ? G_N_ELEMENTS (wgmma_tiles) : G_N_ELEMENTS (mma_tiles);
  Tile best = tiles[0];
  double best_cost = G_MAXDOUBLE, best_work = 0;
  gint64 best_busy = 0;
  const gint64 sms = MAX (1, (gint64) p->arch->sms);

  (void) b_kmajor;
  best.split = 1;
  for (guint i = 0; i < n_tiles; i++)
    for (gint64 split = 1; split <= 16; split++)
      {
        const gint64 BM = tiles[i].BM, BN = tiles[i].BN;
        const gint64 blocks = batch * ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * split;
        const gint64 busy = MIN (blocks, sms);
        const double work = (double) blocks * BM * BN * (((K + BK - 1) / BK + split - 1) / split);
        double cost;

        if (split > 1 && !split_ok (p, batch, M, N, K, BM, BN, BK, split))
          continue;
        cost = gemm_estimate (p, batch, M, N, K, BM, BN, BK, split, bytes);
        /* clearly faster; or, while the GPU is not full, as fast (memory-bound shapes)
         * with more SMs busy, or as many with less padding computed */
        if (cost < best_cost * 0.97
            || (cost <= best_cost * 1.03 && best_busy < sms
                && (busy > best_busy || (busy == best_busy && work < best_work))))
          {
            best_cost = MIN (cost, best_cost);
            best = tiles[i];
            best.split = split;
            best_busy = busy;
            best_work = work;
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

/* A repack of operand `src` (rows × cols stored with `ld`) into a new scratch buffer
 * with 16-byte rows, transposed when asked: the operand the GEMM then reads. */
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
              gboolean                transpose,
              gint64                 *new_ld)
{
  guint bytes = napkin_dtype_bytes (dtype);
  gint64 out_rows = transpose ? cols : rows, out_cols = transpose ? rows : cols;
  gint64 align = 16 / bytes, out_ld = (out_cols + align - 1) / align * align;
  gint64 count = bstride == 0 ? 1 : batch;
  NapkinPlanKernel *r = _napkin_plan_kernel_new (k, NAPKIN_PLAN_REPACK, NAPKIN_PATH_SIMT);
  NapkinPlanRepack *rp = &r->u.repack;

  rp->src = src;
  rp->dst = (NapkinPlanBuffer) { -1, _napkin_plan_add_scratch (p->plan, count * out_rows * out_ld * bytes), dtype };
  rp->dtype = dtype;
  rp->batch = count;
  rp->rows = rows;
  rp->cols = cols;
  rp->ld_src = ld;
  rp->ld_dst = out_ld;
  rp->src_bstride = bstride;
  rp->dst_bstride = out_rows * out_ld;
  rp->transpose = transpose;
  napkin_plan_helper_launch (r);
  r->note = g_strdup_printf (_("%s%s a %lld×%lld operand into a scratch copy with "
                             "16-byte rows (%lld elements)"), transpose ? "transposes" : "copies",
                             count > 1 ? " each of the batch's" : "", (long long) rows, (long long) cols, (long long) out_ld);
  g_ptr_array_add (p->before, r);
  *new_ld = out_ld;
  return rp->dst;
}

gboolean
_napkin_plan_try_gemm (NapkinPlanner    *p,
                       NapkinPlanKernel *k,
                       char            **why)
{
  NapkinPlanGemm *g = &k->u.gemm;
  int contract = -1, last, xs, ys;
  AxisList x_l, y_l, c_l, batch = { { 0 }, 0 }, m = { { 0 }, 0 }, n = { { 0 }, 0 }, kk = { { 0 }, 0 };
  const NapkinTensorType *xt, *yt, *ot;
  const AxisList *a_l, *b_l;
  const AxisList *mg, *ng;
  gboolean swapped = FALSE, wgmma;
  NapkinDtype ab;
  guint bytes, n_consumers;
  const guint *consumers;
  GArray *epilogue;
  gint64 BM, BN, BK, tm, tn, tk;
  NapkinMarkKind km, kn, kk_kind;
  guint stages;
  gint64 split = 1;

  for (guint i = 0; i < k->nodes->len; i++)
    {
      guint id = g_array_index (k->nodes, guint, i);
      const NapkinNode *node = napkin_diagram_node (p->d, id);

      if (node->kind == NAPKIN_OP_CONTRACT)
        {
          if (contract >= 0)
            return FALSE;   /* two products: attention's, or not one GEMM */
          contract = id;
        }
      else if (node->kind != NAPKIN_OP_MAP)
        return FALSE;
    }
  if (contract < 0)
    return FALSE;

  /* The chain after the product: each map takes the previous value, its other operand
   * (if any) from device memory; nothing in between is used outside the kernel. */
  epilogue = g_array_new (FALSE, TRUE, sizeof (NapkinPlanMap));
  last = contract;
  for (guint step = 1; step < k->nodes->len; step++)
    {
      int next = -1;

      consumers = napkin_diagram_consumers (p->d, last, &n_consumers);
      for (guint c = 0; c < n_consumers; c++)
        {
          if (!_napkin_plan_member (p, k, consumers[c]))
            {
              g_array_unref (epilogue);
              *why = g_strdup_printf (_("the value of “%s” is used both inside the kernel and after it; a fused "
                                      "epilogue keeps only the chain's last value"), napkin_diagram_node (p->d, last)->id);
              return FALSE;
            }
          if (next >= 0 && next != (int) consumers[c])
            {
              g_array_unref (epilogue);
              *why = g_strdup_printf (_("“%s” feeds two operations of the kernel; only a chain of maps after the "
                                      "product is fused"), napkin_diagram_node (p->d, last)->id);
              return FALSE;
            }
          next = consumers[c];
        }
      if (next < 0)
        {
          g_array_unref (epilogue);
          *why = g_strdup (_("a map of the kernel is not on the chain after the product (maps before a product are "
                           "not fused yet: put them in their own region)"));
          return FALSE;
        }
      {
        const NapkinNode *mn = napkin_diagram_node (p->d, next);
        NapkinPlanMap map = { 0 };

        map.node = next;
        map.fn = mn->fn;
        map.alpha = mn->alpha;
        map.dtype = mn->has_dtype ? mn->dtype : NAPKIN_DTYPE_FP32;
        for (guint q = 0; q < napkin_op_n_inputs (mn); q++)
          {
            int src = napkin_diagram_input_source (p->d, next, q);

            if (src == last)
              continue;
            if (_napkin_plan_member (p, k, src))
              {
                g_array_unref (epilogue);
                *why = g_strdup_printf (_("map “%s” combines two values made inside the kernel"), mn->id);
                return FALSE;
              }
            map.has_other = TRUE;
            map.other_first = q == 0;
            map.other = (NapkinPlanBuffer) { src, -1, value_dtype (p, src) };
            map.stride[0] = src;   /* the operand's node, until the axes are known */
          }
        g_array_append_val (epilogue, map);
        last = next;
      }
    }
  if (last == contract && k->nodes->len != 1)
    {
      g_array_unref (epilogue);
      return FALSE;
    }

  xs = napkin_diagram_input_source (p->d, contract, 0);
  ys = napkin_diagram_input_source (p->d, contract, 1);
  xt = napkin_diagram_node_type (p->d, xs);
  yt = napkin_diagram_node_type (p->d, ys);
  ot = napkin_diagram_node_type (p->d, contract);
  if (!value_layout (p, xs, &x_l) || !value_layout (p, ys, &y_l) || !value_layout (p, last, &c_l) || ot == NULL)
    {
      g_array_unref (epilogue);
      return FALSE;
    }
  /* roles of the axes */
  for (guint i = 0; i < ot->n_axes; i++)
    {
      guint a = ot->axes[i];
      gboolean in_x = napkin_tensor_type_has_axis (xt, a), in_y = napkin_tensor_type_has_axis (yt, a);

      if (in_x && in_y)
        batch.axes[batch.n++] = a;
    }
  /* batch, m, n in C's order; k in X's order */
  for (guint i = 0; i < c_l.n; i++)
    {
      guint a = c_l.axes[i];
      gboolean in_x = napkin_tensor_type_has_axis (xt, a), in_y = napkin_tensor_type_has_axis (yt, a);

      if (in_x && !in_y)
        m.axes[m.n++] = a;
      else if (in_y && !in_x)
        n.axes[n.n++] = a;
    }
  for (guint i = 0; i < x_l.n; i++)
    {
      guint a = x_l.axes[i];

      if (napkin_tensor_type_has_axis (yt, a) && !napkin_tensor_type_has_axis (ot, a))
        kk.axes[kk.n++] = a;
      else if (!napkin_tensor_type_has_axis (yt, a) && !napkin_tensor_type_has_axis (ot, a))
        {
          g_array_unref (epilogue);
          *why = g_strdup_printf (_("contraction “%s” sums axis %s of its first operand alone"),
                                  napkin_diagram_node (p->d, contract)->id, napkin_diagram_axis (p->d, a)->name);
          return FALSE;
        }
    }
  for (guint i = 0; i < y_l.n; i++)
    if (!napkin_tensor_type_has_axis (xt, y_l.axes[i]) && !napkin_tensor_type_has_axis (ot, y_l.axes[i]))
      {
        g_array_unref (epilogue);
        *why = g_strdup_printf (_("contraction “%s” sums axis %s of its second operand alone"),
                                napkin_diagram_node (p->d, contract)->id, napkin_diagram_axis (p->d, y_l.axes[i])->name);
        return FALSE;
      }
  if (m.n == 0 || n.n == 0 || kk.n == 0)
    {
      g_array_unref (epilogue);
      *why = g_strdup_printf (_("contraction “%s” is not a matrix product (it needs a row, a column and a "
                              "contracted axis)"), napkin_diagram_node (p->d, contract)->id);
      return FALSE;
    }
  /* Batch axes lead every operand in one order; the row, column and contracted groups
   * are contiguous runs. C[…, n, m] is computed as Cᵀ = Bᵀ·Aᵀ. */
  {
    int cm = run_of (&c_l, &m), cn = run_of (&c_l, &n);

    if (cm < 0 || cn < 0 || run_of (&x_l, &m) < 0 || run_of (&x_l, &kk) < 0 || run_of (&y_l, &n) < 0
        || run_of (&y_l, &kk) < 0)
      {
        /* name the value and the group it splits: storing that value in another axis
         * order (the producer's `out`) makes the product a plain GEMM */
        const char *where = cm < 0 || cn < 0 ? N_("its result")
                            : run_of (&x_l, &m) < 0 || run_of (&x_l, &kk) < 0 ? N_("its first operand")
                            : N_("its second operand");
        const AxisList *split = cm < 0 ? &m : cn < 0 ? &n : run_of (&x_l, &m) < 0 ? &m : run_of (&x_l, &kk) < 0 ? &kk
                                : run_of (&y_l, &n) < 0 ? &n : &kk;
        g_autoptr(GString) names = g_string_new (NULL);

        for (guint i = 0; i < split->n; i++)
          g_string_append_printf (names, "%s%s", i ? "·" : "", napkin_diagram_axis (p->d, split->axes[i])->name);
        g_array_unref (epilogue);
        *why = g_strdup_printf (_("the row, column and contracted axes of “%s” must each be one contiguous run in "
                                  "its operands and result: %s splits %s"), napkin_diagram_node (p->d, contract)->id,
                                _(where), names->str);
        return FALSE;
      }
    for (guint i = 0; i < batch.n; i++)
      if (position (&x_l, batch.axes[i]) != (int) i || position (&y_l, batch.axes[i]) != (int) i
          || position (&c_l, batch.axes[i]) != (int) i)
        {
          g_array_unref (epilogue);
          *why = g_strdup_printf (_("batch axis %s of “%s” must lead every operand, in the same order"),
                                  napkin_diagram_axis (p->d, batch.axes[i])->name,
                                  napkin_diagram_node (p->d, contract)->id);
          return FALSE;
        }
    swapped = cn < cm;
  }
  /* A holds C's rows (the first of C's two groups), B its columns */
  if (!swapped)
    {
      a_l = &x_l, b_l = &y_l, mg = &m, ng = &n;
      g->a = (NapkinPlanBuffer) { xs, -1, value_dtype (p, xs) };
      g->b = (NapkinPlanBuffer) { ys, -1, value_dtype (p, ys) };
    }
  else
    {
      a_l = &y_l, b_l = &x_l, mg = &n, ng = &m;
      g->a = (NapkinPlanBuffer) { ys, -1, value_dtype (p, ys) };
      g->b = (NapkinPlanBuffer) { xs, -1, value_dtype (p, xs) };
    }
  g->node = contract;
  g->swapped = swapped;
  g->c = (NapkinPlanBuffer) { last, -1, value_dtype (p, last) };
  g->ab_dtype = ab = g->a.dtype;
  g->c_dtype = g->c.dtype;
  g->batch = product (p, &batch);
  g->M = product (p, mg);
  g->N = product (p, ng);
  g->K = product (p, &kk);
  g->a_kmajor = run_of (a_l, &kk) > run_of (a_l, mg);
  g->b_kmajor = run_of (b_l, &kk) > run_of (b_l, ng);
  g->lda = g->a_kmajor ? g->K : g->M;
  g->ldb = g->b_kmajor ? g->K : g->N;
  g->ldc = g->N;
  g->a_bstride = g->M * g->K;
  g->b_bstride = g->K * g->N;
  g->c_bstride = g->M * g->N;
  g->epilogue = epilogue;
  g->partials = -1;
  g->split_k = 1;

  /* the epilogue's other operands: strides per (batch, row, column) of C */
  for (guint i = 0; i < epilogue->len; i++)
    {
      NapkinPlanMap *map = &g_array_index (epilogue, NapkinPlanMap, i);
      AxisList o_l;
      gint64 sb = 0, sm = 0, sn = 0;
      gboolean has_batch = FALSE, lacks_batch = FALSE;

      if (!map->has_other)
        continue;
      if (!value_layout (p, map->other.node, &o_l))
        {
          *why = g_strdup_printf (_("the other operand of “%s” has no known layout"), napkin_diagram_node (p->d, map->node)->id);
          goto refuse;
        }
      for (guint j = 0; j < o_l.n; j++)
        {
          guint a = o_l.axes[j];
          gint64 s = stride_after (p, &o_l, j);

          if (position (&batch, a) >= 0)
            has_batch = TRUE;
          else if (position (mg, a) == (int) mg->n - 1)
            sm = s;
          else if (position (ng, a) == (int) ng->n - 1)
            sn = s;
          else if (position (mg, a) < 0 && position (ng, a) < 0)
            {
              *why = g_strdup_printf (_("“%s” broadcasts an operand with axis %s, which the product's result lacks"),
                                      napkin_diagram_node (p->d, map->node)->id, napkin_diagram_axis (p->d, a)->name);
              goto refuse;
            }
        }
      /* a group of several axes is read as one: the operand must hold it whole and contiguous */
      if ((mg->n > 1 && sm != 0 && run_of (&o_l, mg) < 0) || (ng->n > 1 && sn != 0 && run_of (&o_l, ng) < 0))
        {
          *why = g_strdup_printf (_("the other operand of “%s” must hold the result's merged row or column axes "
                                  "together"), napkin_diagram_node (p->d, map->node)->id);
          goto refuse;
        }
      for (guint j = 0; j < batch.n; j++)
        lacks_batch |= position (&o_l, batch.axes[j]) != (int) j;
      if (has_batch && lacks_batch)
        {
          *why = g_strdup_printf (_("the other operand of “%s” must carry every batch axis, leading, or none"),
                                  napkin_diagram_node (p->d, map->node)->id);
          goto refuse;
        }
      if (has_batch)
        sb = stride_after (p, &o_l, (int) batch.n - 1);
      /* (mg and ng are already the computed product's rows and columns) */
      map->stride[0] = sb;
      map->stride[1] = sm;
      map->stride[2] = sn;
    }

  if (!tensor_core_type (ab) || g->b.dtype != ab)
    {
      *why = g_strdup_printf (_("contraction “%s” multiplies %s by %s: the tensor-core kernels take two fp16, bf16 or "
                              "fp8 operands of one type"), napkin_diagram_node (p->d, contract)->id,
                              napkin_dtype_to_string (g->a.dtype), napkin_dtype_to_string (g->b.dtype));
      goto refuse;
    }
  if (k->region >= 0 && napkin_diagram_region (p->d, block_region (p, k))->level != NAPKIN_LEVEL_SMEM)
    {
      *why = g_strdup_printf (_("region “%s” is at %s: a tensor-core kernel's blocks are relabeled at shared memory"),
                              napkin_diagram_region (p->d, block_region (p, k))->name,
                              napkin_level_to_string (napkin_diagram_region (p->d, block_region (p, k))->level));
      goto refuse;
    }
  if (g->M >= G_MAXINT32 || g->N >= G_MAXINT32 || g->K >= G_MAXINT32 || g->batch >= G_MAXINT32)
    {
      *why = g_strdup (_("the product's sizes must stay below 2³¹ (tile coordinates are 32-bit)"));
      goto refuse;
    }
  wgmma = p->sm >= 90 && p->sm < 100 && (p->options == NULL || !p->options->no_wgmma);
  bytes = napkin_dtype_bytes (ab);
  if (bytes == 1 && !wgmma)
    {
      *why = g_strdup_printf (_("%s has no fp8 tensor-core path that Napkin generates (Hopper's wgmma has one)"),
                              p->arch->id);
      goto refuse;
    }

  /* An operand without the batch axes is shared by the whole batch (one copy, batch
   * stride 0), before and after any repack. */
  if (g->batch > 1)
    {
      gboolean a_has_batch = TRUE, b_has_batch = TRUE;

      for (guint i = 0; i < batch.n; i++)
        {
          a_has_batch &= napkin_tensor_type_has_axis (swapped ? yt : xt, batch.axes[i]);
          b_has_batch &= napkin_tensor_type_has_axis (swapped ? xt : yt, batch.axes[i]);
        }
      if (!a_has_batch)
        g->a_bstride = 0;
      if (!b_has_batch)
        g->b_bstride = 0;
    }

  /* Operands whose rows are not 16 bytes apart (or, for fp8, not K-major) are copied
   * once into a scratch layout the tensor copies can read. */
  {
    gboolean a_fix = (g->lda * bytes) % 16 != 0 || (bytes == 1 && !g->a_kmajor);
    gboolean b_fix = (g->ldb * bytes) % 16 != 0 || (bytes == 1 && !g->b_kmajor);

    if (a_fix)
      {
        gboolean t = bytes == 1 && !g->a_kmajor;
        gint64 rows = g->a_kmajor ? g->M : g->K, cols = g->a_kmajor ? g->K : g->M;

        g->a = queue_repack (p, k, g->a, ab, g->batch, rows, cols, g->lda, g->a_bstride, t, &g->lda);
        if (t)
          g->a_kmajor = TRUE;
        if (g->a_bstride != 0)
          g->a_bstride = (g->a_kmajor ? g->M : g->K) * g->lda;
      }
    if (b_fix)
      {
        gboolean t = bytes == 1 && !g->b_kmajor;
        gint64 rows = g->b_kmajor ? g->N : g->K, cols = g->b_kmajor ? g->K : g->N;

        g->b = queue_repack (p, k, g->b, ab, g->batch, rows, cols, g->ldb, g->b_bstride, t, &g->ldb);
        if (t)
          g->b_kmajor = TRUE;
        if (g->b_bstride != 0)
          g->b_bstride = (g->b_kmajor ? g->N : g->K) * g->ldb;
      }
  }
  g->c_tma = epilogue->len == 0 && (g->ldc * napkin_dtype_bytes (g->c_dtype)) % 16 == 0;

  /* Tiles. A region's are the user's: the plan picks the path that runs them (wgmma
   * where its tile rules hold, else mma.sync) and never changes them; where neither
   * can, the kernel is generic and says why. An operation outside regions gets the
   * tiles the plan finds best. */
  tm = group_tile (p, k, mg, &km);
  tn = group_tile (p, k, ng, &kn);
  tk = group_tile (p, k, &kk, &kk_kind);
  if (k->region >= 0)
    {
      const NapkinRegion *br = napkin_diagram_region (p->d, block_region (p, k));
      gint64 WM = 0, WN = 0;
      g_autofree char *no_wgmma = NULL;

      if (km != NAPKIN_MARK_PARALLEL || kn != NAPKIN_MARK_PARALLEL)
        {
          *why = g_strdup_printf (_("region “%s” must cut %s and %s into parallel groups (the blocks of the product)"),
                                  br->name, napkin_diagram_axis (p->d, mg->axes[mg->n - 1])->name,
                                  napkin_diagram_axis (p->d, ng->axes[ng->n - 1])->name);
          goto refuse;
        }
      if (kk_kind == NAPKIN_MARK_PARALLEL)
        {
          *why = g_strdup_printf (_("region “%s” cuts the contracted axis %s into parallel groups: stream it"),
                                  br->name, napkin_diagram_axis (p->d, kk.axes[kk.n - 1])->name);
          goto refuse;
        }
      BM = MIN (tm, g->M);
      BN = MIN (tn, g->N);
      stages = MAX (2u, br->stages);
      BK = kk_kind == NAPKIN_MARK_STREAM ? MIN (tk, g->K) : g->K;
      if (wgmma)
        {
          gint64 wbk = bytes == 1 ? 128 : 64;

          if (!wgmma_tile_ok (BM, BN, g->b_kmajor))
            no_wgmma = g_strdup_printf (_("a %lld×%lld block is not a wgmma tile "
                                        "(64, 128 or 256 rows; up to 256 columns in steps of %d; at most 128 "
                                        "accumulators a thread)"), (long long) BM, (long long) BN, g->b_kmajor ? 8 : 64);
          else if (BK % wbk != 0 && BK < g->K)
            no_wgmma = g_strdup_printf (_("chunks of %lld along %s: wgmma takes multiples of %lld"), (long long) BK, napkin_diagram_axis (p->d, kk.axes[kk.n - 1])->name, (long long) wbk);
          else
            {
              /* a chunk of BK streamed as BK/64 chunks: the same shared memory */
              stages = stages * (guint) MAX (1, (BK < g->K ? BK : wbk) / wbk);
              BK = wbk;
            }
          if (no_wgmma != NULL)
            {
              if (bytes == 1)
                {
                  *why = g_strdup_printf (_("fp8 products run only on wgmma: %s"), no_wgmma);
                  goto refuse;
                }
              wgmma = FALSE;
              adjust (k, _("wgmma not used: %s; mma.sync instead"), no_wgmma);
            }
        }
      if (!wgmma)
        {
          WM = MIN (BM, 64);
          WN = MIN (BN, 32);
          for (guint r = 0; r < napkin_diagram_n_regions (p->d); r++)
            if (p->parent[r] == block_region (p, k))
              {
                const NapkinRegion *inner = napkin_diagram_region (p->d, r);
                gint64 t = 0;

                if (napkin_region_mark (inner, napkin_diagram_axis (p->d, mg->axes[mg->n - 1])->name, &t)
                    == NAPKIN_MARK_PARALLEL)
                  WM = MIN (t, BM);
                if (napkin_region_mark (inner, napkin_diagram_axis (p->d, ng->axes[ng->n - 1])->name, &t)
                    == NAPKIN_MARK_PARALLEL)
                  WN = MIN (t, BN);
              }
          if (BK >= g->K)
            BK = MIN (32, (g->K + 15) / 16 * 16);
          if (!mma_tile_ok (BM, BN, WM, WN) || BK % 16 != 0 || BK > 64)
            {
              *why = g_strdup_printf (_("blocks of %lld×%lld with %lld×%lld warp tiles and chunks of %lld fit neither wgmma "
                                      "nor mma.sync (multiples of 16, at most 16 warps and 128 accumulators a thread, "
                                      "chunks of 16 to 64)"), (long long) BM, (long long) BN, (long long) WM, (long long) WN, (long long) BK);
              goto refuse;
            }
        }
      g->WM = WM;
      g->WN = WN;
    }
  else
    {
      Tile t;

      BK = wgmma ? (bytes == 1 ? 128 : 64) : 32;
      t = choose_tile (p, g->batch, g->M, g->N, g->K, BK, bytes, wgmma, g->b_kmajor);
      BM = t.BM;
      BN = t.BN;
      split = t.split;
      stages = wgmma ? 4 : 3;
      while (stages > 2 && (wgmma ? wgmma_smem (BM, BN, BK, stages, bytes) : mma_smem (BM, BN, BK, stages)) > SMEM_LIMIT (p))
        stages--;
      g->WM = MIN (BM, 64);
      g->WN = MIN (BN, 32);
      if (!wgmma && !mma_tile_ok (BM, BN, g->WM, g->WN))
        {
          BN = MIN (BN, 128);
          g->WN = MIN (BN, 32);
        }
    }
  if (wgmma)
    {
      g->consumers = BM == 64 ? 1 : 2;
      k->threads = 128 * (1 + g->consumers);
      k->smem_bytes = wgmma_smem (BM, BN, BK, stages, bytes);
      k->registers = g->consumers == 2 ? 232 : 168;
      g->persistent = TRUE;
      k->path = NAPKIN_PATH_WGMMA;
    }
  else
    {
      k->threads = (guint) ((BM / g->WM) * (BN / g->WN) * 32);
      k->smem_bytes = mma_smem (BM, BN, BK, stages);
      k->registers = (guint) MIN (255, g->WM * g->WN / 32 + 64);
      k->path = NAPKIN_PATH_MMA;
    }
  g->BM = BM;
  g->BN = BN;
  g->BK = BK;
  g->stages = stages;

  /* Too few tiles to fill the GPU and a long K: split K, sum the slices after. An
   * operation outside regions has its split from choose_tile; a region's tiles get the
   * split the same estimate prefers for them. */
  if (k->region >= 0)
    {
      double best = G_MAXDOUBLE;

      for (gint64 s = 1; s <= 16; s++)
        if (s == 1 || split_ok (p, g->batch, g->M, g->N, g->K, BM, BN, BK, s))
          {
            double t = gemm_estimate (p, g->batch, g->M, g->N, g->K, BM, BN, BK, s, bytes);

            if (t < best * 0.97)
              {
                best = t;
                split = s;
              }
          }
    }
  else if (split > 1 && !split_ok (p, g->batch, g->M, g->N, g->K, BM, BN, BK, split))
    split = 1;
  {
    gint64 tiles = g->batch * ((g->M + BM - 1) / BM) * ((g->N + BN - 1) / BN);

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

  k->kind = NAPKIN_PLAN_GEMM;
  k->blocks_per_sm = 1;
  k->feasible = k->smem_bytes <= SMEM_LIMIT (p);
  if (!k->feasible)
    k->infeasible = g_strdup_printf (_("%lld bytes of shared memory per block; %s allows %.0f"),
                                     (long long) k->smem_bytes, p->arch->id, p->arch->smem_max_per_block);
  {
    GString *note = g_string_new (NULL);

    if (g->batch > 1)
      g_string_append_printf (note, "%" G_GINT64_FORMAT "× ", g->batch);
    g_string_append_printf (note, _("%lld×%lld×%lld %s GEMM (%s·%s), "
                            "blocks %lld×%lld, K in chunks of %lld, "
                            "%u stages, %s"), (long long) g->M, (long long) g->N, (long long) g->K, napkin_dtype_to_string (ab), g->a_kmajor ? "A" : "Aᵀ",
                            g->b_kmajor ? "Bᵀ" : "B", (long long) BM, (long long) BN, (long long) BK, stages,
                            k->path == NAPKIN_PATH_WGMMA ? "TMA loads, wgmma" : "cp.async loads, mma.sync");
    if (g->split_k > 1)
      g_string_append_printf (note, _(", K split in %u"), g->split_k);
    if (epilogue->len > 0)
      {
        g_string_append (note, ", fused:");
        for (guint i = 0; i < epilogue->len; i++)
          g_string_append_printf (note, " %s", napkin_fn_info (g_array_index (epilogue, NapkinPlanMap, i).fn)->name);
      }
    if (g->M % BM || g->N % BN || g->K % BK)
      g_string_append (note, _(", edge tiles bounded"));
    k->note = g_string_free (note, FALSE);
  }
  return TRUE;

refuse:
  g_ptr_array_set_size (k->adjustments, 0);
  g_clear_pointer (&g->epilogue, g_array_unref);
  memset (&k->u, 0, sizeof k->u);
  return FALSE;
}
