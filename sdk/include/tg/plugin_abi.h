/* tg plugin ABI v1.8: the plain C contract between the tg core and a device plugin.
 *
 * Ownership, once: what a *_create call returns belongs to the caller, who releases it with the matching
 * *_destroy slot; what an accessor returns is borrowed and lives as long as the object it came from; a callee
 * may keep what it is given only by copying it.
 *
 * Versioning: a major.minor pair. Minor versions only append (new enum values, new struct members at the end,
 * new table slots at the end); every struct that can grow starts with `struct_size`, so each side reads only
 * the members the other side knows (TG_ABI_HAS tests whether a struct someone else filled reaches a member).
 * A different major is refused.
 *
 * Negotiation: the core calls the entry point with the newest version it speaks; the plugin answers with its
 * table, whose abi_major/abi_minor say what it implements. The core loads plugins of its major whose minor is
 * TG_ABI_OLDEST_MINOR or newer (the support window; a newer minor only appended what the core ignores). Slots
 * appended after 1.0 are optional: NULL means "not provided" and the core has a documented fallback. Version 0
 * is never valid, so a zeroed struct cannot pass for a table.
 *
 * Errors: every call returns a tg_status_t. NULL means success; otherwise it points at a status the plugin made
 * with a code and a message, which the caller reads and then frees with tg_plugin_api.status_free.
 */
#ifndef TG_PLUGIN_ABI_H
#define TG_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_ABI_VERSION_MAJOR 1u
#define TG_ABI_VERSION_MINOR 8u
#define TG_ABI_OLDEST_MINOR 0u /* the oldest plugin minor this core still loads */
#define TG_ABI_ENTRY_POINT "tg_plugin_get_api"

/* Whether a struct that starts with struct_size, filled by the other side, reaches `member`. */
#define TG_ABI_HAS(ptr, type, member) ((ptr)->struct_size >= offsetof(type, member) + sizeof(((const type*)0)->member))

/* ---- status ------------------------------------------------------------------------------------------------ */

typedef enum tg_status_code {
  TG_OK = 0,
  TG_ERR_INVALID_ARGUMENT = 1,
  TG_ERR_OUT_OF_MEMORY = 2,
  TG_ERR_COMPILE = 3,     /* message carries the compiler's diagnostics */
  TG_ERR_UNSUPPORTED = 4, /* the plugin does not implement what was asked */
  TG_ERR_UNAVAILABLE = 5, /* hardware or a vendor library is missing */
  TG_ERR_ABI = 6,         /* version negotiation failed */
  TG_ERR_INTERNAL = 7,
} tg_status_code;

typedef struct tg_status {
  int32_t code;  /* a tg_status_code */
  char* message; /* NUL-terminated, owned by the status */
} tg_status;

typedef tg_status* tg_status_t; /* NULL = success */

/* ---- dtypes and KIR ---------------------------------------------------------------------------------------- */

/* Stable scalar type numbering; a renderer declares the ones it supports as a bit mask (1u << dtype). */
typedef enum tg_dtype {
  TG_DTYPE_BOOL = 0,
  TG_DTYPE_INT8 = 1,
  TG_DTYPE_INT16 = 2,
  TG_DTYPE_INT32 = 3,
  TG_DTYPE_INT64 = 4,
  TG_DTYPE_UINT8 = 5,
  TG_DTYPE_UINT16 = 6,
  TG_DTYPE_UINT32 = 7,
  TG_DTYPE_UINT64 = 8,
  TG_DTYPE_FLOAT16 = 9,
  TG_DTYPE_BFLOAT16 = 10,
  TG_DTYPE_FLOAT32 = 11,
  TG_DTYPE_FLOAT64 = 12,
  TG_DTYPE_COUNT = 13,
} tg_dtype;

/* Address spaces of pointers (buffer parameters and DEFINE_* instructions). */
typedef enum tg_addrspace {
  TG_ADDR_GLOBAL = 0,
  TG_ADDR_LOCAL = 1, /* shared by a work-group */
  TG_ADDR_REG = 2,   /* private to one work-item */
  TG_ADDR_IMAGE = 3, /* (ABI 1.2) a TG_PARAM_IMAGE parameter: read through an image2d view, never written */
} tg_addrspace;

