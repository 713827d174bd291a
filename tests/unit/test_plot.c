/*
 * test_plot.c - plot/axes, plot/density and plot/figure.
 *
 * Ticks: the 1-2-5 rules checked as properties over many ranges, plus exact
 * ticks and labels for chosen ones (linear, log, exponent labels, no "-0"),
 * symmetric and nice ranges. Density: the pixel of a point, the closed
 * edges, points outside and non-finite, merging, saturation, colour sums.
 * Figures: a figure with a density of known points and two known curves is
 * rendered to PNG in memory and decoded; the test checks the size, the
 * metadata, the background, the cloud's colour where the points are and
 * not elsewhere, each curve's colour along the curve (data mapped to pixels
 * with the layout the API exposes), the frame and tick labels being drawn,
 * and a transparent render's un-premultiplied colours. PDF and SVG render
 * and start as they should; the layout lines up grids; bad figures are
 * refused with their messages; palettes and the colour map hit their
 * reference values.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/png.h"
#include "plot/axes.h"
#include "plot/density.h"
#include "plot/figure.h"
#include "plot/raster.h"
#include "util/sink.h"

/* ------------------------------------------------------------------ */
/* Ticks                                                               */
/* ------------------------------------------------------------------ */

/* Whether step is 1, 2 or 5 times a power of ten (to 1e-9 relative). */
static int is_125(double step)
{
    double e = floor(log10(step));
    double m = step / pow(10.0, e);
    return fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9 ||
           fabs(m - 10) < 1e-8;
}

static void test_nice_step(void)
{
    CHECK_REL(1.0, nc_nice_step(0.77), 1e-15);
    CHECK_REL(1.0, nc_nice_step(1.0), 1e-15);
    CHECK_REL(2.0, nc_nice_step(1.385), 1e-15);
    CHECK_REL(5.0, nc_nice_step(2.385), 1e-15);
    CHECK_REL(10.0, nc_nice_step(5.0001), 1e-15);
    CHECK_REL(0.002, nc_nice_step(0.001385), 1e-15);
    CHECK_REL(5e7, nc_nice_step(2.385e7), 1e-15);
}

/* The 1-2-5 rules on many ranges: ticks ascending, inside, a 1-2-5 step
 * apart, at most target + 1, at least 2 once the range allows it, labels
 * all with the same decimals and never "-0". */
static void test_linear_properties(void)
{
    int failures = 0, cases = 0;
    for (int a = -40; a <= 40; a++)
        for (int b = 1; b <= 30; b++)
            for (int target = 2; target <= 9; target += 3) {
                double scale = pow(10.0, (a % 9) - 3);
                double lo = a * 0.1385 * scale, hi = lo + b * 0.2385 * scale;
                nc_ticks t;
                cases++;
                if (nc_ticks_linear(lo, hi, target, &t, NULL) != 0) {
                    failures++;
                    continue;
                }
                /* at least two, at most target + 1 unless the step had to go
                 * down to fit two */
                int ok = t.n >= 2 && is_125(t.step);
                double up = t.step * (fabs(t.step / pow(10.0, floor(log10(t.step) + 1e-9)) - 2) <
                                              1e-6
                                          ? 2.5
                                          : 2.0);
                int64_t nup = (int64_t)floor(hi / up + 1e-9) - (int64_t)ceil(lo / up - 1e-9) + 1;
                ok &= t.n <= (size_t)target + 1 || nup < 2;
                for (size_t i = 0; i < t.n; i++) {
                    ok &= t.v[i] >= lo - 1e-9 * t.step && t.v[i] <= hi + 1e-9 * t.step;
                    if (i)
                        ok &= fabs(t.v[i] - t.v[i - 1] - t.step) < 1e-9 * t.step;
                    ok &= strcmp(t.label[i], "-0") != 0 && strncmp(t.label[i], "-0.0", 5) != 0;
                    const char *dot = strchr(t.label[i], '.'), *dot0 = strchr(t.label[0], '.');
                    if (!strchr(t.label[i], 'e') && !strchr(t.label[0], 'e'))
                        ok &= (dot ? strlen(dot) : 0) == (dot0 ? strlen(dot0) : 0);
                }
                /* the smallest 1-2-5 step >= (hi-lo)/target: the one below is not
                 * (or the step went down to fit two) */
                double m = t.step / pow(10.0, floor(log10(t.step) + 1e-9));
                double prev = t.step / (fabs(m - 5) < 1e-6 ? 2.5 : 2.0);
                ok &= prev < (hi - lo) / target * (1 + 1e-9) || nup < 2;
                if (!ok) {
                    failures++;
                    if (failures < 5)
                        fprintf(stderr, "ticks of [%g, %g] target %d: n %zu step %g\n", lo, hi,
                                target, t.n, t.step);
                }
            }
    CHECK_INT(0, failures);
    CHECK(cases > 7000);
}

/* Ticks and labels of one linear axis, as "a b c". */
static void linear_labels(double lo, double hi, int target, char *out, size_t cap)
{
    nc_ticks t;
    out[0] = '\0';
    if (nc_ticks_linear(lo, hi, target, &t, NULL) != 0)
        return;
    for (size_t i = 0; i < t.n; i++) {
        strncat(out, t.label[i], cap - strlen(out) - 1);
        if (i + 1 < t.n)
            strncat(out, " ", cap - strlen(out) - 1);
    }
}

static void log_labels(double lo, double hi, int target, char *out, size_t cap, size_t *nminor)
{
    nc_ticks t;
    out[0] = '\0';
    if (nc_ticks_log(lo, hi, target, &t, NULL) != 0)
        return;
    for (size_t i = 0; i < t.n; i++) {
        strncat(out, t.label[i], cap - strlen(out) - 1);
        if (i + 1 < t.n)
            strncat(out, " ", cap - strlen(out) - 1);
    }
    *nminor = t.nminor;
}

