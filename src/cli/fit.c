/*
 * fit.c - `normcmp fit FILE...` and `normcmp run CONFIG.json`.
 *
 * `fit` builds a config from its flags (one config layer per FILE) and
 * `run` reads one; both go through cli_execute. Flags given to `run`
 * override the config's values.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/roles.h"
#include "cli/cli.h"
#include "util/parse.h"

enum {
    OPT_TENSOR = 't',
    OPT_NORM = 'n',
    OPT_EPS = 'e',
    OPT_OUT = 'o',
    OPT_QUIET = 'q',
    OPT_HELP = 'h',
    OPT_LABEL = 256,
    OPT_REAL_OUTPUT,
    OPT_WEIGHT,
    OPT_BIAS,
    OPT_GRAD,
    OPT_FITS,
    OPT_AMP_DYT,
    OPT_AMP_DYISRU,
    OPT_AMP_DERF,
    OPT_SAMPLE,
    OPT_SEED,
    OPT_THREADS,
    OPT_BINS,
    OPT_MAX_EXACT,
    OPT_EXPERIMENT,
    OPT_NO_JACOBIAN,
    OPT_PROBES,
    OPT_DENSE_TOKENS,
    OPT_FIGURE,
    OPT_LAYER,
    OPT_FORMAT,
    OPT_SIZE,
    OPT_DPI,
    OPT_CURVES,
    OPT_STRICT,
    OPT_SHARD,
    OPT_LEGEND,
    OPT_BOOTSTRAP,
    OPT_TOKEN_BLOCK,
    OPT_VERBOSE,
    OPT_JSON,
    OPT_ROLE,
    OPT_ALPHA0,
    OPT_NO_DROPIN,
    OPT_SWAP,
    OPT_XLIM,
    OPT_YLIM,
    OPT_TITLE,
    OPT_LABELS,
};

static const struct option fit_options[] = {
    {"tensor", required_argument, NULL, OPT_TENSOR},
    {"norm", required_argument, NULL, OPT_NORM},
    {"eps", required_argument, NULL, OPT_EPS},
    {"out", required_argument, NULL, OPT_OUT},
    {"label", required_argument, NULL, OPT_LABEL},
    {"real-output", required_argument, NULL, OPT_REAL_OUTPUT},
    {"weight", required_argument, NULL, OPT_WEIGHT},
    {"bias", required_argument, NULL, OPT_BIAS},
    {"grad-output", required_argument, NULL, OPT_GRAD},
    {"fits", required_argument, NULL, OPT_FITS},
    {"amplitude-dyt", required_argument, NULL, OPT_AMP_DYT},
    {"amplitude-dyisru", required_argument, NULL, OPT_AMP_DYISRU},
    {"amplitude-derf", required_argument, NULL, OPT_AMP_DERF},
    {"sample-tokens", required_argument, NULL, OPT_SAMPLE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"bootstrap", required_argument, NULL, OPT_BOOTSTRAP},
    {"token-block", required_argument, NULL, OPT_TOKEN_BLOCK},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"bins", required_argument, NULL, OPT_BINS},
    {"max-exact-points", required_argument, NULL, OPT_MAX_EXACT},
    {"experiment", required_argument, NULL, OPT_EXPERIMENT},
    {"no-jacobian", no_argument, NULL, OPT_NO_JACOBIAN},
    {"probes", required_argument, NULL, OPT_PROBES},
    {"dense-tokens", required_argument, NULL, OPT_DENSE_TOKENS},
    {"figure", required_argument, NULL, OPT_FIGURE},
    {"layer", required_argument, NULL, OPT_LAYER},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"size", required_argument, NULL, OPT_SIZE},
    {"dpi", required_argument, NULL, OPT_DPI},
    {"curves", required_argument, NULL, OPT_CURVES},
    {"strict", no_argument, NULL, OPT_STRICT},
    {"legend", required_argument, NULL, OPT_LEGEND},
    {"role", required_argument, NULL, OPT_ROLE},
    {"alpha0", required_argument, NULL, OPT_ALPHA0},
    {"no-dropin", no_argument, NULL, OPT_NO_DROPIN},
    {"swap", required_argument, NULL, OPT_SWAP},
    {"xlim", required_argument, NULL, OPT_XLIM},
    {"ylim", required_argument, NULL, OPT_YLIM},
    {"title", required_argument, NULL, OPT_TITLE},
    {"labels", required_argument, NULL, OPT_LABELS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* The drop-in options' help lines, shared by fit and run. */
#define DROPIN_HELP                                                                             \
    "      --role REGEX=NAME      a layer whose name matches REGEX (POSIX extended, searched\n"   \
    "                             in the name) has role NAME (attn_norm, mlp_norm, final_norm,\n" \
    "                             ...); repeatable, first match wins, before the config's\n"      \
    "                             \"roles\" and the built-in names (docs/dropin.md)\n"           \
    "      --alpha0 A[,OTHER]     alpha of the fixed-alpha drop-in DyT: A for every layer, or\n"  \
    "                             A for attention-input norms and OTHER for the rest (default:\n" \
    "                             the DyT paper's by model kind, width and role)\n"               \
    "      --no-dropin            no drop-in parameter files (dropin_*.safetensors)\n"      \
    "      --swap FILE            the swap test's results (docs/swap.md; default: DUMP.swap.json\n" \
    "                             beside the dump, or swap.json in the output folder, if there)\n"

/* The options of what fit, run and sweep print, last in their help. */
#define OUTPUT_HELP                                                                              \
    "  -q, --quiet                nothing on stderr but errors: no progress, notes or\n"          \
    "                             warnings (report.json keeps the real-output warnings;\n"     \
    "                             --strict makes a disagreement an error)\n"                   \
    "      --verbose              the full tables on stdout (default: a summary that fits\n"    \
    "                             the terminal: a line per layer and the run's verdict)\n"     \
    "      --json                 report.json on stdout instead of the summary\n"               \
    "  -h, --help                 this help\n"

