/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-codegen.h"
#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* Static shared memory a generic kernel may use without an opt-in. */
#define SMEM_BUDGET (48 * 1024)


/* ---- the generic printer ----------------------------------------------------------------- */

typedef struct
{
  const NapkinIrProgram *prog;
  NapkinDiagram         *d;
  GString               *out;
  int                    indent;
  guint                  n_axes;
  char                 **off;        /* current range: expressions per axis */
  char                 **ext;
  gboolean               block;      /* inside grid loops: the block cooperates */
  int                   *place;      /* tile: 1 shared memory, 2 workspace */
  gint64                 ws_base;    /* bytes of the workspace before the generic kernels' part (plan scratch) */
  gint64                *ws_off;     /* tile: float offset in the block's workspace */
  guint                  var;
  GError               **error;
  gboolean               failed;
} Printer;

static void
line (Printer    *P,
      const char *format,
      ...) G_GNUC_PRINTF (2, 3);

static void
line (Printer    *P,
      const char *format,
      ...)
{
  va_list args;

  for (int i = 0; i < P->indent; i++)
    g_string_append (P->out, "  ");
  va_start (args, format);
  g_string_append_vprintf (P->out, format, args);
  va_end (args);
  g_string_append_c (P->out, '\n');
}

static const NapkinIrBuffer *
buf (Printer *P,
     int      id)
{
  return napkin_ir_buffer (P->prog, id);
}

/* Linear index of buffer `id` at the coordinates named prefix<axis>. */
static char *
index_expr (Printer    *P,
            int         id,
            const char *prefix)
{
  const NapkinIrBuffer *b = buf (P, id);
  GString *s = g_string_new (NULL);

  if (b->n_axes == 0)
    return g_string_free (s, TRUE), g_strdup ("0");
  for (guint a = 0; a < b->n_axes; a++)
    {
      g_autofree char *coord = b->role == NAPKIN_BUF_TILE
                                 ? g_strdup_printf ("(%s%u - %s_%u)", prefix, b->axes[a], b->name, a)
                                 : g_strdup_printf ("%s%u", prefix, b->axes[a]);

      if (a == 0)
        g_string_append (s, coord);
      else
        {
          g_string_prepend (s, "(");
          g_string_append_printf (s, ") * %" G_GINT64_FORMAT "L + %s", b->extent[a], coord);
        }
    }
  return g_string_free (s, FALSE);
}

static char *
load (Printer *P,
      int      id)
{
  g_autofree char *index = index_expr (P, id, "i");

  return g_strdup_printf ("napkin_ld (&%s[%s])", buf (P, id)->name, index);
}

static void
store (Printer    *P,
       int         id,
       const char *value)
{
  g_autofree char *index = index_expr (P, id, "i");

  line (P, "napkin_st (&%s[%s], %s);", buf (P, id)->name, index, value);
}

/* Opens a loop over the current range of dst's axes, spread over the block's threads
 * (or, at a plain kernel's root, over the whole grid), defining i<axis>. */
static void
open_elements_full (Printer *P,
                    int      dst,
                    gboolean warp_rows)
{
  const NapkinIrBuffer *b = buf (P, dst);
  g_autoptr(GString) n = g_string_new (NULL);

  line (P, "{");
  P->indent++;
  for (guint a = 0; a < b->n_axes; a++)
    g_string_append_printf (n, "%s%s", a ? " * " : "", P->ext[b->axes[a]]);
  line (P, "const long n_ = %s;", b->n_axes ? n->str : "1L");
  /* Row reductions: one warp per row (the loop is warp-uniform, so shuffles are safe). */
  if (warp_rows && P->block)
    line (P, "for (long t_ = threadIdx.x >> 5; t_ < n_; t_ += blockDim.x >> 5)");
  else if (warp_rows)
    line (P, "for (long t_ = ((long) blockIdx.x * blockDim.x + threadIdx.x) >> 5; t_ < n_; "
             "t_ += ((long) gridDim.x * blockDim.x) >> 5)");
  else if (P->block)
    line (P, "for (long t_ = threadIdx.x; t_ < n_; t_ += blockDim.x)");
  else
    line (P, "for (long t_ = (long) blockIdx.x * blockDim.x + threadIdx.x; t_ < n_; t_ += (long) gridDim.x * blockDim.x)");
  line (P, "{");
  P->indent++;
  line (P, "long r_ = t_;");
  for (int a = b->n_axes - 1; a >= 0; a--)
    {
      guint axis = b->axes[a];

      if (a > 0)
        {
          line (P, "const long i%u = %s + r_ %% %s;", axis, P->off[axis], P->ext[axis]);
          line (P, "r_ /= %s;", P->ext[axis]);
        }
      else
        line (P, "const long i%u = %s + r_;", axis, P->off[axis]);
    }
  line (P, "(void) r_;");
  if (warp_rows)
    line (P, "const int lane_ = threadIdx.x & 31;");
}

static void
open_elements (Printer *P,
               int      dst)
{
  open_elements_full (P, dst, FALSE);
}

static void
warp_reduce (Printer    *P,
             const char *var,
             gboolean    is_max)
{
  line (P, "for (int w_ = 16; w_ > 0; w_ >>= 1)");
  if (is_max)
    line (P, "  %s = fmaxf (%s, __shfl_xor_sync (0xffffffffu, %s, w_));", var, var, var);
  else
    line (P, "  %s += __shfl_xor_sync (0xffffffffu, %s, w_);", var, var);
}

static void
close_elements (Printer *P)
{
  P->indent--;
  line (P, "}");
  P->indent--;
  line (P, "}");
  if (P->block)
    line (P, "__syncthreads ();");
}

/* Opens a loop over the current range of `axis`, defining i<axis>: every index, or
 * (`lanes`) every 32nd from the thread's lane. */
static void
open_axis_loop (Printer *P,
                guint    axis,
                gboolean lanes)
{
  line (P, "for (long i%u = %s%s; i%u < %s + %s; i%u%s)", axis, P->off[axis], lanes ? " + lane_" : "", axis,
        P->off[axis], P->ext[axis], axis, lanes ? " += 32" : "++");
  line (P, "{");
  P->indent++;
}

