/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>

#include <glib/gi18n-lib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"

/* The previous version copied as the backup where the file system has no hard links:
 * it need not be a diagram (a save may replace any regular file), so its own bound. */
#define BACKUP_COPY_MAX ((gsize) 1 << 30)

/* Saving: the diagram back to JSON, its unknown keys kept, and written atomically with a
 * backup (docs/file-format.md); the loader is napkin-file.c. */

static void
add_extra (json_object *obj,
           json_object *extra)
{
  if (extra == NULL)
    return;

  json_object_object_foreach (extra, key, value)
    json_object_object_add (obj, key, json_object_get (value));
}

static json_object *
strv_to_json (char **strv)
{
  json_object *array = json_object_new_array ();

  for (guint i = 0; strv && strv[i]; i++)
    json_object_array_add (array, json_object_new_string (strv[i]));
  return array;
}

static json_object *
double_to_json (double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  /* Whole numbers are written as integers so that hand-written files stay tidy. */
  if (value == floor (value) && fabs (value) < 1e15)
    return json_object_new_int64 ((gint64) value);
  g_ascii_dtostr (buf, sizeof buf, value);
  return json_object_new_double_s (value, buf);
}

static void
put_exp_unit (json_object      *obj,
              const NapkinNode *node)
{
  if (node->exp_fma <= 0)
    return;   /* the SFU: the default, not written */
  json_object_object_add (obj, "exp", json_object_new_string ("fma"));
  if (node->exp_fma < 1)
    json_object_object_add (obj, "exp_fraction", double_to_json (node->exp_fma));
}

static json_object *
node_to_json (const NapkinNode *node)
{
  json_object *obj = json_object_new_object ();

  json_object_object_add (obj, "id", json_object_new_string (node->id));
  json_object_object_add (obj, "kind", json_object_new_string (napkin_op_kind_to_string (node->kind)));
  if (node->label != NULL)
    json_object_object_add (obj, "label", json_object_new_string (node->label));
  json_object_object_add (obj, "x", double_to_json (node->x));
  json_object_object_add (obj, "y", double_to_json (node->y));

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      json_object_object_add (obj, "tensor", json_object_new_string (node->tensor));
      break;
    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_REARRANGE:
      json_object_object_add (obj, "out", strv_to_json (node->out));
      break;
    case NAPKIN_OP_MAP:
      json_object_object_add (obj, "fn", json_object_new_string (napkin_fn_info (node->fn)->name));
      if (node->out != NULL)
        json_object_object_add (obj, "out", strv_to_json (node->out));
      /* an expression of axis sizes stays one (docs/file-format.md, "Expressions") */
      if (node->fn == NAPKIN_FN_SCALE || node->fn == NAPKIN_FN_SHIFT)
        json_object_object_add (obj, "alpha", node->alpha_expr ? json_object_new_string (node->alpha_expr)
                                                               : double_to_json (node->alpha));
      put_exp_unit (obj, node);
      break;
    case NAPKIN_OP_REDUCE:
      json_object_object_add (obj, "op", json_object_new_string (napkin_reduce_to_string (node->reduce)));
      json_object_object_add (obj, "axis", json_object_new_string (node->axis));
      break;
    case NAPKIN_OP_SOFTMAX:
      json_object_object_add (obj, "axis", json_object_new_string (node->axis));
      put_exp_unit (obj, node);
      break;
    case NAPKIN_OP_NORMALIZE:
      json_object_object_add (obj, "norm", json_object_new_string (napkin_norm_to_string (node->norm)));
      json_object_object_add (obj, "axis", json_object_new_string (node->axis));
      json_object_object_add (obj, "eps", double_to_json (node->eps));
      break;
    case NAPKIN_OP_MASK:
      json_object_object_add (obj, "mask", json_object_new_string (napkin_mask_to_string (node->mask)));
      if (node->axis != NULL)
        json_object_object_add (obj, "axis", json_object_new_string (node->axis));
      if (node->rows != NULL)
        json_object_object_add (obj, "rows", json_object_new_string (node->rows));
      if (node->offset != 0)
        json_object_object_add (obj, "offset", json_object_new_int64 (node->offset));
      if (node->mask == NAPKIN_MASK_WINDOW)
        {
          json_object_object_add (obj, "left", json_object_new_int64 (node->left));
          json_object_object_add (obj, "right", json_object_new_int64 (node->right));
        }
      break;
    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }

  if (node->has_dtype)
    json_object_object_add (obj, "dtype", json_object_new_string (napkin_dtype_to_string (node->dtype)));
  add_extra (obj, node->extra);
  return obj;
}

