/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-history.h"

G_BEGIN_DECLS

/* Every edit the editor makes, each one undoable step on the history. They refuse
 * values that can never be right (a zero size, an unknown axis, a duplicate name)
 * with a NAPKIN_DOCUMENT_ERROR and change nothing; a diagram that is incomplete
 * while being drawn (an unconnected port) is allowed, and napkin_diagram_check
 * reports it. */

gboolean napkin_edit_add_node         (NapkinHistory     *history,
                                       const NapkinNode  *node,
                                       GError           **error);
gboolean napkin_edit_remove_node      (NapkinHistory     *history,
                                       const char        *id,
                                       GError           **error);
gboolean napkin_edit_move_node        (NapkinHistory     *history,
                                       const char        *id,
                                       double             x,
                                       double             y,
                                       GError           **error);
/* Replaces a node's parameters (label, kind-specific fields, dtype); the id stays. */
gboolean napkin_edit_update_node      (NapkinHistory     *history,
                                       const NapkinNode  *node,
                                       GError           **error);
/* Replaces whatever wire fed that port. */
gboolean napkin_edit_connect          (NapkinHistory     *history,
                                       const char        *from,
                                       const char        *to,
                                       guint              port,
                                       GError           **error);
gboolean napkin_edit_disconnect       (NapkinHistory     *history,
                                       const char        *to,
                                       guint              port,
                                       GError           **error);
gboolean napkin_edit_add_axis         (NapkinHistory     *history,
                                       const char        *name,
                                       gint64             size,
                                       GError           **error);
gboolean napkin_edit_set_axis_size    (NapkinHistory     *history,
                                       const char        *name,
                                       gint64             size,
                                       GError           **error);
/* The same; a region tile the new size no longer holds is cut to the axis in the same
 * undo step, and *note (when not NULL) says which (NULL where none was cut). */
gboolean napkin_edit_set_axis_size_noting (NapkinHistory  *history,
                                           const char     *name,
                                           gint64          size,
                                           char          **note,
                                           GError        **error);
/* Refused while a tensor or an operation uses the axis (the message names it);
 * region marks on the axis go with it. */
gboolean napkin_edit_remove_axis      (NapkinHistory     *history,
                                       const char        *name,
                                       GError           **error);
/* A device tensor's new name, everywhere it is used: the inputs and outputs that
 * read or write it (and their labels when they showed the old name). */
gboolean napkin_edit_rename_tensor    (NapkinHistory     *history,
                                       const char        *tensor,
                                       const char        *new_name,
                                       GError           **error);
gboolean napkin_edit_add_tensor       (NapkinHistory     *history,
                                       const NapkinTensor *tensor,
                                       GError           **error);
gboolean napkin_edit_set_tensor_axes  (NapkinHistory     *history,
                                       const char        *tensor,
                                       const char *const *axes,
                                       GError           **error);
/* The element type of a device tensor, or (for any other node) of its result. */
gboolean napkin_edit_set_tensor_dtype (NapkinHistory     *history,
                                       const char        *tensor,
                                       NapkinDtype        dtype,
                                       GError           **error);
gboolean napkin_edit_set_node_dtype   (NapkinHistory     *history,
                                       const char        *id,
                                       gboolean           has_dtype,
                                       NapkinDtype        dtype,
                                       GError           **error);
gboolean napkin_edit_add_region       (NapkinHistory     *history,
                                       const NapkinRegion *region,
                                       GError           **error);
gboolean napkin_edit_remove_region    (NapkinHistory     *history,
                                       const char        *name,
                                       GError           **error);
gboolean napkin_edit_set_region_rect  (NapkinHistory     *history,
                                       const char        *name,
                                       double             x,
                                       double             y,
                                       double             width,
                                       double             height,
                                       GError           **error);
gboolean napkin_edit_set_region_nodes (NapkinHistory     *history,
                                       const char        *name,
                                       const char *const *ids,
                                       GError           **error);
gboolean napkin_edit_set_region_level (NapkinHistory     *history,
                                       const char        *name,
                                       NapkinLevel        level,
                                       GError           **error);
/* 0 lets the model choose. */
gboolean napkin_edit_set_region_threads (NapkinHistory   *history,
                                       const char        *name,
                                       guint              threads,
                                       GError           **error);
gboolean napkin_edit_set_region_stages (NapkinHistory    *history,
                                       const char        *name,
                                       guint              stages,
                                       GError           **error);
/* tile is ignored for NAPKIN_MARK_WHOLE. */
gboolean napkin_edit_set_mark         (NapkinHistory     *history,
                                       const char        *region,
                                       const char        *axis,
                                       NapkinMarkKind     kind,
                                       gint64             tile,
                                       GError           **error);
/* Replaces the gpus region (docs/multi-gpu.md) with a copy of `gpus` (NULL removes
 * it): creating it, changing its operations, parallel axis, GPU count, placements,
 * overlap or rectangle. Refuses what the file format refuses (a stream mark, two
 * parallel axes, an unknown tensor or axis, chunks outside 2–64). */
gboolean napkin_edit_set_gpus         (NapkinHistory          *history,
                                       const NapkinGpusRegion *gpus,
                                       const char             *label,
                                       GError                **error);

/* Edits the document until its regions are those of `target` (the document relabeled:
 * a tune candidate applied, a derivation, a kernel's fix): regions `target` has and the
 * document lacks are added, the others take its level, stages, threads and marks.
 * Several edits: the caller groups them into one undo step. */
gboolean napkin_edit_relabel_like     (NapkinHistory     *history,
                                       NapkinDiagram     *target,
                                       GError           **error);

G_END_DECLS
