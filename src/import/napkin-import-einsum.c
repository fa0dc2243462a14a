/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "napkin-import-private.h"
#include "napkin-describe.h"
#include "napkin-text.h"
#include "napkin-validate.h"

/* Einsum-style text (docs/import.md, "Einsum text"): one statement a line,
 *
 *   b=4 n=4096 h=16 d=128 m=4096
 *   q[b,n,h,d] k[b,m,h,d] -> s[b,h,n,m] = einsum("bnhd,bmhd->bhnm")
 *   s -> p = softmax(m)
 *
 * Errors name the line and the column (from one) of the token at fault. */

typedef enum { TOK_END, TOK_NAME, TOK_NUMBER, TOK_STRING, TOK_PUNCT } TokKind;

/* The longest message about a line, in characters: a token it quotes may be long. */
#define MAX_MESSAGE_CHARS 300

typedef struct
{
  TokKind     kind;
  char       *text;     /* NAME, NUMBER, STRING (unquoted), PUNCT ("->" or one char) */
  guint       column;
} Tok;

typedef struct
{
  const char   *source;
  guint         line;
  GArray       *toks;   /* Tok */
  guint         pos;
  GError      **error;
  gboolean      failed;
} Line;

typedef struct
{
  char   *name;
  char   *node;         /* id of the node that makes it */
  guint   line;
  guint   uses;
} Value;

typedef struct
{
  NapkinDiagram *d;
  NapkinImportBuilder *b;
  const char    *source;
  NapkinDtype    dtype;
  GHashTable    *values;      /* name → Value */
  GPtrArray     *order;       /* Value *, in definition order */
  GHashTable    *node_line;   /* node id → GUINT line */
  GPtrArray     *outputs;     /* char *, from output statements */
  guint          output_line;
  GHashTable    *tensor_line; /* tensor name → GUINT line */
  GHashTable    *axis_line;   /* axis name → GUINT line */
} Ctx;

static void
value_free (Value *v)
{
  g_free (v->name);
  g_free (v->node);
  g_free (v);
}

static void
tok_clear (Tok *t)
{
  g_free (t->text);
}

static void G_GNUC_PRINTF (3, 4)
fail_at (Line       *l,
         guint       column,
         const char *format,
         ...)
{
  va_list args;
  g_autofree char *msg = NULL;
  g_autofree char *shown = NULL;

  if (l->failed)
    return;
  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  /* the message quotes the input: escaped for a terminal and cut (docs/security.md) */
  shown = napkin_text_shown (msg, -1, MAX_MESSAGE_CHARS);
  g_set_error (l->error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX, "%s%sline %u, column %u: %s",
               l->source ? l->source : "", l->source ? ": " : "", l->line, column, shown);
  l->failed = TRUE;
}

static gboolean
tokenize (Line       *l,
          const char *text,
          gsize       len)
{
  gsize i = 0, counted = 0;
  guint column = 1;

  while (i < len && !l->failed)
    {
      Tok t = { 0 };
      char c = text[i];

      /* the column counted on from the last token, not from the line's start */
      column += g_utf8_strlen (text + counted, i - counted);
      counted = i;
      t.column = column;
      if (c == '#')
        break;
      if (g_ascii_isspace (c))
        {
          i++;
          continue;
        }
      if (g_ascii_isalpha (c) || c == '_')
        {
          gsize s = i;

          while (i < len && (g_ascii_isalnum (text[i]) || text[i] == '_' || text[i] == '-'))
            i++;
          /* fp8-e4m3 is one name; a - before > is the arrow */
          while (i > s + 1 && text[i - 1] == '-')
            i--;
          t.kind = TOK_NAME;
          t.text = g_strndup (text + s, i - s);
        }
      else if (g_ascii_isdigit (c) || c == '.' || (c == '-' && i + 1 < len && (g_ascii_isdigit (text[i + 1]) || text[i + 1] == '.')))
        {
          gsize s = i++;

          while (i < len && (g_ascii_isalnum (text[i]) || text[i] == '.'
                             || ((text[i] == '-' || text[i] == '+') && (text[i - 1] == 'e' || text[i - 1] == 'E'))))
            i++;
          t.kind = TOK_NUMBER;
          t.text = g_strndup (text + s, i - s);
        }
      else if (c == '"' || c == '\'')
        {
          gsize s = ++i;

          while (i < len && text[i] != c)
            i++;
          if (i >= len)
            {
              fail_at (l, t.column, _("unterminated string"));
              return FALSE;
            }
          t.kind = TOK_STRING;
          t.text = g_strndup (text + s, i - s);
          i++;
        }
      else if (c == '-' && i + 1 < len && text[i + 1] == '>')
        {
          t.kind = TOK_PUNCT;
          t.text = g_strdup ("->");
          i += 2;
        }
      else if (strchr ("[](),=", c) != NULL)
        {
          t.kind = TOK_PUNCT;
          t.text = g_strndup (text + i, 1);
          i++;
        }
      else
        {
          gunichar u = g_utf8_get_char_validated (text + i, len - i);
          char buf[8] = { 0 };

          if (u != (gunichar) -1 && u != (gunichar) -2)
            g_unichar_to_utf8 (u, buf);
          fail_at (l, t.column, _("unexpected character “%s”"), buf[0] ? buf : "?");
          return FALSE;
        }
      g_array_append_val (l->toks, t);
    }
  {
    Tok end = { TOK_END, NULL, g_utf8_strlen (text, len) + 1 };

    g_array_append_val (l->toks, end);
  }
  return !l->failed;
}

