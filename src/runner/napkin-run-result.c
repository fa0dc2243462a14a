/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>

#include "napkin-run-job.h"
#include "napkin-run-result.h"

/* ---- typed reads: a missing field (or JSON null) is absent, a mistyped one an error ----------- */

/* `where`.`key`, or `key` at the top. */
static char *
field_path (const char *where,
            const char *key)
{
  return where != NULL ? g_strdup_printf ("%s.%s", where, key) : g_strdup (key);
}

static gboolean
type_error (const char  *where,
            const char  *key,
            const char  *expected,
            GError     **error)
{
  g_autofree char *path = field_path (where, key);

  /* TRANSLATORS: %s is a JSON path ("time_ms.median"), then "a number", "a string", … */
  g_set_error (error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT, _("the runner’s result: %s: expected %s"), path,
               expected);
  return FALSE;
}

/* The member, or NULL where it is absent or null. */
static json_object *
member (json_object *obj,
        const char  *key)
{
  json_object *v = NULL;

  if (obj == NULL || !json_object_object_get_ex (obj, key, &v) || json_object_is_type (v, json_type_null))
    return NULL;
  return v;
}

/* The member when it has the JSON type asked for (an integer is a number too), NULL
 * where absent; FALSE with an error naming it where it has another type. */
static gboolean
typed_member (json_object  *obj,
              const char   *where,
              const char   *key,
              json_type     type,
              const char   *expected,
              json_object **out,
              GError      **error)
{
  json_object *v = member (obj, key);

  *out = NULL;
  if (v == NULL)
    return TRUE;
  if (!json_object_is_type (v, type) && !(type == json_type_double && json_object_is_type (v, json_type_int)))
    return type_error (where, key, expected, error);
  *out = v;
  return TRUE;
}

/* A number: NAN where absent. */
static gboolean
read_number (json_object  *obj,
             const char   *where,
             const char   *key,
             double       *out,
             GError      **error)
{
  json_object *v;

  if (!typed_member (obj, where, key, json_type_double, _("a number"), &v, error))
    return FALSE;
  *out = v != NULL ? json_object_get_double (v) : NAN;
  return TRUE;
}

/* A string (a copy): left NULL where absent. */
static gboolean
read_string (json_object  *obj,
             const char   *where,
             const char   *key,
             char        **out,
             GError      **error)
{
  json_object *v;

  if (!typed_member (obj, where, key, json_type_string, _("a string"), &v, error))
    return FALSE;
  if (v != NULL)
    *out = g_strdup (json_object_get_string (v));
  return TRUE;
}

/* A boolean: FALSE where absent. */
static gboolean
read_boolean (json_object  *obj,
              const char   *where,
              const char   *key,
              gboolean     *out,
              GError      **error)
{
  json_object *v;

  if (!typed_member (obj, where, key, json_type_boolean, _("true or false"), &v, error))
    return FALSE;
  *out = v != NULL && json_object_get_boolean (v);
  return TRUE;
}

/* An object: NULL where absent. */
static gboolean
read_object (json_object  *obj,
             const char   *where,
             const char   *key,
             json_object **out,
             GError      **error)
{
  return typed_member (obj, where, key, json_type_object, _("an object"), out, error);
}

/* ---- the parts of a result ------------------------------------------------------------------- */

/* "time_ms": required once the kernels ran (a --dry-run times nothing). */
static gboolean
read_time (NapkinRunResult  *self,
           json_object      *root,
           GError          **error)
{
  json_object *t;

  self->time_min_ms = self->time_max_ms = self->time_repeats = NAN;
  if (!read_object (root, NULL, "time_ms", &t, error)
      || !read_number (t, "time_ms", "median", &self->time_median_ms, error)
      || !read_number (t, "time_ms", "min", &self->time_min_ms, error)
      || !read_number (t, "time_ms", "max", &self->time_max_ms, error)
      || !read_number (t, "time_ms", "repeats", &self->time_repeats, error))
    return FALSE;
  if (!read_boolean (root, NULL, "dry_run", &self->dry_run, error))
    return FALSE;
  if (napkin_run_result_ran (self) && !self->dry_run && isnan (self->time_median_ms))
    {
      g_set_error (error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT,
                   _("the runner’s result: time_ms.median is missing from a run that ended “%s”"), self->status);
      return FALSE;
    }
  return TRUE;
}

