/* SPDX-License-Identifier: GPL-3.0-or-later */
/* fopencookie is a GNU extension. */
#define _GNU_SOURCE
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "napkin-cli.h"
#include "napkin-file.h"
#include "napkin-text.h"

/* The last line of defence of docs/security.md, "Free text": whatever a command prints,
 * from whatever input, reaches the terminal without a control character, a bidi
 * control or a byte that is not UTF-8. Every message that quotes input escapes and
 * cuts it at the source (napkin_text_shown); this guard catches what one forgot. It
 * writes \uXXXX for an unsafe character, which inside a JSON string is the same
 * character, and \xHH for a byte that is not UTF-8. Newlines and tabs pass. */

typedef struct
{
  int    fd;
  guint8 pending[4];   /* the start of a character cut by the stream's buffer */
  gsize  n_pending;
} Guard;

/* Appends the safe form of text[0, length) to out; returns how many bytes at the end
 * are the start of a character still to come (only when `more` may follow). */
static gsize
filter (GString    *out,
        const char *text,
        gsize       length,
        gboolean    more)
{
  gsize i = 0;

  while (i < length)
    {
      gsize run = i;
      gunichar c;

      /* printable ASCII, newlines and tabs, in bulk */
      while (run < length && (((guint8) text[run] >= 0x20 && (guint8) text[run] < 0x7f)
                              || text[run] == '\n' || text[run] == '\t'))
        run++;
      g_string_append_len (out, text + i, run - i);
      i = run;
      if (i == length)
        break;
      c = g_utf8_get_char_validated (text + i, length - i);
      if (c == (gunichar) -2 && more && length - i < 4)
        return length - i;
      if (c == (gunichar) -1 || c == (gunichar) -2 || (c == 0 && text[i] != '\0'))
        {
          g_string_append_printf (out, "\\x%02x", (guint8) text[i]);
          i++;
          continue;
        }
      if (napkin_text_unichar_is_unsafe (c))
        g_string_append_printf (out, "\\u%04x", c);
      else
        g_string_append_len (out, text + i, g_utf8_next_char (text + i) - (text + i));
      i = g_utf8_next_char (text + i) - text;
    }
  return 0;
}

static ssize_t
guard_write (void       *cookie,
             const char *buf,
             size_t      size)
{
  Guard *guard = cookie;
  g_autoptr(GString) in = g_string_new_len ((const char *) guard->pending, guard->n_pending);
  g_autoptr(GString) out = g_string_sized_new (size + 16);
  gsize left;

  g_string_append_len (in, buf, size);
  left = filter (out, in->str, in->len, TRUE);
  memcpy (guard->pending, in->str + in->len - left, left);
  guard->n_pending = left;
  if (!napkin_file_write_all (guard->fd, out->str, out->len))
    return -1;
  return size;
}

static int
guard_close (void *cookie)
{
  Guard *guard = cookie;
  g_autoptr(GString) out = g_string_new (NULL);
  gboolean ok;

  filter (out, (const char *) guard->pending, guard->n_pending, FALSE);
  ok = napkin_file_write_all (guard->fd, out->str, out->len);
  g_free (guard);
  return ok ? 0 : EOF;
}

static FILE *
guard_stream (FILE *stream)
{
  cookie_io_functions_t io = { NULL, guard_write, NULL, guard_close };
  Guard *guard = g_new0 (Guard, 1);
  FILE *guarded;

  guard->fd = fileno (stream);
  guarded = fopencookie (guard, "w", io);
  if (guarded == NULL)
    {
      g_free (guard);
      return stream;
    }
  return guarded;
}

static FILE *raw_stdout, *raw_stderr;

/* At exit: the guards write what they hold and are freed; the plain streams take over
 * for whatever is printed after (a sanitizer's report writes to the descriptor). */
static void
unguard (void)
{
  FILE *out = stdout, *err = stderr;

  if (out != raw_stdout)
    {
      stdout = raw_stdout;
      fclose (out);
    }
  if (err != raw_stderr)
    {
      stderr = raw_stderr;
      fclose (err);
    }
}

void
napkin_cli_guard_output (void)
{
  gboolean tty = isatty (STDOUT_FILENO);

  fflush (stdout);
  fflush (stderr);
  raw_stdout = stdout;
  raw_stderr = stderr;
  stdout = guard_stream (stdout);
  stderr = guard_stream (stderr);
  atexit (unguard);
  setvbuf (stdout, NULL, tty ? _IOLBF : _IOFBF, 0);
  setvbuf (stderr, NULL, _IOLBF, 0);
}
