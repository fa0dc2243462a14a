/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "napkin-arch.h"   /* NapkinCollectiveKind */

G_BEGIN_DECLS

/* NCCL, opened with dlopen ("libnccl.so.2", or $NAPKIN_NCCL_LIBRARY) at run time like
 * the CUDA driver, so that Napkin builds and runs where NCCL is absent; only the
 * multi-GPU runs need it (docs/multi-gpu.md). The few types used are declared here
 * with the ABI of nccl.h 2.x (stable since 2.0; bf16 since 2.10), so building needs
 * no NCCL headers. */
typedef struct NapkinNcclComm *NapkinNcclComm;   /* ncclComm_t */
typedef void *NapkinNcclStream;                   /* cudaStream_t, the same as a driver CUstream */

typedef enum
{
  NAPKIN_NCCL_SUCCESS = 0,            /* ncclSuccess */
  NAPKIN_NCCL_IN_PROGRESS = 7,        /* ncclInProgress */
} NapkinNcclResult;

/* ncclDataType_t */
typedef enum
{
  NAPKIN_NCCL_INT8 = 0,
  NAPKIN_NCCL_UINT8 = 1,
  NAPKIN_NCCL_FLOAT16 = 6,
  NAPKIN_NCCL_FLOAT32 = 7,
  NAPKIN_NCCL_BFLOAT16 = 9,
} NapkinNcclDataType;

/* ncclRedOp_t */
typedef enum
{
  NAPKIN_NCCL_SUM = 0,
} NapkinNcclRedOp;

/* ncclUniqueId (128 bytes) and the leading fields of ncclConfig_t as nccl.h 2.14 has
 * them: NCCL reads a config by its size and version, so an older, shorter one is
 * valid in later releases; unset ints are INT_MIN (NCCL_CONFIG_UNDEF_INT). */
typedef struct { char internal[128]; } NapkinNcclUniqueId;
typedef struct
{
  size_t        size;
  unsigned int  magic;            /* 0xcafebeef */
  unsigned int  version;          /* NCCL_VERSION (2, 14, 0) = 21400 */
  int           blocking;
  int           cga_cluster_size;
  int           min_ctas;
  int           max_ctas;
  const char   *net_name;
} NapkinNcclConfig;

typedef struct
{
  void       *handle;
  char       *path;      /* the library opened, as dlopen was asked for it */
  int         version;   /* ncclGetVersion: 22805 for 2.28.5 (older: 2505 for 2.5.5) */
  int       (*GetVersion)     (int *);
  int       (*CommInitAll)    (NapkinNcclComm *, int, const int *);
  int       (*CommDestroy)    (NapkinNcclComm);
  int       (*GroupStart)     (void);
  int       (*GroupEnd)       (void);
  int       (*AllReduce)      (const void *, void *, size_t, NapkinNcclDataType, NapkinNcclRedOp, NapkinNcclComm,
                               NapkinNcclStream);
  int       (*AllGather)      (const void *, void *, size_t, NapkinNcclDataType, NapkinNcclComm, NapkinNcclStream);
  int       (*ReduceScatter)  (const void *, void *, size_t, NapkinNcclDataType, NapkinNcclRedOp, NapkinNcclComm,
                               NapkinNcclStream);
  int       (*Send)           (const void *, size_t, NapkinNcclDataType, int, NapkinNcclComm, NapkinNcclStream);
  int       (*Recv)           (void *, size_t, NapkinNcclDataType, int, NapkinNcclComm, NapkinNcclStream);
  const char *(*GetErrorString) (int);
  /* optional (2.14+): a communicator held to a few CTAs; NULL in older releases */
  int       (*GetUniqueId)    (NapkinNcclUniqueId *);
  int       (*CommInitRankConfig) (NapkinNcclComm *, int, NapkinNcclUniqueId, int, NapkinNcclConfig *);
} NapkinNccl;

/* Opens $NAPKIN_NCCL_LIBRARY when set, else libnccl.so.2, and reads its version. FALSE
 * with a message saying where to find NCCL when it is absent, too old or broken. */
gboolean  napkin_nccl_open     (NapkinNccl  *nccl,
                                char       **message);
void      napkin_nccl_close    (NapkinNccl  *nccl);
/* "2.28.5" */
char     *napkin_nccl_version  (const NapkinNccl *nccl);
/* "ncclInvalidUsage (5): invalid usage" */
char     *napkin_nccl_error    (const NapkinNccl *nccl,
                                int               result);
/* The element size of a NCCL data type (1, 2 or 4 for the types above). */
guint     napkin_nccl_type_bytes (NapkinNcclDataType type);

G_END_DECLS

G_BEGIN_DECLS

/* The collectives of NapkinCollectiveKind (napkin-arch.h); all-to-all runs as grouped
 * ncclSend/ncclRecv (ncclAlltoAll is 2.28+ only). */
/* "all-reduce", "all-gather", "reduce-scatter", "all-to-all" */
const char *napkin_nccl_collective_name   (NapkinCollectiveKind kind);
/* Also takes the underscore spellings; FALSE when unknown. */
gboolean    napkin_nccl_collective_parse  (const char           *name,
                                           NapkinCollectiveKind *kind);
/* nccl-tests' conventions (its doc/PERFORMANCE.md): the "size" of an operation is
 * the larger of a rank's send and receive buffers — count·elem for all-reduce,
 * n·count·elem for all-gather (count sent), reduce-scatter (count received) and
 * all-to-all (count to each peer). algbw = size / time; busbw = algbw · factor:
 * 2(n−1)/n for all-reduce, (n−1)/n for the other three. */
gint64      napkin_nccl_size_bytes        (NapkinCollectiveKind kind,
                                           gint64           count,
                                           guint            elem_bytes,
                                           guint            n);
double      napkin_nccl_bus_factor        (NapkinCollectiveKind kind,
                                           guint            n);

G_END_DECLS
