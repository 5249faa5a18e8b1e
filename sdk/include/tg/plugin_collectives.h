/* tg device-collectives extension, v1: a plugin whose devices combine values across ranks without the host (a
 * GPU collectives library: NCCL in the NV plugin) serves this table from get_extension(TG_EXT_COLLECTIVES_V1).
 * The core bootstraps a group over another communicator (MPI): rank 0 makes a group id, every rank receives it
 * and joins with comm_create on its own device, and tensors on that device are then combined in device memory.
 *
 * Ownership and errors as in plugin_abi.h: statuses are freed with the plugin table's status_free; a comm made by
 * comm_create is released with comm_destroy. Every call is blocking (it returns when the values are in place).
 */
#ifndef TG_PLUGIN_COLLECTIVES_H
#define TG_PLUGIN_COLLECTIVES_H

#include <tg/plugin_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_EXT_COLLECTIVES_V1 "tg.collectives.v1"

typedef enum tg_reduce_op { TG_REDUCE_SUM = 0, TG_REDUCE_MAX = 1, TG_REDUCE_MIN = 2 } tg_reduce_op;

typedef struct tg_collectives_v1 {
  size_t struct_size;
  size_t id_bytes;     /* the size of a group id (NCCL's unique id: 128) */
  const char* library; /* what runs the collectives, for messages: "NCCL" */
  /* A new group id into out_id (id_bytes bytes), made once, on rank 0; TG_ERR_UNAVAILABLE names what is missing
   * (the library, a network interface). */
  tg_status_t (*group_id)(void* out_id);
  /* This device as rank `rank` of `nranks` in group `id`; collective: returns once every rank has joined. */
  tg_status_t (*comm_create)(tg_device device, const void* id, uint32_t nranks, uint32_t rank, void** out_comm);
  void (*comm_destroy)(void* comm);
  /* dst = src combined over the group (both buffers of the comm's device; dst == src is in place): `count`
   * elements of `dtype` (a tg_dtype), `op` a tg_reduce_op. */
  tg_status_t (*allreduce)(void* comm, const tg_buffer_desc* dst, const tg_buffer_desc* src, uint64_t count,
                           uint32_t dtype, uint32_t op);
} tg_collectives_v1;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TG_PLUGIN_COLLECTIVES_H */
