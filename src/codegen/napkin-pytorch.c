/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen.h"
#include "napkin-expr.h"

/* A diagram printed as plain PyTorch (docs/import.md, "Back to code"): one line per
 * operation, contractions as torch.einsum, the rest as torch functions, in the
 * diagram's topological order. It is the reference for the diagram: what the
 * diagram means, without tiles or regions. Each value's dimensions are the axes of
 * its napkin type, in that order; _align permutes and broadcasts between them. */

static const char *const python_reserved[] = {
  "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
  "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
  "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "torch", "F", "math", "forward",
  "INPUTS", "OUTPUTS", "AXES", "example_inputs", "_align", "_band", "_rotate_half_matrix", "_device",
};

typedef struct
{
  NapkinDiagram *d;
  GString       *out;
  char           letter[NAPKIN_MAX_AXES];
  GHashTable    *used;          /* Python names taken */
  char         **var;           /* per node: the Python variable of its value */
  GHashTable    *arg;           /* tensor name → its Python name, for the tensors input nodes read */
  gboolean       masked;        /* the diagram masks: softmaxes through _softmax */
} Printer;

static const char *
torch_dtype (NapkinDtype dtype)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP32:
    case NAPKIN_DTYPE_TF32:     return "torch.float32";
    case NAPKIN_DTYPE_FP16:     return "torch.float16";
    case NAPKIN_DTYPE_BF16:     return "torch.bfloat16";
    case NAPKIN_DTYPE_FP8_E4M3: return "torch.float8_e4m3fn";
    case NAPKIN_DTYPE_FP8_E5M2: return "torch.float8_e5m2";
    case NAPKIN_DTYPE_INT8:     return "torch.int8";
    case NAPKIN_N_DTYPES:
    default:                    return "torch.float32";
    }
}

static char *
axes_entry (const char *name,
            gpointer    user_data)
{
  return g_strdup_printf ("AXES[\"%s\"]", name);
}

/* An expression of axis sizes in Python, over the module's AXES: "(1 / math.sqrt(AXES["d"]))". */
static char *
python_expr (const char *text)
{
  g_autoptr(NapkinExpr) expr = napkin_expr_parse (text, NULL);
  g_autofree char *body = expr ? napkin_expr_print (expr, NAPKIN_EXPR_PYTHON, axes_entry, NULL) : NULL;

  return body ? g_strdup_printf ("(%s)", body) : NULL;
}

static char *
take_name (Printer    *p,
           const char *stem)
{
  char *name = g_strdup (stem);

  for (guint i = 2; g_hash_table_contains (p->used, name); i++)
    {
      g_free (name);
      name = g_strdup_printf ("%s_%u", stem, i);
    }
  g_hash_table_add (p->used, g_strdup (name));
  return name;
}

/* One letter per axis for einsum strings: the axis's own first letter while free. */
static gboolean
assign_letters (Printer  *p,
                GError  **error)
{
  static const char pool[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  gboolean taken[128] = { FALSE };
  guint n = napkin_diagram_n_axes (p->d);

  if (n > strlen (pool))
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "%u axes: einsum strings hold at most %zu", n, strlen (pool));
      return FALSE;
    }
  for (guint pass = 0; pass < 2; pass++)
    for (guint i = 0; i < n; i++)
      {
        char first = napkin_diagram_axis (p->d, i)->name[0];

        if (pass == 0)
          {
            p->letter[i] = 0;
            if (g_ascii_isalpha (first) && !taken[(int) first])
              {
                p->letter[i] = first;
                taken[(int) first] = TRUE;
              }
          }
        else if (p->letter[i] == 0)
          for (const char *c = pool; *c; c++)
            if (!taken[(int) *c])
              {
                p->letter[i] = *c;
                taken[(int) *c] = TRUE;
                break;
              }
      }
  return TRUE;
}

static char *
letters (Printer                *p,
         const NapkinTensorType *type)
{
  char *s = g_new0 (char, type->n_axes + 1);

  for (guint i = 0; i < type->n_axes; i++)
    s[i] = p->letter[type->axes[i]];
  return s;
}

