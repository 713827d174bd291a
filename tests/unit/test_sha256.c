/*
 * test_sha256.c - SHA-256 against the FIPS 180-4 / NIST example messages,
 * padding-boundary lengths (digests from Python's hashlib), split updates,
 * and the portable function against the SHA extensions. Every known-answer
 * test runs through both compression functions; where the CPU has no SHA
 * extensions the two are the same and the agreement tests say so.
 */
#include "util/sha256.h"

#include "check.h"

#include <stdint.h>
#include <stdlib.h>

/* Both compression functions, in turn: 0 = the default (SHA-NI if present),
 * 1 = portable. */
static void use_impl(int k)
{
    nc_sha256_use_portable(k == 1);
}

static const char *impl_name(int k)
{
    return k == 1 ? "portable" : nc_sha256_uses_shani() ? "sha-ni" : "default(portable)";
}

/* The message bytes (i * 7 + 3) mod 256, i = 0 .. n-1. */
static void pattern(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + 3);
}

static void hex_of(const unsigned char md[32], char out[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int k = 0; k < 32; k++) {
        out[2 * k] = digits[md[k] >> 4];
        out[2 * k + 1] = digits[md[k] & 15];
    }
    out[64] = '\0';
}

/* FIPS 180-4 example messages (NIST CSRC examples, also FIPS 180-2
 * appendix B) and the one-million-'a' message. */
static void test_nist_vectors(void)
{
    static const struct {
        const char *msg;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
         "klmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (int k = 0; k < 2; k++) {
        use_impl(k);
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            char hex[65];
            nc_sha256_hex(v[i].msg, strlen(v[i].msg), hex);
            CHECK_STR(v[i].hex, hex);
        }
        /* one million 'a', fed in pieces of 1000 */
        unsigned char a[1000];
        memset(a, 'a', sizeof a);
        nc_sha256 c;
        nc_sha256_init(&c);
        for (int i = 0; i < 1000; i++)
            nc_sha256_update(&c, a, sizeof a);
        unsigned char md[32];
        char hex[65];
        nc_sha256_final(&c, md);
        hex_of(md, hex);
        CHECK_STR("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", hex);
        printf("sha256 NIST vectors checked with the %s function\n", impl_name(k));
    }
    use_impl(0);
}

/* Lengths around the padding boundaries (55/56 bytes: the length field
 * still fits in the last block or not; 64: one whole block). Expected
 * digests from Python's hashlib.sha256 of the same pattern. */
static void test_boundary_lengths(void)
{
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        {1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"},
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
        {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
        {300, "04773f8726c81cafcfa1a09a82664b98b00d2021031a1715bca1154f2dad3472"},
    };
    unsigned char msg[300];
    pattern(msg, sizeof msg);
    for (int k = 0; k < 2; k++) {
        use_impl(k);
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            char hex[65];
            nc_sha256_hex(msg, v[i].n, hex);
            CHECK_STR(v[i].hex, hex);
        }
    }
    use_impl(0);
}

/* Updates split at every offset 0..130 (and in two places) of a 300-byte
 * message give the one-shot digest; so do empty updates with NULL. */
static void test_split_updates(void)
{
    unsigned char msg[300];
    pattern(msg, sizeof msg);
    for (int k = 0; k < 2; k++) {
        use_impl(k);
        char want[65];
        nc_sha256_hex(msg, sizeof msg, want);
        int bad = 0;
        for (size_t cut = 0; cut <= 130; cut++) {
            for (size_t cut2 = cut; cut2 <= cut + 70; cut2 += 7) {
                nc_sha256 c;
                unsigned char md[32];
                char hex[65];
                nc_sha256_init(&c);
                nc_sha256_update(&c, NULL, 0);
                nc_sha256_update(&c, msg, cut);
                nc_sha256_update(&c, msg + cut, cut2 - cut);
                nc_sha256_update(&c, NULL, 0);
                nc_sha256_update(&c, msg + cut2, sizeof msg - cut2);
                nc_sha256_final(&c, md);
                hex_of(md, hex);
                if (strcmp(hex, want) != 0 && bad++ == 0)
                    CHECK_STR(want, hex); /* report the first mismatch in full */
            }
        }
        CHECK_INT(0, bad);
    }
    use_impl(0);
}

/* splitmix64: deterministic bytes for the agreement test */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* The portable and the SHA-NI function agree on pseudo-random buffers of
 * every length 0..1100 and some long ones, hashed at odd alignments. */
static void test_portable_matches_shani(void)
{
    size_t max = (1u << 20) + 77;
    unsigned char *buf = malloc(max + 8);
    CHECK(buf != NULL);
    if (!buf)
        return;
    uint64_t s = 0x2385;
    for (size_t i = 0; i < max + 8; i++)
        buf[i] = (unsigned char)next_u64(&s);
    use_impl(0);
    bool have_shani = nc_sha256_uses_shani();
    int bad = 0;
    size_t ncases = 0;
    for (size_t n = 0; n <= max; n = n < 1100 ? n + 1 : n * 3 + 4099) {
        const unsigned char *p = buf + n % 8; /* unaligned starts too */
        char h_port[65], h_fast[65];
        use_impl(1);
        nc_sha256_hex(p, n, h_port);
        use_impl(0);
        nc_sha256_hex(p, n, h_fast);
        if (strcmp(h_port, h_fast) != 0 && bad++ == 0)
            CHECK_STR(h_port, h_fast);
        ncases++;
    }
    CHECK_INT(0, bad);
    CHECK(ncases > 1100);
    printf("sha256 portable vs %s: %zu buffers, %d mismatches%s\n",
           have_shani ? "sha-ni" : "default", ncases, bad,
           have_shani ? "" : " (this CPU has no SHA extensions: both are portable)");
    free(buf);
}

int main(void)
{
    test_nist_vectors();
    test_boundary_lengths();
    test_split_updates();
    test_portable_matches_shani();
    return CHECK_DONE();
}
