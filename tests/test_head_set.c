/* Heads past a machine word: a set of heads holds every head of the largest
 * model the loader accepts, and a model of more heads is refused with a
 * message; a network of 40 heads in all (two attention layers of 20, five
 * transformer blocks of 8) and one of 128 (eight blocks of 16) run their
 * passes and their key/value caches with heads 39, 67 and 127 switched off:
 * switching one off changes the logits, switching none off (an empty set)
 * gives the bits of no ablation at all, and the cache gives the forward's
 * logits. Then heads as users name them, "H" and "L:H", and the one message
 * an out-of-range head gets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/generate.h"
#include "storylm/head_list.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static void set_helpers(void) {
    HeadSet s = {0}, t = {0};
    CHECK(slm_head_set_empty(&s) && slm_head_set_last(&s) == -1 && slm_head_set_count(&s) == 0);
    int heads[] = {0, 31, 32, 39, 63, 64, 67, 127, STORYLM_MAX_ALL_HEADS - 1};
    for (int i = 0; i < 9; i++) slm_head_set_add(&s, heads[i]);
    slm_head_set_add(&s, -1), slm_head_set_add(&s, STORYLM_MAX_ALL_HEADS); /* outside: left out */
    CHECK(slm_head_set_count(&s) == 9 && slm_head_set_last(&s) == STORYLM_MAX_ALL_HEADS - 1);
    for (int i = 0; i < 9; i++) CHECK(slm_head_set_has(&s, heads[i]));
    CHECK(!slm_head_set_has(&s, 1) && !slm_head_set_has(&s, 66) && !slm_head_set_has(&s, -1) &&
          !slm_head_set_has(&s, STORYLM_MAX_ALL_HEADS));
    CHECK(slm_head_set_layer(&s, 0, 32) == (1u | 1u << 31) &&
          slm_head_set_layer(&s, 1, 32) == (1u | 1u << 7 | 1u << 31));
    CHECK(slm_head_set_layer(&s, 4, 16) == (1u | 1u << 3) && slm_head_set_layer(&s, 7, 16) == 1u << 15);
    slm_head_set_add_layer(&t, 7, 16);
    CHECK(slm_head_set_count(&t) == 16 && slm_head_set_layer(&t, 7, 16) == 0xffffu && !slm_head_set_equal(&s, &t));
    slm_head_set_add_all(&t, &s);
    CHECK(slm_head_set_count(&t) == 9 + 15);
}

/* The bound covers both networks' largest, and a model of more is refused by name. */
static void more_heads_than_the_bound_are_refused(void) {
    CHECK(STORYLM_MAX_ALL_HEADS >= STORYLM_MAX_TF_LAYERS * STORYLM_MAX_HEADS);
    CHECK(STORYLM_MAX_ALL_HEADS >= STORYLM_MAX_LAYERS * STORYLM_MAX_HEADS);
    Model m;
    Error e;
    ModelConfig c = slm_model_config_default(&slm_transformer_arch, 50);
    c.row_dim = 8, c.key_dim = c.value_dim = 2, c.hidden_dim = 8, c.window = 8;
    c.n_layers = STORYLM_MAX_TF_LAYERS, c.n_heads = STORYLM_MAX_HEADS; /* the largest: accepted */
    CHECK(slm_model_init(&m, &c, &e) == 0);
    slm_model_free(&m);
    c.n_heads = STORYLM_MAX_HEADS + 1;
    CHECK(slm_model_init(&m, &c, &e) == -1 && strstr(e.message, "33 heads") != NULL);
    c.n_heads = STORYLM_MAX_HEADS, c.n_layers = STORYLM_MAX_TF_LAYERS + 1;
    CHECK(slm_model_init(&m, &c, &e) == -1);
    ModelConfig a = slm_model_config_default(&slm_attention_arch, 50);
    a.n_layers = STORYLM_MAX_LAYERS, a.n_heads = STORYLM_MAX_HEADS;
    CHECK(slm_model_init(&m, &a, &e) == 0);
    slm_model_free(&m);
    a.n_heads = STORYLM_MAX_HEADS + 1;
    CHECK(slm_model_init(&m, &a, &e) == -1 && strstr(e.message, "33 heads") != NULL);
}

