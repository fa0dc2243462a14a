/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>

#include <glib/gi18n-lib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "napkin-describe.h"
#include "napkin-error.h"
#include "napkin-expr.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-json-scan.h"
#include "napkin-text.h"
#include "napkin-validate.h"

/* The loader walks the JSON once, building items and reporting the first problem
 * with its path. Keys it does not know go to the item's `extra` so that a file
 * from a newer Napkin survives a round trip. */

typedef struct
{
  GError      **error;
  gboolean      failed;
  json_object  *root;   /* the whole document, parsed only to name a failure's place */
  /* Keys loaded so far, key -> index + 1. The diagram's own index is rebuilt after
   * every insertion, which made loading quadratic: 4 000 operations took 8 s. */
  GHashTable   *index[NAPKIN_N_ITEM_KINDS];
  /* The checked text, read piece by piece (see read_value). */
  const char   *data;
  gsize         length;
  json_tokener *tokener;
  gsize         known_limit;   /* json-c bytes for one value of a field we read */
  gsize         extra_budget;  /* json-c bytes left for the values of unknown fields */
} Loader;

static void
loader_clear (Loader *loader)
{
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    g_clear_pointer (&loader->index[k], g_hash_table_unref);
  g_clear_pointer (&loader->tokener, json_tokener_free);
  g_clear_pointer (&loader->root, json_object_put);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Loader, loader_clear)

static int
loader_find (Loader         *loader,
             NapkinItemKind  kind,
             const char     *key)
{
  gpointer v = loader->index[kind] != NULL ? g_hash_table_lookup (loader->index[kind], key) : NULL;

  return v != NULL ? (int) GPOINTER_TO_UINT (v) - 1 : -1;
}

/* Appends an item to the diagram and to the loader's index. */
static void
loader_append (Loader         *loader,
               NapkinDiagram  *diagram,
               NapkinItemKind  kind,
               gpointer        item)
{
  guint index = napkin_diagram_count (diagram, kind);
  char *key = napkin_item_key (kind, item);

  if (loader->index[kind] == NULL)
    loader->index[kind] = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (g_hash_table_contains (loader->index[kind], key))
    g_free (key);
  else
    g_hash_table_insert (loader->index[kind], key, GUINT_TO_POINTER (index + 1));
  napkin_diagram_insert_item (diagram, kind, index, item);
}

/* The largest file whose errors name items by their names (bytes). */
#define DESCRIBE_LIMIT (1 << 20)

G_GNUC_PRINTF (4, 5)
static gboolean
fail (Loader     *loader,
      int         code,
      const char *path,
      const char *format,
      ...)
{
  g_autofree char *message = NULL;
  va_list args;

  if (loader->failed)
    return FALSE;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  /* "The size of axis “m”: 0 is out of range", the JSON path on a details line.
   * The loader never builds the whole tree; a failure in a file of ordinary size
   * parses it once to find the item's name (a huge one is named by position, so
   * that an error costs no more memory than loading). */
  if (loader->root == NULL && loader->data != NULL && loader->length <= DESCRIBE_LIMIT)
    {
      json_tokener *tokener = json_tokener_new_ex (NAPKIN_JSON_MAX_DEPTH);

      loader->root = json_tokener_parse_ex (tokener, loader->data, (int) loader->length);
      json_tokener_free (tokener);
    }
  {
    g_autofree char *place = napkin_describe_place (loader->root, NULL, path);
    g_autofree char *words = NULL;
    g_autofree char *full = NULL;

    place[0] = g_ascii_toupper (place[0]);
    words = g_strdup_printf ("%s: %s", place, message);
    full = napkin_error_with_path (words, g_strcmp0 (path, "$") == 0 ? NULL : path);
    g_set_error_literal (loader->error, NAPKIN_DOCUMENT_ERROR, code, full);
  }
  loader->failed = TRUE;
  return FALSE;
}

static const char *
type_name (json_object *obj)
{
  switch (json_object_get_type (obj))
    {
    case json_type_null:    return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double:  return "a number";
    case json_type_int:     return "an integer";
    case json_type_object:  return "an object";
    case json_type_array:   return "an array";
    case json_type_string:  return "a string";
    default:                return "something else";
    }
}

static gboolean is_raw (json_object *obj);

static gboolean
expect_type (Loader      *loader,
             json_object *obj,
             json_type    type,
             const char  *path)
{
  static const char *wanted[] = {
    [json_type_null] = "null", [json_type_boolean] = "a boolean", [json_type_double] = "a number",
    [json_type_int] = "an integer", [json_type_object] = "an object", [json_type_array] = "an array",
    [json_type_string] = "a string",
  };

  if (is_raw (obj))
    {
      gsize values;
      gsize cost = napkin_json_tree_cost (json_object_get_string (obj), 0, json_object_get_string_len (obj),
                                          &values);

      return fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, path,
                   "%" G_GSIZE_FORMAT " JSON values in %d bytes: reading them would take about %" G_GSIZE_FORMAT
                   " MB, more than Napkin gives a file of this size",
                   values, json_object_get_string_len (obj), cost / 1000000 + 1);
    }
  if (json_object_get_type (obj) == type)
    return TRUE;
  if (type == json_type_double && json_object_get_type (obj) == json_type_int)
    return TRUE;

  return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path, _("expected %s, found %s"),
               wanted[type], type_name (obj));
}

/* ---- reading the text in pieces ---------------------------------------------------------
 *
 * json-c builds a tree of the whole text, at 26 bytes of memory per byte of a typical
 * file and 260 per byte of an array of empty objects: a 67 MB file took 17 GB. The
 * loader therefore checks the text first (napkin-json-scan.c: syntax, nesting, UTF-8),
 * then hands json-c one value at a time: each operation, wire, region… is read, turned
 * into an item and dropped. What stays are the values of unknown fields (kept for the
 * round trip): as json-c trees while their estimated cost fits a budget of a few times
 * the file's size, else as their raw text, written back byte for byte. A value of a
 * field we read that would cost more than eight times the file is refused. So loading
 * takes at most about 14 times the file's size, plus the diagram itself
 * (docs/security.md, "Limits"). */

/* Unknown values longer than RAW_MIN_BYTES whose tree would take more than
 * RAW_DENSITY bytes per byte of text are kept as text; the trees of the others may
 * take EXTRA_BUDGET times the file (plus 16 MiB), beyond which the file is refused.
 * A value of a field we read may take KNOWN_LIMIT times the file (plus 4 MiB). */
#define RAW_MIN_BYTES 4096
#define RAW_DENSITY   16
#define EXTRA_BUDGET  8
#define KNOWN_LIMIT   4

/* A value kept as its raw text: a JSON string whose serializer prints the text as it
 * was (valid JSON, checked). Tagged by its userdata. */
static char raw_tag;

static int
raw_to_json_string (json_object   *jso,
                    struct printbuf *pb,
                    int            level,
                    int            flags)
{
  return printbuf_memappend (pb, json_object_get_string (jso), json_object_get_string_len (jso));
}

static gboolean
is_raw (json_object *obj)
{
  return obj != NULL && json_object_get_userdata (obj) == &raw_tag;
}

static json_object *
raw_new (const char *text,
         gsize       length)
{
  json_object *obj = json_object_new_string_len (text, (int) length);

  json_object_set_serializer (obj, raw_to_json_string, &raw_tag, NULL);
  return obj;
}

/* The JSON type of a checked value, from its first character. */
static const char *
span_type_name (Loader *loader,
                gsize   start,
                gsize   end)
{
  switch (loader->data[start])
    {
    case '{': return "an object";
    case '[': return "an array";
    case '"': return "a string";
    case 't':
    case 'f': return "a boolean";
    case 'n': return "null";
    default:
      for (gsize i = start; i < end; i++)
        if (loader->data[i] == '.' || loader->data[i] == 'e' || loader->data[i] == 'E')
          return "a number";
      return "an integer";
    }
}

/* One value as a json-c tree; `known`: a field the loader reads, else an unknown
 * field's value, kept. NULL is JSON null, or (unknown fields over their budget) an
 * error in loader->extra_budget == 0 that read_object reports. */
