/*
 * html.c - index.html beside report.json (html.h).
 */
#include "report/html.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* A growing string; ok turns false on the first failed allocation. */
typedef struct buf {
    char *s;
    size_t n, cap;
    bool ok;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (!b->ok)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *g = realloc(b->s, cap);
        if (!g) {
            b->ok = false;
            return;
        }
        b->s = g;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) putf(buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    put(b, tmp, (size_t)w < sizeof tmp ? (size_t)w : sizeof tmp - 1);
}

/* s with &, <, >, " and ' escaped (for text and quoted attributes). */
static void esc(buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': puts_(b, "&amp;"); break;
        case '<': puts_(b, "&lt;"); break;
        case '>': puts_(b, "&gt;"); break;
        case '"': puts_(b, "&quot;"); break;
        case '\'': puts_(b, "&#39;"); break;
        default: put(b, s, 1);
        }
    }
}

/* A file name as a relative URL: unreserved characters as they are, the
 * rest percent-encoded. */
static void url(buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c))
            put(b, s, 1);
        else
            putf(b, "%%%02X", c);
    }
}

static const cJSON *at(const cJSON *o, const char *path)
{
    /* "a.b.c": nested objects */
    char key[64];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

static double num_at(const cJSON *o, const char *path)
{
    const cJSON *v = at(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str_at(const cJSON *o, const char *path)
{
    const cJSON *v = at(o, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A verdict: a string, or an object's "text" (or "summary"). */
static const char *verdict_of(const cJSON *o)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "verdict");
    if (cJSON_IsString(v))
        return v->valuestring;
    const char *t = str_at(v, "text");
    return t ? t : str_at(v, "summary");
}

/* The columns of the layer table (docs/whole_models.md lists them): key
 * (for #sort=), header, title (the tooltip: what the number is), the JSON
 * path of the value, of its 95 % interval ([lo, hi]) or of its standard
 * error, shown under it, and where the path starts: the layer's entry in
 * "layers" (L), or its entry in "run.per_layer" (P). A text column (T)
 * shows a string. Optional columns (OPT) appear only when a layer has
 * the value: the drop-in parameters (make dropin) and the swap test's
 * loss changes (docs/swap.md). */
enum { L = 0, P = 1, T = 2, OPT = 4 };
static const struct col {
    const char *key, *head, *title, *path, *ci, *se;
    int where;
} cols[] = {
    {"role", "role", "the norm's place in its block (docs/dropin.md, roles)", "role", NULL, NULL,
     L | T | OPT},
    {"tokens", "N", "tokens", "tokens", NULL, NULL, L},
    {"dim", "d", "channels", "dim", NULL, NULL, L},
    {"std", "std(x)", "standard deviation of the input", "input_stats.std", NULL, NULL, L},
    {"kind", "label", "saturating, near-linear or undecided: the 95 % interval of the residual "
     "removed against the cut (docs/report.md)", "kind", NULL, NULL, P | T},
    {"removed", "removed", "share of the affine map's residual the best S-shaped fit removes, "
     "with its 95 % interval over resampled tokens", "residual_removed", "residual_removed_ci.ci95",
     NULL, P},
    {"best_r2", "best R&sup2;", "the fit of highest R^2, or the fits tied with it inside the "
     "noise", "best_r2.fit", NULL, NULL, P | T},
    {"slope_ratio", "slope / theory", "alpha*gamma*rho: the fitted slope at 0 over the norm's "
     "own, with its 95 % interval", "slope_ratio.value", "slope_ratio.ci95", NULL, P},
    {"alpha", "DyT &alpha;", "fitted DyT alpha, with its 95 % interval over resampled tokens",
     "fits.dyt.alpha", "bootstrap.alpha.ci95", NULL, L},
    {"alpha_std", "&alpha;&middot;std", "alpha times std(x)", "fits.dyt.alpha_times_std", NULL,
     NULL, L},
    {"r2_affine", "R&sup2; affine", "R^2 of the affine map, with its 95 % interval",
     "fits.linear.r2", "bootstrap.r2.linear.ci95", NULL, L},
    {"r2_dyt", "R&sup2; DyT", "R^2 of DyT, with its 95 % interval", "fits.dyt.r2",
     "bootstrap.r2.dyt.ci95", NULL, L},
    {"r2_dyisru", "R&sup2; DyISRU", "R^2 of DyISRU, with its 95 % interval", "fits.dyisru.r2",
     "bootstrap.r2.dyisru.ci95", NULL, L},
    {"diag_share", "diag share", "share of the Jacobian's squared Frobenius norm on its "
     "diagonal", "jacobian.diag_frobenius_share", NULL, NULL, L},
    {"bp_dyt", "DyT bp err", "relative backprop error of DyT's derivative as the Jacobian (exact "
     "over probes), with its 95 % interval over resampled tokens",
     "jacobian.surrogates.dyt.backprop_rel_err", "bootstrap.backprop.dyt.ci95", NULL, L},
    {"dropin_alpha", "drop-in &alpha;", "the drop-in DyT's alpha (dropin_dyt.safetensors; "
     "docs/dropin.md)", "dropin.dyt.alpha", NULL, NULL, L | OPT},
    {"swap_dyt", "&Delta;loss DyT", "the model's loss change with this norm alone replaced by its "
     "drop-in DyT, nats per example, &plusmn; its standard error (docs/swap.md)",
     "swap.dyt.delta", NULL, "swap.dyt.delta_se", L | OPT},
    {"swap_alpha0", "&Delta;loss DyT &alpha;&#8320;", "the same with DyT at the paper's "
     "initial alpha", "swap.dyt_alpha0.delta", NULL, "swap.dyt_alpha0.delta_se", L | OPT},
    {"swap_dyisru", "&Delta;loss DyISRU", "the same with the drop-in DyISRU",
     "swap.dyisru.delta", NULL, "swap.dyisru.delta_se", L | OPT},
};
#define NCOLS (sizeof cols / sizeof cols[0])

/* The file-name stem of a layer's figures (plot/figures.c), in both forms
 * the outputs use: with '-' kept, and with '-' as '_'. */
static void stem_of(const char *name, char *a, char *b, size_t cap)
{
    size_t k = 0;
    for (; name[k] && k + 1 < cap; k++) {
        char c = name[k];
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-';
        a[k] = keep ? c : '_';
        b[k] = c == '-' || !keep ? '_' : c;
    }
    a[k] = b[k] = '\0';
}

static bool is_image(const char *f)
{
    size_t n = strlen(f);
    return n > 4 && strcmp(f + n - 4, ".png") == 0;
}

/* The layer (index) a file belongs to, or -1: the longest stem + '_'. */
static int owner_of(const char *file, const cJSON *layers)
{
    int best = -1, i = 0;
    size_t best_len = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        char a[256], b[256];
        const char *name = str_at(l, "name");
        stem_of(name ? name : "", a, b, sizeof a);
        for (int v = 0; v < 2; v++) {
            const char *s = v ? b : a;
            size_t n = strlen(s);
            if (n > best_len && strncmp(file, s, n) == 0 && file[n] == '_') {
                best = i;
                best_len = n;
            }
        }
        i++;
    }
    return best;
}

/* The page from 360 px (a phone) to 1920 px: the run's figures never
 * wider than the window, the table in a box of its own that scrolls
 * sideways (its layer column stays in view), thumbnails wrapping in their
 * cell, verdicts at a readable width. */
static const char style[] =
    "*{box-sizing:border-box}"
    "body{font:14px/1.4 system-ui,sans-serif;margin:1em;color:#222;max-width:100%}"
    "h1{font-size:1.4em;margin:0 0 .3em;overflow-wrap:anywhere}h2{font-size:1.1em;margin:1.2em 0 .4em}"
    ".meta{color:#555;font-size:.9em;overflow-wrap:anywhere}"
    ".verdict{background:#f3f6fa;border-left:4px solid #3a6ea5;padding:.5em .8em;margin:.6em 0;"
    "overflow-wrap:anywhere}.verdict ul{margin:.3em 0 0;padding-left:1.2em}"
    ".verdict details{margin-top:.4em;font-size:.9em;color:#444}"
    ".runfigs{display:flex;flex-wrap:wrap;gap:.6em}"
    ".runfigs a{max-width:100%}.runfigs img{display:block;max-width:100%;height:auto;"
    "max-height:340px;border:1px solid #ddd}"
    ".tablebox{max-width:100%;overflow-x:auto;border:1px solid #ddd}"
    "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ddd;padding:3px "
    "6px;text-align:right;vertical-align:top}th{background:#eee;cursor:pointer;"
    "white-space:nowrap;user-select:none;position:sticky;top:0}th.asc:after{content:' \\25B2'}"
    "th.desc:after{content:' \\25BC'}td.t{text-align:left}"
    "td.name{position:sticky;left:0;background:#fff;z-index:1;min-width:8em;max-width:16em;"
    "overflow-wrap:break-word}"
    "td.v{min-width:16em;max-width:26em}"
    "td small{white-space:nowrap}td.figs{min-width:9.5em;max-width:16em}td.figs a{display:inline-block}"
    "td.figs img{height:64px;width:auto;max-width:100%;margin:0 3px 3px 0;border:1px solid #ccc}"
    "tr:nth-child(even) td{background:#fafafa}tr:nth-child(even) td.name{background:#fafafa}";

/* Sorting (click a header; #sort=key or #sort=-key), and a check the tests
 * read with chromium --dump-dom: images decoded, rows, sort order. */
static const char script[] =
    "(function(){var t=document.getElementById('layers');if(!t)return;"
    "var tb=t.tBodies[0],hs=t.tHead.rows[0].cells;"
    "function val(r,i){var c=r.cells[i],v=c.getAttribute('data-v');"
    "if(v===null)return c.textContent;return v===''?NaN:parseFloat(v);}"
    "function sortBy(i,desc){var rows=Array.prototype.slice.call(tb.rows);"
    "rows.sort(function(a,b){var x=val(a,i),y=val(b,i);"
    "if(typeof x==='number'||typeof y==='number'){var nx=isNaN(x),ny=isNaN(y);"
    "if(nx||ny)return nx-ny;return desc?y-x:x-y;}"
    "return desc?String(y).localeCompare(x):String(x).localeCompare(y);});"
    "rows.forEach(function(r){tb.appendChild(r);});"
    "for(var k=0;k<hs.length;k++)hs[k].className='';hs[i].className=desc?'desc':'asc';"
    "document.getElementById('nc-check').setAttribute('data-sorted',hs[i].getAttribute('data-key')"
    "+(desc?' desc':' asc'));}"
    "for(var k=0;k<hs.length;k++)(function(i){hs[i].addEventListener('click',function(){"
    "sortBy(i,hs[i].className==='asc');});})(k);"
    "window.addEventListener('load',function(){var m=/^#sort=(-?)(.+)$/.exec(location.hash);"
    "if(m)for(var k=0;k<hs.length;k++)if(hs[k].getAttribute('data-key')===m[2])sortBy(k,m[1]==='-');"
    "var im=document.images,ok=0;for(var j=0;j<im.length;j++)if(im[j].complete&&"
    "im[j].naturalWidth>0)ok++;var c=document.getElementById('nc-check');"
    "c.setAttribute('data-images',im.length);c.setAttribute('data-decoded',ok);"
    "c.setAttribute('data-rows',tb.rows.length);"

    "c.setAttribute('data-order',Array.prototype.map.call(tb.rows,function(r){"
    "return r.getAttribute('data-name');}).join('\\n'));});})();";

static void thumb(buf *b, const char *file, const char *cls)
{
    puts_(b, "<a href=\"");
    url(b, file);
    puts_(b, "\">");
    if (is_image(file)) {
        puts_(b, "<img src=\"");
        url(b, file);
        puts_(b, "\" alt=\"");
        esc(b, file);
        putf(b, "\" title=\"");
        esc(b, file);
        puts_(b, "\"");
        if (cls)
            putf(b, " class=\"%s\"", cls);
        puts_(b, ">");
    } else {
        esc(b, file);
    }
    puts_(b, "</a> ");
}

static void header(buf *b, const cJSON *root, size_t nlayers)
{
    const char *name = str_at(root, "config.name");
    puts_(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    esc(b, name ? name : "run");
    puts_(b, " \xe2\x80\x94 normcmp</title><style>");
    puts_(b, style);
    puts_(b, "</style></head><body>\n<h1>normcmp: ");
    esc(b, name ? name : "run");
    putf(b, "</h1>\n<p class=\"meta\">%zu layer%s &middot; ", nlayers, nlayers == 1 ? "" : "s");
    esc(b, str_at(root, "tool.name"));
    puts_(b, " ");
    esc(b, str_at(root, "tool.version"));
    puts_(b, " &middot; <code>");
    esc(b, str_at(root, "command"));
    puts_(b, "</code></p>\n");
}

/* A layer's verdict: its own "verdict", else that of its entry in the
 * run-level block's per_layer list (report.json "run"). */
static const char *layer_verdict(const cJSON *root, const cJSON *l)
{
    const char *v = verdict_of(l), *name = str_at(l, "name");
    const cJSON *p;
    cJSON_ArrayForEach(p, at(root, "run.per_layer"))
    {
        const char *pn = str_at(p, "name");
        if (!v && name && pn && strcmp(pn, name) == 0)
            v = verdict_of(p);
    }
    return v;
}

/* One part of the run's verdict, its lists of layer names left out
 * ("d = 256 (20 layers: blocks.0.norm, ...): ..." reads "d = 256 (20
 * layers): ..."): the names are in the table below. */
static void short_part(buf *b, const char *s, size_t n)
{
    size_t k = 0;
    while (k < n) {
        const char *p = s + k;
        size_t digits = strspn(p, "0123456789");
        if (k > 0 && s[k - 1] == '(' && digits && strncmp(p + digits, " layers: ", 9) == 0) {
            const char *close = memchr(p, ')', n - k);
            if (close) {
                char tmp[64];
                snprintf(tmp, sizeof tmp, "%.*s layers", (int)digits, p);
                esc(b, tmp);
                k = (size_t)(close - s);
                continue;
            }
        }
        char one[2] = {s[k], 0};
        esc(b, one);
        k++;
    }
}

/* The run's verdict, short: its parts (" | " between them) as a list
 * without the layer names; the whole text below, folded. */
static void run_verdict(buf *b, const char *v)
{
    puts_(b, "<div class=\"verdict\" id=\"run-verdict\"><b>Verdict:</b> ");
    if (!v) {
        puts_(b, "this report has no run-level verdict</div>\n");
        return;
    }
    const char *bar = strstr(v, " | ");
    short_part(b, v, bar ? (size_t)(bar - v) : strlen(v));
    if (bar) {
        puts_(b, "<ul>");
        for (const char *p = bar + 3; p;) {
            const char *next = strstr(p, " | ");
            puts_(b, "<li>");
            short_part(b, p, next ? (size_t)(next - p) : strlen(p));
            puts_(b, "</li>");
            p = next ? next + 3 : NULL;
        }
        puts_(b, "</ul>");
    }
    puts_(b, "<details><summary>the whole verdict, with the layers' names</summary>");
    esc(b, v);
    puts_(b, "</details></div>\n");
}

static void run_block(buf *b, const cJSON *root, const cJSON *layers, const cJSON *outs)
{
    const cJSON *it;
    run_verdict(b, verdict_of(cJSON_GetObjectItemCaseSensitive(root, "run")));
    puts_(b, "<h2>Run-level figures</h2>\n<div class=\"runfigs\">");
    size_t n = 0;
    cJSON_ArrayForEach(it, outs)
    {
        if (cJSON_IsString(it) && owner_of(it->valuestring, layers) < 0 &&
            strcmp(it->valuestring, "index.html") && strcmp(it->valuestring, "config.json")) {
            thumb(b, it->valuestring, NULL);
            n++;
        }
    }
    if (n == 0)
        puts_(b, "<p class=\"meta\">none</p>");
    puts_(b, "</div>\n");
}

/* The entry of layer name in the run-level block's per_layer list. */
static const cJSON *per_layer_of(const cJSON *root, const char *name)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, at(root, "run.per_layer"))
    {
        const char *pn = str_at(p, "name");
        if (name && pn && strcmp(pn, name) == 0)
            return p;
    }
    return NULL;
}

/* Where column c reads for layer l (entry pl in run.per_layer). */
static const cJSON *col_obj(const struct col *c, const cJSON *l, const cJSON *pl)
{
    return c->where & P ? pl : l;
}

/* The "best R^2" cell's text: the fit, or "tie: a, b" with its ties. */
static void best_text(buf *b, const cJSON *best)
{
    const cJSON *ties = cJSON_GetObjectItemCaseSensitive(best, "ties"), *t;
    if (cJSON_GetArraySize(ties) > 0)
        puts_(b, "tie: ");
    esc(b, str_at(best, "fit"));
    cJSON_ArrayForEach(t, ties)
    {
        if (cJSON_IsString(t)) {
            puts_(b, ", ");
            esc(b, t->valuestring);
        }
    }
}

/* One cell of column c: a number (its interval or standard error under
 * it, smaller), a text, or a dash. */
static void cell(buf *b, const struct col *c, const cJSON *o)
{
    if (c->where & T) {
        bool best = strcmp(c->key, "best_r2") == 0;
        const char *v = best ? str_at(o, "best_r2.fit") : str_at(o, c->path);
        if (!v) {
            puts_(b, "<td class=\"t\">&ndash;</td>");
            return;
        }
        puts_(b, "<td class=\"t\">");
        if (best)
            best_text(b, at(o, "best_r2"));
        else
            esc(b, v);
        puts_(b, "</td>");
        return;
    }
    double v = num_at(o, c->path);
    if (!isfinite(v)) {
        puts_(b, "<td data-v=\"\">&ndash;</td>");
        return;
    }
    putf(b, "<td data-v=\"%.17g\">%.4g", v, v);
    const cJSON *ci = c->ci ? at(o, c->ci) : NULL;
    double se = c->se ? num_at(o, c->se) : NAN;
    if (cJSON_IsArray(ci) && cJSON_GetArraySize(ci) == 2 &&
        cJSON_IsNumber(cJSON_GetArrayItem(ci, 0)) && cJSON_IsNumber(cJSON_GetArrayItem(ci, 1)))
        putf(b, "<br><small>[%.4g, %.4g]</small>", cJSON_GetArrayItem(ci, 0)->valuedouble,
             cJSON_GetArrayItem(ci, 1)->valuedouble);
    else if (isfinite(se))
        putf(b, "<br><small>&plusmn; %.2g</small>", se);
    puts_(b, "</td>");
}

/* Whether column c is shown: always, or (optional) when a layer has it. */
static bool col_shown(const struct col *c, const cJSON *root, const cJSON *layers)
{
    if (!(c->where & OPT))
        return true;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        const cJSON *v = at(col_obj(c, l, per_layer_of(root, str_at(l, "name"))), c->path);
        if (cJSON_IsNumber(v) || cJSON_IsString(v))
            return true;
    }
    return false;
}

