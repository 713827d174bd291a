/*
 * dump.c - open a dump by its magic, map it, list and find its tensors
 * (dump.h).
 */
#include "io/dump.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/npy.h"
#include "io/safetensors.h"
#include "io/shards.h"
#include "util/sha256.h"

enum kind { KIND_NPY, KIND_SAFETENSORS, KIND_MEMORY, KIND_SHARDS };

/* Live mappings, for nc_dump_fault_path (a signal handler cannot take a
 * lock or follow the dumps' lists): a list with no fixed length, each
 * node naming a dump's own path (not a copy cut to a fixed size, so any
 * path is named whole). Nodes are pushed at the head and never freed; one
 * no longer in use is taken again by the next mapping. */
typedef struct map_node {
    struct map_node *next;
    const unsigned char *start;
    size_t len;
    const char *path; /* the dump's, valid while the mapping lives */
    volatile sig_atomic_t used;
} map_node;

static map_node *maps_head;

static void map_track(const unsigned char *start, size_t len, const char *path)
{
    map_node *m = __atomic_load_n(&maps_head, __ATOMIC_ACQUIRE);
    for (; m; m = m->next) {
        sig_atomic_t free_slot = 0;
        if (__atomic_compare_exchange_n(&m->used, &free_slot, 2, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            break; /* taken (2: being filled, not yet read by the handler) */
    }
    if (!m) {
        if (!(m = calloc(1, sizeof *m)))
            return; /* out of memory: a fault there names "an input file" */
        m->used = 2;
        map_node *h = __atomic_load_n(&maps_head, __ATOMIC_ACQUIRE);
        do
            m->next = h;
        while (!__atomic_compare_exchange_n(&maps_head, &h, m, true, __ATOMIC_RELEASE,
                                            __ATOMIC_ACQUIRE));
    }
    m->start = start;
    m->len = len;
    m->path = path;
    __atomic_store_n(&m->used, 1, __ATOMIC_RELEASE);
}

static void map_untrack(const unsigned char *start)
{
    for (map_node *m = __atomic_load_n(&maps_head, __ATOMIC_ACQUIRE); m; m = m->next)
        if (m->used == 1 && m->start == start)
            __atomic_store_n(&m->used, 0, __ATOMIC_RELEASE);
}

const char *nc_dump_fault_path(const void *addr)
{
    const unsigned char *a = addr;
    for (map_node *m = __atomic_load_n(&maps_head, __ATOMIC_ACQUIRE); m; m = m->next)
        if (m->used == 1 && a >= m->start && a < m->start + m->len)
            return m->path;
    return NULL;
}

struct nc_dump {
    enum kind kind;
    char *path;
    unsigned char *map; /* the mapping (files) */
    size_t len;
    nc_st *st;          /* safetensors header */
    nc_tensor npy;      /* the .npy tensor */
    char *npy_name;
    nc_tensor **mem;    /* in-memory tensors (each allocated once, so views stay
                         * valid as more are added), with owned names and data */
    size_t nmem;
    nc_dump **parts;    /* shards (a sharded dump), each a safetensors dump */
    size_t nparts;
    const nc_tensor **all; /* every shard's tensors, shard by shard */
    size_t *owner;      /* the shard of all[k] */
    size_t nall;
    bool have_sha;
    bool sha_early;          /* the digest came from the hasher: check the file again */
    char sha[65];
    struct stat fst;         /* the file when it was mapped (the hasher's check) */
    nc_dump_hasher *hasher;  /* hashing this dump in the background, or NULL */
};

/* A file the user pointed at that is not there or not readable is theirs
 * to fix (exit 2); anything else the OS refuses is not (exit 1). */
static int open_code(int e)
{
    return (e == ENOENT || e == ENOTDIR || e == EACCES || e == EISDIR || e == ENAMETOOLONG ||
            e == ELOOP)
               ? NC_EINVAL
               : NC_EIO;
}

static char *npy_name_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".npy") == 0)
        n -= 4;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, base, n);
        s[n] = '\0';
    }
    return s;
}