static char *
names_letters (Printer *p,
               char   **axes)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; axes && axes[i]; i++)
    g_string_append_c (s, p->letter[napkin_diagram_find_axis (p->d, axes[i])]);
  return g_string_free (s, FALSE);
}

static int
dim_of (const char *have,
        char        letter)
{
  const char *at = strchr (have, letter);

  return at ? (int) (at - have) : -1;
}

/* expr (dims `have`) arranged as `want`. */
static char *
aligned (const char *expr,
         const char *have,
         const char *want)
{
  if (g_str_equal (have, want))
    return g_strdup (expr);
  return g_strdup_printf ("_align(%s, \"%s\", \"%s\")", expr, have, want);
}

static char *
number (double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  /* the shortest text that reads back as the same double */
  for (int digits = 6; digits <= 17; digits++)
    {
      char format[8];

      g_snprintf (format, sizeof format, "%%.%dg", digits);
      g_ascii_formatd (buf, sizeof buf, format, v);
      if (g_ascii_strtod (buf, NULL) == v)
        break;
    }
  if (strpbrk (buf, ".eEn") == NULL)
    return g_strconcat (buf, ".0", NULL);
  return g_strdup (buf);
}

/* An output: its value in the tensor's axis order (cast to the tensor's type) joins
 * the returned tuple `ret`. */
static void
print_output (Printer    *p,
              guint       index,
              const char *a,
              const char *ha,
              GString    *ret)
{
  const NapkinNode *node = napkin_diagram_node (p->d, index);
  int t = napkin_diagram_find_tensor (p->d, node->tensor);
  const NapkinTensor *tensor = napkin_diagram_tensor (p->d, t);
  g_autofree char *tl = names_letters (p, tensor->axes);
  g_autofree char *e = aligned (a, ha, tl);

  if (ret->len > 0)
    g_string_append (ret, ", ");
  if (napkin_diagram_node_type (p->d, napkin_diagram_input_source (p->d, index, 0))->dtype != tensor->dtype)
    g_string_append_printf (ret, "%s.to(%s)", e, torch_dtype (tensor->dtype));
  else
    g_string_append_printf (ret, "%s.contiguous()", e);
}

/* A map: a binary operator on both operands aligned to `want`, else a torch function
 * of `a` in its own dims (`nat`). */
static char *
map_expr (const NapkinNode *node,
          const char       *a,
          const char       *b,
          const char       *ha,
          const char       *hb,
          const char       *want,
          char            **nat)
{
  const char *name = napkin_fn_info (node->fn)->name;
  char *expr = NULL;

  if (napkin_fn_info (node->fn)->arity == 2)
    {
      g_autofree char *x = aligned (a, ha, want);
      g_autofree char *y = aligned (b, hb, want);
      static const char *const ops[] = { "+", "-", "*", "/" };

      if (node->fn <= NAPKIN_FN_DIV)
        expr = g_strdup_printf ("%s %s %s", x, ops[node->fn], y);
      else
        expr = g_strdup_printf ("torch.%s(%s, %s)", node->fn == NAPKIN_FN_MAX ? "maximum" : "minimum", x, y);
      return expr;
    }
  *nat = g_strdup (ha);
  switch (node->fn)
    {
    case NAPKIN_FN_GELU:  expr = g_strdup_printf ("F.gelu(%s)", a); break;
    case NAPKIN_FN_GELU_TANH: expr = g_strdup_printf ("F.gelu(%s, approximate='tanh')", a); break;
    case NAPKIN_FN_SHIFT:
      {
        g_autofree char *alpha = number (node->alpha);

        expr = g_strdup_printf ("%s + %s", a, alpha);
        break;
      }
    case NAPKIN_FN_SILU:  expr = g_strdup_printf ("F.silu(%s)", a); break;
    case NAPKIN_FN_ELU:   expr = g_strdup_printf ("F.elu(%s)", a); break;
    case NAPKIN_FN_RELU:  expr = g_strdup_printf ("F.relu(%s)", a); break;
    case NAPKIN_FN_NEG:   expr = g_strdup_printf ("-%s", a); break;
    case NAPKIN_FN_STEP:  expr = g_strdup_printf ("(%s > 0).to(%s.dtype)", a, a); break;
    case NAPKIN_FN_SQUARE: expr = g_strdup_printf ("%s * %s", a, a); break;
    case NAPKIN_FN_SCALE:
      {
        g_autofree char *alpha = node->alpha_expr ? python_expr (node->alpha_expr) : NULL;

        /* a factor of the axes' sizes stays one, over AXES (docs/file-format.md) */
        if (alpha == NULL)
          alpha = number (node->alpha);
        expr = g_strdup_printf ("%s * %s", a, alpha);
        break;
      }
    case NAPKIN_FN_CAST:
      expr = g_strdup_printf ("%s.to(%s)", a, torch_dtype (node->dtype));
      break;
    default:
      expr = g_strdup_printf ("torch.%s(%s)", name, a);
      break;
    }
  return expr;
}