static json_object *
read_value (Loader   *loader,
            gsize     start,
            gsize     end,
            gboolean  known)
{
  const char *text = loader->data + start;
  gsize cost = napkin_json_tree_cost (loader->data, start, end, NULL);
  json_object *value;

  /* The choice depends on the value's own text only, so that a saved file reads back
   * the same way (its raw text is written back as it was). */
  if (known ? cost > loader->known_limit : end - start > RAW_MIN_BYTES && cost > RAW_DENSITY * (end - start))
    return raw_new (text, end - start);
  if (!known)
    {
      if (cost > loader->extra_budget)
        {
          loader->extra_budget = 0;
          return NULL;
        }
      loader->extra_budget -= cost;
    }

  switch (text[0])
    {
    case 'n':
      return NULL;
    case 't':
    case 'f':
      return json_object_new_boolean (text[0] == 't');
    case '"':
      {
        g_autofree char *string = napkin_json_string_text (loader->data, start, end);

        return json_object_new_string (string);
      }
    case '{':
    case '[':
      json_tokener_reset (loader->tokener);
      value = json_tokener_parse_ex (loader->tokener, text, (int) (end - start));
      break;
    default:
      {
        /* A number ends only where something follows it. */
        g_autofree char *number = g_strndup (text, end - start + 1);

        number[end - start] = ' ';
        json_tokener_reset (loader->tokener);
        value = json_tokener_parse_ex (loader->tokener, number, (int) (end - start + 1));
        break;
      }
    }
  /* Checked text always parses; json-c failing here would be a bug of the check. */
  if (value == NULL)
    g_warning ("json-c did not parse a value the check accepted (%s)",
               json_tokener_error_desc (json_tokener_get_error (loader->tokener)));
  return value;
}

/* A checked object, member by member; `split` keys are not read but their spans
 * returned (the last of duplicate keys wins, as in json-c). */
static json_object *
read_object (Loader      *loader,
             gsize        start,
             gsize        end,
             const char **known,
             const char **split,
             gsize       *split_spans)
{
  json_object *obj = json_object_new_object ();
  NapkinJsonIter iter;
  gsize ks, ke, vs, ve;

  napkin_json_iter_init (&iter, loader->data, end, start);
  while (napkin_json_iter_next_member (&iter, &ks, &ke, &vs, &ve))
    {
      g_autofree char *key = napkin_json_string_text (loader->data, ks, ke);
      gboolean is_split = FALSE;

      for (guint k = 0; split != NULL && split[k] != NULL && !is_split; k++)
        if (strcmp (split[k], key) == 0)
          {
            split_spans[2 * k] = vs;
            split_spans[2 * k + 1] = ve;
            is_split = TRUE;
          }
      if (is_split)
        continue;
      json_object_object_add (obj, key, read_value (loader, vs, ve, g_strv_contains (known, key)));
      if (loader->extra_budget == 0 && !loader->failed)
        {
          g_autofree char *shown = g_strescape (key, NULL);
          int line = 1, column = 1;

          for (gsize i = 0; i < vs; i++)
            {
              if (loader->data[i] == '\n')
                line++, column = 1;
              else
                column++;
            }
          fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, "$",
                "the fields this Napkin does not know (kept to be written back) would need more than %"
                G_GSIZE_FORMAT " MB of memory (%d times the file's size plus 16 MB); that ran out at field "
                "“%.40s” (line %d, column %d)",
                (EXTRA_BUDGET * loader->length + (16 << 20)) / 1000000, EXTRA_BUDGET, shown, line, column);
        }
    }
  return obj;
}

/* The elements of an array of items (axes, nodes, …), read one at a time. */
typedef struct
{
  gsize          start;
  gsize          end;
  gsize          length;
  gsize          next;
  NapkinJsonIter iter;
  json_object   *current;
} Elements;

static void
elements_clear (Elements *elements)
{
  g_clear_pointer (&elements->current, json_object_put);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Elements, elements_clear)

static gsize
elements_length (Elements *elements)
{
  return elements->length;
}

/* Element i (in order): an item object, whose unknown fields count against the
 * budget; valid until the next call. */
static json_object *
elements_get (Loader      *loader,
              Elements    *elements,
              gsize        i,
              const char **known)
{
  gsize vs, ve;

  g_assert (i == elements->next);
  g_clear_pointer (&elements->current, json_object_put);
  if (!napkin_json_iter_next (&elements->iter, &vs, &ve))
    g_assert_not_reached ();
  elements->next++;
  if (loader->data[vs] == '{')
    elements->current = read_object (loader, vs, ve, known, NULL, NULL);
  else
    elements->current = read_value (loader, vs, ve, TRUE);
  return elements->current;
}

/* Keys we know are consumed; the rest become `extra`. */
static json_object *
collect_extra (json_object *obj,
               const char **known)
{
  json_object *extra = NULL;

  json_object_object_foreach (obj, key, value)
    {
      if (g_strv_contains (known, key))
        continue;
      if (extra == NULL)
        extra = json_object_new_object ();
      json_object_object_add (extra, key, json_object_get (value));
    }

  return extra;
}

static json_object *
member (json_object *obj,
        const char  *key)
{
  json_object *value = NULL;

  if (!json_object_object_get_ex (obj, key, &value))
    return NULL;
  return value;
}

static gboolean
get_string (Loader      *loader,
            json_object *obj,
            const char  *key,
            const char  *path,
            gboolean     required,
            const char **out)
{
  json_object *value = member (obj, key);

  *out = NULL;
  if (value == NULL)
    {
      if (required)
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path, _("missing field “%s”"), key);
      return TRUE;
    }
  /* the path only when there is something to say: this runs for every field */
  if (is_raw (value) || json_object_get_type (value) != json_type_string)
    {
      g_autofree char *p = g_strdup_printf ("%s.%s", path, key);

      return expect_type (loader, value, json_type_string, p);
    }

  *out = json_object_get_string (value);
  if (!g_utf8_validate (*out, json_object_get_string_len (value), NULL)
      || strlen (*out) != (gsize) json_object_get_string_len (value))
    {
      g_autofree char *p = g_strdup_printf ("%s.%s", path, key);

      return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p, _("not valid UTF-8 text"));
    }
  return TRUE;
}

static gboolean
get_name (Loader      *loader,
          json_object *obj,
          const char  *key,
          const char  *path,
          const char **out)
{
  if (!get_string (loader, obj, key, path, TRUE, out))
    return FALSE;

  if (!napkin_name_is_valid (*out))
    {
      g_autofree char *p = g_strdup_printf ("%s.%s", path, key);
      g_autofree char *shown = g_strescape (*out, NULL);

      return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p,
                   _("“%.80s” is not a name: use letters, digits and _, starting with a letter or _, "
                   "at most %d characters"), shown, NAPKIN_MAX_NAME_LEN);
    }
  return TRUE;
}

static gboolean
get_int (Loader      *loader,
         json_object *value,
         const char  *path,
         gint64       min,
         gint64       max,
         gint64      *out)
{
  gint64 v;

  if (json_object_get_type (value) == json_type_double)
    {
      double d = json_object_get_double (value);

      if (isfinite (d) && d == floor (d) && fabs (d) < 9e15)
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path,
                     _("expected an integer, found %s (write it without a decimal point)"),
                     json_object_to_json_string (value));
      return fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, path,
                   "%s is not an integer from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT,
                   json_object_to_json_string (value), min, max);
    }
  if (!expect_type (loader, value, json_type_int, path))
    return FALSE;

  /* json-c clamps what does not fit: report it as such rather than the clamped value. */
  if (json_object_get_uint64 (value) == G_MAXUINT64 || json_object_get_int64 (value) == G_MININT64)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, path,
                 "the number does not fit in 64 bits (allowed: %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT ")",
                 min, max);

  errno = 0;
  v = json_object_get_int64 (value);
  if (errno != 0 || v < min || v > max || (v == INT64_MAX && json_object_get_uint64 (value) != (guint64) INT64_MAX))
    return fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, path,
                 "%s is out of range (%" G_GINT64_FORMAT " to %" G_GINT64_FORMAT ")",
                 json_object_to_json_string (value), min, max);

  *out = v;
  return TRUE;
}