static int open_shards(const char *spec, nc_dump **out, nc_err *err);

/* Whether the mapped bytes start like JSON text (an index), not a
 * safetensors file (whose 8-byte length would be far beyond the file). */
static bool looks_like_json(const unsigned char *m, size_t len)
{
    size_t k = 0;
    while (k < len && (m[k] == ' ' || m[k] == '\t' || m[k] == '\n' || m[k] == '\r'))
        k++;
    return k < len && m[k] == '{';
}

static int open_file(const char *path, bool shards_ok, nc_dump **out, nc_err *err);

/* The extension of path's last component (after its last '.'), or "". */
static const char *extension(const char *path)
{
    const char *base = strrchr(path, '/'), *dot = strrchr(base ? base : path, '.');
    return dot ? dot + 1 : "";
}

/* Not a .npy, safetensors or index file: an error that says what the file
 * is when its name or first bytes tell (a model or its weights, a CSV
 * table) and how to get activations from it (NC_EFORMAT). */
static int not_a_dump(const char *path, const unsigned char *m, size_t len, nc_err *err)
{
    const char *ext = extension(path);
    bool zip = len >= 4 && memcmp(m, "PK\003\004", 4) == 0;          /* torch.save */
    bool pickle = len >= 2 && m[0] == 0x80 && m[1] >= 2 && m[1] <= 5; /* older torch.save */
    const char *kind = NULL;
    if (strcasecmp(ext, "npz") == 0)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: a NumPy archive (.npz), not a dump: save its arrays as .npy, "
                          "python3 -c \"import numpy as np; [np.save(k + '.npy', v) for k, v in "
                          "np.load('%s').items()]\", then normcmp fit NAME.npy", path, path);
    if (strcasecmp(ext, "ptl") == 0)
        kind = "a TorchScript model (.ptl)";
    else if (strcasecmp(ext, "bin") == 0)
        kind = "model weights (.bin: a PyTorch or llama2.c checkpoint)";
    else if (strcasecmp(ext, "pt") == 0 || strcasecmp(ext, "pth") == 0 ||
             strcasecmp(ext, "ckpt") == 0)
        kind = "a PyTorch model or checkpoint (.pt, .pth, .ckpt)";
    else if ((zip || pickle) && strcasecmp(ext, "npy") != 0 && strcasecmp(ext, "safetensors") != 0)
        kind = "a PyTorch model or checkpoint (a zip archive or a pickle, as torch.save writes)";
    if (kind)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: %s, not activations: dump its norm layers' activations first: "
                          "python3 scripts/dump_activations.py --checkpoint %s --inputs "
                          "FILE.py:MAKE -o out/acts.safetensors (or --input-shape D0,D1,... for "
                          "random inputs; weights alone also need --model FILE.py:BUILD; "
                          "installed as normcmp-dump; docs/dumping.md), then normcmp fit "
                          "out/acts.safetensors", path, kind, path);
    if (strcasecmp(ext, "csv") == 0 || strcasecmp(ext, "tsv") == 0)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: a text table (.%s), not a dump: save the activations (a row per "
                          "token, a column per channel) as .npy, python3 -c \"import numpy as np; "
                          "np.save('x.npy', np.loadtxt('%s', delimiter='%s', ndmin=2, "
                          "dtype=np.float32))\", then normcmp fit x.npy", path, ext, path,
                          strcasecmp(ext, "tsv") == 0 ? "\\t" : ",");
    return nc_err_set(err, NC_EFORMAT,
                      "%s: unknown format: expected a .npy file (magic \\x93NUMPY) or a "
                      "safetensors file (8-byte header length, then '{')", path);
}

int nc_dump_open(const char *path, nc_dump **out, nc_err *err)
{
    *out = NULL;
    struct stat pst;
    int se = stat(path, &pst) == 0 ? 0 : errno;
    if ((se == 0 && S_ISDIR(pst.st_mode)) || (se == ENOENT && nc_glob_is_pattern(path)) ||
        (se == 0 && S_ISREG(pst.st_mode) && nc_index_named(path)))
        return open_shards(path, out, err);
    return open_file(path, true, out, err);
}