static void layer_rows(buf *b, const cJSON *root, const cJSON *layers, const cJSON *outs)
{
    bool shown[NCOLS];
    for (size_t c = 0; c < NCOLS; c++)
        shown[c] = col_shown(&cols[c], root, layers);
    puts_(b, "<h2>Layers</h2>\n<p class=\"meta\">Click a column to sort; hover a header for "
             "what it is. Under a number, smaller: its 95 % interval over resampled tokens "
             "[lo, hi], or &plusmn; its standard error. Thumbnails link to the figures; the "
             "table scrolls sideways.</p>\n<div class=\"tablebox\">"
             "<table id=\"layers\"><thead><tr>"
             "<th data-key=\"index\">#</th><th data-key=\"layer\">layer</th>"
             "<th data-key=\"norm\">norm</th>");
    for (size_t c = 0; c < NCOLS; c++)
        if (shown[c])
            putf(b, "<th data-key=\"%s\" title=\"%s\">%s</th>", cols[c].key, cols[c].title,
                 cols[c].head);
    puts_(b, "<th data-key=\"verdict\">verdict</th><th data-key=\"figures\">figures</th>"
             "</tr></thead><tbody>\n");
    int i = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        const char *name = str_at(l, "name");
        const cJSON *pl = per_layer_of(root, name);
        puts_(b, "<tr data-name=\"");
        esc(b, name);
        putf(b, "\"><td data-v=\"%d\">%d</td><td class=\"t name\">", i, i);
        esc(b, name);
        puts_(b, "</td><td class=\"t\">");
        esc(b, str_at(l, "norm"));
        puts_(b, "</td>");
        for (size_t c = 0; c < NCOLS; c++)
            if (shown[c])
                cell(b, &cols[c], col_obj(&cols[c], l, pl));
        const char *v = layer_verdict(root, l);
        puts_(b, "<td class=\"t v\">");
        esc(b, v ? v : "\xe2\x80\x93");
        puts_(b, "</td><td class=\"t figs\">");
        const cJSON *f;
        cJSON_ArrayForEach(f, outs)
        {
            if (cJSON_IsString(f) && owner_of(f->valuestring, layers) == i)
                thumb(b, f->valuestring, NULL);
        }
        puts_(b, "</td></tr>\n");
        i++;
    }
    puts_(b, "</tbody></table></div>\n");
}

int nc_report_html(const char *report_json, char **html, nc_err *err)
{
    *html = NULL;
    cJSON *root = cJSON_Parse(report_json);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    if (!root || !cJSON_IsArray(layers)) {
        cJSON_Delete(root);
        return nc_err_set(err, NC_EINVAL, "index.html: the report is not valid JSON with "
                          "a \"layers\" array");
    }
    buf b = {.ok = true};
    header(&b, root, (size_t)cJSON_GetArraySize(layers));
    run_block(&b, root, layers, outs);
    layer_rows(&b, root, layers, outs);
    puts_(&b, "<p id=\"nc-check\" hidden></p>\n<script>");
    puts_(&b, script);
    puts_(&b, "</script>\n</body></html>\n");
    cJSON_Delete(root);
    if (!b.ok) {
        free(b.s);
        return nc_err_set(err, NC_ENOMEM, "out of memory for index.html");
    }
    *html = b.s;
    return 0;
}
