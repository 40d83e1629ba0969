/* sae features --svg: the latents of a features report (sae_features_json.h)
 * drawn from its JSON, so that the picture shows exactly the numbers --json
 * gives: each latent a block, each of its contexts a row of tokens shaded by
 * the latent's value there (the firing token framed, each value a tooltip),
 * and the tokens its direction promotes and suppresses. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "storylm/sae_features_json.h"
#include "storylm/svg.h"

#define SVG_WIDTH 960.0
#define MARGIN 20.0
#define ROW 22.0
#define FONT 13.0

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double number(const cJSON *o, const char *k) {
    const cJSON *v = item(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
static const char *string(const cJSON *o, const char *k) {
    const cJSON *v = item(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* White to orange (the palette's first colour) as share goes 0 to 1. */
static void shade(double share, char *buf, size_t size) {
    double t = share < 0 ? 0 : share > 1 ? 1 : share;
    snprintf(buf, size, "#%02x%02x%02x", 255, (int)lround(255 - 128 * t), (int)lround(255 - 241 * t));
}

/* One context (its "tokens": [{position, token, value}]) as a row at y; top: the latent's largest value. */
static void context_row(Svg *s, const cJSON *ctx, double y, double top) {
    double x = MARGIN + 60;
    char label[32], fill[8], tip[256];
    snprintf(label, sizeof label, "%.3g", number(ctx, "value"));
    slm_svg_text(s, MARGIN + 52, y + 15, label, FONT - 2, SVG_END, 0, "#555555");
    const cJSON *t;
    cJSON_ArrayForEach(t, item(ctx, "tokens")) {
        const char *piece = string(t, "token");
        int glued = strncmp(piece, "##", 2) == 0;
        const char *text = glued ? piece + 2 : piece;
        double w = slm_svg_text_width(text, FONT) + 8,
               v = number(t, "value"); /* room for a wider font than estimated */
        if (!glued) x += 3;
        if (x + w > SVG_WIDTH - MARGIN) break; /* the row is full */
        int firing = number(t, "position") == number(ctx, "position");
        shade(top > 0 ? v / top : 0, fill, sizeof fill);
        snprintf(tip, sizeof tip, "%s: %.4g", piece, v);
        slm_svg_rect(s, x, y + 2, w, ROW - 4, fill, firing ? "#333333" : "none", tip);
        slm_svg_text(s, x + 4, y + 15, text, FONT, SVG_START, 0, "#000000");
        x += w;
    }
}

/* "promotes: a (+0.12) b ..." of list at y. */
static void token_line(Svg *s, const char *what, const cJSON *list, double y) {
    char line[600];
    size_t used = (size_t)snprintf(line, sizeof line, "%s:", what);
    const cJSON *t;
    cJSON_ArrayForEach(t, list) {
        if (used + 1 >= sizeof line) break;
        used += (size_t)snprintf(line + used, sizeof line - used, "  %s (%+.2f)", string(t, "token"),
                                 number(t, "log_prob_change"));
    }
    slm_svg_text(s, MARGIN + 60, y + 15, line, FONT - 1, SVG_START, 0, "#333333");
}

/* Rows a latent takes: its title, its contexts (or a line saying it has none), promotes, suppresses and a gap. */
static int latent_rows(const cJSON *f) {
    int n = cJSON_GetArraySize(item(f, "contexts"));
    return 4 + (n ? n : 1);
}

int slm_sae_features_svg(const cJSON *j, const char *path, Error *e) {
    const cJSON *features = item(j, "features"), *f;
    int rows = 0;
    cJSON_ArrayForEach(f, features) rows += latent_rows(f);
    Svg s;
    char title[256];
    snprintf(title, sizeof title, "storylm sae features: %s on %s", string(j, "sae"), string(j, "hook_name"));
    slm_svg_begin(&s, SVG_WIDTH, 2 * MARGIN + ROW * (rows + 1), title);
    slm_svg_text(&s, MARGIN, MARGIN + 14, title, FONT + 2, SVG_START, 0, "#000000");
    double y = MARGIN + ROW;
    cJSON_ArrayForEach(f, features) {
        char head[160];
        snprintf(head, sizeof head, "latent %d   density %.3f%%   max %.3g   mean %.3g", (int)number(f, "latent"),
                 100 * number(f, "density"), number(f, "max"), number(f, "mean"));
        slm_svg_text(&s, MARGIN, y + 15, head, FONT + 1, SVG_START, 0, "#1f3b73");
        y += ROW;
        const cJSON *c;
        cJSON_ArrayForEach(c, item(f, "contexts")) context_row(&s, c, y, number(f, "max")), y += ROW;
        if (!cJSON_GetArraySize(item(f, "contexts"))) {
            slm_svg_text(&s, MARGIN + 60, y + 15, "(fires on none of these stories)", FONT - 1, SVG_START, 0,
                         "#555555");
            y += ROW;
        }
        token_line(&s, "promotes", item(f, "promotes"), y), y += ROW;
        token_line(&s, "suppresses", item(f, "suppresses"), y), y += 2 * ROW;
    }
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}
