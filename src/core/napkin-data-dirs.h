/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The folders Napkin reads its data from (architecture profiles, examples), most
 * important first: $NAPKIN_DATA_DIR (a source tree's data/, set for uninstalled runs
 * by the test environment, `meson devenv` and build-aux/run-*), $XDG_DATA_HOME/napkin,
 * each $XDG_DATA_DIRS entry's napkin/, then the datadir Napkin was installed to.
 * Never the build machine's source tree (docs/packaging.md). Without duplicates. */
GStrv              napkin_data_dirs               (void);
/* The first data dir's `relative` path that exists, or NULL. */
char              *napkin_data_find               (const char *relative);

G_END_DECLS
