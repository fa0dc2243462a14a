/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <utime.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-module-cache.h"

/* A cache file: one header line, then the NVRTC log and the module:
 *   napkin-module 1 KEY LOG_BYTES CODE_BYTES SHA256(LOG CODE)\n
 * The checksum finds a truncated or damaged file before the driver loads it. */
#define MAGIC "napkin-module"
#define FORMAT_VERSION 1
#define SUFFIX ".module"
#define MAX_MODULE_FILE (256 * 1024 * 1024)

char *
napkin_module_cache_default_dir (void)
{
  return g_build_filename (g_get_user_cache_dir (), "napkin", "modules", NULL);
}

void
napkin_module_cache_info_clear (NapkinModuleCacheInfo *info)
{
  g_clear_pointer (&info->key, g_free);
  g_clear_pointer (&info->path, g_free);
  g_clear_pointer (&info->note, g_free);
  info->cached = FALSE;
  info->ms = 0;
}

static char *
cache_key (const char *source,
           const char *arch)
{
  g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *fingerprint = napkin_nvrtc_fingerprint (arch);

  g_checksum_update (sum, (const guchar *) MAGIC " 1\n", -1);
  g_checksum_update (sum, (const guchar *) (fingerprint ? fingerprint : ""), -1);
  g_checksum_update (sum, (const guchar *) "\n", 1);
  g_checksum_update (sum, (const guchar *) arch, -1);
  g_checksum_update (sum, (const guchar *) "\n", 1);
  g_checksum_update (sum, (const guchar *) source, -1);
  return g_strdup (g_checksum_get_string (sum));
}

static char *
payload_sum (const char *log,
             gsize       log_len,
             const void *code,
             gsize       code_len)
{
  g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);

  g_checksum_update (sum, (const guchar *) log, log_len);
  g_checksum_update (sum, code, code_len);
  return g_strdup (g_checksum_get_string (sum));
}

/* The module in path if the file is whole and holds key; else NULL with why. */
static GBytes *
cache_read (const char  *path,
            const char  *key,
            char       **log,
            char       **why)
{
  g_autofree char *data = NULL;
  g_autofree char *sum = NULL;
  gsize len = 0, log_len = 0, code_len = 0;
  char file_key[65] = "", file_sum[65] = "";
  const char *nl;
  guint64 a = 0, b = 0;
  int version = 0;
  g_autoptr(GError) error = NULL;

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return NULL;
  /* A module is at most a few MB; a pipe or a device in the cache is refused at once. */
  if (!(data = napkin_file_read_bounded (path, MAX_MODULE_FILE, &len, &error)))
    {
        *why = g_strdup_printf (_("the cached module could not be read (%s); compiled again"), error->message);
      return NULL;
    }
  nl = memchr (data, '\n', MIN (len, 256));
  if (nl == NULL
      || sscanf (data, MAGIC " %d %64s %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %64s", &version, file_key, &a, &b,
                 file_sum) != 5
      || version != FORMAT_VERSION || !g_str_equal (file_key, key))
    {
      *why = g_strdup (_("the cached module's header was damaged; compiled again and replaced"));
      return NULL;
    }
  log_len = a;
  code_len = b;
  if (a > len || b > len || (gsize) (nl + 1 - data) + log_len + code_len != len || code_len == 0)
    {
      *why = g_strdup (_("the cached module was cut short or overlong; compiled again and replaced"));
      return NULL;
    }
  sum = payload_sum (nl + 1, log_len, nl + 1 + log_len, code_len);
  if (!g_str_equal (sum, file_sum))
    {
      *why = g_strdup (_("the cached module failed its checksum; compiled again and replaced"));
      return NULL;
    }
  if (log != NULL)
    *log = log_len > 0 ? g_strndup (nl + 1, log_len) : NULL;
  /* used now: the pruning keeps recently used modules */
  (void) utime (path, NULL);
  return g_bytes_new (nl + 1 + log_len, code_len);
}