/* A normalisation: F.rms_norm or F.layer_norm over the last dim, else written out. */
static char *
normalize_expr (Printer          *p,
                const NapkinNode *node,
                const char       *a,
                const char       *ha,
                char            **nat)
{
  int axis = napkin_diagram_find_axis (p->d, node->axis);
  int dim = dim_of (ha, p->letter[axis]);
  gboolean last = dim == (int) strlen (ha) - 1;
  g_autofree char *eps = number (node->eps);
  gint64 n = napkin_diagram_axis_size (p->d, axis);
  char *expr;

  *nat = g_strdup (ha);
  if (node->norm == NAPKIN_NORM_RMSNORM)
    expr = last ? g_strdup_printf ("F.rms_norm(%s, (%" G_GINT64_FORMAT ",), eps=%s)", a, n, eps)
                : g_strdup_printf ("%s * torch.rsqrt(%s.pow(2).mean(dim=%d, keepdim=True) + %s)", a, a, dim, eps);
  else
    expr = last ? g_strdup_printf ("F.layer_norm(%s, (%" G_GINT64_FORMAT ",), eps=%s)", a, n, eps)
                : g_strdup_printf ("(%s - %s.mean(dim=%d, keepdim=True)) * torch.rsqrt(%s.var(dim=%d, "
                                   "unbiased=False, keepdim=True) + %s)", a, a, dim, a, dim, eps);
  return expr;
}

/* A mask: a tensor mask added (or, int8, filled where 0), else the causal or window
 * band of _band. */
static char *
mask_expr (Printer          *p,
           const NapkinNode *node,
           guint             index,
           const char       *a,
           const char       *b,
           const char       *ha,
           const char       *hb,
           char            **nat)
{
  char *expr;

  *nat = g_strdup (ha);
  if (node->mask == NAPKIN_MASK_TENSOR)
    {
      g_autofree char *m = aligned (b, hb, ha);
      int t = napkin_diagram_input_source (p->d, index, 1);

      if (napkin_diagram_node_type (p->d, t)->dtype == NAPKIN_DTYPE_INT8)
        expr = g_strdup_printf ("%s.masked_fill(%s == 0, float(\"-inf\"))", a, m);
      else
        expr = g_strdup_printf ("%s + %s", a, m);
    }
  else
    {
      int rows = napkin_diagram_find_axis (p->d, node->rows), cols = napkin_diagram_find_axis (p->d, node->axis);
      char rc[3] = { p->letter[rows], p->letter[cols], 0 };
      g_autofree char *band = g_strdup_printf ("_band(%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                                               G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                                               ", %s.device)",
                                               napkin_diagram_axis_size (p->d, rows),
                                               napkin_diagram_axis_size (p->d, cols), node->offset,
                                               node->mask == NAPKIN_MASK_CAUSAL ? -1 : node->left,
                                               node->mask == NAPKIN_MASK_CAUSAL ? 0 : node->right, a);
      g_autofree char *keep = aligned (band, rc, ha);

      expr = g_strdup_printf ("%s.masked_fill(~%s, float(\"-inf\"))", a, keep);
    }
  return expr;
}