static void
close_axis_loop (Printer *P)
{
  P->indent--;
  line (P, "}");
}

/* `var` reduced over the row: `stmt` on each of the lane's elements, then across the
 * warp (a max or a sum). */
static void
lane_reduce (Printer    *P,
             guint       axis,
             const char *var,
             gboolean    is_max,
             const char *stmt)
{
  open_axis_loop (P, axis, TRUE);
  line (P, "%s", stmt);
  close_axis_loop (P);
  warp_reduce (P, var, is_max);
}

/* Axes that the sources carry and dst lacks. */
static guint
reduced (Printer   *P,
         int        dst,
         const int *srcs,
         guint      n_srcs,
         guint     *out)
{
  const NapkinIrBuffer *d = buf (P, dst);
  guint count = 0;

  for (guint s = 0; s < n_srcs; s++)
    {
      const NapkinIrBuffer *b = buf (P, srcs[s]);

      for (guint i = 0; i < b->n_axes; i++)
        {
          gboolean skip = FALSE;

          for (guint k = 0; k < d->n_axes; k++)
            skip |= d->axes[k] == b->axes[i];
          for (guint k = 0; k < count; k++)
            skip |= out[k] == b->axes[i];
          if (!skip)
            out[count++] = b->axes[i];
        }
    }
  return count;
}

/* A generic kernel's map: the shared expression (napkin-gen-common.c), in the exact forms
 * (expf), as the fp32 reference is printed. */
static char *
map_expr (const NapkinNode *node,
          const char       *x,
          const char       *y)
{
  g_autofree char *expr = _napkin_cuda_fn_expr (node->fn, node->alpha, node->dtype, x, y, FALSE);

  if (node->fn == NAPKIN_FN_SCALE && node->alpha_expr != NULL)
    {
      g_autofree char *why = napkin_codegen_escape_comment (node->alpha_expr);

      /* the value at the diagram's axis sizes, and where it comes from */
      return g_strdup_printf ("%s /* %s */", expr, why);
    }
  return g_steal_pointer (&expr);
}

static void print_stmts (Printer *P, GPtrArray *stmts);

static gboolean
is_row_op (NapkinComputeOp op)
{
  return op == NAPKIN_COMPUTE_ROW_MAX || op == NAPKIN_COMPUTE_ROW_SUMEXP || op == NAPKIN_COMPUTE_ROW_MEAN
         || op == NAPKIN_COMPUTE_ROW_RSTD || op == NAPKIN_COMPUTE_ONLINE_STATS;
}

/* A rearrange: a copy where the axes agree, else through a row-major flat index. */
static void
print_rearrange (Printer            *P,
                 const NapkinIrStmt *s)
{
  const NapkinIrBuffer *d = buf (P, s->dst), *b = buf (P, s->src[0]);
  gboolean same = d->n_axes == b->n_axes;
  g_autofree char *index = NULL;

  for (guint i = 0; i < b->n_axes && same; i++)
    {
      gboolean found = FALSE;

      for (guint k = 0; k < d->n_axes; k++)
        found |= d->axes[k] == b->axes[i];
      same = found;
    }
  if (same)
    {
      g_autofree char *v = load (P, s->src[0]);

      store (P, s->dst, v);
      return;
    }
  /* Row-major flat index in the output's order, unflattened in the input's. */
  line (P, "long f_ = 0;");
  for (guint i = 0; i < d->n_axes; i++)
    line (P, "f_ = f_ * %" G_GINT64_FORMAT "L + i%u;",
          napkin_diagram_axis_size (P->d, d->axes[i]), d->axes[i]);
  for (int i = b->n_axes - 1; i >= 0; i--)
    {
      gint64 size = napkin_diagram_axis_size (P->d, b->axes[i]);

      line (P, "const long j%u = f_ %% %" G_GINT64_FORMAT "L; f_ /= %" G_GINT64_FORMAT "L;",
            b->axes[i], size, size);
    }
  index = index_expr (P, s->src[0], "j");
  {
    g_autofree char *v = g_strdup_printf ("napkin_ld (&%s[%s])", b->name, index);

    store (P, s->dst, v);
  }
}

/* A contraction, reduction or online accumulation: one accumulator over the reduced axes. */
static void
print_reduce (Printer            *P,
              const NapkinIrStmt *s,
              const NapkinNode   *node)
{
  guint red[NAPKIN_MAX_RANK * 2];
  int srcs[2] = { s->src[0], s->src[1] };
  guint n_red = reduced (P, s->dst, srcs, s->op == NAPKIN_COMPUTE_REDUCE ? 1 : 2, red);
  gboolean is_max = s->op == NAPKIN_COMPUTE_REDUCE && node->reduce == NAPKIN_REDUCE_MAX;
  g_autofree char *cur = load (P, s->dst);
  g_autofree char *a = load (P, s->src[0]);
  g_autofree char *b = s->src[1] >= 0 ? load (P, s->src[1]) : NULL;

  if (s->op == NAPKIN_COMPUTE_ONLINE_ACC)
    {
      g_autofree char *c = load (P, s->src[3]);

      line (P, "float acc_ = %s * %s;", cur, c);
    }
  else if (s->accumulate)
    line (P, "float acc_ = %s;", cur);
  else
    line (P, "float acc_ = %s;", is_max ? "NAPKIN_NEG_INF" : "0.0f");
  if (s->op == NAPKIN_COMPUTE_ONLINE_ACC)
    {
      g_autofree char *m = load (P, s->src[2]);

      line (P, "const float m_ = %s;", m);
    }
  for (guint k = 0; k < n_red; k++)
    open_axis_loop (P, red[k], FALSE);
  if (s->op == NAPKIN_COMPUTE_CONTRACT)
    line (P, "acc_ += %s * %s;", a, b);
  else if (s->op == NAPKIN_COMPUTE_ONLINE_ACC)
    line (P, "acc_ += napkin_exp_masked (%s, m_) * %s;", a, b);
  else if (is_max)
    line (P, "acc_ = fmaxf (acc_, %s);", a);
  else
    line (P, "acc_ += %s;", a);
  for (guint k = 0; k < n_red; k++)
    close_axis_loop (P);
  store (P, s->dst, "acc_");
}

