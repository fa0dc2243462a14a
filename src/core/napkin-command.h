/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* One undoable edit. Every edit of a diagram is a list of item replacements:
 * (kind, index, before, after), where a missing `before` is an insertion and a
 * missing `after` a removal. Applying runs the list forwards, reverting runs it
 * backwards with the roles swapped, so undo restores the exact earlier state by
 * construction. One class serves every edit (napkin-edit.h builds them), which is
 * why it is final rather than a family of subclasses. */
#define NAPKIN_TYPE_COMMAND (napkin_command_get_type ())
G_DECLARE_FINAL_TYPE (NapkinCommand, napkin_command, NAPKIN, COMMAND, GObject)

NapkinCommand *napkin_command_new        (const char     *label);
const char    *napkin_command_get_label  (NapkinCommand  *self);
/* Copies before and after (either may be NULL). */
void           napkin_command_add        (NapkinCommand  *self,
                                          NapkinItemKind  kind,
                                          guint           index,
                                          gconstpointer   before,
                                          gconstpointer   after);
/* Replaces the diagram's gpus region (NULL: none); copies both. */
void           napkin_command_add_gpus   (NapkinCommand  *self,
                                          const NapkinGpusRegion *before,
                                          const NapkinGpusRegion *after);
guint          napkin_command_get_length (NapkinCommand  *self);
/* Appends other's replacements after self's. */
void           napkin_command_append     (NapkinCommand  *self,
                                          NapkinCommand  *other);
void           napkin_command_apply      (NapkinCommand  *self,
                                          NapkinDiagram  *diagram);
void           napkin_command_revert     (NapkinCommand  *self,
                                          NapkinDiagram  *diagram);

G_END_DECLS
