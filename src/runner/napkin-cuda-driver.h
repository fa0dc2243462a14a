/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <cuda.h>   /* types and enums only: the driver is opened at run time */

#include "napkin-codegen.h"

G_BEGIN_DECLS

/* The CUDA driver API, opened with dlopen ("libcuda.so.1") so that Napkin starts
 * and works on machines with no GPU or no driver. */
typedef struct
{
  void     *handle;
  CUresult (*Init)                 (unsigned int);
  CUresult (*DriverGetVersion)     (int *);
  CUresult (*DeviceGetCount)       (int *);
  CUresult (*DeviceGet)            (CUdevice *, int);
  CUresult (*DeviceGetName)        (char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)   (int *, CUdevice_attribute, CUdevice);
  CUresult (*DeviceTotalMem)       (size_t *, CUdevice);
  CUresult (*DevicePrimaryCtxRetain) (CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)        (CUcontext);
  CUresult (*CtxSynchronize)       (void);
  CUresult (*ModuleLoadData)       (CUmodule *, const void *);
  CUresult (*ModuleGetFunction)    (CUfunction *, CUmodule, const char *);
  CUresult (*FuncGetAttribute)     (int *, CUfunction_attribute, CUfunction);
  CUresult (*FuncSetAttribute)     (CUfunction, CUfunction_attribute, int);
  CUresult (*MemAlloc)             (CUdeviceptr *, size_t);
  CUresult (*MemFree)              (CUdeviceptr);
  CUresult (*MemGetInfo)           (size_t *, size_t *);
  CUresult (*MemcpyHtoD)           (CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)           (void *, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)           (CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemsetD8)             (CUdeviceptr, unsigned char, size_t);
  CUresult (*LaunchKernel)         (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
  CUresult (*EventCreate)          (CUevent *, unsigned int);
  CUresult (*EventDestroy)         (CUevent);
  CUresult (*EventRecord)          (CUevent, CUstream);
  CUresult (*EventSynchronize)     (CUevent);
  CUresult (*EventElapsedTime)     (float *, CUevent, CUevent);
  CUresult (*StreamCreate)         (CUstream *, unsigned int);
  CUresult (*StreamDestroy)        (CUstream);
  CUresult (*StreamSynchronize)    (CUstream);
  CUresult (*StreamWaitEvent)      (CUstream, CUevent, unsigned int);
  CUresult (*GetErrorName)         (CUresult, const char **);
  CUresult (*GetErrorString)       (CUresult, const char **);
  /* CUDA 12+ drivers; NULL before: kernels that take tensor maps cannot run. */
  CUresult (*TensorMapEncodeTiled) (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                    CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                    CUtensorMapFloatOOBfill);
  /* Optional (NULL when the driver lacks them). */
  CUresult (*StreamCreateWithPriority)  (CUstream *, unsigned int, int);
  CUresult (*CtxGetStreamPriorityRange) (int *, int *);
  CUresult (*LaunchKernelEx)            (const CUlaunchConfig *, CUfunction, void **, void **);   /* clusters */
  CUresult (*OccupancyMaxActiveClusters) (int *, CUfunction, const CUlaunchConfig *);
} NapkinCudaDriver;

/* Opens the driver and initialises it. On failure says plainly why (no driver
 * library, no GPU, a stub library) and returns FALSE. */
gboolean    napkin_cuda_driver_open   (NapkinCudaDriver  *driver,
                                       char             **message);
/* Builds the tensor map a kernel named (NapkinCudaTensorMap) over the buffer at `ptr`:
 * FALSE with a message naming the slot when the description or the driver refuses it. */
gboolean    napkin_cuda_tensor_map    (NapkinCudaDriver           *driver,
                                       CUtensorMap                *out,
                                       const NapkinCudaTensorMap  *map,
                                       CUdeviceptr                 ptr,
                                       char                      **message);
/* "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered" */
char       *napkin_cuda_driver_error  (NapkinCudaDriver  *driver,
                                       CUresult           result);
/* TRUE for CUDA_SUCCESS; else FALSE with *message replaced by "WHAT: <the error>" (the
 * newest failure is the one to report). */
gboolean    napkin_cuda_driver_check  (NapkinCudaDriver  *driver,
                                       CUresult           result,
                                       const char        *what,
                                       char             **message);

G_END_DECLS
