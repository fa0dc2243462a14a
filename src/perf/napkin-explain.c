/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-explain"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <string.h>

#include "napkin-explain.h"

char *
napkin_format_int_grouped (gint64      value,
                           const char *separator,
                           const char *grouping)
{
  g_autofree char *digits = g_strdup_printf ("%" G_GUINT64_FORMAT,
                                             value < 0 ? (guint64) 0 - (guint64) value : (guint64) value);
  gsize n = strlen (digits);
  g_autofree gboolean *cut = g_new0 (gboolean, n + 1);   /* a separator before digit i */
  GString *out = g_string_new (value < 0 ? "-" : "");
  gsize end = n;   /* digits right of `end` are grouped */
  guint size = 0;

  /* localeconv's grouping: each byte a group size from the right, the last one
   * repeating; CHAR_MAX ends grouping. */
  for (const char *g = grouping ? grouping : ""; ; )
    {
      if (*g != '\0')
        {
          if (*g == CHAR_MAX || *g <= 0)
            break;
          size = (guchar) *g++;
        }
      if (size == 0 || end <= size)
        break;
      end -= size;
      cut[end] = TRUE;
    }
  for (gsize i = 0; i < n; i++)
    {
      if (cut[i])
        g_string_append (out, separator);
      g_string_append_c (out, digits[i]);
    }
  return g_string_free (out, FALSE);
}

char *
napkin_format_int (gint64 value)
{
  const struct lconv *lc = localeconv ();

  /* The C locale groups nothing; its messages are English, so it keeps the comma
   * (docs/model.md, "Numbers in the user's locale"). */
  if (lc->thousands_sep == NULL || lc->thousands_sep[0] == '\0' || lc->grouping == NULL
      || lc->grouping[0] == '\0' || lc->grouping[0] == CHAR_MAX)
    return napkin_format_int_grouped (value, ",", "\3");
  return napkin_format_int_grouped (value, lc->thousands_sep, lc->grouping);
}

char *
napkin_format_si_digits (double      value,
                         const char *unit,
                         guint       digits)
{
  static const char *prefixes[] = { "", "k", "M", "G", "T", "P", "E" };
  static const char *small[] = { "", "m", "µ", "n", "p" };
  guint i = 0;

  if (!isfinite (value))
    return g_strdup_printf ("%g %s", value, unit);
  if (value != 0 && fabs (value) < 1)
    {
      while (fabs (value) < 1 && i + 1 < G_N_ELEMENTS (small))
        {
          value *= 1000;
          i++;
        }
      return g_strdup_printf ("%.3g %s%s", value, small[i], unit);
    }
  while (fabs (value) >= 1000 && i + 1 < G_N_ELEMENTS (prefixes))
    {
      value /= 1000;
      i++;
    }
  return g_strdup_printf ("%.*g %s%s", (int) digits, value, prefixes[i], unit);
}

char *
napkin_format_si (double      value,
                  const char *unit)
{
  return napkin_format_si_digits (value, unit, 4);
}

/* The bytes a transfer puts on a level, as napkin-model.c's account_transfer counts them. */
static gint64
transfer_bytes_on (const NapkinTransfer *tr,
                   NapkinLevel           level)
{
  if (tr->from == NAPKIN_LEVEL_HBM)
    {
      if (level == NAPKIN_LEVEL_HBM)
        return tr->hbm_bytes;
      if (level == NAPKIN_LEVEL_L2 && tr->to != NAPKIN_LEVEL_L2)
        return tr->bytes;
      return 0;
    }
  return tr->from == level ? tr->bytes : 0;
}

