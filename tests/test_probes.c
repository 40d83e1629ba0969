/* The probes on hand-built models and hand-written stories: a switched-off
 * head really brings 0 or its mean; heads that carry nothing change nothing
 * when switched off; Tool 1's numbers are the attention arithmetic done by
 * hand; heroes, their mentions and renaming found where a reader finds them;
 * the report and SVG writers print what they were given, escaped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/adam.h"
#include "storylm/generate.h"
#include "storylm/probes.h"
#include "storylm/report.h"
#include "storylm/svg.h"

/* A small random model: 12 tokens, rows of 6, 3 heads of 4 (query, key) and 5 (value). */
static void small_model(Model *m, uint64_t seed) {
    ModelConfig c = {.arch = &slm_attention_arch,
                     .vocab_size = 12,
                     .row_dim = 6,
                     .n_heads = 3,
                     .key_dim = 4,
                     .value_dim = 5,
                     .window = 8,
                     .hidden_dim = 7,
                     .context = 8};
    Error e;
    CHECK(slm_model_init(m, &c, &e) == 0);
    slm_model_randomize(m, seed);
    for (int i = 0; i < c.n_heads * c.window; i++) m->distance[i] = 0.3f * sinf((float)i); /* not flat */
}

/* Two stories of ids as a Stories value, both held out. */
static const int32_t two_stories_ids[] = {0, 3, 5, 7, 3, 9, 11, 2, 4, 3, 6,  8,  0,
                                          0, 1, 2, 3, 4, 5, 6,  7, 8, 9, 10, 11, 0};
static size_t story_starts[] = {0, 13, 26};
static int both[] = {0, 1};
static Stories two_stories(void) {
    return (Stories){
        .n_stories = 2, .ids32 = two_stories_ids, .starts = story_starts, .n_tokens = 26, .n_test = 2, .test = both};
}

/* A switched-off head's slot holds exactly 0, or exactly its mean output;
 * the other heads are untouched; incremental generation agrees. */
static void ablated_head_is_zero_or_mean(void) {
    Model m;
    small_model(&m, 1);
    Stories s = two_stories();
    Error e;
    float mean[3 * 5];
    CHECK(slm_probe_head_means(&m, &s, s.test, s.n_test, mean, &e) == 0);
    ProbeRunner plain, off;
    CHECK(slm_probe_runner_init(&plain, &m, 4, &e) == 0 && slm_probe_runner_init(&off, &m, 4, &e) == 0);
    CHECK(slm_probe_run(&plain, two_stories_ids, 13, NULL, &e) == 0); /* grows past 4 positions */
    for (int mode = 0; mode < 2; mode++) {
        Ablation ab = {.heads = check_heads(1u << 1), .mode = mode ? ABLATE_MEAN : ABLATE_ZERO, .mean = mean};
        CHECK(slm_probe_run(&off, two_stories_ids, 13, &ab, &e) == 0);
        int exact = 1, others = 1;
        for (int p = 0; p < 13; p++) {
            const float *o = slm_activations_head_output(&off.acts, 1, p);
            for (int i = 0; i < 5; i++) exact &= o[i] == (mode ? mean[5 + i] : 0.0f);
            for (int h = 0; h < 3; h += 2)
                others &= memcmp(slm_activations_head_output(&off.acts, h, p),
                                 slm_activations_head_output(&plain.acts, h, p), 5 * sizeof(float)) == 0;
        }
        CHECK(exact);
        CHECK(others);
        Generator g;
        CHECK(slm_generator_init(&g, &m, &ab, &e) == 0);
        double worst = 0;
        for (int p = 0; p < 13; p++) {
            const float *logits = slm_generator_feed(&g, two_stories_ids[p]);
            for (int v = 0; v < 12; v++) worst = fmax(worst, fabs(logits[v] - off.acts.logits[p * 12 + v]));
        }
        CHECK(worst < 1e-4);
        slm_generator_free(&g);
    }
    /* the mean is the mean: head 0's outputs averaged by hand over both stories */
    double sum = 0;
    for (int k = 0; k < 2; k++) {
        CHECK(slm_probe_run(&plain, two_stories_ids + story_starts[k], 13, NULL, &e) == 0);
        for (int p = 0; p < 13; p++) sum += slm_activations_head_output(&plain.acts, 0, p)[2];
    }
    CHECK_CLOSE(mean[2], sum / 26, 1e-5, 1e-6);
    slm_probe_runner_free(&plain);
    slm_probe_runner_free(&off);
    slm_model_free(&m);
}