/* KIR opcodes. Numbering is stable; new ops are only appended. `src` lists operands by instruction index. */
typedef enum tg_kir_op {
  /* definitions */
  TG_KIR_PARAM = 0,        /* arg.i = parameter index; buffers: pointer to dtype, vars: scalar value */
  TG_KIR_CONST = 1,        /* scalar constant: arg.i for ints/bool, arg.f for floats */
  TG_KIR_SPECIAL = 2,      /* work-item id: arg.i = TG_SPECIAL_* kind*4 + dim; src[0] = extent */
  TG_KIR_DEFINE_REG = 3,   /* private array: arg.i elements of dtype x vcount */
  TG_KIR_DEFINE_LOCAL = 4, /* work-group shared array: arg.i elements */
  /* control flow */
  TG_KIR_RANGE = 5,    /* loop var from 0 to src[0] (exclusive); int dtype; arg.i = loop id */
  TG_KIR_ENDRANGE = 6, /* closes src[0] (a RANGE) */
  TG_KIR_IF = 7,       /* src[0] = bool condition */
  TG_KIR_ENDIF = 8,    /* closes src[0] (an IF) */
  TG_KIR_BARRIER = 9,  /* work-group barrier on local memory */
  /* memory */
  TG_KIR_LOAD = 10,  /* src[0] = pointer, src[1] = element index, src[2] (optional) = bool gate: 0 if false */
  TG_KIR_STORE = 11, /* src[0] = pointer, src[1] = element index, src[2] = value, src[3] (optional) gate */
  /* vectors */
  TG_KIR_VECTORIZE = 12, /* vcount scalar sources -> one vector */
  TG_KIR_GEP = 13,       /* lane arg.i of vector src[0] */
  /* unary */
  TG_KIR_NEG = 14,
  TG_KIR_EXP2 = 15,
  TG_KIR_LOG2 = 16,
  TG_KIR_SIN = 17,
  TG_KIR_SQRT = 18,
  TG_KIR_RECIP = 19,
  TG_KIR_TRUNC = 20,
  TG_KIR_CAST = 21,    /* value conversion to dtype (float->int truncates toward zero) */
  TG_KIR_BITCAST = 22, /* same-size reinterpretation */
  /* binary */
  TG_KIR_ADD = 23,
  TG_KIR_SUB = 24,
  TG_KIR_MUL = 25,
  TG_KIR_IDIV = 26,  /* integer division truncating toward zero; callers guard division by zero */
  TG_KIR_MOD = 27,   /* C remainder (sign of the dividend) */
  TG_KIR_FDIV = 28,  /* IEEE float division */
  TG_KIR_MAX = 29,   /* for floats: NaN if either operand is NaN */
  TG_KIR_CMPLT = 30, /* result dtype bool */
  TG_KIR_CMPNE = 31,
  TG_KIR_CMPEQ = 32,
  TG_KIR_AND = 33,
  TG_KIR_OR = 34,
  TG_KIR_XOR = 35,
  TG_KIR_SHL = 36,
  TG_KIR_SHR = 37, /* arithmetic for signed, logical for unsigned */
  /* ternary */
  TG_KIR_WHERE = 38,  /* src[0] bool ? src[1] : src[2] */
  TG_KIR_MULACC = 39, /* src[0]*src[1]+src[2] */
  /* inline code (ABI 1.1), for renderers whose caps name a language: arg.i indexes kernel->strings, a snippet
   * in that language where {0}..{9} stand for the operands (src) */
  TG_KIR_CUSTOM = 40,  /* a statement; produces no value */
  TG_KIR_CUSTOMI = 41, /* an expression of dtype x vcount */
  TG_KIR_FMA = 42,     /* src[0]*src[1]+src[2] rounded once (IEEE fusedMultiplyAdd), floats (ABI 1.1) */
  /* ABI 1.2: D = A * B + C on the tensor core caps.tensor_cores[arg.i], computed together by the work-items that
   * share it (tg_tensor_core.threads); src[0..2] are this work-item's A, B and C fragments, the result its D
   * fragment (dtype_acc x the C fragment's lanes). Every work-item of the group must reach it (no divergence). */
  TG_KIR_WMMA = 43,
  /* ABI 1.3: a 4-way byte dot product on int32 lanes, all three operands int32: src[0] + the sum over bytes
   * i = 0..3 of (byte i of src[1], unsigned) * (byte i of src[2], signed), wrapping (x86 VNNI's vpdpbusd, PTX's
   * dp4a.u32.s32). The core builds it from shifts, masks and multiplies for renderers that do not take it.
   * ABI 1.8: arg.i is 0 or TG_KIR_DOT4_NARROW, a promise that each pair of byte products (bytes 0 and 1, bytes 2
   * and 3) sums within int16 (every unsigned byte <= 127, or every signed one within +-64, suffices), so that the
   * pair sums may saturate (x86's vpmaddubsw then vpmaddwd by ones, where there is no vpdpbusd); a renderer may
   * ignore it (exact sums are always right). */
  TG_KIR_DOT4 = 44,
  /* ABI 1.4: a 16-entry byte table lookup on int32 lanes, all five operands int32: byte i of the result is entry
   * (byte i of src[0]) & 15 of the table, whose entry j is byte j % 4 of src[1 + j / 4] (x86's pshufb with the
   * index masked to its low nibble, ARM's tbl). The core builds it from shifts, masks and selects for renderers that
   * do not take it. */
  TG_KIR_LUT16 = 45,
  /* ABI 1.6: C = A . B (or C += A . B) on the host's matrix unit (x86 AMX), a statement on memory: where the unit's
   * registers are not per work-item values (a tile is 16 rows of 64 bytes for the whole core), the op is the
   * unit's micro-kernel over whole K, and the compiler keeps the loops around it (blocking, threads). Claimed in
   * caps.ops of C's dtype: float32 from bfloat16 A and B, or int32 from int8 A and B (signed x signed). C is M x N
   * with M = 16 * (arg.i & 15) and N = 16 * ((arg.i >> 4) & 15), each 1 or 2; arg.i & 256: C += A . B, else
   * C = A . B. Operands (the indices, strides and steps int64; indices and strides count elements):
   *   src[0] C, src[1] index of C[0][0], src[2] C's row stride: C[m][n] is at src[1] + m * src[2] + n
   *   src[3] A, src[4] index of A's first slab, src[5] distance between A's slabs of 16 rows
   *   src[6] B, src[7] index of B's first slab, src[8] distance between B's slabs of 16 columns
   *   src[9] steps: K = steps * 64 / itemsize (32 bfloat16 or 64 int8 values a step)
   * A slab holds 1024 bytes per step, row r of step s at byte s * 1024 + r * 64 (its 64 bytes in k order). A B slab
   * holds them in the unit's interleaved order: the g = 4 / itemsize values k .. k + g - 1 (k = 0, g, .. within
   * the step) of column n of step s at byte s * 1024 + (k / g) * 64 + n * 4. The products are summed in C's dtype
   * in an order the unit picks (float32 may differ from a sequential sum by rounding; int32 wraps). */
  TG_KIR_TILE_MMA = 46,
  TG_KIR_OP_COUNT = 47,
} tg_kir_op;

