/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Building a diagram from code (docs/import.md): einsum-style text, or the graph JSON
 * that src/import/napkin_export.py writes from a PyTorch module. */

#define NAPKIN_IMPORT_ERROR (napkin_import_error_quark ())

typedef enum
{
  NAPKIN_IMPORT_ERROR_SYNTAX,       /* the text or JSON cannot be read; names the line and column */
  NAPKIN_IMPORT_ERROR_UNSUPPORTED,  /* an operation outside the covered set; names it and its source line */
  NAPKIN_IMPORT_ERROR_INVALID,      /* shapes or axes that do not fit together */
} NapkinImportError;

GQuark         napkin_import_error_quark (void);

/* Einsum-style text (docs/import.md, "Einsum text"). `source` names the text in errors
 * (a file name) and may be NULL. */
NapkinDiagram *napkin_import_einsum      (const char  *text,
                                          const char  *source,
                                          GError     **error);

/* The exporter's graph JSON (docs/import.md, "Graph JSON"). */
NapkinDiagram *napkin_import_graph       (const char  *json_text,
                                          gsize        length,
                                          const char  *source,
                                          GError     **error);

/* A file of either kind: graph JSON when it starts with '{', einsum text otherwise. */
NapkinDiagram *napkin_import_file        (const char  *path,
                                          GError     **error);

/* Places every operation: the level-banded layout of the papers (inputs left, data
 * flowing right, operations of one level stacked). For a diagram an import has just
 * made: it moves the nodes in place, outside any history. */
void           napkin_import_layout      (NapkinDiagram *diagram);

G_END_DECLS
