/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include "napkin-shard-model.h"

void
napkin_shard_analysis_free (NapkinShardAnalysis *analysis)
{
  if (analysis == NULL)
    return;
  g_clear_pointer (&analysis->shard, napkin_shard_plan_free);
  g_clear_pointer (&analysis->analysis, napkin_analysis_free);
  g_free (analysis->note);
  g_free (analysis);
}

static double
kernel_s (const NapkinAnalysis *a,
          guint                 k)
{
  return k < a->kernels->len ? g_array_index (a->kernels, NapkinKernelCost, k).time_s_predicted : 0;
}

/* One chunk's compute of kernels [first, end): the shard diagram priced with the
 * chunk axis cut k times (docs/model.md, "Overlap"), so a chunk's smaller GEMMs pay
 * their own tiles, waves and launches; the whole stretch over k when the chunked plan
 * has other kernels. *chunked: the chunk's analysis (NULL in that case). */
static double
chunk_compute_s (NapkinShardAnalysis        *sa,
                 NapkinArch                 *arch,
                 const NapkinAnalyzeOptions *options,
                 guint                       sms,
                 guint                       first,
                 guint                       end,
                 NapkinAnalysis            **chunked)
{
  NapkinAnalyzeOptions o = { 0 };
  const NapkinShardPlan *plan = sa->shard;
  g_autoptr(NapkinDiagram) chunk = napkin_diagram_copy (plan->shard);
  g_autoptr(NapkinAnalysis) a = NULL;
  int axis = napkin_diagram_find_axis (chunk, plan->chunk_axis);
  double whole = 0, s = 0;

  *chunked = NULL;
  for (guint k = first; k < end; k++)
    whole += kernel_s (sa->analysis, k);
  ((NapkinAxis *) napkin_diagram_get_item (chunk, NAPKIN_ITEM_AXIS, axis))->size /= plan->chunks;
  napkin_diagram_changed (chunk);
  if (options != NULL)
    o = *options;
  o.sms = sms;
  a = napkin_analyze (chunk, arch, &o, NULL);
  if (a == NULL || a->kernels->len != sa->analysis->kernels->len)
    return whole / plan->chunks;
  for (guint k = first; k < end; k++)
    s += kernel_s (a, k);
  *chunked = g_steal_pointer (&a);
  return s;
}

/* NCCL's kernels beside a compute kernel (docs/model.md, "Overlap"): a collective runs
 * one CTA per channel, each holding a few KB of shared memory (its ncclShmem) and a few
 * hundred threads; NVLink rings on H100 use on the order of 16 channels. Estimates. */
#define NCCL_CHANNELS    NAPKIN_NCCL_CHANNELS
#define NCCL_CTA_SMEM    (8 * 1024)
#define NCCL_CTA_THREADS 512

/* The share of the SMs the kernels [first, end) of `a` keep while NCCL runs beside
 * them: 0 when one fills every SM (its blocks leave no SM free and no room on a busy
 * SM for one of NCCL's CTAs: NCCL waits for SMs to drain, priced by the profile's
 * drain share), 1 when NCCL's CTAs fit on SMs the
 * kernels leave idle, else 1 − the SMs NCCL's CTAs take. *note says why when < 1. */
