/*
 * groups.c - model groups (groups.h).
 */
#include "analysis/groups.h"

#include <string.h>

static int same_key(const nc_group_key *a, const nc_group_key *b)
{
    if (a->group || b->group)
        return a->group && b->group && strcmp(a->group, b->group) == 0;
    return a->d == b->d && a->norm == b->norm &&
           strcmp(a->source ? a->source : "", b->source ? b->source : "") == 0;
}

size_t nc_model_groups(const nc_group_key *key, size_t n, size_t *group_of)
{
    size_t ng = 0;
    for (size_t k = 0; k < n; k++) {
        size_t q = 0;
        while (q < k && !same_key(&key[q], &key[k])) /* the first earlier layer like it */
            q++;
        group_of[k] = q < k ? group_of[q] : ng++;
    }
    return ng;
}