/* A row statistic (max, sum of exponentials, mean, rstd) over the lanes, reduced across the warp. */
static void
print_row_stat (Printer            *P,
                const NapkinIrStmt *s)
{
  guint x = s->axis;
  g_autofree char *a = load (P, s->src[0]);
  g_autofree char *eps = _napkin_cuda_float_literal (s->value);
  g_autofree char *stmt = NULL;

  line (P, "float acc_ = %s;", s->op == NAPKIN_COMPUTE_ROW_MAX ? "NAPKIN_NEG_INF" : "0.0f");
  if (s->src[1] >= 0)
    {
      g_autofree char *c = load (P, s->src[1]);

      line (P, "const float c_ = %s;", c);
    }
  else
    line (P, "const float c_ = 0.0f;");
  line (P, "(void) c_;");
  switch (s->op)
    {
    case NAPKIN_COMPUTE_ROW_MAX: stmt = g_strdup_printf ("acc_ = fmaxf (acc_, %s);", a); break;
    case NAPKIN_COMPUTE_ROW_SUMEXP: stmt = g_strdup_printf ("acc_ += napkin_exp_masked (%s, c_);", a); break;
    case NAPKIN_COMPUTE_ROW_MEAN: stmt = g_strdup_printf ("acc_ += %s;", a); break;
    default: stmt = g_strdup_printf ("{ const float d_ = %s - c_; acc_ += d_ * d_; }", a); break;
    }
  lane_reduce (P, x, "acc_", s->op == NAPKIN_COMPUTE_ROW_MAX, stmt);
  if (s->op == NAPKIN_COMPUTE_ROW_MEAN)
    line (P, "acc_ /= (float) %s;", P->ext[x]);
  else if (s->op == NAPKIN_COMPUTE_ROW_RSTD)
    line (P, "acc_ = rsqrtf (acc_ / (float) %s + %s);", P->ext[x], eps);
  line (P, "if (lane_ == 0)");
  P->indent++;
  store (P, s->dst, "acc_");
  P->indent--;
}

/* Online softmax statistics: the new running max, the rescale factor and the sum. */
static void
print_online_stats (Printer            *P,
                    const NapkinIrStmt *s)
{
  guint x = s->axis;
  g_autofree char *a = load (P, s->src[0]);
  g_autofree char *m = load (P, s->dst);
  g_autofree char *l = load (P, s->src[1]);
  g_autofree char *max_stmt = g_strdup_printf ("mx_ = fmaxf (mx_, %s);", a);
  g_autofree char *sum_stmt = g_strdup_printf ("l_ += napkin_exp_masked (%s, mn_);", a);

  line (P, "const float m_ = %s;", m);
  line (P, "float mx_ = NAPKIN_NEG_INF;");
  lane_reduce (P, x, "mx_", TRUE, max_stmt);
  line (P, "const float mn_ = fmaxf (m_, mx_);");
  line (P, "const float c_ = mn_ == NAPKIN_NEG_INF ? 1.0f : expf (m_ - mn_);");
  line (P, "float l_ = 0.0f;");
  lane_reduce (P, x, "l_", FALSE, sum_stmt);
  line (P, "if (lane_ == 0)");
  line (P, "{");
  P->indent++;
  {
    g_autofree char *v = g_strdup_printf ("%s * c_ + l_", l);

    store (P, s->src[1], v);
  }
  store (P, s->src[2], "c_");
  store (P, s->dst, "mn_");
  P->indent--;
  line (P, "}");
}

/* A mask: a tensor added or tested, else causal or window bounds on global coordinates. */
static void
print_mask (Printer            *P,
            const NapkinIrStmt *s,
            const NapkinNode   *node)
{
  guint x = s->axis;
  g_autofree char *a = load (P, s->src[0]);
  g_autofree char *v = NULL;

  if (node->mask == NAPKIN_MASK_TENSOR)
    {
      g_autofree char *m = load (P, s->src[1]);
      int src = napkin_diagram_input_source (P->d, s->node, 1);

      if (napkin_dtype_is_float (napkin_diagram_node_type (P->d, src)->dtype))
        v = g_strdup_printf ("%s + %s", a, m);
      else
        v = g_strdup_printf ("(%s != 0.0f ? %s : NAPKIN_NEG_INF)", m, a);
    }
  else
    {
      int rows = napkin_diagram_find_axis (P->d, node->rows);

      /* global coordinates: i<rows> the query, i<axis> the key (docs/codegen.md) */
      line (P, "const long d_ = i%d + %" G_GINT64_FORMAT "L;", rows, node->offset);
      if (node->mask == NAPKIN_MASK_CAUSAL)
        line (P, "const bool keep_ = i%u <= d_;", x);
      else
        {
          g_autofree char *lo = node->left < 0 ? g_strdup ("true")
                                : g_strdup_printf ("i%u >= d_ - %" G_GINT64_FORMAT "L", x, node->left);
          g_autofree char *hi = node->right < 0 ? g_strdup ("true")
                                : g_strdup_printf ("i%u <= d_ + %" G_GINT64_FORMAT "L", x, node->right);

          line (P, "const bool keep_ = (%s) && (%s);", lo, hi);
        }
      v = g_strdup_printf ("(keep_ ? %s : NAPKIN_NEG_INF)", a);
    }
  store (P, s->dst, v);
}