static double
compute_share (const NapkinAnalysis *a,
               const NapkinArch     *arch,
               guint                 first,
               guint                 end,
               char                **note)
{
  double smem_sm = arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes;
  double share = 1;

  for (guint k = first; k < end && a->plan != NULL; k++)
    {
      const NapkinPlanKernel *pk = k < a->plan->kernels->len ? g_ptr_array_index (a->plan->kernels, k) : NULL;
      gint64 busy, per_sm;
      double smem_free;
      guint threads_free, blocks_free;
      gboolean room;

      if (pk == NULL || pk->grid <= 0 || pk->blocks_per_sm == 0)
        continue;
      busy = MIN (pk->grid, (gint64) arch->sms);
      per_sm = MIN ((gint64) pk->blocks_per_sm, (pk->grid + arch->sms - 1) / arch->sms);
      smem_free = smem_sm - per_sm * (pk->smem_bytes + arch->smem_reserved_per_block);
      threads_free = arch->max_threads_per_sm - MIN (arch->max_threads_per_sm, per_sm * pk->threads);
      blocks_free = arch->max_blocks_per_sm - MIN (arch->max_blocks_per_sm, (guint) per_sm);
      room = smem_free >= NCCL_CTA_SMEM + arch->smem_reserved_per_block
             && threads_free >= NCCL_CTA_THREADS && blocks_free >= 1;
      if (arch->sms - busy >= NCCL_CHANNELS)
        continue;
      if (!room && busy >= arch->sms)
        {
          g_free (*note);
          *note = g_strdup_printf ("%s fills every SM (%" G_GINT64_FORMAT " block%s of %.0f KB shared memory "
                                   "an SM): NCCL's CTAs wait for its SMs to drain",
                                   pk->name, per_sm, per_sm == 1 ? "" : "s", pk->smem_bytes / 1024.0);
          return 0;
        }
      if (room)
        {
          double s = 1 - (double) (NCCL_CHANNELS - (arch->sms - busy)) / arch->sms;

          if (s < share)
            {
              share = s;
              g_free (*note);
              *note = g_strdup_printf ("NCCL's %u CTAs run beside %s and take %.0f%% of its SMs",
                                       NCCL_CHANNELS, pk->name, 100 * (1 - s));
            }
        }
    }
  return share;
}

/* One pipelined step (docs/model.md, "SMs left to NCCL"): the chunk's GEMMs (cf on the
 * SMs they get) beside the previous chunk's all-reduce (beside: its time next to them,
 * the wait for SMs included); the GEMMs lose the profile's share of the time the two
 * run together. */
static double
overlap_step (const NapkinLinkTier *tier,
              double                cf,
              double                beside)
{
  return MAX (beside, cf + tier->overlap_compute_loss * MIN (cf, beside));
}

/* One overlapped collective and the kernels [start, end) before it, in k chunks
 * (docs/model.md, "SMs left to NCCL"): chunked one after another k·(c + m), and
 * pipelined c′ + (k − 1)·max (m_b, c′ + loss·min (c′, m_b)) + m_a. c: the chunk's
 * kernels on every SM; c′: on the SMs they get (comm_sms = 0: c over the share NCCL's
 * CTAs leave a smaller grid; s > 0: priced on SMs − s); m_a: the chunk collective alone
 * (s > 0: through s CTAs); m_b = m_a + drain·c, the all-reduce launched beside a running
 * persistent GEMM waiting for part of it before its CTAs get SMs. */
static void
overlap_one (NapkinShardAnalysis        *sa,
             NapkinArch                 *arch,
             const NapkinAnalyzeOptions *options,
             const NapkinCollective     *c,
             guint                       start,
             guint                       end,
             double                     *chunked,
             double                     *piped)
{
  g_autoptr(NapkinAnalysis) ca = NULL, fewer = NULL;
  guint k = c->chunks, s = sa->comm_sms;
  double m = c->chunk_seconds, chunk_c = chunk_compute_s (sa, arch, options, 0, start, end, &ca);
  const NapkinLinkTier *tier = &arch->interconnect.node;
  double cf, alone, beside, step, bus = 0;

  *chunked = k * (chunk_c + m);
  if (s == 0)
    {
      double share = compute_share (ca ? ca : sa->analysis, arch, start, end, &sa->note);

      cf = share > 0 ? chunk_c / share : chunk_c;
      alone = m;
    }
  else
    {
      cf = chunk_compute_s (sa, arch, options, arch->sms - s, start, end, &fewer);
      alone = napkin_arch_collective_seconds_ctas (arch, c->kind, sa->shard->gpus, (double) c->bytes / k, s, &bus);
    }
  beside = alone + tier->overlap_drain_share * chunk_c;
  step = overlap_step (tier, cf, beside);
  sa->chunk_compute_s = cf;
  sa->chunk_comm_s = beside;
  sa->chunk_comm_alone_s = alone;
  *piped = cf + (k - 1) * step + alone;
  if (s > 0)
    {
      g_free (sa->note);
      sa->note = g_strdup_printf ("the chunks' GEMMs on %u of %u SMs (%.1f µs a chunk), NCCL on %u CTAs "
                                  "(%.0f GB/s bus, %.1f µs a chunk beside them); a pipelined step %.1f µs",
                                  arch->sms - s, arch->sms, cf * 1e6, s, bus / 1e9, beside * 1e6, step * 1e6);
    }
}