/* Heads whose outputs the hidden layer ignores: switching all of them off,
 * to 0 or to their mean, changes no logit and no loss. */
static void heads_that_carry_nothing(void) {
    Model m;
    small_model(&m, 2);
    int Z = slm_model_hidden_input_dim(&m.cfg);
    for (int u = 0; u < m.cfg.hidden_dim; u++)
        for (int i = m.cfg.row_dim; i < Z; i++) m.hidden_w[u * Z + i] = 0;
    Stories s = two_stories();
    Error e;
    float mean[3 * 5];
    CHECK(slm_probe_head_means(&m, &s, s.test, s.n_test, mean, &e) == 0);
    AblateScore intact, zero, means;
    Ablation all_zero = {.heads = check_heads(7)},
             all_mean = {.heads = check_heads(7), .mode = ABLATE_MEAN, .mean = mean};
    CHECK(slm_probe_score(&m, &s, s.test, 2, NULL, NULL, &intact, &e) == 0);
    CHECK(slm_probe_score(&m, &s, s.test, 2, &all_zero, NULL, &zero, &e) == 0);
    CHECK(slm_probe_score(&m, &s, s.test, 2, &all_mean, NULL, &means, &e) == 0);
    CHECK(intact.positions == 24);
    CHECK_CLOSE(zero.loss, intact.loss, 1e-6, 0);
    CHECK_CLOSE(means.loss, intact.loss, 1e-6, 0);
    CHECK(zero.accuracy == intact.accuracy);
    /* and heads that do carry something change the loss when switched off */
    slm_model_free(&m);
    small_model(&m, 2);
    CHECK(slm_probe_score(&m, &s, s.test, 2, &all_zero, NULL, &zero, &e) == 0);
    CHECK(slm_probe_score(&m, &s, s.test, 2, NULL, NULL, &intact, &e) == 0);
    CHECK(fabs(zero.loss - intact.loss) > 1e-4);
    slm_model_free(&m);
}

/* Tool 1 against the arithmetic done by hand from the weights: q = row query[h],
 * k = row key[h], score = q.k/sqrt(kd) + distance[h][t-u], softmax. */
