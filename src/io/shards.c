/*
 * shards.c - the files of a sharded dump and the index parser (shards.h).
 */
#include "io/shards.h"

#include <cJSON.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/jsondoc.h"
#include "util/readfile.h"

#define INDEX_HINT                                                                         \
    " (expected a safetensors index: {\"weight_map\": {\"<tensor>\": \"<shard file>\"}})"

static const char INDEX_SUFFIX[] = ".safetensors.index.json";

void nc_index_free(nc_index *ix)
{
    if (!ix)
        return;
    for (size_t k = 0; k < ix->n; k++)
        free(ix->tensor[k]);
    for (size_t k = 0; k < ix->nfiles; k++)
        free(ix->files[k]);
    free(ix->tensor);
    free(ix->shard);
    free(ix->files);
    free(ix);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int nc_index_named(const char *path)
{
    return ends_with(path, ".index.json");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the relative path p has a ".." step: the shards of an index
 * are files in its folder or below it (docs/dumping.md). */
static bool has_dotdot(const char *p)
{
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        p += strspn(p, "/");
    }
    return false;
}

/* The weight_map entries into ix (files not yet made distinct). */
static int read_map(const cJSON *map, const char *path, nc_index *ix, char **names, nc_err *err)
{
    size_t k = 0;
    for (const cJSON *e = map->child; e; e = e->next, k++) {
        if (!e->string || !e->string[0])
            return nc_err_set(err, NC_EFORMAT, "%s: weight_map: an empty tensor name (expected "
                              "\"<tensor>\": \"<shard file>\")", path);
        if (!cJSON_IsString(e) || !e->valuestring || !e->valuestring[0])
            return nc_err_set(err, NC_EFORMAT, "%s: weight_map.\"%s\": expected a shard file "
                              "name (a non-empty string)", path, e->string);
        if (e->valuestring[0] == '/')
            return nc_err_set(err, NC_EFORMAT, "%s: weight_map.\"%s\": \"%s\" is an absolute "
                              "path (expected a file name relative to the index's folder)", path,
                              e->string, e->valuestring);
        if (has_dotdot(e->valuestring))
            return nc_err_set(err, NC_EFORMAT, "%s: weight_map.\"%s\": \"%s\" leads out of "
                              "the index's folder (expected a file name inside it, without "
                              "'..')", path, e->string, e->valuestring);
        if (!(ix->tensor[k] = strdup(e->string)) || !(names[k] = strdup(e->valuestring)))
            return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
        ix->n = k + 1;
    }
    /* each tensor once (cJSON keeps duplicate keys) */
    char **sorted = malloc(ix->n * sizeof *sorted);
    if (!sorted)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    memcpy(sorted, ix->tensor, ix->n * sizeof *sorted);
    qsort(sorted, ix->n, sizeof *sorted, cmp_str);
    int rc = 0;
    for (size_t j = 1; j < ix->n && !rc; j++)
        if (strcmp(sorted[j - 1], sorted[j]) == 0)
            rc = nc_err_set(err, NC_EFORMAT, "%s: weight_map.\"%s\": listed twice (expected "
                            "each tensor once)", path, sorted[j]);
    free(sorted);
    return rc;
}

/* files: the distinct names, sorted; shard[k]: each entry's file. */
static int distinct_files(nc_index *ix, char **names, const char *path, nc_err *err)
{
    char **sorted = malloc(ix->n * sizeof *sorted);
    if (!sorted)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    memcpy(sorted, names, ix->n * sizeof *sorted);
    qsort(sorted, ix->n, sizeof *sorted, cmp_str);
    if (!(ix->files = calloc(ix->n, sizeof *ix->files))) {
        free(sorted);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    }
    for (size_t j = 0; j < ix->n; j++)
        if (j == 0 || strcmp(sorted[j - 1], sorted[j]) != 0) {
            if (!(ix->files[ix->nfiles] = strdup(sorted[j]))) {
                free(sorted);
                return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
            }
            ix->nfiles++;
        }
    free(sorted);
    for (size_t k = 0; k < ix->n; k++) {
        char **hit = bsearch(&names[k], ix->files, ix->nfiles, sizeof *ix->files, cmp_str);
        ix->shard[k] = (size_t)(hit - ix->files);
    }
    return 0;
}

int nc_index_parse(const char *text, size_t len, const char *path, nc_index **out, nc_err *err)
{
    *out = NULL;
    cJSON *root = nc_json_parse_doc(text, len, path, NC_EFORMAT, INDEX_HINT, err);
    if (!root)
        return err && err->code ? err->code : NC_EFORMAT;
    int rc = 0;
    nc_index *ix = NULL;
    char **names = NULL;
    const cJSON *map = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "weight_map")
                                            : NULL;
    size_t n = 0;
    for (const cJSON *e = map ? map->child : NULL; e; e = e->next)
        n++;
    if (!cJSON_IsObject(root))
        rc = nc_err_set(err, NC_EFORMAT, "%s: expected a JSON object with \"weight_map\" "
                        "(a safetensors index)", path);
    else if (!map && cJSON_GetObjectItemCaseSensitive(root, "layers"))
        rc = nc_err_set(err, NC_EFORMAT, "%s: a normcmp config (it has \"layers\"), not a dump: "
                        "run it with normcmp run %s", path, path);
    else if (!map)
        rc = nc_err_set(err, NC_EFORMAT, "%s: weight_map: missing (expected an object of "
                        "\"<tensor>\": \"<shard file>\")", path);
    else if (!cJSON_IsObject(map))
        rc = nc_err_set(err, NC_EFORMAT, "%s: weight_map: expected an object of "
                        "\"<tensor>\": \"<shard file>\"", path);
    else if (n == 0)
        rc = nc_err_set(err, NC_EFORMAT, "%s: weight_map: empty (expected at least one "
                        "tensor)", path);
    else if (!(ix = calloc(1, sizeof *ix)) || !(ix->tensor = calloc(n, sizeof *ix->tensor)) ||
             !(ix->shard = calloc(n, sizeof *ix->shard)) || !(names = calloc(n, sizeof *names)))
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    if (!rc)
        rc = read_map(map, path, ix, names, err);
    if (!rc)
        rc = distinct_files(ix, names, path, err);
    for (size_t k = 0; names && k < n; k++)
        free(names[k]);
    free(names);
    cJSON_Delete(root);
    if (rc) {
        nc_index_free(ix);
        return rc;
    }
    *out = ix;
    return 0;
}