char *
napkin_explain_level_bytes (const NapkinAnalysis *a,
                            NapkinLevel           level)
{
  GString *s = g_string_new (NULL);
  gint64 from_regions = 0;
  guint terms = 0;
  g_autofree char *total = NULL;

  g_return_val_if_fail (a != NULL && level < NAPKIN_N_LEVELS, NULL);

  g_string_append_printf (s, _("bytes(%s) = Σ tile × count × bytes/element"), napkin_level_to_string (level));
  for (guint r = 0; r < a->regions->len; r++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, r);

      for (guint t = 0; t < c->transfers->len; t++)
        {
          const NapkinTransfer *tr = &g_array_index (c->transfers, NapkinTransfer, t);
          gint64 b = transfer_bytes_on (tr, level);
          g_autofree char *tile = NULL, *count = NULL, *bytes = NULL;

          if (b == 0)
            continue;
          from_regions += b;
          terms++;
          if (terms > 12)
            continue;   /* long sums stay readable: the rest is in the remainder below */
          tile = napkin_format_int (tr->tile_elements);
          count = napkin_format_int (tr->count);
          bytes = napkin_format_int (b);
          g_string_append_printf (s, "\n  %s %s (%s): %s × %s × %u B", c->name, tr->tensor,
                                  tr->is_output ? "out" : "in", tile, count, napkin_dtype_bytes (tr->dtype));
          if (tr->from == NAPKIN_LEVEL_HBM && level == NAPKIN_LEVEL_HBM && tr->hbm_bytes != tr->bytes)
            g_string_append_printf (s, _(" ÷ %u sharing through L2"), MAX (1u, tr->sharers));
          g_string_append_printf (s, " = %s B", bytes);
        }
    }
  if (terms > 12)
    {
      g_autofree char *rest = napkin_format_int (from_regions);

      g_string_append_printf (s, _("\n  … %u transfers in all, %s B"), terms, rest);
    }
  if (a->levels[level].transfer_bytes != from_regions)
    {
      g_autofree char *rest = napkin_format_int (a->levels[level].transfer_bytes - from_regions);

      g_string_append_printf (s, _("\n  + operations outside regions (read inputs, write results): %s B"), rest);
    }
  total = napkin_format_int (a->levels[level].transfer_bytes);
  g_string_append_printf (s, "\n= %s B", total);
  return g_string_free (s, FALSE);
}

char *
napkin_explain_level_time (const NapkinAnalysis *a,
                           NapkinLevel           level)
{
  g_autofree char *bytes = NULL, *bw = NULL, *t = NULL;

  g_return_val_if_fail (a != NULL && level < NAPKIN_N_LEVELS, NULL);

  g_autofree char *peak = NULL;

  bytes = napkin_format_int (a->levels[level].transfer_bytes);
  bw = napkin_format_si (a->arch->levels[level].bandwidth, "B/s");
  peak = napkin_format_si (a->levels[level].transfer_bytes / a->arch->levels[level].bandwidth, "s");
  t = napkin_format_si (a->levels[level].time_s, "s");
  /* TRANSLATORS: a level's bytes at its peak bandwidth, then the time the kernels take there */
  return g_strdup_printf (_("time(%s) = %s: the kernels' transfers there, priced kernel by kernel (bytes / "
                            "bandwidth = %s B / %s = %s at the peak)"), napkin_level_to_string (level), t, bytes, bw,
                          peak);
}

static const char *
tensor_class_dtype (NapkinTensorClass c)
{
  return napkin_tensor_class_to_string (c);
}

