/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include "napkin-plan-private.h"

/* Row kernels and element-wise kernels on CUDA cores (docs/plan.md, "Rows"). */

gboolean
_napkin_plan_try_rows (NapkinPlanner    *p,
                       NapkinPlanKernel *k,
                       char            **why)
{
  return FALSE;
}

gboolean
_napkin_plan_try_elementwise (NapkinPlanner    *p,
                              NapkinPlanKernel *k,
                              char            **why)
{
  return FALSE;
}
