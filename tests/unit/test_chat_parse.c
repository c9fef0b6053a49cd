/*
 * chat/parse: every committed model-output case (tests/data/chat/parse_cases.jsonl)
 * gives the expected reasoning, content and tool calls (arguments compared as the
 * exact json.dumps text of the expected object) when fed all at once, one byte at a
 * time, and in many random splits. While streaming, no delta may carry markup that
 * is not part of the final text (a '<' in a delta when the expected text has none),
 * and every delta must be whole UTF-8.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chat/parse.h"
#include "chat/pyjson.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct collector {
    hy_chat_parse_result r;
    int bad_reasoning_lt, bad_content_lt, bad_utf8;
    int reasoning_may_lt, content_may_lt;
} collector;

static int utf8_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = hy_pyjson_utf8_decode(s + i, n - i, &cp);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

static void on_event(void *user, const hy_chat_event *ev) {
    collector *c = user;
    if (ev->kind == HY_CHAT_EV_REASONING || ev->kind == HY_CHAT_EV_CONTENT) {
        int has_lt = memchr(ev->text, '<', ev->len) != NULL;
        if (ev->kind == HY_CHAT_EV_REASONING && has_lt && !c->reasoning_may_lt) c->bad_reasoning_lt++;
        if (ev->kind == HY_CHAT_EV_CONTENT && has_lt && !c->content_may_lt) c->bad_content_lt++;
        if (!utf8_ok(ev->text, ev->len)) c->bad_utf8++;
        assert_true(ev->len > 0);
    }
    hy_chat_parse_collect(&c->r, ev);
}

static int str_matches(const char *got, size_t gl, const json_t *want) {
    if (json_is_null(want) || !want) return got == NULL;
    return got && gl == json_string_length(want) && !memcmp(got, json_string_value(want), gl);
}

/* Compares a result with the case's expectation; prints what differs. */
static int check(const char *name, const char *mode, const hy_chat_parse_result *r, const json_t *exp) {
    int ok = 1;
    if (!str_matches(r->reasoning, r->reasoning_len, json_object_get(exp, "reasoning"))) {
        fprintf(stderr, "%s [%s]: reasoning [%s]\n", name, mode, r->reasoning ? r->reasoning : "(null)");
        ok = 0;
    }
    if (!str_matches(r->content, r->content_len, json_object_get(exp, "content"))) {
        fprintf(stderr, "%s [%s]: content [%s]\n", name, mode, r->content ? r->content : "(null)");
        ok = 0;
    }
    const json_t *calls = json_object_get(exp, "tool_calls");
    size_t ng = r->tool_calls ? json_array_size(r->tool_calls) : 0;
    if (ng != json_array_size(calls)) {
        fprintf(stderr, "%s [%s]: %zu tool calls, expected %zu\n", name, mode, ng, json_array_size(calls));
        return 0;
    }
    for (size_t i = 0; i < ng; i++) {
        const json_t *g = json_array_get(r->tool_calls, i), *w = json_array_get(calls, i);
        hy_chat_buf want;
        hy_chat_buf_init(&want);
        hy_pyjson_dumps(&want, json_object_get(w, "arguments"));
        const char *gname = json_string_value(json_object_get(g, "name"));
        const char *gargs = json_string_value(json_object_get(g, "arguments"));
        if (strcmp(gname, json_string_value(json_object_get(w, "name"))) || strcmp(gargs, want.p)) {
            fprintf(stderr, "%s [%s]: call %zu = %s %s, expected %s %s\n", name, mode, i, gname, gargs,
                    json_string_value(json_object_get(w, "name")), want.p);
            ok = 0;
        }
        hy_chat_buf_free(&want);
    }
    return ok;
}

static uint64_t rng_next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Feeds text in pieces: piece = 0 means one piece, 1 one byte at a time, else random sizes. */
static int run_split(const char *text, size_t len, const hy_chat_parse_opts *o, const json_t *exp, int mode,
                     uint64_t seed, const char *name, int *leaks) {
    collector c;
    memset(&c, 0, sizeof c);
    const json_t *er = json_object_get(exp, "reasoning"), *ec = json_object_get(exp, "content");
    c.reasoning_may_lt = json_is_string(er) && strchr(json_string_value(er), '<');
    c.content_may_lt = json_is_string(ec) && strchr(json_string_value(ec), '<');
    hy_chat_parser *p;
    hy_err e;
    assert_int_equal(hy_chat_parser_create(o, on_event, &c, &p, &e), 0);
    size_t i = 0;
    while (i < len) {
        size_t k = mode == 0 ? len : mode == 1 ? 1 : 1 + rng_next(&seed) % 9;
        if (k > len - i) k = len - i;
        assert_int_equal(hy_chat_parser_feed(p, text + i, k), 0);
        i += k;
    }
    hy_chat_parse_summary s;
    assert_int_equal(hy_chat_parser_finish(p, &s), 0);
    assert_int_equal(hy_chat_parser_feed(p, "x", 1), HY_E_STATE);
    hy_chat_parser_free(p);
    assert_int_equal(s.n_tool_calls, json_array_size(json_object_get(exp, "tool_calls")));
    assert_int_equal(s.tool_calls, s.n_tool_calls > 0);
    char m[32];
    snprintf(m, sizeof m, mode == 0 ? "whole" : mode == 1 ? "bytewise" : "split %llu", (unsigned long long)seed);
    int ok = check(name, m, &c.r, exp);
    if (c.bad_reasoning_lt || c.bad_content_lt || c.bad_utf8) {
        fprintf(stderr, "%s [%s]: %d reasoning / %d content deltas leaked '<', %d not whole UTF-8\n", name, m,
                c.bad_reasoning_lt, c.bad_content_lt, c.bad_utf8);
        (*leaks)++;
        ok = 0;
    }
    hy_chat_parse_result_free(&c.r);
    return ok;
}