static const char fit_help[] =
    "usage: normcmp fit FILE... [options]\n"
    "Fits DyT, DyISRU, Derf, the theory curves and an affine map to each layer's\n"
    "norm output; writes DIR/report.json and prints a summary. A FILE is a .npy or\n"
    ".safetensors file, or a sharded dump: a folder, its *.safetensors.index.json or\n"
    "a quoted glob of its shards.\n"
    "\n"
    "  -t, --tensor PATTERN       tensor name or glob (repeatable; default: every '*.input'\n"
    "                             tensor of a safetensors file)\n"
    "  -n, --norm NAME            layernorm or rmsnorm, any case (LayerNorm, rms_norm)\n"
    "                             (default: the dump's __metadata__, else layernorm; or\n"
    "                             detected from a real output that disagrees)\n"
    "  -e, --eps E                norm eps, number >= 0 (default: the dump's __metadata__,\n"
    "                             else 1e-5 LayerNorm, 1e-6 RMSNorm; or detected)\n"
    "      --strict               exit 2 when a real output disagrees with the norm used or\n"
    "                             contradicts a kind or eps that was given\n"
    "  -o, --out DIR              output folder (default out/<first file's name>)\n"
    "      --label NAME           layer name (one layer only)\n"
    "      --real-output FILE     the layer's real output (.npy; default <prefix>_output.npy)\n"
    "      --weight FILE          affine weight (.npy; default <prefix>_weight.npy)\n"
    "      --bias FILE            affine bias (.npy; default <prefix>_bias.npy)\n"
    "      --grad-output FILE     upstream gradient (.npy; default <prefix>_grad_output.npy)\n"
    "      --fits LIST            comma-separated fits (default all: linear, dyt,\n"
    "                             dyt_per_channel, dyisru, dyisru_free, dyt_theory,\n"
    "                             dyisru_theory, derf)\n"
    "      --amplitude-dyt R      free, sqrt(d), sqrt(d-1), auto or a number (default free)\n"
    "      --amplitude-dyisru R   sqrt(d), sqrt(d-1), auto or a number (default auto:\n"
    "                             sqrt(d) for RMSNorm, sqrt(d-1) for LayerNorm)\n"
    "      --amplitude-derf R     as --amplitude-dyt (default free)\n"
    "      --sample-tokens N      fit a seeded random sample of N tokens (default 0: all)\n"
    "      --seed N               seed of the token sample and the bootstrap (default 1)\n"
    "      --bootstrap N          token bootstrap replicates behind every interval and\n"
    "                             verdict, 0..100000 (default 1000; 0: point estimates only)\n"
    "      --token-block K        tokens per sequence: the bootstrap resamples whole\n"
    "                             sequences (default: the dump's metadata or shape, else 1)\n"
    "      --threads N            worker threads, 0..16 (default 0: one per CPU)\n"
    "      --bins N               most bins of x for large layers (default 32768)\n"
    "      --max-exact-points N   fit raw points up to this many, bins above (default 262144)\n"
    "      --experiment NAME      also run outlier-steps on each layer\n"
    "      --no-jacobian          skip the diagonal-Jacobian comparison\n"
    "      --probes N             random probe columns per token of the dense Jacobian check,\n"
    "                             1..1024 (default 8; the backprop errors are exact expectations\n"
    "                             over probes and do not depend on it: docs/jacobian.md)\n"
    "      --dense-tokens N       tokens whose d x d Jacobian is checked entry by entry (default:\n"
    "                             2^24/d^2, at least 1, at most 4096: 1 token at d = 4096)\n"
    DROPIN_HELP
    OUTPUT_HELP;

static const char run_help[] =
    "usage: normcmp run CONFIG.json [options]\n"
    "Runs the experiment a config describes (docs/config.md); writes\n"
    "<output>/report.json and a copy of the config, and prints a summary.\n"
    "Options override the config's values:\n"
    "\n"
    "  -o, --out DIR              output folder (default: the config's, or out/<name>)\n"
    "      --threads N            worker threads, 0..16\n"
    "      --sample-tokens N      fit a seeded random sample of N tokens\n"
    "      --seed N               seed of the token sample, synthetic layers, bootstrap\n"
    "      --bootstrap N          token bootstrap replicates (0: point estimates only)\n"
    "      --token-block K        tokens per sequence, for the bootstrap's blocks\n"
    "      --shard K/N            analyse only layers i (0-based, plan order) with\n"
    "                             i mod N = K-1; 'normcmp merge' combines the N folders\n"
    "      --strict               exit 2 when a real output disagrees with the norm used or\n"
    "                             contradicts a kind or eps that was given\n"
    DROPIN_HELP
    OUTPUT_HELP;

#define MAX_ROLE_FLAGS 64

/* Flags shared by fit and run that override the config. */
typedef struct overrides {
    const char *out;
    bool has_threads, has_sample, has_seed, has_boot, has_tb;
    uint64_t threads, sample, seed, boot, tb;
    bool quiet, strict;
    const char *roles[MAX_ROLE_FLAGS]; /* --role REGEX=NAME, as given */
    size_t nroles;
    nc_alpha0_opt alpha0;              /* --alpha0 (n = 0: not given) */
    bool no_dropin;
    const char *swap;
} overrides;

static int set_default_output(nc_config *cfg, const char *out, nc_err *err)
{
    free(cfg->output);
    cfg->output = NULL;
    if (out) {
        cfg->output = strdup(out);
    } else {
        size_t n = strlen(cfg->name) + 8;
        if ((cfg->output = malloc(n)))
            snprintf(cfg->output, n, "out/%s", cfg->name);
    }
    return cfg->output ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory");
}

/* The position of the '=' that ends REGEX in --role's REGEX=NAME (the
 * last one: a role name has none), after checking both parts; or a
 * negative NC_E* code with err set. */
static int role_split(const char *arg, nc_err *err)
{
    const char *eq = strrchr(arg, '=');
    char why[160] = "", *rx = eq ? strndup(arg, (size_t)(eq - arg)) : NULL;
    if (!eq || eq == arg || !nc_role_name_ok(eq + 1)) {
        free(rx);
        return nc_err_set(err, NC_EINVAL, "--role: expected REGEX=NAME, NAME 1 to %d letters, "
                          "digits, '_', '.' or '-' (attn_norm, mlp_norm, final_norm, ...), got "
                          "'%s'", NC_ROLE_NAME_MAX - 1, arg);
    }
    if (!rx)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    bool ok = nc_role_regex_ok(rx, why, sizeof why);
    free(rx);
    if (!ok)
        return nc_err_set(err, NC_EINVAL, "--role: '%.*s' is not a usable POSIX extended "
                          "regular expression (%s)", (int)(eq - arg), arg, why);
    return (int)(eq - arg);
}

