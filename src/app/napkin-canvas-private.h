/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-canvas.h"

G_BEGIN_DECLS

/* The pointer paths of the gestures, in widget coordinates, so that tests can drive
 * exactly what a drag runs (GTK 4 has no public way to synthesize events). */
void     _napkin_canvas_drag_begin     (NapkinCanvas    *self,
                                        double           x,
                                        double           y,
                                        GdkModifierType  state);
void     _napkin_canvas_drag_update    (NapkinCanvas    *self,
                                        double           dx,
                                        double           dy);
void     _napkin_canvas_drag_end       (NapkinCanvas    *self,
                                        double           dx,
                                        double           dy);
gboolean _napkin_canvas_drop_string    (NapkinCanvas    *self,
                                        const char      *payload,
                                        double           x,
                                        double           y);
void     _napkin_canvas_doc_to_widget  (NapkinCanvas    *self,
                                        double           doc_x,
                                        double           doc_y,
                                        double          *x,
                                        double          *y);
gboolean _napkin_canvas_key_pressed   (NapkinCanvas    *self,
                                        guint            keyval,
                                        GdkModifierType  state);
/* The context menu a right click at (x, y) opens (it may change the selection to
 * what is under the pointer, as the click does), and its popover once shown. */
GMenuModel *_napkin_canvas_context_menu     (NapkinCanvas    *self,
                                             double           x,
                                             double           y);
GtkWidget  *_napkin_canvas_get_context_menu (NapkinCanvas    *self);
/* What the analysis pane marked on an operation (left out of a partial
 * prediction), or NULL. */
const char *_napkin_canvas_node_mark        (NapkinCanvas    *self,
                                             const char      *id);
/* The live connection feedback: NULL while the hovered port accepts the wire. */
const char *_napkin_canvas_get_connect_problem (NapkinCanvas *self);

G_END_DECLS
