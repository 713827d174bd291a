/*
 * options.c - getopt_long with normcmp's own messages (cli.h).
 *
 * getopt's messages ("unrecognized option '--otu'") are switched off
 * (opterr = 0); a bad option gets one line instead, in the style of every
 * other usage error, with what the user probably meant:
 *
 *   normcmp: fit: unknown option '--otu' (did you mean --out?) (see ...)
 *   normcmp: fit: option '--out' needs a value (see ...)
 *   normcmp: fit: '-out': long options take two dashes (did you mean --out?) ...
 *
 * The last one matters because getopt reads "-out" as "-o ut", and the
 * command would then fail later with a confusing message about the input.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/nearest.h"

/* The long option nearest to name[n], or NULL. */
static const char *nearest_long(const char *name, size_t n, const struct option *longs)
{
    const char *names[128];
    size_t count = 0;
    for (const struct option *o = longs; o->name && count < 128; o++)
        names[count++] = o->name;
    return nc_nearest(name, n, names, count);
}

/* "-out" or "-out=x" where "out" is a long option: the user meant "--out". */
static int single_dash_long(const char *arg, const struct option *longs, const char *cmd)
{
    size_t n = strcspn(arg + 1, "=");
    if (arg[0] != '-' || arg[1] == '-' || n < 2)
        return 0;
    for (const struct option *o = longs; o->name; o++)
        if (strlen(o->name) == n && strncmp(arg + 1, o->name, n) == 0)
            return cli_usage_error(cmd, "'%s': long options take two dashes (did you mean --%s?)",
                                   arg, o->name);
    return 0;
}

/* Before the first option is read: any "-word" that is a long option's
 * name. Skips the values of options that take one, and stops at "--". */
static int check_single_dashes(int argc, char **argv, const char *shorts,
                               const struct option *longs, const char *cmd)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return 0;
        if (a[0] != '-' || a[1] == '\0')
            continue;
        if (a[1] == '-') {
            size_t n = strcspn(a + 2, "=");
            for (const struct option *o = longs; o->name; o++)
                if (strlen(o->name) == n && strncmp(a + 2, o->name, n) == 0 &&
                    o->has_arg == required_argument && a[2 + n] == '\0')
                    i++; /* its value is the next word */
            continue;
        }
        if (single_dash_long(a, longs, cmd))
            return 2;
        const char *s = strchr(shorts, a[1]);
        if (a[2] == '\0' && s && s[1] == ':')
            i++;
    }
    return 0;
}

/* The one line for getopt's '?' (unknown, ambiguous, or a value given to
 * an option that takes none) about the word arg. */
static void bad_long(const char *arg, const struct option *longs, const char *cmd)
{
    const char *name = arg + 2;
    size_t n = strcspn(name, "=");
    const struct option *exact = NULL;
    char list[256] = "";
    size_t used = 0, matches = 0;
    for (const struct option *o = longs; o->name; o++) {
        if (strncmp(o->name, name, n) != 0)
            continue;
        if (strlen(o->name) == n)
            exact = o;
        matches++;
        int w = snprintf(list + used, sizeof list - used, "%s--%s", used ? ", " : "", o->name);
        if (w > 0 && (size_t)w < sizeof list - used)
            used += (size_t)w;
    }
    if (exact && name[n] == '=') {
        cli_usage_error(cmd, "option '--%s' takes no value", exact->name);
    } else if (!exact && matches > 1) {
        cli_usage_error(cmd, "option '--%.*s' is ambiguous (could be %s)", (int)n, name, list);
    } else {
        const char *near = nearest_long(name, n, longs);
        if (near)
            cli_usage_error(cmd, "unknown option '--%.*s' (did you mean --%s?)", (int)n, name,
                            near);
        else
            cli_usage_error(cmd, "unknown option '--%.*s'", (int)n, name);
    }
}

/* The long name of the option whose val is c, or NULL. */
static const char *long_name_of(int c, const struct option *longs)
{
    for (const struct option *o = longs; o->name; o++)
        if (o->val == c && !o->flag)
            return o->name;
    return NULL;
}

int cli_getopt(int argc, char **argv, const char *shorts, const struct option *longs,
               const char *cmd)
{
    char sh[64];
    snprintf(sh, sizeof sh, ":%s", shorts); /* ':' first: a missing value is ':' */
    opterr = 0;
    if (optind <= 1 && check_single_dashes(argc, argv, shorts, longs, cmd))
        return CLI_OPT_ERROR;
    int before = optind;
    int c = getopt_long(argc, argv, sh, longs, NULL);
    if (c != '?' && c != ':')
        return c;
    /* the word getopt stopped at: it moved past it, unless inside "-abc" */
    const char *word = optind > before && optind - 1 < argc ? argv[optind - 1] : NULL;
    bool is_long = word && word[0] == '-' && word[1] == '-';
    if (c == ':') {
        const char *ln = long_name_of(optopt, longs);
        if (is_long || (ln && optopt > 255))
            cli_usage_error(cmd, "option '--%s' needs a value", ln ? ln : word + 2);
        else if (ln)
            cli_usage_error(cmd, "option '-%c' (--%s) needs a value", optopt, ln);
        else
            cli_usage_error(cmd, "option '-%c' needs a value", optopt);
    } else if (is_long) {
        bad_long(word, longs, cmd);
    } else if (optopt > 0 && optopt < 256) {
        cli_usage_error(cmd, "unknown option '-%c'", optopt);
    } else {
        cli_usage_error(cmd, "unknown option '%s'", word ? word : "?");
    }
    return CLI_OPT_ERROR;
}