/* Reads a whole index file (a regular file, without blocking on a FIFO,
 * at most NC_INDEX_MAX_BYTES: util/readfile.h) and parses it. */
static int index_load(const char *path, nc_index **out, nc_err *err)
{
    *out = NULL;
    const nc_infile in = {.noun = "index file", .max_bytes = NC_INDEX_MAX_BYTES,
                          .dirfd = AT_FDCWD};
    char *buf;
    size_t n;
    int rc = nc_infile_read(path, &in, &buf, &n, err);
    if (rc)
        return rc;
    rc = nc_index_parse(buf, n, path, out, err);
    free(buf);
    return rc;
}

/* dir + "/" + name (dir "" or ending in '/' handled). */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    const char *sep = n && dir[n - 1] != '/' ? "/" : "";
    size_t cap = n + strlen(name) + 2;
    char *s = malloc(cap);
    if (s)
        snprintf(s, cap, "%s%s%s", dir, sep, name);
    return s;
}

static int push(char ***v, size_t *n, char *s, nc_err *err)
{
    char **g = s ? realloc(*v, (*n + 1) * sizeof *g) : NULL;
    if (!g) {
        free(s);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    *v = g;
    (*v)[(*n)++] = s;
    return 0;
}

static void free_list(char **v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(v[k]);
    free(v);
}

static int from_index(const char *path, char ***files, size_t *nfiles, nc_index **ix, nc_err *err)
{
    int rc = index_load(path, ix, err);
    if (rc)
        return rc;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup("");
    if (!dir)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    for (size_t k = 0; k < (*ix)->nfiles && !rc; k++)
        rc = push(files, nfiles, join(dir, (*ix)->files[k]), err);
    free(dir);
    return rc;
}

static int from_folder(const char *dirpath, char ***files, size_t *nfiles, nc_index **ix,
                       nc_err *err)
{
    DIR *dir = opendir(dirpath);
    if (!dir) {
        int e = errno;
        return nc_err_set_errno(err, e == ENOENT || e == EACCES ? NC_EINVAL : NC_EIO, e,
                                "%s: cannot read folder", dirpath);
    }
    char **st = NULL, **idx = NULL;
    size_t nst = 0, nidx = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (ends_with(de->d_name, INDEX_SUFFIX))
            rc = push(&idx, &nidx, join(dirpath, de->d_name), err);
        else if (ends_with(de->d_name, ".safetensors"))
            rc = push(&st, &nst, join(dirpath, de->d_name), err);
    }
    closedir(dir);
    if (!rc && nidx > 1) {
        qsort(idx, nidx, sizeof *idx, cmp_str);
        rc = nc_err_set(err, NC_EINVAL, "%s: %zu index files (%s, %s, ...): expected one; name "
                        "the one to read", dirpath, nidx, idx[0], idx[1]);
    } else if (!rc && nidx == 1) {
        rc = from_index(idx[0], files, nfiles, ix, err);
    } else if (!rc && nst == 0) {
        rc = nc_err_set(err, NC_EINVAL, "%s: no *.safetensors file and no %s index in the "
                        "folder (expected a sharded dump)", dirpath, INDEX_SUFFIX + 1);
    } else if (!rc) {
        qsort(st, nst, sizeof *st, cmp_str);
        *files = st;
        *nfiles = nst;
        st = NULL;
        nst = 0;
    }
    free_list(st, nst);
    free_list(idx, nidx);
    return rc;
}

