/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"

/* Printers of plan kernels not written yet: they refuse, and the kernel goes through
 * the skeletons or the generic lowering, saying why. */

#define PENDING(fn)                                                                                  \
  gboolean fn (const NapkinPrintCtx *ctx, const NapkinPlanKernel *kernel, const char *name, GError **error) \
  {                                                                                                  \
    g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,                       \
                 "no printer for %s kernels yet", napkin_plan_kind_to_string (kernel->kind));        \
    return FALSE;                                                                                    \
  }

PENDING (_napkin_print_rows)
PENDING (_napkin_print_elementwise)