char *
napkin_explain_resource_time (const NapkinAnalysis *a,
                              NapkinResource        res)
{
  const NapkinArch *arch;
  g_autofree char *t = NULL;
  GString *s;

  g_return_val_if_fail (a != NULL && res < NAPKIN_N_RESOURCES, NULL);

  arch = a->arch;
  t = napkin_format_si (a->resource_s[res], "s");
  s = g_string_new (NULL);
  switch (res)
    {
    case NAPKIN_RESOURCE_TENSOR:
      g_string_append (s, _("time(tensor cores) = Σ FLOPs / (SMs × FLOPs per SM per clock × tensor clock)"));
      for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
        if (a->tensor_flops[c] > 0)
          {
            NapkinTensorClass used = arch->tensor_per_sm_clock[c] > 0 ? c : NAPKIN_TENSOR_FP16;
            g_autofree char *f = napkin_format_int (a->tensor_flops[c]);
            g_autofree char *clk = napkin_format_si (arch->tensor_clock_hz, "Hz");
            g_autofree char *part = napkin_format_si (a->tensor_flops[c] / napkin_arch_tensor_rate (arch, used), "s");

            g_string_append_printf (s, "\n  %s: %s / (%u × %g × %s) = %s%s", tensor_class_dtype (c), f, arch->sms,
                                    arch->tensor_per_sm_clock[used], clk, part,
                                    used != c ? " (no such tensor cores: fp16 rate)" : "");
          }
      break;
    case NAPKIN_RESOURCE_CUDA:
      {
        g_autofree char *f = napkin_format_int (a->flops.cuda + a->fp32_contract_flops);
        g_autofree char *clk = napkin_format_si (arch->clock_hz, "Hz");

        g_string_append_printf (s, _("time(CUDA cores) = FLOPs / (SMs × FLOPs per SM per clock × clock)"
                                "\n  %s FLOPs (maps, reductions, fp32 contractions) / (%u × %g fp32 or %g fp16 × %s)"),
                                f, arch->sms, arch->cuda_fp32_per_sm_clock, arch->cuda_fp16_per_sm_clock, clk);
        break;
      }
    case NAPKIN_RESOURCE_SFU:
      {
        g_autofree char *f = napkin_format_int (a->flops.sfu);
        g_autofree char *clk = napkin_format_si (arch->clock_hz, "Hz");

        g_string_append_printf (s, _("time(special functions) = operations / (SMs × per SM per clock × clock)"
                                "\n  %s / (%u × %g × %s)"), f, arch->sms, arch->sfu_per_sm_clock, clk);
        break;
      }
    default:
      {
        NapkinLevel l = NAPKIN_LEVEL_HBM + (res - NAPKIN_RESOURCE_HBM);
        g_autofree char *bw = napkin_format_si (arch->levels[l].bandwidth, "B/s");

        g_string_append_printf (s, _("time(%s) = Σ over kernels of bytes / bandwidth (%s)"),
                                napkin_level_to_string (l), bw);
        break;
      }
    }
  g_string_append_printf (s, _("\n= %s (summed over kernels, before wave quantisation)"), t);
  return g_string_free (s, FALSE);
}

char *
napkin_explain_total_time (const NapkinAnalysis *a,
                           gboolean              serial)
{
  GString *s;
  g_autofree char *total = NULL;
  g_autofree char *launch = NULL;

  g_return_val_if_fail (a != NULL, NULL);

  launch = napkin_format_si (a->arch->launch_overhead_s, "s");
  s = g_string_new (serial
                    ? "no overlap = Σ over kernels (Σ per-SM resources × quantisation + max(hbm, l2) + launches × "
                    : "predicted = Σ over kernels (max over resources, quantised, where loads can overlap compute; "
                      "else their sum) + launches × ");
  g_string_append_printf (s, "%s)", launch);
  for (guint k = 0; k < a->kernels->len; k++)
    {
      const NapkinKernelCost *kc = &g_array_index (a->kernels, NapkinKernelCost, k);
      gboolean use_serial = serial || !kc->overlaps;
      g_autofree char *t = napkin_format_si (use_serial ? kc->serial_s : kc->overlap_s, "s");

      if (k >= 16)
        {
          g_string_append_printf (s, _("\n  … %u kernels in all"), a->kernels->len);
          break;
        }
      g_string_append_printf (s, _("\n  %s: %s (%s, bound by %s, quantisation × %.3f)"), kc->name, t,
                              use_serial ? "sum" : "max", napkin_resource_to_label (kc->bound), kc->quantisation);
    }
  total = napkin_format_si (serial ? a->serial_time_s : a->predicted_time_s, "s");
  g_string_append_printf (s, "\n= %s", total);
  return g_string_free (s, FALSE);
}

static gint64
counted_flops (const NapkinAnalysis *a)
{
  return a->flops.tensor > 0 ? a->flops.tensor : a->flops_total;
}

char *
napkin_explain_throughput (const NapkinAnalysis *a,
                           gboolean              serial)
{
  g_autofree char *f = NULL, *t = NULL, *r = NULL;

  g_return_val_if_fail (a != NULL, NULL);

  f = napkin_format_int (counted_flops (a));
  t = napkin_format_si (serial ? a->serial_time_s : a->predicted_time_s, "s");
  r = napkin_format_si (serial ? a->serial_throughput : a->throughput, "FLOP/s");
  return g_strdup_printf (_("throughput = %s FLOPs / time = %s / %s = %s"),
                          a->flops.tensor > 0 ? "contraction" : "all", f, t, r);
}

