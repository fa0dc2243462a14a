/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin"

#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-data-dirs.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-scan.h"
#include "napkin-schema.h"

/* The keywords validate () applies, and those it skips (annotations). */
static const char * const applied[] = {
  "$ref", "type", "const", "enum", "properties", "required", "additionalProperties", "items", "minItems",
  "maxItems", "uniqueItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
  "maxLength", "pattern", "oneOf", NULL,
};
static const char * const annotations[] = { "$schema", "$id", "$defs", "title", "description", NULL };

json_object *
napkin_schema_load_default (GError **error)
{
  g_autofree char *path = napkin_data_find ("napkin.schema.json");
  json_object *schema;

  if (path == NULL)
    {
      g_set_error_literal (error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                           "napkin.schema.json is in none of Napkin's data folders (docs/packaging.md)");
      return NULL;
    }
  {
    g_autofree char *text = napkin_file_read_bounded (path, NAPKIN_MAX_FILE_SIZE, NULL, error);

    if (text == NULL)
      return NULL;
    schema = json_tokener_parse (text);
  }
  if (schema == NULL || !json_object_is_type (schema, json_type_object))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: not a JSON object", path);
      json_object_put (schema);
      return NULL;
    }
  return schema;
}

static char *
check_at (json_object *schema,
          const char  *where)
{
  if (json_object_is_type (schema, json_type_boolean))
    return NULL;
  if (!json_object_is_type (schema, json_type_object))
    return g_strdup_printf ("%s: a schema is an object or a boolean", where);
  json_object_object_foreach (schema, key, value)
    {
      g_autofree char *sub = g_strdup_printf ("%s/%s", where, key);
      char *why = NULL;

      if (!g_strv_contains (applied, key) && !g_strv_contains (annotations, key))
        return g_strdup_printf ("%s: the keyword “%s” is not in the subset Napkin implements", where, key);
      if (g_str_equal (key, "properties") || g_str_equal (key, "$defs"))
        {
          json_object_object_foreach (value, name, child)
            {
              g_autofree char *p = g_strdup_printf ("%s/%s", sub, name);

              if ((why = check_at (child, p)) != NULL)
                return why;
            }
        }
      else if (g_str_equal (key, "items") || g_str_equal (key, "additionalProperties"))
        why = check_at (value, sub);
      else if (g_str_equal (key, "oneOf"))
        for (size_t i = 0; why == NULL && i < json_object_array_length (value); i++)
          {
            g_autofree char *p = g_strdup_printf ("%s/%zu", sub, i);

            why = check_at (json_object_array_get_idx (value, i), p);
          }
      else if (g_str_equal (key, "$ref") && !g_str_has_prefix (json_object_get_string (value), "#"))
        why = g_strdup_printf ("%s: only references into the same document (#/…) are supported", sub);
      if (why != NULL)
        return why;
    }
  return NULL;
}

char *
napkin_schema_check (json_object *schema)
{
  return check_at (schema, "#");
}

typedef struct
{
  json_object *root;
  char        *schema_path;   /* of the first failure */
  char        *json_path;
  char        *why;
} Validation;

static gboolean failed (Validation *v, const char *schema_path, const char *json_path, const char *format, ...)
  G_GNUC_PRINTF (4, 5);

static gboolean
failed (Validation *v,
        const char *schema_path,
        const char *json_path,
        const char *format,
        ...)
{
  va_list args;

  if (v->why != NULL)
    return FALSE;
  va_start (args, format);
  v->why = g_strdup_vprintf (format, args);
  va_end (args);
  v->schema_path = g_strdup (schema_path);
  v->json_path = g_strdup (json_path);
  return FALSE;
}

/* "#/$defs/name" → the schema there (JSON Pointer, ~0 and ~1 unescaped). */
static json_object *
resolve (json_object *root,
         const char  *ref)
{
  g_auto(GStrv) parts = g_strsplit (ref + 1, "/", -1);
  json_object *at = root;

  for (guint i = 0; parts[i] && at; i++)
    {
      g_autoptr(GString) key = g_string_new (parts[i]);

      if (*parts[i] == '\0')
        continue;
      g_string_replace (key, "~1", "/", 0);
      g_string_replace (key, "~0", "~", 0);
      at = json_object_object_get (at, key->str);
    }
  return at;
}

static gboolean
is_integer (json_object *value)
{
  double d;

  if (json_object_is_type (value, json_type_int))
    return TRUE;
  if (!json_object_is_type (value, json_type_double))
    return FALSE;
  d = json_object_get_double (value);
  return isfinite (d) && d == floor (d);
}