void
napkin_shard_analysis_overlap (NapkinShardAnalysis        *sa,
                               NapkinArch                 *arch,
                               const NapkinAnalyzeOptions *options,
                               guint                       comm_sms)
{
  guint start = 0;

  g_return_if_fail (sa != NULL && arch != NULL);

  sa->comm_sms = MIN (comm_sms, arch->sms - 1);
  sa->overlapped_s = sa->total_s;
  sa->chunked_s = sa->total_s;
  sa->chunk_compute_s = sa->chunk_comm_s = sa->chunk_comm_alone_s = 0;
  g_clear_pointer (&sa->note, g_free);
  /* each overlapped collective with the kernels since the previous one, in place of C + M */
  for (guint i = 0; i < sa->shard->collectives->len; i++)
    {
      const NapkinCollective *c = g_ptr_array_index (sa->shard->collectives, i);
      guint end = MIN (c->before_kernel, sa->analysis->kernels->len);
      double whole = 0, chunked, piped;

      if (c->chunks >= 2 && end > start)
        {
          for (guint k = start; k < end; k++)
            whole += kernel_s (sa->analysis, k);
          overlap_one (sa, arch, options, c, start, end, &chunked, &piped);
          sa->chunked_s += chunked - (whole + c->seconds);
          sa->overlapped_s += piped - (whole + c->seconds);
        }
      start = MAX (start, end);
    }
  sa->gain_s = sa->chunked_s - sa->overlapped_s;
}

NapkinShardAnalysis *
napkin_shard_analyze (NapkinDiagram              *diagram,
                      NapkinArch                 *arch,
                      guint                       gpus,
                      const NapkinAnalyzeOptions *options,
                      GError                    **error)
{
  g_autoptr(NapkinShardAnalysis) sa = g_new0 (NapkinShardAnalysis, 1);

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram) && arch != NULL, NULL);

  if (!(sa->shard = napkin_shard_plan_build (diagram, arch, gpus, error)))
    return NULL;
  if (!(sa->analysis = napkin_analyze (sa->shard->shard, arch, options, error)))
    return NULL;
  sa->compute_s = sa->analysis->predicted_time_s;
  sa->comm_s = sa->shard->comm_s;
  sa->total_s = sa->compute_s + sa->comm_s;
  napkin_shard_analysis_overlap (sa, arch, options, sa->shard->comm_sms);
  return g_steal_pointer (&sa);
}

json_object *
napkin_shard_analysis_to_json (NapkinShardAnalysis *sa)
{
  json_object *root, *times;

  g_return_val_if_fail (sa != NULL, NULL);

  root = napkin_shard_plan_to_json (sa->shard);
  times = json_object_new_array ();
  for (guint k = 0; k < sa->analysis->kernels->len; k++)
    {
      const NapkinKernelCost *kc = &g_array_index (sa->analysis->kernels, NapkinKernelCost, k);
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "name", json_object_new_string (kc->name));
      json_object_object_add (o, "seconds", json_object_new_double (kc->time_s_predicted));
      json_object_array_add (times, o);
    }
  json_object_object_add (root, "kernel_times", times);
  json_object_object_add (root, "compute_s", json_object_new_double (sa->compute_s));
  json_object_object_add (root, "total_s", json_object_new_double (sa->total_s));
  json_object_object_add (root, "overlapped_s", json_object_new_double (sa->overlapped_s));
  json_object_object_add (root, "gain_s", json_object_new_double (sa->gain_s));
  json_object_object_add (root, "chunked_s", json_object_new_double (sa->chunked_s));
  json_object_object_add (root, "comm_sms", json_object_new_int ((int) sa->comm_sms));
  json_object_object_add (root, "chunk_compute_s", json_object_new_double (sa->chunk_compute_s));
  json_object_object_add (root, "chunk_comm_s", json_object_new_double (sa->chunk_comm_s));
  json_object_object_add (root, "chunk_comm_alone_s", json_object_new_double (sa->chunk_comm_alone_s));
  if (sa->note != NULL)
    json_object_object_add (root, "overlap_note", json_object_new_string (sa->note));
  return root;
}
