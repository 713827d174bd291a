/*
 * nearest.c - the nearest known name (nearest.h).
 */
#include "util/nearest.h"

#include <string.h>

/* Optimal string alignment distance (edits: insert, delete, substitute,
 * swap two neighbours), capped at 9 for long strings. */
static int edit_distance(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b);
    if (na > 40 || nb > 40)
        return 9;
    int d[41][41];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[na][nb];
}

const char *nc_nearest(const char *given, size_t n, const char *const *names, size_t count)
{
    const char *best = NULL;
    int bd = 99;
    for (size_t k = 0; k < count; k++) {
        int dk = edit_distance(given, n, names[k]);
        if (dk < bd) {
            bd = dk;
            best = names[k];
        }
    }
    /* close enough to be a typo: at most 2 edits, and fewer than the
     * given text has characters */
    return best && bd <= 2 && (size_t)bd < n ? best : NULL;
}

