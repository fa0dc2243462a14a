/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The second libFuzzer target (build-aux/fuzz-long): the loader's JSON scanner
 * (src/core/napkin-json-scan.c) against json-c, differentially. Whatever the scanner
 * accepts, json-c's strict parser accepts too (the scanner is the stricter one), with
 * the same members and elements, and the walk over it finds each value's end. */
#define G_LOG_DOMAIN "napkin-fuzz"

#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <json-c/json.h>

#include "napkin-json-scan.h"

#define broken(...) G_STMT_START { g_printerr ("napkin-fuzz-json: invariant broken: " __VA_ARGS__); \
                                   g_printerr ("\n"); abort (); } G_STMT_END

static json_object *
parse (const char *text,
       gsize       length)
{
  json_tokener *tokener = json_tokener_new_ex (NAPKIN_JSON_MAX_DEPTH);
  /* A number at the very end needs something after it. */
  g_autofree char *copy = g_malloc (length + 2);
  json_object *obj;

  memcpy (copy, text, length);
  copy[length] = ' ';
  copy[length + 1] = '\0';
  json_tokener_set_flags (tokener, JSON_TOKENER_STRICT);
  obj = json_tokener_parse_ex (tokener, copy, (int) length + 1);
  if (obj == NULL && !(length == 4 && strncmp (text, "null", 4) == 0))
    broken ("json-c refused what the scan accepted (%s): %.*s",
            json_tokener_error_desc (json_tokener_get_error (tokener)), (int) MIN (length, 200), text);
  json_tokener_free (tokener);
  return obj;
}

/* Walks the value at [start, end) with the scanner and compares with json-c's tree. */
static void
compare (const char  *data,
         gsize        start,
         gsize        end,
         json_object *tree,
         guint        depth)
{
  NapkinJsonIter iter;
  gsize ks, ke, vs, ve, n = 0, values = 0;

  if (napkin_json_value_end (data, end, start) != end)
    broken ("a value's end differs: [%zu, %zu) but %zu: %.*s", start, end, napkin_json_value_end (data, end, start),
            (int) MIN (end - start, 80), data + start);
  napkin_json_tree_cost (data, start, end, &values);

  switch (data[start])
    {
    case '{':
      if (!json_object_is_type (tree, json_type_object))
        broken ("an object is not one to json-c");
      napkin_json_iter_init (&iter, data, end, start);
      while (napkin_json_iter_next_member (&iter, &ks, &ke, &vs, &ve))
        {
          g_autofree char *key = napkin_json_string_text (data, ks, ke);
          json_object *child = NULL;

          if (!g_utf8_validate (key, -1, NULL))
            broken ("a key is not UTF-8");
          if (!json_object_object_get_ex (tree, key, &child))
            broken ("key “%s” is not in json-c's object", key);
          /* json-c keeps the last of duplicate keys: compare only that one */
          {
            NapkinJsonIter later = iter;
            gsize ks2, ke2, vs2, ve2;
            gboolean duplicate = FALSE;

            while (!duplicate && napkin_json_iter_next_member (&later, &ks2, &ke2, &vs2, &ve2))
              {
                g_autofree char *key2 = napkin_json_string_text (data, ks2, ke2);

                duplicate = strcmp (key, key2) == 0;
              }
            if (!duplicate)
              compare (data, vs, ve, child, depth + 1);
          }
          n++;
        }
      if (n < (gsize) json_object_object_length (tree))
        broken ("fewer members than json-c found");
      break;

    case '[':
      if (!json_object_is_type (tree, json_type_array))
        broken ("an array is not one to json-c");
      napkin_json_iter_init (&iter, data, end, start);
      while (napkin_json_iter_next (&iter, &vs, &ve))
        {
          if (n >= json_object_array_length (tree))
            broken ("more elements than json-c found");
          compare (data, vs, ve, json_object_array_get_idx (tree, n), depth + 1);
          n++;
        }
      if (n != json_object_array_length (tree))
        broken ("fewer elements than json-c found");
      break;

    case '"':
      {
        g_autofree char *text = napkin_json_string_text (data, start, end);

        if (!json_object_is_type (tree, json_type_string))
          broken ("a string is not one to json-c");
        if (strcmp (text, json_object_get_string (tree)) != 0
            || strlen (text) != (gsize) json_object_get_string_len (tree))
          broken ("a string reads differently: “%s” and “%s”", text, json_object_get_string (tree));
        break;
      }

    case 'n':
      if (tree != NULL)
        broken ("null is not null to json-c");
      break;

    default:
      if (tree == NULL || json_object_is_type (tree, json_type_object) || json_object_is_type (tree, json_type_array)
          || json_object_is_type (tree, json_type_string))
        broken ("a scalar is not one to json-c");
      break;
    }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  const char *text = (const char *) data;
  g_autoptr(GError) error = NULL;
  gsize root_start, root_end;
  json_object *tree;

  if (size > 256 * 1024)
    return -1;
  if (!napkin_json_check (text, size, &root_start, &root_end, &error))
    {
      if (error == NULL || error->message == NULL || !g_utf8_validate (error->message, -1, NULL))
        broken ("a refusal without a clean message");
      for (const char *p = error->message; *p; p++)
        if ((guchar) *p < 0x20 || *p == 0x7f)
          broken ("a refusal with a control character: %s", error->message);
      return 0;
    }
  if (root_end > size || root_start >= root_end)
    broken ("the root's span is out of the text");
  tree = parse (text + root_start, root_end - root_start);
  compare (text, root_start, root_end, tree, 1);
  json_object_put (tree);
  return 0;
}