static gboolean
get_double (Loader      *loader,
            json_object *value,
            const char  *path,
            double      *out)
{
  if (!expect_type (loader, value, json_type_double, path))
    return FALSE;

  *out = json_object_get_double (value);
  if (!isfinite (*out) || fabs (*out) > NAPKIN_MAX_NUMBER)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, path, _("%g is out of range"), *out);
  return TRUE;
}

static gboolean
get_dtype (Loader      *loader,
           json_object *obj,
           const char  *path,
           gboolean    *has,
           NapkinDtype *out)
{
  const char *text;

  if (!get_string (loader, obj, "dtype", path, has == NULL, &text))
    return FALSE;
  if (has != NULL)
    *has = text != NULL;
  if (text == NULL)
    return TRUE;

  if (!napkin_dtype_from_string (text, out))
    {
      g_autofree char *p = g_strdup_printf ("%s.dtype", path);
      g_autofree char *shown = g_strescape (text, NULL);

      return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p,
                   _("unknown element type “%.40s” (fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2, int8)"),
                   shown);
    }
  return TRUE;
}

/* A list of axis names, each of which must be declared. */
static gboolean
get_axis_list (Loader         *loader,
               NapkinDiagram  *diagram,
               json_object    *obj,
               const char     *key,
               const char     *path,
               gboolean        required,
               char         ***out)
{
  json_object *value = member (obj, key);
  g_autofree char *p = g_strdup_printf ("%s.%s", path, key);
  GPtrArray *names;
  size_t n;

  *out = NULL;
  if (value == NULL)
    {
      if (required)
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path, _("missing field “%s”"), key);
      return TRUE;
    }
  if (!expect_type (loader, value, json_type_array, p))
    return FALSE;

  n = json_object_array_length (value);
  if (n > NAPKIN_MAX_RANK)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, p, _("%zu axes; at most %d are supported"),
                 n, NAPKIN_MAX_RANK);

  names = g_ptr_array_new_with_free_func (g_free);
  for (size_t i = 0; i < n; i++)
    {
      json_object *item = json_object_array_get_idx (value, i);
      g_autofree char *ip = g_strdup_printf ("%s[%zu]", p, i);
      const char *name;

      if (!expect_type (loader, item, json_type_string, ip))
        break;
      name = json_object_get_string (item);
      if (loader_find (loader, NAPKIN_ITEM_AXIS, name) < 0)
        {
          g_autofree char *shown = g_strescape (name, NULL);

          fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, ip, _("unknown axis “%.64s”"), shown);
          break;
        }
      for (guint j = 0; j < names->len; j++)
        if (strcmp (g_ptr_array_index (names, j), name) == 0)
          {
            fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, ip, _("axis “%s” appears twice"), name);
            break;
          }
      if (loader->failed)
        break;
      g_ptr_array_add (names, g_strdup (name));
    }

  if (loader->failed)
    {
      g_ptr_array_unref (names);
      return FALSE;
    }

  g_ptr_array_add (names, NULL);
  *out = (char **) g_ptr_array_free (names, FALSE);
  return TRUE;
}

/* The root's array `key`, found at [span[0], span[1]) (0, 0: absent), to read
 * element by element. */
static Elements *
get_array (Loader      *loader,
           Elements    *elements,
           const gsize *span,
           const char  *key,
           gboolean     required)
{
  gsize vs, ve;

  if (span[1] == 0)
    {
      if (required)
        fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, "$", _("missing field “%s”"), key);
      return NULL;
    }
  if (loader->data[span[0]] != '[')
    {
      fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, key, _("expected an array, found %s"),
            span_type_name (loader, span[0], span[1]));
      return NULL;
    }
  elements->start = span[0];
  elements->end = span[1];
  napkin_json_iter_init (&elements->iter, loader->data, span[1], span[0]);
  while (napkin_json_iter_next (&elements->iter, &vs, &ve))
    elements->length++;
  napkin_json_iter_init (&elements->iter, loader->data, span[1], span[0]);
  return elements;
}

static gboolean
check_unique (Loader        *loader,
              NapkinDiagram *diagram,
              NapkinItemKind kind,
              const char    *key,
              const char    *path,
              const char    *what)
{
  if (loader_find (loader, kind, key) >= 0)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, path, _("an earlier %s is also called “%s”"), what, key);
  return TRUE;
}

static void
load_axes (Loader        *loader,
           NapkinDiagram *diagram,
           Elements      *array)
{
  static const char *known[] = { "name", "size", NULL };

  if (array && elements_length (array) > NAPKIN_MAX_AXES)
    fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, "axes", _("%zu axes; at most %d are supported"),
          elements_length (array), NAPKIN_MAX_AXES);

  for (size_t i = 0; array && !loader->failed && i < elements_length (array); i++)
    {
      json_object *obj = elements_get (loader, array, i, known);
      g_autofree char *path = g_strdup_printf ("axes[%zu]", i);
      g_autofree char *size_path = g_strdup_printf ("axes[%zu].size", i);
      json_object *size_obj;
      const char *name;
      NapkinAxis *axis;
      gint64 size;

      if (!expect_type (loader, obj, json_type_object, path)
          || !get_name (loader, obj, "name", path, &name))
        return;
      size_obj = member (obj, "size");
      if (size_obj == NULL)
        {
          fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path, _("missing field “size”"));
          return;
        }
      if (!get_int (loader, size_obj, size_path, 1, NAPKIN_MAX_AXIS_SIZE, &size)
          || !check_unique (loader, diagram, NAPKIN_ITEM_AXIS, name, path, "axis"))
        return;

      axis = g_new0 (NapkinAxis, 1);
      axis->name = g_strdup (name);
      axis->size = size;
      axis->extra = collect_extra (obj, known);
      loader_append (loader, diagram, NAPKIN_ITEM_AXIS, axis);
    }
}

static void
load_tensors (Loader        *loader,
              NapkinDiagram *diagram,
              Elements      *array)
{
  static const char *known[] = { "name", "axes", "dtype", NULL };

  for (size_t i = 0; array && !loader->failed && i < elements_length (array); i++)
    {
      json_object *obj = elements_get (loader, array, i, known);
      g_autofree char *path = g_strdup_printf ("tensors[%zu]", i);
      g_auto(GStrv) axes = NULL;
      NapkinTensor *tensor;
      const char *name;
      NapkinDtype dtype;

      if (!expect_type (loader, obj, json_type_object, path)
          || !get_name (loader, obj, "name", path, &name)
          || !get_axis_list (loader, diagram, obj, "axes", path, TRUE, &axes)
          || !get_dtype (loader, obj, path, NULL, &dtype)
          || !check_unique (loader, diagram, NAPKIN_ITEM_TENSOR, name, path, "tensor"))
        return;

      tensor = g_new0 (NapkinTensor, 1);
      tensor->name = g_strdup (name);
      tensor->axes = g_steal_pointer (&axes);
      tensor->dtype = dtype;
      tensor->extra = collect_extra (obj, known);
      loader_append (loader, diagram, NAPKIN_ITEM_TENSOR, tensor);
    }
}

/* Each parser writes its own enum type through the pointer. */
typedef gboolean (*NapkinEnumParse) (const char *text, gpointer out);

static gboolean
load_enum_field (Loader      *loader,
                 json_object *obj,
                 const char  *key,
                 const char  *path,
                 NapkinEnumParse parse,
                 const char  *choices,
                 gpointer     out)
{
  const char *text;

  if (!get_string (loader, obj, key, path, TRUE, &text))
    return FALSE;
  if (!parse (text, out))
    {
      g_autofree char *p = g_strdup_printf ("%s.%s", path, key);
      g_autofree char *shown = g_strescape (text, NULL);

      return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p, _("unknown value “%.40s” (%s)"), shown, choices);
    }
  return TRUE;
}

