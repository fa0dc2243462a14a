/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The file at the root of a build tree that names the source tree's data/ and docs/
 * folders, one a line (written by meson, never installed). */
#define NAPKIN_UNINSTALLED_MARKER "napkin-uninstalled.txt"

/* The folders Napkin reads its data from (architecture profiles, examples), most
 * important first: $NAPKIN_DATA_DIR, $XDG_DATA_HOME/napkin, then (without
 * $NAPKIN_DATA_DIR) the source tree's data/ for a program run from its build tree
 * (napkin_uninstalled_dir), each $XDG_DATA_DIRS entry's napkin/, then the datadir
 * Napkin was installed to. An installed program never reads a source tree
 * (docs/packaging.md). Without duplicates. */
GStrv              napkin_data_dirs               (void);
/* For a program run from its build tree: the source tree's "data" or "docs" folder
 * named by the build tree's NAPKIN_UNINSTALLED_MARKER above the executable; NULL for
 * an installed program. */
char              *napkin_uninstalled_dir         (const char *what);
/* The first data dir's `relative` path that exists, or NULL. */
char              *napkin_data_find               (const char *relative);

G_END_DECLS