/* A rearrange: a permutation through _align, else a reshape. */
static char *
rearrange_expr (Printer          *p,
                const NapkinNode *node,
                const char       *a,
                const char       *ha,
                char            **nat)
{
  g_autofree char *outl = names_letters (p, node->out);
  gboolean same = strlen (outl) == strlen (ha);
  char *expr;

  for (const char *c = outl; *c && same; c++)
    same = strchr (ha, *c) != NULL;
  if (same)
    expr = aligned (a, ha, outl);
  else
    {
      GString *sizes = g_string_new (NULL);

      /* merges and splits run over the input's order, row-major (docs/file-format.md) */
      for (guint i = 0; node->out[i]; i++)
        g_string_append_printf (sizes, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                                napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, node->out[i])));
      expr = g_strdup_printf ("%s.reshape(%s)", a, sizes->str);
      g_string_free (sizes, TRUE);
    }
  *nat = g_steal_pointer (&outl);
  return expr;
}

static gboolean
print_node (Printer  *p,
            guint     index,
            GString  *ret,
            GError  **error)
{
  const NapkinNode *node = napkin_diagram_node (p->d, index);
  const NapkinTensorType *type = napkin_diagram_node_type (p->d, index);
  g_autofree char *want = letters (p, type);
  g_autofree char *expr = NULL;
  g_autofree char *nat = NULL;   /* the letters of expr's dims, when not `want` */
  const char *a = NULL, *b = NULL;
  g_autofree char *ha = NULL, *hb = NULL;
  int src;

  if (node->kind == NAPKIN_OP_INPUT)
    return TRUE;
  if ((src = napkin_diagram_input_source (p->d, index, 0)) >= 0)
    {
      a = p->var[src];
      ha = letters (p, napkin_diagram_node_type (p->d, src));
    }
  if (napkin_op_n_inputs (node) > 1 && (src = napkin_diagram_input_source (p->d, index, 1)) >= 0)
    {
      b = p->var[src];
      hb = letters (p, napkin_diagram_node_type (p->d, src));
    }

  switch (node->kind)
    {
    case NAPKIN_OP_OUTPUT:
      print_output (p, index, a, ha, ret);
      return TRUE;
    case NAPKIN_OP_CONTRACT:
      expr = g_strdup_printf ("torch.einsum(\"%s,%s->%s\", %s, %s)", ha, hb, want, a, b);
      break;
    case NAPKIN_OP_MAP:
      expr = map_expr (node, a, b, ha, hb, want, &nat);
      break;
    case NAPKIN_OP_REDUCE:
      {
        static const char *const fns[] = { "sum", "amax", "mean" };
        int dim = dim_of (ha, p->letter[napkin_diagram_find_axis (p->d, node->axis)]);
        GString *rest = g_string_new (ha);

        g_string_erase (rest, dim, 1);
        nat = g_string_free (rest, FALSE);
        expr = g_strdup_printf ("%s.%s(dim=%d)", a, fns[node->reduce], dim);
        break;
      }
    case NAPKIN_OP_SOFTMAX:
      nat = g_strdup (ha);
      expr = g_strdup_printf (p->masked ? "_softmax(%s, dim=%d)" : "torch.softmax(%s, dim=%d)", a,
                              dim_of (ha, p->letter[napkin_diagram_find_axis (p->d, node->axis)]));
      break;
    case NAPKIN_OP_NORMALIZE:
      expr = normalize_expr (p, node, a, ha, &nat);
      break;
    case NAPKIN_OP_MASK:
      expr = mask_expr (p, node, index, a, b, ha, hb, &nat);
      break;
    case NAPKIN_OP_REARRANGE:
      expr = rearrange_expr (p, node, a, ha, &nat);
      break;
    case NAPKIN_OP_INPUT:
    case NAPKIN_N_OPS:
    default:
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED, "operation “%s”: unknown kind",
                   node->id);
      return FALSE;
    }

  if (nat != NULL && !g_str_equal (nat, want))
    {
      char *e = aligned (expr, nat, want);

      g_free (expr);
      expr = e;
    }
  if (node->has_dtype && node->kind != NAPKIN_OP_MAP)
    {
      char *e = g_strdup_printf ("(%s).to(%s)", expr, torch_dtype (node->dtype));

      g_free (expr);
      expr = e;
    }
  g_string_append_printf (p->out, "    %s = %s", p->var[index], expr);
  if (node->label != NULL && *node->label && !g_str_equal (node->label, node->id))
    {
      /* labels are free text: one line, no control characters */
      g_autofree char *label = g_strdup (node->label);

      for (char *c = label; *c; c++)
        if ((unsigned char) *c < 0x20 || *c == 0x7f)
          *c = ' ';
      g_string_append_printf (p->out, "  # %s", label);
    }
  g_string_append_c (p->out, '\n');
  return TRUE;
}