static int from_glob(const char *pattern, char ***files, size_t *nfiles, nc_err *err)
{
    glob_t g;
    int r = glob(pattern, 0, NULL, &g);
    if (r == GLOB_NOMATCH)
        return nc_err_set(err, NC_EINVAL, "%s: no such file, and no file matches it as a "
                          "pattern", pattern);
    if (r != 0)
        return nc_err_set(err, r == GLOB_NOSPACE ? NC_ENOMEM : NC_EIO, "%s: cannot list the "
                          "files the pattern matches", pattern);
    int rc = 0;
    for (size_t k = 0; k < g.gl_pathc && !rc; k++) {
        /* a match that is not a readable regular file is refused, as the
         * folder and index forms refuse it: nothing is skipped silently */
        struct stat s, ls;
        const char *m = g.gl_pathv[k];
        if (stat(m, &s) != 0)
            rc = lstat(m, &ls) == 0 && S_ISLNK(ls.st_mode)
                     ? nc_err_set(err, NC_EINVAL, "%s: matches %s, a symbolic link to nothing "
                                  "(expected safetensors shards)", pattern, m)
                     : nc_err_set_errno(err, NC_EINVAL, errno, "%s: matches %s, which cannot "
                                        "be read", pattern, m);
        else if (!S_ISREG(s.st_mode))
            rc = nc_err_set(err, NC_EINVAL, "%s: matches %s, %s (expected safetensors shards, "
                            "regular files)", pattern, m, nc_file_kind(s.st_mode));
        else
            rc = push(files, nfiles, strdup(m), err);
    }
    globfree(&g);
    if (!rc)
        qsort(*files, *nfiles, sizeof **files, cmp_str);
    return rc;
}

int nc_shards_resolve(const char *spec, char ***files, size_t *nfiles, nc_index **ix,
                      nc_err *err)
{
    *files = NULL;
    *nfiles = 0;
    *ix = NULL;
    struct stat s;
    int rc;
    if (stat(spec, &s) == 0 && S_ISDIR(s.st_mode))
        rc = from_folder(spec, files, nfiles, ix, err);
    else if (stat(spec, &s) == 0)
        rc = from_index(spec, files, nfiles, ix, err);
    else
        rc = from_glob(spec, files, nfiles, err);
    if (rc) {
        free_list(*files, *nfiles);
        *files = NULL;
        *nfiles = 0;
        nc_index_free(*ix);
        *ix = NULL;
    }
    return rc;
}
