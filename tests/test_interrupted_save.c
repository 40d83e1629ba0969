/* A save killed at any point leaves a model that resumes: slm_checkpoint_save_all
 * writes the optimizer state to MODEL.adam.safetensors.next, then the model,
 * then renames the state into place. Each moment a kill -9 can leave is made
 * here by hand, and slm_checkpoint_load_all must find the state that pairs with
 * the model on disk, with that save's own numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archs.h"
#include "check.h"
#include "storylm/checkpoint.h"

static const char *path_in_tmp(const char *name) {
    static char buf[4][1024];
    static int turn;
    char *p = buf[turn++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", check_tmpdir(), name);
    return p;
}

/* A small window8 model: only the files matter here, not the sizes. */
static void tiny_model(Model *m) {
    ModelConfig c = slm_model_config_default(&slm_window8_arch, 3);
    c.row_dim = 2, c.hidden_dim = 2, c.context = 2;
    if (slm_model_init(m, &c, NULL)) abort();
    for (size_t i = 0; i < m->n_params; i++) m->params[i] = (float)i;
}

/* The state of a save at `step`: moments that say which step they are from. */
static void state_at(TrainingState *s, const Model *m, uint64_t step) {
    if (slm_training_state_init(s, m, NULL)) abort();
    s->run_id = 0xabc, s->step = step;
    for (size_t i = 0; i < m->n_params; i++) s->adam_m[i] = s->adam_v[i] = (float)step;
}

static void save_all_at(const char *path, const Model *m, uint64_t step) {
    TrainingState s;
    state_at(&s, m, step);
    CHECK(slm_checkpoint_save_all(path, m, "[UNK]\n[EOS]\nthe\n", NULL, &s, NULL) == 0);
    slm_training_state_free(&s);
}

/* The model alone, as the middle of a save at `step` writes it. */
static void save_model_at(const char *path, const Model *m, uint64_t step) {
    Metadata md = {0};
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)step);
    slm_metadata_set(&md, "step", num, NULL);
    slm_metadata_set(&md, "run_id", "0000000000000abc", NULL);
    CHECK(slm_checkpoint_save_model(path, m, "[UNK]\n[EOS]\nthe\n", &md, NULL) == 0);
    slm_metadata_free(&md);
}

static void save_state_at(const char *path, const Model *m, uint64_t step) {
    TrainingState s;
    state_at(&s, m, step);
    CHECK(slm_checkpoint_save_adam(path, m, &s, NULL) == 0);
    slm_training_state_free(&s);
}

/* Loads the pair and says at which step, with moments of that step; -1 when refused. */
static long long resumes_at(const char *path) {
    Model back;
    char *vocab;
    TrainingState s;
    Error e = {0};
    if (slm_checkpoint_load_all(path, &back, &vocab, NULL, &s, &e) != 0) {
        printf("refused: %s\n", e.message);
        return -1;
    }
    long long step = (long long)s.step;
    CHECK(s.adam_m[0] == (float)s.step && s.adam_v[s.n_params - 1] == (float)s.step);
    slm_training_state_free(&s);
    slm_model_free(&back);
    free(vocab);
    return step;
}

int main(void) {
    const char *model = path_in_tmp("saved.safetensors"), *adam = path_in_tmp("saved.adam.safetensors");
    const char *next = path_in_tmp("saved.adam.safetensors.next");
    Model m;
    tiny_model(&m);
    unlink(model), unlink(adam), unlink(next);

    /* killed in the first save, after the model, before its state was renamed */
    save_state_at(next, &m, 1);
    save_model_at(model, &m, 1);
    CHECK(resumes_at(model) == 1);

    /* a whole save leaves no ".next" behind */
    save_all_at(model, &m, 1);
    CHECK(access(next, F_OK) != 0 && resumes_at(model) == 1);

    /* the save of step 2, killed after its state went beside: the old pair stands */
    save_state_at(next, &m, 2);
    CHECK(resumes_at(model) == 1);
    /* ... killed after its model: the model pairs with ".next" */
    save_model_at(model, &m, 2);
    CHECK(resumes_at(model) == 2);
    /* ... and the next whole save goes on from there */
    save_all_at(model, &m, 3);
    CHECK(access(next, F_OK) != 0 && resumes_at(model) == 3);

    /* a model that neither state pairs with is still refused */
    save_state_at(next, &m, 5);
    save_model_at(model, &m, 4);
    CHECK(resumes_at(model) == -1);

    unlink(model), unlink(adam), unlink(next);
    slm_model_free(&m);
    return check_report();
}
