/*
 * roles.c - roles of norm layers from their module names, depths, and the
 * DyT paper's alpha0 (roles.h; docs/dropin.md).
 *
 * The built-in patterns are the module names of the model families the
 * dump script meets, checked against their modeling code: llama2.c's
 * Transformer (layers.N.attention_norm, layers.N.ffn_norm, norm), Hugging
 * Face LLaMA, Mistral, Qwen2 and Gemma (model.layers.N.input_layernorm,
 * post_attention_layernorm, model.norm; Gemma 2/3 add
 * pre_feedforward_layernorm and post_feedforward_layernorm, and there
 * post_attention_layernorm normalises the attention's output), GPT-2
 * (transformer.h.N.ln_1, ln_2, transformer.ln_f), BERT
 * (encoder.layer.N.attention.output.LayerNorm, encoder.layer.N.output.
 * LayerNorm, embeddings.LayerNorm: post-norm), Hugging Face ViT
 * (encoder.layer.N.layernorm_before, layernorm_after, layernorm), timm
 * (blocks.N.norm1, norm2, norm, fc_norm) and vit-pytorch, whose
 * Transformer holds [PreNorm(Attention), PreNorm(FeedForward)] per layer
 * (transformer.layers.N.0.norm, transformer.layers.N.1.norm: the
 * ViT4MNIST model, data/vit4mnist/README.md).
 *
 * The alpha0 rules are the DyT paper's (Zhu et al. 2025, section 7): 0.5
 * for non-LLM Transformers; for LLaMA models by width, the attention
 * block's DyT / the others: 4096 -> 0.8 / 0.2, 5120 -> 0.6 / 0.15, 8192 ->
 * 0.2 / 0.05. A layer is classed as a LLaMA-style LLM when it is an
 * RMSNorm or its name is a LLaMA-family name; a width the table does not
 * list takes the nearest listed width (in log d), and its rule says
 * "extrapolated".
 *
 * Left out: the grouping of layers into models (alpha_roles.c).
 */
#include "analysis/roles.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct builtin {
    const char *re;     /* POSIX ERE, anchored at the end */
    const char *role;
    const char *family;
    const char *shown;  /* the family and the name's shape, for the report */
    bool llama;         /* a LLaMA-family name */
    bool gemma_post;    /* post_attention_layernorm: a post-norm when the block also has a
                         * pre_feedforward_layernorm (Gemma 2/3), else the MLP's input norm */
} builtin;

static const builtin BUILTIN[] = {
    {"(^|\\.)layers\\.[0-9]+\\.attention_norm$", "attn_norm", "llama2.c",
     "llama2.c (layers.N.attention_norm)", true, false},
    {"(^|\\.)layers\\.[0-9]+\\.ffn_norm$", "mlp_norm", "llama2.c", "llama2.c (layers.N.ffn_norm)",
     true, false},
    {"(^|\\.)layers\\.[0-9]+\\.input_layernorm$", "attn_norm", "hf-llama",
     "Hugging Face LLaMA/Mistral/Qwen/Gemma (model.layers.N.input_layernorm)", true, false},
    {"(^|\\.)layers\\.[0-9]+\\.post_attention_layernorm$", "mlp_norm", "hf-llama",
     "Hugging Face LLaMA/Mistral/Qwen (model.layers.N.post_attention_layernorm: the MLP's input "
     "norm)", true, true},
    {"(^|\\.)layers\\.[0-9]+\\.pre_feedforward_layernorm$", "mlp_norm", "hf-gemma",
     "Hugging Face Gemma 2/3 (model.layers.N.pre_feedforward_layernorm)", true, false},
    {"(^|\\.)layers\\.[0-9]+\\.post_feedforward_layernorm$", "post_mlp_norm", "hf-gemma",
     "Hugging Face Gemma 2/3 (model.layers.N.post_feedforward_layernorm)", true, false},
    {"(^|\\.)model\\.norm$", "final_norm", "hf-llama",
     "Hugging Face LLaMA/Mistral/Qwen/Gemma (model.norm)", true, false},
    {"^norm$", "final_norm", "llama2.c/timm", "llama2.c or timm (norm)", false, false},
    {"(^|\\.)h\\.[0-9]+\\.ln_1$", "attn_norm", "gpt2", "GPT-2 (transformer.h.N.ln_1)", false,
     false},
    {"(^|\\.)h\\.[0-9]+\\.ln_2$", "mlp_norm", "gpt2", "GPT-2 (transformer.h.N.ln_2)", false,
     false},
    {"(^|\\.)ln_f$", "final_norm", "gpt2", "GPT-2 (transformer.ln_f)", false, false},
    {"(^|\\.)layer\\.[0-9]+\\.attention\\.output\\.LayerNorm$", "post_attn_norm", "bert",
     "BERT (encoder.layer.N.attention.output.LayerNorm, post-norm)", false, false},
    {"(^|\\.)layer\\.[0-9]+\\.output\\.LayerNorm$", "post_mlp_norm", "bert",
     "BERT (encoder.layer.N.output.LayerNorm, post-norm)", false, false},
    {"(^|\\.)embeddings\\.LayerNorm$", "embed_norm", "bert", "BERT (embeddings.LayerNorm)", false,
     false},
    {"(^|\\.)layer\\.[0-9]+\\.layernorm_before$", "attn_norm", "hf-vit",
     "Hugging Face ViT (encoder.layer.N.layernorm_before)", false, false},
    {"(^|\\.)layer\\.[0-9]+\\.layernorm_after$", "mlp_norm", "hf-vit",
     "Hugging Face ViT (encoder.layer.N.layernorm_after)", false, false},
    {"^(vit\\.)?layernorm$", "final_norm", "hf-vit", "Hugging Face ViT (vit.layernorm)", false,
     false},
    {"(^|\\.)blocks\\.[0-9]+\\.norm1$", "attn_norm", "timm", "timm (blocks.N.norm1)", false,
     false},
    {"(^|\\.)blocks\\.[0-9]+\\.norm2$", "mlp_norm", "timm", "timm (blocks.N.norm2)", false,
     false},
    {"^fc_norm$", "final_norm", "timm", "timm (fc_norm)", false, false},
    {"(^|\\.)layers\\.[0-9]+\\.0\\.norm$", "attn_norm", "vit-pytorch",
     "vit-pytorch, ViT4MNIST (transformer.layers.N.0.norm)", false, false},
    {"(^|\\.)layers\\.[0-9]+\\.1\\.norm$", "mlp_norm", "vit-pytorch",
     "vit-pytorch, ViT4MNIST (transformer.layers.N.1.norm)", false, false},
};
#define NBUILTIN (sizeof BUILTIN / sizeof BUILTIN[0])

