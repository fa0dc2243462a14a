/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-command.h"

G_BEGIN_DECLS

/* The undo stack of one document. Every change to the diagram goes through
 * napkin_history_push (usually via napkin-edit.h); a gesture that makes several
 * changes wraps them in begin_group/end_group and undoes as one step. */
#define NAPKIN_TYPE_HISTORY (napkin_history_get_type ())
G_DECLARE_FINAL_TYPE (NapkinHistory, napkin_history, NAPKIN, HISTORY, GObject)

NapkinHistory *napkin_history_new            (NapkinDiagram  *diagram);
NapkinDiagram *napkin_history_get_diagram    (NapkinHistory  *self);
/* Applies the command and records it. */
void           napkin_history_push           (NapkinHistory  *self,
                                              NapkinCommand  *command);
gboolean       napkin_history_undo           (NapkinHistory  *self);
gboolean       napkin_history_redo           (NapkinHistory  *self);
gboolean       napkin_history_can_undo       (NapkinHistory  *self);
gboolean       napkin_history_can_redo       (NapkinHistory  *self);
const char    *napkin_history_get_undo_label (NapkinHistory  *self);
const char    *napkin_history_get_redo_label (NapkinHistory  *self);
void           napkin_history_begin_group    (NapkinHistory  *self,
                                              const char     *label);
void           napkin_history_end_group      (NapkinHistory  *self);
/* Undoes what was pushed since begin_group and drops the group. */
void           napkin_history_cancel_group   (NapkinHistory  *self);
void           napkin_history_set_saved      (NapkinHistory  *self);
/* A change kept outside the undo stack (a run added to the document's history):
 * modified until the next set_saved, whatever is undone or redone. */
void           napkin_history_set_unsaved    (NapkinHistory  *self);
gboolean       napkin_history_get_modified   (NapkinHistory  *self);
guint          napkin_history_get_depth      (NapkinHistory  *self);

G_END_DECLS
