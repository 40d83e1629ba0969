/* generate --steer DIR:LATENT:SCALE: an SAE's latent's decoder row, times
 * SCALE, added at the SAE's hook point while generating (steer.h). Errors
 * name the parameter, so each front end says it in its own words. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/generate.h"
#include "storylm/sae_io.h"
#include "storylm/sae_model.h"
#include "storylm/views.h"

/* e, already set, made to name --steer with the spec given (its message follows the value). */
static int steer_fail(Error *e, const char *spec) {
    if (e && e->message[0] != ':') slm_error_prefix(e, ": ");
    slm_error_set_param(e, ERROR_PARAM_VALUE, "steer", "steer", spec, 1, 0);
    return -1;
}

/* "DIR:LATENT:SCALE" -> dir (size), *latent, *scale; DIR may hold colons. */
static int parse_spec(const char *spec, char *dir, size_t size, int *latent, float *scale, Error *e) {
    const char *b = strrchr(spec, ':'), *a = b;
    while (a && a > spec && *--a != ':') {}
    if (a && *a != ':') a = NULL;
    if (!a || a == spec || (size_t)(a - spec) >= size)
        return FAIL(e, "give the SAE's folder, a latent and a scale, e.g. models/tinystories.sae:12:8",
                    ": is not DIR:LATENT:SCALE");
    char *end;
    errno = 0;
    long l = strtol(a + 1, &end, 10);
    if (end == a + 1 || end != b || errno || l < 0 || l > 1 << 30)
        return FAIL(e, "give the latent as a whole number from 0", ": the latent '%.*s' is not a number from 0",
                    (int)(b - a - 1), a + 1);
    double s = strtod(b + 1, &end);
    if (end == b + 1 || *end || !isfinite(s) || fabs(s) > 1e6)
        return FAIL(e, "give the scale as a number, e.g. 8 or -4", ": the scale '%s' is not a number (at most 1e6)",
                    b + 1);
    memcpy(dir, spec, (size_t)(a - spec));
    dir[a - spec] = 0;
    *latent = (int)l, *scale = (float)s;
    return 0;
}

/* The pass's point called name (sae_model.h's site.point) -> *p, *layer; -1 when none. */
static int point_of(const char *name, HookPoint *p, int *layer) {
    char buf[SAE_HOOK_MAX];
    for (int q = 0; q < HOOK_COUNT; q++)
        for (int l = 0; l < STORYLM_MAX_LAYERS; l++) {
            slm_hook_name((HookPoint)q, l, buf, sizeof buf);
            if (strcmp(buf, name) == 0) return *p = (HookPoint)q, *layer = l, 0;
        }
    return -1;
}

/* One spec's direction into s, its SAE checked against m. */
static int add_spec(Steering *s, const Model *m, const char *spec, Error *e) {
    char dir[4096];
    int latent = 0;
    float scale = 0;
    if (parse_spec(spec, dir, sizeof dir, &latent, &scale, e)) return -1;
    Sae sae = {0};
    SaeSite site;
    HookPoint p = HOOK_EMBED;
    int layer = 0, rc = slm_sae_load(&sae, dir, NULL, e) || slm_sae_site(m, sae.cfg.hook_name, &site, e);
    if (!rc && site.d_in != sae.cfg.d_in)
        rc = FAIL(e, "steer with an SAE trained on this model", ": the SAE reads %d numbers at %s, the model has %d",
                  sae.cfg.d_in, site.name, site.d_in);
    if (!rc && latent >= sae.cfg.d_sae)
        rc = FAIL(e, "give a latent of the SAE", ": latent %d is out of range (the SAE has %d)", latent, sae.cfg.d_sae);
    if (!rc && point_of(site.point, &p, &layer))
        rc = FAIL(e, NULL, ": the hook point %s is not one the generator knows", site.point);
    if (!rc && scale != 0.0f) /* a scale of 0 adds nothing: the generation unsteered, bit for bit */
        rc = slm_steering_add(s, p, layer, sae.W_dec + (size_t)latent * sae.cfg.d_in, sae.cfg.d_in, scale, e);
    slm_sae_free(&sae);
    return rc;
}

int slm_view_steer(GeneratorBatch *g, const Model *m, const char *const *specs, int n, Error *e) {
    Steering s = {0};
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) /* the batch checks each point as it comes */
        if (add_spec(&s, m, specs[i], e) || slm_generator_batch_steer(g, &s, e)) rc = steer_fail(e, specs[i]);
    slm_steering_free(&s);
    return rc;
}
