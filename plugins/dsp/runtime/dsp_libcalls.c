/* The library calls clang emits for Hexagon and no libc provides here (found by linking kernels and reading the
 * undefined symbols): integer division, float64 division, square roots, trunc and the memory routines; and the
 * float16/bfloat16 conversions the kernels call. Each is plain C that never uses the operation it implements (no
 * '/' or '%' in a divider, no sqrt in a square root) and rounds as IEEE 754 says (to nearest, ties to even). Part
 * of the same freestanding program as dsp_runtime.c. */

typedef unsigned char lc_u8;
typedef unsigned short lc_u16;
typedef unsigned int lc_u32;
typedef int lc_i32;
typedef unsigned long long lc_u64;
typedef long long lc_i64;

/* ---- integer division: shift and subtract; dividing by zero gives 0 (the core guards divisors anyway) ---------- */

static lc_u64 udivmod64(lc_u64 n, lc_u64 d, lc_u64* rem) {
  lc_u64 q = 0, r = 0;
  if (d == 0) {
    *rem = 0;
    return 0;
  }
  for (int i = 63; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    if (r >= d) {
      r -= d;
      q |= 1ull << i;
    }
  }
  *rem = r;
  return q;
}
static lc_u32 udivmod32(lc_u32 n, lc_u32 d, lc_u32* rem) {
  lc_u32 q = 0, r = 0;
  if (d == 0) {
    *rem = 0;
    return 0;
  }
  for (int i = 31; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    if (r >= d) {
      r -= d;
      q |= 1u << i;
    }
  }
  *rem = r;
  return q;
}
static lc_u32 abs32(lc_i32 x) { return x < 0 ? 0u - (lc_u32)x : (lc_u32)x; }
static lc_u64 abs64(lc_i64 x) { return x < 0 ? 0ull - (lc_u64)x : (lc_u64)x; }

lc_u32 __hexagon_udivsi3(lc_u32 a, lc_u32 b) {
  lc_u32 r;
  return udivmod32(a, b, &r);
}
lc_u32 __hexagon_umodsi3(lc_u32 a, lc_u32 b) {
  lc_u32 r;
  udivmod32(a, b, &r);
  return r;
}
lc_i32 __hexagon_divsi3(lc_i32 a, lc_i32 b) { /* truncates toward zero; the sign is the operands' xor */
  lc_u32 r, q = udivmod32(abs32(a), abs32(b), &r);
  return (lc_i32)((a < 0) != (b < 0) ? 0u - q : q);
}
lc_i32 __hexagon_modsi3(lc_i32 a, lc_i32 b) { /* the sign of the dividend */
  lc_u32 r;
  udivmod32(abs32(a), abs32(b), &r);
  return (lc_i32)(a < 0 ? 0u - r : r);
}
lc_u64 __hexagon_udivdi3(lc_u64 a, lc_u64 b) {
  lc_u64 r;
  return udivmod64(a, b, &r);
}
lc_u64 __hexagon_umoddi3(lc_u64 a, lc_u64 b) {
  lc_u64 r;
  udivmod64(a, b, &r);
  return r;
}
lc_i64 __hexagon_divdi3(lc_i64 a, lc_i64 b) {
  lc_u64 r, q = udivmod64(abs64(a), abs64(b), &r);
  return (lc_i64)((a < 0) != (b < 0) ? 0ull - q : q);
}
lc_i64 __hexagon_moddi3(lc_i64 a, lc_i64 b) {
  lc_u64 r;
  udivmod64(abs64(a), abs64(b), &r);
  return (lc_i64)(a < 0 ? 0ull - r : r);
}

/* ---- float64 from its parts, rounded once ------------------------------------------------------------------------ */

static double from_bits(lc_u64 b) { return __builtin_bit_cast(double, b); }
static lc_u64 to_bits(double d) { return __builtin_bit_cast(lc_u64, d); }
static const lc_u64 kQuietNan = 0x7ff8000000000000ull, kInf = 0x7ff0000000000000ull;

/* sign x q x 2^(exp - 54) where q holds 55 significant bits (q >> 54 == 1: two bits below the result's 53) and
 * sticky says whether anything nonzero lies below q: the nearest double, ties to even, subnormals and overflow
 * included. */
