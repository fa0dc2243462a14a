/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Compiled modules kept between runs (docs/codegen.md, "The compiled-module cache"):
 * one file per module in the user's cache dir, named by the SHA-256 of the source,
 * the target and everything else that decides NVRTC's output (its version, library
 * and options: napkin_nvrtc_fingerprint). A damaged file is ignored and replaced; a
 * cache that cannot be read or written never fails a compile. */
typedef struct
{
  gboolean  cached;    /* the module came from the cache: NVRTC was not called */
  char     *key;       /* hex SHA-256 */
  char     *path;      /* its file; NULL when the cache is off */
  char     *note;      /* why the cache was not used or not written, else NULL */
  double    ms;        /* wall time of the lookup and, on a miss, the compile */
} NapkinModuleCacheInfo;

/* $XDG_CACHE_HOME/napkin/modules */
char      *napkin_module_cache_default_dir (void);
/* Compiles like napkin_nvrtc_compile, through the cache in dir (NULL: no cache). On
 * a hit, log is the log NVRTC wrote when the module was compiled. */
GBytes    *napkin_module_cache_compile     (const char             *dir,
                                            const char             *source,
                                            const char             *arch,
                                            char                  **log,
                                            NapkinModuleCacheInfo  *info,
                                            GError                **error);
/* Keeps the `keep` most recently used modules in dir; returns how many it removed. */
guint      napkin_module_cache_prune       (const char             *dir,
                                            guint                   keep);
void       napkin_module_cache_info_clear  (NapkinModuleCacheInfo  *info);

/* Modules kept after a write; older ones go (about 100 MB of typical cubins). */
#define NAPKIN_MODULE_CACHE_KEEP 256

G_END_DECLS
