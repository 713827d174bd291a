/*
 * test_roles.c - analysis/roles: the role and depth of real module names of
 * each model family the built-in patterns cover (llama2.c's Transformer,
 * Hugging Face LLaMA/Mistral/Qwen2/Gemma 2, GPT-2, BERT, ViT, timm's
 * VisionTransformer, vit-pytorch as in the ViT4MNIST model; the names as
 * their modeling code builds them), the Gemma rule that needs the other
 * names of the model, the user's patterns coming first, their validation
 * messages, and the DyT paper's alpha0 rules (docs/dropin.md).
 */
#include "analysis/roles.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct want {
    const char *name, *role, *family;
    long depth; /* -1: none */
    bool llama;
} want;

/* Names of one model each, assigned together. */
static void check_model(const want *w, size_t n, const nc_roles *roles)
{
    const char *names[32];
    nc_role_info info[32];
    nc_err err = {0};
    for (size_t k = 0; k < n; k++)
        names[k] = w[k].name;
    CHECK_INT(0, nc_roles_assign(roles, names, n, info, &err));
    for (size_t k = 0; k < n; k++) {
        CHECK_STR(w[k].role, info[k].role);
        CHECK_STR(w[k].family, info[k].family);
        CHECK_INT(w[k].depth >= 0, info[k].has_depth);
        if (w[k].depth >= 0)
            CHECK_INT(w[k].depth, info[k].depth);
        CHECK_INT(w[k].llama, info[k].llama_style);
        if (strcmp(w[k].role, info[k].role) != 0)
            fprintf(stderr, "  (name %s)\n", w[k].name);
    }
}

static void test_families(void)
{
    static const want llama2c[] = {
        {"layers.0.attention_norm", "attn_norm", "llama2.c", 0, true},
        {"layers.0.ffn_norm", "mlp_norm", "llama2.c", 0, true},
        {"layers.4.attention_norm", "attn_norm", "llama2.c", 4, true},
        {"norm", "final_norm", "llama2.c/timm", -1, false},
    };
    static const want hf_llama[] = {
        {"model.layers.0.input_layernorm", "attn_norm", "hf-llama", 0, true},
        {"model.layers.0.post_attention_layernorm", "mlp_norm", "hf-llama", 0, true},
        {"model.layers.31.input_layernorm", "attn_norm", "hf-llama", 31, true},
        {"model.norm", "final_norm", "hf-llama", -1, true},
    };
    static const want gemma2[] = {
        {"model.layers.0.input_layernorm", "attn_norm", "hf-llama", 0, true},
        {"model.layers.0.post_attention_layernorm", "post_attn_norm", "hf-gemma", 0, true},
        {"model.layers.0.pre_feedforward_layernorm", "mlp_norm", "hf-gemma", 0, true},
        {"model.layers.0.post_feedforward_layernorm", "post_mlp_norm", "hf-gemma", 0, true},
        {"model.norm", "final_norm", "hf-llama", -1, true},
    };
    static const want gpt2[] = {
        {"transformer.h.0.ln_1", "attn_norm", "gpt2", 0, false},
        {"transformer.h.0.ln_2", "mlp_norm", "gpt2", 0, false},
        {"transformer.h.11.ln_2", "mlp_norm", "gpt2", 11, false},
        {"transformer.ln_f", "final_norm", "gpt2", -1, false},
    };
    static const want bert[] = {
        {"bert.embeddings.LayerNorm", "embed_norm", "bert", -1, false},
        {"bert.encoder.layer.0.attention.output.LayerNorm", "post_attn_norm", "bert", 0, false},
        {"bert.encoder.layer.0.output.LayerNorm", "post_mlp_norm", "bert", 0, false},
        {"encoder.layer.11.output.LayerNorm", "post_mlp_norm", "bert", 11, false},
    };
    static const want hf_vit[] = {
        {"vit.encoder.layer.0.layernorm_before", "attn_norm", "hf-vit", 0, false},
        {"vit.encoder.layer.0.layernorm_after", "mlp_norm", "hf-vit", 0, false},
        {"vit.layernorm", "final_norm", "hf-vit", -1, false},
    };
    static const want timm[] = {
        {"blocks.0.norm1", "attn_norm", "timm", 0, false},
        {"blocks.0.norm2", "mlp_norm", "timm", 0, false},
        {"blocks.11.norm1", "attn_norm", "timm", 11, false},
        {"fc_norm", "final_norm", "timm", -1, false},
    };
    static const want vit4mnist[] = {
        {"transformer.layers.0.0.norm", "attn_norm", "vit-pytorch", 0, false},
        {"transformer.layers.2.1.norm", "mlp_norm", "vit-pytorch", 2, false},
        {"transformer.layers.5.1.norm", "mlp_norm", "vit-pytorch", 5, false},
        /* the .npy prefixes of data/vit4mnist carry no role and no block */
        {"ln05", "unknown", "none", -1, false},
        {"my.custom.norm_a", "unknown", "none", -1, false},
    };
    check_model(llama2c, 4, NULL);
    check_model(hf_llama, 4, NULL);
    check_model(gemma2, 5, NULL);
    check_model(gpt2, 4, NULL);
    check_model(bert, 4, NULL);
    check_model(hf_vit, 3, NULL);
    check_model(timm, 4, NULL);
    check_model(vit4mnist, 5, NULL);
}

