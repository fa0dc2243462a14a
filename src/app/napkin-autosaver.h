/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "napkin-history.h"

G_BEGIN_DECLS

/* Autosave of one window's document (docs/security.md §4): once the document has
 * been idle for the delay (3 s; $NAPKIN_AUTOSAVE_DELAY_MS for tests) after a
 * change, and at the latest ten delays after the first unsaved change, a snapshot
 * goes to the autosave store (napkin-autosave.h) from a worker thread; when the
 * document is no longer modified (saved, or undone back to its saved state) the
 * snapshot is removed. Signal "failed" (message): a snapshot could not be
 * written, once until one is again. */
#define NAPKIN_TYPE_AUTOSAVER (napkin_autosaver_get_type ())
G_DECLARE_FINAL_TYPE (NapkinAutosaver, napkin_autosaver, NAPKIN, AUTOSAVER, GObject)

NapkinAutosaver *napkin_autosaver_new          (NapkinHistory   *history);
/* The document's own file, recorded in the side file (NULL: untitled). */
void             napkin_autosaver_set_file     (NapkinAutosaver *self,
                                                GFile           *file);
/* Continues a recovered snapshot under its id, instead of a new one. */
void             napkin_autosaver_adopt        (NapkinAutosaver *self,
                                                const char      *id);
/* Deletes the snapshot now and forgets pending writes: on save, close, discard. */
void             napkin_autosaver_discard      (NapkinAutosaver *self);
const char      *napkin_autosaver_get_id       (NapkinAutosaver *self);
const char      *napkin_autosaver_get_dir      (NapkinAutosaver *self);
/* Snapshots written so far (for tests). */
guint            napkin_autosaver_get_n_writes (NapkinAutosaver *self);

G_END_DECLS
