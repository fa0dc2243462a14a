/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <glib/gi18n-lib.h>

#include "napkin-nvml.h"

#include <dlfcn.h>
#include <string.h>

gboolean
napkin_nvml_open (NapkinNvml  *nvml,
                  guint        index,
                  char       **message)
{
  int (*init) (void);
  int (*get_handle) (unsigned int, void **);
  int (*get_name) (void *, char *, unsigned int);
  unsigned long long mj = 0;
  int rc;

  memset (nvml, 0, sizeof *nvml);
  nvml->handle = dlopen ("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml->handle == NULL)
    {
      *message = g_strdup_printf (_("no NVML (libnvidia-ml.so.1: %s)"), dlerror ());
      return FALSE;
    }
  /* through gpointer *, as GModule's g_module_symbol: ISO C has no cast from the
   * object pointer dlsym returns to a function pointer */
  *(gpointer *) &init = dlsym (nvml->handle, "nvmlInit_v2");
  *(gpointer *) &get_handle = dlsym (nvml->handle, "nvmlDeviceGetHandleByIndex_v2");
  *(gpointer *) &get_name = dlsym (nvml->handle, "nvmlDeviceGetName");
  *(gpointer *) &nvml->Shutdown = dlsym (nvml->handle, "nvmlShutdown");
  *(gpointer *) &nvml->DeviceGetTotalEnergyConsumption = dlsym (nvml->handle, "nvmlDeviceGetTotalEnergyConsumption");
  if (init == NULL || get_handle == NULL || nvml->Shutdown == NULL || nvml->DeviceGetTotalEnergyConsumption == NULL)
    {
      *message = g_strdup (_("NVML lacks nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetTotalEnergyConsumption"));
      napkin_nvml_close (nvml);
      return FALSE;
    }
  if ((rc = init ()) != 0)
    {
      *message = g_strdup_printf (_("nvmlInit_v2 failed (NVML error %d)"), rc);
      dlclose (nvml->handle);
      nvml->handle = NULL;
      return FALSE;
    }
  if ((rc = get_handle (index, &nvml->device)) != 0 || (rc = nvml->DeviceGetTotalEnergyConsumption (nvml->device, &mj)) != 0)
    {
      *message = g_strdup_printf (_("NVML device %u has no energy counter (NVML error %d)"), index, rc);
      napkin_nvml_close (nvml);
      return FALSE;
    }
  if (get_name == NULL || get_name (nvml->device, nvml->name, sizeof nvml->name) != 0)
    g_strlcpy (nvml->name, "unknown (nvmlDeviceGetName failed)", sizeof nvml->name);
  return TRUE;
}

gboolean
napkin_nvml_energy_mj (NapkinNvml         *nvml,
                       unsigned long long *mj)
{
  return nvml->handle != NULL && nvml->DeviceGetTotalEnergyConsumption (nvml->device, mj) == 0;
}

void
napkin_nvml_close (NapkinNvml *nvml)
{
  if (nvml->handle == NULL)
    return;
  if (nvml->Shutdown)
    nvml->Shutdown ();
  dlclose (nvml->handle);
  nvml->handle = NULL;
}