static void test_depth(void)
{
    size_t d = 99;
    CHECK(!nc_role_depth("ln05", &d));
    CHECK(!nc_role_depth("norm", &d));
    CHECK(!nc_role_depth("a.1b.c", &d));
    CHECK(nc_role_depth("a.b.007.c", &d));
    CHECK_INT(7, d);
    CHECK(nc_role_depth("12", &d));
    CHECK_INT(12, d);
    CHECK(nc_role_depth("x.3.1.norm", &d)); /* the first number: the block */
    CHECK_INT(3, d);
}

static void test_user_patterns(void)
{
    const char *rx[] = {"^ln(0[02468]|10)$", "^ln(0[13579]|11)$", "post_attention"};
    const char *role[] = {"attn_norm", "mlp_norm", "my_role"};
    const char *origin[] = {"--role", "--role", "config roles"};
    nc_roles *r = NULL;
    nc_err err = {0};
    CHECK_INT(0, nc_roles_compile(rx, role, origin, 3, &r, &err));
    static const want w[] = {
        {"ln00", "attn_norm", "user", -1, false},
        {"ln05", "mlp_norm", "user", -1, false},
        {"ln10", "attn_norm", "user", -1, false},
        /* first match wins, before the built-in patterns */
        {"model.layers.2.post_attention_layernorm", "my_role", "user", 2, false},
        {"model.layers.2.input_layernorm", "attn_norm", "hf-llama", 2, true},
    };
    check_model(w, 5, r);
    const char *names[1] = {"ln05"};
    nc_role_info info;
    CHECK_INT(0, nc_roles_assign(r, names, 1, &info, &err));
    CHECK_STR("--role '^ln(0[13579]|11)$'", info.source);
    nc_roles_free(r);

    /* refusals name the origin, the pattern and what is wrong */
    const char *bad_rx[] = {"ln(0"}, *bad_role[] = {"attn norm"}, *ok_role[] = {"x"};
    const char *ok_rx[] = {"ln0"};
    CHECK_INT(NC_EINVAL, nc_roles_compile(bad_rx, ok_role, origin, 1, &r, &err));
    CHECK(r == NULL);
    CHECK_CONTAINS(err.msg, "--role 'ln(0=x': not a POSIX extended regular expression: ");
    err = (nc_err){0}; /* an nc_err keeps its first message */
    CHECK_INT(NC_EINVAL, nc_roles_compile(ok_rx, bad_role, origin, 1, &r, &err));
    CHECK_STR("--role 'ln0=attn norm': role name 'attn norm': expected 1 to 47 letters, "
              "digits, '_', '.' or '-'", err.msg);
    char why[160];
    CHECK(!nc_role_regex_ok("a[", why, sizeof why));
    CHECK(strlen(why) > 0);
    CHECK(nc_role_regex_ok("^a|b$", why, sizeof why));
    /* bounds that keep regcomp and regexec quick whatever the pattern */
    CHECK(!nc_role_regex_ok("((a{1,100}){1,100}){1,100}", why, sizeof why));
    CHECK_STR("its {m,n} bounds multiply to more than 10000 (normcmp's limit)", why);
    CHECK(!nc_role_regex_ok("(x{2,})\\1", why, sizeof why));
    CHECK_STR("a back-reference (\\1) is not accepted", why);
    CHECK(nc_role_regex_ok("a{1,100}b{1,100}", why, sizeof why));
    CHECK(nc_role_regex_ok("a\\{9999999}", why, sizeof why)); /* an escaped brace */
    char big[1100];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(!nc_role_regex_ok(big, why, sizeof why));
    CHECK_STR("longer than 1024 bytes (normcmp's limit)", why);
    const char *nested[] = {"(a{1,200}){1,200}"};
    err = (nc_err){0};
    CHECK_INT(NC_EINVAL, nc_roles_compile(nested, ok_role, origin, 1, &r, &err));
    CHECK_STR("--role '(a{1,200}){1,200}=x': not accepted as a role pattern: its {m,n} bounds "
              "multiply to more than 10000 (normcmp's limit)", err.msg);
    CHECK(nc_role_name_ok("post_mlp_norm"));
    CHECK(!nc_role_name_ok(""));
    CHECK(!nc_role_name_ok("a=b"));
    char longname[NC_ROLE_NAME_MAX + 1];
    memset(longname, 'a', NC_ROLE_NAME_MAX);
    longname[NC_ROLE_NAME_MAX] = '\0';
    CHECK(!nc_role_name_ok(longname));
    longname[NC_ROLE_NAME_MAX - 1] = '\0';
    CHECK(nc_role_name_ok(longname));
}

