/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "napkin-cuda-driver.h"
#include "napkin-nccl.h"

G_BEGIN_DECLS

#define NAPKIN_MAX_GPUS 16

/* N GPUs driven from one thread (docs/multi-gpu.md, "Running on several GPUs"): each
 * device's primary context (shared with the CUDA runtime NCCL calls, so a driver
 * CUstream is a valid cudaStream_t), a compute stream and a communication stream per
 * device, and one NCCL communicator per device from ncclCommInitAll. */
typedef struct
{
  NapkinCudaDriver *cu;
  NapkinNccl        nccl;
  guint             n;
  CUdevice          device[NAPKIN_MAX_GPUS];
  CUcontext         ctx[NAPKIN_MAX_GPUS];
  CUstream          stream[NAPKIN_MAX_GPUS];
  CUstream          comm_stream[NAPKIN_MAX_GPUS];
  NapkinNcclComm    comm[NAPKIN_MAX_GPUS];
  gboolean          have_comms;
  NapkinNcclComm    limited[NAPKIN_MAX_GPUS];   /* held to limited_ctas CTAs (overlap) */
  guint             limited_ctas;               /* 0: none made */
  gboolean          use_limited;                /* collectives go through `limited` */
  gboolean          no_nccl;     /* the open failed because NCCL is absent or too old */
} NapkinGpuGroup;

/* "--gpus 2: this machine has 1 GPU" when fewer than n devices are visible; TRUE when
 * there are enough. The driver must be open. */
gboolean  napkin_gpu_group_check_count (NapkinCudaDriver  *cu,
                                        guint              n,
                                        char             **message);
/* Opens NCCL, the contexts, the streams and the communicators. */
gboolean  napkin_gpu_group_open        (NapkinGpuGroup    *group,
                                        NapkinCudaDriver  *cu,
                                        guint              n,
                                        char             **message);
void      napkin_gpu_group_close       (NapkinGpuGroup    *group);
/* Makes GPU r's context current (NCCL's runtime calls may have changed it). */
gboolean  napkin_gpu_group_use         (NapkinGpuGroup    *group,
                                        guint              r,
                                        char             **message);
/* Enqueues one collective on every GPU inside one NCCL group, on the compute streams or
 * the communication streams. `count` as NCCL counts it: the elements of the buffer for
 * all-reduce, those each rank sends for all-gather, receives for reduce-scatter, and
 * sends to each peer for all-to-all (send/recv pairs; chunk j of send goes to rank j,
 * chunk i of recv comes from rank i). */
gboolean  napkin_gpu_group_collective  (NapkinGpuGroup     *group,
                                        NapkinCollectiveKind    kind,
                                        const CUdeviceptr  *send,
                                        const CUdeviceptr  *recv,
                                        gint64              count,
                                        NapkinNcclDataType  type,
                                        gboolean            on_comm_stream,
                                        char              **message);
/* (Re)makes the communicators held to `ctas` CTAs each (ncclCommInitRankConfig with
 * maxCTAs, docs/multi-gpu.md "Overlap"); FALSE with a message when this NCCL cannot. */
gboolean  napkin_gpu_group_limit_ctas  (NapkinGpuGroup    *group,
                                        guint              ctas,
                                        char             **message);
/* cuCtxSynchronize on every GPU. */
gboolean  napkin_gpu_group_sync        (NapkinGpuGroup    *group,
                                        char             **message);

G_END_DECLS