/* --alpha0 A or A,OTHER into *a. */
static int parse_alpha0(const char *arg, nc_alpha0_opt *a, nc_err *err)
{
    const char *comma = strchr(arg, ',');
    char first[64];
    if (comma && (size_t)(comma - arg) >= sizeof first)
        return nc_err_set(err, NC_EINVAL, "--alpha0: expected A or A,OTHER, got '%s'", arg);
    snprintf(first, sizeof first, "%.*s", comma ? (int)(comma - arg) : 63, arg);
    *a = (nc_alpha0_opt){comma ? 2 : 1, 0, 0, "--alpha0"};
    int rc = nc_parse_double(first, "--alpha0", 1e-6, 1e6, &a->attn, err);
    if (!rc && comma)
        rc = nc_parse_double(comma + 1, "--alpha0 (OTHER)", 1e-6, 1e6, &a->other, err);
    a->other = comma ? a->other : a->attn;
    return rc;
}

/* The options fit and run share (--out, --threads, --sample-tokens, --seed,
 * --quiet, the drop-in options): 1 if c was one of them, 0 if not, or a
 * negative NC_E* code with err set for a bad value. */
static int parse_override(int c, const char *arg, overrides *ov, nc_err *err)
{
    int rc = 0;
    switch (c) {
    case OPT_ROLE:
        if (ov->nroles == MAX_ROLE_FLAGS)
            return nc_err_set(err, NC_EINVAL, "too many --role options (at most %d)",
                              MAX_ROLE_FLAGS);
        if ((rc = role_split(arg, err)) < 0)
            return rc;
        ov->roles[ov->nroles++] = arg;
        return 1;
    case OPT_ALPHA0:
        rc = parse_alpha0(arg, &ov->alpha0, err);
        break;
    case OPT_NO_DROPIN:
        ov->no_dropin = true;
        return 1;
    case OPT_SWAP:
        ov->swap = arg;
        return 1;
    case OPT_OUT:
        if (strcmp(arg, "-") == 0) /* not standard output: that would be a folder "-" */
            return nc_err_set(err, NC_EINVAL, "--out: expected a folder, not '-' (the outputs "
                              "are files in a folder, never standard output; ./- names a "
                              "folder called -)");
        ov->out = arg;
        return 1;
    case OPT_QUIET:
        ov->quiet = true;
        return 1;
    case OPT_STRICT:
        ov->strict = true;
        return 1;
    case OPT_VERBOSE:
        cli_verbose = true;
        return 1;
    case OPT_JSON:
        cli_json = true;
        return 1;
    case OPT_THREADS:
        rc = nc_parse_u64(arg, "--threads", 0, 16, &ov->threads, err);
        ov->has_threads = true;
        break;
    case OPT_SAMPLE:
        rc = nc_parse_u64(arg, "--sample-tokens", 0, UINT64_MAX >> 2, &ov->sample, err);
        ov->has_sample = true;
        break;
    case OPT_SEED:
        rc = nc_parse_u64(arg, "--seed", 0, UINT64_MAX, &ov->seed, err);
        ov->has_seed = true;
        break;
    case OPT_BOOTSTRAP:
        rc = nc_parse_u64(arg, "--bootstrap", 0, NC_BOOT_MAX_REPLICATES, &ov->boot, err);
        ov->has_boot = true;
        break;
    case OPT_TOKEN_BLOCK:
        rc = nc_parse_u64(arg, "--token-block", 1, UINT64_MAX >> 2, &ov->tb, err);
        ov->has_tb = true;
        break;
    default:
        return 0;
    }
    return rc ? rc : 1;
}

