/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-canvas.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_INSPECTOR (napkin_inspector_get_type ())
G_DECLARE_FINAL_TYPE (NapkinInspector, napkin_inspector, NAPKIN, INSPECTOR, GtkWidget)

/* Edits what the canvas has selected (and the axis sizes), each edit one undo step
 * through the canvas's history; refused values show the core's error inline. */
GtkWidget    *napkin_inspector_new         (void);
void          napkin_inspector_set_canvas  (NapkinInspector *self,
                                            NapkinCanvas    *canvas);
/* Puts the focus on the field with that widget name (all its text selected, so
 * typing replaces it) once the grid shows the current selection. */
void          napkin_inspector_focus_field (NapkinInspector *self,
                                            const char      *name);
/* The text of the last refused edit, or NULL (for tests). */
const char   *napkin_inspector_get_error   (NapkinInspector *self);

G_END_DECLS