/* Inputs: arguments, in the tensors' order (`args`), each reshaped to its axes
 * (`shapes`); constants are made here (`consts`). Names every input node's value. */
static gboolean
bind_inputs (Printer  *p,
             GString  *args,
             GString  *consts,
             GString  *shapes,
             GError  **error)
{
  guint n = napkin_diagram_n_nodes (p->d);
  g_autoptr(GHashTable) read = g_hash_table_new (g_str_hash, g_str_equal);

  /* the tensors some input node reads, found once */
  for (guint i = 0; i < n; i++)
    if (napkin_diagram_node (p->d, i)->kind == NAPKIN_OP_INPUT && napkin_diagram_node (p->d, i)->tensor != NULL)
      g_hash_table_add (read, napkin_diagram_node (p->d, i)->tensor);
  for (guint t = 0; t < napkin_diagram_n_tensors (p->d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (p->d, t);
      const char *name;

      if (!g_hash_table_contains (read, tensor->name) || g_hash_table_contains (p->arg, tensor->name))
        continue;
      /* one Python name for the argument, INPUTS and example_inputs alike */
      name = take_name (p, tensor->name);
      g_hash_table_insert (p->arg, tensor->name, (char *) name);
      if (g_strcmp0 (napkin_tensor_get_constant (tensor), "rotate_half") == 0 && g_strv_length (tensor->axes) == 2)
        g_string_append_printf (consts, "    %s = _rotate_half_matrix(%" G_GINT64_FORMAT ", %s, _device)\n", name,
                                napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, tensor->axes[0])),
                                torch_dtype (tensor->dtype));
      else if (napkin_tensor_get_constant (tensor) != NULL)
        {
          g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                       "tensor “%s”: unknown constant “%s”", tensor->name, napkin_tensor_get_constant (tensor));
          return FALSE;
        }
      else
        {
          g_string_append_printf (args, "%s%s", args->len ? ", " : "", name);
          /* callers pass tensors as their modules hold them (a projection's weight is
           * [out, in]); the diagram's axes split those dimensions row-major, in the
           * order the importer names them (docs/import.md, "Back to code") */
          if (g_strv_length (tensor->axes) > 0)
            {
              g_string_append_printf (shapes, "    %s = %s.reshape(", name, name);
              for (guint a = 0; tensor->axes[a]; a++)
                g_string_append_printf (shapes, "%s%" G_GINT64_FORMAT, a ? ", " : "",
                                        napkin_diagram_axis_size (p->d,
                                                                  napkin_diagram_find_axis (p->d, tensor->axes[a])));
              g_string_append (shapes, ")  # ");
              for (guint a = 0; tensor->axes[a]; a++)
                g_string_append_printf (shapes, "%s%s", a ? " " : "", tensor->axes[a]);
              g_string_append_c (shapes, '\n');
            }
        }
    }
  for (guint i = 0; i < n; i++)
    if (napkin_diagram_node (p->d, i)->kind == NAPKIN_OP_INPUT && napkin_diagram_node (p->d, i)->tensor != NULL)
      p->var[i] = g_strdup (g_hash_table_lookup (p->arg, napkin_diagram_node (p->d, i)->tensor));
  return TRUE;
}

/* The module's head: where it came from, the imports, AXES with each axis's einsum
 * letter, and INPUTS (each argument's axes and type). */