static void
print_compute (Printer            *P,
               const NapkinIrStmt *s)
{
  const NapkinNode *node = napkin_diagram_node (P->d, s->node);
  g_autofree char *id = napkin_codegen_escape_comment (node->id);

  line (P, "/* %s: %s */", id, napkin_compute_op_to_string (s->op));
  open_elements_full (P, s->dst, is_row_op (s->op));

  switch (s->op)
    {
    case NAPKIN_COMPUTE_MAP:
      {
        g_autofree char *a = load (P, s->src[0]);
        g_autofree char *b = s->src[1] >= 0 ? load (P, s->src[1]) : g_strdup ("0.0f");
        g_autofree char *v = map_expr (node, a, b);

        store (P, s->dst, v);
        break;
      }

    case NAPKIN_COMPUTE_REARRANGE:
        print_rearrange (P, s);
        break;

    case NAPKIN_COMPUTE_CONTRACT:
    case NAPKIN_COMPUTE_REDUCE:
    case NAPKIN_COMPUTE_ONLINE_ACC:
        print_reduce (P, s, node);
        break;

    case NAPKIN_COMPUTE_ROW_MAX:
    case NAPKIN_COMPUTE_ROW_SUMEXP:
    case NAPKIN_COMPUTE_ROW_MEAN:
    case NAPKIN_COMPUTE_ROW_RSTD:
        print_row_stat (P, s);
        break;

    case NAPKIN_COMPUTE_SOFTMAX:
      {
        g_autofree char *a = load (P, s->src[0]);
        g_autofree char *m = load (P, s->src[1]);
        g_autofree char *l = load (P, s->src[2]);
        /* a row with every key masked gives 0, as FlashAttention does */
        g_autofree char *v = g_strdup_printf ("(%s > 0.0f ? napkin_exp_masked (%s, %s) / %s : 0.0f)", l, a, m, l);

        store (P, s->dst, v);
        break;
      }

    case NAPKIN_COMPUTE_NORMALIZE:
      {
        g_autofree char *a = load (P, s->src[0]);
        g_autofree char *m = s->src[1] >= 0 ? load (P, s->src[1]) : g_strdup ("0.0f");
        g_autofree char *r = load (P, s->src[2]);
        g_autofree char *v = g_strdup_printf ("(%s - %s) * %s", a, m, r);

        store (P, s->dst, v);
        break;
      }

    case NAPKIN_COMPUTE_ONLINE_STATS:
        print_online_stats (P, s);
        break;

    case NAPKIN_COMPUTE_DIVIDE:
      {
        g_autofree char *a = load (P, s->dst);
        g_autofree char *b = load (P, s->src[0]);
        g_autofree char *v = g_strdup_printf ("(%s > 0.0f ? %s / %s : 0.0f)", b, a, b);

        store (P, s->dst, v);
        break;
      }

    case NAPKIN_COMPUTE_MASK:
        print_mask (P, s, node);
        break;

    case NAPKIN_COMPUTE_SCALE:
      {
        g_autofree char *a = load (P, s->dst);
        g_autofree char *f = _napkin_cuda_float_literal (s->value);
        g_autofree char *v = g_strdup_printf ("%s * %s", a, f);

        store (P, s->dst, v);
        break;
      }

    case NAPKIN_N_COMPUTES:
    default:
      g_assert_not_reached ();
    }
  close_elements (P);
}

static void
print_stmt (Printer            *P,
            const NapkinIrStmt *s)
{
  const NapkinIrBuffer *d = s->dst >= 0 ? buf (P, s->dst) : NULL;

  switch (s->kind)
    {
    case NAPKIN_STMT_LOOP:
      {
        guint v = P->var++;
        guint a = s->axis;
        char *saved_off = P->off[a], *saved_ext = P->ext[a];
        g_autofree char *name = napkin_codegen_escape_comment (napkin_diagram_axis (P->d, a)->name);

        line (P, "/* %s loop over %s in %s of %" G_GINT64_FORMAT " */",
              s->loop == NAPKIN_LOOP_STREAM ? "stream" : "parallel", name,
              s->loop == NAPKIN_LOOP_STREAM ? "chunks" : "groups", s->tile);
        line (P, "for (long c%u_ = 0; c%u_ < %s; c%u_ += %" G_GINT64_FORMAT "L)", v, v, saved_ext, v, s->tile);
        line (P, "{");
        P->indent++;
        line (P, "const long o%u_%u = %s + c%u_;", a, v, saved_off, v);
        line (P, "const long e%u_%u = NAPKIN_MIN (%" G_GINT64_FORMAT "L, %s - c%u_);", a, v, s->tile, saved_ext, v);
        P->off[a] = g_strdup_printf ("o%u_%u", a, v);
        P->ext[a] = g_strdup_printf ("e%u_%u", a, v);
        print_stmts (P, s->body);
        g_free (P->off[a]);
        g_free (P->ext[a]);
        P->off[a] = saved_off;
        P->ext[a] = saved_ext;
        P->indent--;
        line (P, "}");
        break;
      }

    case NAPKIN_STMT_DECL:
      {
        gint64 n = napkin_ir_buffer_elements (d);

        if (P->place[s->dst] == 1)
          line (P, "__shared__ float %s[%" G_GINT64_FORMAT "]; /* %s at %s */", d->name, n, d->what,
                napkin_level_to_string (d->level));
        else
          line (P, "float *const %s = ws_ + %" G_GINT64_FORMAT "L; /* %s at %s, in device memory: too large for "
                "shared memory here */", d->name, P->ws_off[s->dst], d->what, napkin_level_to_string (d->level));
        for (guint a = 0; a < d->n_axes; a++)
          line (P, "const long %s_%u = %s;", d->name, a, P->off[d->axes[a]]);
        break;
      }

    case NAPKIN_STMT_FILL:
      {
        g_autofree char *v = _napkin_cuda_float_literal (s->value);

        open_elements (P, s->dst);
        store (P, s->dst, v);
        close_elements (P);
        break;
      }

    case NAPKIN_STMT_COPY:
      {
        g_autofree char *v = load (P, s->src[0]);
        const NapkinIrBuffer *src = buf (P, s->src[0]);

        line (P, "/* %s: %s → %s */", src->level == NAPKIN_LEVEL_HBM ? "load" : d->level == NAPKIN_LEVEL_HBM ? "store" : "move",
              napkin_level_to_string (src->level), napkin_level_to_string (d->level));
        open_elements (P, s->dst);
        store (P, s->dst, v);
        close_elements (P);
        break;
      }

    case NAPKIN_STMT_COMPUTE:
      print_compute (P, s);
      break;

    default:
      g_assert_not_reached ();
    }
}