static gboolean
load_axis_key (Loader         *loader,
               json_object    *obj,
               const char     *key,
               const char     *path,
               char          **out)
{
  const char *name;

  if (!get_string (loader, obj, key, path, TRUE, &name))
    return FALSE;
  if (loader_find (loader, NAPKIN_ITEM_AXIS, name) < 0)
    {
      g_autofree char *p = g_strdup_printf ("%s.%s", path, key);
      g_autofree char *shown = g_strescape (name, NULL);

      return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p, _("unknown axis “%.64s”"), shown);
    }
  *out = g_strdup (name);
  return TRUE;
}

static gboolean
load_axis_field (Loader         *loader,
                 NapkinDiagram  *diagram,
                 json_object    *obj,
                 const char     *path,
                 char          **out)
{
  return load_axis_key (loader, obj, "axis", path, out);
}

/* An optional integer field of a mask; absent keeps *out. */
static gboolean
load_mask_int (Loader      *loader,
               json_object *obj,
               const char  *key,
               const char  *path,
               gint64       min,
               gint64      *out)
{
  json_object *value = member (obj, key);
  g_autofree char *p = NULL;

  if (value == NULL)
    return TRUE;
  p = g_strdup_printf ("%s.%s", path, key);
  if (min == -1 && json_object_get_type (value) == json_type_int && json_object_get_int64 (value) < -1)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p,
                 "a window side is a number of keys (0 or more), or -1 for no bound; found %" G_GINT64_FORMAT,
                 json_object_get_int64 (value));
  return get_int (loader, value, p, min, NAPKIN_MAX_AXIS_SIZE, out);
}

/* "exp": "sfu" | "fma" and "exp_fraction" (fma only, default 1) on a softmax or an
 * exp map: which units compute the exponentials (docs/file-format.md). */
static void
load_exp_unit (Loader      *loader,
               json_object *obj,
               const char  *path,
               NapkinNode  *node)
{
  json_object *value;
  const char *unit = NULL;

  if ((value = member (obj, "exp")) != NULL)
    {
      g_autofree char *p = g_strdup_printf ("%s.exp", path);

      if (!expect_type (loader, value, json_type_string, p))
        return;
      unit = json_object_get_string (value);
      if (strcmp (unit, "sfu") != 0 && strcmp (unit, "fma") != 0)
        {
          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, "“%s”: exponentials run on sfu or fma", unit);
          return;
        }
      node->exp_fma = strcmp (unit, "fma") == 0 ? 1.0 : 0.0;
    }
  if ((value = member (obj, "exp_fraction")) != NULL)
    {
      g_autofree char *p = g_strdup_printf ("%s.exp_fraction", path);
      double f;

      if (g_strcmp0 (unit, "fma") != 0)
        fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, "exp_fraction needs \"exp\": \"fma\"");
      else if (get_double (loader, value, p, &f))
        {
          if (!(f > 0 && f <= 1))
            fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, "%g: the fraction on the FMA units is in (0, 1]", f);
          else
            node->exp_fma = f;
        }
    }
}

/* An optional field and, where it is there, its path (for the caller to free). */
static json_object *
optional_field (json_object *obj,
                const char  *key,
                const char  *path,
                char       **field_path)
{
  json_object *value = member (obj, key);

  *field_path = value != NULL ? g_strdup_printf ("%s.%s", path, key) : NULL;
  return value;
}

/* An optional number field: TRUE where it is absent or read into *out. */
static gboolean
get_double_key (Loader      *loader,
                json_object *obj,
                const char  *key,
                const char  *path,
                double      *out)
{
  g_autofree char *p = NULL;
  json_object *value = optional_field (obj, key, path, &p);

  return value == NULL || get_double (loader, value, p, out);
}

/* A map's factor: a number, or an expression of axis sizes ("1/sqrt(d)") that follows
 * them (docs/file-format.md, "Expressions"), evaluated at the file's sizes. */
static void
load_alpha (Loader        *loader,
            NapkinDiagram *diagram,
            json_object   *obj,
            const char    *path,
            NapkinNode    *node)
{
  g_autofree char *p = NULL;
  json_object *value = optional_field (obj, "alpha", path, &p);
  g_autoptr(NapkinExpr) expr = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) names = NULL;
  const char *text;

  if (value == NULL || is_raw (value) || json_object_get_type (value) != json_type_string)
    {
      get_double_key (loader, obj, "alpha", path, &node->alpha);
      return;
    }
  text = json_object_get_string (value);
  expr = napkin_expr_parse (text, &error);
  if (expr == NULL)
    {
      fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, _("not a number or an expression of axis sizes: %s"),
            error->message);
      return;
    }
  names = napkin_expr_names (expr);
  for (guint i = 0; names[i] != NULL; i++)
    if (loader_find (loader, NAPKIN_ITEM_AXIS, names[i]) < 0)
      {
        g_autofree char *shown = g_strescape (names[i], NULL);

        fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p, _("unknown axis “%.64s” in “%.64s”"), shown, text);
        return;
      }
  node->alpha_expr = g_strdup (text);
  napkin_diagram_eval_alpha (diagram, node, NULL);
}

/* An input's or output's tensor, which the tensors list must hold. */
static void
load_node_tensor (Loader      *loader,
                  json_object *obj,
                  const char  *path,
                  NapkinNode  *node)
{
  const char *tensor;

  if (!get_string (loader, obj, "tensor", path, TRUE, &tensor))
    return;
  if (loader_find (loader, NAPKIN_ITEM_TENSOR, tensor) < 0)
    {
      g_autofree char *p = g_strdup_printf ("%s.tensor", path);
      g_autofree char *shown = g_strescape (tensor, NULL);

      fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p, _("unknown tensor “%.64s”"), shown);
      return;
    }
  node->tensor = g_strdup (tensor);
}

/* A mask's kind, axes and offsets. */
static void
load_node_mask (Loader      *loader,
                json_object *obj,
                const char  *path,
                NapkinNode  *node)
{
  if (!load_enum_field (loader, obj, "mask", path, (NapkinEnumParse) napkin_mask_from_string,
                        "causal, window, tensor", &node->mask))
    return;
  /* A tensor mask is broadcast over the scores; it needs no axes. */
  if (node->mask != NAPKIN_MASK_TENSOR
      && (!load_axis_key (loader, obj, "axis", path, &node->axis)
          || !load_axis_key (loader, obj, "rows", path, &node->rows)))
    return;
  if (!load_mask_int (loader, obj, "offset", path, -NAPKIN_MAX_AXIS_SIZE, &node->offset))
    return;
  if (node->mask == NAPKIN_MASK_WINDOW
      && (!load_mask_int (loader, obj, "left", path, -1, &node->left)
          || !load_mask_int (loader, obj, "right", path, -1, &node->right)))
    return;
}

/* The fields of the node's kind. */
static void
load_node_fields (Loader        *loader,
                  NapkinDiagram *diagram,
                  json_object   *obj,
                  const char    *path,
                  NapkinNode    *node,
                  const char    *fn_choices)
{
  json_object *value;

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      load_node_tensor (loader, obj, path, node);
      break;

    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_REARRANGE:
      get_axis_list (loader, diagram, obj, "out", path, TRUE, &node->out);
      break;

    case NAPKIN_OP_MAP:
      if (!load_enum_field (loader, obj, "fn", path, (NapkinEnumParse) napkin_fn_from_string,
                            fn_choices, &node->fn))
        break;
      if (!get_axis_list (loader, diagram, obj, "out", path, FALSE, &node->out))
        break;
      load_alpha (loader, diagram, obj, path, node);
      if (node->fn == NAPKIN_FN_EXP)
        load_exp_unit (loader, obj, path, node);
      else if (member (obj, "exp") || member (obj, "exp_fraction"))
        fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, path, "“exp” applies to a softmax or an exp map only");
      break;

    case NAPKIN_OP_REDUCE:
      if (load_enum_field (loader, obj, "op", path, (NapkinEnumParse) napkin_reduce_from_string,
                           "sum, max, mean", &node->reduce))
        load_axis_field (loader, diagram, obj, path, &node->axis);
      break;

    case NAPKIN_OP_SOFTMAX:
      if (load_axis_field (loader, diagram, obj, path, &node->axis))
        load_exp_unit (loader, obj, path, node);
      break;

    case NAPKIN_OP_NORMALIZE:
      if (!load_enum_field (loader, obj, "norm", path, (NapkinEnumParse) napkin_norm_from_string,
                            "layernorm, rmsnorm", &node->norm)
          || !load_axis_field (loader, diagram, obj, path, &node->axis))
        break;
      if ((value = member (obj, "eps")) != NULL)
        {
          g_autofree char *p = g_strdup_printf ("%s.eps", path);

          if (get_double (loader, value, p, &node->eps) && !(node->eps > 0 && node->eps < 1))
            fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, _("eps must be between 0 and 1"));
        }
      break;

    case NAPKIN_OP_MASK:
      load_node_mask (loader, obj, path, node);
      break;

    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }
}

