/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-plan-private.h"

/* Row kernels and element-wise kernels on CUDA cores (docs/plan.md, "Rows and
 * element-wise kernels").
 *
 * A rows kernel is a chain: element-wise maps (the prologue) → one softmax,
 * normalisation or reduction over the last axis of its input → maps (the epilogue).
 * Every map's second operand is read from device memory through strides. An
 * element-wise kernel is a chain of maps alone. Each recogniser walks the chain
 * from the kernel's nodes, reads the stored layout of every buffer, and chooses
 * the threads, the vector width and where the row lives while it is worked on. */

/* Where the row lives while the kernel works on it. */
typedef enum
{
  ROWS_REGISTERS,   /* one pass, the row in registers of its team */
  ROWS_SMEM,        /* one pass, the row in shared memory */
  ROWS_TWO_PASS,    /* statistics in one pass, then the row read again */
  ROWS_REDUCE,      /* a reduction: one pass, nothing kept */
} RowsMode;

/* Values per thread the register form keeps at most (32 fp32 registers). */
#define REG_VALUES 32
/* the shared-memory row's threads where it replaces a register row of one block an SM */
#define ROWS_SMEM_THREADS_ALONE 256
/* Registers a row thread needs besides the values it keeps: the estimate is also the
 * budget the kernel's launch bounds give the compiler. ptxas fits the printed kernels
 * in it on sm_90a, spilling a few bytes at most where fused operands press (a budget
 * one step larger would halve the blocks per SM). */
#define REG_OVERHEAD 32

static gint64
axis_size (NapkinPlanner *p,
           guint          axis)
{
  return napkin_diagram_axis_size (p->d, axis);
}

static const char *
axis_name (NapkinPlanner *p,
           guint          axis)
{
  return napkin_diagram_axis (p->d, axis)->name;
}

static const char *
node_id (NapkinPlanner *p,
         int            node)
{
  return napkin_diagram_node (p->d, node)->id;
}

/* The row axes (outermost first) are flattened into one row index. A buffer is
 * addressed by that index when its offset is linear in it: stride(r_j) = s · the
 * product of the sizes of the row axes inside r_j (axes of size 1 do not count).
 * Sets s (0: the buffer does not vary by row). */
static gboolean
row_stride (NapkinPlanner          *p,
            const NapkinPlanLayout *l,
            const guint            *rows,
            guint                   n_rows,
            gint64                 *s)
{
  gint64 inner = 1;
  gboolean have = FALSE;

  *s = 0;
  for (int i = (int) n_rows - 1; i >= 0; i--)
    {
      gint64 size = axis_size (p, rows[i]);
      gint64 st = _napkin_plan_layout_stride (p->d, l, rows[i]);

      if (size == 1)
        continue;
      if (!have)
        {
          *s = st;
          have = TRUE;
        }
      else if (st != *s * inner)
        return FALSE;
      inner *= size;
    }
  return TRUE;
}

/* Axes that a layout has beyond `allowed` and the column axis (size-1 axes aside). */
static int
stray_axis (NapkinPlanner          *p,
            const NapkinPlanLayout *l,
            const guint            *allowed,
            guint                   n_allowed,
            int                     col)
{
  for (guint i = 0; i < l->n; i++)
    {
      gboolean ok = (int) l->axes[i] == col || axis_size (p, l->axes[i]) == 1;

      for (guint j = 0; j < n_allowed && !ok; j++)
        ok = allowed[j] == l->axes[i];
      if (!ok)
        return l->axes[i];
    }
  return -1;
}


/* Walks go from the end of a chain back to its start: collected in that order, then
 * turned (prepending was quadratic on long chains). */
static void
reverse_array (GArray *a)
{
  guint size = g_array_get_element_size (a);
  g_autofree char *t = g_malloc (size);

  for (guint i = 0, j = a->len; i + 1 < j; i++, j--)
    {
      memcpy (t, a->data + (gsize) i * size, size);
      memcpy (a->data + (gsize) i * size, a->data + (gsize) (j - 1) * size, size);
      memcpy (a->data + (gsize) (j - 1) * size, t, size);
    }
}

/* The kernel's nodes that read `node`'s value, and whether anything outside reads it. */
static guint
kernel_consumers (NapkinPlanner          *p,
                  const NapkinPlanKernel *k,
                  int                     node,
                  int                    *first,
                  gboolean               *outside)
{
  guint n_consumers, n = 0;
  const guint *consumers = napkin_diagram_consumers (p->d, node, &n_consumers);

  *first = -1;
  *outside = FALSE;
  for (guint c = 0; c < n_consumers; c++)
    {
      if (_napkin_plan_member (p, k, consumers[c]))
        {
          if (n++ == 0)
            *first = consumers[c];
        }
      else
        *outside = TRUE;
    }
  return n;
}

static guint
outputs_fed (NapkinPlanner *p,
             int            node)
{
  guint n_consumers, n = 0;
  const guint *consumers = napkin_diagram_consumers (p->d, node, &n_consumers);

  for (guint c = 0; c < n_consumers; c++)
    n += napkin_diagram_node (p->d, consumers[c])->kind == NAPKIN_OP_OUTPUT;
  return n;
}

/* Same set of axes, size-1 axes aside. */
static gboolean
same_axis_set (NapkinPlanner          *p,
               const NapkinTensorType *t,
               const guint            *axes,
               guint                   n)
{
  for (guint i = 0; i < t->n_axes; i++)
    {
      gboolean found = FALSE;

      for (guint j = 0; j < n && !found; j++)
        found = axes[j] == t->axes[i];
      if (!found && axis_size (p, t->axes[i]) != 1)
        return FALSE;
    }
  for (guint j = 0; j < n; j++)
    if (axis_size (p, axes[j]) != 1 && !napkin_tensor_type_has_axis (t, axes[j]))
      return FALSE;
  return TRUE;
}

static const char *
kernel_place (NapkinPlanner          *p,
              const NapkinPlanKernel *k)
{
  return k->region >= 0 ? napkin_diagram_region (p->d, k->region)->name : node_id (p, k->node);
}

static NapkinPlanMap
map_new (NapkinPlanner *p,
         int            node)
{
  const NapkinNode *nd = napkin_diagram_node (p->d, node);
  NapkinPlanMap m = { 0 };

  m.node = node;
  m.fn = nd->fn;
  m.alpha = nd->alpha;
  m.dtype = _napkin_plan_dtype (p, node);
  m.other.node = -1;
  m.other.scratch = -1;
  return m;
}

/* ---- rows ------------------------------------------------------------------------------------ */

typedef struct
{
  NapkinPlanner          *p;
  const NapkinPlanKernel *k;
  const guint            *rows;     /* the row axes, outermost first (x's order) */
  guint                   n_rows;
  int                     col;      /* the axis along the row */
  guint                   n_outer;  /* strided: rows[0 … n_outer) lie before col in x, the
                                       others after it (the column c); n_rows: contiguous */
} RowSpace;

/* Fills the second operand of map `m` (the operand on `port`) with its strides over
 * (0, row, column), or over (o, c, j) in the strided form (docs/plan.md). */
static gboolean
rows_operand (const RowSpace *rs,
              NapkinPlanMap  *m,
              guint           port,
              char          **why)
{
  NapkinPlanner *p = rs->p;
  int src = napkin_diagram_input_source (p->d, m->node, port);
  NapkinPlanLayout l;
  int stray;
  gint64 s = 0;

  if (!_napkin_plan_value_layout (p, src, &l))
    {
      *why = g_strdup_printf (_("the layout of %s (operand of %s) is unknown"), node_id (p, src), node_id (p, m->node));
      return FALSE;
    }
  stray = stray_axis (p, &l, rs->rows, rs->n_rows, rs->col);
  if (stray >= 0)
    {
      *why = g_strdup_printf (_("operand %s of %s has axis %s, which the row operation does not carry"),
                              node_id (p, src), node_id (p, m->node), axis_name (p, stray));
      return FALSE;
    }
  m->stride[0] = 0;
  if (rs->n_outer < rs->n_rows
      && (!row_stride (p, &l, rs->rows, rs->n_outer, &m->stride[0])
          || !row_stride (p, &l, rs->rows + rs->n_outer, rs->n_rows - rs->n_outer, &s)))
    {
      *why = g_strdup_printf (_("operand %s of %s is not laid out like the input (the axes before the reduced "
                              "one and those after it, each in the input's order)"), node_id (p, src),
                              node_id (p, m->node));
      return FALSE;
    }
  m->row_div = 1;
  if (rs->n_outer == rs->n_rows && !row_stride (p, &l, rs->rows, rs->n_rows, &s))
    {
      /* an operand that does not vary along the inner row axes (DiT's shift and scale
       * [b, e] of rows [b, s]) is read at row / (their sizes' product) */
      guint outer = rs->n_rows;
      gint64 div = 1;

      while (outer > 0 && (_napkin_plan_layout_stride (p->d, &l, rs->rows[outer - 1]) == 0
                           || axis_size (p, rs->rows[outer - 1]) == 1))
        div *= axis_size (p, rs->rows[--outer]);
      if (div <= 1 || !row_stride (p, &l, rs->rows, outer, &s))
        {
          *why = g_strdup_printf (_("operand %s of %s is not laid out row by row like the input (its row axes are "
                                  "in another order)"), node_id (p, src), node_id (p, m->node));
          return FALSE;
        }
      m->row_div = div;
    }
  m->has_other = TRUE;
  m->other_first = port == 0;
  m->other.node = src;
  m->other.scratch = -1;
  m->other.dtype = l.dtype;
  m->stride[1] = s;
  m->stride[2] = rs->col >= 0 ? _napkin_plan_layout_stride (p->d, &l, rs->col) : 0;
  return TRUE;
}

/* The smallest power of two ≥ v (v ≥ 1). */
static guint64
pow2_at_least (guint64 v)
{
  guint64 r = 1;

  while (r < v)
    r <<= 1;
  return r;
}

typedef struct
{
  RowsMode mode;
  guint    tpr, threads, vec, nv, ns, regs, min_blocks;
  gint64   smem;          /* dynamic: the row cache */
  guint    w;             /* strided: the columns of a block */
  gboolean l2;            /* strided, two passes: the re-read hits L2 */
  guint    split;         /* strided: chunks of the axis, each a block's (≤ 1: none) */
  gint64   chunk;         /* … of this many elements */
} RowsChoice;

static guint
blocks_per_sm (NapkinPlanner *p,
               guint          threads,
               guint          regs,
               gint64         smem)
{
  const NapkinArch *a = p->arch;
  guint regs_rounded = (regs + 7) / 8 * 8;
  guint b = MAX (a->max_threads_per_sm, 32) / threads;

  if (a->max_blocks_per_sm > 0)
    b = MIN (b, a->max_blocks_per_sm);
  if (a->registers_per_sm > 0)
    b = MIN (b, a->registers_per_sm / (regs_rounded * threads));
  if (a->levels[NAPKIN_LEVEL_SMEM].capacity_bytes > 0)
    b = MIN (b, (guint) (a->levels[NAPKIN_LEVEL_SMEM].capacity_bytes / (smem + a->smem_reserved_per_block)));
  return b;
}

/* Whether a row too long for registers is kept in shared memory (one read) rather than
 * read twice. A norm with nothing fused before it is read twice even where its row
 * would fit: four blocks an SM instead of two hide its γ and β loads better (H200, rows
 * of 50257 and 62214: 1.0–1.2× faster read twice; softmax, whose second pass repeats
 * its exponentials, 1.1–1.5× slower; docs/perf-notes.md, "Session 13").
 * NAPKIN_ROWS_NO_SMEM=1 reads every such row twice (A/B runs of the two forms). */
static gboolean
smem_row_pays (NapkinOpKind op,
               gboolean     streamed,
               gboolean     cache_fp32,
               gint64       cache_bytes,
               gint64       smem_budget)
{
  if (streamed || cache_bytes > smem_budget || _napkin_plan_env_flag ("NAPKIN_ROWS_NO_SMEM"))
    return FALSE;
  return !(op == NAPKIN_OP_NORMALIZE && !cache_fp32);
}

