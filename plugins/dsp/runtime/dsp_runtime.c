/* The DSP plugin's mock runtime: the freestanding C that turns a rendered kernel into a static Hexagon Linux program
 * for qemu-hexagon. There is no Hexagon libc or compiler-rt on the build machines, so this file is the program's
 * whole world: _start, the Linux system calls (trap0(#1), asm-generic numbers), the launch protocol on stdin and
 * stdout, and the library calls clang emits for Hexagon. Compiled with -ffreestanding, so no loop here is turned
 * back into a call of the function it implements.
 *
 * Protocol (little-endian, both ends in plugins/dsp/launch.cpp):
 *   in:  struct tg_dsp_header; nregions x struct tg_dsp_region; nbuffers x struct tg_dsp_buffer_slot; the packed
 *        argument blob (args_size bytes; buffer slots are rewritten here); then every region's bytes, in order
 *   out: TG_DSP_DONE, then the bytes of every region marked writable, in order
 * Exit status 0 on success; 120 for a protocol error, described on stderr. */

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;

#define TG_DSP_MAGIC 0x53445447u /* "GTDS": the header's first word */
#define TG_DSP_DONE 0x4b4f4754u  /* "TGOK": the first word the program writes back */

struct tg_dsp_header {
  u32 magic, nregions, nbuffers, args_size;
  u64 count; /* work-items: global[0] */
};
struct tg_dsp_region {
  u32 size, writable;
  u32 skew; /* the host address of the region's first byte modulo 128: kept, so HVX alignment is the host's */
  u32 reserved;
};
struct tg_dsp_buffer_slot {
  u32 arg_offset; /* where the buffer's 8-byte address goes in the argument blob */
  u32 region, offset;
  u32 reserved;
};

/* The kernel, as the renderer names its entry. */
void tg_dsp_kernel(const unsigned char* args, long long gidx0_start, long long gidx0_end);

/* ---- Linux system calls (hexagon uses the asm-generic table: qemu linux-user/hexagon) ---------------------------- */

enum { SYS_read = 63, SYS_write = 64, SYS_exit_group = 94, SYS_mmap2 = 222 };

static long syscall6(long n, long a, long b, long c, long d, long e, long f) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  register long r4 __asm__("r4") = e;
  register long r5 __asm__("r5") = f;
  register long r6 __asm__("r6") = n;
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6) : "memory");
  return r0;
}

static __attribute__((noreturn)) void exit_group(int status) {
  for (;;) syscall6(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

static u32 length(const char* s) {
  u32 n = 0;
  while (s[n]) ++n;
  return n;
}

static __attribute__((noreturn)) void fail(const char* what) {
  static const char prefix[] = "dsp runtime: ";
  syscall6(SYS_write, 2, (long)prefix, sizeof prefix - 1, 0, 0, 0);
  syscall6(SYS_write, 2, (long)what, (long)length(what), 0, 0, 0);
  syscall6(SYS_write, 2, (long)"\n", 1, 0, 0, 0);
  exit_group(120);
}

static void read_all(void* dst, u32 n) {
  u8* p = (u8*)dst;
  while (n > 0) {
    const long got = syscall6(SYS_read, 0, (long)p, (long)n, 0, 0, 0);
    if (got <= 0) fail(got == 0 ? "the input ended early" : "cannot read the input");
    p += got, n -= (u32)got;
  }
}

static void write_all(const void* src, u32 n) {
  const u8* p = (const u8*)src;
  while (n > 0) {
    const long put = syscall6(SYS_write, 1, (long)p, (long)n, 0, 0, 0);
    if (put <= 0) fail("cannot write the output");
    p += put, n -= (u32)put;
  }
}

/* Zeroed, page-aligned memory of its own for each region. */
static u8* map(u32 size) {
  const u32 len = (size + 4095u) / 4096u * 4096u;
  const long p = syscall6(SYS_mmap2, 0, (long)(len ? len : 4096u), 3 /* read|write */, 0x22 /* private|anon */, -1, 0);
  if ((unsigned long)p >= 0xfffff000ul) fail("cannot map memory for a buffer (mmap2 failed)");
  return (u8*)p;
}

enum { kMaxRegions = 1024 };

void _start(void) {
  static u8* bases[kMaxRegions];
  static struct tg_dsp_region regions[kMaxRegions];
  struct tg_dsp_header h;
  read_all(&h, sizeof h);
  if (h.magic != TG_DSP_MAGIC) fail("the input does not start with the launch header");
  if (h.nregions > kMaxRegions) fail("too many buffers");
  read_all(regions, h.nregions * (u32)sizeof(struct tg_dsp_region));
  struct tg_dsp_buffer_slot* slots =
      (struct tg_dsp_buffer_slot*)map(h.nbuffers * (u32)sizeof(struct tg_dsp_buffer_slot));
  read_all(slots, h.nbuffers * (u32)sizeof(struct tg_dsp_buffer_slot));
  u8* args = map(h.args_size);
  read_all(args, h.args_size);
  for (u32 r = 0; r < h.nregions; ++r) {
    if (regions[r].skew >= 128u || regions[r].size > 0xffffff00u) fail("a region descriptor is malformed");
    bases[r] = map(regions[r].size + regions[r].skew) + regions[r].skew;
    read_all(bases[r], regions[r].size);
  }
  for (u32 b = 0; b < h.nbuffers; ++b) {
    const struct tg_dsp_buffer_slot* s = &slots[b];
    if (s->region >= h.nregions || s->offset > regions[s->region].size || s->arg_offset + 8u > h.args_size)
      fail("a buffer slot lies outside its region or the argument blob");
    const u64 address = (u32)(bases[s->region] + s->offset);
    u8* slot = args + s->arg_offset;
    for (int i = 0; i < 8; ++i) slot[i] = (u8)(address >> (8 * i));
  }
  tg_dsp_kernel(args, 0, (long long)h.count);
  const u32 done = TG_DSP_DONE;
  write_all(&done, sizeof done);
  for (u32 r = 0; r < h.nregions; ++r)
    if (regions[r].writable) write_all(bases[r], regions[r].size);
  exit_group(0);
}