static void test_linear_labels(void)
{
    char s[512];
    linear_labels(-3, 3, 6, s, sizeof s);
    CHECK_STR("-3 -2 -1 0 1 2 3", s);
    linear_labels(-2.5, 2.5, 5, s, sizeof s);
    CHECK_STR("-2 -1 0 1 2", s);
    linear_labels(0, 1, 5, s, sizeof s);
    CHECK_STR("0.0 0.2 0.4 0.6 0.8 1.0", s);
    linear_labels(-0.3, 0.3, 6, s, sizeof s);
    CHECK_STR("-0.3 -0.2 -0.1 0.0 0.1 0.2 0.3", s);
    linear_labels(0.0012, 0.0047, 5, s, sizeof s);
    CHECK_STR("0.002 0.003 0.004", s);
    linear_labels(-7.3, 12.1, 8, s, sizeof s);
    CHECK_STR("-5 0 5 10", s);
    linear_labels(99.5, 100.5, 5, s, sizeof s);
    CHECK_STR("99.6 99.8 100.0 100.2 100.4", s);
    /* large and small magnitudes give the axis a shared factor (Matplotlib's
     * offset text): plain labels, "x10^E" once, never "1.9e+03" */
    nc_ticks tk;
    linear_labels(0, 2e5, 5, s, sizeof s);
    CHECK_STR("0.0 0.5 1.0 1.5 2.0", s);
    CHECK(nc_ticks_linear(0, 2e5, 5, &tk, NULL) == 0);
    CHECK_STR("\xc3\x97" "10\xe2\x81\xb5", tk.offset);
    linear_labels(1e-5, 5e-5, 4, s, sizeof s);
    CHECK_STR("1 2 3 4 5", s);
    CHECK(nc_ticks_linear(1e-5, 5e-5, 4, &tk, NULL) == 0);
    CHECK_STR("\xc3\x97" "10\xe2\x81\xbb\xe2\x81\xb5", tk.offset);
    linear_labels(-2.385e6, 2.385e6, 4, s, sizeof s);
    CHECK_STR("-2 0 2", s);
    CHECK(nc_ticks_linear(0, 5, 5, &tk, NULL) == 0 && tk.offset[0] == '\0');
    char nb[32];
    CHECK_STR("1900", nc_fmt_num(nb, sizeof nb, 1900, 3));
    CHECK_STR("1.9\xc3\x97" "10\xe2\x81\xb5", nc_fmt_num(nb, sizeof nb, 1.9e5, 3));
    CHECK_STR("10\xe2\x81\xbb\xe2\x81\xb4", nc_fmt_num(nb, sizeof nb, 1e-4, 3));
    CHECK_STR("0.0219", nc_fmt_num(nb, sizeof nb, 0.0219007, 3));
    linear_labels(-0.004986, -0.004509, 2, s, sizeof s); /* no multiple of 5e-4 inside */
    CHECK_STR("-0.0048 -0.0046", s); /* step 2e-4 */

    char b[32];
    nc_tick_format(-1e-17, 0.1, 0.3, b, sizeof b); /* rounding residue of 0 */
    CHECK_STR("0.0", b);
    nc_tick_format(-0.0, 1, 3, b, sizeof b);
    CHECK_STR("0", b);
    nc_tick_format(-2.5, 0.5, 3, b, sizeof b);
    CHECK_STR("-2.5", b);

    nc_ticks t;
    nc_err err = {0};
    CHECK_INT(NC_EINVAL, nc_ticks_linear(1, 1, 5, &t, &err));
    CHECK_STR("linear axis range [1, 1]: expected finite lo < hi", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_ticks_linear(0, NAN, 5, &t, &err));
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_ticks_linear(0, 1, 0, &t, &err));
    CHECK_STR("linear axis: 0 ticks asked for, expected 1 to 23", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_ticks_linear(1e20, 1e20 + 1e5, 5, &t, &err));
    CHECK_CONTAINS(err.msg, "is too narrow for its magnitude");
}

static void test_log_ticks(void)
{
    char s[512];
    size_t nminor = 0;
    log_labels(1e-3, 1e2, 6, s, sizeof s, &nminor);
    CHECK_STR("0.001 0.01 0.1 1 10 100", s);
    CHECK_INT(5 * 8, nminor); /* 2..9 in each of the five decades */
    log_labels(1e-6, 1e-2, 5, s, sizeof s, &nminor);
    CHECK_STR("10^-6 10^-5 10^-4 10^-3 10^-2", s); /* one style per axis */
    log_labels(1e-8, 1e8, 6, s, sizeof s, &nminor);
    CHECK_STR("10^-5 10^0 10^5", s); /* every fifth decade */
    CHECK_INT(17 - 3, nminor);       /* the other decades */
    log_labels(1e-12, 1e12, 6, s, sizeof s, &nminor);
    CHECK_STR("10^-10 10^-5 10^0 10^5 10^10", s);
    /* two decades or fewer: 1-2-5 inside the decades */
    log_labels(0.05, 3, 5, s, sizeof s, &nminor);
    CHECK_STR("0.05 0.1 0.2 0.5 1 2", s);
    CHECK_INT(4 + 6 + 1, nminor); /* 0.06..0.09; 0.3, 0.4, 0.6..0.9; 3 */
    log_labels(0.2, 80, 6, s, sizeof s, &nminor);
    CHECK_STR("0.5 1 5 10 50", s);
    /* within one decade: linear ticks */
    log_labels(3, 4.5, 5, s, sizeof s, &nminor);
    CHECK_STR("3.0 3.5 4.0 4.5", s);

    nc_ticks t;
    nc_err err = {0};
    CHECK_INT(NC_EINVAL, nc_ticks_log(0, 10, 5, &t, &err));
    CHECK_STR("log axis range [0, 10]: expected lo > 0", err.msg);
}