static void
print_preamble (Printer    *p,
                const char *title)
{
  guint n = napkin_diagram_n_nodes (p->d);

  g_string_append_printf (p->out, "# Generated by napkin-cli codegen --target pytorch from the diagram \"%s\".\n", title);
  g_string_append (p->out,
    "# The diagram's reference in plain PyTorch (docs/import.md): one line per operation, in the\n"
    "# diagram's order; each value's dimensions are its axes, one einsum letter each.\n"
    "import torch\n"
    "import torch.nn.functional as F\n");
  /* a factor written as an expression of axis sizes is printed as one (math.sqrt) */
  for (guint i = 0; i < n; i++)
    if (napkin_diagram_node (p->d, i)->alpha_expr != NULL)
      {
        g_string_append (p->out, "import math\n");
        break;
      }
  g_string_append_c (p->out, '\n');
  g_string_append (p->out, "AXES = {");
  for (guint i = 0; i < napkin_diagram_n_axes (p->d); i++)
    g_string_append_printf (p->out, "%s\"%s\": %" G_GINT64_FORMAT, i ? ", " : "", napkin_diagram_axis (p->d, i)->name,
                            napkin_diagram_axis (p->d, i)->size);
  g_string_append (p->out, "}\n# einsum letters: ");
  for (guint i = 0; i < napkin_diagram_n_axes (p->d); i++)
    g_string_append_printf (p->out, "%s%c=%s", i ? " " : "", p->letter[i], napkin_diagram_axis (p->d, i)->name);
  g_string_append (p->out, "\n\nINPUTS = {\n");
  for (guint t = 0; t < napkin_diagram_n_tensors (p->d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (p->d, t);
      const char *name = g_hash_table_lookup (p->arg, tensor->name);

      if (name == NULL || napkin_tensor_get_constant (tensor) != NULL)
        continue;
      g_string_append_printf (p->out, "    \"%s\": ((", name);
      for (guint a = 0; tensor->axes[a]; a++)
        g_string_append_printf (p->out, "%s\"%s\"", a ? ", " : "", tensor->axes[a]);
      g_string_append_printf (p->out, "%s), %s),\n", g_strv_length (tensor->axes) == 1 ? "," : "",
                              torch_dtype (tensor->dtype));
    }
  g_string_append (p->out, "}\n\n\n");
}

/* The helpers the forward function calls: _align, _band and _rotate_half_matrix. */
static const char python_helpers[] =
    "def _align(t, have, want):\n"
    "    \"\"\"t, whose dims are the axes `have`, permuted to the order of `want` with size-1 dims for\n"
    "    the axes it lacks, so that it broadcasts against a value of axes `want`.\"\"\"\n"
    "    t = t.permute([have.index(c) for c in want if c in have])\n"
    "    kept = iter(t.shape)\n"
    "    return t.reshape([next(kept) if c in have else 1 for c in want])\n\n\n"
    "def _band(rows, cols, offset, left, right, device):\n"
    "    \"\"\"Keep element (i, j) where -left <= j - (i + offset) <= right; a side of -1 is unbounded.\"\"\"\n"
    "    i = torch.arange(rows, device=device)[:, None] + offset\n"
    "    j = torch.arange(cols, device=device)[None, :]\n"
    "    keep = torch.ones(rows, cols, dtype=torch.bool, device=device)\n"
    "    if right >= 0:\n"
    "        keep &= j - i <= right\n"
    "    if left >= 0:\n"
    "        keep &= i - j <= left\n"
    "    return keep\n\n\n"
    "def _rotate_half_matrix(n, dtype, device):\n"
    "    \"\"\"R with x @ R == cat(-x[..., n/2:], x[..., :n/2]): Llama's rotate_half as a contraction.\"\"\"\n"
    "    h = n // 2\n"
    "    r = torch.zeros(n, n, dtype=dtype, device=device)\n"
    "    i = torch.arange(h, device=device)\n"
    "    r[i + h, i] = -1\n"
    "    r[i, i + h] = 1\n"
    "    return r\n\n\n";

/* A softmax over a row a mask hid wholly gives zeros, as the interpreter and the
 * kernels do (docs/plan.md, "Rows over any axis"); torch.softmax gives NaN there. */
static const char python_masked_softmax[] =
    "def _softmax(x, dim):\n"
    "    \"\"\"torch.softmax, with zeros for a row the mask hid wholly (torch gives NaN).\"\"\"\n"
    "    p = torch.softmax(x, dim=dim)\n"
    "    return torch.where(torch.isneginf(x).all(dim=dim, keepdim=True), torch.zeros_like(p), p)\n\n\n";

/* Random inputs at the diagram's sizes, for a caller that has none. */
static const char python_example_inputs[] =
    "def example_inputs(device=\"cpu\", dtype=None, seed=0):\n"
    "    \"\"\"Random inputs at the diagram's sizes, by argument name.\"\"\"\n"
    "    g = torch.Generator(device=device).manual_seed(seed)\n"
    "    return {name: torch.randn([AXES[a] for a in axes], generator=g, device=device,\n"
    "                              dtype=torch.float32).to(dtype or dt)\n"
    "            for name, (axes, dt) in INPUTS.items()}\n";

char *
napkin_codegen_pytorch (NapkinDiagram  *diagram,
                        GError        **error)
{
  g_autoptr(GHashTable) used = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  guint n = napkin_diagram_n_nodes (diagram);
  g_auto(GStrv) var = g_new0 (char *, n + 1);
  g_autoptr(GHashTable) arg = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  Printer p = { diagram, g_string_new (NULL), { 0 }, used, var, arg };
  g_autoptr(GString) args = g_string_new (NULL);
  g_autoptr(GString) ret = g_string_new (NULL);
  g_autoptr(GString) consts = g_string_new (NULL);
  g_autoptr(GString) shapes = g_string_new (NULL);
  const guint *order = napkin_diagram_topo_order (diagram);
  g_autofree char *title = g_strdup (napkin_diagram_get_title (diagram) ? napkin_diagram_get_title (diagram) : "");
  guint n_out = 0;
  GString *out = p.out;

  if (order == NULL)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED, "the diagram has a cycle");
      g_string_free (out, TRUE);
      return NULL;
    }
  if (!assign_letters (&p, error))
    {
      g_string_free (out, TRUE);
      return NULL;
    }
  for (guint i = 0; i < G_N_ELEMENTS (python_reserved); i++)
    g_hash_table_add (used, g_strdup (python_reserved[i]));

  if (!bind_inputs (&p, args, consts, shapes, error))
    {
      g_string_free (out, TRUE);
      return NULL;
    }
  for (guint i = 0; i < n; i++)
    if (var[i] == NULL)
      var[i] = take_name (&p, napkin_diagram_node (diagram, i)->id);

  for (char *c = title; *c; c++)
    if ((unsigned char) *c < 0x20 || *c == '"' || *c == '\\')
      *c = ' ';
  print_preamble (&p, title);
  g_string_append (out, python_helpers);
  for (guint i = 0; i < n && !p.masked; i++)
    p.masked = napkin_diagram_node (diagram, i)->kind == NAPKIN_OP_MASK;
  if (p.masked)
    g_string_append (out, python_masked_softmax);
  g_string_append_printf (out, "def forward(%s):\n", args->str);
  if (shapes->len > 0)
    g_string_append_printf (out, "    # each argument as the diagram's axes (AXES): a module's tensor, such as a Linear's\n"
                                 "    # [out, in] weight, has its dimensions split row-major in the axes' order\n%s",
                            shapes->str);
  if (consts->len > 0)
    {
      /* the device of the first argument */
      g_autofree char *first = g_strndup (args->str, strcspn (args->str, ","));

      g_string_append_printf (out, "    _device = %s.device\n", first);
      g_string_append (out, consts->str);
    }
  for (guint i = 0; i < n; i++)
    if (!print_node (&p, order[i], ret, error))
      {
        g_string_free (out, TRUE);
        return NULL;
      }
  for (guint i = 0; i < n; i++)
    n_out += napkin_diagram_node (diagram, i)->kind == NAPKIN_OP_OUTPUT;
  g_string_append_printf (out, "    return %s\n\n\n", ret->len ? ret->str : "None");
  g_string_append (out, python_example_inputs);
  (void) n_out;
  return g_string_free (out, FALSE);
}
