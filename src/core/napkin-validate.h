/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* One thing wrong with a diagram, tied to the item that causes it so that the
 * canvas can mark it. `message` starts with `path`. */
typedef struct
{
  NapkinItemKind kind;
  guint          index;
  char          *path;
  char          *message;
} NapkinProblem;

void       napkin_problem_free        (NapkinProblem  *problem);

/* Every problem, in a fixed order (structure, operations, regions). */
GPtrArray *napkin_diagram_check       (NapkinDiagram  *self);
/* The first problem as a NAPKIN_DOCUMENT_ERROR, or TRUE. */
gboolean   napkin_diagram_validate    (NapkinDiagram  *self,
                                       GError        **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinProblem, napkin_problem_free)

G_END_DECLS
