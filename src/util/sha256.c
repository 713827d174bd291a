/*
 * sha256.c - SHA-256 as in FIPS 180-4, section 6.2 (sha256.h).
 *
 * The message is processed in 64-byte blocks by a compression function,
 * which comes in two versions:
 *   - compress_portable: the standard's loop in C (sections 4.1.2, 6.2.2);
 *   - compress_shani: the x86 SHA extensions (SHA256RNDS2, SHA256MSG1/2),
 *     used when CPUID says the CPU has them; compiled only for x86 with GCC
 *     or clang, through target attributes, so the file needs no flags.
 * Padding, lengths and the digest's byte order are shared (section 5.1.1).
 */
#include "util/sha256.h"

#include <stdatomic.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define HAVE_SHANI 0
#endif

/* The round constants: the first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes (section 4.2.2). */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

/* ---- portable compression function ------------------------------------ */

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Section 6.2.2 for nblocks consecutive 64-byte blocks at p: the message
 * schedule W_0..W_63 first, then the 64 rounds. */
static void compress_portable(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
    for (; nblocks > 0; nblocks--, p += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++)
            w[t] = load_be32(p + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
        uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int t = 0; t < 64; t++) {
            uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
            uint32_t ch = (e & f) ^ (~e & g);
            uint32_t t1 = hh + S1 + ch + K[t] + w[t];
            uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
            uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
            uint32_t t2 = S0 + maj;
            hh = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
        h[5] += f;
        h[6] += g;
        h[7] += hh;
    }
}

/* ---- SHA extensions ----------------------------------------------------- */

#if HAVE_SHANI

#define SHANI_TARGET __attribute__((target("sha,ssse3,sse4.1")))

/* Rounds t = 4g .. 4g+3: msg holds W_t .. W_t+3 (lane 0 first), to which
 * K_t is added. SHA256RNDS2 does two rounds on the state split as ABEF and
 * CDGH (A in the top lane), taking W+K from the low two lanes of its third
 * operand, and returns the new ABEF; the old ABEF is the new CDGH. */
SHANI_TARGET static inline void rounds4(__m128i *abef, __m128i *cdgh, __m128i msg, int g)
{
    __m128i wk = _mm_add_epi32(msg, _mm_loadu_si128((const __m128i *)&K[4 * g]));
    *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, wk);
    wk = _mm_shuffle_epi32(wk, 0x0e); /* lanes 2, 3 down to 0, 1 */
    *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, wk);
}

/* W_t .. W_t+3 from the previous 16 words, four per vector, oldest first:
 * w16 = W_{t-16..t-13}, w12 = W_{t-12..t-9}, w8 = W_{t-8..t-5},
 * w4 = W_{t-4..t-1}. MSG1 adds sigma0, the middle term is W_{t-7..t-4},
 * MSG2 adds sigma1 (of words it computes itself for the upper lanes). */
SHANI_TARGET static inline __m128i schedule4(__m128i w16, __m128i w12, __m128i w8, __m128i w4)
{
    __m128i m = _mm_sha256msg1_epu32(w16, w12);
    m = _mm_add_epi32(m, _mm_alignr_epi8(w4, w8, 4));
    return _mm_sha256msg2_epu32(m, w4);
}

SHANI_TARGET static void compress_shani(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
    /* big-endian words: reverse the bytes of each 32-bit lane */
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);

    /* h[0..3] = a b c d and h[4..7] = e f g h -> ABEF and CDGH (lanes are
     * listed from lane 0 up, so "f e b a" has A in the top lane) */
    __m128i abcd = _mm_loadu_si128((const __m128i *)&h[0]);
    __m128i efgh = _mm_loadu_si128((const __m128i *)&h[4]);
    __m128i badc = _mm_shuffle_epi32(abcd, 0xb1); /* lanes b a d c */
    __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1b); /* lanes h g f e */
    __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);   /* lanes f e b a */
    __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xf0); /* lanes h g d c */

    for (; nblocks > 0; nblocks--, p += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
        rounds4(&abef, &cdgh, m0, 0);
        rounds4(&abef, &cdgh, m1, 1);
        rounds4(&abef, &cdgh, m2, 2);
        rounds4(&abef, &cdgh, m3, 3);
        /* rounds 16..63: four words at a time, m0..m3 a ring of 16 words */
        for (int g = 4; g < 16; g += 4) {
            m0 = schedule4(m0, m1, m2, m3);
            rounds4(&abef, &cdgh, m0, g);
            m1 = schedule4(m1, m2, m3, m0);
            rounds4(&abef, &cdgh, m1, g + 1);
            m2 = schedule4(m2, m3, m0, m1);
            rounds4(&abef, &cdgh, m2, g + 2);
            m3 = schedule4(m3, m0, m1, m2);
            rounds4(&abef, &cdgh, m3, g + 3);
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }

    __m128i feba = _mm_shuffle_epi32(abef, 0x1b); /* lanes a b e f */
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1); /* lanes g h c d */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xf0)); /* a b c d */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));   /* e f g h */
}