static void test_ranges(void)
{
    double a, b;
    nc_range_symmetric(-2.385, 1.2, &a, &b);
    CHECK_REL(-2.385, a, 1e-15);
    CHECK_REL(2.385, b, 1e-15);
    nc_range_symmetric(3.5, -0.25, &a, &b); /* any order */
    CHECK_REL(-3.5, a, 1e-15);
    CHECK_REL(3.5, b, 1e-15);
    nc_range_symmetric(0, 0, &a, &b);
    CHECK_REL(-1.0, a, 1e-15);
    CHECK_REL(1.0, b, 1e-15);

    nc_err err = {0};
    CHECK_INT(0, nc_range_nice(-2.37, 3.91, 5, false, &a, &b, &err));
    CHECK_REL(-4.0, a, 1e-12);
    CHECK_REL(4.0, b, 1e-12);
    CHECK_INT(0, nc_range_nice(0.0123, 0.0871, 4, false, &a, &b, &err));
    CHECK_ABS(0.0, a, 1e-15); /* step 0.02 */
    CHECK_REL(0.1, b, 1e-12);
    /* degenerate: widened by 10 % to [2.1465, 2.6235], then step 0.1 */
    CHECK_INT(0, nc_range_nice(2.385, 2.385, 5, false, &a, &b, &err));
    CHECK_REL(2.1, a, 1e-12);
    CHECK_REL(2.7, b, 1e-12);
    CHECK_INT(0, nc_range_nice(0.0013, 37, 5, true, &a, &b, &err));
    CHECK_REL(1e-3, a, 1e-12);
    CHECK_REL(100.0, b, 1e-12);
    CHECK_INT(0, nc_range_nice(10, 10, 5, true, &a, &b, &err));
    CHECK_REL(1.0, a, 1e-12);
    CHECK_REL(100.0, b, 1e-12);
    CHECK_INT(NC_EINVAL, nc_range_nice(-1, 10, 5, true, &a, &b, &err));
    CHECK_STR("log data range [-1, 10]: expected lo > 0", err.msg);
    /* the padded range ends on ticks of itself */
    CHECK_INT(0, nc_range_nice(-0.731, 0.385, 5, false, &a, &b, &err));
    nc_ticks t;
    CHECK_INT(0, nc_ticks_linear(a, b, 5, &t, NULL));
    CHECK_REL(a, t.v[0], 1e-9);
    CHECK_REL(b, t.v[t.n - 1], 1e-9);
}

/* ------------------------------------------------------------------ */
/* Density                                                             */
/* ------------------------------------------------------------------ */

static void test_density_geometry(void)
{
    nc_density *d = NULL;
    nc_err err = {0};
    /* 8 x 4 pixels over x [-2, 2] (0.5 per column), y [-1, 1] (0.5 per row) */
    CHECK_INT(0, nc_density_alloc(8, 4, -2, 2, -1, 1, false, &d, &err));
    CHECK(d->rgb == NULL);
    nc_density_add(d, -1.9, 0.9);   /* column 0, row 0 (top) */
    nc_density_add(d, 0.1, -0.1);   /* column 4, row 2 */
    nc_density_add(d, 0.1, -0.1);   /* again */
    nc_density_add(d, 2.0, -1.0);   /* closed edges: last column, bottom row */
    nc_density_add(d, -2.0, 1.0);   /* left and top edges: column 0, row 0 */
    nc_density_add(d, 0.2385, 0.0); /* column 4; y = 0 between rows 1 and 2: above */
    nc_density_add(d, 0.5, -0.7);   /* x = 0.5 between columns 4 and 5: left */
    CHECK_INT(2, d->count[0]);
    CHECK_INT(2, d->count[2 * 8 + 4]);
    CHECK_INT(1, d->count[1 * 8 + 4]);
    CHECK_INT(1, d->count[3 * 8 + 4]);
    CHECK_INT(1, d->count[3 * 8 + 7]);
    CHECK_INT(7, nc_density_total(d, NULL));
    CHECK_INT(0, d->outside);
    /* outside and non-finite points are counted, not drawn */
    nc_density_add(d, 2.0000001, 0);
    nc_density_add(d, 0, -1.0000001);
    nc_density_add(d, NAN, 0);
    nc_density_add(d, 0, NAN);
    nc_density_add(d, INFINITY, 0);
    nc_density_add(d, 0, -INFINITY);
    nc_density_add(d, 1e300, 1e300);
    CHECK_INT(7, d->outside);
    uint32_t mx = 0;
    CHECK_INT(7, nc_density_total(d, &mx));
    CHECK_INT(2, mx);
    CHECK_INT(-1, nc_density_pixel(d, NAN, NAN));
    CHECK_INT(3 * 8 + 7, nc_density_pixel(d, 2.0, -1.0));
    nc_density_clear(d);
    CHECK_INT(0, nc_density_total(d, NULL));
    CHECK_INT(0, d->outside);
    nc_density_free(d);
    nc_density_free(NULL);

    CHECK_INT(NC_EINVAL, nc_density_alloc(0, 4, -2, 2, -1, 1, false, &d, &err));
    CHECK_STR("density raster 0 x 4, expected 1 to 65536 pixels a side", err.msg);
    CHECK(d == NULL);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_density_alloc(4, 4, 1, 1, -1, 1, false, &d, &err));
    CHECK_STR("density range x [1, 1], y [-1, 1]: expected finite, increasing bounds", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_density_alloc(4, 4, 0, 1, -1, NAN, false, &d, &err));
}

