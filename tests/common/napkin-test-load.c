/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include "napkin-file.h"
#include "napkin-test-load.h"

NapkinArch *
napkin_test_arch (const char *id)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *a = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), id, &error);

  g_assert_no_error (error);
  g_assert_nonnull (a);
  return a;
}

NapkinDiagram *
napkin_test_load_json (const char *json)
{
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  g_assert_nonnull (d);
  return d;
}

NapkinDiagram *
napkin_test_load_example (const char *file)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  g_assert_nonnull (d);
  return d;
}

NapkinDiagram *
napkin_test_load_gemm (const NapkinTestGemmDiagram *c)
{
  g_autofree char *json = napkin_test_gemm_json (c);

  return napkin_test_load_json (json);
}

NapkinDiagram *
napkin_test_load_attention (const NapkinTestAttention *c)
{
  g_autofree char *json = napkin_test_attention_json (c);

  return napkin_test_load_json (json);
}

NapkinPlan *
napkin_test_plan (NapkinDiagram *d,
                  const char    *arch_id)
{
  g_autoptr(GError) error = NULL;
  NapkinPlan *p = napkin_plan_build (d, napkin_test_arch (arch_id), NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (p);
  return p;
}
