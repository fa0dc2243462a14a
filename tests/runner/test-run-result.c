/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-json-private.h"
#include "napkin-run-job.h"
#include "napkin-run-result.h"

/* NapkinRunResult: the runner's JSON read once into typed fields (no GPU, no child). */

static NapkinRunResult *
parse (const char  *text,
       GError     **error)
{
  g_autoptr(json_object) json = json_tokener_parse (text);

  g_assert_nonnull (json);
  return napkin_run_result_new_from_json (json, error);
}

/* A result recorded from the real runner on an H200: every field the consumers read. */
static void
test_recorded (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "runner",
                                            "h200-matmul-tiled.json", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinRunResult) r = NULL;
  const NapkinRunKernel *k;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  r = parse (text, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (r->status, ==, "ok");
  g_assert_true (napkin_run_result_ran (r) && napkin_run_result_is_ok (r));
  g_assert_cmpstr (r->gpu_name, ==, "NVIDIA H200");
  g_assert_cmpstr (r->arch, ==, "sm_90a");
  g_assert_cmpfloat_with_epsilon (r->time_median_ms, 0.5586240291595459, 1e-12);
  g_assert_cmpfloat (r->time_repeats, ==, 20);
  g_assert_cmpfloat (r->flops, ==, 2.0 * 4096 * 4096 * 4096);
  g_assert_true (r->has_error && r->error_ok);
  g_assert_cmpfloat (r->reference_median_ms, >, 26.6);
  g_assert_cmpuint (r->kernels->len, ==, 1);
  k = napkin_run_result_kernel (r, 0);
  g_assert_cmpstr (k->name, ==, "napkin_k0");
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  g_assert_cmpfloat (k->shared_bytes, ==, 107520);
  g_assert_cmpfloat (k->threads, ==, 256);
  g_assert_false (r->has_prediction);
  g_assert_true (isnan (r->prediction_time_ms));
  g_assert_true (r->json != NULL && json_object_is_type (r->json, json_type_object));
}

/* A failed run carries no time; absent numbers are NAN, null is absent. */
static void
test_failed_and_prediction (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinRunResult) fault = parse ("{ \"status\": \"fault\", \"message\": \"illegal address\", "
                                            "\"time_ms\": null, \"model\": null }", &error);
  g_autoptr(NapkinRunResult) predicted = NULL;

  g_assert_no_error (error);
  g_assert_cmpstr (fault->status, ==, "fault");
  g_assert_cmpstr (fault->message, ==, "illegal address");
  g_assert_false (napkin_run_result_ran (fault));
  g_assert_true (isnan (fault->time_median_ms) && isnan (fault->tflops) && isnan (fault->energy_j));
  g_assert_false (fault->has_error);
  g_assert_cmpuint (fault->kernels->len, ==, 0);

  predicted = parse ("{ \"status\": \"wrong\", \"time_ms\": { \"median\": 2 }, \"error\": { \"max_rel\": 0.5, "
                     "\"bound\": 0.02, \"ok\": false }, \"energy\": { \"joules_per_run\": 0.25 }, "
                     "\"prediction\": { \"arch\": \"h100\", \"bound\": \"hbm\", \"time_ms\": 1.5, \"levels\": "
                     "{ \"hbm\": { \"transfer_bytes\": 1000, \"time_ms\": 0.5 } } } }", &error);
  g_assert_no_error (error);
  g_assert_true (napkin_run_result_ran (predicted) && !napkin_run_result_is_ok (predicted));
  g_assert_true (predicted->has_error && !predicted->error_ok);
  g_assert_cmpfloat (predicted->error_max_rel, ==, 0.5);
  g_assert_cmpfloat (predicted->energy_j, ==, 0.25);
  g_assert_true (predicted->has_prediction);
  g_assert_cmpstr (predicted->prediction_arch, ==, "h100");
  g_assert_cmpstr (predicted->prediction_bound, ==, "hbm");
  g_assert_cmpfloat (predicted->prediction_time_ms, ==, 1.5);
  g_assert_cmpfloat (predicted->prediction_level_bytes[NAPKIN_LEVEL_HBM], ==, 1000);
  g_assert_cmpfloat (predicted->prediction_level_time_ms[NAPKIN_LEVEL_HBM], ==, 0.5);
  g_assert_true (isnan (predicted->prediction_level_bytes[NAPKIN_LEVEL_SMEM]));

  /* a multi-GPU dry run times nothing */
  {
    g_autoptr(NapkinRunResult) dry = parse ("{ \"status\": \"ok\", \"dry_run\": true }", &error);

    g_assert_no_error (error);
    g_assert_true (dry->dry_run);
  }
}

/* Each malformed field: an error that names it. */
static void
test_malformed (void)
{
  static const struct { const char *json; const char *field; } cases[] = {
    { "{ \"message\": \"no status\" }", "status is missing" },
    { "{ \"status\": 3 }", "status: expected a string" },
    { "{ \"status\": \"ok\" }", "time_ms.median is missing" },
    { "{ \"status\": \"wrong\", \"time_ms\": {} }", "time_ms.median is missing" },
    { "{ \"status\": \"ok\", \"time_ms\": 2 }", "time_ms: expected an object" },
    { "{ \"status\": \"ok\", \"time_ms\": { \"median\": \"fast\" } }", "time_ms.median: expected a number" },
    { "{ \"status\": \"ok\", \"time_ms\": { \"median\": 1, \"repeats\": [] } }", "time_ms.repeats: expected a number" },
    { "{ \"status\": \"fault\", \"message\": 7 }", "message: expected a string" },
    { "{ \"status\": \"fault\", \"flops\": \"many\" }", "flops: expected a number" },
    { "{ \"status\": \"fault\", \"gpu\": { \"name\": 1 } }", "gpu.name: expected a string" },
    { "{ \"status\": \"fault\", \"gpu\": \"H100\" }", "gpu: expected an object" },
    { "{ \"status\": \"fault\", \"error\": { \"ok\": 1 } }", "error.ok: expected true or false" },
    { "{ \"status\": \"fault\", \"energy\": { \"joules_per_run\": \"x\" } }", "energy.joules_per_run: expected a number" },
    { "{ \"status\": \"fault\", \"kernels\": {} }", "kernels: expected an array" },
    { "{ \"status\": \"fault\", \"kernels\": [ { \"name\": \"k\" }, 4 ] }", "kernels[1]: expected an object" },
    { "{ \"status\": \"fault\", \"kernels\": [ { \"name\": \"k\" }, { \"grid\": \"big\" } ] }", "kernels[1].grid: expected a number" },
    { "{ \"status\": \"fault\", \"prediction\": { \"time_ms\": \"soon\" } }", "prediction.time_ms: expected a number" },
    { "{ \"status\": \"fault\", \"prediction\": { \"levels\": { \"l2\": { \"time_ms\": true } } } }",
      "prediction.levels.l2.time_ms: expected a number" },
    { "{ \"status\": \"fault\", \"reference_time_ms\": { \"median\": {} } }", "reference_time_ms.median: expected a number" },
    { "[ 1, 2 ]", "not a JSON object" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinRunResult) r = parse (cases[i].json, &error);

      g_test_message ("%s → %s", cases[i].json, error ? error->message : "(no error)");
      g_assert_null (r);
      g_assert_error (error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT);
      g_assert_nonnull (strstr (error->message, cases[i].field));
    }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/run-result/recorded", test_recorded);
  g_test_add_func ("/run-result/failed-and-prediction", test_failed_and_prediction);
  g_test_add_func ("/run-result/malformed", test_malformed);
  return g_test_run ();
}