static int apply_overrides(nc_config *cfg, const overrides *ov, nc_err *err)
{
    if (ov->has_threads)
        cfg->threads = (int)ov->threads;
    if (ov->has_sample)
        cfg->sample_tokens = (size_t)ov->sample;
    if (ov->has_seed)
        cfg->seed = ov->seed;
    if (ov->has_boot)
        cfg->boot_replicates = (size_t)ov->boot;
    if (ov->has_tb)
        cfg->token_block = (size_t)ov->tb;
    if (ov->strict)
        cfg->strict = true;
    if (ov->alpha0.n)
        cfg->dropin.alpha0 = ov->alpha0;
    if (ov->no_dropin)
        cfg->dropin.enabled = false;
    if (ov->swap) {
        free(cfg->swap);
        if (!(cfg->swap = strdup(ov->swap)))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    /* the flags' role patterns come first, in their order */
    for (size_t k = 0; k < ov->nroles; k++) {
        const char *arg = ov->roles[k], *eq = strrchr(arg, '=');
        char *rx = strndup(arg, (size_t)(eq - arg));
        int rc = rx ? nc_config_dropin_add_role(&cfg->dropin, k, rx, eq + 1, "--role", err)
                    : nc_err_set(err, NC_ENOMEM, "out of memory");
        free(rx);
        if (rc)
            return rc;
    }
    return 0;
}

/* What fit and run share once cfg is complete: the flags that override it,
 * the output folder (the flag's, else the config's, else out/<name>), the
 * command line for the report, and the run itself. Returns the exit
 * status. argv as the subcommand got it (argv[-1] is the program). */
static int launch(nc_config *cfg, const overrides *ov, int argc, char **argv,
                  const char *config_path)
{
    nc_err err = {0};
    if (apply_overrides(cfg, ov, &err) != 0)
        return cli_fail(&err);
    if ((ov->out || !cfg->output) && set_default_output(cfg, ov->out, &err) != 0)
        return cli_fail(&err);
    char *command = cli_command_line(argc + 1, argv - 1);
    if (!command) {
        nc_err_set(&err, NC_ENOMEM, "out of memory");
        return cli_fail(&err);
    }
    int status = cli_execute(cfg, command, config_path, ov->quiet);
    free(command);
    return status;
}

static char *dupstr(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* "data/ln00_input.npy" -> "ln00_input" */
static char *stem(const char *path)
{
    /* a sharded dump's folder may end in '/'; a glob's name stops at its
     * first pattern character */
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    const char *b = path;
    for (size_t k = 0; k < len; k++)
        if (path[k] == '/' && k + 1 < len)
            b = path + k + 1;
    size_t n = strcspn(b, ".*?[/");
    if (n == 0)
        return strdup("dump");
    char *s = malloc(n + 1);
    if (s)
        snprintf(s, n + 1, "%.*s", (int)n, b);
    return s;
}

static const char jacobian_help[] =
    "usage: normcmp jacobian FILE... [options]\n"
    "The diagonal-Jacobian comparison: the share of each norm's exact Jacobian on its\n"
    "diagonal, the backprop error of keeping only the diagonal (exact over Gaussian\n"
    "probes, and the dump's real gradients with standard errors when it has them),\n"
    "the Gaussian reference values at the layer's d, the radial error, each fitted\n"
    "surrogate's derivative against the diagonal, and the ODE check (the derivation\n"
    "and every number: docs/ in the source tree). Runs the fits too (the surrogates\n"
    "are compared), writes DIR/report.json and prints the Jacobian table (the fits\n"
    "table is 'normcmp fit'). Takes every option of\n"
    "'normcmp fit' (see 'normcmp fit --help'); the ones specific to it:\n"
    "\n"
    "      --probes N             probe columns per token of the dense check (default 8)\n"
    "      --dense-tokens N       tokens whose d x d Jacobian is checked entry by entry\n"
    "      --grad-output FILE     upstream gradients (.npy; default <prefix>_grad_output.npy)\n";

static const char plot_help[] =
    "usage: normcmp plot FILE... [--figure TYPE[,TYPE...]] [options]\n"
    "Fits each layer and draws paper-style figures into DIR (PNG with metadata, and\n"
    "PDF/SVG on request), beside report.json. Takes every option of 'normcmp fit';\n"
    "the ones specific to it:\n"
    "\n"
    "      --figure TYPES         comma-separated, repeatable (default scatter):\n"
    "                               scatter        input vs output of each layer, with fits\n"
    "                               scatter-grid   the same, one panel per layer\n"
    "                               by-token       a few tokens' points in colour\n"
    "                               by-channel     the top outlier channels in colour\n"
    "                               jacobian       the exact J_ii and the fits' f'(x)\n"
    "                               alpha-std      fitted alpha against 1/std across layers\n"
    "                               alpha-depth    fitted alpha and C against layer index\n"
    "                               swap-depth     the swap test's loss change per layer\n"
    "                               tanh-family    tanh(alpha x) for a few alpha\n"
    "                               outlier-steps  needs --experiment outlier-steps\n"
    "      --layer PATTERN        only these layers (name or glob; repeatable; default all)\n"
    "      --format LIST          png, pdf, svg (comma-separated; default png)\n"
    "      --size WxH             figure size in inches (default per figure, e.g. 7x5.2)\n"
    "      --dpi N                resolution of PNGs, 10..2400 (default 150)\n"
    "      --curves LIST          fits drawn on scatter/jacobian figures (default\n"
    "                             linear,dyt,dyisru; jacobian adds the theory curves)\n"
    "      --xlim LO,HI           x axis limits of scatter, by-token, by-channel and jacobian\n"
    "                             (default: every point, the tails on a symmetric log axis\n"
    "                             when they reach past 4x the 99.5th percentile of |x|)\n"
    "      --ylim LO,HI           y axis limits of those figures\n"
    "      --title TEXT           the figure's title; none: no title (camera-ready)\n"
    "      --labels WHAT          auto (default) or none: alpha-std's layer names\n"
    "      --legend WHERE         auto (default: inside where it hides no data, else\n"
    "                             below), none, outside, or a corner: upper-left,\n"
    "                             upper-right, lower-left, lower-right, center, ...\n";

enum { MODE_FIT, MODE_JACOBIAN, MODE_PLOT };

static int fit_main(int argc, char **argv, int mode);

int cli_fit(int argc, char **argv)
{
    return fit_main(argc, argv, MODE_FIT);
}

int cli_jacobian(int argc, char **argv)
{
    cli_summary_jacobian_only = true;
    return fit_main(argc, argv, MODE_JACOBIAN);
}

int cli_plot(int argc, char **argv)
{
    return fit_main(argc, argv, MODE_PLOT);
}

/* Figure options of `plot`, applied to every --figure. */
typedef struct fig_opts {
    nc_fig_kind kinds[NC_FIG_COUNT];
    size_t nkinds;
    const char *layers[64];
    size_t nlayers;
    unsigned formats;
    double w, h, dpi;
    bool curves[NC_FIT_COUNT];
    int legend; /* an nc_legend_pos */
    bool jacobian_off;
    bool has_xlim, has_ylim;
    double xlim[2], ylim[2];
    const char *title; /* "none": no title */
    bool no_labels;
    bool look;         /* one of --xlim, --ylim, --title, --labels given */
} fig_opts;

static int add_figures(nc_config *cfg, const fig_opts *fo, nc_err *err)
{
    for (size_t k = 0; k < fo->nkinds; k++) {
        nc_fig_spec *f;
        int rc = nc_config_add_figure(cfg, &f, err);
        if (rc)
            return rc;
        f->kind = fo->kinds[k];
        f->formats = fo->formats;
        f->width_in = fo->w;
        f->height_in = fo->h;
        f->dpi = fo->dpi;
        memcpy(f->curves, fo->curves, sizeof f->curves);
        f->legend = fo->legend;
        f->has_xlim = fo->has_xlim;
        f->has_ylim = fo->has_ylim;
        memcpy(f->xlim, fo->xlim, sizeof f->xlim);
        memcpy(f->ylim, fo->ylim, sizeof f->ylim);
        f->no_labels = fo->no_labels;
        f->no_title = fo->title && strcmp(fo->title, "none") == 0;
        if (fo->title && !f->no_title && !(f->title = strdup(fo->title)))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        if (fo->nlayers) {
            if (!(f->layers = calloc(fo->nlayers, sizeof *f->layers)))
                return nc_err_set(err, NC_ENOMEM, "out of memory");
            for (size_t q = 0; q < fo->nlayers; q++) {
                if (!(f->layers[q] = strdup(fo->layers[q])))
                    return nc_err_set(err, NC_ENOMEM, "out of memory");
                f->nlayers = q + 1;
            }
        }
        /* the Jacobian results are only needed by the jacobian figure */
        if (f->kind == NC_FIG_JACOBIAN && !fo->jacobian_off)
            cfg->jacobian.enabled = true;
    }
    return 0;
}

/* What fit, jacobian and plot collect from their flags before the config
 * is built. */
typedef struct fit_args {
    int mode;
    const char *cmd;
    fig_opts fo;
    overrides ov;
    const char *tensors[64];
    size_t ntensors;
    const char *label, *comp[NC_COMP_COUNT];
    bool has_norm, has_eps, outlier;
    nc_norm_kind norm;
    double eps;
} fit_args;

/* Option handlers return OPT_DONE when they took the option, OPT_NOT_MINE
 * when it is not theirs, or an exit status (>= 0) after printing why. */
enum { OPT_DONE = -1, OPT_NOT_MINE = -2 };

/* --amplitude-dyt, --amplitude-dyisru, --amplitude-derf. */
static int amp_option(int c, const char *arg, const char *cmd, nc_config *cfg)
{
    nc_amp *a = c == OPT_AMP_DYT ? &cfg->amp_dyt
                : c == OPT_AMP_DYISRU ? &cfg->amp_dyisru
                                      : &cfg->amp_derf;
    const char *name = c == OPT_AMP_DYT ? "--amplitude-dyt"
                       : c == OPT_AMP_DYISRU ? "--amplitude-dyisru"
                                             : "--amplitude-derf";
    if (!nc_amp_parse(arg, a) || (c == OPT_AMP_DYISRU && a->rule == NC_AMP_FREE))
        return cli_usage_error(cmd, "%s: expected %s, got '%s'", name,
                               c == OPT_AMP_DYISRU
                                   ? "sqrt(d), sqrt(d-1), auto or a number > 0"
                                   : "free, sqrt(d), sqrt(d-1), auto or a number > 0",
                               arg);
    return OPT_DONE;
}

/* The layers' inputs and norm: --tensor, --norm, --eps, --label and the
 * companion files. */
static int input_option(int c, const char *arg, fit_args *a, nc_err *err)
{
    switch (c) {
    case OPT_TENSOR:
        if (a->ntensors == sizeof a->tensors / sizeof a->tensors[0])
            return cli_usage_error(a->cmd, "too many --tensor options (at most 64)");
        a->tensors[a->ntensors++] = arg;
        return OPT_DONE;
    case OPT_NORM:
        if (!nc_norm_parse(arg, &a->norm))
            return cli_usage_error(a->cmd, "--norm: expected " NC_NORM_NAMES ", got '%s'",
                                   arg);
        a->has_norm = true;
        return OPT_DONE;
    case OPT_EPS:
        if (nc_parse_double(arg, "--eps", 0, 1, &a->eps, err) != 0)
            return cli_option_fail(a->cmd, err);
        a->has_eps = true;
        return OPT_DONE;
    case OPT_LABEL:
        a->label = arg;
        return OPT_DONE;
    case OPT_REAL_OUTPUT:
        a->comp[NC_COMP_OUTPUT] = arg;
        return OPT_DONE;
    case OPT_WEIGHT:
        a->comp[NC_COMP_WEIGHT] = arg;
        return OPT_DONE;
    case OPT_BIAS:
        a->comp[NC_COMP_BIAS] = arg;
        return OPT_DONE;
    case OPT_GRAD:
        a->comp[NC_COMP_GRAD] = arg;
        return OPT_DONE;
    default:
        return OPT_NOT_MINE;
    }
}

/* What is computed: --fits, amplitudes, bins, the experiment, the
 * Jacobian's options. */
static int analysis_option(int c, const char *arg, fit_args *a, nc_config *cfg, nc_err *err)
{
    uint64_t u;
    switch (c) {
    case OPT_FITS:
        return nc_fits_parse("--fits", arg, cfg->fit, err) ? cli_option_fail(a->cmd, err) : OPT_DONE;
    case OPT_AMP_DYT:
    case OPT_AMP_DYISRU:
    case OPT_AMP_DERF:
        return amp_option(c, arg, a->cmd, cfg);
    case OPT_BINS:
        if (nc_parse_u64(arg, "--bins", 16, 1 << 24, &u, err))
            return cli_option_fail(a->cmd, err);
        cfg->max_bins = (size_t)u;
        return OPT_DONE;
    case OPT_MAX_EXACT:
        if (nc_parse_u64(arg, "--max-exact-points", 0, (uint64_t)1 << 40, &u, err))
            return cli_option_fail(a->cmd, err);
        cfg->max_exact_points = (size_t)u;
        return OPT_DONE;
    case OPT_EXPERIMENT:
        if (strcmp(arg, "outlier-steps") != 0)
            return cli_usage_error(a->cmd, "--experiment: expected outlier-steps, got '%s'",
                                   arg);
        a->outlier = true;
        return OPT_DONE;
    case OPT_NO_JACOBIAN:
        cfg->jacobian.enabled = false;
        a->fo.jacobian_off = true;
        return OPT_DONE;
    case OPT_PROBES:
        if (nc_parse_u64(arg, "--probes", 1, 1024, &u, err))
            return cli_option_fail(a->cmd, err);
        cfg->jacobian.probes = (size_t)u;
        return OPT_DONE;
    case OPT_DENSE_TOKENS:
        if (nc_parse_u64(arg, "--dense-tokens", 1, (uint64_t)1 << 40, &u, err))
            return cli_option_fail(a->cmd, err);
        cfg->jacobian.dense_tokens = (size_t)u;
        return OPT_DONE;
    default:
        return OPT_NOT_MINE;
    }
}

/* --figure TYPE[,TYPE...] */
static int figure_kinds(const char *arg, fit_args *a)
{
    for (const char *p = arg; *p;) {
        size_t n = strcspn(p, ",");
        char name[32];
        nc_fig_kind kind;
        snprintf(name, sizeof name, "%.*s", (int)(n < 31 ? n : 31), p);
        if (n >= 31 || !nc_fig_kind_parse(name, &kind))
            return cli_usage_error(a->cmd, "--figure: expected scatter, scatter-grid, "
                                   "by-token, by-channel, jacobian, alpha-std, "
                                   "alpha-depth, swap-depth, tanh-family or outlier-steps, got '%s'", name);
        if (a->fo.nkinds < NC_FIG_COUNT)
            a->fo.kinds[a->fo.nkinds++] = kind;
        p += n + (p[n] == ',');
    }
    return OPT_DONE;
}

/* --xlim, --ylim, --title and --labels. */
static int look_option(int c, const char *arg, fit_args *a)
{
    fig_opts *fo = &a->fo;
    switch (c) {
    case OPT_XLIM:
    case OPT_YLIM: {
        bool x = c == OPT_XLIM;
        if (!nc_fig_limits_parse(arg, x ? fo->xlim : fo->ylim))
            return cli_usage_error(a->cmd, "--%s: expected LO,HI (numbers, LO < HI), got '%s'",
                                   x ? "xlim" : "ylim", arg);
        *(x ? &fo->has_xlim : &fo->has_ylim) = true;
        break;
    }
    case OPT_TITLE:
        fo->title = arg;
        break;
    case OPT_LABELS:
        if (strcmp(arg, "auto") && strcmp(arg, "none"))
            return cli_usage_error(a->cmd, "--labels: expected auto or none, got '%s'", arg);
        fo->no_labels = strcmp(arg, "none") == 0;
        break;
    default:
        return OPT_NOT_MINE;
    }
    fo->look = true;
    return OPT_DONE;
}

/* The figure options of plot: --figure, --layer, --format, --size, --dpi,
 * --curves, --legend, --xlim, --ylim, --title, --labels. */
static int figure_option(int c, const char *arg, fit_args *a, nc_err *err)
{
    fig_opts *fo = &a->fo;
    switch (c) {
    case OPT_FIGURE:
        return figure_kinds(arg, a);
    case OPT_LAYER:
        if (fo->nlayers == 64)
            return cli_usage_error(a->cmd, "too many --layer options (at most 64)");
        fo->layers[fo->nlayers++] = arg;
        return OPT_DONE;
    case OPT_FORMAT:
        if (!nc_fig_formats_parse(arg, &fo->formats))
            return cli_usage_error(a->cmd, "--format: expected a list of png, pdf, svg, "
                                   "got '%s'", arg);
        return OPT_DONE;
    case OPT_SIZE: {
        const char *x = strchr(arg, 'x');
        char wbuf[32];
        if (!x || (size_t)(x - arg) >= sizeof wbuf)
            return cli_usage_error(a->cmd, "--size: expected WIDTHxHEIGHT in inches, got "
                                   "'%s'", arg);
        snprintf(wbuf, sizeof wbuf, "%.*s", (int)(x - arg), arg);
        if (nc_parse_double(wbuf, "--size (width)", 0.5, 100, &fo->w, err) ||
            nc_parse_double(x + 1, "--size (height)", 0.5, 100, &fo->h, err))
            return cli_option_fail(a->cmd, err);
        return OPT_DONE;
    }
    case OPT_DPI:
        if (nc_parse_double(arg, "--dpi", 10, 2400, &fo->dpi, err))
            return cli_option_fail(a->cmd, err);
        return OPT_DONE;
    case OPT_CURVES:
        if (nc_fits_parse("--curves", arg, fo->curves, err))
            return cli_option_fail(a->cmd, err);
        if (fo->curves[NC_FIT_DYT_PER_CHANNEL])
            return cli_usage_error(a->cmd, "--curves: dyt_per_channel has a gamma_i, beta_i per "
                                   "channel and is not drawn as one curve (it is in the report)");
        return OPT_DONE;
    case OPT_LEGEND:
        if (!nc_fig_legend_parse(arg, &fo->legend))
            return cli_usage_error(a->cmd, "--legend: expected auto, none, outside, upper-left, "
                                   "upper-right, lower-left, lower-right, right, center-left, "
                                   "center-right, lower-center, upper-center or center, got "
                                   "'%s'", arg);
        return OPT_DONE;
    default:
        return look_option(c, arg, a);
    }
}

/* Reads the options into a and cfg: OPT_DONE when the command goes on,
 * else the exit status (after --help, or an error printed). */
static int parse_fit_options(int argc, char **argv, fit_args *a, nc_config *cfg, nc_err *err)
{
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "t:n:e:o:qh", fit_options, a->cmd)) != -1) {
        if (c == CLI_OPT_ERROR)
            return 2;
        int st = parse_override(c, optarg, &a->ov, err);
        if (st < 0)
            return cli_option_fail(a->cmd, err);
        if (st > 0)
            continue;
        if ((st = input_option(c, optarg, a, err)) == OPT_NOT_MINE &&
            (st = analysis_option(c, optarg, a, cfg, err)) == OPT_NOT_MINE)
            st = figure_option(c, optarg, a, err);
        if (st == OPT_DONE)
            continue;
        if (st >= 0)
            return st;
        if (c == OPT_HELP) {
            fputs(a->mode == MODE_PLOT       ? plot_help
                  : a->mode == MODE_JACOBIAN ? jacobian_help
                                             : fit_help,
                  stdout);
            return cli_finish_stdout(0);
        }
        return cli_usage_error(a->cmd, "unknown or incomplete option");
    }
    return OPT_DONE;
}