/* One file, told by its magic; an index (JSON) only if shards_ok. */
static int open_file(const char *path, bool shards_ok, nc_dump **out, nc_err *err)
{
    *out = NULL;
    int rc = 0;
    nc_dump *dump = calloc(1, sizeof *dump);
    if (!dump || !(dump->path = strdup(path))) {
        free(dump);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    }
    /* O_NONBLOCK: a FIFO must be refused below, not block the open */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        rc = nc_err_set_errno(err, open_code(e), e, "%s: cannot open input file", path);
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = nc_err_set_errno(err, NC_EIO, e, "%s: cannot stat input file", path);
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = nc_err_set(err, NC_EINVAL, "%s: is a directory, expected a .npy or .safetensors file",
                        path);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = nc_err_set(err, NC_EINVAL, "%s: not a regular file, expected a .npy or .safetensors "
                        "file", path);
        goto out;
    }
    if (st.st_size == 0) {
        rc = nc_err_set(err, NC_EFORMAT, "%s: empty file, expected a .npy or .safetensors file",
                        path);
        goto out;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        rc = nc_err_set(err, NC_ERANGE, "%s: file too large to map", path);
        goto out;
    }
    dump->len = (size_t)st.st_size;
    dump->fst = st;
    /* no MAP_POPULATE: a model's files are mapped whole at once, but each
     * layer's tensors are brought in (nc_dump_advise) only while the layer
     * is analysed and dropped from this process afterwards, so memory stays
     * bounded by about one layer (docs/whole_models.md) */
    void *m = mmap(NULL, dump->len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        rc = nc_err_set_errno(err, e == ENOMEM ? NC_ENOMEM : NC_EIO, e,
                              "%s: cannot map input file", path);
        goto out;
    }
    dump->map = m;
    map_track(dump->map, dump->len, dump->path);

    static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (dump->len >= 6 && memcmp(dump->map, npy_magic, 6) == 0) {
        dump->kind = KIND_NPY;
        rc = nc_npy_parse(dump->map, dump->len, path, &dump->npy, err);
        if (rc)
            goto out;
        if (!(dump->npy_name = npy_name_of(path))) {
            rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        dump->npy.name = dump->npy_name;
    } else if (dump->len >= 9 && dump->map[8] == '{') {
        dump->kind = KIND_SAFETENSORS;
        rc = nc_st_parse(dump->map, dump->len, path, &dump->st, err);
    } else if (shards_ok && looks_like_json(dump->map, dump->len)) {
        /* an index under another name: open its shards instead */
        close(fd);
        fd = -1;
        nc_dump_close(dump);
        return open_shards(path, out, err);
    } else {
        rc = not_a_dump(path, dump->map, dump->len, err);
    }
out:
    if (fd >= 0)
        close(fd);
    if (rc) {
        nc_dump_close(dump);
        return rc;
    }
    *out = dump;
    return 0;
}