/* A network of c's sizes with random weights: the forward with ab (NULL:
 * none) into logits (n, V) of ids (n). */
static void forward_logits(const Model *m, const int32_t *ids, int n, const Ablation *ab, float *logits) {
    Activations a;
    Batch b;
    Error e;
    CHECK(slm_activations_init(&a, &m->cfg, n, &e) == 0 && slm_batch_init(&b, n, 1, &e) == 0 &&
          slm_batch_add(&b, ids, n, &e) == 0);
    CHECK(slm_model_forward(m, &a, &b, ab, NULL, &e) == 0);
    memcpy(logits, a.logits, (size_t)n * m->cfg.vocab_size * sizeof(float));
    slm_batch_free(&b);
    slm_activations_free(&a);
}

/* c's network: head `off` switched off changes the logits, no head (an
 * empty set) changes no bit, and the key/value cache gives the forward's
 * logits with it off; the backward runs with it off. */
static void switch_off(const ModelConfig *c, int off, const char *what) {
    enum { N = 12 };
    int32_t ids[N];
    Model m;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 5);
    for (int i = 0; i < N; i++) ids[i] = (int32_t)slm_rng_below(&rng, (uint64_t)c->vocab_size);
    CHECK(slm_model_init(&m, c, &e) == 0);
    slm_model_randomize(&m, 3);
    size_t V = (size_t)c->vocab_size;
    float *none = malloc(N * V * sizeof(float)), *empty = malloc(N * V * sizeof(float)),
          *ablated = malloc(N * V * sizeof(float));
    Ablation nothing = {0}, one = {0};
    slm_head_set_add(&one.heads, off);
    forward_logits(&m, ids, N, NULL, none);
    forward_logits(&m, ids, N, &nothing, empty);
    forward_logits(&m, ids, N, &one, ablated);
    if (!CHECK(memcmp(none, empty, N * V * sizeof(float)) == 0))
        fprintf(stderr, "  %s: an empty set of heads changes the logits\n", what);
    double moved = 0;
    for (size_t i = 0; i < N * V; i++) moved = fmax(moved, fabs(ablated[i] - none[i]));
    if (!CHECK(moved > 1e-6)) fprintf(stderr, "  %s: head %d switched off changes nothing\n", what, off);
    Generator g;
    double worst = 0;
    CHECK(slm_generator_init(&g, &m, &one, &e) == 0);
    for (int p = 0; p < N; p++) {
        const float *logits = slm_generator_feed(&g, ids[p]);
        for (size_t v = 0; v < V; v++) worst = fmax(worst, fabs(logits[v] - ablated[p * V + v]));
    }
    if (!CHECK(worst < 1e-4)) fprintf(stderr, "  %s: the cache's logits differ by %.3g\n", what, worst);
    slm_generator_free(&g);
    Activations a;
    Batch b;
    float *grads = calloc(m.n_params, sizeof(float));
    CHECK(slm_activations_init(&a, c, N, &e) == 0 && slm_batch_init(&b, N, 1, &e) == 0 &&
          slm_batch_add(&b, ids, N, &e) == 0);
    CHECK(slm_model_loss_and_grad(&m, &a, &b, &one, 1.0f, grads, &e) == 0);
    slm_batch_free(&b);
    slm_activations_free(&a);
    free(grads);
    free(none), free(empty), free(ablated);
    slm_model_free(&m);
}

static void many_heads(void) {
    ModelConfig a = slm_model_config_default(&slm_attention_arch, 40);
    a.n_layers = 2, a.n_heads = 20, a.window = 16; /* 40 heads in all */
    switch_off(&a, 39, "attention, 2 layers of 20");
    ModelConfig t = slm_model_config_default(&slm_transformer_arch, 40);
    t.row_dim = 16, t.key_dim = t.value_dim = 4, t.hidden_dim = 16, t.window = 16;
    t.n_layers = 5, t.n_heads = 8; /* 40 */
    switch_off(&t, 39, "transformer, 5 blocks of 8");
    t.n_layers = 8, t.n_heads = 16; /* 128 */
    switch_off(&t, 67, "transformer, 8 blocks of 16");
    switch_off(&t, 127, "transformer, 8 blocks of 16");
}

