/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* One thing wrong with a diagram, tied to the item that causes it so that the
 * canvas can mark it. `message` is in words a user knows ("The second input of the
 * contraction “mm” is not connected"); `path` is the JSON path of the place
 * (docs/file-format.md, "Error messages"). */
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
/* The first problem as a NAPKIN_DOCUMENT_ERROR (its words, then its JSON path on a
 * details line: napkin-describe.h), or TRUE. */
gboolean   napkin_diagram_validate    (NapkinDiagram  *self,
                                       GError        **error);

/* The part of a diagram that is complete, for pricing a diagram while it is drawn:
 * a copy without the operations that have a problem and everything they feed, and
 * without the regions that have one. `left_out_nodes` and `left_out_regions`
 * (optional) get the ids and names that were left out, in diagram order. */
NapkinDiagram *napkin_diagram_copy_valid_part (NapkinDiagram  *self,
                                               char         ***left_out_nodes,
                                               char         ***left_out_regions);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinProblem, napkin_problem_free)

G_END_DECLS
