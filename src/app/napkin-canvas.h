/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-arch.h"
#include "napkin-history.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_CANVAS (napkin_canvas_get_type ())
G_DECLARE_FINAL_TYPE (NapkinCanvas, napkin_canvas, NAPKIN, CANVAS, GtkWidget)

/* The drag-and-drop payload of a palette entry: this prefix and an operation kind. */
#define NAPKIN_CANVAS_PALETTE_PREFIX "napkin-operation:"

GtkWidget     *napkin_canvas_new                  (void);
NapkinHistory *napkin_canvas_get_history          (NapkinCanvas   *self);
void           napkin_canvas_set_history          (NapkinCanvas   *self,
                                                   NapkinHistory  *history);
double         napkin_canvas_get_zoom             (NapkinCanvas   *self);
void           napkin_canvas_set_zoom             (NapkinCanvas   *self,
                                                   double          zoom);
void           napkin_canvas_zoom_to_fit          (NapkinCanvas   *self);

/* Selection: operations by id, or one region, or one wire (by its input port). */
char         **napkin_canvas_dup_selected_nodes   (NapkinCanvas   *self);
const char    *napkin_canvas_get_selected_region  (NapkinCanvas   *self);
gboolean       napkin_canvas_get_selected_wire    (NapkinCanvas   *self,
                                                   const char    **to,
                                                   guint          *port);
void           napkin_canvas_select_node          (NapkinCanvas   *self,
                                                   const char     *id,
                                                   gboolean        extend);
/* The document's first view fits all of it, however small (an imported diagram, laid
 * out by the importer, is first seen whole: docs/editor.md, "The first screen"). */
void           napkin_canvas_show_whole           (NapkinCanvas       *self);
/* Selects exactly these operations (ids the diagram lacks are skipped) and scrolls,
 * never zooms, until they are in view. */
void           napkin_canvas_select_nodes         (NapkinCanvas       *self,
                                                   const char * const *ids);
void           napkin_canvas_select_region        (NapkinCanvas   *self,
                                                   const char     *name);
void           napkin_canvas_select_all           (NapkinCanvas   *self);
void           napkin_canvas_clear_selection      (NapkinCanvas   *self);

/* Edits, each one undo step. */
char          *napkin_canvas_add_node             (NapkinCanvas   *self,
                                                   NapkinOpKind    kind,
                                                   double          x,
                                                   double          y,
                                                   GError        **error);
/* A new operation where the user is working (docs/editor.md, "Placing new
 * operations"): with one operation selected, right of it and wired from it; else at
 * the pointer when it is over the canvas, else in the middle of the view; always
 * in free space, and scrolled into view. */
char          *napkin_canvas_add_node_at_center   (NapkinCanvas   *self,
                                                   NapkinOpKind    kind,
                                                   GError        **error);
/* Connects from → to.port as the canvas does on release: refused (FALSE, with the
 * reason) when the wire would make a cycle or a problem on its target; a new output
 * takes the wire's axes and a contraction with both inputs its inferred output
 * axes, in the same undo step. */
gboolean       napkin_canvas_connect              (NapkinCanvas   *self,
                                                   const char     *from,
                                                   const char     *to,
                                                   guint           port,
                                                   GError        **error);
gboolean       napkin_canvas_delete_selection     (NapkinCanvas   *self,
                                                   GError        **error);
char          *napkin_canvas_add_region           (NapkinCanvas   *self,
                                                   NapkinLevel     level,
                                                   GError        **error);
/* A gpus region (docs/multi-gpu.md) around the selected operations, 2 GPUs, split
 * along the first axis the shard plan accepts; refused when the diagram has one. */
char          *napkin_canvas_add_gpus_region      (NapkinCanvas   *self,
                                                   GError        **error);
void           napkin_canvas_copy                 (NapkinCanvas   *self);
void           napkin_canvas_paste                (NapkinCanvas   *self);

/* Problems the performance model finds (infeasible regions), marked in red like
 * the validator's; the canvas keeps a reference. */
void           napkin_canvas_set_analysis_problems (NapkinCanvas  *self,
                                                    GPtrArray     *problems);
gboolean       napkin_canvas_is_region_flagged    (NapkinCanvas   *self,
                                                   const char     *name);

/* The architecture whose tiles new regions and marks start with (tune's choice);
 * NULL: tensor-core sized guesses. */
void           napkin_canvas_set_arch             (NapkinCanvas   *self,
                                                   NapkinArch     *arch);
NapkinArch    *napkin_canvas_get_arch             (NapkinCanvas   *self);
/* The axis the canvas made for an empty diagram's first operation ("i"), while it
 * may still be unused: the inspector drops it once the user's own axes replace it. */
const char    *napkin_canvas_get_placeholder_axis (NapkinCanvas   *self);

/* The region tool: a rubber band then draws a region at this level. */
void           napkin_canvas_set_region_tool      (NapkinCanvas   *self,
                                                   gboolean        active,
                                                   NapkinLevel     level);

/* What the canvas shows, in the words its accessible description gives:
 * "Diagram: 4 operations, 2 tensors, 1 region (shared memory)". */
char          *napkin_canvas_dup_description      (NapkinCanvas   *self);
/* Whether it draws on dark paper (it follows AdwStyleManager:dark). */
gboolean       napkin_canvas_get_dark             (NapkinCanvas   *self);

G_END_DECLS
