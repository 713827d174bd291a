/*
 * hooks.c - test-only hooks read from the environment (cli.h). Library
 * code never reads the environment; the CLI passes these settings on.
 */
#include "cli/cli.h"

#include <stdlib.h>

#include "util/outfile.h"

void cli_test_hooks(void)
{
    const char *s = getenv("NORMCMP_TEST_STEP_MS");
    if (s && *s) {
        char *end;
        unsigned long ms = strtoul(s, &end, 10);
        if (*end == '\0' && ms <= 10000)
            nc_outfile_test_delay((unsigned)ms);
    }
}
