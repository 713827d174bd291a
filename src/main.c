/*
 * main.c - normcmp: subcommand dispatch only.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
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
    "  plot FILE... --figure T  draw paper-style figures (scatter, by-token, ...)\n"
    "  sweep CONFIG.json        error against alpha (DyT) and C (DyISRU) over a grid\n"
    "  run CONFIG.json          run an experiment described by a config file\n"
    "\n"
    "'normcmp <command> --help' lists a command's options; 'normcmp --version'.\n";

/* LeakSanitizer (SANITIZE=1 builds): fontconfig, which cairo's text API
 * loads, keeps its configuration for the life of the process by design;
 * nothing of ours is suppressed. Unused in normal builds. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\n";
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        {"inspect", cli_inspect}, {"synth", cli_synth}, {"norm", cli_norm},
        {"fit", cli_fit},         {"run", cli_run},         {"jacobian", cli_jacobian},
        {"plot", cli_plot},       {"sweep", cli_sweep},
    };
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
        return cli_finish_stdout(0);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("%s %s\n", NC_TOOL_NAME, NC_VERSION);
        return cli_finish_stdout(0);
    }
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++)
        if (strcmp(argv[1], cmds[k].name) == 0)
            return cmds[k].fn(argc - 1, argv + 1);
    fprintf(stderr, "normcmp: unknown command '%s' (expected inspect, synth, norm, fit, jacobian, plot, sweep or run; "
                    "see 'normcmp --help')\n", argv[1]);
    return 2;
}
