/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <string.h>

#include "napkin-arch.h"
#include "napkin-data-dirs.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-json-scan.h"
#include "napkin-error.h"
#include "napkin-text.h"

G_DEFINE_QUARK (NapkinArchError, napkin_arch_error)

struct _NapkinArchRegistry
{
  GPtrArray *arches;   /* NapkinArch *, in load order */
  GPtrArray *errors;   /* char * */
  GPtrArray *retired;  /* profiles replaced by napkin_arch_registry_add: callers may still hold them */
  GPtrArray *searched; /* char *: the folders add_dir was given, for the "none found" error */
};

static const char *tensor_class_names[NAPKIN_N_TENSOR_CLASSES + 1] = {
  "fp16", "bf16", "tf32", "fp8", "int8", NULL,
};

static const char *tensor_path_names[NAPKIN_N_TENSOR_PATHS] = {
  "mma.sync", "wgmma", "tcgen05",
};

const char *
napkin_tensor_path_to_string (NapkinTensorPathKind path)
{
  g_return_val_if_fail (path < NAPKIN_N_TENSOR_PATHS, NULL);
  return tensor_path_names[path];
}

const char *
napkin_tensor_class_to_string (NapkinTensorClass klass)
{
  g_return_val_if_fail (klass < NAPKIN_N_TENSOR_CLASSES, NULL);
  return tensor_class_names[klass];
}

gboolean
napkin_tensor_class_for_dtype (NapkinDtype        dtype,
                               NapkinTensorClass *out)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP16: *out = NAPKIN_TENSOR_FP16; return TRUE;
    case NAPKIN_DTYPE_BF16: *out = NAPKIN_TENSOR_BF16; return TRUE;
    case NAPKIN_DTYPE_TF32: *out = NAPKIN_TENSOR_TF32; return TRUE;
    case NAPKIN_DTYPE_FP8_E4M3:
    case NAPKIN_DTYPE_FP8_E5M2: *out = NAPKIN_TENSOR_FP8; return TRUE;
    case NAPKIN_DTYPE_INT8: *out = NAPKIN_TENSOR_INT8; return TRUE;
    case NAPKIN_DTYPE_FP32:
    case NAPKIN_N_DTYPES:
    default:
      return FALSE;
    }
}

NapkinArch *
napkin_arch_ref (NapkinArch *arch)
{
  g_return_val_if_fail (arch != NULL, NULL);
  g_atomic_int_inc (&arch->ref_count);
  return arch;
}

void
napkin_arch_unref (NapkinArch *arch)
{
  g_return_if_fail (arch != NULL);

  if (!g_atomic_int_dec_and_test (&arch->ref_count))
    return;
  g_free (arch->id);
  g_free (arch->name);
  g_free (arch->family);
  g_free (arch->compute_capability);
  g_free (arch->path);
  g_free (arch->shadows);
  g_free (arch->interconnect.node.link);
  g_free (arch->interconnect.network.link);
  g_clear_pointer (&arch->sources, g_hash_table_unref);
  g_clear_pointer (&arch->source_order, g_ptr_array_unref);
  for (guint p = 0; p < NAPKIN_N_TENSOR_PATHS; p++)
    {
      g_free (arch->tensor_paths[p].other_operands);
      g_free (arch->tensor_paths[p].source);
    }
  g_free (arch);
}

/* ---- loading ------------------------------------------------------------------------ */

/* Lengths of a profile's texts, in characters (docs/security.md, "Profiles"). */
#define MAX_ID_CHARS        64
#define MAX_NAME_CHARS     100
#define MAX_SOURCE_CHARS  2000

static gboolean
fail (GError    **error,
      const char *path,
      const char *format,
      ...) G_GNUC_PRINTF (3, 4);

static gboolean
fail (GError    **error,
      const char *path,
      const char *format,
      ...)
{
  g_autofree char *message = NULL;
  g_autofree char *shown_path = NULL;
  g_autofree char *shown = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  /* the path holds the profile's own field names: escaped and cut, as the message */
  shown_path = napkin_text_shown (path, -1, 120);
  shown = napkin_text_shown (message, -1, 400);
  g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_FORMAT, "%s: %s", shown_path, shown);
  return FALSE;
}

static json_object *
get_object (json_object *parent,
            const char  *parent_path,
            const char  *key,
            GError     **error)
{
  json_object *obj = NULL;

  if (!json_object_object_get_ex (parent, key, &obj) || !json_object_is_type (obj, json_type_object))
    {
      g_autofree char *path = g_strdup_printf ("%s%s%s", parent_path, *parent_path ? "." : "", key);

      fail (error, path, obj == NULL ? "missing object" : "expected an object");
      return NULL;
    }
  return obj;
}

/* A string field: non-empty, at most `max` characters, printable as it is (no control
 * or bidi character: names and sources reach the terminal and the editor). */
static gboolean
get_text (json_object *parent,
          const char  *path,
          const char  *key,
          gboolean     required,
          guint        max,
          char       **out,
          GError     **error)
{
  g_autofree char *p = g_strdup_printf ("%s%s%s", path, *path ? "." : "", key);
  json_object *obj = NULL;
  const char *text;

  if (!json_object_object_get_ex (parent, key, &obj))
    {
      if (required)
        return fail (error, p, _("missing"));
      return TRUE;
    }
  if (!json_object_is_type (obj, json_type_string) || json_object_get_string_len (obj) == 0)
    return fail (error, p, _("expected a non-empty string"));
  text = json_object_get_string (obj);
  if (napkin_text_find_unsafe (text, json_object_get_string_len (obj)) >= 0)
    {
      g_autofree char *shown = napkin_text_quoted (text);

      return fail (error, p, _("%s holds a control or bidi character"), shown);
    }
  if (g_utf8_strlen (text, -1) > max)
    {
      g_autofree char *shown = napkin_text_quoted (text);

      return fail (error, p, _("%s is longer than %u characters"), shown, max);
    }
  g_free (*out);
  *out = g_strdup (text);
  return TRUE;
}

/* Every member of `obj` is one of `known`: a misspelt field would otherwise be left
 * out silently and the model would run on a default. */
static gboolean
check_keys (json_object        *obj,
            const char         *path,
            const char * const *known,
            GError            **error)
{
  json_object_object_foreach (obj, key, value)
    {
      (void) value;
      if (!g_strv_contains (known, key))
        {
          g_autofree char *shown = napkin_text_quoted (key);
          g_autofree char *list = g_strjoinv (", ", (char **) known);

          return fail (error, *path ? path : "$", _("unknown field %s (known: %s)"), shown, list);
        }
    }
  return TRUE;
}

/* A boolean member, when present. */
static gboolean
get_bool (json_object *obj,
          const char  *path,
          const char  *key,
          gboolean    *out,
          GError     **error)
{
  json_object *v = NULL;

  if (!json_object_object_get_ex (obj, key, &v))
    return TRUE;
  if (!json_object_is_type (v, json_type_boolean))
    return fail (error, path, _("“%s” must be true or false"), key);
  *out = json_object_get_boolean (v);
  return TRUE;
}

/* Every figure is {"value": number, "source": "where it comes from"}. */
static gboolean
get_figure (NapkinArch  *arch,
            json_object *parent,
            const char  *parent_path,
            const char  *key,
            double       min,
            double       max,
            double      *out,
            GError     **error)
{
  g_autofree char *path = g_strdup_printf ("%s%s%s", parent_path, *parent_path ? "." : "", key);
  g_autofree char *text = NULL;
  json_object *obj = NULL, *value = NULL, *source = NULL;
  double v;

  if (!json_object_object_get_ex (parent, key, &obj))
    return fail (error, path, _("missing figure"));
  if (!json_object_is_type (obj, json_type_object))
    return fail (error, path, _("expected {\"value\": NUMBER, \"source\": TEXT}"));
  if (!json_object_object_get_ex (obj, "value", &value)
      || !(json_object_is_type (value, json_type_int) || json_object_is_type (value, json_type_double)))
    return fail (error, path, _("“value” must be a number"));
  if (!json_object_object_get_ex (obj, "source", &source) || !json_object_is_type (source, json_type_string)
      || json_object_get_string_len (source) == 0)
    return fail (error, path, _("every figure needs a “source” (datasheet, whitepaper or measured)"));
  if (!check_keys (obj, path, (const char * const[]) { "value", "source", NULL }, error)
      || !get_text (obj, path, "source", TRUE, MAX_SOURCE_CHARS, &text, error))
    return FALSE;
  v = json_object_get_double (value);
  if (!isfinite (v) || v < min || v > max)
    return fail (error, path, _("value %g is outside [%g, %g]"), v, min, max);
  *out = v;
  if (!g_hash_table_contains (arch->sources, path))
    g_ptr_array_add (arch->source_order, g_strdup (path));
  g_hash_table_insert (arch->sources, g_strdup (path), g_steal_pointer (&text));
  return TRUE;
}

