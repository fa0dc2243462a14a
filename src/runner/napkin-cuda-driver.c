/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

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
      *message = g_strdup_printf (_("The CUDA driver library lacks %s: the driver is too old or broken."), name);
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
    B (EventDestroy, "cuEventDestroy_v2"),
    B (EventRecord, "cuEventRecord"), B (EventSynchronize, "cuEventSynchronize"),
    B (EventElapsedTime, "cuEventElapsedTime_v2"), B (StreamCreate, "cuStreamCreate"),
    B (StreamDestroy, "cuStreamDestroy_v2"), B (StreamSynchronize, "cuStreamSynchronize"),
    B (StreamWaitEvent, "cuStreamWaitEvent"), B (GetErrorName, "cuGetErrorName"),
    B (GetErrorString, "cuGetErrorString"),
#undef B
  };

  g_return_val_if_fail (driver != NULL && message != NULL, FALSE);

  *message = NULL;
  driver->handle = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver->handle == NULL)
    {
      *message = g_strdup_printf (_("No CUDA driver on this machine (libcuda.so.1 could not be loaded: %s). "
                                  "Running kernels needs an NVIDIA GPU and its driver; everything else in "
                                  "Napkin works without one."), dlerror ());
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

  /* Optional: only the sm_90a skeletons need it, and they say so when it is missing. */
  *(gpointer *) &driver->TensorMapEncodeTiled = dlsym (driver->handle, "cuTensorMapEncodeTiled");
  /* Optional: a high-priority communication stream, an experiment the runner offers */
  *(gpointer *) &driver->StreamCreateWithPriority = dlsym (driver->handle, "cuStreamCreateWithPriority");
  *(gpointer *) &driver->CtxGetStreamPriorityRange = dlsym (driver->handle, "cuCtxGetStreamPriorityRange");
  /* Optional (CUDA 12+): kernels launched in clusters of blocks */
  *(gpointer *) &driver->LaunchKernelEx = dlsym (driver->handle, "cuLaunchKernelEx");
  *(gpointer *) &driver->OccupancyMaxActiveClusters = dlsym (driver->handle, "cuOccupancyMaxActiveClusters");

  res = driver->Init (0);
  if (res == CUDA_ERROR_STUB_LIBRARY)
    {
      *message = g_strdup (_("The CUDA driver found is the toolkit's stub library, not a real driver: "
                           "this machine has no usable NVIDIA driver."));
      return FALSE;
    }
  if (res != CUDA_SUCCESS)
    {
      g_autofree char *text = napkin_cuda_driver_error (driver, res);

      *message = g_strdup_printf (_("The CUDA driver did not start (%s): no usable NVIDIA GPU."), text);
      return FALSE;
    }
  if (driver->DeviceGetCount (&count) != CUDA_SUCCESS || count == 0)
    {
      *message = g_strdup (_("The CUDA driver sees no GPU on this machine."));
      return FALSE;
    }
  return TRUE;
}

char *
napkin_cuda_driver_error (NapkinCudaDriver *driver,
                          CUresult          result)
{
  const char *name = NULL, *text = NULL;

  /* both fail for a code the driver does not know: say its number then */
  if (driver->GetErrorName == NULL || driver->GetErrorName (result, &name) != CUDA_SUCCESS)
    name = NULL;
  if (driver->GetErrorString == NULL || driver->GetErrorString (result, &text) != CUDA_SUCCESS)
    text = NULL;
  if (name == NULL)
    return g_strdup_printf (_("CUDA error %d: %s"), (int) result, text ? text : "unknown to this driver");
  return g_strdup_printf ("%s: %s", name, text ? text : "unknown");
}

gboolean
napkin_cuda_driver_check (NapkinCudaDriver  *driver,
                          CUresult           result,
                          const char        *what,
                          char             **message)
{
  g_autofree char *text = NULL;

  if (result == CUDA_SUCCESS)
    return TRUE;
  text = napkin_cuda_driver_error (driver, result);
  g_free (*message);
  *message = g_strdup_printf ("%s: %s", what, text);
  return FALSE;
}

gboolean
napkin_cuda_tensor_map (NapkinCudaDriver           *driver,
                        CUtensorMap                *out,
                        const NapkinCudaTensorMap  *map,
                        CUdeviceptr                 ptr,
                        char                      **message)
{
  g_autoptr(GError) error = NULL;
  NapkinTensorMapEncoding enc;
  cuuint64_t dims[3], strides[2];
  cuuint32_t box[3], element_strides[3] = { 1, 1, 1 };
  CUtensorMapDataType type;
  CUtensorMapSwizzle swizzle;
  CUresult res;

  if (!napkin_cuda_tensor_map_encoding (map, (guint64) ptr, &enc, &error))
    {
      *message = g_strdup (error->message);
      return FALSE;
    }
  if (driver->TensorMapEncodeTiled == NULL)
    {
      *message = g_strdup (_("The CUDA driver lacks cuTensorMapEncodeTiled (CUDA 12 or newer): "
                           "the sm_90a kernels cannot run (napkin-cli run --arch sm_90 avoids them)."));
      return FALSE;
    }
  switch (map->dtype)
    {
    case NAPKIN_DTYPE_FP16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case NAPKIN_DTYPE_BF16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case NAPKIN_DTYPE_FP32:
    case NAPKIN_DTYPE_TF32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case NAPKIN_DTYPE_INT8:
    case NAPKIN_DTYPE_FP8_E4M3:
    case NAPKIN_DTYPE_FP8_E5M2: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
    default:
      *message = g_strdup_printf (_("tensor map of slot %d: no tensor-map type for %s"), map->slot,
                                  napkin_dtype_to_string (map->dtype));
      return FALSE;
    }
  swizzle = enc.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : enc.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
            : enc.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  for (guint i = 0; i < 3; i++)
    {
      dims[i] = enc.dims[i];
      box[i] = enc.box[i];
    }
  strides[0] = enc.row_stride;
  strides[1] = enc.batch_stride;
  res = driver->TensorMapEncodeTiled (out, type, enc.rank, (void *) (uintptr_t) enc.address, dims, strides, box, element_strides,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (res != CUDA_SUCCESS)
    {
      g_autofree char *text = napkin_cuda_driver_error (driver, res);

      *message = g_strdup_printf (_("tensor map of slot %d (%lld×%lld, box %u×%u): %s"),
                                  map->slot, (long long) map->inner, (long long) map->outer, map->box_inner, map->box_outer, text);
      return FALSE;
    }
  return TRUE;
}
