/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-history.h"

G_BEGIN_DECLS

/* Copy and paste of part of a diagram. The clipboard holds a small .napkin document:
 * the chosen operations, the wires between them, the regions all of whose operations
 * were chosen, and the axes and tensors these need. Pasting merges it into a diagram
 * as one undo step, renaming what would clash. */

char     *napkin_diagram_copy_nodes (NapkinDiagram      *self,
                                     const char *const  *ids,
                                     gsize              *length);
/* Offsets positions by (dx, dy). new_ids, if given, receives the pasted operations' ids. */
gboolean  napkin_edit_paste         (NapkinHistory      *history,
                                     const char         *data,
                                     gssize              length,
                                     double              dx,
                                     double              dy,
                                     GPtrArray         **new_ids,
                                     GError            **error);

G_END_DECLS