static const char *collective_keys[NAPKIN_N_COLLECTIVES + 1] = {
  "all_reduce", "all_gather", "reduce_scatter", "all_to_all", NULL,
};

/* One tier of the optional "interconnect" object (docs/model.md, "Collectives"). */
static gboolean
get_link_tier (NapkinArch     *arch,
               json_object    *obj,
               const char     *path,
               gboolean        node,
               NapkinLinkTier *tier,
               GError        **error)
{
  json_object *bus, *value = NULL;
  g_autofree char *bpath = g_strdup_printf ("%s.bus_bandwidth_bytes_per_s", path);
  double v;

  static const char * const network_keys[] = {
    "link", "link_bandwidth_bytes_per_s", "latency_us", "cta_bus_bandwidth_bytes_per_s", "overlap_drain_share",
    "overlap_compute_loss", "bus_bandwidth_bytes_per_s", NULL,
  };
  static const char * const node_keys[] = {
    "link", "link_bandwidth_bytes_per_s", "latency_us", "cta_bus_bandwidth_bytes_per_s", "overlap_drain_share",
    "overlap_compute_loss", "bus_bandwidth_bytes_per_s", "links", "nvswitch", "gpus_per_node", "network", NULL,
  };

  (void) value;
  if (!check_keys (obj, path, node ? node_keys : network_keys, error)
      || !get_text (obj, path, "link", TRUE, MAX_NAME_CHARS, &tier->link, error))
    return FALSE;
  if (node)
    {
      if (!get_figure (arch, obj, path, "links", 0, 64, &v, error)
          || !get_bool (obj, "interconnect.nvswitch", "nvswitch", &tier->nvswitch, error))
        return FALSE;
      tier->links = v;
    }
  if (!get_figure (arch, obj, path, "link_bandwidth_bytes_per_s", 1e6, 1e15, &tier->link_bandwidth, error)
      || !get_figure (arch, obj, path, "latency_us", 0, 1e6, &tier->latency_s, error))
    return FALSE;
  tier->latency_s *= 1e-6;
  if ((json_object_object_get_ex (obj, "cta_bus_bandwidth_bytes_per_s", NULL)
       && !get_figure (arch, obj, path, "cta_bus_bandwidth_bytes_per_s", 1e6, 1e15, &tier->cta_bus_bandwidth, error))
      || (json_object_object_get_ex (obj, "overlap_drain_share", NULL)
          && !get_figure (arch, obj, path, "overlap_drain_share", 0, 1, &tier->overlap_drain_share, error))
      || (json_object_object_get_ex (obj, "overlap_compute_loss", NULL)
          && !get_figure (arch, obj, path, "overlap_compute_loss", 0, 1, &tier->overlap_compute_loss, error)))
    return FALSE;
  if (!(bus = get_object (obj, path, "bus_bandwidth_bytes_per_s", error))
      || !check_keys (bus, bpath, collective_keys, error))
    return FALSE;
  for (guint k = 0; k < NAPKIN_N_COLLECTIVES; k++)
    if (!get_figure (arch, bus, bpath, collective_keys[k], 1e6, 1e15, &tier->bus_bandwidth[k], error))
      return FALSE;
  tier->present = TRUE;
  return TRUE;
}

static gboolean
get_interconnect (NapkinArch  *arch,
                  json_object *root,
                  GError     **error)
{
  json_object *obj, *network;
  double v;

  if (!json_object_object_get_ex (root, "interconnect", NULL))
    return TRUE;
  if (!(obj = get_object (root, "", "interconnect", error)))
    return FALSE;
  if (!get_figure (arch, obj, "interconnect", "gpus_per_node", 1, 1 << 20, &v, error))
    return FALSE;
  arch->interconnect.gpus_per_node = v;
  if (!get_link_tier (arch, obj, "interconnect", TRUE, &arch->interconnect.node, error))
    return FALSE;
  if (json_object_object_get_ex (obj, "network", NULL))
    {
      if (!(network = get_object (obj, "interconnect", "network", error))
          || !get_link_tier (arch, network, "interconnect.network", FALSE, &arch->interconnect.network, error))
        return FALSE;
    }
  return TRUE;
}

/* The fields of a profile (docs/model.md): anything else is a typo or a newer format. */
static const char * const profile_keys[] = {
  "format", "version", "id", "name", "family", "compute_capability", "sources", "sms", "clock_mhz",
  "tensor_clock_mhz", "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm", "max_registers_per_thread",
  "launch_overhead_s", "levels", "tensor", "tensor_mma_sync", "cuda", "sfu", "tensor_paths", "energy_pj_per_flop",
  "interconnect", NULL,
};

/* "9.0", "10.0", "8.9": the major 1 … 99 without a leading zero, the minor one digit.
 * It becomes sm_90a, sm_100a in generated code and compiler flags. */
static gboolean
compute_capability_is_valid (const char *cc)
{
  return g_regex_match_simple ("^[1-9][0-9]?\\.[0-9]$", cc, 0, 0);
}

/* A short name; '-' is allowed after the first character because
 * `napkin-cli calibrate` names its profiles "<id>-measured". */
static gboolean
arch_id_is_valid (const char *id)
{
  if (id == NULL || !(g_ascii_isalnum (id[0]) || id[0] == '_') || strlen (id) > MAX_ID_CHARS)
    return FALSE;
  for (const char *p = id + 1; *p; p++)
    if (!(g_ascii_isalnum (*p) || *p == '_' || *p == '-'))
      return FALSE;
  return TRUE;
}

/* The element types a path multiplies: "operands": ["fp16", "bf16", …]. */
static gboolean
path_operands_from_json (NapkinTensorPath *tp,
                         const char       *path,
                         json_object      *obj,
                         GError          **error)
{
  g_autoptr(GString) others = g_string_new (NULL);
  json_object *v;

  if (!json_object_object_get_ex (obj, "operands", &v) || !json_object_is_type (v, json_type_array)
      || json_object_array_length (v) == 0 || json_object_array_length (v) > 16)
    return fail (error, path, _("“operands” must list the element types it multiplies"));
  for (size_t i = 0; i < json_object_array_length (v); i++)
    {
      json_object *item = json_object_array_get_idx (v, i);
      const char *t = json_object_is_type (item, json_type_string) ? json_object_get_string (item) : NULL;
      gboolean known = FALSE;

      for (NapkinTensorClass c = 0; t && c < NAPKIN_N_TENSOR_CLASSES; c++)
        if (strcmp (t, tensor_class_names[c]) == 0)
          tp->classes |= 1u << c, known = TRUE;
      if (!known && t && (strcmp (t, "fp6") == 0 || strcmp (t, "fp4") == 0) && strstr (others->str, t) == NULL)
        g_string_append_printf (others, "%s%s", others->len ? " " : "", t), known = TRUE;
      if (!known && t && (strcmp (t, "fp6") == 0 || strcmp (t, "fp4") == 0))
        known = TRUE;   /* listed twice: once is enough */
      if (!known)
        {
          g_autofree char *shown = napkin_text_quoted (t ? t : json_object_to_json_string (item));

          return fail (error, path, _("operands[%zu]: unknown type %s (fp16, bf16, tf32, fp8, int8, fp6, fp4)"),
                       i, shown);
        }
    }
  tp->other_operands = others->len ? g_strdup (others->str) : NULL;
  return TRUE;
}