static double round_parts(lc_u64 sign, int exp, lc_u64 q, int sticky) {
  int biased = exp + 1023;
  if (biased >= 2047) return from_bits(sign | kInf);
  if (biased <= 0) { /* subnormal: 1 - biased more bits fall off */
    const int shift = 1 - biased;
    if (shift > 56) {
      sticky |= q != 0;
      q = 0;
    } else {
      sticky |= (q & ((1ull << shift) - 1u)) != 0;
      q >>= shift;
    }
    biased = 0;
  }
  lc_u64 mant = q >> 2;
  const lc_u32 low = (lc_u32)(q & 3u);
  if (low > 2u || (low == 2u && (sticky || (mant & 1u)))) ++mant; /* a carry into the exponent is right */
  /* a normal mant has bit 52 set, which adds one to the exponent field: hence biased - 1 */
  return from_bits(sign | (biased > 0 ? ((lc_u64)(biased - 1) << 52) + mant : mant));
}

/* A finite nonzero |x| as m x 2^(e - 52) with m in [2^52, 2^53). */
static void unpack(lc_u64 bits, lc_u64* m, int* e) {
  const int field = (int)((bits >> 52) & 0x7ffu);
  lc_u64 man = bits & 0xfffffffffffffull;
  if (field != 0) {
    *m = man | (1ull << 52);
    *e = field - 1023;
    return;
  }
  int exp = -1022;
  while (!(man >> 52)) {
    man <<= 1;
    --exp;
  }
  *m = man;
  *e = exp;
}

double __hexagon_divdf3(double a, double b) {
  const lc_u64 ab = to_bits(a), bb = to_bits(b), sign = (ab ^ bb) & (1ull << 63);
  const lc_u64 aa = ab & ~(1ull << 63), ba = bb & ~(1ull << 63);
  if (aa > kInf || ba > kInf) return from_bits(kQuietNan);
  if (aa == kInf) return from_bits(ba == kInf ? kQuietNan : sign | kInf);
  if (ba == kInf) return from_bits(sign);
  if (ba == 0) return from_bits(aa == 0 ? kQuietNan : sign | kInf);
  if (aa == 0) return from_bits(sign);
  lc_u64 ma, mb;
  int ea, eb;
  unpack(aa, &ma, &ea);
  unpack(ba, &mb, &eb);
  int exp = ea - eb;
  if (ma < mb) { /* keep the quotient's leading bit first */
    ma <<= 1;
    --exp;
  }
  lc_u64 q = 0, r = ma; /* r < 2 mb < 2^54 all along */
  for (int i = 0; i < 55; ++i) {
    q <<= 1;
    if (r >= mb) {
      r -= mb;
      q |= 1u;
    }
    r <<= 1;
  }
  return round_parts(sign, exp, q, r != 0);
}

/* Correctly rounded: an exact integer square root, two radicand bits per step. */
double sqrt(double x) {
  const lc_u64 bits = to_bits(x), mag = bits & ~(1ull << 63);
  if (mag == 0) return x;                                    /* +-0 */
  if (mag > kInf || bits >> 63) return from_bits(kQuietNan); /* NaN, and every negative number */
  if (mag == kInf) return x;
  lc_u64 m;
  int e;
  unpack(mag, &m, &e);
  if (e & 1) { /* make the exponent even: m in [2^53, 2^54) */
    m <<= 1;
    --e;
  }
  /* root = floor(sqrt(m x 2^56)): 55 bits, radicand bits 109..0 (m's bits, then 56 zeros) */
  lc_u64 root = 0, rem = 0;
  for (int i = 108; i >= 0; i -= 2) {
    const int hi = i + 1 - 56, lo = i - 56;
    const lc_u64 pair = ((hi >= 0 ? (m >> hi) & 1u : 0u) << 1) | (lo >= 0 ? (m >> lo) & 1u : 0u);
    rem = (rem << 2) | pair;
    const lc_u64 trial = (root << 2) | 1u;
    if (rem >= trial) {
      rem -= trial;
      root = (root << 1) | 1u;
    } else {
      root <<= 1;
    }
  }
  return round_parts(0, e / 2, root, rem != 0);
}
double __hexagon_sqrtdf2(double x) { return sqrt(x); }
/* float: the double root rounded again is the correctly rounded float root (53 >= 2 x 24 + 2) */
float __hexagon_sqrtf(float x) { return (float)sqrt((double)x); }
float sqrtf(float x) { return __hexagon_sqrtf(x); }