/* "gpu", "error", "energy", "reference_time_ms": small objects of named numbers. */
static gboolean
read_parts (NapkinRunResult  *self,
            json_object      *root,
            GError          **error)
{
  json_object *gpu, *check, *energy, *reference;

  if (!read_object (root, NULL, "gpu", &gpu, error) || !read_string (gpu, "gpu", "name", &self->gpu_name, error)
      || !read_string (gpu, "gpu", "driver", &self->gpu_driver, error))
    return FALSE;
  if (!read_object (root, NULL, "error", &check, error)
      || !read_number (check, "error", "max_rel", &self->error_max_rel, error)
      || !read_number (check, "error", "bound", &self->error_bound, error)
      || !read_boolean (check, "error", "ok", &self->error_ok, error))
    return FALSE;
  self->has_error = check != NULL && !isnan (self->error_max_rel);
  if (!read_object (root, NULL, "energy", &energy, error)
      || !read_number (energy, "energy", "joules_per_run", &self->energy_j, error))
    return FALSE;
  return read_object (root, NULL, "reference_time_ms", &reference, error)
         && read_number (reference, "reference_time_ms", "median", &self->reference_median_ms, error);
}

static void
run_kernel_clear (gpointer data)
{
  NapkinRunKernel *k = data;

  g_free (k->name);
  g_free (k->skeleton);
}

/* "kernels": the module's kernels as they ran. */
static gboolean
read_kernels (NapkinRunResult  *self,
              json_object      *root,
              GError          **error)
{
  json_object *list = member (root, "kernels");

  self->kernels = g_array_new (FALSE, TRUE, sizeof (NapkinRunKernel));
  g_array_set_clear_func (self->kernels, run_kernel_clear);
  if (list == NULL)
    return TRUE;
  if (!json_object_is_type (list, json_type_array))
    return type_error (NULL, "kernels", _("an array"), error);
  for (size_t i = 0; i < json_object_array_length (list); i++)
    {
      json_object *o = json_object_array_get_idx (list, i);
      g_autofree char *where = g_strdup_printf ("kernels[%zu]", i);
      NapkinRunKernel *k;

      if (!json_object_is_type (o, json_type_object))
        return type_error (NULL, where, _("an object"), error);
      g_array_set_size (self->kernels, self->kernels->len + 1);
      k = &g_array_index (self->kernels, NapkinRunKernel, self->kernels->len - 1);
      if (!read_string (o, where, "name", &k->name, error) || !read_string (o, where, "skeleton", &k->skeleton, error)
          || !read_number (o, where, "grid", &k->grid, error) || !read_number (o, where, "threads", &k->threads, error)
          || !read_number (o, where, "registers", &k->registers, error)
          || !read_number (o, where, "shared_bytes", &k->shared_bytes, error)
          || !read_number (o, where, "local_bytes", &k->local_bytes, error))
        return FALSE;
    }
  return TRUE;
}