static json_object *
region_to_json (const NapkinRegion     *region,
                const NapkinGpusRegion *gpus)
{
  json_object *obj = json_object_new_object ();
  json_object *nodes = json_object_new_array ();
  json_object *marks = json_object_new_object ();

  json_object_object_add (obj, "name", json_object_new_string (region->name));
  json_object_object_add (obj, "level", json_object_new_string (gpus ? "gpus" : napkin_level_to_string (region->level)));
  for (guint i = 0; i < region->nodes->len; i++)
    json_object_array_add (nodes, json_object_new_string (g_ptr_array_index (region->nodes, i)));
  json_object_object_add (obj, "nodes", nodes);

  for (guint i = 0; i < region->marks->len; i++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, i);

      if (mark->kind == NAPKIN_MARK_WHOLE)
        json_object_object_add (marks, mark->axis, json_object_new_string ("whole"));
      else if (gpus != NULL)
        json_object_object_add (marks, mark->axis, json_object_new_string ("parallel"));
      else
        {
          json_object *m = json_object_new_object ();

          json_object_object_add (m, napkin_mark_to_string (mark->kind), json_object_new_int64 (mark->tile));
          json_object_object_add (marks, mark->axis, m);
        }
    }
  json_object_object_add (obj, "marks", marks);
  if (gpus != NULL && gpus->gpus != 0)
    json_object_object_add (obj, "gpus", json_object_new_int (gpus->gpus));
  if (gpus != NULL && gpus->placements->len > 0)
    {
      json_object *placements = json_object_new_object ();

      for (guint i = 0; i < gpus->placements->len; i++)
        {
          const NapkinPlacement *p = &g_array_index (gpus->placements, NapkinPlacement, i);
          json_object *value;

          if (p->split != NULL)
            {
              value = json_object_new_object ();
              json_object_object_add (value, "split", json_object_new_string (p->split));
            }
          else
            value = json_object_new_string ("replicated");
          json_object_object_add (placements, p->tensor, value);
        }
      json_object_object_add (obj, "placements", placements);
    }
  if (gpus != NULL && gpus->chunks >= 2)
    {
      json_object *overlap = json_object_new_object ();

      json_object_object_add (overlap, "chunks", json_object_new_int (gpus->chunks));
      json_object_object_add (overlap, "axis", json_object_new_string (gpus->chunk_axis));
      if (gpus->comm_sms > 0)
        json_object_object_add (overlap, "comm_sms", json_object_new_int (gpus->comm_sms));
      add_extra (overlap, gpus->overlap_extra);
      json_object_object_add (obj, "overlap", overlap);
    }
  if (region->stages != 1)
    json_object_object_add (obj, "stages", json_object_new_int (region->stages));
  if (region->threads != 0)
    json_object_object_add (obj, "threads", json_object_new_int (region->threads));

  if (region->has_rect)
    {
      json_object *rect = json_object_new_array ();

      json_object_array_add (rect, double_to_json (region->x));
      json_object_array_add (rect, double_to_json (region->y));
      json_object_array_add (rect, double_to_json (region->width));
      json_object_array_add (rect, double_to_json (region->height));
      json_object_object_add (obj, "rect", rect);
    }

  add_extra (obj, region->extra);
  return obj;
}

