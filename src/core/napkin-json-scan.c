/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include <json-c/json.h>

#include "napkin-error.h"
#include "napkin-json-scan.h"

/* The check is one pass over the bytes with an explicit stack of the open
 * containers (no recursion, no allocation per value). Syntax errors use json-c's
 * words, so that messages read as they did when json-c parsed the whole file. */

typedef struct
{
  gboolean is_object;
  gsize    index;       /* arrays: the current element */
  gsize    key_start;   /* objects: the current member's key, quotes included */
  gsize    key_end;
} Level;

typedef struct
{
  const char *data;
  gsize       length;
  gsize       pos;
  Level       levels[NAPKIN_JSON_MAX_DEPTH];
  guint       depth;    /* containers open */
  GError    **error;
} Scan;

static gboolean
is_space (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static gsize
skip_space (const char *data,
            gsize       length,
            gsize       pos)
{
  while (pos < length && is_space (data[pos]))
    pos++;
  return pos;
}

static gboolean
syntax_error (Scan       *s,
              gsize       at,
              const char *what)
{
  int line = 1, column = 1;

  for (gsize i = 0; i < at && i < s->length; i++)
    {
      if (s->data[i] == '\n')
        line++, column = 1;
      else
        column++;
    }
  g_set_error (s->error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE,
               _("not valid JSON (line %d, column %d: %s)"), line, column, what);
  return FALSE;
}

static gboolean
json_c_error (Scan                    *s,
              gsize                    at,
              enum json_tokener_error  what)
{
  return syntax_error (s, at, json_tokener_error_desc (what));
}

/* The path of the value the first `levels` open containers lead to, as the loader
 * writes paths: "nodes[3].label", "$" for the root. Key characters that would
 * print as control characters are escaped. */
static char *
build_path (Scan  *s,
            guint  levels)
{
  GString *path = g_string_new (NULL);

  for (guint i = 0; i < levels; i++)
    {
      const Level *level = &s->levels[i];

      if (!level->is_object)
        g_string_append_printf (path, "[%" G_GSIZE_FORMAT "]", level->index);
      else if (level->key_end > level->key_start)
        {
          g_autofree char *key = napkin_json_string_text (s->data, level->key_start, level->key_end);

          if (path->len > 0)
            g_string_append_c (path, '.');
          for (const char *c = key; *c; c++)
            {
              if ((guchar) *c < 0x20 || *c == 0x7f || *c == '\\' || *c == '"')
                {
                  g_autofree char *one = g_strndup (c, 1);
                  g_autofree char *shown = g_strescape (one, NULL);

                  g_string_append (path, shown);
                }
              else
                g_string_append_c (path, *c);
            }
        }
    }
  if (path->len == 0)
    g_string_append_c (path, '$');
  return g_string_free (path, FALSE);
}

/* A problem with text: named by its path, as the loader names the others. */
G_GNUC_PRINTF (3, 4)
static gboolean
text_error (Scan       *s,
            gboolean    is_key,
            const char *format,
            ...)
{
  /* A field name belongs to the innermost open object; a value to its member. */
  g_autofree char *path = build_path (s, is_key ? s->depth - 1 : s->depth);
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (s->error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_FORMAT, "%s: %s", path, message);
  return FALSE;
}

static int
hex4 (const char *p)
{
  int v = 0;

  for (int i = 0; i < 4; i++)
    {
      int d = g_ascii_xdigit_value (p[i]);

      if (d < 0)
        return -1;
      v = v * 16 + d;
    }
  return v;
}

static gboolean
lone_surrogate (Scan     *s,
                gboolean  is_key,
                int       u)
{
  return text_error (s, is_key, "%s\\u%04X%s half of a surrogate pair without its other half, not a character",
                     is_key ? "a field name holds " : "", (guint) u, is_key ? "," : " is");
}

/* A string at s->pos (its opening quote): escapes, UTF-8, no NUL, no lone surrogate. */
static gboolean
scan_string (Scan     *s,
             gboolean  is_key)
{
  gsize start = s->pos;
  gsize i = start + 1;

  for (;;)
    {
      guchar c;

      if (i >= s->length)
        return json_c_error (s, i, json_tokener_error_parse_eof);
      c = s->data[i];
      if (c == '"')
        break;
      if (c < 0x20)
        {
          static const char *names[0x20] = { [0x08] = "\\b", [0x09] = "\\t", [0x0a] = "\\n", [0x0c] = "\\f",
                                             [0x0d] = "\\r" };

          return text_error (s, is_key, "%sa raw control character (U+%04X); JSON writes it as %s",
                             is_key ? "a field name holds " : "", c, names[c] ? names[c] : "\\u00XX");
        }
      if (c != '\\')
        {
          i++;
          continue;
        }
      if (i + 1 >= s->length)
        return json_c_error (s, i + 1, json_tokener_error_parse_eof);
      switch (s->data[i + 1])
        {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
          i += 2;
          break;

        case 'u':
          {
            int u = i + 6 <= s->length ? hex4 (s->data + i + 2) : -1;

            if (u < 0)
              return json_c_error (s, i, json_tokener_error_parse_string);
            if (u == 0)
              return text_error (s, is_key, is_key ? "a field name holds \\u0000 (a NUL character), which is not allowed"
                                                   : "\\u0000 (a NUL character) is not allowed in text");
            if (u >= 0xdc00 && u <= 0xdfff)
              return lone_surrogate (s, is_key, u);
            if (u >= 0xd800 && u <= 0xdbff)
              {
                int low = i + 12 <= s->length && s->data[i + 6] == '\\' && s->data[i + 7] == 'u'
                          ? hex4 (s->data + i + 8) : -1;

                if (low < 0xdc00 || low > 0xdfff)
                  return lone_surrogate (s, is_key, u);
                i += 6;
              }
            i += 6;
            break;
          }

        default:
          return json_c_error (s, i, json_tokener_error_parse_string);
        }
    }

  /* Escapes are ASCII: the raw bytes are UTF-8 exactly when the text is. */
  if (!g_utf8_validate_len (s->data + start + 1, i - start - 1, NULL))
    return text_error (s, is_key, is_key ? "a field name is not valid UTF-8 text" : "not valid UTF-8 text");
  s->pos = i + 1;
  return TRUE;
}

static gboolean
is_digit (Scan  *s,
          gsize  i)
{
  return i < s->length && g_ascii_isdigit (s->data[i]);
}

/* RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static gboolean
scan_number (Scan *s)
{
  gsize i = s->pos;

  if (s->data[i] == '-')
    i++;
  if (!is_digit (s, i))
    return json_c_error (s, i, json_tokener_error_parse_number);
  if (s->data[i] == '0')
    i++;
  else
    while (is_digit (s, i))
      i++;
  if (i < s->length && s->data[i] == '.')
    {
      i++;
      if (!is_digit (s, i))
        return json_c_error (s, i, json_tokener_error_parse_number);
      while (is_digit (s, i))
        i++;
    }
  if (i < s->length && (s->data[i] == 'e' || s->data[i] == 'E'))
    {
      i++;
      if (i < s->length && (s->data[i] == '+' || s->data[i] == '-'))
        i++;
      if (!is_digit (s, i))
        return json_c_error (s, i, json_tokener_error_parse_number);
      while (is_digit (s, i))
        i++;
    }
  s->pos = i;
  return TRUE;
}

static gboolean
scan_literal (Scan *s)
{
  static const struct { const char *word; enum json_tokener_error error; } literals[] = {
    { "true", json_tokener_error_parse_boolean },
    { "false", json_tokener_error_parse_boolean },
    { "null", json_tokener_error_parse_null },
  };

  for (guint k = 0; k < G_N_ELEMENTS (literals); k++)
    {
      gsize n = strlen (literals[k].word);

      if (s->data[s->pos] != literals[k].word[0])
        continue;
      for (gsize j = 0; j < n; j++)
        if (s->pos + j >= s->length || s->data[s->pos + j] != literals[k].word[j])
          return json_c_error (s, s->pos + j, s->pos + j >= s->length ? json_tokener_error_parse_eof
                                                                       : literals[k].error);
      s->pos += n;
      return TRUE;
    }
  return json_c_error (s, s->pos, json_tokener_error_parse_unexpected);
}

typedef enum
{
  EXPECT_VALUE,
  EXPECT_KEY,
  AFTER_VALUE,
} State;

gboolean
napkin_json_check (const char  *data,
                   gsize        length,
                   gsize       *root_start,
                   gsize       *root_end,
                   GError     **error)
{
  Scan s = { data, length, 0, { { 0 } }, 0, error };
  State state = EXPECT_VALUE;

  g_return_val_if_fail (data != NULL || length == 0, FALSE);

  s.pos = skip_space (data, length, 0);
  *root_start = s.pos;
  for (;;)
    {
      if (state == AFTER_VALUE && s.depth == 0)
        break;   /* the root's end, before what follows it */
      s.pos = skip_space (data, length, s.pos);
      if (s.pos >= length)
        return json_c_error (&s, s.pos, json_tokener_error_parse_eof);

      if (state == EXPECT_KEY)
        {
          Level *level = &s.levels[s.depth - 1];

          if (data[s.pos] != '"')
            return json_c_error (&s, s.pos, json_tokener_error_parse_object_key_name);
          level->key_start = level->key_end = 0;
          level->key_start = s.pos;
          if (!scan_string (&s, TRUE))
            return FALSE;
          level->key_end = s.pos;
          s.pos = skip_space (data, length, s.pos);
          if (s.pos >= length)
            return json_c_error (&s, s.pos, json_tokener_error_parse_eof);
          if (data[s.pos] != ':')
            return json_c_error (&s, s.pos, json_tokener_error_parse_object_key_sep);
          s.pos++;
          state = EXPECT_VALUE;
          continue;
        }

      if (state == AFTER_VALUE)
        {
          Level *level = &s.levels[s.depth - 1];
          char c = data[s.pos];

          if (c == ',')
            {
              s.pos++;
              if (level->is_object)
                state = EXPECT_KEY;
              else
                {
                  level->index++;
                  state = EXPECT_VALUE;
                }
            }
          else if (c == (level->is_object ? '}' : ']'))
            {
              s.pos++;
              s.depth--;
            }
          else
            return json_c_error (&s, s.pos, level->is_object ? json_tokener_error_parse_object_value_sep
                                                             : json_tokener_error_parse_array);
          continue;
        }

      /* A value: its level is one below the open containers. */
      if (s.depth + 1 > NAPKIN_JSON_MAX_DEPTH)
        return json_c_error (&s, s.pos, json_tokener_error_depth);
      switch (data[s.pos])
        {
        case '{':
        case '[':
          {
            gboolean is_object = data[s.pos] == '{';
            Level *level = &s.levels[s.depth++];

            level->is_object = is_object;
            level->index = 0;
            level->key_start = level->key_end = 0;
            s.pos = skip_space (data, length, s.pos + 1);
            if (s.pos < length && data[s.pos] == (is_object ? '}' : ']'))
              {
                s.pos++;
                s.depth--;
                state = AFTER_VALUE;
              }
            else
              state = is_object ? EXPECT_KEY : EXPECT_VALUE;
            break;
          }

        case '"':
          if (!scan_string (&s, FALSE))
            return FALSE;
          state = AFTER_VALUE;
          break;

        case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
        case '9':
          if (!scan_number (&s))
            return FALSE;
          state = AFTER_VALUE;
          break;

        default:
          if (!scan_literal (&s))
            return FALSE;
          state = AFTER_VALUE;
          break;
        }
    }

  *root_end = s.pos;
  s.pos = skip_space (data, length, s.pos);
  if (s.pos < length)
    {
      /* A NUL ends C text: a second document could hide behind one. */
      if (data[s.pos] == '\0')
        {
          g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE,
                       _("not valid JSON: there is text after the end of its JSON document"));
          return FALSE;
        }
      return json_c_error (&s, s.pos, json_tokener_error_parse_unexpected);
    }
  return TRUE;
}

