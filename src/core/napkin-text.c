/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-text.h"

gboolean
napkin_text_unichar_is_unsafe (gunichar c)
{
  return c < 0x20 || (c >= 0x7f && c < 0xa0)            /* C0, DEL, C1 */
         || c == 0x061c || c == 0x200e || c == 0x200f    /* bidi marks */
         || (c >= 0x202a && c <= 0x202e)                 /* bidi embeddings and overrides */
         || (c >= 0x2066 && c <= 0x2069)                 /* bidi isolates */
         || c == 0x2028 || c == 0x2029                   /* line and paragraph separators */
         || c == 0xfeff;                                 /* byte-order mark */
}

/* The character at p (at most `left` bytes), its length in *size; (gunichar) -1
 * for a byte that does not start a valid UTF-8 sequence (*size 1). */
static gunichar
next_char (const char *p,
           gsize       left,
           gsize      *size)
{
  gunichar c = g_utf8_get_char_validated (p, left);

  if (c == (gunichar) -1 || c == (gunichar) -2 || (c == 0 && left > 0 && *p != '\0'))
    {
      *size = 1;
      return (gunichar) -1;
    }
  *size = c == 0 ? 1 : (gsize) (g_utf8_next_char (p) - p);
  return c;
}

static gboolean
undrawable (gunichar c)
{
  return c == (gunichar) -1 || (c >= 0xd800 && c <= 0xdfff) || (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe;
}

char *
napkin_text_drawable (const char *text)
{
  gsize len, i, size;
  GString *out;

  if (text == NULL)
    return NULL;
  len = strlen (text);
  for (i = 0; i < len; i += size)
    {
      if ((guchar) text[i] < 0x80)
        {
          size = 1;
          continue;
        }
      if (undrawable (next_char (text + i, len - i, &size)))
        break;
    }
  if (i >= len)
    return NULL;
  out = g_string_new_len (text, i);
  for (; i < len; i += size)
    {
      gunichar c = next_char (text + i, len - i, &size);

      if (undrawable (c))
        g_string_append_unichar (out, 0xfffd);
      else
        g_string_append_len (out, text + i, size);
    }
  return g_string_free (out, FALSE);
}

gssize
napkin_text_find_unsafe (const char *text,
                         gsize       length)
{
  for (gsize i = 0, size; i < length; i += size)
    {
      gunichar c = next_char (text + i, length - i, &size);

      if (c == (gunichar) -1 || napkin_text_unichar_is_unsafe (c))
        return i;
    }
  return -1;
}

char *
napkin_text_shown (const char *text,
                   gssize      length,
                   guint       max_chars)
{
  GString *out = g_string_new (NULL);
  gsize len, chars = 0;

  if (text == NULL)
    return g_string_free (out, FALSE);
  len = length < 0 ? strlen (text) : (gsize) length;
  for (gsize i = 0, size; i < len; i += size)
    {
      gunichar c = next_char (text + i, len - i, &size);

      if (max_chars > 0 && chars >= max_chars)
        {
          g_string_append (out, "…");
          break;
        }
      if (c == (gunichar) -1)
        g_string_append_printf (out, "\\x%02x", (guint8) text[i]);
      else if (napkin_text_unichar_is_unsafe (c))
        g_string_append_printf (out, "\\u%04x", c);
      else
        g_string_append_len (out, text + i, size);
      chars++;
    }
  return g_string_free (out, FALSE);
}

char *
napkin_text_quoted (const char *text)
{
  g_autofree char *shown = napkin_text_shown (text, -1, NAPKIN_TEXT_QUOTE_CHARS);

  return g_strdup_printf (_("“%s”"), shown);
}