/* alpha0 of a layer named name (assigned alone) with norm kind and width d */
static nc_alpha0 a0(const char *name, nc_norm_kind norm, size_t d, const nc_alpha0_opt *opt)
{
    nc_role_info info;
    nc_err err = {0};
    const char *names[1] = {name};
    nc_roles_assign(NULL, names, 1, &info, &err);
    return nc_alpha0_for(&info, norm, d, opt);
}

static void test_alpha0(void)
{
    /* the paper's LLaMA table: attention-input norm / the others */
    static const struct {
        size_t d;
        double attn, other;
    } table[] = {{4096, 0.8, 0.2}, {5120, 0.6, 0.15}, {8192, 0.2, 0.05}};
    for (int k = 0; k < 3; k++) {
        nc_alpha0 a = a0("model.layers.3.input_layernorm", NC_RMSNORM, table[k].d, NULL);
        CHECK_ABS(table[k].attn, a.value, 0);
        CHECK(a.llm && !a.extrapolated);
        a = a0("model.layers.3.post_attention_layernorm", NC_RMSNORM, table[k].d, NULL);
        CHECK_ABS(table[k].other, a.value, 0);
        a = a0("model.norm", NC_RMSNORM, table[k].d, NULL);
        CHECK_ABS(table[k].other, a.value, 0);
    }
    nc_alpha0 a = a0("layers.0.attention_norm", NC_RMSNORM, 4096, NULL);
    CHECK_STR("DyT paper, LLaMA-style LLM (RMSNorm), d = 4096: 0.8 for the attention-input norm",
              a.rule);
    /* unlisted widths: the nearest listed one in log d, marked */
    a = a0("layers.0.attention_norm", NC_RMSNORM, 64, NULL);
    CHECK_ABS(0.8, a.value, 0);
    CHECK(a.extrapolated);
    CHECK_STR("DyT paper, LLaMA-style LLM (RMSNorm), d = 64 is not in its table (4096, 5120, "
              "8192): the nearest listed width, 4096, used (extrapolated): 0.8 for the "
              "attention-input norm", a.rule);
    CHECK_ABS(0.15, a0("model.norm", NC_RMSNORM, 5500, NULL).value, 0);   /* 5120 nearer */
    CHECK_ABS(0.05, a0("model.norm", NC_RMSNORM, 7000, NULL).value, 0);   /* 8192 nearer */
    CHECK_ABS(0.05, a0("model.norm", NC_RMSNORM, 16384, NULL).value, 0);
    CHECK_ABS(0.6, a0("model.layers.1.input_layernorm", NC_RMSNORM, 4600, NULL).value, 0);
    /* a role the name does not give: the other norms' value, said so */
    a = a0("ln05", NC_RMSNORM, 4096, NULL);
    CHECK_ABS(0.2, a.value, 0);
    CHECK_CONTAINS(a.rule, "role unknown: taken as not the attention-input norm");
    /* LayerNorm: non-LLM, 0.5, whatever the width and role */
    a = a0("blocks.0.norm1", NC_LAYERNORM, 4096, NULL);
    CHECK_ABS(0.5, a.value, 0);
    CHECK(!a.llm);
    CHECK_STR("DyT paper: 0.5 for non-LLM Transformers (a LayerNorm layer without a "
              "LLaMA-style name)", a.rule);
    a = a0("transformer.h.3.ln_1", NC_LAYERNORM, 768, NULL);
    CHECK_ABS(0.5, a.value, 0);
    CHECK_CONTAINS(a.rule, "GPT-2 is an LLM, but the paper gives alpha0 for LLaMA models only");
    /* a LLaMA-family name is an LLM even as a LayerNorm */
    a = a0("model.layers.0.input_layernorm", NC_LAYERNORM, 8192, NULL);
    CHECK_ABS(0.2, a.value, 0);
    CHECK_CONTAINS(a.rule, "LLaMA-style LLM (a LLaMA-family name)");
    /* overrides */
    nc_alpha0_opt one = {1, 0.35, 0.35, "--alpha0"}, two = {2, 0.9, 0.1, "config alpha0"};
    a = a0("blocks.0.norm1", NC_LAYERNORM, 64, &one);
    CHECK_ABS(0.35, a.value, 0);
    CHECK_STR("--alpha0 0.35: every layer (the DyT paper's rules not used)",
              a.rule);
    CHECK_STR("--alpha0", a.origin);
    CHECK_ABS(0.9, a0("blocks.0.norm1", NC_LAYERNORM, 64, &two).value, 0);
    a = a0("blocks.0.norm2", NC_LAYERNORM, 64, &two);
    CHECK_ABS(0.1, a.value, 0);
    CHECK_STR("config alpha0 0.9,0.1: the value of the other "
              "norms", a.rule);
}

int main(void)
{
    test_families();
    test_depth();
    test_user_patterns();
    test_alpha0();
    return CHECK_DONE();
}