typedef struct {
    const char *name;
    size_t k;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* Every tensor name once across the shards. */
static int shards_unique(const nc_dump *dump, nc_err *err)
{
    named *v = malloc((dump->nall ? dump->nall : 1) * sizeof *v);
    if (!v)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", dump->path);
    for (size_t k = 0; k < dump->nall; k++)
        v[k] = (named){dump->all[k]->name, k};
    qsort(v, dump->nall, sizeof *v, cmp_named);
    int rc = 0;
    for (size_t k = 1; k < dump->nall && !rc; k++)
        if (strcmp(v[k - 1].name, v[k].name) == 0)
            rc = nc_err_set(err, NC_EFORMAT, "%s: tensor '%s' is in both %s and %s (expected "
                            "each tensor in one shard)", dump->path, v[k].name,
                            dump->parts[dump->owner[v[k - 1].k]]->path,
                            dump->parts[dump->owner[v[k].k]]->path);
    free(v);
    return rc;
}

/* Opens the shards files[] of spec (read by nc_shards_resolve) into dump. */
static int shards_fill(nc_dump *dump, char **files, size_t nfiles, const nc_index *ix,
                       nc_err *err)
{
    int rc = 0;
    size_t total = 0;
    for (size_t k = 0; k < nfiles && !rc; k++) {
        nc_dump *p;
        if ((rc = open_file(files[k], false, &p, err)))
            break;
        dump->parts[dump->nparts++] = p;
        if (p->kind != KIND_SAFETENSORS)
            rc = nc_err_set(err, NC_EFORMAT, "%s: shard %s is a .npy file (expected safetensors "
                            "shards)", dump->path, files[k]);
        total += nc_dump_count(p);
    }
    if (!rc && (!(dump->all = malloc((total ? total : 1) * sizeof *dump->all)) ||
                !(dump->owner = malloc((total ? total : 1) * sizeof *dump->owner))))
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", dump->path);
    for (size_t k = 0; !rc && k < dump->nparts; k++)
        for (size_t i = 0, n = nc_dump_count(dump->parts[k]); i < n; i++) {
            dump->all[dump->nall] = nc_dump_tensor(dump->parts[k], i);
            dump->owner[dump->nall++] = k;
        }
    if (!rc)
        rc = shards_unique(dump, err);
    /* the index names each tensor's shard: hold it to that */
    for (size_t k = 0; !rc && ix && k < ix->n; k++)
        if (!nc_st_find(dump->parts[ix->shard[k]]->st, ix->tensor[k]))
            rc = nc_err_set(err, NC_EFORMAT, "%s: weight_map.\"%s\": no such tensor in %s "
                            "(expected the shard that holds it)", dump->path, ix->tensor[k],
                            files[ix->shard[k]]);
    return rc;
}

static int open_shards(const char *spec, nc_dump **out, nc_err *err)
{
    *out = NULL;
    char **files;
    size_t nfiles;
    nc_index *ix;
    int rc = nc_shards_resolve(spec, &files, &nfiles, &ix, err);
    if (rc)
        return rc;
    nc_dump *dump = calloc(1, sizeof *dump);
    if (!dump || !(dump->path = strdup(spec)) ||
        !(dump->parts = calloc(nfiles, sizeof *dump->parts)))
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", spec);
    else {
        dump->kind = KIND_SHARDS;
        rc = shards_fill(dump, files, nfiles, ix, err);
    }
    for (size_t k = 0; k < nfiles; k++)
        free(files[k]);
    free(files);
    nc_index_free(ix);
    if (rc) {
        nc_dump_close(dump);
        return rc;
    }
    *out = dump;
    return 0;
}

int nc_dump_mem_alloc(const char *name, nc_dump **out, nc_err *err)
{
    *out = NULL;
    nc_dump *dump = calloc(1, sizeof *dump);
    if (!dump || !(dump->path = strdup(name))) {
        free(dump);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", name);
    }
    dump->kind = KIND_MEMORY;
    *out = dump;
    return 0;
}

int nc_dump_mem_add(nc_dump *dump, const char *name, nc_dtype dt, int rank,
                    const uint64_t *shape, void *data, nc_err *err)
{
    nc_tensor t = {.dtype = dt, .rank = rank, .data = data};
    if (rank < 1 || rank > NC_MAX_RANK) {
        free(data);
        return nc_err_set(err, NC_EINVAL, "%s: tensor '%s': rank %d out of range", dump->path,
                          name, rank);
    }
    memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    if (nc_tensor_set_shape(&t) != 0) {
        free(data);
        return nc_err_set(err, NC_ERANGE, "%s: tensor '%s': shape too large", dump->path, name);
    }
    nc_tensor **grown = realloc(dump->mem, (dump->nmem + 1) * sizeof *grown);
    nc_tensor *tp = malloc(sizeof *tp);
    char *nm = strdup(name);
    if (grown)
        dump->mem = grown;
    if (!grown || !tp || !nm) {
        free(tp);
        free(nm);
        free(data);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", dump->path);
    }
    t.name = nm;
    *tp = t;
    dump->mem[dump->nmem++] = tp;
    return 0;
}

void nc_dump_close(nc_dump *dump)
{
    if (!dump)
        return;
    if (dump->map) {
        map_untrack(dump->map);
        munmap(dump->map, dump->len);
    }
    nc_st_free(dump->st);
    free(dump->npy_name);
    for (size_t i = 0; i < dump->nmem; i++) {
        free((char *)dump->mem[i]->name);
        free((void *)dump->mem[i]->data);
        free(dump->mem[i]);
    }
    free(dump->mem);
    for (size_t k = 0; k < dump->nparts; k++)
        nc_dump_close(dump->parts[k]);
    free(dump->parts);
    free(dump->all);
    free(dump->owner);
    free(dump->path);
    free(dump);
}

const char *nc_dump_path(const nc_dump *dump)
{
    return dump->path;
}

const char *nc_dump_format(const nc_dump *dump)
{
    switch (dump->kind) {
    case KIND_NPY: return "npy";
    case KIND_SAFETENSORS:
    case KIND_SHARDS: return "safetensors";
    default: return "memory";
    }
}

uint64_t nc_dump_bytes(const nc_dump *dump)
{
    uint64_t n = dump->len;
    for (size_t k = 0; k < dump->nparts; k++)
        n += nc_dump_bytes(dump->parts[k]);
    return n;
}

size_t nc_dump_count(const nc_dump *dump)
{
    switch (dump->kind) {
    case KIND_NPY: return 1;
    case KIND_SAFETENSORS: return nc_st_count(dump->st);
    case KIND_SHARDS: return dump->nall;
    default: return dump->nmem;
    }
}

const nc_tensor *nc_dump_tensor(const nc_dump *dump, size_t i)
{
    if (i >= nc_dump_count(dump))
        return NULL;
    switch (dump->kind) {
    case KIND_NPY: return &dump->npy;
    case KIND_SAFETENSORS: return nc_st_tensor(dump->st, i);
    case KIND_SHARDS: return dump->all[i];
    default: return dump->mem[i];
    }
}

const nc_tensor *nc_dump_find(const nc_dump *dump, const char *name)
{
    for (size_t i = 0, n = nc_dump_count(dump); i < n; i++) {
        const nc_tensor *t = nc_dump_tensor(dump, i);
        if (strcmp(t->name, name) == 0)
            return t;
    }
    return NULL;
}

const char *nc_dump_meta(const nc_dump *dump, const char *key)
{
    if (dump->kind == KIND_SHARDS) {
        for (size_t k = 0; k < dump->nparts; k++) {
            const char *v = nc_dump_meta(dump->parts[k], key);
            if (v)
                return v;
        }
        return NULL;
    }
    return dump->kind == KIND_SAFETENSORS ? nc_st_meta(dump->st, key) : NULL;
}

nc_dump *nc_dump_part(nc_dump *dump, const nc_tensor *t)
{
    if (dump->kind == KIND_SHARDS)
        for (size_t k = 0; k < dump->nall; k++)
            if (dump->all[k] == t)
                return dump->parts[dump->owner[k]];
    return dump;
}

size_t nc_dump_nparts(const nc_dump *dump)
{
    return dump->kind == KIND_SHARDS ? dump->nparts : 1;
}

bool nc_glob_is_pattern(const char *pattern)
{
    return strpbrk(pattern, "*?[") != NULL;
}

bool nc_glob_match(const char *pattern, const char *name)
{
    return fnmatch(pattern, name, 0) == 0;
}

/* Hashes a mapping in 8 MB steps, dropping each step's pages from this
 * process once hashed (they stay in the page cache): hashing a model's
 * files does not make them all resident at once. */
static void hash_mapped(nc_sha256 *c, const unsigned char *map, size_t len)
{
    const size_t step = (size_t)8 << 20; /* a multiple of the page size */
    for (size_t at = 0; at < len; at += step) {
        size_t n = len - at < step ? len - at : step;
        nc_sha256_update(c, map + at, n);
        madvise((void *)(map + at), n, MADV_DONTNEED);
    }
}

void nc_dump_advise(const nc_tensor *t, bool need)
{
    if (!t || t->nbytes == 0 || !nc_dump_fault_path(t->data))
        return; /* in memory (synthetic layers), not mapped: nothing to do */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)t->data & ~(page - 1), e = (uintptr_t)t->data + t->nbytes;
    void *start = (void *)a;
    size_t len = (size_t)(e - a);
    if (!need) {
        madvise(start, len, MADV_DONTNEED);
        return;
    }
#ifdef MADV_POPULATE_READ
    if (madvise(start, len, MADV_POPULATE_READ) == 0)
        return;
#endif
    madvise(start, len, MADV_WILLNEED); /* kernels before 5.14: read ahead only */
}

