/*
 * replay.c - a plain main() for the fuzz targets: runs every saved input
 * through LLVMFuzzerTestOneInput, without libFuzzer, so that `make test`
 * replays the corpora (tests/fuzz/corpus/<target>/) with the project's own
 * compiler and flags (and with ASan/UBSan under SANITIZE=1).
 *
 *   build/tests/replay_fuzz_npy tests/fuzz/corpus/npy [more files or folders]
 *
 * Folders are walked recursively in name order (names starting with '.'
 * are skipped). Prints "replay_<target>: N passed, M failed": M counts
 * paths that cannot be read, or no input at all. A broken parser crashes or
 * aborts in the target; the file being replayed is then named on stderr.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Present in ASan/UBSan builds: called before a sanitizer ends the run. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

#define REPLAY_MAX_BYTES ((size_t)64 << 20)

static const char *current = ""; /* the input being replayed */
static size_t passed, failed;

static void say_current(void)
{
    static const char pre[] = "replay: crashed on ";
    if (write(2, pre, sizeof pre - 1) < 0 || write(2, current, strlen(current)) < 0 ||
        write(2, "\n", 1) < 0)
        return;
}

static void on_signal(int sig)
{
    say_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void fail(const char *path, const char *what)
{
    fprintf(stderr, "replay: %s: %s\n", path, what);
    failed++;
}

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(path, "cannot open");
        return;
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            unsigned char *grown = cap < REPLAY_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        fail(path, bad ? "cannot read" : "too large or out of memory");
        return;
    }
    /* an exact-size copy, so that the target's own copies start from it */
    unsigned char *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        fail(path, "out of memory");
        return;
    }
    memcpy(exact, buf, len);
    free(buf);
    current = path;
    LLVMFuzzerTestOneInput(exact, len);
    current = "";
    free(exact);
    passed++;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fail(path, "cannot open");
        return;
    }
    if (!S_ISDIR(sb.st_mode)) {
        run_file(path);
        return;
    }
    DIR *dir = opendir(path);
    if (!dir) {
        fail(path, "cannot open folder");
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            size_t grow = cap ? 2 * cap : 64;
            char **grown = realloc(names, grow * sizeof *names);
            if (!grown)
                break;
            names = grown;
            cap = grow;
        }
        size_t len = strlen(path) + strlen(de->d_name) + 2;
        if (!(names[n] = malloc(len)))
            break;
        snprintf(names[n], len, "%s/%s", path, de->d_name);
        n++;
    }
    closedir(dir);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t k = 0; k < n; k++) {
        run_path(names[k]);
        free(names[k]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    const char *target = strncmp(base, "replay_fuzz_", 12) == 0 ? base + 12 : base;

    /* the sanitizers report faults themselves (then call say_current);
     * abort(), from a target's failed check, is left to us */
    signal(SIGABRT, on_signal);
    if (__sanitizer_set_death_callback) {
        __sanitizer_set_death_callback(say_current);
    } else {
        signal(SIGSEGV, on_signal);
        signal(SIGBUS, on_signal);
        signal(SIGFPE, on_signal);
    }

    if (argc < 2)
        fail("(no arguments)", "expected corpus files or folders");
    for (int k = 1; k < argc; k++)
        run_path(argv[k]);
    if (passed == 0 && failed == 0)
        fail("(arguments)", "no input found");
    printf("replay_%s: %zu passed, %zu failed\n", target, passed, failed);
    return failed ? 1 : 0;
}
