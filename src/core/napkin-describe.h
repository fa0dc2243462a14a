/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Errors in words a user knows (docs/file-format.md, "Error messages"): a place in a
 * document is named by what it is ("the second output axis of the contraction “mm”"),
 * and the JSON path comes last, as details that the editor shows on a line of its own:
 *
 *   The second output axis of the contraction “mm”: unknown axis “x” (JSON path: nodes[2].out[0])
 *
 * One line, no control character (docs/security.md): a terminal prints it as it is. */
#define NAPKIN_ERROR_PATH_START " (JSON path: "

/* The place at `path` in words, from the document's JSON (`root`, may be NULL) or
 * from a diagram (`diagram`, may be NULL); without either, a generic description. */
char       *napkin_describe_place       (json_object   *root,
                                         NapkinDiagram *diagram,
                                         const char    *path);
/* "first", "second", … for 0, 1, …; "number 12" past the tenth (newly allocated). */
char       *napkin_describe_ordinal     (guint          index);
/* "contraction", "reduction", … : what a user calls an operation of that kind. */
const char *napkin_describe_kind        (NapkinOpKind   kind);
/* `words`, then the details with `path` (none when path is NULL or empty). */
char       *napkin_error_with_path      (const char    *words,
                                         const char    *path);
/* An error message without its details (the words), newly allocated. */
char       *napkin_error_summary        (const char    *message);
/* The JSON path of the details, newly allocated, or NULL when there is none. */
char       *napkin_error_path           (const char    *message);

G_END_DECLS