struct nc_roles {
    size_t n;         /* user patterns */
    regex_t *user;    /* [n] */
    char **role;      /* [n] owned */
    char **shown;     /* [n] owned: "<origin> '<regex>'" */
    regex_t builtin[NBUILTIN];
    size_t nbuilt;    /* compiled built-in patterns (all, once compiled) */
};

bool nc_role_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= NC_ROLE_NAME_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == '-'))
            return false;
    return true;
}

/* Bounds on a user's pattern: glibc's regcomp takes seconds and gigabytes
 * on nested bounded repetitions ("((a{1,100}){1,100}){1,100}": 2.3 s), and
 * back-references make regexec exponential; neither is needed to name a
 * module. */
#define ROLE_REGEX_MAX_BYTES 1024
#define ROLE_REGEX_MAX_REPEAT 10000.0 /* the product of all {m,n} bounds */

/* Whether regex keeps within the bounds above; else why in why[cap]. */
static bool regex_bounded(const char *regex, char *why, size_t cap)
{
    if (strlen(regex) > ROLE_REGEX_MAX_BYTES) {
        snprintf(why, cap, "longer than %d bytes (normcmp's limit)", ROLE_REGEX_MAX_BYTES);
        return false;
    }
    double product = 1;
    for (const char *p = regex; *p; p++) {
        if (*p == '\\' && p[1] >= '1' && p[1] <= '9') {
            snprintf(why, cap, "a back-reference (\\%c) is not accepted", p[1]);
            return false;
        }
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (*p != '{')
            continue;
        double lo = strtod(p + 1, NULL), hi = lo; /* {m}, {m,n}, {m,} */
        const char *comma = strpbrk(p + 1, ",}");
        if (comma && *comma == ',')
            hi = comma[1] == '}' ? lo + 1 : strtod(comma + 1, NULL);
        product *= fmax(1.0, fmax(lo, hi));
    }
    if (product > ROLE_REGEX_MAX_REPEAT) {
        snprintf(why, cap, "its {m,n} bounds multiply to more than %.0f (normcmp's limit)",
                 ROLE_REGEX_MAX_REPEAT);
        return false;
    }
    return true;
}

bool nc_role_regex_ok(const char *regex, char *why, size_t cap)
{
    if (!regex_bounded(regex, why, cap))
        return false;
    regex_t re;
    int e = regcomp(&re, regex, REG_EXTENDED | REG_NOSUB);
    if (e) {
        char msg[160];
        regerror(e, &re, msg, sizeof msg);
        snprintf(why, cap, "regcomp: %s", msg);
        return false;
    }
    regfree(&re);
    return true;
}