static void
print_stmts (Printer   *P,
             GPtrArray *stmts)
{
  for (guint i = 0; i < stmts->len && !P->failed; i++)
    print_stmt (P, g_ptr_array_index (stmts, i));
}

static void
place_tiles (Printer   *P,
             GPtrArray *stmts,
             gint64    *smem,
             gint64    *ws)
{
  for (guint i = 0; i < stmts->len; i++)
    {
      const NapkinIrStmt *s = g_ptr_array_index (stmts, i);

      if (s->kind == NAPKIN_STMT_LOOP)
        place_tiles (P, s->body, smem, ws);
      else if (s->kind == NAPKIN_STMT_DECL)
        {
          gint64 bytes = napkin_ir_buffer_elements (buf (P, s->dst)) * 4;

          if (*smem + bytes <= SMEM_BUDGET)
            {
              P->place[s->dst] = 1;
              *smem += bytes;
            }
          else
            {
              P->place[s->dst] = 2;
              P->ws_off[s->dst] = *ws;
              *ws += (bytes / 4 + 31) / 32 * 32;
            }
        }
    }
}

static void
collect_buffers (GPtrArray *stmts,
                 gboolean  *used)
{
  for (guint i = 0; i < stmts->len; i++)
    {
      const NapkinIrStmt *s = g_ptr_array_index (stmts, i);

      if (s->kind == NAPKIN_STMT_LOOP)
        collect_buffers (s->body, used);
      if (s->dst >= 0)
        used[s->dst] = TRUE;
      for (guint k = 0; k < G_N_ELEMENTS (s->src); k++)
        if (s->src[k] >= 0)
          used[s->src[k]] = TRUE;
    }
}

static gint64
plain_elements (Printer            *P,
                const NapkinIrStmt *s)
{
  return napkin_ir_buffer_elements (buf (P, s->dst));
}

static void
kernel_comment (Printer              *P,
                const NapkinIrKernel *k)
{
  if (k->region >= 0)
    {
      const NapkinRegion *r = napkin_diagram_region (P->d, k->region);
      g_autofree char *name = napkin_codegen_escape_comment (r->name);
      g_autoptr(GString) ops = g_string_new (NULL);

      for (guint i = 0; i < r->nodes->len; i++)
        {
          const NapkinNode *node = napkin_diagram_node (P->d, napkin_diagram_find_node (P->d, g_ptr_array_index (r->nodes, i)));
          g_autofree char *id = napkin_codegen_escape_comment (node->id);
          g_autofree char *label = napkin_codegen_escape_comment (node->label);

          g_string_append_printf (ops, "%s%s%s%s%s", i ? ", " : "", id, node->label ? " (" : "", label,
                                  node->label ? ")" : "");
        }
      line (P, "/* Region %s at %s: %s */", name, napkin_level_to_string (r->level), ops->str);
    }
  else
    {
      const NapkinNode *node = napkin_diagram_node (P->d, k->node);
      g_autofree char *id = napkin_codegen_escape_comment (node->id);
      g_autofree char *label = napkin_codegen_escape_comment (node->label);

      line (P, "/* Operation %s%s%s%s in device memory */", id, node->label ? " (" : "", label,
            node->label ? ")" : "");
    }
}

static void
print_kernel (Printer              *P,
              NapkinCudaModule     *module,
              const NapkinIrKernel *k,
              const int            *slot,
              const char           *prefix,
              guint                 index,
              char                 *note)
{
  NapkinCudaKernel *ck = g_new0 (NapkinCudaKernel, 1);
  guint n_buffers = P->prog->buffers->len;
  g_autofree gboolean *used = g_new0 (gboolean, n_buffers + 1);
  gint64 smem = 0, ws = 0;
  GPtrArray *body = k->body;
  gint64 grid = 1;

  ck->name = g_strdup_printf ("%sk%u", prefix, index);
  ck->skeleton = g_strdup ("generic");
  ck->note = note;
  ck->threads = NAPKIN_CUDA_THREADS;
  memset (P->place, 0, sizeof (int) * n_buffers);
  place_tiles (P, body, &smem, &ws);
  collect_buffers (body, used);

  for (guint a = 0; a < P->n_axes; a++)
    {
      g_free (P->off[a]);
      g_free (P->ext[a]);
      P->off[a] = g_strdup ("0L");
      P->ext[a] = g_strdup_printf ("%" G_GINT64_FORMAT "L", napkin_diagram_axis_size (P->d, a));
    }

  g_string_append_c (P->out, '\n');
  kernel_comment (P, k);
  line (P, "extern \"C\" __global__ void __launch_bounds__ (%d)", NAPKIN_CUDA_THREADS);
  line (P, "%s (const NapkinArgs args)", ck->name);
  line (P, "{");
  P->indent++;
  for (guint b = 0; b < n_buffers; b++)
    {
      const NapkinIrBuffer *bb = buf (P, b);

      if (!used[b] || bb->role == NAPKIN_BUF_TILE)
        continue;
      line (P, "%s *const %s = (%s *) args.p[%d]; /* %s */", _napkin_cuda_ctype (bb->dtype), bb->name,
            _napkin_cuda_ctype (bb->dtype), slot[b], bb->what);
    }

  P->block = k->region >= 0;
  if (P->block)
    {
      /* Leading grid loops become the block index. */
      GPtrArray *grid_loops = g_ptr_array_new ();

      while (body->len == 1 && ((NapkinIrStmt *) g_ptr_array_index (body, 0))->kind == NAPKIN_STMT_LOOP
             && ((NapkinIrStmt *) g_ptr_array_index (body, 0))->loop == NAPKIN_LOOP_GRID)
        {
          NapkinIrStmt *loop = g_ptr_array_index (body, 0);

          g_ptr_array_add (grid_loops, loop);
          body = loop->body;
        }
      line (P, "long blk_ = blockIdx.x;");
      for (int i = grid_loops->len - 1; i >= 0; i--)
        {
          const NapkinIrStmt *loop = g_ptr_array_index (grid_loops, i);
          gint64 size = napkin_diagram_axis_size (P->d, loop->axis);
          gint64 count = (size + loop->tile - 1) / loop->tile;
          g_autofree char *name = napkin_codegen_escape_comment (napkin_diagram_axis (P->d, loop->axis)->name);

          line (P, "/* parallel over %s: %" G_GINT64_FORMAT " groups of %" G_GINT64_FORMAT " */", name, count, loop->tile);
          line (P, "const long o%u_g = (blk_ %% %" G_GINT64_FORMAT "L) * %" G_GINT64_FORMAT "L;", loop->axis, count, loop->tile);
          line (P, "blk_ /= %" G_GINT64_FORMAT "L;", count);
          line (P, "const long e%u_g = NAPKIN_MIN (%" G_GINT64_FORMAT "L, %" G_GINT64_FORMAT "L - o%u_g);",
                loop->axis, loop->tile, size, loop->axis);
          g_free (P->off[loop->axis]);
          g_free (P->ext[loop->axis]);
          P->off[loop->axis] = g_strdup_printf ("o%u_g", loop->axis);
          P->ext[loop->axis] = g_strdup_printf ("e%u_g", loop->axis);
          grid *= count;
        }
      line (P, "(void) blk_;");
      g_ptr_array_unref (grid_loops);
      if (ws > 0)
        line (P, "float *const ws_ = (float *) ((char *) args.p[%d] + %" G_GINT64_FORMAT "L) + (long) blockIdx.x * %"
              G_GINT64_FORMAT "L;", module->workspace_slot, P->ws_base, ws);
    }
  else
    {
      const NapkinIrStmt *first = body->len > 0 ? g_ptr_array_index (body, 0) : NULL;
      gint64 n = first ? plain_elements (P, first) : 1;

      if (first && first->kind == NAPKIN_STMT_COMPUTE && is_row_op (first->op))
        n *= 32;

      grid = MIN ((n + NAPKIN_CUDA_THREADS - 1) / NAPKIN_CUDA_THREADS, 132 * 64);
      grid = MAX (grid, 1);
    }

  print_stmts (P, body);
  P->indent--;
  line (P, "}");

  ck->grid = grid;
  ck->smem_bytes = smem;
  ck->workspace_bytes = ws * 4 * grid;
  g_ptr_array_add (module->kernels, ck);
}