/* The checks that need all the options: an input, figure options only for
 * plot (whose figures join the config here), --label with one file. */
static int check_fit_args(int nfiles, fit_args *a, nc_config *cfg, nc_err *err)
{
    const fig_opts *fo = &a->fo;
    if (nfiles < 1)
        return cli_usage_error(a->cmd, "expected at least one input FILE");
    if (a->mode == MODE_PLOT) {
        if (fo->nkinds == 0)
            a->fo.kinds[a->fo.nkinds++] = NC_FIG_SCATTER; /* the default figure */
        double wpx, hpx;
        if (fo->w > 0 && !nc_fig_pixels_ok(fo->w, fo->h, fo->dpi, &wpx, &hpx))
            return cli_usage_error(a->cmd, "--size %gx%g at --dpi %g makes %.0f x %.0f pixels "
                                   "(expected %d to %d a side)", fo->w, fo->h,
                                   fo->dpi > 0 ? fo->dpi : NC_FIG_DEFAULT_DPI, wpx, hpx,
                                   NC_FIG_MIN_SIDE_PX, NC_FIG_MAX_SIDE_PX);
        if (!fo->jacobian_off)
            cfg->jacobian.enabled = false;
        if (add_figures(cfg, fo, err) != 0)
            return cli_fail(err);
    } else if (fo->nkinds || fo->nlayers || fo->formats || fo->w > 0 || fo->dpi > 0 ||
               fo->look) {
        return cli_usage_error(a->cmd, "figure options (--figure, --layer, --format, --size, "
                               "--dpi, --xlim, --ylim, --title, --labels) belong to 'normcmp "
                               "plot'");
    }
    if (a->label && nfiles > 1)
        return cli_usage_error(a->cmd, "--label names one layer, but %d files are given",
                               nfiles);
    return OPT_DONE;
}

