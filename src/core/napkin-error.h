/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Errors about a diagram: its file, its structure or its meaning. Messages name the
 * place in words and end with its JSON path as details (napkin-describe.h):
 * "The second axis of tensor “A”: unknown axis “q” (JSON path: tensors[0].axes[1])". */
#define NAPKIN_DOCUMENT_ERROR (napkin_document_error_quark ())

typedef enum
{
  NAPKIN_DOCUMENT_ERROR_IO,
  NAPKIN_DOCUMENT_ERROR_PARSE,      /* not JSON */
  NAPKIN_DOCUMENT_ERROR_FORMAT,     /* JSON, but not a napkin document of this shape */
  NAPKIN_DOCUMENT_ERROR_VERSION,    /* a newer major version */
  NAPKIN_DOCUMENT_ERROR_REFERENCE,  /* a name that does not exist, or exists twice */
  NAPKIN_DOCUMENT_ERROR_INVALID,    /* a well-formed diagram that does not make sense */
  NAPKIN_DOCUMENT_ERROR_LIMIT,      /* too large to handle */
  NAPKIN_DOCUMENT_ERROR_USAGE,      /* a bad override or edit argument */
  NAPKIN_DOCUMENT_ERROR_SCHEMA,     /* loads, but breaks a rule of data/napkin.schema.json */
} NapkinDocumentError;

GQuark napkin_document_error_quark (void);

G_END_DECLS
