/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* One GPU's piece of a row-major tensor split along one dimension into equal parts
 * (docs/multi-gpu.md, "Running on several GPUs"). The tensor is seen as
 * [outer, total, inner]: the dimensions before the split one, the split one, those
 * after it. Piece p holds indices [p·part, (p+1)·part) of the split dimension, and
 * its elements are stored contiguously as [outer, part, inner].
 *
 * The same index map serves three things: a GPU's slice of the seeded inputs (host),
 * the gather of the outputs onto GPU 0 (host), and the pack/unpack around an
 * all-to-all (device: napkin_shard_slice_cuda_source, the same formula). */
typedef struct
{
  gint64 outer;
  gint64 total;
  gint64 part;
  gint64 inner;
} NapkinShardSlice;

/* `dims` (rank of them) split along `dim` into `parts`: FALSE with a message naming
 * the dimension when it does not divide evenly. */
gboolean  napkin_shard_slice_init     (NapkinShardSlice  *slice,
                                       const gint64      *dims,
                                       guint              rank,
                                       guint              dim,
                                       guint              parts,
                                       char             **message);
/* Elements in one piece: outer · part · inner. */
gint64    napkin_shard_slice_elements (const NapkinShardSlice *slice);
/* Where element `e` of piece `piece` lies in the whole tensor. */
gint64    napkin_shard_slice_index    (const NapkinShardSlice *slice,
                                       guint                   piece,
                                       gint64                  e);
/* Copies piece `piece` out of `whole` into the contiguous `out` (elements of
 * elem_bytes each), and back. */
void      napkin_shard_slice_extract  (const NapkinShardSlice *slice,
                                       guint                   piece,
                                       const void             *whole,
                                       void                   *out,
                                       gsize                   elem_bytes);
void      napkin_shard_slice_place    (const NapkinShardSlice *slice,
                                       guint                   piece,
                                       const void             *in,
                                       void                   *whole,
                                       gsize                   elem_bytes);

/* The all-to-all of a tensor whose `from` dimension is split across `parts` GPUs
 * into one whose `to` dimension is (Ulysses: sequence → heads). `local_dims` are
 * the local shape before it (dims[from] already the piece). Pack: the send buffer
 * holds, for destination j, this GPU's piece j along `to` (pack = piece j of the
 * local tensor split along `to`), contiguously, chunk after chunk. Unpack: chunk i
 * received from GPU i is piece i along `from` of the result, whose `to` dimension
 * is the piece. */
typedef struct
{
  NapkinShardSlice pack;     /* over the local tensor before: split along `to` */
  NapkinShardSlice unpack;   /* over the local tensor after: split along `from` */
  gint64           chunk;    /* elements sent to each GPU */
} NapkinShardAllToAll;

gboolean  napkin_shard_all_to_all_init (NapkinShardAllToAll *a2a,
                                        const gint64        *local_dims,
                                        guint                rank,
                                        guint                from,
                                        guint                to,
                                        guint                parts,
                                        char               **message);

/* CUDA C of the device copy kernels: napkin_slice_extract_uN / napkin_slice_place_uN
 * (N = 1, 2, 4, 16 bytes a unit) with parameters (dst, src, outer, total, part,
 * inner_units, piece); launch over outer·part·inner_units threads. */
const char *napkin_shard_slice_cuda_source (void);
/* The widest unit (16, 4, 2 or 1 bytes) that divides inner·elem_bytes. */
guint     napkin_shard_slice_unit      (const NapkinShardSlice *slice,
                                        gsize                   elem_bytes);

G_END_DECLS
