/* The SAE calls of pyapi_sae.h: slm_sae_load's SAE and slm_sae_encode and
 * slm_sae_decode's passes, a chunk of rows at a time. */
#include "storylm/pyapi_sae.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/sae.h"
#include "storylm/sae_io.h"

struct PySae {
    Sae sae;
    char *model; /* cfg.json's model_name, or NULL */
};

PySae *slm_py_sae_load(const char *dir, Error *e) {
    PySae *s = xcalloc(1, sizeof *s, e);
    if (!s) return NULL;
    if (slm_sae_load(&s->sae, dir, &s->model, e)) return free(s), NULL;
    return s;
}

void slm_py_sae_free(PySae *s) {
    if (!s) return;
    slm_sae_free(&s->sae);
    free(s->model);
    free(s);
}

char *slm_py_sae_config_json(const PySae *s, Error *e) {
    const SaeConfig *c = &s->sae.cfg;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "architecture", slm_sae_architecture(c->kind));
    cJSON_AddNumberToObject(j, "d_in", c->d_in);
    cJSON_AddNumberToObject(j, "d_sae", c->d_sae);
    if (c->kind == SAE_TOPK) cJSON_AddNumberToObject(j, "k", c->k);
    cJSON_AddStringToObject(j, "hook_name", c->hook_name);
    if (s->model)
        cJSON_AddStringToObject(j, "model_name", s->model);
    else
        cJSON_AddNullToObject(j, "model_name");
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!out) FAIL(e, NULL, "out of memory making JSON");
    return out;
}

const float *slm_py_sae_params(const PySae *s, size_t *n) {
    *n = s->sae.n_params;
    return s->sae.params;
}

/* A pass's rows for a call on B: all of them, up to PY_SAE_ROWS (at least 1: a pass of none allocates nothing). */
static int rows_at_once(int B) { return B < 1 ? 1 : B < PY_SAE_ROWS ? B : PY_SAE_ROWS; }

static int check_rows(int B, Error *e) { return B < 0 ? FAIL(e, NULL, "a negative number of rows (%d)", B) : 0; }

/* Rows x (B, d_in) through the SAE in passes of PY_SAE_ROWS: their codes into z (B, d_sae), or,
 * with decode, their reconstructions into out (B, d_in). */
static int sae_rows(const PySae *s, const float *x, int B, int decode, float *out, Error *e) {
    const SaeConfig *c = &s->sae.cfg;
    SaePass p;
    if (check_rows(B, e) || slm_sae_pass_init(&p, c, rows_at_once(B), e)) return -1;
    for (int b = 0; b < B; b += PY_SAE_ROWS) {
        int n = B - b < PY_SAE_ROWS ? B - b : PY_SAE_ROWS;
        slm_sae_encode(&s->sae, &p, x + (size_t)b * c->d_in, n);
        if (decode)
            slm_sae_decode(&s->sae, &p, out + (size_t)b * c->d_in);
        else
            memcpy(out + (size_t)b * c->d_sae, p.z, (size_t)n * c->d_sae * sizeof(float));
    }
    slm_sae_pass_free(&p);
    return 0;
}

int slm_py_sae_encode(const PySae *s, const float *x, int B, float *z, Error *e) { return sae_rows(s, x, B, 0, z, e); }

int slm_py_sae_forward(const PySae *s, const float *x, int B, float *x_hat, Error *e) {
    return sae_rows(s, x, B, 1, x_hat, e);
}

/* a ranks above b in TopK's order: larger, or equal and of a smaller index (sae.c's). */
static int above(float va, int a, float vb, int b) { return va > vb || (va == vb && a < b); }

/* Row z (L)'s nonzero latents into top, largest first (TopK's order); returns how many. */
static int nonzero_sorted(const float *z, int L, int *top) {
    int n = 0;
    for (int j = 0; j < L; j++) {
        if (z[j] == 0.0f) continue;
        int at = n++;
        while (at > 0 && above(z[j], j, z[top[at - 1]], top[at - 1])) top[at] = top[at - 1], at--;
        top[at] = j;
    }
    return n;
}

/* TopK's decoder on any z: each row's nonzero latents, largest first, are
 * the pass's chosen ones, so z from encode decodes to encode's x_hat. */
static int decode_topk(const Sae *sae, const float *z, int B, float *x_hat, Error *e) {
    int L = sae->cfg.d_sae, D = sae->cfg.d_in, widest = 1;
    for (size_t b = 0; b < (size_t)B; b++) {
        int n = 0;
        for (int j = 0; j < L; j++) n += z[b * L + j] != 0.0f;
        if (n > widest) widest = n;
    }
    Sae wide = *sae; /* the same weights; room for every row's nonzero latents */
    wide.cfg.k = widest;
    SaePass p;
    if (slm_sae_pass_init(&p, &wide.cfg, rows_at_once(B), e)) return -1;
    for (int b = 0; b < B; b += PY_SAE_ROWS) {
        int n = B - b < PY_SAE_ROWS ? B - b : PY_SAE_ROWS;
        p.B = n;
        memcpy(p.z, z + (size_t)b * L, (size_t)n * L * sizeof(float));
        for (int r = 0; r < n; r++) {
            p.n_top[r] = nonzero_sorted(p.z + (size_t)r * L, L, p.top + (size_t)r * widest);
            p.start[r] = r * widest; /* each row's first choice in top */
        }
        slm_sae_decode(&wide, &p, x_hat + (size_t)b * D);
    }
    slm_sae_pass_free(&p);
    return 0;
}

int slm_py_sae_decode(const PySae *s, const float *z, int B, float *x_hat, Error *e) {
    const SaeConfig *c = &s->sae.cfg;
    if (check_rows(B, e)) return -1;
    if (c->kind == SAE_TOPK) return decode_topk(&s->sae, z, B, x_hat, e);
    SaePass p;
    if (slm_sae_pass_init(&p, c, rows_at_once(B), e)) return -1;
    for (int b = 0; b < B; b += PY_SAE_ROWS) {
        int n = B - b < PY_SAE_ROWS ? B - b : PY_SAE_ROWS;
        p.B = n;
        memcpy(p.z, z + (size_t)b * c->d_sae, (size_t)n * c->d_sae * sizeof(float));
        slm_sae_decode(&s->sae, &p, x_hat + (size_t)b * c->d_in);
    }
    slm_sae_pass_free(&p);
    return 0;
}
