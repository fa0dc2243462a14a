/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Text from input (a file's names and labels, a profile's id, an einsum line, a file
 * name) on its way to a terminal or a message (docs/security.md, "Free text"). */

/* How many characters of an input string a message quotes. */
#define NAPKIN_TEXT_QUOTE_CHARS 60

/* Whether `c` may not reach a terminal as it is: C0 and C1 controls, DEL, bidi
 * controls (Trojan Source), line and paragraph separators, the byte-order mark. */
gboolean napkin_text_unichar_is_unsafe (gunichar    c);

/* A copy of `text` (`length` bytes, or up to its NUL when -1) that is safe to print:
 * every unsafe character as \uXXXX, every byte that is not UTF-8 as \xHH; cut after
 * `max_chars` characters of the result with "…" (0: never cut). NULL gives "". */
char    *napkin_text_shown             (const char *text,
                                        gssize      length,
                                        guint       max_chars);

/* napkin_text_shown of at most NAPKIN_TEXT_QUOTE_CHARS characters, between “ and ”. */
char    *napkin_text_quoted            (const char *text);

/* A copy of `text` for drawing, or NULL when it may be drawn as it is: every byte that
 * is not UTF-8, every surrogate and every noncharacter (U+FDD0–U+FDEF, U+xFFFE, U+xFFFF,
 * which cairo refuses in the text it records for PDF and recording surfaces: one such
 * label put the whole drawing in an error state) as U+FFFD. */
char    *napkin_text_drawable          (const char *text);

/* The first byte offset of an unsafe character or of a byte that is not UTF-8, or -1
 * when `text` may be printed as it is. */
gssize   napkin_text_find_unsafe       (const char *text,
                                        gsize       length);

G_END_DECLS
