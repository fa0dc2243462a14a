/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <dlfcn.h>

#include "napkin-cuda-driver.h"

static gboolean
bind (NapkinCudaDriver *driver,
      gpointer         *slot,
      const char       *name,
      char            **message)
{
  *slot = dlsym (driver->handle, name);
  if (*slot == NULL)
    {
      *message = g_strdup_printf ("The CUDA driver library lacks %s: the driver is too old or broken.", name);
      return FALSE;
    }
  return TRUE;
}

gboolean
napkin_cuda_driver_open (NapkinCudaDriver  *driver,
                         char             **message)
{
  int count = 0;
  CUresult res;
  struct { gpointer *slot; const char *name; } table[] = {
#define B(field, sym) { (gpointer *) &driver->field, sym }
    B (Init, "cuInit"), B (DriverGetVersion, "cuDriverGetVersion"), B (DeviceGetCount, "cuDeviceGetCount"),
    B (DeviceGet, "cuDeviceGet"), B (DeviceGetName, "cuDeviceGetName"),
    B (DeviceGetAttribute, "cuDeviceGetAttribute"), B (DeviceTotalMem, "cuDeviceTotalMem_v2"),
    B (DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"), B (CtxSetCurrent, "cuCtxSetCurrent"),
    B (CtxSynchronize, "cuCtxSynchronize"), B (ModuleLoadData, "cuModuleLoadData"),
    B (ModuleGetFunction, "cuModuleGetFunction"), B (FuncGetAttribute, "cuFuncGetAttribute"),
    B (FuncSetAttribute, "cuFuncSetAttribute"),
    B (MemAlloc, "cuMemAlloc_v2"), B (MemFree, "cuMemFree_v2"), B (MemGetInfo, "cuMemGetInfo_v2"),
    B (MemcpyHtoD, "cuMemcpyHtoD_v2"), B (MemcpyDtoH, "cuMemcpyDtoH_v2"), B (MemcpyDtoD, "cuMemcpyDtoD_v2"),
    B (MemsetD8, "cuMemsetD8_v2"), B (LaunchKernel, "cuLaunchKernel"), B (EventCreate, "cuEventCreate"),
    B (EventRecord, "cuEventRecord"), B (EventSynchronize, "cuEventSynchronize"),
    B (EventElapsedTime, "cuEventElapsedTime_v2"), B (GetErrorName, "cuGetErrorName"),
    B (GetErrorString, "cuGetErrorString"),
#undef B
  };

  g_return_val_if_fail (driver != NULL && message != NULL, FALSE);

  *message = NULL;
  driver->handle = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver->handle == NULL)
    {
      *message = g_strdup_printf ("No CUDA driver on this machine (libcuda.so.1 could not be loaded: %s). "
                                  "Running kernels needs an NVIDIA GPU and its driver; everything else in "
                                  "Napkin works without one.", dlerror ());
      return FALSE;
    }

  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    {
      /* cuEventElapsedTime_v2 is CUDA 12.8+; older drivers have the first one. */
      if (g_str_equal (table[i].name, "cuEventElapsedTime_v2") && dlsym (driver->handle, table[i].name) == NULL)
        table[i].name = "cuEventElapsedTime";
      if (!bind (driver, table[i].slot, table[i].name, message))
        return FALSE;
    }

  res = driver->Init (0);
  if (res == CUDA_ERROR_STUB_LIBRARY)
    {
      *message = g_strdup ("The CUDA driver found is the toolkit's stub library, not a real driver: "
                           "this machine has no usable NVIDIA driver.");
      return FALSE;
    }
  if (res != CUDA_SUCCESS)
    {
      g_autofree char *text = napkin_cuda_driver_error (driver, res);

      *message = g_strdup_printf ("The CUDA driver did not start (%s): no usable NVIDIA GPU.", text);
      return FALSE;
    }
  if (driver->DeviceGetCount (&count) != CUDA_SUCCESS || count == 0)
    {
      *message = g_strdup ("The CUDA driver sees no GPU on this machine.");
      return FALSE;
    }
  return TRUE;
}

char *
napkin_cuda_driver_error (NapkinCudaDriver *driver,
                          CUresult          result)
{
  const char *name = NULL, *text = NULL;

  if (driver->GetErrorName)
    driver->GetErrorName (result, &name);
  if (driver->GetErrorString)
    driver->GetErrorString (result, &text);
  return g_strdup_printf ("%s: %s", name ? name : "CUDA error", text ? text : "unknown");
}
