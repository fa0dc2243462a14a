/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "napkin-error.h"
#include "napkin-expr.h"
#include "napkin-text.h"

/* A recursive-descent parser into a small tree (docs/file-format.md, "Expressions"):
 *   sum     := product (("+" | "-") product)*
 *   product := unary (("*" | "/" | "·" | "×" | "÷") unary)*
 *   unary   := "-" unary | power
 *   power   := atom ("^" unary)?
 *   atom    := NUMBER | NAME | NAME "(" sum ")" | "(" sum ")" | "√" atom */

typedef enum
{
  NODE_NUMBER,
  NODE_NAME,
  NODE_NEG,
  NODE_ADD,
  NODE_SUB,
  NODE_MUL,
  NODE_DIV,
  NODE_POW,
  NODE_CALL,
} NodeKind;

typedef struct Node Node;
struct Node
{
  NodeKind kind;
  double   number;
  char    *name;        /* NODE_NAME: the name; NODE_CALL: the function */
  Node    *a, *b;
};

struct _NapkinExpr
{
  Node *root;
};

static const char *const functions[] = { "sqrt", "rsqrt", "exp", "log", "log2", NULL };

#define MAX_DEPTH 64

typedef struct
{
  const char *text;
  const char *p;
  guint       depth;
  GError    **error;
  gboolean    failed;
} Parser;

static void
node_free (Node *node)
{
  if (node == NULL)
    return;
  node_free (node->a);
  node_free (node->b);
  g_free (node->name);
  g_free (node);
}

static Node *
node_new (NodeKind kind,
          Node    *a,
          Node    *b)
{
  Node *node = g_new0 (Node, 1);

  node->kind = kind;
  node->a = a;
  node->b = b;
  return node;
}

static void
fail (Parser     *ps,
      const char *what)
{
  g_autofree char *shown = NULL;

  if (ps->failed)
    return;
  ps->failed = TRUE;
  /* the text as written, its control characters escaped: the message reaches terminals */
  shown = napkin_text_shown (ps->text, -1, 0);
  g_set_error (ps->error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
               _("“%s”, column %ld: %s"), shown, (long) g_utf8_pointer_to_offset (ps->text, ps->p) + 1, what);
}

static void
skip_space (Parser *ps)
{
  while (*ps->p == ' ' || *ps->p == '\t')
    ps->p++;
}

/* The next token is `word` (an operator, possibly several bytes): consumed. */
static gboolean
accept (Parser     *ps,
        const char *word)
{
  skip_space (ps);
  if (strncmp (ps->p, word, strlen (word)) != 0)
    return FALSE;
  ps->p += strlen (word);
  return TRUE;
}

static Node *parse_sum (Parser *ps);
static Node *parse_unary (Parser *ps);

static Node *
parse_atom (Parser *ps)
{
  Node *node;

  skip_space (ps);
  if (accept (ps, "√"))
    return (node = parse_atom (ps)) ? node_new (NODE_CALL, node, NULL) : NULL;
  if (accept (ps, "("))
    {
      node = parse_sum (ps);
      if (node != NULL && !accept (ps, ")"))
        {
          fail (ps, _("expected “)”"));
          g_clear_pointer (&node, node_free);
        }
      return node;
    }
  if (g_ascii_isdigit (*ps->p) || *ps->p == '.')
    {
      char *end = NULL;
      double v = g_ascii_strtod (ps->p, &end);

      if (end == ps->p || !isfinite (v))
        {
          fail (ps, _("expected a number"));
          return NULL;
        }
      ps->p = end;
      node = node_new (NODE_NUMBER, NULL, NULL);
      node->number = v;
      return node;
    }
  if (g_ascii_isalpha (*ps->p) || *ps->p == '_')
    {
      const char *start = ps->p;
      g_autofree char *name = NULL;

      while (g_ascii_isalnum (*ps->p) || *ps->p == '_')
        ps->p++;
      name = g_strndup (start, ps->p - start);
      skip_space (ps);
      if (*ps->p != '(')
        {
          node = node_new (NODE_NAME, NULL, NULL);
          node->name = g_steal_pointer (&name);
          return node;
        }
      if (!g_strv_contains (functions, name))
        {
          ps->p = start;
          fail (ps, _("unknown function (sqrt, rsqrt, exp, log and log2 are known)"));
          return NULL;
        }
      ps->p++;
      node = parse_sum (ps);
      if (node != NULL && !accept (ps, ")"))
        {
          fail (ps, _("expected “)”"));
          g_clear_pointer (&node, node_free);
        }
      if (node == NULL)
        return NULL;
      node = node_new (NODE_CALL, node, NULL);
      node->name = g_steal_pointer (&name);
      return node;
    }
  fail (ps, *ps->p ? _("expected a number, an axis name or “(”") : _("the expression ends too soon"));
  return NULL;
}