static void test_density_merge(void)
{
    nc_density *a = NULL, *b = NULL;
    CHECK_INT(0, nc_density_alloc(5, 3, 0, 5, 0, 3, true, &a, NULL));
    CHECK_INT(0, nc_density_alloc(5, 3, 0, 5, 0, 3, true, &b, NULL));
    const float red[3] = {0.9f, 0.1f, 0.2f}, teal[3] = {0.1f, 0.6f, 0.55f};
    nc_density_add_rgb(a, 0.5, 2.5, red);  /* pixel 0 */
    nc_density_add_rgb(b, 0.5, 2.5, teal); /* pixel 0 */
    nc_density_add_rgb(b, 4.5, 0.5, teal); /* pixel 14 */
    nc_density_add_rgb(b, -1, 0.5, teal);  /* outside */
    nc_density_add(a, 9, 9);               /* outside */
    nc_density_merge(a, b);
    CHECK_INT(2, a->count[0]);
    CHECK_INT(1, a->count[14]);
    CHECK_INT(2, a->outside);
    CHECK_REL(1.0, a->rgb[0], 1e-6);
    CHECK_REL(0.7, a->rgb[1], 1e-6);
    CHECK_REL(0.75, a->rgb[2], 1e-6);
    CHECK_REL(0.55, a->rgb[3 * 14 + 2], 1e-6);
    /* counters saturate instead of wrapping, in add and in merge */
    a->count[5] = UINT32_MAX - 1;
    b->count[5] = 7;
    nc_density_merge(a, b);
    CHECK(a->count[5] == UINT32_MAX);
    nc_density_add(a, 0.5, 1.5); /* pixel 5 */
    CHECK(a->count[5] == UINT32_MAX);
    b->count[6] = UINT32_MAX;
    nc_density_add(b, 1.5, 1.5); /* pixel 6 */
    CHECK(b->count[6] == UINT32_MAX);
    nc_density_free(a);
    nc_density_free(b);
}

/* ------------------------------------------------------------------ */
/* Figures                                                             */
/* ------------------------------------------------------------------ */

/* Pixel (x, y) of a decoded image. */
typedef struct px4 {
    int r, g, b, a;
} px4;

static px4 pixel(const nc_png_image *img, int x, int y)
{
    const unsigned char *p = img->rgba + ((size_t)y * img->width + x) * 4;
    return (px4){p[0], p[1], p[2], p[3]};
}

static int near_rgb(px4 p, nc_rgb c, int tol)
{
    return abs(p.r - (int)lround(255 * c.r)) <= tol && abs(p.g - (int)lround(255 * c.g)) <= tol &&
           abs(p.b - (int)lround(255 * c.b)) <= tol;
}

/* The test figure: 6.4 x 4.8 in at 100 dpi (640 x 480), one panel over
 * x [-3, 3], y [-2, 2], no grid, no legend entries. */
enum { NCURVE = 200 };
static double cx[NCURVE], ya[NCURVE], yb[NCURVE];
static const nc_rgb DENSITY_RGB = {0.298, 0.447, 0.690}; /* 0x4c72b0 */
static const char *const META[] = {"Software", "normcmp test", "Layer", "blocks.3.norm1",
                                   "DyT", "alpha=0.385", "Command",
                                   "normcmp plot a.npy --figure scatter --title 'a<b & c'",
                                   NULL};

static nc_panel test_panel(void)
{
    for (int i = 0; i < NCURVE; i++) {
        cx[i] = -3.5 + 7.0 * i / (NCURVE - 1);
        ya[i] = 1.2;                /* curve A: a horizontal line */
        yb[i] = 0.4 * cx[i] - 0.3; /* curve B: a slanted line */
    }
    static nc_curve curves[2];
    curves[0] = (nc_curve){cx, ya, NCURVE, {0.835, 0.369, 0.0}, 3.0, false, 0, 0, NULL};
    curves[1] = (nc_curve){cx, yb, NCURVE, {0.0, 0.620, 0.451}, 3.0, false, 0, 0, NULL};
    return (nc_panel){.title = "test panel",
                      .xlabel = "input x",
                      .ylabel = "output y",
                      .x0 = -3,
                      .x1 = 3,
                      .y0 = -2,
                      .y1 = 2,
                      .density_color = DENSITY_RGB,
                      .curves = curves,
                      .ncurves = 2};
}

static nc_figure test_figure(const nc_panel *p)
{
    return (nc_figure){.width_in = 6.4,
                       .height_in = 4.8,
                       .dpi = 100,
                       .rows = 1,
                       .cols = 1,
                       .panels = p,
                       .npanels = 1,
                       .meta = META};
}

/* Fills the block x [1, 2] x y [-1.5, -1] with 5 points per pixel (every
 * pixel there at the largest count: full opacity), and one lone point at
 * (-2.0385, -1.4615), off the lines between pixels. */
static void fill_test_density(nc_density *d)
{
    for (int j = 0; j < d->h; j++)
        for (int i = 0; i < d->w; i++) {
            double x = d->x0 + (i + 0.5) / d->sx, y = d->y1 - (j + 0.5) / d->sy;
            if (x >= 1 && x <= 2 && y >= -1.5 && y <= -1)
                for (int k = 0; k < 5; k++)
                    nc_density_add(d, x, y);
        }
    nc_density_add(d, -2.0385, -1.4615);
}

