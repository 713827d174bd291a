/*
 * test_figures.c - the paper-style figures, end to end: a config with a
 * synthetic layer is run, its figures rendered into an output set, and the
 * PNGs decoded with libpng and checked: size, metadata, white background,
 * the point cloud where the points are, and each fitted curve's colour at
 * pixels sampled along the curve (mapped through the panel geometry the PNG
 * records in its "Panels" text).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/plan.h"
#include "check.h"
#include "io/png.h"
#include "plot/figure.h"
#include "plot/figures.h"
#include "config/config.h"
#include "util/outfile.h"

static char dir[] = "/tmp/nc_test_figures_XXXXXX";

typedef struct geom {
    int x, y, w, h;
    double x0, x1, y0, y1;
    double lin, dec; /* a symmetric-log x axis (lin > 0) */
} geom;

static bool parse_panel(const char *text, geom *g)
{
    g->lin = g->dec = 0;
    if (!text)
        return false;
    if (sscanf(text, "panel 0: area %d %d %d %d; x %lf %lf; y %lf %lf", &g->x, &g->y, &g->w, &g->h,
               &g->x0, &g->x1, &g->y0, &g->y1) == 8)
        return true;
    return sscanf(text, "panel 0: area %d %d %d %d; x %lf %lf symlog %lf %lf; y %lf %lf", &g->x,
                  &g->y, &g->w, &g->h, &g->x0, &g->x1, &g->lin, &g->dec, &g->y0, &g->y1) == 10;
}

/* The x axis' coordinate of x (figure.h: linear within +-lin, a decade
 * beyond spanning dec * lin), written out independently of the plot code. */
static double xu(const geom *g, double x)
{
    if (!(g->lin > 0) || fabs(x) <= g->lin)
        return x;
    return copysign(g->lin * (1 + g->dec * log10(fabs(x) / g->lin)), x);
}

/* The device column of x. */
static int px_of(const geom *g, double x)
{
    return g->x + (int)((xu(g, x) - xu(g, g->x0)) / (xu(g, g->x1) - xu(g, g->x0)) * g->w);
}

static void pixel(const nc_png_image *img, int px, int py, int rgb[3])
{
    const unsigned char *p = img->rgba + ((size_t)py * (size_t)img->width + (size_t)px) * 4;
    rgb[0] = p[0];
    rgb[1] = p[1];
    rgb[2] = p[2];
}

static double dist(const int rgb[3], nc_rgb c)
{
    double dr = rgb[0] - 255 * c.r, dg = rgb[1] - 255 * c.g, db = rgb[2] - 255 * c.b;
    return sqrt(dr * dr + dg * dg + db * db);
}

static int py_of(const geom *g, const nc_plan_layer *pl, int id, double x)
{
    double y = nc_surrogate_f(nc_surrogate_get((nc_fit_id)id), &pl->result.fits[id].params, 0, x);
    return g->y + (int)((g->y1 - y) / (g->y1 - g->y0) * g->h);
}

/* Share of sample x positions where the curve y = f(x) has a pixel of its
 * colour within 3 pixels of where it should be. Only positions where the
 * other curves are at least 8 pixels away count (curves drawn later cover
 * earlier ones where they meet). */
static double curve_found(const nc_png_image *img, const geom *g, const nc_plan_layer *pl,
                          int id, nc_rgb col)
{
    static const int all[3] = {NC_FIT_LINEAR, NC_FIT_DYT, NC_FIT_DYISRU};
    int found = 0, tried = 0;
    for (int k = 1; k < 60; k++) {
        double u = xu(g, g->x0) + (xu(g, g->x1) - xu(g, g->x0)) * k / 60.0;
        double x = fabs(u) <= g->lin || !(g->lin > 0)
                       ? u
                       : copysign(g->lin * pow(10.0, (fabs(u) / g->lin - 1) / g->dec), u);
        int px = px_of(g, x);
        int py = py_of(g, pl, id, x);
        if (py <= g->y + 3 || py >= g->y + g->h - 3)
            continue;
        bool apart = true;
        for (int o = 0; o < 3; o++)
            apart = apart && (all[o] == id || abs(py_of(g, pl, all[o], x) - py) >= 8);
        if (!apart)
            continue;
        tried++;
        bool hit = false;
        for (int dy = -3; dy <= 3 && !hit; dy++)
            for (int dx = -3; dx <= 3 && !hit; dx++) { /* dotted lines too */
                int rgb[3];
                pixel(img, px + dx, py + dy, rgb);
                hit = dist(rgb, col) < 40;
            }
        found += hit;
    }
    return tried >= 5 ? (double)found / tried : 0;
}

static nc_png_image load(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "rb");
    nc_png_image img = {0};
    CHECK(fp != NULL);
    if (!fp)
        return img;
    static unsigned char buf[8 << 20];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    nc_err err = {0};
    CHECK_INT(0, nc_png_read(buf, n, &img, &err));
    return img;
}