json_object *
napkin_diagram_to_json (NapkinDiagram *self)
{
  json_object *root = json_object_new_object ();
  json_object *array;
  NapkinView *view = napkin_diagram_get_view (self);

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  json_object_object_add (root, "format", json_object_new_string ("napkin"));
  json_object_object_add (root, "version", json_object_new_int (NAPKIN_FORMAT_VERSION));
  if (napkin_diagram_get_title (self) != NULL)
    json_object_object_add (root, "title", json_object_new_string (napkin_diagram_get_title (self)));
  if (napkin_diagram_get_description (self) != NULL)
    json_object_object_add (root, "description",
                            json_object_new_string (napkin_diagram_get_description (self)));

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_axes (self); i++)
    {
      const NapkinAxis *axis = napkin_diagram_axis (self, i);
      json_object *obj = json_object_new_object ();

      json_object_object_add (obj, "name", json_object_new_string (axis->name));
      json_object_object_add (obj, "size", json_object_new_int64 (axis->size));
      add_extra (obj, axis->extra);
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "axes", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_tensors (self); i++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (self, i);
      json_object *obj = json_object_new_object ();

      json_object_object_add (obj, "name", json_object_new_string (tensor->name));
      json_object_object_add (obj, "axes", strv_to_json (tensor->axes));
      json_object_object_add (obj, "dtype", json_object_new_string (napkin_dtype_to_string (tensor->dtype)));
      add_extra (obj, tensor->extra);
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "tensors", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_nodes (self); i++)
    json_object_array_add (array, node_to_json (napkin_diagram_node (self, i)));
  json_object_object_add (root, "nodes", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_wires (self); i++)
    {
      const NapkinWire *wire = napkin_diagram_wire (self, i);
      json_object *obj = json_object_new_object ();

      json_object_object_add (obj, "from", json_object_new_string (wire->from));
      json_object_object_add (obj, "to", json_object_new_string (wire->to));
      json_object_object_add (obj, "port", json_object_new_int (wire->port));
      add_extra (obj, wire->extra);
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "wires", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_regions (self); i++)
    json_object_array_add (array, region_to_json (napkin_diagram_region (self, i), NULL));
  if (napkin_diagram_get_gpus (self) != NULL)   /* last: the outermost (docs/multi-gpu.md) */
    json_object_array_add (array, region_to_json (napkin_diagram_get_gpus (self)->region,
                                                  napkin_diagram_get_gpus (self)));
  json_object_object_add (root, "regions", array);

  {
    json_object *obj = json_object_new_object ();
    json_object *scroll = json_object_new_array ();

    json_object_object_add (obj, "zoom", double_to_json (view->zoom));
    json_object_array_add (scroll, double_to_json (view->scroll_x));
    json_object_array_add (scroll, double_to_json (view->scroll_y));
    json_object_object_add (obj, "scroll", scroll);
    add_extra (obj, view->extra);
    json_object_object_add (root, "view", obj);
  }

  add_extra (root, napkin_diagram_get_extra (self));
  return root;
}

char *
napkin_diagram_save_to_data (NapkinDiagram *self,
                             gsize         *length)
{
  g_autoptr(json_object) root = NULL;
  const char *text;
  size_t len;
  char *result;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  root = napkin_diagram_to_json (self);
  text = json_object_to_json_string_length (root,
                                            JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                            | JSON_C_TO_STRING_NOSLASHESCAPE
                                            | JSON_C_TO_STRING_PRETTY_TAB * 0,
                                            &len);
  /* The indentation of a large diagram can take it past the most the loader reads: a
   * 64 MB compact file became 74 MB pretty-printed, which nothing would open again
   * (docs/security.md, "Saves"). Then it is written compact, as one line. */
  if (len + 1 > NAPKIN_MAX_FILE_SIZE)
    text = json_object_to_json_string_length (root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  result = g_malloc (len + 2);
  memcpy (result, text, len);
  result[len] = '\n';
  result[len + 1] = '\0';
  if (length != NULL)
    *length = len + 1;
  return result;
}

/* Follows symbolic links, so that saving through one replaces its target, not the link. */
static char *
resolve_links (const char *path)
{
  char *resolved = g_strdup (path);

  for (guint i = 0; i < 40 && g_file_test (resolved, G_FILE_TEST_IS_SYMLINK); i++)
    {
      g_autofree char *target = g_file_read_link (resolved, NULL);
      g_autofree char *dir = NULL;

      if (target == NULL)
        break;
      dir = g_path_get_dirname (resolved);
      g_free (resolved);
      resolved = g_path_is_absolute (target) ? g_strdup (target) : g_build_filename (dir, target, NULL);
    }

  return resolved;
}

gboolean
napkin_file_write_all (int         fd,
                       const void *bytes,
                       gsize       length)
{
  const char *data = bytes;

  while (length > 0)
    {
      gssize n = write (fd, data, length);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      data += n;
      length -= n;
    }
  return TRUE;
}

/* "could not save “F”: writing: No space left on device"; without an errno, the
 * step alone ("it is a folder"). */
static gboolean
save_failed (GError    **error,
             const char *verb,
             const char *path,
             const char *what,
             int         saved_errno)
{
  if (saved_errno == 0)
    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                 _("could not %s “%s”: %s"), verb, path, what);
  else
    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                 _("could not %s “%s”: %s: %s"), verb, path, what, g_strerror (saved_errno));
  return FALSE;
}

