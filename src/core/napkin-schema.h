/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <json-c/json.h>

G_BEGIN_DECLS

/* The JSON Schema of the .napkin format (data/napkin.schema.json, draft 2020-12), and
 * a validator of the subset of JSON Schema it uses (docs/decisions.md, "The file
 * format's JSON Schema"): $ref to the same document, type, const, enum, properties,
 * required, additionalProperties, items, minItems, maxItems, uniqueItems, minimum,
 * maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, oneOf;
 * annotations ($schema, $id, $defs, title, description) are skipped. A schema that
 * uses any other keyword is refused when it is checked, not silently half-applied. */

/* The installed schema: napkin.schema.json in the first data dir that has it
 * (napkin_data_find), parsed; NULL with an error when none is found or it is not JSON. */
json_object *napkin_schema_load_default (GError      **error);
/* NULL when the schema uses only the subset above, else a message naming the keyword
 * and where it is. */
char        *napkin_schema_check        (json_object  *schema);
/* TRUE when `instance` matches; otherwise a NAPKIN_DOCUMENT_ERROR_SCHEMA error whose
 * message names the rule (its schema path, "#/properties/axes/...") and ends with the
 * instance's JSON path as details, as the loader's errors do (napkin-error.h). The
 * first failure is reported. */
gboolean     napkin_schema_validate     (json_object  *schema,
                                         json_object  *instance,
                                         GError      **error);
/* The same for a document as text, without building its whole tree: each member of the
 * root, and each element of a root array, is read and checked on its own (the loader
 * keeps large unknown values as text for the same reason: docs/security.md, "Memory of
 * the loader"); members the schema allows whatever they hold are not read at all. */
gboolean     napkin_schema_validate_text (json_object  *schema,
                                          const char   *data,
                                          gsize         length,
                                          GError      **error);

G_END_DECLS