static Tok *
peek (Line *l)
{
  return &g_array_index (l->toks, Tok, l->pos);
}

static Tok *
next (Line *l)
{
  Tok *t = peek (l);

  if (t->kind != TOK_END)
    l->pos++;
  return t;
}

static gboolean
is_punct (Tok        *t,
          const char *p)
{
  return t->kind == TOK_PUNCT && g_str_equal (t->text, p);
}

static const char *
describe (Tok *t)
{
  return t->kind == TOK_END ? "the end of the line" : t->text;
}

static gboolean
expect (Line       *l,
        const char *p)
{
  Tok *t = next (l);

  if (!is_punct (t, p))
    {
      fail_at (l, t->column, _("expected “%s”, found “%s”"), p, describe (t));
      return FALSE;
    }
  return TRUE;
}

static gboolean
is_identifier (const char *s)
{
  if (s == NULL || !(g_ascii_isalpha (*s) || *s == '_') || strlen (s) > NAPKIN_MAX_NAME_LEN)
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isalnum (*s) && *s != '_')
      return FALSE;
  return TRUE;
}

static gboolean
parse_int (const char *s,
           gint64     *out)
{
  char *end = NULL;
  gint64 v;

  errno = 0;
  v = g_ascii_strtoll (s, &end, 10);
  if (errno != 0 || end == s || *end != '\0')
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean
parse_double (const char *s,
              double     *out)
{
  char *end = NULL;
  double v;

  errno = 0;
  v = g_ascii_strtod (s, &end);
  if (errno != 0 || end == s || *end != '\0' || !isfinite (v))
    return FALSE;
  *out = v;
  return TRUE;
}

/* An optional [a,b,c] after a name: the axes, each a declared axis. NULL when absent. */
static char **
parse_axes (Ctx   *c,
            Line  *l,
            guint *column)
{
  g_autoptr(GPtrArray) axes = g_ptr_array_new_with_free_func (g_free);

  if (!is_punct (peek (l), "["))
    return NULL;
  *column = next (l)->column;
  for (;;)
    {
      Tok *t = next (l);

      if (t->kind != TOK_NAME)
        {
          fail_at (l, t->column, _("expected an axis name, found “%s”"), describe (t));
          return NULL;
        }
      if (napkin_import_find (c->b, NAPKIN_ITEM_AXIS, t->text) < 0)
        {
          fail_at (l, t->column, _("unknown axis “%s” (declare its size first, as in “%s=128”)"), t->text, t->text);
          return NULL;
        }
      for (guint i = 0; i < axes->len; i++)
        if (g_str_equal (axes->pdata[i], t->text))
          {
            fail_at (l, t->column, _("axis “%s” is listed twice"), t->text);
            return NULL;
          }
      if (axes->len >= NAPKIN_MAX_RANK)
        {
          fail_at (l, t->column, _("more than %d axes"), NAPKIN_MAX_RANK);
          return NULL;
        }
      g_ptr_array_add (axes, g_strdup (t->text));
      t = next (l);
      if (is_punct (t, "]"))
        break;
      if (!is_punct (t, ","))
        {
          fail_at (l, t->column, _("expected “,” or “]”, found “%s”"), describe (t));
          return NULL;
        }
    }
  g_ptr_array_add (axes, NULL);
  return (char **) g_ptr_array_free (g_steal_pointer (&axes), FALSE);
}

static gboolean
same_axis_set (char       **a,
               const char * const *b)
{
  if (g_strv_length (a) != g_strv_length ((char **) b))
    return FALSE;
  for (guint i = 0; a[i]; i++)
    if (!g_strv_contains (b, a[i]))
      return FALSE;
  return TRUE;
}

static char **
type_axes (NapkinDiagram          *d,
           const NapkinTensorType *type)
{
  char **axes = g_new0 (char *, type->n_axes + 1);

  for (guint i = 0; i < type->n_axes; i++)
    axes[i] = g_strdup (napkin_diagram_axis (d, type->axes[i])->name);
  return axes;
}

static void
add_value (Ctx        *c,
           const char *name,
           const char *node,
           guint       line)
{
  Value *v = g_new0 (Value, 1);

  v->name = g_strdup (name);
  v->node = g_strdup (node);
  v->line = line;
  g_hash_table_insert (c->values, v->name, v);
  g_ptr_array_add (c->order, v);
  g_hash_table_insert (c->node_line, g_strdup (node), GUINT_TO_POINTER (line));
}

/* sizes: b=4 n=4096 … */
static void
parse_sizes (Ctx  *c,
             Line *l)
{
  while (peek (l)->kind != TOK_END && !l->failed)
    {
      Tok *name = next (l), *num;
      gint64 size;

      if (name->kind != TOK_NAME || !is_identifier (name->text))
        {
          fail_at (l, name->column, _("expected an axis name, found “%s”"), describe (name));
          return;
        }
      if (!expect (l, "="))
        return;
      num = next (l);
      if (num->kind != TOK_NUMBER || !parse_int (num->text, &size) || size < 1 || size > NAPKIN_MAX_AXIS_SIZE)
        {
          fail_at (l, num->column, _("the size of axis “%s” must be a whole number from 1 to 2^40, not “%s”"),
                   name->text, describe (num));
          return;
        }
      if (napkin_import_find (c->b, NAPKIN_ITEM_AXIS, name->text) >= 0)
        {
          fail_at (l, name->column, _("axis “%s” is declared twice"), name->text);
          return;
        }
      {
        g_autofree char *why = napkin_import_over_limit (c->b, NAPKIN_ITEM_AXIS, 1);

        if (why != NULL)
          {
            fail_at (l, name->column, "%s", why);
            return;
          }
      }
      napkin_import_add_axis (c->b, name->text, size);
      g_hash_table_insert (c->axis_line, g_strdup (name->text), GUINT_TO_POINTER (l->line));
    }
}

typedef struct
{
  char  *name;
  char **axes;
  guint  column, axes_column;
} Operand;

static void
operand_clear (Operand *o)
{
  g_free (o->name);
  g_strfreev (o->axes);
}

typedef struct
{
  char    *key;        /* NULL for a positional argument */
  char    *text;
  TokKind  kind;
  guint    column;
  gboolean used;       /* read by the operation: one never read is an error */
} Arg;

static void
arg_clear (Arg *a)
{
  g_free (a->key);
  g_free (a->text);
}

static const Arg *
find_arg (GArray     *args,
          const char *key,
          guint       position)
{
  guint positional = 0;

  for (guint i = 0; i < args->len; i++)
    {
      Arg *a = &g_array_index (args, Arg, i);

      if (a->key != NULL ? g_strcmp0 (a->key, key) == 0 : positional++ == position)
        {
          a->used = TRUE;
          return a;
        }
    }
  return NULL;
}

/* An argument the operation never read: a typo, or one it does not take. */
static gboolean
check_args_used (Line  *l,
                 GArray *args,
                 const char *fn)
{
  for (guint i = 0; i < args->len; i++)
    {
      const Arg *a = &g_array_index (args, Arg, i);

      if (!a->used)
        {
          g_autofree char *shown = napkin_text_quoted (a->key ? a->key : a->text);

          fail_at (l, a->column, _("%s does not take the argument %s"), fn, shown);
          return FALSE;
        }
    }
  return TRUE;
}

/* Reads an operand value: an existing one, or a new input tensor when axes are given. */
static const char *
operand_node (Ctx     *c,
              Line    *l,
              Operand *o)
{
  Value *v = g_hash_table_lookup (c->values, o->name);

  if (v != NULL)
    {
      if (o->axes != NULL)
        {
          guint index = napkin_import_find (c->b, NAPKIN_ITEM_NODE, v->node);
          const NapkinTensorType *type = napkin_import_node_type (c->b, index);
          g_auto(GStrv) have = type->valid ? type_axes (c->d, type) : NULL;

          if (have != NULL && !same_axis_set (o->axes, (const char * const *) have))
            {
              g_autofree char *list = g_strjoinv (",", have);

              fail_at (l, o->axes_column, _("“%s” has axes [%s] (line %u)"), o->name, list, v->line);
              return NULL;
            }
        }
      v->uses++;
      return v->node;
    }
  if (o->axes == NULL)
    {
      fail_at (l, o->column, _("unknown value “%s”: give its axes (as in “%s[b,n]”) to declare an input"),
               o->name, o->name);
      return NULL;
    }
  {
    g_autoptr(NapkinNode) node = napkin_node_new (o->name, NAPKIN_OP_INPUT);
    g_autofree char *tensor = napkin_import_fresh_name (c->b, NAPKIN_ITEM_TENSOR, o->name);
    const char *id;

    napkin_import_add_tensor (c->b, tensor, o->axes, c->dtype, NULL);
    g_hash_table_insert (c->tensor_line, g_strdup (tensor), GUINT_TO_POINTER (l->line));
    node->tensor = g_strdup (tensor);
    node->label = g_strdup (o->name);
    id = napkin_import_add_node (c->b, g_steal_pointer (&node), o->name);
    add_value (c, o->name, id, l->line);
    v = g_hash_table_lookup (c->values, o->name);
    v->uses++;
    return v->node;
  }
}

static gboolean
axis_arg (Ctx        *c,
          Line       *l,
          const Arg  *a,
          const char *what,
          guint       column,
          char      **out)
{
  if (a == NULL)
    {
      fail_at (l, column, _("%s needs an axis argument"), what);
      return FALSE;
    }
  if (a->kind != TOK_NAME || napkin_import_find (c->b, NAPKIN_ITEM_AXIS, a->text) < 0)
    {
      fail_at (l, a->column, _("unknown axis “%s”"), a->text);
      return FALSE;
    }
  *out = g_strdup (a->text);
  return TRUE;
}

static gboolean
number_arg (Line       *l,
            const Arg  *a,
            double     *out)
{
  if (a == NULL)
    return TRUE;
  if (a->kind != TOK_NUMBER || !parse_double (a->text, out))
    {
      fail_at (l, a->column, _("expected a number, found “%s”"), a->text);
      return FALSE;
    }
  /* the file format's range: an import never writes what the loader refuses */
  if (fabs (*out) > NAPKIN_MAX_NUMBER)
    {
      fail_at (l, a->column, _("%g is out of range (at most %g either way)"), *out, NAPKIN_MAX_NUMBER);
      return FALSE;
    }
  return TRUE;
}

static gboolean
int_arg (Line       *l,
         const Arg  *a,
         gint64     *out)
{
  if (a == NULL)
    return TRUE;
  if (a->kind != TOK_NUMBER || !parse_int (a->text, out))
    {
      fail_at (l, a->column, _("expected a whole number, found “%s”"), a->text);
      return FALSE;
    }
  return TRUE;
}

/* One letter of an einsum term: a declared axis, not yet in the term (a diagonal such
 * as "aa" has no diagram), and not past the most axes a tensor has. */
static gboolean
spec_letter_ok (Ctx        *c,
                Line       *l,
                const Arg  *spec,
                GPtrArray  *term,
                const char *name)
{
  g_autofree char *shown = napkin_text_quoted (name);

  if (napkin_import_find (c->b, NAPKIN_ITEM_AXIS, name) < 0)
    fail_at (l, spec->column, _("einsum letter %s is not a declared axis"), shown);
  else if (g_ptr_array_find_with_equal_func (term, name, g_str_equal, NULL))
    fail_at (l, spec->column, _("einsum letter %s appears twice in one term: a tensor has each axis once"), shown);
  else if (term->len >= NAPKIN_MAX_RANK)
    fail_at (l, spec->column, _("an einsum term of more than %d axes"), NAPKIN_MAX_RANK);
  return !l->failed;
}

/* einsum("bnhd,bmhd->bhnm"): every letter names a one-letter axis. Checks the
 * operands against the spec and returns the output axes. */
static char **
einsum_spec (Ctx       *c,
             Line      *l,
             const Arg *spec,
             GArray    *operands)
{
  g_auto(GStrv) sides = NULL;
  g_auto(GStrv) ins = NULL;
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func (g_free);

  if (spec->kind != TOK_STRING || (sides = g_strsplit (spec->text, "->", 2)) == NULL || sides[0] == NULL
      || sides[1] == NULL)
    {
      fail_at (l, spec->column, _("expected an einsum string such as \"bnhd,bmhd->bhnm\""));
      return NULL;
    }
  ins = g_strsplit (sides[0], ",", -1);
  if (g_strv_length (ins) != operands->len)
    {
      fail_at (l, spec->column, _("the einsum string has %u operands, the statement %u"), g_strv_length (ins),
               operands->len);
      return NULL;
    }
  for (guint i = 0; ins[i]; i++)
    {
      Operand *o = &g_array_index (operands, Operand, i);
      g_autoptr(GPtrArray) letters = g_ptr_array_new_with_free_func (g_free);

      for (const char *p = g_strstrip (ins[i]); *p; p++)
        {
          char name[2] = { *p, 0 };

          if (!spec_letter_ok (c, l, spec, letters, name))
            return NULL;
          g_ptr_array_add (letters, g_strdup (name));
        }
      g_ptr_array_add (letters, NULL);
      if (o->axes == NULL)
        o->axes = g_strdupv ((char **) letters->pdata);
      else if (!same_axis_set (o->axes, (const char * const *) letters->pdata))
        {
          fail_at (l, o->axes_column, _("the axes of “%s” differ from the einsum string's “%s”"), o->name, ins[i]);
          return NULL;
        }
    }
  for (const char *p = g_strstrip (sides[1]); *p; p++)
    {
      char name[2] = { *p, 0 };

      if (!spec_letter_ok (c, l, spec, out, name))
        return NULL;
      g_ptr_array_add (out, g_strdup (name));
    }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (g_steal_pointer (&out), FALSE);
}

/* One chain line as parsed: operands → result[axes] = fn(args). */
typedef struct
{
  GArray *operands;           /* Operand */
  GArray *args;               /* Arg */
  char   *result;
  guint   result_column;
  char  **result_axes;        /* NULL when not written */
  guint   result_axes_column;
  char   *fn;
  guint   fn_column;
} Chain;

static void
chain_clear (Chain *ch)
{
  g_clear_pointer (&ch->operands, g_array_unref);
  g_clear_pointer (&ch->args, g_array_unref);
  g_clear_pointer (&ch->result, g_free);
  g_clear_pointer (&ch->result_axes, g_strfreev);
  g_clear_pointer (&ch->fn, g_free);
}

/* The operands before "->": names with optional axes. */
static gboolean
parse_operands (Ctx   *c,
                Line  *l,
                Chain *ch)
{
  while (peek (l)->kind == TOK_NAME)
    {
      Operand o = { 0 };
      Tok *t = next (l);

      o.name = g_strdup (t->text);
      o.column = t->column;
      if (!is_identifier (o.name))
        {
          fail_at (l, t->column, _("“%s” is not a name (letters, digits, _)"), t->text);
          operand_clear (&o);
          return FALSE;
        }
      o.axes = parse_axes (c, l, &o.axes_column);
      g_array_append_val (ch->operands, o);
      if (l->failed)
        return FALSE;
    }
  if (ch->operands->len == 0)
    {
      fail_at (l, peek (l)->column, _("expected a value name, found “%s”"), describe (peek (l)));
      return FALSE;
    }
  return expect (l, "->");
}

/* "result[axes] = fn": a new name, its optional axes, the operation's name. */
static gboolean
parse_result (Ctx   *c,
              Line  *l,
              Chain *ch)
{
  Tok *t = next (l);

  if (t->kind != TOK_NAME || !is_identifier (t->text))
    {
      fail_at (l, t->column, _("expected the result's name, found “%s”"), describe (t));
      return FALSE;
    }
  ch->result = g_strdup (t->text);
  ch->result_column = t->column;
  if (g_hash_table_contains (c->values, ch->result))
    {
      Value *v = g_hash_table_lookup (c->values, ch->result);

      fail_at (l, t->column, _("“%s” is already defined on line %u"), ch->result, v->line);
      return FALSE;
    }
  ch->result_axes = parse_axes (c, l, &ch->result_axes_column);
  if (l->failed || !expect (l, "="))
    return FALSE;
  t = next (l);
  if (t->kind != TOK_NAME)
    {
      fail_at (l, t->column, _("expected an operation (einsum, softmax, …), found “%s”"), describe (t));
      return FALSE;
    }
  ch->fn = g_strdup (t->text);
  ch->fn_column = t->column;
  return TRUE;
}

/* The optional "(arg, key=arg, …)" and the end of the line. */
static gboolean
parse_args (Line  *l,
            Chain *ch)
{
  if (is_punct (peek (l), "("))
    {
      next (l);
      while (!is_punct (peek (l), ")"))
        {
          Arg a = { 0 };
          Tok *t = next (l);

          if (t->kind == TOK_NAME && is_punct (peek (l), "="))
            {
              a.key = g_strdup (t->text);
              next (l);
              t = next (l);
            }
          if (t->kind != TOK_NAME && t->kind != TOK_NUMBER && t->kind != TOK_STRING)
            {
              fail_at (l, t->column, _("expected an argument, found “%s”"), describe (t));
              arg_clear (&a);
              return FALSE;
            }
          a.text = g_strdup (t->text);
          a.kind = t->kind;
          a.column = t->column;
          g_array_append_val (ch->args, a);
          if (is_punct (peek (l), ","))
            next (l);
          else if (!is_punct (peek (l), ")"))
            {
              fail_at (l, peek (l)->column, _("expected “,” or “)”, found “%s”"), describe (peek (l)));
              return FALSE;
            }
        }
      next (l);
    }
  if (peek (l)->kind != TOK_END)
    {
      fail_at (l, peek (l)->column, _("unexpected “%s” after the operation"), describe (peek (l)));
      return FALSE;
    }
  if (ch->operands->len > 2)
    {
      fail_at (l, g_array_index (ch->operands, Operand, 2).column, "an operation takes at most two operands");
      return FALSE;
    }
  return TRUE;
}

/* einsum / contract: the output axes from the einsum string or the result's axes. */
static NapkinNode *
contract_node (Ctx   *c,
               Line  *l,
               Chain *ch)
{
  const Arg *spec = find_arg (ch->args, "spec", 0);
  g_autoptr(NapkinNode) node = NULL;

  if (ch->operands->len != 2)
    {
      fail_at (l, ch->fn_column, _("einsum takes two operands here (use rearrange for one)"));
      return NULL;
    }
  node = napkin_node_new (ch->result, NAPKIN_OP_CONTRACT);
  if (spec != NULL)
    {
      g_auto(GStrv) out = einsum_spec (c, l, spec, ch->operands);

      if (out == NULL)
        return NULL;
      if (ch->result_axes != NULL && !same_axis_set (ch->result_axes, (const char * const *) out))
        {
          fail_at (l, ch->result_axes_column, _("the result's axes differ from the einsum string's output"));
          return NULL;
        }
      node->out = ch->result_axes != NULL ? g_strdupv (ch->result_axes) : g_steal_pointer (&out);
    }
  else if (ch->result_axes != NULL)
    node->out = g_strdupv (ch->result_axes);
  else
    {
      fail_at (l, ch->fn_column, _("einsum needs an einsum string or the result's axes"));
      return NULL;
    }
  return g_steal_pointer (&node);
}

/* softmax, rmsnorm, layernorm: an axis, and eps for the norms. */
static NapkinNode *
row_node (Ctx   *c,
          Line  *l,
          Chain *ch)
{
  g_autoptr(NapkinNode) node = napkin_node_new (ch->result, g_str_equal (ch->fn, "softmax") ? NAPKIN_OP_SOFTMAX
                                                                                          : NAPKIN_OP_NORMALIZE);
  NapkinNormKind norm;

  if (!axis_arg (c, l, find_arg (ch->args, "axis", 0), ch->fn, ch->fn_column, &node->axis))
    return NULL;
  if (node->kind == NAPKIN_OP_NORMALIZE)
    {
      napkin_norm_from_string (ch->fn, &norm);
      node->norm = norm;
      if (!number_arg (l, find_arg (ch->args, "eps", 1), &node->eps))
        return NULL;
      if (!(node->eps > 0 && node->eps < 1))
        {
          fail_at (l, find_arg (ch->args, "eps", 1)->column, "eps must be between 0 and 1");
          return NULL;
        }
    }
  return g_steal_pointer (&node);
}

/* causal, window (rows, axis, offset, left, right) or a tensor mask (two operands). */
static NapkinNode *
mask_node (Ctx   *c,
           Line  *l,
           Chain *ch)
{
  g_autoptr(NapkinNode) node = napkin_node_new (ch->result, NAPKIN_OP_MASK);

  if (g_str_equal (ch->fn, "mask"))
    {
      node->mask = NAPKIN_MASK_TENSOR;
      if (ch->operands->len != 2)
        {
          fail_at (l, ch->fn_column, _("a tensor mask takes two operands: the scores and the mask"));
          return NULL;
        }
      return g_steal_pointer (&node);
    }
  node->mask = g_str_equal (ch->fn, "causal") ? NAPKIN_MASK_CAUSAL : NAPKIN_MASK_WINDOW;
  if (!axis_arg (c, l, find_arg (ch->args, "rows", 0), ch->fn, ch->fn_column, &node->rows)
      || !axis_arg (c, l, find_arg (ch->args, "axis", 1), ch->fn, ch->fn_column, &node->axis)
      || !int_arg (l, find_arg (ch->args, "offset", 99), &node->offset)
      || !int_arg (l, find_arg (ch->args, "left", 99), &node->left)
      || !int_arg (l, find_arg (ch->args, "right", 99), &node->right))
    return NULL;
  return g_steal_pointer (&node);
}

/* A map: its arity checked, scale's factor, shift's constant, cast's element type. */
static NapkinNode *
map_node (Ctx        *c,
          Line       *l,
          Chain      *ch,
          NapkinMapFn map_fn)
{
  const NapkinFnInfo *info = napkin_fn_info (map_fn);
  g_autoptr(NapkinNode) node = NULL;
  guint n_in = ch->operands->len;

  if (info->arity != n_in)
    {
      fail_at (l, ch->fn_column, _("%s takes %u operand%s, not %u"), ch->fn, info->arity,
               info->arity == 1 ? "" : "s", n_in);
      return NULL;
    }
  node = napkin_node_new (ch->result, NAPKIN_OP_MAP);
  node->fn = map_fn;
  if (map_fn == NAPKIN_FN_SCALE || map_fn == NAPKIN_FN_SHIFT)
    {
      const Arg *alpha = find_arg (ch->args, "alpha", 0);

      if (alpha == NULL)
        {
          fail_at (l, ch->fn_column, map_fn == NAPKIN_FN_SCALE ? _("scale needs its factor, as in scale(0.125)")
                                                                : _("shift needs its constant, as in shift(1e-6)"));
          return NULL;
        }
      /* scale("1/sqrt(d)"): an expression of axis sizes, which follows them (docs/import.md) */
      if (alpha->kind == TOK_STRING)
        {
          g_autoptr(GError) local = NULL;

          if (!napkin_diagram_eval_expr (c->d, alpha->text, &node->alpha, &local))
            {
              fail_at (l, alpha->column, _("scale(\"%s\"): %s"), alpha->text, local->message);
              return NULL;
            }
          node->alpha_expr = g_strdup (alpha->text);
        }
      else if (!number_arg (l, alpha, &node->alpha))
        return NULL;
    }
  if (map_fn == NAPKIN_FN_CAST)
    {
      const Arg *dt = find_arg (ch->args, "dtype", 0);

      if (dt == NULL || !napkin_dtype_from_string (dt->text, &node->dtype))
        {
          fail_at (l, dt ? dt->column : ch->fn_column, _("cast needs an element type (fp32 bf16 fp16 …)"));
          return NULL;
        }
      node->has_dtype = TRUE;
    }
  if (ch->result_axes != NULL)
    node->out = g_strdupv (ch->result_axes);
  return g_steal_pointer (&node);
}

/* The node of the chain's operation, or NULL with the error set on the line. */
static NapkinNode *
chain_node (Ctx   *c,
            Line  *l,
            Chain *ch)
{
  NapkinMapFn map_fn;
  NapkinReduceOp reduce_op;
  const char *fn = ch->fn;

  if (g_str_equal (fn, "einsum") || g_str_equal (fn, "contract"))
    return contract_node (c, l, ch);
  if (g_str_equal (fn, "softmax") || g_str_equal (fn, "rmsnorm") || g_str_equal (fn, "layernorm"))
    return row_node (c, l, ch);
  if (ch->operands->len == 1 && napkin_reduce_from_string (fn, &reduce_op))
    {
      g_autoptr(NapkinNode) node = napkin_node_new (ch->result, NAPKIN_OP_REDUCE);

      node->reduce = reduce_op;
      if (!axis_arg (c, l, find_arg (ch->args, "axis", 0), fn, ch->fn_column, &node->axis))
        return NULL;
      return g_steal_pointer (&node);
    }
  if (g_str_equal (fn, "causal") || g_str_equal (fn, "window") || g_str_equal (fn, "mask"))
    return mask_node (c, l, ch);
  if (g_str_equal (fn, "rearrange"))
    {
      NapkinNode *node;

      if (ch->result_axes == NULL)
        {
          fail_at (l, ch->result_column, _("rearrange needs the result's axes, as in “%s[b,n,h,d]”"), ch->result);
          return NULL;
        }
      node = napkin_node_new (ch->result, NAPKIN_OP_REARRANGE);
      node->out = g_strdupv (ch->result_axes);
      return node;
    }
  if (napkin_fn_from_string (fn, &map_fn))
    return map_node (c, l, ch, map_fn);
  fail_at (l, ch->fn_column, _("unknown operation “%s”"), fn);
  return NULL;
}

/* The type the added node infers must be the axes written on the result. */
static void
check_result_axes (Ctx        *c,
                   Line       *l,
                   Chain      *ch,
                   const char *id)
{
  const NapkinTensorType *type = napkin_import_node_type (c->b, napkin_import_find (c->b, NAPKIN_ITEM_NODE, id));

  if (type->valid && ch->result_axes != NULL)
    {
      g_auto(GStrv) have = type_axes (c->d, type);

      if (!same_axis_set (ch->result_axes, (const char * const *) have))
        {
          g_autofree char *list = g_strjoinv (",", have);

          fail_at (l, ch->result_axes_column, _("“%s” has axes [%s] by its operation"), ch->result, list);
        }
    }
}

/* As many operands as the operation has inputs (softmax of two values once made a wire
 * to a port it does not have). */
static gboolean
check_arity (Line             *l,
             Chain            *ch,
             const NapkinNode *node)
{
  guint want = napkin_op_n_inputs (node);

  if (ch->operands->len != want)
    fail_at (l, ch->fn_column, _("%s takes %u operand%s, not %u"), ch->fn, want, want == 1 ? "" : "s",
             ch->operands->len);
  return !l->failed;
}

/* The result is a new name, not one of its own operands (“z[a] -> z = exp” once
 * replaced the input z while its wire still pointed at it); and the line's
 * operations fit a diagram Napkin loads. */
static gboolean
check_operands (Ctx   *c,
                Line  *l,
                Chain *ch)
{
  guint added = 1;

  for (guint i = 0; i < ch->operands->len; i++)
    {
      const Operand *o = &g_array_index (ch->operands, Operand, i);

      if (g_str_equal (o->name, ch->result))
        {
          fail_at (l, ch->result_column, _("“%s” is both an operand and the result: give the result a new name"),
                   ch->result);
          return FALSE;
        }
      if (!g_hash_table_contains (c->values, o->name))
        added++;
    }
  {
    g_autofree char *why = napkin_import_over_limit (c->b, NAPKIN_ITEM_NODE, added);

    if (why != NULL)
      fail_at (l, ch->result_column, "%s", why);
  }
  return !l->failed;
}

static void
parse_chain (Ctx  *c,
             Line *l)
{
  Chain ch = { 0 };
  g_autoptr(NapkinNode) node = NULL;
  const char *inputs[2] = { NULL, NULL };
  const char *id;
  guint n_in;

  ch.operands = g_array_new (FALSE, TRUE, sizeof (Operand));
  ch.args = g_array_new (FALSE, TRUE, sizeof (Arg));
  g_array_set_clear_func (ch.operands, (GDestroyNotify) operand_clear);
  g_array_set_clear_func (ch.args, (GDestroyNotify) arg_clear);
  if (!parse_operands (c, l, &ch) || !parse_result (c, l, &ch) || !parse_args (l, &ch)
      || !check_operands (c, l, &ch) || (node = chain_node (c, l, &ch)) == NULL
      || !check_args_used (l, ch.args, ch.fn) || !check_arity (l, &ch, node))
    {
      chain_clear (&ch);
      return;
    }
  n_in = ch.operands->len;
  for (guint i = 0; i < n_in; i++)
    if ((inputs[i] = operand_node (c, l, &g_array_index (ch.operands, Operand, i))) == NULL)
      {
        chain_clear (&ch);
        return;
      }
  node->label = g_strdup (ch.result);
  id = napkin_import_add_node (c->b, g_steal_pointer (&node), ch.result);
  for (guint i = 0; i < n_in; i++)
    napkin_import_add_wire (c->b, inputs[i], id, i);
  add_value (c, ch.result, id, l->line);
  check_result_axes (c, l, &ch, id);
  chain_clear (&ch);
}

static void
parse_output (Ctx  *c,
              Line *l)
{
  next (l);
  c->output_line = l->line;
  while (peek (l)->kind != TOK_END && !l->failed)
    {
      Tok *t = next (l);

      if (t->kind != TOK_NAME || !g_hash_table_contains (c->values, t->text))
        {
          fail_at (l, t->column, _("unknown value “%s”"), describe (t));
          return;
        }
      g_ptr_array_add (c->outputs, g_strdup (t->text));
      if (is_punct (peek (l), ","))
        next (l);
    }
}

static gboolean
parse_line (Ctx        *c,
            const char *text,
            gsize       len,
            guint       line,
            GError    **error)
{
  Line l = { c->source, line, g_array_new (FALSE, TRUE, sizeof (Tok)), 0, error, FALSE };
  gboolean ok = FALSE;

  g_array_set_clear_func (l.toks, (GDestroyNotify) tok_clear);
  if (!tokenize (&l, text, len))
    goto out;
  if (peek (&l)->kind == TOK_END)
    {
      ok = TRUE;
      goto out;
    }
  if (peek (&l)->kind == TOK_NAME && l.toks->len > 1 && is_punct (&g_array_index (l.toks, Tok, 1), "="))
    parse_sizes (c, &l);
  else if (peek (&l)->kind == TOK_NAME && g_str_equal (peek (&l)->text, "dtype")
           && g_array_index (l.toks, Tok, 1).kind == TOK_NAME)
    {
      Tok *t = &g_array_index (l.toks, Tok, 1);

      if (!napkin_dtype_from_string (t->text, &c->dtype))
        fail_at (&l, t->column, "unknown element type “%s” (fp32 tf32 fp16 bf16 fp8-e4m3 fp8-e5m2 int8)", t->text);
      else if (l.toks->len > 3)
        fail_at (&l, g_array_index (l.toks, Tok, 2).column, "unexpected “%s”", g_array_index (l.toks, Tok, 2).text);
    }
  else if (peek (&l)->kind == TOK_NAME && g_str_equal (peek (&l)->text, "output")
           && g_array_index (l.toks, Tok, 1).kind == TOK_NAME
           && !is_punct (&g_array_index (l.toks, Tok, 1), "->"))
    parse_output (c, &l);
  else
    parse_chain (c, &l);
  ok = !l.failed;
out:
  g_array_unref (l.toks);
  return ok;
}

/* An output node for every value asked for: those named by output lines, else every
 * value nothing reads. */
static gboolean
add_outputs (Ctx     *c,
             GError **error)
{
  g_autoptr(GHashTable) asked = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < c->outputs->len; i++)
    g_hash_table_add (asked, c->outputs->pdata[i]);
  for (guint i = 0; i < c->order->len; i++)
    {
      Value *v = c->order->pdata[i];
      gboolean wanted = c->outputs->len > 0 ? g_hash_table_contains (asked, v->name) : v->uses == 0;
      guint index = napkin_import_find (c->b, NAPKIN_ITEM_NODE, v->node);
      const NapkinTensorType *type;

      if (!wanted || napkin_diagram_node (c->d, index)->kind == NAPKIN_OP_INPUT)
        continue;
      type = napkin_import_node_type (c->b, index);
      if (type->valid)
        {
          g_auto(GStrv) axes = type_axes (c->d, type);
          g_autofree char *tensor = napkin_import_fresh_name (c->b, NAPKIN_ITEM_TENSOR, v->name);
          g_autoptr(NapkinNode) out = napkin_node_new (tensor, NAPKIN_OP_OUTPUT);
          g_autofree char *stem = g_strconcat (v->name, "_out", NULL);
          g_autofree char *why = napkin_import_over_limit (c->b, NAPKIN_ITEM_NODE, 1);
          const char *id;

          if (why != NULL)
            {
              g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_INVALID, "%s%sline %u: %s",
                           c->source ? c->source : "", c->source ? ": " : "", v->line, why);
              return FALSE;
            }
          napkin_import_add_tensor (c->b, tensor, axes, type->dtype, NULL);
          g_hash_table_insert (c->tensor_line, g_strdup (tensor), GUINT_TO_POINTER (v->line));
          out->tensor = g_strdup (tensor);
          out->label = g_strdup (v->name);
          id = napkin_import_add_node (c->b, g_steal_pointer (&out), stem);
          napkin_import_add_wire (c->b, v->node, id, 0);
          g_hash_table_insert (c->node_line, g_strdup (id), GUINT_TO_POINTER (v->line));
        }
    }
  return TRUE;
}