/* One node: its id, kind and place, then its kind's fields. FALSE stops the list. */
static gboolean
load_node (Loader             *loader,
           NapkinDiagram      *diagram,
           json_object        *obj,
           const char         *path,
           const char        **known,
           const char         *fn_choices)
{
  NapkinNode *node;
  const char *id, *label, *kind_text;
  NapkinOpKind kind;

  if (!expect_type (loader, obj, json_type_object, path)
      || !get_name (loader, obj, "id", path, &id)
      || !check_unique (loader, diagram, NAPKIN_ITEM_NODE, id, path, "operation")
      || !get_string (loader, obj, "kind", path, TRUE, &kind_text))
    return FALSE;
  if (!napkin_op_kind_from_string (kind_text, &kind))
    {
      g_autofree char *p = g_strdup_printf ("%s.kind", path);
      g_autofree char *shown = g_strescape (kind_text, NULL);

      fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p,
            _("unknown operation “%.40s” (input, output, contract, map, reduce, softmax, "
            "normalize, rearrange, mask)"), shown);
      return FALSE;
    }
  if (!get_string (loader, obj, "label", path, FALSE, &label))
    return FALSE;

  node = napkin_node_new (id, kind);
  node->label = g_strdup (label);
  node->extra = collect_extra (obj, known);
  /* Added first so that a failure below frees it with the diagram. */
  loader_append (loader, diagram, NAPKIN_ITEM_NODE, node);

  if (!get_double_key (loader, obj, "x", path, &node->x)
      || !get_double_key (loader, obj, "y", path, &node->y)
      || !get_dtype (loader, obj, path, &node->has_dtype, &node->dtype))
    return FALSE;
  load_node_fields (loader, diagram, obj, path, node, fn_choices);
  return TRUE;
}

static void
load_nodes (Loader        *loader,
            NapkinDiagram *diagram,
            Elements      *array)
{
  static const char *known[] = {
    "id", "kind", "label", "x", "y", "tensor", "out", "axis", "fn", "alpha", "op", "norm", "eps",
    "dtype", "mask", "rows", "offset", "left", "right", "exp", "exp_fraction", NULL,
  };
  GString *fn_choices = g_string_new (NULL);

  for (guint i = 0; i < NAPKIN_N_FNS; i++)
    g_string_append_printf (fn_choices, "%s%s", i ? ", " : "", napkin_fn_info (i)->name);

  if (array && elements_length (array) > NAPKIN_MAX_NODES)
    fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, "nodes", _("%zu operations; at most %d are supported"),
          elements_length (array), NAPKIN_MAX_NODES);

  for (size_t i = 0; array && !loader->failed && i < elements_length (array); i++)
    {
      json_object *obj = elements_get (loader, array, i, known);
      g_autofree char *path = g_strdup_printf ("nodes[%zu]", i);

      if (!load_node (loader, diagram, obj, path, known, fn_choices->str))
        break;
    }

  g_string_free (fn_choices, TRUE);
}

static void
free_wire_item (NapkinWire *wire)
{
  napkin_item_free (NAPKIN_ITEM_WIRE, wire);
}

static void
load_wires (Loader        *loader,
            NapkinDiagram *diagram,
            Elements      *array)
{
  static const char *known[] = { "from", "to", "port", NULL };

  for (size_t i = 0; array && !loader->failed && i < elements_length (array); i++)
    {
      json_object *obj = elements_get (loader, array, i, known);
      g_autofree char *path = g_strdup_printf ("wires[%zu]", i);
      const char *from, *to;
      json_object *port_obj;
      gint64 port = 0;
      NapkinWire *wire;
      int from_index, to_index;
      const NapkinNode *target;

      if (!expect_type (loader, obj, json_type_object, path)
          || !get_string (loader, obj, "from", path, TRUE, &from)
          || !get_string (loader, obj, "to", path, TRUE, &to))
        return;

      from_index = loader_find (loader, NAPKIN_ITEM_NODE, from);
      to_index = loader_find (loader, NAPKIN_ITEM_NODE, to);
      if (from_index < 0 || to_index < 0)
        {
          g_autofree char *p = g_strdup_printf ("%s.%s", path, from_index < 0 ? "from" : "to");
          g_autofree char *shown = g_strescape (from_index < 0 ? from : to, NULL);

          fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p,
                _("dangling wire: no operation “%.64s”"), shown);
          return;
        }

      if ((port_obj = member (obj, "port")) != NULL)
        {
          g_autofree char *p = g_strdup_printf ("%s.port", path);

          if (!get_int (loader, port_obj, p, 0, 1, &port))
            return;
        }

      target = napkin_diagram_node (diagram, to_index);
      if ((guint) port >= napkin_op_n_inputs (target))
        {
          g_autofree char *p = g_strdup_printf ("%s.port", path);

          g_autofree char *ord = napkin_describe_ordinal ((guint) port);

          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p,
                "the %s “%s” has %u input%s: it has no %s input (port %" G_GINT64_FORMAT ")",
                napkin_describe_kind (target->kind), to, napkin_op_n_inputs (target),
                napkin_op_n_inputs (target) == 1 ? "" : "s", ord, port);
          return;
        }
      if (napkin_diagram_node (diagram, from_index)->kind == NAPKIN_OP_OUTPUT)
        {
          g_autofree char *p = g_strdup_printf ("%s.from", path);

          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p,
                _("“%s” is an output: nothing can be wired from it"), from);
          return;
        }
      wire = g_new0 (NapkinWire, 1);
      wire->from = g_strdup (from);
      wire->to = g_strdup (to);
      wire->port = port;
      {
        g_autofree char *key = napkin_item_key (NAPKIN_ITEM_WIRE, wire);

        if (loader_find (loader, NAPKIN_ITEM_WIRE, key) >= 0)
          g_clear_pointer (&wire, free_wire_item);
      }
      if (wire == NULL)
        {
          g_autofree char *ord = napkin_describe_ordinal ((guint) port);

          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, path,
                _("the %s input of “%s” already has a wire"), ord, to);
          return;
        }

      wire->extra = collect_extra (obj, known);
      loader_append (loader, diagram, NAPKIN_ITEM_WIRE, wire);
    }
}

