/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-codegen.h"

/* Pseudocode in the style of the paper: each level's loops, what is loaded and
 * stored between levels, and what lives where. Names are the diagram's own
 * identifiers (axes, tensors, operation ids), which the loader restricts to
 * [A-Za-z_][A-Za-z0-9_]*; labels, being free text, are not printed. */

typedef struct
{
  const NapkinIrProgram *prog;
  NapkinDiagram         *d;
  GString               *out;
  int                    indent;
  gint64                *extent;
} Pseudo;

static const char *
level_suffix (NapkinLevel level)
{
  switch (level)
    {
    case NAPKIN_LEVEL_L2: return "_l2";
    case NAPKIN_LEVEL_SMEM: return "_s";
    case NAPKIN_LEVEL_REGISTERS: return "_r";
    case NAPKIN_LEVEL_HBM:
    case NAPKIN_N_LEVELS:
    default: return "";
    }
}

static char *
short_name (Pseudo *S,
            int     id)
{
  const NapkinIrBuffer *b = napkin_ir_buffer (S->prog, id);
  const char *base;
  const char *what = "";

  if (b->tensor >= 0)
    return g_strdup (napkin_diagram_tensor (S->d, b->tensor)->name);
  if (b->node < 0)
    return g_strdup (b->name);

  {
    const NapkinNode *node = napkin_diagram_node (S->d, b->node);

    base = node->kind == NAPKIN_OP_INPUT ? node->tensor : node->id;
  }
  if (g_str_has_prefix (b->what, "running max") || g_str_has_prefix (b->what, "row max"))
    what = "_max";
  else if (g_str_has_prefix (b->what, "running sum") || g_str_has_prefix (b->what, "row sum"))
    what = "_sum";
  else if (g_str_has_prefix (b->what, "rescale"))
    what = "_scale";
  else if (g_str_has_prefix (b->what, "row mean"))
    what = "_mean";
  else if (g_str_has_prefix (b->what, "row 1/std"))
    what = "_rstd";
  return g_strdup_printf ("%s%s%s", base, what, level_suffix (b->level));
}

