/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Measured runs kept with the document: the root field "runs" of a .napkin file,
 * an array of the runner's JSON results, oldest first (docs/file-format.md). The
 * field lives in the diagram's root `extra`, which copies share and nobody
 * modifies, so adding a run replaces the extra object instead of changing it. */

#define NAPKIN_RUNS_MAX 100   /* older runs are dropped beyond this */

/* Borrowed; NULL when the document has no runs or "runs" is not an array. */
json_object *napkin_diagram_get_runs   (NapkinDiagram  *self);
guint        napkin_diagram_n_runs     (NapkinDiagram  *self);
/* Appends a reference to result (a JSON object). */
void         napkin_diagram_add_run    (NapkinDiagram  *self,
                                        json_object    *result);
void         napkin_diagram_clear_runs (NapkinDiagram  *self);

G_END_DECLS
