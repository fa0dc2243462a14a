/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The analysis pane's layer below GTK (docs/analysis-pane.md): formulas with the
 * model's values substituted, and what-if / measured architecture profiles. */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-explain.h"
#include "napkin-file.h"

static NapkinDiagram *
load_example (const char *name)
{
  g_autofree char *file = g_strconcat (name, ".napkin", NULL);
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  return d;
}

static NapkinArch *
h100 (void)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h100", &error);

  g_assert_no_error (error);
  return arch;
}

static void
test_format (void)
{
  struct { gint64 v; const char *s; } cases[] = {
    { 0, "0" }, { 999, "999" }, { 1000, "1,000" }, { -1234567, "-1,234,567" },
    { G_GINT64_CONSTANT (2181038080), "2,181,038,080" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *s = napkin_format_int (cases[i].v);

      g_assert_cmpstr (s, ==, cases[i].s);
    }
  /* The locale's grouping (only C locales exist here: its lconv is passed in):
   * French groups by three with a narrow no-break space, Hindi 3 then 2, and a
   * CHAR_MAX ends grouping. */
  {
    g_autofree char *fr = napkin_format_int_grouped (G_GINT64_CONSTANT (-2181038080), "\u202f", "\3");
    g_autofree char *hi = napkin_format_int_grouped (G_GINT64_CONSTANT (12345678), ",", "\3\2");
    g_autofree char *once = napkin_format_int_grouped (G_GINT64_CONSTANT (12345678), ".", "\3\177");
    g_autofree char *none = napkin_format_int_grouped (G_GINT64_CONSTANT (12345678), ",", "");
    g_autofree char *min = napkin_format_int_grouped (G_MININT64, ",", "\3");

    g_assert_cmpstr (fr, ==, "-2\u202f181\u202f038\u202f080");
    g_assert_cmpstr (hi, ==, "1,23,45,678");
    g_assert_cmpstr (once, ==, "12345.678");
    g_assert_cmpstr (none, ==, "12345678");
    g_assert_cmpstr (min, ==, "-9,223,372,036,854,775,808");
  }
  {
    g_autofree char *a = napkin_format_si (3.35e12, "B/s");
    g_autofree char *b = napkin_format_si (2.96e-4, "s");

    g_assert_cmpstr (a, ==, "3.35 TB/s");
    g_assert_cmpstr (b, ==, "296 µs");
  }
}

/* The tiled matmul of the paper: m = n = k = 4096, m and n grouped by 128, k streamed by 64. */
static void
test_matmul_formulas (void)
{
  g_autoptr(NapkinDiagram) d = load_example ("matmul-tiled");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = napkin_analyze (d, h100 (), NULL, &error);
  g_autofree char *bytes = NULL, *time = NULL, *waves = NULL, *foot = NULL, *occ = NULL, *tr = NULL;
  g_autofree char *total = NULL, *res = NULL, *intensity = NULL;

  g_assert_no_error (error);
  bytes = napkin_explain_level_bytes (a, NAPKIN_LEVEL_L2);
  g_test_message ("%s", bytes);
  /* A and B: 128 × 64 tiles, 64 chunks × 1024 blocks; C: 128 × 128 written once per block */
  g_assert_nonnull (strstr (bytes, "block A (in): 8,192 × 65,536 × 2 B = 1,073,741,824 B"));
  g_assert_nonnull (strstr (bytes, "block C (out): 16,384 × 1,024 × 2 B = 33,554,432 B"));
  g_assert_true (g_str_has_suffix (bytes, "= 2,181,038,080 B"));
  g_assert_cmpint (a->levels[NAPKIN_LEVEL_L2].transfer_bytes, ==, G_GINT64_CONSTANT (2181038080));

  time = napkin_explain_level_time (a, NAPKIN_LEVEL_HBM);
  g_test_message ("%s", time);
  {
    g_autofree char *b = napkin_format_int (a->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
    g_autofree char *t = napkin_format_si (a->levels[NAPKIN_LEVEL_HBM].time_s, "s");
    g_autofree char *expected = g_strdup_printf ("%s B / 3.35 TB/s = %s", b, t);

    g_assert_nonnull (strstr (time, expected));
    g_assert_cmpfloat_with_epsilon (a->levels[NAPKIN_LEVEL_HBM].time_s,
                                    a->levels[NAPKIN_LEVEL_HBM].transfer_bytes / 3.35e12, 1e-12);
  }

  waves = napkin_explain_region_waves (a, 0);
  g_assert_cmpstr (waves, ==, "waves = ⌈instances / (SMs × per SM)⌉ = ⌈1,024 / (132 × 1)⌉ = 8");
  foot = napkin_explain_region_footprint (a, 0);
  g_test_message ("%s", foot);
  /* the kernel plan's shared memory: 3 stages of (128 + 128)·64 halves, two 8 KB epilogue
   * buffers for each of 2 consumer warpgroups, 1 KB of alignment, 16 B of barriers a stage;
   * the paper's M: (128·64 + 64·128) · 3 stages + 128·128 = 65,536 elements */
  g_assert_nonnull (strstr (foot, "= 132,144 B, against 232,448 B"));
  g_assert_nonnull (strstr (foot, "(the paper's footprint M: 65,536 elements = 131,072 B)"));
  occ = napkin_explain_region_occupancy (a, 0);
  g_assert_nonnull (strstr (occ, "= 1, bound by shared memory"));
  tr = napkin_explain_transfer (a, 0, 1);
  g_assert_cmpstr (tr, ==, "B ← hbm read: tile × moves × bytes/element = 8,192 × 65,536 × 2 B = "
                           "536,870,912 elements = 1,073,741,824 B");

  total = napkin_explain_total_time (a, FALSE);
  {
    g_autofree char *t = napkin_format_si (a->predicted_time_s, "s");
    g_autofree char *end = g_strdup_printf ("\n= %s", t);

    g_assert_true (g_str_has_suffix (total, end));
    g_assert_nonnull (strstr (total, "block: "));
  }
  res = napkin_explain_resource_time (a, NAPKIN_RESOURCE_TENSOR);
  g_test_message ("%s", res);
  g_assert_nonnull (strstr (res, "fp16: 137,438,953,472 / (132 × 4096 × 1.83 GHz)"));
  intensity = napkin_explain_intensity (a);
  g_assert_nonnull (strstr (intensity, "137,438,953,472 / "));
  /* % of peak: throughput against the fp16 tensor-core peak */
  g_assert_cmpfloat_with_epsilon (napkin_analysis_percent_of_peak (a, FALSE),
                                  100 * a->throughput / (132 * 4096 * 1.83e9), 1e-9);
}

static void
test_copy_and_replace (void)
{
  NapkinArch *base = h100 ();
  g_autoptr(NapkinArchRegistry) registry = napkin_arch_registry_new ();
  g_autofree char *dir = g_build_filename (NAPKIN_SOURCE_DATADIR, "archs", NULL);
  g_autoptr(NapkinArch) what_if = napkin_arch_copy (base, "h100-what-if", "H100, double HBM");
  g_autoptr(NapkinArch) again = NULL;
  g_autoptr(NapkinDiagram) d = load_example ("softmax");
  g_autoptr(NapkinAnalysis) before = NULL, after = NULL;
  g_autoptr(GError) error = NULL;
  guint n;

  what_if->levels[NAPKIN_LEVEL_HBM].bandwidth *= 2;
  napkin_arch_set_source (what_if, "levels.hbm.bandwidth_bytes_per_s", "what-if: edited in Napkin");
  g_assert_cmpfloat (base->levels[NAPKIN_LEVEL_HBM].bandwidth, ==, 3.35e12);
  g_assert_cmpstr (napkin_arch_get_source (what_if, "levels.hbm.bandwidth_bytes_per_s"), ==,
                   "what-if: edited in Napkin");
  g_assert_cmpstr (napkin_arch_get_source (what_if, "sms"), ==, napkin_arch_get_source (base, "sms"));
  g_assert_true (napkin_arch_check (what_if, &error));
  g_assert_no_error (error);

  /* a memory-bound diagram gets faster on the copy, the original is unchanged */
  before = napkin_analyze (d, base, NULL, &error);
  g_assert_no_error (error);
  after = napkin_analyze (d, what_if, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (before->bound, ==, NAPKIN_RESOURCE_HBM);
  g_assert_cmpfloat (after->levels[NAPKIN_LEVEL_HBM].time_s * 2, ==, before->levels[NAPKIN_LEVEL_HBM].time_s);
  g_assert_cmpfloat (after->predicted_time_s, <, before->predicted_time_s);

  napkin_arch_registry_add_dir (registry, dir);
  n = napkin_arch_registry_count (registry);
  napkin_arch_registry_add (registry, what_if);
  g_assert_cmpuint (napkin_arch_registry_count (registry), ==, n + 1);
  g_assert_true (napkin_arch_registry_lookup (registry, "H100-WHAT-IF", NULL) == what_if);

  /* replacing keeps the place and the old profile valid for whoever holds it */
  again = napkin_arch_copy (what_if, "h100-what-if", "H100, triple HBM");
  again->levels[NAPKIN_LEVEL_HBM].bandwidth = 3 * 3.35e12;
  napkin_arch_registry_add (registry, again);
  g_assert_cmpuint (napkin_arch_registry_count (registry), ==, n + 1);
  g_assert_true (napkin_arch_registry_lookup (registry, "h100-what-if", NULL) == again);
  g_assert_true (napkin_arch_registry_get (registry, n) == again);
  g_assert_cmpstr (what_if->name, ==, "H100, double HBM");

  /* a figure the model divides by must stay positive, and the error names it */
  again->sms = 0;
  g_assert_false (napkin_arch_check (again, &error));
  g_assert_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_FORMAT);
  g_assert_true (g_str_has_prefix (error->message, "sms:"));
}

static void
test_measured (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("napkin-arch-XXXXXX", &error);
  g_autofree char *h100_path = g_build_filename (NAPKIN_SOURCE_DATADIR, "archs", "h100.json", NULL);
  g_autofree char *text = NULL, *out = NULL;
  g_autoptr(GString) measured = NULL;
  g_autoptr(NapkinArchRegistry) registry = napkin_arch_registry_new ();
  NapkinArch *arch;

  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (h100_path, &text, NULL, &error));
  /* as napkin-cli calibrate writes it: another id, measured figures say so */
  measured = g_string_new (text);
  g_assert_cmpint (g_string_replace (measured, "\"id\": \"h100\"", "\"id\": \"h100-measured\"", 1), ==, 1);
  g_assert_cmpint (g_string_replace (measured, "\"source\": \"", "\"source\": \"measured by napkin-cli calibrate on NVIDIA H100 (test); ",
                                     1), ==, 1);
  out = g_build_filename (tmp, "h100-measured.json", NULL);
  g_assert_true (g_file_set_contents (out, measured->str, -1, &error));
  napkin_arch_registry_add_dir (registry, tmp);
  for (guint i = 0; i < napkin_arch_registry_errors (registry)->len; i++)
    g_test_message ("%s", (const char *) g_ptr_array_index (napkin_arch_registry_errors (registry), i));
  g_assert_cmpuint (napkin_arch_registry_errors (registry)->len, ==, 0);
  arch = napkin_arch_registry_lookup (registry, "h100-measured", &error);
  g_assert_no_error (error);
  g_assert_true (napkin_arch_is_measured (arch));
  g_assert_false (napkin_arch_is_measured (h100 ()));
  g_remove (out);
  g_rmdir (tmp);
}

/* Saving a profile and loading it back gives the same figures and sources (a what-if
 * profile saved for napkin-cli and later sessions). */
static void
test_save_round_trip (void)
{
  NapkinArchRegistry *registry = napkin_arch_registry_get_default ();
  g_autoptr(GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("napkin-arch-XXXXXX", &error);

  g_assert_no_error (error);
  for (guint i = 0; i < napkin_arch_registry_count (registry); i++)
    {
      NapkinArch *arch = napkin_arch_registry_get (registry, i);
      g_autoptr(NapkinArch) edited = napkin_arch_copy (arch, "x-what-if", "edited");
      g_autofree char *path = g_build_filename (tmp, "x-what-if.json", NULL);
      g_autoptr(NapkinArch) back = NULL;

      edited->levels[NAPKIN_LEVEL_L2].bandwidth *= 1.5;
      napkin_arch_set_source (edited, "levels.l2.bandwidth_bytes_per_clock", "what-if: test");
      g_assert_true (napkin_arch_save (edited, path, &error));
      g_assert_no_error (error);
      back = napkin_arch_load_from_file (path, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (back->id, ==, "x-what-if");
      g_assert_cmpstr (back->name, ==, "edited");
      g_assert_cmpuint (back->sms, ==, arch->sms);
      g_assert_cmpfloat_with_epsilon (back->clock_hz, arch->clock_hz, 1e-3);
      for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
        {
          g_assert_cmpfloat_with_epsilon (back->levels[l].bandwidth, edited->levels[l].bandwidth,
                                          1e-9 * edited->levels[l].bandwidth);
          g_assert_cmpfloat (back->levels[l].capacity_bytes, ==, edited->levels[l].capacity_bytes);
        }
      for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
        g_assert_cmpfloat (back->tensor_per_sm_clock[c], ==, arch->tensor_per_sm_clock[c]);
      g_assert_cmpfloat (back->smem_max_per_block, ==, arch->smem_max_per_block);
      g_assert_cmpfloat (back->launch_overhead_s, ==, arch->launch_overhead_s);
      g_assert_cmpstr (napkin_arch_get_source (back, "levels.l2.bandwidth_bytes_per_clock"), ==, "what-if: test");
      g_assert_cmpstr (napkin_arch_get_source (back, "sms"), ==, napkin_arch_get_source (arch, "sms"));
      g_remove (path);
    }
  g_rmdir (tmp);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/perf/explain/format", test_format);
  g_test_add_func ("/perf/explain/matmul-tiled", test_matmul_formulas);
  g_test_add_func ("/perf/arch/what-if-copy-and-replace", test_copy_and_replace);
  g_test_add_func ("/perf/arch/measured", test_measured);
  g_test_add_func ("/perf/arch/save-round-trip", test_save_round_trip);
  return g_test_run ();
}
