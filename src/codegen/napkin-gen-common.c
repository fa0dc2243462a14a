/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-codegen-private.h"

/* What every printer shares, below them all (docs/codegen.md, "Who calls whom"): the
 * error domain, comments escaped, C types, where a plan buffer lives in the kernel's
 * arguments, and the CUDA text of a fused map. napkin-cuda.c calls the printers, the
 * printers call this file; nothing here calls back up. */

G_DEFINE_QUARK (napkin-codegen-error-quark, napkin_codegen_error)

char *
napkin_codegen_escape_comment (const char *text)
{
  GString *out = g_string_new (NULL);
  const char *p = text ? text : "";

  while (*p)
    {
      gunichar c = g_utf8_get_char_validated (p, -1);

      if (c == (gunichar) -1 || c == (gunichar) -2)
        {
          g_string_append (out, "?");
          p++;
          continue;
        }
      if (c == '*' && p[1] == '/')
        g_string_append (out, "* /");
      else if (c == '/' && p[1] == '*')
        g_string_append (out, "/ *");
      else if (c == '\\')
        g_string_append (out, "\\\\");
      else if (c < 0x20 || c == 0x7f)
        g_string_append_c (out, ' ');
      else if (c < 0x80)
        g_string_append_c (out, (char) c);
      else
        g_string_append_printf (out, "\\u%04x", c);
      if (c == '*' && p[1] == '/')
        p += 2;
      else if (c == '/' && p[1] == '*')
        p += 2;
      else
        p = g_utf8_next_char (p);
    }
  return g_string_free (out, FALSE);
}


gboolean
_napkin_cuda_ref (const NapkinPrintCtx   *ctx,
                  const NapkinPlanBuffer *buffer,
                  NapkinCudaRef          *ref,
                  GError                **error)
{
  if (buffer->node < 0)
    {
      const NapkinPlan *plan = ctx->plan;

      if (buffer->scratch < 0 || plan == NULL || (guint) buffer->scratch >= plan->scratch_offset->len
          || ctx->module->workspace_slot < 0)
        {
          g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                       "the plan's scratch buffer %d has no place in the workspace", buffer->scratch);
          return FALSE;
        }
      ref->slot = ctx->module->workspace_slot;
      ref->offset = g_array_index (plan->scratch_offset, gint64, buffer->scratch);
      return TRUE;
    }
  {
    int b = napkin_ir_value_buffer (ctx->program, buffer->node);

    if (b < 0 || ctx->slot[b] < 0)
      {
        g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                     "the value of operation %s is not in device memory",
                     napkin_diagram_node (ctx->program->diagram, buffer->node)->id);
        return FALSE;
      }
    ref->slot = ctx->slot[b];
    ref->offset = 0;
  }
  return TRUE;
}

char *
_napkin_cuda_ref_expr (const NapkinCudaRef *ref,
                       NapkinDtype          dtype)
{
  if (ref->offset == 0)
    return g_strdup_printf ("((%s *) args.p[%d])", _napkin_cuda_ctype (dtype), ref->slot);
  return g_strdup_printf ("((%s *) ((char *) args.p[%d] + %" G_GINT64_FORMAT "))", _napkin_cuda_ctype (dtype),
                          ref->slot, ref->offset);
}

char *
_napkin_cuda_float_literal (double v)
{
  char text[G_ASCII_DTOSTR_BUF_SIZE];

  if (isinf (v))
    return g_strdup (v < 0 ? "NAPKIN_NEG_INF" : "(-NAPKIN_NEG_INF)");
  g_ascii_formatd (text, sizeof text, "%.9g", v);
  if (strchr (text, '.') == NULL && strchr (text, 'e') == NULL)
    return g_strdup_printf ("%s.0f", text);
  return g_strdup_printf ("%sf", text);
}

char *
_napkin_cuda_cast_expr (NapkinDtype dtype,
                        const char *x)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP16: return g_strdup_printf ("napkin_round_f16 (%s)", x);
    case NAPKIN_DTYPE_BF16: return g_strdup_printf ("napkin_round_bf16 (%s)", x);
    case NAPKIN_DTYPE_TF32: return g_strdup_printf ("napkin_round_tf32 (%s)", x);
    case NAPKIN_DTYPE_INT8: return g_strdup_printf ("fmaxf (-128.f, fminf (127.f, rintf (%s)))", x);
    default: return g_strdup (x);
    }
}