/* "tensor_paths": { "wgmma": { "operands": [...], "a_from": "smem", "b_from": "smem",
 * "accumulator": "registers", "rows": 64, "tma": true, "generated": true, "source": "…" } } */
static gboolean
tensor_path_from_json (NapkinTensorPath *tp,
                       const char       *name,
                       json_object      *obj,
                       GError          **error)
{
  static const char * const keys[] = {
    "operands", "a_from", "b_from", "accumulator", "rows", "cta_pair", "tmem_bytes_per_sm", "tma", "generated",
    "source", NULL,
  };
  g_autofree char *path = g_strdup_printf ("tensor_paths.%s", name);
  gboolean pair = FALSE;
  json_object *v;

  if (!json_object_is_type (obj, json_type_object))
    return fail (error, path, _("expected an object"));
  if (!check_keys (obj, path, keys, error))
    return FALSE;
  tp->present = TRUE;
  tp->cta_pair = 1;
  if (!path_operands_from_json (tp, path, obj, error))
    return FALSE;
  for (guint k = 1; k < 4; k++)
    {
      const char *t;

      if (!json_object_object_get_ex (obj, keys[k], &v) || !json_object_is_type (v, json_type_string))
        return fail (error, path, _("“%s” must be \"registers\", \"smem\" or \"tmem\""), keys[k]);
      t = json_object_get_string (v);
      if (strcmp (t, "registers") != 0 && strcmp (t, "smem") != 0 && strcmp (t, "tmem") != 0)
        {
          g_autofree char *shown = napkin_text_quoted (t);

          return fail (error, path, _("%s: %s is not registers, smem or tmem"), keys[k], shown);
        }
      if (k == 1) tp->a_smem = strcmp (t, "smem") == 0;
      if (k == 2) tp->b_smem = strcmp (t, "smem") == 0;
      if (k == 3) tp->accumulator_tmem = strcmp (t, "tmem") == 0;
    }
  if (!json_object_object_get_ex (obj, "rows", &v) || !json_object_is_type (v, json_type_int)
      || json_object_get_int64 (v) < 1 || json_object_get_int64 (v) > 512)
    return fail (error, path, _("“rows” (rows of A one issuing unit covers) must be a whole number 1 … 512"));
  tp->rows = json_object_get_int64 (v);
  if (!get_bool (obj, path, "cta_pair", &pair, error)
      || !get_bool (obj, path, "tma", &tp->tma, error)
      || !get_bool (obj, path, "generated", &tp->generated, error))
    return FALSE;
  tp->cta_pair = pair ? 2 : 1;
  if (json_object_object_get_ex (obj, "tmem_bytes_per_sm", &v))
    {
      if (!(json_object_is_type (v, json_type_int) || json_object_is_type (v, json_type_double))
          || !isfinite (json_object_get_double (v)) || json_object_get_double (v) < 0
          || json_object_get_double (v) > 1e9)
        return fail (error, path, _("“tmem_bytes_per_sm” must be a number of bytes, 0 … 1e9"));
      tp->tmem_bytes_per_sm = json_object_get_double (v);
    }
  if (tp->accumulator_tmem && !(tp->tmem_bytes_per_sm > 0))
    return fail (error, path, _("an accumulator in tensor memory needs “tmem_bytes_per_sm”"));
  if (!json_object_object_get_ex (obj, "source", NULL))
    return fail (error, path, _("every path needs a “source”"));
  return get_text (obj, path, "source", TRUE, MAX_SOURCE_CHARS, &tp->source, error);
}

/* A figure into dest, or FALSE from the helper that reads it. */
#define FIG(parent, ppath, key, lo, hi, dest) \
  G_STMT_START { if (!get_figure (arch, parent, ppath, key, lo, hi, &v, error)) return FALSE; dest = v; } G_STMT_END

/* The format, version and names. */
static gboolean
arch_header_from_json (NapkinArch  *arch,
                       json_object *root,
                       GError     **error)
{
  json_object *obj;
  const char *format = NULL;

  if (!json_object_is_type (root, json_type_object))
    return fail (error, "$", "expected an object");
  if (!json_object_object_get_ex (root, "format", &obj) || !json_object_is_type (obj, json_type_string)
      || strcmp ((format = json_object_get_string (obj)), "napkin-arch") != 0)
    return fail (error, "format", "expected \"napkin-arch\"");
  if (!json_object_object_get_ex (root, "version", &obj) || !json_object_is_type (obj, json_type_int)
      || json_object_get_int (obj) != 1)
    return fail (error, "version", "expected 1");

  if (!check_keys (root, "", profile_keys, error))
    return FALSE;
  if (!json_object_object_get_ex (root, "id", &obj) || !json_object_is_type (obj, json_type_string)
      || !arch_id_is_valid (json_object_get_string (obj)))
    {
      g_autofree char *shown = napkin_text_quoted (obj ? json_object_get_string (obj) : "");

      return fail (error, "id", _("%s is not a short name (at most %d letters, digits, _ and -)"), shown,
                   MAX_ID_CHARS);
    }
  arch->id = g_strdup (json_object_get_string (obj));
  if (!get_text (root, "", "name", TRUE, MAX_NAME_CHARS, &arch->name, error)
      || !get_text (root, "", "family", FALSE, MAX_ID_CHARS, &arch->family, error)
      || !get_text (root, "", "compute_capability", FALSE, 32, &arch->compute_capability, error))
    return FALSE;
  if (arch->compute_capability != NULL && !compute_capability_is_valid (arch->compute_capability))
    {
      g_autofree char *shown = napkin_text_quoted (arch->compute_capability);

      return fail (error, "compute_capability", _("%s is not MAJOR.MINOR, two small whole numbers (9.0, 10.0, 8.9)"),
                   shown);
    }
  if (json_object_object_get_ex (root, "sources", &obj))
    {
      if (!json_object_is_type (obj, json_type_object))
        return fail (error, "sources", _("expected an object of texts"));
      json_object_object_foreach (obj, key, value)
        {
          g_autofree char *text = NULL;

          (void) value;
          if (!get_text (obj, "sources", key, TRUE, MAX_SOURCE_CHARS, &text, error))
            return FALSE;
        }
    }
  return TRUE;
}

/* The SM counts and limits at the top level. */
static gboolean
arch_sm_from_json (NapkinArch  *arch,
                   json_object *root,
                   GError     **error)
{
  double v;

  FIG (root, "", "sms", 1, 4096, arch->sms);
  FIG (root, "", "clock_mhz", 1, 10000, arch->clock_hz);
  arch->clock_hz *= 1e6;
  FIG (root, "", "tensor_clock_mhz", 1, 10000, arch->tensor_clock_hz);
  arch->tensor_clock_hz *= 1e6;
  FIG (root, "", "max_threads_per_sm", 32, 65536, arch->max_threads_per_sm);
  arch->max_warps_per_sm = arch->max_threads_per_sm / 32;
  FIG (root, "", "max_blocks_per_sm", 1, 1024, arch->max_blocks_per_sm);
  FIG (root, "", "registers_per_sm", 1024, 1 << 24, arch->registers_per_sm);
  FIG (root, "", "max_registers_per_thread", 16, 4096, arch->max_registers_per_thread);
  FIG (root, "", "launch_overhead_s", 0, 1, arch->launch_overhead_s);
  return TRUE;
}

