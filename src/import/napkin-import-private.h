/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-import.h"

G_BEGIN_DECLS

/* What the two importers build a diagram through: they add items without history (the
 * diagram is new), keep ids unique and ask for names and types through one index of
 * their own, kept up to date as they add. The diagram's own index is rebuilt after
 * every change, which made each insertion cost the whole diagram (docs/security.md,
 * "Importers"). */
typedef struct
{
  NapkinDiagram *d;
  GHashTable    *names[NAPKIN_N_ITEM_KINDS];   /* axis, tensor, node: name → index + 1 */
  GArray        *sources;                      /* int: node × 2 + port → node index, or -1 */
  GArray        *types;                        /* NapkinTensorType per node below `typed` */
  guint          typed;
} NapkinImportBuilder;

void        napkin_import_builder_init   (NapkinImportBuilder *b, NapkinDiagram *d);
void        napkin_import_builder_clear  (NapkinImportBuilder *b);

void        napkin_import_add_axis    (NapkinImportBuilder *b, const char *name, gint64 size);
void        napkin_import_add_tensor  (NapkinImportBuilder *b, const char *name, char **axes,
                                       NapkinDtype dtype, json_object *extra);
/* Adds a node (taking it) with a fresh id derived from `stem`; returns its id. */
const char *napkin_import_add_node    (NapkinImportBuilder *b, NapkinNode *node, const char *stem);
void        napkin_import_add_wire    (NapkinImportBuilder *b, const char *from, const char *to, guint port);
/* Replaces the node at `index` (taking `node`, which keeps the old id). */
void        napkin_import_replace_node (NapkinImportBuilder *b, guint index, NapkinNode *node);
/* A name no axis, tensor or node uses yet: `stem`, else stem2, stem3, …; an identifier. */
char       *napkin_import_fresh_name  (NapkinImportBuilder *b, NapkinItemKind kind, const char *stem);
/* The index of the axis, tensor or node of that name, or -1. */
int         napkin_import_find        (NapkinImportBuilder *b, NapkinItemKind kind, const char *name);
/* The type of a node's output as the diagram will infer it (napkin_node_infer_type),
 * from the wires added so far; nodes are typed in the order they were added. */
const NapkinTensorType *napkin_import_node_type (NapkinImportBuilder *b, guint node);
/* NULL when `more` items of `kind` fit a diagram Napkin loads (docs/security.md,
 * "Limits"), else why not ("more than 1024 axes, …"), newly allocated. */
char       *napkin_import_over_limit  (NapkinImportBuilder *b, NapkinItemKind kind, guint more);
/* The first problem of the diagram the import made (napkin_diagram_check: its
 * meaning), in words, newly allocated, or NULL; `kind` and `index` name its item. The
 * file format's own rules (names, sizes, ranks, counts) are checked as the input is
 * read; napkin-cli import loads what it writes before writing it. */
char       *napkin_import_check       (NapkinDiagram *d, NapkinItemKind *kind, guint *index);

G_END_DECLS