char *
_napkin_cuda_fn_expr (NapkinMapFn  fn,
                      double       alpha,
                      NapkinDtype  dtype,
                      const char  *x,
                      const char  *y,
                      gboolean     fast)
{
  g_autofree char *a = _napkin_cuda_float_literal (alpha);

  switch (fn)
    {
    case NAPKIN_FN_ADD: return g_strdup_printf ("(%s + %s)", x, y);
    case NAPKIN_FN_SUB: return g_strdup_printf ("(%s - %s)", x, y);
    case NAPKIN_FN_MUL: return g_strdup_printf ("(%s * %s)", x, y);
    case NAPKIN_FN_DIV: return g_strdup_printf ("(%s / %s)", x, y);
    case NAPKIN_FN_MAX: return g_strdup_printf ("fmaxf (%s, %s)", x, y);
    case NAPKIN_FN_MIN: return g_strdup_printf ("fminf (%s, %s)", x, y);
    case NAPKIN_FN_SCALE: return g_strdup_printf ("(%s * %s)", a, x);
    case NAPKIN_FN_EXP: return g_strdup_printf (fast ? "__expf (%s)" : "expf (%s)", x);
    case NAPKIN_FN_NEG: return g_strdup_printf ("(-%s)", x);
    case NAPKIN_FN_RELU: return g_strdup_printf ("fmaxf (%s, 0.0f)", x);
    case NAPKIN_FN_GELU: return g_strdup_printf ("napkin_gelu (%s)", x);
    case NAPKIN_FN_SILU: return g_strdup_printf ("napkin_silu (%s)", x);
    case NAPKIN_FN_SIGMOID:
      return g_strdup_printf (fast ? "napkin_sigmoid (%s)" : "(1.0f / (1.0f + expf (-%s)))", x);
    case NAPKIN_FN_TANH: return g_strdup_printf ("tanhf (%s)", x);
    case NAPKIN_FN_SQUARE: return g_strdup_printf ("napkin_square (%s)", x);
    case NAPKIN_FN_SQRT: return g_strdup_printf ("sqrtf (%s)", x);
    case NAPKIN_FN_RSQRT: return g_strdup_printf ("rsqrtf (%s)", x);
    case NAPKIN_FN_CAST: return _napkin_cuda_cast_expr (dtype, x);
    case NAPKIN_FN_GELU_TANH: return g_strdup_printf ("napkin_gelu_tanh (%s)", x);
    case NAPKIN_FN_SHIFT: return g_strdup_printf ("(%s + %s)", x, a);
    case NAPKIN_FN_STEP: return g_strdup_printf ("(%s > 0.0f ? 1.0f : 0.0f)", x);
    case NAPKIN_FN_ERF: return g_strdup_printf ("erff (%s)", x);
    case NAPKIN_FN_LOG: return g_strdup_printf (fast ? "__logf (%s)" : "logf (%s)", x);
    case NAPKIN_FN_ELU: return g_strdup_printf ("napkin_elu (%s)", x);
    case NAPKIN_FN_RECIPROCAL: return g_strdup_printf ("(1.0f / %s)", x);
    case NAPKIN_N_FNS:
    default:
      g_assert_not_reached ();
    }
}

char *
_napkin_cuda_map_expr (const NapkinPlanMap *map,
                       const char          *x,
                       const char          *y)
{
  gboolean swap = map->has_other && map->other_first;

  return _napkin_cuda_fn_expr (map->fn, map->alpha, map->dtype, swap ? y : x, swap ? x : y, TRUE);
}

const char *
_napkin_cuda_ctype (NapkinDtype dtype)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP32:
    case NAPKIN_DTYPE_TF32:
      return "float";
    case NAPKIN_DTYPE_FP16:
      return "napkin_f16";
    case NAPKIN_DTYPE_BF16:
      return "napkin_bf16";
    case NAPKIN_DTYPE_INT8:
      return "signed char";
    case NAPKIN_DTYPE_FP8_E4M3:
      return "napkin_e4m3";
    case NAPKIN_DTYPE_FP8_E5M2:
      return "napkin_e5m2";
    case NAPKIN_N_DTYPES:
    default:
      return NULL;
    }
}

void
_napkin_cuda_kernel_free (gpointer data)
{
  NapkinCudaKernel *k = data;

  g_free (k->name);
  g_free (k->skeleton);
  g_free (k->note);
  g_free (k->owner);
  g_clear_pointer (&k->tensor_maps, g_array_unref);
  g_free (k);
}