static gboolean
load_mark (Loader        *loader,
           NapkinRegion  *region,
           const char    *axis,
           json_object   *value,
           const char    *path,
           gboolean       gpus)
{
  /* across GPUs the count is the analysis's, so the mark has no size (docs/multi-gpu.md) */
  if (gpus)
    {
      const char *word = json_object_get_type (value) == json_type_string ? json_object_get_string (value) : "";

      if (strcmp (word, "parallel") == 0)
        napkin_region_set_mark (region, axis, NAPKIN_MARK_PARALLEL, 0);
      else if (strcmp (word, "whole") == 0)
        napkin_region_set_mark (region, axis, NAPKIN_MARK_WHOLE, 0);
      else
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path,
                     "a mark of a gpus region is \"parallel\" (across every GPU) or \"whole\"");
      return TRUE;
    }
  if (json_object_get_type (value) == json_type_string)
    {
      if (strcmp (json_object_get_string (value), "whole") != 0)
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path,
                     _("a mark is \"whole\", {\"parallel\": SIZE} or {\"stream\": SIZE}"));
      napkin_region_set_mark (region, axis, NAPKIN_MARK_WHOLE, 0);
      return TRUE;
    }

  if (json_object_get_type (value) != json_type_object || json_object_object_length (value) != 1)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path,
                 _("a mark is \"whole\", {\"parallel\": SIZE} or {\"stream\": SIZE}"));

  json_object_object_foreach (value, key, size_obj)
    {
      NapkinMarkKind kind;
      g_autofree char *p = g_strdup_printf ("%s.%s", path, key);
      gint64 tile;

      if (!napkin_mark_from_string (key, &kind) || kind == NAPKIN_MARK_WHOLE)
        {
          g_autofree char *shown = g_strescape (key, NULL);

          return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path,
                       _("unknown mark “%.40s” (parallel, stream)"), shown);
        }
      if (json_object_get_type (size_obj) == json_type_int && json_object_get_int64 (size_obj) <= 0)
        return fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p,
                     _("tile size must be positive, found %s"), json_object_to_json_string (size_obj));
      if (!get_int (loader, size_obj, p, 1, NAPKIN_MAX_AXIS_SIZE, &tile))
        return FALSE;
      napkin_region_set_mark (region, axis, kind, tile);
    }

  return TRUE;
}

/* The fields only a gpus region has: its GPU count, the tensors' placements and the
 * overlap (docs/file-format.md, "The gpus region"). */
static gboolean
load_gpus_fields (Loader           *loader,
                  NapkinDiagram    *diagram,
                  NapkinGpusRegion *gpus,
                  json_object      *obj,
                  const char       *path)
{
  json_object *value;

  if ((value = member (obj, "gpus")) != NULL)
    {
      g_autofree char *p = g_strdup_printf ("%s.gpus", path);
      gint64 n;

      if (!get_int (loader, value, p, 1, 1024, &n))
        return FALSE;
      gpus->gpus = n;
    }
  if ((value = member (obj, "placements")) != NULL)
    {
      g_autofree char *p = g_strdup_printf ("%s.placements", path);

      if (!expect_type (loader, value, json_type_object, p))
        return FALSE;
      json_object_object_foreach (value, tensor, place)
        {
          g_autofree char *tp = g_strdup_printf ("%s.%s", p, tensor);
          int t = loader_find (loader, NAPKIN_ITEM_TENSOR, tensor);
          NapkinPlacement placement = { NULL, NULL };
          json_object *split = NULL;

          if (t < 0)
            {
              g_autofree char *shown = g_strescape (tensor, NULL);

              return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p, "unknown tensor “%.64s”", shown);
            }
          if (json_object_get_type (place) == json_type_string
              && strcmp (json_object_get_string (place), "replicated") == 0)
            ;
          else if (json_object_get_type (place) == json_type_object && json_object_object_length (place) == 1
                   && json_object_object_get_ex (place, "split", &split))
            {
              g_autofree char *sp = g_strdup_printf ("%s.split", tp);
              const NapkinTensor *nt = napkin_diagram_tensor (diagram, t);
              const char *axis;

              if (!expect_type (loader, split, json_type_string, sp))
                return FALSE;
              axis = json_object_get_string (split);
              if (nt->axes == NULL || !g_strv_contains ((const char * const *) nt->axes, axis))
                {
                  g_autofree char *shown = g_strescape (axis, NULL);

                  return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, sp,
                               "“%.64s” is not an axis of tensor “%s”", shown, tensor);
                }
              placement.split = g_strdup (axis);
            }
          else
            return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, tp,
                         "a placement is \"replicated\" or {\"split\": AXIS}");
          placement.tensor = g_strdup (tensor);
          g_array_append_val (gpus->placements, placement);
        }
    }
  if ((value = member (obj, "overlap")) != NULL)
    {
      static const char *overlap_known[] = { "chunks", "axis", "comm_sms", NULL };
      g_autofree char *p = g_strdup_printf ("%s.overlap", path);
      g_autofree char *cp = g_strdup_printf ("%s.overlap.chunks", path);
      g_autofree char *ap = g_strdup_printf ("%s.overlap.axis", path);
      json_object *chunks = NULL, *axis = NULL;
      gint64 k;

      if (!expect_type (loader, value, json_type_object, p))
        return FALSE;
      if (!json_object_object_get_ex (value, "chunks", &chunks))
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p, "missing field “chunks”");
      if (!get_int (loader, chunks, cp, 2, 64, &k))
        return FALSE;
      if (!json_object_object_get_ex (value, "axis", &axis))
        return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p, "missing field “axis”");
      if (!expect_type (loader, axis, json_type_string, ap))
        return FALSE;
      if (loader_find (loader, NAPKIN_ITEM_AXIS, json_object_get_string (axis)) < 0)
        {
          g_autofree char *shown = g_strescape (json_object_get_string (axis), NULL);

          return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, ap, "unknown axis “%.64s”", shown);
        }
      gpus->chunks = k;
      gpus->chunk_axis = g_strdup (json_object_get_string (axis));
      if (json_object_object_get_ex (value, "comm_sms", &chunks))
        {
          g_autofree char *sp = g_strdup_printf ("%s.overlap.comm_sms", path);

          if (!get_int (loader, chunks, sp, 0, 1024, &k))
            return FALSE;
          gpus->comm_sms = k;
        }
      gpus->overlap_extra = collect_extra (value, overlap_known);
    }
  return TRUE;
}

/* An optional integer field: TRUE where it is absent or read into *out. */
static gboolean
get_int_key (Loader      *loader,
             json_object *obj,
             const char  *key,
             const char  *path,
             gint64       min,
             gint64       max,
             gint64      *out)
{
  g_autofree char *p = NULL;
  json_object *value = optional_field (obj, key, path, &p);

  return value == NULL || get_int (loader, value, p, min, max, out);
}

/* The region itself, from its name and level: a gpus region (the level above device
 * memory) or one on a GPU. NULL where it fails. */
static NapkinRegion *
load_region_head (Loader             *loader,
                  NapkinDiagram      *diagram,
                  json_object        *obj,
                  const char         *path,
                  size_t              i,
                  size_t              n_regions,
                  const char        **known,
                  const char        **gpus_known,
                  NapkinGpusRegion  **gpus)
{
  json_object *value;
  const char *name;
  NapkinLevel level;
  NapkinRegion *region;

  if (!get_name (loader, obj, "name", path, &name)
      || !check_unique (loader, diagram, NAPKIN_ITEM_REGION, name, path, "region"))
    return NULL;
  value = member (obj, "level");
  if (value != NULL && json_object_get_type (value) == json_type_string
      && strcmp (json_object_get_string (value), "gpus") == 0)
    {
      /* the level above device memory: kept apart from one GPU's regions, and last
       * in the list so that the others keep their indices (docs/multi-gpu.md) */
      if (napkin_diagram_get_gpus (diagram) != NULL)
        {
          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, path,
                "a second gpus region; a diagram has at most one");
          return NULL;
        }
      if (i + 1 != n_regions)
        {
          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, path,
                "the gpus region must be the last of the regions (it is the outermost)");
          return NULL;
        }
      *gpus = napkin_gpus_region_new (name);
      (*gpus)->position = i;
      region = (*gpus)->region;
      region->extra = collect_extra (obj, gpus_known);
      napkin_diagram_set_gpus (diagram, *gpus);
      return region;
    }
  if (!load_enum_field (loader, obj, "level", path, (NapkinEnumParse) napkin_level_from_string,
                        "l2, smem, registers, gpus", &level))
    return NULL;
  region = napkin_region_new (name, level);
  region->extra = collect_extra (obj, known);
  loader_append (loader, diagram, NAPKIN_ITEM_REGION, region);
  return region;
}