static void test_figure_png(void)
{
    nc_panel p = test_panel();
    nc_figure fig = test_figure(&p);
    nc_err err = {0};
    nc_rect a;
    CHECK_INT(0, nc_figure_layout(&fig, 0, &a, &err));
    int w = 0, h = 0;
    CHECK_INT(0, nc_figure_data_area(&fig, 0, &w, &h, &err));
    CHECK_INT(a.w, w);
    CHECK_INT(a.h, h);
    /* the area sits inside the figure with room for the text around it */
    CHECK(a.x > 30 && a.y > 15 && a.x + a.w < 640 && a.y + a.h < 480 - 30);
    CHECK(a.w > 450 && a.h > 330);

    nc_density *d = NULL;
    CHECK_INT(0, nc_density_alloc(w, h, p.x0, p.x1, p.y0, p.y1, false, &d, &err));
    fill_test_density(d);
    p.density = d;
    /* the layout does not depend on the data */
    nc_rect a2;
    CHECK_INT(0, nc_figure_layout(&fig, 0, &a2, &err));
    CHECK(memcmp(&a, &a2, sizeof a) == 0);

    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    nc_png_image img;
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, &err));
    CHECK_INT(640, img.width); /* inches * dpi */
    CHECK_INT(480, img.height);
    CHECK_STR("normcmp test", nc_png_text(&img, "Software"));
    CHECK_STR("blocks.3.norm1", nc_png_text(&img, "Layer"));
    CHECK_STR("alpha=0.385", nc_png_text(&img, "DyT"));

    /* background: white and opaque in every corner */
    nc_rgb white = {1, 1, 1};
    CHECK(near_rgb(pixel(&img, 0, 0), white, 0) && pixel(&img, 0, 0).a == 255);
    CHECK(near_rgb(pixel(&img, 639, 479), white, 0));
    CHECK(near_rgb(pixel(&img, 639, 0), white, 0));

    /* the cloud: its full colour inside the block, white where no points */
    double px, py;
    int inside_ok = 0, n_inside = 0;
    for (double x = 1.1; x <= 1.9; x += 0.1)
        for (double y = -1.45; y <= -1.05; y += 0.1) {
            nc_panel_to_pixel(&p, &a, x, y, &px, &py);
            inside_ok += near_rgb(pixel(&img, (int)px, (int)py), DENSITY_RGB, 2);
            n_inside++;
        }
    CHECK_INT(n_inside, inside_ok);
    int empty_ok = 0, n_empty = 0;
    for (double x = -2.8; x <= -0.5; x += 0.25)
        for (double y = -1.9; y <= -0.5; y += 0.2) {
            if (fabs(y - (0.4 * x - 0.3)) < 0.25 || (fabs(x + 2) < 0.1 && fabs(y + 1.45) < 0.1))
                continue; /* curve B and the lone point */
            nc_panel_to_pixel(&p, &a, x, y, &px, &py);
            empty_ok += near_rgb(pixel(&img, (int)px, (int)py), white, 0);
            n_empty++;
        }
    CHECK_INT(n_empty, empty_ok);
    /* the lone point: a 3 x 3 px dot (1 pt is 1.4 px at 100 dpi) of the
     * floor colour, the core mixed with white to a contrast of 3:1 */
    nc_panel_to_pixel(&p, &a, -2.0385, -1.4615, &px, &py);
    px4 lone = pixel(&img, (int)px, (int)py);
    nc_rgb want = nc_raster_floor(DENSITY_RGB);
    CHECK(near_rgb(lone, want, 2));
    CHECK(near_rgb(pixel(&img, (int)px + 1, (int)py + 1), want, 2));
    CHECK(near_rgb(pixel(&img, (int)px + 2, (int)py), white, 0));
    double lum = 0;
    const double c3[3] = {lone.r / 255.0, lone.g / 255.0, lone.b / 255.0}, wt[3] = {0.2126, 0.7152,
                                                                                   0.0722};
    for (int k = 0; k < 3; k++)
        lum += wt[k] * (c3[k] <= 0.04045 ? c3[k] / 12.92 : pow((c3[k] + 0.055) / 1.055, 2.4));
    CHECK_ABS(3.0, 1.05 / (lum + 0.05), 0.05); /* WCAG contrast on white */

    /* the curves: their colour along their centre line */
    int a_ok = 0, b_ok = 0, n = 0;
    for (double x = -2.8; x <= 2.8; x += 0.2, n++) {
        nc_panel_to_pixel(&p, &a, x, 1.2, &px, &py);
        a_ok += near_rgb(pixel(&img, (int)px, (int)py), p.curves[0].color, 3);
        nc_panel_to_pixel(&p, &a, x, 0.4 * x - 0.3, &px, &py);
        b_ok += near_rgb(pixel(&img, (int)px, (int)py), p.curves[1].color, 3);
    }
    CHECK_INT(n, a_ok);
    CHECK_INT(n, b_ok);
    /* and not away from it */
    nc_panel_to_pixel(&p, &a, 0, 1.6, &px, &py);
    CHECK(near_rgb(pixel(&img, (int)px, (int)py), white, 0));

    /* the frame just outside the area, dark; tick labels below it */
    px4 f = pixel(&img, a.x - 1, a.y + a.h / 2);
    CHECK(f.r < 80 && f.g < 80 && f.b < 80);
    int dark = 0;
    for (int y = a.y + a.h + 8; y < a.y + a.h + 25 && y < 480; y++)
        for (int x = a.x; x < a.x + a.w; x++)
            dark += pixel(&img, x, y).r < 128;
    CHECK(dark > 100); /* seven tick labels' worth of glyph pixels */
    nc_png_image_free(&img);

    /* PDF and SVG: render without error and start as they should */
    mb.len = 0;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PDF, &s, &err));
    CHECK(mb.len > 1000 && memcmp(mb.data, "%PDF", 4) == 0);
    CHECK(memmem(mb.data, mb.len, "Software: normcmp test", 22) != NULL); /* Keywords */
    CHECK(memmem(mb.data, mb.len, "/Creator (normcmp test)", 23) != NULL);
    mb.len = 0;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_SVG, &s, &err));
    CHECK(mb.len > 1000 && memcmp(mb.data, "<?xml", 5) == 0);
    CHECK(memmem(mb.data, mb.len, "<svg", 4) != NULL);
    /* the metadata: an element right after the start tag, a command's "--" as it is */
    const char *svg = memmem(mb.data, mb.len, "<svg", 4);
    const char *tag_end = svg ? memchr(svg, '>', mb.len - (size_t)(svg - (const char *)mb.data))
                              : NULL;
    const char *md = "\n<metadata>\nSoftware: normcmp test\nLayer: blocks.3.norm1\n";
    CHECK(tag_end && strncmp(tag_end + 1, md, strlen(md)) == 0);
    const char *cmd = "Command: normcmp plot a.npy --figure scatter --title 'a&lt;b &amp; c'\n";
    CHECK(memmem(mb.data, mb.len, cmd, strlen(cmd)) != NULL);
    CHECK(memmem(mb.data, mb.len, "<!--", 4) == NULL);
    CHECK(memmem(mb.data, mb.len, "width=\"460.8pt\" height=\"345.6pt\"", 32) != NULL);
    CHECK(memmem(mb.data, mb.len, "<image", 6) != NULL); /* the cloud, as an image */
    nc_membuf_free(&mb);
    nc_density_free(d);
}