static gboolean
has_type (json_object *value,
          const char  *type)
{
  switch (json_object_get_type (value))
    {
    case json_type_null: return g_str_equal (type, "null");
    case json_type_boolean: return g_str_equal (type, "boolean");
    case json_type_int: return g_str_equal (type, "integer") || g_str_equal (type, "number");
    case json_type_double: return g_str_equal (type, "number") || (g_str_equal (type, "integer") && is_integer (value));
    case json_type_string: return g_str_equal (type, "string");
    case json_type_array: return g_str_equal (type, "array");
    case json_type_object: return g_str_equal (type, "object");
    default: return FALSE;
    }
}

/* JSON values compare as in JSON Schema: numbers by value, whatever their json-c type. */
static gboolean
json_equal (json_object *a,
            json_object *b)
{
  if (has_type (a, "number") && has_type (b, "number"))
    return json_object_get_double (a) == json_object_get_double (b);
  return json_object_equal (a, b);
}

static char *
shown (json_object *value)
{
  const char *text = json_object_to_json_string_ext (value, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

  return g_utf8_strlen (text, -1) > 40 ? g_strdup_printf ("%.40s…", text) : g_strdup (text);
}

static gboolean validate (Validation *v, json_object *schema, json_object *value, const char *sp, const char *jp);

static char *
child_path (const char *jp,
            const char *key)
{
  return g_str_equal (jp, "$") ? g_strdup (key) : g_strdup_printf ("%s.%s", jp, key);
}

static gboolean
validate_number (Validation  *v,
                 json_object *schema,
                 json_object *value,
                 const char  *sp,
                 const char  *jp)
{
  static const char * const keys[] = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" };
  double x = json_object_get_double (value);

  if (!has_type (value, "number"))
    return TRUE;
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      json_object *limit = json_object_object_get (schema, keys[i]);
      double l;
      gboolean ok;

      if (limit == NULL)
        continue;
      l = json_object_get_double (limit);
      ok = i == 0 ? x >= l : i == 1 ? x <= l : i == 2 ? x > l : x < l;
      if (!ok)
        {
          g_autofree char *s = g_strdup_printf ("%s/%s", sp, keys[i]);
          g_autofree char *a = shown (value), *b = shown (limit);

          return failed (v, s, jp, "%s is %s %s", a,
                         i == 0 ? "below the minimum" : i == 1 ? "above the maximum"
                         : i == 2 ? "not above" : "not below", b);
        }
    }
  return TRUE;
}

/* Patterns compiled once each: a file may hold 10^5 names. */
G_LOCK_DEFINE_STATIC (patterns);

static gboolean
pattern_matches (const char *pattern,
                 const char *text)
{
  static GHashTable *compiled;
  GRegex *regex;
  gboolean matches;

  G_LOCK (patterns);
  if (compiled == NULL)
    compiled = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_regex_unref);
  regex = g_hash_table_lookup (compiled, pattern);
  if (regex == NULL)
    {
      regex = g_regex_new (pattern, G_REGEX_OPTIMIZE, 0, NULL);
      if (regex != NULL)
        g_hash_table_insert (compiled, g_strdup (pattern), regex);
    }
  matches = regex != NULL && g_regex_match (regex, text, 0, NULL);
  G_UNLOCK (patterns);
  return matches;
}

/* One bound of check_count: the schema's `key` (NULL: not checked) as a ceiling (at_most)
 * or a floor. */
static gboolean
check_bound (Validation  *v,
             json_object *schema,
             const char  *sp,
             const char  *jp,
             gint64       count,
             const char  *unit,
             const char  *key,
             gboolean     at_most)
{
  json_object *k;
  gint64 limit;
  g_autofree char *s = NULL;

  if (key == NULL || !(k = json_object_object_get (schema, key)))
    return TRUE;
  limit = json_object_get_int64 (k);
  if (at_most ? count <= limit : count >= limit)
    return TRUE;
  s = g_strdup_printf ("%s/%s", sp, key);
  return failed (v, s, jp, "%" G_GINT64_FORMAT " %s; %s %" G_GINT64_FORMAT " are %s", count, unit,
                 at_most ? "at most" : "at least", limit, at_most ? "allowed" : "needed");
}

/* The schema's bounds `max_key` and `min_key` (either NULL: not checked) on a count of
 * `unit` (characters, items): FALSE, with the error, where `count` is outside them. */
