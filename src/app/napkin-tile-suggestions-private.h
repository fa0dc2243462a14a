/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* The table pieces the suggestion list and the derivation view share. */

/* A cell `width` characters wide, lined up with the rest of its column through `group`. */
GtkWidget *_napkin_tile_suggestions_cell_new (GtkSizeGroup *group,
                                              int           width,
                                              float         xalign,
                                              const char   *text);
/* A list row named `name`: `numbers` (a box of cells) over a dim, wrapped caption. */
GtkWidget *_napkin_tile_suggestions_row_new  (GtkWidget    *numbers,
                                              const char   *caption,
                                              const char   *name);

/* Empties a list, keeping its rows alive in `retired` (which holds references):
 * GTK 4.8 can keep a removed row of a popover as its pointer focus, and a finalized
 * one is then looked up when the popover closes (a Gtk-CRITICAL in
 * gtk_widget_is_ancestor). The caller frees `retired` when it is disposed. */
void       _napkin_tile_suggestions_retire_rows (GtkListBox *list,
                                                 GPtrArray  *retired);

G_END_DECLS