/* LeakSanitizer (SANITIZE=1 builds): fontconfig, which cairo's text API
 * loads, keeps its configuration for the life of the process by design;
 * nothing of ours is suppressed. Unused in normal builds. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\n";
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    const char *json =
        "{\"name\": \"t\", \"jacobian\": {\"enabled\": false},"
        " \"layers\": [{\"synth\": {\"preset\": \"late\", \"tokens\": 768, \"dim\": 96, \"seed\": 4,"
        "                          \"outliers\": 3, \"outlier_mag\": 2.5, \"outlier_spread\": 0.8},"
        "               \"label\": \"late\"}],"
        " \"figures\": [{\"type\": \"scatter\", \"dpi\": 120, \"legend\": \"none\"},"
        "               {\"type\": \"jacobian\", \"dpi\": 100, \"width\": 5, \"height\": 4},"
        "               {\"type\": \"tanh-family\", \"format\": [\"png\", \"pdf\", \"svg\"]}]}";
    nc_err err = {0};
    nc_config *cfg;
    CHECK_INT(0, nc_config_parse(json, strlen(json), "test.json", &cfg, &err));
    nc_plan *plan;
    CHECK_INT(0, nc_plan_open(cfg, &plan, &err));
    CHECK_INT(0, nc_plan_run(plan, NULL, &err));
    nc_outset *set;
    CHECK_INT(0, nc_outset_alloc(dir, &set, &err));
    char *files[16];
    size_t nfiles = 0;
    int rc = nc_figures_render(plan, cfg->figures, cfg->nfigures, "normcmp test", 2, set, files,
                               16, &nfiles, NULL, &err);
    CHECK_INT(0, rc);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    CHECK_INT(0, nc_outset_commit(set, &err));
    CHECK_INT(5, nfiles);
    CHECK_STR("late_scatter.png", files[0]);
    CHECK_STR("late_jacobian.png", files[1]);
    CHECK_STR("tanh_family.png", files[2]);
    CHECK_STR("tanh_family.pdf", files[3]);
    CHECK_STR("tanh_family.svg", files[4]);

    /* the scatter: size, metadata, background, cloud, curves */
    nc_png_image img = load("late_scatter.png");
    CHECK_INT(840, img.width); /* 7 in x 120 dpi */
    CHECK_INT(624, img.height); /* 5.2 in x 120 dpi */
    CHECK_CONTAINS(nc_png_text(&img, "Software"), "normcmp");
    CHECK_STR("normcmp test", nc_png_text(&img, "Command"));
    CHECK_STR("late", nc_png_text(&img, "Layer"));
    CHECK_CONTAINS(nc_png_text(&img, "Parameters"), "dyt: alpha=");
    CHECK_STR("scatter", nc_png_text(&img, "Figure"));
    geom g;
    CHECK(parse_panel(nc_png_text(&img, "Panels"), &g));
    int rgb[3];
    pixel(&img, 2, 2, rgb);
    CHECK(rgb[0] == 255 && rgb[1] == 255 && rgb[2] == 255);
    /* the cloud is dense at the origin: a dark blue, far from white */
    int ox = px_of(&g, 0);
    int oy = g.y + (int)((g.y1 - 0) / (g.y1 - g.y0) * g.h);
    bool cloud = false;
    for (int d = -4; d <= 4 && !cloud; d++) {
        pixel(&img, ox + d, oy - 3 * d, rgb);
        cloud = rgb[2] > rgb[0] + 20 && rgb[0] < 150;
    }
    CHECK(cloud);
    /* an S-curve leaves the lower-right corner of the data area empty */
    pixel(&img, g.x + g.w - 6, g.y + g.h - 30, rgb);
    CHECK(rgb[0] > 200 && rgb[1] > 200 && rgb[2] > 200);
    const nc_plan_layer *pl = &plan->layers[0];
    CHECK(curve_found(&img, &g, pl, NC_FIT_DYT, nc_palette(1)) > 0.7);
    CHECK(curve_found(&img, &g, pl, NC_FIT_DYISRU, nc_palette(2)) > 0.7);
    double lin = curve_found(&img, &g, pl, NC_FIT_LINEAR, nc_rgb_hex(0x555555));
    if (lin <= 0.7)
        fprintf(stderr, "linear found %.2f\n", lin);
    CHECK(lin > 0.7);
    nc_png_image_free(&img);

    /* the Jacobian figure: its own size and the derivative curves */
    img = load("late_jacobian.png");
    CHECK_INT(500, img.width);
    CHECK_INT(400, img.height);
    CHECK(parse_panel(nc_png_text(&img, "Panels"), &g));
    CHECK_ABS(0.0, g.y0, 0);
    nc_png_image_free(&img);

    /* PDF and SVG came out too */
    char path[256];
    snprintf(path, sizeof path, "%s/tanh_family.pdf", dir);
    FILE *fp = fopen(path, "rb");
    char head[8] = {0};
    CHECK(fp && fread(head, 1, 5, fp) == 5);
    if (fp)
        fclose(fp);
    CHECK(memcmp(head, "%PDF-", 5) == 0);

    for (size_t k = 0; k < nfiles; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        unlink(path);
        free(files[k]);
    }
    rmdir(dir);
    nc_plan_close(plan);
    nc_config_free(cfg);
    return CHECK_DONE();
}