/* The hex digest of c into dump (cached). */
static void set_sha(nc_dump *dump, nc_sha256 *c)
{
    unsigned char h[32];
    nc_sha256_final(c, h);
    for (int k = 0; k < 32; k++) {
        static const char digits[] = "0123456789abcdef";
        dump->sha[2 * k] = digits[h[k] >> 4];
        dump->sha[2 * k + 1] = digits[h[k] & 15];
    }
    dump->sha[64] = '\0';
}

/* ---------------------------------------------------- background hasher */

struct nc_dump_hasher {
    nc_dump *const *dumps;
    size_t n;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    size_t next;       /* dumps before this one are finished (hashed or left undone) */
    bool stop;
    unsigned char *buf; /* [HASH_BUF] */
};

#define HASH_BUF ((size_t)4 << 20)

/* Whether st describes the file dump mapped, unchanged since: the same
 * device, inode, size and modification time. */
static bool same_file(const struct stat *st, const nc_dump *dump)
{
    return st->st_dev == dump->fst.st_dev && st->st_ino == dump->fst.st_ino &&
           st->st_size == dump->fst.st_size && st->st_mtim.tv_sec == dump->fst.st_mtim.tv_sec &&
           st->st_mtim.tv_nsec == dump->fst.st_mtim.tv_nsec;
}