static Node *
parse_power (Parser *ps)
{
  Node *base = parse_atom (ps);
  Node *exponent;

  if (base == NULL || !accept (ps, "^"))
    return base;
  exponent = parse_unary (ps);
  if (exponent == NULL)
    {
      node_free (base);
      return NULL;
    }
  return node_new (NODE_POW, base, exponent);
}

static Node *
parse_unary (Parser *ps)
{
  Node *node;

  if (++ps->depth > MAX_DEPTH)
    {
      fail (ps, _("nested too deeply"));
      return NULL;
    }
  if (accept (ps, "-") || accept (ps, "−"))
    node = (node = parse_unary (ps)) ? node_new (NODE_NEG, node, NULL) : NULL;
  else
    node = parse_power (ps);
  ps->depth--;
  return node;
}

static Node *
parse_product (Parser *ps)
{
  Node *left = parse_unary (ps);

  while (left != NULL)
    {
      NodeKind kind;
      Node *right;

      if (accept (ps, "*") || accept (ps, "·") || accept (ps, "×"))
        kind = NODE_MUL;
      else if (accept (ps, "/") || accept (ps, "÷"))
        kind = NODE_DIV;
      else
        break;
      right = parse_unary (ps);
      if (right == NULL)
        g_clear_pointer (&left, node_free);
      else
        left = node_new (kind, left, right);
    }
  return left;
}

static Node *
parse_sum (Parser *ps)
{
  Node *left;

  if (++ps->depth > MAX_DEPTH)
    {
      fail (ps, _("nested too deeply"));
      return NULL;
    }
  left = parse_product (ps);
  while (left != NULL)
    {
      NodeKind kind;
      Node *right;

      if (accept (ps, "+"))
        kind = NODE_ADD;
      else if (accept (ps, "-") || accept (ps, "−"))
        kind = NODE_SUB;
      else
        break;
      right = parse_product (ps);
      if (right == NULL)
        g_clear_pointer (&left, node_free);
      else
        left = node_new (kind, left, right);
    }
  ps->depth--;
  return left;
}

NapkinExpr *
napkin_expr_parse (const char  *text,
                   GError     **error)
{
  Parser ps = { text, text, 0, error, FALSE };
  Node *root;
  NapkinExpr *expr;

  g_return_val_if_fail (text != NULL, NULL);

  if (!g_utf8_validate (text, -1, NULL))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID, _("not UTF-8 text"));
      return NULL;
    }
  root = parse_sum (&ps);
  skip_space (&ps);
  if (root != NULL && *ps.p != '\0')
    {
      fail (&ps, _("expected an operator (+ - * / ^)"));
      g_clear_pointer (&root, node_free);
    }
  if (root == NULL)
    return NULL;
  expr = g_new0 (NapkinExpr, 1);
  expr->root = root;
  return expr;
}

void
napkin_expr_free (NapkinExpr *expr)
{
  if (expr == NULL)
    return;
  node_free (expr->root);
  g_free (expr);
}

static void
collect_names (const Node   *node,
               GStrvBuilder *builder,
               GHashTable   *seen)
{
  if (node == NULL)
    return;
  if (node->kind == NODE_NAME && !g_hash_table_contains (seen, node->name))
    {
      g_hash_table_add (seen, node->name);
      g_strv_builder_add (builder, node->name);
    }
  collect_names (node->a, builder, seen);
  collect_names (node->b, builder, seen);
}

GStrv
napkin_expr_names (const NapkinExpr *expr)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

  g_return_val_if_fail (expr != NULL, NULL);

  collect_names (expr->root, builder, seen);
  return g_strv_builder_end (builder);
}

static gboolean
eval (const Node        *node,
      NapkinExprLookup   lookup,
      gpointer           user_data,
      double            *value,
      GError           **error)
{
  double a = 0, b = 0;

  if (node->kind == NODE_NUMBER)
    {
      *value = node->number;
      return TRUE;
    }
  if (node->kind == NODE_NAME)
    {
      if (lookup != NULL && lookup (node->name, value, user_data))
        return TRUE;
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_REFERENCE, _("unknown axis “%s”"), node->name);
      return FALSE;
    }
  if (!eval (node->a, lookup, user_data, &a, error) || (node->b && !eval (node->b, lookup, user_data, &b, error)))
    return FALSE;
  switch (node->kind)
    {
    case NODE_NEG: *value = -a; break;
    case NODE_ADD: *value = a + b; break;
    case NODE_SUB: *value = a - b; break;
    case NODE_MUL: *value = a * b; break;
    case NODE_DIV: *value = a / b; break;
    case NODE_POW: *value = pow (a, b); break;
    case NODE_CALL:
      if (node->name == NULL || g_str_equal (node->name, "sqrt"))
        *value = sqrt (a);
      else if (g_str_equal (node->name, "rsqrt"))
        *value = 1 / sqrt (a);
      else if (g_str_equal (node->name, "exp"))
        *value = exp (a);
      else if (g_str_equal (node->name, "log"))
        *value = log (a);
      else
        *value = log2 (a);
      break;
    case NODE_NUMBER:
    case NODE_NAME:
    default:
      g_assert_not_reached ();
    }
  return TRUE;
}

