/*
 * fuzz_sharded.c - libFuzzer target for a dump in several safetensors
 * files, opened as normcmp opens one (io/dump.h nc_dump_open on a folder,
 * its index or a glob; io/shards.h).
 *
 * An input is a small folder. Its first byte picks what is opened (the
 * folder, the index m.safetensors.index.json, or the glob s*.safetensors);
 * the rest is split at "|SHARD|" into the index's text and the shards
 * s1.safetensors, s2.safetensors, ... A shard part "@fifo", "@dir" or
 * "@gone" makes that shard a FIFO, a folder or a link to nothing, and
 * "@link:NAME" a link to NAME in the folder; "@fifo" as the index makes
 * the index a FIFO, "@none" leaves it out (the folder is then opened by
 * its *.safetensors files). Nothing may block (a FIFO is refused, not waited on:
 * libFuzzer's timeout catches a hang).
 *
 * On failure the error must be a documented code with a one-line message
 * naming a path in the folder, and no dump. On success: the tensors are
 * the shards' tensors, each name once and found by name, each in one of
 * the shards, its first and last element readable; names are UTF-8 (a
 * report holding them is strict JSON); the SHA-256 of the whole dump can
 * be taken. A broken invariant aborts. Never prints.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tensor.h"
#include "guard.h"
#include "strict_json.h"
#include "io/dump.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEP "|SHARD|"
#define MAX_PARTS 8

static char dir[64];

static void empty_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) != 0)
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    if (d)
        closedir(d);
}

static void remove_dir(void)
{
    empty_dir();
    rmdir(dir);
}

/* One part as the file name in the folder (see above). */
static void write_part(const char *name, const unsigned char *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n == 5 && memcmp(p, "@fifo", 5) == 0) {
        REQUIRE(mkfifo(path, 0600) == 0);
    } else if (n == 4 && memcmp(p, "@dir", 4) == 0) {
        REQUIRE(mkdir(path, 0700) == 0);
    } else if (n == 5 && memcmp(p, "@gone", 5) == 0) {
        REQUIRE(symlink("nothing.safetensors", path) == 0);
    } else if (n > 6 && n < 64 && memcmp(p, "@link:", 6) == 0) {
        char to[64];
        size_t k = 0;
        for (size_t j = 6; j < n; j++)
            if (p[j] != '/' && p[j] != '\0')
                to[k++] = (char)p[j]; /* a name in the folder only */
        to[k] = '\0';
        REQUIRE(symlink(k ? to : "x", path) == 0);
    } else {
        FILE *f = fopen(path, "wb");
        REQUIRE(f && (n == 0 || fwrite(p, 1, n, f) == n) && fclose(f) == 0);
    }
}

static void check_error(int rc, const nc_dump *dump, const nc_err *err)
{
    REQUIRE(dump == NULL);
    REQUIRE(rc == NC_EINVAL || rc == NC_EFORMAT || rc == NC_EUNSUPPORTED || rc == NC_ERANGE ||
            rc == NC_ENOMEM || rc == NC_EIO);
    REQUIRE(err->code == rc && err->msg[0] && !strchr(err->msg, '\n'));
    REQUIRE(rc == NC_ENOMEM || strncmp(err->msg, dir, strlen(dir)) == 0);
}

static void check_dump(nc_dump *dump)
{
    size_t n = nc_dump_count(dump), parts = nc_dump_nparts(dump);
    REQUIRE(parts >= 1 && nc_dump_tensor(dump, n) == NULL);
    const char **names = malloc((n + 1) * sizeof *names);
    REQUIRE(names);
    size_t in_parts = 0;
    for (size_t i = 0; i < n; i++) {
        const nc_tensor *t = nc_dump_tensor(dump, i);
        REQUIRE(t && t->name && nc_dump_find(dump, t->name) == t);
        nc_dump *part = nc_dump_part(dump, t);
        REQUIRE(part && (parts == 1 || part != dump));
        REQUIRE(t->nbytes == t->nelem * nc_dtype_size(t->dtype));
        if (t->nbytes) {
            volatile unsigned char first = t->data[0], last = t->data[t->nbytes - 1];
            (void)first;
            (void)last;
        }
        names[i] = t->name;
        for (size_t j = 0; j < i; j++)
            REQUIRE(strcmp(names[j], t->name) != 0);
    }
    for (size_t i = 0; i < n; i++)
        in_parts += nc_dump_part(dump, nc_dump_tensor(dump, i)) != NULL;
    REQUIRE(in_parts == n);
    require_strict_report(names, n);
    free(names);
    char hex[65];
    nc_dump_sha256(dump, hex);
    REQUIRE(strlen(hex) == 64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%.30s/nc_fuzz_sharded.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        REQUIRE(mkdtemp(dir) != NULL);
        atexit(remove_dir);
    }
    empty_dir();
    if (size == 0)
        return 0;
    int mode = data[0] % 3;
    size_t at = 1, sep = sizeof SEP - 1;
    for (int part = 0; part < MAX_PARTS && at <= size; part++) {
        size_t q = at;
        while (q + sep <= size && memcmp(data + q, SEP, sep) != 0)
            q++;
        if (q + sep > size)
            q = size;
        char name[32];
        if (part == 0)
            snprintf(name, sizeof name, "m.safetensors.index.json");
        else
            snprintf(name, sizeof name, "s%d.safetensors", part);
        if (!(part == 0 && q - at == 5 && memcmp(data + at, "@none", 5) == 0))
            write_part(name, data + at, q - at);
        at = q + sep;
    }
    char spec[128];
    if (mode == 0)
        snprintf(spec, sizeof spec, "%s", dir);
    else if (mode == 1)
        snprintf(spec, sizeof spec, "%s/m.safetensors.index.json", dir);
    else
        snprintf(spec, sizeof spec, "%s/s*.safetensors", dir);
    nc_dump *dump = NULL;
    nc_err err = {0};
    int rc = nc_dump_open(spec, &dump, &err);
    if (rc) {
        check_error(rc, dump, &err);
        return 0;
    }
    REQUIRE(dump && err.code == 0);
    check_dump(dump);
    nc_dump_close(dump);
    return 0;
}