static void attend_matches_direct_computation(void) {
    Model m;
    small_model(&m, 3);
    Error e;
    ProbeRunner r;
    CHECK(slm_probe_runner_init(&r, &m, 13, &e) == 0);
    CHECK(slm_probe_run(&r, two_stories_ids, 13, NULL, &e) == 0);
    const ModelConfig *c = &m.cfg;
    AttendKey keys[8];
    for (int h = 0; h < 3; h++)
        for (int p = 0; p < 13; p++) {
            int n = slm_probe_attend(&r, h, p, keys);
            CHECK(n == (p < 8 ? p + 1 : 8)); /* a window of 8 */
            double q[4] = {0}, scores[8], max = -INFINITY, total = 0, sum_w = 0;
            for (int i = 0; i < c->row_dim; i++)
                for (int j = 0; j < 4; j++)
                    q[j] += m.embedding[two_stories_ids[p] * 6 + i] * m.query[(h * 6 + i) * 4 + j];
            for (int k = 0; k < n; k++) {
                int u = p - n + 1 + k;
                double dot = 0;
                for (int j = 0; j < 4; j++) {
                    double kj = 0;
                    for (int i = 0; i < 6; i++)
                        kj += m.embedding[two_stories_ids[u] * 6 + i] * m.key[(h * 6 + i) * 4 + j];
                    dot += q[j] * kj;
                }
                scores[k] = dot / 2 + m.distance[h * 8 + (p - u)];
                max = fmax(max, scores[k]);
                CHECK(keys[k].position == u && keys[k].distance == p - u && keys[k].token == two_stories_ids[u]);
                CHECK_CLOSE(keys[k].dot, dot / 2, 1e-4, 1e-5);
                CHECK_CLOSE(keys[k].distance_score, m.distance[h * 8 + (p - u)], 0, 0);
                CHECK_CLOSE(
                    keys[k].cosine,
                    slm_probe_cosine(m.embedding + two_stories_ids[p] * 6, m.embedding + two_stories_ids[u] * 6, 6),
                    1e-6, 1e-6);
            }
            for (int k = 0; k < n; k++) total += exp(scores[k] - max);
            for (int k = 0; k < n; k++) {
                CHECK_CLOSE(keys[k].weight, exp(scores[k] - max) / total, 1e-4, 1e-6);
                sum_w += keys[k].weight;
            }
            CHECK_CLOSE(sum_w, 1.0, 1e-5, 0);
        }
    CHECK(keys[0].cosine == keys[0].cosine); /* a number */
    double map[13 * 13];
    slm_probe_attention_map(&r, 1, map);
    CHECK(isnan(map[0 * 13 + 1]) && isnan(map[12 * 13 + 0]) && !isnan(map[12 * 13 + 5]));
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* ---- names ---------------------------------------------------------------------- */

static const char vocab_text[] =
    "[UNK]\n[EOS]\n.\n,\n!\n\"\nonce\nthere\nwas\na\ngirl\nnamed\nmia\nliked\nthe\npark\none\nday\nsaw\ndog\n"
    "said\nhi\nand\nmom\nwent\nhome\nboy\ntom\nlily\nz\n##ark\n##o\n##pad\nsat\non\nhappy\nshe\nhe\nbig\n";

static Tokenizer tokenizer(void) {
    Tokenizer t;
    Error e;
    CHECK(slm_tokenizer_from_text(&t, vocab_text, strlen(vocab_text), 0, &e) == 0);
    return t;
}

static IntVec encode(const Tokenizer *t, const char *text) {
    IntVec v = {0};
    Error e;
    CHECK(slm_intvec_push(&v, t->eos_id, &e) == 0);
    CHECK(slm_tokenizer_encode(t, text, strlen(text), &v, &e) == 0);
    CHECK(slm_intvec_push(&v, t->eos_id, &e) == 0);
    return v;
}

/* Training text: Mia, Tom and Lily are written capitalised where no
 * sentence starts; "Mom" too, but it is on the list of common words;
 * "Happy" starts sentences only, "Park" is mostly lower-case. */
static const char training[] = "Once there was a girl named Mia. One day Mia saw a dog and Tom. Tom said \"Hi, Mia.\"\n"
                               "Happy was the dog. The boy named Tom went home with Mom and Lily and Mom.\n"
                               "Lily liked the park. The park was big. She saw Lily and Park and the park.";

static void names_learnt_from_capitals(NameList *nl) {
    StorySpan span = {0, strlen(training)};
    Error e;
    CHECK(slm_names_learn(nl, training, &span, 1, NULL, &e) == 0);
    CHECK(slm_names_is_name(nl, "mia") && slm_names_is_name(nl, "tom") && slm_names_is_name(nl, "lily"));
    CHECK(!slm_names_is_name(nl, "mom"));   /* a common word, written like a name */
    CHECK(!slm_names_is_name(nl, "happy")); /* capitalised only where a sentence starts */
    CHECK(!slm_names_is_name(nl, "park"));  /* mostly lower-case */
    CHECK(!slm_names_is_name(nl, "once") && !slm_names_is_name(nl, "zarko"));
    CHECK(slm_names_count(nl, "mia") == 3 && slm_names_count(nl, "zarko") == 0);
    const char *top[4];
    int counts[4];
    CHECK(slm_names_most_common(nl, top, counts, 4) == 3);
    CHECK(strcmp(top[0], "lily") == 0 && strcmp(top[1], "mia") == 0 && counts[2] == 3); /* ties: by word */
}

/* The hero is the first name of the first sentence that comes back; its
 * mentions are where the word stands whole. */
static void hero_and_mentions(const Tokenizer *t, const NameList *nl) {
    IntVec v =
        encode(t, "Once there was a girl named Mia. Mia saw a dog. The dog sat on the lilypad. Mom said hi, Mia!");
    Hero hero;
    CHECK(slm_find_hero(t, nl, v.data, (int)v.len, &hero) == 1);
    CHECK(strcmp(hero.word, "mia") == 0 && hero.n_pieces == 1);
    /* [EOS] once there was a girl named mia . mia saw a dog . the dog sat on the lily ##pad . mom said hi , mia ! */
    CHECK(hero.n_mentions == 3 && hero.mentions[0] == 7 && hero.mentions[1] == 9 && hero.mentions[2] == 26);
    slm_intvec_free(&v);
    v = encode(t, "Once there was a boy named Tom. He saw a dog and Lily. Lily was happy.");
    CHECK(slm_find_hero(t, nl, v.data, (int)v.len, &hero) ==
          0); /* Tom does not come back; Lily is not in the first sentence */
    slm_intvec_free(&v);
    v = encode(t, "Lily sat on the lilypad. Lily was happy.");
    CHECK(slm_find_hero(t, nl, v.data, (int)v.len, &hero) == 1 && hero.n_mentions == 2); /* not inside "lilypad" */
    CHECK(hero.mentions[0] == 1 && hero.mentions[1] == 8);
    slm_intvec_free(&v);
}

/* Renaming Mia to zarko (z ##ark ##o) everywhere: the mentions move, the rest stays. */
static void rename_hero(const Tokenizer *t, const NameList *nl) {
    IntVec v = encode(t, "Once there was a girl named Mia. Mia saw a dog. Mom said hi, Mia!");
    IntVec want = encode(t, "Once there was a girl named zarko. zarko saw a dog. Mom said hi, zarko!");
    Hero hero;
    CHECK(slm_find_hero(t, nl, v.data, (int)v.len, &hero) == 1);
    SwapName name;
    Error e;
    CHECK(slm_swap_name_make(t, nl, "Zarko", &name, &e) == 0);
    CHECK(name.n_pieces == 3 && name.kind == NAME_INVENTED && strcmp(name.word, "zarko") == 0);
    CHECK(strcmp(t->pieces[name.pieces[1]], "##ark") == 0);
    IntVec out = {0};
    int starts[HERO_MAX_MENTIONS];
    CHECK(slm_swap_hero(v.data, (int)v.len, &hero, name.pieces, name.n_pieces, &out, starts, &e) == 0);
    CHECK(out.len == want.len && memcmp(out.data, want.data, want.len * sizeof(int32_t)) == 0);
    CHECK(starts[0] == 7 && starts[1] == 11 && starts[2] == 22);
    CHECK(slm_swap_name_make(t, nl, "tom", &name, &e) == 0 && name.kind == NAME_RARE && name.train_count == 3);
    CHECK(slm_swap_name_make(t, nl, "two words", &name, &e) != 0);
    slm_intvec_free(&v);
    slm_intvec_free(&want);
    slm_intvec_free(&out);
}

/* Name targets: the position before each later mention, story by story. */
static void name_targets(const Tokenizer *t, const NameList *nl) {
    IntVec a = encode(t, "There was a girl named Mia. Mia saw a dog. Mia said hi."),
           b = encode(t, "The dog sat on the park.");
    int32_t ids[64];
    memcpy(ids, b.data, b.len * sizeof(int32_t));
    memcpy(ids + b.len, a.data, a.len * sizeof(int32_t));
    size_t starts[3] = {0, b.len, b.len + a.len};
    int idx[2] = {0, 1};
    Stories s = {.n_stories = 2, .ids32 = ids, .starts = starts, .n_tokens = b.len + a.len};
    NameTargets nt;
    Error e;
    CHECK(slm_name_targets_find(t, nl, &s, idx, 2, &nt, &e) == 0);
    CHECK(nt.n == 2 && nt.story[0] == 1 && nt.position[0] == 7 && nt.position[1] == 12);
    slm_name_targets_free(&nt);
    slm_intvec_free(&a);
    slm_intvec_free(&b);
}

/* ---- Secret 4 on two layers ------------------------------------------------------ */

static const char *const hero_texts[3] = {
    "Once there was a girl named Mia. Mia saw a dog. Mom said hi, Mia!",
    "Mia liked the park. One day Mia saw a big dog and the dog sat on the park. Mia was happy. Mia went home.",
    "There was a boy named Tom. Tom went home. Tom said hi and Tom sat on the park."};

/* The three stories, encoded into ids (starts: 4), all held out. */
static Stories hero_stories(const Tokenizer *t, IntVec *ids, size_t *starts, int *idx) {
    Error e;
    for (int i = 0; i < 3; i++) {
        IntVec v = encode(t, hero_texts[i]);
        starts[i] = ids->len;
        for (size_t j = 0; j < v.len; j++) CHECK(slm_intvec_push(ids, v.data[j], &e) == 0);
        slm_intvec_free(&v);
        idx[i] = i;
    }
    starts[3] = ids->len;
    return (Stories){
        .n_stories = 3, .ids32 = ids->data, .starts = starts, .n_tokens = ids->len, .n_test = 3, .test = idx};
}

/* A tiny model of two layers, trained 40 Adam steps on the stories. */
static void two_layer_model(Model *m, const Tokenizer *t, const Stories *s) {
    ModelConfig c = {.arch = &slm_attention_arch,
                     .vocab_size = t->size,
                     .row_dim = 6,
                     .n_heads = 2,
                     .key_dim = 4,
                     .value_dim = 4,
                     .window = 32,
                     .hidden_dim = 8,
                     .context = 3,
                     .n_layers = 2};
    Error e;
    Activations a;
    Batch b;
    Adam opt;
    CHECK(slm_model_init(m, &c, &e) == 0 && slm_activations_init(&a, &c, 128, &e) == 0 &&
          slm_batch_init(&b, 128, 4, &e) == 0);
    CHECK(slm_adam_init(&opt, m->n_params, &e) == 0);
    slm_model_randomize(m, 12);
    for (int i = 0; i < 3; i++)
        CHECK(slm_batch_add(&b, s->ids32 + s->starts[i], (int)(s->starts[i + 1] - s->starts[i]), &e) == 0);
    float *grads = calloc(m->n_params, sizeof(float));
    for (int step = 0; step < 40; step++) {
        slm_model_zero_grad(m, grads);
        CHECK(slm_model_forward(m, &a, &b, NULL, NULL, &e) == 0);
        slm_model_backward(m, &a, &b, grads);
        slm_adam_update(&opt, m->params, grads, 0.01f);
    }
    free(grads);
    slm_adam_free(&opt);
    slm_batch_free(&b);
    slm_activations_free(&a);
}

/* Weight of head h of layer l at position p on the key at u, read from the
 * forward pass's att (H, N, S) as model.h lays it out. */
static double att_weight(const Activations *a, int l, int h, int p, int u) {
    int S = slm_attention_row_stride(a->cfg.window), lo = a->first_key[p];
    if (u < lo || u > p) return 0.0;
    return a->layer[l].att[((size_t)h * a->n_positions + p) * S + lo % 8 + (u - lo)];
}

/* slm_probe_pieces' heads: each story renamed to zarko (z ##ark ##o), run
 * through slm_model_forward, the weights at each later mention read
 * directly, averaged: the probe's numbers. */
static void pieces_heads_on_two_layers(const Tokenizer *t, const NameList *nl) {
    IntVec ids = {0}, out = {0};
    size_t starts[4];
    int idx[3];
    Stories s = hero_stories(t, &ids, starts, idx);
    Model m;
    two_layer_model(&m, t, &s);
    SwapName name;
    Error e;
    CHECK(slm_swap_name_make(t, nl, "zarko", &name, &e) == 0 && name.n_pieces == 3);
    PieceScore row;
    PieceHeads ph;
    CHECK(slm_probe_pieces(&m, t, nl, &s, idx, 3, &name, 1, NULL, &row, &ph, &e) == 0);
    double prev[4] = {0}, ind[4] = {0}, even = 0;
    long long n = 0;
    Activations a;
    Batch b;
    CHECK(slm_activations_init(&a, &m.cfg, 128, &e) == 0 && slm_batch_init(&b, 128, 1, &e) == 0);
    for (int i = 0; i < 3; i++) {
        const int32_t *story = s.ids32 + starts[i];
        int len = (int)(starts[i + 1] - starts[i]), at[HERO_MAX_MENTIONS];
        Hero hero;
        if (!CHECK(slm_find_hero(t, nl, story, len, &hero) == 1)) continue;
        CHECK(slm_swap_hero(story, len, &hero, name.pieces, name.n_pieces, &out, at, &e) == 0);
        slm_batch_clear(&b);
        CHECK(slm_batch_add(&b, out.data, (int)out.len, &e) == 0 && slm_model_forward(&m, &a, &b, NULL, NULL, &e) == 0);
        for (int k = 1; k < hero.n_mentions; k++) {
            int later = at[k], copy = at[0] + 1;
            if (later + 1 >= (int)out.len) continue; /* the probe counts mentions with a next token */
            even += 1.0 / (later - a.first_key[later] + 1);
            for (int g = 0; g < 4; g++) {
                prev[g] += att_weight(&a, g / 2, g % 2, copy, at[0]);
                ind[g] += att_weight(&a, g / 2, g % 2, later, copy);
            }
            n++;
        }
    }
    CHECK(n >= 6 && ph.mentions == n && ph.n_heads == 4 && row.mentions == n);
    CHECK_CLOSE(ph.even, even / n, 1e-12, 0);
    for (int g = 0; g < 4; g++) {
        CHECK_CLOSE(ph.previous[g], prev[g] / n, 1e-9, 1e-12);
        CHECK_CLOSE(ph.induction[g], ind[g] / n, 1e-9, 1e-12);
        CHECK(ph.previous[g] > 0 && ph.previous[g] < 1 && ph.induction[g] > 0 && ph.induction[g] < 1);
    }
    char head[16];
    slm_head_name(&m.cfg, 3, head, sizeof head);
    CHECK(strcmp(head, "2:1") == 0);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_intvec_free(&ids);
    slm_intvec_free(&out);
    slm_model_free(&m);
}

/* ---- report and svg ---------------------------------------------------------------- */

static void report_prints_what_it_holds(void) {
    Report r;
    slm_report_init(&r, "demo");
    slm_report_text(&r, "model", "model", "m.safetensors");
    slm_report_number(&r, "loss", "loss", 2.5, 3);
    ReportTable *t = slm_report_table(&r, "rows", "Rows");
    slm_table_column(t, "head", "head", CELL_INT, 0);
    slm_table_column(t, "share", "share", CELL_PERCENT, 1);
    slm_table_column(t, "token", "token", CELL_TEXT, 0);
    slm_table_row(t), slm_cell_int(t, 3), slm_cell_number(t, 0.25), slm_cell_text(t, "lily");
    slm_table_row(t), slm_cell_int(t, 12), slm_cell_number(t, NAN), slm_cell_text(t, "a\"b");
    Error e;
    CHECK(slm_report_failed(&r, &e) == 0);
    CHECK(slm_table_number(t, 0, 1) == 0.25 && slm_table_number(t, 1, 0) == 12);
    cJSON *j = slm_report_json(&r);
    cJSON *rows = cJSON_GetObjectItem(j, "rows");
    CHECK(cJSON_GetArraySize(rows) == 2);
    CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 0), "share")->valuedouble == 0.25);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 1), "share")));
    CHECK(strcmp(cJSON_GetObjectItem(j, "command")->valuestring, "demo") == 0);
    CHECK(cJSON_GetObjectItem(j, "loss")->valuedouble == 2.5);
    cJSON_Delete(j);
    char path[512];
    snprintf(path, sizeof path, "%s/report.txt", check_tmpdir());
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL);
    if (f) {
        slm_report_print(&r, f);
        rewind(f);
        char text[1024] = {0};
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        CHECK(n > 0 && strstr(text, "head  share  token\n") && strstr(text, "   3  25.0%  lily\n") &&
              strstr(text, "  12      -  a\"b\n") && strstr(text, "loss   2.500\n"));
    }
    slm_report_free(&r);
}