static gboolean
check_count (Validation  *v,
             json_object *schema,
             const char  *sp,
             const char  *jp,
             gint64       count,
             const char  *unit,
             const char  *max_key,
             const char  *min_key)
{
  return check_bound (v, schema, sp, jp, count, unit, max_key, TRUE)
         && check_bound (v, schema, sp, jp, count, unit, min_key, FALSE);
}

static gboolean
validate_string (Validation  *v,
                 json_object *schema,
                 json_object *value,
                 const char  *sp,
                 const char  *jp)
{
  json_object *k;
  const char *text;
  glong length;

  if (!json_object_is_type (value, json_type_string))
    return TRUE;
  text = json_object_get_string (value);
  length = g_utf8_strlen (text, -1);
  if (!check_count (v, schema, sp, jp, length, "characters", "maxLength", "minLength"))
    return FALSE;
  if ((k = json_object_object_get (schema, "pattern")) && !pattern_matches (json_object_get_string (k), text))
    {
      g_autofree char *s = g_strdup_printf ("%s/pattern", sp);
      g_autofree char *a = shown (value);

      return failed (v, s, jp, "%s does not match %s", a, json_object_get_string (k));
    }
  return TRUE;
}

static gboolean
validate_array (Validation  *v,
                json_object *schema,
                json_object *value,
                const char  *sp,
                const char  *jp)
{
  json_object *k;
  size_t n;

  if (!json_object_is_type (value, json_type_array))
    return TRUE;
  n = json_object_array_length (value);
  if (!check_count (v, schema, sp, jp, (gint64) n, "items", "maxItems", "minItems"))
    return FALSE;
  if ((k = json_object_object_get (schema, "uniqueItems")) && json_object_get_boolean (k))
    {
      /* a set of the items' canonical texts: linear in the items (a region may list 10^5) */
      g_autoptr(GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

      for (size_t i = 0; i < n; i++)
        {
          json_object *item = json_object_array_get_idx (value, i);
          char *text = has_type (item, "number")
                       ? g_strdup_printf ("%.17g", json_object_get_double (item))
                       : g_strdup (json_object_to_json_string_ext (item, JSON_C_TO_STRING_PLAIN));

          if (!g_hash_table_add (seen, text))
            {
              g_autofree char *s = g_strdup_printf ("%s/uniqueItems", sp);
              g_autofree char *p = g_strdup_printf ("%s[%zu]", jp, i);
              g_autofree char *a = shown (item);

              return failed (v, s, p, "%s is listed twice", a);
            }
        }
    }
  if ((k = json_object_object_get (schema, "items")) != NULL)
    {
      g_autofree char *s = g_strdup_printf ("%s/items", sp);

      for (size_t i = 0; i < n; i++)
        {
          g_autofree char *p = g_strdup_printf ("%s[%zu]", g_str_equal (jp, "$") ? "" : jp, i);

          if (!validate (v, k, json_object_array_get_idx (value, i), s, p))
            return FALSE;
        }
    }
  return TRUE;
}

static gboolean
validate_object (Validation  *v,
                 json_object *schema,
                 json_object *value,
                 const char  *sp,
                 const char  *jp)
{
  json_object *props = json_object_object_get (schema, "properties");
  json_object *extra = json_object_object_get (schema, "additionalProperties");
  json_object *required = json_object_object_get (schema, "required");

  if (!json_object_is_type (value, json_type_object))
    return TRUE;
  for (size_t i = 0; required && i < json_object_array_length (required); i++)
    {
      const char *name = json_object_get_string (json_object_array_get_idx (required, i));

      if (json_object_object_get_ex (value, name, NULL))
        continue;
      {
        g_autofree char *s = g_strdup_printf ("%s/required", sp);

        return failed (v, s, jp, "missing field “%s”", name);
      }
    }
  json_object_object_foreach (value, key, member)
    {
      json_object *sub = NULL;
      g_autofree char *s = NULL;
      g_autofree char *p = child_path (jp, key);

      if (props && json_object_object_get_ex (props, key, &sub))
        s = g_strdup_printf ("%s/properties/%s", sp, key);
      else if (extra != NULL)
        {
          sub = extra;
          s = g_strdup_printf ("%s/additionalProperties", sp);
        }
      if (sub != NULL && !validate (v, sub, member, s, p))
        return FALSE;
    }
  return TRUE;
}

static gboolean
validate (Validation  *v,
          json_object *schema,
          json_object *value,
          const char  *sp,
          const char  *jp)
{
  json_object *k;

  if (json_object_is_type (schema, json_type_boolean))
    return json_object_get_boolean (schema) || failed (v, sp, jp, "no value is allowed here");
  if ((k = json_object_object_get (schema, "$ref")) != NULL)
    {
      const char *ref = json_object_get_string (k);
      json_object *target = resolve (v->root, ref);

      if (target == NULL)
        return failed (v, sp, jp, "the schema's reference %s leads nowhere", ref);
      if (!validate (v, target, value, ref, jp))
        return FALSE;
    }
  if ((k = json_object_object_get (schema, "type")) != NULL)
    {
      gboolean ok = FALSE;

      if (json_object_is_type (k, json_type_array))
        for (size_t i = 0; !ok && i < json_object_array_length (k); i++)
          ok = has_type (value, json_object_get_string (json_object_array_get_idx (k, i)));
      else
        ok = has_type (value, json_object_get_string (k));
      if (!ok)
        {
          g_autofree char *s = g_strdup_printf ("%s/type", sp);
          g_autofree char *a = shown (value);

          return failed (v, s, jp, "expected %s, found %s", json_object_to_json_string (k), a);
        }
    }
  if ((k = json_object_object_get (schema, "const")) != NULL && !json_equal (k, value))
    {
      g_autofree char *s = g_strdup_printf ("%s/const", sp);
      g_autofree char *a = shown (value), *b = shown (k);

      return failed (v, s, jp, "expected %s, found %s", b, a);
    }
  if ((k = json_object_object_get (schema, "enum")) != NULL)
    {
      gboolean ok = FALSE;

      for (size_t i = 0; !ok && i < json_object_array_length (k); i++)
        ok = json_equal (json_object_array_get_idx (k, i), value);
      if (!ok)
        {
          g_autofree char *s = g_strdup_printf ("%s/enum", sp);
          g_autofree char *a = shown (value);
          g_autoptr(GString) choices = g_string_new (NULL);

          for (size_t i = 0; i < json_object_array_length (k); i++)
            g_string_append_printf (choices, "%s%s", i ? ", " : "",
                                    json_object_to_json_string (json_object_array_get_idx (k, i)));
          return failed (v, s, jp, "%s is not one of %s", a, choices->str);
        }
    }
  if ((k = json_object_object_get (schema, "oneOf")) != NULL)
    {
      guint matches = 0;

      for (size_t i = 0; i < json_object_array_length (k); i++)
        {
          Validation trial = { v->root, NULL, NULL, NULL };

          matches += validate (&trial, json_object_array_get_idx (k, i), value, sp, jp);
          g_free (trial.schema_path);
          g_free (trial.json_path);
          g_free (trial.why);
        }
      if (matches != 1)
        {
          g_autofree char *s = g_strdup_printf ("%s/oneOf", sp);
          g_autofree char *a = shown (value);

          return failed (v, s, jp, "%s matches %u of the %zu allowed forms, not exactly one", a, matches,
                         json_object_array_length (k));
        }
    }
  return validate_number (v, schema, value, sp, jp) && validate_string (v, schema, value, sp, jp)
         && validate_array (v, schema, value, sp, jp) && validate_object (v, schema, value, sp, jp);
}

static gboolean
report (Validation  *v,
        gboolean     ok,
        GError     **error)
{
  if (!ok)
    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_SCHEMA,
                 "Against the file format's schema, rule %s: %s (JSON path: %s)", v->schema_path, v->why, v->json_path);
  g_free (v->schema_path);
  g_free (v->json_path);
  g_free (v->why);
  return ok;
}

