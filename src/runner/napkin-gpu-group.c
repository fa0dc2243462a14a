/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-gpu-group.h"

static gboolean
cu_check (NapkinCudaDriver  *cu,
          CUresult           res,
          const char        *what,
          guint              r,
          char             **message)
{
  g_autofree char *where = NULL;

  if (res == CUDA_SUCCESS)
    return TRUE;
  where = g_strdup_printf ("GPU %u: %s", r, what);
  return napkin_cuda_driver_check (cu, res, where, message);
}

static gboolean
nccl_check (NapkinGpuGroup  *group,
            int              res,
            const char      *what,
            char           **message)
{
  g_autofree char *text = NULL;

  if (res == NAPKIN_NCCL_SUCCESS)
    return TRUE;
  text = napkin_nccl_error (&group->nccl, res);
  g_free (*message);
  *message = g_strdup_printf ("NCCL %s: %s", what, text);
  return FALSE;
}

gboolean
napkin_gpu_group_check_count (NapkinCudaDriver  *cu,
                              guint              n,
                              char             **message)
{
  int count = 0;

  if (!cu_check (cu, cu->DeviceGetCount (&count), "counting GPUs", 0, message))
    return FALSE;
  if (n > NAPKIN_MAX_GPUS)
    {
      *message = g_strdup_printf (_("--gpus %u: at most %d GPUs are supported"), n, NAPKIN_MAX_GPUS);
      return FALSE;
    }
  if ((guint) count < n)
    {
      *message = g_strdup_printf (_("--gpus %u: this machine has %d GPU%s"), n, count, count == 1 ? "" : "s");
      return FALSE;
    }
  return TRUE;
}

gboolean
napkin_gpu_group_use (NapkinGpuGroup  *group,
                      guint            r,
                      char           **message)
{
  return cu_check (group->cu, group->cu->CtxSetCurrent (group->ctx[r]), "making its context current", r, message);
}

/* The communication stream; NAPKIN_COMM_PRIORITY=high gives it the context's greatest
 * priority, so that the block scheduler places NCCL's CTAs before pending GEMM blocks
 * (an experiment of bench/gpu/overlap, docs/model.md "SMs left to NCCL"). */
static CUresult
comm_stream_create (NapkinCudaDriver *cu,
                    CUstream         *stream)
{
  int least = 0, greatest = 0;

  if (g_strcmp0 (g_getenv ("NAPKIN_COMM_PRIORITY"), "high") == 0 && cu->StreamCreateWithPriority != NULL
      && cu->CtxGetStreamPriorityRange != NULL && cu->CtxGetStreamPriorityRange (&least, &greatest) == CUDA_SUCCESS)
    return cu->StreamCreateWithPriority (stream, CU_STREAM_NON_BLOCKING, greatest);
  return cu->StreamCreate (stream, CU_STREAM_NON_BLOCKING);
}

gboolean
napkin_gpu_group_open (NapkinGpuGroup    *group,
                       NapkinCudaDriver  *cu,
                       guint              n,
                       char             **message)
{
  int devlist[NAPKIN_MAX_GPUS];

  memset (group, 0, sizeof *group);
  group->cu = cu;
  if (!napkin_gpu_group_check_count (cu, n, message))
    return FALSE;
  /* NCCL first: its absence is the likeliest failure, and says the most */
  if (!napkin_nccl_open (&group->nccl, message))
    {
      group->no_nccl = TRUE;
      return FALSE;
    }
  group->n = n;
  for (guint r = 0; r < n; r++)
    {
      devlist[r] = (int) r;
      if (!cu_check (cu, cu->DeviceGet (&group->device[r], (int) r), "opening it", r, message)
          || !cu_check (cu, cu->DevicePrimaryCtxRetain (&group->ctx[r], group->device[r]), "creating a context", r, message)
          || !cu_check (cu, cu->CtxSetCurrent (group->ctx[r]), "creating a context", r, message)
          || !cu_check (cu, cu->StreamCreate (&group->stream[r], CU_STREAM_NON_BLOCKING), "creating a stream", r, message)
          || !cu_check (cu, comm_stream_create (cu, &group->comm_stream[r]), "creating a stream", r, message))
        return FALSE;
    }
  if (!nccl_check (group, group->nccl.CommInitAll (group->comm, (int) n, devlist), "ncclCommInitAll", message))
    return FALSE;
  group->have_comms = TRUE;
  return napkin_gpu_group_use (group, 0, message);
}

static void
destroy_limited (NapkinGpuGroup *group)
{
  for (guint r = 0; r < group->n && group->limited_ctas > 0; r++)
    if (group->limited[r] != NULL)
      group->nccl.CommDestroy (group->limited[r]);
  memset (group->limited, 0, sizeof group->limited);
  group->limited_ctas = 0;
  group->use_limited = FALSE;
}

/* NCCL's thread-block cluster size for the held communicator: $NAPKIN_NCCL_CGA (0: no
 * clusters, so that its few CTAs fit on any free SMs), else NCCL's own (4 on Hopper). */
static int
cga_cluster_size (void)
{
  const char *env = g_getenv ("NAPKIN_NCCL_CGA");
  guint64 v;

  return env != NULL && g_ascii_string_to_unsigned (env, 10, 0, 8, &v, NULL) ? (int) v : G_MININT;
}