void nc_roles_free(nc_roles *r)
{
    if (!r)
        return;
    for (size_t k = 0; k < r->nbuilt; k++)
        regfree(&r->builtin[k]);
    for (size_t k = 0; k < r->n; k++) {
        regfree(&r->user[k]);
        free(r->role[k]);
        free(r->shown[k]);
    }
    free(r->user);
    free(r->role);
    free(r->shown);
    free(r);
}

/* Compiles user pattern k of regex[] into r (r->n counts the compiled). */
static int compile_user(nc_roles *r, const char *regex, const char *role, const char *origin,
                        nc_err *err)
{
    if (!nc_role_name_ok(role))
        return nc_err_set(err, NC_EINVAL, "%s '%s=%s': role name '%s': expected 1 to %d "
                          "letters, digits, '_', '.' or '-'", origin, regex, role, role,
                          NC_ROLE_NAME_MAX - 1);
    size_t k = r->n;
    char why[160];
    if (!regex_bounded(regex, why, sizeof why))
        return nc_err_set(err, NC_EINVAL, "%s '%s=%s': not accepted as a role pattern: %s",
                          origin, regex, role, why);
    int e = regcomp(&r->user[k], regex, REG_EXTENDED | REG_NOSUB);
    if (e) {
        regerror(e, &r->user[k], why, sizeof why);
        return nc_err_set(err, NC_EINVAL, "%s '%s=%s': not a POSIX extended regular "
                          "expression: %s", origin, regex, role, why);
    }
    size_t len = strlen(origin) + strlen(regex) + 4;
    r->role[k] = strdup(role);
    r->shown[k] = malloc(len);
    r->n++; /* compiled: freed with the rest from here on */
    if (!r->role[k] || !r->shown[k])
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    snprintf(r->shown[k], len, "%s '%s'", origin, regex);
    return 0;
}

int nc_roles_compile(const char *const *regex, const char *const *role,
                     const char *const *origin, size_t n, nc_roles **out, nc_err *err)
{
    *out = NULL;
    nc_roles *r = calloc(1, sizeof *r);
    int rc = 0;
    if (!r || !(r->user = calloc(n ? n : 1, sizeof *r->user)) ||
        !(r->role = calloc(n ? n : 1, sizeof *r->role)) ||
        !(r->shown = calloc(n ? n : 1, sizeof *r->shown))) {
        rc = nc_err_set(err, NC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < n && !rc; k++)
        rc = compile_user(r, regex[k], role[k], origin[k], err);
    for (size_t k = 0; k < NBUILTIN && !rc; k++) {
        if (regcomp(&r->builtin[k], BUILTIN[k].re, REG_EXTENDED | REG_NOSUB) != 0)
            rc = nc_err_set(err, NC_EINTERNAL, "built-in role pattern '%s' does not compile",
                            BUILTIN[k].re);
        else
            r->nbuilt++;
    }
out:
    if (rc) {
        nc_roles_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

bool nc_role_depth(const char *name, size_t *depth)
{
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, ".");
        bool digits = n > 0 && n <= 15; /* below 10^15: exact as a JSON number */
        for (size_t k = 0; k < n && digits; k++)
            digits = p[k] >= '0' && p[k] <= '9';
        if (digits) {
            size_t v = 0;
            for (size_t k = 0; k < n; k++)
                v = 10 * v + (size_t)(p[k] - '0');
            *depth = v;
            return true;
        }
        p += n + (p[n] == '.');
    }
    return false;
}

/* Whether names[] holds the block of `name` (which ends in
 * "post_attention_layernorm") with a "pre_feedforward_layernorm". */
static bool gemma_block(const char *name, const char *const *names, size_t n)
{
    static const char post[] = "post_attention_layernorm", pre[] = "pre_feedforward_layernorm";
    size_t len = strlen(name), stem = len - (sizeof post - 1);
    for (size_t k = 0; k < n; k++)
        if (strlen(names[k]) == stem + sizeof pre - 1 && strncmp(names[k], name, stem) == 0 &&
            strcmp(names[k] + stem, pre) == 0)
            return true;
    return false;
}

/* The role of names[k] into *ri (depth already set). */
static void assign_one(const nc_roles *r, const char *const *names, size_t n, size_t k,
                       nc_role_info *ri)
{
    const char *name = names[k];
    for (size_t u = 0; r && u < r->n; u++)
        if (regexec(&r->user[u], name, 0, NULL, 0) == 0) {
            snprintf(ri->role, sizeof ri->role, "%s", r->role[u]);
            snprintf(ri->source, sizeof ri->source, "%s", r->shown[u]);
            ri->family = "user";
            return;
        }
    for (size_t b = 0; r && b < r->nbuilt; b++) {
        const builtin *B = &BUILTIN[b];
        if (regexec(&r->builtin[b], name, 0, NULL, 0) != 0)
            continue;
        bool post = B->gemma_post && gemma_block(name, names, n);
        snprintf(ri->role, sizeof ri->role, "%s", post ? "post_attn_norm" : B->role);
        snprintf(ri->source, sizeof ri->source, "built-in: %s",
                 post ? "Hugging Face Gemma 2/3 (model.layers.N.post_attention_layernorm in a "
                        "block with a pre_feedforward_layernorm: the attention output's norm)"
                      : B->shown);
        ri->family = post ? "hf-gemma" : B->family;
        ri->llama_style = B->llama;
        return;
    }
    snprintf(ri->role, sizeof ri->role, "unknown");
    snprintf(ri->source, sizeof ri->source, "none: no pattern matched (name one with --role "
                                            "REGEX=NAME or the config's \"roles\")");
    ri->family = "none";
}

int nc_roles_assign(const nc_roles *roles, const char *const *names, size_t n,
                    nc_role_info *out, nc_err *err)
{
    nc_roles *own = NULL;
    if (!roles) {
        int rc = nc_roles_compile(NULL, NULL, NULL, 0, &own, err);
        if (rc)
            return rc;
        roles = own;
    }
    for (size_t k = 0; k < n; k++) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].has_depth = nc_role_depth(names[k], &out[k].depth);
        assign_one(roles, names, n, k, &out[k]);
    }
    nc_roles_free(own);
    return 0;
}