#define TG_KIR_DOT4_NARROW 1 /* DOT4's arg.i: its pairs of byte products fit int16 (ABI 1.8) */

typedef enum tg_special_kind {
  TG_SPECIAL_GLOBAL = 0, /* global work-item id along dim */
  TG_SPECIAL_GROUP = 1,  /* work-group id */
  TG_SPECIAL_LOCAL = 2,  /* id inside the work-group */
} tg_special_kind;

typedef union tg_kir_arg {
  int64_t i;
  double f;
} tg_kir_arg;

typedef struct tg_kir_inst {
  uint16_t op;       /* tg_kir_op */
  uint8_t dtype;     /* tg_dtype of the result (for pointers: of the element) */
  uint8_t vcount;    /* lanes: 1 = scalar */
  uint8_t addrspace; /* tg_addrspace, for pointer-producing instructions */
  uint8_t nsrc;
  uint16_t reserved;
  uint32_t src_start; /* operands are src_pool[src_start .. src_start+nsrc) */
  uint32_t reserved2;
  tg_kir_arg arg;
} tg_kir_inst;

typedef enum tg_param_kind {
  TG_PARAM_BUFFER = 0, /* passed as a 64-bit device address */
  TG_PARAM_VAR = 1,    /* passed by value at its natural size and alignment */
  /* (ABI 1.2) a float32 buffer the kernel only reads, through an image2d view of RGBA float32 texels `reserved`
   * texels wide: element e is lane e % 4 of texel t = e / 4, at (x, y) = (t % width, t / width). Passed like a
   * buffer (its 64-bit device address); its PARAM instruction has addrspace TG_ADDR_IMAGE. Sent only to
   * renderers whose caps.image_max_width is nonzero, for views within image_max_width x image_max_height. */
  TG_PARAM_IMAGE = 2,
} tg_param_kind;

