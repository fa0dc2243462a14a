/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen.h"

#ifdef HAVE_NVRTC
#include <nvrtc.h>
#endif

gboolean
napkin_nvrtc_available (void)
{
#ifdef HAVE_NVRTC
  return TRUE;
#else
  return FALSE;
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
  const char *options[5];
  size_t size = 0;
  gboolean ptx;
  char *code;
  GBytes *bytes;

  g_return_val_if_fail (source != NULL && arch != NULL, NULL);

  if (log != NULL)
    *log = NULL;
  /* "compute_90" asks for PTX, "sm_90a" for a cubin. */
  ptx = g_str_has_prefix (arch, "compute_");
  arch_opt = g_strdup_printf ("--gpu-architecture=%s", arch);
  options[0] = arch_opt;
  options[1] = "--std=c++17";
  options[2] = "-lineinfo";
  options[3] = "-DNAPKIN_NVRTC=1";
  /* Unused helpers of the prelude and the generic printer's scratch variable. */
  options[4] = "--diag-suppress=177,550";

  res = nvrtcCreateProgram (&prog, source, "napkin.cu", 0, NULL, NULL);
  if (res != NVRTC_SUCCESS)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE, "NVRTC: %s",
                   nvrtcGetErrorString (res));
      return NULL;
    }

  res = nvrtcCompileProgram (prog, G_N_ELEMENTS (options), options);
  if (nvrtcGetProgramLogSize (prog, &size) == NVRTC_SUCCESS && size > 1)
    {
      char *text = g_malloc0 (size + 1);

      nvrtcGetProgramLog (prog, text);
      if (log != NULL)
        *log = text;
      else
        g_free (text);
    }
  if (res != NVRTC_SUCCESS)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE, "NVRTC (%s): %s\n%s", arch,
                   nvrtcGetErrorString (res), log && *log ? *log : "");
      nvrtcDestroyProgram (&prog);
      return NULL;
    }

  if (ptx)
    res = nvrtcGetPTXSize (prog, &size);
  else
    res = nvrtcGetCUBINSize (prog, &size);
  if (res != NVRTC_SUCCESS)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE, "NVRTC: %s", nvrtcGetErrorString (res));
      nvrtcDestroyProgram (&prog);
      return NULL;
    }
  code = g_malloc (size);
  if (ptx)
    nvrtcGetPTX (prog, code);
  else
    nvrtcGetCUBIN (prog, code);
  nvrtcDestroyProgram (&prog);
  bytes = g_bytes_new_take (code, size);
  return bytes;
#else
  g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_NO_COMPILER,
               "Napkin was built without NVRTC (CUDA toolkit not found at build time)");
  return NULL;
#endif
}