/* The memory levels: capacity, bandwidth and energy of each. */
static gboolean
arch_levels_from_json (NapkinArch  *arch,
                       json_object *root,
                       GError     **error)
{
  json_object *levels;
  double v;

  if (!(levels = get_object (root, "", "levels", error))
      || !check_keys (levels, "levels", (const char * const[]) { "hbm", "l2", "smem", "registers", NULL }, error))
    return FALSE;
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      const char *name = napkin_level_to_string (l);
      g_autofree char *lpath = g_strdup_printf ("levels.%s", name);
      json_object *level = get_object (levels, "levels", name, error);
      NapkinArchLevel *al = &arch->levels[l];
      const char * const keys[] = {
        "capacity_bytes", "energy_pj_per_byte",
        l == NAPKIN_LEVEL_HBM ? "bandwidth_bytes_per_s" : "bandwidth_bytes_per_clock",
        l == NAPKIN_LEVEL_HBM ? "latency_ns" : l == NAPKIN_LEVEL_SMEM ? "max_per_block_bytes" : NULL,
        l == NAPKIN_LEVEL_SMEM ? "reserved_per_block_bytes" : NULL, NULL,
      };

      if (level == NULL || !check_keys (level, lpath, keys, error))
        return FALSE;
      FIG (level, lpath, "capacity_bytes", 1, 1e15, al->capacity_bytes);
      if (l == NAPKIN_LEVEL_HBM)
        FIG (level, lpath, "bandwidth_bytes_per_s", 1e6, 1e15, al->bandwidth);
      else
        {
          /* per clock: l2 for the device, smem and registers per SM */
          FIG (level, lpath, "bandwidth_bytes_per_clock", 1, 1e7, al->bandwidth);
          al->bandwidth *= arch->clock_hz * (l == NAPKIN_LEVEL_L2 ? 1 : arch->sms);
        }
      FIG (level, lpath, "energy_pj_per_byte", 0, 1e4, al->energy_pj_per_byte);
      if (l == NAPKIN_LEVEL_HBM && json_object_object_get_ex (level, "latency_ns", NULL))
        {
          FIG (level, lpath, "latency_ns", 0, 1e6, al->latency_s);
          al->latency_s *= 1e-9;
        }
      if (l == NAPKIN_LEVEL_SMEM)
        {
          FIG (level, lpath, "max_per_block_bytes", 1, al->capacity_bytes, arch->smem_max_per_block);
          FIG (level, lpath, "reserved_per_block_bytes", 0, al->capacity_bytes, arch->smem_reserved_per_block);
        }
    }
  if (arch->levels[NAPKIN_LEVEL_REGISTERS].capacity_bytes != arch->registers_per_sm * 4.0)
    return fail (error, "levels.registers.capacity_bytes", "must be registers_per_sm × 4 = %u",
                 arch->registers_per_sm * 4);
  return TRUE;
}

/* The tensor cores' dense peaks, and the optional mma.sync ceiling where it is below them. */
static gboolean
arch_tensor_from_json (NapkinArch  *arch,
                       json_object *root,
                       GError     **error)
{
  json_object *obj, *tensor;
  double v;

  if (!(tensor = get_object (root, "", "tensor", error))
      || !check_keys (tensor, "tensor", tensor_class_names, error))
    return FALSE;
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    FIG (tensor, "tensor", tensor_class_names[c], 0, 1e7, arch->tensor_per_sm_clock[c]);
  if (arch->tensor_per_sm_clock[NAPKIN_TENSOR_FP16] <= 0)
    return fail (error, "tensor.fp16", "every supported GPU has fp16 tensor cores");
  /* optional: the mma.sync ceiling where it is below the dense peak */
  if (json_object_object_get_ex (root, "tensor_mma_sync", &obj))
    {
      if (!json_object_is_type (obj, json_type_object))
        return fail (error, "tensor_mma_sync", "expected an object of figures per tensor class");
      for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
        if (json_object_object_get_ex (obj, tensor_class_names[c], NULL))
          {
            FIG (obj, "tensor_mma_sync", tensor_class_names[c], 0, 1e7, arch->tensor_mma_sync_per_sm_clock[c]);
            if (arch->tensor_mma_sync_per_sm_clock[c] > arch->tensor_per_sm_clock[c])
              return fail (error, "tensor_mma_sync", "%s: %g is above the dense peak tensor.%s (%g): "
                           "mma.sync cannot beat it", tensor_class_names[c], arch->tensor_mma_sync_per_sm_clock[c],
                           tensor_class_names[c], arch->tensor_per_sm_clock[c]);
          }
      json_object_object_foreach (obj, key, val)
        {
          gboolean known = FALSE;

          (void) val;
          for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
            known |= strcmp (key, tensor_class_names[c]) == 0;
          if (!known)
            return fail (error, "tensor_mma_sync", "unknown tensor class “%s” (fp16, bf16, tf32, fp8, int8)", key);
        }
    }
  return TRUE;
}

/* The instruction paths the GPU has; older profiles list none and get mma.sync alone. */
static gboolean
arch_tensor_paths_from_json (NapkinArch  *arch,
                             json_object *root,
                             GError     **error)
{
  json_object *obj;

  if (json_object_object_get_ex (root, "tensor_paths", &obj))
    {
      if (!json_object_is_type (obj, json_type_object))
        return fail (error, "tensor_paths", "expected an object of paths (mma.sync, wgmma, tcgen05)");
      json_object_object_foreach (obj, key, val)
        {
          NapkinTensorPathKind p;

          for (p = 0; p < NAPKIN_N_TENSOR_PATHS; p++)
            if (strcmp (key, tensor_path_names[p]) == 0)
              break;
          if (p == NAPKIN_N_TENSOR_PATHS)
            return fail (error, "tensor_paths", "unknown path “%s” (mma.sync, wgmma, tcgen05)", key);
          if (!tensor_path_from_json (&arch->tensor_paths[p], key, val, error))
            return FALSE;
        }
      /* The model and the plan fall back to mma.sync at fp16 (napkin_arch_best_path):
       * without it a kernel would have no path, and its rows would divide by zero. */
      if (!arch->tensor_paths[NAPKIN_TENSOR_PATH_MMA_SYNC].present
          || !(arch->tensor_paths[NAPKIN_TENSOR_PATH_MMA_SYNC].classes & (1u << NAPKIN_TENSOR_FP16)))
        return fail (error, "tensor_paths", _("needs “mma.sync” multiplying fp16, the path every kernel can "
                                              "fall back to"));
    }
  else
    {
      /* older profiles: the warp-level path alone, as generated */
      NapkinTensorPath *tp = &arch->tensor_paths[NAPKIN_TENSOR_PATH_MMA_SYNC];

      tp->present = TRUE;
      tp->generated = TRUE;
      tp->rows = 16;
      tp->cta_pair = 1;
      for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
        if (arch->tensor_per_sm_clock[c] > 0)
          tp->classes |= 1u << c;
      tp->source = g_strdup (_("assumed: the profile lists no tensor_paths"));
    }
  return TRUE;
}

/* The CUDA cores and the SFU. */
static gboolean
arch_cuda_from_json (NapkinArch  *arch,
                     json_object *root,
                     GError     **error)
{
  json_object *cuda;
  double v;

  if (!(cuda = get_object (root, "", "cuda", error))
      || !check_keys (cuda, "cuda", (const char * const[]) { "fp32", "fp16", NULL }, error))
    return FALSE;
  FIG (cuda, "cuda", "fp32", 1, 1e6, arch->cuda_fp32_per_sm_clock);
  FIG (cuda, "cuda", "fp16", 1, 1e6, arch->cuda_fp16_per_sm_clock);
  FIG (root, "", "sfu", 1, 1e6, arch->sfu_per_sm_clock);
  return TRUE;
}

/* The energy of a FLOP. */
static gboolean
arch_energy_from_json (NapkinArch  *arch,
                       json_object *root,
                       GError     **error)
{
  json_object *energy;
  double v;

  if (!(energy = get_object (root, "", "energy_pj_per_flop", error))
      || !check_keys (energy, "energy_pj_per_flop", (const char * const[]) { "tensor", "cuda", NULL }, error))
    return FALSE;
  FIG (energy, "energy_pj_per_flop", "tensor", 0, 1e4, arch->energy_pj_per_tensor_flop);
  FIG (energy, "energy_pj_per_flop", "cuda", 0, 1e4, arch->energy_pj_per_cuda_flop);
  return TRUE;
}
#undef FIG

