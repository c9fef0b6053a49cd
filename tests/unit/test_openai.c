/* server/openai + genconfig + base/u8scan: request validation (every error
 * names its field and status), response shapes, generation defaults, UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/u8scan.h"
#include "server/genconfig.h"
#include "server/openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const hy_oai_limits LIM = {.vocab_size = 512, .max_n = 4};

static int parse(hy_oai_kind k, const char *body, hy_oai_request *r, hy_oai_error *e) {
    return hy_oai_parse_request(k, body, strlen(body), &LIM, r, e);
}

/* Expects a 400 (or given status) naming param. */
static void expect_err(hy_oai_kind k, const char *body, int status, const char *param) {
    hy_oai_request r;
    hy_oai_error e;
    int rc = parse(k, body, &r, &e);
    if (rc != status || (param && strcmp(e.param, param))) {
        fprintf(stderr, "body %s -> %d param '%s' msg '%s' (want %d '%s')\n", body, rc, e.param, e.message, status,
                param ? param : "");
        fail();
    }
    assert_true(e.message[0] != 0);
    char *j = hy_oai_error_json(&e);
    assert_non_null(strstr(j, "\"error\""));
    assert_non_null(strstr(j, "\"type\""));
    free(j);
}

static void test_chat_ok(void **st) {
    (void)st;
    hy_oai_request r;
    hy_oai_error e;
    const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":[{\"type\":"
        "\"text\",\"text\":\"hi\"}]}],\"temperature\":0.5,\"top_p\":0.9,\"top_k\":-1,\"min_p\":0.1,\"seed\":-3,"
        "\"max_tokens\":5,\"max_completion_tokens\":7,\"stop\":\"x\",\"stop_token_ids\":[3,4],\"n\":2,\"logprobs\":true,"
        "\"top_logprobs\":3,\"stream\":true,\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true,"
        "\"chat_template_kwargs\":{\"enable_thinking\":false},\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
        "\"f\",\"parameters\":{}}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}},"
        "\"logit_bias\":{\"7\":-100},\"user\":\"u\",\"unknown_field\":1,\"presence_penalty\":null}";
    assert_int_equal(parse(HY_OAI_CHAT, body, &r, &e), 0);
    assert_string_equal(r.model, "m");
    assert_true(r.sp.temperature == 0.5f && r.sp.top_p == 0.9f && r.sp.top_k == 0 && r.sp.min_p == 0.1f);
    assert_true(r.sp.seed == (uint64_t)-3);
    assert_int_equal(r.set_mask, HY_SET_TEMPERATURE | HY_SET_TOP_P | HY_SET_TOP_K | HY_SET_MIN_P | HY_SET_SEED);
    assert_int_equal(r.max_tokens, 7);
    assert_int_equal(r.n_stop, 1);
    assert_string_equal(r.stop[0], "x");
    assert_int_equal(r.n_stop_ids, 2);
    assert_int_equal(r.n, 2);
    assert_true(r.logprobs && r.top_logprobs == 3 && r.stream && r.include_usage && r.ignore_eos);
    assert_int_equal(r.enable_thinking, 0);
    assert_int_equal(r.preserve_thinking, -1);
    assert_int_equal(r.tool_choice, HY_TOOL_CHOICE_NAMED);
    assert_string_equal(r.tool_choice_name, "f");
    assert_non_null(r.tools);
    assert_int_equal(r.sp.n_bias, 1);
    assert_int_equal(r.sp.bias_ids[0], 7);
    hy_oai_request_release(&r);

    /* tool_choice none drops the tools from the prompt; reasoning_effort none disables thinking */
    assert_int_equal(parse(HY_OAI_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\","
                           "\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\",\"reasoning_effort\":\"none\"}",
                           &r, &e),
                     0);
    assert_null(r.tools);
    assert_int_equal(r.tool_choice, HY_TOOL_CHOICE_NONE);
    assert_int_equal(r.enable_thinking, 0);
    assert_int_equal(r.max_tokens, -1);
    hy_oai_request_release(&r);
}

