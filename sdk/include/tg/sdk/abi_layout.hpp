// Compile-time freezes of the plugin ABI v1 (1.0 and what 1.1 to 1.5 appended): every struct's size and member offsets
// and every enum value of tg/plugin_abi.h, checked wherever this header is included. A failing assert here means
// the ABI changed shape.
#pragma once

#include <tg/plugin_abi.h>

#include <cstddef>

// The layouts below are those of an LP64 target (64-bit pointers and size_t), the only kind tg supports.
static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "tg plugin ABI v1 assumes an LP64 target");

#define TG_ABI_FREEZE(type, member, offset) \
  static_assert(offsetof(type, member) == (offset), "ABI v1 layout changed: " #type "." #member)
#define TG_ABI_FREEZE_SIZE(type, size) static_assert(sizeof(type) == (size), "ABI v1 size changed: " #type)

TG_ABI_FREEZE(tg_status, code, 0);
TG_ABI_FREEZE(tg_status, message, 8);
TG_ABI_FREEZE_SIZE(tg_status, 16);

TG_ABI_FREEZE(tg_kir_inst, op, 0);
TG_ABI_FREEZE(tg_kir_inst, dtype, 2);
TG_ABI_FREEZE(tg_kir_inst, vcount, 3);
TG_ABI_FREEZE(tg_kir_inst, addrspace, 4);
TG_ABI_FREEZE(tg_kir_inst, nsrc, 5);
TG_ABI_FREEZE(tg_kir_inst, reserved, 6);
TG_ABI_FREEZE(tg_kir_inst, src_start, 8);
TG_ABI_FREEZE(tg_kir_inst, reserved2, 12);
TG_ABI_FREEZE(tg_kir_inst, arg, 16);
TG_ABI_FREEZE_SIZE(tg_kir_inst, 24);
TG_ABI_FREEZE_SIZE(tg_kir_arg, 8);

TG_ABI_FREEZE(tg_kir_param, kind, 0);
TG_ABI_FREEZE(tg_kir_param, dtype, 4);
TG_ABI_FREEZE(tg_kir_param, writable, 8);
TG_ABI_FREEZE(tg_kir_param, reserved, 12);
TG_ABI_FREEZE(tg_kir_param, name, 16);
TG_ABI_FREEZE_SIZE(tg_kir_param, 24);

TG_ABI_FREEZE(tg_kir_kernel, struct_size, 0);
TG_ABI_FREEZE(tg_kir_kernel, name, 8);
TG_ABI_FREEZE(tg_kir_kernel, insts, 16);
TG_ABI_FREEZE(tg_kir_kernel, ninsts, 24);
TG_ABI_FREEZE(tg_kir_kernel, nsrc_pool, 28);
TG_ABI_FREEZE(tg_kir_kernel, src_pool, 32);
TG_ABI_FREEZE(tg_kir_kernel, params, 40);
TG_ABI_FREEZE(tg_kir_kernel, nparams, 48);
TG_ABI_FREEZE(tg_kir_kernel, global_dims, 52);
TG_ABI_FREEZE(tg_kir_kernel, strings, 56);
TG_ABI_FREEZE(tg_kir_kernel, nstrings, 64);
TG_ABI_FREEZE(tg_kir_kernel, reserved, 68);
TG_ABI_FREEZE_SIZE(tg_kir_kernel, 72);

TG_ABI_FREEZE(tg_launch_dims, global, 0);
TG_ABI_FREEZE(tg_launch_dims, local, 12);
TG_ABI_FREEZE_SIZE(tg_launch_dims, 24);

TG_ABI_FREEZE(tg_renderer_caps, struct_size, 0);
TG_ABI_FREEZE(tg_renderer_caps, dtypes, 8);
TG_ABI_FREEZE(tg_renderer_caps, ops, 16);
TG_ABI_FREEZE(tg_renderer_caps, vector_widths, 120);
TG_ABI_FREEZE(tg_renderer_caps, has_local, 172);
TG_ABI_FREEZE(tg_renderer_caps, has_threads, 176);
TG_ABI_FREEZE(tg_renderer_caps, max_global_dims, 180);
TG_ABI_FREEZE(tg_renderer_caps, max_global, 184);
TG_ABI_FREEZE(tg_renderer_caps, max_local, 196);
TG_ABI_FREEZE(tg_renderer_caps, max_local_threads, 208);
TG_ABI_FREEZE(tg_renderer_caps, local_mem_bytes, 216);
TG_ABI_FREEZE(tg_renderer_caps, max_params, 224);
TG_ABI_FREEZE(tg_renderer_caps, language, 232);
TG_ABI_FREEZE(tg_renderer_caps, tensor_cores, 240);
TG_ABI_FREEZE(tg_renderer_caps, ntensor_cores, 248);
TG_ABI_FREEZE(tg_renderer_caps, image_max_width, 252);
TG_ABI_FREEZE(tg_renderer_caps, image_max_height, 256);
TG_ABI_FREEZE(tg_renderer_caps, packed_loads, 264);
TG_ABI_FREEZE(tg_renderer_caps, simd_bytes, 272);
TG_ABI_FREEZE(tg_renderer_caps, simd_registers, 276);
TG_ABI_FREEZE(tg_renderer_caps, l2_bytes, 280);
TG_ABI_FREEZE_SIZE(tg_renderer_caps, 288);

TG_ABI_FREEZE(tg_tensor_core, struct_size, 0);
TG_ABI_FREEZE(tg_tensor_core, m, 8);
TG_ABI_FREEZE(tg_tensor_core, n, 12);
TG_ABI_FREEZE(tg_tensor_core, k, 16);
TG_ABI_FREEZE(tg_tensor_core, dtype_in, 20);
TG_ABI_FREEZE(tg_tensor_core, dtype_acc, 24);
TG_ABI_FREEZE(tg_tensor_core, threads, 28);
TG_ABI_FREEZE(tg_tensor_core, a_map, 32);
TG_ABI_FREEZE(tg_tensor_core, b_map, 48);
TG_ABI_FREEZE(tg_tensor_core, c_map, 64);
TG_ABI_FREEZE_SIZE(tg_tensor_core, 80);

TG_ABI_FREEZE(tg_buffer_desc, addr, 0);
TG_ABI_FREEZE(tg_buffer_desc, size, 8);
TG_ABI_FREEZE(tg_buffer_desc, handle, 16);
TG_ABI_FREEZE_SIZE(tg_buffer_desc, 24);

TG_ABI_FREEZE(tg_device_info, struct_size, 0);
TG_ABI_FREEZE(tg_device_info, name, 8);
TG_ABI_FREEZE(tg_device_info, description, 16);
TG_ABI_FREEZE(tg_device_info, arch, 24);
TG_ABI_FREEZE(tg_device_info, memory_bytes, 32);
TG_ABI_FREEZE(tg_device_info, is_host, 40);
TG_ABI_FREEZE_SIZE(tg_device_info, 48);

TG_ABI_FREEZE(tg_plugin_api, struct_size, 0);
TG_ABI_FREEZE(tg_plugin_api, abi_major, 8);
TG_ABI_FREEZE(tg_plugin_api, abi_minor, 12);
TG_ABI_FREEZE(tg_plugin_api, plugin_name, 16);
TG_ABI_FREEZE(tg_plugin_api, device_name, 24);
TG_ABI_FREEZE(tg_plugin_api, status_free, 32);
TG_ABI_FREEZE(tg_plugin_api, device_count, 40);
TG_ABI_FREEZE(tg_plugin_api, device_open, 48);
TG_ABI_FREEZE(tg_plugin_api, device_close, 56);
TG_ABI_FREEZE(tg_plugin_api, device_get_info, 64);
TG_ABI_FREEZE(tg_plugin_api, renderer_create, 72);
TG_ABI_FREEZE(tg_plugin_api, renderer_destroy, 80);
TG_ABI_FREEZE(tg_plugin_api, renderer_get_caps, 88);
TG_ABI_FREEZE(tg_plugin_api, renderer_render, 96);
TG_ABI_FREEZE(tg_plugin_api, compiler_create, 104);
TG_ABI_FREEZE(tg_plugin_api, compiler_destroy, 112);
TG_ABI_FREEZE(tg_plugin_api, compiler_compile, 120);
TG_ABI_FREEZE(tg_plugin_api, blob_free, 128);
TG_ABI_FREEZE(tg_plugin_api, allocator_alloc, 136);
TG_ABI_FREEZE(tg_plugin_api, allocator_free, 144);
TG_ABI_FREEZE(tg_plugin_api, allocator_copy_in, 152);
TG_ABI_FREEZE(tg_plugin_api, allocator_copy_out, 160);
TG_ABI_FREEZE(tg_plugin_api, program_create, 168);
TG_ABI_FREEZE(tg_plugin_api, program_destroy, 176);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_create, 184);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_destroy, 192);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_exec, 200);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_copy, 208);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_signal, 216);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_timestamp, 224);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_submit, 232);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_wait, 240);
TG_ABI_FREEZE(tg_plugin_api, hwqueue_read_timestamp, 248);
TG_ABI_FREEZE(tg_plugin_api, device_synchronize, 256);
TG_ABI_FREEZE(tg_plugin_api, get_extension, 264);
TG_ABI_FREEZE(tg_plugin_api, plugin_shutdown, 272);
TG_ABI_FREEZE(tg_plugin_api, allocator_copy_peer, 280);
TG_ABI_FREEZE_SIZE(tg_plugin_api, 288);
static_assert(TG_PLUGIN_API_SIZE_1_0 == 256, "ABI 1.0's table size changed");