/* Whether every file behind dump is still as it was mapped (stat by path). */
static bool unchanged(const nc_dump *dump)
{
    struct stat st;
    if (dump->kind == KIND_SHARDS) {
        for (size_t p = 0; p < dump->nparts; p++)
            if (!unchanged(dump->parts[p]))
                return false;
        return true;
    }
    return dump->kind == KIND_MEMORY || (stat(dump->path, &st) == 0 && same_file(&st, dump));
}

/* One file's bytes into c by pread, if it is still the file dump mapped;
 * false if not (changed, unreadable, short) or asked to stop. */
static bool hash_file(nc_dump_hasher *h, const nc_dump *dump, nc_sha256 *c)
{
    int fd = open(dump->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && same_file(&st, dump);
    for (size_t at = 0; ok && at < dump->len;) {
        pthread_mutex_lock(&h->lock);
        bool stop = h->stop;
        pthread_mutex_unlock(&h->lock);
        if (stop) {
            ok = false;
            break;
        }
        size_t want = dump->len - at < HASH_BUF ? dump->len - at : HASH_BUF;
        ssize_t got = pread(fd, h->buf, want, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) { /* an error, or the file ends early: not this one's bytes */
            ok = false;
            break;
        }
        nc_sha256_update(c, h->buf, (size_t)got);
        at += (size_t)got;
    }
    close(fd);
    return ok;
}

static void *hasher_main(void *arg)
{
    nc_dump_hasher *h = arg;
    for (size_t k = 0; k < h->n; k++) {
        nc_dump *dump = h->dumps[k];
        bool ok = false;
        nc_sha256 c;
        nc_sha256_init(&c);
        if (dump->kind == KIND_SHARDS) {
            ok = true;
            for (size_t p = 0; ok && p < dump->nparts; p++)
                ok = hash_file(h, dump->parts[p], &c);
        } else if (dump->kind != KIND_MEMORY) {
            ok = hash_file(h, dump, &c);
        }
        pthread_mutex_lock(&h->lock);
        if (ok && !dump->have_sha) {
            set_sha(dump, &c);
            dump->have_sha = true;
            dump->sha_early = true;
        }
        h->next = k + 1;
        pthread_cond_broadcast(&h->done_cond);
        bool stop = h->stop;
        pthread_mutex_unlock(&h->lock);
        if (stop)
            break;
    }
    pthread_mutex_lock(&h->lock);
    h->next = h->n;
    pthread_cond_broadcast(&h->done_cond);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* The bytes of the files behind dumps[0..n), saturating. */
static size_t file_bytes(nc_dump *const *dumps, size_t n)
{
    size_t total = 0;
    for (size_t k = 0; k < n; k++) {
        const nc_dump *d = dumps[k];
        size_t b = 0;
        if (d->kind == KIND_SHARDS)
            b = file_bytes(d->parts, d->nparts);
        else if (d->kind != KIND_MEMORY)
            b = d->len;
        total = total + b < total ? SIZE_MAX : total + b;
    }
    return total;
}

nc_dump_hasher *nc_dump_hasher_start(nc_dump *const *dumps, size_t n)
{
    if (file_bytes(dumps, n) < NC_DUMP_HASH_THREAD_BYTES)
        return NULL; /* hashed from the mapping when asked, sooner than a thread starts */
    nc_dump_hasher *h = calloc(1, sizeof *h);
    if (!h || !(h->buf = malloc(HASH_BUF))) {
        free(h);
        return NULL;
    }
    h->dumps = dumps;
    h->n = n;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->done_cond, NULL);
    for (size_t k = 0; k < n; k++)
        dumps[k]->hasher = h;
    if (pthread_create(&h->thread, NULL, hasher_main, h) != 0) {
        for (size_t k = 0; k < n; k++)
            dumps[k]->hasher = NULL;
        pthread_mutex_destroy(&h->lock);
        pthread_cond_destroy(&h->done_cond);
        free(h->buf);
        free(h);
        return NULL;
    }
    return h;
}

void nc_dump_hasher_stop(nc_dump_hasher *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stop = true;
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    for (size_t k = 0; k < h->n; k++)
        h->dumps[k]->hasher = NULL;
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->done_cond);
    free(h->buf);
    free(h);
}

