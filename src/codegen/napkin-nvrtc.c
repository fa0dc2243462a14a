/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#ifdef HAVE_NVRTC
#define _GNU_SOURCE   /* dladdr */
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>
#endif

#include "napkin-codegen.h"

gboolean
napkin_nvrtc_available (void)
{
#ifdef HAVE_NVRTC
  return TRUE;
#else
  return FALSE;
#endif
}

#ifdef HAVE_NVRTC
#define N_OPTIONS 5

/* One list for the compile and its fingerprint, so that the module cache's key
 * changes whenever the options do (docs/codegen.md, "The compiled-module cache"). */
static void
nvrtc_options (const char  *arch,
               char       **arch_opt,
               const char  *options[N_OPTIONS])
{
  *arch_opt = g_strdup_printf ("--gpu-architecture=%s", arch);
  options[0] = *arch_opt;
  options[1] = "--std=c++17";
  options[2] = "-lineinfo";
  options[3] = "-DNAPKIN_NVRTC=1";
  /* Unused helpers of the prelude and the generic printer's scratch variable. */
  options[4] = "--diag-suppress=177,550";
}

static gboolean
nvrtc_check (nvrtcResult  res,
             const char  *call,
             const char  *arch,
             GError     **error)
{
  if (res == NVRTC_SUCCESS)
    return TRUE;
  g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE, "NVRTC (%s): %s failed: %s", arch, call,
               nvrtcGetErrorString (res));
  return FALSE;
}
#endif

char *
napkin_nvrtc_fingerprint (const char *arch)
{
#ifdef HAVE_NVRTC
  g_autofree char *arch_opt = NULL;
  g_autofree char *joined = NULL;
  const char *options[N_OPTIONS + 1] = { NULL };
  int major = 0, minor = 0;
  Dl_info where = { 0 };
  union { nvrtcResult (*fn) (int *, int *); void *p; } version_fn = { nvrtcVersion };   /* ISO C: no cast */
  struct stat st = { 0 };
  GString *out = g_string_new (NULL);

  g_return_val_if_fail (arch != NULL, NULL);

  nvrtc_options (arch, &arch_opt, options);
  joined = g_strjoinv (" ", (char **) options);
  if (nvrtcVersion (&major, &minor) != NVRTC_SUCCESS)
    major = minor = -1;
  g_string_append_printf (out, "nvrtc %d.%d", major, minor);
  /* the library file too: a patch release keeps major.minor but may generate other code */
  if (dladdr (version_fn.p, &where) != 0 && where.dli_fname != NULL && stat (where.dli_fname, &st) == 0)
    g_string_append_printf (out, " (%s, %" G_GINT64_FORMAT " bytes, mtime %" G_GINT64_FORMAT ")", where.dli_fname,
                            (gint64) st.st_size, (gint64) st.st_mtime);
  g_string_append_printf (out, "; %s", joined);
  return g_string_free (out, FALSE);
#else
  return NULL;
#endif
}

GBytes *
napkin_nvrtc_compile (const char  *source,
                      const char  *arch,
                      char       **log,
                      GError     **error)
{
#ifdef HAVE_NVRTC
  nvrtcProgram prog;
  nvrtcResult res;
  g_autofree char *arch_opt = NULL;
  g_autofree char *text = NULL;
  g_autofree char *code = NULL;
  const char *options[N_OPTIONS];
  size_t size = 0;
  gboolean ptx;

  g_return_val_if_fail (source != NULL && arch != NULL, NULL);

  if (log != NULL)
    *log = NULL;
  /* "compute_90" asks for PTX, "sm_90a" for a cubin. */
  ptx = g_str_has_prefix (arch, "compute_");
  nvrtc_options (arch, &arch_opt, options);

  if (!nvrtc_check (nvrtcCreateProgram (&prog, source, "napkin.cu", 0, NULL, NULL), "nvrtcCreateProgram", arch, error))
    return NULL;

  res = nvrtcCompileProgram (prog, N_OPTIONS, options);
  /* The log explains a failed compile, so reading it must work even then. */
  if (!nvrtc_check (nvrtcGetProgramLogSize (prog, &size), "nvrtcGetProgramLogSize", arch, error))
    goto fail;
  text = g_malloc0 (size + 1);
  if (size > 0 && !nvrtc_check (nvrtcGetProgramLog (prog, text), "nvrtcGetProgramLog", arch, error))
    goto fail;
  if (log != NULL && *text != '\0')
    *log = g_strdup (text);
  if (res != NVRTC_SUCCESS)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE, "NVRTC (%s): %s\n%s", arch,
                   nvrtcGetErrorString (res), text);
      goto fail;
    }

  if (!nvrtc_check (ptx ? nvrtcGetPTXSize (prog, &size) : nvrtcGetCUBINSize (prog, &size),
                    ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize", arch, error))
    goto fail;
  if (size == 0)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE, "NVRTC (%s): the compiled %s is empty",
                   arch, ptx ? "PTX" : "cubin");
      goto fail;
    }
  code = g_malloc (size);
  if (!nvrtc_check (ptx ? nvrtcGetPTX (prog, code) : nvrtcGetCUBIN (prog, code),
                    ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN", arch, error))
    goto fail;
  if (!nvrtc_check (nvrtcDestroyProgram (&prog), "nvrtcDestroyProgram", arch, error))
    return NULL;
  return g_bytes_new_take (g_steal_pointer (&code), size);

fail:
  /* the first error is the one to report; this one would only repeat it */
  (void) nvrtcDestroyProgram (&prog);
  return NULL;
#else
  g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_NO_COMPILER,
               "Napkin was built without NVRTC (CUDA toolkit not found at build time)");
  return NULL;
#endif
}
