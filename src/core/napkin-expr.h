/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Arithmetic over axis sizes, for a parameter that must follow the diagram: a scale
 * of 1/sqrt(d) stays the attention scale when d changes (docs/file-format.md,
 * "Expressions"). Numbers, axis names, + - * / ^ (also · × ÷ and √), parentheses and
 * the functions sqrt, rsqrt, exp, log, log2. */

typedef struct _NapkinExpr NapkinExpr;

/* NULL with an error naming the column (from one) of the token at fault. */
NapkinExpr *napkin_expr_parse   (const char        *text,
                                 GError           **error);
void        napkin_expr_free    (NapkinExpr        *expr);
/* The names the expression reads, each once, in order of first use (free with g_strfreev). */
GStrv       napkin_expr_names   (const NapkinExpr  *expr);

/* A name's value: TRUE and *value, or FALSE when the name is unknown. */
typedef gboolean (*NapkinExprLookup) (const char *name,
                                      double     *value,
                                      gpointer    user_data);

/* The value, or FALSE with an error naming an unknown name, or a result that is not a
 * finite number. */
gboolean    napkin_expr_eval    (const NapkinExpr  *expr,
                                 NapkinExprLookup   lookup,
                                 gpointer           user_data,
                                 double            *value,
                                 GError           **error);

typedef enum
{
  NAPKIN_EXPR_TEXT,      /* as people write it: 1/sqrt(d) */
  NAPKIN_EXPR_PYTHON,    /* math.sqrt, **, names through `name` */
} NapkinExprStyle;

/* The expression printed in a style, each name through `name` (NULL: as is). */
char       *napkin_expr_print   (const NapkinExpr  *expr,
                                 NapkinExprStyle    style,
                                 char            *(*name) (const char *name, gpointer user_data),
                                 gpointer           user_data);

/* A text that is a plain number (as JSON or C write it): TRUE with *value. */
gboolean    napkin_expr_is_number (const char      *text,
                                   double          *value);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinExpr, napkin_expr_free)

G_END_DECLS