gboolean
napkin_expr_eval (const NapkinExpr  *expr,
                  NapkinExprLookup   lookup,
                  gpointer           user_data,
                  double            *value,
                  GError           **error)
{
  double v = 0;

  g_return_val_if_fail (expr != NULL, FALSE);

  if (!eval (expr->root, lookup, user_data, &v, error))
    return FALSE;
  if (!isfinite (v))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID, _("the value is not a finite number"));
      return FALSE;
    }
  *value = v;
  return TRUE;
}

/* Binding strength, for parentheses: a child weaker than its parent gets them. */
static int
strength (const Node *node)
{
  switch (node->kind)
    {
    case NODE_ADD:
    case NODE_SUB:
      return 1;
    case NODE_MUL:
    case NODE_DIV:
      return 2;
    case NODE_NEG:
      return 3;
    case NODE_POW:
      return 4;
    case NODE_NUMBER:
    case NODE_NAME:
    case NODE_CALL:
    default:
      return 5;
    }
}

typedef struct
{
  NapkinExprStyle style;
  char         *(*name) (const char *name, gpointer user_data);
  gpointer        user_data;
} PrintStyle;

static void print_node (GString *s, const Node *node, const PrintStyle *ps);

static void
print_child (GString          *s,
             const Node       *child,
             int               parent,
             gboolean          right,
             const PrintStyle *ps)
{
  /* a - (b - c), a / (b * c), (a ^ b) ^ c: the right side binds its equals too */
  gboolean wrap = strength (child) < parent || (right && strength (child) == parent && parent < 4)
                  || (!right && parent == 4 && strength (child) == 4);

  if (wrap)
    g_string_append_c (s, '(');
  print_node (s, child, ps);
  if (wrap)
    g_string_append_c (s, ')');
}

static void
print_node (GString          *s,
            const Node       *node,
            const PrintStyle *ps)
{
  static const char *const ops[] = { [NODE_ADD] = " + ", [NODE_SUB] = " - ", [NODE_MUL] = "*", [NODE_DIV] = "/" };
  gboolean python = ps->style == NAPKIN_EXPR_PYTHON;

  switch (node->kind)
    {
    case NODE_NUMBER:
      {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];

        g_string_append (s, g_ascii_dtostr (buf, sizeof buf, node->number));
        break;
      }
    case NODE_NAME:
      {
        g_autofree char *mapped = ps->name ? ps->name (node->name, ps->user_data) : NULL;

        g_string_append (s, mapped ? mapped : node->name);
        break;
      }
    case NODE_NEG:
      g_string_append_c (s, '-');
      print_child (s, node->a, 3, TRUE, ps);
      break;
    case NODE_ADD:
    case NODE_SUB:
    case NODE_MUL:
    case NODE_DIV:
      print_child (s, node->a, strength (node), FALSE, ps);
      g_string_append (s, ops[node->kind]);
      print_child (s, node->b, strength (node), TRUE, ps);
      break;
    case NODE_POW:
      print_child (s, node->a, 4, FALSE, ps);
      g_string_append (s, python ? " ** " : "^");
      print_child (s, node->b, 4, TRUE, ps);
      break;
    case NODE_CALL:
      {
        const char *fn = node->name ? node->name : "sqrt";

        if (python && g_str_equal (fn, "rsqrt"))
          g_string_append (s, "(1 / math.sqrt(");
        else
          g_string_append_printf (s, "%s%s(", python ? "math." : "", fn);
        print_node (s, node->a, ps);
        g_string_append (s, python && g_str_equal (fn, "rsqrt") ? "))" : ")");
        break;
      }
    default:
      g_assert_not_reached ();
    }
}

char *
napkin_expr_print (const NapkinExpr  *expr,
                   NapkinExprStyle    style,
                   char            *(*name) (const char *name, gpointer user_data),
                   gpointer           user_data)
{
  GString *s = g_string_new (NULL);
  PrintStyle ps = { style, name, user_data };

  g_return_val_if_fail (expr != NULL, NULL);

  print_node (s, expr->root, &ps);
  return g_string_free (s, FALSE);
}

gboolean
napkin_expr_is_number (const char *text,
                       double     *value)
{
  char *end = NULL;
  double v;

  if (text == NULL)
    return FALSE;
  while (g_ascii_isspace (*text))
    text++;
  if (*text == '\0')
    return FALSE;
  v = g_ascii_strtod (text, &end);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == NULL || *end != '\0' || !isfinite (v))
    return FALSE;
  *value = v;
  return TRUE;
}