static NapkinArch *
arch_from_json (json_object *root,
                GError     **error)
{
  g_autoptr(NapkinArch) arch = g_new0 (NapkinArch, 1);

  arch->ref_count = 1;
  arch->sources = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  arch->source_order = g_ptr_array_new_with_free_func (g_free);
  /* in the file's order, so that the first problem is the one reported */
  if (!arch_header_from_json (arch, root, error)
      || !arch_sm_from_json (arch, root, error)
      || !arch_levels_from_json (arch, root, error)
      || !arch_tensor_from_json (arch, root, error)
      || !arch_cuda_from_json (arch, root, error)
      || !arch_tensor_paths_from_json (arch, root, error)
      || !arch_energy_from_json (arch, root, error)
      || !get_interconnect (arch, root, error))
    return NULL;

  return g_steal_pointer (&arch);
}

NapkinArch *
napkin_arch_load_from_data (const char *data,
                            gssize      length,
                            GError    **error)
{
  g_autoptr(json_tokener) tok = json_tokener_new ();
  g_autoptr(json_object) root = NULL;
  enum json_tokener_error jerr;

  g_return_val_if_fail (data != NULL, NULL);

  if (length < 0)
    length = strlen (data);
  /* Syntax, nesting and text (UTF-8, no NUL) as a diagram's (napkin-json-scan.h). */
  {
    g_autoptr(GError) local = NULL;
    gsize root_start, root_end;

    if (!napkin_json_check (data, length, &root_start, &root_end, &local))
      {
        g_autofree char *shown = napkin_text_shown (local->message, -1, 400);

        g_set_error (error, NAPKIN_ARCH_ERROR,
                     local->code == NAPKIN_DOCUMENT_ERROR_PARSE ? NAPKIN_ARCH_ERROR_PARSE : NAPKIN_ARCH_ERROR_FORMAT,
                     "%s", shown);
        return NULL;
      }
  }
  root = json_tokener_parse_ex (tok, data, length);
  jerr = json_tokener_get_error (tok);
  if (root == NULL || jerr != json_tokener_success)
    {
      g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_PARSE, _("not JSON: %s"),
                   json_tokener_error_desc (jerr == json_tokener_success ? json_tokener_continue : jerr));
      return NULL;
    }
  return arch_from_json (root, error);
}

NapkinArch *
napkin_arch_load_from_file (const char *path,
                            GError    **error)
{
  g_autofree char *data = NULL;
  gsize length;
  GError *local = NULL;
  NapkinArch *arch;

  /* A pipe or a device in the profile folder is refused at once (docs/security.md). */
  if (!(data = napkin_file_read_bounded (path, NAPKIN_ARCH_MAX_FILE_SIZE, &length, &local)))
    {
      g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_IO, "%s", local->message);
      g_error_free (local);
      return NULL;
    }
  arch = napkin_arch_load_from_data (data, length, &local);
  if (arch == NULL)
    {
      g_autofree char *shown = napkin_text_shown (path, -1, 200);

      g_set_error (error, local->domain, local->code, "%s: %s", shown, local->message);
      g_error_free (local);
      return NULL;
    }
  arch->path = g_strdup (path);
  return arch;
}

const char *
napkin_arch_get_source (const NapkinArch *arch,
                        const char       *path)
{
  g_return_val_if_fail (arch != NULL, NULL);
  g_return_val_if_fail (path != NULL, NULL);

  return g_hash_table_lookup (arch->sources, path);
}

const GPtrArray *
napkin_arch_get_figure_paths (const NapkinArch *arch)
{
  g_return_val_if_fail (arch != NULL, NULL);

  return arch->source_order;
}

double
napkin_arch_tensor_rate (const NapkinArch  *arch,
                         NapkinTensorClass  klass)
{
  return arch->tensor_per_sm_clock[klass] * arch->sms * arch->tensor_clock_hz;
}

double
napkin_arch_mma_sync_rate (const NapkinArch  *arch,
                           NapkinTensorClass  klass)
{
  double per_clock = arch->tensor_mma_sync_per_sm_clock[klass] > 0
                     ? arch->tensor_mma_sync_per_sm_clock[klass] : arch->tensor_per_sm_clock[klass];

  return per_clock * arch->sms * arch->tensor_clock_hz;
}

gboolean
napkin_arch_has_wgmma (const NapkinArch *arch)
{
  /* sm_90a only: Blackwell (10.x) has tcgen05 instead, Ada (8.9) neither */
  return arch->compute_capability != NULL && g_str_has_prefix (arch->compute_capability, "9.");
}

NapkinTensorPathKind
napkin_arch_best_path (const NapkinArch  *arch,
                       NapkinTensorClass  klass,
                       gboolean           generated,
                       NapkinTensorClass *out_klass)
{
  NapkinTensorClass k = klass;

  for (int pass = 0; pass < 2; pass++, k = NAPKIN_TENSOR_FP16)
    for (int p = NAPKIN_N_TENSOR_PATHS - 1; p >= 0; p--)
      {
        const NapkinTensorPath *tp = &arch->tensor_paths[p];

        if (tp->present && (tp->classes & (1u << k)) && (!generated || tp->generated)
            && arch->tensor_per_sm_clock[k] > 0)
          {
            if (out_klass)
              *out_klass = k;
            return p;
          }
      }
  if (out_klass)
    *out_klass = NAPKIN_TENSOR_FP16;
  return NAPKIN_TENSOR_PATH_MMA_SYNC;
}

double
napkin_arch_cuda_rate (const NapkinArch *arch,
                       NapkinDtype       dtype)
{
  double per_clock = dtype == NAPKIN_DTYPE_FP32 || dtype == NAPKIN_DTYPE_TF32
                     ? arch->cuda_fp32_per_sm_clock : arch->cuda_fp16_per_sm_clock;

  return per_clock * arch->sms * arch->clock_hz;
}

double
napkin_arch_sfu_rate (const NapkinArch *arch)
{
  return arch->sfu_per_sm_clock * arch->sms * arch->clock_hz;
}

/* ---- registry ----------------------------------------------------------------------- */

NapkinArchRegistry *
napkin_arch_registry_new (void)
{
  NapkinArchRegistry *self = g_new0 (NapkinArchRegistry, 1);

  self->arches = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_arch_unref);
  self->errors = g_ptr_array_new_with_free_func (g_free);
  self->searched = g_ptr_array_new_with_free_func (g_free);
  self->retired = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_arch_unref);
  return self;
}

void
napkin_arch_registry_free (NapkinArchRegistry *self)
{
  if (self == NULL)
    return;
  g_ptr_array_unref (self->arches);
  g_ptr_array_unref (self->errors);
  g_ptr_array_unref (self->searched);
  g_ptr_array_unref (self->retired);
  g_free (self);
}

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return strcmp (*(const char * const *) a, *(const char * const *) b);
}

void
napkin_arch_registry_add_dir (NapkinArchRegistry *self,
                              const char         *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;

  g_ptr_array_add (self->searched, g_strdup (dir));
  if (d == NULL)
    return;
  while ((name = g_dir_read_name (d)))
    if (g_str_has_suffix (name, ".json"))
      g_ptr_array_add (names, g_strdup (name));
  /* sorted, so that the order does not depend on the file system */
  g_ptr_array_sort (names, compare_names);

  for (guint i = 0; i < names->len; i++)
    {
      g_autofree char *path = g_build_filename (dir, g_ptr_array_index (names, i), NULL);
      g_autoptr(GError) error = NULL;
      NapkinArch *arch = napkin_arch_load_from_file (path, &error);
      gboolean dup = FALSE;

      if (arch == NULL)
        {
          g_ptr_array_add (self->errors, g_strdup (error->message));
          continue;
        }
      for (guint j = 0; j < self->arches->len && !dup; j++)
        {
          NapkinArch *earlier = g_ptr_array_index (self->arches, j);

          dup = g_ascii_strcasecmp (earlier->id, arch->id) == 0;
          /* an earlier directory wins, and says what it hides (napkin_arch_dup_origin) */
          if (dup && earlier->shadows == NULL && g_strcmp0 (earlier->path, path) != 0)
            earlier->shadows = g_strdup (path);
        }
      if (dup)
        napkin_arch_unref (arch);
      else
        g_ptr_array_add (self->arches, arch);
    }
}