/* The register form for a team of `tpr` threads: vectors and scalars per thread. */
static void
register_form (RowsChoice *c,
               gint64      cols,
               guint       tpr,
               guint       n_scalars,
               guint       n_operands)
{
  gint64 nvec = cols / c->vec;

  c->tpr = tpr;
  c->nv = (guint) ((nvec + tpr - 1) / tpr);
  c->ns = (n_scalars + tpr - 1) / tpr;
  c->regs = MIN (255, c->nv * c->vec + c->ns + REG_OVERHEAD);
  (void) n_operands;
}

/* A team half as wide where it keeps more rows in flight on an SM (docs/model.md §7c,
 * "Turns"): a block slot turns a row over no faster than a few device-memory round trips,
 * so a row's registers — its values plus each thread's overhead — bound the SM's rate. A
 * row of 8763 unaligned bf16 in 512 threads (57 registers, two blocks an SM) turns 2 rows
 * an SM at a time; in 256 threads (73 registers) 3. Only over several waves, and where the
 * half team's thread keeps no more than the register form's limit. */
static void
register_team (NapkinPlanner *p,
               RowsChoice    *c,
               gint64         cols,
               gint64         rows,
               guint          n_scalars,
               guint          n_operands)
{
  RowsChoice h = *c;
  guint here, there;

  if (c->tpr < 64)
    return;
  register_form (&h, cols, c->tpr / 2, n_scalars, n_operands);
  if (h.nv * h.vec + h.ns > 2 * REG_VALUES)
    return;
  /* rows an SM at once: blocks of at least 256 threads, teams side by side */
  here = blocks_per_sm (p, MAX (c->tpr, 256), c->regs, 0) * (MAX (c->tpr, 256) / c->tpr);
  there = blocks_per_sm (p, MAX (h.tpr, 256), h.regs, 0) * (MAX (h.tpr, 256) / h.tpr);
  if (there > here && rows >= 2 * (gint64) MAX (p->arch->sms, 1) * there)
    *c = h;
}

/* Chooses the form of a rows kernel over `rows` rows of `cols` elements of x
 * (`aligned`: every row starts on 16 bytes). `hint` is the region's threads per
 * block (0: free), `rpb` its rows per block (0: free). */
static RowsChoice
rows_choose (NapkinPlanner *p,
             NapkinOpKind   op,
             gint64         rows,
             gint64         cols,
             NapkinDtype    x_dtype,
             gboolean       aligned,
             gboolean       cache_fp32,
             guint          n_operands,
             gboolean       streamed,
             guint          hint,
             gint64         rpb)
{
  RowsChoice c = { 0 };
  guint xb = napkin_dtype_bytes (x_dtype);
  guint sms = MAX (p->arch->sms, 1);
  gint64 nvec, smem_budget, cache_bytes;
  guint n_scalars, vals_max = REG_VALUES, teams;

  c.vec = 16 / xb;
  nvec = cols / c.vec;
  /* a misaligned row has a head and a tail of fewer than `vec` elements each */
  n_scalars = aligned ? (guint) (cols % c.vec) : (guint) MIN (cols, 2 * (c.vec - 1));
  smem_budget = (gint64) (p->arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes / 2 - p->arch->smem_reserved_per_block)
                - 1024;
  smem_budget = MIN (smem_budget, (gint64) p->arch->smem_max_per_block);
  cache_bytes = (cols + 2 * c.vec) * (cache_fp32 ? 4 : xb);

  if (op == NAPKIN_OP_REDUCE)
    {
      /* about four vectors per thread: a team reads at least 32 contiguous bytes */
      c.mode = ROWS_REDUCE;
      c.tpr = (guint) CLAMP (pow2_at_least ((nvec + 3) / 4), 1, 1024);
      c.regs = 56;
    }
  else
    {
      guint tpr = (guint) CLAMP (pow2_at_least ((nvec + vals_max / c.vec - 1) / MAX (vals_max / c.vec, 1)), 1, 1024);

      gboolean in_registers, smem_pays, alone;

      register_form (&c, cols, tpr, n_scalars, n_operands);
      in_registers = !streamed && c.regs * MAX (tpr, 32) <= p->arch->registers_per_sm;
      smem_pays = smem_row_pays (op, streamed, cache_fp32, cache_bytes, smem_budget);
      /* a row in registers that leaves one block an SM: nothing overlaps a row's load
       * with the last one's reductions and store; the row in shared memory instead, at
       * 256 threads, where that runs three or more blocks an SM (H200, softmax over 1024
       * rows of 19418: 1024 threads a row in registers 0.0499 ms, 512 0.0416, the shared
       * row at 256 threads 0.0340; docs/perf-notes.md, "Session 22") */
      alone = in_registers && smem_pays && blocks_per_sm (p, MAX (tpr, 32), c.regs, 0) < 2
              && blocks_per_sm (p, ROWS_SMEM_THREADS_ALONE, 48 + 8 * n_operands, cache_bytes) >= 3;
      if (in_registers && !alone)
        {
          c.mode = ROWS_REGISTERS;
          if (hint == 0 && g_getenv ("NAPKIN_ROWS_THREADS") == NULL)   /* threads not fixed */
            register_team (p, &c, cols, rows, n_scalars, n_operands);
        }
      else if (smem_pays)
        {
          c.mode = ROWS_SMEM;
          c.tpr = alone ? ROWS_SMEM_THREADS_ALONE : 512;
          c.smem = cache_bytes;
          c.regs = 48 + 8 * n_operands;
        }
      else
        {
          /* one row per SM: the re-read finds the row in L2 (docs/plan.md); 512
           * threads where fused operands need more than 64 registers a thread */
          c.mode = ROWS_TWO_PASS;
          c.tpr = n_operands > 0 ? 512 : 1024;
          c.regs = 48 + 8 * n_operands;
        }
    }

  /* a block of at least 256 threads, fewer where the rows would leave SMs idle */
  c.threads = MAX (c.tpr, 256);
  while (c.threads > c.tpr && c.threads > 32 && (rows + c.threads / c.tpr - 1) / (c.threads / c.tpr) < 2 * sms)
    c.threads /= 2;
  /* NAPKIN_ROWS_THREADS=N: threads a block where the region sets none (A/B runs) */
  if (hint == 0 && g_getenv ("NAPKIN_ROWS_THREADS") != NULL)
    hint = (guint) g_ascii_strtoull (g_getenv ("NAPKIN_ROWS_THREADS"), NULL, 10);
  if (hint > 0)
    {
      c.threads = hint;
      /* a row in shared memory or read twice takes the whole block */
      if (c.mode == ROWS_SMEM || c.mode == ROWS_TWO_PASS)
        c.tpr = hint;
      else if (c.tpr > hint)
        {
          c.tpr = hint;
          if (c.mode == ROWS_REGISTERS)
            register_form (&c, cols, hint, n_scalars, n_operands);
        }
    }
  teams = c.threads / c.tpr;
  if (rpb > 0 && rpb < teams)
    {
      /* the region's rows per block are fewer than the teams: fewer teams, wider
       * ones where the region fixes the threads */
      teams = (guint) MAX (1, pow2_at_least (rpb + 1) / 2);
      if (hint > 0)
        {
          c.tpr = c.threads / teams;
          if (c.mode == ROWS_REGISTERS)
            register_form (&c, cols, c.tpr, n_scalars, n_operands);
        }
      else
        c.threads = c.tpr * teams;
    }
  if (c.threads < 32)
    {
      /* whole warps: the team reductions shuffle across all 32 lanes */
      c.tpr = 32 / teams;
      c.threads = 32;
      if (c.mode == ROWS_REGISTERS)
        register_form (&c, cols, c.tpr, n_scalars, n_operands);
    }
  if (c.mode == ROWS_REGISTERS
      && (c.regs * c.threads > p->arch->registers_per_sm || c.nv * c.vec + c.ns > 2 * REG_VALUES))
    {
      /* the region's threads keep too much per thread (more than the 64 values the
       * register form holds without spilling, or more than the SM's register file):
       * shared memory or two passes */
      c.mode = smem_row_pays (op, streamed, cache_fp32, cache_bytes, smem_budget) ? ROWS_SMEM : ROWS_TWO_PASS;
      c.regs = 48 + 8 * n_operands;
      c.nv = c.ns = 0;
      c.tpr = c.threads;
      if (c.mode == ROWS_SMEM)
        c.smem = cache_bytes;
    }
  if (c.mode != ROWS_REGISTERS)
    c.nv = c.ns = 0;
  c.min_blocks = MAX (1, blocks_per_sm (p, c.threads, c.regs, c.smem));
  return c;
}

/* The rows per block the region's marks on the row axes give, 0 when it cuts none
 * of them into groups. */
static gint64
region_rows_per_block (NapkinPlanner          *p,
                       const NapkinPlanKernel *k,
                       const NapkinRegion     *region,
                       const guint            *rows,
                       guint                   n_rows,
                       char                  **why)
{
  gint64 rpb = 1;
  gboolean cut = FALSE, any = FALSE;

  for (int i = (int) n_rows - 1; i >= 0; i--)
    {
      const char *name = axis_name (p, rows[i]);
      gint64 size = axis_size (p, rows[i]), g = 0;
      NapkinMarkKind mk = napkin_region_mark (region, name, &g);

      if (mk == NAPKIN_MARK_STREAM)
        {
          *why = g_strdup_printf (_("region %s streams %s: a rows kernel takes its row axes whole or in parallel "
                                  "groups"), region->name, name);
          return -1;
        }
      if (mk == NAPKIN_MARK_PARALLEL)
        {
          any = TRUE;
          if (cut && g != 1 && size != 1)
            {
              *why = g_strdup_printf (_("region %s: a block's rows must be consecutive, so %s takes groups of 1 "
                                      "once an axis inside it is cut (it has %lld)"),
                                      region->name, name, (long long) g);
              return -1;
            }
          rpb *= g;
          cut |= g < size;
        }
      else if (cut)
        {
          if (size != 1)
            g_ptr_array_add (k->adjustments,
                             g_strdup_printf (_("%s.%s: whole → groups of 1 (a block's rows are consecutive)"),
                                              region->name, name));
        }
      else
        rpb *= size;
    }
  return any ? rpb : 0;
}

/* A rows kernel while it is recognised: the chain through its row operation and the
 * row space it works over. */
typedef struct
{
  int               f;              /* the row operation */
  const NapkinNode *fn;
  const char       *what;           /* the row operation's name in messages */
  int               col;            /* the axis along the row */
  int               x, last;        /* the chain's input and its end */
  GArray           *prologue;       /* NapkinPlanMap, before f */
  GArray           *epilogue;       /* NapkinPlanMap, after f */
  NapkinPlanLayout  xl, yl;
  guint             row_axes[NAPKIN_MAX_RANK], n_rows;
  gint64            rows, cols, ldx, ldy, rpb;
  gboolean          aligned, streamed;
  /* the strided form (inner > 1): row_axes[0 … n_outer) lie before the axis in x */
  guint             n_outer;
  gint64            outer, inner, y_stride;
} RowsChain;

