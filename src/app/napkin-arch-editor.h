/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-arch.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_ARCH_EDITOR (napkin_arch_editor_get_type ())
G_DECLARE_FINAL_TYPE (NapkinArchEditor, napkin_arch_editor, NAPKIN, ARCH_EDITOR, GtkWindow)

/* The what-if dialog: a copy of an architecture profile whose figures
 * (bandwidths, capacities, rates) the user edits. Apply adds it to the default
 * registry (replacing an earlier what-if of the same id) and emits "applied"
 * with the new NapkinArch. */
NapkinArchEditor *napkin_arch_editor_new        (GtkWindow        *parent,
                                                 NapkinArch       *base);
/* The spin button of a figure by its path ("levels.hbm.bandwidth"), for tests. */
GtkSpinButton    *napkin_arch_editor_get_field  (NapkinArchEditor *self,
                                                 const char       *path);
/* What the Apply button does; NULL with an error naming the figure. */
NapkinArch       *napkin_arch_editor_apply      (NapkinArchEditor *self,
                                                 GError          **error);

G_END_DECLS