gboolean
napkin_schema_validate (json_object  *schema,
                        json_object  *instance,
                        GError      **error)
{
  Validation v = { schema, NULL, NULL, NULL };

  return report (&v, validate (&v, schema, instance, "#", "$"), error);
}

/* A schema that allows everything: true, or only annotations. */
static gboolean
allows_all (json_object *schema)
{
  if (json_object_is_type (schema, json_type_boolean))
    return json_object_get_boolean (schema);
  json_object_object_foreach (schema, key, value)
    {
      (void) value;
      if (!g_strv_contains (annotations, key))
        return FALSE;
    }
  return TRUE;
}

/* The value in [start, end) as a json-c tree and checked against `schema`. */
static gboolean
validate_span (Validation  *v,
               json_object *schema,
               const char  *data,
               gsize        start,
               gsize        end,
               const char  *sp,
               const char  *jp)
{
  json_tokener *tok = json_tokener_new_ex (NAPKIN_JSON_MAX_DEPTH);
  json_object *value = json_tokener_parse_ex (tok, data + start, (int) (end - start));
  gboolean ok;

  /* a number at the end of the span could go on: its end is the text's end */
  if (value == NULL && json_tokener_get_error (tok) == json_tokener_continue)
    value = json_tokener_parse_ex (tok, "", 1);

  json_tokener_free (tok);
  if (value == NULL)
    return failed (v, sp, jp, "the text could not be read as JSON");
  ok = validate (v, schema, value, sp, jp);
  json_object_put (value);
  return ok;
}