char *
napkin_explain_intensity (const NapkinAnalysis *a)
{
  g_autofree char *f = NULL, *b = NULL;

  g_return_val_if_fail (a != NULL, NULL);

  f = napkin_format_int (a->flops_total);
  b = napkin_format_int (a->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
  return g_strdup_printf (_("intensity = FLOPs / device-memory bytes = %s / %s B = %.4g FLOP/B"), f, b, a->intensity);
}

static double
peak_rate (const NapkinAnalysis *a)
{
  if (a->tensor_throughput > 0)
    return a->tensor_throughput;
  return napkin_arch_cuda_rate (a->arch, NAPKIN_DTYPE_FP32);
}

double
napkin_analysis_percent_of_peak (const NapkinAnalysis *a,
                                 gboolean              serial)
{
  double peak;

  g_return_val_if_fail (a != NULL, 0);

  peak = peak_rate (a);
  return peak > 0 ? 100.0 * (serial ? a->serial_throughput : a->throughput) / peak : 0;
}

char *
napkin_explain_percent_of_peak (const NapkinAnalysis *a,
                                gboolean              serial)
{
  g_autofree char *r = NULL, *p = NULL;

  g_return_val_if_fail (a != NULL, NULL);

  r = napkin_format_si (serial ? a->serial_throughput : a->throughput, "FLOP/s");
  p = napkin_format_si (peak_rate (a), "FLOP/s");
  return g_strdup_printf (_("%% of peak = throughput / peak of the %s = %s / %s = %.1f %%"),
                          a->tensor_throughput > 0 ? "tensor cores for these element types" : "fp32 CUDA cores",
                          r, p, napkin_analysis_percent_of_peak (a, serial));
}

static const NapkinRegionCost *
region_cost (const NapkinAnalysis *a,
             guint                 region)
{
  g_return_val_if_fail (a != NULL && region < a->regions->len, NULL);
  return &g_array_index (a->regions, NapkinRegionCost, region);
}

char *
napkin_explain_region_instances (const NapkinAnalysis *a,
                                 guint                 region)
{
  const NapkinRegionCost *c = region_cost (a, region);
  g_autofree char *g = NULL, *i = NULL, *ch = NULL, *st = NULL;

  g_return_val_if_fail (c != NULL, NULL);

  g = napkin_format_int (c->groups);
  i = napkin_format_int (c->instances);
  ch = napkin_format_int (c->chunks);
  st = napkin_format_int (c->steps);
  return g_strdup_printf (_("instances = Π over parallel axes of size / group, per instance of the enclosing region"
                          "\n  %s groups per parent step (tile %s) = %s instances"
                          "\n  each folds %s stream chunks: %s steps"), g, c->tile, i, ch, st);
}

gint64
napkin_region_block_bytes (const NapkinAnalysis *a,
                           guint                 region)
{
  const NapkinRegionCost *c = region_cost (a, region);

  g_return_val_if_fail (c != NULL, 0);

  return c->plan_smem_bytes > 0 ? c->plan_smem_bytes : c->footprint_bytes;
}

double
napkin_region_capacity (const NapkinAnalysis *a,
                        guint                 region)
{
  const NapkinRegionCost *c = region_cost (a, region);

  g_return_val_if_fail (c != NULL, 0);

  switch (c->level)
    {
    case NAPKIN_LEVEL_SMEM:
      return a->arch->smem_max_per_block;
    case NAPKIN_LEVEL_REGISTERS:
      return (double) a->arch->registers_per_sm * 4;
    default:
      return a->arch->levels[c->level].capacity_bytes;
    }
}

char *
napkin_explain_region_footprint (const NapkinAnalysis *a,
                                 guint                 region)
{
  const NapkinRegionCost *c = region_cost (a, region);
  g_autofree char *e = NULL, *b = NULL, *cap = NULL;

  g_return_val_if_fail (c != NULL, NULL);

  e = napkin_format_int (c->footprint_elements);
  b = napkin_format_int (c->footprint_bytes);
  cap = napkin_format_int ((gint64) napkin_region_capacity (a, region));
  if (c->plan_smem_bytes > 0)
    {
      g_autofree char *pb = napkin_format_int (c->plan_smem_bytes);

      return g_strdup_printf (_("shared memory a block = what its kernel's plan asks for (tiles × stages, "
                              "epilogue buffers, alignment, barriers) = %s B, against %s B one block may have "
                              "= %.1f %%%s\n  (the paper's footprint M: %s elements = %s B)"), pb, cap,
                              100.0 * c->plan_smem_bytes / MAX (1.0, napkin_region_capacity (a, region)),
                              c->feasible ? "" : " (INFEASIBLE)", e, b);
    }
  return g_strdup_printf (_("footprint = largest set of tiles live at once (× %u stages for streamed inputs)"
                          "\n  = %s elements = %s B, against %s B (%s) = %.1f %%%s"), c->stages, e, b, cap,
                          c->level == NAPKIN_LEVEL_SMEM ? "shared memory one block may have"
                          : c->level == NAPKIN_LEVEL_REGISTERS ? "register file of one SM" : "L2",
                          100.0 * c->footprint_bytes / MAX (1.0, napkin_region_capacity (a, region)),
                          c->feasible ? "" : " (INFEASIBLE)");
}

char *
napkin_explain_region_occupancy (const NapkinAnalysis *a,
                                 guint                 region)
{
  const NapkinRegionCost *c = region_cost (a, region);
  const NapkinArch *arch;
  guint warps;

  g_return_val_if_fail (c != NULL, NULL);

  arch = a->arch;
  if (c->level == NAPKIN_LEVEL_L2)
    {
      g_autofree char *b = napkin_format_int (c->footprint_bytes);
      g_autofree char *cap = napkin_format_int ((gint64) arch->levels[NAPKIN_LEVEL_L2].capacity_bytes);

      return g_strdup_printf (_("held in L2 at once = ⌊L2 capacity / footprint⌋ = ⌊%s / %s⌋ = %lld"),
                              cap, b, (long long) c->per_sm);
    }
  warps = MAX (1u, (c->threads + 31) / 32);
  return g_strdup_printf (_("instances per SM = min over limits (shared memory ⌊%.0f / (footprint + %.0f reserved)⌋, "
                          "warps ⌊%u / %u⌋, registers ⌊%u / (%u × %u × 32)⌋, blocks %u)"
                          "\n  = %lld, bound by %s: %lld warps per SM of %u"),
                          arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes, arch->smem_reserved_per_block,
                          arch->max_warps_per_sm, warps, arch->registers_per_sm, c->registers_per_thread, warps,
                          arch->max_blocks_per_sm, (long long) c->per_sm, c->binding_limit ? _(c->binding_limit) : "—",
                          (long long) (c->per_sm * warps), arch->max_warps_per_sm);
}

char *
napkin_explain_region_waves (const NapkinAnalysis *a,
                             guint                 region)
{
  const NapkinRegionCost *c = region_cost (a, region);
  g_autofree char *i = NULL;

  g_return_val_if_fail (c != NULL, NULL);

  i = napkin_format_int (c->instances);
  if (c->level == NAPKIN_LEVEL_L2)
    return g_strdup_printf (_("rounds = ⌈instances / held at once⌉ = ⌈%s / %lld⌉ = %lld"),
                            i, (long long) (MAX (1, c->per_sm)), (long long) c->waves);
  return g_strdup_printf (_("waves = ⌈instances / (SMs × per SM)⌉ = ⌈%s / (%u × %lld)⌉ = %lld"), i, a->arch->sms, (long long) (MAX (1, c->per_sm)), (long long) c->waves);
}

char *
napkin_explain_transfer (const NapkinAnalysis *a,
                         guint                 region,
                         guint                 transfer)
{
  const NapkinRegionCost *c = region_cost (a, region);
  const NapkinTransfer *tr;
  g_autofree char *tile = NULL, *count = NULL, *el = NULL, *b = NULL;

  g_return_val_if_fail (c != NULL && transfer < c->transfers->len, NULL);

  tr = &g_array_index (c->transfers, NapkinTransfer, transfer);
  tile = napkin_format_int (tr->tile_elements);
  count = napkin_format_int (tr->count);
  el = napkin_format_int (tr->elements);
  b = napkin_format_int (tr->bytes);
  return g_strdup_printf (_("%s %s %s %s: tile × moves × bytes/element = %s × %s × %u B = %s elements = %s B"),
                          tr->tensor, tr->is_output ? "→" : "←", napkin_level_to_string (tr->from),
                          tr->is_output ? "written" : "read", tile, count, napkin_dtype_bytes (tr->dtype), el, b);
}