/* At 200 dpi a lone point becomes a 3 x 3 dot of its colour. */
static void test_dot_spread(void)
{
    nc_panel p = test_panel();
    p.ncurves = 0;
    p.title = p.xlabel = p.ylabel = NULL;
    nc_figure fig = test_figure(&p);
    fig.dpi = 200;
    fig.width_in = 3.2;
    fig.height_in = 2.4;
    fig.meta = NULL;
    nc_rect a;
    nc_density *d = NULL;
    CHECK_INT(0, nc_figure_layout(&fig, 0, &a, NULL));
    CHECK_INT(0, nc_density_alloc(a.w, a.h, p.x0, p.x1, p.y0, p.y1, false, &d, NULL));
    nc_density_add(d, 0.385, -0.5);
    p.density = d;
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_png_image img;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, NULL));
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, NULL));
    CHECK_INT(640, img.width);
    int pix = (int)nc_density_pixel(d, 0.385, -0.5), i = pix % a.w, j = pix / a.w;
    int x = a.x + i, y = a.y + j, coloured = 0;
    for (int dy = -3; dy <= 3; dy++)
        for (int dx = -3; dx <= 3; dx++) {
            px4 q = pixel(&img, x + dx, y + dy);
            int is_dot = abs(dx) <= 1 && abs(dy) <= 1;
            int white = q.r == 255 && q.g == 255 && q.b == 255;
            coloured += is_dot ? !white : 0;
            CHECK(is_dot || white);
        }
    CHECK_INT(9, coloured);
    nc_png_image_free(&img);
    nc_membuf_free(&mb);
    nc_density_free(d);
}

/* A raster of another size and range than the data area is placed by its
 * own range: half the resolution over x [0, 3], y [-2, 0] (the lower right
 * quarter of the panel). */
static void test_density_placed(void)
{
    nc_panel p = test_panel();
    p.ncurves = 0;
    nc_figure fig = test_figure(&p);
    nc_rect a;
    nc_density *d = NULL;
    CHECK_INT(0, nc_figure_layout(&fig, 0, &a, NULL));
    CHECK_INT(0, nc_density_alloc(a.w / 4, a.h / 4, 0, 3, -2, 0, false, &d, NULL));
    fill_test_density(d); /* the block x [1, 2] x y [-1.5, -1], and a point outside it */
    CHECK_INT(1, d->outside);
    p.density = d;
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_png_image img;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, NULL));
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, NULL));
    double px, py;
    int in_ok = 0, out_ok = 0, n = 0;
    for (double x = 1.15; x <= 1.85; x += 0.1)
        for (double y = -1.4; y <= -1.1; y += 0.1, n++) {
            nc_panel_to_pixel(&p, &a, x, y, &px, &py);
            in_ok += near_rgb(pixel(&img, (int)px, (int)py), DENSITY_RGB, 2);
            nc_panel_to_pixel(&p, &a, x - 1.0, y + 0.3, &px, &py); /* left of the block */
            out_ok += near_rgb(pixel(&img, (int)px, (int)py), (nc_rgb){1, 1, 1}, 0);
        }
    CHECK_INT(n, in_ok);
    CHECK_INT(n, out_ok);
    nc_png_image_free(&img);
    nc_membuf_free(&mb);
    nc_density_free(d);
}

/* Transparent background: RGBA, and anti-aliased edge pixels come back
 * un-premultiplied to the curve's own colour. */
static void test_transparent(void)
{
    nc_panel p = test_panel();
    nc_figure fig = test_figure(&p);
    fig.transparent = true;
    nc_rect a;
    CHECK_INT(0, nc_figure_layout(&fig, 0, &a, NULL));
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_png_image img;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, NULL));
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, NULL));
    CHECK_INT(0, pixel(&img, 0, 0).a);
    CHECK_INT(0, pixel(&img, 639, 479).a);
    /* down the column at x = 0.385 across curve A: opaque centre, partly
     * covered edges, all in the curve's colour */
    double px, py;
    nc_panel_to_pixel(&p, &a, 0.385, 1.2, &px, &py);
    int partial = 0, centre_ok = 0;
    for (int y = (int)py - 6; y <= (int)py + 6; y++) {
        px4 q = pixel(&img, (int)px, y);
        if (q.a == 255)
            centre_ok += near_rgb(q, p.curves[0].color, 1);
        else if (q.a >= 40) {
            partial++;
            CHECK(near_rgb(q, p.curves[0].color, 255 / q.a + 2));
        }
    }
    CHECK(centre_ok >= 3);
    CHECK(partial >= 1);
    nc_png_image_free(&img);
    nc_membuf_free(&mb);
}