/* A member of the root: an array element by element, anything else as one tree. */
static gboolean
validate_member (Validation  *v,
                 json_object *schema,
                 const char  *data,
                 gsize        length,
                 gsize        start,
                 gsize        end,
                 const char  *sp,
                 const char  *jp)
{
  json_object *items = json_object_object_get (schema, "items");
  NapkinJsonIter iter;
  gsize es, ee, n = 0;

  if (allows_all (schema))
    return TRUE;
  /* element by element only for { "type": "array", "items": …, "maxItems": … } */
  if (data[start] != '[' || items == NULL
      || g_strcmp0 (json_object_get_string (json_object_object_get (schema, "type")), "array") != 0)
    return validate_span (v, schema, data, start, end, sp, jp);
  {
    json_object_object_foreach (schema, key, value)
      {
        (void) value;
        if (!g_strv_contains (annotations, key) && !g_str_equal (key, "type") && !g_str_equal (key, "items")
            && !g_str_equal (key, "maxItems"))
          return validate_span (v, schema, data, start, end, sp, jp);
      }
  }
  napkin_json_iter_init (&iter, data, length, start);
  while (napkin_json_iter_next (&iter, &es, &ee))
    {
      g_autofree char *isp = g_strdup_printf ("%s/items", sp);
      g_autofree char *ijp = g_strdup_printf ("%s[%zu]", jp, n++);

      if (!allows_all (items) && !validate_span (v, items, data, es, ee, isp, ijp))
        return FALSE;
    }
  return check_count (v, schema, sp, jp, (gint64) n, "items", "maxItems", NULL);
}

gboolean
napkin_schema_validate_text (json_object  *schema,
                             const char   *data,
                             gsize         length,
                             GError      **error)
{
  Validation v = { schema, NULL, NULL, NULL };
  json_object *props = json_object_object_get (schema, "properties");
  json_object *extra = json_object_object_get (schema, "additionalProperties");
  json_object *required = json_object_object_get (schema, "required");
  g_autoptr(GHashTable) keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gsize root_start, root_end, ks, ke, vs, ve;
  NapkinJsonIter iter;
  gboolean ok = TRUE;

  if (!napkin_json_check (data, length, &root_start, &root_end, error))
    return FALSE;
  /* The root's own keywords, when they are only those of an object of members. */
  json_object_object_foreach (schema, key, value)
    {
      (void) value;
      if (data[root_start] != '{'
          || !(g_strv_contains (annotations, key) || g_str_equal (key, "type") || g_str_equal (key, "properties")
               || g_str_equal (key, "required") || g_str_equal (key, "additionalProperties")))
        return report (&v, validate_span (&v, schema, data, root_start, root_end, "#", "$"), error);
    }
  napkin_json_iter_init (&iter, data, length, root_start);
  while (ok && napkin_json_iter_next_member (&iter, &ks, &ke, &vs, &ve))
    {
      char *name = napkin_json_string_text (data, ks, ke);
      json_object *sub = NULL;
      g_autofree char *sp = NULL;

      g_hash_table_add (keys, name);
      if (props && json_object_object_get_ex (props, name, &sub))
        sp = g_strdup_printf ("#/properties/%s", name);
      else if (extra != NULL)
        {
          sub = extra;
          sp = g_strdup ("#/additionalProperties");
        }
      if (sub != NULL)
        ok = validate_member (&v, sub, data, length, vs, ve, sp, name);
    }
  for (size_t i = 0; ok && required && i < json_object_array_length (required); i++)
    {
      const char *name = json_object_get_string (json_object_array_get_idx (required, i));

      if (!g_hash_table_contains (keys, name))
        ok = failed (&v, "#/required", "$", "missing field “%s”", name);
    }
  return report (&v, ok, error);
}