NapkinArchRegistry *
napkin_arch_registry_get_default (void)
{
  static NapkinArchRegistry *registry;

  if (g_once_init_enter (&registry))
    {
      NapkinArchRegistry *self = napkin_arch_registry_new ();
      const char *env = g_getenv ("NAPKIN_ARCH_DIR");
      g_auto(GStrv) data_dirs = napkin_data_dirs ();

      if (env != NULL && *env != '\0')
        {
          g_auto(GStrv) dirs = g_strsplit (env, G_SEARCHPATH_SEPARATOR_S, -1);

          for (guint i = 0; dirs[i]; i++)
            if (*dirs[i])
              napkin_arch_registry_add_dir (self, dirs[i]);
        }
      /* then archs/ of each data dir: the user's (where `napkin-cli calibrate` writes
       * its -measured profiles) before the installed ones */
      for (guint i = 0; data_dirs[i]; i++)
        {
          g_autofree char *dir = g_build_filename (data_dirs[i], "archs", NULL);

          napkin_arch_registry_add_dir (self, dir);
        }
      g_once_init_leave (&registry, self);
    }
  return registry;
}

guint
napkin_arch_registry_count (NapkinArchRegistry *self)
{
  return self->arches->len;
}

NapkinArch *
napkin_arch_registry_get (NapkinArchRegistry *self,
                          guint               index)
{
  g_return_val_if_fail (index < self->arches->len, NULL);
  return g_ptr_array_index (self->arches, index);
}

NapkinArch *
napkin_arch_registry_for_compute_capability (NapkinArchRegistry *self,
                                             const char         *compute_capability)
{
  g_return_val_if_fail (self != NULL, NULL);

  for (guint i = 0; i < self->arches->len; i++)
    {
      NapkinArch *arch = g_ptr_array_index (self->arches, i);

      if (g_strcmp0 (arch->compute_capability, compute_capability) == 0)
        return arch;
    }
  return NULL;
}

NapkinArch *
napkin_arch_registry_lookup (NapkinArchRegistry *self,
                             const char         *id,
                             GError            **error)
{
  g_autoptr(GString) known = g_string_new (NULL);

  for (guint i = 0; i < self->arches->len; i++)
    {
      NapkinArch *arch = g_ptr_array_index (self->arches, i);

      if (g_ascii_strcasecmp (arch->id, id) == 0)
        return arch;
      g_string_append_printf (known, "%s%s", i ? ", " : "", arch->id);
    }
  if (self->arches->len == 0)
    {
      /* an uninstalled binary run without NAPKIN_DATA_DIR lands here: say where it looked */
      g_autoptr(GString) where = g_string_new (NULL);

      for (guint i = 0; i < self->searched->len; i++)
        g_string_append_printf (where, "%s%s", i ? ", " : "", (const char *) g_ptr_array_index (self->searched, i));
      g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_NOT_FOUND,
                   _("unknown architecture “%s”: no architecture profiles found (searched: %s); set "
                     "NAPKIN_ARCH_DIR to a folder of profiles or NAPKIN_DATA_DIR to Napkin's data folder"),
                   id, where->len ? where->str : _("no folder"));
      return NULL;
    }
  g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_NOT_FOUND,
               _("unknown architecture “%s” (known: %s)"), id, known->str);
  return NULL;
}

const GPtrArray *
napkin_arch_registry_errors (NapkinArchRegistry *self)
{
  return self->errors;
}

/* ---- user profiles (what-if) -------------------------------------------------------- */

char *
napkin_arch_dup_origin (const NapkinArch *arch)
{
  g_autofree char *user_dir = NULL;
  gboolean user;

  g_return_val_if_fail (arch != NULL, NULL);

  if (arch->path == NULL)
    return NULL;
  user_dir = g_build_filename (g_get_user_data_dir (), "napkin", "archs", G_DIR_SEPARATOR_S, NULL);
  user = g_str_has_prefix (arch->path, user_dir);
  if (arch->shadows != NULL)
    return user ? g_strdup_printf (_("%s: your profile %s, used instead of %s"), arch->id, arch->path, arch->shadows)
                : g_strdup_printf (_("%s: the profile %s, used instead of %s"), arch->id, arch->path, arch->shadows);
  if (user)
    return g_strdup_printf (_("%s: your profile %s"), arch->id, arch->path);
  return NULL;
}

NapkinArch *
napkin_arch_copy (const NapkinArch *arch,
                  const char       *id,
                  const char       *name)
{
  NapkinArch *copy;

  g_return_val_if_fail (arch != NULL, NULL);
  g_return_val_if_fail (id != NULL && *id != '\0', NULL);

  copy = g_new (NapkinArch, 1);
  *copy = *arch;
  copy->id = g_strdup (id);
  copy->name = g_strdup (name ? name : arch->name);
  copy->family = g_strdup (arch->family);
  copy->compute_capability = g_strdup (arch->compute_capability);
  copy->path = NULL;   /* not from a file */
  copy->shadows = NULL;
  copy->interconnect.node.link = g_strdup (arch->interconnect.node.link);
  copy->interconnect.network.link = g_strdup (arch->interconnect.network.link);
  for (guint p = 0; p < NAPKIN_N_TENSOR_PATHS; p++)
    {
      copy->tensor_paths[p].other_operands = g_strdup (arch->tensor_paths[p].other_operands);
      copy->tensor_paths[p].source = g_strdup (arch->tensor_paths[p].source);
    }
  copy->sources = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  copy->source_order = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; arch->source_order && i < arch->source_order->len; i++)
    {
      const char *path = g_ptr_array_index (arch->source_order, i);

      napkin_arch_set_source (copy, path, g_hash_table_lookup (arch->sources, path));
    }
  copy->ref_count = 1;
  return copy;
}

void
napkin_arch_set_source (NapkinArch *arch,
                        const char *path,
                        const char *source)
{
  g_return_if_fail (arch != NULL && path != NULL);

  if (!g_hash_table_contains (arch->sources, path))
    g_ptr_array_add (arch->source_order, g_strdup (path));
  g_hash_table_insert (arch->sources, g_strdup (path), g_strdup (source ? source : ""));
}

gboolean
napkin_arch_is_measured (const NapkinArch *arch)
{
  g_return_val_if_fail (arch != NULL, FALSE);

  for (guint i = 0; arch->source_order && i < arch->source_order->len; i++)
    {
      const char *source = g_hash_table_lookup (arch->sources, g_ptr_array_index (arch->source_order, i));

      if (source != NULL && g_str_has_prefix (source, "measured by napkin-cli calibrate"))
        return TRUE;
    }
  return FALSE;
}

static gboolean
check_figure (double      value,
              double      min,
              const char *path,
              GError    **error)
{
  if (isfinite (value) && value >= min)
    return TRUE;
  g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_FORMAT, _("%s: %g is not a valid figure (at least %g)"),
               path, value, min);
  return FALSE;
}

gboolean
napkin_arch_check (const NapkinArch  *arch,
                   GError           **error)
{
  g_return_val_if_fail (arch != NULL, FALSE);

  /* the figures the model divides by must be positive */
  return check_figure (arch->sms, 1, "sms", error)
         && check_figure (arch->clock_hz, 1, "clock_mhz", error)
         && check_figure (arch->tensor_clock_hz, 1, "tensor_clock_mhz", error)
         && check_figure (arch->max_warps_per_sm, 1, "max_threads_per_sm", error)
         && check_figure (arch->max_blocks_per_sm, 1, "max_blocks_per_sm", error)
         && check_figure (arch->registers_per_sm, 1, "registers_per_sm", error)
         && check_figure (arch->max_registers_per_thread, 1, "max_registers_per_thread", error)
         && check_figure (arch->smem_max_per_block, 0, "levels.smem.max_per_block_bytes", error)
         && check_figure (arch->launch_overhead_s, 0, "launch_overhead_s", error)
         && check_figure (arch->levels[NAPKIN_LEVEL_HBM].bandwidth, 1, "levels.hbm.bandwidth_bytes_per_s", error)
         && check_figure (arch->levels[NAPKIN_LEVEL_L2].bandwidth, 1, "levels.l2.bandwidth_bytes_per_clock", error)
         && check_figure (arch->levels[NAPKIN_LEVEL_SMEM].bandwidth, 1, "levels.smem.bandwidth_bytes_per_clock", error)
         && check_figure (arch->levels[NAPKIN_LEVEL_L2].capacity_bytes, 1, "levels.l2.capacity_bytes", error)
         && check_figure (arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes, 1, "levels.smem.capacity_bytes", error)
         && check_figure (arch->tensor_per_sm_clock[NAPKIN_TENSOR_FP16], 1, "tensor.fp16", error)
         && check_figure (arch->cuda_fp32_per_sm_clock, 1, "cuda.fp32", error)
         && check_figure (arch->cuda_fp16_per_sm_clock, 1, "cuda.fp16", error)
         && check_figure (arch->sfu_per_sm_clock, 1, "sfu", error);
}

