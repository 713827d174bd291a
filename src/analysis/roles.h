/*
 * roles.h - a norm layer's role in its block, read from its module name,
 * its depth (the block index in the name), and the DyT paper's
 * recommended initial alpha (alpha0) for it (docs/dropin.md, "Roles" and
 * "alpha0").
 *
 * Roles: attn_norm (the attention block's input norm), mlp_norm (the MLP
 * block's input norm), final_norm (the norm after the last block), and in
 * post-norm blocks post_attn_norm, post_mlp_norm (the norms after the
 * attention and MLP sublayers) and embed_norm (the embeddings' norm);
 * "unknown" when nothing matches. The user's patterns (`--role REGEX=NAME`,
 * a config's "roles") come first, in order, then the built-in patterns of
 * llama2.c, Hugging Face LLaMA/Mistral/Qwen/Gemma, GPT-2, BERT and ViT,
 * timm and vit-pytorch (the ViT4MNIST model) module names; the first match
 * wins. Patterns are POSIX extended regular expressions searched in the
 * name (the built-in ones are anchored).
 *
 * Left out: which layers share a model (alpha_roles.h) and anything that
 * needs the data.
 */
#ifndef NC_ROLES_H
#define NC_ROLES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/norm.h"
#include "util/err.h"

#define NC_ROLE_NAME_MAX 48 /* a role name's bytes, with its NUL */

/* The user's patterns, compiled (opaque). */
typedef struct nc_roles nc_roles;

/* Compiles n user patterns: regex[k] (a POSIX extended regular
 * expression) names role[k] (nc_role_name_ok); origin[k] says where it
 * came from in messages and in the report ("--role", "config roles").
 * Every string is copied. n = 0 gives the built-in patterns alone.
 * Errors: NC_EINVAL naming the origin, the pattern and what regcomp found
 * (or the bad role name); NC_ENOMEM. *out owned by the caller
 * (nc_roles_free). */
int nc_roles_compile(const char *const *regex, const char *const *role,
                     const char *const *origin, size_t n, nc_roles **out, nc_err *err);

void nc_roles_free(nc_roles *r);

/* Whether regex is a POSIX extended regular expression (regcomp with
 * REG_EXTENDED) within normcmp's bounds on role patterns (at most 1024
 * bytes, no back-reference, {m,n} bounds multiplying to at most 10000:
 * beyond them regcomp or regexec can take seconds to hours); when not,
 * why in why[cap] (regerror's message, or which bound). */
bool nc_role_regex_ok(const char *regex, char *why, size_t cap);

/* Whether name is a usable role name: 1 to NC_ROLE_NAME_MAX - 1 bytes of
 * letters, digits, '_', '.' and '-'. */
bool nc_role_name_ok(const char *name);

/* One layer's role, how it was found, and its depth. */
typedef struct nc_role_info {
    char role[NC_ROLE_NAME_MAX]; /* "attn_norm", ..., or "unknown" */
    char source[200];            /* e.g. "built-in: llama2.c (layers.N.attention_norm)",
                                  * "--role 'ln0[02]$'", "none: no pattern matched" */
    const char *family;          /* "llama2.c", "hf-llama", "hf-gemma", "gpt2", "bert",
                                  * "hf-vit", "timm", "vit-pytorch", "user" or "none"
                                  * (static) */
    bool llama_style;            /* a LLaMA-family name (llama2.c, Hugging Face LLaMA) */
    bool has_depth;
    size_t depth;                /* the first dot-separated component of the name that
                                  * is all digits: blocks.3.norm1 -> 3 */
} nc_role_info;

/* The roles of the n layers named names[k] (the whole plan: Gemma's
 * post_attention_layernorm is a post-norm only where its block also has a
 * pre_feedforward_layernorm). roles may be NULL (built-in patterns only).
 * Errors: NC_ENOMEM. */
int nc_roles_assign(const nc_roles *roles, const char *const *names, size_t n,
                    nc_role_info *out, nc_err *err);

/* The depth of a name (nc_role_info.depth); false when it has none. */
bool nc_role_depth(const char *name, size_t *depth);

/* ------------------------------------------------------------- alpha0 */

/* An override of the paper's alpha0 (`--alpha0`, the config's "alpha0"). */
typedef struct nc_alpha0_opt {
    int n;              /* 0: the paper's rules; 1: attn for every layer; 2: attn for
                         * attention-input norms (attn_norm), other for the rest */
    double attn, other;
    const char *origin; /* "--alpha0" or "config alpha0" (borrowed) */
} nc_alpha0_opt;

/* The widths of the DyT paper's LLaMA table: 4096 -> 0.8 / 0.2, 5120 ->
 * 0.6 / 0.15, 8192 -> 0.2 / 0.05 (attention-input norm / the others). */
#define NC_ALPHA0_WIDTHS 3

/* A layer's alpha0 and the rule that gave it, in words. */
typedef struct nc_alpha0 {
    double value;
    bool llm;           /* classed as a LLaMA-style LLM (RMSNorm, or a LLaMA-family name) */
    bool extrapolated;  /* an LLM width the paper does not list: the nearest listed one */
    const char *origin; /* "DyT paper", or the override's origin (static or borrowed) */
    char rule[300];
} nc_alpha0;

/* The alpha0 of a layer with role ri, norm kind norm and width d: the
 * override when opt->n > 0, else the DyT paper's (docs/dropin.md). */
nc_alpha0 nc_alpha0_for(const nc_role_info *ri, nc_norm_kind norm, size_t d,
                        const nc_alpha0_opt *opt);

#endif