double trunc(double x) {
  const lc_u64 bits = to_bits(x);
  const int e = (int)((bits >> 52) & 0x7ffu) - 1023;
  if (e >= 52) return x; /* integral, inf or NaN */
  if (e < 0) return from_bits(bits & (1ull << 63));
  return from_bits(bits & ~((1ull << (52 - e)) - 1u));
}
float truncf(float x) {
  const lc_u32 bits = __builtin_bit_cast(lc_u32, x);
  const int e = (int)((bits >> 23) & 0xffu) - 127;
  if (e >= 23) return x;
  if (e < 0) return __builtin_bit_cast(float, bits & 0x80000000u);
  return __builtin_bit_cast(float, bits & ~((1u << (23 - e)) - 1u));
}

/* ---- float16 and bfloat16 as bits (clang has no _Float16 or __bf16 on hexagonv67): the kernels' conversions --- */

float tg_dsp_f16_to_f32(lc_u16 b) { /* exact */
  const lc_u32 sign = (lc_u32)(b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu, man = b & 0x3ffu;
  if (exp == 0) { /* zero or subnormal: man x 2^-24, exact in float */
    const float v = (float)(lc_i32)man * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (man << 13));
  return __builtin_bit_cast(float, sign | ((exp + 112u) << 23) | (man << 13));
}
float tg_dsp_bf16_to_f32(lc_u16 b) { return __builtin_bit_cast(float, (lc_u32)b << 16); } /* exact */

/* The bits of the binary float with ebits exponent and mbits mantissa bits nearest d (ties to even); NaN stays a
 * quiet NaN. Every source type rounds once, since its conversion to double is exact. */
static lc_u16 round_small(double d, int ebits, int mbits) {
  const lc_u64 b = to_bits(d), man = b & 0xfffffffffffffull;
  const lc_u32 sign = (lc_u32)(b >> 63) << (ebits + mbits), emax = (1u << ebits) - 1u;
  const int field = (int)((b >> 52) & 0x7ffu);
  if (field == 0x7ff) /* inf, or a quiet NaN keeping the top of the payload */
    return (lc_u16)(sign | (emax << mbits) | (man ? (1u << (mbits - 1)) | (lc_u32)(man >> (52 - mbits)) : 0u));
  const int e = field - 1023 + (1 << (ebits - 1)) - 1;         /* the small exponent field, before subnormals */
  if (e >= (int)emax) return (lc_u16)(sign | (emax << mbits)); /* overflow: inf */
  const lc_u64 m = field ? man | (1ull << 52) : man;
  const int shift = 52 - mbits + (e <= 0 ? 1 - e : 0); /* bits dropped; more for subnormal results */
  if (shift > 54) return (lc_u16)sign;                 /* below half the smallest subnormal */
  lc_u32 q = e <= 0 ? (lc_u32)(m >> shift) : ((lc_u32)e << mbits) | (lc_u32)((m >> shift) & ((1u << mbits) - 1u));
  const lc_u64 rem = m & ((1ull << shift) - 1u), half_ulp = 1ull << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) ++q; /* a carry into the exponent is right */
  return (lc_u16)(sign | q);
}
lc_u16 tg_dsp_f64_to_f16(double d) { return round_small(d, 5, 10); }
lc_u16 tg_dsp_f64_to_bf16(double d) { return round_small(d, 8, 7); }

/* ---- memory ------------------------------------------------------------------------------------------------------ */

void* memcpy(void* dst, const void* src, unsigned int n) {
  lc_u8* d = (lc_u8*)dst;
  const lc_u8* s = (const lc_u8*)src;
  for (unsigned int i = 0; i < n; ++i) d[i] = s[i];
  return dst;
}
void* memmove(void* dst, const void* src, unsigned int n) {
  lc_u8* d = (lc_u8*)dst;
  const lc_u8* s = (const lc_u8*)src;
  if (d < s)
    for (unsigned int i = 0; i < n; ++i) d[i] = s[i];
  else
    for (unsigned int i = n; i > 0; --i) d[i - 1] = s[i - 1];
  return dst;
}
void* memset(void* dst, int c, unsigned int n) {
  lc_u8* d = (lc_u8*)dst;
  for (unsigned int i = 0; i < n; ++i) d[i] = (lc_u8)c;
  return dst;
}
/* what clang calls for an aligned copy it knows is a multiple of 8 bytes and at least 32 */
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* dst, const void* src, unsigned int n) {
  return memcpy(dst, src, n);
}