static void
rows_chain_clear (RowsChain *ch)
{
  g_clear_pointer (&ch->prologue, g_array_unref);
  g_clear_pointer (&ch->epilogue, g_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (RowsChain, rows_chain_clear)

/* How many of `node`'s operands the kernel computes; `main_port` gets the last of them. */
static guint
operands_inside (NapkinPlanner          *p,
                 const NapkinPlanKernel *k,
                 int                     node,
                 guint                   arity,
                 guint                  *main_port)
{
  guint inside = 0;

  for (guint q = 0; q < arity; q++)
    if (_napkin_plan_member (p, k, napkin_diagram_input_source (p->d, node, q)))
      {
        inside++;
        *main_port = q;
      }
  return inside;
}

/* The kernel's one row operation (softmax, normalisation or reduction), counting its
 * maps; -1 when it holds anything else or no row operation (`why` set for two). */
static int
rows_find_op (NapkinPlanner          *p,
              const NapkinPlanKernel *k,
              guint                  *n_maps,
              char                  **why)
{
  int f = -1;

  for (guint i = 0; i < k->nodes->len; i++)
    {
      int n = g_array_index (k->nodes, guint, i);
      const NapkinNode *node = napkin_diagram_node (p->d, n);

      if (node->kind == NAPKIN_OP_SOFTMAX || node->kind == NAPKIN_OP_NORMALIZE || node->kind == NAPKIN_OP_REDUCE)
        {
          if (f >= 0)
            {
              *why = g_strdup_printf (_("%s holds two row operations (%s and %s); a rows kernel computes one"),
                                      kernel_place (p, k), node_id (p, f), node->id);
              return -1;
            }
          f = n;
        }
      else if (node->kind == NAPKIN_OP_MAP)
        (*n_maps)++;
      else
        return -1;
    }
  return f;
}

/* The prologue: from f's input back to the first value read from device memory (x).
 * Each map keeps its in-chain port in stride[0] until the row axes are known. */
static gboolean
rows_prologue (NapkinPlanner          *p,
               const NapkinPlanKernel *k,
               RowsChain              *ch,
               const NapkinTensorType *in_type,
               char                  **why)
{
  NapkinDiagram *d = p->d;
  int cur = napkin_diagram_input_source (d, ch->f, 0);

  while (_napkin_plan_member (p, k, cur))
    {
      const NapkinNode *mn = napkin_diagram_node (d, cur);
      guint arity = napkin_op_n_inputs (mn), main_port = 0, inside;
      NapkinPlanMap m = map_new (p, cur);
      int next, first;
      gboolean outside;

      if (kernel_consumers (p, k, cur, &first, &outside) != 1 || outside)
        {
          *why = g_strdup_printf (_("the value of %s is used beside the %s (%s); a rows kernel keeps only its result"),
                                  mn->id, ch->what, ch->fn->id);
          return FALSE;
        }
      inside = operands_inside (p, k, cur, arity, &main_port);
      if (inside > 1)
        {
          *why = g_strdup_printf (_("both operands of %s are computed in %s; a rows kernel fuses a chain of maps"),
                                  mn->id, kernel_place (p, k));
          return FALSE;
        }
      if (inside == 0 && arity == 2)
        {
          /* the head: the operand that carries the whole row space is the row */
          const NapkinTensorType *t0 = napkin_diagram_node_type (d, napkin_diagram_input_source (d, cur, 0));

          main_port = same_axis_set (p, t0, in_type->axes, in_type->n_axes) ? 0 : 1;
        }
      if (!same_axis_set (p, napkin_diagram_node_type (d, cur), in_type->axes, in_type->n_axes))
        {
          *why = g_strdup_printf (_("map %s changes the axes of the row"), mn->id);
          return FALSE;
        }
      next = napkin_diagram_input_source (d, cur, main_port);
      if (arity == 2)
        m.other_first = main_port == 1;
      m.has_other = arity == 2;
      /* the operand is filled once the row axes are known */
      m.stride[0] = main_port;
      g_array_append_val (ch->prologue, m);   /* reversed below */
      cur = next;
    }
  reverse_array (ch->prologue);
  ch->x = cur;
  return TRUE;
}

/* The epilogue: from f forward while the value stays in the kernel; its end is y. */
static gboolean
rows_epilogue (NapkinPlanner          *p,
               const NapkinPlanKernel *k,
               RowsChain              *ch,
               char                  **why)
{
  NapkinDiagram *d = p->d;

  ch->last = ch->f;
  for (;;)
    {
      int next;
      gboolean outside;
      guint n_in = kernel_consumers (p, k, ch->last, &next, &outside);
      const NapkinNode *mn;
      NapkinPlanMap m;

      if (n_in == 0)
        break;
      if (n_in > 1 || outside)
        {
          *why = g_strdup_printf (_("the value of %s is used %s; a rows kernel stores only the end of its chain"),
                                  node_id (p, ch->last), n_in > 1 ? "twice in the kernel" : "inside and outside the kernel");
          return FALSE;
        }
      mn = napkin_diagram_node (d, next);
      m = map_new (p, next);
      if (napkin_op_n_inputs (mn) == 2)
        {
          int s0 = napkin_diagram_input_source (d, next, 0), s1 = napkin_diagram_input_source (d, next, 1);

          if (_napkin_plan_member (p, k, s0) && _napkin_plan_member (p, k, s1))
            {
              *why = g_strdup_printf (_("both operands of %s are computed in %s; a rows kernel fuses a chain of maps"),
                                      mn->id, kernel_place (p, k));
              return FALSE;
            }
          m.has_other = TRUE;
          m.other_first = s1 == ch->last;
          m.stride[0] = s1 == ch->last ? 1 : 0;
        }
      g_array_append_val (ch->epilogue, m);
      ch->last = next;
    }
  return TRUE;
}

/* Every fused map's second operand, addressed over (row, column); an epilogue map
 * must keep the axes of f's result. */
static gboolean
rows_operands (NapkinPlanner *p,
               RowSpace      *rs,
               RowsChain     *ch,
               char         **why)
{
  const NapkinTensorType *ft = napkin_diagram_node_type (p->d, ch->f);

  for (guint i = 0; i < ch->prologue->len; i++)
    {
      NapkinPlanMap *m = &g_array_index (ch->prologue, NapkinPlanMap, i);
      guint main_port = (guint) m->stride[0];

      m->stride[0] = 0;
      if (m->has_other && !rows_operand (rs, m, 1 - main_port, why))
        return FALSE;
    }
  if (ch->fn->kind == NAPKIN_OP_REDUCE)
    rs->col = -1;
  for (guint i = 0; i < ch->epilogue->len; i++)
    {
      NapkinPlanMap *m = &g_array_index (ch->epilogue, NapkinPlanMap, i);
      guint main_port = (guint) m->stride[0];
      const NapkinTensorType *t = napkin_diagram_node_type (p->d, m->node);

      m->stride[0] = 0;
      if (t == NULL || !same_axis_set (p, t, ft->axes, ft->n_axes))
        {
          *why = g_strdup_printf (_("map %s broadcasts the result of the %s to more axes"), node_id (p, m->node),
                                  ch->what);
          return FALSE;
        }
      if (m->has_other && !rows_operand (rs, m, 1 - main_port, why))
        return FALSE;
    }
  return TRUE;
}

/* The row space: x's layout with f's axis last, the axes before it flattened into
 * rows; then the fused operands over it. */
static gboolean
rows_space (NapkinPlanner          *p,
            const NapkinPlanKernel *k,
            RowsChain              *ch,
            char                  **why)
{
  RowSpace rs;
  guint at = 0;

  if (!_napkin_plan_value_layout (p, ch->x, &ch->xl) || ch->xl.n == 0)
    return FALSE;
  while (at < ch->xl.n && (int) ch->xl.axes[at] != ch->col)
    at++;
  if (at == ch->xl.n)
    return FALSE;
  /* the axes after f's axis flatten into the column c, those before into o (the
   * strided form); with nothing after it (size-1 axes aside) the rows are contiguous */
  ch->inner = 1;
  for (guint i = 0; i < ch->xl.n; i++)
    if (i != at)
      {
        ch->row_axes[ch->n_rows++] = ch->xl.axes[i];
        ch->rows *= axis_size (p, ch->xl.axes[i]);
        if (i > at)
          ch->inner *= axis_size (p, ch->xl.axes[i]);
      }
  ch->n_outer = ch->inner > 1 ? at : ch->n_rows;
  ch->outer = ch->rows / ch->inner;
  ch->cols = axis_size (p, ch->col);
  ch->ldx = ch->cols * ch->inner;
  rs = (RowSpace) { p, k, ch->row_axes, ch->n_rows, ch->col, ch->n_outer };
  return rows_operands (p, &rs, ch, why);
}

/* y of the strided form: o linear over the axes before f's, the column contiguous;
 * a softmax or normalisation keeps f's axis anywhere (y_stride). */
static gboolean
strided_store (NapkinPlanner *p,
               RowsChain     *ch,
               char         **why)
{
  gboolean reduce = ch->fn->kind == NAPKIN_OP_REDUCE;
  gint64 cs = 0;

  if (stray_axis (p, &ch->yl, ch->row_axes, ch->n_rows, reduce ? -1 : ch->col) >= 0
      || !row_stride (p, &ch->yl, ch->row_axes, ch->n_outer, &ch->ldy)
      || !row_stride (p, &ch->yl, ch->row_axes + ch->n_outer, ch->n_rows - ch->n_outer, &cs) || cs != 1)
    {
      *why = g_strdup_printf (_("the result of %s is not stored like %s (the axes after %s contiguous, in the same "
                              "order)"), node_id (p, ch->last), node_id (p, ch->x), ch->fn->axis);
      return FALSE;
    }
  if (ch->ldy == 0)
    ch->ldy = reduce ? ch->inner : ch->cols * ch->inner;
  ch->y_stride = reduce ? 0 : _napkin_plan_layout_stride (p->d, &ch->yl, ch->col);
  if (!reduce && ch->y_stride == 0)
    ch->y_stride = ch->inner;
  return TRUE;
}

/* y: the row axes in x's order; a softmax or normalisation keeps the column last. */
static gboolean
rows_store (NapkinPlanner *p,
            RowsChain     *ch,
            char         **why)
{
  gboolean reduce = ch->fn->kind == NAPKIN_OP_REDUCE;

  if (!_napkin_plan_value_layout (p, ch->last, &ch->yl))
    return FALSE;
  if (ch->inner > 1)
    return strided_store (p, ch, why);
  if (stray_axis (p, &ch->yl, ch->row_axes, ch->n_rows, reduce ? -1 : ch->col) >= 0
      || !row_stride (p, &ch->yl, ch->row_axes, ch->n_rows, &ch->ldy)
      || (!reduce && _napkin_plan_layout_stride (p->d, &ch->yl, ch->col) != 1))
    {
      *why = g_strdup_printf (_("the result of %s is not stored row by row like %s (%s last)"), node_id (p, ch->last),
                              node_id (p, ch->x), ch->fn->axis);
      return FALSE;
    }
  if (ch->ldy == 0)
    ch->ldy = reduce ? 1 : ch->cols;
  return TRUE;
}

/* The strided form's region: the other axes parallel or whole (the plan chooses the
 * columns a block owns, and says so where the region cuts them otherwise). */
static gboolean
strided_region_marks (NapkinPlanner          *p,
                      const NapkinPlanKernel *k,
                      const NapkinRegion     *region,
                      RowsChain              *ch,
                      char                  **why)
{
  gboolean cut = FALSE;

  for (guint i = 0; i < ch->n_rows; i++)
    {
      const char *name = axis_name (p, ch->row_axes[i]);
      gint64 g = 0;
      NapkinMarkKind mk = napkin_region_mark (region, name, &g);

      if (mk == NAPKIN_MARK_STREAM)
        {
          *why = g_strdup_printf (_("region %s streams %s: a rows kernel takes the axes it does not reduce whole or "
                                  "in parallel groups"), region->name, name);
          return FALSE;
        }
      cut |= mk == NAPKIN_MARK_PARALLEL && g < axis_size (p, ch->row_axes[i]);
    }
  if (cut)
    g_ptr_array_add (k->adjustments, g_strdup_printf (_("%s: the strided rows kernel chooses its own blocks of "
                                                      "columns (docs/plan.md, \"Rows over any axis\")"),
                                                      region->name));
  ch->rpb = 0;
  return TRUE;
}

/* The region's marks: rows per block from its groups; the column whole (streamed
 * for a softmax or a reduction: the online form). */
static gboolean
rows_region_marks (NapkinPlanner          *p,
                   const NapkinPlanKernel *k,
                   const NapkinRegion     *region,
                   RowsChain              *ch,
                   char                  **why)
{
  const NapkinNode *fn = ch->fn;
  gint64 g = 0;
  NapkinMarkKind mk = napkin_region_mark (region, fn->axis, &g);

  if (mk == NAPKIN_MARK_PARALLEL && g < ch->cols)
    {
      *why = g_strdup_printf (_("region %s cuts %s into groups of %lld: the %s needs whole rows "
                              "(keep %s whole%s)"), region->name, fn->axis, (long long) g, ch->what, fn->axis,
                              fn->kind == NAPKIN_OP_NORMALIZE ? "" : ", or stream it");
      return FALSE;
    }
  if (mk == NAPKIN_MARK_STREAM)
    {
      if (fn->kind == NAPKIN_OP_NORMALIZE)
        {
          *why = g_strdup_printf (_("region %s streams %s: the %s needs the statistics of the whole row before "
                                  "its first output (keep %s whole)"), region->name, fn->axis, ch->what, fn->axis);
          return FALSE;
        }
      ch->streamed = fn->kind == NAPKIN_OP_SOFTMAX;
    }
  if (ch->inner > 1)
    return strided_region_marks (p, k, region, ch, why);
  ch->rpb = region_rows_per_block (p, k, region, ch->row_axes, ch->n_rows, why);
  return ch->rpb >= 0;
}

/* Blocks of `tc` threads across the columns (each `vec` of them) in the strided form. */
static gint64
strided_blocks (const RowsChain *ch,
                guint            vec,
                guint            tc)
{
  gint64 cvec = ch->inner / vec;

  return ch->outer * ((cvec + tc - 1) / tc);
}

/* Shared memory of a strided block: one fp32 pair per column for each warp row (the
 * reductions' partials) and per column (the statistics). */
static gint64
strided_red_bytes (guint threads,
                   guint tc,
                   guint vec)
{
  guint prows = tc >= 32 ? threads / tc : threads / 32;

  return (gint64) (prows + 1) * tc * vec * 2 * 4;
}

static gint64 strided_blocks (const RowsChain *ch, guint vec, guint tc);

/* Threads across the columns of a strided block whose rows are `bytes` long. */
static guint
strided_tc (const RowsChain *ch,
            guint            vec,
            guint            xb,
            guint            bytes)
{
  return MIN ((guint) pow2_at_least (ch->inner / vec), MAX (1, bytes / (vec * xb)));
}

/* NAPKIN_ROWS_LINE=BYTES (a power of two, 16 to 1024): the bytes of each row a strided
 * block reads (A/B runs); 0 where unset. */
static guint
strided_line_env (void)
{
  const char *env = g_getenv ("NAPKIN_ROWS_LINE");
  guint64 v = env != NULL ? g_ascii_strtoull (env, NULL, 10) : 0;

  return v >= 16 && v <= 1024 && (v & (v - 1)) == 0 ? (guint) v : 0;
}

/* Fewest elements of the axis a chunk of a split takes, and most chunks. */
#define STRIDED_CHUNK_MIN 128
#define STRIDED_SPLIT_MAX 256
/* … and the least a block's lines of the whole axis hold before a split pays for its
 * second launch (a few microseconds: about what one SM streams of 128 KiB) */
#define STRIDED_SPLIT_BYTES (128 * 1024)

/* A long axis over too few columns to fill the GPU (docs/plan.md, "Splitting the
 * axis"): where even 32-byte lines would leave the blocks fewer than half the SMs, the
 * axis is cut into chunks, each its own block of 256 threads in 128-byte lines, about
 * four blocks an SM in all; the chunks' statistics go through scratch to a second
 * launch that writes the output (a reduction's result). The whole axis a block took
 * 16-byte lines there, which halve what each 32-byte sector carries: H200, softmax over
 * axis 0 of 65536 × 1024 0.159 ms split, 0.364 whole; 10⁶ × 128 0.31 / 2.36; layernorm
 * 30000 × 1024 0.064 / 0.155; sum 100000 × 1024 0.059 / 0.101. With 64 blocks or more
 * at 32 bytes, whole columns won (8192 × 2048 0.053 whole, 0.060 split; 50000 × 4096
 * 0.47 / 0.50). NAPKIN_ROWS_SPLIT=0 keeps the axis whole (A/B runs). */
static void
strided_split (NapkinPlanner   *p,
               const RowsChain *ch,
               guint            xb,
               guint            reread,
               guint            n_operands,
               RowsChoice      *c)
{
  const char *env = g_getenv ("NAPKIN_ROWS_SPLIT");
  guint sms = MAX (p->arch->sms, 1), tc, tr, threads = 256;
  gint64 len = ch->cols, blocks, split, chunk;

  if (env != NULL && g_ascii_strtoull (env, NULL, 10) == 0)
    return;
  if (strided_blocks (ch, c->vec, strided_tc (ch, c->vec, xb, 32)) >= sms / 2)
    return;
  tc = strided_tc (ch, c->vec, xb, 128);
  blocks = strided_blocks (ch, c->vec, tc);
  if (len < 2 * STRIDED_CHUNK_MIN || len * tc * c->vec * xb < STRIDED_SPLIT_BYTES)
    return;
  split = MIN ((4 * (gint64) sms + blocks - 1) / blocks, MIN (STRIDED_SPLIT_MAX, len / STRIDED_CHUNK_MIN));
  chunk = (len + split - 1) / split;
  split = (len + chunk - 1) / chunk;   /* every chunk non-empty */
  if (split < 2)
    return;
  tc = MIN (tc, threads);
  tr = (guint) MIN (threads / tc, pow2_at_least ((chunk + 3) / 4));
  while (tc * tr < 32)
    tr *= 2;
  c->split = (guint) split;
  c->chunk = chunk;
  c->tpr = tr;
  c->threads = tc * tr;
  c->w = tc * c->vec;
  c->regs = c->mode == ROWS_REDUCE ? 40 : MIN (255, 56 + 4 * n_operands);
  c->min_blocks = MAX (1, blocks_per_sm (p, c->threads, c->regs, strided_red_bytes (c->threads, tc, c->vec)));
  /* the second launch starts with the chunks the first one read last */
  c->l2 = c->mode == ROWS_TWO_PASS
          && (double) ch->outer * ch->inner * len * xb * reread <= 0.7 * p->arch->levels[NAPKIN_LEVEL_L2].capacity_bytes;
}

/* The strided form (docs/plan.md, "Rows over any axis"): `vec` = 16 bytes of x, fewer
 * where the columns are not a multiple; lines of 128 bytes of each row a block,
 * narrowed (down to 16 bytes) only while the blocks would not cover half the SMs: 64-,
 * 32- and 16-byte lines drew less of device memory than 128-byte ones on fewer blocks
 * (H200, softmax over axis 0: 36503×12736 1.13 ms at 32 bytes, 0.98 at 128); 256 to 1024 threads as the blocks are fewer, the rest
 * of them down the reduced axis. The column in registers when ≤ 32 values a thread hold
 * it, in shared memory when the block's rows fit twice in an SM, else read twice (the
 * second read from L2 when the blocks in flight hold at most 0.7 of it). */
static RowsChoice
strided_choose_lines (NapkinPlanner   *p,
                      const RowsChain *ch,
                      NapkinDtype      x_dtype,
                      gboolean         cache_fp32,
                      guint            n_operands,
                      guint            hint,
                      guint            line)
{
  RowsChoice c = { 0 };
  guint xb = napkin_dtype_bytes (x_dtype), sms = MAX (p->arch->sms, 1), tc, tr, tc_min, tc_max, nr, threads, reread;
  gint64 len = ch->cols, blocks, slab, budget, in_flight;
  gboolean reduce = ch->fn->kind == NAPKIN_OP_REDUCE;

  c.vec = 16 / xb;
  while (c.vec > 1 && ch->inner % c.vec != 0)
    c.vec /= 2;
  tc_max = (guint) pow2_at_least (ch->inner / c.vec);
  tc = strided_tc (ch, c.vec, xb, line);
  tc_min = MIN (tc, MAX (1, 16 / (c.vec * xb)));
  {
    /* NAPKIN_ROWS_LINE_MIN=BYTES: no narrower lines (A/B runs) */
    const char *line_env = g_getenv ("NAPKIN_ROWS_LINE_MIN");
    guint line_min = line_env != NULL ? (guint) g_ascii_strtoull (line_env, NULL, 10) : 0;

    while (tc > tc_min && tc * c.vec * xb > line_min && strided_blocks (ch, c.vec, tc) < (gint64) sms / 2)
      tc /= 2;
  }
  blocks = strided_blocks (ch, c.vec, tc);
  threads = hint > 0 ? hint : blocks >= 4 * sms ? 256 : blocks >= 2 * sms ? 512 : 1024;
  tc = MIN (tc, threads);
  /* down a short axis, about four vectors a thread (all its loads in flight at once)
   * rather than one or two for more threads: the block's reductions across the threads
   * down the axis cost less than the loads they would overlap (H200, softmax over axis 0
   * of 64, 32 and 16 rows: 1.4–2.4× faster than 256 threads; 128 rows the same) */
  tr = (guint) MIN (threads / tc, hint > 0 ? 1024 : reduce ? pow2_at_least (len) : pow2_at_least ((len + 3) / 4));
  while (tc * tr < 32)
    {
      if (tc < tc_max)
        tc *= 2;
      else
        tr *= 2;
    }
  nr = (guint) ((len + tr - 1) / tr);
  if (!reduce && !ch->streamed && hint == 0 && nr * c.vec > REG_VALUES
      && tc * pow2_at_least ((len * c.vec + REG_VALUES - 1) / REG_VALUES) <= 1024)
    {
      /* more threads down the axis, so that registers hold the column */
      tr = (guint) pow2_at_least ((len * c.vec + REG_VALUES - 1) / REG_VALUES);
      nr = (guint) ((len + tr - 1) / tr);
    }
  c.tpr = tr;
  c.threads = tc * tr;
  c.nv = nr;
  slab = len * tc * c.vec * (cache_fp32 ? 4 : xb);
  budget = (gint64) (p->arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes / 2 - p->arch->smem_reserved_per_block)
           - strided_red_bytes (c.threads, tc, c.vec) - 1024;
  budget = MIN (budget, (gint64) p->arch->smem_max_per_block - strided_red_bytes (c.threads, tc, c.vec));
  /* registers (ptxas, sm_90a, four 16-byte loads in flight): the kept values, a pair of
   * statistics per column, and 32 more; 56 for a sweep, 40 for a reduction */
  c.regs = nr * c.vec + 2 * c.vec + REG_OVERHEAD;
  if (reduce)
    {
      c.mode = ROWS_REDUCE;
      c.regs = 40;
    }
  else if (!ch->streamed && nr * c.vec <= REG_VALUES && (c.regs + 7) / 8 * 8 * c.threads <= p->arch->registers_per_sm)
    c.mode = ROWS_REGISTERS;
  else if (!ch->streamed && slab <= budget)
    {
      c.mode = ROWS_SMEM;
      c.smem = slab;
      c.regs = 56 + 4 * n_operands;
    }
  else
    {
      c.mode = ROWS_TWO_PASS;
      c.regs = 56 + 4 * n_operands;
    }
  if (c.mode != ROWS_REGISTERS)
    c.nv = 0;
  c.regs = MIN (255, c.regs);
  c.min_blocks = MAX (1, blocks_per_sm (p, c.threads, c.regs, c.smem + strided_red_bytes (c.threads, tc, c.vec)));
  /* the second sweep reads x again and every prologue operand that runs along both
   * the columns and the axis (a residual) */
  reread = 1;
  for (guint i = 0; i < ch->prologue->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (ch->prologue, NapkinPlanMap, i);

      reread += m->has_other && m->stride[1] != 0 && m->stride[2] != 0;
    }
  in_flight = MIN (blocks, (gint64) sms * c.min_blocks) * len * tc * c.vec * xb * reread;
  c.l2 = c.mode == ROWS_TWO_PASS && in_flight <= 0.7 * p->arch->levels[NAPKIN_LEVEL_L2].capacity_bytes;
  c.w = tc * c.vec;
  if (hint == 0 && (c.mode == ROWS_TWO_PASS || c.mode == ROWS_REDUCE))
    strided_split (p, ch, xb, reread, n_operands, &c);
  return c;
}

/* Lines of 128 bytes of each row (a whole L2 line); where the columns are read twice or
 * reduced and 256-byte lines still give every SM a block, 256: H200, softmax over axis
 * 0, 256 against 128 bytes: 10672 × 48380 1.21 / 1.66 ms, 30000² sum 0.45 / 0.53, 20000²
 * layernorm 0.79 / 0.85, 3000 × 65536 0.36 / 0.38, four more the same; 16384² bf16, only
 * 128 blocks at 256 bytes, 0.57 / 0.53. */
static RowsChoice
strided_choose (NapkinPlanner   *p,
                const RowsChain *ch,
                NapkinDtype      x_dtype,
                gboolean         cache_fp32,
                guint            n_operands,
                guint            hint)
{
  guint env = strided_line_env (), xb = napkin_dtype_bytes (x_dtype);
  RowsChoice c = strided_choose_lines (p, ch, x_dtype, cache_fp32, n_operands, hint, env > 0 ? env : 128);

  if (env == 0 && c.split <= 1 && (c.mode == ROWS_TWO_PASS || c.mode == ROWS_REDUCE)
      && strided_blocks (ch, c.vec, strided_tc (ch, c.vec, xb, 256)) >= MAX (p->arch->sms, 1))
    {
      RowsChoice wide = strided_choose_lines (p, ch, x_dtype, cache_fp32, n_operands, hint, 256);

      if (wide.mode == c.mode && wide.split <= 1)
        c = wide;
    }
  return c;
}

/* The kernel's form from x's element type, the region's threads and the fused
 * operands (see rows_choose). */
static gboolean
rows_form (NapkinPlanner          *p,
           const NapkinPlanKernel *k,
           const NapkinRegion     *region,
           RowsChain              *ch,
           guint                   n_adjustments,
           RowsChoice             *c,
           char                  **why)
{
  NapkinDtype xd = ch->xl.dtype;
  guint xb = napkin_dtype_bytes (xd), hint = 0, n_operands = 0;

  if (xb == 0 || 16 % xb != 0)
    {
      g_ptr_array_set_size (k->adjustments, n_adjustments);
      *why = g_strdup_printf (_("%s is %s; a rows kernel reads 1-, 2- or 4-byte elements"), node_id (p, ch->x),
                              napkin_dtype_to_string (xd));
      return FALSE;
    }
  ch->aligned = (ch->ldx * xb) % 16 == 0;
  if (region != NULL && region->threads > 0)
    {
      hint = (guint) pow2_at_least (MAX (region->threads, 32));
      hint = MIN (hint, 1024);
      if (hint != region->threads)
        g_ptr_array_add (k->adjustments, g_strdup_printf (_("%s.threads: %u → %u (a power of two, whole warps)"),
                                                          region->name, region->threads, hint));
    }
  for (guint i = 0; i < ch->prologue->len; i++)
    n_operands += g_array_index (ch->prologue, NapkinPlanMap, i).has_other;
  for (guint i = 0; i < ch->epilogue->len; i++)
    n_operands += g_array_index (ch->epilogue, NapkinPlanMap, i).has_other;
  if (ch->inner > 1)
    *c = strided_choose (p, ch, xd, ch->prologue->len > 0, n_operands, hint);
  else
    *c = rows_choose (p, ch->fn->kind, ch->rows, ch->cols, xd, ch->aligned, ch->prologue->len > 0, n_operands,
                      ch->streamed, hint, ch->rpb);
  return TRUE;
}

/* The kernel's note: the row operation, its shape and threads, the form it takes. */
static char *
rows_note (const RowsChain      *ch,
           const RowsChoice     *c,
           const NapkinPlanRows *r)
{
  static const char *forms[] = {
    [ROWS_REGISTERS] = "one pass, the row in registers",
    [ROWS_SMEM] = "one pass, the row in shared memory",
    [ROWS_TWO_PASS] = "two passes: online statistics, then the row read again",
    [ROWS_REDUCE] = "one pass",
  };
  g_autoptr(GString) note = g_string_new (NULL);

  if (ch->inner > 1)
    {
      /* the strided form: the words of docs/plan.md, "Rows over any axis" */
      g_string_append_printf (note, _("strided %s over %s (%lld elements apart): %lld columns × %lld, %lld along the "
                              "axis; blocks of %u columns × %u threads (%u across, %u down the axis), "
                              "%u-element vectors"),
                              ch->what, ch->fn->axis, (long long) ch->inner, (long long) ch->inner,
                              (long long) ch->outer, (long long) ch->cols, c->w, c->threads, c->threads / c->tpr,
                              c->tpr, c->vec);
      if (c->mode == ROWS_REGISTERS)
        g_string_append_printf (note, _(", %u per thread"), c->nv * c->vec);
      static const char *strided_forms[] = {
        [ROWS_REGISTERS] = "one pass, the columns in registers",
        [ROWS_SMEM] = "one pass, the columns in shared memory",
        [ROWS_TWO_PASS] = "two passes: online statistics, then the columns read again from device memory",
        [ROWS_REDUCE] = "one pass",
      };

      g_string_append_printf (note, "; %s%s", c->mode == ROWS_TWO_PASS && c->l2 ? "two passes: online statistics, "
                              "then the columns read again from L2" : strided_forms[c->mode],
                              ch->streamed ? " (the region streams the axis)" : "");
      if (c->split > 1)
        g_string_append_printf (note, _("; the axis in %u chunks of %lld, a block each, in two launches (the "
                                "chunks' statistics through scratch, then %s)"), c->split, (long long) c->chunk,
                                c->mode == ROWS_REDUCE ? "the results" : "the output");
    }
  else
    {
      g_string_append_printf (note, _("%s over %s: %lld rows of %lld, %u threads per "
                              "row, %lld rows per block of %u threads, %u-element vectors%s"),
                              ch->what, ch->fn->axis, (long long) ch->rows, (long long) ch->cols, c->tpr,
                              (long long) r->rows_per_block, c->threads, c->vec,
                              ch->aligned ? "" : " (rows not 16-byte aligned: scalar head and tail)");
      if (c->mode == ROWS_REGISTERS)
        g_string_append_printf (note, _(", %u per thread"), c->nv * c->vec + c->ns);
      g_string_append_printf (note, "; %s%s", forms[c->mode], ch->streamed ? " (the region streams the row)" : "");
    }
  if (r->prologue->len + r->epilogue->len > 0)
    g_string_append_printf (note, _("; fused: %u maps before, %u after"), r->prologue->len, r->epilogue->len);
  return g_string_free (g_steal_pointer (&note), FALSE);
}

/* Makes `k` the rows kernel the chain and the choice describe; FALSE (`why` set) where
 * the printer could not print it. */
static gboolean
rows_commit (NapkinPlanner    *p,
             NapkinPlanKernel *k,
             RowsChain        *ch,
             const RowsChoice *c,
             char            **why)
{
  const NapkinNode *fn = ch->fn;
  NapkinPlanRows rows = { 0 }, *r = &rows;

  r->node = ch->f;
  r->op = fn->kind;
  r->norm = fn->norm;
  r->reduce = fn->reduce;
  r->eps = fn->eps;
  r->x_dtype = ch->xl.dtype;
  r->y_dtype = ch->yl.dtype;
  r->rows = ch->rows;
  r->cols = ch->cols;
  r->ldx = ch->ldx;
  r->ldy = ch->ldy;
  r->x = (NapkinPlanBuffer) { ch->x, -1, ch->xl.dtype };
  r->y = (NapkinPlanBuffer) { ch->last, -1, ch->yl.dtype };
  r->prologue = ch->prologue;
  r->epilogue = ch->epilogue;
  r->rows_per_block = ch->rpb > 0 ? ch->rpb : c->threads / c->tpr;
  r->threads = c->threads;
  r->threads_per_row = c->tpr;
  r->vec = c->vec;
  r->one_pass = c->mode != ROWS_TWO_PASS;
  r->smem_row = c->mode == ROWS_SMEM;
  r->outer = ch->outer;
  r->inner = ch->inner;
  r->y_stride = ch->y_stride;
  r->cols_per_block = c->w;
  r->l2_reread = c->l2;
  r->split = MAX (c->split, 1);
  r->chunk = c->split > 1 ? c->chunk : ch->cols;
  r->partials = -1;

  if (ch->inner > 1)
    r->rows_per_block = c->w;
  /* the printer's rules: a plan it could not print is not made */
  if (!napkin_plan_rows_printable (r, why))
    return FALSE;
  if (r->split > 1)   /* the chunks' statistics: fp32 pairs [split][outer][inner] */
    r->partials = _napkin_plan_add_scratch (p->plan, (gint64) r->split * r->outer * r->inner * 2 * 4);
  k->kind = NAPKIN_PLAN_ROWS;
  k->path = NAPKIN_PATH_SIMT;
  k->u.rows = rows;
  r = &k->u.rows;
  ch->prologue = ch->epilogue = NULL;

  k->grid = (ch->rows + r->rows_per_block - 1) / r->rows_per_block;
  k->threads = c->threads;
  /* the team reductions' partials, then the row cache */
  k->smem_bytes = (gint64) (c->threads / c->tpr) * MAX (c->tpr / 32, 1) * 2 * 4 + c->smem;
  if (ch->inner > 1)
    {
      k->grid = ch->outer * ((ch->inner + c->w - 1) / c->w)
                * (c->split > 1 && c->mode == ROWS_TWO_PASS ? c->split : 1);
      k->smem_bytes = strided_red_bytes (c->threads, c->threads / c->tpr, c->vec) + c->smem;
    }
  k->registers = c->regs;
  k->blocks_per_sm = c->min_blocks;
  k->note = rows_note (ch, c, r);
  if (k->smem_bytes > (gint64) p->arch->smem_max_per_block)
    {
      k->feasible = FALSE;
      k->infeasible = g_strdup_printf (_("%lld bytes of shared memory per block; the GPU allows %.0f"),
                                       (long long) k->smem_bytes, p->arch->smem_max_per_block);
    }
  return TRUE;
}

gboolean
_napkin_plan_try_rows (NapkinPlanner    *p,
                       NapkinPlanKernel *k,
                       char            **why)
{
  NapkinDiagram *d = p->d;
  const NapkinRegion *region = k->region >= 0 ? napkin_diagram_region (d, k->region) : NULL;
  g_auto(RowsChain) ch = { .rows = 1 };
  const NapkinTensorType *in_type;
  const NapkinNode *fn;
  guint n_maps = 0, n_adjustments = k->adjustments->len;
  RowsChoice c;

  *why = NULL;
  ch.f = rows_find_op (p, k, &n_maps, why);
  if (ch.f < 0)
    return FALSE;
  fn = ch.fn = napkin_diagram_node (d, ch.f);
  ch.what = fn->kind == NAPKIN_OP_SOFTMAX ? "softmax" : fn->kind == NAPKIN_OP_NORMALIZE ? napkin_norm_to_string (fn->norm)
                                                                                        : napkin_reduce_to_string (fn->reduce);
  in_type = napkin_diagram_node_type (d, napkin_diagram_input_source (d, ch.f, 0));
  ch.col = napkin_diagram_find_axis (d, fn->axis);
  if (in_type == NULL || !in_type->valid || ch.col < 0)
    return FALSE;

  ch.prologue = g_array_new (FALSE, FALSE, sizeof (NapkinPlanMap));
  ch.epilogue = g_array_new (FALSE, FALSE, sizeof (NapkinPlanMap));
  if (!rows_prologue (p, k, &ch, in_type, why) || !rows_epilogue (p, k, &ch, why))
    return FALSE;
  if (ch.prologue->len + ch.epilogue->len != n_maps)
    {
      *why = g_strdup_printf (_("%s holds maps off the chain through the %s"), kernel_place (p, k), ch.what);
      return FALSE;
    }
  if (outputs_fed (p, ch.last) > 1)
    {
      *why = g_strdup_printf (_("%s feeds %u outputs; a rows kernel stores one"), node_id (p, ch.last),
                              outputs_fed (p, ch.last));
      return FALSE;
    }
  if (!rows_space (p, k, &ch, why) || !rows_store (p, &ch, why)
      || (region != NULL && !rows_region_marks (p, k, region, &ch, why))
      || !rows_form (p, k, region, &ch, n_adjustments, &c, why))
    return FALSE;
  if (!rows_commit (p, k, &ch, &c, why))
    {
      g_ptr_array_set_size (k->adjustments, n_adjustments);
      return FALSE;
    }
  return TRUE;
}

static gboolean
is_pow2 (guint64 v)
{
  return v > 0 && (v & (v - 1)) == 0;
}

gboolean
napkin_plan_rows_printable (const NapkinPlanRows *r,
                            char                **why)
{
  guint xb = napkin_dtype_bytes (r->x_dtype), tpr = r->threads_per_row;
  gboolean reduce = r->op == NAPKIN_OP_REDUCE;
  const char *bad = NULL;

  if (xb == 0 || 16 % xb != 0 || napkin_dtype_bytes (r->y_dtype) == 0)
    bad = "elements of 1, 2 or 4 bytes";
  else if (r->threads < 32 || r->threads > 1024 || !is_pow2 (tpr) || r->threads % tpr != 0)
    bad = "32 to 1024 threads in teams of a power of two";
  else if (r->cols < 1 || r->rows < 1 || (reduce && !r->one_pass))
    bad = "a row to reduce in one pass";
  else if (r->inner <= 1)
    {
      if (r->vec * xb != 16 || r->rows_per_block < 1)
        bad = "16-byte vectors and a row per block at least";
      else if (r->smem_row && r->threads != tpr)
        bad = "a row in shared memory with the whole block";
      else if (r->one_pass && !r->smem_row && !reduce && (r->cols + tpr - 1) / tpr > 2 * REG_VALUES)
        bad = "at most 64 values a thread in registers";
    }
  else
    {
      guint tc = r->cols_per_block > 0 ? (guint) (r->cols_per_block / MAX (r->vec, 1)) : 0;

      if (!is_pow2 (r->vec) || r->vec * xb > 16 || r->inner % r->vec != 0 || r->outer * r->inner != r->rows)
        bad = "vectors of a power of two dividing the columns, within 16 bytes";
      else if (!is_pow2 (tc) || r->cols_per_block % r->vec != 0 || (guint64) tc * tpr != r->threads)
        bad = "a power of two threads across the columns of a block, times those down the axis";
      else if (r->outer > G_MAXINT32 / ((r->inner + r->cols_per_block - 1) / r->cols_per_block))
        bad = "fewer than 2³¹ blocks";
      else if (r->one_pass && !r->smem_row && !reduce && (r->cols + tpr - 1) / tpr * r->vec > 2 * REG_VALUES)
        bad = "at most 64 values a thread in registers";
      else if (r->split > 1
               && ((r->one_pass && !reduce) || r->chunk < 1 || r->chunk * r->split < r->cols
                   || r->chunk * (r->split - 1) >= r->cols
                   || r->outer * r->split > G_MAXINT32 / ((r->inner + r->cols_per_block - 1) / r->cols_per_block)))
        bad = "an axis split into chunks (two passes or a reduction) that cover it, each non-empty";
    }
  if (bad == NULL && r->split > 1 && r->inner <= 1)
    bad = "a split axis only in the strided form";
  if (bad != NULL)
    {
      *why = g_strdup_printf (_("the rows kernel needs %s (%s → %s, %lld × %lld, %u threads, teams of %u, "
                              "%u-element vectors)"), bad, napkin_dtype_to_string (r->x_dtype),
                              napkin_dtype_to_string (r->y_dtype), (long long) r->rows, (long long) r->cols,
                              r->threads, tpr, r->vec);
      return FALSE;
    }
  return TRUE;
}

/* ---- element-wise ----------------------------------------------------------------------------- */

/* The kernel's one result: the map no other map of the kernel reads; -1 when the
 * kernel holds anything but maps (`why` set for a mask or two results). */
/* Whether `n` is the view the kernel's chain starts from (docs/plan.md, "Views"): a
 * rename of a value read from device memory, read by one of the kernel's maps. */
static gboolean
is_head_view (NapkinPlanner          *p,
              const NapkinPlanKernel *k,
              int                     n)
{
  int first;
  gboolean outside;

  return napkin_diagram_node (p->d, n)->kind == NAPKIN_OP_REARRANGE && _napkin_plan_is_view (p->d, (guint) n)
         && !_napkin_plan_member (p, k, napkin_diagram_input_source (p->d, n, 0))
         && kernel_consumers (p, k, n, &first, &outside) == 1 && !outside;
}

static int
ew_find_sink (NapkinPlanner          *p,
              const NapkinPlanKernel *k,
              char                  **why)
{
  int sink = -1;

  for (guint i = 0; i < k->nodes->len; i++)
    {
      int n = g_array_index (k->nodes, guint, i);
      int first;
      gboolean outside;

      if (is_head_view (p, k, n))
        continue;
      if (napkin_diagram_node (p->d, n)->kind != NAPKIN_OP_MAP && napkin_diagram_node (p->d, n)->kind != NAPKIN_OP_MASK
          && !_napkin_plan_unit_product (p->d, (guint) n))
        return -1;
      if (kernel_consumers (p, k, n, &first, &outside) == 0)
        {
          if (sink >= 0)
            {
              *why = g_strdup_printf (_("%s has two results (%s and %s); an element-wise kernel stores one"),
                                      kernel_place (p, k), node_id (p, sink), node_id (p, n));
              return -1;
            }
          sink = n;
        }
    }
  return sink;
}

/* A causal or window mask in an element-wise kernel: its row and column axes' strides
 * in y (stored contiguously in `yl`'s order), read back from the flat index. */
static gboolean
ew_mask (NapkinPlanner          *p,
         const NapkinNode       *mn,
         const NapkinPlanLayout *yl,
         NapkinPlanMap          *m,
         char                  **why)
{
  int rows = mn->rows ? napkin_diagram_find_axis (p->d, mn->rows) : -1;
  int cols = mn->axis ? napkin_diagram_find_axis (p->d, mn->axis) : -1;
  gint64 stride = 1;

  m->is_mask = TRUE;
  m->mask = mn->mask;
  m->mask_offset = mn->offset;
  m->mask_left = mn->mask == NAPKIN_MASK_WINDOW ? mn->left : -1;
  m->mask_right = mn->mask == NAPKIN_MASK_WINDOW ? mn->right : -1;
  m->mask_row_stride = m->mask_col_stride = 0;
  for (int i = (int) yl->n - 1; i >= 0; i--)
    {
      if ((int) yl->axes[i] == rows)
        m->mask_row_stride = stride, m->mask_rows = axis_size (p, yl->axes[i]);
      if ((int) yl->axes[i] == cols)
        m->mask_col_stride = stride, m->mask_cols = axis_size (p, yl->axes[i]);
      stride *= axis_size (p, yl->axes[i]);
    }
  if (m->mask_row_stride == 0 || m->mask_col_stride == 0)
    {
      *why = g_strdup_printf (_("the mask “%s” keeps %s per %s, which its value does not both carry"), mn->id,
                              mn->axis ? mn->axis : "?", mn->rows ? mn->rows : "?");
      return FALSE;
    }
  return TRUE;
}

/* Walks back from the sink: the maps head first, and for each its other operand's
 * strides over y's axes in `others` (NULL for a one-operand map). */
static gboolean
ew_chain (NapkinPlanner          *p,
          const NapkinPlanKernel *k,
          int                     sink,
          const NapkinPlanLayout *yl,
          GArray                 *maps,
          GPtrArray              *others,
          char                  **why)
{
  NapkinDiagram *d = p->d;
  int cur = sink;
  guint views = 0;

  while (_napkin_plan_member (p, k, cur))
    {
      const NapkinNode *mn = napkin_diagram_node (d, cur);
      guint arity = napkin_op_n_inputs (mn), main_port = 0, inside;
      NapkinPlanMap m = map_new (p, cur);
      int first;
      gboolean outside;
      gint64 *os = NULL;

      /* a product over axes of size 1: x times its other operand, each broadcast */
      if (mn->kind == NAPKIN_OP_CONTRACT)
        {
          m.fn = NAPKIN_FN_MUL;
          m.alpha = 1.0;
        }

      if (cur != sink && (kernel_consumers (p, k, cur, &first, &outside) != 1 || outside))
        {
          *why = g_strdup_printf (_("the value of %s is used twice; an element-wise kernel fuses a chain of maps"),
                                  mn->id);
          return FALSE;
        }
      if (mn->kind == NAPKIN_OP_MASK && mn->mask != NAPKIN_MASK_TENSOR && !ew_mask (p, mn, yl, &m, why))
        return FALSE;
      inside = operands_inside (p, k, cur, arity, &main_port);
      /* a tensor mask reads its flags (or the bias it adds) as the map's other operand,
       * broadcast by strides like any: the value is its first port */
      if (mn->kind == NAPKIN_OP_MASK && mn->mask == NAPKIN_MASK_TENSOR)
        {
          if (inside > 0 && main_port != 0)
            {
              *why = g_strdup_printf (_("the mask tensor of “%s” is computed in %s; an element-wise kernel reads it "
                                      "from device memory"), mn->id, kernel_place (p, k));
              return FALSE;
            }
          m.is_mask = TRUE;
          m.mask = NAPKIN_MASK_TENSOR;
          main_port = 0;
        }
      if (inside > 1)
        {
          *why = g_strdup_printf (_("both operands of %s are computed in %s; an element-wise kernel fuses a chain "
                                  "of maps"), mn->id, kernel_place (p, k));
          return FALSE;
        }
      if (arity == 2)
        {
          int src = napkin_diagram_input_source (d, cur, 1 - main_port);
          NapkinPlanLayout ol;

          if (!_napkin_plan_value_layout (p, src, &ol))
            return FALSE;
          m.has_other = TRUE;
          m.other_first = main_port == 1;
          m.other = (NapkinPlanBuffer) { src, -1, ol.dtype };
          os = g_new0 (gint64, NAPKIN_MAX_RANK);
          for (guint i = 0; i < yl->n; i++)
            os[i] = _napkin_plan_layout_stride (p->d, &ol, yl->axes[i]);
        }
      g_array_append_val (maps, m);   /* reversed below */
      g_ptr_array_add (others, os);
      if (inside == 0)
        break;
      cur = napkin_diagram_input_source (d, cur, main_port);
      if (is_head_view (p, k, cur))
        {
          views++;      /* the chain reads through it: x is its input (ew_x_layout) */
          break;
        }
    }
  reverse_array (maps);
  for (guint i = 0, j = others->len; i + 1 < j; i++, j--)
    {
      gpointer t = others->pdata[i];

      others->pdata[i] = others->pdata[j - 1];
      others->pdata[j - 1] = t;
    }
  if (maps->len + views != k->nodes->len)
    {
      *why = g_strdup_printf (_("%s holds maps off its chain"), kernel_place (p, k));
      return FALSE;
    }
  return TRUE;
}

/* Merges neighbouring axes that every operand walks contiguously and drops size-1
 * axes: a same-shape map becomes one flat axis. `ys` gets y's strides (y is
 * contiguous); returns the rank left, at least 1. */
static guint
ew_merge_axes (gint64    *dims,
               gint64    *ys,
               gint64    *xs,
               GPtrArray *others,
               guint      n)
{
  gint64 acc = 1;
  guint rank = 0;

  for (int i = (int) n - 1; i >= 0; i--)
    {
      ys[i] = acc;
      acc *= dims[i];
    }
  for (guint i = 0; i < n; i++)
    {
      gboolean merge = rank > 0;
      guint to;

      if (dims[i] == 1)
        continue;
      if (merge)
        {
          guint t = rank - 1;

          merge = ys[t] == ys[i] * dims[i] && xs[t] == xs[i] * dims[i];
          for (guint m = 0; m < others->len && merge; m++)
            {
              gint64 *os = g_ptr_array_index (others, m);

              merge = os == NULL || os[t] == os[i] * dims[i];
            }
        }
      to = merge ? rank - 1 : rank;
      dims[to] = merge ? dims[to] * dims[i] : dims[i];
      ys[to] = ys[i];
      xs[to] = xs[i];
      for (guint m = 0; m < others->len; m++)
        {
          gint64 *os = g_ptr_array_index (others, m);

          if (os != NULL)
            os[to] = os[i];
        }
      if (!merge)
        rank++;
    }
  if (rank == 0)
    {
      dims[0] = 1;
      xs[0] = 0;
      rank = 1;
    }
  return rank;
}

/* The vector width, the grid-stride launch and the note of an element-wise kernel
 * over `total` elements. */
static void
ew_launch (NapkinPlanner    *p,
           NapkinPlanKernel *k,
           gint64            total)
{
  NapkinPlanElementwise *e = &k->u.ew;
  guint min_bytes, rank = e->rank;

  /* 16 bytes of the narrowest type per vector, dividing the inner axis (a flat axis
   * takes a scalar tail) */
  min_bytes = MIN (napkin_dtype_bytes (e->x_dtype), napkin_dtype_bytes (e->y_dtype));
  for (guint i = 0; i < e->maps->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (e->maps, NapkinPlanMap, i);

      if (m->has_other)
        min_bytes = MIN (min_bytes, napkin_dtype_bytes (m->other.dtype));
      if (m->has_other2)
        min_bytes = MIN (min_bytes, napkin_dtype_bytes (m->other2.dtype));
    }
  e->vec = 16 / MAX (min_bytes, 1);
  /* a vector of a rotated operand lies in one half of its run */
  for (guint i = 0; i < e->maps->len; i++)
    while (e->vec > 1 && g_array_index (e->maps, NapkinPlanMap, i).other_rotate / 2 % e->vec != 0)
      e->vec /= 2;
  while (e->vec > 1 && rank > 1 && e->dims[rank - 1] % e->vec != 0)
    e->vec /= 2;
  while (e->vec > 1 && e->dims[rank - 1] < e->vec)
    e->vec /= 2;
  e->threads = 256;

  k->threads = e->threads;
  k->grid = MAX (1, MIN ((total / e->vec + e->threads - 1) / e->threads, (gint64) MAX (p->arch->sms, 1) * 16));
  k->registers = 32;
  k->smem_bytes = 0;
  k->blocks_per_sm = blocks_per_sm (p, e->threads, k->registers, 0);
  k->note = g_strdup_printf (_("%u maps over %lld elements (%u axes after merging), %u-element "
                             "vectors, a grid-stride loop of %lld blocks of %u threads"),
                             e->maps->len, (long long) total, rank, e->vec, (long long) k->grid, e->threads);
}

/* Whether layout `l` lies in the order of the value's type (a reshape reads and writes
 * the flat index in that order). */
static gboolean
in_type_order (NapkinPlanner          *p,
               int                     node,
               const NapkinPlanLayout *l)
{
  const NapkinTensorType *type = napkin_diagram_node_type (p->d, node);

  if (type == NULL || !type->valid || type->n_axes != l->n)
    return FALSE;
  for (guint i = 0; i < l->n; i++)
    if (type->axes[i] != l->axes[i])
      return FALSE;
  return TRUE;
}

/* The element-wise kernel that copies x (laid out xl) into node's value (laid out yl),
 * y's dims read from x with strides xs: merged axes, buffers, types, launch. */
static void
ew_copy_kernel (NapkinPlanner          *p,
                NapkinPlanKernel       *k,
                int                     x,
                const NapkinPlanLayout *xl,
                int                     node,
                const NapkinPlanLayout *yl,
                gint64                 *dims,
                gint64                 *ys,
                gint64                 *xs,
                gint64                  total)
{
  g_autoptr(GPtrArray) others = g_ptr_array_new_with_free_func (g_free);
  NapkinPlanElementwise *e = &k->u.ew;

  memset (e, 0, sizeof *e);
  e->rank = ew_merge_axes (dims, ys, xs, others, yl->n);
  memcpy (e->dims, dims, sizeof (gint64) * e->rank);
  memcpy (e->x_strides, xs, sizeof (gint64) * e->rank);
  e->x = (NapkinPlanBuffer) { x, -1, xl->dtype };
  e->y = (NapkinPlanBuffer) { node, -1, yl->dtype };
  e->x_dtype = xl->dtype;
  e->y_dtype = yl->dtype;
  e->maps = g_array_new (FALSE, FALSE, sizeof (NapkinPlanMap));
  e->other_strides = g_steal_pointer (&others);
  k->kind = NAPKIN_PLAN_ELEMENTWISE;
  k->path = NAPKIN_PATH_SIMT;
  ew_launch (p, k, total);
}

/* A rearrange alone (docs/plan.md, "Rows and element-wise kernels"): a copy. A transpose
 * reads x through its strides over y's axes; a reshape (merged, split or renamed axes)
 * keeps the flat index, so x is read as y is written. */
static gboolean
ew_rearrange (NapkinPlanner    *p,
              NapkinPlanKernel *k,
              char            **why)
{
  int node = g_array_index (k->nodes, guint, 0), x = napkin_diagram_input_source (p->d, node, 0);
  NapkinPlanLayout yl, xl;
  gint64 dims[NAPKIN_MAX_RANK], ys[NAPKIN_MAX_RANK], xs[NAPKIN_MAX_RANK], total = 1;
  gboolean permutation = TRUE;

  if (x < 0 || outputs_fed (p, node) > 1 || !_napkin_plan_value_layout (p, node, &yl) || !_napkin_plan_value_layout (p, x, &xl))
    return FALSE;
  for (guint i = 0; i < yl.n; i++)
    permutation &= _napkin_plan_layout_stride (p->d, &xl, yl.axes[i]) > 0 || axis_size (p, yl.axes[i]) == 1;
  permutation &= xl.n == yl.n;
  if (!permutation && (!in_type_order (p, x, &xl) || !in_type_order (p, node, &yl)))
    {
      *why = g_strdup_printf (_("the reshape “%s” reads or writes a buffer stored in another order than its "
                                "axes"), node_id (p, node));
      return FALSE;
    }
  for (int i = (int) yl.n - 1; i >= 0; i--)
    {
      dims[i] = axis_size (p, yl.axes[i]);
      xs[i] = permutation ? _napkin_plan_layout_stride (p->d, &xl, yl.axes[i]) : total;
      total *= dims[i];
    }
  ew_copy_kernel (p, k, x, &xl, node, &yl, dims, ys, xs, total);
  return TRUE;
}

/* An output wired straight from an input (docs/plan.md, "Rows and element-wise
 * kernels"): a copy of the input's tensor into the output's, which may hold the axes in
 * another order and another element type. y is the output operation, whose home in
 * the lowering is its tensor. */
static gboolean
ew_copy (NapkinPlanner    *p,
         NapkinPlanKernel *k)
{
  int node = g_array_index (k->nodes, guint, 0), x = napkin_diagram_input_source (p->d, node, 0);
  int t = napkin_diagram_find_tensor (p->d, napkin_diagram_node (p->d, node)->tensor);
  const NapkinTensor *out = napkin_diagram_tensor (p->d, t);
  NapkinPlanLayout yl = { 0 }, xl;
  gint64 dims[NAPKIN_MAX_RANK], ys[NAPKIN_MAX_RANK], xs[NAPKIN_MAX_RANK], total = 1;

  if (x < 0 || napkin_diagram_node (p->d, x)->kind != NAPKIN_OP_INPUT || !_napkin_plan_value_layout (p, x, &xl))
    return FALSE;
  for (guint i = 0; out->axes[i] != NULL && i < NAPKIN_MAX_RANK; i++)
    {
      int a = napkin_diagram_find_axis (p->d, out->axes[i]);

      if (a < 0)
        return FALSE;
      yl.axes[yl.n++] = a;
    }
  yl.dtype = p->options != NULL && p->options->has_dtype ? p->options->dtype : out->dtype;
  if (yl.n != xl.n)
    return FALSE;
  for (int i = (int) yl.n - 1; i >= 0; i--)
    {
      dims[i] = axis_size (p, yl.axes[i]);
      xs[i] = _napkin_plan_layout_stride (p->d, &xl, yl.axes[i]);
      if (xs[i] == 0 && dims[i] > 1)
        return FALSE;
      total *= dims[i];
    }
  ew_copy_kernel (p, k, x, &xl, node, &yl, dims, ys, xs, total);
  return TRUE;
}

/* ---- a rotary embedding as one pass ------------------------------------------------------- */

/* The size of the rotate_half constant `node` reads (an input whose tensor is "constant":
 * "rotate_half" over [a0, a1], n × n: docs/import.md), its axes in *a0 and *a1; else 0. */
static gint64
rotate_half_input (NapkinPlanner *p,
                   int            node,
                   int           *a0,
                   int           *a1)
{
  const NapkinNode *nd = node >= 0 ? napkin_diagram_node (p->d, node) : NULL;
  int t = nd != NULL && nd->kind == NAPKIN_OP_INPUT ? napkin_diagram_find_tensor (p->d, nd->tensor) : -1;
  const NapkinTensor *tensor = t >= 0 ? napkin_diagram_tensor (p->d, (guint) t) : NULL;
  gint64 n;

  if (tensor == NULL || g_strcmp0 (napkin_tensor_get_constant (tensor), "rotate_half") != 0
      || g_strv_length (tensor->axes) != 2)
    return 0;
  *a0 = napkin_diagram_find_axis (p->d, tensor->axes[0]);
  *a1 = napkin_diagram_find_axis (p->d, tensor->axes[1]);
  if (*a0 < 0 || *a1 < 0)
    return 0;
  n = napkin_diagram_axis_size (p->d, (guint) *a0);
  return n == napkin_diagram_axis_size (p->d, (guint) *a1) && n >= 2 && n % 2 == 0 ? n : 0;
}

/* Whether `node`, outside regions, is read by `reader` alone. */
static gboolean
read_only_by (NapkinPlanner *p,
              int            node,
              int            reader)
{
  guint n_consumers;
  const guint *consumers;

  if (node < 0 || p->top[node] >= 0)
    return FALSE;
  consumers = napkin_diagram_consumers (p->d, (guint) node, &n_consumers);
  return n_consumers == 1 && (int) consumers[0] == reader;
}

/* Whether `node` is the map `fn`. */
static gboolean
is_map (NapkinPlanner *p,
        int            node,
        NapkinMapFn    fn)
{
  const NapkinNode *nd = node >= 0 ? napkin_diagram_node (p->d, node) : NULL;

  return nd != NULL && nd->kind == NAPKIN_OP_MAP && nd->fn == fn;
}

/* Whether value types a and b list the same axes, b's `from` as a's `to`. */
static gboolean
axes_as (const NapkinTensorType *a,
         const NapkinTensorType *b,
         int                     to,
         int                     from)
{
  if (a == NULL || b == NULL || !a->valid || !b->valid || a->n_axes != b->n_axes)
    return FALSE;
  for (guint i = 0; i < a->n_axes; i++)
    if (a->axes[i] != (b->axes[i] == (guint) from ? (guint) to : b->axes[i]))
      return FALSE;
  return TRUE;
}

gboolean
_napkin_plan_rotary_match (NapkinPlanner    *p,
                           guint             sum,
                           NapkinPlanRotary *r)
{
  NapkinDiagram *d = p->d;
  NapkinPlanLayout yl, xl;

  if (!is_map (p, (int) sum, NAPKIN_FN_ADD) || p->top[sum] >= 0 || (p->options != NULL && p->options->generic_only))
    return FALSE;
  /* y = a + b in either order: a = x·c, b = rename (x·R)·s with R rotate_half */
  for (guint side = 0; side < 2; side++)
    {
      int a = napkin_diagram_input_source (d, sum, side), b = napkin_diagram_input_source (d, sum, 1 - side);
      int v = -1, prod = -1, x = -1, dax = -1, drot = -1;
      gint64 n = 0;

      if (!is_map (p, a, NAPKIN_FN_MUL) || !read_only_by (p, a, (int) sum)
          || !is_map (p, b, NAPKIN_FN_MUL) || !read_only_by (p, b, (int) sum))
        continue;
      for (guint q = 0; q < 2 && v < 0; q++)
        {
          int cand = napkin_diagram_input_source (d, b, q);

          if (cand >= 0 && napkin_diagram_node (d, cand)->kind == NAPKIN_OP_REARRANGE && _napkin_plan_is_view (d, cand)
              && read_only_by (p, cand, b))
            v = cand;
        }
      prod = v >= 0 ? napkin_diagram_input_source (d, v, 0) : -1;
      if (prod < 0 || napkin_diagram_node (d, prod)->kind != NAPKIN_OP_CONTRACT || !read_only_by (p, prod, v))
        continue;
      /* x·R, R's first axis contracted (rotate_half as the importer writes it) */
      for (guint q = 0; q < 2 && n == 0; q++)
        if ((n = rotate_half_input (p, napkin_diagram_input_source (d, prod, q), &dax, &drot)) > 0)
          x = napkin_diagram_input_source (d, prod, 1 - q);
      if (n == 0 || x < 0 || (napkin_diagram_input_source (d, a, 0) != x && napkin_diagram_input_source (d, a, 1) != x)
          || !axes_as (napkin_diagram_node_type (d, prod), napkin_diagram_node_type (d, x), drot, dax)
          || !axes_as (napkin_diagram_node_type (d, v), napkin_diagram_node_type (d, x), dax, dax)
          || !same_axis_set (p, napkin_diagram_node_type (d, sum), napkin_diagram_node_type (d, x)->axes,
                             napkin_diagram_node_type (d, x)->n_axes)
          || napkin_diagram_node_type (d, sum)->n_axes != napkin_diagram_node_type (d, x)->n_axes)
        continue;
      /* one pass reads x along the rotated axis, the innermost of y and of x */
      if (!_napkin_plan_value_layout (p, (int) sum, &yl) || !_napkin_plan_value_layout (p, x, &xl) || yl.n == 0
          || (int) yl.axes[yl.n - 1] != dax || _napkin_plan_layout_stride (d, &xl, (guint) dax) != 1
          || !napkin_dtype_is_float (xl.dtype))
        continue;
      *r = (NapkinPlanRotary) { { (guint) a, (guint) prod, (guint) v, (guint) b }, x, dax, n };
      return TRUE;
    }
  return FALSE;
}

GHashTable *
_napkin_plan_rotary_table (NapkinPlanner *p)
{
  GHashTable *table = g_hash_table_new (g_direct_hash, g_direct_equal);

  for (guint n = 0; n < p->n_nodes; n++)
    {
      NapkinPlanRotary r;

      if (_napkin_plan_rotary_match (p, n, &r))
        {
          g_hash_table_insert (table, GUINT_TO_POINTER (n + 1), GUINT_TO_POINTER (n + 1));
          for (guint j = 0; j < G_N_ELEMENTS (r.parts); j++)
            g_hash_table_insert (table, GUINT_TO_POINTER (r.parts[j] + 1), GUINT_TO_POINTER (n + 1));
        }
    }
  return table;
}

/* The other operand of the two-operand map `m` besides `not`, and its strides over yl's
 * axes in *os (new); -1 where it has no layout. */
static int
ew_other_operand (NapkinPlanner          *p,
                  int                     m,
                  int                     not,
                  const NapkinPlanLayout *yl,
                  NapkinDtype            *dtype,
                  gint64                **os)
{
  int src = napkin_diagram_input_source (p->d, m, 0) == not ? napkin_diagram_input_source (p->d, m, 1)
                                                           : napkin_diagram_input_source (p->d, m, 0);
  NapkinPlanLayout ol;

  if (src < 0 || !_napkin_plan_value_layout (p, src, &ol))
    return -1;
  *dtype = ol.dtype;
  *os = g_new0 (gint64, NAPKIN_MAX_RANK);
  for (guint i = 0; i < yl->n; i++)
    (*os)[i] = _napkin_plan_layout_stride (p->d, &ol, yl->axes[i]);
  return src;
}

/* y = x·c + rotate_half (x)·s as one element-wise pass (docs/plan.md, "Rotary as one
 * pass"): x read as it is and rotated by half along y's innermost axis, c and s by their
 * strides; the product by the rotate_half matrix and its rename are never stored. */
static gboolean
ew_rotary (NapkinPlanner          *p,
           NapkinPlanKernel       *k,
           const NapkinPlanRotary *r,
           char                  **why)
{
  NapkinDiagram *d = p->d;
  int sum = k->node, a = (int) r->parts[0], v = (int) r->parts[2], b = (int) r->parts[3], x = r->x, c, s;
  g_autoptr(GArray) maps = g_array_new (FALSE, FALSE, sizeof (NapkinPlanMap));
  g_autoptr(GPtrArray) others = g_ptr_array_new_with_free_func (g_free);
  NapkinPlanLayout yl, xl;
  gint64 dims[NAPKIN_MAX_RANK], ys[NAPKIN_MAX_RANK], xs[NAPKIN_MAX_RANK], total = 1;
  gint64 *os_c = NULL, *os_s = NULL, *os_x;
  NapkinDtype c_dtype = NAPKIN_DTYPE_FP32, s_dtype = NAPKIN_DTYPE_FP32;
  NapkinPlanMap m0 = map_new (p, a), m1 = map_new (p, sum);
  NapkinPlanElementwise *e = &k->u.ew;

  if (!_napkin_plan_value_layout (p, sum, &yl) || !_napkin_plan_value_layout (p, x, &xl))
    return FALSE;
  c = ew_other_operand (p, a, x, &yl, &c_dtype, &os_c);
  s = ew_other_operand (p, b, v, &yl, &s_dtype, &os_s);
  if (c < 0 || s < 0)
    {
      g_free (os_c);
      g_free (os_s);
      *why = g_strdup_printf (_("the rotary embedding into %s reads an operand stored in no known order"),
                              node_id (p, sum));
      return FALSE;
    }
  for (guint i = 0; i < yl.n; i++)
    {
      dims[i] = axis_size (p, yl.axes[i]);
      xs[i] = _napkin_plan_layout_stride (d, &xl, yl.axes[i]);
      total *= dims[i];
    }
  os_x = g_memdup2 (xs, sizeof xs);
  m0.has_other = TRUE;
  m0.other = (NapkinPlanBuffer) { c, -1, c_dtype };
  m1.has_other = TRUE;
  m1.other = (NapkinPlanBuffer) { x, -1, xl.dtype };
  m1.other_rotate = r->n;
  m1.has_other2 = TRUE;
  m1.other2 = (NapkinPlanBuffer) { s, -1, s_dtype };
  m1.other2_index = 2;
  g_array_append_val (maps, m0);
  g_array_append_val (maps, m1);
  g_ptr_array_add (others, os_c);
  g_ptr_array_add (others, os_x);
  g_ptr_array_add (others, os_s);

  k->kind = NAPKIN_PLAN_ELEMENTWISE;
  k->path = NAPKIN_PATH_SIMT;
  e->rank = ew_merge_axes (dims, ys, xs, others, yl.n);
  memcpy (e->dims, dims, sizeof (gint64) * e->rank);
  memcpy (e->x_strides, xs, sizeof (gint64) * e->rank);
  e->x = (NapkinPlanBuffer) { x, -1, xl.dtype };
  e->y = (NapkinPlanBuffer) { sum, -1, yl.dtype };
  e->x_dtype = xl.dtype;
  e->y_dtype = yl.dtype;
  e->maps = g_steal_pointer (&maps);
  e->other_strides = g_steal_pointer (&others);
  ew_launch (p, k, total);
  {
    /* the note says what the kernel does in the diagram's words */
    g_autofree char *was = k->note;

    k->note = g_strdup_printf (_("rotary embedding in one pass: %s·%s + rotate_half (%s)·%s, %s rotated by halves of "
                                 "%lld along %s; %s"), node_id (p, x), node_id (p, c), node_id (p, x), node_id (p, s),
                               node_id (p, x), (long long) r->n, napkin_diagram_axis (d, (guint) r->axis)->name, was);
  }
  return TRUE;
}

gboolean
_napkin_plan_try_elementwise (NapkinPlanner    *p,
                              NapkinPlanKernel *k,
                              char            **why)
{
  NapkinDiagram *d = p->d;
  int sink;
  g_autoptr(GArray) maps = g_array_new (FALSE, FALSE, sizeof (NapkinPlanMap));
  g_autoptr(GPtrArray) others = g_ptr_array_new_with_free_func (g_free);
  NapkinPlanLayout yl, xl;
  gint64 dims[NAPKIN_MAX_RANK], ys[NAPKIN_MAX_RANK], xs[NAPKIN_MAX_RANK];
  guint rank;
  gint64 total = 1;
  NapkinPlanElementwise *e;

  *why = NULL;
  if (k->node >= 0 && k->region < 0)
    {
      NapkinPlanRotary r;

      if (_napkin_plan_rotary_match (p, (guint) k->node, &r))
        return ew_rotary (p, k, &r, why);
    }
  if (k->nodes->len == 1 && napkin_diagram_node (d, g_array_index (k->nodes, guint, 0))->kind == NAPKIN_OP_REARRANGE)
    return ew_rearrange (p, k, why);
  if (k->nodes->len == 1 && napkin_diagram_node (d, g_array_index (k->nodes, guint, 0))->kind == NAPKIN_OP_OUTPUT)
    return ew_copy (p, k);
  sink = ew_find_sink (p, k, why);
  if (sink < 0)
    return FALSE;
  if (outputs_fed (p, sink) > 1)
    {
      *why = g_strdup_printf (_("%s feeds %u outputs; an element-wise kernel stores one"), node_id (p, sink),
                              outputs_fed (p, sink));
      return FALSE;
    }

  /* the iteration space: y's layout, y contiguous */
  if (!_napkin_plan_value_layout (p, sink, &yl))
    return FALSE;
  for (guint i = 0; i < yl.n; i++)
    {
      dims[i] = axis_size (p, yl.axes[i]);
      total *= dims[i];
    }
  if (!ew_chain (p, k, sink, &yl, maps, others, why))
    return FALSE;
  /* the head map's first operand (port 0, or the in-chain side) is x */
  {
    const NapkinPlanMap *head = &g_array_index (maps, NapkinPlanMap, 0);
    int x = napkin_diagram_input_source (d, head->node, head->has_other && head->other_first ? 1 : 0);

    if (_napkin_plan_member (p, k, x) && is_head_view (p, k, x))
      {
        /* a view: its input's bytes, under the view's axis names by position */
        const NapkinTensorType *named = napkin_diagram_node_type (d, x);

        x = napkin_diagram_input_source (d, x, 0);
        if (!_napkin_plan_value_layout (p, x, &xl) || xl.n != named->n_axes)
          return FALSE;
        memcpy (xl.axes, named->axes, sizeof (guint) * named->n_axes);
      }
    else if (!_napkin_plan_value_layout (p, x, &xl))
      return FALSE;
    for (guint i = 0; i < yl.n; i++)
      xs[i] = _napkin_plan_layout_stride (p->d, &xl, yl.axes[i]);
    k->u.ew.x = (NapkinPlanBuffer) { x, -1, xl.dtype };
  }
  rank = ew_merge_axes (dims, ys, xs, others, yl.n);

  e = &k->u.ew;
  k->kind = NAPKIN_PLAN_ELEMENTWISE;
  k->path = NAPKIN_PATH_SIMT;
  e->rank = rank;
  memcpy (e->dims, dims, sizeof (gint64) * rank);
  memcpy (e->x_strides, xs, sizeof (gint64) * rank);
  e->y = (NapkinPlanBuffer) { sink, -1, yl.dtype };
  e->x_dtype = xl.dtype;
  e->y_dtype = yl.dtype;
  e->maps = g_steal_pointer (&maps);
  e->other_strides = g_steal_pointer (&others);
  ew_launch (p, k, total);
  return TRUE;
}
