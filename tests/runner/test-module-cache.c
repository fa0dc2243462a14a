/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The compiled-module cache (src/runner/napkin-module-cache.c) with the real NVRTC and
 * no GPU: a second compile of the same source is a hit that skips NVRTC, any change of
 * source or target a miss, a damaged file ignored and replaced, an unusable cache dir
 * never fatal. */
#include "config.h"

#include <glib/gstdio.h>
#include <string.h>
#include <utime.h>

#include "napkin-codegen.h"
#include "napkin-module-cache.h"

static const char source[] =
  "extern \"C\" __global__ void k (float *p) { p[threadIdx.x] *= 2.0f; }\n";

typedef struct
{
  char *dir;
} Fixture;

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  f->dir = g_dir_make_tmp ("napkin-module-cache-XXXXXX", NULL);
  g_assert_nonnull (f->dir);
}

static void
remove_tree (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        remove_tree (path);
      else
        g_unlink (path);
    }
  g_rmdir (dir);
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  remove_tree (f->dir);
  g_free (f->dir);
}

static guint
count_files (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (d != NULL && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

static GBytes *
compile (const char            *dir,
         const char            *src,
         const char            *arch,
         NapkinModuleCacheInfo *info)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *log = NULL;
  GBytes *code = napkin_module_cache_compile (dir, src, arch, &log, info, &error);

  g_assert_no_error (error);
  g_assert_nonnull (code);
  g_assert_cmpuint (g_bytes_get_size (code), >, 4);
  /* a cubin is an ELF file */
  g_assert_cmpmem (g_bytes_get_data (code, NULL), 4, "\177ELF", 4);
  return code;
}

static void
test_hit (Fixture       *f,
          gconstpointer  data)
{
  NapkinModuleCacheInfo first = { 0 }, second = { 0 };
  g_autoptr(GBytes) a = compile (f->dir, source, "sm_90a", &first);
  g_autoptr(GBytes) b = compile (f->dir, source, "sm_90a", &second);

  g_assert_false (first.cached);
  g_assert_null (first.note);
  g_assert_true (g_file_test (first.path, G_FILE_TEST_IS_REGULAR));
  g_assert_true (g_str_has_prefix (first.path, f->dir));
  g_assert_cmpuint (strlen (first.key), ==, 64);
  g_assert_cmpuint (count_files (f->dir), ==, 1);

  g_assert_true (second.cached);
  g_assert_cmpstr (second.key, ==, first.key);
  g_assert_true (g_bytes_equal (a, b));
  /* reading a file, not compiling: NVRTC takes tens of milliseconds for this */
  g_test_message ("miss %.1f ms, hit %.2f ms", first.ms, second.ms);
  g_assert_cmpfloat (second.ms, <, first.ms);
  napkin_module_cache_info_clear (&first);
  napkin_module_cache_info_clear (&second);
}

/* What the cache returns on a hit is the file's module, not a fresh compile: a planted
 * module (its checksum made right) comes back as it is. */
static void
test_hit_reads_the_file (Fixture       *f,
                         gconstpointer  data)
{
  NapkinModuleCacheInfo info = { 0 };
  g_autoptr(GBytes) a = compile (f->dir, source, "sm_90a", &info);
  g_autofree char *text = NULL;
  g_autofree char *planted_path = g_strdup (info.path);
  g_autoptr(GBytes) b = NULL;
  gsize len = 0;
  char *body;

  g_assert_true (g_file_get_contents (planted_path, &text, &len, NULL));
  body = strchr (text, '\n') + 1;
  g_assert_cmpuint (len - (body - text), ==, g_bytes_get_size (a));   /* no log for this source */
  {
    g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
    g_autofree char *header = NULL;
    g_autoptr(GString) out = g_string_new (NULL);

    body[g_bytes_get_size (a) - 1] ^= 0x5a;   /* another module, as far as the cache knows */
    g_checksum_update (sum, (const guchar *) body, g_bytes_get_size (a));
    g_string_append_printf (out, "napkin-module 1 %s 0 %" G_GSIZE_FORMAT " %s\n", info.key, g_bytes_get_size (a),
                            g_checksum_get_string (sum));
    g_string_append_len (out, body, g_bytes_get_size (a));
    g_assert_true (g_file_set_contents (planted_path, out->str, out->len, NULL));
  }
  napkin_module_cache_info_clear (&info);
  b = compile (f->dir, source, "sm_90a", &info);
  g_assert_true (info.cached);
  g_assert_false (g_bytes_equal (a, b));
  g_assert_cmpuint (((const guint8 *) g_bytes_get_data (b, NULL))[g_bytes_get_size (b) - 1], ==,
                    ((const guint8 *) g_bytes_get_data (a, NULL))[g_bytes_get_size (a) - 1] ^ 0x5a);
  napkin_module_cache_info_clear (&info);
}

static void
test_miss_on_change (Fixture       *f,
                     gconstpointer  data)
{
  NapkinModuleCacheInfo base = { 0 }, edited = { 0 }, other_target = { 0 };
  g_autofree char *changed = g_strconcat (source, "/* one more line */\n", NULL);
  g_autoptr(GBytes) a = compile (f->dir, source, "sm_90a", &base);
  g_autoptr(GBytes) b = compile (f->dir, changed, "sm_90a", &edited);
  g_autoptr(GBytes) c = compile (f->dir, source, "sm_80", &other_target);

  g_assert_false (edited.cached);
  g_assert_cmpstr (edited.key, !=, base.key);
  g_assert_false (other_target.cached);
  g_assert_cmpstr (other_target.key, !=, base.key);
  g_assert_false (g_bytes_equal (a, c));
  g_assert_cmpuint (count_files (f->dir), ==, 3);
  napkin_module_cache_info_clear (&base);
  napkin_module_cache_info_clear (&edited);
  napkin_module_cache_info_clear (&other_target);
}

/* The key covers NVRTC and every option (napkin_nvrtc_fingerprint), target included. */
static void
test_fingerprint (void)
{
  g_autofree char *a = napkin_nvrtc_fingerprint ("sm_90a");
  g_autofree char *b = napkin_nvrtc_fingerprint ("sm_80");

  g_test_message ("%s", a);
  g_assert_true (g_str_has_prefix (a, "nvrtc "));
  g_assert_nonnull (strstr (a, "--gpu-architecture=sm_90a"));
  g_assert_nonnull (strstr (a, "--std=c++17"));
  g_assert_nonnull (strstr (a, "libnvrtc"));
  g_assert_cmpstr (a, !=, b);
}

static void
damage (const char *path,
        int         how)
{
  g_autofree char *text = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  switch (how)
    {
    case 0: /* cut short */
      g_assert_true (g_file_set_contents (path, text, len / 2, NULL));
      break;
    case 1: /* one byte of the module flipped */
      text[len - 10] ^= 1;
      g_assert_true (g_file_set_contents (path, text, len, NULL));
      break;
    case 2: /* not a cache file at all */
      g_assert_true (g_file_set_contents (path, "garbage\n", -1, NULL));
      break;
    case 3: /* empty */
      g_assert_true (g_file_set_contents (path, "", 0, NULL));
      break;
    default:
      g_assert_not_reached ();
    }
}

static void
test_damaged (Fixture       *f,
              gconstpointer  data)
{
  NapkinModuleCacheInfo info = { 0 };
  g_autoptr(GBytes) good = compile (f->dir, source, "sm_90a", &info);
  g_autofree char *path = g_strdup (info.path);

  napkin_module_cache_info_clear (&info);
  for (int how = 0; how < 4; how++)
    {
      g_autoptr(GBytes) again = NULL;
      g_autoptr(GBytes) after = NULL;

      damage (path, how);
      again = compile (f->dir, source, "sm_90a", &info);
      g_assert_false (info.cached);
      g_assert_nonnull (info.note);
      g_assert_true (strstr (info.note, "compiled again") != NULL);
      g_assert_true (g_bytes_equal (again, good));
      napkin_module_cache_info_clear (&info);
      /* replaced: the next one is a hit again */
      after = compile (f->dir, source, "sm_90a", &info);
      g_assert_true (info.cached);
      g_assert_null (info.note);
      napkin_module_cache_info_clear (&info);
    }
}

static void
test_unusable_dir (Fixture       *f,
                   gconstpointer  data)
{
  NapkinModuleCacheInfo info = { 0 };
  g_autofree char *file = g_build_filename (f->dir, "a-file", NULL);
  g_autofree char *under = g_build_filename (file, "modules", NULL);
  g_autoptr(GBytes) a = NULL;
  g_autoptr(GBytes) b = NULL;

  g_assert_true (g_file_set_contents (file, "", 0, NULL));
  a = compile (under, source, "sm_90a", &info);
  g_assert_false (info.cached);
  g_assert_nonnull (info.note);
  g_assert_true (g_str_has_prefix (info.note, "the module could not be cached"));
  napkin_module_cache_info_clear (&info);

  /* no cache at all */
  b = compile (NULL, source, "sm_90a", &info);
  g_assert_false (info.cached);
  g_assert_null (info.path);
  g_assert_null (info.key);
  g_assert_true (g_bytes_equal (a, b));
  napkin_module_cache_info_clear (&info);
}

static void
test_compile_error (Fixture       *f,
                    gconstpointer  data)
{
  NapkinModuleCacheInfo info = { 0 };
  g_autoptr(GError) error = NULL;
  g_autofree char *log = NULL;
  g_autoptr(GBytes) code = napkin_module_cache_compile (f->dir, "this is not CUDA", "sm_90a", &log, &info, &error);

  g_assert_null (code);
  g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE);
  g_assert_nonnull (log);   /* NVRTC's log says what is wrong */
  g_assert_false (info.cached);
  g_assert_cmpuint (count_files (f->dir), ==, 0);   /* nothing cached */
  napkin_module_cache_info_clear (&info);
}

