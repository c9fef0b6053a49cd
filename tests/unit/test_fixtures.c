/* Structural check of the reference fixtures in tests/data (produced by
 * tools/reference/, contract in the fixture notes): every golden manifest parses,
 * names the expected prompts, every logits file exists with exactly
 * n_positions * vocab_size float32 values (all finite), every prompt records a
 * conditioning number (max|HF fp32 - HF fp64|) within the generator's bound, and
 * every greedy entry has 32 in-vocab tokens, none of them an EOS id of the model's
 * generation_config.json, with a top-1/top-2 gap comfortably above fp32 noise.
 * A broken or half-regenerated fixture set must fail here, before any model test
 * tries to use it. Single-threaded; reads files only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"

#define N_GREEDY 32
#define MIN_GAP 2e-2     /* tools/reference/tinylib.py MIN_GAP */
#define MAX_FP64_DIFF 1e-5 /* tinylib.py MAX_FP64_DIFF: HF fp32 vs HF fp64 */

/* The random-weight fixtures share one prompt set (random ids, "len<N>"); the trained one
 * (tools/reference/make_trained_tiny.py) has held-out text prompts ("text<N>"). */
static const char *const k_prompts[] = {"len1",  "len2",   "len63",  "len64", "len65",
                                        "len127", "len128", "len129", "len700", NULL};
static const char *const k_greedy[] = {"len2", "len63", "len129", NULL};
static const char *const k_tprompts[] = {"text2", "text64", "text129", "text300", "text200", NULL};
static const char *const k_tgreedy[] = {"text2", "text64", "text129", NULL};
static const char *const k_all_positions[] = {"len65", "len129", "text129", NULL};

typedef struct fixture {
    const char *model;
    const char *const *prompts, *const *greedy;
} fixture;

static const fixture k_models[] = {
    {"tiny-text", k_prompts, k_greedy},
    {"tiny-text-bf16", k_prompts, k_greedy},
    {"tiny-mm", k_prompts, k_greedy},
    {"tiny-mm-bf16", k_prompts, k_greedy},
    {"tiny-trained-bf16", k_tprompts, k_tgreedy},
};