/* The previous version becomes FILE~ (the name GIO and gedit give a backup). A hard
 * link keeps the old file itself, so no copy is made and nothing is ever half
 * written; file systems without hard links get a copy. */
static gboolean
keep_backup (const char  *path,
             GError     **error)
{
  g_autofree char *backup = g_strconcat (path, "~", NULL);
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *temp = NULL;
  int saved;

  for (guint attempt = 0; attempt < 100; attempt++)
    {
      g_free (temp);
      /* Hidden, like the save's own temporary file: a kill here leaves no clutter in view. */
      temp = g_strdup_printf ("%s%s.%s~.%08x", dir, G_DIR_SEPARATOR_S, base, g_random_int ());
      if (link (path, temp) == 0)
        break;
      saved = errno;
      g_clear_pointer (&temp, g_free);
      if (saved == ENOENT)
        return TRUE;  /* a new file: nothing to keep */
      if (saved != EEXIST)
        break;
    }

  if (temp == NULL)
    {
      g_autofree char *contents = NULL;
      gsize length;
      g_autoptr(GError) local_error = NULL;

      /* the same bounded reader as every file Napkin opens (a regular file: checked) */
      if (!(contents = napkin_file_read_bounded (path, BACKUP_COPY_MAX, &length, &local_error))
          || !g_file_set_contents_full (backup, contents, length,
                                        G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                        0644, &local_error))
        {
          g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                       _("could not save “%s”: keeping the previous version as “%s” failed: %s"),
                       path, backup, local_error->message);
          return FALSE;
        }
      return TRUE;
    }

  if (rename (temp, backup) != 0)
    {
      saved = errno;
      g_unlink (temp);
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("could not save “%s”: keeping the previous version as “%s” failed: %s"),
                   path, backup, g_strerror (saved));
      return FALSE;
    }
  /* When FILE~ already was a link to the same file (two saves at once, or a user's
   * `ln`), rename does nothing and leaves the temporary name: remove it. */
  if (g_unlink (temp) != 0 && errno != ENOENT)
    g_debug ("could not remove “%s”: %s", temp, g_strerror (errno));
  return TRUE;
}

/* A temporary file in the same folder, written and fsync'd, (for a save) the old
 * version kept as FILE~, then renamed over FILE and the folder fsync'd: whenever the
 * process or the machine stops, FILE is the old or the new complete file
 * (docs/security.md). On failure FILE is untouched and the temporary file removed;
 * the error names FILE and the step, never the temporary name. */
struct _NapkinAtomicFile
{
  char       *path;     /* as given, for messages */
  char       *target;   /* links followed */
  char       *dir;
  char       *temp;
  int         fd;
  int         write_errno;   /* the first failed write's */
  const char *verb;
  gboolean    backup;
};

static void
atomic_free (NapkinAtomicFile *file)
{
  if (file->fd >= 0)
    close (file->fd);
  if (file->temp != NULL)
    g_unlink (file->temp);
  g_free (file->path);
  g_free (file->target);
  g_free (file->dir);
  g_free (file->temp);
  g_free (file);
}