/* "prediction": the model's time, bound and traffic at each level. */
static gboolean
read_prediction (NapkinRunResult  *self,
                 json_object      *root,
                 GError          **error)
{
  json_object *p, *levels;

  self->prediction_time_ms = NAN;
  for (guint l = 0; l < NAPKIN_N_LEVELS; l++)
    self->prediction_level_bytes[l] = self->prediction_level_time_ms[l] = NAN;
  if (!read_object (root, NULL, "prediction", &p, error))
    return FALSE;
  self->has_prediction = p != NULL;
  if (!read_string (p, "prediction", "arch", &self->prediction_arch, error)
      || !read_string (p, "prediction", "bound", &self->prediction_bound, error)
      || !read_number (p, "prediction", "time_ms", &self->prediction_time_ms, error)
      || !read_object (p, "prediction", "levels", &levels, error))
    return FALSE;
  for (guint l = 0; l < NAPKIN_N_LEVELS && levels != NULL; l++)
    {
      g_autofree char *where = g_strdup_printf ("prediction.levels.%s", napkin_level_to_string (l));
      json_object *level;

      if (!read_object (levels, "prediction.levels", napkin_level_to_string (l), &level, error)
          || !read_number (level, where, "transfer_bytes", &self->prediction_level_bytes[l], error)
          || !read_number (level, where, "time_ms", &self->prediction_level_time_ms[l], error))
        return FALSE;
    }
  return TRUE;
}

/* ---- the API --------------------------------------------------------------------------------- */

NapkinRunResult *
napkin_run_result_new_from_json (json_object  *json,
                                 GError      **error)
{
  g_autoptr(NapkinRunResult) self = g_new0 (NapkinRunResult, 1);

  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self->predicted_energy_j = self->energy_j = self->reference_median_ms = NAN;
  self->error_max_rel = self->error_bound = NAN;
  if (json == NULL || !json_object_is_type (json, json_type_object))
    {
      g_set_error (error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT, _("the runner’s result is not a JSON object"));
      return NULL;
    }
  self->json = json_object_get (json);
  if (!read_string (json, NULL, "status", &self->status, error))
    return NULL;
  if (self->status == NULL)
    {
      g_set_error (error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT, _("the runner’s result: status is missing"));
      return NULL;
    }
  if (!read_string (json, NULL, "message", &self->message, error)
      || !read_string (json, NULL, "date", &self->date, error)
      || !read_string (json, NULL, "arch", &self->arch, error)
      || !read_number (json, NULL, "flops", &self->flops, error)
      || !read_number (json, NULL, "io_bytes", &self->io_bytes, error)
      || !read_number (json, NULL, "ir_hbm_bytes", &self->ir_hbm_bytes, error)
      || !read_number (json, NULL, "tflops", &self->tflops, error)
      || !read_number (json, NULL, "gbps", &self->gbps, error)
      || !read_number (json, NULL, "predicted_energy_j", &self->predicted_energy_j, error)
      || !read_time (self, json, error) || !read_parts (self, json, error) || !read_kernels (self, json, error)
      || !read_prediction (self, json, error))
    return NULL;
  return g_steal_pointer (&self);
}

void
napkin_run_result_free (NapkinRunResult *self)
{
  if (self == NULL)
    return;
  g_free (self->status);
  g_free (self->message);
  g_free (self->date);
  g_free (self->arch);
  g_free (self->gpu_name);
  g_free (self->gpu_driver);
  g_free (self->prediction_arch);
  g_free (self->prediction_bound);
  g_clear_pointer (&self->kernels, g_array_unref);
  g_clear_pointer (&self->json, json_object_put);
  g_free (self);
}

gboolean
napkin_run_result_ran (const NapkinRunResult *self)
{
  g_return_val_if_fail (self != NULL, FALSE);
  return g_strcmp0 (self->status, "ok") == 0 || g_strcmp0 (self->status, "wrong") == 0;
}

gboolean
napkin_run_result_is_ok (const NapkinRunResult *self)
{
  g_return_val_if_fail (self != NULL, FALSE);
  return g_strcmp0 (self->status, "ok") == 0;
}

const NapkinRunKernel *
napkin_run_result_kernel (const NapkinRunResult *self,
                          guint                  index)
{
  g_return_val_if_fail (self != NULL && index < self->kernels->len, NULL);
  return &g_array_index (self->kernels, NapkinRunKernel, index);
}