/* The diagram as the loader would read it back, each problem on the line of the
 * statement that made its item (docs/import.md). */
static gboolean
check_written (Ctx     *c,
               GError **error)
{
  NapkinItemKind kind = NAPKIN_N_ITEM_KINDS;
  guint index = 0, line = 0;
  g_autofree char *why = napkin_import_check (c->d, &kind, &index);

  if (why == NULL)
    return TRUE;
  if (kind == NAPKIN_ITEM_NODE)
    line = GPOINTER_TO_UINT (g_hash_table_lookup (c->node_line, napkin_diagram_node (c->d, index)->id));
  else if (kind == NAPKIN_ITEM_TENSOR)
    line = GPOINTER_TO_UINT (g_hash_table_lookup (c->tensor_line, napkin_diagram_tensor (c->d, index)->name));
  else if (kind == NAPKIN_ITEM_AXIS)
    line = GPOINTER_TO_UINT (g_hash_table_lookup (c->axis_line, napkin_diagram_axis (c->d, index)->name));
  if (line > 0)
    g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_INVALID, "%s%sline %u: %s",
                 c->source ? c->source : "", c->source ? ": " : "", line, why);
  else
    g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_INVALID, "%s%s%s",
                 c->source ? c->source : "", c->source ? ": " : "", why);
  return FALSE;
}