gboolean
napkin_gpu_group_limit_ctas (NapkinGpuGroup  *group,
                             guint            ctas,
                             char           **message)
{
  NapkinNcclUniqueId id;
  int res;

  if (group->limited_ctas == ctas)
    return TRUE;
  destroy_limited (group);
  if (group->nccl.GetUniqueId == NULL || group->nccl.CommInitRankConfig == NULL)
    {
      *message = g_strdup (_("this NCCL has no ncclCommInitRankConfig (2.14+): cannot hold a communicator to a few CTAs"));
      return FALSE;
    }
  if (!nccl_check (group, group->nccl.GetUniqueId (&id), "ncclGetUniqueId", message)
      || !nccl_check (group, group->nccl.GroupStart (), "ncclGroupStart", message))
    return FALSE;
  res = NAPKIN_NCCL_SUCCESS;
  for (guint r = 0; r < group->n && res == NAPKIN_NCCL_SUCCESS; r++)
    {
      NapkinNcclConfig config = { sizeof config, 0xcafebeef, 21400, 1, cga_cluster_size (), 1, (int) ctas, NULL };

      if (!napkin_gpu_group_use (group, r, message))
        res = 5;   /* ncclInvalidUsage */
      else
        res = group->nccl.CommInitRankConfig (&group->limited[r], (int) group->n, id, (int) r, &config);
    }
  if (res != NAPKIN_NCCL_SUCCESS)
    {
      group->nccl.GroupEnd ();
      return nccl_check (group, res, "ncclCommInitRankConfig", message);
    }
  if (!nccl_check (group, group->nccl.GroupEnd (), "ncclGroupEnd", message))
    return FALSE;
  group->limited_ctas = ctas;
  return napkin_gpu_group_use (group, 0, message);
}

void
napkin_gpu_group_close (NapkinGpuGroup *group)
{
  destroy_limited (group);
  if (group->have_comms)
    for (guint r = 0; r < group->n; r++)
      group->nccl.CommDestroy (group->comm[r]);
  group->have_comms = FALSE;
  for (guint r = 0; r < group->n && group->cu != NULL; r++)
    if (group->ctx[r] != NULL && group->cu->CtxSetCurrent (group->ctx[r]) == CUDA_SUCCESS)
      {
        if (group->stream[r] != NULL)
          group->cu->StreamDestroy (group->stream[r]);
        if (group->comm_stream[r] != NULL)
          group->cu->StreamDestroy (group->comm_stream[r]);
      }
  if (group->nccl.handle != NULL)
    napkin_nccl_close (&group->nccl);
  group->n = 0;
}

gboolean
napkin_gpu_group_collective (NapkinGpuGroup     *group,
                             NapkinCollectiveKind    kind,
                             const CUdeviceptr  *send,
                             const CUdeviceptr  *recv,
                             gint64              count,
                             NapkinNcclDataType  type,
                             gboolean            on_comm_stream,
                             char              **message)
{
  NapkinNccl *nc = &group->nccl;
  NapkinNcclComm *comm = group->use_limited && group->limited_ctas > 0 ? group->limited : group->comm;
  gsize chunk_bytes = (gsize) count * napkin_nccl_type_bytes (type);
  int res = NAPKIN_NCCL_SUCCESS;

  if (!nccl_check (group, nc->GroupStart (), "ncclGroupStart", message))
    return FALSE;
  for (guint r = 0; r < group->n && res == NAPKIN_NCCL_SUCCESS; r++)
    {
      NapkinNcclStream s = on_comm_stream ? group->comm_stream[r] : group->stream[r];
      const void *src = (const void *) (uintptr_t) send[r];
      void *dst = (void *) (uintptr_t) recv[r];

      switch (kind)
        {
        case NAPKIN_COLLECTIVE_ALL_REDUCE:
          res = nc->AllReduce (src, dst, count, type, NAPKIN_NCCL_SUM, comm[r], s);
          break;
        case NAPKIN_COLLECTIVE_ALL_GATHER:
          res = nc->AllGather (src, dst, count, type, comm[r], s);
          break;
        case NAPKIN_COLLECTIVE_REDUCE_SCATTER:
          res = nc->ReduceScatter (src, dst, count, type, NAPKIN_NCCL_SUM, comm[r], s);
          break;
        case NAPKIN_COLLECTIVE_ALL_TO_ALL:
          for (guint p = 0; p < group->n && res == NAPKIN_NCCL_SUCCESS; p++)
            {
              res = nc->Send ((const char *) src + p * chunk_bytes, count, type, (int) p, comm[r], s);
              if (res == NAPKIN_NCCL_SUCCESS)
                res = nc->Recv ((char *) dst + p * chunk_bytes, count, type, (int) p, comm[r], s);
            }
          break;
        default:
          res = 4;   /* ncclInvalidArgument */
        }
    }
  if (res != NAPKIN_NCCL_SUCCESS)
    {
      nc->GroupEnd ();
      return nccl_check (group, res, napkin_nccl_collective_name (kind), message);
    }
  return nccl_check (group, nc->GroupEnd (), "ncclGroupEnd", message);
}

gboolean
napkin_gpu_group_sync (NapkinGpuGroup  *group,
                       char           **message)
{
  for (guint r = 0; r < group->n; r++)
    if (!napkin_gpu_group_use (group, r, message)
        || !cu_check (group->cu, group->cu->CtxSynchronize (), "waiting for its work", r, message))
      return FALSE;
  return TRUE;
}
