/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-import.h"

G_BEGIN_DECLS

/* Helpers shared by the two importers: they add items without history (the diagram
 * is new) and keep ids unique. */
void        napkin_import_add_axis    (NapkinDiagram *d, const char *name, gint64 size);
void        napkin_import_add_tensor  (NapkinDiagram *d, const char *name, char **axes,
                                       NapkinDtype dtype, json_object *extra);
/* Adds a node (taking it) with a fresh id derived from `stem`; returns its id. */
const char *napkin_import_add_node    (NapkinDiagram *d, NapkinNode *node, const char *stem);
void        napkin_import_add_wire    (NapkinDiagram *d, const char *from, const char *to, guint port);
/* A name no axis, tensor or node uses yet: `stem`, else stem2, stem3, …; an identifier. */
char       *napkin_import_fresh_name  (NapkinDiagram *d, NapkinItemKind kind, const char *stem);

G_END_DECLS