static void test_completion_ok(void **st) {
    (void)st;
    hy_oai_request r;
    hy_oai_error e;
    assert_int_equal(parse(HY_OAI_COMPLETION, "{\"prompt\":\"hello\",\"logprobs\":2,\"max_tokens\":3}", &r, &e), 0);
    assert_string_equal(r.prompt, "hello");
    assert_true(r.logprobs && r.top_logprobs == 2);
    hy_oai_request_release(&r);
    assert_int_equal(parse(HY_OAI_COMPLETION, "{\"prompt\":[1,2,511]}", &r, &e), 0);
    assert_int_equal(r.n_prompt_ids, 3);
    assert_int_equal(r.prompt_ids[2], 511);
    hy_oai_request_release(&r);
    assert_int_equal(parse(HY_OAI_COMPLETION, "{\"prompt\":[[5,6]]}", &r, &e), 0);
    assert_int_equal(r.n_prompt_ids, 2);
    hy_oai_request_release(&r);
    assert_int_equal(parse(HY_OAI_COMPLETION, "{\"prompt\":[\"abc\"],\"stop\":[\"a\",\"\",\"b\"]}", &r, &e), 0);
    assert_string_equal(r.prompt, "abc");
    assert_int_equal(r.n_stop, 2);
    hy_oai_request_release(&r);
}

static void test_errors(void **st) {
    (void)st;
    const hy_oai_kind C = HY_OAI_CHAT, P = HY_OAI_COMPLETION;
    expect_err(C, "{", 400, "");
    expect_err(C, "[]", 400, "");
    expect_err(C, "{\"messages\":[]}", 400, "messages");
    expect_err(C, "{}", 400, "messages");
    expect_err(C, "{\"messages\":\"hi\"}", 400, "messages");
    expect_err(C, "{\"messages\":[1]}", 400, "messages[0]");
    expect_err(C, "{\"messages\":[{\"role\":\"bot\",\"content\":\"x\"}]}", 400, "messages[0]");
    expect_err(C, "{\"messages\":[{\"content\":\"x\"}]}", 400, "messages[0]");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "messages[0].content");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 400, "messages[0].content[0]");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}", 400, "temperature");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":-1}", 400, "temperature");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":0}", 400, "top_p");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":1.5}", 400, "top_p");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":1.5}", 400, "top_k");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}", 400, "max_tokens");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_completion_tokens\":\"5\"}", 400, "max_completion_tokens");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":5}", 400, "n");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":0}", 400, "n");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":5}", 400, "stop");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"a\",1]}", 400, "stop");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop_token_ids\":[512]}", 400, "stop_token_ids");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":2}", 400, "top_logprobs");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true,\"top_logprobs\":21}", 400, "top_logprobs");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream_options\":{\"include_usage\":true}}", 400, "stream_options");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}", 400, "stream");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":{}}", 400, "tools");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\"}]}", 400, "tools[0]");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\"}", 400, "tool_choice");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"sometimes\"}", 400, "tool_choice");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", 400, "tool_choice");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":{\"enable_thinking\":\"no\"}}", 400, "chat_template_kwargs.enable_thinking");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"abc\":1}}", 400, "logit_bias");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"1\":101}}", 400, "logit_bias");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_object\"}}", 400, "response_format");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"seed\":\"1\"}", 400, "seed");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":3}", 400, "model");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"messages\":[]}", 400, ""); /* duplicate key */
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"reasoning_effort\":\"huge\"}", 400, "reasoning_effort");
    expect_err(P, "{}", 400, "prompt");
    expect_err(P, "{\"prompt\":\"\"}", 400, "prompt");
    expect_err(P, "{\"prompt\":[]}", 400, "prompt");
    expect_err(P, "{\"prompt\":[1,-1]}", 400, "prompt[1]");
    expect_err(P, "{\"prompt\":[1,600]}", 400, "prompt[1]");
    expect_err(P, "{\"prompt\":[\"a\",\"b\"]}", 400, "prompt");
    expect_err(P, "{\"prompt\":{}}", 400, "prompt");
    expect_err(P, "{\"prompt\":\"a\",\"echo\":true}", 400, "echo");
    expect_err(P, "{\"prompt\":\"a\",\"logprobs\":true}", 400, "logprobs");
    expect_err(P, "{\"prompt\":\"a\",\"max_tokens\":-5}", 400, "max_tokens");
    /* invalid UTF-8 in the body is malformed JSON */
    expect_err(P, "{\"prompt\":\"\xff\"}", 400, "");
}

