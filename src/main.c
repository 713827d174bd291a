/*
 * main.c - normcmp: subcommand dispatch only.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "io/dump.h"
#include "util/nearest.h"
#include "util/outfile.h"
#include "util/version.h"

static const char usage[] =
    "usage: normcmp <command> [options]\n"
    "\n"
    "How far is each normalization layer from an element-wise function?\n"
    "\n"
    "commands:\n"
    "  inspect FILE...          list the tensors of .npy / .safetensors dumps\n"
    "  synth -o OUT             write synthetic activations (presets early/middle/late)\n"
    "  norm FILE -o OUT.npy     write LayerNorm / RMSNorm of a tensor\n"
    "  fit FILE...              fit DyT, DyISRU, Derf and an affine map per layer\n"
    "  jacobian FILE...         compare each norm's exact Jacobian with its diagonal\n"
    "                           and with the surrogates' derivatives\n"
    "  plot FILE...             draw paper-style figures (--figure scatter, by-token, ...)\n"
    "  sweep CONFIG.json        error against alpha (DyT) and C (DyISRU) over a grid\n"
    "  run CONFIG.json          run an experiment described by a config file\n"
    "  merge OUT DIR...         combine the folders of 'run --shard K/N' into one report\n"
    "\n"
    "  help [COMMAND]           this list, or a command's options (as COMMAND --help)\n"
    "\n"
    "'normcmp <command> --help' lists a command's options; 'normcmp -V' (--version)\n"
    "prints the version. Documentation: README.md and docs/ in the source tree,\n"
    "and 'man normcmp' once installed.\n";

/* LeakSanitizer (SANITIZE=1 builds): fontconfig, which cairo's text API
 * loads, keeps its configuration for the life of the process by design;
 * nothing of ours is suppressed. Unused in normal builds. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\n";
}

/* write(2) of a string, from a signal handler */
static void say(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* SIGBUS: a memory-mapped input shrank under us (truncated or rewritten by
 * another process). Name it, remove our temporaries, exit 1. */
static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)ctx;
    /* several worker threads may fault at once: one reports and exits */
    static volatile int taken;
    if (__atomic_exchange_n(&taken, 1, __ATOMIC_SEQ_CST))
        for (;;)
            pause();
    const char *path = nc_dump_fault_path(info->si_addr);
    say("normcmp: ");
    say(path ? path : "an input file");
    say(": input file shrank while being read (was it truncated or rewritten by another "
        "process?)\n");
    nc_outfile_unlink_all();
    _exit(1);
}

/* SIGINT, SIGTERM, SIGHUP: remove our temporaries, then die of the signal. */
static void on_interrupt(int sig)
{
    nc_outfile_unlink_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    /* a file-size limit (ulimit -f) is a failed write like a full disk:
     * write() then fails with EFBIG, and the error path cleans up */
    signal(SIGXFSZ, SIG_IGN);
    const int stops[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int k = 0; k < 3; k++) {
        struct sigaction si;
        memset(&si, 0, sizeof si);
        si.sa_handler = on_interrupt;
        sigemptyset(&si.sa_mask);
        sigaction(stops[k], &si, NULL);
    }
}

static const struct {
    const char *name;
    int (*fn)(int, char **);
} cmds[] = {
    {"inspect", cli_inspect}, {"synth", cli_synth}, {"norm", cli_norm},
    {"fit", cli_fit},         {"run", cli_run},     {"jacobian", cli_jacobian},
    {"plot", cli_plot},       {"sweep", cli_sweep}, {"merge", cli_merge},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

/* The unknown command, with the nearest known one when it looks like a
 * typo. Returns 2. */
static int unknown_command(const char *name)
{
    const char *names[NCMDS];
    for (size_t k = 0; k < NCMDS; k++)
        names[k] = cmds[k].name;
    const char *near = nc_nearest(name, strlen(name), names, NCMDS);
    if (near)
        fprintf(stderr, "normcmp: unknown command '%s' (did you mean %s? see 'normcmp --help')\n",
                name, near);
    else
        fprintf(stderr, "normcmp: unknown command '%s' (expected inspect, synth, norm, fit, "
                        "jacobian, plot, sweep, run or merge; see 'normcmp --help')\n", name);
    return 2;
}

/* `normcmp help [COMMAND]`: the command list, or COMMAND --help. */
static int help(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "help") == 0) { /* `help help`: the list */
        fputs(usage, stdout);
        return cli_finish_stdout(0);
    }
    if (argc > 3) {
        fprintf(stderr, "normcmp: help: expected one COMMAND, got %d words (see 'normcmp help')\n",
                argc - 2);
        return 2;
    }
    for (size_t k = 0; k < NCMDS; k++)
        if (strcmp(argv[2], cmds[k].name) == 0) {
            char *args[3] = {argv[2], (char *)"--help", NULL};
            return cmds[k].fn(2, args);
        }
    return unknown_command(argv[2]);
}

int main(int argc, char **argv)
{
    install_handlers();
    cli_test_hooks();
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0)
        return help(argc, argv);
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("%s %s\n", NC_TOOL_NAME, NC_VERSION);
        return cli_finish_stdout(0);
    }
    for (size_t k = 0; k < NCMDS; k++)
        if (strcmp(argv[1], cmds[k].name) == 0)
            return cmds[k].fn(argc - 1, argv + 1);
    return unknown_command(argv[1]);
}