static char *
shaped (Pseudo *S,
        int     id)
{
  const NapkinIrBuffer *b = napkin_ir_buffer (S->prog, id);
  g_autofree char *name = short_name (S, id);
  GString *s = g_string_new (name);

  g_string_append_c (s, '[');
  for (guint a = 0; a < b->n_axes; a++)
    {
      const char *axis = napkin_diagram_axis (S->d, b->axes[a])->name;

      if (b->role == NAPKIN_BUF_TILE && b->extent[a] < napkin_diagram_axis_size (S->d, b->axes[a]))
        g_string_append_printf (s, "%s%s:%" G_GINT64_FORMAT, a ? ", " : "", axis, MIN (b->extent[a], S->extent[b->axes[a]]));
      else
        g_string_append_printf (s, "%s%s", a ? ", " : "", axis);
    }
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static void
out (Pseudo     *S,
     const char *format,
     ...) G_GNUC_PRINTF (2, 3);

static void
out (Pseudo     *S,
     const char *format,
     ...)
{
  va_list args;

  for (int i = 0; i < S->indent; i++)
    g_string_append (S->out, "  ");
  va_start (args, format);
  g_string_append_vprintf (S->out, format, args);
  va_end (args);
  g_string_append_c (S->out, '\n');
}

static char *
reduced_list (Pseudo             *S,
              const NapkinIrStmt *s,
              guint               n_srcs)
{
  const NapkinIrBuffer *d = napkin_ir_buffer (S->prog, s->dst);
  GString *r = g_string_new (NULL);

  for (guint k = 0; k < n_srcs; k++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (S->prog, s->src[k]);

      for (guint i = 0; i < b->n_axes; i++)
        {
          const char *name = napkin_diagram_axis (S->d, b->axes[i])->name;
          gboolean skip = FALSE;

          for (guint j = 0; j < d->n_axes; j++)
            skip |= d->axes[j] == b->axes[i];
          if (!skip && strstr (r->str, name) == NULL)
            g_string_append_printf (r, "%s%s", r->len ? "," : "", name);
        }
    }
  return g_string_free (r, FALSE);
}

static void print_list (Pseudo *S, GPtrArray *stmts);

/* What a mask keeps, in the diagram's axis names: "k ≤ q + 3". */
static char *
mask_condition (NapkinDiagram    *d,
                              const NapkinNode *node)
{
  g_autofree char *diag = NULL;

  if (node->mask == NAPKIN_MASK_TENSOR)
    {
      int src = napkin_diagram_input_source (d, napkin_diagram_find_node (d, node->id), 1);
      gboolean additive = src < 0 || napkin_dtype_is_float (napkin_diagram_node_type (d, src)->dtype);

      return g_strdup (additive ? "added to the scores" : "keep where nonzero, else −∞");
    }
  if (node->offset > 0)
    diag = g_strdup_printf ("%s + %" G_GINT64_FORMAT, node->rows, node->offset);
  else if (node->offset < 0)
    diag = g_strdup_printf ("%s − %" G_GINT64_FORMAT, node->rows, -node->offset);
  else
    diag = g_strdup (node->rows);
  if (node->mask == NAPKIN_MASK_CAUSAL)
    return g_strdup_printf ("%s ≤ %s", node->axis, diag);
  if (node->left >= 0 && node->right >= 0)
    return g_strdup_printf ("%s − %" G_GINT64_FORMAT " ≤ %s ≤ %s + %" G_GINT64_FORMAT,
                            diag, node->left, node->axis, diag, node->right);
  if (node->left >= 0)
    return g_strdup_printf ("%s ≥ %s − %" G_GINT64_FORMAT, node->axis, diag, node->left);
  if (node->right >= 0)
    return g_strdup_printf ("%s ≤ %s + %" G_GINT64_FORMAT, node->axis, diag, node->right);
  return g_strdup ("everything");
}

static void
print_compute (Pseudo             *S,
               const NapkinIrStmt *s)
{
  const NapkinNode *node = napkin_diagram_node (S->d, s->node);
  g_autofree char *dst = shaped (S, s->dst);
  g_autofree char *a = s->src[0] >= 0 ? short_name (S, s->src[0]) : NULL;
  g_autofree char *b = s->src[1] >= 0 ? short_name (S, s->src[1]) : NULL;
  g_autofree char *c = s->src[2] >= 0 ? short_name (S, s->src[2]) : NULL;
  g_autofree char *d3 = s->src[3] >= 0 ? short_name (S, s->src[3]) : NULL;
  g_autofree char *dn = short_name (S, s->dst);
  const char *x = napkin_diagram_axis (S->d, s->axis)->name;

  switch (s->op)
    {
    case NAPKIN_COMPUTE_MAP:
      /* a factor that follows the axes shows its expression with its value */
      if (node->fn == NAPKIN_FN_SCALE && node->alpha_expr != NULL)
        out (S, "%s ← (%s = %g)·%s", dst, node->alpha_expr, node->alpha, a);
      else if (node->fn == NAPKIN_FN_SCALE)
        out (S, "%s ← %g·%s", dst, node->alpha, a);
      else if (node->fn == NAPKIN_FN_SHIFT)
        out (S, "%s ← %s + %g", dst, a, node->alpha);
      else if (b != NULL)
        out (S, "%s ← %s(%s, %s)", dst, napkin_fn_info (node->fn)->name, a, b);
      else
        out (S, "%s ← %s(%s)", dst, napkin_fn_info (node->fn)->name, a);
      break;
    case NAPKIN_COMPUTE_REARRANGE:
      out (S, "%s ← rearrange(%s)", dst, a);
      break;
    case NAPKIN_COMPUTE_CONTRACT:
      {
        g_autofree char *r = reduced_list (S, s, 2);

        out (S, "%s %s Σ_%s %s·%s          (tensor cores)", dst, s->accumulate ? "+=" : "←", r, a, b);
        break;
      }
    case NAPKIN_COMPUTE_REDUCE:
      out (S, "%s %s %s_%s %s", dst, s->accumulate ? (node->reduce == NAPKIN_REDUCE_MAX ? "max=" : "+=") : "←",
           node->reduce == NAPKIN_REDUCE_MAX ? "max" : "Σ", x, a);
      break;
    case NAPKIN_COMPUTE_ROW_MAX:
      out (S, "%s ← max_%s %s", dst, x, a);
      break;
    case NAPKIN_COMPUTE_ROW_SUMEXP:
      out (S, "%s ← Σ_%s exp(%s − %s)", dst, x, a, b);
      break;
    case NAPKIN_COMPUTE_SOFTMAX:
      out (S, "%s ← exp(%s − %s) / %s", dst, a, b, c);
      break;
    case NAPKIN_COMPUTE_ROW_MEAN:
      out (S, "%s ← mean_%s %s", dst, x, a);
      break;
    case NAPKIN_COMPUTE_ROW_RSTD:
      if (b != NULL)
        out (S, "%s ← 1/√(mean_%s (%s − %s)² + %g)", dst, x, a, b, s->value);
      else
        out (S, "%s ← 1/√(mean_%s %s² + %g)", dst, x, a, s->value);
      break;
    case NAPKIN_COMPUTE_NORMALIZE:
      if (b != NULL)
        out (S, "%s ← (%s − %s)·%s", dst, a, b, c);
      else
        out (S, "%s ← %s·%s", dst, a, c);
      break;
    case NAPKIN_COMPUTE_ONLINE_STATS:
      out (S, "m' ← max(%s, max_%s %s);  %s ← exp(%s − m');  %s ← %s·%s + Σ_%s exp(%s − m');  %s ← m'",
           dn, x, a, c, dn, b, c, b, x, a, dn);
      break;
    case NAPKIN_COMPUTE_ONLINE_ACC:
      {
        g_autofree char *r = reduced_list (S, s, 2);

        out (S, "%s ← %s·%s + Σ_%s exp(%s − %s)·%s          (online softmax, tensor cores)", dst, d3, dn, r, a, c, b);
        break;
      }
    case NAPKIN_COMPUTE_DIVIDE:
      out (S, "%s ← %s / %s", dst, dn, a);
      break;
    case NAPKIN_COMPUTE_SCALE:
      out (S, "%s ← %s · %g", dst, dn, s->value);
      break;
    case NAPKIN_COMPUTE_MASK:
      {
        g_autofree char *keep = mask_condition (S->d, node);

        if (node->mask == NAPKIN_MASK_TENSOR)
          out (S, "%s ← mask_tensor(%s, %s)          (%s)", dst, a, b, keep);
        else
          out (S, "%s ← mask_%s(%s)          (keep %s, else −∞)", dst, napkin_mask_to_string (node->mask), a, keep);
        break;
      }
    case NAPKIN_N_COMPUTES:
    default:
      g_assert_not_reached ();
    }
}

static void
print_stmt (Pseudo             *S,
            const NapkinIrStmt *s)
{
  switch (s->kind)
    {
    case NAPKIN_STMT_LOOP:
      {
        const char *axis = napkin_diagram_axis (S->d, s->axis)->name;
        gint64 outer = S->extent[s->axis];
        gint64 count = (outer + s->tile - 1) / s->tile;

        if (s->loop == NAPKIN_LOOP_STREAM)
          out (S, "for each chunk of %" G_GINT64_FORMAT " along %s (%" G_GINT64_FORMAT " chunks, in sequence):",
               s->tile, axis, count);
        else
          out (S, "in parallel over %" G_GINT64_FORMAT " groups of %" G_GINT64_FORMAT " along %s (%s):",
               count, s->tile, axis, s->loop == NAPKIN_LOOP_GRID ? "one thread block each"
                                                                 : s->level == NAPKIN_LEVEL_REGISTERS ? "one warp or warpgroup each" : "sub-tiles");
        S->extent[s->axis] = MIN (s->tile, outer);
        S->indent++;
        print_list (S, s->body);
        S->indent--;
        S->extent[s->axis] = outer;
        break;
      }

    case NAPKIN_STMT_DECL:
      break;

    case NAPKIN_STMT_FILL:
      {
        g_autofree char *dst = shaped (S, s->dst);
        const NapkinIrBuffer *b = napkin_ir_buffer (S->prog, s->dst);

        out (S, "%s ← %s          (lives in %s)", dst, s->value < 0 && !isfinite (s->value) ? "−∞" : s->value == 0 ? "0" : "?",
             napkin_level_title (b->level));
        break;
      }

    case NAPKIN_STMT_COPY:
      {
        const NapkinIrBuffer *d = napkin_ir_buffer (S->prog, s->dst);
        const NapkinIrBuffer *b = napkin_ir_buffer (S->prog, s->src[0]);
        g_autofree char *dst = shaped (S, s->dst);
        g_autofree char *src = short_name (S, s->src[0]);

        out (S, "%s ← %s          (%s %s → %s)", dst, src,
             b->level == NAPKIN_LEVEL_HBM ? "load" : d->level == NAPKIN_LEVEL_HBM ? "store" : "move",
             napkin_level_to_string (b->level), napkin_level_to_string (d->level));
        break;
      }

    case NAPKIN_STMT_COMPUTE:
      print_compute (S, s);
      break;

    default:
      g_assert_not_reached ();
    }
}

static void
print_list (Pseudo    *S,
            GPtrArray *stmts)
{
  for (guint i = 0; i < stmts->len; i++)
    print_stmt (S, g_ptr_array_index (stmts, i));
}

char *
napkin_codegen_pseudocode (const NapkinIrProgram *program)
{
  Pseudo S = { 0 };
  guint n_axes;

  g_return_val_if_fail (program != NULL, NULL);

  S.prog = program;
  S.d = program->diagram;
  S.out = g_string_new (NULL);
  n_axes = napkin_diagram_n_axes (S.d);
  S.extent = g_new0 (gint64, n_axes + 1);

  g_string_append (S.out, "axes:");
  for (guint a = 0; a < n_axes; a++)
    g_string_append_printf (S.out, " %s=%" G_GINT64_FORMAT, napkin_diagram_axis (S.d, a)->name,
                            napkin_diagram_axis_size (S.d, a));
  g_string_append_printf (S.out, "\ndevice-memory traffic: %" G_GINT64_FORMAT " bytes\n",
                          napkin_ir_hbm_bytes (program));

  for (guint k = 0; k < program->kernels->len; k++)
    {
      const NapkinIrKernel *kernel = g_ptr_array_index (program->kernels, k);

      for (guint a = 0; a < n_axes; a++)
        S.extent[a] = napkin_diagram_axis_size (S.d, a);
      g_string_append_c (S.out, '\n');
      if (kernel->region >= 0)
        {
          const NapkinRegion *r = napkin_diagram_region (S.d, kernel->region);
          g_autoptr(GString) ops = g_string_new (NULL);

          for (guint i = 0; i < r->nodes->len; i++)
            g_string_append_printf (ops, "%s%s", i ? ", " : "", (const char *) g_ptr_array_index (r->nodes, i));
          out (&S, "kernel %s: region %s in %s holds %s", kernel->name, r->name,
               napkin_level_title (r->level), ops->str);
        }
      else
        out (&S, "kernel %s: %s, in device memory", kernel->name, napkin_diagram_node (S.d, kernel->node)->id);
      S.indent = 1;
      print_list (&S, kernel->body);
      S.indent = 0;
    }

  g_free (S.extent);
  return g_string_free (S.out, FALSE);
}