static void svg_escapes_text(void) {
    Svg s;
    slm_svg_begin(&s, 100, 50, "a <title> & more");
    slm_svg_text(&s, 1, 2, "say \"hi\" & <b>'x'</b>\x01", 10, SVG_START, 0, "black");
    SvgPanel p = {.x = 10, .y = 10, .w = 80, .h = 30, .x0 = 0, .x1 = 1, .y0 = -1, .y1 = 1};
    slm_svg_axes(&s, &p, "t", "x", "y", 1);
    double xs[2] = {0, 1}, ys[2] = {-1, 1};
    slm_svg_polyline(&s, &p, xs, ys, 2, "#000", 1);
    const char *out = slm_svg_finish(&s);
    CHECK(out != NULL);
    if (out) {
        CHECK(strstr(out, "say &quot;hi&quot; &amp; &lt;b&gt;&apos;x&apos;&lt;/b&gt;</text>") != NULL);
        CHECK(strstr(out, "<title>a &lt;title&gt; &amp; more</title>") != NULL);
        CHECK(strstr(out, "points=\"10.00,40.00 90.00,10.00 \"") != NULL);
        CHECK(strstr(out, "\x01") == NULL);
    }
    slm_svg_free(&s);
}

/* Counts the occurrences of needle in text. */
static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