/* kernels/prelude.cuh with the fp8 codec in place of its #include: no #include, so
 * NVRTC needs no headers. */
char *
_napkin_cuda_prelude (void)
{
  GString *s = g_string_new (napkin_kernel_prelude);

  g_assert (strstr (s->str, "struct NapkinArgs { void *p[" G_STRINGIFY (NAPKIN_CUDA_MAX_ARGS) "]; };\n"));
  g_string_replace (s, "#include \"fp8-codec.h\"\n", napkin_kernel_fp8_codec, 1);
  return g_string_free (s, FALSE);
}

void
napkin_cuda_module_free (NapkinCudaModule *module)
{
  if (module == NULL)
    return;
  napkin_ir_program_free (module->program);
  g_free (module->source);
  g_free (module->target);
  g_clear_pointer (&module->kernels, g_ptr_array_unref);
  g_clear_pointer (&module->args, g_array_unref);
  g_free (module);
}

/* The generic kernels of plan kernel `pk`: the IR kernels of its region or operation. */
/* Names the module's kernels from `*from` on after the plan kernel they come from (of
 * `kind`). */
static void
label_owner (NapkinCudaModule *module,
             guint            *from,
             const char       *owner,
             NapkinPlanKind    kind)
{
  for (; *from < module->kernels->len; (*from)++)
    {
      NapkinCudaKernel *ck = g_ptr_array_index (module->kernels, *from);

      if (ck->owner == NULL && owner != NULL)
        {
          ck->owner = g_strdup (owner);
          ck->owner_kind = kind;
        }
    }
}

static void
print_generic (Printer                *P,
               NapkinCudaModule       *module,
               const NapkinPlanKernel *pk,
               const int              *slot,
               const char             *prefix,
               guint                  *index,
               const char             *why)
{
  for (guint k = 0; k < P->prog->kernels->len; k++)
    {
      const NapkinIrKernel *kernel = g_ptr_array_index (P->prog->kernels, k);

      if (pk != NULL && (pk->region >= 0 ? kernel->region != pk->region : kernel->region >= 0))
        continue;
      if (pk != NULL && pk->region < 0)
        {
          /* the operation's own kernel(s), and those of the maps the plan put with it */
          gboolean mine = FALSE;

          for (guint i = 0; i < pk->nodes->len && !mine; i++)
            mine = kernel->node == (int) g_array_index (pk->nodes, guint, i);
          if (!mine)
            continue;
        }
      print_kernel (P, module, kernel, slot, prefix, (*index)++, why ? g_strdup (why) : NULL);
      if (pk == NULL)
        {
          guint last = module->kernels->len - 1;

          label_owner (module, &last, kernel->region >= 0 ? napkin_diagram_region (P->d, kernel->region)->name
                                      : kernel->node >= 0 ? napkin_diagram_node (P->d, kernel->node)->id : NULL,
                       NAPKIN_PLAN_GENERIC);
        }
    }
}

/* Prints plan kernel `pk` with its tile primitives; FALSE with an error when a printer
 * cannot (the caller then prints the generic lowering and says why). */