#undef TG_ABI_FREEZE
#undef TG_ABI_FREEZE_SIZE

// Enum numbering is part of the ABI too: values are only ever appended.
static_assert(TG_OK == 0 && TG_ERR_INVALID_ARGUMENT == 1 && TG_ERR_OUT_OF_MEMORY == 2 && TG_ERR_COMPILE == 3 &&
              TG_ERR_UNSUPPORTED == 4 && TG_ERR_UNAVAILABLE == 5 && TG_ERR_ABI == 6 && TG_ERR_INTERNAL == 7);
static_assert(TG_DTYPE_BOOL == 0 && TG_DTYPE_INT8 == 1 && TG_DTYPE_INT16 == 2 && TG_DTYPE_INT32 == 3 &&
              TG_DTYPE_INT64 == 4 && TG_DTYPE_UINT8 == 5 && TG_DTYPE_UINT16 == 6 && TG_DTYPE_UINT32 == 7 &&
              TG_DTYPE_UINT64 == 8 && TG_DTYPE_FLOAT16 == 9 && TG_DTYPE_BFLOAT16 == 10 && TG_DTYPE_FLOAT32 == 11 &&
              TG_DTYPE_FLOAT64 == 12 && TG_DTYPE_COUNT == 13);
static_assert(TG_ADDR_GLOBAL == 0 && TG_ADDR_LOCAL == 1 && TG_ADDR_REG == 2);
static_assert(TG_KIR_PARAM == 0 && TG_KIR_CONST == 1 && TG_KIR_SPECIAL == 2 && TG_KIR_DEFINE_REG == 3 &&
              TG_KIR_DEFINE_LOCAL == 4 && TG_KIR_RANGE == 5 && TG_KIR_ENDRANGE == 6 && TG_KIR_IF == 7 &&
              TG_KIR_ENDIF == 8 && TG_KIR_BARRIER == 9 && TG_KIR_LOAD == 10 && TG_KIR_STORE == 11 &&
              TG_KIR_VECTORIZE == 12 && TG_KIR_GEP == 13 && TG_KIR_NEG == 14 && TG_KIR_EXP2 == 15 &&
              TG_KIR_LOG2 == 16 && TG_KIR_SIN == 17 && TG_KIR_SQRT == 18 && TG_KIR_RECIP == 19 && TG_KIR_TRUNC == 20 &&
              TG_KIR_CAST == 21 && TG_KIR_BITCAST == 22 && TG_KIR_ADD == 23 && TG_KIR_SUB == 24 && TG_KIR_MUL == 25 &&
              TG_KIR_IDIV == 26 && TG_KIR_MOD == 27 && TG_KIR_FDIV == 28 && TG_KIR_MAX == 29 && TG_KIR_CMPLT == 30 &&
              TG_KIR_CMPNE == 31 && TG_KIR_CMPEQ == 32 && TG_KIR_AND == 33 && TG_KIR_OR == 34 && TG_KIR_XOR == 35 &&
              TG_KIR_SHL == 36 && TG_KIR_SHR == 37 && TG_KIR_WHERE == 38 && TG_KIR_MULACC == 39 &&
              TG_KIR_CUSTOM == 40 && TG_KIR_CUSTOMI == 41 && TG_KIR_FMA == 42 && TG_KIR_WMMA == 43 &&
              TG_KIR_DOT4 == 44 && TG_KIR_LUT16 == 45 && TG_KIR_TILE_MMA == 46 && TG_KIR_OP_COUNT == 47);
static_assert(TG_SPECIAL_GLOBAL == 0 && TG_SPECIAL_GROUP == 1 && TG_SPECIAL_LOCAL == 2);
static_assert(TG_PARAM_BUFFER == 0 && TG_PARAM_VAR == 1 && TG_PARAM_IMAGE == 2);