/* A 2 x 3 grid with three panels: areas line up by column and row, do not
 * overlap, and empty cells stay empty. */
static void test_grid_layout(void)
{
    nc_panel ps[5];
    for (int k = 0; k < 5; k++)
        ps[k] = (nc_panel){.x0 = -1, .x1 = 1 + k, .y0 = 0, .y1 = 10 * (k + 1), .grid = k % 2};
    ps[0].ylabel = "a long y label";
    ps[4].title = "a title";
    ps[1].ylog = true;
    ps[1].y0 = 1e-3;
    nc_figure fig = {.width_in = 9, .height_in = 6, .dpi = 80, .rows = 2, .cols = 3,
                     .panels = ps, .npanels = 5, .title = "suptitle"};
    nc_rect r[5];
    for (size_t k = 0; k < 5; k++)
        CHECK_INT(0, nc_figure_layout(&fig, k, &r[k], NULL));
    CHECK_INT(r[0].x, r[3].x);
    CHECK_INT(r[1].x, r[4].x);
    CHECK_INT(r[0].y, r[1].y);
    CHECK_INT(r[1].y, r[2].y);
    CHECK_INT(r[3].y, r[4].y);
    for (size_t k = 1; k < 5; k++) {
        CHECK_INT(r[0].w, r[k].w);
        CHECK_INT(r[0].h, r[k].h);
    }
    CHECK(r[0].x + r[0].w < r[1].x && r[1].x + r[1].w < r[2].x);
    CHECK(r[0].y + r[0].h < r[3].y);
    CHECK(r[2].x + r[2].w <= 720 && r[3].y + r[3].h <= 480);
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    nc_png_image img;
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, NULL));
    int nonwhite = 0; /* the sixth cell, right of panel 4 */
    for (int y = r[4].y; y < r[4].y + r[4].h; y++)
        for (int x = r[2].x; x < r[2].x + r[2].w; x++)
            nonwhite += pixel(&img, x, y).r != 255;
    CHECK_INT(0, nonwhite);
    CHECK_INT(NC_EINVAL, nc_figure_layout(&fig, 5, &r[0], &err));
    CHECK_STR("figure: panel 5 of 5", err.msg);
    nc_png_image_free(&img);
    nc_membuf_free(&mb);
}

/* Legends, markers, reference lines, log axes and notes render in every
 * format; the SVG comment breaks up "--". */
static void test_everything_renders(void)
{
    /* NaN breaks the line; values near DBL_MAX map beyond double range */
    double x[7] = {0.01, 0.1, 1, 10, 100, 1e308, 1e300}, y[7] = {3, 0.5, 0.02, NAN, 2, 1, 1e-300};
    nc_curve c = {x, y, 7, nc_palette(0), 0, true, NC_MARKER_SQUARE, 0, "sweep"};
    nc_mark m[NC_MARKER_COUNT];
    for (int k = 0; k < NC_MARKER_COUNT; k++)
        m[k] = (nc_mark){0.02 * pow(3, k), 0.1, nc_palette(k), k, 7, "optimum"};
    nc_vline v[2] = {{1.0, nc_palette(1), true, "1/std(x)"}, {1e308, nc_palette(1), true, NULL}};
    nc_hline hl = {0.05, nc_palette(2), false, "bound"};
    nc_panel p = {.title = "log-log \xce\xb1 sweep",
                  .xlabel = "\xce\xb1",
                  .ylabel = "RMSE",
                  .x0 = 0.005,
                  .x1 = 200,
                  .y0 = 1e-3,
                  .y1 = 10,
                  .xlog = true,
                  .ylog = true,
                  .grid = true,
                  .curves = &c,
                  .ncurves = 1,
                  .marks = m,
                  .nmarks = NC_MARKER_COUNT,
                  .vlines = v,
                  .nvlines = 2,
                  .hlines = &hl,
                  .nhlines = 1,
                  .legend_title = "layer 3",
                  .note = "N = 16.8M points"};
    const char *meta[] = {"Command", "normcmp sweep --alpha=1e-2..1e2 -- x", NULL};
    nc_figure fig = {.width_in = 5, .height_in = 3.5, .dpi = 120, .rows = 1, .cols = 1,
                     .panels = &p, .npanels = 1, .meta = meta, .font_pt = 9};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    for (int pos = NC_LEGEND_AUTO; pos <= NC_LEGEND_NONE; pos++) {
        p.legend_pos = pos;
        mb.len = 0;
        CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    }
    mb.len = 0;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PDF, &s, &err));
    CHECK(memcmp(mb.data, "%PDF", 4) == 0);
    mb.len = 0;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_SVG, &s, &err));
    CHECK(memmem(mb.data, mb.len, "Command: normcmp sweep --alpha=1e-2..1e2 -- x\n", 46));
    nc_membuf_free(&mb);
}

/* Values near DBL_MAX on linear axes map beyond double range: they are
 * skipped like NaN, never drawn as garbage or converted to int (run under
 * -fsanitize=float-cast-overflow to see). */
static void test_extreme_values(void)
{
    double x[4] = {-1, 1e308, 0.5, -1e308}, y[4] = {0, 1, 0.25, -1e308};
    nc_curve c = {x, y, 4, nc_palette(0), 0, false, NC_MARKER_CIRCLE, 0, "c"};
    nc_mark m = {1e308, 0, nc_palette(1), NC_MARKER_SQUARE, 0, "m"};
    nc_vline v = {-1e308, nc_palette(2), false, "v"};
    nc_hline h = {1e308, nc_palette(3), false, "h"};
    nc_panel p = {.x0 = -2, .x1 = 2, .y0 = -1, .y1 = 1, .curves = &c, .ncurves = 1,
                  .marks = &m, .nmarks = 1, .vlines = &v, .nvlines = 1, .hlines = &h,
                  .nhlines = 1, .note = "extremes"};
    nc_figure fig = {.width_in = 3, .height_in = 2, .dpi = 100, .rows = 1, .cols = 1,
                     .panels = &p, .npanels = 1};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    mb.len = 0;
    CHECK_INT(0, nc_figure_render(&fig, NC_FMT_PDF, &s, &err));
    nc_membuf_free(&mb);
}