/* The region's operations: known ids, each once; listed is scratch space. */
static gboolean
load_region_nodes (Loader       *loader,
                   NapkinRegion *region,
                   json_object  *obj,
                   const char   *path,
                   GHashTable   *listed)
{
  json_object *value = member (obj, "nodes");

  if (value == NULL)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, path, _("missing field “nodes”"));
  {
    g_autofree char *p = g_strdup_printf ("%s.nodes", path);
    if (!expect_type (loader, value, json_type_array, p))
      return FALSE;
  }
  g_hash_table_remove_all (listed);  /* ids of this region, against duplicates */
  for (size_t j = 0; j < json_object_array_length (value); j++)
    {
      json_object *item = json_object_array_get_idx (value, j);
      g_autofree char *p = g_strdup_printf ("%s.nodes[%zu]", path, j);
      const char *id;

      if (!expect_type (loader, item, json_type_string, p))
        return FALSE;
      id = json_object_get_string (item);
      if (loader_find (loader, NAPKIN_ITEM_NODE, id) < 0)
        {
          g_autofree char *shown = g_strescape (id, NULL);

          return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p, _("unknown operation “%.64s”"), shown);
        }
      if (!g_hash_table_add (listed, (gpointer) id))
        return fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, _("operation “%s” is listed twice"), id);
      napkin_region_add_node (region, id);
    }
  return TRUE;
}

/* The region's marks, one per known axis. */
static gboolean
load_region_marks (Loader       *loader,
                   NapkinRegion *region,
                   json_object  *obj,
                   const char   *path,
                   gboolean      gpus)
{
  json_object *value = member (obj, "marks");
  g_autofree char *p = NULL;

  if (value == NULL)
    return TRUE;
  p = g_strdup_printf ("%s.marks", path);
  if (!expect_type (loader, value, json_type_object, p))
    return FALSE;
  json_object_object_foreach (value, axis, mark)
    {
      g_autofree char *mp = g_strdup_printf ("%s.marks.%s", path, axis);

      if (loader_find (loader, NAPKIN_ITEM_AXIS, axis) < 0)
        {
          g_autofree char *shown = g_strescape (axis, NULL);

          return fail (loader, NAPKIN_DOCUMENT_ERROR_REFERENCE, p, _("unknown axis “%.64s”"), shown);
        }
      if (!load_mark (loader, region, axis, mark, mp, gpus))
        return FALSE;
    }
  return TRUE;
}

/* Where the editor draws the region: [x, y, width, height]. */
static gboolean
load_region_rect (Loader       *loader,
                  NapkinRegion *region,
                  json_object  *obj,
                  const char   *path)
{
  json_object *value = member (obj, "rect");
  g_autofree char *p = NULL;
  double r[4];

  if (value == NULL)
    return TRUE;
  p = g_strdup_printf ("%s.rect", path);
  if (!expect_type (loader, value, json_type_array, p))
    return FALSE;
  if (json_object_array_length (value) != 4)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, p, _("expected [x, y, width, height]"));
  for (guint j = 0; j < 4; j++)
    {
      g_autofree char *ip = g_strdup_printf ("%s[%u]", p, j);

      if (!get_double (loader, json_object_array_get_idx (value, j), ip, &r[j]))
        return FALSE;
    }
  if (r[2] < 0 || r[3] < 0)
    return fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, p, _("width and height must not be negative"));
  region->has_rect = TRUE;
  region->x = r[0];
  region->y = r[1];
  region->width = r[2];
  region->height = r[3];
  return TRUE;
}

static void
load_regions (Loader        *loader,
              NapkinDiagram *diagram,
              Elements      *array)
{
  static const char *known[] = { "name", "level", "nodes", "marks", "stages", "threads", "rect", NULL };
  static const char *gpus_known[] = { "name", "level", "nodes", "marks", "gpus", "placements", "overlap", "rect", NULL };
  g_autoptr(GHashTable) listed = g_hash_table_new (g_str_hash, g_str_equal);

  if (array && elements_length (array) > NAPKIN_MAX_REGIONS)
    fail (loader, NAPKIN_DOCUMENT_ERROR_LIMIT, "regions", _("%zu regions; at most %d are supported"),
          elements_length (array), NAPKIN_MAX_REGIONS);

  for (size_t i = 0; array && !loader->failed && i < elements_length (array); i++)
    {
      json_object *obj = elements_get (loader, array, i, known);
      g_autofree char *path = g_strdup_printf ("regions[%zu]", i);
      NapkinRegion *region;
      NapkinGpusRegion *gpus = NULL;
      gint64 stages = 0, threads = 0;

      if (!expect_type (loader, obj, json_type_object, path))
        return;
      region = load_region_head (loader, diagram, obj, path, i, elements_length (array), known, gpus_known, &gpus);
      if (region == NULL
          || !load_region_nodes (loader, region, obj, path, listed)
          || !load_region_marks (loader, region, obj, path, gpus != NULL))
        return;
      if (gpus != NULL && !load_gpus_fields (loader, diagram, gpus, obj, path))
        return;
      if (gpus == NULL)
        {
          if (!get_int_key (loader, obj, "stages", path, 1, 8, &stages))
            return;
          if (stages > 0)
            region->stages = stages;
          if (!get_int_key (loader, obj, "threads", path, 1, 1024, &threads))
            return;
          if (threads > 0)
            region->threads = threads;
        }
      if (!load_region_rect (loader, region, obj, path))
        return;
    }
}

static void
load_view (Loader        *loader,
           NapkinDiagram *diagram,
           json_object   *root)
{
  static const char *known[] = { "zoom", "scroll", NULL };
  json_object *obj = member (root, "view");
  NapkinView *view = napkin_diagram_get_view (diagram);
  json_object *value;

  if (obj == NULL || !expect_type (loader, obj, json_type_object, "view"))
    return;

  if ((value = member (obj, "zoom")) != NULL)
    {
      if (!get_double (loader, value, "view.zoom", &view->zoom))
        return;
      if (view->zoom < 0.01 || view->zoom > 100)
        {
          fail (loader, NAPKIN_DOCUMENT_ERROR_INVALID, "view.zoom", _("zoom must be from 0.01 to 100"));
          return;
        }
    }
  if ((value = member (obj, "scroll")) != NULL)
    {
      if (!expect_type (loader, value, json_type_array, "view.scroll"))
        return;
      if (json_object_array_length (value) != 2)
        {
          fail (loader, NAPKIN_DOCUMENT_ERROR_FORMAT, "view.scroll", _("expected [x, y]"));
          return;
        }
      if (!get_double (loader, json_object_array_get_idx (value, 0), "view.scroll[0]", &view->scroll_x)
          || !get_double (loader, json_object_array_get_idx (value, 1), "view.scroll[1]", &view->scroll_y))
        return;
    }
  view->extra = collect_extra (obj, known);
}