/* ---- walking a checked document ---------------------------------------------------------- */

static gsize
string_end (const char *data,
            gsize       length,
            gsize       start)
{
  gsize i = start + 1;

  while (i < length && data[i] != '"')
    i += data[i] == '\\' ? 2 : 1;
  return MIN (i + 1, length);
}

gsize
napkin_json_value_end (const char *data,
                       gsize       length,
                       gsize       start)
{
  guint depth = 0;
  char c;

  if (start >= length)
    return length;
  c = data[start];
  if (c == '"')
    return string_end (data, length, start);
  if (c != '{' && c != '[')
    {
      gsize i = start;

      while (i < length && !is_space (data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']')
        i++;
      return i;
    }
  for (gsize i = start; i < length; i++)
    {
      c = data[i];
      if (c == '"')
        i = string_end (data, length, i) - 1;
      else if (c == '{' || c == '[')
        depth++;
      else if ((c == '}' || c == ']') && --depth == 0)
        return i + 1;
    }
  return length;
}

void
napkin_json_iter_init (NapkinJsonIter *iter,
                       const char     *data,
                       gsize           length,
                       gsize           start)
{
  iter->data = data;
  iter->length = length;
  iter->pos = start + 1;
}

static gboolean
iter_advance (NapkinJsonIter *iter)
{
  iter->pos = skip_space (iter->data, iter->length, iter->pos);
  if (iter->pos < iter->length && iter->data[iter->pos] == ',')
    iter->pos = skip_space (iter->data, iter->length, iter->pos + 1);
  return iter->pos < iter->length && iter->data[iter->pos] != '}' && iter->data[iter->pos] != ']';
}

gboolean
napkin_json_iter_next_member (NapkinJsonIter *iter,
                              gsize          *key_start,
                              gsize          *key_end,
                              gsize          *value_start,
                              gsize          *value_end)
{
  if (!iter_advance (iter))
    return FALSE;
  *key_start = iter->pos;
  *key_end = string_end (iter->data, iter->length, iter->pos);
  iter->pos = skip_space (iter->data, iter->length, *key_end) + 1;  /* past the colon */
  *value_start = skip_space (iter->data, iter->length, iter->pos);
  *value_end = napkin_json_value_end (iter->data, iter->length, *value_start);
  iter->pos = *value_end;
  return TRUE;
}

gboolean
napkin_json_iter_next (NapkinJsonIter *iter,
                       gsize          *value_start,
                       gsize          *value_end)
{
  if (!iter_advance (iter))
    return FALSE;
  *value_start = iter->pos;
  *value_end = napkin_json_value_end (iter->data, iter->length, *value_start);
  iter->pos = *value_end;
  return TRUE;
}

char *
napkin_json_string_text (const char *data,
                         gsize       start,
                         gsize       end)
{
  GString *text = g_string_sized_new (end - start);

  for (gsize i = start + 1; i + 1 < end; i++)
    {
      gunichar u;

      if (data[i] != '\\')
        {
          g_string_append_c (text, data[i]);
          continue;
        }
      i++;
      switch (data[i])
        {
        case 'b': g_string_append_c (text, '\b'); break;
        case 'f': g_string_append_c (text, '\f'); break;
        case 'n': g_string_append_c (text, '\n'); break;
        case 'r': g_string_append_c (text, '\r'); break;
        case 't': g_string_append_c (text, '\t'); break;
        case 'u':
          u = hex4 (data + i + 1);
          i += 4;
          if (u >= 0xd800 && u <= 0xdbff)
            {
              u = 0x10000 + ((u - 0xd800) << 10) + (hex4 (data + i + 3) - 0xdc00);
              i += 6;
            }
          g_string_append_unichar (text, u);
          break;
        default:
          g_string_append_c (text, data[i]);   /* " \ / */
          break;
        }
    }
  return g_string_free (text, FALSE);
}

gsize
napkin_json_tree_cost (const char *data,
                       gsize       start,
                       gsize       end,
                       gsize      *n_values)
{
  gsize cost = 0, values = 0;

  for (gsize i = start; i < end; i++)
    {
      switch (data[i])
        {
        case '{':
          cost += 800, values++;
          break;
        case '[':
          cost += 160, values++;
          break;
        case ':':
          cost += 40, values--;   /* the key before it was counted as a string */
          break;
        case ',':
          cost += 8;
          break;
        case '"':
          {
            gsize e = string_end (data, end, i);

            cost += 64 + (e - i), values++;
            i = e - 1;
            break;
          }
        case 'n':
          cost += 8, values++, i += 3;
          break;
        case 't':
        case 'f':
        case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
        case '9':
          cost += 104, values++;
          while (i + 1 < end && !is_space (data[i + 1]) && data[i + 1] != ',' && data[i + 1] != '}'
                 && data[i + 1] != ']')
            i++;
          break;
        default:
          break;
        }
    }
  if (n_values != NULL)
    *n_values = values;
  return cost;
}