static gboolean
cache_write (const char  *dir,
             const char  *path,
             const char  *key,
             const char  *log,
             GBytes      *code,
             GError     **error)
{
  gsize code_len = 0;
  const void *bytes = g_bytes_get_data (code, &code_len);
  gsize log_len = log ? strlen (log) : 0;
  g_autofree char *sum = payload_sum (log ? log : "", log_len, bytes, code_len);
  g_autoptr(GString) out = g_string_new (NULL);

  /* private: the runner loads these into the GPU */
  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s", dir, g_strerror (saved));
      return FALSE;
    }
  g_string_append_printf (out, MAGIC " %d %s %" G_GSIZE_FORMAT " %" G_GSIZE_FORMAT " %s\n", FORMAT_VERSION, key,
                          log_len, code_len, sum);
  g_string_append_len (out, log ? log : "", log_len);
  g_string_append_len (out, bytes, code_len);
  /* a temporary file renamed into place: a reader never sees half a module */
  return g_file_set_contents_full (path, out->str, out->len, G_FILE_SET_CONTENTS_CONSISTENT, 0600, error);
}

GBytes *
napkin_module_cache_compile (const char             *dir,
                             const char             *source,
                             const char             *arch,
                             char                  **log,
                             NapkinModuleCacheInfo  *info,
                             GError                **error)
{
  gint64 t0 = g_get_monotonic_time ();
  g_autofree char *compile_log = NULL;
  g_autofree char *why = NULL;
  g_autoptr(GError) write_error = NULL;
  GBytes *code;

  g_return_val_if_fail (source != NULL && arch != NULL && info != NULL, NULL);

  napkin_module_cache_info_clear (info);
  if (log != NULL)
    *log = NULL;
  if (dir != NULL && napkin_nvrtc_available ())
    {
      g_autofree char *name = NULL;

      info->key = cache_key (source, arch);
      name = g_strconcat (info->key, SUFFIX, NULL);
      info->path = g_build_filename (dir, name, NULL);
      code = cache_read (info->path, info->key, log, &why);
      if (code != NULL)
        {
          info->cached = TRUE;
          info->ms = (g_get_monotonic_time () - t0) / 1000.0;
          return code;
        }
    }

  code = napkin_nvrtc_compile (source, arch, &compile_log, error);
  info->ms = (g_get_monotonic_time () - t0) / 1000.0;
  if (code == NULL)
    {
      info->note = g_steal_pointer (&why);
      if (log != NULL)
        *log = g_steal_pointer (&compile_log);
      return NULL;
    }
  if (info->path != NULL)
    {
      if (cache_write (dir, info->path, info->key, compile_log, code, &write_error))
        napkin_module_cache_prune (dir, NAPKIN_MODULE_CACHE_KEEP);
      else
        {
          g_autofree char *note = g_strdup_printf (_("the module could not be cached: %s"), write_error->message);

          g_clear_pointer (&why, g_free);
          why = g_steal_pointer (&note);
        }
    }
  info->note = g_steal_pointer (&why);
  if (log != NULL)
    *log = g_steal_pointer (&compile_log);
  return code;
}

typedef struct
{
  char   *path;
  gint64  mtime;
} Entry;

static int
newest_first (gconstpointer a,
              gconstpointer b)
{
  const Entry *x = a, *y = b;

  return (x->mtime < y->mtime) - (x->mtime > y->mtime);
}

guint
napkin_module_cache_prune (const char *dir,
                           guint       keep)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr(GArray) entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  const char *name;
  guint removed = 0;

  if (d == NULL)
    return 0;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      Entry e = { g_build_filename (dir, name, NULL), 0 };
      GStatBuf st;

      if (!g_str_has_suffix (name, SUFFIX) || g_stat (e.path, &st) != 0)
        {
          g_free (e.path);
          continue;
        }
      e.mtime = st.st_mtime;
      g_array_append_val (entries, e);
    }
  g_array_sort (entries, newest_first);
  for (guint i = 0; i < entries->len; i++)
    {
      Entry *e = &g_array_index (entries, Entry, i);

      /* another runner may have removed it already */
      if (i >= keep && g_unlink (e->path) == 0)
        removed++;
      g_free (e->path);
    }
  return removed;
}