static char *join3(const char *a, const char *b, const char *c) {
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static void check_file_exists(const char *model, const char *file) {
    char *rel = join3("models/", model, file);
    char *path = hy_test_data_path(rel);
    struct stat sb;
    if (stat(path, &sb) != 0 || sb.st_size <= 0) fail_msg("missing fixture %s", path);
    free(path);
    free(rel);
}

static json_t *find_prompt(json_t *prompts, const char *name) {
    size_t i;
    json_t *p;
    json_array_foreach(prompts, i, p) {
        const char *n = json_string_value(json_object_get(p, "name"));
        if (n && strcmp(n, name) == 0) return p;
    }
    return NULL;
}

static void check_logits_file(const char *dir, json_t *p, size_t vocab) {
    const char *name = json_string_value(json_object_get(p, "name"));
    const char *file = json_string_value(json_object_get(p, "logits"));
    const char *pos = json_string_value(json_object_get(p, "positions"));
    json_t *ids = json_object_get(p, "ids");
    assert_non_null(name);
    assert_non_null(file);
    assert_non_null(pos);
    assert_true(json_is_array(ids));
    size_t n_ids = json_array_size(ids);
    assert_true(n_ids > 0);
    /* the prompt name encodes its length: "len<N>" / "text<N>" */
    assert_int_equal(strtoul(name + strcspn(name, "0123456789"), NULL, 10), n_ids);
    for (size_t i = 0; i < n_ids; i++) {
        json_int_t t = json_integer_value(json_array_get(ids, i));
        assert_true(json_is_integer(json_array_get(ids, i)) && t >= 0 && (size_t)t < vocab);
    }
    size_t n_pos = 0;
    if (strcmp(pos, "last") == 0) n_pos = 1;
    else if (strcmp(pos, "all") == 0) n_pos = n_ids;
    else fail_msg("%s: positions must be last|all, got %s", name, pos);

    char *path = join3(dir, "/", file);
    size_t len = 0;
    unsigned char *buf = hy_test_read_file(path, &len);
    if (!buf) fail_msg("cannot read %s", path);
    if (len != n_pos * vocab * 4)
        fail_msg("%s: %zu bytes, expected %zu positions x %zu x 4", path, len, n_pos, vocab);
    size_t bad = 0;
    for (size_t i = 0; i < n_pos * vocab; i++) {
        float f;
        memcpy(&f, buf + 4 * i, 4); /* little-endian host assumed, as in the engine */
        if (!isfinite(f)) bad++;
    }
    assert_int_equal(bad, 0);
    free(buf);
    free(path);
    json_t *d64 = json_object_get(p, "fp64_max_abs_diff");
    if (!json_is_number(d64)) fail_msg("%s: no fp64_max_abs_diff", name);
    double d = json_number_value(d64);
    assert_true(d >= 0 && d <= MAX_FP64_DIFF);
}

static void check_greedy(json_t *g, size_t vocab, json_t *eos) {
    const char *prompt = json_string_value(json_object_get(g, "prompt"));
    assert_non_null(prompt);
    assert_int_equal(json_integer_value(json_object_get(g, "n")), N_GREEDY);
    json_t *toks = json_object_get(g, "tokens");
    json_t *gaps = json_object_get(g, "gaps");
    assert_true(json_is_array(toks) && json_array_size(toks) == N_GREEDY);
    assert_true(json_is_array(gaps) && json_array_size(gaps) == N_GREEDY);
    double lo = INFINITY;
    for (size_t i = 0; i < N_GREEDY; i++) {
        json_int_t t = json_integer_value(json_array_get(toks, i));
        assert_true(t >= 0 && (size_t)t < vocab);
        for (size_t k = 0; k < json_array_size(eos); k++)
            if (t == json_integer_value(json_array_get(eos, k))) fail_msg("%s: greedy token %d is an EOS id", prompt, (int)t);
        double gap = json_number_value(json_array_get(gaps, i));
        if (gap < lo) lo = gap;
    }
    double min_gap = json_number_value(json_object_get(g, "min_gap"));
    printf("  greedy %-7s min_gap %.4f\n", prompt, min_gap);
    assert_true(min_gap > MIN_GAP);
    assert_true(fabs(lo - min_gap) < 1e-6);
}

static void check_model(const fixture *fx) {
    const char *model = fx->model;
    check_file_exists(model, "/config.json");
    check_file_exists(model, "/model.safetensors");
    check_file_exists(model, "/generation_config.json");

    char *rel_dir = join3("golden/", model, "");
    char *dir = hy_test_data_path(rel_dir);
    char *mpath = join3(dir, "/manifest.json", "");
    json_error_t jerr;
    json_t *man = json_load_file(mpath, 0, &jerr);
    if (!man) fail_msg("%s:%d: %s", mpath, jerr.line, jerr.text);
    assert_string_equal(json_string_value(json_object_get(man, "model")), model);
    json_int_t vocab = json_integer_value(json_object_get(man, "vocab_size"));
    assert_int_equal(vocab, 512);
    assert_non_null(json_string_value(json_object_get(man, "reference")));

    json_t *prompts = json_object_get(man, "prompts");
    assert_true(json_is_array(prompts));
    size_t n_prompts = 0;
    for (; fx->prompts[n_prompts]; n_prompts++) {
        json_t *p = find_prompt(prompts, fx->prompts[n_prompts]);
        if (!p) fail_msg("%s: prompt %s missing", mpath, fx->prompts[n_prompts]);
        check_logits_file(dir, p, (size_t)vocab);
    }
    assert_int_equal(json_array_size(prompts), n_prompts);
    /* chunk boundaries are checked at every position for these (test_golden splits the
     * longest of them; it must have >= 129 tokens) */
    for (size_t i = 0; k_all_positions[i]; i++) {
        json_t *p = find_prompt(prompts, k_all_positions[i]);
        if (p) assert_string_equal(json_string_value(json_object_get(p, "positions")), "all");
    }

    /* the model's EOS ids (generation_config.json) never occur in a continuation */
    char *grel = join3("models/", model, "/generation_config.json");
    char *gpath = hy_test_data_path(grel);
    json_t *gen = json_load_file(gpath, 0, &jerr);
    if (!gen) fail_msg("%s:%d: %s", gpath, jerr.line, jerr.text);
    json_t *eos = json_object_get(gen, "eos_token_id");
    assert_true(json_is_array(eos) && json_array_size(eos) > 0);

    json_t *greedy = json_object_get(man, "greedy");
    assert_true(json_is_array(greedy));
    size_t n_greedy = 0;
    while (fx->greedy[n_greedy]) n_greedy++;
    assert_int_equal(json_array_size(greedy), n_greedy);
    printf("%s\n", model);
    for (size_t i = 0; i < json_array_size(greedy); i++) {
        json_t *g = json_array_get(greedy, i);
        assert_string_equal(json_string_value(json_object_get(g, "prompt")), fx->greedy[i]);
        check_greedy(g, (size_t)vocab, eos);
    }
    json_decref(gen);
    free(gpath);
    free(grel);
    json_decref(man);
    free(mpath);
    free(dir);
    free(rel_dir);
}

static void test_all_fixtures(void **st) {
    (void)st;
    for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; i++) check_model(&k_models[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