void
napkin_arch_registry_add (NapkinArchRegistry *self,
                          NapkinArch         *arch)
{
  g_return_if_fail (self != NULL && arch != NULL);

  for (guint i = 0; i < self->arches->len; i++)
    if (g_ascii_strcasecmp (((NapkinArch *) g_ptr_array_index (self->arches, i))->id, arch->id) == 0)
      {
        /* in place, so the selector's order stays; the old one lives on for holders */
        g_ptr_array_add (self->retired, g_ptr_array_index (self->arches, i));
        self->arches->pdata[i] = napkin_arch_ref (arch);
        return;
      }
  g_ptr_array_add (self->arches, napkin_arch_ref (arch));
}

/* ---- writing (what-if profiles saved for later sessions and for napkin-cli) ----------- */

static void
put_figure (json_object      *parent,
            const NapkinArch *arch,
            const char       *path,
            const char       *key,
            double            value)
{
  json_object *fig = json_object_new_object ();
  const char *source = g_hash_table_lookup (arch->sources, path);

  json_object_object_add (fig, "value", value == floor (value) && fabs (value) < 9e15
                                        ? json_object_new_int64 ((gint64) value) : json_object_new_double (value));
  json_object_object_add (fig, "source", json_object_new_string (source && *source ? source : "what-if"));
  json_object_object_add (parent, key, fig);
}

static void
put_link_tier (json_object          *obj,
               const NapkinArch     *arch,
               const char           *path,
               gboolean              node,
               const NapkinLinkTier *tier)
{
  json_object *bus = json_object_new_object ();
  g_autofree char *links = g_strdup_printf ("%s.links", path);
  g_autofree char *bw = g_strdup_printf ("%s.link_bandwidth_bytes_per_s", path);
  g_autofree char *lat = g_strdup_printf ("%s.latency_us", path);

  json_object_object_add (obj, "link", json_object_new_string (tier->link ? tier->link : "unknown"));
  if (node)
    {
      put_figure (obj, arch, links, "links", tier->links);
      json_object_object_add (obj, "nvswitch", json_object_new_boolean (tier->nvswitch));
    }
  put_figure (obj, arch, bw, "link_bandwidth_bytes_per_s", tier->link_bandwidth);
  put_figure (obj, arch, lat, "latency_us", tier->latency_s * 1e6);
  {
    /* the optional overlap figures, when the profile has them */
    const char *keys[] = { "cta_bus_bandwidth_bytes_per_s", "overlap_drain_share", "overlap_compute_loss" };
    double values[] = { tier->cta_bus_bandwidth, tier->overlap_drain_share, tier->overlap_compute_loss };

    for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
      if (values[i] > 0)
        {
          g_autofree char *p = g_strdup_printf ("%s.%s", path, keys[i]);

          put_figure (obj, arch, p, keys[i], values[i]);
        }
  }
  for (guint k = 0; k < NAPKIN_N_COLLECTIVES; k++)
    {
      g_autofree char *p = g_strdup_printf ("%s.bus_bandwidth_bytes_per_s.%s", path, collective_keys[k]);

      put_figure (bus, arch, p, collective_keys[k], tier->bus_bandwidth[k]);
    }
  json_object_object_add (obj, "bus_bandwidth_bytes_per_s", bus);
}

