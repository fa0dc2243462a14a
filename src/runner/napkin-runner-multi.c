/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "napkin-gpu-group.h"
#include "napkin-runner-multi.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_NO_GPU = 3, EXIT_FAULT = 4 };

static void
progress (double      fraction,
          const char *message)
{
  fprintf (stderr, "progress %.2f %s\n", fraction, message);
  fflush (stderr);
}

static int
fail (char       **status,
      const char  *what,
      int          code)
{
  *status = g_strdup (what);
  return code;
}

static int
cmp_double (gconstpointer a,
            gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* Device names and the NCCL version, shared by every multi-GPU report. */
static void
describe_group (NapkinGpuGroup *g,
                json_object    *root)
{
  json_object *devices = json_object_new_array ();
  json_object *nccl = json_object_new_object ();
  g_autofree char *version = napkin_nccl_version (&g->nccl);

  for (guint r = 0; r < g->n; r++)
    {
      char name[256] = "";

      g->cu->DeviceGetName (name, sizeof name, g->device[r]);
      json_object_array_add (devices, json_object_new_string (name));
    }
  json_object_object_add (root, "gpus", json_object_new_int ((int) g->n));
  json_object_object_add (root, "devices", devices);
  json_object_object_add (nccl, "version", json_object_new_string (version));
  json_object_object_add (nccl, "library", json_object_new_string (g->nccl.path));
  /* NCCL picks ring, tree, NVLS… per call; these pin it when set (NCCL's environment) */
  json_object_object_add (nccl, "algorithm", json_object_new_string (g_getenv ("NCCL_ALGO") ? g_getenv ("NCCL_ALGO")
                                                                                          : "NCCL's choice (NCCL_ALGO unset)"));
  json_object_object_add (nccl, "protocol", json_object_new_string (g_getenv ("NCCL_PROTO") ? g_getenv ("NCCL_PROTO")
                                                                                         : "NCCL's choice (NCCL_PROTO unset)"));
  json_object_object_add (root, "nccl", nccl);
}

/* One collective of `count` elements timed on every GPU: `batch` back-to-back operations
 * between two events per GPU, the slowest GPU's span, `repeats` times; the median / batch. */
static gboolean
time_collective (NapkinGpuGroup     *g,
                 NapkinCollectiveKind    kind,
                 const CUdeviceptr  *send,
                 const CUdeviceptr  *recv,
                 gint64              count,
                 guint               repeats,
                 guint               batch,
                 double             *median_ms,
                 double             *min_ms,
                 double             *max_ms,
                 char              **message)
{
  NapkinCudaDriver *cu = g->cu;
  CUevent e0[NAPKIN_MAX_GPUS] = { 0 }, e1[NAPKIN_MAX_GPUS] = { 0 };
  g_autofree double *times = g_new0 (double, repeats);
  gboolean ok = TRUE;

  for (guint r = 0; r < g->n && ok; r++)
    ok = napkin_gpu_group_use (g, r, message)
         && napkin_cuda_driver_check (cu, cu->EventCreate (&e0[r], 0), "creating an event", message)
         && napkin_cuda_driver_check (cu, cu->EventCreate (&e1[r], 0), "creating an event", message);
  /* warm-up: NCCL sets up its connections on a communicator's first calls */
  for (guint w = 0; w < 3 && ok; w++)
    ok = napkin_gpu_group_collective (g, kind, send, recv, count, NAPKIN_NCCL_BFLOAT16, FALSE, message);
  ok = ok && napkin_gpu_group_sync (g, message);
  for (guint i = 0; i < repeats && ok; i++)
    {
      double worst = 0;

      for (guint r = 0; r < g->n && ok; r++)
        ok = napkin_gpu_group_use (g, r, message)
             && napkin_cuda_driver_check (cu, cu->EventRecord (e0[r], g->stream[r]), "recording", message);
      for (guint b = 0; b < batch && ok; b++)
        ok = napkin_gpu_group_collective (g, kind, send, recv, count, NAPKIN_NCCL_BFLOAT16, FALSE, message);
      for (guint r = 0; r < g->n && ok; r++)
        ok = napkin_gpu_group_use (g, r, message)
             && napkin_cuda_driver_check (cu, cu->EventRecord (e1[r], g->stream[r]), "recording", message);
      for (guint r = 0; r < g->n && ok; r++)
        {
          float ms = 0;

          ok = napkin_gpu_group_use (g, r, message)
               && napkin_cuda_driver_check (cu, cu->EventSynchronize (e1[r]), "running the collective", message)
               && napkin_cuda_driver_check (cu, cu->EventElapsedTime (&ms, e0[r], e1[r]), "reading the event timer",
                                           message);
          worst = MAX (worst, ms);
        }
      times[i] = worst / batch;
    }
  for (guint r = 0; r < g->n; r++)
    if (e0[r] != NULL && napkin_gpu_group_use (g, r, message))
      {
        cu->EventDestroy (e0[r]);
        cu->EventDestroy (e1[r]);
      }
  if (!ok)
    return FALSE;
  qsort (times, repeats, sizeof (double), cmp_double);
  *median_ms = times[repeats / 2];
  *min_ms = times[0];
  *max_ms = times[repeats - 1];
  return TRUE;
}

int
napkin_runner_collectives (NapkinCudaDriver                *cu,
                           const NapkinCollectivesOptions  *opt,
                           json_object                     *root,
                           char                           **status,
                           char                           **message)
{
  NapkinGpuGroup g;
  CUdeviceptr send[NAPKIN_MAX_GPUS] = { 0 }, recv[NAPKIN_MAX_GPUS] = { 0 };
  gboolean run[NAPKIN_N_COLLECTIVES];
  json_object *results;
  guint n_sizes = 0, done = 0;
  int code = EXIT_OK;

  for (guint k = 0; k < NAPKIN_N_COLLECTIVES; k++)
    run[k] = opt->only == NULL;
  for (guint i = 0; opt->only && opt->only[i]; i++)
    {
      NapkinCollectiveKind kind;

      if (!napkin_nccl_collective_parse (opt->only[i], &kind))
        {
          *message = g_strdup_printf (_("--collective: “%s” is not all-reduce, all-gather, reduce-scatter or all-to-all"),
                                      opt->only[i]);
          return fail (status, "failed", EXIT_FAILED);
        }
      run[kind] = TRUE;
    }
  if (opt->gpus < 2)
    {
      *message = g_strdup_printf (_("--collectives needs --gpus 2 or more, not %u"), opt->gpus);
      return fail (status, "failed", EXIT_FAILED);
    }
  progress (0.15, "Opening the GPUs and NCCL");
  if (!napkin_gpu_group_check_count (cu, opt->gpus, message))
    return fail (status, "no-gpu", EXIT_NO_GPU);
  if (!napkin_gpu_group_open (&g, cu, opt->gpus, message))
    {
      napkin_gpu_group_close (&g);
      return fail (status, g.no_nccl ? "no-nccl" : "failed", EXIT_FAILED);
    }
  describe_group (&g, root);
  json_object_object_add (root, "dtype", json_object_new_string ("bf16"));
  json_object_object_add (root, "repeats", json_object_new_int ((int) opt->repeats));
  json_object_object_add (root, "batch", json_object_new_int ((int) opt->batch));
  json_object_object_add (root, "timing", json_object_new_string ("CUDA events around each batch on every GPU; the "
                                                                  "slowest GPU's span / batch; median of the repeats"));
  for (guint r = 0; r < g.n; r++)
    if (!napkin_gpu_group_use (&g, r, message)
        || !napkin_cuda_driver_check (cu, cu->MemAlloc (&send[r], opt->max_bytes), "allocating the send buffer", message)
        || !napkin_cuda_driver_check (cu, cu->MemAlloc (&recv[r], opt->max_bytes), "allocating the receive buffer", message)
        || !napkin_cuda_driver_check (cu, cu->MemsetD8 (send[r], 0x3c, opt->max_bytes), "filling the send buffer", message))
      {
        code = fail (status, "failed", EXIT_FAILED);
        goto out;
      }
  for (gint64 s = opt->min_bytes; s <= opt->max_bytes; s *= opt->factor)
    n_sizes++;
  results = json_object_new_array ();
  json_object_object_add (root, "collectives", results);
  for (guint k = 0; k < NAPKIN_N_COLLECTIVES; k++)
    for (gint64 size = opt->min_bytes; run[k] && size <= opt->max_bytes; size *= opt->factor)
      {
        gint64 elems = size / 2, bytes;
        gint64 count = k == NAPKIN_COLLECTIVE_ALL_REDUCE ? elems : elems / g.n;
        double med = 0, lo = 0, hi = 0, algbw;
        json_object *o;
        g_autofree char *what = g_strdup_printf (_("%s of %.0f MiB"), napkin_nccl_collective_name (k), size / 1048576.0);

        progress (0.2 + 0.75 * done++ / (4.0 * n_sizes), what);
        if (!time_collective (&g, k, send, recv, count, opt->repeats, opt->batch, &med, &lo, &hi, message))
          {
            code = fail (status, "fault", EXIT_FAULT);
            goto out;
          }
        bytes = napkin_nccl_size_bytes (k, count, 2, g.n);
        algbw = bytes / (med * 1e-3) / 1e9;
        o = json_object_new_object ();
        json_object_object_add (o, "kind", json_object_new_string (napkin_nccl_collective_name (k)));
        json_object_object_add (o, "bytes", json_object_new_int64 (bytes));
        json_object_object_add (o, "count", json_object_new_int64 (count));
        json_object_object_add (o, "time_ms", json_object_new_double (med));
        json_object_object_add (o, "min_ms", json_object_new_double (lo));
        json_object_object_add (o, "max_ms", json_object_new_double (hi));
        json_object_object_add (o, "algbw_gbps", json_object_new_double (algbw));
        json_object_object_add (o, "busbw_gbps", json_object_new_double (algbw * napkin_nccl_bus_factor (k, g.n)));
        json_object_array_add (results, o);
      }
  *status = g_strdup ("ok");
out:
  for (guint r = 0; r < g.n; r++)
    if (napkin_gpu_group_use (&g, r, message))
      {
        if (send[r])
          cu->MemFree (send[r]);
        if (recv[r])
          cu->MemFree (recv[r]);
      }
  napkin_gpu_group_close (&g);
  progress (1.0, "Done");
  return code;
}
