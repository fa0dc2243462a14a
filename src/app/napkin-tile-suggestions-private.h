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

G_END_DECLS