static NapkinAtomicFile *
atomic_open (const char  *path,
             const char  *verb,
             gboolean     backup,
             GError     **error)
{
  g_autofree char *base = NULL;
  NapkinAtomicFile *file = g_new0 (NapkinAtomicFile, 1);
  struct stat st;

  file->fd = -1;
  file->path = g_strdup (path);
  file->verb = verb;
  file->backup = backup;
  file->target = resolve_links (path);
  file->dir = g_path_get_dirname (file->target);
  base = g_path_get_basename (file->target);

  if (g_stat (file->target, &st) == 0 && !S_ISREG (st.st_mode))
    {
      save_failed (error, verb, path, S_ISDIR (st.st_mode) ? "not a regular file: it is a folder"
                                                            : "not a regular file", 0);
      atomic_free (file);
      return NULL;
    }
  file->temp = g_strdup_printf ("%s%s.%s.XXXXXX", file->dir, G_DIR_SEPARATOR_S, base);
  file->fd = g_mkstemp_full (file->temp, O_RDWR, backup ? 0644 : 0666);
  if (file->fd < 0)
    {
      save_failed (error, verb, path, "creating a temporary file", errno);
      g_clear_pointer (&file->temp, g_free);   /* nothing to remove */
      atomic_free (file);
      return NULL;
    }
  fcntl (file->fd, F_SETFD, FD_CLOEXEC);
  if (g_stat (file->target, &st) == 0)
    g_chmod (file->temp, st.st_mode & 07777);  /* keep the file's permissions */
  return file;
}

static gboolean
atomic_commit (NapkinAtomicFile  *file,
               GError           **error)
{
  int dir_fd, saved;

  if (file->write_errno != 0)
    {
      save_failed (error, file->verb, file->path, "writing", file->write_errno);
      atomic_free (file);
      return FALSE;
    }
  if (fsync (file->fd) != 0 || close (file->fd) != 0)
    {
      saved = errno;
      file->fd = -1;
      save_failed (error, file->verb, file->path, "writing", saved);
      atomic_free (file);
      return FALSE;
    }
  file->fd = -1;

  if (file->backup && !keep_backup (file->target, error))
    {
      atomic_free (file);
      return FALSE;
    }

  if (g_rename (file->temp, file->target) != 0)
    {
      saved = errno;
      save_failed (error, file->verb, file->path, "replacing the file", saved);
      atomic_free (file);
      return FALSE;
    }
  g_clear_pointer (&file->temp, g_free);   /* renamed: nothing to remove */

  /* The rename itself reaches the disk only with the folder. */
  dir_fd = g_open (file->dir, O_RDONLY, 0);
  if (dir_fd >= 0)
    {
      fsync (dir_fd);
      close (dir_fd);
    }
  atomic_free (file);
  return TRUE;
}

static gboolean
replace_file (const char  *path,
              const char  *data,
              gsize        length,
              const char  *verb,
              gboolean     backup,
              GError     **error)
{
  NapkinAtomicFile *file = atomic_open (path, verb, backup, error);

  if (file == NULL)
    return FALSE;
  napkin_atomic_file_write (file, data, length);
  return atomic_commit (file, error);
}

NapkinAtomicFile *
napkin_atomic_file_new (const char  *path,
                        GError     **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  return atomic_open (path, "write", FALSE, error);
}

gboolean
napkin_atomic_file_write (NapkinAtomicFile *file,
                          const void       *data,
                          gsize             length)
{
  g_return_val_if_fail (file != NULL, FALSE);

  if (file->write_errno != 0)
    return FALSE;
  if (!napkin_file_write_all (file->fd, data, length))
    {
      file->write_errno = errno != 0 ? errno : EIO;
      return FALSE;
    }
  return TRUE;
}

gboolean
napkin_atomic_file_commit (NapkinAtomicFile  *file,
                           GError           **error)
{
  g_return_val_if_fail (file != NULL, FALSE);

  return atomic_commit (file, error);
}

void
napkin_atomic_file_abort (NapkinAtomicFile *file)
{
  if (file != NULL)
    atomic_free (file);
}

gboolean
napkin_diagram_save_to_file (NapkinDiagram  *self,
                             const char     *path,
                             GError        **error)
{
  g_autofree char *data = NULL;
  gsize length;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  data = napkin_diagram_save_to_data (self, &length);
  if (length > NAPKIN_MAX_FILE_SIZE)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                   _("could not save “%s”: the diagram takes %" G_GSIZE_FORMAT " bytes, more than the %d "
                     "Napkin reads back; the file is left as it was"), path, length, NAPKIN_MAX_FILE_SIZE);
      return FALSE;
    }
  return replace_file (path, data, length, "save", TRUE, error);
}

gboolean
napkin_file_write_atomic (const char  *path,
                          const void  *data,
                          gsize        length,
                          GError     **error)
{
  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (data != NULL || length == 0, FALSE);

  return replace_file (path, data, length, "write", FALSE, error);
}