NapkinDiagram *
napkin_diagram_load_from_data (const char       *data,
                               gssize            length,
                               NapkinLoadFlags   flags,
                               GError          **error)
{
  static const char *known[] = {
    "format", "version", "title", "description", "axes", "tensors", "nodes", "wires", "regions",
    "view", NULL,
  };
  /* Read element by element rather than as one tree. */
  static const char *arrays[] = { "axes", "tensors", "nodes", "wires", "regions", NULL };
  gsize spans[2 * G_N_ELEMENTS (arrays)] = { 0 };
  g_auto(Elements) axes = { 0 };
  g_auto(Elements) tensors = { 0 };
  g_auto(Elements) nodes = { 0 };
  g_auto(Elements) wires = { 0 };
  g_auto(Elements) regions = { 0 };
  g_autoptr(json_object) root = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_auto(Loader) loader = { error, FALSE, NULL, { NULL } };
  gsize root_start, root_end;
  const char *text;
  json_object *value;
  gint64 version;

  g_return_val_if_fail (data != NULL, NULL);

  if (length < 0)
    length = strlen (data);
  if (length > NAPKIN_MAX_FILE_SIZE)
    {
      fail (&loader, NAPKIN_DOCUMENT_ERROR_LIMIT, "$", "the file is %" G_GSSIZE_FORMAT
            " bytes; at most %d are read", length, NAPKIN_MAX_FILE_SIZE);
      return NULL;
    }

  /* Syntax, nesting (bounded: no recursion) and text, before anything is built. */
  {
    g_autoptr(GError) check_error = NULL;

    if (!napkin_json_check (data, length, &root_start, &root_end, &check_error))
      {
        const char *colon = strstr (check_error->message, ": ");

        /* bad text: "nodes[3].label: WHAT", said again in words (fail) */
        if (g_error_matches (check_error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_FORMAT) && colon != NULL)
          {
            g_autofree char *path = g_strndup (check_error->message, colon - check_error->message);

            loader.data = data;
            loader.length = length;
            fail (&loader, check_error->code, path, "%s", colon + 2);
          }
        else
          {
            /* the scanner says what the text is not; the loader says what it wanted */
            g_prefix_error (&check_error, _("The file is not a Napkin diagram: it is "));
            g_propagate_error (error, g_steal_pointer (&check_error));
          }
        return NULL;
      }
  }
  loader.data = data;
  loader.length = length;
  loader.tokener = json_tokener_new_ex (NAPKIN_JSON_MAX_DEPTH);
  json_tokener_set_flags (loader.tokener, JSON_TOKENER_STRICT);
  loader.known_limit = KNOWN_LIMIT * (gsize) length + (4 << 20);
  loader.extra_budget = EXTRA_BUDGET * (gsize) length + (16 << 20);

  if (data[root_start] != '{')
    {
      fail (&loader, NAPKIN_DOCUMENT_ERROR_FORMAT, "$", _("expected an object, found %s"),
            span_type_name (&loader, root_start, root_end));
      return NULL;
    }
  root = read_object (&loader, root_start, root_end, known, arrays, spans);

  if (!get_string (&loader, root, "format", "$", TRUE, &text))
    return NULL;
  if (strcmp (text, "napkin") != 0)
    {
      g_autofree char *shown = g_strescape (text, NULL);

      fail (&loader, NAPKIN_DOCUMENT_ERROR_FORMAT, "format", _("expected \"napkin\", found \"%.40s\""), shown);
      return NULL;
    }

  value = member (root, "version");
  if (value == NULL)
    {
      fail (&loader, NAPKIN_DOCUMENT_ERROR_FORMAT, "$", _("missing field “version”"));
      return NULL;
    }
  if (!get_int (&loader, value, "version", 1, G_MAXINT32, &version))
    return NULL;
  if (version > NAPKIN_FORMAT_VERSION)
    {
      fail (&loader, NAPKIN_DOCUMENT_ERROR_VERSION, "version",
            "the file is format version %" G_GINT64_FORMAT "; this Napkin reads up to version %d",
            version, NAPKIN_FORMAT_VERSION);
      return NULL;
    }

  diagram = napkin_diagram_new ();
  g_signal_handlers_block_matched (diagram, G_SIGNAL_MATCH_ID, 0, 0, NULL, NULL, NULL);

  if (!get_string (&loader, root, "title", "$", FALSE, &text))
    return NULL;
  napkin_diagram_set_title (diagram, text);
  if (!get_string (&loader, root, "description", "$", FALSE, &text))
    return NULL;
  napkin_diagram_set_description (diagram, text);

  load_axes (&loader, diagram, get_array (&loader, &axes, &spans[0], "axes", TRUE));
  if (!loader.failed)
    load_tensors (&loader, diagram, get_array (&loader, &tensors, &spans[2], "tensors", FALSE));
  if (!loader.failed)
    load_nodes (&loader, diagram, get_array (&loader, &nodes, &spans[4], "nodes", TRUE));
  if (!loader.failed)
    load_wires (&loader, diagram, get_array (&loader, &wires, &spans[6], "wires", FALSE));
  if (!loader.failed)
    load_regions (&loader, diagram, get_array (&loader, &regions, &spans[8], "regions", FALSE));
  if (!loader.failed)
    load_view (&loader, diagram, root);
  if (loader.failed)
    return NULL;

  {
    json_object *extra = collect_extra (root, known);
    napkin_diagram_set_extra (diagram, extra);
    g_clear_pointer (&extra, json_object_put);
  }

  if ((flags & NAPKIN_LOAD_VALIDATE) && !napkin_diagram_validate (diagram, error))
    return NULL;

  return g_steal_pointer (&diagram);
}

/* Why a file that is not a regular one is refused, in words. */
static const char *
not_regular_reason (mode_t mode)
{
  if (S_ISDIR (mode))
    return _("it is a folder");
  if (S_ISFIFO (mode))
    return _("it is a pipe, not a regular file");
  if (S_ISCHR (mode) || S_ISBLK (mode))
    return _("it is a device, not a regular file");
  return _("not a regular file");
}

static void
read_failed (GError    **error,
             const char *shown,
             int         fd,
             int         saved)
{
  g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
               _("could not read “%s”: %s"), shown, g_strerror (saved));
  close (fd);
}

/* Opens without blocking (opening a pipe with no writer would wait forever) and
 * checks that the file is a regular one of at most `max` bytes. */
static int
open_regular (const char  *path,
              const char  *shown,
              gsize        max,
              GError     **error)
{
  struct stat st = { 0 };
  int fd = g_open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);

  if (fd >= 0)
    fcntl (fd, F_SETFD, FD_CLOEXEC);  /* not inherited by compilers and runners we spawn */
  if (fd < 0)
    {
      int saved = errno;

      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("could not open “%s”: %s"), shown, g_strerror (saved));
      return -1;
    }
  if (fstat (fd, &st) != 0)
    {
      read_failed (error, shown, fd, errno);
      return -1;
    }
  /* Only regular files: a pipe, a socket or a device can block or never end. */
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("could not read “%s”: %s"), shown, not_regular_reason (st.st_mode));
      close (fd);
      return -1;
    }
  if ((guint64) st.st_size > max)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                   _("“%s” is larger than %" G_GSIZE_FORMAT " bytes, the most Napkin reads"), shown, max);
      close (fd);
      return -1;
    }
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

char *
napkin_file_read_bounded (const char  *path,
                          gsize        max,
                          gsize       *length,
                          GError     **error)
{
  g_autoptr(GByteArray) buffer = NULL;
  g_autofree char *shown = NULL;
  int fd;

  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (max < G_MAXSIZE - 1, NULL);

  shown = napkin_text_shown (path, -1, 200);
  if ((fd = open_regular (path, shown, max, error)) < 0)
    return NULL;

  /* At most max + 1 bytes, so that a file that grows while it is read costs bounded
   * memory and still gets the size error. */
  buffer = g_byte_array_new ();
  while (buffer->len <= max)
    {
      guint8 chunk[65536];
      gssize n = read (fd, chunk, MIN (sizeof chunk, max + 1 - buffer->len));

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          read_failed (error, shown, fd, errno);
          return NULL;
        }
      if (n == 0)
        break;
      g_byte_array_append (buffer, chunk, n);
    }
  close (fd);
  if (buffer->len > max)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                   _("“%s” is larger than %" G_GSIZE_FORMAT " bytes, the most Napkin reads"), shown, max);
      return NULL;
    }

  if (length != NULL)
    *length = buffer->len;
  g_byte_array_append (buffer, (const guint8 *) "", 1);
  return (char *) g_byte_array_free (g_steal_pointer (&buffer), FALSE);
}

NapkinDiagram *
napkin_diagram_load_from_file (const char       *path,
                               NapkinLoadFlags   flags,
                               GError          **error)
{
  g_autofree char *contents = NULL;
  g_autoptr(GError) local_error = NULL;
  NapkinDiagram *diagram;
  gsize length;

  g_return_val_if_fail (path != NULL, NULL);

  contents = napkin_file_read_bounded (path, NAPKIN_MAX_FILE_SIZE, &length, &local_error);
  if (contents == NULL)
    {
      if (g_error_matches (local_error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT))
        g_prefix_error (&local_error, "$: ");
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }

  diagram = napkin_diagram_load_from_data (contents, length, flags, &local_error);
  if (diagram == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }

  return diagram;
}