static void axes_fit_and_small_bars_carry_values(void) {
    CHECK(fabs(slm_svg_round_up(0.0173) - 0.018) < 1e-12 && fabs(slm_svg_round_up(0.083) - 0.1) < 1e-12);
    CHECK(fabs(slm_svg_round_up(3.7) - 4) < 1e-12 && slm_svg_round_up(0) == 1);
    CHECK(fabs(slm_svg_text_width("lily", 10) - 24) < 1e-9 && fabs(slm_svg_text_width("zo\xc3\xab", 10) - 18) < 1e-9);
    Svg s;
    slm_svg_begin(&s, 200, 100, "bars");
    SvgPanel p = {.x = 10, .y = 10, .w = 100, .h = 80, .y0 = 0, .y1 = 0.2};
    double values[3] = {0.19, 0.0004, 0.1};
    slm_svg_bars(&s, &p, values, 1, 3, NULL, NULL, 0);
    slm_svg_bar_values(&s, &p, values, 1, 3, 8); /* 0.0004 is 0.16 pixels high: only it gets its value */
    const char *out = slm_svg_finish(&s);
    CHECK(out && strstr(out, ">0.0004</text>") && !strstr(out, ">0.19</text>") && !strstr(out, ">0.1</text>"));
    slm_svg_free(&s);
}