static void test_parse_cases(void **st) {
    (void)st;
    char *path = hy_test_data_path("chat/parse_cases.jsonl");
    size_t len;
    char *data = (char *)hy_test_read_file(path, &len);
    free(path);
    assert_non_null(data);
    int n_cases = 0, n_runs = 0, failures = 0, leaks = 0, n_calls = 0;
    for (char *line = data, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (!*line) continue;
        json_t *cs = json_loads(line, 0, NULL);
        assert_non_null(cs);
        n_cases++;
        const char *name = json_string_value(json_object_get(cs, "name"));
        const json_t *text = json_object_get(cs, "text"), *exp = json_object_get(cs, "expect");
        hy_chat_parse_opts o = {
            .thinking = json_is_true(json_object_get(cs, "thinking")),
            .parse_tool_calls = json_is_true(json_object_get(cs, "parse_tool_calls")),
            .tools = json_object_get(cs, "tools"),
        };
        n_calls += (int)json_array_size(json_object_get(exp, "tool_calls"));
        /* the convenience entry point */
        hy_chat_parse_result r;
        hy_err e;
        assert_int_equal(hy_chat_parse_text(json_string_value(text), json_string_length(text), &o, &r, &e), 0);
        assert_non_null(r.tool_calls);
        failures += !check(name, "parse_text", &r, exp);
        hy_chat_parse_result_free(&r);
        for (int mode = 0; mode < 2; mode++, n_runs++)
            failures += !run_split(json_string_value(text), json_string_length(text), &o, exp, mode, 0, name, &leaks);
        for (uint64_t seed = 1; seed <= 25; seed++, n_runs++)
            failures += !run_split(json_string_value(text), json_string_length(text), &o, exp, 2, seed, name, &leaks);
        json_decref(cs);
    }
    free(data);
    printf("chat parse: %d cases (%d tool calls), %d runs (whole, byte by byte, 25 random splits each): "
           "%d failures, %d runs leaked markup or split UTF-8\n",
           n_cases, n_calls, n_runs, failures, leaks);
    assert_int_equal(failures, 0);
    assert_true(n_cases >= 30);
}

static void test_parser_api(void **st) {
    (void)st;
    hy_chat_parser *p;
    hy_err e;
    collector c;
    memset(&c, 0, sizeof c);
    json_t *obj = json_object();
    hy_chat_parse_opts o = {.tools = obj};
    assert_int_equal(hy_chat_parser_create(&o, on_event, &c, &p, &e), HY_E_INVALID);
    assert_int_equal(hy_chat_parser_create(NULL, NULL, &c, &p, &e), HY_E_INVALID);
    json_decref(obj);
    /* streaming: the content delta before a call arrives before the call is complete */
    hy_chat_parse_opts o2 = {.thinking = 0, .parse_tool_calls = 1};
    assert_int_equal(hy_chat_parser_create(&o2, on_event, &c, &p, &e), 0);
    const char *a = "Checking now. <tool_ca", *b = "ll>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>";
    assert_int_equal(hy_chat_parser_feed(p, a, strlen(a)), 0);
    assert_non_null(c.r.content);
    assert_string_equal(c.r.content, "Checking now.");
    assert_int_equal(hy_chat_parser_feed(p, b, strlen(b)), 0);
    assert_non_null(c.r.tool_calls); /* complete at its </tool_call> */
    assert_int_equal(json_array_size(c.r.tool_calls), 1);
    assert_int_equal(hy_chat_parser_feed(p, "\n<tool_call>", 12), 0); /* held: may start a call */
    assert_string_equal(c.r.content, "Checking now.");
    hy_chat_parse_summary s;
    assert_int_equal(hy_chat_parser_finish(p, &s), 0);
    assert_int_equal(s.n_tool_calls, 1);
    assert_string_equal(c.r.content, "Checking now.\n<tool_call>");
    assert_int_equal(hy_chat_parser_finish(p, &s), HY_E_STATE);
    hy_chat_parser_free(p);
    hy_chat_parse_result_free(&c.r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_cases),
        cmocka_unit_test(test_parser_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