/* CPUID: SHA (leaf 7, EBX bit 29) and the SSSE3/SSE4.1 shuffles and blends
 * used around it (leaf 1, ECX bits 9 and 19). */
static bool cpu_has_shani(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19)))
        return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    return (b & (1u << 29)) != 0;
}

#endif /* HAVE_SHANI */

/* ---- dispatch ------------------------------------------------------------ */

/* Which compression function: 0 not decided yet, 1 portable, 2 SHA-NI.
 * Atomic so that threads hashing at once may all decide (they agree). */
static atomic_int impl;

static int choose_impl(void)
{
    int v = atomic_load_explicit(&impl, memory_order_relaxed);
    if (v == 0) {
#if HAVE_SHANI
        v = cpu_has_shani() ? 2 : 1;
#else
        v = 1;
#endif
        atomic_store_explicit(&impl, v, memory_order_relaxed);
    }
    return v;
}

static void compress(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
#if HAVE_SHANI
    if (choose_impl() == 2) {
        compress_shani(h, p, nblocks);
        return;
    }
#endif
    compress_portable(h, p, nblocks);
}

void nc_sha256_use_portable(bool on)
{
    int v = 1;
#if HAVE_SHANI
    if (!on)
        v = cpu_has_shani() ? 2 : 1;
#else
    (void)on;
#endif
    atomic_store_explicit(&impl, v, memory_order_relaxed);
}

bool nc_sha256_uses_shani(void)
{
    return choose_impl() == 2;
}

/* ---- the interface ------------------------------------------------------- */

void nc_sha256_init(nc_sha256 *c)
{
    /* section 5.3.3: the first 32 bits of the fractional parts of the square
     * roots of the first 8 primes */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof c->h);
    c->nbytes = 0;
    c->buflen = 0;
}

void nc_sha256_update(nc_sha256 *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (n == 0) /* data may be NULL: no pointer arithmetic or memcpy on it */
        return;
    c->nbytes += n;
    if (c->buflen > 0) {
        size_t take = 64 - c->buflen < n ? 64 - c->buflen : n;
        memcpy(c->buf + c->buflen, p, take);
        c->buflen += take;
        p += take;
        n -= take;
        if (c->buflen < 64)
            return;
        compress(c->h, c->buf, 1);
        c->buflen = 0;
    }
    /* whole blocks straight from the caller's memory */
    if (n >= 64) {
        compress(c->h, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    if (n > 0) {
        memcpy(c->buf, p, n);
        c->buflen = n;
    }
}

void nc_sha256_final(nc_sha256 *c, unsigned char out[32])
{
    /* section 5.1.1: a 1 bit, zeros up to 56 bytes mod 64, the length in
     * bits as a 64-bit big-endian number */
    uint64_t nbits = c->nbytes * 8;
    size_t i = c->buflen;
    c->buf[i++] = 0x80;
    if (i > 56) {
        memset(c->buf + i, 0, 64 - i);
        compress(c->h, c->buf, 1);
        i = 0;
    }
    memset(c->buf + i, 0, 56 - i);
    store_be32(c->buf + 56, (uint32_t)(nbits >> 32));
    store_be32(c->buf + 60, (uint32_t)nbits);
    compress(c->h, c->buf, 1);
    for (int k = 0; k < 8; k++)
        store_be32(out + 4 * k, c->h[k]);
    memset(c, 0, sizeof *c);
}

void nc_sha256_hex(const void *data, size_t n, char out[65])
{
    static const char digits[] = "0123456789abcdef";
    nc_sha256 c;
    unsigned char md[32];
    nc_sha256_init(&c);
    nc_sha256_update(&c, data, n);
    nc_sha256_final(&c, md);
    for (int k = 0; k < 32; k++) {
        out[2 * k] = digits[md[k] >> 4];
        out[2 * k + 1] = digits[md[k] & 15];
    }
    out[64] = '\0';
}