NapkinDiagram *
napkin_import_einsum (const char  *text,
                      const char  *source,
                      GError     **error)
{
  g_autoptr(NapkinDiagram) d = napkin_diagram_new ();
  g_autoptr(GHashTable) values = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) value_free);
  g_autoptr(GHashTable) node_line = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) tensor_line = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) axis_line = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) order = g_ptr_array_new ();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *shown_source = source ? napkin_text_shown (source, -1, 200) : NULL;
  NapkinImportBuilder b;
  Ctx c = { d, &b, shown_source, NAPKIN_DTYPE_FP32, values, order, node_line, outputs, 0, tensor_line, axis_line };
  const char *p = text;
  guint line = 0;
  gboolean ok = TRUE;

  g_return_val_if_fail (text != NULL, NULL);

  napkin_import_builder_init (&b, d);
  napkin_diagram_freeze_changed (d);
  while (*p && ok)
    {
      const char *end = strchr (p, '\n');
      gsize len = end ? (gsize) (end - p) : strlen (p);
      /* the next line starts after this one's end, CR or not: a last line of a lone
       * CR once never ended */
      const char *next = end ? end + 1 : p + len;

      line++;
      if (len > 0 && p[len - 1] == '\r')
        len--;
      ok = parse_line (&c, p, len, line, error);
      p = next;
    }
  if (ok && order->len == 0)
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX, "%s%sno operations",
                   c.source ? c.source : "", c.source ? ": " : "");
      ok = FALSE;
    }
  ok = ok && add_outputs (&c, error) && check_written (&c, error);
  napkin_import_builder_clear (&b);
  if (!ok)
    return NULL;
  napkin_import_layout (d);
  napkin_diagram_thaw_changed (d);
  return g_steal_pointer (&d);
}
