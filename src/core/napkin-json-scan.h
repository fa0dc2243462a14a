/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A scanner over JSON text that allocates nothing per value, for the loader
 * (napkin-file.c): it checks a whole document first, then walks it so that json-c
 * only ever builds small trees (docs/security.md, "Limits"). Positions are byte
 * offsets into the text; a span is [start, end). */

/* The deepest a value may nest (the root is level 1); json-c's tokener limit. */
#define NAPKIN_JSON_MAX_DEPTH 64

/* Checks that the text is one JSON document (RFC 8259: no comments, no trailing
 * commas, no NaN, no single quotes, no raw control characters in strings) nested at
 * most NAPKIN_JSON_MAX_DEPTH deep, whose strings and field names are UTF-8 without
 * NUL (\u0000) and without a lone half of a surrogate pair. Errors: syntax as
 * "not valid JSON (line L, column C: WHAT)" (NAPKIN_DOCUMENT_ERROR_PARSE; the
 * loader says "The file is not a Napkin diagram: it is " before it);
 * text as "nodes[3].label: not valid UTF-8 text" (NAPKIN_DOCUMENT_ERROR_FORMAT).
 * On success *root is the span of the root value. */
gboolean napkin_json_check           (const char  *data,
                                      gsize        length,
                                      gsize       *root_start,
                                      gsize       *root_end,
                                      GError     **error);

/* The following walk a checked document only. */

/* End of the value that starts at `start`. */
gsize    napkin_json_value_end       (const char  *data,
                                      gsize        length,
                                      gsize        start);

typedef struct
{
  const char *data;
  gsize       length;
  gsize       pos;
} NapkinJsonIter;

/* Over the members of the object, or the elements of the array, at `start`. */
void     napkin_json_iter_init       (NapkinJsonIter *iter,
                                      const char     *data,
                                      gsize           length,
                                      gsize           start);
/* The next member's key (its quotes included) and value; FALSE at the end. */
gboolean napkin_json_iter_next_member (NapkinJsonIter *iter,
                                       gsize          *key_start,
                                       gsize          *key_end,
                                       gsize          *value_start,
                                       gsize          *value_end);
gboolean napkin_json_iter_next       (NapkinJsonIter *iter,
                                      gsize          *value_start,
                                      gsize          *value_end);

/* The text of the string literal spanning [start, end), quotes included, without
 * its escapes: a new NUL-terminated string (the check refused NUL inside). */
char    *napkin_json_string_text     (const char  *data,
                                      gsize        start,
                                      gsize        end);

/* About how many bytes of memory json-c takes for the value in [start, end)
 * (measured on json-c 0.16: an object about 800, an array about 160, a string 64
 * plus its length, a number 72 to 104), and how many values it holds. */
gsize    napkin_json_tree_cost       (const char  *data,
                                      gsize        start,
                                      gsize        end,
                                      gsize       *n_values);

G_END_DECLS