typedef struct tg_kir_param {
  uint32_t kind;     /* tg_param_kind */
  uint32_t dtype;    /* element dtype of a buffer, or the scalar's dtype */
  uint32_t writable; /* buffers: the kernel stores to it */
  uint32_t reserved; /* TG_PARAM_IMAGE: the view's width in texels (ABI 1.2); otherwise 0 */
  const char* name;  /* buffers: "data0"...; vars: the variable's name */
} tg_kir_param;

typedef struct tg_kir_kernel {
  size_t struct_size;
  const char* name; /* a C identifier for humans (E_4_16); different bodies may share it: cache by content */
  const tg_kir_inst* insts;
  uint32_t ninsts;
  uint32_t nsrc_pool;
  const int32_t* src_pool;
  const tg_kir_param* params;
  uint32_t nparams;
  uint32_t global_dims; /* SPECIAL global dims used (0..3) */
  /* ABI 1.1 */
  const char* const* strings; /* CUSTOM/CUSTOMI snippets */
  uint32_t nstrings;
  uint32_t reserved;
} tg_kir_kernel;

/* Kernel arguments at launch: one packed blob, the parameters in signature order, each at its natural
 * alignment (buffers: 8-byte device addresses; vars: 1/2/4/8 bytes). */
/* The launch grid: `global` counts work-groups per dim and `local` work-items per group (CUDA's grid and block),
 * so a SPECIAL global id is group id * local + local id and global[d] * local[d] work-items run along dim d. */
typedef struct tg_launch_dims {
  uint32_t global[3];
  uint32_t local[3];
} tg_launch_dims;