static void heat_map_has_a_scale_and_leaves_white_out(void) {
    Svg s;
    slm_svg_begin(&s, 300, 200, "heat");
    double values[4] = {1, NAN, 0.001, 0.5};
    slm_svg_heatmap(&s, 20, 20, 12, values, 2, 2, 1.0, NULL, NULL, 10);
    slm_svg_color_scale(&s, 100, 20, 100, 1.0, "weight");
    const char *out = slm_svg_finish(&s);
    /* two squares drawn (1 and 0.5; NAN and 0.001 left white), each with its tooltip */
    CHECK(out && count_of(out, "</title></rect>") == 2);
    CHECK(out && count_of(out, "class=\"legend\"") == 1 && strstr(out, ">weight</text>") && strstr(out, ">0.8</text>"));
    slm_svg_free(&s);
}

int main(void) {
    ablated_head_is_zero_or_mean();
    heads_that_carry_nothing();
    attend_matches_direct_computation();
    Tokenizer t = tokenizer();
    NameList nl;
    names_learnt_from_capitals(&nl);
    hero_and_mentions(&t, &nl);
    rename_hero(&t, &nl);
    name_targets(&t, &nl);
    pieces_heads_on_two_layers(&t, &nl);
    slm_names_free(&nl);
    slm_tokenizer_free(&t);
    report_prints_what_it_holds();
    svg_escapes_text();
    axes_fit_and_small_bars_carry_values();
    heat_map_has_a_scale_and_leaves_white_out();
    return check_report();
}
