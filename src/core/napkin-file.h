/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Loading always checks the structure: JSON shape, types, ranges and references.
 * With NAPKIN_LOAD_VALIDATE it also checks the meaning (napkin_diagram_validate):
 * the command line and the model want that; the editor opens structurally sound
 * diagrams that still have problems and shows them on the canvas. */
typedef enum
{
  NAPKIN_LOAD_DEFAULT  = 0,
  NAPKIN_LOAD_VALIDATE = 1 << 0,
} NapkinLoadFlags;

/* Largest file the loader reads: bounds memory on hostile input (docs/security.md). */
#define NAPKIN_MAX_FILE_SIZE (64 * 1024 * 1024)

/* Reads a whole file that Napkin opens (a diagram, a profile, a file to import, a side
 * file): regular files only (a pipe, a device, a socket or a folder is refused at once,
 * without waiting for a writer; a symbolic link is followed to what it names), refused
 * before reading when larger than `max` bytes, and never more than `max` + 1 bytes read,
 * so that a file growing meanwhile costs bounded memory (docs/security.md, "Limits").
 * The text gets a NUL after its `length` bytes. Errors: NAPKIN_DOCUMENT_ERROR_IO
 * ("could not read “F”: it is a pipe, not a regular file") or _LIMIT ("“F” is larger
 * than N bytes, the most Napkin reads"), the file's name escaped for a terminal. */
char          *napkin_file_read_bounded       (const char      *path,
                                               gsize            max,
                                               gsize           *length,
                                               GError         **error);
NapkinDiagram *napkin_diagram_load_from_data  (const char      *data,
                                               gssize           length,
                                               NapkinLoadFlags  flags,
                                               GError         **error);
NapkinDiagram *napkin_diagram_load_from_file  (const char      *path,
                                               NapkinLoadFlags  flags,
                                               GError         **error);
char          *napkin_diagram_save_to_data    (NapkinDiagram   *self,
                                               gsize           *length);
gboolean       napkin_diagram_save_to_file    (NapkinDiagram   *self,
                                               const char      *path,
                                               GError         **error);
/* Writes `data` to `path` as a save does, without the backup: a temporary file in
 * the same folder, fsync'd and renamed over `path`. On failure `path` is untouched,
 * the temporary file is removed, and the error names `path` and the step ("could not
 * write “x.pdf”: writing: No space left on device"). A folder, a device or a pipe at
 * `path` is refused; symbolic links are followed. For exports and generated code. */
gboolean       napkin_file_write_atomic       (const char      *path,
                                               const void      *data,
                                               gsize            length,
                                               GError         **error);
/* The same, written piece by piece (Cairo's stream exports): writes go to the
 * temporary file, the first failure is kept and reported by commit, which renames
 * the file into place or removes it; commit and abort free the object. */
typedef struct _NapkinAtomicFile NapkinAtomicFile;

NapkinAtomicFile *napkin_atomic_file_new      (const char       *path,
                                               GError          **error);
gboolean       napkin_atomic_file_write       (NapkinAtomicFile *file,
                                               const void       *data,
                                               gsize             length);
gboolean       napkin_atomic_file_commit      (NapkinAtomicFile *file,
                                               GError          **error);
void           napkin_atomic_file_abort       (NapkinAtomicFile *file);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinAtomicFile, napkin_atomic_file_abort)

/* Writes all `length` bytes to `fd`, again after a short write or EINTR; FALSE with
 * errno set on an error. */
gboolean       napkin_file_write_all          (int              fd,
                                               const void      *data,
                                               gsize            length);

/* The JSON object of the whole document (new reference). */
json_object   *napkin_diagram_to_json         (NapkinDiagram   *self);

G_END_DECLS