static int fail_write(void *ctx, const void *buf, size_t n, nc_err *err)
{
    (void)ctx;
    (void)buf;
    (void)n;
    return nc_err_set(err, NC_EIO, "fig.out: disk full");
}

static void test_figure_errors(void)
{
    nc_panel p = test_panel();
    nc_figure fig = test_figure(&p);
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};

    p.x1 = -3;
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: panel 0: x range [-3, -3], expected finite x0 < x1", err.msg);
    p = test_panel();
    p.ylog = true;
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: panel 0: log y range [-2, 2], expected y0 > 0", err.msg);
    p = test_panel();
    nc_density *d = NULL;
    CHECK_INT(0, nc_density_alloc(10, 10, 0.1, 1, 0.1, 1, false, &d, NULL));
    p.density = d;
    p.xlog = true;
    p.x0 = 0.1;
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: panel 0: a density cloud needs linear axes (bin log10 of the data "
              "instead)",
              err.msg);
    p = test_panel();
    p.legend_pos = 99;
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: panel 0: legend position 99, note position 0, expected 0 to 12", err.msg);
    p = test_panel();
    fig.dpi = 5;
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: dpi 5, expected 10 to 2400", err.msg);
    fig = test_figure(&p);
    fig.npanels = 2;
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: 2 panels for a 1 x 1 grid", err.msg);
    fig = test_figure(&p);
    fig.width_in = 0.4;
    fig.height_in = 0.3;
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, NC_FMT_PNG, &s, &err));
    CHECK_STR("figure: 0.4 x 0.3 in at 100 dpi leaves no room for 1 x 1 panels and their "
              "text",
              err.msg);
    fig = test_figure(&p);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_figure_render(&fig, (nc_format)7, &s, &err));
    CHECK_STR("figure: output format 7, expected PNG, PDF or SVG", err.msg);
    CHECK_INT(0, mb.len); /* nothing written */

    /* a failing sink: its error comes back, for every format */
    nc_sink bad = {fail_write, NULL};
    for (int fmt = NC_FMT_PNG; fmt <= NC_FMT_SVG; fmt++) {
        nc_err_clear(&err);
        CHECK_INT(NC_EIO, nc_figure_render(&fig, (nc_format)fmt, &bad, &err));
        CHECK_STR("fig.out: disk full", err.msg);
    }
    nc_density_free(d);
    nc_membuf_free(&mb);
}

static void test_colours(void)
{
    nc_rgb c = nc_colormap(0);
    CHECK_ABS(0x44 / 255.0, c.r, 1e-12);
    CHECK_ABS(0x01 / 255.0, c.g, 1e-12);
    CHECK_ABS(0x54 / 255.0, c.b, 1e-12);
    c = nc_colormap(1);
    CHECK_ABS(0xfd / 255.0, c.r, 1e-12);
    CHECK_ABS(0xe7 / 255.0, c.g, 1e-12);
    CHECK_ABS(0x25 / 255.0, c.b, 1e-12);
    c = nc_colormap(0.5); /* between entries 127 (21908d) and 128 (21918c) */
    CHECK_ABS(0x21 / 255.0, c.r, 1e-12);
    CHECK_ABS(0x90 / 255.0 + 0.5 / 255.0, c.g, 1e-12);
    CHECK_ABS(0x8c / 255.0 + 0.5 / 255.0, c.b, 1e-12);
    c = nc_colormap(NAN);
    CHECK_ABS(0x44 / 255.0, c.r, 1e-12);
    c = nc_colormap(7.5);
    CHECK_ABS(0xfd / 255.0, c.r, 1e-12);
    c = nc_palette(0);
    CHECK_ABS(0x00 / 255.0, c.r, 1e-12);
    CHECK_ABS(0x72 / 255.0, c.g, 1e-12);
    CHECK_ABS(0xb2 / 255.0, c.b, 1e-12);
    c = nc_palette(1);
    CHECK_ABS(0xd5 / 255.0, c.r, 1e-12);
    nc_rgb c8 = nc_palette(8), cm1 = nc_palette(-1), c7 = nc_palette(7);
    CHECK(c8.r == nc_palette(0).r && c8.g == nc_palette(0).g && c8.b == nc_palette(0).b);
    CHECK(cm1.r == c7.r && cm1.g == c7.g && cm1.b == c7.b);
    c = nc_rgb_hex(0x4c72b0);
    CHECK_ABS(0x4c / 255.0, c.r, 1e-12);
    CHECK_ABS(0xb0 / 255.0, c.b, 1e-12);
}

/* LeakSanitizer (SANITIZE=1): fontconfig, which cairo's toy font API loads,
 * keeps its configuration and font patterns for the life of the process by
 * design; nothing of ours is suppressed. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\n";
}

int main(void)
{
    test_nice_step();
    test_linear_properties();
    test_linear_labels();
    test_log_ticks();
    test_ranges();
    test_density_geometry();
    test_density_merge();
    test_figure_png();
    test_dot_spread();
    test_density_placed();
    test_transparent();
    test_grid_layout();
    test_everything_renders();
    test_extreme_values();
    test_figure_errors();
    test_colours();
    return CHECK_DONE();
}