static void test_responses(void **st) {
    (void)st;
    hy_oai_choice c = {0};
    c.index = 0;
    hy_oai_choice_append(&c.content, &c.content_len, &c.content_cap, "Hi", 2);
    hy_oai_choice_append(&c.reasoning, &c.reasoning_len, &c.reasoning_cap, "think", 5);
    c.finish_reason = "stop";
    hy_oai_usage u = {.prompt_tokens = 3, .completion_tokens = 4, .reasoning_tokens = -1};
    json_t *j = hy_oai_chat_response("chatcmpl-1", 100, "m", &c, 1, &u);
    char *s = hy_oai_dump(j);
    assert_non_null(strstr(s, "\"object\":\"chat.completion\""));
    assert_non_null(strstr(s, "\"content\":\"Hi\""));
    assert_non_null(strstr(s, "\"reasoning_content\":\"think\""));
    assert_non_null(strstr(s, "\"reasoning\":\"think\""));
    assert_non_null(strstr(s, "\"finish_reason\":\"stop\""));
    assert_non_null(strstr(s, "\"total_tokens\":7"));
    assert_non_null(strstr(s, "\"cached_tokens\":0"));
    free(s);
    json_decref(j);
    hy_oai_choice_release(&c);

    hy_oai_token_lp t = {.token = "\xe2\x80", .token_len = 2, .logprob = -0.5f, .n_top = 1};
    t.top[0] = (hy_oai_top){.token = "a", .token_len = 1, .logprob = -0.1f};
    json_t *e = hy_oai_chat_logprob_entry(&t);
    s = hy_oai_dump(e);
    assert_non_null(strstr(s, "\"bytes\":[226,128]"));
    assert_non_null(strstr(s, "\"token\":\"\xef\xbf\xbd\"")); /* lossy text, exact bytes */
    free(s);
    json_decref(e);
    json_t *cl = NULL;
    hy_oai_completion_logprobs_add(&cl, &t, 0);
    s = hy_oai_dump(cl);
    assert_non_null(strstr(s, "\"text_offset\":[0]"));
    free(s);
    json_decref(cl);
}

static void test_genconfig(void **st) {
    (void)st;
    hy_gen_defaults d;
    hy_err err = {0};
    const char *g = "{\"bos_token_id\": 248044, \"do_sample\": true, \"eos_token_id\": [248046, 248044], "
                    "\"pad_token_id\": 248044, \"temperature\": 1.0, \"top_k\": 20, \"top_p\": 0.95}";
    assert_int_equal(hy_gen_defaults_parse(&d, g, strlen(g), "gc", &err), 0);
    assert_int_equal(d.n_eos, 2);
    assert_int_equal(d.eos_ids[0], 248046);
    assert_int_equal(d.eos_ids[1], 248044);
    assert_int_equal(d.set_mask, HY_SET_TEMPERATURE | HY_SET_TOP_K | HY_SET_TOP_P);
    hy_oai_request r;
    hy_oai_error e;
    assert_int_equal(parse(HY_OAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":5,\"temperature\":0}", &r, &e), 0);
    hy_sampling_params sp;
    hy_gen_effective_sampling(&r, &d, &sp);
    assert_int_equal(sp.top_k, 5);          /* request wins */
    assert_true(sp.temperature == 0.0f);
    assert_true(sp.top_p == 0.95f);         /* default applies */
    assert_true(sp.repetition_penalty == 1.0f); /* neutral */
    hy_oai_request_release(&r);
    const char *bad = "{\"eos_token_id\": [1, \"x\"]}";
    assert_int_equal(hy_gen_defaults_parse(&d, bad, strlen(bad), "gc", &err), HY_E_INVALID);
    assert_non_null(strstr(err.msg, "eos_token_id[1]"));
    const char *bad2 = "{\"top_p\": 2}";
    assert_int_equal(hy_gen_defaults_parse(&d, bad2, strlen(bad2), "gc", &err), HY_E_INVALID);
    assert_int_equal(hy_gen_defaults_load(&d, "/nonexistent-dir", &err), 0);
    assert_int_equal(d.n_eos, 0);
}

static void test_u8(void **st) {
    (void)st;
    assert_int_equal(hy_u8_complete_len("ab\xe2\x82", 4), 2);
    assert_int_equal(hy_u8_complete_len("ab\xe2\x82\xac", 5), 5);
    assert_int_equal(hy_u8_complete_len("\xf0\x9f\x98", 3), 0);
    assert_int_equal(hy_u8_complete_len("a\xff", 2), 2); /* invalid is not "incomplete" */
    assert_int_equal(hy_u8_complete_len("a\xed\xa0", 3), 3); /* surrogate lead: can never complete */
    assert_true(hy_u8_valid("h\xc3\xa9", 3));
    assert_false(hy_u8_valid("\xc0\x80", 2));
    char out[64];
    size_t n = hy_u8_repair("a\xe2\x82z\xff", 5, out);
    /* maximal subpart E2 82 -> one U+FFFD, FF -> one U+FFFD */
    assert_int_equal(n, 1 + 3 + 1 + 3);
    assert_memory_equal(out, "a\xef\xbf\xbdz\xef\xbf\xbd", n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_ok),   cmocka_unit_test(test_completion_ok), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_responses), cmocka_unit_test(test_genconfig),     cmocka_unit_test(test_u8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