/* Waits until the hasher has finished (or left) dump. */
static void hasher_wait(nc_dump_hasher *h, const nc_dump *dump)
{
    pthread_mutex_lock(&h->lock);
    size_t k = 0;
    while (k < h->n && h->dumps[k] != dump)
        k++;
    while (h->next <= k && h->next < h->n)
        pthread_cond_wait(&h->done_cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

void nc_dump_sha256(nc_dump *dump, char hex[65])
{
    if (dump->hasher)
        hasher_wait(dump->hasher, dump);
    /* a digest made early stands only if the file has not changed since it
     * was mapped: rewritten in place, the mapping (and so the analysis) may
     * have seen other bytes than the hasher read */
    if (dump->have_sha && dump->sha_early && !unchanged(dump))
        dump->have_sha = false;
    dump->sha_early = false;
    if (!dump->have_sha) {
        nc_sha256 c;
        nc_sha256_init(&c);
        if (dump->kind == KIND_MEMORY)
            for (size_t i = 0; i < dump->nmem; i++)
                nc_sha256_update(&c, dump->mem[i]->data, dump->mem[i]->nbytes);
        else if (dump->kind == KIND_SHARDS)
            for (size_t k = 0; k < dump->nparts; k++)
                hash_mapped(&c, dump->parts[k]->map, dump->parts[k]->len);
        else
            hash_mapped(&c, dump->map, dump->len);
        set_sha(dump, &c);
        dump->have_sha = true;
    }
    memcpy(hex, dump->sha, 65);
}
