/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The Hopper wgmma throughput loop of `napkin-runner --calibrate` (sm_90a only): each
 * block of NAPKIN_CAL_WGMMA_THREADS (two warpgroups) issues NAPKIN_CAL_WGMMA_PER_ITER
 * wgmma.mma_async m64n256k16 per iteration, A and B read through shared-memory
 * descriptors, fp32 accumulators, no device-memory traffic. Kernels:
 * cal_wgmma_fp16 and cal_wgmma_bf16 (float *out, int iters). */
#define NAPKIN_CAL_WGMMA_THREADS   256
#define NAPKIN_CAL_WGMMA_PER_ITER  4
/* FLOPs of one wgmma m64n256k16: 2 · 64 · 256 · 16 */
#define NAPKIN_CAL_WGMMA_FLOPS     524288.0

char   *napkin_calibrate_wgmma_source  (void);
/* FLOPs of one launch of `blocks` blocks for `iters` iterations. */
double  napkin_calibrate_wgmma_flops   (guint blocks,
                                        int   iters);

G_END_DECLS