/* One config layer per FILE, each with the tensors, label and companions
 * of the flags; the config is named after the first file. */
static int add_layers(char **files, int nfiles, const fit_args *a, nc_config *cfg, nc_err *err)
{
    if (!(cfg->name = stem(files[0])))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    cfg->norm = a->norm;
    cfg->has_norm = a->has_norm;
    cfg->has_eps = a->has_eps;
    cfg->eps = a->eps;
    for (int k = 0; k < nfiles; k++) {
        nc_config_layer *l;
        int rc = nc_config_add_layer(cfg, &l, err);
        if (rc)
            return rc;
        l->file = dupstr(files[k]);
        l->label = dupstr(a->label);
        l->outlier_steps = a->outlier;
        bool oom = !l->file || (a->label && !l->label);
        if (a->ntensors && (l->tensors = calloc(a->ntensors, sizeof *l->tensors))) {
            for (size_t j = 0; j < a->ntensors; j++)
                oom = oom || !(l->tensors[l->ntensors++] = strdup(a->tensors[j]));
        } else if (a->ntensors) {
            oom = true;
        }
        for (int cc = 0; cc < NC_COMP_COUNT; cc++)
            if (a->comp[cc])
                oom = oom || !(l->comp[cc] = strdup(a->comp[cc]));
        if (oom)
            return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    return 0;
}

/* fit, jacobian and plot: options, checks, one config layer per file, run. */
static int fit_main(int argc, char **argv, int mode)
{
    fit_args a = {.mode = mode, .norm = NC_LAYERNORM};
    a.cmd = mode == MODE_JACOBIAN ? "jacobian" : mode == MODE_PLOT ? "plot" : "fit";
    nc_err err = {0};
    nc_config *cfg = NULL;
    if (nc_config_alloc("command line", &cfg, &err) != 0)
        return cli_fail(&err);
    int status = parse_fit_options(argc, argv, &a, cfg, &err);
    if (status == OPT_DONE)
        status = check_fit_args(argc - optind, &a, cfg, &err);
    char **files = NULL;
    int nfiles = 0;
    if (status == OPT_DONE) {
        if (cli_input_files(argv + optind, argc - optind, a.ov.quiet, &files, &nfiles, &err) ||
            add_layers(files, nfiles, &a, cfg, &err) != 0)
            status = cli_fail(&err);
        else
            status = launch(cfg, &a.ov, argc, argv, NULL);
    }
    for (int k = 0; k < nfiles; k++)
        free(files[k]);
    free(files);
    nc_config_free(cfg);
    return status;
}

static const char sweep_help[] =
    "usage: normcmp sweep CONFIG.json [options]\n"
    "Runs a config that has a \"sweep\" section (docs/config.md): for every\n"
    "alpha (DyT) and C (DyISRU) of the grids, the error against the norm's output with\n"
    "the amplitude refitted and fixed, and of the derivative against the exact\n"
    "Jacobian diagonal. Writes report.json, a CSV and a figure per layer and\n"
    "parameter, and prints the optima beside the fitted and theory values.\n"
    "Options as 'normcmp run':\n"
    "\n"
    "  -o, --out DIR              output folder (default: the config's, or out/<name>)\n"
    "      --threads N            worker threads, 0..16\n"
    "      --size WxH             the sweep figures' size in inches (default 8.4x4.1;\n"
    "                             the config's sweep \"width\", \"height\")\n"
    "      --dpi N                their resolution, 10..2400 (default 150; \"dpi\")\n"
    "      --format LIST          png, pdf, svg (comma-separated; \"format\")\n"
    "      --legend WHERE         auto, none or outside (\"legend\"; default below the panels)\n"
    "      --title TEXT           their title; none: no title (\"title\")\n"
    OUTPUT_HELP;

static int run_main(int argc, char **argv, bool sweep_mode);

int cli_run(int argc, char **argv)
{
    return run_main(argc, argv, false);
}

int cli_sweep(int argc, char **argv)
{
    return run_main(argc, argv, true);
}

static const struct option run_options[] = {
    {"size", required_argument, NULL, OPT_SIZE},
    {"dpi", required_argument, NULL, OPT_DPI},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"legend", required_argument, NULL, OPT_LEGEND},
    {"title", required_argument, NULL, OPT_TITLE},
    {"out", required_argument, NULL, OPT_OUT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"sample-tokens", required_argument, NULL, OPT_SAMPLE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"bootstrap", required_argument, NULL, OPT_BOOTSTRAP},
    {"token-block", required_argument, NULL, OPT_TOKEN_BLOCK},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"strict", no_argument, NULL, OPT_STRICT},
    {"role", required_argument, NULL, OPT_ROLE},
    {"alpha0", required_argument, NULL, OPT_ALPHA0},
    {"no-dropin", no_argument, NULL, OPT_NO_DROPIN},
    {"swap", required_argument, NULL, OPT_SWAP},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* A folder or a data file given where a config belongs: its kind (data
 * files by their first bytes: the npy magic, or safetensors' header length
 * and '{'), or NULL. */
