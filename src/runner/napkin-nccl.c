/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <dlfcn.h>
#include <string.h>

#include "napkin-nccl.h"

gboolean
napkin_nccl_open (NapkinNccl  *nccl,
                  char       **message)
{
  const char *env = g_getenv ("NAPKIN_NCCL_LIBRARY");
  const char *path = env != NULL && *env != '\0' ? env : "libnccl.so.2";
  struct { gpointer *slot; const char *name; } table[] = {
#define B(field, sym) { (gpointer *) &nccl->field, sym }
    B (GetVersion, "ncclGetVersion"), B (CommInitAll, "ncclCommInitAll"), B (CommDestroy, "ncclCommDestroy"),
    B (GroupStart, "ncclGroupStart"), B (GroupEnd, "ncclGroupEnd"), B (AllReduce, "ncclAllReduce"),
    B (AllGather, "ncclAllGather"), B (ReduceScatter, "ncclReduceScatter"), B (Send, "ncclSend"),
    B (Recv, "ncclRecv"), B (GetErrorString, "ncclGetErrorString"),
#undef B
  };
  int res;

  g_return_val_if_fail (nccl != NULL && message != NULL, FALSE);

  memset (nccl, 0, sizeof *nccl);
  *message = NULL;
  nccl->handle = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  if (nccl->handle == NULL)
    {
      *message = g_strdup_printf (_("No NCCL library (%s could not be loaded: %s). Runs on several GPUs need NCCL 2.10 "
                                  "or newer: install it, or point NAPKIN_NCCL_LIBRARY at a libnccl.so.2 (PyTorch's "
                                  "wheel has one under nvidia/nccl/lib)."), path, dlerror ());
      return FALSE;
    }
  nccl->path = g_strdup (path);
  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    {
      *table[i].slot = dlsym (nccl->handle, table[i].name);
      if (*table[i].slot == NULL)
        {
          *message = g_strdup_printf (_("The NCCL library %s lacks %s: it is too old (send/recv need 2.7) or not NCCL."),
                                      path, table[i].name);
          napkin_nccl_close (nccl);
          return FALSE;
        }
    }
  /* optional: through the object pointers, as the table above does (ISO C has no
   * void * to function pointer assignment) */
  *(gpointer *) &nccl->GetUniqueId = dlsym (nccl->handle, "ncclGetUniqueId");
  *(gpointer *) &nccl->CommInitRankConfig = dlsym (nccl->handle, "ncclCommInitRankConfig");
  res = nccl->GetVersion (&nccl->version);
  if (res != NAPKIN_NCCL_SUCCESS)
    {
      g_autofree char *text = napkin_nccl_error (nccl, res);

      *message = g_strdup_printf (_("The NCCL library %s does not answer ncclGetVersion (%s)."), path, text);
      napkin_nccl_close (nccl);
      return FALSE;
    }
  /* bf16 reductions came with 2.10: 21000 in the 2.9+ encoding (MAJOR*10000 + MINOR*100 + PATCH) */
  if (nccl->version < 21000)
    {
      g_autofree char *v = napkin_nccl_version (nccl);

      *message = g_strdup_printf (_("The NCCL library %s is version %s; Napkin needs 2.10 or newer (bf16)."), path, v);
      napkin_nccl_close (nccl);
      return FALSE;
    }
  return TRUE;
}

void
napkin_nccl_close (NapkinNccl *nccl)
{
  if (nccl->handle != NULL)
    dlclose (nccl->handle);
  g_free (nccl->path);
  memset (nccl, 0, sizeof *nccl);
}

char *
napkin_nccl_version (const NapkinNccl *nccl)
{
  int v = nccl->version;

  /* Before 2.9 the code was MAJOR*1000 + MINOR*100 + PATCH. */
  if (v < 10000)
    return g_strdup_printf ("%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
  return g_strdup_printf ("%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

char *
napkin_nccl_error (const NapkinNccl *nccl,
                   int               result)
{
  static const char *names[] = { "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                                 "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress" };
  const char *name = result >= 0 && result < (int) G_N_ELEMENTS (names) ? names[result] : "ncclResult";
  const char *text = nccl != NULL && nccl->GetErrorString != NULL ? nccl->GetErrorString (result) : NULL;

  return g_strdup_printf ("%s (%d): %s", name, result, text ? text : "unknown");
}

guint
napkin_nccl_type_bytes (NapkinNcclDataType type)
{
  switch (type)
    {
    case NAPKIN_NCCL_INT8:
    case NAPKIN_NCCL_UINT8: return 1;
    case NAPKIN_NCCL_FLOAT16:
    case NAPKIN_NCCL_BFLOAT16: return 2;
    case NAPKIN_NCCL_FLOAT32: return 4;
    default: return 0;
    }
}

static const char *collective_names[] = { "all-reduce", "all-gather", "reduce-scatter", "all-to-all" };

const char *
napkin_nccl_collective_name (NapkinCollectiveKind kind)
{
  g_return_val_if_fail (kind < NAPKIN_N_COLLECTIVES, NULL);
  return collective_names[kind];
}

gboolean
napkin_nccl_collective_parse (const char       *name,
                               NapkinCollectiveKind *kind)
{
  g_autofree char *dashed = NULL;

  if (name == NULL)
    return FALSE;
  dashed = g_strdelimit (g_ascii_strdown (name, -1), "_", '-');
  for (guint i = 0; i < NAPKIN_N_COLLECTIVES; i++)
    if (g_str_equal (dashed, collective_names[i]))
      {
        *kind = i;
        return TRUE;
      }
  return FALSE;
}

gint64
napkin_nccl_size_bytes (NapkinCollectiveKind kind,
                              gint64           count,
                              guint            elem_bytes,
                              guint            n)
{
  return kind == NAPKIN_COLLECTIVE_ALL_REDUCE ? count * elem_bytes : count * elem_bytes * (gint64) n;
}

double
napkin_nccl_bus_factor (NapkinCollectiveKind kind,
                              guint            n)
{
  if (n == 0)
    return 0;
  return (kind == NAPKIN_COLLECTIVE_ALL_REDUCE ? 2.0 : 1.0) * (n - 1) / n;
}
