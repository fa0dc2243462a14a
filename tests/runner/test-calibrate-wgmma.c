/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The wgmma throughput loop of `napkin-runner --calibrate` compiles with NVRTC for
 * sm_90a (no GPU needed), and not for sm_80, where wgmma does not exist: the runner then
 * reports the error and calibrate keeps the datasheet's peak. */
#include "config.h"

#include <string.h>

#include "napkin-calibrate-wgmma.h"
#include "napkin-codegen.h"

static void
test_compiles (void)
{
  g_autofree char *source = napkin_calibrate_wgmma_source ();
  g_autofree char *log = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) cubin = NULL;

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("NVRTC is not available");
      return;
    }
  g_assert_nonnull (strstr (source, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
  g_assert_nonnull (strstr (source, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"));
  cubin = napkin_nvrtc_compile (source, "sm_90a", &log, &error);
  g_assert_no_error (error);
  g_assert_nonnull (cubin);
  g_assert_cmpuint (g_bytes_get_size (cubin), >, 1000);
}

static void
test_refused_before_hopper (void)
{
  g_autofree char *source = napkin_calibrate_wgmma_source ();
  g_autofree char *log = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) cubin = NULL;

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("NVRTC is not available");
      return;
    }
  cubin = napkin_nvrtc_compile (source, "sm_80", &log, &error);
  g_assert_null (cubin);
  g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE);
}

static void
test_flops (void)
{
  /* 132 blocks × 2 warpgroups × 10 iterations × 4 instructions × 2·64·256·16 */
  g_assert_cmpfloat (napkin_calibrate_wgmma_flops (132, 10), ==, 132.0 * 2 * 10 * 4 * 524288);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/runner/calibrate-wgmma/compiles", test_compiles);
  g_test_add_func ("/runner/calibrate-wgmma/refused-before-hopper", test_refused_before_hopper);
  g_test_add_func ("/runner/calibrate-wgmma/flops", test_flops);
  return g_test_run ();
}