json_object *
napkin_arch_to_json (const NapkinArch *arch)
{
  json_object *root, *levels, *tensor, *cuda, *energy;

  g_return_val_if_fail (arch != NULL, NULL);

  root = json_object_new_object ();
  json_object_object_add (root, "format", json_object_new_string ("napkin-arch"));
  json_object_object_add (root, "version", json_object_new_int (1));
  json_object_object_add (root, "id", json_object_new_string (arch->id));
  json_object_object_add (root, "name", json_object_new_string (arch->name ? arch->name : arch->id));
  if (arch->family)
    json_object_object_add (root, "family", json_object_new_string (arch->family));
  if (arch->compute_capability)
    json_object_object_add (root, "compute_capability", json_object_new_string (arch->compute_capability));
  put_figure (root, arch, "sms", "sms", arch->sms);
  put_figure (root, arch, "clock_mhz", "clock_mhz", arch->clock_hz / 1e6);
  put_figure (root, arch, "tensor_clock_mhz", "tensor_clock_mhz", arch->tensor_clock_hz / 1e6);
  put_figure (root, arch, "max_threads_per_sm", "max_threads_per_sm", arch->max_warps_per_sm * 32.0);
  put_figure (root, arch, "max_blocks_per_sm", "max_blocks_per_sm", arch->max_blocks_per_sm);
  put_figure (root, arch, "registers_per_sm", "registers_per_sm", arch->registers_per_sm);
  put_figure (root, arch, "max_registers_per_thread", "max_registers_per_thread", arch->max_registers_per_thread);
  put_figure (root, arch, "launch_overhead_s", "launch_overhead_s", arch->launch_overhead_s);

  levels = json_object_new_object ();
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      const char *name = napkin_level_to_string (l);
      const NapkinArchLevel *al = &arch->levels[l];
      json_object *level = json_object_new_object ();
      g_autofree char *cap = g_strdup_printf ("levels.%s.capacity_bytes", name);
      g_autofree char *bw = g_strdup_printf (l == NAPKIN_LEVEL_HBM ? "levels.%s.bandwidth_bytes_per_s"
                                                                   : "levels.%s.bandwidth_bytes_per_clock", name);
      g_autofree char *en = g_strdup_printf ("levels.%s.energy_pj_per_byte", name);

      put_figure (level, arch, cap, "capacity_bytes",
                  l == NAPKIN_LEVEL_REGISTERS ? arch->registers_per_sm * 4.0 : al->capacity_bytes);
      if (l == NAPKIN_LEVEL_HBM)
        put_figure (level, arch, bw, "bandwidth_bytes_per_s", al->bandwidth);
      else   /* as the files give them: per clock, of the device (l2) or of one SM */
        put_figure (level, arch, bw, "bandwidth_bytes_per_clock",
                    al->bandwidth / (arch->clock_hz * (l == NAPKIN_LEVEL_L2 ? 1 : arch->sms)));
      put_figure (level, arch, en, "energy_pj_per_byte", al->energy_pj_per_byte);
      if (l == NAPKIN_LEVEL_HBM && al->latency_s > 0)
        put_figure (level, arch, "levels.hbm.latency_ns", "latency_ns", al->latency_s * 1e9);
      if (l == NAPKIN_LEVEL_SMEM)
        {
          put_figure (level, arch, "levels.smem.max_per_block_bytes", "max_per_block_bytes", arch->smem_max_per_block);
          put_figure (level, arch, "levels.smem.reserved_per_block_bytes", "reserved_per_block_bytes",
                      arch->smem_reserved_per_block);
        }
      json_object_object_add (levels, name, level);
    }
  json_object_object_add (root, "levels", levels);

  tensor = json_object_new_object ();
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    {
      g_autofree char *path = g_strdup_printf ("tensor.%s", tensor_class_names[c]);

      put_figure (tensor, arch, path, tensor_class_names[c], arch->tensor_per_sm_clock[c]);
    }
  json_object_object_add (root, "tensor", tensor);
  tensor = NULL;
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    if (arch->tensor_mma_sync_per_sm_clock[c] > 0)
      {
        g_autofree char *path = g_strdup_printf ("tensor_mma_sync.%s", tensor_class_names[c]);

        if (tensor == NULL)
          tensor = json_object_new_object ();
        put_figure (tensor, arch, path, tensor_class_names[c], arch->tensor_mma_sync_per_sm_clock[c]);
      }
  if (tensor != NULL)
    json_object_object_add (root, "tensor_mma_sync", tensor);
  cuda = json_object_new_object ();
  put_figure (cuda, arch, "cuda.fp32", "fp32", arch->cuda_fp32_per_sm_clock);
  put_figure (cuda, arch, "cuda.fp16", "fp16", arch->cuda_fp16_per_sm_clock);
  json_object_object_add (root, "cuda", cuda);
  put_figure (root, arch, "sfu", "sfu", arch->sfu_per_sm_clock);
  {
    json_object *paths = json_object_new_object ();

    for (guint p = 0; p < NAPKIN_N_TENSOR_PATHS; p++)
      {
        const NapkinTensorPath *tp = &arch->tensor_paths[p];
        json_object *o, *ops;

        if (!tp->present)
          continue;
        o = json_object_new_object ();
        ops = json_object_new_array ();
        for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
          if (tp->classes & (1u << c))
            json_object_array_add (ops, json_object_new_string (tensor_class_names[c]));
        if (tp->other_operands)
          {
            g_auto(GStrv) other = g_strsplit (tp->other_operands, " ", -1);

            for (guint i = 0; other[i]; i++)
              json_object_array_add (ops, json_object_new_string (other[i]));
          }
        json_object_object_add (o, "operands", ops);
        json_object_object_add (o, "a_from", json_object_new_string (tp->a_smem ? "smem" : "registers"));
        json_object_object_add (o, "b_from", json_object_new_string (tp->b_smem ? "smem" : "registers"));
        json_object_object_add (o, "accumulator", json_object_new_string (tp->accumulator_tmem ? "tmem" : "registers"));
        if (tp->tmem_bytes_per_sm > 0)
          json_object_object_add (o, "tmem_bytes_per_sm", json_object_new_double (tp->tmem_bytes_per_sm));
        json_object_object_add (o, "rows", json_object_new_int (tp->rows));
        json_object_object_add (o, "cta_pair", json_object_new_boolean (tp->cta_pair == 2));
        json_object_object_add (o, "tma", json_object_new_boolean (tp->tma));
        json_object_object_add (o, "generated", json_object_new_boolean (tp->generated));
        json_object_object_add (o, "source", json_object_new_string (tp->source ? tp->source : ""));
        json_object_object_add (paths, tensor_path_names[p], o);
      }
    json_object_object_add (root, "tensor_paths", paths);
  }
  energy = json_object_new_object ();
  put_figure (energy, arch, "energy_pj_per_flop.tensor", "tensor", arch->energy_pj_per_tensor_flop);
  put_figure (energy, arch, "energy_pj_per_flop.cuda", "cuda", arch->energy_pj_per_cuda_flop);
  json_object_object_add (root, "energy_pj_per_flop", energy);
  if (arch->interconnect.node.present)
    {
      json_object *ic = json_object_new_object ();

      put_figure (ic, arch, "interconnect.gpus_per_node", "gpus_per_node", arch->interconnect.gpus_per_node);
      put_link_tier (ic, arch, "interconnect", TRUE, &arch->interconnect.node);
      if (arch->interconnect.network.present)
        {
          json_object *net = json_object_new_object ();

          put_link_tier (net, arch, "interconnect.network", FALSE, &arch->interconnect.network);
          json_object_object_add (ic, "network", net);
        }
      json_object_object_add (root, "interconnect", ic);
    }
  return root;
}

/* ---- collectives (docs/model.md, "Collectives") --------------------------------------- */

const char *
napkin_collective_to_string (NapkinCollectiveKind kind)
{
  static const char *names[NAPKIN_N_COLLECTIVES] = {
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
  };

  g_return_val_if_fail ((guint) kind < NAPKIN_N_COLLECTIVES, NULL);
  return names[kind];
}

guint
napkin_collective_steps (NapkinCollectiveKind kind,
                         guint                gpus)
{
  if (gpus <= 1)
    return 0;
  return kind == NAPKIN_COLLECTIVE_ALL_REDUCE ? 2 * (gpus - 1) : gpus - 1;
}

double
napkin_collective_factor (NapkinCollectiveKind kind,
                          guint                gpus)
{
  if (gpus <= 1)
    return 0;
  return (kind == NAPKIN_COLLECTIVE_ALL_REDUCE ? 2.0 : 1.0) * (gpus - 1) / gpus;
}

double
napkin_arch_collective_seconds (const NapkinArch    *arch,
                                NapkinCollectiveKind kind,
                                guint                gpus,
                                double               bytes,
                                double              *bus_bandwidth)
{
  const NapkinLinkTier *tier;

  g_return_val_if_fail (arch != NULL && (guint) kind < NAPKIN_N_COLLECTIVES, -1);

  if (bus_bandwidth)
    *bus_bandwidth = 0;
  if (gpus <= 1)
    return 0;
  tier = &arch->interconnect.node;
  /* beyond one node the ring crosses the network, its slowest link */
  if (gpus > arch->interconnect.gpus_per_node)
    tier = &arch->interconnect.network;
  if (!tier->present)
    return -1;
  if (bus_bandwidth)
    *bus_bandwidth = tier->bus_bandwidth[kind];
  return tier->latency_s * napkin_collective_steps (kind, gpus)
         + napkin_collective_factor (kind, gpus) * bytes / tier->bus_bandwidth[kind];
}

double
napkin_arch_collective_seconds_ctas (const NapkinArch    *arch,
                                     NapkinCollectiveKind kind,
                                     guint                gpus,
                                     double               bytes,
                                     guint                ctas,
                                     double              *bus_bandwidth)
{
  const NapkinLinkTier *tier = &arch->interconnect.node;
  double bus, per_cta;
  double s = napkin_arch_collective_seconds (arch, kind, gpus, bytes, &bus);

  if (s <= 0 || ctas == 0 || gpus > arch->interconnect.gpus_per_node)
    {
      if (bus_bandwidth)
        *bus_bandwidth = bus;
      return s;
    }
  per_cta = tier->cta_bus_bandwidth > 0 ? tier->cta_bus_bandwidth : bus / NAPKIN_NCCL_CHANNELS;
  bus = MIN (bus, ctas * per_cta);
  if (bus_bandwidth)
    *bus_bandwidth = bus;
  return tier->latency_s * napkin_collective_steps (kind, gpus) + napkin_collective_factor (kind, gpus) * bytes / bus;
}

gboolean
napkin_arch_save (const NapkinArch  *arch,
                  const char        *path,
                  GError           **error)
{
  json_object *root;
  const char *text;
  g_autoptr(GError) local_error = NULL;
  gboolean ok;

  g_return_val_if_fail (arch != NULL && path != NULL, FALSE);

  root = napkin_arch_to_json (arch);
  text = json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                               | JSON_C_TO_STRING_NOSLASHESCAPE);
  /* What is written loads back: a name too long or an id past 64 characters would
   * make a profile that every later session skips (docs/security.md, "Profiles"). */
  {
    NapkinArch *back = napkin_arch_load_from_data (text, -1, &local_error);

    if (back == NULL)
      {
        g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_FORMAT, _("not saved: %s"), local_error->message);
        json_object_put (root);
        return FALSE;
      }
    napkin_arch_unref (back);
  }
  /* a temporary file renamed over the profile: never half-written */
  ok = napkin_file_write_atomic (path, text, strlen (text), &local_error);
  json_object_put (root);
  if (!ok)
    g_set_error_literal (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_IO, local_error->message);
  return ok;
}
