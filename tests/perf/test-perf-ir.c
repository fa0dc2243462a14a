/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Prediction and code must not drift apart (docs/design.md §3): the model's device-memory
 * bytes under --paper (every tile from device memory) equal the bytes the lowering's
 * loop nest copies in and out of device memory, for every example as relabeled and
 * with its regions removed. */
#include "config.h"

#include <string.h>

#include "napkin-file.h"
#include "napkin-ir.h"
#include "napkin-json-private.h"
#include "napkin-model.h"

static void
check (NapkinDiagram *d,
       const char    *what)
{
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h100", NULL);
  NapkinAnalyzeOptions options = { FALSE, NAPKIN_DTYPE_FP16, FALSE, TRUE };
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = napkin_analyze (d, arch, &options, &error);
  g_autoptr(NapkinIrProgram) p = NULL;

  g_assert_no_error (error);
  p = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
  if (p == NULL && g_error_matches (error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_UNSUPPORTED))
    {
      g_test_message ("%s: the lowering cannot express it yet: %s", what, error->message);
      return;
    }
  g_assert_no_error (error);
  g_test_message ("%s: %" G_GINT64_FORMAT " bytes", what, a->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
  if (a->levels[NAPKIN_LEVEL_HBM].transfer_bytes != napkin_ir_hbm_bytes (p))
    g_error ("%s: the model moves %" G_GINT64_FORMAT " bytes through device memory, the IR %" G_GINT64_FORMAT,
             what, a->levels[NAPKIN_LEVEL_HBM].transfer_bytes, napkin_ir_hbm_bytes (p));
}

static void
test_examples (void)
{
  const char *dir = g_getenv ("NAPKIN_EXAMPLES_DIR");
  g_autoptr(GDir) gdir = g_dir_open (dir, 0, NULL);
  const char *name;
  guint checked = 0;

  g_assert_nonnull (gdir);
  while ((name = g_dir_read_name (gdir)))
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_autoptr(NapkinDiagram) d = NULL;
      g_autoptr(NapkinDiagram) plain = NULL;
      g_autoptr(json_object) root = NULL;
      g_autofree char *plain_name = g_strdup_printf ("%s without regions", name);
      g_autoptr(GError) error = NULL;

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_no_error (error);
      check (d, name);

      root = napkin_diagram_to_json (d);
      json_object_object_add (root, "regions", json_object_new_array ());
      plain = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_no_error (error);
      check (plain, plain_name);
      checked++;
    }
  g_assert_cmpuint (checked, >=, 9);
}

/* Sizes and tiles that do not divide each other: both count the last, partial
 * tile of an axis at its full extent. */
static void
test_ragged (void)
{
  const struct { const char *example; const char *specs; } cases[] = {
    { "matmul-tiled.napkin", "m=4000 n=3000 k=1000" },
    { "matmul-tiled.napkin", "t:block.m=96 t:block.k=48" },
    { "matmul-nested.napkin", "m=4000 n=3000 k=1000" },
    { "flash-attention.napkin", "q=1000 k=3000" },
    { "layernorm.napkin", "t=1000 t:rows.t=3" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), cases[i].example, NULL);
      g_autofree char *what = g_strdup_printf ("%s with %s", cases[i].example, cases[i].specs);
      g_auto(GStrv) specs = g_strsplit (cases[i].specs, " ", -1);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

      g_assert_no_error (error);
      for (guint j = 0; specs[j]; j++)
        {
          if (g_str_has_prefix (specs[j], "t:"))
            napkin_diagram_override_tile (d, specs[j] + 2, &error);
          else
            napkin_diagram_override_axis (d, specs[j], &error);
          g_assert_no_error (error);
        }
      check (d, what);
    }
}

/* An output wired straight from an input: the lowering's copy kernel and the model's
 * count the same bytes (the input read, the output written in its own type). */
static void
test_input_copy (void)
{
  static const char json[] =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"m\",\"size\":300},{\"name\":\"n\",\"size\":40}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"m\",\"n\"],\"dtype\":\"fp16\"},"
    "{\"name\":\"Y\",\"axes\":[\"n\",\"m\"],\"dtype\":\"fp32\"},{\"name\":\"Z\",\"axes\":[\"m\",\"n\"],\"dtype\":\"fp16\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"},"
    "{\"id\":\"e\",\"kind\":\"map\",\"fn\":\"exp\"},{\"id\":\"z\",\"kind\":\"output\",\"tensor\":\"Z\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"y\",\"port\":0},{\"from\":\"x\",\"to\":\"e\",\"port\":0},"
    "{\"from\":\"e\",\"to\":\"z\",\"port\":0}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  check (d, "input copy");
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/perf/ir/hbm-bytes", test_examples);
  g_test_add_func ("/perf/ir/ragged", test_ragged);
  g_test_add_func ("/perf/ir/input-copy", test_input_copy);
  return g_test_run ();
}
