/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Crash recovery's store (docs/security.md §4): one folder of snapshots of
 * unsaved documents, each `<id>.napkin` (written with napkin_diagram_save_to_file,
 * so always one complete document) beside `<id>.json`, which says which document
 * it is and which process owns it. A snapshot whose owner is no longer running is
 * a crash survivor: napkin_autosave_list_recoverable returns it. GLib only; safe to
 * call from a worker thread on a diagram that thread owns. */

typedef struct
{
  char   *id;     /* a UUID: names the pair of files */
  char   *path;   /* the document's own file, NULL for an untitled one */
  char   *title;  /* what the window showed, for the recovery question */
  gint64  time;   /* when the snapshot was written, seconds since 1970 (UTC) */
  int     pid;    /* the process that wrote it (no longer running, if listed) */
} NapkinAutosaveEntry;

/* $NAPKIN_AUTOSAVE_DIR if set (tests), else $XDG_STATE_HOME/napkin/autosave. */
char                *napkin_autosave_default_dir      (void);
/* A fresh id for one document's autosaves. */
char                *napkin_autosave_new_id           (void);
/* Writes (or replaces) the snapshot `id` of `diagram`, owned by this process;
 * `path` is the document's own file or NULL. Creates `dir` (mode 0700). */
gboolean             napkin_autosave_write            (const char           *dir,
                                                       const char           *id,
                                                       NapkinDiagram        *diagram,
                                                       const char           *path,
                                                       const char           *title,
                                                       GError              **error);
/* Deletes the snapshot `id`, its side file and what an interrupted write left of
 * it; nothing there is not an error. Used on save, close and discard. */
gboolean             napkin_autosave_remove           (const char           *dir,
                                                       const char           *id,
                                                       GError              **error);
/* The snapshots whose owner is not running (a dead process, or one from before a
 * reboot), newest first, as NapkinAutosaveEntry. Snapshots of running processes,
 * this one included, are left out; corrupt or foreign files are skipped with a
 * warning. A missing folder gives an empty array. */
GPtrArray           *napkin_autosave_list_recoverable (const char           *dir);
/* The document of a listed snapshot. */
NapkinDiagram       *napkin_autosave_load             (const char           *dir,
                                                       const NapkinAutosaveEntry *entry,
                                                       GError              **error);
/* Makes this process the owner of a listed snapshot (it has been recovered into a
 * window here), so that no other instance offers it again. */
gboolean             napkin_autosave_claim            (const char           *dir,
                                                       const NapkinAutosaveEntry *entry,
                                                       GError              **error);
/* Whether process `pid` with that start time (and boot id, if known) is running;
 * exposed for tests. */
gboolean             napkin_autosave_owner_is_alive   (int                   pid,
                                                       guint64               start_time,
                                                       const char           *boot_id);
/* This process's start time as napkin_autosave_owner_is_alive wants it (clock
 * ticks since boot on Linux; 0 where unknown). */
guint64              napkin_autosave_process_start_time (int                 pid);
void                 napkin_autosave_entry_free       (NapkinAutosaveEntry  *entry);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinAutosaveEntry, napkin_autosave_entry_free)

G_END_DECLS