static const char *data_file_kind(const char *path)
{
    unsigned char b[9];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block */
    struct stat st;
    if (fd < 0)
        return NULL;
    bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    ssize_t got = !dir && S_ISREG(st.st_mode) ? read(fd, b, sizeof b) : 0;
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    if (dir)
        return "a folder";
    if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
        return "an .npy file";
    if (n == 9 && b[8] == '{' && b[7] == 0 && b[6] == 0 && b[5] == 0)
        return "a .safetensors file";
    return NULL;
}

/* The sweep figures' options of `sweep` (--size, --dpi, --format,
 * --legend, --title) into look: OPT_DONE, OPT_NOT_MINE, or an exit status
 * (an error printed). */
static int sweep_look_option(int c, const char *arg, const char *cmd, nc_fig_spec *look,
                             nc_err *err)
{
    switch (c) {
    case OPT_SIZE: {
        const char *x = strchr(arg, 'x');
        char wbuf[32];
        if (!x || (size_t)(x - arg) >= sizeof wbuf)
            return cli_usage_error(cmd, "--size: expected WIDTHxHEIGHT in inches, got '%s'",
                                   arg);
        snprintf(wbuf, sizeof wbuf, "%.*s", (int)(x - arg), arg);
        if (nc_parse_double(wbuf, "--size (width)", 0.5, 100, &look->width_in, err) ||
            nc_parse_double(x + 1, "--size (height)", 0.5, 100, &look->height_in, err))
            return cli_option_fail(cmd, err);
        return OPT_DONE;
    }
    case OPT_DPI:
        return nc_parse_double(arg, "--dpi", 10, 2400, &look->dpi, err) ? cli_option_fail(cmd, err)
                                                                         : OPT_DONE;
    case OPT_FORMAT:
        return nc_fig_formats_parse(arg, &look->formats)
                   ? OPT_DONE
                   : cli_usage_error(cmd, "--format: expected a list of png, pdf, svg, got '%s'",
                                     arg);
    case OPT_LEGEND:
        if (!nc_fig_legend_parse(arg, &look->legend) ||
            !(look->legend == NC_LEGEND_AUTO || look->legend == NC_LEGEND_NONE ||
              look->legend == NC_LEGEND_OUTSIDE))
            return cli_usage_error(cmd, "--legend: expected auto, none or outside (a sweep "
                                   "figure's two panels share one legend), got '%s'", arg);
        return OPT_DONE;
    case OPT_TITLE:
        look->no_title = strcmp(arg, "none") == 0;
        look->title = (char *)arg; /* borrowed from argv until copied */
        return OPT_DONE;
    default:
        return OPT_NOT_MINE;
    }
}