/* ------------------------------------------------------------- alpha0 */

static const struct {
    size_t d;
    double attn, other;
} PAPER[NC_ALPHA0_WIDTHS] = {{4096, 0.8, 0.2}, {5120, 0.6, 0.15}, {8192, 0.2, 0.05}};

#define ALPHA0_NON_LLM 0.5

/* The paper's LLaMA row for width d: the listed width nearest in log d
 * (the smaller one on a tie). */
static int paper_row(size_t d)
{
    int best = 0;
    double bd = INFINITY;
    for (int k = 0; k < NC_ALPHA0_WIDTHS; k++) {
        double dist = fabs(log((double)(d ? d : 1) / (double)PAPER[k].d));
        if (dist < bd) {
            bd = dist;
            best = k;
        }
    }
    return best;
}

/* The shortest %.15g .. %.17g text of v that reads back as v. */
static const char *exact(double v, char buf[32])
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

nc_alpha0 nc_alpha0_for(const nc_role_info *ri, nc_norm_kind norm, size_t d,
                        const nc_alpha0_opt *opt)
{
    nc_alpha0 a = {.origin = opt && opt->n ? opt->origin : "DyT paper"};
    const bool attn = strcmp(ri->role, "attn_norm") == 0;
    char v1[32], v2[32];
    if (opt && opt->n == 1) {
        a.value = opt->attn;
        snprintf(a.rule, sizeof a.rule, "%s %s: every layer (the DyT paper's rules not used)",
                 opt->origin, exact(opt->attn, v1));
        return a;
    }
    if (opt && opt->n == 2) {
        a.value = attn ? opt->attn : opt->other;
        snprintf(a.rule, sizeof a.rule, "%s %s,%s: %s", opt->origin, exact(opt->attn, v1),
                 exact(opt->other, v2),
                 attn ? "the attention-input norm's value" : "the value of the other norms");
        return a;
    }
    a.llm = norm == NC_RMSNORM || ri->llama_style;
    if (!a.llm) {
        a.value = ALPHA0_NON_LLM;
        snprintf(a.rule, sizeof a.rule, "DyT paper: 0.5 for non-LLM Transformers (a LayerNorm "
                 "layer without a LLaMA-style name)%s", strcmp(ri->family, "gpt2") == 0
                 ? "; GPT-2 is an LLM, but the paper gives alpha0 for LLaMA models only" : "");
        return a;
    }
    int k = paper_row(d);
    a.value = attn ? PAPER[k].attn : PAPER[k].other;
    a.extrapolated = d != PAPER[k].d;
    char width[160];
    if (a.extrapolated)
        snprintf(width, sizeof width, "d = %zu is not in its table (4096, 5120, 8192): the "
                 "nearest listed width, %zu, used (extrapolated)", d, PAPER[k].d);
    else
        snprintf(width, sizeof width, "d = %zu", d);
    snprintf(a.rule, sizeof a.rule, "DyT paper, LLaMA-style LLM (%s), %s: %g for %s",
             norm == NC_RMSNORM ? "RMSNorm" : "a LLaMA-family name", width, a.value,
             attn ? "the attention-input norm"
             : strcmp(ri->role, "unknown") == 0
                 ? "the other norms (role unknown: taken as not the attention-input norm)"
                 : "the other norms");
    return a;
}