/* e's message as the front end of style says it. */
static const char *said(const Error *e, ErrorStyle style) {
    static char buf[2048];
    return slm_error_text(e, style, buf, sizeof buf);
}

/* Heads as users write them, against the model's layers and heads; an error
 * names the parameter, each front end in its own words. */
static void names(void) {
    ModelConfig one = slm_model_config_default(&slm_attention_arch, 50), two = one;
    two.n_layers = 2;
    ModelConfig tf = slm_model_config_default(&slm_transformer_arch, 50);
    tf.n_layers = 8, tf.n_heads = 16;
    Error e;
    int l, h;
    CHECK(slm_head_parse("12", &tf, 8, 0, "head", &l, &h, &e) == 0 && l == 8 && h == 12);
    CHECK(slm_head_parse("8:12", &tf, 1, 0, "head", &l, &h, &e) == 0 && l == 8 && h == 12);
    CHECK(slm_head_parse("2:3", &two, 1, 0, "head", &l, &h, &e) == 0 && l == 2 && h == 3);
    CHECK(slm_head_parse("-1", &one, 1, 1, "head", &l, &h, &e) == 0 && l == 1 && h == -1);
    CHECK(slm_head_parse("-1", &one, 1, 0, "head", &l, &h, &e) == -1);
    CHECK(slm_head_parse("8:16", &tf, 1, 0, "head", &l, &h, &e) == -1);
    CHECK(strcmp(said(&e, ERROR_STYLE_CLI), "--head 8:16 is out of range: this model has layers 1 to 8 of heads 0 to "
                                            "15 (L:H, e.g. 8:15)") == 0);
    CHECK(strcmp(said(&e, ERROR_STYLE_JSON), "\"head\": \"8:16\" is out of range: this model has layers 1 to 8 of "
                                             "heads 0 to 15 (L:H, e.g. 8:15)") == 0);
    CHECK(slm_head_parse("8", &one, 1, 0, "head", &l, &h, &e) == -1);
    CHECK(strcmp(said(&e, ERROR_STYLE_JSON), "\"head\": 8 is out of range: this model has heads 0 to 7") == 0);
    CHECK(slm_head_parse("2:", &two, 1, 0, "head", &l, &h, &e) == -1);
    CHECK(strcmp(said(&e, ERROR_STYLE_CLI), "--head 2: names no head") == 0);
    CHECK(slm_head_parse("3:1", NULL, 1, 0, "head", &l, &h, &e) == 0 && l == 3 && h == 1); /* the form alone */
    HeadSet s;
    CHECK(slm_head_list_parse("1:3,8:15,5:3", &tf, "ablate", &s, &e) == 0 && slm_head_set_count(&s) == 3);
    CHECK(slm_head_set_has(&s, 3) && slm_head_set_has(&s, 127) && slm_head_set_has(&s, 67));
    CHECK(slm_head_list_parse("3,5", &two, "ablate", &s, &e) == 0 && slm_head_set_has(&s, 3) &&
          slm_head_set_has(&s, 5)); /* a plain head: the first layer's, as always */
    CHECK(slm_head_list_parse("3,12", &one, "ablate", &s, &e) == -1);
    CHECK(strcmp(said(&e, ERROR_STYLE_CLI), "--ablate 3,12: head 12 is out of range: this model has heads 0 to 7") ==
          0);
    CHECK(strcmp(said(&e, ERROR_STYLE_PYTHON), "ablate='3,12': head 12 is out of range: this model has heads 0 to 7") ==
          0);
    CHECK(slm_head_list_parse("3:1", &two, "heads", &s, &e) == -1 &&
          strstr(said(&e, ERROR_STYLE_CLI), "--heads 3:1: layer 3 is out of range"));
    CHECK(slm_head_list_parse("3,x", &two, "heads", &s, &e) == -1 &&
          strcmp(said(&e, ERROR_STYLE_CLI), "--heads 3,x is not a list of heads separated by commas") == 0);
    char text[64];
    CHECK(slm_head_list_parse("8:15,1:0", &tf, "ablate", &s, &e) == 0);
    slm_head_list_text(&s, &tf, text, sizeof text);
    CHECK(strcmp(text, "1:0,8:15") == 0);
}

int main(void) {
    set_helpers();
    more_heads_than_the_bound_are_refused();
    many_heads();
    names();
    return check_report();
}