static gboolean
print_planned (Printer                *P,
               NapkinCudaModule       *module,
               const NapkinPlan       *plan,
               const NapkinPlanKernel *pk,
               const int              *slot,
               const char             *prefix,
               guint                  *index,
               GError                **error)
{
  NapkinPrintCtx ctx = { plan, P->prog, module, slot, P->out };
  g_autofree char *name = g_strdup_printf ("%sk%u", prefix, *index);
  gboolean ok = FALSE;
  gsize mark = P->out->len;

  /* what the kernel computes, in the diagram's words (ids and labels only in comments) */
  if (pk->kind != NAPKIN_PLAN_REPACK && pk->kind != NAPKIN_PLAN_SPLIT_REDUCE)
    {
      g_string_append (P->out, "\n/* Operations:");
      for (guint i = 0; i < pk->nodes->len; i++)
        {
          const NapkinNode *node = napkin_diagram_node (P->d, g_array_index (pk->nodes, guint, i));
          g_autofree char *id = napkin_codegen_escape_comment (node->id);
          g_autofree char *label = napkin_codegen_escape_comment (node->label ? node->label : "");

          g_string_append_printf (P->out, " %s%s%s%s", id, *label ? " (" : "", label, *label ? ")" : "");
        }
      g_string_append (P->out, " */\n");
    }

  switch (pk->kind)
    {
    case NAPKIN_PLAN_GEMM:
      ok = pk->path == NAPKIN_PATH_WGMMA ? _napkin_print_gemm_wgmma (&ctx, pk, name, error)
           : pk->path == NAPKIN_PATH_SIMT ? _napkin_print_gemm_skinny (&ctx, pk, name, error)
                                          : _napkin_print_gemm_mma (&ctx, pk, name, error);
      break;
    case NAPKIN_PLAN_SPLIT_REDUCE:
      ok = _napkin_print_split_reduce (&ctx, pk, name, error);
      break;
    case NAPKIN_PLAN_REPACK:
      ok = _napkin_print_repack (&ctx, pk, name, error);
      break;
    case NAPKIN_PLAN_ROWS:
      ok = _napkin_print_rows (&ctx, pk, name, error);
      break;
    case NAPKIN_PLAN_ELEMENTWISE:
      ok = _napkin_print_elementwise (&ctx, pk, name, error);
      break;
    case NAPKIN_PLAN_ATTENTION:
    case NAPKIN_PLAN_ATTENTION_COMBINE:
    case NAPKIN_PLAN_ATTENTION_BACKWARD:
      ok = _napkin_print_attention (&ctx, pk, name, error);
      break;
    case NAPKIN_PLAN_GENERIC:
    case NAPKIN_N_PLAN_KINDS:
    default:
      break;
    }
  if (ok)
    {
      /* the attention backward's three launches: the plan kernel is its second (main) */
      const NapkinCudaKernel *ck = g_ptr_array_index (module->kernels, module->kernels->len
                                                      - (pk->kind == NAPKIN_PLAN_ATTENTION_BACKWARD ? 2 : 1));
      g_autofree char *kname = napkin_codegen_escape_comment (pk->name);

      /* the plan line (docs/plan.md, "The pipeline"): what was printed, as launched, so
       * that a test can hold the code against the plan kernel by kernel */
      g_string_append_printf (P->out, "/* plan: %s — %s on %s, grid %" G_GINT64_FORMAT " × %u threads, %"
                              G_GINT64_FORMAT " B shared memory */\n", kname, napkin_plan_kind_to_string (pk->kind),
                              napkin_path_to_string (pk->path), ck->grid, ck->threads, ck->smem_bytes);
      (*index)++;
    }
  else
    g_string_truncate (P->out, mark);
  return ok;
}

/* The architecture profile the plan is made for, from the compile target the flags
 * name: Hopper (sm_90a) or, by default, Ampere (sm_80). */
static NapkinArch *
arch_for_flags (NapkinCodegenFlags flags)
{
  return napkin_arch_registry_for_compute_capability (napkin_arch_registry_get_default (),
                                                      flags & NAPKIN_CODEGEN_SM90A ? "9.0" : "8.0");
}

NapkinCudaModule *
napkin_codegen_cuda (NapkinIrProgram     *program,
                     NapkinCodegenFlags   flags,
                     const char          *prefix,
                     GError             **error)
{
  g_autoptr(NapkinPlan) plan = NULL;

  g_return_val_if_fail (program != NULL, NULL);

  if (!(flags & NAPKIN_CODEGEN_GENERIC_ONLY) && !program->plain)
    {
      NapkinArch *arch = arch_for_flags (flags);

      if (arch != NULL)
        plan = napkin_plan_build (program->diagram, arch, NULL, NULL);
      /* the plan's kernels run on its own diagram (its regions, its folded casts) */
      if (plan != NULL && plan->diagram != program->diagram)
        {
          napkin_ir_program_free (program);
          return napkin_codegen_cuda_for_plan (plan, flags, prefix, error);
        }
    }
  return napkin_codegen_cuda_planned (program, plan, flags, prefix, error);
}

NapkinCudaModule *
napkin_codegen_cuda_for_plan (const NapkinPlan    *plan,
                              NapkinCodegenFlags   flags,
                              const char          *prefix,
                              GError             **error)
{
  NapkinIrProgram *program;

  g_return_val_if_fail (plan != NULL, NULL);

  program = napkin_ir_lower (plan->diagram, NAPKIN_LOWER_DEFAULT, error);
  if (program == NULL)
    return NULL;
  return napkin_codegen_cuda_planned (program, plan, flags | napkin_codegen_flags_for_arch (plan->target), prefix,
                                      error);
}

static void
free_printer (Printer *P)
{
  for (guint a = 0; a < P->n_axes; a++)
    {
      g_free (P->off[a]);
      g_free (P->ext[a]);
    }
  g_free (P->off);
  g_free (P->ext);
  g_free (P->place);
  g_free (P->ws_off);
  if (P->out != NULL)
    g_string_free (P->out, TRUE);
}

/* Every kernel of the plan, its helpers with it; a generic kernel (and an infeasible
 * one) through the generic lowering, each after its plan line (docs/plan.md, "The
 * pipeline"). FALSE when a printer refuses a feasible plan kernel: the plan and its
 * printer share their rules, so that is a bug, never a silent generic kernel. */
