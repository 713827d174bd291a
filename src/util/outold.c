/*
 * outold.c - an output folder's earlier run: the outputs its report.json
 * lists, and the old folder a swap leaves under the staging name, which is
 * emptied of what the new folder also holds (outfile_internal.h). Used by
 * the commit (outset.c) and, for a run killed during that clean-up, by the
 * next run on the same folder (outtrack.c).
 */
#include "util/outfile.h"
#include "util/outfile_internal.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/readfile.h"

/* The largest report.json read for its list of outputs. */
#define OLD_REPORT_MAX_BYTES ((uint64_t)1 << 30)

static bool has(char *const *names, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k], name) == 0)
            return true;
    return false;
}

static bool plain(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

void nc_old_outputs(const char *dir, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *path = nc_path_join(dir, "report.json");
    char *text = NULL;
    size_t len = 0;
    /* a regular file only (not through a link), read without blocking */
    const nc_infile in = {.noun = "report", .max_bytes = OLD_REPORT_MAX_BYTES,
                          .dirfd = AT_FDCWD, .nofollow = true};
    nc_err ignored = {0};
    if (!path || nc_infile_read(path, &in, &text, &len, &ignored) != 0) {
        free(path);
        return;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(root, "tool");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(tool, "name");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    if (cJSON_IsString(name) && strcmp(name->valuestring, "normcmp") == 0) {
        size_t cap = (size_t)cJSON_GetArraySize(outs) + 1;
        char **list = calloc(cap, sizeof *list);
        size_t k = 0;
        if (list && (list[k] = strdup("report.json")))
            k++;
        const cJSON *o;
        cJSON_ArrayForEach(o, outs)
        {
            if (list && k < cap && cJSON_IsString(o) && plain(o->valuestring) &&
                (list[k] = strdup(o->valuestring)))
                k++;
        }
        *out = list;
        *n = list ? k : 0;
    }
    cJSON_Delete(root);
    free(text);
    free(path);
}

void nc_free_names(char **names, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(names[k]);
    free(names);
}

/* One entry of the old folder (dfd): removed if it is an old output, a
 * file the new set replaced, or also in the new folder (tfd); else moved
 * into the new folder. */
static void finish_one(int dfd, int tfd, const char *name, char *const *old, size_t nold,
                       char *const *names, size_t n)
{
    struct stat a, b;
    if (fstatat(dfd, name, &a, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    bool drop = S_ISREG(a.st_mode) && (has(old, nold, name) || has(names, n, name));
    if (!drop && fstatat(tfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(a.st_mode) && S_ISLNK(b.st_mode)) {
            char x[PATH_MAX], y[PATH_MAX];
            ssize_t nx = readlinkat(dfd, name, x, sizeof x);
            ssize_t ny = readlinkat(tfd, name, y, sizeof y);
            drop = nx >= 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0;
        } else {
            drop = a.st_dev == b.st_dev && a.st_ino == b.st_ino; /* carried over */
        }
    }
    nc_out_step();
    if (drop)
        unlinkat(dfd, name, 0);
    else /* made while the folders were swapped: it belongs in the new one */
        renameat2(dfd, name, tfd, name, RENAME_NOREPLACE);
}

void nc_finish_old(const char *oldpath, const char *target, char *const *old, size_t nold,
                   char *const *names, size_t n)
{
    DIR *d = opendir(oldpath);
    int tfd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *e;
    while (d && tfd >= 0 && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && strcmp(name, "report.json") != 0)
            finish_one(dirfd(d), tfd, name, old, nold, names, n);
    }
    /* the old report goes last: until then it lists the old outputs for
     * a run that has to finish this after a kill (nc_finish_old_left) */
    if (d && tfd >= 0)
        finish_one(dirfd(d), tfd, "report.json", old, nold, names, n);
    if (d)
        closedir(d);
    if (tfd >= 0)
        close(tfd);
    rmdir(oldpath);
}

void nc_finish_old_left(const char *oldpath, const char *target)
{
    char **old, **names;
    size_t nold, n;
    nc_old_outputs(oldpath, &old, &nold);
    nc_old_outputs(target, &names, &n);
    nc_finish_old(oldpath, target, old, nold, names, n);
    nc_free_names(old, nold);
    nc_free_names(names, n);
}
