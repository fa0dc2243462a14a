/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <json-c/json.h>

G_BEGIN_DECLS

G_DEFINE_AUTOPTR_CLEANUP_FUNC (json_object, json_object_put)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (json_tokener, json_tokener_free)

G_END_DECLS