static gboolean
print_plan (Printer          *P,
            NapkinCudaModule *module,
            const NapkinPlan *plan,
            const int        *slot,
            const char       *prefix,
            GError          **error)
{
  guint index = 0, labeled = 0;
  gboolean skip_reduce = FALSE;
  const NapkinPlanKernel *prev = NULL;

  for (guint k = 0; k < plan->kernels->len; k++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (plan->kernels, k);
      g_autoptr(GError) why = NULL;
      g_autofree char *note = NULL;
      g_autofree char *kname = NULL;
      g_autofree char *reason = NULL;

      label_owner (module, &labeled, prev ? prev->name : NULL, prev ? prev->kind : NAPKIN_PLAN_GENERIC);
      prev = pk;
      if ((pk->kind == NAPKIN_PLAN_SPLIT_REDUCE || pk->kind == NAPKIN_PLAN_ATTENTION_COMBINE) && skip_reduce)
        continue;
      skip_reduce = FALSE;
      if (pk->path != NAPKIN_PATH_GENERIC && !pk->feasible)
        g_set_error (&why, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED, "infeasible: %s", pk->infeasible);
      else if (pk->path != NAPKIN_PATH_GENERIC && print_planned (P, module, plan, pk, slot, prefix, &index, &why))
        continue;
      else if (why != NULL)
        {
          g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                       "plan kernel %s (%s on %s): its printer refused it: %s", pk->name,
                       napkin_plan_kind_to_string (pk->kind), napkin_path_to_string (pk->path), why->message);
          return FALSE;
        }
      if (napkin_plan_kind_is_helper (pk->kind))
        continue;   /* a helper of a kernel that does not run on its path: not needed */
      skip_reduce = TRUE;
      note = why != NULL ? g_strdup_printf ("infeasible on %s: %s", napkin_path_to_string (pk->path), why->message)
                         : g_strdup_printf ("generic: %s", pk->reason);
      kname = napkin_codegen_escape_comment (pk->name);
      reason = napkin_codegen_escape_comment (note);
      g_string_append_printf (P->out, "\n/* plan: %s — %s on generic: %s */\n", kname,
                              napkin_plan_kind_to_string (pk->kind), reason);
      print_generic (P, module, pk, slot, prefix, &index, note);
    }
  label_owner (module, &labeled, prev ? prev->name : NULL, prev ? prev->kind : NAPKIN_PLAN_GENERIC);
  return TRUE;
}


NapkinCudaModule *
napkin_codegen_cuda_planned (NapkinIrProgram     *program,
                             const NapkinPlan    *plan,
                             NapkinCodegenFlags   flags,
                             const char          *prefix,
                             GError             **error)
{
  g_autoptr(NapkinCudaModule) module = g_new0 (NapkinCudaModule, 1);
  Printer P = { 0 };
  guint n_buffers;
  g_autofree int *slot = NULL;

  g_return_val_if_fail (program != NULL, NULL);

  module->program = program;
  if (plan != NULL && plan->diagram != program->diagram)
    {
      g_set_error_literal (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                           "the program was lowered from another diagram than the plan's (lower plan->diagram)");
      return NULL;
    }
  module->kernels = g_ptr_array_new_with_free_func (_napkin_cuda_kernel_free);
  module->args = g_array_new (FALSE, FALSE, sizeof (int));
  module->workspace_slot = -1;
  module->flags = flags;
  module->target = plan != NULL ? g_strdup (plan->target) : flags & NAPKIN_CODEGEN_SM90A ? g_strdup ("sm_90a") : NULL;
  if (prefix == NULL)
    prefix = "napkin_";

  n_buffers = program->buffers->len;
  slot = g_new0 (int, n_buffers + 1);
  for (guint b = 0; b < n_buffers; b++)
    {
      const NapkinIrBuffer *bb = napkin_ir_buffer (program, b);

      slot[b] = -1;
      if (bb->role == NAPKIN_BUF_TILE)
        continue;
      if (_napkin_cuda_ctype (bb->dtype) == NULL)
        {
          g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                       "%s: the CUDA backend does not store %s yet", bb->tensor >= 0
                         ? napkin_diagram_tensor (program->diagram, bb->tensor)->name : bb->name,
                       napkin_dtype_to_string (bb->dtype));
          return NULL;  /* the module frees the program: it was given to us */
        }
      if (module->args->len >= NAPKIN_CUDA_MAX_ARGS - 1)
        {
          g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                       "the program needs more than %d device-memory buffers", NAPKIN_CUDA_MAX_ARGS - 1);
          return NULL;
        }
      slot[b] = module->args->len;
      g_array_append_val (module->args, b);
    }
  module->workspace_slot = module->args->len;

  P.prog = program;
  P.d = program->diagram;
  {
    g_autofree char *prelude = _napkin_cuda_prelude ();

    P.out = g_string_new (prelude);
  }
  P.n_axes = napkin_diagram_n_axes (P.d);
  P.off = g_new0 (char *, P.n_axes + 1);
  P.ext = g_new0 (char *, P.n_axes + 1);
  P.place = g_new0 (int, n_buffers + 1);
  P.ws_off = g_new0 (gint64, n_buffers + 1);
  P.error = error;

  {
    g_autofree char *title = napkin_codegen_escape_comment (napkin_diagram_get_title (P.d));

    g_string_append_printf (P.out, "/* Generated by Napkin from “%s”%s. */\n", title,
                            program->plain ? " (plain: every operation through device memory)" : "");
  }

  P.ws_base = plan != NULL ? plan->scratch_bytes : 0;
  if (plan == NULL)
    {
      guint index = 0;

      print_generic (&P, module, NULL, slot, prefix, &index, NULL);
    }
  else if (!print_plan (&P, module, plan, slot, prefix, error))
    {
      free_printer (&P);
      return NULL;
    }
  for (guint k = 0; k < module->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (module->kernels, k);

      module->workspace_bytes = MAX (module->workspace_bytes, ck->workspace_bytes);
    }
  module->workspace_bytes += P.ws_base;
  if (module->workspace_bytes == 0)
    module->workspace_slot = -1;

  module->source = g_string_free (g_steal_pointer (&P.out), FALSE);
  free_printer (&P);
  return g_steal_pointer (&module);
}
