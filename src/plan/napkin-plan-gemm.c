/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include "napkin-plan-private.h"

/* Contractions on tensor cores (docs/plan.md, "GEMM"). */

gboolean
_napkin_plan_try_gemm (NapkinPlanner    *p,
                       NapkinPlanKernel *k,
                       char            **why)
{
  return FALSE;
}

gboolean
_napkin_plan_try_attention (NapkinPlanner    *p,
                            NapkinPlanKernel *k,
                            char            **why)
{
  return FALSE;
}