/* The sweep figures' flags over the config's sweep section. */
static int apply_sweep_look(nc_config *cfg, const nc_fig_spec *flags, nc_err *err)
{
    nc_fig_spec *l = &cfg->sweep.look;
    double px, py;
    if (flags->width_in > 0)
        l->width_in = flags->width_in, l->height_in = flags->height_in;
    if (flags->dpi > 0)
        l->dpi = flags->dpi;
    if (flags->formats)
        l->formats = flags->formats;
    if (flags->legend)
        l->legend = flags->legend;
    if (flags->title) {
        free(l->title);
        l->title = NULL;
        l->no_title = flags->no_title;
        if (!flags->no_title && !(l->title = strdup(flags->title)))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    if (l->width_in > 0 && !nc_fig_pixels_ok(l->width_in, l->height_in, l->dpi, &px, &py))
        return nc_err_set(err, NC_EINVAL, "sweep figures of %gx%g in at %g dpi make %.0f x %.0f "
                          "pixels (expected %d to %d a side)", l->width_in, l->height_in,
                          l->dpi > 0 ? l->dpi : NC_FIG_DEFAULT_DPI, px, py, NC_FIG_MIN_SIDE_PX,
                          NC_FIG_MAX_SIDE_PX);
    return 0;
}

static int run_main(int argc, char **argv, bool sweep_mode)
{
    const char *cmd = sweep_mode ? "sweep" : "run";
    nc_err err = {0};
    nc_config *cfg = NULL;
    overrides ov = {0};
    nc_fig_spec look = {0};
    int status = 0, c;
    size_t shard_k = 0, shard_n = 0;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:qh", run_options, cmd)) != -1) {
        if (c == CLI_OPT_ERROR)
            return 2;
        if (c == OPT_SHARD) {
            if (cli_parse_shard(optarg, &shard_k, &shard_n, &err) != 0)
                return cli_option_fail(cmd, &err);
            continue;
        }
        int st = sweep_look_option(c, optarg, cmd, &look, &err);
        if (st != OPT_NOT_MINE && !sweep_mode && st == OPT_DONE)
            return cli_usage_error(cmd, "--size, --dpi, --format, --legend and --title size the "
                                   "sweep figures of 'normcmp sweep'; a run's figures take them "
                                   "in its config's \"figures\" entries");
        if (st == OPT_DONE)
            continue;
        if (st != OPT_NOT_MINE)
            return st;
        int h = parse_override(c, optarg, &ov, &err);
        if (h < 0)
            return cli_option_fail(cmd, &err);
        if (h > 0)
            continue;
        switch (c) {
        case OPT_HELP:
            fputs(sweep_mode ? sweep_help : run_help, stdout);
            return cli_finish_stdout(0);
        default:
            return cli_usage_error(cmd, "unknown or incomplete option");
        }
    }
    if (argc - optind != 1)
        return cli_usage_error(cmd, "expected one CONFIG.json");
    const char *path = argv[optind];
    const char *kind = data_file_kind(path);
    if (kind) {
        char *quoted = cli_command_line(1, (char **)&path);
        cli_usage_error(cmd, "%s is %s, not a config; to analyse it: normcmp fit %s", path,
                        kind, quoted ? quoted : path);
        free(quoted);
        return 2;
    }
    if (nc_config_load(path, &cfg, &err) != 0)
        goto fail;
    if (sweep_mode && !cfg->sweep.enabled) {
        nc_err_set(&err, NC_EINVAL, "%s: sweep: missing (expected a \"sweep\" section with an "
                   "\"alpha\" or \"C\" grid)", path);
        goto fail;
    }
    if (sweep_mode && apply_sweep_look(cfg, &look, &err) != 0)
        goto fail;
    cfg->shard_index = shard_k;
    cfg->shard_count = shard_n;
    status = launch(cfg, &ov, argc, argv, path);
    goto out;
fail:
    status = cli_fail(&err);
out:
    nc_config_free(cfg);
    return status;
}