static void
test_prune (Fixture       *f,
            gconstpointer  data)
{
  for (int i = 0; i < 5; i++)
    {
      g_autofree char *name = g_strdup_printf ("%d.module", i);
      g_autofree char *path = g_build_filename (f->dir, name, NULL);
      struct utimbuf times = { 1000000 + i * 100, 1000000 + i * 100 };

      g_assert_true (g_file_set_contents (path, "x", 1, NULL));
      g_assert_cmpint (g_utime (path, &times), ==, 0);
    }
  {
    g_autofree char *other = g_build_filename (f->dir, "README", NULL);

    g_assert_true (g_file_set_contents (other, "not a module", -1, NULL));   /* left alone */
  }
  g_assert_cmpuint (napkin_module_cache_prune (f->dir, 2), ==, 3);
  g_assert_cmpuint (count_files (f->dir), ==, 3);
  for (int i = 0; i < 5; i++)
    {
      g_autofree char *name = g_strdup_printf ("%d.module", i);
      g_autofree char *path = g_build_filename (f->dir, name, NULL);

      /* the two used last stay */
      g_assert_cmpint (g_file_test (path, G_FILE_TEST_EXISTS), ==, i >= 3);
    }
}

static void
test_default_dir (void)
{
  g_autofree char *dir = napkin_module_cache_default_dir ();
  g_autofree char *want = g_build_filename (g_get_user_cache_dir (), "napkin", "modules", NULL);

  g_assert_cmpstr (dir, ==, want);
}

int
main (int    argc,
      char **argv)
{
  /* before GLib reads it: the default dir follows $XDG_CACHE_HOME */
  g_autofree char *home = g_dir_make_tmp ("napkin-cache-home-XXXXXX", NULL);
  int rc;

  g_setenv ("XDG_CACHE_HOME", home, TRUE);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/runner/module-cache/default-dir", test_default_dir);
  if (!napkin_nvrtc_available ())
    {
      g_test_add_func ("/runner/module-cache/nvrtc", (GTestFunc) g_test_incomplete);
      return g_test_run ();
    }
  g_test_add_func ("/runner/module-cache/fingerprint", test_fingerprint);
#define ADD(path, fn) g_test_add ("/runner/module-cache/" path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
  ADD ("hit", test_hit);
  ADD ("hit-reads-the-file", test_hit_reads_the_file);
  ADD ("miss-on-change", test_miss_on_change);
  ADD ("damaged", test_damaged);
  ADD ("unusable-dir", test_unusable_dir);
  ADD ("compile-error", test_compile_error);
  ADD ("prune", test_prune);
#undef ADD
  rc = g_test_run ();
  g_rmdir (home);
  return rc;
}