/* Bytes of one scalar of a dtype. */
static inline uint32_t tg_dtype_size(uint32_t dtype) {
  static const uint8_t sizes[TG_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  return dtype < TG_DTYPE_COUNT ? sizes[dtype] : 0;
}

/* Bytes a parameter takes in the packed argument blob (its alignment is the same number). */
static inline uint32_t tg_param_size(const tg_kir_param* param) {
  return param->kind == TG_PARAM_VAR ? tg_dtype_size(param->dtype) : 8u;
}

/* Byte offset of every parameter in the packed blob (out_offsets has nparams entries); returns the blob size. */
static inline size_t tg_param_layout(const tg_kir_param* params, uint32_t nparams, size_t* out_offsets) {
  size_t off = 0;
  for (uint32_t i = 0; i < nparams; ++i) {
    size_t sz = tg_param_size(&params[i]);
    off = (off + sz - 1) / sz * sz;
    out_offsets[i] = off;
    off += sz;
  }
  return off;
}

/* ---- renderer capabilities ----------------------------------------------------------------------------------- */

/* ABI 1.2: a tensor core, the matrix unit behind TG_KIR_WMMA: D = A * B + C with A m x k, B k x n, C and D m x n,
 * computed by `threads` work-items together: consecutive local ids along dim 0, starting at a multiple of threads
 * (a warp). Each work-item holds a fragment of every matrix: a vector whose lanes are some of its elements.
 * Which ones is a bit map per matrix: write an element's coordinates as the bits of (row | col << log2(rows))
 * (A: rows m, cols k; B: rows k, cols n; C/D: rows m, cols n); map[i] names where coordinate bit i comes from:
 * TG_TC_LANE(b) is bit b of the work-item's lane (local id % threads), TG_TC_ELEM(b) bit b of the lane index in
 * the fragment. A fragment has 2^(number of TG_TC_ELEM entries in its map) lanes; m, n, k and threads are powers
 * of two. Example, NVIDIA's mma.sync m16n8k16 (lane = 4 * group + t): A row = group + 8 * e1, col = 2t + e0 +
 * 8 * e2 -> a_map {L2, L3, L4, E1, E0, L0, L1, E2}. */
#define TG_TC_LANE(b) ((uint8_t)(b))
#define TG_TC_ELEM(b) ((uint8_t)(32 + (b)))
typedef struct tg_tensor_core {
  size_t struct_size; /* also the stride of the caps' array: a later minor may append members */
  uint32_t m, n, k;
  uint32_t dtype_in;  /* A and B */
  uint32_t dtype_acc; /* C and D */
  uint32_t threads;
  uint8_t a_map[16]; /* log2(m) + log2(k) entries used */
  uint8_t b_map[16]; /* log2(k) + log2(n) */
  uint8_t c_map[16]; /* log2(m) + log2(n) */
} tg_tensor_core;

typedef struct tg_renderer_caps {
  size_t struct_size;
  uint32_t dtypes;                        /* bit mask of tg_dtype the renderer can load, store and compute */
  uint64_t ops[TG_DTYPE_COUNT];           /* per dtype: bit mask of tg_kir_op ALU ops taken whole */
  uint32_t vector_widths[TG_DTYPE_COUNT]; /* per dtype: bit mask of supported lane counts (bit n = n lanes) */
  uint32_t has_local;                     /* DEFINE_LOCAL + BARRIER */
  uint32_t has_threads;                   /* runs global dim 0 across CPU threads */
  uint32_t max_global_dims;               /* SPECIAL global dims the launch understands */
  uint32_t max_global[3];
  uint32_t max_local[3];
  uint32_t max_local_threads;
  uint64_t local_mem_bytes;
  uint32_t max_params; /* most parameters a kernel may have */
  /* ABI 1.1 */
  const char* language; /* the source language ("c", "opencl-c", "cuda") CUSTOM snippets must be written in;
                           NULL: the renderer takes no inline code */
  /* ABI 1.2 */
  const tg_tensor_core* tensor_cores; /* WMMA's units, borrowed from the renderer, struct_size bytes apart (read
                                         them with TG_ABI_HAS); NULL when ntensor_cores is 0. A
                                         renderer claiming one takes VECTORIZE, GEP and register LOAD/STORE of
                                         its fragments' dtypes and lane counts, whatever vector_widths says */
  uint32_t ntensor_cores;
  uint32_t image_max_width;  /* TG_PARAM_IMAGE views up to this many texels wide and image_max_height high; */
  uint32_t image_max_height; /* 0: the renderer reads no images */
  uint32_t reserved_1_2;
  /* ABI 1.3 */
  uint32_t packed_loads; /* bit mask of tg_dtype: a LOAD of such a dtype through a pointer to uint8 reads the
                            dtype's bytes at byte index src[1], little-endian, at any alignment (a vector: lanes
                            one itemsize apart). The core splits packed loads the renderer does not take into
                            byte loads. */
  uint32_t reserved_1_3;
  /* ABI 1.5: the machine a kernel's values live on, for register tiles and cache blocking; 0 = not said (the
     core then assumes 16 registers of 64 bytes and no cache limit) */
  uint32_t simd_bytes;     /* bytes of one vector register: 16 (SSE, NEON), 32 (AVX2), 64 (AVX-512) */
  uint32_t simd_registers; /* vector registers a kernel's values may occupy: 16 (AVX2), 32 (AVX-512, NEON) */
  uint64_t l2_bytes;       /* the cache one core's working set should fit (its L2); 0 = unknown */
} tg_renderer_caps;

/* ---- opaque handles ------------------------------------------------------------------------------------------ */

typedef struct tg_device_s* tg_device;
typedef struct tg_renderer_s* tg_renderer;
typedef struct tg_compiler_s* tg_compiler;
typedef struct tg_allocator_s* tg_allocator;
typedef struct tg_program_s* tg_program;
typedef struct tg_hwqueue_s* tg_hwqueue;

typedef struct tg_buffer_desc {
  uint64_t addr; /* device address; on host devices a host pointer */
  uint64_t size; /* bytes */
  void* handle;  /* plugin-private */
} tg_buffer_desc;

typedef struct tg_device_info {
  size_t struct_size;
  const char* name;        /* "CPU", "NV"... the DEV name */
  const char* description; /* human readable: "x86_64 16 cores (avx512f)" */
  const char* arch;        /* target the compiler emits for: "x86-64-v4", "sm_90" */
  uint64_t memory_bytes;
  uint32_t is_host; /* buffers are directly addressable by the host */
} tg_device_info;

/* ---- the plugin table ---------------------------------------------------------------------------------------- */

typedef struct tg_plugin_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* plugin_name; /* "cpu" */
  const char* device_name; /* the DEV name it provides: "CPU" */

  void (*status_free)(tg_status_t status);

  /* devices */
  tg_status_t (*device_count)(uint32_t* out_count);
  tg_status_t (*device_open)(uint32_t index, tg_device* out_device);
  void (*device_close)(tg_device device);
  tg_status_t (*device_get_info)(tg_device device, tg_device_info* out_info); /* out_info->struct_size preset */

  /* Renderer: KIR -> source text */
  tg_status_t (*renderer_create)(tg_device device, const char* target, tg_renderer* out_renderer);
  void (*renderer_destroy)(tg_renderer renderer);
  tg_status_t (*renderer_get_caps)(tg_renderer renderer, tg_renderer_caps* out_caps);
  /* *out_source stays valid until the next render call on this renderer or its destruction */
  tg_status_t (*renderer_render)(tg_renderer renderer, const tg_kir_kernel* kernel, const char** out_source);

  /* Compiler: source -> binary blob */
  tg_status_t (*compiler_create)(tg_device device, tg_compiler* out_compiler);
  void (*compiler_destroy)(tg_compiler compiler);
  /* the blob is the caller's; free it with blob_free */
  tg_status_t (*compiler_compile)(tg_compiler compiler, const char* source, const char* kernel_name, void** out_blob,
                                  size_t* out_size);
  void (*blob_free)(void* blob);

  /* Allocator */
  tg_status_t (*allocator_alloc)(tg_device device, uint64_t size, tg_buffer_desc* out_buffer);
  void (*allocator_free)(tg_device device, const tg_buffer_desc* buffer);
  tg_status_t (*allocator_copy_in)(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                                   uint64_t size);
  tg_status_t (*allocator_copy_out)(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                                    uint64_t size);

  /* Program */
  tg_status_t (*program_create)(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                const tg_kir_param* params, uint32_t nparams, tg_program* out_program);
  void (*program_destroy)(tg_program program);

  /* HWQueue: commands are recorded, then submitted; signals are 64-bit values that only grow */
  tg_status_t (*hwqueue_create)(tg_device device, tg_hwqueue* out_queue);
  void (*hwqueue_destroy)(tg_hwqueue queue);
  tg_status_t (*hwqueue_exec)(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                              const tg_launch_dims* dims);
  tg_status_t (*hwqueue_copy)(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset,
                              const tg_buffer_desc* src, uint64_t src_offset, uint64_t size);
  tg_status_t (*hwqueue_signal)(tg_hwqueue queue, uint64_t value);        /* queue sets its signal to value */
  tg_status_t (*hwqueue_timestamp)(tg_hwqueue queue, uint64_t* out_slot); /* records a time stamp */
  tg_status_t (*hwqueue_submit)(tg_hwqueue queue);
  /* blocks until the queue's signal reaches value; timeout_ns = 0 waits forever */
  tg_status_t (*hwqueue_wait)(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns);
  /* nanoseconds of a recorded time stamp, valid once the command ran */
  tg_status_t (*hwqueue_read_timestamp)(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns);

  /* ---- ABI 1.1: optional slots; NULL = not provided, the core's fallback in brackets ---- */
  /* Returns once everything submitted to any queue of the device has finished [the core waits on the signal
   * of every queue it created]. Part of quiesce-and-unload. */
  tg_status_t (*device_synchronize)(tg_device device);
  /* A named extension's table, or NULL for a name the plugin does not know [no extensions]. Names are
   * dotted ("org.example.fast_copy.v1"); each extension defines its table. Unknown names are never an error. */
  const void* (*get_extension)(const char* name);
  /* Called once after the core released every handle the plugin gave it and before it unloads the library:
   * join threads, drop caches [nothing]. The table may be fetched again afterwards (a reload). */
  void (*plugin_shutdown)(void);

  /* ---- ABI 1.7: optional ---- */
  /* Copies `size` bytes from a buffer of `src_device` to a buffer of `dst_device`, two devices of this plugin,
   * without a trip through host memory: a peer copy (cuMemcpyPeer, hipMemcpyPeer; a memcpy between host devices).
   * The core calls it once what was submitted on either device has finished; it returns once the bytes are in
   * place. Out-of-range offsets and sizes are TG_ERR_INVALID_ARGUMENT [the core copies out to the host, then in]. */
  tg_status_t (*allocator_copy_peer)(tg_device dst_device, const tg_buffer_desc* dst, uint64_t dst_offset,
                                     tg_device src_device, const tg_buffer_desc* src, uint64_t src_offset,
                                     uint64_t size);
} tg_plugin_api;

/* The table size of ABI 1.0: the end of its last slot. Slots past it are optional. */
#define TG_PLUGIN_API_SIZE_1_0 (offsetof(tg_plugin_api, hwqueue_read_timestamp) + sizeof(void*))

/* The single exported entry point. The core passes the newest ABI version it speaks; the plugin returns its
 * table, or NULL with *out_status set when it cannot serve that major. Having no table, the core cannot call
 * status_free on such a refusal: the status and its message must come from malloc, and the core free()s both. */
typedef const tg_plugin_api* (*tg_plugin_get_api_fn)(uint32_t core_major, uint32_t core_minor, tg_status_t* out_status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TG_PLUGIN_ABI_H */
